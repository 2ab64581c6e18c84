//! The back-to-back sequence report (`tilec-bench --sequence --json`),
//! field for field what `tilec-bench` writes: a model's GEMMs (a layer's,
//! repeated over layers) launched one after another on one stream, each
//! step's A the previous step's C where the shapes chain, timed as one run
//! per round with and without programmatic dependent launch, beside cuBLAS
//! running the same sequence. These are the very types it writes.

use crate::schema::{tflops, RatioStats, Stats};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schema of a sequence report.
pub const SCHEMA: &str = "tilec-bench-sequence/1";

/// The run without programmatic dependent launch.
pub const TILEC: &str = "tilec";
/// The run with it.
pub const TILEC_PDL: &str = "tilec+pdl";
/// cuBLAS over the same sequence.
pub const CUBLAS: &str = "cublas";

/// One GEMM of the layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceStep {
    /// Rows of A and C.
    pub m: u64,
    /// Columns of C.
    pub n: u64,
    /// The reduction dimension.
    pub k: u64,
    /// The artifact that runs it.
    pub artifact: String,
    /// The configuration its manifest names.
    pub config: Option<String>,
}

/// One way of running the sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceRun {
    /// [`TILEC`], [`TILEC_PDL`] or [`CUBLAS`].
    pub name: String,
    /// The largest relative error of a step's output against FP64 on
    /// sampled rows of what the step read, after one run of the whole
    /// sequence with every output poisoned first.
    pub worst_rel_err: Option<f64>,
    /// Every step passed its check.
    pub pass: bool,
    /// Time of the whole sequence in each timed round, ms.
    #[serde(default)]
    pub round_ms: Vec<f64>,
    /// Median and spread of the rounds.
    pub stats: Option<Stats>,
    /// Useful TFLOP/s over the whole sequence at the median.
    pub tflops: Option<f64>,
    /// Why it did not run or was not timed.
    pub error: Option<String>,
}

/// A sequence report ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceReport {
    /// [`SCHEMA`].
    pub schema: String,
    /// The GPU's name.
    pub device: String,
    /// When the run started (UTC).
    pub date_utc: String,
    /// The commit tilec-bench was built from, if known.
    pub commit: Option<String>,
    /// The command line.
    #[serde(default)]
    pub command_line: Vec<String>,
    /// The inputs' seed.
    pub seed: u64,
    /// Untimed runs of the sequence per way.
    pub warmup: usize,
    /// Timed rounds.
    pub reps: usize,
    /// Largest relative error that passes.
    pub threshold: f64,
    /// Times the layer's steps run, each time on weights of its own.
    pub layers: usize,
    /// The layer's steps, in order.
    pub steps: Vec<SequenceStep>,
    /// Of the layers' steps in order (each layer's, then the next's), those
    /// whose A is the previous step's C.
    pub chained: usize,
    /// [`TILEC`], [`TILEC_PDL`] and [`CUBLAS`].
    pub runs: Vec<SequenceRun>,
}

impl SequenceReport {
    /// `2 M N K` summed over the steps and layers.
    pub fn flops(&self) -> f64 {
        self.layers as f64 * self.steps.iter().map(|s| 2.0 * s.m as f64 * s.n as f64 * s.k as f64).sum::<f64>()
    }

    /// The run called `name`.
    pub fn run(&self, name: &str) -> Option<&SequenceRun> {
        self.runs.iter().find(|r| r.name == name)
    }

    /// `over`'s time over `of`'s, one ratio per round (above 1: `of` is
    /// faster); `None` where either was not timed.
    pub fn ratio(&self, of: &str, over: &str) -> Option<RatioStats> {
        let (a, b) = (self.run(of)?, self.run(over)?);
        let ratios: Vec<f64> = a.round_ms.iter().zip(&b.round_ms).map(|(x, y)| y / x).collect();
        RatioStats::from_rounds(&ratios)
    }

    /// Each way's median, TFLOP/s and check, then programmatic launch's
    /// gain and the ratios to cuBLAS.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let shapes: Vec<String> = self.steps.iter().map(|s| format!("{}x{}x{}", s.m, s.n, s.k)).collect();
        let _ = writeln!(out, "{SCHEMA} on {}, {}: {} layers of {} ({} of {} steps chained)", self.device, self.date_utc, self.layers, shapes.join(", "), self.chained, self.layers * self.steps.len());
        let _ = writeln!(out, "{:<10} {:>10} {:>9} {:>11} {:>6}", "run", "median ms", "TFLOP/s", "worst err", "check");
        for r in &self.runs {
            let median = r.stats.as_ref().map_or("-".into(), |s| format!("{:.4}", s.median_ms));
            let rate = r.stats.as_ref().map_or("-".into(), |s| format!("{:.1}", tflops(self.flops(), s.median_ms)));
            let err = r.worst_rel_err.map_or("-".into(), |e| format!("{e:.2e}"));
            let check = if r.pass { "pass" } else { "FAIL" };
            let _ = writeln!(out, "{:<10} {median:>10} {rate:>9} {err:>11} {check:>6}{}", r.name, r.error.as_ref().map_or(String::new(), |e| format!("  ({e})")));
        }
        for (of, over, what) in [(TILEC_PDL, TILEC, "programmatic launch on over off"), (TILEC, CUBLAS, "tilec over cuBLAS"), (TILEC_PDL, CUBLAS, "tilec+pdl over cuBLAS")] {
            if let Some(r) = self.ratio(of, over) {
                let _ = writeln!(out, "{what}: {:.3}x (p10 {:.3}, p90 {:.3})", r.median, r.p10, r.p90);
            }
        }
        out
    }
}
