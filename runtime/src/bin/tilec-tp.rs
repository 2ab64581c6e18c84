//! tilec-tp: checks and times tensor-parallel GEMMs across the GPUs of one
//! host (`tilec_runtime::tp`): all-gather + GEMM (`--mode ag`) or GEMM +
//! reduce-scatter (`--mode rs`) of one global problem, with a tilec GEMM
//! artifact (bf16, or FP8 with block scales) on every rank.
//!
//! The global inputs are drawn fresh (bf16 uniform, or e4m3 with
//! power-of-two block scales over 2^-10..2^10), split over the ranks, and
//! every chunk count is first checked: outputs and intermediate buffers
//! poisoned with NaN, one overlapped run, the ranks' C gathered and
//! compared with the single-GPU product (cuBLAS BF16 on GPU 0, itself
//! checked against FP64 on sampled rows; for FP8, on the dequantised
//! inputs, which are exact in bf16). Then four ways to run it are timed in
//! interleaved rounds on every rank: the overlapped operation, the
//! communication alone, the GEMM alone and the two one after the other.
//! A round's time is the slowest rank's; the ideal is
//! `max(communication, GEMM)` of the same round.

use clap::Parser;
use half::bf16;
use std::cell::RefCell;
use std::process::ExitCode;
use tilec_cli::{CompletionArgs, EXIT_ERROR, EXIT_USAGE};
use tilec_runtime::artifact::{Artifact, DType};
use tilec_runtime::check::*;
use tilec_runtime::gemm::{GemmSpec, GemmSize, Scales};
use tilec_runtime::timing::Launch;
use tilec_runtime::tp::*;
use tilec_runtime::{ensure_cuda, Cublas, Gemm, Gpu, Result, RuntimeError, Timer};
use tilec_report::kinds::{TpReport, TpRow, TP_SCHEMA};

/// tilec-tp's command line.
#[derive(Parser, Debug)]
#[command(
    name = "tilec-tp",
    version,
    about = "Checks and times tensor-parallel GEMMs over NCCL (all-gather + GEMM, GEMM + reduce-scatter)",
    after_help = "Exit status: 0 ok (or SKIPPED: no libcuda), 1 a check failed or a run could not be made, 2 a usage error.\n\
                  NCCL: libnccl must load (LD_LIBRARY_PATH); NCCL_NVLS_ENABLE is set to 0 unless already set."
)]
struct Cli {
    /// The GEMM artifact every rank runs (bf16, or FP8 with block scales SA (M x KB, K-major) and SB (NB x KB))
    #[arg(long, value_name = "DIR", required_unless_present = "completions")]
    kernel: Option<String>,
    /// ag: all-gather of A along M, then the GEMM (column parallel); rs: the GEMM, then a reduce-scatter of C along M (row parallel)
    #[arg(long, value_parser = parse_mode, required_unless_present = "completions")]
    mode: Option<Mode>,
    /// The global problem MxNxK
    #[arg(long, value_name = "MxNxK", value_parser = parse_shape, required_unless_present = "completions")]
    shape: Option<GemmSize>,
    /// Ranks (GPUs 0..W); default: every GPU
    #[arg(long, value_name = "W")]
    gpus: Option<usize>,
    /// Chunk counts to check and time, comma-separated
    #[arg(long, value_name = "LIST", default_value = "1,2,4", value_delimiter = ',')]
    chunks: Vec<usize>,
    /// SMs the overlapped GEMMs leave to NCCL (persistent kernels only), comma-separated; each is a row
    #[arg(long, value_name = "LIST", default_value = "0", value_delimiter = ',')]
    comm_sms: Vec<u32>,
    /// Untimed runs of each way before timing
    #[arg(long, value_name = "N", default_value_t = 5)]
    warmup: usize,
    /// Timed rounds (each runs the four ways once, interleaved)
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    /// Largest relative Frobenius error against the single-GPU product that passes
    #[arg(long, value_name = "T", default_value_t = 1e-2)]
    threshold: f64,
    /// Input seed (default: from the clock)
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Write every round's times (schema tilec-tp/1)
    #[arg(long, value_name = "OUT")]
    json: Option<String>,
    #[command(flatten)]
    completions: CompletionArgs,
}

/// A run's arguments, once clap has checked them.
struct Args {
    kernel: String,
    mode: Mode,
    shape: GemmSize,
    gpus: Option<usize>,
    chunks: Vec<usize>,
    comm_sms: Vec<u32>,
    warmup: usize,
    reps: u64,
    threshold: f64,
    seed: Option<u64>,
    json: Option<String>,
}

impl Cli {
    /// The run's arguments; `None` when only completions were asked for.
    fn args(self) -> Option<Args> {
        Some(Args {
            kernel: self.kernel?,
            mode: self.mode?,
            shape: self.shape?,
            gpus: self.gpus,
            chunks: self.chunks,
            comm_sms: self.comm_sms,
            warmup: self.warmup,
            reps: self.reps,
            threshold: self.threshold,
            seed: self.seed,
            json: self.json,
        })
    }
}

