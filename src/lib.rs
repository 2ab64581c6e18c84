//! tilec: compiles GEMMs written in the tile IR for NVIDIA Hopper (tile IR
//! -> passes -> MLIR -> PTX). The IR lives in `tilec-dialects` and the passes
//! in `tilec-passes`; this crate lowers to MLIR and PTX and holds the tools.

pub mod backend;
pub mod opt;
