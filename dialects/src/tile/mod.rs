//! The `tile` dialect: a GEMM as what to compute, with no Hopper detail.
//! Block ids, index arithmetic, a K loop with iteration arguments, loads and
//! stores of tiles at tile coordinates, `dot` and `dot_scaled`, element-wise
//! ops and casts, and the column rearrangement a fused epilogue needs. No barrier, swizzle, warp role or shared buffer appears.

pub mod arith;
pub mod columns;
pub mod control;
pub mod dot;
pub mod memory;
pub mod reduce;

// The op table, `Opcode`s and typed views, generated from `ops.ods`.
include!(concat!(env!("OUT_DIR"), "/tile_ops.rs"));
