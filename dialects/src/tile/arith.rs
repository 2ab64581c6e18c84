//! Constants, index and element-wise arithmetic, casts, and the grid queries
//! (`block_id`, `num_blocks`, `dim`).

use crate::diagnostic::Diagnostic;
use crate::ir::{Attribute, Attributes, Body, ElemType, Op, Type};
use crate::registry::{Folded, OpDef, OpTraits, ParsedOp};
use crate::syntax::{Parser, Printer};

// ---- tile.constant ---------------------------------------------------------

/// `%c = tile.constant 128 : index`, `%z = tile.constant 0.0 : tensor<128x128xf32>`
/// (a tile constant is a splat).
pub const CONSTANT: OpDef = OpDef {
    name: "tile.constant",
    traits: OpTraits { terminator: false, pure: true, constant: true },
    parse: parse_constant,
    print: print_constant,
    verify: verify_constant,
    fold: None,
};

fn parse_constant(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let literal_loc = p.loc();
    let (tok, _) = p.next()?;
    p.expect(":")?;
    let ty = p.parse_type()?;
    let elem = ty.elem();
    let value = match tok {
        crate::syntax::Token::Int(v) if elem.is_integer() => Attribute::Int(v, elem),
        crate::syntax::Token::Int(v) => Attribute::Float(v as f64, elem),
        crate::syntax::Token::Float(v) if elem.is_float() => Attribute::Float(v, elem),
        crate::syntax::Token::Float(_) => {
            return Err(Diagnostic::error(literal_loc, format!("float literal for integer type '{}'", elem.mnemonic())))
        }
        crate::syntax::Token::Ident(k) if (k == "true" || k == "false") && elem == ElemType::I1 => {
            Attribute::Int(i64::from(k == "true"), elem)
        }
        other => return Err(Diagnostic::error(literal_loc, format!("expected a literal, found {}", other.describe()))),
    };
    let mut attrs = Attributes::new();
    attrs.set("value", value);
    Ok(ParsedOp { operands: vec![], result_types: vec![ty], attrs, regions: vec![] })
}

fn print_constant(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let literal = match data.attrs.get("value") {
        Some(Attribute::Int(v, ElemType::I1)) => (*v != 0).to_string(),
        Some(Attribute::Int(v, _)) => v.to_string(),
        Some(Attribute::Float(v, _)) => crate::syntax::float_to_string(*v),
        _ => "<<missing value>>".to_string(),
    };
    let result = data.results[0];
    p.write(" ");
    p.write(&literal);
    p.write(" : ");
    p.value_type(result);
}

fn verify_constant(body: &Body, op: Op) -> Result<(), String> {
    let data = &body.ops[op];
    expect_counts(body, op, 0, 1)?;
    let ty = body.value_type(data.results[0]);
    if matches!(ty, Type::Ref(_)) {
        return Err("result must be a scalar or a tile".into());
    }
    match data.attrs.get("value") {
        Some(Attribute::Int(_, e)) if *e == ty.elem() && e.is_integer() => Ok(()),
        Some(Attribute::Float(_, e)) if *e == ty.elem() && e.is_float() => Ok(()),
        Some(_) => Err(format!("'value' attribute does not match the result element type '{}'", ty.elem().mnemonic())),
        None => Err("requires a 'value' attribute".into()),
    }
}

// ---- binary arithmetic -----------------------------------------------------

/// `%r = tile.addi %a, %b : index`: both operands and the result share one
/// type, a scalar or a tile.
fn parse_binary(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let lhs = p.parse_operand()?;
    p.expect(",")?;
    let rhs = p.parse_operand()?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let ty = p.parse_type()?;
    let operands = vec![p.resolve(&lhs, &ty)?, p.resolve(&rhs, &ty)?];
    Ok(ParsedOp { operands, result_types: vec![ty], attrs, regions: vec![] })
}

fn print_binary(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (operands, attrs, result) = (data.operands.clone(), data.attrs.clone(), data.results[0]);
    p.write(" ");
    p.values(&operands);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(result);
}

