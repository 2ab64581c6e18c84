//! The GPU fuzz run's report (`tilec-fuzz/1`), which
//! scripts/fuzz-report.py writes after scripts/run-fuzz.sh: every drawn
//! case (program, shape, flags, config and schedule class), its check's
//! result, and the counts per result, program and class.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a fuzz run's report.
pub const SCHEMA: &str = "tilec-fuzz/1";

/// What every report of a fuzz run starts with (fuzz-report.py's
/// `report_header`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzHeader {
    /// The report's schema.
    pub schema: String,
    /// The draw's seed.
    pub seed: u64,
    /// The GPU as the run's gpu.txt names it (empty when it had none).
    pub gpu: String,
    /// When the report was written, `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    /// The commit the cases were drawn and compiled at.
    pub commit: String,
}

impl FuzzHeader {
    /// `schema, seed S, commit C, date: GPU`, as one line.
    pub fn line(&self) -> String {
        let gpu = self.gpu.lines().last().unwrap_or("no GPU named");
        format!("{}, seed {}, commit {}, {}: {gpu}", self.schema, self.seed, &self.commit[..self.commit.len().min(12)], self.date)
    }
}

/// A fuzz run's report ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzReport {
    /// Schema, seed, GPU, date and commit.
    #[serde(flatten)]
    pub header: FuzzHeader,
    /// `tilec --version` of the compiler that drew the cases.
    pub tilec: String,
    /// The draw's command line.
    pub draw: String,
    /// This call's shard of the cases (`FUZZ_SHARD`), empty for all.
    pub shard: String,
    /// Cases checked at once.
    pub jobs: u32,
    /// A case's time limit, s.
    pub case_timeout_s: u32,
    /// The run's wall time, s.
    pub wall_s: u64,
    /// What a check does.
    pub what: String,
    /// Every case of the draw this call ran.
    pub cases: Vec<FuzzCase>,
    /// The counts.
    pub summary: FuzzSummary,
}

/// One drawn case and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzCase {
    /// `cNNNN-program`.
    pub name: String,
    /// The example program.
    pub program: String,
    /// Its operand type.
    pub dtype: String,
    /// The case's shape.
    pub shape: Vec<u64>,
    /// `tilec compile`'s flags.
    pub flags: Option<Vec<String>>,
    /// The candidate's rank, when one was pinned.
    pub rank: Option<u32>,
    /// The config compiled (`None` when it did not compile).
    pub config: Option<String>,
    /// Its schedule class (`ws2+stream-k+tma-store`).
    pub class: Option<String>,
    /// The class's features.
    pub features: Option<Vec<String>>,
    /// The feature the draw aimed at, if any.
    pub target: Option<String>,
    /// A case from scripts/gpu-fuzz-regressions.txt.
    pub regression: bool,
    /// `tilec-gpu-test`'s shape flag and value (absent for a case refused
    /// at compile time, which is never checked).
    pub check: Option<Vec<String>>,
    /// `PASS`, `FAIL`, `HANG`, `REFUSED`, `NOT_RUN`, `CUT` or `ENV`.
    pub result: String,
    /// Why it did not pass (empty when it did).
    pub error: String,
    /// The check's exit status (absent when it did not run).
    pub rc: Option<i64>,
    /// The check's time, s (absent when it did not run).
    pub seconds: Option<f64>,
    /// Each checked shape's line of `tilec-gpu-test`'s output.
    pub checks: Vec<String>,
}

/// A fuzz run's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FuzzSummary {
    /// Cases per result.
    pub results: BTreeMap<String, u64>,
    /// Cases checked (PASS, FAIL or HANG).
    pub kernels_checked: u64,
    /// Cases that failed.
    pub wrong_or_failed: u64,
    /// Cases that hung.
    pub hangs: u64,
    /// Refused cases, by who refused (`compile`, `runtime`).
    pub refused: BTreeMap<String, u64>,
    /// Checked cases per program, per result.
    pub per_program: BTreeMap<String, BTreeMap<String, u64>>,
    /// Checked cases per schedule class, per result.
    pub per_class: BTreeMap<String, BTreeMap<String, u64>>,
    /// The slowest check, s.
    pub slowest_s: f64,
    /// Where a later call should start (`FUZZ_FROM`), when cases were left.
    pub rerun_from: Option<u64>,
}

/// `key n` for each count, comma separated.
pub(crate) fn counts(map: &BTreeMap<String, u64>) -> String {
    map.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

/// One line per key of `per`: its PASS, FAIL and HANG counts.
fn per_result_table(s: &mut String, title: &str, per: &BTreeMap<String, BTreeMap<String, u64>>) {
    let w = per.keys().map(String::len).chain([title.len()]).max().unwrap_or(0);
    let _ = writeln!(s, "\n{title:<w$} {:>6} {:>6} {:>6}", "PASS", "FAIL", "HANG");
    for (key, by) in per {
        let n = |r: &str| by.get(r).copied().unwrap_or(0);
        let _ = writeln!(s, "{key:<w$} {:>6} {:>6} {:>6}", n("PASS"), n("FAIL"), n("HANG"));
    }
}

impl FuzzReport {
    /// The run, its counts, the results per program and per class, then
    /// every case that did not pass with why.
    pub fn table(&self) -> String {
        let mut s = format!("{}\n", self.header.line());
        let _ = writeln!(s, "draw: {}; {} jobs, {} s per case, {} s in all", self.draw, self.jobs, self.case_timeout_s, self.wall_s);
        let m = &self.summary;
        let _ = writeln!(s, "results: {}; refused: {}", counts(&m.results), counts(&m.refused));
        let _ = writeln!(s, "{} kernels checked, {} wrong or failed, {} hangs; slowest case {} s", m.kernels_checked, m.wrong_or_failed, m.hangs, m.slowest_s);
        if let Some(from) = m.rerun_from {
            let _ = writeln!(s, "cases left at the deadline: rerun from case {from}");
        }
        per_result_table(&mut s, "program", &m.per_program);
        per_result_table(&mut s, "schedule class", &m.per_class);
        let _ = writeln!(s, "\n{:<6} {:<34} {:<20} error", "result", "case", "shape");
        for c in self.cases.iter().filter(|c| c.result != "PASS") {
            let shape = c.shape.iter().map(u64::to_string).collect::<Vec<_>>().join("x");
            let _ = writeln!(s, "{:<6} {:<34} {:<20} {}", c.result, c.name, shape, c.error.lines().next().unwrap_or(""));
        }
        s
    }
}
