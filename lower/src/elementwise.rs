//! Element-wise ops on register tiles, evaluated value by value.
//!
//! The lowering meets a tile's element-wise ops one at a time, but applying
//! each to the whole tile before the next keeps every intermediate tile
//! live at once: a bias and a GELU on a 64x256 warpgroup tile held the
//! accumulator, the bias and two intermediates (over 400 values a thread)
//! and spilled. So an element-wise op builds an [`Expr`] instead, and the
//! op that needs the tile itself (a store, a loop's yield) evaluates the
//! whole expression at one value position after another: the accumulator
//! and a few scalars are live, whatever the epilogue's length. A tile
//! constant stays a scalar constant in the expressions that read it; only
//! where a tile of it is needed (an accumulator's initial value) is it
//! made a fragment ([`fragment::splat`]).

use super::emitter::{mlir_type, Emitter};
use super::fragment::{self, Frag, FragGeom, GlobalTile};
use super::math;
use std::collections::HashMap;
use std::rc::Rc;
use tilec_dialects::registry::Opcode;
use tilec_dialects::ElemType;

/// An element-wise expression over register tiles of one geometry.
#[derive(Clone, Debug)]
pub(crate) enum Expr {
    /// A lowered fragment.
    Frag(Frag),
    /// A tile in global memory, each value read where it is needed.
    Global(GlobalTile),
    /// A constant at every position: `literal` spelled for `elem`, and its
    /// f32 bit pattern (`fragment::splat` takes both).
    Splat { literal: String, elem: ElemType, is_zero: bool, bits: u32 },
    /// A float function of one value (`math::unary`).
    Unary { opcode: Opcode, x: Rc<Expr>, elem: ElemType },
    /// An `arith` op of two values of `elem`.
    Binary { op: &'static str, lhs: Rc<Expr>, rhs: Rc<Expr>, elem: ElemType },
    /// An `arith` conversion from `from` to `to`.
    Cast { op: &'static str, x: Rc<Expr>, from: ElemType, to: ElemType },
}

impl Expr {
    /// The element type of the expression's values.
    pub fn elem(&self) -> ElemType {
        match self {
            Expr::Frag(f) => f.elem,
            Expr::Global(g) => g.elem,
            Expr::Splat { elem, .. } | Expr::Unary { elem, .. } | Expr::Binary { elem, .. } => *elem,
            Expr::Cast { to, .. } => *to,
        }
    }

    /// Appends the fragments the expression reads to `out`.
    fn frags<'e>(&'e self, out: &mut Vec<&'e Frag>) {
        match self {
            Expr::Frag(f) => out.push(f),
            Expr::Global(_) | Expr::Splat { .. } => {}
            Expr::Unary { x, .. } | Expr::Cast { x, .. } => x.frags(out),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.frags(out);
                rhs.frags(out);
            }
        }
    }
}

/// The fragment of `expr` over `geom`: a fragment as it is, a constant as
/// [`fragment::splat`] makes it, anything else evaluated position by
/// position, each position's chain of ops before the next position's.
pub(crate) fn evaluate(em: &mut Emitter, geom: &FragGeom, expr: &Rc<Expr>) -> Frag {
    match &**expr {
        Expr::Frag(f) => return f.clone(),
        Expr::Splat { literal, elem, is_zero, bits } => return fragment::splat(em, geom, *elem, literal, *is_zero, *bits),
        _ => {}
    }
    let elem = expr.elem();
    let ty = em.struct_type(elem, geom.chunk_len());
    let mut chunks = Vec::with_capacity(geom.chunks());
    for c in 0..geom.chunks() {
        let mut s = em.assign("undef", format!("llvm.mlir.undef : {ty}"));
        let mut pairs = Pairs::new();
        for i in 0..geom.chunk_len() {
            let v = value_at(em, expr, c, i, &mut HashMap::new(), &mut pairs);
            s = em.assign("frag", format!("llvm.insertvalue {v}, {s}[{i}] : {ty}"));
        }
        chunks.push(s);
    }
    Frag { geom: geom.clone(), elem, chunks }
}

/// A register tile's values where a store reads them: a fragment's, or an
/// expression's evaluated at each position as the store reaches it, so
/// that no evaluated tile is held whole before it is stored.
pub(crate) enum Values<'a> {
    /// A lowered fragment.
    Frag(&'a Frag),
    /// An expression over fragments of `geom`.
    Expr { expr: &'a Rc<Expr>, geom: &'a FragGeom },
}

