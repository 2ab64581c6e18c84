//! The `tilec-bench` JSON report: what one run measured, per shape and
//! dtype, per kernel (ours and the vendor baselines), with the derived
//! figures (best kernels, ratio, percent of peak) that [`ShapeResult::summarize`]
//! fills in. Reports of the previous schemas still load: `tilec-bench/2`
//! (no `epilogue`: every shape a plain GEMM) and `tilec-bench/1` (no
//! per-round times, no commit, no kernel configs either).

use serde::{Deserialize, Serialize};
use tilec_target::Target;

/// Version tag written into every report.
pub const SCHEMA: &str = "tilec-bench/3";
/// Older tags [`Report::from_json`] still reads (the fields they lack are empty).
pub const OLDER_SCHEMAS: [&str; 2] = ["tilec-bench/2", "tilec-bench/1"];

/// Element type of the GEMM operands (the output is bf16 in both cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum BenchDtype {
    /// bf16 A and B, fp32 accumulation, bf16 C.
    Bf16,
    /// fp8 e4m3 A and B with f32 scales (per tensor, or DeepGEMM's blocks
    /// of [`FP8_SCALE_BLOCK`]: A's per row and block of K, B's per block of
    /// rows and of K), fp32 accumulation, bf16 C.
    Fp8,
}

/// Elements of K (and rows of B) one FP8 block scale covers.
pub const FP8_SCALE_BLOCK: u64 = 128;

impl BenchDtype {
    /// The name used on the command line, in the JSON and in tables.
    pub fn name(self) -> &'static str {
        match self {
            BenchDtype::Bf16 => "bf16",
            BenchDtype::Fp8 => "fp8",
        }
    }
    /// Bytes per element of A and B.
    pub fn in_bytes(self) -> u64 {
        match self {
            BenchDtype::Bf16 => 2,
            BenchDtype::Fp8 => 1,
        }
    }
    /// Bytes per element of C (bf16 for both).
    pub fn out_bytes(self) -> u64 {
        2
    }
    /// Parses `bf16` or `fp8` (also `e4m3`, `fp8e4m3`, `f8e4m3`).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bf16" => Ok(BenchDtype::Bf16),
            "fp8" | "e4m3" | "fp8e4m3" | "f8e4m3" => Ok(BenchDtype::Fp8),
            o => Err(format!("unknown dtype `{o}` (want bf16 or fp8)")),
        }
    }
}

/// Row-major `C[M,N] = A[M,K] * B[N,K]^T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shape {
    /// Rows of A and C.
    pub m: u64,
    /// Rows of B, columns of C.
    pub n: u64,
    /// Columns of A and B: the reduction length.
    pub k: u64,
}

impl Shape {
    /// The shape with these sizes; `Display` writes it `MxNxK`.
    ///
    /// ```
    /// use tilec_report::schema::{BenchDtype, Shape};
    /// let s = Shape::new(64, 4096, 7168);
    /// assert_eq!(s.to_string(), "64x4096x7168");
    /// assert_eq!(s.flops(), 2.0 * 64.0 * 4096.0 * 7168.0);
    /// assert_eq!(s.min_bytes(BenchDtype::Fp8), (64 * 7168 + 4096 * 7168) + 2 * 64 * 4096);
    /// assert!(s.is_small_m());
    /// ```
    pub const fn new(m: u64, n: u64, k: u64) -> Self {
        Shape { m, n, k }
    }
    /// `2 M N K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
    /// The fewest bytes any kernel must move: A and B read once, C written once.
    pub fn min_bytes(&self, d: BenchDtype) -> u64 {
        (self.m * self.k + self.n * self.k) * d.in_bytes() + self.m * self.n * d.out_bytes()
    }
    /// The bytes the roofline charges: [`Shape::min_bytes`] and, for FP8,
    /// the block scales read once (A's per row and block of K, B's per
    /// block of rows and of K): the block-scaled problem's, which a
    /// per-tensor kernel is measured against too.
    pub fn roofline_bytes(&self, d: BenchDtype) -> u64 {
        let scales = match d {
            BenchDtype::Bf16 => 0,
            BenchDtype::Fp8 => {
                let k_blocks = self.k.div_ceil(FP8_SCALE_BLOCK);
                (self.m * k_blocks + self.n.div_ceil(FP8_SCALE_BLOCK) * k_blocks) * 4
            }
        };
        self.min_bytes(d) + scales
    }
    /// Small-M (decode-like) shapes, where bytes, not FLOPs, bound the time.
    pub fn is_small_m(&self) -> bool {
        self.m <= 256
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)
    }
}

