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
pub mod selection;
pub mod cost_model;
pub mod hopper;
pub mod k_range;
pub mod layout_rules;
pub mod manager;
pub mod options;
pub mod pass;
pub mod phase;
pub mod pipeline;
pub mod registry;
pub mod tile_order;
pub mod transforms;
mod words;

pub use manager::{Instrumentation, PassError, PassManager};
pub use options::{OptionKind, OptionSpec, PassOptions};
pub use phase::{Phase, PhaseRule};
pub use pipeline::{parse_pipeline, DEFAULT_PIPELINE};
pub use pass::{op_error, op_warning, Pass, PassInfo, Statistic};
pub use registry::{all_passes, register_pass, PASSES};