impl Values<'_> {
    /// The geometry of the tile.
    pub fn geom(&self) -> &FragGeom {
        match self {
            Values::Frag(f) => &f.geom,
            Values::Expr { geom, .. } => geom,
        }
    }

    /// The element type of the tile.
    pub fn elem(&self) -> ElemType {
        match self {
            Values::Frag(f) => f.elem,
            Values::Expr { expr, .. } => expr.elem(),
        }
    }

    /// The fragments the values are read from.
    pub fn frags(&self) -> impl Iterator<Item = &Frag> {
        let mut out = Vec::new();
        match self {
            Values::Frag(f) => out.push(*f),
            Values::Expr { expr, .. } => expr.frags(&mut out),
        }
        out.into_iter()
    }

    /// Values `i` and `i + 1` of chunk `c` (`i` even: a column pair).
    pub fn pair(&self, em: &mut Emitter, c: usize, i: usize) -> [String; 2] {
        match self {
            Values::Frag(f) => {
                let ty = f.chunk_type(em);
                [i, i + 1].map(|k| em.assign("v", format!("llvm.extractvalue {}[{k}] : {ty}", f.chunks[c])))
            }
            Values::Expr { expr, .. } => {
                let mut pairs = Pairs::new();
                if let Expr::Cast { x, to, .. } = &***expr {
                    if is_f8(*to) {
                        // One conversion for the pair.
                        let [lo, hi] = [i, i + 1].map(|k| value_at(em, x, c, k, &mut HashMap::new(), &mut pairs));
                        return math::to_f8_pair(em, &lo, &hi, *to);
                    }
                }
                [i, i + 1].map(|k| value_at(em, expr, c, k, &mut HashMap::new(), &mut pairs))
            }
        }
    }
}

/// An 8-bit float, which registers hold as its `i8` code.
fn is_f8(elem: ElemType) -> bool {
    elem.is_float() && elem.bits() == 8
}

/// The column pairs of global tiles already read while evaluating one
/// position or pair of positions: (tile, chunk, pair) to the loaded vector.
type Pairs = HashMap<(*const Expr, usize, usize), String>;

/// `expr`'s value at value `i` of chunk `c`; `seen` holds the values of the
/// sub-expressions already evaluated at this position (an expression may
/// read one value twice, as `x * x`).
fn value_at(em: &mut Emitter, expr: &Rc<Expr>, c: usize, i: usize, seen: &mut HashMap<*const Expr, String>, pairs: &mut Pairs) -> String {
    if let Some(v) = seen.get(&Rc::as_ptr(expr)) {
        return v.clone();
    }
    let v = match &**expr {
        Expr::Frag(f) => {
            let ty = f.chunk_type(em);
            em.assign("e", format!("llvm.extractvalue {}[{i}] : {ty}", f.chunks[c]))
        }
        Expr::Global(g) => {
            let key = (Rc::as_ptr(expr), c, i / 2);
            let pair = match pairs.get(&key) {
                Some(p) => p.clone(),
                None => {
                    let p = g.pair(em, c, i);
                    pairs.insert(key, p.clone());
                    p
                }
            };
            let lane = em.i32((i % 2) as i64);
            em.assign("e", format!("llvm.extractelement {pair}[{lane} : i32] : vector<2x{}>", mlir_type(g.elem)))
        }
        Expr::Splat { literal, elem, .. } => em.assign("k", format!("arith.constant {literal} : {}", mlir_type(*elem))),
        Expr::Unary { opcode, x, elem } => {
            let x = value_at(em, x, c, i, seen, pairs);
            math::unary(em, *opcode, &x, *elem)
        }
        Expr::Binary { op, lhs, rhs, elem } => {
            let a = value_at(em, lhs, c, i, seen, pairs);
            let b = value_at(em, rhs, c, i, seen, pairs);
            // A product feeding a sum may become one fused multiply-add,
            // as nvcc's default (--fmad=true) allows: an epilogue's time is
            // its instruction count.
            let contract = if matches!(*op, "arith.addf" | "arith.subf" | "arith.mulf") { " fastmath<contract>" } else { "" };
            em.assign("e", format!("{op} {a}, {b}{contract} : {}", mlir_type(*elem)))
        }
        Expr::Cast { x, to, .. } if is_f8(*to) => {
            let x = value_at(em, x, c, i, seen, pairs);
            let zero = em.assign("k", "arith.constant 0.0 : f32");
            let [code, _] = math::to_f8_pair(em, &x, &zero, *to);
            code
        }
        Expr::Cast { op, x, from, to } => {
            let x = value_at(em, x, c, i, seen, pairs);
            em.assign("e", format!("{op} {x} : {} to {}", mlir_type(*from), mlir_type(*to)))
        }
    };
    seen.insert(Rc::as_ptr(expr), v.clone());
    v
}