/// TFLOP/s of `flops` done in `ms` milliseconds.
pub fn tflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e-3) / 1e12
}

/// GB/s of `bytes` moved in `ms` milliseconds.
pub fn gbps(bytes: u64, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e-3) / 1e9
}

/// Percentile of sorted data, linear interpolation between closest ranks
/// (`q` in [0, 1]); NaN for empty input.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// `values` sorted, or `None` if empty or any is not finite.
fn sorted_finite(values: &[f64]) -> Option<Vec<f64>> {
    if values.is_empty() || values.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut s = values.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    Some(s)
}

/// Summary of the per-round times, milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Rounds that were timed (may be fewer than asked for; see
    /// [`BenchConfig::max_run_ms`]).
    pub reps: usize,
    /// Median round time, ms; the figure TFLOP/s and GB/s are taken from.
    pub median_ms: f64,
    /// Arithmetic mean, ms.
    pub mean_ms: f64,
    /// Fastest round, ms.
    pub min_ms: f64,
    /// 10th percentile, ms (see [`percentile`]).
    pub p10_ms: f64,
    /// 25th percentile, ms.
    pub p25_ms: f64,
    /// 75th percentile, ms.
    pub p75_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// Slowest round, ms.
    pub max_ms: f64,
}

impl Stats {
    /// `None` for no samples or any non-finite sample.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        let s = sorted_finite(samples)?;
        Some(Stats {
            reps: s.len(),
            median_ms: percentile(&s, 0.5),
            mean_ms: s.iter().sum::<f64>() / s.len() as f64,
            min_ms: s[0],
            p10_ms: percentile(&s, 0.1),
            p25_ms: percentile(&s, 0.25),
            p75_ms: percentile(&s, 0.75),
            p90_ms: percentile(&s, 0.9),
            max_ms: s[s.len() - 1],
        })
    }
    /// (p90 - p10) / median: the spread, as a fraction.
    pub fn spread(&self) -> f64 {
        (self.p90_ms - self.p10_ms) / self.median_ms
    }
}

/// Median and 10th/90th percentiles of a ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioStats {
    /// Median ratio (the shape's `ratio`); above 1 means ours is faster.
    pub median: f64,
    /// 10th percentile of the ratio.
    pub p10: f64,
    /// 90th percentile of the ratio.
    pub p90: f64,
    /// How the spread was obtained: `rounds` (one ratio per interleaved
    /// round) or `medians` (older reports: the baseline's median time over our
    /// p90 and p10 times).
    pub from: String,
}

impl RatioStats {
    /// From one ratio per round; `None` if there is none or one is not finite.
    pub fn from_rounds(ratios: &[f64]) -> Option<RatioStats> {
        let s = sorted_finite(ratios)?;
        Some(RatioStats {
            median: percentile(&s, 0.5),
            p10: percentile(&s, 0.1),
            p90: percentile(&s, 0.9),
            from: "rounds".into(),
        })
    }
}

/// The hardware peaks percentages are taken of. Dense (no sparsity) figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    /// Which part the figures are for.
    pub part: String,
    /// Dense BF16 tensor-core peak, TFLOP/s.
    pub bf16_tflops: f64,
    /// Dense FP8 tensor-core peak, TFLOP/s.
    pub fp8_tflops: f64,
    /// HBM bandwidth, GB/s (10^9 bytes).
    pub hbm_gbps: f64,
}

