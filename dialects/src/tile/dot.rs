//! Matrix products on tiles: `dot` (C += A * B with optional transpositions)
//! and `dot_scaled` (FP8 e4m3 with DeepGEMM's block scales), plus the layout
//! conversion the layout pass inserts between them and their neighbours.

use super::arith::{expect_counts, parse_cast, print_cast};
use crate::diagnostic::Diagnostic;
use crate::ir::{Body, ElemType, Op, TileType, Type};
use crate::registry::{OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer};

/// K elements covered by one block scale, in both operands (seed 001).
pub const SCALE_BLOCK_K: i64 = 128;
/// N rows covered by one RHS block scale (128x128 blocks).
pub const SCALE_BLOCK_N: i64 = 128;

/// `%d = tile.dot %a, %b, %acc {transpose_b} : tensor<MxK>, tensor<NxK> -> tensor<MxN>`
///
/// A is M x K (K x M with `transpose_a`), B is K x N (N x K with
/// `transpose_b`); the accumulator has the result's type.
pub const DOT: OpDef =
    OpDef { name: "tile.dot", traits: OpTraits::PURE, parse: parse_dot, print: print_dot, verify: verify_dot, fold: None };

/// `%d = tile.dot_scaled %a scale %sa, %b scale %sb, %acc {transpose_b} :
///   tensor<MxKxf8E4M3FN>, tensor<Mx(K/128)xf32>, tensor<NxKxf8E4M3FN>,
///   tensor<ceil(N/128)x(K/128)xf32> -> tensor<MxNxf32>`
pub const DOT_SCALED: OpDef = OpDef {
    name: "tile.dot_scaled",
    traits: OpTraits::PURE,
    parse: parse_dot_scaled,
    print: print_dot_scaled,
    verify: verify_dot_scaled,
    fold: None,
};

/// `%y = tile.convert_layout %x : tensor<..., #a> to tensor<..., #b>`
pub const CONVERT_LAYOUT: OpDef = OpDef {
    name: "tile.convert_layout",
    traits: OpTraits::PURE,
    parse: parse_cast,
    print: print_cast,
    verify: verify_convert_layout,
    fold: None,
};

fn parse_dot(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let a = p.parse_operand()?;
    p.expect(",")?;
    let b = p.parse_operand()?;
    p.expect(",")?;
    let acc = p.parse_operand()?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let a_ty = p.parse_type()?;
    p.expect(",")?;
    let b_ty = p.parse_type()?;
    p.expect("->")?;
    let c_ty = p.parse_type()?;
    let operands = vec![p.resolve(&a, &a_ty)?, p.resolve(&b, &b_ty)?, p.resolve(&acc, &c_ty)?];
    Ok(ParsedOp { operands, result_types: vec![c_ty], attrs, regions: vec![] })
}

fn print_dot(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs, result) = (data.operands.clone(), data.attrs.clone(), data.results[0]);
    p.write(" ");
    p.values(&ops);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(ops[0]);
    p.write(", ");
    p.value_type(ops[1]);
    p.write(" -> ");
    p.value_type(result);
}

fn parse_dot_scaled(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let a = p.parse_operand()?;
    p.expect_keyword("scale")?;
    let sa = p.parse_operand()?;
    p.expect(",")?;
    let b = p.parse_operand()?;
    p.expect_keyword("scale")?;
    let sb = p.parse_operand()?;
    p.expect(",")?;
    let acc = p.parse_operand()?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let types = p.parse_comma_separated(Parser::parse_type)?;
    p.expect("->")?;
    let c_ty = p.parse_type()?;
    if types.len() != 4 {
        return p.error(format!("'tile.dot_scaled' expects 4 operand types (A, A scales, B, B scales), found {}", types.len()));
    }
    let operands = vec![
        p.resolve(&a, &types[0])?,
        p.resolve(&sa, &types[1])?,
        p.resolve(&b, &types[2])?,
        p.resolve(&sb, &types[3])?,
        p.resolve(&acc, &c_ty)?,
    ];
    Ok(ParsedOp { operands, result_types: vec![c_ty], attrs, regions: vec![] })
}

fn print_dot_scaled(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (ops, attrs, result) = (data.operands.clone(), data.attrs.clone(), data.results[0]);
    p.write(" ");
    p.value(ops[0]);
    p.write(" scale ");
    p.value(ops[1]);
    p.write(", ");
    p.value(ops[2]);
    p.write(" scale ");
    p.value(ops[3]);
    p.write(", ");
    p.value(ops[4]);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    for (i, &v) in ops[..4].iter().enumerate() {
        if i > 0 {
            p.write(", ");
        }
        p.value_type(v);
    }
    p.write(" -> ");
    p.value_type(result);
}