fn verify_binary(body: &Body, op: Op, want_float: bool) -> Result<(), String> {
    expect_counts(body, op, 2, 1)?;
    let data = &body.ops[op];
    let ty = body.value_type(data.results[0]);
    for &v in &data.operands {
        if body.value_type(v) != ty {
            return Err("operands and result must have the same type".into());
        }
    }
    match ty {
        Type::Ref(_) => Err("operands must be scalars or tiles".into()),
        _ if want_float && !ty.elem().is_float() => Err(format!("requires float operands, found '{}'", ty.elem().mnemonic())),
        _ if !want_float && !ty.elem().is_integer() => {
            Err(format!("requires integer or index operands, found '{}'", ty.elem().mnemonic()))
        }
        _ => Ok(()),
    }
}

fn verify_int_binary(body: &Body, op: Op) -> Result<(), String> {
    verify_binary(body, op, false)
}

fn verify_float_binary(body: &Body, op: Op) -> Result<(), String> {
    verify_binary(body, op, true)
}

/// Evaluates an integer binary op on constants; `None` where the result is
/// undefined (division by zero, overflow) or the op is not an integer op.
pub fn binary_int_fold(name: &str, a: i64, b: i64) -> Option<i64> {
    match name {
        "tile.addi" => a.checked_add(b),
        "tile.subi" => a.checked_sub(b),
        "tile.muli" => a.checked_mul(b),
        "tile.divsi" => a.checked_div(b),
        "tile.remsi" => a.checked_rem(b),
        "tile.ceildivsi" => {
            let q = a.checked_div(b)?;
            Some(if (a % b != 0) && ((a < 0) == (b < 0)) { q + 1 } else { q })
        }
        "tile.minsi" => Some(a.min(b)),
        "tile.maxsi" => Some(a.max(b)),
        _ => None,
    }
}

/// Folds integer arithmetic on scalars: both operands constant, or an
/// identity (`x + 0`, `x - 0`, `x * 1`, `x / 1`, `x * 0`).
fn fold_int_binary(body: &Body, op: Op, consts: &[Option<Attribute>]) -> Option<Folded> {
    let data = &body.ops[op];
    let ty = body.value_type(data.results[0]);
    let Type::Scalar(elem) = ty else { return None };
    let int = |i: usize| consts[i].as_ref().and_then(Attribute::as_int);
    let name = data.def.name;
    if let (Some(a), Some(b)) = (int(0), int(1)) {
        return binary_int_fold(name, a, b).map(|v| Folded::Constant(Attribute::Int(v, *elem)));
    }
    let (lhs, rhs) = (data.operands[0], data.operands[1]);
    match (name, int(0), int(1)) {
        ("tile.addi", _, Some(0)) | ("tile.subi", _, Some(0)) => Some(Folded::Value(lhs)),
        ("tile.addi", Some(0), _) => Some(Folded::Value(rhs)),
        ("tile.muli" | "tile.divsi" | "tile.ceildivsi", _, Some(1)) => Some(Folded::Value(lhs)),
        ("tile.muli", Some(1), _) => Some(Folded::Value(rhs)),
        ("tile.muli", Some(0), _) | ("tile.muli", _, Some(0)) => Some(Folded::Constant(Attribute::Int(0, *elem))),
        _ => None,
    }
}

macro_rules! binary_op {
    ($konst:ident, $name:literal, $verify:ident, $fold:expr) => {
        pub const $konst: OpDef = OpDef {
            name: $name,
            traits: OpTraits::PURE,
            parse: parse_binary,
            print: print_binary,
            verify: $verify,
            fold: $fold,
        };
    };
}

binary_op!(ADDI, "tile.addi", verify_int_binary, Some(fold_int_binary));
binary_op!(SUBI, "tile.subi", verify_int_binary, Some(fold_int_binary));
binary_op!(MULI, "tile.muli", verify_int_binary, Some(fold_int_binary));
binary_op!(DIVSI, "tile.divsi", verify_int_binary, Some(fold_int_binary));
binary_op!(REMSI, "tile.remsi", verify_int_binary, Some(fold_int_binary));
binary_op!(CEILDIVSI, "tile.ceildivsi", verify_int_binary, Some(fold_int_binary));
binary_op!(MINSI, "tile.minsi", verify_int_binary, Some(fold_int_binary));
binary_op!(MAXSI, "tile.maxsi", verify_int_binary, Some(fold_int_binary));
binary_op!(ADDF, "tile.addf", verify_float_binary, None);
binary_op!(SUBF, "tile.subf", verify_float_binary, None);
binary_op!(MULF, "tile.mulf", verify_float_binary, None);
binary_op!(DIVF, "tile.divf", verify_float_binary, None);
binary_op!(MAXF, "tile.maxf", verify_float_binary, None);
binary_op!(MINF, "tile.minf", verify_float_binary, None);

