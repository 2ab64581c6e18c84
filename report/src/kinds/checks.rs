//! The checks record (`tilec-checks/1`): correctness runs on the GPU
//! (tilec-gpu-test on streams and host threads, compute-sanitizer, odd
//! shapes) or ptxas runs without one, recorded by hand after a GPU session.
//! No tool writes it, so each record holds the sections its check needed;
//! unknown fields are refused, so that a new section is read here before
//! a record with it is committed, rather than left out of the table.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a checks record.
pub const SCHEMA: &str = "tilec-checks/1";

/// A checks record ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    /// [`SCHEMA`].
    pub schema: String,
    /// The GPU as gpu.txt names it, or `none (ptxas only)`.
    pub gpu: String,
    /// The day of the runs.
    pub date: String,
    /// What was compiled, at which commit.
    pub commit: Option<String>,
    /// What was checked and how.
    pub what: String,
    /// The command line, when one shape of command ran every check.
    pub command: Option<String>,
    /// A caveat about where the figures come from.
    pub note: Option<String>,
    /// `ptxas --version`'s last line, for records of ptxas runs.
    pub ptxas: Option<String>,
    /// Each artifact's name and how it was compiled.
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    /// The workspace-split variants' names and how they were compiled.
    #[serde(default)]
    pub workspace_variants: BTreeMap<String, String>,
    /// Single-stream runs: tilec-gpu-test's or ptxas's output per command.
    #[serde(default)]
    pub runs: Vec<CheckRun>,
    /// Several streams at once from one host thread.
    #[serde(default)]
    pub streams: Vec<StreamCheck>,
    /// Several streams at once, each from a host thread of its own.
    #[serde(default)]
    pub host_threads: Vec<StreamCheck>,
    /// compute-sanitizer runs.
    #[serde(default)]
    pub sanitizer: Vec<SanitizerCheck>,
    /// The stream-K checks, a record of their own within this one.
    pub stream_k: Option<StreamKChecks>,
    /// The archives of raw logs that went with the record.
    #[serde(default)]
    pub raw: Vec<String>,
}

/// One command's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRun {
    /// The artifact and flags, or the command.
    pub run: String,
    /// tilec-gpu-test's per-shape lines.
    #[serde(default)]
    pub rows: Vec<String>,
    /// Its closing lines.
    #[serde(default)]
    pub verdict: Vec<String>,
    /// Kernels assembled (ptxas runs).
    pub kernels: Option<u64>,
    /// `shape spill-store-bytes config` per kernel that spills (ptxas runs).
    #[serde(default)]
    pub spilling: Vec<String>,
    /// The same for kernels that do not (ptxas runs that list them).
    #[serde(default)]
    pub clean: Vec<String>,
}

/// One artifact on several streams at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamCheck {
    /// The artifact.
    pub artifact: String,
    /// Streams at once.
    pub streams: u32,
    /// Host threads driving them (one per stream), when not one in all.
    pub host_threads: Option<u32>,
    /// `MxNxK`.
    pub shape: String,
    /// Results checked.
    pub results: u64,
    /// Results wrong against cuBLAS.
    pub wrong: u64,
    /// Results not bit for bit the first.
    pub differing: u64,
    /// The largest relative error.
    pub worst_err: f64,
    /// `PASS` or `FAIL`.
    pub result: String,
    /// The inputs' seed, when recorded.
    pub seed: Option<String>,
}

/// One artifact under one compute-sanitizer tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SanitizerCheck {
    /// The tool.
    pub tool: String,
    /// The artifact.
    pub artifact: String,
    /// Its own check under the tool.
    pub kernel_check: String,
    /// Reports naming tilec's kernel.
    pub errors_in_tilec_kernels: u64,
    /// About reports elsewhere (empty when none).
    pub note: String,
    /// The artifact's config.
    pub config: String,
}