fn tile_of<'a>(body: &'a Body, v: crate::ir::Value, what: &str) -> Result<&'a TileType, String> {
    match body.value_type(v) {
        Type::Tile(t) if t.shape.len() == 2 => Ok(t),
        Type::Tile(t) => Err(format!("{what} must be a rank-2 tile, found rank {}", t.shape.len())),
        _ => Err(format!("{what} must be a tile")),
    }
}

/// The (M, N, K) of a dot after checking that A, B and C agree; element
/// types are checked by the callers.
fn check_dot_shapes(body: &Body, op: Op, a: &TileType, b: &TileType, c: &TileType) -> Result<(i64, i64, i64), String> {
    let attrs = &body.ops[op].attrs;
    let (m, ka) = if attrs.has("transpose_a") { (a.shape[1], a.shape[0]) } else { (a.shape[0], a.shape[1]) };
    let (kb, n) = if attrs.has("transpose_b") { (b.shape[1], b.shape[0]) } else { (b.shape[0], b.shape[1]) };
    if ka != kb {
        return Err(format!(
            "K of A ({ka}) does not match K of B ({kb}){}",
            if attrs.has("transpose_b") { "" } else { "; for C = A * B^T with B stored N x K, add {transpose_b}" }
        ));
    }
    if c.shape != [m, n] {
        return Err(format!("accumulator shape {}x{} does not match the product's {m}x{n}", c.shape[0], c.shape[1]));
    }
    let result = body.value_type(body.ops[op].results[0]);
    if result.as_tile().map(|r| (&r.shape, r.elem)) != Some((&c.shape, c.elem)) {
        return Err("result must have the accumulator's shape and element type".into());
    }
    Ok((m, n, ka))
}

fn verify_dot(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 3, 1)?;
    let ops = &body.ops[op].operands;
    let (a, b, c) = (tile_of(body, ops[0], "A")?, tile_of(body, ops[1], "B")?, tile_of(body, ops[2], "the accumulator")?);
    if a.elem != b.elem {
        return Err(format!("A and B must have one element type, found '{}' and '{}'", a.elem.mnemonic(), b.elem.mnemonic()));
    }
    let acc_ok = match a.elem {
        ElemType::BF16 | ElemType::F8E4M3FN => c.elem == ElemType::F32,
        ElemType::F16 => matches!(c.elem, ElemType::F32 | ElemType::F16),
        other => return Err(format!("operands must be f16, bf16 or f8E4M3FN, found '{}'", other.mnemonic())),
    };
    if !acc_ok {
        return Err(format!("'{}' operands cannot accumulate in '{}'", a.elem.mnemonic(), c.elem.mnemonic()));
    }
    check_dot_shapes(body, op, a, b, c).map(|_| ())
}

fn verify_dot_scaled(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 5, 1)?;
    let ops = &body.ops[op].operands;
    let a = tile_of(body, ops[0], "A")?;
    let sa = tile_of(body, ops[1], "A's scales")?;
    let b = tile_of(body, ops[2], "B")?;
    let sb = tile_of(body, ops[3], "B's scales")?;
    let c = tile_of(body, ops[4], "the accumulator")?;
    if a.elem != ElemType::F8E4M3FN || b.elem != ElemType::F8E4M3FN {
        return Err(format!("A and B must be 'f8E4M3FN', found '{}' and '{}'", a.elem.mnemonic(), b.elem.mnemonic()));
    }
    if sa.elem != ElemType::F32 || sb.elem != ElemType::F32 {
        return Err("scales must be 'f32'".into());
    }
    if c.elem != ElemType::F32 {
        return Err("the accumulator must be 'f32'".into());
    }
    let (m, n, k) = check_dot_shapes(body, op, a, b, c)?;
    if k % SCALE_BLOCK_K != 0 {
        return Err(format!("K ({k}) must be a multiple of the {SCALE_BLOCK_K}-element scale block"));
    }
    let k_blocks = k / SCALE_BLOCK_K;
    if sa.shape != [m, k_blocks] {
        return Err(format!(
            "A's scales must be {m}x{k_blocks} (one per row and {SCALE_BLOCK_K} K elements), found {}x{}",
            sa.shape[0], sa.shape[1]
        ));
    }
    let n_blocks = (n + SCALE_BLOCK_N - 1) / SCALE_BLOCK_N;
    if sb.shape != [n_blocks, k_blocks] {
        return Err(format!(
            "B's scales must be {n_blocks}x{k_blocks} (one per {SCALE_BLOCK_N}x{SCALE_BLOCK_K} block), found {}x{}",
            sb.shape[0], sb.shape[1]
        ));
    }
    Ok(())
}

fn verify_convert_layout(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 1, 1)?;
    let data = &body.ops[op];
    let from = tile_of(body, data.operands[0], "the input")?;
    let to = tile_of(body, data.results[0], "the result")?;
    if from.shape != to.shape || from.elem != to.elem {
        return Err("input and result must differ only in layout".into());
    }
    Ok(())
}