// ---- casts -----------------------------------------------------------------

/// `%r = tile.truncf %x : tensor<128x128xf32> to tensor<128x128xbf16>`
pub(super) fn parse_cast(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let input = p.parse_operand()?;
    let attrs = p.parse_optional_attr_dict()?;
    p.expect(":")?;
    let from = p.parse_type()?;
    p.expect_keyword("to")?;
    let to = p.parse_type()?;
    Ok(ParsedOp { operands: vec![p.resolve(&input, &from)?], result_types: vec![to], attrs, regions: vec![] })
}

pub(super) fn print_cast(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (input, attrs, result) = (data.operands[0], data.attrs.clone(), data.results[0]);
    p.write(" ");
    p.value(input);
    p.attr_dict(&attrs, &[]);
    p.write(" : ");
    p.value_type(input);
    p.write(" to ");
    p.value_type(result);
}

/// The element types of a cast's input and result, after checking that both
/// are scalars or both tiles of one shape.
fn cast_elems(body: &Body, op: Op) -> Result<(ElemType, ElemType), String> {
    expect_counts(body, op, 1, 1)?;
    let data = &body.ops[op];
    let from = body.value_type(data.operands[0]);
    let to = body.value_type(data.results[0]);
    match (from, to) {
        (Type::Scalar(a), Type::Scalar(b)) => Ok((*a, *b)),
        (Type::Tile(a), Type::Tile(b)) if a.shape == b.shape => Ok((a.elem, b.elem)),
        (Type::Tile(_), Type::Tile(_)) => Err("input and result tiles must have the same shape".into()),
        _ => Err("input and result must both be scalars or both be tiles".into()),
    }
}

fn verify_truncf(body: &Body, op: Op) -> Result<(), String> {
    let (from, to) = cast_elems(body, op)?;
    if !(from.is_float() && to.is_float() && to.bits() < from.bits()) {
        return Err(format!("requires a float narrowed to a smaller float, found '{}' to '{}'", from.mnemonic(), to.mnemonic()));
    }
    Ok(())
}

fn verify_extf(body: &Body, op: Op) -> Result<(), String> {
    let (from, to) = cast_elems(body, op)?;
    if !(from.is_float() && to.is_float() && to.bits() > from.bits()) {
        return Err(format!("requires a float widened to a larger float, found '{}' to '{}'", from.mnemonic(), to.mnemonic()));
    }
    Ok(())
}

fn verify_index_cast(body: &Body, op: Op) -> Result<(), String> {
    let (from, to) = cast_elems(body, op)?;
    let ok = |a: ElemType, b: ElemType| a == ElemType::Index && matches!(b, ElemType::I32 | ElemType::I64);
    if !(ok(from, to) || ok(to, from)) {
        return Err(format!("casts between index and i32/i64 only, found '{}' to '{}'", from.mnemonic(), to.mnemonic()));
    }
    Ok(())
}

pub const TRUNCF: OpDef =
    OpDef { name: "tile.truncf", traits: OpTraits::PURE, parse: parse_cast, print: print_cast, verify: verify_truncf, fold: None };
pub const EXTF: OpDef =
    OpDef { name: "tile.extf", traits: OpTraits::PURE, parse: parse_cast, print: print_cast, verify: verify_extf, fold: None };
pub const INDEX_CAST: OpDef = OpDef {
    name: "tile.index_cast",
    traits: OpTraits::PURE,
    parse: parse_cast,
    print: print_cast,
    verify: verify_index_cast,
    fold: None,
};

// ---- grid queries ----------------------------------------------------------

const DIM_NAMES: [&str; 3] = ["x", "y", "z"];

/// `x`, `y` or `z` for grid dimension 0, 1 or 2.
pub fn dim_name(dim: i64) -> Option<&'static str> {
    usize::try_from(dim).ok().and_then(|d| DIM_NAMES.get(d).copied())
}

/// `%i = tile.block_id x : index`
fn parse_grid_query(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let loc = p.loc();
    let (name, _) = p.parse_keyword()?;
    let Some(dim) = DIM_NAMES.iter().position(|d| *d == name) else {
        return Err(Diagnostic::error(loc, format!("expected a grid dimension 'x', 'y' or 'z', found '{name}'")));
    };
    let mut attrs = p.parse_optional_attr_dict()?;
    attrs.set("dim", Attribute::Int(dim as i64, ElemType::I64));
    p.expect(":")?;
    let ty = p.parse_type()?;
    Ok(ParsedOp { operands: vec![], result_types: vec![ty], attrs, regions: vec![] })
}

