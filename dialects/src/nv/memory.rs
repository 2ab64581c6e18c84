//! Shared-memory buffers, mbarriers, TMA loads, CTA barriers and global
//! stores.

use crate::diagnostic::Diagnostic;
use crate::ir::{Attribute, Body, ElemType, Layout, Op, Type, Value};
use crate::registry::{OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer, UnresolvedOperand};
use crate::tile::arith::expect_counts;

/// `%buf[%stage]` as written in nv ops.
pub(super) fn parse_indexed(p: &mut Parser<'_>) -> Result<(UnresolvedOperand, Vec<UnresolvedOperand>), Diagnostic> {
    let base = p.parse_operand()?;
    let indices = p.parse_delimited("[", "]", Parser::parse_operand)?;
    Ok((base, indices))
}

pub(super) fn print_indexed(p: &mut Printer<'_>, base: Value, indices: &[Value]) {
    p.value(base);
    p.write("[");
    p.values(indices);
    p.write("]");
}

pub(super) fn resolve_indices(p: &Parser<'_>, indices: &[UnresolvedOperand]) -> Result<Vec<Value>, Diagnostic> {
    indices.iter().map(|i| p.resolve(i, &Type::INDEX)).collect()
}

pub(super) fn check_index(body: &Body, v: Value, what: &str) -> Result<(), String> {
    if body.value_type(v).is_index() {
        Ok(())
    } else {
        Err(format!("{what} must be 'index'"))
    }
}

fn smem_of<'a>(body: &'a Body, v: Value, what: &str) -> Result<&'a crate::ir::SmemType, String> {
    body.value_type(v).as_smem().ok_or_else(|| format!("{what} must be a '!nv.smem' buffer"))
}

pub(super) fn check_smem(body: &Body, v: Value, what: &str) -> Result<(), String> {
    smem_of(body, v, what).map(|_| ())
}

fn check_mbarrier(body: &Body, v: Value) -> Result<(), String> {
    match body.value_type(v) {
        Type::MBarrier(_) => Ok(()),
        _ => Err("barrier operand must be '!nv.mbarrier'".into()),
    }
}

/// Ops with no operands and one typed result: `%x = nv.op {attrs} : T`.
fn parse_alloc(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let ty = p.parse_type()?;
    Ok(ParsedOp { operands: vec![], result_types: vec![ty], attrs, regions: vec![] })
}

fn print_alloc(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (attrs, result) = (data.attrs.clone(), data.results[0]);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(result);
}

/// `%a_smem = nv.alloc_smem : !nv.smem<2x128x64xbf16, #tile.nvmma_shared<swizzle = 128>>`
pub const ALLOC_SMEM: OpDef = OpDef {
    name: "nv.alloc_smem",
    traits: OpTraits::NONE,
    parse: parse_alloc,
    print: print_alloc,
    verify: verify_alloc_smem,
    fold: None,
};

fn verify_alloc_smem(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 0, 1)?;
    let smem = smem_of(body, body.ops[op].results[0], "the result")?;
    if smem.stages <= 0 {
        return Err("a buffer needs at least one stage".into());
    }
    if !matches!(smem.tile.layout, Some(Layout::NvmmaShared { .. })) {
        return Err("a shared buffer needs a '#tile.nvmma_shared' layout".into());
    }
    Ok(())
}

/// `%full = nv.alloc_mbarriers {arrivals = 1} : !nv.mbarrier<2>`: initialised
/// so that each phase completes after `arrivals` arrivals (plus the expected
/// transaction bytes).
pub const ALLOC_MBARRIERS: OpDef = OpDef {
    name: "nv.alloc_mbarriers",
    traits: OpTraits::NONE,
    parse: parse_alloc,
    print: print_alloc,
    verify: verify_alloc_mbarriers,
    fold: None,
};

fn verify_alloc_mbarriers(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 0, 1)?;
    check_mbarrier(body, body.ops[op].results[0])?;
    match body.ops[op].attrs.get_int("arrivals") {
        Some(n) if n > 0 => Ok(()),
        _ => Err("requires a positive 'arrivals' attribute".into()),
    }
}

/// `nv.mbarrier_expect_tx %full[%s], 32768 : !nv.mbarrier<2>` (elected): one
/// arrival that also expects the given number of transaction bytes.
pub const MBARRIER_EXPECT_TX: OpDef = OpDef {
    name: "nv.mbarrier_expect_tx",
    traits: OpTraits::NONE,
    parse: parse_expect_tx,
    print: print_expect_tx,
    verify: verify_expect_tx,
    fold: None,
};

