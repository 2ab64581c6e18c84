//! The pure half of `tilec-bench`: shapes, FLOP and byte counts, L2
//! rotation, statistics, the JSON report schema and the text table. No CUDA
//! here, so all of it is unit-tested without a GPU.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Version tag written into every report.
pub const SCHEMA: &str = "tilec-bench/1";

/// Element type of the GEMM operands (the output is bf16 in both cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum BenchDtype {
    /// bf16 A and B, fp32 accumulation, bf16 C.
    Bf16,
    /// fp8 e4m3 A and B with per-tensor f32 scales, fp32 accumulation, bf16 C.
    Fp8,
}

impl BenchDtype {
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
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bf16" => Ok(BenchDtype::Bf16),
            "fp8" | "e4m3" | "fp8e4m3" | "f8e4m3" => Ok(BenchDtype::Fp8),
            o => Err(format!("unknown dtype `{o}` (want bf16 or fp8)")),
        }
    }
}

pub fn parse_dtypes(s: &str) -> Result<Vec<BenchDtype>, String> {
    let mut v = Vec::new();
    for d in s.split(',').filter(|x| !x.trim().is_empty()) {
        let d = BenchDtype::parse(d)?;
        if !v.contains(&d) {
            v.push(d);
        }
    }
    if v.is_empty() {
        return Err("no dtype given".into());
    }
    Ok(v)
}

/// Row-major `C[M,N] = A[M,K] * B[N,K]^T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

impl Shape {
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

/// The LLM (N, K) pairs of the design's shape list.
pub const LLM_NK: [(u64, u64); 6] = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)];
pub const LLM_M: [u64; 3] = [64, 128, 4096];

/// 4096^3, 8192^3, then M in {64, 128, 4096} x the LLM (N, K) pairs.
pub fn default_shapes() -> Vec<Shape> {
    let mut v = vec![Shape::new(4096, 4096, 4096), Shape::new(8192, 8192, 8192)];
    for m in LLM_M {
        for (n, k) in LLM_NK {
            v.push(Shape::new(m, n, k));
        }
    }
    v
}

/// Parses `MxNxK[,MxNxK...]`; the words `default`, `square` (4096^3, 8192^3)
/// and `llm` may stand among them. Duplicates are dropped, order kept.
pub fn parse_shapes(s: &str) -> Result<Vec<Shape>, String> {
    let mut out: Vec<Shape> = Vec::new();
    let push = |sh: Shape, out: &mut Vec<Shape>| {
        if !out.contains(&sh) {
            out.push(sh);
        }
    };
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        match item.to_ascii_lowercase().as_str() {
            "default" | "all" => default_shapes().into_iter().for_each(|x| push(x, &mut out)),
            "square" => default_shapes().into_iter().take(2).for_each(|x| push(x, &mut out)),
            "llm" => default_shapes().into_iter().skip(2).for_each(|x| push(x, &mut out)),
            _ => {
                let v: Vec<u64> = item
                    .split(['x', 'X'])
                    .map(|d| d.trim().parse::<u64>().map_err(|e| format!("bad shape `{item}`: {e}")))
                    .collect::<Result<_, _>>()?;
                let [m, n, k] = v[..] else {
                    return Err(format!("bad shape `{item}`: want MxNxK"));
                };
                if m == 0 || n == 0 || k == 0 {
                    return Err(format!("bad shape `{item}`: zero dimension"));
                }
                push(Shape::new(m, n, k), &mut out);
            }
        }
    }
    if out.is_empty() {
        return Err("no shape given".into());
    }
    Ok(out)
}

/// How many input/output sets to rotate through so the L2 cannot hold them:
/// enough that together they span at least `l2_factor` times the L2, at
/// least one, at most `max_sets`, and (beyond the first) within
/// `mem_budget` bytes.
pub fn rotation_sets(set_bytes: u64, l2_bytes: u64, l2_factor: f64, max_sets: usize, mem_budget: u64) -> usize {
    if set_bytes == 0 {
        return 1;
    }
    let want = ((l2_bytes as f64 * l2_factor) / set_bytes as f64).ceil().max(1.0) as usize;
    let fit = (mem_budget / set_bytes).max(1) as usize;
    want.min(max_sets.max(1)).min(fit).max(1)
}

pub fn tflops(flops: f64, ms: f64) -> f64 {
    flops / (ms * 1e-3) / 1e12
}

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

/// Summary of the per-repetition times, milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub reps: usize,
    pub median_ms: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub p10_ms: f64,
    pub p25_ms: f64,
    pub p75_ms: f64,
    pub p90_ms: f64,
    pub max_ms: f64,
}

