//! tilec-bench: times compiled GEMM artifacts against cuBLAS / cuBLASLt
//! (BF16) and cuBLASLt FP8 e4m3 with per-tensor scales, on the same random
//! inputs in one process. See `tilec-bench --help` and
//! docs/benchmarks/README.md.
//!
//! Per shape and dtype: inputs are drawn once and spread over enough buffer
//! sets that the sets together span `--l2-factor` times the L2; every run is
//! first checked once (output poisoned with NaN, one launch, relative
//! Frobenius error against cuBLAS), then timed with CUDA events per launch
//! over `--reps` launches that rotate through the sets, after `--warmup`
//! launches. A one-thread spin kernel holds the stream while each batch is
//! enqueued, so host launch overhead does not leak into the events.

use clap::Parser;
use half::bf16;
use std::ffi::c_void;
use std::process::ExitCode;
use std::time::Instant;
use tilec_runtime::artifact::{Artifact, DType, Dim, Manifest, Role};
use tilec_runtime::bench::*;
use tilec_runtime::check::*;
use tilec_runtime::lt::{LtGemm, LtHandle, LtInput};
use tilec_runtime::plot::BarChart;
use tilec_cli::{CompletionArgs, EXIT_ERROR};
use tilec_runtime::*;
use cudarc::driver::{sys, CudaFunction, CudaSlice, DevicePtr};

/// Scales the FP8 baseline runs with (powers of two: the scaled reference is exact).
const FP8_SCALE_A: f32 = 0.5;
const FP8_SCALE_B: f32 = 0.25;
/// Multiply-adds the FP64 CPU check of the cuBLAS reference may spend per shape.
const CPU_CHECK_BUDGET: u64 = 1 << 28;
/// Most launches enqueued behind one spin kernel.
const CHUNK: usize = 256;

