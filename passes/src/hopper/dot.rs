//! The dots the Hopper passes turn into wgmma: `tile.dot`, and
//! `tile.dot_scaled`, whose product over each 128-wide K block starts from
//! a fresh accumulator and is then promoted into the f32 result with its
//! block scales (Hopper's FP8 tensor cores accumulate with limited
//! precision, so a long K must not accumulate inside them).

use tilec_dialects::ir::{Body, Op, Value};
use tilec_dialects::nv::ScaleAccumulate;
use tilec_dialects::tile::{Dot, DotScaled};

/// A `tile.dot` or a `tile.dot_scaled`.
#[derive(Clone, Copy, Debug)]
pub enum StagedDot {
    /// A `tile.dot`.
    Plain(Dot),
    /// A `tile.dot_scaled`.
    Scaled(DotScaled),
}

impl StagedDot {
    /// `op` as a dot, if it is one.
    pub fn of(body: &Body, op: Op) -> Option<StagedDot> {
        Dot::of(body, op).map(StagedDot::Plain).or_else(|| DotScaled::of(body, op).map(StagedDot::Scaled))
    }

    /// The dot op.
    pub fn op(self) -> Op {
        match self {
            StagedDot::Plain(d) => d.op(),
            StagedDot::Scaled(d) => d.op(),
        }
    }

    /// Operand A.
    pub fn lhs(self, body: &Body) -> Value {
        match self {
            StagedDot::Plain(d) => d.lhs(body),
            StagedDot::Scaled(d) => d.lhs(body),
        }
    }

    /// Operand B.
    pub fn rhs(self, body: &Body) -> Value {
        match self {
            StagedDot::Plain(d) => d.rhs(body),
            StagedDot::Scaled(d) => d.rhs(body),
        }
    }

    /// The accumulator it adds to.
    pub fn acc(self, body: &Body) -> Value {
        match self {
            StagedDot::Plain(d) => d.acc(body),
            StagedDot::Scaled(d) => d.acc(body),
        }
    }

    /// The dot's result.
    pub fn result(self, body: &Body) -> Value {
        match self {
            StagedDot::Plain(d) => d.result(body),
            StagedDot::Scaled(d) => d.result(body),
        }
    }

    /// Whether A is given K x M.
    pub fn transpose_a(self, body: &Body) -> bool {
        match self {
            StagedDot::Plain(d) => d.transpose_a(body),
            StagedDot::Scaled(d) => d.transpose_a(body),
        }
    }

    /// Whether B is given N x K.
    pub fn transpose_b(self, body: &Body) -> bool {
        match self {
            StagedDot::Plain(d) => d.transpose_b(body),
            StagedDot::Scaled(d) => d.transpose_b(body),
        }
    }

    /// A's row scales and B's block scales of a block-scaled dot.
    pub fn scales(self, body: &Body) -> Option<DotScales> {
        match self {
            StagedDot::Plain(_) => None,
            StagedDot::Scaled(d) => Some(DotScales { rows: d.lhs_scale(body), blocks: d.rhs_scale(body), offset: d.rhs_scale_offset(body) }),
        }
    }
}

/// The scales a block-scaled dot's promotion multiplies by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DotScales {
    /// A's scale per row.
    pub rows: Value,
    /// B's scale per 128 of its rows.
    pub blocks: Value,
    /// The tile's first row within the first of `blocks`, when the tile
    /// need not start a block.
    pub offset: Option<Value>,
}

impl DotScales {
    /// The scales `promotion` multiplies by.
    pub fn of_promotion(body: &Body, promotion: ScaleAccumulate) -> DotScales {
        DotScales { rows: promotion.row_scale(body), blocks: promotion.col_scale(body), offset: promotion.col_offset(body) }
    }

    /// The values, for a check that each is in place.
    pub fn values(self) -> impl Iterator<Item = Value> {
        [self.rows, self.blocks].into_iter().chain(self.offset)
    }
}