impl Stats {
    /// `None` for no samples or any non-finite sample.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
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

// ---------------------------------------------------------------- report

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Seconds since the Unix epoch when the run started.
    pub created_unix: u64,
    pub command_line: Vec<String>,
    pub device: DeviceInfo,
    pub config: BenchConfig,
    pub artifacts: Vec<ArtifactInfo>,
    pub results: Vec<ShapeResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub sm: String,
    pub num_sms: u32,
    pub l2_bytes: u64,
    pub memory_bytes: u64,
    /// `cuDriverGetVersion` as `major.minor`.
    pub driver: String,
    pub cublas_version: Option<i64>,
    pub cublaslt_version: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchConfig {
    pub warmup: usize,
    pub reps: usize,
    pub dtypes: Vec<BenchDtype>,
    pub threshold: f64,
    pub l2_factor: f64,
    pub max_sets: usize,
    pub max_run_ms: f64,
    pub baseline_only: bool,
    /// `CUDA_CACHE_DISABLE=1` was set, so module loads measure the real JIT.
    pub jit_cache_disabled: bool,
    /// A spin kernel held the stream while each timed batch was enqueued.
    pub spin_kernel: bool,
    /// Per-tensor scales the FP8 baseline runs with.
    pub fp8_scale_a: f64,
    pub fp8_scale_b: f64,
    pub seed: u64,
}

/// One `--artifact` candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactInfo {
    /// The directory as given on the command line (the candidate's name).
    pub dir: String,
    pub entry: String,
    pub kernel_name: String,
    pub dtype: Option<BenchDtype>,
    pub block: [u32; 3],
    pub cluster: [u32; 3],
    pub dynamic_smem_bytes: u32,
    /// Wall time of the module load (driver PTX -> SASS JIT), ms.
    pub module_load_ms: Option<f64>,
    /// Host wall time of the first launch plus its synchronisation, ms.
    pub first_launch_ms: Option<f64>,
    pub num_regs: Option<i32>,
    pub static_smem_bytes: Option<u32>,
    /// Why the artifact could not be used (not a GEMM, failed to load, ...).
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    Ours,
    Baseline,
}

/// The correctness check of one run, done once before timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What the output was compared with.
    pub reference: String,
    /// `||out - ref||_F / ||ref||_F`; `None` (JSON null) when NaN/inf.
    pub rel_err: Option<f64>,
    pub threshold: f64,
    pub pass: bool,
}

/// One kernel (ours or a baseline) on one shape and dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// `cublas`, `cublaslt`, `cublaslt-fp8`, or the artifact's dir.
    pub name: String,
    pub kind: RunKind,
    pub check: Option<Check>,
    pub stats: Option<Stats>,
    /// From the median time.
    pub tflops: Option<f64>,
    /// [`Shape::min_bytes`] over the median time.
    pub gbps: Option<f64>,
    pub error: Option<String>,
}

impl RunResult {
    pub fn new(name: &str, kind: RunKind) -> Self {
        RunResult { name: name.into(), kind, check: None, stats: None, tflops: None, gbps: None, error: None }
    }
    /// Timed, and passed its check (a run with no check counts as passing).
    pub fn usable(&self) -> bool {
        self.error.is_none() && self.tflops.is_some() && self.check.as_ref().is_none_or(|c| c.pass)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeResult {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub dtype: BenchDtype,
    pub flops: f64,
    pub min_bytes: u64,
    /// Bytes of one A+B+C set, and how many sets the timing rotated over.
    pub set_bytes: u64,
    pub rotate_sets: usize,
    pub seed: u64,
    pub runs: Vec<RunResult>,
    /// Name of the fastest of our usable runs / of the baselines.
    pub best_ours: Option<String>,
    pub best_baseline: Option<String>,
    /// Our best TFLOP/s over the best baseline's.
    pub ratio: Option<f64>,
    /// A failure that stopped the whole shape (allocation, ...).
    pub error: Option<String>,
}

impl ShapeResult {
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
            error: None,
        }
    }
    pub fn shape(&self) -> Shape {
        Shape::new(self.m, self.n, self.k)
    }
    pub fn run(&self, name: &str) -> Option<&RunResult> {
        self.runs.iter().find(|r| r.name == name)
    }
    fn best(&self, kind: RunKind) -> Option<&RunResult> {
        self.runs
            .iter()
            .filter(|r| r.kind == kind && r.usable())
            .max_by(|a, b| a.tflops.unwrap_or(0.0).total_cmp(&b.tflops.unwrap_or(0.0)))
    }
    /// Fills `best_ours`, `best_baseline` and `ratio` from `runs`.
    pub fn summarize(&mut self) {
        let ours = self.best(RunKind::Ours).map(|r| (r.name.clone(), r.tflops.unwrap()));
        let base = self.best(RunKind::Baseline).map(|r| (r.name.clone(), r.tflops.unwrap()));
        self.ratio = match (&ours, &base) {
            (Some((_, o)), Some((_, b))) if *b > 0.0 => Some(o / b),
            _ => None,
        };
        self.best_ours = ours.map(|x| x.0);
        self.best_baseline = base.map(|x| x.0);
    }
    /// True if some run failed its check.
    pub fn any_check_failed(&self) -> bool {
        self.runs.iter().any(|r| r.check.as_ref().is_some_and(|c| !c.pass))
    }
}

