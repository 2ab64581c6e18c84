//! Every kind of report `tilec-report` reads, told apart by its `schema`
//! field before anything else is parsed. Each kind is a typed mirror of
//! what its writer emits, in a module of its own with its table; this
//! module only dispatches. Any other schema, or none, is a
//! [`LoadError::UnknownSchema`] with a one-line message, not a serde error.
//!
//! To read a new kind: add its module with a `SCHEMA` constant, its struct
//! and a `table`, then a variant here and a line in [`known_schemas`],
//! [`AnyReport::from_json`], [`AnyReport::schema`] and [`AnyReport::table`].

pub mod anchor;
pub mod bench_results;
pub mod calibration;
pub mod checks;
pub mod cli_robustness;
pub mod cluster_twins;
pub mod compile_time;
pub mod deepgemm;
pub mod fuzz;
pub mod fuzz_sanitize;
pub mod grouped;
pub mod judge;
pub mod measurements;
pub mod seeded_bugs;
pub mod sequence;
pub mod stream_ceiling;
pub mod tp;
pub mod tuning;

pub use grouped::{GroupedReport, GroupedResult, GroupedRun, GROUPED_SCHEMA};
pub use tp::{TpReport, TpRow, TP_SCHEMA};

use crate::schema::{Report, OLDER_SCHEMAS, SCHEMA};
use crate::table::{format_grouped_table, format_report_tables, format_tp_table};

/// Every schema [`AnyReport::from_json`] reads, newest GEMM schema first.
pub fn known_schemas() -> Vec<&'static str> {
    let mut v = vec![SCHEMA];
    v.extend(OLDER_SCHEMAS);
    v.extend([
        GROUPED_SCHEMA,
        TP_SCHEMA,
        bench_results::SCHEMA,
        judge::SCHEMA,
        measurements::SCHEMA,
        calibration::SCHEMA,
        tuning::SCHEMA,
        checks::SCHEMA,
        compile_time::SCHEMA,
        fuzz::SCHEMA,
        fuzz_sanitize::SCHEMA,
        cli_robustness::SCHEMA,
        seeded_bugs::SCHEMA,
        sequence::SCHEMA,
        deepgemm::SCHEMA,
        anchor::SCHEMA,
        stream_ceiling::SCHEMA,
        cluster_twins::SCHEMA,
    ]);
    v
}