/// The stream-K part of a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamKChecks {
    /// What was checked.
    pub what: String,
    /// Per run, shapes passed and failed.
    pub checks: Vec<PassCount>,
    /// Several streams at once.
    pub streams: Vec<StreamCheck>,
    /// The archive of raw logs.
    pub raw: String,
    /// Each artifact's name and how it was compiled.
    pub artifacts: BTreeMap<String, String>,
}

/// Shapes passed and failed by one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassCount {
    /// The artifact and its variant.
    pub run: String,
    /// Shapes that passed.
    pub pass: u64,
    /// Shapes that failed.
    pub fail: u64,
}

fn stream_table(s: &mut String, title: &str, rows: &[StreamCheck]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n{title}\n{:<26} {:>7} {:>7} {:<14} {:>7} {:>5} {:>9} {:>10} result", "artifact", "streams", "threads", "shape", "results", "wrong", "differing", "worst_err");
    for r in rows {
        let threads = r.host_threads.map_or("1".to_string(), |t| t.to_string());
        let _ = writeln!(
            s,
            "{:<26} {:>7} {:>7} {:<14} {:>7} {:>5} {:>9} {:>10.2e} {}",
            r.artifact, r.streams, threads, r.shape, r.results, r.wrong, r.differing, r.worst_err, r.result
        );
    }
}

fn artifacts_table(s: &mut String, title: &str, map: &BTreeMap<String, String>) {
    if !map.is_empty() {
        let _ = writeln!(s, "\n{title}");
        map.iter().for_each(|(k, v)| s.push_str(&format!("  {k}: {v}\n")));
    }
}

impl Checks {
    /// What was checked, then each section the record has: the runs with
    /// their output lines, the stream and host-thread checks, the sanitizer
    /// runs, the stream-K checks and the artifacts.
    pub fn table(&self) -> String {
        let mut s = format!("{} on {}, {}\n", self.schema, self.gpu.lines().last().unwrap_or("-"), self.date);
        for line in [self.commit.as_deref(), Some(self.what.as_str()), self.command.as_deref(), self.note.as_deref(), self.ptxas.as_deref()].into_iter().flatten() {
            let _ = writeln!(s, "{line}");
        }
        for r in &self.runs {
            let _ = writeln!(s, "\nrun: {}{}", r.run, r.kernels.map(|k| format!(" ({k} kernels)")).unwrap_or_default());
            for line in r.rows.iter().chain(&r.verdict) {
                let _ = writeln!(s, "  {line}");
            }
            r.spilling.iter().for_each(|l| s.push_str(&format!("  spills: {l}\n")));
            r.clean.iter().for_each(|l| s.push_str(&format!("  clean:  {l}\n")));
        }
        stream_table(&mut s, "streams", &self.streams);
        stream_table(&mut s, "host threads", &self.host_threads);
        if !self.sanitizer.is_empty() {
            let _ = writeln!(s, "\nsanitizer\n{:<10} {:<28} {:>5} {:>6}  config; note", "tool", "artifact", "check", "errors");
            for r in &self.sanitizer {
                let note = if r.note.is_empty() { String::new() } else { format!("; {}", r.note) };
                let _ = writeln!(s, "{:<10} {:<28} {:>5} {:>6}  {}{note}", r.tool, r.artifact, r.kernel_check, r.errors_in_tilec_kernels, r.config);
            }
        }
        if let Some(k) = &self.stream_k {
            let _ = writeln!(s, "\nstream-K: {}", k.what);
            k.checks.iter().for_each(|c| s.push_str(&format!("  {}: {} pass, {} fail\n", c.run, c.pass, c.fail)));
            stream_table(&mut s, "stream-K streams", &k.streams);
            artifacts_table(&mut s, "stream-K artifacts", &k.artifacts);
            let _ = writeln!(s, "raw logs: {}", k.raw);
        }
        artifacts_table(&mut s, "artifacts", &self.artifacts);
        artifacts_table(&mut s, "workspace variants", &self.workspace_variants);
        if !self.raw.is_empty() {
            let _ = writeln!(s, "\nraw logs: {}", self.raw.join(", "));
        }
        s
    }
}
