//! The dots the Hopper passes turn into wgmma: `tile.dot`, and
//! `tile.dot_scaled`, whose product over each 128-wide K block starts from
//! a fresh accumulator and is then promoted into the f32 result with its
//! block scales (Hopper's FP8 tensor cores accumulate with limited
//! precision, so a long K must not accumulate inside them).

use tilec_dialects::ir::{Attribute, Attributes, Body, Op, Value};
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

    /// The scales a block-scaled dot's promotion multiplies by.
    pub fn scales(self, body: &Body) -> Option<DotScales> {
        match self {
            StagedDot::Plain(_) => None,
            StagedDot::Scaled(d) => Some(DotScales {
                rows: d.lhs_scale(body),
                cols: d.rhs_scale(body),
                offset: d.block_offset(body),
                blocks_along_rows: d.blocks_along_rows(body),
            }),
        }
    }
}

/// The scales a block-scaled dot's promotion multiplies by: A's row scales
/// and B's block scales (one per 128 of the result's columns), or with
/// `blocks_along_rows` A's block scales (one per 128 of the result's rows)
/// and B's row scales (one per column of the result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DotScales {
    /// A's scales, along the result's rows.
    pub rows: Value,
    /// B's scales, along the result's columns.
    pub cols: Value,
    /// The tile's first row or column within the first of the block
    /// scales, when the tile need not start a block.
    pub offset: Option<Value>,
    /// Whether the block scales are A's (along the rows).
    pub blocks_along_rows: bool,
}

impl DotScales {
    /// The scales `promotion` multiplies by.
    pub fn of_promotion(body: &Body, promotion: ScaleAccumulate) -> DotScales {
        DotScales {
            rows: promotion.row_scale(body),
            cols: promotion.col_scale(body),
            offset: promotion.block_offset(body),
            blocks_along_rows: promotion.blocks_along_rows(body),
        }
    }

    /// The attributes a promotion with these scales carries.
    pub fn attrs(self) -> Attributes {
        let mut attrs = Attributes::new();
        if self.blocks_along_rows {
            attrs.set("blocks_along_rows", Attribute::Unit);
        }
        attrs
    }

    /// The values, for a check that each is in place.
    pub fn values(self) -> impl Iterator<Item = Value> {
        [self.rows, self.cols].into_iter().chain(self.offset)
    }
}