impl Report {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }
    pub fn from_json(s: &str) -> Result<Self, String> {
        let r: Report = serde_json::from_str(s).map_err(|e| e.to_string())?;
        if r.schema != SCHEMA {
            return Err(format!("schema `{}`, expected `{SCHEMA}`", r.schema));
        }
        Ok(r)
    }
}

// ---------------------------------------------------------------- table

fn opt(v: Option<f64>, prec: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.prec$}"),
        _ => "-".into(),
    }
}

/// Shortens an artifact path to its last component for the table.
pub fn short_name(name: &str) -> &str {
    let t = name.trim_end_matches('/');
    t.rsplit('/').next().unwrap_or(t)
}

/// The text table: one row per shape and dtype. TFLOP/s come from medians;
/// `spread` is (p90 - p10) / median of our best run; GB/s (ours and the best
/// baseline's, from the minimum byte count) only for small-M shapes; `check`
/// is FAIL when any run failed its correctness check.
pub fn format_table(results: &[ShapeResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<18} {:<5} {:>9} {:>7} {:>9} {:>9} {:>7} {:>8} {:>8} {:>6}  best ours",
        "shape (MxNxK)", "dtype", "ours_TF", "spread", "cublas_TF", "lt_TF", "ratio", "ours_GBs", "base_GBs", "check"
    );
    for r in results {
        let shape = r.shape();
        let ours = r.best_ours.as_deref().and_then(|n| r.run(n));
        let tf = |names: &[&str]| names.iter().find_map(|n| r.run(n).filter(|x| x.usable()).and_then(|x| x.tflops));
        let spread = ours.and_then(|o| o.stats.as_ref()).map(|st| st.spread() * 100.0);
        let small = shape.is_small_m();
        let gbs = if small { ours.and_then(|o| o.gbps) } else { None };
        let base_gbs = if small { r.best_baseline.as_deref().and_then(|n| r.run(n)).and_then(|b| b.gbps) } else { None };
        let check = if r.error.is_some() {
            "ERROR"
        } else if r.any_check_failed() {
            "FAIL"
        } else {
            "ok"
        };
        let _ = writeln!(
            s,
            "{:<18} {:<5} {:>9} {:>7} {:>9} {:>9} {:>7} {:>8} {:>8} {:>6}  {}",
            shape.to_string(),
            r.dtype.name(),
            opt(ours.and_then(|o| o.tflops), 1),
            spread.map(|x| format!("{x:.1}%")).unwrap_or_else(|| "-".into()),
            opt(tf(&["cublas"]), 1),
            opt(tf(&["cublaslt", "cublaslt-fp8"]), 1),
            opt(r.ratio, 3),
            opt(gbs, 0),
            opt(base_gbs, 0),
            check,
            r.best_ours.as_deref().map(short_name).unwrap_or("-"),
        );
    }
    s
}

// ---------------------------------------------------------------- CLI

pub const USAGE: &str = "\
usage: tilec-bench [--artifact DIR]... [--shapes LIST] [--dtypes bf16,fp8]
                   [--warmup N] [--reps N] [--json OUT] [--png OUT] [--baseline-only]
                   [--threshold 1e-2] [--l2-factor 4] [--max-sets 64] [--seed N]
                   [--max-run-ms 3000] [--no-spin] [--jit-cache] [--from-json IN]
  --artifact DIR   a compiled GEMM artifact (repeatable; each is a candidate,
                   the best per shape is reported, all are in the JSON)
  --shapes LIST    MxNxK,... or the words default, square, llm (default: default)
  --dtypes LIST    bf16 and/or fp8 (default: bf16,fp8)
  --warmup N       untimed runs before timing (default 10)
  --reps N         timed runs; median and spread over them (default 100)
  --json OUT       write the full report (schema tilec-bench/1)
  --png OUT        write a bar chart of TFLOP/s per shape
  --baseline-only  time the vendor baselines only (artifacts are ignored)
  --threshold T    max relative Frobenius error vs cuBLAS (default 1e-2)
  --l2-factor F    rotate input sets until they span F x the L2 (default 4)
  --max-sets N     at most N rotated sets (default 64)
  --seed N         input seed (default: from the clock)
  --max-run-ms T   cap a slow kernel's timed calls near T ms (fewer reps, at
                   least 5; warm-up near T/4); the JSON records the reps done
  --no-spin        do not hold the stream with a spin kernel while enqueuing
  --jit-cache      keep the driver's JIT cache (default: CUDA_CACHE_DISABLE=1,
                   so module load time is the real PTX->SASS compile)
  --from-json IN   no GPU: print the table of a saved report, and re-draw --png
