//! `tile-swap-operands`: computes C^T = B A^T instead of C = A B^T, the
//! output's rows becoming the wgmma's N. A wgmma's M is a multiple of 64
//! rows a warpgroup, its N any multiple of 8 up to 256: a GEMM with few
//! rows (decode, M of a few tokens) or rows just past a multiple of 64
//! (M = 88, 154) wastes most of a 64-row tile on rows that do not exist,
//! while as the swapped GEMM's columns they fill a tile 8 or 16 wide.
//!
//! Config selection decides it (`tile.config`'s `swap_operands`) and binds
//! the block sizes of the swapped GEMM: BLOCK_N (B's rows) is then the
//! tile's rows and BLOCK_M (A's rows) its columns. The pass rewrites the
//! program so that every pass after it sees an ordinary GEMM:
//!
//! - the dot takes B's tile first: `tile.dot %b, %a, %acc {transpose_b}`,
//!   its accumulator `BLOCK_N x BLOCK_M`; a block-scaled dot takes each
//!   operand's scales with it and is marked `blocks_along_rows` (B's
//!   128 x 128 block scales now run along the tile's rows, A's row scales
//!   along its columns);
//! - the accumulator's initial value, the K loop's carried value and every
//!   element-wise op from the dot to the store take the transposed type, as
//!   do the constants and broadcast vectors they mix in, a vector along C's
//!   columns (a bias) broadcast along the tile's rows instead;
//! - the output is declared column-major, its last two dimensions swapped
//!   (`tile.dims = ["N", "M"], tile.contiguous = "N"`: the same memory),
//!   and the tile is stored at (N tile, M tile);
//! - grid x and y exchange, so that x walks the output tiles' rows as every
//!   tile-order pass expects.
//!
//! What it cannot transpose is an error: a dot that reads A K-major or B
//! K x N, and an epilogue that mixes in a tile loaded whole (a residual)
//! or reduces over a row.
//! A program whose output is already column-major computes C^T as written
//! and is left alone.

use crate::analysis::operand_swap::OperandSwap;
use crate::config::ConfigEntries;
use crate::pass::{Pass, PassInfo};
use crate::phase::{Phase, PhaseRule};
use tilec_dialects::ir::{Attribute, Type};
use tilec_dialects::registry::Opcode;
use tilec_dialects::tile::{GridQuery, LoadBroadcast};
use tilec_dialects::{Diagnostic, Function};

/// `tile-swap-operands`' registration: name, options, phases and constructor.
pub const INFO: PassInfo = PassInfo {
    name: "tile-swap-operands",
    summary: "Compute C^T = B A^T into a column-major view of C where tile.config's swap_operands says so, so that few output rows fill the wgmma's N",
    options: &[],
    phases: PhaseRule {
        needs: Phase::Tile..=Phase::Tile,
        leaves: None,
        reason: "it transposes the accumulator's bound type before layouts are chosen for it (run it right after tile-select-config)",
    },
    create: |_| Box::new(SwapOperands),
};

/// The `tile-swap-operands` pass.
pub struct SwapOperands;

impl Pass for SwapOperands {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn run(&mut self, func: &mut Function) -> Result<(), Diagnostic> {
        if ConfigEntries::of(func)?.swap_operands != Some(true) {
            return Ok(());
        }
        let swap = OperandSwap::find(func)?;
        if func.is_column_major(swap.output_arg) {
            return Ok(());
        }
        apply(swap, func);
        Ok(())
    }
}

/// Rewrites `func` as `swap` says.
fn apply(swap: OperandSwap, func: &mut Function) {
    let body = &mut func.body;
    if body.opcode(swap.dot) == Opcode::TileDotScaled {
        // (A, A's scales, B, B's scales, ...) become (B, B's scales, A, A's
        // scales, ...): the block scales now run along the other axis.
        let operands = &mut body.ops[swap.dot].operands;
        operands.swap(0, 2);
        operands.swap(1, 3);
        let attrs = &mut body.ops[swap.dot].attrs;
        if attrs.has("blocks_along_rows") {
            attrs.remove("blocks_along_rows");
        } else {
            attrs.set("blocks_along_rows", Attribute::Unit);
        }
    } else {
        body.ops[swap.dot].operands.swap(0, 1);
    }
    for broadcast in swap.broadcasts {
        let along = if LoadBroadcast::of(body, broadcast).expect("a broadcast").along(body) == "cols" { "rows" } else { "cols" };
        body.ops[broadcast].attrs.set("along", Attribute::String(along.into()));
    }
    for v in swap.transposed {
        if let Type::Tile(t) = &mut body.values[v].ty {
            t.shape.reverse();
        }
    }
    // The operands after the value and tensor are the tile's indices.
    body.ops[swap.store].operands[2..].reverse();
    for query in swap.grid_queries {
        let dim = GridQuery::of(body, query).expect("a grid query").dim(body);
        let ty = match body.ops[query].attrs.get("dim") {
            Some(Attribute::Int(_, ty)) => *ty,
            _ => unreachable!("checked by GridQuery::of"),
        };
        body.ops[query].attrs.set("dim", Attribute::Int(1 - dim, ty));
    }
    let attrs = &mut func.arg_attrs[swap.output_arg];
    let dims: Vec<String> = attrs.get("tile.dims").and_then(Attribute::as_strings).expect("checked by plan").iter().map(|d| d.to_string()).collect();
    attrs.set("tile.dims", Attribute::Array(vec![Attribute::String(dims[1].clone()), Attribute::String(dims[0].clone())]));
    attrs.set("tile.contiguous", Attribute::String(dims[1].clone()));
}

