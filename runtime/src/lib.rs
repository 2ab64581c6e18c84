//! tilec-runtime: loads tilec artifacts (PTX + manifest) and launches them
//! with cudarc: TMA descriptors (`cuTensorMapEncodeTiled`), cluster launch
//! (`cuLaunchKernelEx`), event timing, and cuBLAS/cuBLASLt baselines.
//!
//! Layout: [`plan`] is pure (binding, validation, grid, TMA arguments) and is
//! unit-tested without a GPU; [`cuda`] makes the CUDA calls; [`blas`] holds
//! the baselines ([`lt`]: cached cuBLASLt plans, BF16 and FP8); [`check`]
//! the correctness helpers; [`bench`] and [`plot`] the pure parts of
//! `tilec-bench` (shapes, statistics, JSON report, table, PNG chart). Everything that touches
//! CUDA first checks that libcuda can be loaded ([`ensure_cuda`]).

pub mod bench;
pub mod blas;
pub mod check;
pub mod cuda;
pub mod dispatch;
pub mod error;
pub mod lt;
pub mod plan;
pub mod plot;

pub use blas::{tn_row_major_to_col_major, ColMajorCall, Cublas, CublasLt};
pub use dispatch::select_kernel;
pub use cuda::{cuda_available, encode_tma, ensure_cuda, median, time_events, Element, Gpu, Kernel, Prepared};
pub use error::{Result, RuntimeError};
pub use plan::{compute_grid, plan_launch, tma_encode_args, LaunchPlan, ParamValue, Problem, TensorBinding, TmaEncode};
pub use tilec_artifact as artifact;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod bench_tests;
