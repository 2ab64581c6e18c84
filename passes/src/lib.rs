//! tilec's passes: the pass manager, the registry of every pass, and the
//! transforms and analyses on tile and nv IR.
//!
//! A pass is a small struct behind the [`Pass`] trait, created from typed
//! options by its [`PassInfo`] entry in [`registry::PASSES`], the one place
//! that lists them.

pub mod analysis;
pub mod config_rules;
pub mod layout_rules;
pub mod manager;
pub mod options;
pub mod pipeline;
pub mod registry;
pub mod transforms;

pub use manager::{Instrumentation, PassError, PassManager};
pub use options::{OptionKind, OptionSpec, PassOptions};
pub use pipeline::parse_pipeline;
pub use registry::{PassInfo, PASSES};

use tilec_dialects::{Diagnostic, Function};

/// One transformation or analysis over a function.
pub trait Pass {
    /// The registered name, as written in pipelines (`tile-canonicalize`).
    fn name(&self) -> &'static str;
    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic>;
}
