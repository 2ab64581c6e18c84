#![warn(missing_docs)]
//! tilec's passes: the pass manager, the registry of every pass, and the
//! transforms and analyses on tile and nv IR.
//!
//! A pass is a small struct behind the [`Pass`] trait, created from typed
//! options by its [`PassInfo`] entry in [`registry::PASSES`], the one place
//! that lists them. Each entry declares the [`Phase`]s the pass runs in and
//! leaves, and the pass manager rejects a pipeline out of order. A pass
//! defined outside tilec joins the registry with [`register_pass`] and is then
//! named in pipelines like the built-ins.

pub mod analysis;
pub mod cluster;
pub mod config;
pub mod config_rules;
pub mod cost_model;
pub mod hopper;
pub mod k_range;
pub mod layout_rules;
pub mod manager;
pub mod options;
pub mod phase;
pub mod pipeline;
pub mod registry;
pub mod tile_order;
pub mod transforms;

pub use manager::{Instrumentation, PassError, PassManager};
pub use options::{OptionKind, OptionSpec, PassOptions};
pub use phase::{Phase, PhaseRule};
pub use pipeline::{parse_pipeline, DEFAULT_PIPELINE};
pub use registry::{all_passes, register_pass, PassInfo, PASSES};

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
    /// The warnings the runs since the last call reported, each located
    /// (none by default); the pass manager collects them after each run.
    fn take_warnings(&mut self) -> Vec<Diagnostic> {
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