impl Peaks {
    /// The datasheet peaks of `target`.
    pub fn of(target: &Target) -> Peaks {
        Peaks {
            part: format!("{} (datasheet, dense)", target.part),
            bf16_tflops: target.bf16_flops as f64 / 1e12,
            fp8_tflops: target.fp8_flops as f64 / 1e12,
            hbm_gbps: target.hbm_bytes_per_s as f64 / 1e9,
        }
    }
    /// The peak TFLOP/s of `dtype`.
    pub fn tflops(&self, dtype: BenchDtype) -> f64 {
        match dtype {
            BenchDtype::Bf16 => self.bf16_tflops,
            BenchDtype::Fp8 => self.fp8_tflops,
        }
    }
    /// The roofline of `shape`, TFLOP/s: the tensor peak, or the FLOPs the
    /// HBM bandwidth allows with its [`Shape::roofline_bytes`] moved once,
    /// whichever is lower.
    pub fn roofline_tflops(&self, shape: Shape, dtype: BenchDtype) -> f64 {
        let memory = shape.flops() * self.hbm_gbps * 1e9 / shape.roofline_bytes(dtype) as f64 / 1e12;
        self.tflops(dtype).min(memory)
    }
}

/// The H100's, which reports from before the peaks were recorded were
/// summarised with.
impl Default for Peaks {
    fn default() -> Self {
        Peaks::of(&Target::H100)
    }
}

/// One `tilec-bench` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA`] (or one of [`OLDER_SCHEMAS`] for a report read from disk).
    pub schema: String,
    /// Seconds since the Unix epoch when the run started.
    pub created_unix: u64,
    /// The start of the run, UTC, `YYYY-MM-DD HH:MM:SS`.
    #[serde(default)]
    pub date_utc: String,
    /// `git rev-parse HEAD` of the tree `tilec-bench` was built from
    /// (`-dirty` appended when it had local changes), if known.
    #[serde(default)]
    pub commit: Option<String>,
    /// `tilec-bench`'s argv, program name first.
    pub command_line: Vec<String>,
    /// The GPU and library versions the run used.
    pub device: DeviceInfo,
    /// The run's options.
    pub config: BenchConfig,
    /// The peaks behind `pct_peak` and `pct_hbm`.
    #[serde(default)]
    pub peaks: Peaks,
    /// Every `--artifact` candidate, usable or not, in command-line order.
    pub artifacts: Vec<ArtifactInfo>,
    /// One entry per (dtype, shape) benchmarked, dtype-major.
    pub results: Vec<ShapeResult>,
}

/// The GPU and library versions of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// The device name the driver reports (e.g. `NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// The tilec target the device is (`h100`, `h200`; see
    /// `Target::matches_device`), or `unknown`: none, or a report from
    /// before the target was recorded.
    #[serde(default = "unknown_target")]
    pub target: String,
    /// Compute capability as `sm_XY` (e.g. `sm_90`).
    pub sm: String,
    /// Streaming multiprocessors on the device.
    pub num_sms: u32,
    /// L2 cache size, bytes; input sets rotate to span a multiple of it.
    pub l2_bytes: u64,
    /// Total device memory, bytes.
    pub memory_bytes: u64,
    /// `cuDriverGetVersion` as `major.minor`.
    pub driver: String,
    /// `cublasGetVersion`'s number, if cuBLAS reported one.
    pub cublas_version: Option<i64>,
    /// `cublasLtGetVersion`'s number.
    pub cublaslt_version: Option<u64>,
}

/// [`DeviceInfo::target`] when no target matches, or in older reports.
pub const UNKNOWN_TARGET: &str = "unknown";

fn unknown_target() -> String {
    UNKNOWN_TARGET.into()
}