fn print_grid_query(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (attrs, result) = (data.attrs.clone(), data.results[0]);
    let dim = attrs.get_int("dim").and_then(dim_name).unwrap_or("<<bad dim>>");
    p.write(" ");
    p.write(dim);
    p.attr_dict(&attrs, &["dim"]);
    p.write(" : ");
    p.value_type(result);
}

fn verify_grid_query(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 0, 1)?;
    let data = &body.ops[op];
    if data.attrs.get_int("dim").and_then(dim_name).is_none() {
        return Err("requires a 'dim' attribute of 0, 1 or 2".into());
    }
    if !body.value_type(data.results[0]).is_index() {
        return Err("result must be 'index'".into());
    }
    Ok(())
}

pub const BLOCK_ID: OpDef = OpDef {
    name: "tile.block_id",
    traits: OpTraits::PURE,
    parse: parse_grid_query,
    print: print_grid_query,
    verify: verify_grid_query,
    fold: None,
};
pub const NUM_BLOCKS: OpDef = OpDef {
    name: "tile.num_blocks",
    traits: OpTraits::PURE,
    parse: parse_grid_query,
    print: print_grid_query,
    verify: verify_grid_query,
    fold: None,
};

/// `%bk = tile.param BLOCK_K : index`: a config parameter's value as an
/// index, until tile-select-config replaces it with a constant.
pub const PARAM: OpDef =
    OpDef { name: "tile.param", traits: OpTraits::PURE, parse: parse_param, print: print_param, verify: verify_param, fold: None };

fn parse_param(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let (name, loc) = p.parse_keyword()?;
    if crate::ir::Param::from_name(&name).is_none() {
        let known: Vec<&str> = crate::ir::Param::ALL.iter().map(|p| p.name()).collect();
        return Err(Diagnostic::error(loc, format!("unknown parameter '{name}' (parameters: {})", known.join(", "))));
    }
    p.expect(":")?;
    let ty = p.parse_type()?;
    let mut attrs = Attributes::new();
    attrs.set("name", Attribute::String(name));
    Ok(ParsedOp { operands: vec![], result_types: vec![ty], attrs, regions: vec![] })
}

fn print_param(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (name, result) = (data.attrs.get("name").and_then(Attribute::as_str).unwrap_or("<<missing name>>").to_string(), data.results[0]);
    p.write(" ");
    p.write(&name);
    p.write(" : ");
    p.value_type(result);
}

fn verify_param(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 0, 1)?;
    let data = &body.ops[op];
    if data.attrs.get("name").and_then(Attribute::as_str).and_then(crate::ir::Param::from_name).is_none() {
        return Err("requires a 'name' attribute naming BLOCK_M, BLOCK_N or BLOCK_K".into());
    }
    if !body.value_type(data.results[0]).is_index() {
        return Err("result must be 'index'".into());
    }
    Ok(())
}

/// `%k = tile.dim %a[1] : !tile.ref<?x?xbf16>`
fn parse_dim(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let tensor = p.parse_operand()?;
    p.expect("[")?;
    let dim = p.parse_int()?;
    p.expect("]")?;
    let mut attrs = p.parse_optional_attr_dict()?;
    attrs.set("index", Attribute::Int(dim, ElemType::I64));
    p.expect(":")?;
    let ty = p.parse_type()?;
    Ok(ParsedOp { operands: vec![p.resolve(&tensor, &ty)?], result_types: vec![Type::INDEX], attrs, regions: vec![] })
}

fn print_dim(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (tensor, attrs) = (data.operands[0], data.attrs.clone());
    p.write(" ");
    p.value(tensor);
    p.write(&format!("[{}]", attrs.get_int("index").unwrap_or(-1)));
    p.attr_dict(&attrs, &["index"]);
    p.write(" : ");
    p.value_type(tensor);
}

fn verify_dim(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 1, 1)?;
    let data = &body.ops[op];
    let Some(r) = body.value_type(data.operands[0]).as_ref_type() else {
        return Err("operand must be a global tensor reference".into());
    };
    let index = data.attrs.get_int("index").ok_or("requires an 'index' attribute")?;
    if index < 0 || index as usize >= r.shape.len() {
        return Err(format!("dimension {index} is out of range for a rank-{} tensor", r.shape.len()));
    }
    if !body.value_type(data.results[0]).is_index() {
        return Err("result must be 'index'".into());
    }
    Ok(())
}