/// A one-thread kernel that spins on %globaltimer for `ns` nanoseconds.
const SPIN_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry tilec_bench_spin(
    .param .u64 tilec_bench_spin_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [tilec_bench_spin_ns];
    mov.u64 %rd2, %globaltimer;
$L_spin:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $L_spin;
    ret;
}
"#;

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
    /// Timed runs; median and spread over them
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    /// Write the full report (schema tilec-bench/1)
    #[arg(long, value_name = "OUT")]
    json: Option<String>,
    /// Write a bar chart of TFLOP/s per shape
    #[arg(long, value_name = "OUT")]
    png: Option<String>,
    /// Time the vendor baselines only (artifacts are ignored)
    #[arg(long)]
    baseline_only: bool,
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
    /// No GPU: print the table of a saved report, and re-draw --png
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
            png: self.png,
            baseline_only: self.baseline_only,
            threshold: self.threshold,
            l2_factor: self.l2_factor,
            max_sets: self.max_sets as usize,
            seed: self.seed,
            max_run_ms: self.max_run_ms,
            spin: !self.no_spin,
            jit_cache: self.jit_cache,
            from_json: self.from_json,
            help: false,
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
        return replot(path, &args);
    }
    // Artifacts are checked even where there is no GPU.
    let mut cands = Vec::new();
    if !args.baseline_only {
        for dir in &args.artifacts {
            match Artifact::load(dir) {
                Ok(a) => {
                    let kind = classify(&a.manifest);
                    if let Err(e) = &kind {
                        eprintln!("tilec-bench: {dir}: {e} (skipped)");
                    }
                    cands.push(Candidate::new(dir, a, kind));
                }
                Err(e) => {
                    eprintln!("tilec-bench: {dir}: {e}");
                    return ExitCode::from(EXIT_ERROR);
                }
            }
        }
    }
    if let Err(e) = ensure_cuda() {
        println!("tilec-bench: {e}");
        println!(
            "tilec-bench: SKIPPED (no libcuda): {} GEMM artifact(s) valid, {} shape(s) x {} dtype(s) not run",
            cands.iter().filter(|c| c.kind.is_some()).count(),
            args.shapes.len(),
            args.dtypes.len()
        );
        return ExitCode::SUCCESS;
    }
    if !args.jit_cache {
        // Must precede cuInit. Only the PTX JIT cache is affected.
        std::env::set_var("CUDA_CACHE_DISABLE", "1");
    }
    match run(&argv, &args, &mut cands) {
        Ok(report) => {
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

fn replot(path: &str, args: &BenchArgs) -> ExitCode {
    let report = match std::fs::read_to_string(path).map_err(|e| e.to_string()).and_then(|t| Report::from_json(&t)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tilec-bench: {path}: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    print!("{}", format_table(&report.results));
    if let Some(png) = &args.png {
        if let Err(e) = write_png(png, &report) {
            eprintln!("tilec-bench: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    }
    ExitCode::SUCCESS
}

fn write_png(path: &str, report: &Report) -> Result<(), String> {
    let title = format!("tilec-bench {} TFLOP/s (median)", report.device.name);
    let png = BarChart::from_results(&report.results, &title).to_png();
    std::fs::write(path, png).map_err(|e| format!("writing {path}: {e}"))?;
    println!("wrote {path}");
    Ok(())
}

// ------------------------------------------------------------ artifacts

#[derive(Debug, Clone, Copy, PartialEq)]
struct OurKind {
    dtype: BenchDtype,
    /// Takes f32 tensors `scale_a` and `scale_b` (one element each).
    scales: bool,
}

fn sym_shape(t: &tilec_runtime::artifact::TensorDecl, dims: &[&str]) -> bool {
    t.shape.len() == dims.len() && t.shape.iter().zip(dims).all(|(d, s)| matches!(d, Dim::Sym(x) if x == s))
}

/// A GEMM artifact: A[M,K], B[N,K] inputs (both bf16, or both f8e4m3) and a
/// bf16 output C[M,N]; FP8 ones may also take f32 `scale_a`/`scale_b`.
fn classify(m: &Manifest) -> Result<OurKind, String> {
    let get = |n: &str, dims: &[&str], role: Role| {
        m.tensor(n).filter(|t| t.role == role && sym_shape(t, dims)).map(|t| t.dtype)
    };
    let (Some(a), Some(b), Some(c)) =
        (get("A", &["M", "K"], Role::Input), get("B", &["N", "K"], Role::Input), get("C", &["M", "N"], Role::Output))
    else {
        return Err("not a GEMM artifact (want A[M,K], B[N,K] inputs and C[M,N] output)".into());
    };
    if c != DType::Bf16 {
        return Err(format!("C is {c}, tilec-bench expects bf16 output"));
    }
    let dtype = match (a, b) {
        (DType::Bf16, DType::Bf16) => BenchDtype::Bf16,
        (DType::F8e4m3, DType::F8e4m3) => BenchDtype::Fp8,
        _ => return Err(format!("A is {a}, B is {b}: want both bf16 or both f8e4m3")),
    };
    let scale = |n: &str| {
        m.tensor(n).is_some_and(|t| {
            t.dtype == DType::F32
                && t.role == Role::Input
                && t.shape.iter().all(|d| matches!(d, Dim::Const(1)))
        })
    };
    let scales = scale("scale_a") && scale("scale_b");
    let extra = m.tensors.iter().filter(|t| !["A", "B", "C"].contains(&t.name.as_str())).count();
    if extra != if scales { 2 } else { 0 } || (scales && dtype != BenchDtype::Fp8) {
        return Err("unexpected extra tensors (only fp8 scale_a/scale_b f32[1] are understood)".into());
    }
    Ok(OurKind { dtype, scales })
}

struct Candidate {
    info: ArtifactInfo,
    artifact: Artifact,
    kind: Option<OurKind>,
    kernel: Option<Kernel>,
}

impl Candidate {
    fn new(dir: &str, artifact: Artifact, kind: Result<OurKind, String>) -> Self {
        let m = &artifact.manifest;
        let info = ArtifactInfo {
            dir: dir.to_string(),
            entry: m.entry.clone(),
            kernel_name: m.kernel_name.clone(),
            dtype: kind.as_ref().ok().map(|k| k.dtype),
            block: m.block,
            cluster: m.cluster,
            dynamic_smem_bytes: m.dynamic_smem_bytes,
            module_load_ms: None,
            first_launch_ms: None,
            num_regs: None,
            static_smem_bytes: None,
            error: kind.as_ref().err().cloned(),
        };
        Candidate { info, artifact, kind: kind.ok(), kernel: None }
    }
}

// -------------------------------------------------------------- timing

struct Timer<'a> {
    gpu: &'a Gpu,
    spin: Option<CudaFunction>,
    max_run_ms: f64,
}

/// Fewest timed calls per run, however slow the kernel.
const MIN_REPS: usize = 5;

impl Timer<'_> {
    fn spin(&self, ns: u64) -> Result<()> {
        let Some(f) = &self.spin else { return Ok(()) };
        let mut ns = ns;
        let mut params = [&mut ns as *mut u64 as *mut c_void];
        unsafe {
            sys::cuLaunchKernel(
                f.cu_function(),
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                self.gpu.stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(|err| RuntimeError::Driver { call: "cuLaunchKernel(spin)", err })
    }

    /// `warmup` untimed calls, then `reps` calls each between two events;
    /// `f(i)` gets the call's index (for rotating buffer sets).
    /// A slow kernel gets fewer calls: warm-up and timing each stay near
    /// `max_run_ms` (at least one warm-up call and `MIN_REPS` timed ones).
    fn time(&self, warmup: usize, reps: usize, mut f: impl FnMut(usize) -> Result<()>) -> Result<Vec<f64>> {
        let t0 = Instant::now();
        f(0)?;
        self.gpu.sync("first warm-up call")?;
        let est_ms = t0.elapsed().as_secs_f64() * 1e3;
        let fit = |budget: f64| (budget / est_ms.max(1e-6)) as usize;
        let warmup = warmup.saturating_sub(1).min(fit(self.max_run_ms / 4.0));
        let reps = reps.min(fit(self.max_run_ms).max(MIN_REPS));
        let mut i = 1;
        for _ in 0..warmup {
            f(i)?;
            i += 1;
        }
        self.gpu.sync("warm-up")?;
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = |_| self.gpu.ctx.new_event(flags).map_err(|err| RuntimeError::Driver { call: "cuEventCreate", err });
        let mut out = Vec::with_capacity(reps);
        let mut left = reps;
        while left > 0 {
            let n = left.min(CHUNK);
            let events: Vec<_> = (0..2 * n).map(ev).collect::<Result<_>>()?;
            // Long enough for the host to enqueue the batch (a few us each).
            self.spin((1_000_000 + 40_000 * n as u64).min(50_000_000))?;
            for j in 0..n {
                let rec = |e: &cudarc::driver::CudaEvent| {
                    e.record(&self.gpu.stream).map_err(|err| RuntimeError::Driver { call: "cuEventRecord", err })
                };
                rec(&events[2 * j])?;
                f(i)?;
                i += 1;
                rec(&events[2 * j + 1])?;
            }
            self.gpu.sync("timed runs")?;
            for j in 0..n {
                let ms = events[2 * j]
                    .elapsed_ms(&events[2 * j + 1])
                    .map_err(|err| RuntimeError::Driver { call: "cuEventElapsedTime", err })?;
                out.push(ms as f64);
            }
            left -= n;
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------- data

fn dc(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> RuntimeError {
    move |err| RuntimeError::Driver { call, err }
}

/// `n` values from `gen`, in parallel chunks with their own seeds.
fn par_fill<T: Send + Default + Clone>(n: usize, seed: u64, gen: impl Fn(&mut Rng) -> T + Sync) -> Vec<T> {
    let mut v = vec![T::default(); n];
    let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1);
    let per = n.div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for (ci, chunk) in v.chunks_mut(per).enumerate() {
            let gen = &gen;
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ (ci as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                chunk.iter_mut().for_each(|x| *x = gen(&mut rng));
            });
        }
    });
    v
}

fn addr<T>(gpu: &Gpu, s: &CudaSlice<T>) -> u64 {
    let (a, _g) = s.device_ptr(&gpu.stream);
    a
}

fn poison(gpu: &Gpu, c: &mut CudaSlice<bf16>) -> Result<()> {
    gpu.poison16(c, POISON_BF16)
}

/// Device buffers of one shape: `sets` copies of A, B and C.
struct Sets<TIn> {
    a: Vec<CudaSlice<TIn>>,
    b: Vec<CudaSlice<TIn>>,
    c: Vec<CudaSlice<bf16>>,
}

/// Host inputs with room for `sets` distinct windows (set s starts at s*PAD).
const PAD: usize = 4099;

fn upload<T: cudarc::driver::DeviceRepr + Clone>(
    gpu: &Gpu,
    a_h: &[T],
    b_h: &[T],
    shape: Shape,
    sets: usize,
) -> Result<Sets<T>> {
    let s = &gpu.stream;
    let (mk, nk, mn) = ((shape.m * shape.k) as usize, (shape.n * shape.k) as usize, (shape.m * shape.n) as usize);
    let mut out = Sets { a: Vec::new(), b: Vec::new(), c: Vec::new() };
    for i in 0..sets {
        out.a.push(s.clone_htod(&a_h[i * PAD..i * PAD + mk]).map_err(dc("cuMemcpyHtoD(A)"))?);
        out.b.push(s.clone_htod(&b_h[i * PAD..i * PAD + nk]).map_err(dc("cuMemcpyHtoD(B)"))?);
        let mut c = unsafe { s.alloc::<bf16>(mn) }.map_err(dc("cuMemAlloc(C)"))?;
        poison(gpu, &mut c)?;
        out.c.push(c);
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

fn run(argv: &[String], args: &BenchArgs, cands: &mut [Candidate]) -> Result<Report> {
    let gpu = Gpu::new(0)?;
    let l2 = gpu
        .ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .map_err(dc("cuDeviceGetAttribute(L2_CACHE_SIZE)"))? as u64;
    let (mut free, mut total) = (0usize, 0usize);
    unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }.result().map_err(dc("cuMemGetInfo"))?;
    let seed = args.seed.unwrap_or_else(seed_from_time);
    println!(
        "device: {} (sm_{}{}, {} SMs, L2 {} MiB, {} GiB, driver {}.{}); seed {seed:#x}; LD_LIBRARY_PATH={}",
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
    let spin = if args.spin {
        match gpu.ctx.load_module(cudarc::nvrtc::Ptx::from_src(SPIN_PTX)).and_then(|m| m.load_function("tilec_bench_spin"))
        {
            Ok(f) => Some(f),
            Err(e) => {
                println!("warning: spin kernel unavailable ({e}); timing without it");
                None
            }
        }
    } else {
        None
    };
    let spin_on = spin.is_some();
    for c in cands.iter_mut().filter(|c| c.kind.is_some()) {
        match gpu.load(&c.artifact) {
            Ok(k) => {
                println!(
                    "artifact {}: entry {} block {:?} cluster {:?} smem {} B; module load (JIT) {:.1} ms, {} regs",
                    c.info.dir, k.manifest.entry, k.manifest.block, k.manifest.cluster, k.manifest.dynamic_smem_bytes,
                    k.jit_ms, k.num_regs
                );
                c.info.module_load_ms = Some(k.jit_ms);
                c.info.num_regs = Some(k.num_regs);
                c.info.static_smem_bytes = Some(k.static_smem);
                c.kernel = Some(k);
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
        sm: format!("sm_{}{}", gpu.cc.0, gpu.cc.1),
        num_sms: gpu.num_sms,
        l2_bytes: l2,
        memory_bytes: total as u64,
        driver: format!("{}.{}", gpu.driver_version / 1000, gpu.driver_version % 1000 / 10),
        cublas_version: blas.version(),
        cublaslt_version: Some(LtHandle::version()),
    };
    println!("cuBLAS {:?}, cuBLASLt {:?}", device.cublas_version, device.cublaslt_version);
    let scale_a = gpu.stream.clone_htod(&[FP8_SCALE_A]).map_err(dc("cuMemcpyHtoD(scale)"))?;
    let scale_b = gpu.stream.clone_htod(&[FP8_SCALE_B]).map_err(dc("cuMemcpyHtoD(scale)"))?;
    let cx = Ctx {
        gpu: &gpu,
        timer: Timer { gpu: &gpu, spin, max_run_ms: args.max_run_ms },
        blas,
        lt,
        args,
        l2,
        // Rotated sets may use a third of the memory free at the start.
        mem_budget: free as u64 / 3,
        scale_a,
        scale_b,
    };
    let mut report = Report {
        schema: SCHEMA.into(),
        created_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
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
            spin_kernel: spin_on,
            fp8_scale_a: FP8_SCALE_A as f64,
            fp8_scale_b: FP8_SCALE_B as f64,
            seed,
        },
        artifacts: Vec::new(),
        results: Vec::new(),
    };
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
            r.summarize();
            print_shape_line(&r, t0.elapsed().as_secs_f64());
            report.results.push(r);
        }
    }
    report.artifacts = cands.iter().map(|c| c.info.clone()).collect();
    println!();
    print!("{}", format_table(&report.results));
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json()).map_err(|e| RuntimeError::Other(format!("writing {path}: {e}")))?;
        println!("wrote {path}");
    }
    if let Some(path) = &args.png {
        write_png(path, &report).map_err(RuntimeError::Other)?;
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

/// Fills a run's timing fields from its samples.
fn set_timing(run: &mut RunResult, samples: Result<Vec<f64>>, shape: Shape, dtype: BenchDtype) {
    match samples {
        Ok(s) => {
            run.stats = Stats::from_samples(&s);
            if let Some(st) = &run.stats {
                run.tflops = Some(tflops(shape.flops(), st.median_ms));
                run.gbps = Some(gbps(shape.min_bytes(dtype), st.median_ms));
            } else {
                run.error = Some("no valid timing samples".into());
            }
        }
        Err(e) => run.error = Some(e.to_string()),
    }
}

/// Downloads C and compares it with `reference` scaled by `scale`.
fn check_output(gpu: &Gpu, c: &CudaSlice<bf16>, reference: &[bf16], scale: f64) -> Result<f64> {
    let out = gpu.stream.clone_dtoh(c).map_err(dc("cuMemcpyDtoH(C)"))?;
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
    let mut c_ref = unsafe { gpu.stream.alloc::<bf16>(m * n) }.map_err(dc("cuMemAlloc(C_ref)"))?;
    poison(gpu, &mut c_ref)?;
    cx.blas.gemm_bf16_tn(shape.m, shape.n, shape.k, a16, b16, &mut c_ref)?;
    gpu.sync("cuBLAS reference")?;
    let refh = gpu.stream.clone_dtoh(&c_ref).map_err(dc("cuMemcpyDtoH(C_ref)"))?;
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

fn bench_shape(cx: &Ctx, cands: &mut [Candidate], shape: Shape, dtype: BenchDtype, r: &mut ShapeResult) -> Result<()> {
    let args = cx.args;
    let gpu = cx.gpu;
    let set_bytes = shape.min_bytes(dtype);
    let sets = rotation_sets(set_bytes, cx.l2, args.l2_factor, args.max_sets, cx.mem_budget);
    r.set_bytes = set_bytes;
    r.rotate_sets = sets;
    let (mk, nk) = ((shape.m * shape.k) as usize, (shape.n * shape.k) as usize);
    let extra = (sets - 1) * PAD;
    let problem = Problem::gemm(shape.m, shape.n, shape.k);
    let ours: Vec<usize> = (0..cands.len())
        .filter(|&i| cands[i].kernel.is_some() && cands[i].kind.is_some_and(|k| k.dtype == dtype))
        .collect();
    match dtype {
        BenchDtype::Bf16 => {
            let a_h = par_fill(mk + extra, r.seed, |g| bf16::from_f32(g.uniform()));
            let b_h = par_fill(nk + extra, r.seed ^ 0xB, |g| bf16::from_f32(g.uniform()));
            let mut d = upload(gpu, &a_h, &b_h, shape, sets)?;
            let (refh, ref_check) = reference(cx, shape, &d.a[0], &d.b[0], |i| a_h[i].to_f32(), |i| b_h[i].to_f32())?;
            drop((a_h, b_h));
            // cuBLAS.
            let mut run = RunResult::new("cublas", RunKind::Baseline);
            let ok = ref_check.pass;
            run.check = Some(ref_check);
            if ok {
                let samples = cx.timer.time(args.warmup, args.reps, |i| {
                    let s = i % sets;
                    cx.blas.gemm_bf16_tn(shape.m, shape.n, shape.k, &d.a[s], &d.b[s], &mut d.c[s])
                });
                set_timing(&mut run, samples, shape, dtype);
            } else {
                run.error = Some("cuBLAS disagrees with the FP64 CPU reference; not timed".into());
            }
            r.runs.push(run);
            // cuBLASLt.
            let ptrs: Vec<(u64, u64, u64)> =
                (0..sets).map(|s| (addr(gpu, &d.a[s]), addr(gpu, &d.b[s]), addr(gpu, &d.c[s]))).collect();
            let lt = LtRun { name: "cublaslt", input: LtInput::Bf16, reference: "cublas", scale: 1.0 };
            r.runs.push(run_cublaslt(cx, shape, dtype, &lt, &ptrs, &mut d.c[0], &refh));
            // Ours.
            for &ci in &ours {
                let bind = |s: usize| vec![gpu.bind("A", &d.a[s]), gpu.bind("B", &d.b[s]), gpu.bind("C", &d.c[s])];
                let binds: Vec<_> = (0..sets).map(bind).collect();
                let run = run_ours(cx, &mut cands[ci], shape, dtype, &problem, &binds, &mut d.c, &refh, 1.0);
                r.runs.push(run);
            }
        }
        BenchDtype::Fp8 => {
            let a_h = par_fill(mk + extra, r.seed, |g| f32_to_e4m3(g.uniform()));
            let b_h = par_fill(nk + extra, r.seed ^ 0xB, |g| f32_to_e4m3(g.uniform()));
            let mut d = upload(gpu, &a_h, &b_h, shape, sets)?;
            // The reference: cuBLAS BF16 on the same values (e4m3 is exact in bf16).
            let (refh, ref_check) = {
                let up = |v: &[u8]| v.iter().map(|&x| bf16::from_f32(e4m3_to_f32(x))).collect::<Vec<_>>();
                let a16 = gpu.stream.clone_htod(&up(&a_h[..mk])).map_err(dc("cuMemcpyHtoD(A16)"))?;
                let b16 = gpu.stream.clone_htod(&up(&b_h[..nk])).map_err(dc("cuMemcpyHtoD(B16)"))?;
                reference(cx, shape, &a16, &b16, |i| e4m3_to_f32(a_h[i]), |i| e4m3_to_f32(b_h[i]))?
            };
            drop((a_h, b_h));
            let ref_name = "cublas bf16 on the upcast inputs";
            if !ref_check.pass {
                let mut run = RunResult::new("cublas-bf16-reference", RunKind::Baseline);
                run.check = Some(ref_check);
                run.error = Some("the BF16 reference disagrees with the FP64 CPU reference".into());
                r.runs.push(run);
                return Ok(());
            }
            let scale = FP8_SCALE_A as f64 * FP8_SCALE_B as f64;
            let (sa, sb) = (addr(gpu, &cx.scale_a), addr(gpu, &cx.scale_b));
            let ptrs: Vec<(u64, u64, u64)> =
                (0..sets).map(|s| (addr(gpu, &d.a[s]), addr(gpu, &d.b[s]), addr(gpu, &d.c[s]))).collect();
            let input = LtInput::Fp8E4m3 { scale_a: sa, scale_b: sb };
            let lt = LtRun { name: "cublaslt-fp8", input, reference: ref_name, scale };
            r.runs.push(run_cublaslt(cx, shape, dtype, &lt, &ptrs, &mut d.c[0], &refh));
            for &ci in &ours {
                let scales = cands[ci].kind.is_some_and(|k| k.scales);
                let f8 = |name: &str, s: &CudaSlice<u8>| TensorBinding {
                    name: name.into(),
                    dtype: DType::F8e4m3,
                    addr: addr(gpu, s),
                    bytes: s.len() as u64,
                };
                let bind = |s: usize| {
                    let mut v = vec![f8("A", &d.a[s]), f8("B", &d.b[s]), gpu.bind("C", &d.c[s])];
                    if scales {
                        v.push(gpu.bind("scale_a", &cx.scale_a));
                        v.push(gpu.bind("scale_b", &cx.scale_b));
                    }
                    v
                };
                let sc = if scales { scale } else { 1.0 };
                let binds: Vec<_> = (0..sets).map(bind).collect();
                let run = run_ours(cx, &mut cands[ci], shape, dtype, &problem, &binds, &mut d.c, &refh, sc);
                r.runs.push(run);
            }
        }
    }
    Ok(())
}

/// Checks and times one of our artifacts on every set.
#[allow(clippy::too_many_arguments)]
/// One cuBLASLt baseline: its input kind and how its output is checked.
struct LtRun<'a> {
    name: &'static str,
    input: LtInput,
    reference: &'a str,
    scale: f64,
}

/// Checks a cuBLASLt plan once on poisoned output (set 0), then times it
/// over the rotated sets `ptrs` (A, B, C device addresses).
fn run_cublaslt(
    cx: &Ctx,
    shape: Shape,
    dtype: BenchDtype,
    lt: &LtRun,
    ptrs: &[(u64, u64, u64)],
    c0: &mut CudaSlice<bf16>,
    refh: &[bf16],
) -> RunResult {
    let (gpu, args) = (cx.gpu, cx.args);
    let mut run = RunResult::new(lt.name, RunKind::Baseline);
    let res = (|| -> Result<()> {
        let plan = LtGemm::new(&cx.lt, shape.m, shape.n, shape.k, lt.input)?;
        poison(gpu, c0)?;
        unsafe { plan.run(&cx.lt, ptrs[0].0, ptrs[0].1, ptrs[0].2) }?;
        gpu.sync(lt.name)?;
        let check = make_check(lt.reference, check_output(gpu, c0, refh, lt.scale)?, args.threshold);
        let pass = check.pass;
        run.check = Some(check);
        if pass {
            let samples = cx.timer.time(args.warmup, args.reps, |i| {
                let p = ptrs[i % ptrs.len()];
                unsafe { plan.run(&cx.lt, p.0, p.1, p.2) }
            });
            set_timing(&mut run, samples, shape, dtype);
        }
        Ok(())
    })();
    if let Err(e) = res {
        run.error = Some(e.to_string());
    }
    run
}

fn run_ours(
    cx: &Ctx,
    cand: &mut Candidate,
    shape: Shape,
    dtype: BenchDtype,
    problem: &Problem,
    binds: &[Vec<TensorBinding>],
    c: &mut [CudaSlice<bf16>],
    refh: &[bf16],
    ref_scale: f64,
) -> RunResult {
    let gpu = cx.gpu;
    let mut run = RunResult::new(&cand.info.dir, RunKind::Ours);
    let kernel = cand.kernel.as_ref().expect("loaded");
    let res = (|| -> Result<()> {
        let sets = binds.len();
        let mut launches: Vec<Prepared> = binds.iter().map(|b| kernel.prepare(problem, b)).collect::<Result<_>>()?;
        poison(gpu, &mut c[0])?;
        gpu.sync("poison")?;
        let t0 = Instant::now();
        launches[0].launch_checked()?;
        let first_ms = t0.elapsed().as_secs_f64() * 1e3;
        cand.info.first_launch_ms.get_or_insert(first_ms);
        let reference = if ref_scale == 1.0 { "cublas".to_string() } else { format!("cublas x {ref_scale}") };
        let check = make_check(&reference, check_output(gpu, &c[0], refh, ref_scale)?, cx.args.threshold);
        let pass = check.pass;
        run.check = Some(check);
        if !pass {
            run.error = Some("check failed; not timed".into());
            return Ok(());
        }
        let samples = cx.timer.time(cx.args.warmup, cx.args.reps, |i| launches[i % sets].launch());
        set_timing(&mut run, samples, shape, dtype);
        Ok(())
    })();
    if let Err(e) = res {
        run.error = Some(e.to_string());
    }
    run
}
