//! `tile.reduce` on a register tile with a `#tile.mma` layout: each row
//! reduced over groups of columns, every element given its group's result.
//!
//! A thread holds two rows of each m64 block (`16 w + g` and 8 below) and,
//! of every 8-column group, the pair at `2 q`; the four threads of a quad
//! (`q = 0..3`) hold the rest of the same rows. So a group of a multiple of
//! 8 columns is reduced in two steps: each thread folds the values it holds
//! of the group, then two butterfly shuffles (lanes `^ 1`, `^ 2`) combine
//! the quad's four partial results, which every thread of the quad then
//! holds. No warp holds another's rows, so no shared memory is needed. The
//! operand is read position by position ([`Values::pair`]), so an
//! element-wise expression feeding the reduction is never held as a tile.

use super::elementwise::Values;
use super::emitter::Emitter;
use super::fragment::{Frag, FragGeom};
use tilec_dialects::ElemType;

/// How a group's values combine (`tile.reduce`'s `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Max,
    Min,
    Add,
}

impl Kind {
    /// The kind named by `tile.reduce`'s keyword.
    pub fn of_word(word: &str) -> Option<Kind> {
        match word {
            "max" => Some(Kind::Max),
            "min" => Some(Kind::Min),
            "add" => Some(Kind::Add),
            _ => None,
        }
    }

    /// The f32 `arith` op combining two values: NaN-propagating max and min,
    /// as `tile.maxf` and `tile.minf` lower.
    fn op(self) -> &'static str {
        match self {
            Kind::Max => "arith.maximumf",
            Kind::Min => "arith.minimumf",
            Kind::Add => "arith.addf",
        }
    }
}

/// The reduction of `values` (f32) over groups of `group` columns in each
/// row, as a fragment of `values`' geometry. `group` is a multiple of 8
/// dividing the tile's columns (`tile.reduce`'s verifier).
pub(crate) fn reduce_groups(em: &mut Emitter, values: &Values<'_>, kind: Kind, group: i64) -> Frag {
    let geom: FragGeom = values.geom().clone();
    let groups = (geom.cols / group) as usize;
    let group_of = |nb: i64, j: i64| ((nb * geom.instr_n + 8 * j) / group) as usize;
    let ty = em.struct_type(ElemType::F32, geom.chunk_len());
    let mut chunks = Vec::with_capacity(geom.chunks());
    for r in 0..geom.m_blocks {
        // result[half][group]: the row `half` of the thread's pair of rows.
        let mut result: [Vec<Option<String>>; 2] = [vec![None; groups], vec![None; groups]];
        for nb in 0..geom.n_blocks {
            let chunk = (r * geom.n_blocks + nb) as usize;
            for j in 0..geom.instr_n / 8 {
                for (half, partial) in result.iter_mut().enumerate() {
                    let [v0, v1] = values.pair(em, chunk, 4 * j as usize + 2 * half);
                    let pair = em.binop("red", kind.op(), &v0, &v1, "f32");
                    let slot = &mut partial[group_of(nb, j)];
                    *slot = Some(match slot.take() {
                        None => pair,
                        Some(acc) => em.binop("red", kind.op(), &acc, &pair, "f32"),
                    });
                }
            }
        }
        let reduced: Vec<Vec<String>> = result
            .into_iter()
            .map(|partials| partials.into_iter().map(|p| quad_all_reduce(em, kind, &p.expect("every group holds columns"))).collect())
            .collect();
        for nb in 0..geom.n_blocks {
            let mut s = em.assign("undef", format!("llvm.mlir.undef : {ty}"));
            for i in 0..geom.chunk_len() {
                let (half, j) = ((i / 2) % 2, (i / 4) as i64);
                s = em.assign("red", format!("llvm.insertvalue {}, {s}[{i}] : {ty}", reduced[half][group_of(nb, j)]));
            }
            chunks.push(s);
        }
    }
    Frag { geom, elem: ElemType::F32, chunks }
}

/// `x` combined over the four lanes of the thread's quad (lanes `4 g` to
/// `4 g + 3`, which hold the same rows), in every one of them.
fn quad_all_reduce(em: &mut Emitter, kind: Kind, x: &str) -> String {
    let all_lanes = em.i32(-1);
    let clamp = em.i32(31);
    let mut v = x.to_string();
    for distance in [1, 2] {
        let d = em.i32(distance);
        let other = em.assign("red_lane", format!("nvvm.shfl.sync bfly {all_lanes}, {v}, {d}, {clamp} : f32 -> f32"));
        v = em.binop("red", kind.op(), &v, &other, "f32");
    }
    v
}
