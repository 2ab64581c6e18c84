//! tilec-bench: times compiled GEMM artifacts against cuBLAS / cuBLASLt
//! (BF16) and cuBLASLt FP8 e4m3 with per-tensor scales and with block scales
//! (1x128 for A, 128x128 for B), on the same random inputs in one process.
//! FP8 block scales are powers of two drawn log-uniform over 2^-10..2^10,
//! and the block-scaled runs are checked against cuBLAS BF16 on the
//! dequantised inputs (exact in bf16). See `tilec-bench --help` and
//! docs/benchmarks/README.md.
//!
//! Per shape and dtype: inputs are drawn once and spread over enough buffer
//! sets that the sets together span `--l2-factor` times the L2; every run is
//! first checked once (output poisoned with NaN, one launch, relative
//! Frobenius error against cuBLAS); the runs that passed are then timed
//! together in `--reps` interleaved rounds (`tilec_runtime::timing`), each
//! launch taking the next set, and the report (`tilec-report`'s schema) gets
//! every round's time. Draw and compare reports with `tilec-report`.
//!
//! Fused epilogues: artifacts whose manifest's `epilogue` does more than
//! round to bf16 (`examples/gemm_bias_gelu.tile`) are timed with their
//! vectors and matrices bound (fresh random values, one set for every
//! rotated set) against a baseline computing the same epilogue, chosen by
//! evaluating it (`tilec_runtime::epilogue::classify`): bias + GELU(tanh)
//! is cuBLASLt with `CUBLASLT_EPILOGUE_GELU_BIAS`, bias alone
//! `CUBLASLT_EPILOGUE_BIAS`, `alpha * acc + beta * R` (a bf16 residual
//! `R[M,N]`) cuBLASLt with that alpha and beta and R as its C (D separate),
//! anything else (or a fused plan cuBLASLt refuses) cuBLASLt writing bf16
//! followed by an element-wise kernel generated from the epilogue and
//! compiled with NVRTC, timed together as one baseline. The reference is
//! the epilogue applied in f64 to cuBLAS's product (itself checked against
//! FP64 on the CPU); our kernels and the baselines are both checked against
//! it. All artifacts of one dtype in a run must compute the same epilogue.
//! An epilogue of interleaved parts of the product (`acc_part`: SwiGLU's
//! `silu(gate) * up` with gate and up interleaved in one B of N rows)
//! stores `C[M,N/parts]`; its baseline (kind `gated`,
//! `...-2gemm+nvrtc-gated`) is one cuBLASLt GEMM per part, of N/parts
//! columns on the part's weights (B's rows taken apart on the host, once
//! per rotated set, before any timing; a block-scaled one with the part's
//! rows of SB), each writing its bf16 product to a scratch buffer of its
//! own, then the generated element-wise kernel reading the products and
//! writing C, all timed together as one run. Shapes are the GEMM's: N
//! counts the product's columns. An epilogue quantising the
//! output (kind `quantize`: an FP8 C of e4m3 codes, per-group scales in
//! group stores, `examples/gemm_fp8_quantize.tile`) writes C and its group
//! stores to buffers of their own for every rotated set; its baseline is
//! cuBLASLt writing the bf16 product to a scratch buffer, then the kernel
//! generated from the epilogue by rows and groups reading it and writing
//! the set's C and group stores (`...+nvrtc-quantize`), timed together.
//! Every run's outputs are checked against the epilogue applied row by row
//! to cuBLAS's product as `tilec-gpu-test` checks random inputs
//! (`quantize::POLICY`): the codes decoded with their scales by their
//! relative error, each stored value within a relative 2^-6.

use clap::Parser;
use half::bf16;
use std::process::ExitCode;
use std::time::Instant;
use tilec_runtime::artifact::{Artifact, DType, Tuning};
use tilec_runtime::bench::*;
use tilec_runtime::check::*;
use tilec_runtime::lt::{LtGemm, LtHandle, LtInput};
use tilec_cli::{CompletionArgs, EXIT_ERROR};
use tilec_runtime::target::Target;
use tilec_runtime::timing::Launch;
use tilec_runtime::*;
use tilec_runtime::artifact::Epilogue;
use tilec_runtime::acc_parts::AccParts;
use tilec_runtime::epilogue::{classify, random_matrices, upload_matrices, upload_vectors, ElementwiseKernel, EpilogueKind, EpilogueReference, EpilogueRows, HostMatrix, HostVector, KernelShape};
use tilec_runtime::quantize::{self, OutputCheck};
use tilec_runtime::lt::LtEpilogue;
use tilec_runtime::error::DriverCtx;
use cudarc::driver::{sys, CudaSlice};

/// Scales the FP8 baseline runs with (powers of two: the scaled reference is exact).
const FP8_SCALE_A: f32 = 0.5;
const FP8_SCALE_B: f32 = 0.25;
/// Multiply-adds the FP64 CPU check of the cuBLAS reference may spend per shape.
const CPU_CHECK_BUDGET: u64 = 1 << 28;

/// tilec-bench's command line; [`Cli::bench_args`] turns it into the run's [`BenchArgs`].
#[derive(Parser, Debug)]
#[command(
    name = "tilec-bench",
    version,
    about = "Times compiled GEMM artifacts against cuBLAS / cuBLASLt (BF16) and cuBLASLt FP8",
    after_help = "Exit status: 0 ok (or SKIPPED: no libcuda), 1 a correctness check failed or an input is not usable, 2 a usage error."
)]
struct Cli {
    /// A compiled GEMM artifact (repeatable; each is a candidate, the best per shape is reported, all are in the JSON)
    #[arg(long = "artifact", value_name = "DIR")]
    artifacts: Vec<String>,
    /// MxNxK,... or the words default, square, llm
    #[arg(long, value_name = "LIST", default_value = "default", value_parser = parse_shapes)]
    shapes: Shapes,
    /// bf16 and/or fp8
    #[arg(long, alias = "dtype", value_name = "LIST", default_value = "bf16,fp8", value_parser = parse_dtypes)]
    dtypes: Dtypes,
    /// Untimed runs before timing
    #[arg(long, value_name = "N", default_value_t = 10)]
    warmup: usize,
    /// Timed rounds (each round runs every kernel once, interleaved); median and spread over them
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    /// Write the full report (schema tilec-bench/3; draw it with tilec-report)
    #[arg(long, value_name = "OUT")]
    json: Option<String>,
    /// Record each problem's fastest kernel that passed its check in this tuning file (created if
    /// missing, entries for the same problems replaced), by the config its manifest names; `tilec
    /// compile --tuning FILE` takes it for the shape
    #[arg(long, value_name = "FILE", conflicts_with_all = ["baseline_only", "grouped"])]
    tuning: Option<String>,
    /// Time the vendor baselines only (artifacts are ignored)
    #[arg(long)]
    baseline_only: bool,
    /// Time grouped GEMMs (mixture-of-experts) instead: per-expert cuBLAS, cublasGemmGroupedBatchedEx,
    /// per-expert cuBLASLt FP8 block-scaled, and any --artifact grouped kernels (--json writes schema tilec-bench-grouped/1)
    #[arg(long)]
    grouped: bool,
    /// With --grouped: these problems instead of the benchmark's, `contiguous:NxK:ROWS,...` or
    /// `masked/M_MAX:NxK:COUNTS,...` separated by `;`
    #[arg(long, value_name = "LIST", value_parser = parse_grouped_problems)]
    grouped_problems: Option<GroupedProblems>,
    /// Time this layer of BF16 GEMMs (`MxNxK,...` in order, repeats kept) launched back to back
    /// instead, one --artifact per step in the same order: without and with programmatic dependent
    /// launch, and cuBLAS (--json writes schema tilec-bench-sequence/1)
    #[arg(long, value_name = "LIST", value_parser = parse_sequence, conflicts_with_all = ["grouped", "tuning", "baseline_only"])]
    sequence: Option<Sequence>,
    /// With --sequence: times the layer runs, each on weights of its own
    #[arg(long, value_name = "N", default_value_t = 4, requires = "sequence", value_parser = clap::value_parser!(u64).range(1..))]
    layers: u64,
    /// Largest relative Frobenius error vs cuBLAS that passes
    #[arg(long, value_name = "T", default_value_t = 1e-2, value_parser = positive)]
    threshold: f64,
    /// Rotate input sets until they span F x the L2 (0: one set)
    #[arg(long, value_name = "F", default_value_t = 4.0, value_parser = non_negative)]
    l2_factor: f64,
    /// At most N rotated sets
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    max_sets: u64,
    /// Input seed, decimal or 0x-hex (default: from the clock)
    #[arg(long, value_name = "N", value_parser = parse_seed)]
    seed: Option<u64>,
    /// Cap a slow kernel's timed calls near T ms (fewer reps, at least 5; warm-up near T/4)
    #[arg(long, value_name = "T", default_value_t = 3000.0, value_parser = positive)]
    max_run_ms: f64,
    /// Do not hold the stream with a spin kernel while enqueuing
    #[arg(long)]
    no_spin: bool,
    /// Keep the driver's JIT cache (default: CUDA_CACHE_DISABLE=1, so module load time is the real PTX->SASS compile)
    #[arg(long)]
    jit_cache: bool,
    /// No GPU: print the tables of a saved report
    #[arg(long, value_name = "IN")]
    from_json: Option<String>,
    #[command(flatten)]
    completions: CompletionArgs,
}

#[derive(Clone, Debug)]
struct Shapes(Vec<Shape>);
#[derive(Clone, Debug)]
struct Dtypes(Vec<BenchDtype>);

fn parse_shapes(s: &str) -> Result<Shapes, String> {
    tilec_runtime::bench::parse_shapes(s).map(Shapes)
}

#[derive(Clone, Debug)]
struct Sequence(Vec<Shape>);

