//! tilec-gpu-test ARTIFACT_DIR [--shapes MxNxK,...] [--threshold 1e-2]
//!
//! Runs a compiled artifact on each shape with fresh random inputs and a
//! poisoned output, and checks it. Two artifact signatures are understood:
//! - GEMM: bf16 tensors `A[M,K]`, `B[N,K]` inputs and `C[M,N]` output (C = A*B^T):
//!   compared with cuBLAS (and cuBLASLt), and with an FP64 CPU reference when
//!   M*N*K <= 2^27; PASS when every relative Frobenius error <= threshold.
//! - FP8 block-scaled GEMM: f8e4m3 `A[M,K]`, f32 `SA[M,KB]` or `SA[KB,M]`, f8e4m3 `B[N,K]`,
//!   f32 `SB[NB,KB]` -> bf16 `C[M,N]`: compared with the dequantised product
//!   (`tilec_runtime::blockscaled`), cuBLASLt block-scaled as a second opinion.
//! - either GEMM with a fused epilogue (the manifest's `epilogue` does more
//!   than round to bf16, reading vectors such as a bias `Bias[N]` or
//!   matrices such as a residual `R[M,N]`): the vectors and matrices get
//!   fresh random values, and C is compared with the FP64 CPU product on
//!   evenly spread rows (all rows for M*N*K <= 2^28) taken through the
//!   epilogue in f64, a matrix read at each element's (i, j)
//!   (`tilec_runtime::epilogue`). An epilogue of interleaved parts of the
//!   product (SwiGLU's gate and up in one GEMM, `acc_part`) stores
//!   `C[M,H]`, `H = N/parts`: the shapes given are the GEMM's (N product
//!   columns, a multiple of parts * block), and each output element is
//!   checked against the FP64 product at its parts' columns through the
//!   epilogue. An epilogue that quantises the output (an f8e4m3 C, named
//!   as the manifest names it, `Q`, with per-group scales in group stores
//!   such as `SQ[NB,M]`, reductions over groups of columns) is checked row
//!   by row twice a shape, each a line (`inputs`): on inputs whose product
//!   is exact in f32, every code and stored value equal to the epilogue
//!   evaluated in f32 as the kernel does (`quantize::EXACT_POLICY`; not
//!   run, saying why, where the epilogue has no exact f32 value), and on
//!   random inputs, the codes decoded with their scales within the
//!   threshold and the scales within a relative 2^-6 of the FP64
//!   reference's (`quantize::POLICY`); both printed with the results, each
//!   line with the fraction of values equal to the reference's. The shape
//!   passes where both do.
//! - copy: bf16 `X[M,N]` input, `Y[M,N]` output (Y = X): bit-exact comparison.
//! - grouped GEMM (`tilec_runtime::grouped`'s signatures: contiguous or
//!   masked, BF16 or block-scaled FP8): run on each `--grouped-problems`
//!   problem of its form (uneven experts, some empty), checked in FP64 on the
//!   first and last valid row of every expert. A grouped kernel with a fused
//!   epilogue (the manifest's `epilogue`, reading the accumulator or
//!   interleaved parts of it: a mixture-of-experts SwiGLU, each expert's
//!   gate and up in one B) is checked against the FP64 product taken
//!   through the epilogue; reading parts, C has `N/parts` columns and the
//!   problems' N are the product's (a multiple of parts * block; the
//!   default problems' N round up to one).
//!
//! With `--chain N` a BF16 GEMM runs as N launches back to back on one
//! stream with programmatic dependent launch, N and K swapping at every
//! step so that each step's A is the previous step's C: every output is
//! poisoned first, and each step is checked against FP64 on sampled rows of
//! the A it read (`tilec_runtime::sequence`), with no element left
//! non-finite. A kernel that touched memory before waiting for the
//! previous one could read a poisoned or half-written A.
//!
//! With `--streams N` a BF16 GEMM (or a block-scaled FP8 one without a
//! fused epilogue) runs on N streams at once, `--rounds R` times, every
//! result checked against cuBLAS (with a fused epilogue: the FP64
//! reference through it, on sampled rows; FP8: the dequantised product)
//! and against the others bit for bit (`tilec_runtime::concurrent`):
//! launches that share state fail.
//! `--host-threads` drives each stream from a host thread of its own, which
//! binds the one shared kernel handle and launches it every round.
//!
//! Prints our and the baseline's TFLOP/s (median of event-timed runs after
//! warm-up, for information; `--no-timing` leaves the timing out, `-` in
//! those columns, so that a check is one launch of each kernel: the fuzz
//! run's thousand kernels, and runs under compute-sanitizer). Exit status: 0 all pass (or skipped: no
//! libcuda), 1 a shape failed or the artifact is not usable, 2 a usage error.