/// A report of any kind `tilec-report` reads; each boxed, as the kinds'
/// sizes differ widely.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyReport {
    /// `tilec-bench/3`, `/2` or `/1`.
    Gemm(Box<Report>),
    /// `tilec-bench-grouped/1`.
    Grouped(Box<GroupedReport>),
    /// `tilec-tp/1`.
    Tp(Box<TpReport>),
    /// `tilec-bench-results/1`.
    BenchResults(Box<bench_results::BenchResults>),
    /// `tilec-judge/1`.
    Judge(Box<judge::JudgeReport>),
    /// `tilec-measurements/1`.
    Measurements(Box<measurements::Measurements>),
    /// `tilec-calibration/1`.
    Calibration(Box<calibration::Calibration>),
    /// `tilec-tuning/1`.
    Tuning(Box<tuning::Tuning>),
    /// `tilec-checks/1`.
    Checks(Box<checks::Checks>),
    /// `tilec-compile-time/1`.
    CompileTime(Box<compile_time::CompileTime>),
    /// `tilec-fuzz/1`.
    Fuzz(Box<fuzz::FuzzReport>),
    /// `tilec-fuzz-sanitize/1`.
    FuzzSanitize(Box<fuzz_sanitize::SanitizeReport>),
    /// `tilec-cli-robustness/1`.
    CliRobustness(Box<cli_robustness::CliRobustness>),
    /// `tilec-barrier-seeded-bugs/1`.
    SeededBugs(Box<seeded_bugs::SeededBugs>),
    /// `tilec-bench-sequence/1`.
    Sequence(Box<sequence::SequenceReport>),
    /// `tilec-deepgemm-run/1`.
    DeepGemm(Box<deepgemm::DeepGemmRun>),
    /// `tilec-anchor-deepgemm/1`.
    Anchor(Box<anchor::Anchor>),
    /// `tilec-stream-ceiling/1`.
    StreamCeiling(Box<stream_ceiling::StreamCeiling>),
    /// `tilec-cluster-twins/1`.
    ClusterTwins(Box<cluster_twins::ClusterTwins>),
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
        let bad = |e: String| LoadError::Unreadable(format!("{schema} report: {e}"));
        fn parse<T: serde::de::DeserializeOwned>(s: &str) -> Result<Box<T>, String> {
            serde_json::from_str(s).map_err(|e| e.to_string())
        }
        let report = match schema.as_str() {
            g if g == SCHEMA || OLDER_SCHEMAS.contains(&g) => Report::from_json(s).map(|r| AnyReport::Gemm(Box::new(r))),
            GROUPED_SCHEMA => parse(s).map(AnyReport::Grouped),
            TP_SCHEMA => parse(s).map(AnyReport::Tp),
            bench_results::SCHEMA => bench_results::BenchResults::from_json(s).map(|r| AnyReport::BenchResults(Box::new(r))).map_err(|e| e.to_string()),
            judge::SCHEMA => parse(s).map(AnyReport::Judge),
            measurements::SCHEMA => parse(s).map(AnyReport::Measurements),
            calibration::SCHEMA => parse(s).map(AnyReport::Calibration),
            tuning::SCHEMA => parse(s).and_then(|t: Box<tuning::Tuning>| t.validate().map(|()| AnyReport::Tuning(t))),
            checks::SCHEMA => parse(s).map(AnyReport::Checks),
            compile_time::SCHEMA => parse(s).map(AnyReport::CompileTime),
            fuzz::SCHEMA => parse(s).map(AnyReport::Fuzz),
            fuzz_sanitize::SCHEMA => parse(s).map(AnyReport::FuzzSanitize),
            cli_robustness::SCHEMA => parse(s).map(AnyReport::CliRobustness),
            seeded_bugs::SCHEMA => parse(s).map(AnyReport::SeededBugs),
            sequence::SCHEMA => parse(s).map(AnyReport::Sequence),
            deepgemm::SCHEMA => parse(s).map(AnyReport::DeepGemm),
            anchor::SCHEMA => parse(s).map(AnyReport::Anchor),
            stream_ceiling::SCHEMA => parse(s).map(AnyReport::StreamCeiling),
            cluster_twins::SCHEMA => parse(s).map(AnyReport::ClusterTwins),
            other => return Err(LoadError::UnknownSchema(format!("schema `{other}` is not one tilec-report reads ({reads})"))),
        };
        report.map_err(bad)
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
            AnyReport::BenchResults(r) => &r.schema,
            AnyReport::Judge(r) => &r.schema,
            AnyReport::Measurements(r) => &r.schema,
            AnyReport::Calibration(r) => &r.schema,
            AnyReport::Tuning(r) => &r.schema,
            AnyReport::Checks(r) => &r.schema,
            AnyReport::CompileTime(r) => &r.schema,
            AnyReport::Fuzz(r) => &r.header.schema,
            AnyReport::FuzzSanitize(r) => &r.header.schema,
            AnyReport::CliRobustness(r) => &r.schema,
            AnyReport::SeededBugs(r) => &r.schema,
            AnyReport::Sequence(r) => &r.schema,
            AnyReport::DeepGemm(r) => &r.schema,
            AnyReport::Anchor(r) => &r.schema,
            AnyReport::StreamCeiling(r) => &r.schema,
            AnyReport::ClusterTwins(r) => &r.schema,
        }
    }
    /// The report's tables, as `tilec-report table` prints them: for a GEMM
    /// report the results table and the geometric means, for each other
    /// kind the table its module draws.
    pub fn table(&self) -> String {
        match self {
            AnyReport::Gemm(r) => format_report_tables(&r.results),
            AnyReport::Grouped(r) => format_grouped_table(r),
            AnyReport::Tp(r) => format_tp_table(r),
            AnyReport::BenchResults(r) => r.table(),
            AnyReport::Judge(r) => r.table(),
            AnyReport::Measurements(r) => r.table(),
            AnyReport::Calibration(r) => r.table(),
            AnyReport::Tuning(r) => tuning::table(r),
            AnyReport::Checks(r) => r.table(),
            AnyReport::CompileTime(r) => r.table(),
            AnyReport::Fuzz(r) => r.table(),
            AnyReport::FuzzSanitize(r) => r.table(),
            AnyReport::CliRobustness(r) => r.table(),
            AnyReport::SeededBugs(r) => r.table(),
            AnyReport::Sequence(r) => r.table(),
            AnyReport::DeepGemm(r) => r.table(),
            AnyReport::Anchor(r) => r.table(),
            AnyReport::StreamCeiling(r) => r.table(),
            AnyReport::ClusterTwins(r) => r.table(),
        }
    }
}