pub const DIM: OpDef =
    OpDef { name: "tile.dim", traits: OpTraits::PURE, parse: parse_dim, print: print_dim, verify: verify_dim, fold: None };

/// Checks operand and result counts, the first thing every verifier needs.
pub(crate) fn expect_counts(body: &Body, op: Op, operands: usize, results: usize) -> Result<(), String> {
    let data = &body.ops[op];
    if data.operands.len() != operands {
        return Err(format!("expects {operands} operand(s), found {}", data.operands.len()));
    }
    if data.results.len() != results {
        return Err(format!("expects {results} result(s), found {}", data.results.len()));
    }
    Ok(())
}

// ---- comparison --------------------------------------------------------------

/// Predicates of `tile.cmpi`, as MLIR's `arith.cmpi` spells them.
pub const CMPI_PREDICATES: [&str; 6] = ["eq", "ne", "slt", "sle", "sgt", "sge"];

/// `%p = tile.cmpi slt, %a, %b : index` gives an `i1`.
pub const CMPI: OpDef =
    OpDef { name: "tile.cmpi", traits: OpTraits::PURE, parse: parse_cmpi, print: print_cmpi, verify: verify_cmpi, fold: Some(fold_cmpi) };

fn parse_cmpi(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
    let loc = p.loc();
    let (predicate, _) = p.parse_keyword()?;
    if !CMPI_PREDICATES.contains(&predicate.as_str()) {
        return Err(Diagnostic::error(loc, format!("unknown predicate '{predicate}' (expected one of {})", CMPI_PREDICATES.join(", "))));
    }
    p.expect(",")?;
    let lhs = p.parse_operand()?;
    p.expect(",")?;
    let rhs = p.parse_operand()?;
    let mut attrs = p.parse_optional_attr_dict()?;
    attrs.set("predicate", Attribute::String(predicate));
    p.expect(":")?;
    let ty = p.parse_type()?;
    let operands = vec![p.resolve(&lhs, &ty)?, p.resolve(&rhs, &ty)?];
    Ok(ParsedOp { operands, result_types: vec![Type::Scalar(ElemType::I1)], attrs, regions: vec![] })
}

fn print_cmpi(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let (operands, attrs) = (data.operands.clone(), data.attrs.clone());
    p.write(" ");
    p.write(attrs.get("predicate").and_then(Attribute::as_str).unwrap_or("<<missing>>"));
    p.write(", ");
    p.values(&operands);
    p.attr_dict(&attrs, &["predicate"]);
    p.write(" : ");
    p.value_type(operands[0]);
}

fn verify_cmpi(body: &Body, op: Op) -> Result<(), String> {
    expect_counts(body, op, 2, 1)?;
    let data = &body.ops[op];
    let predicate = data.attrs.get("predicate").and_then(Attribute::as_str).ok_or("requires a 'predicate' attribute")?;
    if !CMPI_PREDICATES.contains(&predicate) {
        return Err(format!("unknown predicate '{predicate}'"));
    }
    let ty = body.value_type(data.operands[0]);
    if body.value_type(data.operands[1]) != ty || !matches!(ty, Type::Scalar(e) if e.is_integer()) {
        return Err("compares two integer or index scalars of one type".into());
    }
    if *body.value_type(data.results[0]) != Type::Scalar(ElemType::I1) {
        return Err("result must be 'i1'".into());
    }
    Ok(())
}

/// Evaluates `predicate` on two integers.
pub fn compare(predicate: &str, a: i64, b: i64) -> Option<bool> {
    Some(match predicate {
        "eq" => a == b,
        "ne" => a != b,
        "slt" => a < b,
        "sle" => a <= b,
        "sgt" => a > b,
        "sge" => a >= b,
        _ => return None,
    })
}

fn fold_cmpi(body: &Body, op: Op, consts: &[Option<Attribute>]) -> Option<Folded> {
    let (a, b) = (consts[0].as_ref()?.as_int()?, consts[1].as_ref()?.as_int()?);
    let predicate = body.ops[op].attrs.get("predicate")?.as_str()?;
    compare(predicate, a, b).map(|r| Folded::Constant(Attribute::Int(i64::from(r), ElemType::I1)))
}