/// The options a run was made with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// Untimed runs of each kernel before timing (`--warmup`).
    pub warmup: usize,
    /// Timed rounds asked for (a slow shape may get fewer; see `Stats::reps`).
    pub reps: usize,
    /// The operand types benchmarked (`--dtypes`), in run order.
    pub dtypes: Vec<BenchDtype>,
    /// Largest relative Frobenius error against the reference that passes
    /// (`--threshold`).
    pub threshold: f64,
    /// Input sets were rotated until together they span this many times the L2
    /// (`--l2-factor`; 0 means one set), so timings do not read from a warm L2.
    pub l2_factor: f64,
    /// Upper bound on the number of rotated input sets (`--max-sets`).
    pub max_sets: usize,
    /// A slow kernel's timed calls were capped near this many ms
    /// (`--max-run-ms`), reducing its rounds to at least 5.
    pub max_run_ms: f64,
    /// Only the vendor baselines were timed (`--baseline-only`).
    pub baseline_only: bool,
    /// `CUDA_CACHE_DISABLE=1` was set, so module loads measure the real JIT.
    pub jit_cache_disabled: bool,
    /// A spin kernel held the stream while each timed batch was enqueued.
    pub spin_kernel: bool,
    /// Every kernel of a shape ran once per round, in turn (A B C, then
    /// B C A, ...: in reports since rotation came in, each round starts one
    /// kernel further on; docs/evidence.md, timing.rs), so drift hits all
    /// alike; false in older reports (one kernel's repetitions after
    /// another's).
    #[serde(default)]
    pub interleaved: bool,
    /// Per-tensor scales the FP8 baseline runs with.
    pub fp8_scale_a: f64,
    /// Per-tensor scale of B for the FP8 baseline (a power of two, like
    /// `fp8_scale_a`, so the scaled reference is exact).
    pub fp8_scale_b: f64,
    /// Seed of the run's inputs (`--seed`, else taken from the clock); each
    /// shape derives its own ([`ShapeResult::seed`]).
    pub seed: u64,
}

/// What an artifact's manifest says about its kernel's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelConfig {
    /// The manifest's PTX target (e.g. `sm_90a`).
    pub target: String,
    /// The manifest's grid rule as written there (tile sizes, grouping, or
    /// persistent CTAs per SM).
    pub grid: serde_json::Value,
    /// TMA box of each TMA-loaded or -stored tensor, outermost dimension first.
    pub tma_boxes: Vec<TmaBox>,
}

/// One TMA parameter's box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TmaBox {
    /// The tensor the descriptor addresses.
    pub tensor: String,
    /// Box extents in elements, outermost dimension first.
    pub box_dims: Vec<u32>,
    /// The manifest's swizzle spelling: `none`, `32B`, `64B` or `128B`.
    pub swizzle: String,
}

/// One `--artifact` candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactInfo {
    /// The directory as given on the command line (the candidate's name).
    pub dir: String,
    /// The PTX `.entry` symbol from the manifest.
    pub entry: String,
    /// The manifest's human-facing kernel name.
    pub kernel_name: String,
    /// The operand type the artifact computes; `None` when it is not a GEMM
    /// the runtime can drive (then `error` says why).
    pub dtype: Option<BenchDtype>,
    /// Threads per CTA, `[x, y, z]`, from the manifest.
    pub block: [u32; 3],
    /// CTAs per cluster, `[x, y, z]`, from the manifest.
    pub cluster: [u32; 3],
    /// Dynamic shared memory per CTA, bytes, from the manifest.
    pub dynamic_smem_bytes: u32,
    /// Absent in older reports.
    #[serde(default)]
    pub config: Option<KernelConfig>,
    /// Wall time of the module load (driver PTX -> SASS JIT), ms.
    pub module_load_ms: Option<f64>,
    /// Host wall time of the first launch plus its synchronisation, ms.
    pub first_launch_ms: Option<f64>,
    /// Registers per thread of the loaded kernel, as the driver reports them.
    pub num_regs: Option<i32>,
    /// Static shared memory per CTA of the loaded kernel, bytes.
    pub static_smem_bytes: Option<u32>,
    /// Why the artifact could not be used (not a GEMM, failed to load, ...).
    pub error: Option<String>,
}

