//! The dots the Hopper passes turn into wgmma: `tile.dot`, and
//! `tile.dot_scaled`, whose product over each 128-wide K block starts from
//! a fresh accumulator and is then promoted into the f32 result with its
//! block scales (Hopper's FP8 tensor cores accumulate with limited
//! precision, so a long K must not accumulate inside them).

use tilec_dialects::ir::{Body, Op, Value};
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

    /// A's row scales and B's block scales of a block-scaled dot.
    pub fn scales(self, body: &Body) -> Option<(Value, Value)> {
        match self {
            StagedDot::Plain(_) => None,
            StagedDot::Scaled(d) => Some((d.lhs_scale(body), d.rhs_scale(body))),
        }
    }
}
