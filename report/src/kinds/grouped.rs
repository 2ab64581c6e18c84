//! The grouped GEMM report (`tilec-bench --grouped --json`), field for
//! field what `runtime/src/grouped_bench.rs` writes: these are the very
//! types it writes.

use crate::schema::Stats;
use serde::{Deserialize, Serialize};

/// The schema of a grouped GEMM report.
pub const GROUPED_SCHEMA: &str = "tilec-bench-grouped/1";

/// One contender's outcome on one grouped problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupedRun {
    /// The contender (`cublas-loop`, or our artifact's folder name).
    pub name: String,
    /// Relative Frobenius error on the checked rows, when it ran.
    pub rel_err: Option<f64>,
    /// It ran and its check passed.
    pub pass: bool,
    /// Time of each timed round, ms.
    #[serde(default)]
    pub round_ms: Vec<f64>,
    /// Median and spread of the rounds.
    pub stats: Option<Stats>,
    /// Useful TFLOP/s at the median.
    pub tflops: Option<f64>,
    /// Why it did not run or was not timed.
    pub error: Option<String>,
}

/// One grouped problem's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupedResult {
    /// The problem as given on the command line.
    pub problem: String,
    /// A short description for the table (`contig G=8 4096x7168 rows=4096`).
    pub label: String,
    /// Experts.
    pub groups: usize,
    /// Columns of each expert's output.
    pub n: u64,
    /// The reduction dimension.
    pub k: u64,
    /// Valid rows over all experts.
    pub total_rows: u64,
    /// Useful floating-point operations (padding not counted).
    pub flops: f64,
    /// The seed of this problem's inputs.
    pub seed: u64,
    /// Each contender's outcome.
    pub runs: Vec<GroupedRun>,
    /// Why the problem could not be run at all.
    pub error: Option<String>,
}

impl GroupedRun {
    /// A contender that has not run yet.
    pub fn new(name: &str) -> Self {
        GroupedRun { name: name.into(), rel_err: None, pass: false, round_ms: Vec::new(), stats: None, tflops: None, error: None }
    }
}

impl GroupedResult {
    /// True if a contender failed its check or hit an error.
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.runs.iter().any(|r| !r.pass || r.error.is_some())
    }
}

/// A grouped GEMM report ([`GROUPED_SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupedReport {
    /// [`GROUPED_SCHEMA`].
    pub schema: String,
    /// The GPU's name.
    pub device: String,
    /// When the run started (UTC).
    pub date_utc: String,
    /// The command line.
    #[serde(default)]
    pub command_line: Vec<String>,
    /// The run's seed.
    pub seed: u64,
    /// Untimed launches per contender.
    pub warmup: usize,
    /// Timed rounds.
    pub reps: usize,
    /// Largest relative error that passes.
    pub threshold: f64,
    /// One entry per problem.
    pub results: Vec<GroupedResult>,
}