/// Whose kernel a run timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// A tilec artifact.
    Ours,
    /// A vendor library kernel (cuBLAS, cuBLASLt).
    Baseline,
}

/// The correctness check of one run, done once before timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What the output was compared with.
    pub reference: String,
    /// `||out - ref||_F / ||ref||_F`; `None` (JSON null) when NaN/inf.
    pub rel_err: Option<f64>,
    /// The largest `rel_err` that passes.
    pub threshold: f64,
    /// `rel_err` is finite and at most `threshold`.
    pub pass: bool,
}

/// One kernel (ours or a baseline) on one shape and dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// `cublas`, `cublaslt`, `cublaslt-fp8`, or the artifact's dir.
    pub name: String,
    /// Whether it is one of ours or a baseline.
    pub kind: RunKind,
    /// The correctness check, if one was made.
    pub check: Option<Check>,
    /// Statistics of `round_ms`; `None` if untimed or a sample was not finite.
    pub stats: Option<Stats>,
    /// The time of each round, ms, in round order (empty in older reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_ms: Vec<f64>,
    /// From the median time.
    pub tflops: Option<f64>,
    /// [`Shape::min_bytes`] over the median time.
    pub gbps: Option<f64>,
    /// `tflops` as a percentage of the dtype's peak ([`Report::peaks`]).
    #[serde(default)]
    pub pct_peak: Option<f64>,
    /// `gbps` as a percentage of the HBM bandwidth.
    #[serde(default)]
    pub pct_hbm: Option<f64>,
    /// `tflops` as a percentage of the shape's roofline
    /// ([`Peaks::roofline_tflops`]).
    #[serde(default)]
    pub pct_roofline: Option<f64>,
    /// Why the run has no figures (failed launch, no valid samples, ...).
    pub error: Option<String>,
}

impl RunResult {
    /// An empty run: no check, no times, no error.
    pub fn new(name: &str, kind: RunKind) -> Self {
        RunResult {
            name: name.into(),
            kind,
            check: None,
            stats: None,
            round_ms: Vec::new(),
            tflops: None,
            gbps: None,
            pct_peak: None,
            pct_hbm: None,
            pct_roofline: None,
            error: None,
        }
    }
    /// Timed, and passed its check (a run with no check counts as passing).
    pub fn usable(&self) -> bool {
        self.error.is_none() && self.tflops.is_some() && self.check.as_ref().is_none_or(|c| c.pass)
    }
    /// Failed its correctness check (and so was not timed).
    pub fn check_failed(&self) -> bool {
        self.check.as_ref().is_some_and(|c| !c.pass)
    }
    /// Sets the times of the rounds and everything derived from them.
    pub fn set_rounds(&mut self, round_ms: Vec<f64>, shape: Shape, dtype: BenchDtype) {
        self.stats = Stats::from_samples(&round_ms);
        match &self.stats {
            Some(st) => {
                self.tflops = Some(tflops(shape.flops(), st.median_ms));
                self.gbps = Some(gbps(shape.min_bytes(dtype), st.median_ms));
            }
            None => self.error = Some("no valid timing samples".into()),
        }
        self.round_ms = round_ms;
    }
}

/// The state of a shape's row: did the kernel whose figures it shows pass?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowCheck {
    /// Our best kernel passed its check (others may have failed).
    Ok,
    /// None of ours is usable and at least one failed its check.
    Fail,
    /// The shape could not be run at all.
    Error,
    /// No kernel of ours was run (baselines only).
    NoOurs,
}

