//! The CLI robustness run's figures (`tilec-cli-robustness/1`), which the
//! test tests/backend/cli_robustness.rs writes when `TILEC_CLI_FUZZ_JSON`
//! names a file: `tilec compile` fed mutated programs and flags, and how
//! each input ended (compiled, rejected with a located error, a usage
//! error) or went wrong (a panic, an unlocated error, over the time bound).

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schema of the CLI robustness figures.
pub const SCHEMA: &str = "tilec-cli-robustness/1";

/// The CLI robustness figures ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CliRobustness {
    /// [`SCHEMA`].
    pub schema: String,
    /// The test that ran.
    pub test: String,
    /// The command that reruns it.
    pub command: String,
    /// The mutations' seed.
    pub seed: u64,
    /// Inputs tried.
    pub inputs: u64,
    /// Inputs run at once.
    pub jobs: u32,
    /// The ptxas used to assemble, when one was found.
    pub ptxas: Option<String>,
    /// Inputs that compiled.
    pub compiled: u64,
    /// Of those, compiled to an artifact.
    pub compiled_to_artifact: u64,
    /// Of those, assembled by ptxas.
    pub assembled_by_ptxas: u64,
    /// Inputs rejected with an error naming its place.
    pub rejected_located: u64,
    /// Inputs rejected as a usage error.
    pub usage_errors: u64,
    /// Kernels ptxas refused or warned about (`--verify-ptx`).
    pub refused_by_ptxas: u64,
    /// What ptxas said, per such kernel.
    pub ptxas_findings: Vec<String>,
    /// Inputs on which tilec panicked.
    pub panics: u64,
    /// Errors without a place.
    pub unlocated_errors: u64,
    /// Inputs over [`CliRobustness::time_bound_s`].
    pub over_time_bound: u64,
    /// Anything else that went wrong.
    pub other_failures: u64,
    /// The time an input may take, s.
    pub time_bound_s: u64,
    /// The slowest input's time, s.
    pub slowest_s: f64,
    /// The slowest input.
    pub slowest_input: String,
    /// The whole run, s.
    pub elapsed_s: f64,
}

impl CliRobustness {
    /// The run, how the inputs ended, what went wrong, and ptxas's findings.
    pub fn table(&self) -> String {
        let mut s = format!("{}: {} inputs, seed {:#x}, {} jobs, {:.0} s ({})\n", self.schema, self.inputs, self.seed, self.jobs, self.elapsed_s, self.test);
        let rows: [(&str, u64); 11] = [
            ("compiled", self.compiled),
            ("  to an artifact", self.compiled_to_artifact),
            ("  assembled by ptxas", self.assembled_by_ptxas),
            ("rejected with a located error", self.rejected_located),
            ("usage errors", self.usage_errors),
            ("refused by ptxas", self.refused_by_ptxas),
            ("panics", self.panics),
            ("unlocated errors", self.unlocated_errors),
            ("over the time bound", self.over_time_bound),
            ("other failures", self.other_failures),
            ("time bound, s", self.time_bound_s),
        ];
        for (what, n) in rows {
            let _ = writeln!(s, "{what:<32} {n:>6}");
        }
        let _ = writeln!(s, "slowest: {:.3} s, {}", self.slowest_s, self.slowest_input);
        for f in &self.ptxas_findings {
            let _ = writeln!(s, "ptxas: {f}");
        }
        s
    }
}
