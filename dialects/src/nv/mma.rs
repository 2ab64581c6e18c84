//! Asynchronous warpgroup MMA: fence, the tile-sized `nv.wgmma`, commit and
//! wait.

use super::fragment::check_a_fragment_layout;
use super::memory::{check_index, check_smem, parse_indexed, print_indexed, resolve_indices};
use crate::diagnostic::Diagnostic;
use crate::ir::{Attribute, Body, ElemType, Layout, Op, Type, Value};
use crate::registry::{OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer, Token};
use crate::tile::arith::expect_counts;

/// Ops with no operands and no results: `nv.barrier`, `nv.wgmma_fence`.
pub(super) fn parse_bare(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let attrs = p.parse_optional_attr_dict()?;
    Ok(ParsedOp { operands: vec![], result_types: vec![], attrs, regions: vec![] })
}

pub(super) fn print_bare(p: &mut Printer<'_>, op: Op) {
    let attrs = p.body.ops[op].attrs.clone();
    p.attr_dict(&attrs, &[]);
}

pub(super) fn verify_bare(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 0, 0)
}

/// `nv.wgmma_fence`: orders earlier register and shared-memory accesses
/// before the warpgroup's next wgmma.
pub const WGMMA_FENCE: OpDef =
    OpDef { name: "nv.wgmma_fence", traits: OpTraits::NONE, parse: parse_bare, print: print_bare, verify: verify_bare, fold: None };

/// `nv.wgmma_commit`: closes the group of wgmma issued since the last commit.
pub const WGMMA_COMMIT: OpDef =
    OpDef { name: "nv.wgmma_commit", traits: OpTraits::NONE, parse: parse_bare, print: print_bare, verify: verify_bare, fold: None };

/// `%d = nv.wgmma %a_smem[%s], %b_smem[%s], %acc {transpose_b} : !nv.smem<...>, !nv.smem<...> -> tensor<MxNxf32, #tile.mma<...>>`
/// `%d = nv.wgmma %a, %b_smem[%s], %acc {transpose_b} : tensor<MxKxT, #tile.dot_operand<...>>, !nv.smem<...> -> tensor<...>`
///
/// One warpgroup MMA over a whole tile: D = A * B + acc, issued
/// asynchronously as the K / instr_k (and M / 64) instructions the layout
/// implies. A is a buffer stage, or a register tile in the dot-operand
/// layout of the accumulator's MMA layout (loaded by `nv.load_fragment`);
/// B is always a buffer stage. Its result may be read only after an
/// `nv.wgmma_wait` that takes it.
pub const WGMMA: OpDef =
    OpDef { name: "nv.wgmma", traits: OpTraits::NONE, parse: parse_wgmma, print: print_wgmma, verify: verify_wgmma, fold: None };

/// Operands `[A]` or `[A, A's stage]` of an `nv.wgmma`, and the rest `[B, B's
/// stage, acc]`: A's stage is there only when A is in shared memory.
pub fn wgmma_operands(body: &Body, op: Op) -> (&[Value], &[Value]) {
    let ops = &body.ops[op].operands;
    let a_len = if body.value_type(ops[0]).as_smem().is_some() { 2 } else { 1 };
    ops.split_at(a_len.min(ops.len()))
}

fn parse_wgmma(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let a = p.parse_operand()?;
    let a_idx = if matches!(p.peek()?, Token::Punct(s) if s == "[") { p.parse_delimited("[", "]", Parser::parse_operand)? } else { Vec::new() };
    p.expect(",")?;
    let (b, b_idx) = parse_indexed(p)?;
    p.expect(",")?;
    let acc = p.parse_operand()?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let a_ty = p.parse_type()?;
    p.expect(",")?;
    let b_ty = p.parse_type()?;
    p.expect("->")?;
    let c_ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&a, &a_ty)?];
    operands.extend(resolve_indices(p, &a_idx)?);
    operands.push(p.resolve(&b, &b_ty)?);
    operands.extend(resolve_indices(p, &b_idx)?);
    operands.push(p.resolve(&acc, &c_ty)?);
    Ok(ParsedOp { operands, result_types: vec![c_ty], attrs, regions: vec![] })
}

fn print_wgmma(p: &mut Printer<'_>, op: Op) {
    let (a, rest) = wgmma_operands(p.body, op);
    let (a, rest) = (a.to_vec(), rest.to_vec());
    let data = &p.body.ops[op];
    let (attrs, result) = (data.attrs.clone(), data.results[0]);
    p.write(" ");
    if a.len() == 2 {
        print_indexed(p, a[0], &a[1..]);
    } else {
        p.value(a[0]);
    }
    p.write(", ");
    print_indexed(p, rest[0], &rest[1..2]);
    p.write(", ");
    p.value(rest[2]);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(a[0]);
    p.write(", ");
    p.value_type(rest[0]);
    p.write(" -> ");
    p.value_type(result);
}