/// One shape and dtype: every kernel's run and the comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeResult {
    /// Rows of A and C.
    pub m: u64,
    /// Rows of B, columns of C.
    pub n: u64,
    /// The reduction length.
    pub k: u64,
    /// Operand type of every run of the shape.
    pub dtype: BenchDtype,
    /// [`Shape::flops`]: `2 M N K`.
    pub flops: f64,
    /// [`Shape::min_bytes`] for `dtype`.
    pub min_bytes: u64,
    /// Bytes of one A+B+C set, and how many sets the timing rotated over.
    pub set_bytes: u64,
    /// Number of A+B+C sets the timed calls cycled through (at least 1).
    pub rotate_sets: usize,
    /// Seed the shape's inputs were drawn from.
    pub seed: u64,
    /// Every kernel run on the shape, ours and the baselines.
    pub runs: Vec<RunResult>,
    /// Name of the fastest of our usable runs / of the baselines (by median).
    pub best_ours: Option<String>,
    /// Name of the fastest usable baseline run (by median).
    pub best_baseline: Option<String>,
    /// Our best TFLOP/s over the best baseline's: the median of the per-round
    /// ratios, or of the medians in older reports.
    pub ratio: Option<f64>,
    /// The ratio's median and spread.
    #[serde(default)]
    pub ratio_stats: Option<RatioStats>,
    /// The fused epilogue our kernels compute on this shape and the
    /// baseline that computed it too; absent for a plain GEMM (and in
    /// reports before `tilec-bench/3`), whose baselines are the plain ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epilogue: Option<EpilogueBaseline>,
    /// A failure that stopped the whole shape (allocation, ...).
    pub error: Option<String>,
}

/// Which baseline ran for a shape whose kernels fuse an epilogue: the
/// baselines compute the same epilogue, so the ratio compares like with like.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpilogueBaseline {
    /// What the epilogue computes as far as a vendor kernel fuses it:
    /// `bias`, `bias_gelu` (cuBLASLt's `CUBLASLT_EPILOGUE_BIAS`,
    /// `CUBLASLT_EPILOGUE_GELU_BIAS`), `residual` (`alpha * acc + beta *
    /// R`: cuBLASLt's alpha, beta and C), `gated` (interleaved parts of the
    /// product, as SwiGLU's gate and up: the GEMM's product to a scratch
    /// buffer, then the element-wise kernel) or `other`.
    pub kind: String,
    /// The baseline runs that computed it (names in `runs`): a cuBLASLt
    /// GEMM with the epilogue fused (`cublaslt-gelu-bias`, ...), or a
    /// cuBLASLt GEMM writing bf16 followed by an element-wise kernel
    /// generated from the epilogue (`...+nvrtc-epilogue`), timed together.
    pub baselines: Vec<String>,
    /// Whether the vendor fused it (false: GEMM then element-wise kernel).
    pub fused: bool,
    /// Why a fused baseline was not used, where one was tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ShapeResult {
    /// A result with no runs yet: `set_bytes` is one set's minimal bytes,
    /// `rotate_sets` 1, seed 0.
    pub fn new(shape: Shape, dtype: BenchDtype) -> Self {
        ShapeResult {
            m: shape.m,
            n: shape.n,
            k: shape.k,
            dtype,
            flops: shape.flops(),
            min_bytes: shape.min_bytes(dtype),
            set_bytes: shape.min_bytes(dtype),
            rotate_sets: 1,
            seed: 0,
            runs: Vec::new(),
            best_ours: None,
            best_baseline: None,
            ratio: None,
            ratio_stats: None,
            epilogue: None,
            error: None,
        }
    }
    /// The shape's (M, N, K).
    pub fn shape(&self) -> Shape {
        Shape::new(self.m, self.n, self.k)
    }
    /// The run named `name` (`cublas`, an artifact dir, ...), if any.
    pub fn run(&self, name: &str) -> Option<&RunResult> {
        self.runs.iter().find(|r| r.name == name)
    }
    fn best(&self, kind: RunKind) -> Option<&RunResult> {
        self.runs
            .iter()
            .filter(|r| r.kind == kind && r.usable())
            .max_by(|a, b| a.tflops.unwrap_or(0.0).total_cmp(&b.tflops.unwrap_or(0.0)))
    }
    /// Fills the percentages of peak and of the roofline, `best_ours`, `best_baseline`, `ratio`
    /// and `ratio_stats` from `runs`.
    pub fn summarize(&mut self, peaks: &Peaks) {
        let peak = peaks.tflops(self.dtype);
        let roofline = peaks.roofline_tflops(self.shape(), self.dtype);
        for r in &mut self.runs {
            r.pct_peak = r.tflops.map(|t| 100.0 * t / peak);
            r.pct_hbm = r.gbps.map(|g| 100.0 * g / peaks.hbm_gbps);
            r.pct_roofline = r.tflops.map(|t| 100.0 * t / roofline);
        }
        let (ours, base) = (self.best(RunKind::Ours), self.best(RunKind::Baseline));
        let stats = match (ours, base) {
            (Some(o), Some(b)) => ratio_stats(o, b),
            _ => None,
        };
        let (best_ours, best_baseline) = (ours.map(|r| r.name.clone()), base.map(|r| r.name.clone()));
        self.ratio = stats.as_ref().map(|r| r.median);
        self.ratio_stats = stats;
        self.best_ours = best_ours;
        self.best_baseline = best_baseline;
    }
    /// True if some run failed its check.
    pub fn any_check_failed(&self) -> bool {
        self.runs.iter().any(RunResult::check_failed)
    }
    /// The runs of ours that failed their check.
    pub fn failed_ours(&self) -> impl Iterator<Item = &RunResult> {
        self.runs.iter().filter(|r| r.kind == RunKind::Ours && r.check_failed())
    }
    /// The row's check: about the kernel whose figures the row shows. A
    /// failed candidate is never timed, so it cannot be the row's kernel.
    pub fn row_check(&self) -> RowCheck {
        if self.error.is_some() {
            RowCheck::Error
        } else if self.best_ours.is_some() {
            RowCheck::Ok
        } else if self.failed_ours().next().is_some() {
            RowCheck::Fail
        } else {
            RowCheck::NoOurs
        }
    }
}

