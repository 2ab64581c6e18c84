//! The epilogue's second form: registers -> shared memory -> TMA store.
//! `nv.store_shared` writes a register tile into a buffer stage (swizzled as
//! TMA reads it), `nv.fence_async_shared` orders those generic-proxy writes
//! before async-proxy (TMA) reads, and `nv.tma_store` (elected) copies the
//! stage to global memory and waits until it has been read.

use super::memory::{check_index, parse_indexed, print_indexed, resolve_indices};
use crate::diagnostic::Diagnostic;
use crate::ir::{Body, Layout, Op};
use crate::registry::{OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer};
use crate::tile::arith::expect_counts;

/// `nv.store_shared %t, %c_smem[%s] : tensor<MxNxT, #tile.mma<...>> -> !nv.smem<SxMxNxT, #tile.nvmma_shared<...>>`
///
/// Every thread writes the elements its register layout gives it into stage
/// `%s`, at the (swizzled) addresses a TMA box of the buffer's layout reads.
pub const STORE_SHARED: OpDef = OpDef {
    name: "nv.store_shared",
    traits: OpTraits::NONE,
    parse: crate::tile::memory::parse_store,
    print: crate::tile::memory::print_store,
    verify: verify_store_shared,
    fold: None,
};

fn verify_store_shared(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 3, 0)?;
    let ops = &body.ops[op].operands;
    let tile = body.value_type(ops[0]).as_tile().ok_or("the stored value must be a tile")?;
    let smem = body.value_type(ops[1]).as_smem().ok_or("the destination must be a '!nv.smem' buffer")?;
    check_index(body, ops[2], "the stage")?;
    if !matches!(tile.layout, Some(Layout::Mma { .. })) {
        return Err("the stored tile needs a '#tile.mma' register layout".into());
    }
    if tile.shape != smem.tile.shape || tile.elem != smem.tile.elem {
        return Err("the tile must have the buffer stage's shape and element type".into());
    }
    Ok(())
}

/// `nv.fence_async_shared`: orders this thread's earlier shared-memory
/// writes before later reads by the async proxy (TMA).
pub const FENCE_ASYNC_SHARED: OpDef = OpDef {
    name: "nv.fence_async_shared",
    traits: OpTraits::NONE,
    parse: super::mma::parse_bare,
    print: super::mma::print_bare,
    verify: super::mma::verify_bare,
    fold: None,
};

/// `nv.tma_store %c_smem[%s] -> %C[%row, %col] : !nv.smem<...> -> !tile.ref<?x?xT>`
/// (elected): copies stage `%s` to the tensor at element coordinates
/// (`%row`, `%col`), clipping what lies outside it, and waits until the
/// copy has read the stage (so the buffer may be reused and the CTA exit).
pub const TMA_STORE: OpDef = OpDef {
    name: "nv.tma_store",
    traits: OpTraits::NONE,
    parse: parse_tma_store,
    print: print_tma_store,
    verify: verify_tma_store,
    fold: None,
};

fn parse_tma_store(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let (buf, buf_idx) = parse_indexed(p)?;
    p.expect("->")?;
    let (tensor, coords) = parse_indexed(p)?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let buf_ty = p.parse_type()?;
    p.expect("->")?;
    let ref_ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&buf, &buf_ty)?];
    operands.extend(resolve_indices(p, &buf_idx)?);
    operands.push(p.resolve(&tensor, &ref_ty)?);
    operands.extend(resolve_indices(p, &coords)?);
    Ok(ParsedOp { operands, result_types: vec![], attrs, regions: vec![] })
}

fn print_tma_store(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs) = (data.operands.clone(), data.attrs.clone());
    if ops.len() < 3 {
        p.write(" <<malformed>>");
        return;
    }
    p.write(" ");
    print_indexed(p, ops[0], &ops[1..2]);
    p.write(" -> ");
    print_indexed(p, ops[2], &ops[3..]);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(ops[0]);
    p.write(" -> ");
    p.value_type(ops[2]);
}

fn verify_tma_store(body: &Body, op: Op) -> Result<(), String> {
    let ops = &body.ops[op].operands;
    if ops.len() < 3 {
        return Err("expects a buffer, a stage, a tensor and its coordinates".into());
    }
    let smem = body.value_type(ops[0]).as_smem().ok_or("the source must be a '!nv.smem' buffer")?;
    check_index(body, ops[1], "the stage")?;
    let tensor = body.value_type(ops[2]).as_ref_type().ok_or("the destination must be a global tensor reference")?;
    if ops.len() != 3 + tensor.shape.len() || smem.tile.shape.len() != tensor.shape.len() {
        return Err("expects one element coordinate per tensor dimension".into());
    }
    ops[3..].iter().try_for_each(|&c| check_index(body, c, "a coordinate"))?;
    if smem.tile.elem != tensor.elem {
        return Err("buffer and tensor element types differ".into());
    }
    if smem.tile.shape.iter().any(|&d| d > 256) {
        return Err("a TMA box dimension is at most 256 elements".into());
    }
    Ok(())
}