/// `MxNxK,...` in order, a shape given twice kept twice (a layer may run one twice).
fn parse_sequence(s: &str) -> Result<Sequence, String> {
    let mut steps = Vec::new();
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        match tilec_runtime::bench::parse_shapes(item)?[..] {
            [shape] if item.contains(['x', 'X']) => steps.push(shape),
            _ => return Err(format!("bad step `{item}`: want MxNxK")),
        }
    }
    if steps.is_empty() {
        return Err("no step given".into());
    }
    Ok(Sequence(steps))
}

#[derive(Clone, Debug)]
struct GroupedProblems(Vec<tilec_runtime::grouped::GroupedProblem>);

fn parse_grouped_problems(s: &str) -> Result<GroupedProblems, String> {
    tilec_runtime::grouped::parse_problem_list(s).map(GroupedProblems)
}

fn parse_dtypes(s: &str) -> Result<Dtypes, String> {
    tilec_runtime::bench::parse_dtypes(s).map(Dtypes)
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 => Ok(x),
        _ => Err(format!("want a number > 0, found `{s}`")),
    }
}

fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x >= 0.0 => Ok(x),
        _ => Err(format!("want a number >= 0, found `{s}`")),
    }
}

fn parse_seed(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("want a decimal or 0x-hex integer, found `{s}`"))
}

