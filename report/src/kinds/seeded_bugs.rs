//! The barrier verifier's seeded-bug run (`tilec-barrier-seeded-bugs/1`),
//! which scripts/seed-barrier-bugs.py writes: synchronising lines deleted
//! (and expect-tx bytes halved, wait phases flipped) one at a time from
//! config selection's picks, and whether `tile-opt --nv-verify-barriers`
//! flagged each mutant.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a seeded-bug run.
pub const SCHEMA: &str = "tilec-barrier-seeded-bugs/1";

/// Verdicts (`flagged`, `warned`, `silent`) and their counts.
pub type Verdicts = BTreeMap<String, u64>;

/// A seeded-bug run ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeededBugs {
    /// [`SCHEMA`].
    pub schema: String,
    /// What was seeded and how it was judged.
    pub what: String,
    /// The script.
    pub command: String,
    /// Mutants that verified as IR (the others do not count).
    pub seeded: u64,
    /// Mutants the verifier rejected.
    pub flagged: u64,
    /// Mutants it only warned about.
    pub warned: u64,
    /// Mutants it let through.
    pub silent: u64,
    /// `flagged / seeded` (null when nothing was seeded).
    pub flagged_share: Option<f64>,
    /// The slowest verifier run, s.
    pub slowest_run_seconds: f64,
    /// Verdicts per kernel family.
    pub by_family: BTreeMap<String, Verdicts>,
    /// Verdicts per kind of mutation.
    pub by_class: BTreeMap<String, Verdicts>,
    /// Silent mutants, by the op before the deleted line.
    pub silent_by_preceding_op: Verdicts,
    /// Each kernel mutated.
    pub kernels: Vec<SeededKernel>,
    /// Each mutant not flagged.
    pub not_flagged: Vec<NotFlagged>,
}

/// One kernel and its mutants' verdicts. A kernel that did not compile has
/// only its family, name and `skipped`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeededKernel {
    /// The kernel family.
    pub family: String,
    /// Program, shape and flags.
    pub kernel: String,
    /// Its `tile.config`.
    pub config: Option<String>,
    /// The unmutated kernel's verdict (`clean`, or what the verifier said).
    pub baseline: Option<String>,
    /// The verifier's first line on the unmutated kernel, when not clean.
    pub baseline_message: Option<String>,
    /// Located warnings `tilec compile` printed.
    pub compile_warnings: Option<u64>,
    /// Why it was not compiled.
    pub skipped: Option<String>,
    /// Its mutants' verdicts.
    #[serde(default)]
    pub mutants: Verdicts,
}

/// A mutant the verifier did not reject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotFlagged {
    /// The kernel.
    pub kernel: String,
    /// The kind of mutation.
    pub class: String,
    /// The mutated line.
    pub line: u64,
    /// The op mutated.
    pub op: String,
    /// The op before it.
    pub after: String,
    /// `warned`, `silent` or `invalid`.
    pub verdict: String,
    /// The verifier's first line.
    pub message: String,
}

fn verdict_table(s: &mut String, title: &str, rows: &BTreeMap<String, Verdicts>) {
    let w = rows.keys().map(String::len).chain([title.len()]).max().unwrap_or(0);
    let _ = writeln!(s, "\n{title:<w$} {:>7} {:>6} {:>6}", "flagged", "warned", "silent");
    for (key, v) in rows {
        let n = |k: &str| v.get(k).copied().unwrap_or(0);
        let _ = writeln!(s, "{key:<w$} {:>7} {:>6} {:>6}", n("flagged"), n("warned"), n("silent"));
    }
}

impl SeededBugs {
    /// The totals, the verdicts per family, per mutation and per kernel,
    /// then every mutant not flagged.
    pub fn table(&self) -> String {
        let mut s = format!("{}: {}\n", self.schema, self.what);
        let share = self.flagged_share.map_or("-".to_string(), |f| format!("{:.1}%", 100.0 * f));
        let _ = writeln!(s, "{} seeded: {} flagged ({share}), {} warned, {} silent; slowest run {} s", self.seeded, self.flagged, self.warned, self.silent, self.slowest_run_seconds);
        verdict_table(&mut s, "family", &self.by_family);
        verdict_table(&mut s, "mutation", &self.by_class);
        let per_kernel = self.kernels.iter().map(|k| (format!("{} {}", k.family, k.kernel), k.mutants.clone())).collect();
        verdict_table(&mut s, "kernel", &per_kernel);
        for k in self.kernels.iter().filter(|k| k.skipped.is_some() || k.baseline.as_deref().is_some_and(|b| b != "clean")) {
            let _ = writeln!(s, "{}: {}", k.kernel, k.skipped.as_deref().or(k.baseline_message.as_deref()).unwrap_or("-"));
        }
        for u in &self.not_flagged {
            let _ = writeln!(s, "{} {}: {} line {} ({}) after {}: {}", u.verdict, u.kernel, u.class, u.line, u.op, u.after, u.message);
        }
        s
    }
}