use clap::Parser;
use half::bf16;
use std::process::ExitCode;
use tilec_runtime::artifact::{Artifact, DType, Dim, Manifest, Param, Role, TmaParam};
use tilec_runtime::bench::Stats;
use tilec_runtime::check::*;
use tilec_cli::{CompletionArgs, EXIT_ERROR};
use tilec_runtime::*;

const DEFAULT_SHAPES: &str = "128x128x64,128x128x4096,4096x4096x4096,1000x1000x2000,129x257x192";
const CPU_REF_LIMIT: u64 = 1 << 27;

/// The TMA descriptor through which the kernel addresses `tensor`, where it has one.
fn stored_by_tma<'a>(manifest: &'a Manifest, tensor: &str) -> Option<&'a TmaParam> {
    manifest.params.iter().find_map(|p| match p {
        Param::Tma(t) if t.tensor == tensor => Some(t),
        _ => None,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// C = A * B^T with B stored N x K, or C = A * B with B stored K x N.
    Gemm { b_kn: bool },
    /// FP8 e4m3 with 1x128 scales for A and 128x128 scales for B.
    Fp8Block,
    Copy,
    /// A grouped GEMM for mixture-of-experts.
    Grouped,
}

/// Uneven experts: an empty one, a one-row one, one much larger than the
/// rest, N not a multiple of the tile.
const DEFAULT_GROUPED: &str = "contiguous:256x512:0,1,300,77;contiguous:1000x384:5,0,129,640,1;contiguous:4096x7168:512,0,2048,33;\
    masked/256:512x384:0,1,256,77;masked/200:1000x256:5,200,0,64,129;masked/256:4096x7168:256,0,100,33";

/// Runs a compiled artifact on each shape and checks it against cuBLAS.
#[derive(Parser, Debug)]
#[command(
    name = "tilec-gpu-test",
    version,
    about = "Runs a compiled tilec artifact on each shape and checks it",
    after_help = "Exit status: 0 all pass (or skipped: no libcuda), 1 a shape failed or the artifact is not usable, 2 a usage error."
)]
struct Cli {
    /// The artifact folder (kernel.ptx, manifest.json)
    #[arg(required_unless_present = "completions", value_name = "ARTIFACT_DIR")]
    artifact: Option<String>,
    /// Shapes to run, MxNxK,...
    #[arg(long, default_value = DEFAULT_SHAPES, value_parser = parse_shapes)]
    shapes: Shapes,
    /// Largest relative Frobenius error that passes
    #[arg(long, default_value_t = 1e-2)]
    threshold: f64,
    /// Run a persistent GEMM kernel's grid over N SMs instead of all the device's (at most all): a stream-K kernel then divides its work another way
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    sms: Option<u32>,
    /// Run a BF16 GEMM (or a block-scaled FP8 one) on N streams at once instead (each shape, `--rounds` times), checking every result
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    streams: Option<u32>,
    /// Rounds of `--streams`
    #[arg(long, default_value_t = 100, requires = "streams", value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Drive each of the `--streams` from a host thread of its own, which binds the one shared kernel handle and launches it every round
    #[arg(long, requires = "streams")]
    host_threads: bool,
    /// Run a BF16 GEMM as a chain of N launches back to back with programmatic dependent launch
    /// instead (each shape; N and K swap at every step, so each step's A is the previous step's C),
    /// every output poisoned first and each step checked against FP64 on sampled rows of what it read
    #[arg(long, value_name = "N", conflicts_with = "streams", value_parser = clap::value_parser!(u32).range(2..))]
    chain: Option<u32>,
    /// Check only: leave out the timed runs (each kernel launches once a shape; `-` for the TFLOP/s)
    #[arg(long)]
    no_timing: bool,
    /// Problems a grouped GEMM runs on (those of its form), `contiguous:NxK:ROWS,...` or `masked/M_MAX:NxK:COUNTS,...` separated by `;`
    #[arg(long, default_value = DEFAULT_GROUPED, value_parser = parse_grouped)]
    grouped_problems: GroupedProblems,
    #[command(flatten)]
    completions: CompletionArgs,
}

#[derive(Clone, Debug)]
struct Shapes(Vec<(u64, u64, u64)>);

#[derive(Clone, Debug)]
struct GroupedProblems(Vec<grouped::GroupedProblem>);

fn parse_grouped(s: &str) -> Result<GroupedProblems, String> {
    grouped::parse_problem_list(s).map(GroupedProblems)
}

