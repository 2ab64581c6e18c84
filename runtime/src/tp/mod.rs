//! Tensor-parallel GEMMs across the GPUs of one host over NCCL, with the
//! communication chunked and overlapped with tilec's GEMM kernels:
//! all-gather + GEMM (column parallel) and GEMM + reduce-scatter (row
//! parallel), bf16 or block-scaled FP8.
//!
//! [`schedule`] says, purely, which launches and collectives a rank runs
//! on which rows, and in which order; [`shards`] splits a global problem
//! into the ranks' inputs and gathers their outputs; [`world`] starts one
//! thread, GPU and communicator per rank; [`ops`] runs a rank's schedule on
//! its GEMM and communication streams. `tilec-tp` checks and times them.

pub mod ops;
pub mod schedule;
pub mod shards;
pub mod world;

pub use ops::{unsupported, TpElement, TpRank};
pub use schedule::{Mode, TpGemm};
pub use shards::{gather_c, Inputs, Matrix};
pub use world::{ensure_nccl, run_world, Rank};
