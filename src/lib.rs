//! tilec: Hopper GEMM compiler (tile IR -> passes -> MLIR -> PTX).

pub mod backend;