fn parse_shapes(s: &str) -> Result<Shapes, String> {
    let shapes = s
        .split(',')
        .filter(|x| !x.is_empty())
        .map(|x| {
            let v: Vec<u64> = x
                .split('x')
                .map(|d| d.trim().parse::<u64>().map_err(|e| format!("bad shape `{x}`: {e}")))
                .collect::<Result<_, _>>()?;
            match v[..] {
                [m, n, k] => Ok((m, n, k)),
                [m, n] => Ok((m, n, 1)),
                _ => Err(format!("bad shape `{x}`: want MxNxK")),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    if shapes.is_empty() {
        return Err("no shape given".into());
    }
    Ok(Shapes(shapes))
}

fn has(m: &Manifest, name: &str, shape: &[&str], role: Role) -> bool {
    m.tensor(name).is_some_and(|t| {
        t.dtype == DType::Bf16
            && t.role == role
            && t.shape.len() == shape.len()
            && t.shape.iter().zip(shape).all(|(d, s)| matches!(d, Dim::Sym(x) if x == s))
    })
}

fn detect_mode(m: &Manifest) -> Result<Mode, String> {
    if m.tensor("expert").is_some() || m.tensor("counts").is_some() {
        return grouped::GroupedSpec::from_manifest(m).map(|_| Mode::Grouped).map_err(|e| e.to_string());
    }
    let spec = GemmSpec::from_manifest(m);
    // A manifest with A is meant as a GEMM: say what is wrong with it.
    if let (Err(e), Some(_)) = (&spec, m.tensor("A")) {
        return Err(e.to_string());
    }
    if let Ok(spec) = spec {
        if spec.input == DType::Bf16 {
            return Ok(Mode::Gemm { b_kn: spec.b_layout == BLayout::Kn });
        }
        if spec.scales == Scales::Block {
            return Ok(Mode::Fp8Block);
        }
    }
    if m.tensors.len() == 2 && has(m, "X", &["M", "N"], Role::Input) && has(m, "Y", &["M", "N"], Role::Output) {
        Ok(Mode::Copy)
    } else {
        Err("artifact is neither a bf16 GEMM (A[M,K], B[N,K] or B[K,N] -> C[M,N]), a block-scaled fp8 GEMM (A[M,K], SA[M,KB] or SA[KB,M], B[N,K], SB[NB,KB] -> C[M,N]) nor a copy (X[M,N] -> Y[M,N])".into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.completions.print_if_asked::<Cli>() {
        return ExitCode::SUCCESS;
    }
    let dir = cli.artifact.expect("clap requires the artifact unless --completions is given");
    let (mut shapes, threshold, sms) = (cli.shapes.0, cli.threshold, cli.sms);
    // The artifact is checked even where there is no GPU.
    let artifact = match Artifact::load(&dir) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tilec-gpu-test: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    let mode = match detect_mode(&artifact.manifest) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("tilec-gpu-test: {dir}: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    // The default shapes' N round up to what the artifact takes: a gated
    // epilogue's N interleaves whole runs of its parts, and a C stored by
    // TMA needs rows of a multiple of 16 bytes (the runtime refuses others).
    if parse_shapes(DEFAULT_SHAPES).is_ok_and(|d| d.0 == shapes) {
        let mut grain = 1;
        let mut why = Vec::new();
        if let Some(g) = GemmSpec::from_manifest(&artifact.manifest).ok().and_then(|s| s.gated) {
            grain = g.parts * g.block;
            why.push(format!("{} parts in runs of {}", g.parts, g.block));
        }
        if let Some(c) = stored_by_tma(&artifact.manifest, "C") {
            let row = (16 / c.dtype.size_bytes()) as u64;
            grain = (1..=row).map(|i| grain * i).find(|g| g % row == 0).expect("grain * row is a multiple of row");
            why.push(format!("C stored by TMA in rows of a multiple of {row} elements (16 bytes)"));
        }
        if grain > 1 {
            shapes = shapes.into_iter().map(|(m, n, k)| (m, n.div_ceil(grain) * grain, k)).collect();
            println!("tilec-gpu-test: {}: default shapes with N rounded up to a multiple of {grain}", why.join(", "));
        }
    }
    if cli.streams.is_some() {
        let plain = GemmSpec::from_manifest(&artifact.manifest).is_ok_and(|s| !s.has_epilogue());
        if !(mode == (Mode::Gemm { b_kn: false }) || (mode == Mode::Fp8Block && plain)) {
            eprintln!("tilec-gpu-test: {dir}: --streams runs a BF16 GEMM with B stored N x K, or a block-scaled FP8 GEMM without a fused epilogue; this artifact is neither");
            return ExitCode::from(EXIT_ERROR);
        }
    }
    if cli.chain.is_some() {
        let plain = GemmSpec::from_manifest(&artifact.manifest).is_ok_and(|s| !s.has_epilogue());
        if mode != (Mode::Gemm { b_kn: false }) || !plain {
            eprintln!("tilec-gpu-test: {dir}: --chain runs a BF16 GEMM with B stored N x K and no fused epilogue; this artifact is not one");
            return ExitCode::from(EXIT_ERROR);
        }
        if !artifact.manifest.programmatic_launch {
            eprintln!("tilec-gpu-test: {dir}: --chain launches with programmatic dependent launch, which this kernel's manifest does not allow (compile it with tile-programmatic-launch)");
            return ExitCode::from(EXIT_ERROR);
        }
    }
    if sms.is_some() && matches!(mode, Mode::Grouped | Mode::Copy) {
        eprintln!("tilec-gpu-test: {dir}: --sms sets a GEMM kernel's persistent grid; this artifact is not a GEMM");
        return ExitCode::from(EXIT_ERROR);
    }
    if let Err(e) = ensure_cuda() {
        println!("tilec-gpu-test: {e}");
        tilec_cli::report_skip("tilec-gpu-test", &format!("no libcuda: artifact {dir} is valid, nothing was run"));
        return ExitCode::SUCCESS;
    }
    let mut problems = cli.grouped_problems.0;
    // Likewise the default grouped problems' N, for a grouped kernel reading interleaved parts.
    if let Some(g) = grouped::GroupedSpec::from_manifest(&artifact.manifest).ok().and_then(|s| s.epilogue).and_then(|e| e.gated) {
        if parse_grouped(DEFAULT_GROUPED).is_ok_and(|d| d.0 == problems) {
            let whole = g.parts * g.block;
            problems.iter_mut().for_each(|p| p.n = p.n.div_ceil(whole) * whole);
            println!("tilec-gpu-test: {} parts in runs of {}: default grouped problems with N rounded up to a multiple of {whole}", g.parts, g.block);
        }
    }
    let count = if mode == Mode::Grouped { problems.len() } else { shapes.len() };
    let outcome = match (cli.streams, cli.chain) {
        (_, Some(steps)) => run_chain(&artifact, &shapes, steps as usize, threshold),
        (Some(streams), None) => run_concurrent(&artifact, &shapes, streams as usize, cli.rounds as usize, threshold, if cli.host_threads { concurrent::Lanes::HostThreads } else { concurrent::Lanes::Streams }),
        (None, None) => run(&dir, &artifact, mode, &shapes, &problems, threshold, sms, !cli.no_timing),
    };
    match outcome {
        Ok(0) => {
            println!("tilec-gpu-test: all {count} shapes PASS");
            ExitCode::SUCCESS
        }
        Ok(n) => {
            println!("tilec-gpu-test: {n} of {count} shapes FAILED");
            ExitCode::from(EXIT_ERROR)
        }
        Err(e) => {
            eprintln!("tilec-gpu-test: error: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Runs the GEMM as a chain of `steps` launches with programmatic dependent
/// launch on each shape (`tilec_runtime::sequence`); returns how many failed.
fn run_chain(artifact: &Artifact, shapes: &[(u64, u64, u64)], steps: usize, threshold: f64) -> Result<usize> {
    let gpu = Gpu::new(0)?;
    let gemm = Gemm::from_artifact(&gpu, artifact)?;
    let mut failed = 0;
    for &(m, n, k) in shapes {
        let seed = seed_from_time();
        let sizes = sequence::alternating(GemmSize::new(m, n, k), steps);
        let mut chain = sequence::Chain::new(&gpu, &sizes, seed)?;
        let mut bound = (0..chain.len()).map(|i| chain.bind(&gpu, i, &gemm)).collect::<Result<Vec<_>>>()?;
        chain.poison(&gpu)?;
        sequence::launch_all(&mut bound, &gpu.stream, true)?;
        gpu.sync("the chain")?;
        let checks = chain.check(&gpu)?;
        let worst = checks.iter().map(|c| c.rel_err).fold(0.0, f64::max);
        let not_finite: usize = checks.iter().map(|c| c.not_finite).sum();
        let pass = checks.iter().all(|c| c.pass(threshold));
        failed += usize::from(!pass);
        println!(
            "{m}x{n}x{k} chain of {steps} ({} reading the previous output, programmatic launch): worst rel err {worst:.3e}, {not_finite} non-finite, seed {seed:#x}  {}",
            chain.chained(),
            if pass { "PASS" } else { "FAIL" }
        );
    }
    Ok(failed)
}

/// Runs the GEMM on `streams` streams at once on each shape; returns how many failed.
fn run_concurrent(artifact: &Artifact, shapes: &[(u64, u64, u64)], streams: usize, rounds: usize, threshold: f64, lanes: concurrent::Lanes) -> Result<usize> {
    let gpu = Gpu::new(0)?;
    let gemm = Gemm::from_artifact(&gpu, artifact)?;
    let blas = Cublas::new(gpu.stream.clone())?;
    println!("{:>16} {:>8} {:>6} {:>10} {:>10} {:>6}  seed", "MxNxK", "results", "wrong", "differing", "worst_err", "result");
    let mut failed = 0;
    for &(m, n, k) in shapes {
        let c = concurrent::check_concurrent(&gpu, &gemm, &blas, GemmSize::new(m, n, k), streams, rounds, threshold, lanes)?;
        failed += usize::from(!c.pass());
        println!(
            "{:>16} {:>8} {:>6} {:>10} {:>10.3e} {:>6}  {:#x}",
            format!("{m}x{n}x{k}"),
            c.results,
            c.wrong,
            c.differing,
            c.worst_err,
            if c.pass() { "PASS" } else { "FAIL" },
            c.seed
        );
    }
    Ok(failed)
}

/// Runs a grouped GEMM on each problem with fresh inputs; returns how many failed.
fn run_grouped(gpu: &Gpu, dir: &str, artifact: &Artifact, problems: &[grouped::GroupedProblem], threshold: f64) -> Result<usize> {
    let spec = grouped::GroupedSpec::from_manifest(&artifact.manifest)?;
    let (kind, input) = (spec.kind, spec.input);
    let kernel = grouped_bench::OurGrouped { name: dir.to_string(), kernel: gpu.load(artifact)?, spec };
    println!("artifact: {dir} entry {} ({kind:?} {input}), {} regs", artifact.manifest.entry, kernel.kernel.num_regs);
    let reference = match &kernel.spec.epilogue {
        None => "fp64 cpu rows",
        Some(e) => {
            match &e.gated {
                Some(g) => println!(
                    "epilogue: {} interleaved parts of the product in runs of {}; C has {} = N/{} columns",
                    g.parts, g.block, g.cols, g.parts
                ),
                None => println!("epilogue: element-wise over the accumulator; C has N columns"),
            }
            "fp64 cpu rows through the epilogue"
        }
    };
    let of_form: Vec<&grouped::GroupedProblem> = problems.iter().filter(|p| kernel.computes(p)).collect();
    if of_form.is_empty() {
        return Err(RuntimeError::GemmArgs(format!("none of the --grouped-problems is of the kernel's form ({kind:?})")));
    }
    println!("{} of {} problems are of the kernel's form", of_form.len(), problems.len());
    let mut failed = 0;
    for (i, p) in of_form.into_iter().enumerate() {
        let seed = seed_from_time().wrapping_add(i as u64);
        match grouped_bench::check_grouped_kernel(gpu, &kernel, p, seed) {
            Ok(err) if passes(err, threshold) => println!("{:>48} {err:>10.3e}   PASS  {reference}, {seed:#x}", p.to_string()),
            Ok(err) => {
                failed += 1;
                println!("{:>48} {err:>10.3e}   FAIL  {reference}, {seed:#x}", p.to_string());
            }
            Err(e) => {
                failed += 1;
                println!("{:>48} FAIL: {e}", p.to_string());
            }
        }
    }
    Ok(failed)
}

fn tflops(m: u64, n: u64, k: u64, ms: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12
}

/// Event-timed medians of the kernels, timed in turn in up to 100 rounds,
/// about 200 ms of timed launches each.
fn bench(gpu: &Gpu, kernels: &mut [tilec_runtime::timing::Launch]) -> Result<Vec<f64>> {
    let rounds = Timer::new(gpu, false, 200.0).time_rounds(3, 100, kernels)?;
    Ok(rounds.iter().map(|r| Stats::from_samples(r).map_or(f64::NAN, |s| s.median_ms)).collect())
}

#[allow(clippy::too_many_arguments)]
fn run(dir: &str, artifact: &Artifact, mode: Mode, shapes: &[(u64, u64, u64)], problems: &[grouped::GroupedProblem], threshold: f64, sms: Option<u32>, timed: bool) -> Result<usize> {
    let gpu = Gpu::new(0)?;
    println!(
        "device: {} (sm_{}{}, {} SMs, driver {}.{}), LD_LIBRARY_PATH={}",
        gpu.name,
        gpu.cc.0,
        gpu.cc.1,
        gpu.num_sms,
        gpu.driver_version / 1000,
        gpu.driver_version % 1000 / 10,
        std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
    );
    let print_kernel = |kernel: &Kernel| {
        let m = &kernel.manifest;
        println!(
            "artifact: {} entry {} ({}), block {:?} cluster {:?} smem {} B; JIT {:.1} ms, {} regs, {} B static smem",
            dir, m.entry, m.kernel_name, m.block, m.cluster, m.dynamic_smem_bytes, kernel.jit_ms, kernel.num_regs, kernel.static_smem
        )
    };
    let mut failed = 0;
    let fused = GemmSpec::from_manifest(&artifact.manifest).is_ok_and(|s| s.has_epilogue());
    match mode {
        Mode::Gemm { .. } | Mode::Fp8Block if fused => {
            let gemm = Gemm::from_artifact(&gpu, artifact)?.on_sms(sms);
            gemm.kernels().iter().for_each(print_kernel);
            let blas = Cublas::new(gpu.stream.clone())?;
            let spec = gemm.spec();
            let cols = spec.cols_symbol();
            let symbol = |v: &VectorSpec| if v.along == artifact::Along::Cols { cols } else { v.len_symbol() };
            let vectors: Vec<String> = spec.vectors.iter().map(|v| format!("{} {}[{}]", v.name, v.dtype, symbol(v))).collect();
            let matrices: Vec<String> = spec.matrices.iter().map(|x| format!("{} {}[M,{cols}]", x.name, x.dtype)).collect();
            let matrices = if matrices.is_empty() { String::new() } else { format!(", matrices [{}]", matrices.join(", ")) };
            let gated = spec.gated.as_ref().map_or(String::new(), |g| {
                format!(", {} interleaved parts of the product in runs of {}: C[M,{}] with {} = N/{}", g.parts, g.block, g.cols, g.cols, g.parts)
            });
            let out = &spec.output;
            let stores: Vec<String> = out
                .group_stores
                .iter()
                .map(|s| format!("{} f32[{}] (groups of {} columns)", s.name, s.layout.order("M", s.groups.as_str()).join(","), s.group))
                .collect();
            let stores = if stores.is_empty() { String::new() } else { format!(", group stores [{}]", stores.join(", ")) };
            println!(
                "epilogue: {} values, vectors [{}]{matrices}{gated}; writes {} {}[M,{cols}]{stores}; reference: fp64 cpu product through the epilogue",
                gemm.spec().epilogue.as_ref().map_or(0, |e| e.values.len()),
                vectors.join(", "),
                out.name,
                out.dtype
            );
            // A quantised output is checked on exact inputs too, where its epilogue has exact f32 values.
            let quantized = out.quantized();
            let exact = quantized && {
                println!("comparison: {}", quantize::POLICY);
                match spec.epilogue.as_ref().map(|e| e.in_f32().map(|_| ())) {
                    Some(Ok(())) => {
                        println!("comparison: {}", quantize::EXACT_POLICY);
                        true
                    }
                    Some(Err(e)) => {
                        println!("comparison: exact inputs not run: {e}");
                        false
                    }
                    None => false,
                }
            };
            println!(
                "{:>16} {:>6} {:>10} {:>11} {:>6} {:>9} {:>9}  seed, outputs",
                "MxNxK", "inputs", "err", "rows", "result", "ours_TF", "plain_TF"
            );
            for &(mm, nn, kk) in shapes {
                match epilogue_shape(&gpu, &gemm, &blas, (mm, nn, kk), threshold, quantized, exact, timed) {
                    Ok(true) => {}
                    Ok(false) => failed += 1,
                    Err(e) => {
                        println!("{:>16} FAIL: {e}", format!("{mm}x{nn}x{kk}"));
                        failed += 1;
                    }
                }
            }
        }
        Mode::Grouped => failed = run_grouped(&gpu, dir, artifact, problems, threshold)?,
        Mode::Gemm { b_kn } => {
            let gemm = Gemm::from_artifact(&gpu, artifact)?.on_sms(sms);
            gemm.kernels().iter().for_each(print_kernel);
            let blas = Cublas::new(gpu.stream.clone())?;
            let lt = CublasLt::new(gpu.stream.clone())?;
            println!(
                "{:>16} {:>10} {:>10} {:>10} {:>6} {:>9} {:>9} {:>9}  seed",
                "MxNxK", "err_cublas", "err_cpu", "err_lt", "result", "ours_TF", "cublas_TF", "lt_TF"
            );
            for &(mm, nn, kk) in shapes {
                match gemm_shape(&gpu, &gemm, &blas, &lt, (mm, nn, kk), b_kn, threshold, timed) {
                    Ok(true) => {}
                    Ok(false) => failed += 1,
                    Err(e) => {
                        println!("{:>16} FAIL: {e}", format!("{mm}x{nn}x{kk}"));
                        failed += 1;
                    }
                }
            }
        }
        Mode::Fp8Block => {
            let gemm = Gemm::from_artifact(&gpu, artifact)?.on_sms(sms);
            gemm.kernels().iter().for_each(print_kernel);
            let blas = Cublas::new(gpu.stream.clone())?;
            let lt = tilec_runtime::lt::LtHandle::new(gpu.stream.clone())?;
            println!("{:>16} {:>10} {:>10} {:>6}  reference, seed", "MxNxK", "err", "err_lt", "result");
            for &(mm, nn, kk) in shapes {
                let size = GemmSize::new(mm, nn, kk);
                match tilec_runtime::blockscaled::check_block_scaled(&gpu, &gemm, &blas, &lt, size, threshold) {
                    Ok(c) => {
                        failed += usize::from(!c.pass);
                        let lt_err = c.lt_err.as_ref().map_or_else(|e| format!("- ({e})"), |e| format!("{e:.3e}"));
                        println!(
                            "{:>16} {:>10.3e} {:>10} {:>6}  {}, {:#x}",
                            format!("{mm}x{nn}x{kk}"),
                            c.err,
                            lt_err,
                            if c.pass { "PASS" } else { "FAIL" },
                            c.reference,
                            c.seed
                        );
                    }
                    Err(e) => {
                        println!("{:>16} FAIL: {e}", format!("{mm}x{nn}x{kk}"));
                        failed += 1;
                    }
                }
            }
        }
        Mode::Copy => {
            let kernel = gpu.load(artifact)?;
            print_kernel(&kernel);
            println!("{:>12} {:>10} {:>10} {:>6} {:>9}  seed", "MxN", "mismatches", "rel_err", "result", "GB/s");
            for &(mm, nn, _) in shapes {
                match copy_shape(&gpu, &kernel, mm, nn, timed) {
                    Ok(true) => {}
                    Ok(false) => failed += 1,
                    Err(e) => {
                        println!("{:>12} FAIL: {e}", format!("{mm}x{nn}"));
                        failed += 1;
                    }
                }
            }
        }
    }
    Ok(failed)
}

/// One shape of a GEMM with a fused epilogue: checked on sampled rows
/// (`epilogue::check_with_epilogue`) on random inputs, then timed, with
/// cuBLAS's plain BF16 GEMM of the same size alongside for information (it
/// computes no epilogue); where `exact`, first checked on exact inputs
/// too (a line of its own, untimed). Passes where every check does. The
/// outputs' figures are printed where `quantized`. Untimed unless `timed`.
#[allow(clippy::too_many_arguments)]
fn epilogue_shape(gpu: &Gpu, gemm: &Gemm, blas: &Cublas, (m, n, k): (u64, u64, u64), threshold: f64, quantized: bool, exact: bool, timed: bool) -> Result<bool> {
    let size = GemmSize::new(m, n, k);
    let line = |c: &epilogue::EpilogueCheck, tf: Option<(f64, f64)>| {
        let tf = tf.map_or_else(|| format!("{:>9} {:>9}", "-", "-"), |(ours, plain)| format!("{ours:>9.2} {plain:>9.2}"));
        println!(
            "{:>16} {:>6} {:>10.3e} {:>11} {:>6} {tf}  {:#x}{}",
            format!("{m}x{n}x{k}"),
            c.inputs.name(),
            c.out.err,
            format!("{} of {m}", c.rows),
            if c.pass { "PASS" } else { "FAIL" },
            c.seed,
            if quantized { format!(", {}", c.out.summary()) } else { String::new() }
        );
    };
    let mut pass = true;
    if exact {
        let call = epilogue::check_with_epilogue(gpu, gemm, size, threshold, epilogue::Inputs::Exact)?;
        line(&call.check, None);
        pass &= call.check.pass;
    }
    let mut call = epilogue::check_with_epilogue(gpu, gemm, size, threshold, epilogue::Inputs::Random)?;
    if !timed {
        line(&call.check, None);
        return Ok(pass && call.check.pass);
    }
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let s = &gpu.stream;
    let dc = |e| RuntimeError::Driver { call: "cuMemcpy/cuMemAlloc", err: e };
    let a = s.clone_htod(&vec![bf16::ONE; mu * ku]).map_err(dc)?;
    let b = s.clone_htod(&vec![bf16::ONE; nu * ku]).map_err(dc)?;
    let mut c_plain = unsafe { s.alloc::<bf16>(mu * nu) }.map_err(dc)?;
    let ms = bench(gpu, &mut [&mut |_| call.bound.launch(&gpu.stream), &mut |_| blas.gemm_bf16_tn(m, n, k, &a, &b, &mut c_plain)])?;
    line(&call.check, Some((tflops(m, n, k, ms[0]), tflops(m, n, k, ms[1]))));
    Ok(pass && call.check.pass)
}

#[allow(clippy::too_many_arguments)]
fn gemm_shape(
    gpu: &Gpu,
    gemm: &Gemm,
    blas: &Cublas,
    lt: &CublasLt,
    (m, n, k): (u64, u64, u64),
    b_kn: bool,
    threshold: f64,
    timed: bool,
) -> Result<bool> {
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let a_h = random_bf16(mu * ku, &mut rng);
    let b_h = random_bf16(nu * ku, &mut rng);
    let s = &gpu.stream;
    let dc = |e| RuntimeError::Driver { call: "cuMemcpy/cuMemAlloc", err: e };
    let a = s.clone_htod(&a_h).map_err(dc)?;
    let b = s.clone_htod(&b_h).map_err(dc)?;
    // A kernel taking B as K x N gets the transpose of the N x K matrix the
    // references use.
    let b_kernel = if b_kn { Some(s.clone_htod(&transpose(&b_h, nu, ku)).map_err(dc)?) } else { None };
    let mut c = unsafe { s.alloc::<bf16>(mu * nu) }.map_err(dc)?;
    let mut c_ref = unsafe { s.alloc::<bf16>(mu * nu) }.map_err(dc)?;
    let mut c_lt = unsafe { s.alloc::<bf16>(mu * nu) }.map_err(dc)?;
    for buf in [&mut c, &mut c_ref, &mut c_lt] {
        gpu.poison16(buf, POISON_BF16)?;
    }
    let mut launch = gemm.bind(gpu, GemmSize::new(m, n, k), &a, b_kernel.as_ref().unwrap_or(&b), &c)?;
    launch.launch_checked()?;
    blas.gemm_bf16_tn(m, n, k, &a, &b, &mut c_ref)?;
    lt.gemm_bf16_tn(m, n, k, &a, &b, &mut c_lt)?;
    gpu.sync("cuBLAS")?;
    let out = bf16_to_f64(&s.clone_dtoh(&c).map_err(dc)?);
    let refb = bf16_to_f64(&s.clone_dtoh(&c_ref).map_err(dc)?);
    let outl = bf16_to_f64(&s.clone_dtoh(&c_lt).map_err(dc)?);
    let err_blas = rel_frobenius(&out, &refb);
    let err_lt = rel_frobenius(&outl, &refb);
    let mut ok = passes(err_blas, threshold) && passes(err_lt, threshold);
    let err_cpu = if m * n * k <= CPU_REF_LIMIT {
        let cpu = cpu_gemm_tn(&a_h, &b_h, mu, nu, ku);
        let e = rel_frobenius(&out, &cpu);
        // The baseline itself must agree with FP64 too.
        ok &= passes(e, threshold) && passes(rel_frobenius(&refb, &cpu), threshold);
        format!("{e:.3e}")
    } else {
        "-".into()
    };
    let tf = if timed {
        let ms = bench(
            gpu,
            &mut [
                &mut |_| launch.launch(&gpu.stream),
                &mut |_| blas.gemm_bf16_tn(m, n, k, &a, &b, &mut c_ref),
                &mut |_| lt.gemm_bf16_tn(m, n, k, &a, &b, &mut c_lt),
            ],
        )?;
        format!("{:>9.2} {:>9.2} {:>9.2}", tflops(m, n, k, ms[0]), tflops(m, n, k, ms[1]), tflops(m, n, k, ms[2]))
    } else {
        format!("{:>9} {:>9} {:>9}", "-", "-", "-")
    };
    println!(
        "{:>16} {:>10.3e} {:>10} {:>10.3e} {:>6} {tf}  {seed:#x}",
        format!("{m}x{n}x{k}"),
        err_blas,
        err_cpu,
        err_lt,
        if ok { "PASS" } else { "FAIL" },
    );
    Ok(ok)
}

/// The `cols x rows` transpose of a row-major `rows x cols` matrix.
fn transpose(x: &[bf16], rows: usize, cols: usize) -> Vec<bf16> {
    let mut t = vec![bf16::ZERO; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = x[r * cols + c];
        }
    }
    t
}

fn copy_shape(gpu: &Gpu, kernel: &Kernel, m: u64, n: u64, timed: bool) -> Result<bool> {
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let len = (m * n) as usize;
    let x_h = random_bf16(len, &mut rng);
    let s = &gpu.stream;
    let dc = |e| RuntimeError::Driver { call: "cuMemcpy/cuMemAlloc", err: e };
    let x = s.clone_htod(&x_h).map_err(dc)?;
    let mut y = unsafe { s.alloc::<bf16>(len) }.map_err(dc)?;
    gpu.poison16(&mut y, POISON_BF16)?;
    let problem = Problem::default().with("M", m).with("N", n);
    let mut launch = kernel.prepare(&problem, &[gpu.bind("X", &x), gpu.bind("Y", &y)])?;
    launch.launch_checked()?;
    let y_h = s.clone_dtoh(&y).map_err(dc)?;
    let mismatches = x_h.iter().zip(&y_h).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    let err = rel_frobenius(&bf16_to_f64(&y_h), &bf16_to_f64(&x_h));
    let ok = mismatches == 0;
    let gbs = if timed {
        let ms = bench(gpu, &mut [&mut |_| launch.launch()])?[0];
        format!("{:>9.1}", 2.0 * len as f64 * 2.0 / (ms * 1e-3) / 1e9)
    } else {
        format!("{:>9}", "-")
    };
    println!("{:>12} {:>10} {:>10.3e} {:>6} {gbs}  {seed:#x}", format!("{m}x{n}"), mismatches, err, if ok { "PASS" } else { "FAIL" });
    Ok(ok)
}