fn parse_expect_tx(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let (bar, idx) = parse_indexed(p)?;
    p.expect(",")?;
    let bytes = p.parse_int()?;
    let mut attrs = p.parse_optional_attr_dict()?;
    attrs.set("bytes", Attribute::Int(bytes, ElemType::I64));
    p.expect(":")?;
    let ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&bar, &ty)?];
    operands.extend(resolve_indices(p, &idx)?);
    Ok(ParsedOp { operands, result_types: vec![], attrs, regions: vec![] })
}

fn print_expect_tx(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs) = (data.operands.clone(), data.attrs.clone());
    p.write(" ");
    print_indexed(p, ops[0], &ops[1..]);
    p.write(&format!(", {}", attrs.get_int("bytes").unwrap_or(0)));
    p.attr_dict(&attrs, &["bytes"]);
    p.write(" : ");
    p.value_type(ops[0]);
}

fn verify_expect_tx(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 2, 0)?;
    let ops = &body.ops[op].operands;
    check_mbarrier(body, ops[0])?;
    check_index(body, ops[1], "the stage")?;
    match body.ops[op].attrs.get_int("bytes") {
        Some(b) if b > 0 && b < (1 << 20) => Ok(()),
        _ => Err("expects a positive transaction byte count under 2^20".into()),
    }
}

/// `nv.mbarrier_wait %full[%s], %phase : !nv.mbarrier<2>`: every thread waits
/// until the barrier's phase with parity `%phase` has completed.
pub const MBARRIER_WAIT: OpDef = OpDef {
    name: "nv.mbarrier_wait",
    traits: OpTraits::NONE,
    parse: parse_wait,
    print: print_wait,
    verify: verify_wait,
    fold: None,
};

fn parse_wait(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let (bar, idx) = parse_indexed(p)?;
    p.expect(",")?;
    let phase = p.parse_operand()?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&bar, &ty)?];
    operands.extend(resolve_indices(p, &idx)?);
    operands.push(p.resolve(&phase, &Type::INDEX)?);
    Ok(ParsedOp { operands, result_types: vec![], attrs, regions: vec![] })
}

fn print_wait(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs) = (data.operands.clone(), data.attrs.clone());
    p.write(" ");
    print_indexed(p, ops[0], &ops[1..2]);
    p.write(", ");
    p.value(ops[2]);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(ops[0]);
}

fn verify_wait(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 3, 0)?;
    let ops = &body.ops[op].operands;
    check_mbarrier(body, ops[0])?;
    check_index(body, ops[1], "the stage")?;
    check_index(body, ops[2], "the phase")
}

/// `nv.tma_load %a[%row, %col] -> %a_smem[%s], %full[%s] : !tile.ref<?x?xbf16> -> !nv.smem<...>, !nv.mbarrier<2>`
/// (elected): copies the box at element coordinates (`%row`, `%col`) into
/// one stage of the buffer; completion is counted in bytes on the barrier.
pub const TMA_LOAD: OpDef = OpDef {
    name: "nv.tma_load",
    traits: OpTraits::NONE,
    parse: parse_tma_load,
    print: print_tma_load,
    verify: verify_tma_load,
    fold: None,
};

fn parse_tma_load(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let (tensor, coords) = parse_indexed(p)?;
    p.expect("->")?;
    let (buf, buf_idx) = parse_indexed(p)?;
    p.expect(",")?;
    let (bar, bar_idx) = parse_indexed(p)?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let ref_ty = p.parse_type()?;
    p.expect("->")?;
    let buf_ty = p.parse_type()?;
    p.expect(",")?;
    let bar_ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&tensor, &ref_ty)?];
    operands.extend(resolve_indices(p, &coords)?);
    operands.push(p.resolve(&buf, &buf_ty)?);
    operands.extend(resolve_indices(p, &buf_idx)?);
    operands.push(p.resolve(&bar, &bar_ty)?);
    operands.extend(resolve_indices(p, &bar_idx)?);
    Ok(ParsedOp { operands, result_types: vec![], attrs, regions: vec![] })
}

/// The operands of an `nv.tma_load`, by role.
pub struct TmaLoadOperands<'a> {
    pub tensor: Value,
    pub coords: &'a [Value],
    pub buffer: Value,
    pub stage: Value,
    pub barrier: Value,
    pub barrier_stage: Value,
}

