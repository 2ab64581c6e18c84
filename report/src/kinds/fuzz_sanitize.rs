//! The fuzz run's sanitizer report (`tilec-fuzz-sanitize/1`), which
//! scripts/fuzz-report.py writes after scripts/run-fuzz-sanitize.sh: a
//! sample of the fuzz run's kernels, each under every compute-sanitizer
//! tool, with the errors found in tilec's kernel and elsewhere.

use super::fuzz::{counts, FuzzHeader};
use crate::table::short_name;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a fuzz run's sanitizer report.
pub const SCHEMA: &str = "tilec-fuzz-sanitize/1";

/// A fuzz run's sanitizer report ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SanitizeReport {
    /// Schema, seed, GPU, date and commit.
    #[serde(flatten)]
    pub header: FuzzHeader,
    /// What a run does and what counts as an error.
    pub what: String,
    /// The compute-sanitizer tools each kernel ran under.
    pub tools: Vec<String>,
    /// The counts.
    pub summary: SanitizeSummary,
    /// One entry per kernel and tool.
    pub runs: Vec<SanitizeRun>,
}

/// A sanitizer report's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SanitizeSummary {
    /// Runs per result.
    pub runs: BTreeMap<String, u64>,
    /// Kernels run.
    pub kernels: u64,
    /// Kernels clean under every tool.
    pub kernels_clean_under_all_tools: u64,
    /// The schedule classes sampled.
    pub classes: Vec<String>,
}

/// One kernel under one tool. A run that did not happen (`NOT_RUN`) has
/// only the fields up to `result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SanitizeRun {
    /// The case's name.
    pub artifact: String,
    /// The example program.
    pub program: String,
    /// The compute-sanitizer tool.
    pub tool: String,
    /// The kernel's config.
    pub config: String,
    /// Its schedule class.
    pub class: String,
    /// `tilec-gpu-test`'s shape flag and value.
    pub check: Vec<String>,
    /// `CLEAN`, `ERRORS`, `CHECK_FAILED`, `INCOMPLETE`, `HANG`, `CUT` or `NOT_RUN`.
    pub result: String,
    /// The tool's exit status.
    pub rc: Option<i64>,
    /// The run's time, s.
    pub seconds: Option<f64>,
    /// The kernel's own check under the tool (`PASS`, `FAIL`).
    pub kernel_check: Option<String>,
    /// The tool's last summary line.
    pub summary: Option<String>,
    /// Reports naming tilec's kernel.
    pub errors_in_tilec_kernel: Option<u64>,
    /// Reports naming no vendor kernel and not ours.
    pub errors_elsewhere: Option<u64>,
    /// Reports in cuBLAS's and cuBLASLt's kernels, counted apart.
    pub reports_in_vendor_kernels: Option<u64>,
    /// The first error's text (empty when none).
    pub first_error: Option<String>,
}

impl SanitizeReport {
    /// The run and its counts, then one line per kernel and tool.
    pub fn table(&self) -> String {
        let mut s = format!("{}\n", self.header.line());
        let m = &self.summary;
        let _ = writeln!(s, "tools: {}; runs: {}", self.tools.join(", "), counts(&m.runs));
        let _ = writeln!(s, "{} kernels, {} clean under every tool, {} schedule classes", m.kernels, m.kernels_clean_under_all_tools, m.classes.len());
        let _ = writeln!(s, "\n{:<28} {:<10} {:<12} {:>5} {:>6} {:>6} {:>6}  class", "kernel", "tool", "result", "check", "ours", "other", "vendor");
        let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        for r in &self.runs {
            let _ = writeln!(
                s,
                "{:<28} {:<10} {:<12} {:>5} {:>6} {:>6} {:>6}  {}",
                short_name(&r.artifact),
                r.tool,
                r.result,
                r.kernel_check.as_deref().unwrap_or("-"),
                n(r.errors_in_tilec_kernel),
                n(r.errors_elsewhere),
                n(r.reports_in_vendor_kernels),
                r.class
            );
        }
        s
    }
}
