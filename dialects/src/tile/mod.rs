//! The `tile` dialect: a GEMM as what to compute, with no Hopper detail.
//! Block ids, index arithmetic, a K loop with iteration arguments, loads and
//! stores of tiles at tile coordinates, `dot` and `dot_scaled`, element-wise
//! ops and casts. No barrier, swizzle, warp role or shared buffer appears.

pub mod arith;
pub mod control;
pub mod dot;
pub mod memory;

use crate::registry::OpDef;

pub static OPS: &[OpDef] = &[
    arith::CONSTANT,
    arith::ADDI,
    arith::SUBI,
    arith::MULI,
    arith::DIVSI,
    arith::REMSI,
    arith::CEILDIVSI,
    arith::MINSI,
    arith::MAXSI,
    arith::ADDF,
    arith::SUBF,
    arith::MULF,
    arith::DIVF,
    arith::MAXF,
    arith::MINF,
    arith::TRUNCF,
    arith::EXTF,
    arith::INDEX_CAST,
    arith::BLOCK_ID,
    arith::NUM_BLOCKS,
    arith::DIM,
    arith::PARAM,
    arith::CMPI,
    control::FOR,
    control::IF,
    control::YIELD,
    control::RETURN,
    memory::LOAD,
    memory::STORE,
    dot::DOT,
    dot::DOT_SCALED,
    dot::CONVERT_LAYOUT,
];