fn parse_mode(s: &str) -> std::result::Result<Mode, String> {
    Mode::parse(s).ok_or_else(|| format!("want ag or rs, found `{s}`"))
}

fn parse_shape(s: &str) -> std::result::Result<GemmSize, String> {
    match tilec_runtime::bench::parse_shapes(s)?[..] {
        [one] => Ok(GemmSize::new(one.m, one.n, one.k)),
        _ => Err(format!("bad shape `{s}`: want one MxNxK")),
    }
}

/// The four ways, in the order each round runs them.
const WAYS: [&str; 4] = ["overlapped", "comm alone", "gemm alone", "sequential"];


/// The median of `v`, as the benchmark reports take it.
fn median(v: &[f64]) -> f64 {
    tilec_runtime::bench::Stats::from_samples(v).map_or(f64::NAN, |s| s.median_ms)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.completions.print_if_asked::<Cli>() {
        return ExitCode::SUCCESS;
    }
    let Some(cli) = cli.args() else {
        eprintln!("tilec-tp: --kernel, --mode and --shape are required");
        return ExitCode::from(EXIT_USAGE);
    };
    let artifact = match Artifact::load(&cli.kernel) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tilec-tp: {}: {e}", cli.kernel);
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let spec = match GemmSpec::from_manifest(&artifact.manifest) {
        Ok(s) => match unsupported(&s) {
            None => s,
            Some(why) => {
                eprintln!("tilec-tp: {}: {why}", cli.kernel);
                return ExitCode::from(EXIT_ERROR);
            }
        },
        Err(e) => {
            eprintln!("tilec-tp: {}: {e}", cli.kernel);
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let block_scaled = spec.scales == Scales::Block;
    let tps: Vec<TpGemm> = cli
        .chunks
        .iter()
        .map(|&chunks| TpGemm { mode: cli.mode, size: cli.shape, world: cli.gpus.unwrap_or(1), chunks, block_scaled })
        .collect();
    if let Some(Err(e)) = tps.iter().map(|t| t.validate()).find(|r| r.is_err()) {
        eprintln!("tilec-tp: {e}");
        return ExitCode::from(EXIT_USAGE);
    }
    if let Err(e) = ensure_cuda() {
        println!("tilec-tp: {e}");
        tilec_cli::report_skip("tilec-tp", &format!("no libcuda: {} is a valid {} kernel; nothing run", cli.kernel, spec.input));
        return ExitCode::SUCCESS;
    }
    if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
        // NVLink multicast can take a shared host's GPUs out of service.
        std::env::set_var("NCCL_NVLS_ENABLE", "0");
    }
    match run(&cli, &artifact, spec, tps) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(EXIT_ERROR),
        Err(e) => {
            eprintln!("tilec-tp: error: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Checks and times every chunk count; `Ok(false)` if a check failed.
fn run(cli: &Args, artifact: &Artifact, spec: GemmSpec, mut tps: Vec<TpGemm>) -> Result<bool> {
    let world = match cli.gpus {
        Some(w) => w,
        None => cudarc::driver::CudaContext::device_count().map_err(|err| RuntimeError::Driver { call: "cuDeviceGetCount", err })? as usize,
    };
    for t in &mut tps {
        t.world = world;
        t.validate().map_err(RuntimeError::TpArgs)?;
    }
    let seed = cli.seed.unwrap_or_else(seed_from_time);
    let gpu0 = Gpu::new(0)?;
    let size = cli.shape;
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    println!(
        "tilec-tp: {} x{world}, {} {}x{}x{} {}, kernel {}, seed {seed:#x}",
        gpu0.name,
        cli.mode.name(),
        m,
        n,
        k,
        spec.input,
        cli.kernel
    );
    let blas = Cublas::new(gpu0.stream.clone())?;
    let rows = match spec.input {
        DType::Bf16 => {
            let mut rng = Rng::new(seed);
            let inputs = Inputs {
                a: Matrix::new(random_bf16(m * k, &mut rng), m, k),
                b: Matrix::new(random_bf16(n * k, &mut rng), n, k),
                scales: None,
            };
            let reference = blas.checked_reference(&gpu0, &inputs.a.data, &inputs.b.data, size, cli.threshold)?;
            drop(blas);
            run_all(cli, artifact, &tps, &inputs, &reference)?
        }
        DType::F8e4m3 => {
            let mut rng = Rng::new(seed);
            let bs = BlockScales::new(m, n, k);
            let (a, b) = (random_e4m3(m * k, &mut rng), random_e4m3(n * k, &mut rng));
            let (sa, sb) = (random_pow2_scales(bs.sa_len(), &mut rng), random_pow2_scales(bs.sb_len(), &mut rng));
            let exact = |v: Vec<f32>| exact_bf16(&v).ok_or_else(|| RuntimeError::Other("dequantised input not exact in bf16".into()));
            let (a16, b16) = (exact(bs.dequant_a(&a, &sa))?, exact(bs.dequant_b(&b, &sb))?);
            let reference = blas.checked_reference(&gpu0, &a16, &b16, size, cli.threshold)?;
            drop((blas, a16, b16));
            let inputs = Inputs {
                a: Matrix::new(a, m, k),
                b: Matrix::new(b, n, k),
                scales: Some((Matrix::new(sa, m, bs.kb()), Matrix::new(sb, bs.nb(), bs.kb()))),
            };
            run_all(cli, artifact, &tps, &inputs, &reference)?
        }
        other => return Err(RuntimeError::TpArgs(format!("A and B are {other}: want bf16 or f8e4m3"))),
    };
    drop(gpu0);
    print_rows(&rows, tps[0].flops());
    if let Some(path) = &cli.json {
        write_json(path, cli, &spec, world, seed, &rows)?;
        println!("wrote {path}");
    }
    Ok(rows.iter().all(|r| r.pass))
}

/// Every chunk count with every SM reservation.
fn run_all<T: TpElement>(cli: &Args, artifact: &Artifact, tps: &[TpGemm], inputs: &Inputs<T>, reference: &[f64]) -> Result<Vec<TpRow>> {
    let mut rows = Vec::new();
    for tp in tps {
        for &sms in &cli.comm_sms {
            rows.push(run_one(cli, artifact, tp, inputs, reference, sms)?);
        }
    }
    Ok(rows)
}

/// Checks, then times, one chunk count.
fn run_one<T: TpElement>(
    cli: &Args,
    artifact: &Artifact,
    tp: &TpGemm,
    inputs: &Inputs<T>,
    reference: &[f64],
    comm_sms: u32,
) -> Result<TpRow> {
    let per_rank = run_world(tp.world, |rank| {
        let ready = (|| {
            let gemm = Gemm::from_artifact(&rank.gpu, artifact)?;
            let shard = inputs.shard(tp, rank.rank);
            Ok((gemm, shard))
        })();
        let (gemm, shard) = rank.agree("loading the kernel", ready)?;
        let op = rank.agree("binding the schedule", TpRank::new(rank, &gemm, *tp, &shard, comm_sms))?;
        drop(shard);
        let op = RefCell::new(op);
        let c = op.borrow_mut().run_checked()?;
        let timer = Timer::new(&rank.gpu, true, f64::INFINITY);
        let mut fused = |_| op.borrow_mut().fused();
        let mut comm = |_| op.borrow_mut().comm_alone();
        let mut gemm_only = |_| op.borrow_mut().gemm_alone();
        let mut seq = |_| op.borrow_mut().sequential();
        let mut ways: [Launch; 4] = [&mut fused, &mut comm, &mut gemm_only, &mut seq];
        let times = timer.time_rounds(cli.warmup, cli.reps as usize, &mut ways)?;
        Ok((c, times))
    })?;
    let parts: Vec<Matrix<bf16>> = per_rank.iter().map(|(c, _)| c.clone()).collect();
    let out = bf16_to_f64(&gather_c(tp, &parts).data);
    let err = rel_frobenius(&out, reference);
    let rounds = per_rank[0].1[0].len();
    let times = (0..WAYS.len())
        .map(|w| (0..rounds).map(|r| per_rank.iter().map(|(_, t)| t[w][r]).fold(0.0, f64::max)).collect())
        .collect();
    Ok(TpRow { chunks: tp.chunks, comm_sms, error: err, pass: passes(err, cli.threshold), ms: times })
}

fn print_rows(rows: &[TpRow], flops: f64) {
    println!(
        "{:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8} {:>10}",
        "chunks", "comm_sms", "overlap_ms", "comm_ms", "gemm_ms", "seq_ms", "ideal_ms", "ideal/ov", "seq/ov", "TFLOP/s", "error"
    );
    for r in rows {
        let med: Vec<f64> = r.ms.iter().map(|v| median(v)).collect();
        // Per round: max(comm, gemm) over the overlapped time; the median of those.
        let eff: Vec<f64> = (0..r.ms[0].len()).map(|i| r.ms[1][i].max(r.ms[2][i]) / r.ms[0][i]).collect();
        let ideal = med[1].max(med[2]);
        println!(
            "{:>6} {:>8} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>9.3} {:>9.3} {:>8.0} {:>10.2e} {}",
            r.chunks,
            r.comm_sms,
            med[0],
            med[1],
            med[2],
            med[3],
            ideal,
            median(&eff),
            med[3] / med[0],
            flops / med[0] / 1e9,
            r.error,
            if r.pass { "pass" } else { "FAIL" }
        );
    }
}

fn write_json(path: &str, cli: &Args, spec: &GemmSpec, world: usize, seed: u64, rows: &[TpRow]) -> Result<()> {
    let report = TpReport {
        schema: TP_SCHEMA.into(),
        gpus: world,
        mode: cli.mode.name().into(),
        shape: [cli.shape.m, cli.shape.n, cli.shape.k],
        dtype: spec.input.to_string(),
        kernel: cli.kernel.clone(),
        seed,
        ways: WAYS.iter().map(|w| w.to_string()).collect(),
        rows: rows.to_vec(),
    };
    std::fs::write(path, serde_json::to_string_pretty(&report).expect("a report serialises"))
        .map_err(|e| RuntimeError::Other(format!("writing {path}: {e}")))
}