impl Cli {
    fn bench_args(self) -> BenchArgs {
        BenchArgs {
            artifacts: self.artifacts,
            shapes: self.shapes.0,
            dtypes: self.dtypes.0,
            warmup: self.warmup,
            reps: self.reps as usize,
            json: self.json,
            tuning: self.tuning,
            baseline_only: self.baseline_only,
            grouped: self.grouped,
            grouped_problems: self.grouped_problems.map(|p| p.0),
            sequence: self.sequence.map(|s| s.0),
            layers: self.layers as usize,
            threshold: self.threshold,
            l2_factor: self.l2_factor,
            max_sets: self.max_sets as usize,
            seed: self.seed,
            max_run_ms: self.max_run_ms,
            spin: !self.no_spin,
            jit_cache: self.jit_cache,
            from_json: self.from_json,
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let cli = Cli::parse();
    if cli.completions.print_if_asked::<Cli>() {
        return ExitCode::SUCCESS;
    }
    let args = cli.bench_args();
    if let Some(path) = &args.from_json {
        return replot(path);
    }
    // Artifacts are checked even where there is no GPU.
    let mut cands = Vec::new();
    if !args.baseline_only && !args.grouped && args.sequence.is_none() {
        for dir in &args.artifacts {
            match Artifact::load(dir) {
                Ok(a) => {
                    let spec = bench_spec(&a);
                    if let Err(e) = &spec {
                        eprintln!("tilec-bench: {dir}: {e} (skipped)");
                    }
                    cands.push(Candidate::new(dir, a, spec));
                }
                Err(e) => {
                    eprintln!("tilec-bench: {dir}: {e}");
                    return ExitCode::from(EXIT_ERROR);
                }
            }
        }
    }
    settle_epilogues(&mut cands);
    if let Err(e) = ensure_cuda() {
        println!("tilec-bench: {e}");
        if args.grouped {
            tilec_cli::report_skip("tilec-bench", "no libcuda: grouped baselines not run");
            return ExitCode::SUCCESS;
        }
        if let Some(steps) = &args.sequence {
            if sequence_artifacts(&args, steps).is_none() {
                return ExitCode::from(EXIT_ERROR);
            }
            tilec_cli::report_skip("tilec-bench", &format!("no libcuda: the sequence's {} artifacts are valid, not run", steps.len()));
            return ExitCode::SUCCESS;
        }
        let what = format!(
            "no libcuda: {} GEMM artifact(s) valid, {} shape(s) x {} dtype(s) not run",
            cands.iter().filter(|c| c.spec.is_some()).count(),
            args.shapes.len(),
            args.dtypes.len()
        );
        tilec_cli::report_skip("tilec-bench", &what);
        return ExitCode::SUCCESS;
    }
    if !args.jit_cache {
        // Must precede cuInit. Only the PTX JIT cache is affected.
        std::env::set_var("CUDA_CACHE_DISABLE", "1");
    }
    if args.grouped {
        return grouped(&argv, &args);
    }
    if let Some(steps) = &args.sequence {
        return sequence(&argv, &args, steps);
    }
    match run(&argv, &args, &mut cands) {
        Ok(report) => {
            if let Some(path) = &args.tuning {
                if let Err(e) = record_tuning(path, &report, &cands) {
                    eprintln!("tilec-bench: error: {e}");
                    return ExitCode::from(EXIT_ERROR);
                }
            }
            let failed = report.results.iter().filter(|r| r.any_check_failed() || r.error.is_some()).count();
            if failed > 0 {
                println!("tilec-bench: {failed} shape(s) had a failed check or an error");
                ExitCode::from(EXIT_ERROR)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("tilec-bench: error: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// `--tuning FILE`: the run's fastest checked kernels, by the configs their
/// manifests name, added to the tuning file of the GPU it ran on.
fn record_tuning(path: &str, report: &Report, cands: &[Candidate]) -> std::result::Result<(), String> {
    let target = Target::from_name(&report.device.target).map_err(|e| format!("--tuning: {e}"))?;
    let configs = cands.iter().filter_map(|c| Some((c.info.dir.clone(), c.artifact.manifest.config.clone()?))).collect();
    let mut tuning = Tuning::load_or_new(path, target).map_err(|e| e.to_string())?;
    let added = tilec_runtime::tuning::record(&mut tuning, &report.results, &configs);
    tuning.save(path).map_err(|e| e.to_string())?;
    println!("tilec-bench: {added} problem(s) recorded in {path} ({} in all)", tuning.entries.len());
    Ok(())
}

/// Each artifact folder loaded, named by its last component; `None`, having
/// said which folder and why, where one does not load.
fn named_artifacts(dirs: &[String]) -> Option<Vec<(String, Artifact)>> {
    let mut out = Vec::with_capacity(dirs.len());
    for dir in dirs {
        match Artifact::load(dir) {
            Ok(a) => out.push((dir.trim_end_matches('/').rsplit('/').next().unwrap_or(dir).to_string(), a)),
            Err(e) => {
                eprintln!("tilec-bench: {dir}: {e}");
                return None;
            }
        }
    }
    Some(out)
}

/// The run options `--grouped` and `--sequence` share, from the command line.
fn run_options<'a>(argv: &'a [String], args: &'a BenchArgs) -> tilec_runtime::timing::RunOptions<'a> {
    tilec_runtime::timing::RunOptions {
        command_line: argv,
        warmup: args.warmup,
        reps: args.reps,
        threshold: args.threshold,
        spin: args.spin,
        max_run_ms: args.max_run_ms,
        json: args.json.as_deref(),
    }
}

/// `--grouped`: the grouped-GEMM baselines (`tilec_runtime::grouped_bench`).
fn grouped(argv: &[String], args: &BenchArgs) -> ExitCode {
    use tilec_runtime::grouped_bench::{run_grouped, GroupedArgs};
    let Some(grouped_artifacts) = named_artifacts(&args.artifacts) else { return ExitCode::from(EXIT_ERROR) };
    let seed = args.seed.unwrap_or_else(seed_from_time);
    let g = GroupedArgs {
        run: run_options(argv, args),
        problems: args.grouped_problems.clone().unwrap_or_else(|| tilec_runtime::grouped::default_grouped_problems(seed)),
        seed,
        artifacts: grouped_artifacts,
    };
    match run_grouped(&g) {
        Ok(report) if report.results.iter().any(|r| r.failed()) => {
            println!("tilec-bench: a grouped problem had a failed check or an error");
            ExitCode::from(1)
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tilec-bench: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The `--sequence`'s artifacts, one per step; `None`, having said why,
/// where one does not load or their count is not the steps'.
fn sequence_artifacts(args: &BenchArgs, steps: &[Shape]) -> Option<Vec<(String, Artifact)>> {
    let artifacts = named_artifacts(&args.artifacts)?;
    if artifacts.len() != steps.len() {
        eprintln!("tilec-bench: --sequence has {} steps but {} --artifact were given: give one per step, in order", steps.len(), artifacts.len());
        return None;
    }
    Some(artifacts)
}

/// `--sequence`: a layer of GEMMs back to back (`tilec_runtime::sequence_bench`).
fn sequence(argv: &[String], args: &BenchArgs, steps: &[Shape]) -> ExitCode {
    use tilec_runtime::sequence_bench::{run_sequence, SequenceArgs};
    let Some(artifacts) = sequence_artifacts(args, steps) else { return ExitCode::from(EXIT_ERROR) };
    let s = SequenceArgs {
        run: run_options(argv, args),
        sizes: steps.iter().map(|s| GemmSize::new(s.m, s.n, s.k)).collect(),
        artifacts,
        layers: args.layers,
        seed: args.seed,
        commit: build_commit(),
    };
    match run_sequence(&s) {
        Ok(report) if report.runs.iter().any(|r| !r.pass) => {
            println!("tilec-bench: a way of running the sequence failed its check");
            ExitCode::from(EXIT_ERROR)
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tilec-bench: error: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn replot(path: &str) -> ExitCode {
    match Report::load(path) {
        Ok(report) => {
            print!("{}", format_report_tables(&report.results));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tilec-bench: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

// ------------------------------------------------------------ artifacts

/// The GEMM spec of an artifact tilec-bench can time: B stored `[N,K]`, as
/// the baselines take it.
fn bench_spec(a: &Artifact) -> Result<GemmSpec> {
    let spec = GemmSpec::from_manifest(&a.manifest)?;
    if spec.b_layout != BLayout::Nk {
        return Err(RuntimeError::NotGemm("tilec-bench times B[N,K] GEMMs; this one takes B[K,N]".into()));
    }
    Ok(spec)
}

/// A candidate's epilogue as the run compares them: `None` for a plain GEMM.
fn fused_epilogue(spec: &GemmSpec) -> Option<&Epilogue> {
    spec.epilogue.as_ref().filter(|_| spec.has_epilogue())
}

/// One epilogue per dtype: a candidate whose epilogue differs from the
/// first usable one's of its dtype is left out (its baselines would be
/// other ones), with the reason in its `error`.
fn settle_epilogues(cands: &mut [Candidate]) {
    let mut first: Vec<(BenchDtype, String, Option<Epilogue>)> = Vec::new();
    for c in cands.iter_mut() {
        let (Some(spec), Some(dtype)) = (&c.spec, c.info.dtype) else { continue };
        let mine = fused_epilogue(spec).cloned();
        match first.iter().find(|(d, _, _)| *d == dtype) {
            None => first.push((dtype, c.info.dir.clone(), mine)),
            Some((_, dir, e)) if *e != mine => {
                let why = format!("its epilogue differs from {dir}'s; benchmark artifacts of one epilogue per dtype in a run");
                eprintln!("tilec-bench: {}: {why} (skipped)", c.info.dir);
                c.info.error = Some(why);
                c.spec = None;
            }
            Some(_) => {}
        }
    }
}

struct Candidate {
    info: ArtifactInfo,
    artifact: Artifact,
    spec: Option<GemmSpec>,
    gemm: Option<Gemm>,
}

impl Candidate {
    fn new(dir: &str, artifact: Artifact, spec: Result<GemmSpec>) -> Self {
        let m = &artifact.manifest;
        let dtype = |s: &GemmSpec| if s.input == DType::F8e4m3 { BenchDtype::Fp8 } else { BenchDtype::Bf16 };
        let info = ArtifactInfo {
            dir: dir.to_string(),
            entry: m.entry.clone(),
            kernel_name: m.kernel_name.clone(),
            dtype: spec.as_ref().ok().map(dtype),
            block: m.block,
            cluster: m.cluster,
            dynamic_smem_bytes: m.dynamic_smem_bytes,
            config: Some(kernel_config(m)),
            module_load_ms: None,
            first_launch_ms: None,
            num_regs: None,
            static_smem_bytes: None,
            error: spec.as_ref().err().map(|e| e.to_string()),
        };
        Candidate { info, artifact, spec: spec.ok(), gemm: None }
    }
    fn dtype(&self) -> Option<BenchDtype> {
        self.info.dtype.filter(|_| self.gemm.is_some())
    }
}

// ---------------------------------------------------------------- data

fn poison(gpu: &Gpu, c: &mut CudaSlice<bf16>) -> Result<()> {
    gpu.poison16(c, POISON_BF16)
}

/// Device buffers of one shape: `sets` copies of A, B and C (N columns, or
/// a gated epilogue's N / parts), and for a gated epilogue
/// each set's B taken apart into its parts' weights (set, then part), which
/// the baseline's GEMMs read.
struct Sets<TIn> {
    a: Vec<CudaSlice<TIn>>,
    b: Vec<CudaSlice<TIn>>,
    c: Vec<CudaSlice<bf16>>,
    b_parts: Vec<Vec<CudaSlice<TIn>>>,
}

impl<TIn> Sets<TIn> {
    /// Each set's parts' B addresses (set, then part); empty without parts.
    fn part_addrs(&self, gpu: &Gpu) -> Vec<Vec<u64>> {
        self.b_parts.iter().map(|parts| parts.iter().map(|b| gpu.addr(b)).collect()).collect()
    }
}

/// Host inputs with room for `sets` distinct windows (set s starts at s*PAD).
const PAD: usize = 4099;

/// Uploads `sets` sets (see [`Sets`]), B taken apart into the parts of
/// `gated` where given (on the host, outside any timing).
fn upload<T: cudarc::driver::DeviceRepr + Copy>(
    gpu: &Gpu,
    a_h: &[T],
    b_h: &[T],
    shape: Shape,
    gated: Option<&AccParts>,
    sets: usize,
) -> Result<Sets<T>> {
    let s = &gpu.stream;
    let c_cols = gated.map_or(shape.n, |g| g.out_cols(shape.n));
    let (mk, nk, mn) = ((shape.m * shape.k) as usize, (shape.n * shape.k) as usize, (shape.m * c_cols) as usize);
    let mut out = Sets { a: Vec::new(), b: Vec::new(), c: Vec::new(), b_parts: Vec::new() };
    for i in 0..sets {
        let b = &b_h[i * PAD..i * PAD + nk];
        out.a.push(s.clone_htod(&a_h[i * PAD..i * PAD + mk]).ctx("cuMemcpyHtoD(A)")?);
        out.b.push(s.clone_htod(b).ctx("cuMemcpyHtoD(B)")?);
        let mut c = unsafe { s.alloc::<bf16>(mn) }.ctx("cuMemAlloc(C)")?;
        poison(gpu, &mut c)?;
        out.c.push(c);
        if let Some(g) = gated {
            let parts = (0..g.parts)
                .map(|q| s.clone_htod(&g.part_rows(b, shape.k as usize, 1, q)?).ctx("cuMemcpyHtoD(B part)"))
                .collect::<Result<Vec<_>>>()?;
            out.b_parts.push(parts);
        }
    }
    Ok(out)
}

// ----------------------------------------------------------------- run

struct Ctx<'a> {
    gpu: &'a Gpu,
    timer: Timer<'a>,
    blas: Cublas,
    lt: LtHandle,
    args: &'a BenchArgs,
    l2: u64,
    mem_budget: u64,
    scale_a: CudaSlice<f32>,
    scale_b: CudaSlice<f32>,
}

/// The fused epilogue the candidates of one dtype compute, and what the vendor can fuse of it.
struct RunEpilogue {
    epilogue: Epilogue,
    vectors: Vec<VectorSpec>,
    matrices: Vec<MatrixSpec>,
    kind: EpilogueKind,
    /// The interleaved parts it reads, if any (C then has N / parts columns).
    gated: Option<AccParts>,
    /// What the kernels write: C and the group stores.
    output: OutputSpec,
}

impl RunEpilogue {
    /// The epilogue of the usable candidates of `dtype`, if they fuse one
    /// (settle_epilogues left one per dtype).
    fn of(cands: &[Candidate], dtype: BenchDtype) -> Option<RunEpilogue> {
        let spec = cands.iter().filter(|c| c.dtype() == Some(dtype)).find_map(|c| c.spec.as_ref())?;
        let epilogue = fused_epilogue(spec)?.clone();
        let kind = classify(Some(&epilogue), &spec.vectors, &spec.matrices);
        Some(RunEpilogue {
            epilogue,
            vectors: spec.vectors.clone(),
            matrices: spec.matrices.clone(),
            kind,
            gated: spec.gated.clone(),
            output: spec.output.clone(),
        })
    }

    /// The runs write C other than bf16, or group stores
    /// ([`OutputSpec::quantized`]): their outputs are [`OutSets`], checked
    /// as `quantize::POLICY` says.
    fn quantized(&self) -> bool {
        self.output.quantized()
    }

    /// C's size (and the vectors' and matrices'): N / parts columns for a gated epilogue.
    fn out_size(&self, size: GemmSize) -> GemmSize {
        match &self.gated {
            Some(g) => GemmSize { n: g.out_cols(size.n), ..size },
            None => size,
        }
    }
}

/// The epilogue's vectors and matrices of one shape: random values, on the device.
struct ShapeVectors {
    host: Vec<HostVector>,
    host_matrices: Vec<HostMatrix>,
    _slices: Vec<CudaSlice<u8>>,
    bindings: Vec<TensorBinding>,
    matrix_bindings: Vec<TensorBinding>,
}

impl ShapeVectors {
    fn new(gpu: &Gpu, epi: &RunEpilogue, size: GemmSize, seed: u64) -> Result<Self> {
        let mut rng = Rng::new(seed ^ 0xE9_1106);
        let out = epi.out_size(size);
        let host = tilec_runtime::epilogue::random_vectors(&epi.vectors, out, &mut rng);
        let host_matrices = random_matrices(&epi.matrices, out, &mut rng);
        let (mut slices, bindings) = upload_vectors(gpu, &host)?;
        let (matrix_slices, matrix_bindings) = upload_matrices(gpu, &host_matrices)?;
        slices.extend(matrix_slices);
        Ok(ShapeVectors { host, host_matrices, _slices: slices, bindings, matrix_bindings })
    }
    fn addr(&self, tensor: &str) -> Option<u64> {
        self.bindings.iter().chain(&self.matrix_bindings).find(|b| b.name == tensor).map(|b| b.addr)
    }
    /// The vectors' and then the matrices' addresses, as the element-wise kernel takes them.
    fn operand_addrs(&self) -> Vec<u64> {
        self.bindings.iter().chain(&self.matrix_bindings).map(|b| b.addr).collect()
    }
    /// `buffers` with the vectors and matrices bound.
    fn bind(&self, buffers: GemmBuffers) -> GemmBuffers {
        buffers.with_vectors(self.bindings.clone()).with_matrices(self.matrix_bindings.clone())
    }
}

/// What the runs of a fused epilogue are checked against.
enum EpiReference {
    /// C, rounded to bf16.
    Bf16(Vec<bf16>),
    /// C's and the group stores' rows, in f64, for outputs a quantising
    /// epilogue writes ([`RunEpilogue::quantized`]).
    Rows(EpilogueRows),
}

/// The epilogue applied in f64 to `scale` times cuBLAS's product `refh`
/// (all of C, on all cores; a gated epilogue's `M x N/parts` from the
/// product's `M x N`; a group reduction over each row's columns): what our
/// kernels and the epilogue baselines are checked against.
fn epilogue_reference(epi: &RunEpilogue, vectors: &ShapeVectors, refh: &[bf16], scale: f64, shape: Shape) -> Result<EpiReference> {
    let (m, n) = (shape.m as usize, shape.n as usize);
    let acc: Vec<f64> = refh.iter().map(|x| x.to_f64() * scale).collect();
    let rows: Vec<usize> = (0..m).collect();
    let out = EpilogueReference::new(&epi.epilogue, &vectors.host, &vectors.host_matrices)?.rows(&acc, &rows, n);
    Ok(if epi.quantized() { EpiReference::Rows(out) } else { EpiReference::Bf16(out.values.into_iter().map(bf16::from_f64).collect()) })
}

/// The outputs of every rotated set where the epilogue quantises
/// ([`RunEpilogue::quantized`]): C's bytes and each group store's values.
struct OutSets {
    c: Vec<CudaSlice<u8>>,
    stores: Vec<Vec<CudaSlice<f32>>>,
}

impl OutSets {
    /// `sets` sets of the outputs of `epi` for C of `out`, poisoned.
    fn new(gpu: &Gpu, epi: &RunEpilogue, out: GemmSize, sets: usize) -> Result<Self> {
        let mut outs = OutSets { c: Vec::with_capacity(sets), stores: Vec::with_capacity(sets) };
        let bytes = (out.m * out.n) as usize * epi.output.dtype.size_bytes();
        for _ in 0..sets {
            outs.c.push(unsafe { gpu.stream.alloc::<u8>(bytes) }.ctx("cuMemAlloc(C)")?);
            let mut stores = Vec::with_capacity(epi.output.group_stores.len());
            for st in &epi.output.group_stores {
                stores.push(unsafe { gpu.stream.alloc::<f32>(st.len(out) as usize) }.ctx("cuMemAlloc(group store)")?);
            }
            outs.stores.push(stores);
        }
        for set in 0..sets {
            outs.poison(gpu, set)?;
        }
        Ok(outs)
    }

    /// Fills set `set`'s outputs with 0xFF bytes: NaN as bf16, e4m3 and f32.
    fn poison(&mut self, gpu: &Gpu, set: usize) -> Result<()> {
        gpu.poison8(&mut self.c[set], 0xFF)?;
        self.stores[set].iter_mut().try_for_each(|st| gpu.poison8(st, 0xFF))
    }

    /// Set `set`'s C address and its group stores' addresses, in the epilogue's order.
    fn addrs(&self, gpu: &Gpu, set: usize) -> (u64, Vec<u64>) {
        (gpu.addr(&self.c[set]), self.stores[set].iter().map(|st| gpu.addr(st)).collect())
    }

    /// `buffers` with set `set`'s C and group stores bound.
    fn bind(&self, gpu: &Gpu, output: &OutputSpec, set: usize, buffers: GemmBuffers) -> GemmBuffers {
        let c = &self.c[set];
        let c = TensorBinding { name: output.name.clone(), dtype: output.dtype, addr: gpu.addr(c), bytes: c.len() as u64 };
        let stores = output.group_stores.iter().zip(&self.stores[set]).map(|(spec, st)| gpu.bind(&spec.name, st));
        GemmBuffers { c, ..buffers }.with_group_stores(stores)
    }

    /// Set 0's outputs for C of `out` against the reference's rows (all of them).
    fn check(&self, gpu: &Gpu, output: &OutputSpec, out: GemmSize, reference: &EpilogueRows) -> Result<OutputCheck> {
        let c = gpu.stream.clone_dtoh(&self.c[0]).ctx("cuMemcpyDtoH(C)")?;
        let rows: Vec<usize> = (0..out.m as usize).collect();
        let mut stores = Vec::with_capacity(self.stores[0].len());
        for (spec, st) in output.group_stores.iter().zip(&self.stores[0]) {
            stores.push(spec.rows(&gpu.stream.clone_dtoh(st).ctx("cuMemcpyDtoH(group store)")?, &rows, out));
        }
        OutputCheck::new(output, out.n as usize, &c, &stores, reference).map_err(RuntimeError::Other)
    }
}

/// Each set's C address and group stores' addresses: the quantising
/// epilogue's `outs` where there are some, else C of `ptrs` (A, B, C of
/// each set) and no group stores.
fn set_outputs(gpu: &Gpu, ptrs: &[(u64, u64, u64)], outs: Option<&OutSets>) -> Vec<(u64, Vec<u64>)> {
    (0..ptrs.len()).map(|s| outs.map_or_else(|| (ptrs[s].2, Vec::new()), |o| o.addrs(gpu, s))).collect()
}

/// `buffers` with set `set`'s outputs of `epi` bound: those of `outs`
/// where it quantises, else `buffers`' own C.
fn bind_outputs(gpu: &Gpu, outs: Option<&OutSets>, epi: &RunEpilogue, set: usize, buffers: GemmBuffers) -> GemmBuffers {
    match outs {
        Some(o) => o.bind(gpu, &epi.output, set, buffers),
        None => buffers,
    }
}

/// A run's outputs of set 0 (poisoned before it runs) and what they are
/// checked against.
enum Verify<'a> {
    /// A bf16 C against `reference` scaled by `scale` (the relative
    /// Frobenius error within the threshold), the reference named `label`.
    Bf16 { c: &'a mut CudaSlice<bf16>, reference: &'a [bf16], scale: f64, label: String },
    /// A quantising epilogue's outputs against the reference's rows, as
    /// `quantize::POLICY` says, the reference named `label`.
    Quantized { outs: &'a mut OutSets, output: &'a OutputSpec, out: GemmSize, reference: &'a EpilogueRows, label: String },
}

impl<'a> Verify<'a> {
    /// The check of a fused epilogue's runs: `c` (set 0's bf16 C) against
    /// a bf16 reference, or `outs` against the rows of a quantising one,
    /// the reference named `label`.
    fn epilogue(
        c: &'a mut CudaSlice<bf16>,
        outs: Option<&'a mut OutSets>,
        epi: &'a RunEpilogue,
        out: GemmSize,
        reference: &'a EpiReference,
        label: &str,
    ) -> Result<Self> {
        let label = label.to_string();
        match (reference, outs) {
            (EpiReference::Bf16(reference), _) => Ok(Verify::Bf16 { c, reference, scale: 1.0, label }),
            (EpiReference::Rows(reference), Some(outs)) => Ok(Verify::Quantized { outs, output: &epi.output, out, reference, label }),
            (EpiReference::Rows(_), None) => Err(RuntimeError::Other("a quantising epilogue's outputs were not allocated".into())),
        }
    }

    fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        match self {
            Verify::Bf16 { c, .. } => poison(gpu, c),
            Verify::Quantized { outs, .. } => outs.poison(gpu, 0),
        }
    }

    /// Compares set 0's outputs with the reference (after the run).
    fn check(&self, gpu: &Gpu, threshold: f64) -> Result<Check> {
        match self {
            Verify::Bf16 { c, reference, scale, label } => Ok(make_check(label, check_output(gpu, c, reference, *scale)?, threshold)),
            Verify::Quantized { outs, output, out, reference, label } => {
                let checked = outs.check(gpu, output, *out, reference)?;
                Ok(Check {
                    reference: format!("{label}: {}; {}", checked.summary(), quantize::POLICY),
                    rel_err: checked.err.is_finite().then_some(checked.err),
                    threshold: checked.threshold(threshold),
                    pass: checked.pass(threshold),
                })
            }
        }
    }
}

/// A baseline of a fused epilogue that passed its check.
enum EpiBaseline {
    /// cuBLASLt with the epilogue fused.
    Fused(LtGemm),
    /// cuBLASLt writing bf16, then the generated element-wise kernel in place.
    Unfused(LtGemm, ElementwiseKernel, Vec<u64>),
    /// One cuBLASLt GEMM per part (`plans`), of `N/parts` columns on the
    /// set's weights of the part (`b`: set, then part), each writing its
    /// bf16 product to a scratch buffer of its own (`products`, at
    /// `product_addrs`), then the generated element-wise kernel reading the
    /// products and writing C `[M,N/parts]`.
    Gated {
        plans: Vec<LtGemm>,
        kernel: ElementwiseKernel,
        operands: Vec<u64>,
        b: Vec<Vec<u64>>,
        product_addrs: Vec<u64>,
        _products: Vec<CudaSlice<bf16>>,
    },
    /// cuBLASLt writing the bf16 product `[M,N]` to `scratch`, then the
    /// kernel generated by rows and groups reading it and writing each
    /// set's C and group stores (`outputs`: their addresses).
    Rows { plan: LtGemm, kernel: ElementwiseKernel, operands: Vec<u64>, scratch: CudaSlice<bf16>, outputs: Vec<(u64, Vec<u64>)> },
}

impl EpiBaseline {
    /// One run on the A, B, C of the `i`th of the rotated sets `ptrs` (`n`: the product's columns).
    fn run(&self, cx: &Ctx, ptrs: &[(u64, u64, u64)], i: usize, m: u64, n: u64) -> Result<()> {
        let set = i % ptrs.len();
        let p = ptrs[set];
        match self {
            EpiBaseline::Fused(plan) => unsafe { plan.run(&cx.lt, p.0, p.1, p.2) },
            EpiBaseline::Unfused(plan, kernel, vectors) => {
                unsafe { plan.run(&cx.lt, p.0, p.1, p.2) }?;
                kernel.launch(cx.gpu, p.2, vectors, m, n)
            }
            EpiBaseline::Gated { plans, kernel, operands, b, product_addrs, .. } => {
                for ((plan, &weights), &product) in plans.iter().zip(&b[set]).zip(product_addrs) {
                    unsafe { plan.run(&cx.lt, p.0, weights, product) }?;
                }
                kernel.launch_gated(cx.gpu, p.2, product_addrs, operands, m, n / plans.len() as u64)
            }
            EpiBaseline::Rows { plan, kernel, operands, scratch, outputs } => {
                let product = cx.gpu.addr(scratch);
                unsafe { plan.run(&cx.lt, p.0, p.1, product) }?;
                let (c, stores) = &outputs[set];
                kernel.launch_rows(cx.gpu, *c, product, stores, operands, m, n)
            }
        }
    }
}

/// What a gated epilogue's baseline GEMMs read: each set's weights of each
/// part (set, then part), and each part's cuBLASLt input (a block-scaled
/// one its part of B's scales), or why the parts cannot be taken apart.
struct PartGemms<'a> {
    b: &'a [Vec<u64>],
    inputs: std::result::Result<Vec<LtInput>, String>,
}

/// Makes the baseline of `epi` on cuBLASLt `input` (run names start with
/// `prefix`: `cublaslt`, `cublaslt-fp8-block`, ...), checks it once on set
/// 0 as `verify` says and adds its run to `r` (and its name to
/// `r.epilogue`); the fused cuBLASLt epilogue where [`classify`] finds one
/// and cuBLASLt has a kernel for it, else the GEMM followed by the
/// generated kernel (`+nvrtc-epilogue`; `+nvrtc-quantize` for an output
/// quantisation, which writes each set's C and group stores at `outputs`;
/// `-<parts>gemm+nvrtc-gated` for interleaved parts, one GEMM a part on
/// the weights and inputs of `parts`). Returns the run's index and the
/// baseline when it passed.
#[allow(clippy::too_many_arguments)]
fn check_epilogue_baseline(
    cx: &Ctx,
    shape: Shape,
    epi: &RunEpilogue,
    vectors: &ShapeVectors,
    (prefix, input): (&str, LtInput),
    parts: Option<&PartGemms>,
    ptrs: &[(u64, u64, u64)],
    outputs: &[(u64, Vec<u64>)],
    verify: &mut Verify,
    r: &mut ShapeResult,
) -> Option<(usize, EpiBaseline)> {
    let gpu = cx.gpu;
    r.epilogue.get_or_insert_with(|| EpilogueBaseline {
        kind: epi.kind.name().into(),
        baselines: Vec::new(),
        fused: true,
        note: None,
    });
    let fused = match &epi.kind {
        EpilogueKind::Bias { tensor } => vectors.addr(tensor).map(|bias| (LtEpilogue::Bias { bias }, "bias")),
        EpilogueKind::BiasGelu { tensor } => vectors.addr(tensor).map(|bias| (LtEpilogue::GeluBias { bias }, "gelu-bias")),
        EpilogueKind::Residual { tensor, alpha, beta } => {
            vectors.addr(tensor).map(|r| (LtEpilogue::Residual { r, alpha: *alpha as f32, beta: *beta as f32 }, "residual"))
        }
        EpilogueKind::Plain | EpilogueKind::Gated { .. } | EpilogueKind::Quantize | EpilogueKind::Other => None,
    };
    let mut check_once = |name: String, base: EpiBaseline, info_note: &mut Option<String>| -> Option<(usize, EpiBaseline)> {
        let mut run = RunResult::new(&name, RunKind::Baseline);
        let res = (|| -> Result<bool> {
            verify.poison(gpu)?;
            base.run(cx, ptrs, 0, shape.m, shape.n)?;
            gpu.sync(&name)?;
            let check = verify.check(gpu, cx.args.threshold)?;
            let pass = check.pass;
            run.check = Some(check);
            Ok(pass)
        })();
        let pass = res.unwrap_or_else(|e| {
            run.error = Some(e.to_string());
            false
        });
        if !pass {
            *info_note = Some(format!("{name} did not pass: {}", run.error.clone().unwrap_or_else(|| "check failed".into())));
        }
        r.runs.push(run);
        pass.then(|| (r.runs.len() - 1, base))
    };
    let mut note = None;
    if let Some((lt_epi, suffix)) = fused {
        let name = format!("{prefix}-{suffix}");
        match LtGemm::with_epilogue(&cx.lt, shape.m, shape.n, shape.k, input, lt_epi) {
            Ok(plan) => {
                if let Some(done) = check_once(name.clone(), EpiBaseline::Fused(plan), &mut note) {
                    let info = r.epilogue.as_mut().expect("set above");
                    info.baselines.push(name);
                    return Some(done);
                }
            }
            Err(e) => note = Some(format!("{name}: {e}")),
        }
    }
    let name = match &epi.kind {
        EpilogueKind::Quantize => format!("{prefix}+nvrtc-quantize"),
        EpilogueKind::Gated { parts, .. } => format!("{prefix}-{parts}gemm+nvrtc-gated"),
        _ => format!("{prefix}+nvrtc-epilogue"),
    };
    let unfused = (|| -> Result<EpiBaseline> {
        let kernel = ElementwiseKernel::new(gpu, &epi.epilogue, &epi.vectors, &epi.matrices, &epi.output)?;
        let operands = vectors.operand_addrs();
        // A product is written once per launch and read back at once, as an unfused MLP does: one scratch buffer.
        let scratch = |cols: u64| unsafe { gpu.stream.alloc::<bf16>((shape.m * cols) as usize) }.ctx("cuMemAlloc(product scratch)");
        let whole = || LtGemm::new(&cx.lt, shape.m, shape.n, shape.k, input);
        Ok(match kernel.shape() {
            KernelShape::InPlace => EpiBaseline::Unfused(whole()?, kernel, operands),
            KernelShape::Gated { parts: count, .. } => {
                let parts = parts.ok_or_else(|| RuntimeError::Other("no weights of the parts for the GEMM of each".into()))?;
                let inputs = parts.inputs.clone().map_err(RuntimeError::Other)?;
                let cols = shape.n / count;
                let plans = inputs.into_iter().map(|i| LtGemm::new(&cx.lt, shape.m, cols, shape.k, i)).collect::<Result<Vec<_>>>()?;
                let products = (0..count).map(|_| scratch(cols)).collect::<Result<Vec<_>>>()?;
                let product_addrs = products.iter().map(|p| gpu.addr(p)).collect();
                EpiBaseline::Gated { plans, kernel, operands, b: parts.b.to_vec(), product_addrs, _products: products }
            }
            KernelShape::Rows { .. } => EpiBaseline::Rows { plan: whole()?, kernel, operands, scratch: scratch(shape.n)?, outputs: outputs.to_vec() },
        })
    })();
    let mut unfused_note = None;
    let done = match unfused {
        Ok(base) => check_once(name.clone(), base, &mut unfused_note),
        Err(e) => {
            let mut run = RunResult::new(&name, RunKind::Baseline);
            run.error = Some(e.to_string());
            r.runs.push(run);
            None
        }
    };
    let info = r.epilogue.as_mut().expect("set above");
    info.fused = false;
    info.baselines.push(name);
    if let Some(n) = note {
        info.note = Some(n);
    } else if epi.kind == EpilogueKind::Quantize {
        let stores: Vec<String> = epi.output.group_stores.iter().map(|s| format!("{} (f32, a value per row and {} columns)", s.name, s.group)).collect();
        info.note = Some(format!(
            "the GEMM writes the {}x{} bf16 product, the generated kernel (a warp per row and group of columns) reads it and writes {} {}{}",
            shape.m,
            shape.n,
            epi.output.dtype,
            epi.output.name,
            if stores.is_empty() { String::new() } else { format!(" and {}", stores.join(", ")) }
        ));
    } else if let Some(g) = &epi.gated {
        let cols = g.out_cols(shape.n);
        info.note = Some(format!(
            "{} parts interleaved in runs of {} columns: B's rows taken apart into each part's weights (once, untimed), {} GEMMs of \
             {}x{cols}x{} each write their bf16 product, the element-wise kernel reads them and writes C {}x{cols}",
            g.parts, g.block, g.parts, shape.m, shape.k, shape.m
        ));
    }
    done
}

/// Adds the checked epilogue baselines to `timed`.
fn push_epi_timed<'a>(cx: &'a Ctx, shape: Shape, timed: &mut Vec<Timed<'a>>, bases: Vec<Option<(usize, EpiBaseline)>>, ptrs: &'a [(u64, u64, u64)]) {
    for (index, base) in bases.into_iter().flatten() {
        timed.push((index, Box::new(move |i| base.run(cx, ptrs, i, shape.m, shape.n))));
    }
}

fn run(argv: &[String], args: &BenchArgs, cands: &mut [Candidate]) -> Result<Report> {
    let gpu = Gpu::new(0)?;
    let l2 = gpu
        .ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .ctx("cuDeviceGetAttribute(L2_CACHE_SIZE)")? as u64;
    let (mut free, mut total) = (0usize, 0usize);
    unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }.result().ctx("cuMemGetInfo")?;
    let seed = args.seed.unwrap_or_else(seed_from_time);
    let target = Target::of_device(&gpu.name, gpu.total_mem);
    let target_name = target.map_or(UNKNOWN_TARGET, |t| t.name);
    println!(
        "device: {} (target {target_name}, sm_{}{}, {} SMs, L2 {} MiB, {} GiB, driver {}.{}); seed {seed:#x}; LD_LIBRARY_PATH={}",
        gpu.name,
        gpu.cc.0,
        gpu.cc.1,
        gpu.num_sms,
        l2 >> 20,
        total >> 30,
        gpu.driver_version / 1000,
        gpu.driver_version % 1000 / 10,
        std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
    );
    // The spin module loads first, so the artifacts' load times are their own JIT.
    let timer = Timer::new(&gpu, args.spin, args.max_run_ms);
    for c in cands.iter_mut().filter(|c| c.spec.is_some()) {
        match Gemm::from_artifact(&gpu, &c.artifact) {
            Ok(g) => {
                for k in g.kernels() {
                    println!(
                        "artifact {}: entry {} block {:?} cluster {:?} smem {} B; module load (JIT) {:.1} ms, {} regs",
                        c.info.dir, k.manifest.entry, k.manifest.block, k.manifest.cluster, k.manifest.dynamic_smem_bytes,
                        k.jit_ms, k.num_regs
                    );
                    c.info.module_load_ms = Some(k.jit_ms);
                    c.info.num_regs = Some(k.num_regs);
                    c.info.static_smem_bytes = Some(k.static_smem);
                }
                c.gemm = Some(g);
            }
            Err(e) => {
                println!("artifact {}: not loaded: {e}", c.info.dir);
                c.info.error = Some(e.to_string());
            }
        }
    }
    let blas = Cublas::new(gpu.stream.clone())?;
    let lt = LtHandle::new(gpu.stream.clone())?;
    let device = DeviceInfo {
        name: gpu.name.clone(),
        target: target_name.into(),
        sm: format!("sm_{}{}", gpu.cc.0, gpu.cc.1),
        num_sms: gpu.num_sms,
        l2_bytes: l2,
        memory_bytes: total as u64,
        driver: format!("{}.{}", gpu.driver_version / 1000, gpu.driver_version % 1000 / 10),
        cublas_version: blas.version(),
        cublaslt_version: Some(LtHandle::version()),
    };
    println!("cuBLAS {:?}, cuBLASLt {:?}", device.cublas_version, device.cublaslt_version);
    let scale_a = gpu.stream.clone_htod(&[FP8_SCALE_A]).ctx("cuMemcpyHtoD(scale)")?;
    let scale_b = gpu.stream.clone_htod(&[FP8_SCALE_B]).ctx("cuMemcpyHtoD(scale)")?;
    let spin_kernel = timer.spins();
    let cx = Ctx {
        gpu: &gpu,
        timer,
        blas,
        lt,
        args,
        l2,
        // Rotated sets may use a third of the memory free at the start.
        mem_budget: free as u64 / 3,
        scale_a,
        scale_b,
    };
    let created_unix =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut report = Report {
        schema: SCHEMA.into(),
        created_unix,
        date_utc: date_utc(created_unix),
        commit: build_commit(),
        command_line: argv.to_vec(),
        device,
        config: BenchConfig {
            warmup: args.warmup,
            reps: args.reps,
            dtypes: args.dtypes.clone(),
            threshold: args.threshold,
            l2_factor: args.l2_factor,
            max_sets: args.max_sets,
            max_run_ms: args.max_run_ms,
            baseline_only: args.baseline_only,
            jit_cache_disabled: !args.jit_cache,
            spin_kernel,
            interleaved: true,
            fp8_scale_a: FP8_SCALE_A as f64,
            fp8_scale_b: FP8_SCALE_B as f64,
            seed,
        },
        peaks: target.map_or_else(Peaks::default, Peaks::of),
        artifacts: Vec::new(),
        results: Vec::new(),
    };
    let total_shapes = args.dtypes.len() * args.shapes.len();
    let t_start = Instant::now();
    let mut n = 0u64;
    for &dtype in &args.dtypes {
        for &shape in &args.shapes {
            n += 1;
            let sseed = seed.wrapping_add(n.wrapping_mul(0x2545_F491_4F6C_DD1D));
            let t0 = Instant::now();
            let mut r = ShapeResult::new(shape, dtype);
            r.seed = sseed;
            if let Err(e) = bench_shape(&cx, cands, shape, dtype, &mut r) {
                println!("{shape} {}: ERROR {e}", dtype.name());
                r.error = Some(e.to_string());
            }
            r.summarize(&report.peaks);
            print_shape_line(&r, t0.elapsed().as_secs_f64());
            println!("{}", progress(n as usize, total_shapes, t_start.elapsed().as_secs_f64()));
            report.results.push(r);
        }
    }
    report.artifacts = cands.iter().map(|c| c.info.clone()).collect();
    println!();
    print!("{}", format_report_tables(&report.results));
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json()).map_err(|e| RuntimeError::Other(format!("writing {path}: {e}")))?;
        println!("wrote {path} (draw it with: tilec-report plot {path} -o chart.svg)");
    }
    Ok(report)
}

fn print_shape_line(r: &ShapeResult, secs: f64) {
    let mut parts = Vec::new();
    for run in &r.runs {
        let tf = run.tflops.map(|t| format!("{t:.1} TF")).unwrap_or_else(|| "-".into());
        let err = run.check.as_ref().map(|c| match c.rel_err {
            Some(e) => format!(" err {e:.2e}{}", if c.pass { "" } else { " FAIL" }),
            None => " err NaN FAIL".into(),
        });
        let note = run.error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
        parts.push(format!("{} {tf}{}{note}", short_name(&run.name), err.unwrap_or_default()));
    }
    println!(
        "{} {} [{} sets x {:.1} MB, {:.1}s]: {}",
        r.shape(),
        r.dtype.name(),
        r.rotate_sets,
        r.set_bytes as f64 / 1e6,
        secs,
        parts.join("; ")
    );
}

fn make_check(reference: &str, err: f64, threshold: f64) -> Check {
    Check {
        reference: reference.into(),
        rel_err: err.is_finite().then_some(err),
        threshold,
        pass: passes(err, threshold),
    }
}

/// Downloads C and compares it with `reference` scaled by `scale`.
fn check_output(gpu: &Gpu, c: &CudaSlice<bf16>, reference: &[bf16], scale: f64) -> Result<f64> {
    let out = gpu.stream.clone_dtoh(c).ctx("cuMemcpyDtoH(C)")?;
    Ok(rel_frobenius_bf16(&out, reference, scale))
}

/// cuBLAS reference on set 0 (bf16 inputs `a16`, `b16`), checked against an
/// FP64 CPU product on sampled rows. Returns the reference and the check.
fn reference(
    cx: &Ctx,
    shape: Shape,
    a16: &CudaSlice<bf16>,
    b16: &CudaSlice<bf16>,
    a_f32: impl Fn(usize) -> f32 + Sync,
    b_f32: impl Fn(usize) -> f32 + Sync,
) -> Result<(Vec<bf16>, Check)> {
    let gpu = cx.gpu;
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    let mut c_ref = unsafe { gpu.stream.alloc::<bf16>(m * n) }.ctx("cuMemAlloc(C_ref)")?;
    poison(gpu, &mut c_ref)?;
    cx.blas.gemm_bf16_tn(shape.m, shape.n, shape.k, a16, b16, &mut c_ref)?;
    gpu.sync("cuBLAS reference")?;
    let refh = gpu.stream.clone_dtoh(&c_ref).ctx("cuMemcpyDtoH(C_ref)")?;
    let rows = sample_rows(m, n, k, CPU_CHECK_BUDGET);
    let mut a_rows = vec![0f32; m * k];
    for &i in &rows {
        for p in 0..k {
            a_rows[i * k + p] = a_f32(i * k + p);
        }
    }
    let bv: Vec<f32> = (0..n * k).map(&b_f32).collect();
    let cpu = cpu_gemm_tn_rows(&a_rows, &bv, n, k, &rows);
    let got: Vec<f64> = rows.iter().flat_map(|&i| refh[i * n..(i + 1) * n].iter().map(|x| x.to_f64())).collect();
    let err = rel_frobenius(&got, &cpu);
    let check = make_check(&format!("fp64 cpu ({} of {m} rows)", rows.len()), err, cx.args.threshold);
    Ok((refh, check))
}

/// A kernel that passed its check, ready to be timed.
type Timed<'a> = (usize, Box<dyn FnMut(usize) -> Result<()> + 'a>);

/// Times the checked kernels in interleaved rounds and files each one's
/// times under its run (`r.runs[index]`).
fn time_all(cx: &Ctx, shape: Shape, dtype: BenchDtype, r: &mut ShapeResult, mut timed: Vec<Timed>) {
    if timed.is_empty() {
        return;
    }
    let mut launches: Vec<Launch> = timed.iter_mut().map(|(_, f)| &mut **f as Launch).collect();
    match cx.timer.time_rounds(cx.args.warmup, cx.args.reps, &mut launches) {
        Ok(rounds) => {
            for ((index, _), round_ms) in timed.iter().zip(rounds) {
                r.runs[*index].set_rounds(round_ms, shape, dtype);
            }
        }
        Err(e) => {
            for (index, _) in &timed {
                r.runs[*index].error = Some(format!("timing: {e}"));
            }
        }
    }
}

/// A block-scaled shape's scales on the GPU: as the kernels read them (A's
/// K-major or M-major, as each manifest asks; B's `[NB,KB]`) and B's as
/// cuBLASLt reads them, rows padded to 16 bytes (`BlockScales::sb_lt`).
struct BlockScaleBuffers {
    sa: CudaSlice<f32>,
    sa_m_major: CudaSlice<f32>,
    sb: CudaSlice<f32>,
    sb_lt: CudaSlice<f32>,
}

fn bench_shape(cx: &Ctx, cands: &mut [Candidate], shape: Shape, dtype: BenchDtype, r: &mut ShapeResult) -> Result<()> {
    let args = cx.args;
    let gpu = cx.gpu;
    let set_bytes = shape.min_bytes(dtype);
    let sets = rotation_sets(set_bytes, cx.l2, args.l2_factor, args.max_sets, cx.mem_budget);
    r.set_bytes = set_bytes;
    r.rotate_sets = sets;
    let (mk, nk) = ((shape.m * shape.k) as usize, (shape.n * shape.k) as usize);
    let extra = (sets - 1) * PAD;
    let size = GemmSize::new(shape.m, shape.n, shape.k);
    let ours: Vec<usize> = (0..cands.len()).filter(|&i| cands[i].dtype() == Some(dtype)).collect();
    // A gated epilogue's C has N / parts columns; N must hold whole runs of its parts.
    let gated = RunEpilogue::of(cands, dtype).and_then(|e| e.gated);
    if let Some(g) = &gated {
        g.check_n(shape.n)?;
    }
    match dtype {
        BenchDtype::Bf16 => {
            let a_h = par_fill(mk + extra, r.seed, |g| bf16::from_f32(g.uniform()));
            let b_h = par_fill(nk + extra, r.seed ^ 0xB, |g| bf16::from_f32(g.uniform()));
            let mut d = upload(gpu, &a_h, &b_h, shape, gated.as_ref(), sets)?;
            let (refh, ref_check) = reference(cx, shape, &d.a[0], &d.b[0], |i| a_h[i].to_f32(), |i| b_h[i].to_f32())?;
            drop((a_h, b_h));
            if let Some(epi) = RunEpilogue::of(cands, dtype) {
                // cuBLAS's product is the epilogue's accumulator: it must agree with the CPU.
                if !ref_check.pass {
                    let mut run = RunResult::new("cublas-bf16-reference", RunKind::Baseline);
                    run.check = Some(ref_check);
                    run.error = Some("the BF16 reference disagrees with the FP64 CPU reference".into());
                    r.runs.push(run);
                    return Ok(());
                }
                let vectors = ShapeVectors::new(gpu, &epi, size, r.seed)?;
                let epi_ref = epilogue_reference(&epi, &vectors, &refh, 1.0, shape)?;
                let ptrs: Vec<(u64, u64, u64)> =
                    (0..sets).map(|s| (gpu.addr(&d.a[s]), gpu.addr(&d.b[s]), gpu.addr(&d.c[s]))).collect();
                let out = epi.out_size(size);
                let mut outs = epi.quantized().then(|| OutSets::new(gpu, &epi, out, sets)).transpose()?;
                let outputs = set_outputs(gpu, &ptrs, outs.as_ref());
                let bind = |s: usize| {
                    let buffers = vectors.bind(GemmBuffers::new(gpu.bind("A", &d.a[s]), gpu.bind("B", &d.b[s]), gpu.bind("C", &d.c[s])));
                    bind_outputs(gpu, outs.as_ref(), &epi, s, buffers)
                };
                let binds: Vec<GemmBuffers> = (0..sets).map(bind).collect();
                let label = "epilogue on cublas (fp64-checked)";
                let part_b = d.part_addrs(gpu);
                let parts = gated.as_ref().map(|g| PartGemms { b: &part_b, inputs: Ok(vec![LtInput::Bf16; g.parts as usize]) });
                let mut verify = Verify::epilogue(&mut d.c[0], outs.as_mut(), &epi, out, &epi_ref, label)?;
                let base = check_epilogue_baseline(
                    cx,
                    shape,
                    &epi,
                    &vectors,
                    ("cublaslt", LtInput::Bf16),
                    parts.as_ref(),
                    &ptrs,
                    &outputs,
                    &mut verify,
                    r,
                );
                let mut ours_bound = Vec::new();
                for &ci in &ours {
                    ours_bound.push(check_ours(cx, &mut cands[ci], size, binds.clone(), &mut verify, r));
                }
                let mut timed: Vec<Timed> = Vec::new();
                push_epi_timed(cx, shape, &mut timed, vec![base], &ptrs);
                push_timed(cx, &mut timed, Vec::new(), &ptrs, ours_bound);
                time_all(cx, shape, dtype, r, timed);
                return Ok(());
            }
            // cuBLAS is the reference: it is timed when it agrees with the CPU.
            let mut blas_run = RunResult::new("cublas", RunKind::Baseline);
            let blas_ok = ref_check.pass;
            blas_run.check = Some(ref_check);
            if !blas_ok {
                blas_run.error = Some("cuBLAS disagrees with the FP64 CPU reference; not timed".into());
            }
            r.runs.push(blas_run);
            let ptrs: Vec<(u64, u64, u64)> =
                (0..sets).map(|s| (gpu.addr(&d.a[s]), gpu.addr(&d.b[s]), gpu.addr(&d.c[s]))).collect();
            let lt = LtRun { name: "cublaslt", input: LtInput::Bf16, reference: "cublas", scale: 1.0 };
            let lt_plan = check_cublaslt(cx, shape, &lt, &ptrs, &mut d.c[0], &refh, r);
            let mut ours_bound = Vec::new();
            for &ci in &ours {
                let bind = |s: usize| GemmBuffers::new(gpu.bind("A", &d.a[s]), gpu.bind("B", &d.b[s]), gpu.bind("C", &d.c[s]));
                let binds: Vec<_> = (0..sets).map(bind).collect();
                let mut verify = Verify::Bf16 { c: &mut d.c[0], reference: &refh, scale: 1.0, label: "cublas".into() };
                ours_bound.push(check_ours(cx, &mut cands[ci], size, binds, &mut verify, r));
            }
            let mut timed: Vec<Timed> = Vec::new();
            let (da, db, dcs) = (&d.a, &d.b, &mut d.c);
            if blas_ok {
                timed.push((
                    0,
                    Box::new(move |i| {
                        let s = i % sets;
                        cx.blas.gemm_bf16_tn(shape.m, shape.n, shape.k, &da[s], &db[s], &mut dcs[s])
                    }),
                ));
            }
            push_timed(cx, &mut timed, vec![lt_plan], &ptrs, ours_bound);
            time_all(cx, shape, dtype, r, timed);
        }
        BenchDtype::Fp8 => {
            let a_h = par_fill(mk + extra, r.seed, |g| f32_to_e4m3(g.uniform()));
            let b_h = par_fill(nk + extra, r.seed ^ 0xB, |g| f32_to_e4m3(g.uniform()));
            let mut d = upload(gpu, &a_h, &b_h, shape, gated.as_ref(), sets)?;
            let bs = BlockScales::new(shape.m as usize, shape.n as usize, shape.k as usize);
            let mut scale_rng = Rng::new(r.seed ^ 0x5CA1E);
            let sa_h = random_pow2_scales(bs.sa_len(), &mut scale_rng);
            let sb_h = random_pow2_scales(bs.sb_len(), &mut scale_rng);
            let up = |v: &[f32], what: &'static str| -> Result<CudaSlice<f32>> {
                gpu.stream.clone_htod(v).ctx(what)
            };
            let block = BlockScaleBuffers {
                sa: up(&sa_h, "cuMemcpyHtoD(SA)")?,
                sa_m_major: up(&bs.sa_m_major(&sa_h), "cuMemcpyHtoD(SA_t)")?,
                sb: up(&sb_h, "cuMemcpyHtoD(SB)")?,
                sb_lt: up(&bs.sb_lt(&sb_h), "cuMemcpyHtoD(SB for cuBLASLt)")?,
            };
            // A gated epilogue's block-scaled baseline: each part's rows of SB, where a run is whole 128-row scale blocks.
            let sb_parts: Option<std::result::Result<Vec<CudaSlice<f32>>, String>> = gated.as_ref().map(|g| {
                (0..g.parts)
                    .map(|q| up(&bs.sb_lt(&g.part_rows(&sb_h, bs.kb(), SCALE_BLOCK as u64, q)?), "cuMemcpyHtoD(SB part for cuBLASLt)"))
                    .collect::<Result<Vec<_>>>()
                    .map_err(|e| e.to_string())
            });
            let part_b = d.part_addrs(gpu);
            // Per-tensor reference: cuBLAS BF16 on the same values (e4m3 is exact in bf16).
            let (refh, ref_check) = {
                let up = |v: &[u8]| v.iter().map(|&x| bf16::from_f32(e4m3_to_f32(x))).collect::<Vec<_>>();
                let a16 = gpu.stream.clone_htod(&up(&a_h[..mk])).ctx("cuMemcpyHtoD(A16)")?;
                let b16 = gpu.stream.clone_htod(&up(&b_h[..nk])).ctx("cuMemcpyHtoD(B16)")?;
                reference(cx, shape, &a16, &b16, |i| e4m3_to_f32(a_h[i]), |i| e4m3_to_f32(b_h[i]))?
            };
            // Block-scaled reference: cuBLAS BF16 on the dequantised inputs,
            // exact in bf16 because the scales are powers of two.
            let (block_refh, block_ref_check) = {
                let (a_deq, b_deq) = (bs.dequant_a(&a_h[..mk], &sa_h), bs.dequant_b(&b_h[..nk], &sb_h));
                let exact = |v: &[f32]| {
                    exact_bf16(v).ok_or_else(|| RuntimeError::Other("a dequantised input is not exact in bf16".into()))
                };
                let a16 = gpu.stream.clone_htod(&exact(&a_deq)?).ctx("cuMemcpyHtoD(A16)")?;
                let b16 = gpu.stream.clone_htod(&exact(&b_deq)?).ctx("cuMemcpyHtoD(B16)")?;
                reference(cx, shape, &a16, &b16, |i| a_deq[i], |i| b_deq[i])?
            };
            drop((a_h, b_h));
            let ptrs: Vec<(u64, u64, u64)> =
                (0..sets).map(|s| (gpu.addr(&d.a[s]), gpu.addr(&d.b[s]), gpu.addr(&d.c[s]))).collect();
            let epi = RunEpilogue::of(cands, dtype);
            let vectors = epi.as_ref().map(|e| ShapeVectors::new(gpu, e, size, r.seed)).transpose()?;
            let out = epi.as_ref().map_or(size, |e| e.out_size(size));
            let mut outs = epi.as_ref().filter(|e| e.quantized()).map(|e| OutSets::new(gpu, e, out, sets)).transpose()?;
            let outputs = set_outputs(gpu, &ptrs, outs.as_ref());
            let mut epi_bases = Vec::new();
            let mut lt_plans = Vec::new();
            let mut ours_bound = Vec::new();
            let per_tensor_scale = FP8_SCALE_A as f64 * FP8_SCALE_B as f64;
            for (family, ref_name, check, refh) in [
                (Scales::PerTensor, "cublas bf16 on the upcast inputs", ref_check, &refh),
                (Scales::Block, "cublas bf16 on the dequantised inputs", block_ref_check, &block_refh),
            ] {
                if !check.pass {
                    let mut run = RunResult::new(&format!("cublas-bf16-reference-{}", scales_name(family)), RunKind::Baseline);
                    run.check = Some(check);
                    run.error = Some("the BF16 reference disagrees with the FP64 CPU reference".into());
                    r.runs.push(run);
                    continue;
                }
                let lt = match family {
                    Scales::Block => {
                        let input = LtInput::Fp8BlockScaled { sa_m_major: gpu.addr(&block.sa_m_major), sb: gpu.addr(&block.sb_lt) };
                        LtRun { name: "cublaslt-fp8-block", input, reference: ref_name, scale: 1.0 }
                    }
                    _ => {
                        let input = LtInput::Fp8E4m3 { scale_a: gpu.addr(&cx.scale_a), scale_b: gpu.addr(&cx.scale_b) };
                        LtRun { name: "cublaslt-fp8", input, reference: ref_name, scale: per_tensor_scale }
                    }
                };
                // With a fused epilogue, the baselines and our kernels are
                // checked against it applied to the scaled product.
                let epi_ref = match (&epi, &vectors) {
                    (Some(e), Some(v)) => Some(epilogue_reference(e, v, refh, lt.scale, shape)?),
                    _ => None,
                };
                match (&epi, &vectors, &epi_ref) {
                    (Some(e), Some(v), Some(er)) => {
                        let parts = gated.as_ref().map(|g| PartGemms {
                            b: &part_b,
                            inputs: match &sb_parts {
                                Some(Ok(sbs)) if family == Scales::Block => Ok(sbs
                                    .iter()
                                    .map(|sb| LtInput::Fp8BlockScaled { sa_m_major: gpu.addr(&block.sa_m_major), sb: gpu.addr(sb) })
                                    .collect()),
                                Some(Err(why)) if family == Scales::Block => Err(why.clone()),
                                _ => Ok(vec![lt.input; g.parts as usize]),
                            },
                        });
                        let mut verify = Verify::epilogue(&mut d.c[0], outs.as_mut(), e, out, er, "epilogue on cublas (fp64-checked)")?;
                        let input = (lt.name, lt.input);
                        epi_bases.push(check_epilogue_baseline(cx, shape, e, v, input, parts.as_ref(), &ptrs, &outputs, &mut verify, r))
                    }
                    _ => lt_plans.push(check_cublaslt(cx, shape, &lt, &ptrs, &mut d.c[0], refh, r)),
                }
                // Unscaled FP8 kernels are checked with the per-tensor family (scale 1).
                for &ci in &ours {
                    let scales = cands[ci].spec.as_ref().map_or(Scales::None, |k| k.scales);
                    let sa = cands[ci].spec.as_ref().map_or(SaLayout::KMajor, |k| k.sa_layout).choose(&block.sa, &block.sa_m_major);
                    if (scales == Scales::Block) != (family == Scales::Block) {
                        continue;
                    }
                    let bind = |s: usize| {
                        let buffers = GemmBuffers {
                            a: gpu.bind("A", &d.a[s]),
                            b: gpu.bind("B", &d.b[s]),
                            c: gpu.bind("C", &d.c[s]),
                            scales: match scales {
                                Scales::None => None,
                                Scales::PerTensor => Some((gpu.bind("scale_a", &cx.scale_a), gpu.bind("scale_b", &cx.scale_b))),
                                Scales::Block => Some((gpu.bind("SA", sa), gpu.bind("SB", &block.sb))),
                            },
                            vectors: vectors.as_ref().map_or_else(Vec::new, |v| v.bindings.clone()),
                            matrices: vectors.as_ref().map_or_else(Vec::new, |v| v.matrix_bindings.clone()),
                            group_stores: Vec::new(),
                        };
                        match &epi {
                            Some(e) => bind_outputs(gpu, outs.as_ref(), e, s, buffers),
                            None => buffers,
                        }
                    };
                    let sc = if scales == Scales::PerTensor { per_tensor_scale } else { 1.0 };
                    let binds: Vec<_> = (0..sets).map(bind).collect();
                    let mut verify = match (&epi, &epi_ref) {
                        (Some(e), Some(er)) => Verify::epilogue(&mut d.c[0], outs.as_mut(), e, out, er, "epilogue on cublas")?,
                        _ => {
                            let label = if sc == 1.0 { "cublas".to_string() } else { format!("cublas x {sc}") };
                            Verify::Bf16 { c: &mut d.c[0], reference: refh, scale: sc, label }
                        }
                    };
                    ours_bound.push(check_ours(cx, &mut cands[ci], size, binds, &mut verify, r));
                }
            }
            let mut timed: Vec<Timed> = Vec::new();
            push_epi_timed(cx, shape, &mut timed, epi_bases, &ptrs);
            push_timed(cx, &mut timed, lt_plans, &ptrs, ours_bound);
            time_all(cx, shape, dtype, r, timed);
        }
    }
    Ok(())
}

fn scales_name(s: Scales) -> &'static str {
    match s {
        Scales::None => "unscaled",
        Scales::PerTensor => "per-tensor",
        Scales::Block => "block",
    }
}

/// Adds the cuBLASLt plans and our bound kernels that passed their checks
/// (each with the index of its run) to `timed`.
fn push_timed<'a>(
    cx: &'a Ctx,
    timed: &mut Vec<Timed<'a>>,
    lt_plans: Vec<Option<(usize, LtGemm)>>,
    ptrs: &'a [(u64, u64, u64)],
    ours: Vec<Option<(usize, Vec<BoundGemm>)>>,
) {
    for (index, plan) in lt_plans.into_iter().flatten() {
        timed.push((
            index,
            Box::new(move |i| {
                let p = ptrs[i % ptrs.len()];
                unsafe { plan.run(&cx.lt, p.0, p.1, p.2) }
            }),
        ));
    }
    for (index, mut bound) in ours.into_iter().flatten() {
        let stream = cx.gpu.stream.clone();
        timed.push((
            index,
            Box::new(move |i| {
                let sets = bound.len();
                bound[i % sets].launch(&stream)
            }),
        ));
    }
}

/// One cuBLASLt baseline: its input kind and how its output is checked.
struct LtRun<'a> {
    name: &'static str,
    input: LtInput,
    reference: &'a str,
    scale: f64,
}

/// Checks a cuBLASLt plan once on poisoned output (set 0 of the rotated sets
/// `ptrs`: A, B, C device addresses) and adds its run to `r`; returns the
/// run's index and the plan when it passed.
fn check_cublaslt(
    cx: &Ctx,
    shape: Shape,
    lt: &LtRun,
    ptrs: &[(u64, u64, u64)],
    c0: &mut CudaSlice<bf16>,
    refh: &[bf16],
    r: &mut ShapeResult,
) -> Option<(usize, LtGemm)> {
    let gpu = cx.gpu;
    let mut run = RunResult::new(lt.name, RunKind::Baseline);
    let res = (|| -> Result<Option<LtGemm>> {
        let plan = LtGemm::new(&cx.lt, shape.m, shape.n, shape.k, lt.input)?;
        poison(gpu, c0)?;
        unsafe { plan.run(&cx.lt, ptrs[0].0, ptrs[0].1, ptrs[0].2) }?;
        gpu.sync(lt.name)?;
        let check = make_check(lt.reference, check_output(gpu, c0, refh, lt.scale)?, cx.args.threshold);
        let pass = check.pass;
        run.check = Some(check);
        Ok(pass.then_some(plan))
    })();
    let plan = res.unwrap_or_else(|e| {
        run.error = Some(e.to_string());
        None
    });
    r.runs.push(run);
    plan.map(|p| (r.runs.len() - 1, p))
}

/// Binds one of our artifacts to every set, checks it once on set 0 as
/// `verify` says and adds its run to `r`; returns the run's index and the
/// bound calls when it passed.
fn check_ours(
    cx: &Ctx,
    cand: &mut Candidate,
    size: GemmSize,
    binds: Vec<GemmBuffers>,
    verify: &mut Verify,
    r: &mut ShapeResult,
) -> Option<(usize, Vec<BoundGemm>)> {
    let gpu = cx.gpu;
    let mut run = RunResult::new(&cand.info.dir, RunKind::Ours);
    let gemm = cand.gemm.as_ref().expect("loaded");
    let res = (|| -> Result<Option<Vec<BoundGemm>>> {
        let mut bound: Vec<BoundGemm> =
            binds.into_iter().map(|buffers| gemm.bind_raw(size, buffers)).collect::<Result<_>>()?;
        verify.poison(gpu)?;
        gpu.sync("poison")?;
        let t0 = Instant::now();
        bound[0].launch_checked()?;
        let first_ms = t0.elapsed().as_secs_f64() * 1e3;
        cand.info.first_launch_ms.get_or_insert(first_ms);
        let check = verify.check(gpu, cx.args.threshold)?;
        let pass = check.pass;
        run.check = Some(check);
        if !pass {
            run.error = Some("check failed; not timed".into());
        }
        Ok(pass.then_some(bound))
    })();
    let bound = res.unwrap_or_else(|e| {
        run.error = Some(e.to_string());
        None
    });
    r.runs.push(run);
    bound.map(|b| (r.runs.len() - 1, b))
}
