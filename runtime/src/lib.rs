#![warn(missing_docs)]
//! tilec-runtime: loads tilec artifacts (PTX + manifest) and launches them
//! with cudarc: TMA descriptors (`cuTensorMapEncodeTiled`), cluster launch
//! (`cuLaunchKernelEx`), event timing, and cuBLAS/cuBLASLt baselines.
//!
//! Layout: [`gemm`] is the GEMM handle a user calls (load, bind, launch,
//! time); [`plan`] is pure (binding, validation, grid, TMA arguments) and is
//! unit-tested without a GPU, as is [`target_check`] (whether a kernel
//! compiled for one GPU may load on the device); [`cuda`] makes the CUDA calls; [`timing`]
//! times kernels in interleaved rounds; [`blas`] holds the baselines ([`lt`]:
//! cached cuBLASLt plans, BF16 and FP8); [`check`] the correctness helpers
//! ([`blockscaled`]: the GPU check of a block-scaled FP8 GEMM; [`quantize`]:
//! of an output an epilogue quantises to FP8 with per-group scales); [`tp`]
//! runs tensor-parallel GEMMs across GPUs over NCCL;
//! [`bench`](mod@bench) the pure parts of `tilec-bench` (its JSON report is
//! `tilec-report`'s). Everything that touches CUDA first checks that libcuda
//! can be loaded ([`ensure_cuda`]).

pub mod acc_parts;
pub mod bench;
pub mod blas;
pub mod blockscaled;
pub mod check;
pub mod concurrent;
pub mod cuda;
pub mod dispatch;
pub mod epilogue;
/// The runtime's errors, each naming what failed.
pub mod error;
pub mod gemm;
pub mod grouped;
pub mod grouped_bench;
pub mod lt;
pub mod padding;
pub mod plan;
pub mod quantize;
pub mod rng;
pub mod sequence;
pub mod sequence_bench;
pub mod target_check;
pub mod timing;
pub mod tp;
pub mod tuning;

pub use blas::{tn_row_major_to_col_major, ColMajorCall, Cublas, CublasLt};
pub use cuda::{cuda_available, encode_tma, ensure_cuda, Element, Gpu, Kernel, Prepared};
pub use dispatch::select_kernel;
pub use error::{Result, RuntimeError};
pub use gemm::{BLayout, BoundGemm, Gemm, GemmBuffers, GemmSize, GemmSpec, GroupStoreSpec, MatrixSpec, OutputSpec, SaLayout, Scales, VectorSpec};
pub use plan::{compute_grid, plan_launch, tma_encode_args, LaunchPlan, ParamValue, Problem, TensorBinding, TmaEncode};
pub use target_check::check_target;
pub use tilec_artifact as artifact;
pub use tilec_target as target;
pub use timing::Timer;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod bench_tests;
#[cfg(test)]
mod grouped_tests;
#[cfg(test)]
mod epilogue_tests;