Exit status: 0 ok (or SKIPPED: no libcuda), 1 a correctness check failed,
2 a usage or setup error.";

#[derive(Debug, Clone, PartialEq)]
pub struct BenchArgs {
    pub artifacts: Vec<String>,
    pub shapes: Vec<Shape>,
    pub dtypes: Vec<BenchDtype>,
    pub warmup: usize,
    pub reps: usize,
    pub json: Option<String>,
    pub png: Option<String>,
    pub baseline_only: bool,
    pub threshold: f64,
    pub l2_factor: f64,
    pub max_sets: usize,
    pub seed: Option<u64>,
    pub max_run_ms: f64,
    pub spin: bool,
    pub jit_cache: bool,
    pub from_json: Option<String>,
    pub help: bool,
}

impl Default for BenchArgs {
    fn default() -> Self {
        BenchArgs {
            artifacts: Vec::new(),
            shapes: default_shapes(),
            dtypes: vec![BenchDtype::Bf16, BenchDtype::Fp8],
            warmup: 10,
            reps: 100,
            json: None,
            png: None,
            baseline_only: false,
            threshold: 1e-2,
            l2_factor: 4.0,
            max_sets: 64,
            seed: None,
            max_run_ms: 3000.0,
            spin: true,
            jit_cache: false,
            from_json: None,
            help: false,
        }
    }
}

pub fn parse_args(args: &[String]) -> Result<BenchArgs, String> {
    let mut a = BenchArgs::default();
    let mut i = 0;
    fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
        v.parse().map_err(|_| format!("{flag}: bad value `{v}`"))
    }
    while i < args.len() {
        let flag = args[i].as_str();
        let takes_value = !matches!(flag, "--baseline-only" | "--no-spin" | "--jit-cache" | "-h" | "--help");
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (flag, None),
        };
        let value = if takes_value {
            match inline {
                Some(v) => Some(v),
                None => {
                    i += 1;
                    Some(args.get(i).cloned().ok_or_else(|| format!("{flag} needs a value"))?)
                }
            }
        } else {
            None
        };
        let v = value.as_deref().unwrap_or("");
        match flag {
            "--artifact" => a.artifacts.push(v.to_string()),
            "--shapes" => a.shapes = parse_shapes(v)?,
            "--dtypes" | "--dtype" => a.dtypes = parse_dtypes(v)?,
            "--warmup" => a.warmup = num(flag, v)?,
            "--reps" => a.reps = num(flag, v)?,
            "--json" => a.json = Some(v.to_string()),
            "--png" => a.png = Some(v.to_string()),
            "--threshold" => a.threshold = num(flag, v)?,
            "--l2-factor" => a.l2_factor = num(flag, v)?,
            "--max-sets" => a.max_sets = num(flag, v)?,
            "--seed" => {
                a.seed = Some(match v.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).map_err(|_| format!("--seed: bad value `{v}`"))?,
                    None => num(flag, v)?,
                })
            }
            "--max-run-ms" => a.max_run_ms = num(flag, v)?,
            "--from-json" => a.from_json = Some(v.to_string()),
            "--baseline-only" => a.baseline_only = true,
            "--no-spin" => a.spin = false,
            "--jit-cache" => a.jit_cache = true,
            "-h" | "--help" => a.help = true,
            _ => return Err(format!("unknown argument `{}`", args[i])),
        }
        i += 1;
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    let positive = |x: f64| x > 0.0; // false for NaN
    if !positive(a.threshold) || !positive(a.max_run_ms) || !(positive(a.l2_factor) || a.l2_factor == 0.0) || a.max_sets == 0
    {
        return Err("--threshold and --max-run-ms must be > 0, --l2-factor >= 0, --max-sets >= 1".into());
    }
    Ok(a)
}
