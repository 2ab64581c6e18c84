//! Constants, index and element-wise arithmetic, casts, and the grid queries
//! (`block_id`, `num_blocks`, `dim`).

use super::{Cast, Cmpi, Constant, Dim, FloatBinary, FloatUnary, IntBinary, Muli, Select};
use crate::diagnostic::Diagnostic;
use crate::ir::{Attribute, Attributes, Body, ElemType, Op, Type, Value};
use crate::registry::{Folded, Opcode, ParsedOp};
use crate::syntax::{Parser, Printer};

// ---- tile.constant ---------------------------------------------------------

// `%c = tile.constant 128 : index`, `%z = tile.constant 0.0 : tensor<128x128xf32>`
// (a tile constant is a splat): the literal's syntax depends on the type
// after it, which an assembly format cannot say.
pub(super) fn parse_constant(p: &mut Parser<'_>) -> Result<ParsedOp, Diagnostic> {
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

pub(super) fn print_constant(p: &mut Printer<'_>, op: Op) {
    let data = &p.body.ops[op];
    let literal = match data.attrs.get("value") {
        Some(Attribute::Int(v, ElemType::I1)) => (*v != 0).to_string(),
        Some(Attribute::Int(v, _)) => v.to_string(),
        Some(Attribute::Float(v, _)) => crate::syntax::float_to_string(*v),
        _ => "<<missing value>>".to_string(),
    };
    let Some(constant) = super::Constant::of(p.body, op) else {
        p.write(" <<malformed>>");
        return;
    };
    p.write(" ");
    p.write(&literal);
    p.write(" : ");
    p.value_type(constant.result(p.body));
}

pub(super) fn verify_constant(body: &Body, op: Op) -> Result<(), String> {
    let data = &body.ops[op];
    let ty = body.value_type(super::Constant::of(body, op).ok_or("expects one result")?.result(body));
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

/// The type the operands and result of a binary op share (its definition
/// says they share one) must be a scalar or a tile of the right kind.
fn verify_binary(ty: &Type, want_float: bool) -> Result<(), String> {
    match ty {
        Type::Ref(_) => Err("operands must be scalars or tiles".into()),
        _ if want_float && !ty.elem().is_float() => Err(format!("requires float operands, found '{}'", ty.elem().mnemonic())),
        _ if !want_float && !ty.elem().is_integer() => {
            Err(format!("requires integer or index operands, found '{}'", ty.elem().mnemonic()))
        }
        _ => Ok(()),
    }
}

pub(super) fn verify_int_binary(body: &Body, op: Op) -> Result<(), String> {
    let binary = IntBinary::of(body, op).ok_or("malformed integer binary op")?;
    verify_binary(body.value_type(binary.result(body)), false)
}

pub(super) fn verify_float_binary(body: &Body, op: Op) -> Result<(), String> {
    let binary = FloatBinary::of(body, op).ok_or("malformed float binary op")?;
    verify_binary(body.value_type(binary.result(body)), true)
}

/// A float function of one value: negation and absolute value of any float
/// type; the transcendental functions (`exp`, `tanh`, `erf`, `rsqrt`) of
/// f32 only, which their approximations are made for.
pub(super) fn verify_float_unary(body: &Body, op: Op) -> Result<(), String> {
    let unary = FloatUnary::of(body, op).ok_or("malformed float unary op")?;
    let ty = body.value_type(unary.result(body));
    verify_binary(ty, true)?;
    let any_float = matches!(body.opcode(op), Opcode::TileNegf | Opcode::TileAbsf);
    if !any_float && ty.elem() != ElemType::F32 {
        return Err(format!("takes f32 (extend narrower floats with 'tile.extf' first), found '{}'", ty.elem().mnemonic()));
    }
    Ok(())
}

/// Evaluates an integer binary op on constants; `None` where the result is
/// undefined (division by zero, overflow) or the op is not an integer op.
pub fn binary_int_fold(opcode: Opcode, a: i64, b: i64) -> Option<i64> {
    match opcode {
        Opcode::TileAddi => a.checked_add(b),
        Opcode::TileSubi => a.checked_sub(b),
        Opcode::TileMuli => a.checked_mul(b),
        Opcode::TileDivsi => a.checked_div(b),
        Opcode::TileRemsi => a.checked_rem(b),
        Opcode::TileCeildivsi => {
            let q = a.checked_div(b)?;
            Some(if (a % b != 0) && ((a < 0) == (b < 0)) { q + 1 } else { q })
        }
        Opcode::TileMinsi => Some(a.min(b)),
        Opcode::TileMaxsi => Some(a.max(b)),
        _ => None,
    }
}

/// The greatest common divisor of `a` and `b` (of their magnitudes): the
/// largest number both are known multiples of, so 0 (a multiple of
/// everything) leaves the other.
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Folds integer arithmetic on scalars: both operands constant, or an
/// identity (`x + 0`, `x - 0`, `x * 1`, `x / 1`, `x * 0`).
pub(super) fn fold_int_binary(body: &Body, op: Op, consts: &[Option<Attribute>]) -> Option<Folded> {
    let binary = IntBinary::of(body, op)?;
    let Type::Scalar(elem) = body.value_type(binary.result(body)) else { return None };
    let int = |i: usize| consts[i].as_ref().and_then(Attribute::as_int);
    let opcode = binary.opcode(body);
    if let (Some(a), Some(b)) = (int(0), int(1)) {
        return binary_int_fold(opcode, a, b).map(|v| Folded::Constant(Attribute::Int(v, *elem)));
    }
    let (lhs, rhs) = (binary.lhs(body), binary.rhs(body));
    use Opcode::{TileAddi, TileCeildivsi, TileDivsi, TileMuli, TileRemsi, TileSubi};
    match (opcode, int(0), int(1)) {
        (TileAddi, _, Some(0)) | (TileSubi, _, Some(0)) => Some(Folded::Value(lhs)),
        (TileAddi, Some(0), _) => Some(Folded::Value(rhs)),
        (TileMuli | TileDivsi | TileCeildivsi, _, Some(1)) => Some(Folded::Value(lhs)),
        (TileMuli, Some(1), _) => Some(Folded::Value(rhs)),
        (TileMuli, Some(0), _) | (TileMuli, _, Some(0)) => Some(Folded::Constant(Attribute::Int(0, *elem))),
        (TileRemsi, _, Some(d)) if d > 0 && d & (d - 1) == 0 && product_with_multiple_of(body, lhs, d) => Some(Folded::Constant(Attribute::Int(0, *elem))),
        (TileDivsi, _, Some(d)) if d > 0 => quotient_of_product(body, lhs, d),
        _ => None,
    }
}

/// The integer `v` holds when a `tile.constant` defines it.
pub fn constant_int(body: &Body, v: Value) -> Option<i64> {
    let constant = Constant::of(body, body.defining_op(v)?)?;
    body.ops[constant.op()].attrs.get("value").and_then(Attribute::as_int)
}

/// `(x * c) / d` as `x` where c is d: a tile's first row over the scale
/// block that the tile's height equals (`(pid * 128) / 128`). Element
/// coordinates fit the kernels' 32-bit index arithmetic, so the product
/// does not wrap. Other multiples are left to the lowering.
fn quotient_of_product(body: &Body, v: Value, d: i64) -> Option<Folded> {
    let product = Muli::of(body, body.defining_op(v)?)?;
    match (constant_int(body, product.lhs(body)), constant_int(body, product.rhs(body))) {
        (_, Some(c)) if c == d => Some(Folded::Value(product.lhs(body))),
        (Some(c), _) if c == d => Some(Folded::Value(product.rhs(body))),
        _ => None,
    }
}

/// Whether `v` is a `tile.muli` one of whose operands is a constant
/// multiple of `d` (a tile's first row times a tile height that a scale
/// block divides: `(pid * 256) % 128` is 0). The fold above asks for a
/// power of two `d`, which divides the product even where it wraps.
fn product_with_multiple_of(body: &Body, v: Value, d: i64) -> bool {
    let Some(product) = body.defining_op(v).and_then(|def| Muli::of(body, def)) else { return false };
    [product.lhs(body), product.rhs(body)].into_iter().any(|factor| constant_int(body, factor).is_some_and(|c| c % d == 0))
}

// ---- casts -----------------------------------------------------------------

/// The element types of a cast's input and result, after checking that both
/// are scalars or both tiles of one shape.
fn cast_elems(body: &Body, op: Op) -> Result<(ElemType, ElemType), String> {
    let cast = Cast::of(body, op).ok_or("malformed cast")?;
    let (from, to) = (body.value_type(cast.input(body)), body.value_type(cast.result(body)));
    match (from, to) {
        (Type::Scalar(a), Type::Scalar(b)) => Ok((*a, *b)),
        (Type::Tile(a), Type::Tile(b)) if a.shape == b.shape => Ok((a.elem, b.elem)),
        (Type::Tile(_), Type::Tile(_)) => Err("input and result tiles must have the same shape".into()),
        _ => Err("input and result must both be scalars or both be tiles".into()),
    }
}

pub(super) fn verify_truncf(body: &Body, op: Op) -> Result<(), String> {
    let (from, to) = cast_elems(body, op)?;
    if !(from.is_float() && to.is_float() && to.bits() < from.bits()) {
        return Err(format!("requires a float narrowed to a smaller float, found '{}' to '{}'", from.mnemonic(), to.mnemonic()));
    }
    Ok(())
}

pub(super) fn verify_extf(body: &Body, op: Op) -> Result<(), String> {
    let (from, to) = cast_elems(body, op)?;
    if !(from.is_float() && to.is_float() && to.bits() > from.bits()) {
        return Err(format!("requires a float widened to a larger float, found '{}' to '{}'", from.mnemonic(), to.mnemonic()));
    }
    Ok(())
}

pub(super) fn verify_index_cast(body: &Body, op: Op) -> Result<(), String> {
    let (from, to) = cast_elems(body, op)?;
    let ok = |a: ElemType, b: ElemType| a == ElemType::Index && matches!(b, ElemType::I32 | ElemType::I64);
    if !(ok(from, to) || ok(to, from)) {
        return Err(format!("casts between index and i32/i64 only, found '{}' to '{}'", from.mnemonic(), to.mnemonic()));
    }
    Ok(())
}

// ---- grid queries ----------------------------------------------------------

const DIM_NAMES: [&str; 3] = ["x", "y", "z"];

/// `x`, `y` or `z` for grid dimension 0, 1 or 2.
pub fn dim_name(dim: i64) -> Option<&'static str> {
    usize::try_from(dim).ok().and_then(|d| DIM_NAMES.get(d).copied())
}

/// `tile.dim` names a dimension of a global tensor.
pub(super) fn verify_dim(body: &Body, op: Op) -> Result<(), String> {
    let dim = Dim::of(body, op).ok_or("malformed 'tile.dim'")?;
    let Some(r) = body.value_type(dim.tensor(body)).as_ref_type() else {
        return Err("operand must be a global tensor reference".into());
    };
    let index = dim.index(body);
    if index < 0 || index as usize >= r.shape.len() {
        return Err(format!("dimension {index} is out of range for a rank-{} tensor", r.shape.len()));
    }
    Ok(())
}

// ---- comparison --------------------------------------------------------------

/// `tile.cmpi` compares integer or index scalars (MLIR's `arith.cmpi`).
pub(super) fn verify_cmpi(body: &Body, op: Op) -> Result<(), String> {
    let cmpi = Cmpi::of(body, op).ok_or("malformed 'tile.cmpi'")?;
    let ty = body.value_type(cmpi.lhs(body));
    if body.value_type(cmpi.rhs(body)) != ty || !matches!(ty, Type::Scalar(e) if e.is_integer()) {
        return Err("compares two integer or index scalars of one type".into());
    }
    Ok(())
}

/// `tile.select` chooses between two integer or index scalars (MLIR's
/// `arith.select` on scalars).
pub(super) fn verify_select(body: &Body, op: Op) -> Result<(), String> {
    let select = Select::of(body, op).ok_or("malformed 'tile.select'")?;
    if !matches!(body.value_type(select.result(body)), Type::Scalar(e) if e.is_integer()) {
        return Err("chooses between two integer or index scalars".into());
    }
    Ok(())
}

/// A select on a constant condition is the value it chooses.
pub(super) fn fold_select(body: &Body, op: Op, consts: &[Option<Attribute>]) -> Option<Folded> {
    let select = Select::of(body, op)?;
    let condition = consts[0].as_ref()?.as_int()?;
    Some(Folded::Value(if condition != 0 { select.true_value(body) } else { select.false_value(body) }))
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

pub(super) fn fold_cmpi(body: &Body, op: Op, consts: &[Option<Attribute>]) -> Option<Folded> {
    let (a, b) = (consts[0].as_ref()?.as_int()?, consts[1].as_ref()?.as_int()?);
    let predicate = Cmpi::of(body, op)?.predicate(body);
    compare(predicate, a, b).map(|r| Folded::Constant(Attribute::Int(i64::from(r), ElemType::I1)))
}

#[cfg(test)]
mod tests {
    use super::gcd;

    #[test]
    fn gcd_treats_zero_as_a_multiple_of_everything() {
        assert_eq!(gcd(0, 64), 64);
        assert_eq!(gcd(64, 0), 64);
        assert_eq!(gcd(64, 24), 8);
        assert_eq!(gcd(-176, 128), 16);
    }
}