fn verify_wgmma(body: &Body, op: Op) -> Result<(), String> {
    let in_smem = body.ops[op].operands.first().is_some_and(|&a| body.value_type(a).as_smem().is_some());
    expect_counts(body, op, if in_smem { 5 } else { 4 }, 1)?;
    let data = &body.ops[op];
    let (a_ops, rest) = wgmma_operands(body, op);
    let a = if in_smem {
        check_index(body, a_ops[1], "A's stage")?;
        &body.value_type(a_ops[0]).as_smem().expect("checked").tile
    } else {
        let Some(a) = body.value_type(a_ops[0]).as_tile() else {
            return Err("A must be a '!nv.smem' buffer stage or a register tile".into());
        };
        check_a_fragment_layout(a.layout.as_ref(), a.elem.bits())?;
        if data.attrs.has("transpose_a") {
            return Err("A in registers cannot be transposed".into());
        }
        a
    };
    check_smem(body, rest[0], "B")?;
    check_index(body, rest[1], "B's stage")?;
    let b = &body.value_type(rest[0]).as_smem().expect("checked").tile;
    let acc = body.value_type(rest[2]);
    if acc != body.value_type(data.results[0]) {
        return Err("the accumulator and the result must have one type".into());
    }
    let Some(c) = acc.as_tile() else { return Err("the accumulator must be a tile".into()) };
    let Some(mma @ Layout::Mma { instr_shape, .. }) = &c.layout else {
        return Err("the accumulator needs a '#tile.mma' layout".into());
    };
    if let Some(Layout::DotOperand { parent, .. }) = &a.layout {
        if **parent != *mma {
            return Err("A's dot-operand layout must have the accumulator's MMA layout as its parent".into());
        }
    }
    if a.shape.len() != 2 || b.shape.len() != 2 || c.shape.len() != 2 {
        return Err("A, B and the accumulator must be rank 2".into());
    }
    let (m, k) = if data.attrs.has("transpose_a") { (a.shape[1], a.shape[0]) } else { (a.shape[0], a.shape[1]) };
    let (kb, n) = if data.attrs.has("transpose_b") { (b.shape[1], b.shape[0]) } else { (b.shape[0], b.shape[1]) };
    if k != kb || c.shape != [m, n] {
        return Err(format!("shapes do not form a product: A gives {m}x{k}, B gives {kb}x{n}, accumulator is {}x{}", c.shape[0], c.shape[1]));
    }
    if a.elem != b.elem || !matches!(a.elem, ElemType::BF16 | ElemType::F16 | ElemType::F8E4M3FN) {
        return Err("A and B must share an f16, bf16 or f8E4M3FN element type".into());
    }
    let [im, in_, ik] = instr_shape[..] else { return Err("the MMA layout's instruction shape must be [M, N, K]".into()) };
    // A warpgroup's wgmma covers 64 rows; the layout's M is one warp's 16.
    if m % 64 != 0 || n % i64::from(in_) != 0 || k % i64::from(ik) != 0 {
        return Err(format!("the tile {m}x{n}x{k} is not a multiple of the instruction shape [{im}, {in_}, {ik}]"));
    }
    Ok(())
}

/// `%r:2 = nv.wgmma_wait 1, %d0, %d1 : tensor<...>, tensor<...>`: waits until
/// at most `pending` committed wgmma groups are in flight; its results are
/// its operands, now safe to read.
pub const WGMMA_WAIT: OpDef = OpDef {
    name: "nv.wgmma_wait",
    traits: OpTraits::NONE,
    parse: parse_wgmma_wait,
    print: print_wgmma_wait,
    verify: verify_wgmma_wait,
    fold: None,
};

fn parse_wgmma_wait(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let pending = p.parse_int()?;
    let values = if p.consume_if(",")? { p.parse_comma_separated(Parser::parse_operand)? } else { Vec::new() };
    let mut attrs = p.parse_optional_attr_dict()?;
    attrs.set("pending", Attribute::Int(pending, ElemType::I64));
    let types = if values.is_empty() {
        Vec::new()
    } else {
        p.expect(":")?;
        p.parse_type_list()?
    };
    let operands = p.resolve_all(&values, &types)?;
    Ok(ParsedOp { operands, result_types: types, attrs, regions: vec![] })
}

fn print_wgmma_wait(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs) = (data.operands.clone(), data.attrs.clone());
    p.write(&format!(" {}", attrs.get_int("pending").unwrap_or(0)));
    if !ops.is_empty() {
        p.write(", ");
        p.values(&ops);
    }
    p.attr_dict(&attrs, &["pending"]);
    if !ops.is_empty() {
        p.write(" : ");
        let types: Vec<Type> = ops.iter().map(|&v| p.body.value_type(v).clone()).collect();
        p.types(&types.iter().collect::<Vec<_>>());
    }
}

fn verify_wgmma_wait(body: &Body, op: Op) -> Result<(), String> {
    let data = &body.ops[op];
    match data.attrs.get_int("pending") {
        Some(n) if (0..=7).contains(&n) => {}
        _ => return Err("'pending' must be from 0 to 7".into()),
    }
    if data.operands.len() != data.results.len()
        || data.operands.iter().zip(&data.results).any(|(&o, &r)| body.value_type(o) != body.value_type(r))
    {
        return Err("results must match the operands one for one".into());
    }
    Ok(())
}
