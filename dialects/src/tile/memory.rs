//! Loads and stores of whole tiles at tile coordinates of a global tensor.
//!
//! `tile.load %a[%i, %k]` reads the tile whose first element is at
//! `(%i * TILE_M, %k * TILE_K)`; elements outside the tensor read as zero,
//! and a store writes only the elements inside it, as TMA does.

use super::arith::expect_counts;
use crate::diagnostic::Diagnostic;
use crate::ir::{Body, Op, Type};
use crate::registry::{OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer};

/// `%t = tile.load %a[%i, %k] : !tile.ref<?x?xbf16> -> tensor<128x64xbf16>`
pub const LOAD: OpDef =
    OpDef { name: "tile.load", traits: OpTraits::PURE, parse: parse_load, print: print_load, verify: verify_load, fold: None };

/// `tile.store %t, %c[%i, %j] : tensor<128x128xbf16> -> !tile.ref<?x?xbf16>`
pub const STORE: OpDef =
    OpDef { name: "tile.store", traits: OpTraits::NONE, parse: parse_store, print: print_store, verify: verify_store, fold: None };

fn parse_indices(p: &mut Parser<'_>) -> Result<Vec<crate::syntax::UnresolvedOperand>, Diagnostic> {
    p.parse_delimited("[", "]", Parser::parse_operand)
}

fn parse_load(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let tensor = p.parse_operand()?;
    let indices = parse_indices(p)?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let ref_ty = p.parse_type()?;
    p.expect("->")?;
    let tile_ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&tensor, &ref_ty)?];
    for i in &indices {
        operands.push(p.resolve(i, &Type::INDEX)?);
    }
    Ok(ParsedOp { operands, result_types: vec![tile_ty], attrs, regions: vec![] })
}

fn print_load(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (operands, attrs, result) = (data.operands.clone(), data.attrs.clone(), data.results[0]);
    p.write(" ");
    p.value(operands[0]);
    p.write("[");
    p.values(&operands[1..]);
    p.write("]");
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(operands[0]);
    p.write(" -> ");
    p.value_type(result);
}

/// The syntax every store shares, `%value, %dest[%i, ...] : T -> D`:
/// `tile.store`, `nv.store_global` and `nv.store_shared`.
pub(crate) fn parse_store(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let value = p.parse_operand()?;
    p.expect(",")?;
    let tensor = p.parse_operand()?;
    let indices = parse_indices(p)?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let tile_ty = p.parse_type()?;
    p.expect("->")?;
    let ref_ty = p.parse_type()?;
    let mut operands = vec![p.resolve(&value, &tile_ty)?, p.resolve(&tensor, &ref_ty)?];
    for i in &indices {
        operands.push(p.resolve(i, &Type::INDEX)?);
    }
    Ok(ParsedOp { operands, result_types: vec![], attrs, regions: vec![] })
}

pub(crate) fn print_store(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (operands, attrs) = (data.operands.clone(), data.attrs.clone());
    p.write(" ");
    p.value(operands[0]);
    p.write(", ");
    p.value(operands[1]);
    p.write("[");
    p.values(&operands[2..]);
    p.write("]");
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(operands[0]);
    p.write(" -> ");
    p.value_type(operands[1]);
}

/// Checks a tile against the tensor it is loaded from or stored to, and the
/// tile coordinates.
fn check_access(body: &Body, tile: &Type, tensor: &Type, indices: &[crate::ir::Value]) -> Result<(), String> {
    let Some(tile) = tile.as_tile() else {
        return Err("the accessed value must be a tile".into());
    };
    let Some(tensor) = tensor.as_ref_type() else {
        return Err("the memory operand must be a global tensor reference".into());
    };
    if tile.elem != tensor.elem {
        return Err(format!(
            "tile element type '{}' does not match tensor element type '{}'",
            tile.elem.mnemonic(),
            tensor.elem.mnemonic()
        ));
    }
    if tile.shape.len() != tensor.shape.len() {
        return Err(format!("rank-{} tile does not match rank-{} tensor", tile.shape.len(), tensor.shape.len()));
    }
    if indices.len() != tensor.shape.len() {
        return Err(format!("expects {} tile coordinate(s), found {}", tensor.shape.len(), indices.len()));
    }
    if let Some(bad) = indices.iter().position(|&i| !body.value_type(i).is_index()) {
        return Err(format!("tile coordinate #{bad} must be 'index'"));
    }
    if tile.shape.iter().any(|&d| d <= 0 && crate::ir::Param::from_extent(d).is_none()) {
        return Err("tile dimensions must be positive".into());
    }
    Ok(())
}

fn verify_load(body: &Body, op: Op) -> Result<(), String> {
    let data = &body.ops[op];
    if data.operands.is_empty() || data.results.len() != 1 {
        return Err("expects a tensor operand and one result".into());
    }
    check_access(body, body.value_type(data.results[0]), body.value_type(data.operands[0]), &data.operands[1..])
}

fn verify_store(body: &Body, op: Op) -> Result<(), String> {
    let data = &body.ops[op];
    if data.operands.len() < 2 {
        return Err("expects a tile and a tensor operand".into());
    }
    expect_counts(body, op, data.operands.len(), 0)?;
    check_access(body, body.value_type(data.operands[0]), body.value_type(data.operands[1]), &data.operands[2..])
}