/// Splits a `nv.tma_load`'s operands; `None` if their count does not fit the
/// tensor's rank.
pub fn tma_load_operands(body: &Body, op: Op) -> Option<TmaLoadOperands<'_>> {
    let ops = &body.ops[op].operands;
    let rank = body.value_type(*ops.first()?).as_ref_type()?.shape.len();
    if ops.len() != rank + 5 {
        return None;
    }
    Some(TmaLoadOperands {
        tensor: ops[0],
        coords: &ops[1..1 + rank],
        buffer: ops[1 + rank],
        stage: ops[2 + rank],
        barrier: ops[3 + rank],
        barrier_stage: ops[4 + rank],
    })
}

fn print_tma_load(p: &mut Printer<'_>, op: Op) {
    let Some(o) = tma_load_operands(p.body, op) else {
        p.write(" <<malformed>>");
        return;
    };
    let (tensor, coords, buffer, stage, barrier, bstage) = (o.tensor, o.coords.to_vec(), o.buffer, o.stage, o.barrier, o.barrier_stage);
    let attrs = p.body.ops[op].attrs.clone();
    p.write(" ");
    print_indexed(p, tensor, &coords);
    p.write(" -> ");
    print_indexed(p, buffer, &[stage]);
    p.write(", ");
    print_indexed(p, barrier, &[bstage]);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(tensor);
    p.write(" -> ");
    p.value_type(buffer);
    p.write(", ");
    p.value_type(barrier);
}

fn verify_tma_load(body: &Body, op: Op) -> Result<(), String> {
    let first = *body.ops[op].operands.first().ok_or("expects a tensor operand")?;
    let tensor = body.value_type(first).as_ref_type().ok_or("the source must be a global tensor reference")?;
    let o = tma_load_operands(body, op).ok_or("expects a tensor, one coordinate per dimension, a buffer, a stage, a barrier and a stage")?;
    expect_counts(body, op, body.ops[op].operands.len(), 0)?;
    for &c in o.coords {
        check_index(body, c, "a coordinate")?;
    }
    let buf = smem_of(body, o.buffer, "the destination")?;
    check_index(body, o.stage, "the buffer stage")?;
    check_mbarrier(body, o.barrier)?;
    check_index(body, o.barrier_stage, "the barrier stage")?;
    if buf.tile.elem != tensor.elem {
        return Err("buffer and tensor element types differ".into());
    }
    if buf.tile.shape.len() != tensor.shape.len() {
        return Err("buffer tile rank differs from the tensor rank".into());
    }
    if buf.tile.shape.iter().any(|&d| d > 256) {
        return Err("a TMA box dimension is at most 256 elements".into());
    }
    Ok(())
}

/// `nv.barrier`: all threads of the CTA meet.
pub const BARRIER: OpDef = OpDef {
    name: "nv.barrier",
    traits: OpTraits::NONE,
    parse: super::mma::parse_bare,
    print: super::mma::print_bare,
    verify: super::mma::verify_bare,
    fold: None,
};

/// `nv.store_global %t, %c[%row, %col] : tensor<..., #layout> -> !tile.ref<?x?xbf16>`:
/// each thread writes the elements its layout gives it, at element offset
/// (`%row`, `%col`), skipping those outside the tensor.
pub const STORE_GLOBAL: OpDef = OpDef {
    name: "nv.store_global",
    traits: OpTraits::NONE,
    parse: crate::tile::memory::parse_store,
    print: crate::tile::memory::print_store,
    verify: verify_store_global,
    fold: None,
};

fn verify_store_global(body: &Body, op: Op) -> Result<(), String> {
    let ops = &body.ops[op].operands;
    if ops.len() < 2 {
        return Err("expects a tile and a tensor".into());
    }
    let tile = body.value_type(ops[0]).as_tile().ok_or("the stored value must be a tile")?;
    let tensor = body.value_type(ops[1]).as_ref_type().ok_or("the destination must be a global tensor reference")?;
    if tile.layout.as_ref().is_none_or(Layout::is_shared) {
        return Err("the stored tile needs a distributed (register) layout".into());
    }
    if tile.elem != tensor.elem {
        return Err("tile and tensor element types differ".into());
    }
    if ops.len() != 2 + tensor.shape.len() || tile.shape.len() != tensor.shape.len() {
        return Err("expects one element coordinate per tensor dimension".into());
    }
    ops[2..].iter().try_for_each(|&c| check_index(body, c, "a coordinate"))
}
