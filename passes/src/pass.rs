//! What a pass is: the [`Pass`] trait every transform and analysis
//! implements, its [`PassInfo`] declaration (name, options, phases,
//! constructor) that the registry lists, and the located diagnostics passes
//! report with.

use crate::options::{OptionSpec, PassOptions};
use crate::phase::PhaseRule;
use tilec_dialects::ir::{Body, Op};
use tilec_dialects::{Diagnostic, Function};

/// An error at `op`, worded as MLIR words op errors: `'tile.dot' op ...`.
pub fn op_error(body: &Body, op: Op, message: String) -> Diagnostic {
    Diagnostic::error(body.ops[op].loc.clone(), format!("'{}' op {message}", body.ops[op].def.name))
}

/// A warning at `op`, worded as [`op_error`] words errors.
pub fn op_warning(body: &Body, op: Op, message: String) -> Diagnostic {
    Diagnostic::warning(body.ops[op].loc.clone(), format!("'{}' op {message}", body.ops[op].def.name))
}

/// One transformation or analysis over a function.
pub trait Pass {
    /// The registered name, as written in pipelines (`tile-canonicalize`).
    fn name(&self) -> &'static str;
    /// Transforms or checks `func`; an error is located where the IR is at fault.
    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic>;
    /// The warnings and remarks the runs since the last call reported,
    /// each located (none by default); the pass manager collects them after
    /// each run.
    fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        Vec::new()
    }
    /// Whether the pass leaves everything the barrier verifier reads as it
    /// was (synchronising ops, buffer accesses, their order and counts), so
    /// that the pass manager's check after it would repeat the last one's
    /// result; it then checks only the IR (false by default).
    fn preserves_barriers(&self) -> bool {
        false
    }
    /// What the pass counted over all the functions it ran on, for
    /// `--mlir-pass-statistics` (none by default).
    fn statistics(&self) -> Vec<Statistic> {
        Vec::new()
    }
}

/// One counter a pass keeps, as MLIR's `Pass::Statistic`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statistic {
    /// The counter's name (`ops-erased`).
    pub name: &'static str,
    /// What it counts.
    pub description: &'static str,
    /// Its value after the pass ran.
    pub value: u64,
}

/// A pass's declaration: its name in pipelines, a one-line summary, its
/// typed options, the phases it runs in and leaves, and how to create it.
pub struct PassInfo {
    /// The name pipelines write (`tile-canonicalize`).
    pub name: &'static str,
    /// One line for `--list-passes` and `--help`.
    pub summary: &'static str,
    /// The options the pass takes, checked when a pipeline is parsed.
    pub options: &'static [OptionSpec],
    /// The phases it runs in and the phase it leaves.
    pub phases: PhaseRule,
    /// Builds the pass from its resolved options.
    pub create: fn(&PassOptions) -> Box<dyn Pass>,
}
