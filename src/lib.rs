//! tilec: compiles GEMMs written in the tile IR for NVIDIA Hopper (tile IR
//! -> passes -> MLIR -> PTX). The IR lives in `tilec-dialects` and the passes
//! in `tilec-passes`, the nv IR to MLIR lowering in `tilec-lower`, the MLIR
//! to PTX back end (the only code that links MLIR and LLVM) in
//! `tilec-backend`; this crate holds the front door, which the tools
//! (`src/bin/tilec`, `src/bin/tile-opt`, whose command-line modules are
//! their own) build on: both run passes through `pass_runner`. A library that wants nv IR or MLIR text
//! depends on `tilec-passes` and `tilec-lower` and links neither.
//!
//! [`compile`] is the front door: tile IR text in, nv IR, MLIR, PTX, manifest
//! and chosen config out; [`compile_family`] compiles the kernels several
//! shapes pick. The crates underneath are re-exported ([`dialects`],
//! [`passes`], [`artifact`], [`lower`], [`backend`], [`target`]) so one dependency is
//! enough; a pass of your own joins pipeline strings through
//! [`passes::register_pass`].

#![warn(missing_docs)]

pub mod api;
pub mod config_select;
pub mod family;
pub mod pass_runner;
pub mod tma_rows;

pub use api::{compile, Compiled, Error, Options};
pub use config_select::Shape;
pub use family::{compile_family, Family};
pub use tilec_artifact as artifact;
pub use tilec_backend as backend;
pub use tilec_dialects as dialects;
pub use tilec_lower as lower;
pub use tilec_passes as passes;
pub use tilec_target as target;
pub use tilec_passes::{register_pass, Pass, PassInfo, PassManager, DEFAULT_PIPELINE};
