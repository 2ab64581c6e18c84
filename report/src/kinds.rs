//! Every kind of report `tilec-report` reads, told apart by its `schema`
//! field before anything else is parsed: the GEMM report ([`Report`],
//! `tilec-bench/3`, `/2` and `/1`), the grouped GEMM report
//! ([`GroupedReport`], `tilec-bench-grouped/1`) and the tensor-parallel
//! report ([`TpReport`], `tilec-tp/1`). Any other schema, or none, is a
//! [`LoadError::UnknownSchema`] with a one-line message, not a serde error.
//!
//! The grouped and tensor-parallel structs mirror what `tilec-runtime`
//! writes (`runtime/src/grouped_bench.rs`, `runtime/src/bin/tilec-tp.rs`),
//! field for field, so that the runtime can later write these very types.

use crate::schema::{Report, Stats, OLDER_SCHEMAS, SCHEMA};
use serde::{Deserialize, Serialize};

/// The schema of a grouped GEMM report (`tilec-bench --grouped --json`).
pub const GROUPED_SCHEMA: &str = "tilec-bench-grouped/1";
/// The schema of a tensor-parallel report (`tilec-tp --json`).
pub const TP_SCHEMA: &str = "tilec-tp/1";

/// Every schema [`AnyReport::from_json`] reads, newest GEMM schema first.
pub fn known_schemas() -> Vec<&'static str> {
    let mut v = vec![SCHEMA];
    v.extend(OLDER_SCHEMAS);
    v.extend([GROUPED_SCHEMA, TP_SCHEMA]);
    v
}

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

/// One chunk count's outcome in a tensor-parallel report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpRow {
    /// Chunks the communication is split into.
    pub chunks: usize,
    /// SMs given to communication (0: NCCL's choice).
    pub comm_sms: u32,
    /// Relative error of the overlapped result.
    pub error: f64,
    /// The check passed.
    pub pass: bool,
    /// Per way (in [`TpReport::ways`]' order), per round: the slowest
    /// rank's time, ms.
    pub ms: Vec<Vec<f64>>,
}

/// A tensor-parallel GEMM report ([`TP_SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpReport {
    /// [`TP_SCHEMA`].
    pub schema: String,
    /// GPUs in the run.
    pub gpus: usize,
    /// `ag` (all-gather + GEMM) or `rs` (GEMM + reduce-scatter).
    pub mode: String,
    /// The whole GEMM's `[M, N, K]`.
    pub shape: [u64; 3],
    /// Element type of A and B.
    pub dtype: String,
    /// The kernel artifact.
    pub kernel: String,
    /// The inputs' seed.
    pub seed: u64,
    /// The ways each round runs (`overlapped`, `comm alone`, `gemm alone`,
    /// `sequential`).
    pub ways: Vec<String>,
    /// One row per chunk count.
    pub rows: Vec<TpRow>,
}

impl TpReport {
    /// `2 M N K` of the whole GEMM.
    pub fn flops(&self) -> f64 {
        let [m, n, k] = self.shape;
        2.0 * m as f64 * n as f64 * k as f64
    }
    /// `row`'s round times of the way called `name` (`None` if the report
    /// has no such way).
    pub fn way<'a>(&self, row: &'a TpRow, name: &str) -> Option<&'a [f64]> {
        let i = self.ways.iter().position(|w| w == name)?;
        row.ms.get(i).map(Vec::as_slice)
    }
}

/// A report of any kind `tilec-report` reads.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyReport {
    /// `tilec-bench/3`, `/2` or `/1`.
    Gemm(Box<Report>),
    /// `tilec-bench-grouped/1`.
    Grouped(GroupedReport),
    /// `tilec-tp/1`.
    Tp(TpReport),
}

/// Why a report could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The file could not be read, is not JSON, or does not hold what its
    /// schema promises.
    Unreadable(String),
    /// The schema is missing or not one of [`known_schemas`]; the message
    /// is one line naming the schema found and the schemas read.
    UnknownSchema(String),
}

impl LoadError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            LoadError::Unreadable(m) | LoadError::UnknownSchema(m) => m,
        }
    }
    /// The same error with the file's path in front of the message.
    fn in_file(self, path: &str) -> Self {
        match self {
            LoadError::Unreadable(m) => LoadError::Unreadable(format!("{path}: {m}")),
            LoadError::UnknownSchema(m) => LoadError::UnknownSchema(format!("{path}: {m}")),
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// The `schema` field of a JSON document: `Ok(None)` when there is none
/// (or the document is not an object), `Err` when it is not JSON at all.
pub fn schema_of(s: &str) -> Result<Option<String>, LoadError> {
    let doc: serde_json::Value = serde_json::from_str(s).map_err(|e| LoadError::Unreadable(e.to_string()))?;
    Ok(match doc.get("schema") {
        Some(serde_json::Value::String(v)) => Some(v.clone()),
        Some(other) => Some(other.to_string()),
        None => None,
    })
}

impl AnyReport {
    /// Reads the `schema` field, then the report of that kind.
    pub fn from_json(s: &str) -> Result<Self, LoadError> {
        let reads = known_schemas().join(", ");
        let schema = match schema_of(s)? {
            Some(schema) => schema,
            None => return Err(LoadError::UnknownSchema(format!("no `schema` field; tilec-report reads {reads}"))),
        };
        let bad = |e: serde_json::Error| LoadError::Unreadable(format!("{schema} report: {e}"));
        match schema.as_str() {
            GROUPED_SCHEMA => serde_json::from_str(s).map(AnyReport::Grouped).map_err(bad),
            TP_SCHEMA => serde_json::from_str(s).map(AnyReport::Tp).map_err(bad),
            g if g == SCHEMA || OLDER_SCHEMAS.contains(&g) => {
                Report::from_json(s).map(|r| AnyReport::Gemm(Box::new(r))).map_err(|e| LoadError::Unreadable(format!("{schema} report: {e}")))
            }
            other => Err(LoadError::UnknownSchema(format!("schema `{other}` is not one tilec-report reads ({reads})"))),
        }
    }
    /// Reads and parses a report file; errors start with the path.
    pub fn load(path: &str) -> Result<Self, LoadError> {
        let text = std::fs::read_to_string(path).map_err(|e| LoadError::Unreadable(format!("{path}: {e}")))?;
        AnyReport::from_json(&text).map_err(|e| e.in_file(path))
    }
    /// The report's schema.
    pub fn schema(&self) -> &str {
        match self {
            AnyReport::Gemm(r) => &r.schema,
            AnyReport::Grouped(r) => &r.schema,
            AnyReport::Tp(r) => &r.schema,
        }
    }
}