/// The ratio of our run's TFLOP/s to the baseline's: per round when both
/// have the same rounds, else from the medians (with our p90 and p10 times
/// for the spread).
fn ratio_stats(ours: &RunResult, base: &RunResult) -> Option<RatioStats> {
    if !ours.round_ms.is_empty() && ours.round_ms.len() == base.round_ms.len() {
        let per_round: Vec<f64> = ours.round_ms.iter().zip(&base.round_ms).map(|(o, b)| b / o).collect();
        return RatioStats::from_rounds(&per_round);
    }
    let (o, b) = (ours.stats.as_ref()?, base.stats.as_ref()?);
    Some(RatioStats {
        median: b.median_ms / o.median_ms,
        p10: b.median_ms / o.p90_ms,
        p90: b.median_ms / o.p10_ms,
        from: "medians".into(),
    })
}

impl Report {
    /// Pretty-printed JSON of the report, as `tilec-bench --json` writes it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }
    /// Reads a report of this schema or an older one, and summarises every
    /// shape again (older reports get the fields they lack).
    pub fn from_json(s: &str) -> Result<Self, String> {
        let mut r: Report = serde_json::from_str(s).map_err(|e| e.to_string())?;
        if r.schema != SCHEMA && !OLDER_SCHEMAS.contains(&r.schema.as_str()) {
            return Err(format!("schema `{}`, expected `{SCHEMA}` or one of {OLDER_SCHEMAS:?}", r.schema));
        }
        if r.date_utc.is_empty() {
            r.date_utc = date_utc(r.created_unix);
        }
        let peaks = r.peaks.clone();
        r.results.iter_mut().for_each(|s| s.summarize(&peaks));
        Ok(r)
    }
    /// Reads and parses a report file.
    pub fn load(path: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        Report::from_json(&text).map_err(|e| format!("{path}: {e}"))
    }
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn date_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let t = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", t / 3600, t % 3600 / 60, t % 60)
}
