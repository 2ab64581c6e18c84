//! The pure half of `tilec-bench` besides its report: the shape list, L2
//! rotation, the kernel configuration recorded from a manifest, progress
//! lines and the command line. The report itself (schema, statistics,
//! tables) is `tilec-report`'s, re-exported here. No CUDA here, so all of it
//! is unit-tested without a GPU.

pub use tilec_report::schema::*;
pub use tilec_report::table::{format_report_tables, format_table, short_name};

/// The commit `tilec-bench` was built from (see `build.rs`), if known.
pub fn build_commit() -> Option<String> {
    option_env!("TILEC_BUILD_COMMIT").filter(|c| !c.is_empty()).map(str::to_string)
}

/// Parses `--dtypes` (`bf16,fp8`, duplicates dropped); an error names the word it does not know or says none was given.
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

/// (N, K) of the LLM shapes of the benchmark.
pub const LLM_NK: [(u64, u64); 6] = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)];
/// The token counts (M) each LLM shape is run with.
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

/// What a manifest says about its kernel's configuration, for the report.
pub fn kernel_config(m: &tilec_artifact::Manifest) -> KernelConfig {
    let tma_boxes = m
        .params
        .iter()
        .filter_map(|p| match p {
            tilec_artifact::Param::Tma(t) => Some(TmaBox {
                tensor: t.tensor.clone(),
                box_dims: t.box_dims.clone(),
                swizzle: serde_json::to_value(t.swizzle).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
            }),
            _ => None,
        })
        .collect();
    KernelConfig {
        target: m.target.clone(),
        grid: serde_json::to_value(m.grid).unwrap_or(serde_json::Value::Null),
        tma_boxes,
    }
}

/// `[i/n] elapsed, about T left`: the left time assumes the remaining items
/// take as long on average as the done ones.
pub fn progress(i: usize, n: usize, elapsed_s: f64) -> String {
    let left = if i == 0 { f64::NAN } else { elapsed_s / i as f64 * (n.saturating_sub(i)) as f64 };
    let t = |s: f64| if s.is_finite() { format!("{}m{:02}s", (s / 60.0) as u64, s as u64 % 60) } else { "?".into() };
    format!("[{i}/{n}] {} elapsed, about {} left", t(elapsed_s), t(left))
}

// ---------------------------------------------------------------- run settings

/// What one tilec-bench run does; the binary's clap command line fills it.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchArgs {
    /// Artifact folders to time (`--artifact`).
    pub artifacts: Vec<String>,
    /// Shapes to run.
    pub shapes: Vec<Shape>,
    /// Element types to run.
    pub dtypes: Vec<BenchDtype>,
    /// Untimed launches before the rounds.
    pub warmup: usize,
    /// Timed rounds.
    pub reps: usize,
    /// Where to write the JSON report.
    pub json: Option<String>,
    /// A tuning file to record each problem's fastest checked kernel in
    /// (`crate::tuning`), created where missing.
    pub tuning: Option<String>,
    /// Time the vendor baselines only.
    pub baseline_only: bool,
    /// Largest relative error that passes a check.
    pub threshold: f64,
    /// Rotate input sets until they span this many times the L2 (0: one set), so reads come from HBM.
    pub l2_factor: f64,
    /// At most this many rotated input sets.
    pub max_sets: usize,
    /// Input seed; drawn from the clock when absent.
    pub seed: Option<u64>,
    /// Cap a slow kernel's timed calls near this many milliseconds (fewer rounds, at least 5).
    pub max_run_ms: f64,
    /// Hold the stream with a spin kernel while enqueuing, so launches do not leave gaps.
    pub spin: bool,
    /// Keep the driver's PTX JIT cache.
    pub jit_cache: bool,
    /// Print the tables of an earlier JSON report instead of running.
    pub from_json: Option<String>,
    /// Run the grouped GEMMs instead.
    pub grouped: bool,
    /// The grouped problems to run (the benchmark's when `None`).
    pub grouped_problems: Option<Vec<crate::grouped::GroupedProblem>>,
    /// Run this layer of GEMMs back to back instead, one artifact a step
    /// (`crate::sequence_bench`).
    pub sequence: Option<Vec<Shape>>,
    /// Times the sequence's layer runs.
    pub layers: usize,
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
            tuning: None,
            baseline_only: false,
            threshold: 1e-2,
            l2_factor: 4.0,
            max_sets: 64,
            seed: None,
            max_run_ms: 3000.0,
            spin: true,
            jit_cache: false,
            from_json: None,
            grouped: false,
            grouped_problems: None,
            sequence: None,
            layers: 4,
        }
    }
}

