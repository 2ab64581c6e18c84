//! tilec: compiles GEMMs written in the tile IR for NVIDIA Hopper (tile IR
//! -> passes -> MLIR -> PTX). The IR lives in `tilec-dialects` and the passes
//! in `tilec-passes`, the nv IR to MLIR lowering in `tilec-lower`; this crate
//! lowers MLIR to PTX (`backend`) and holds the tools (`opt` for tile-opt, `driver` for tilec).

pub mod backend;
pub mod cli;
pub mod bench_compile;
pub mod config_select;
pub mod driver;
pub mod family;
pub mod opt;
pub mod split_input;
pub mod verify_diagnostics;

pub use driver::default_pipeline;
