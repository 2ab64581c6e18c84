//! What a GEMM kernel computes from its accumulator before it stores C: the
//! element-wise program between the tile IR's K loop and its store, written
//! into the manifest so that the runtime can check the kernel against a
//! reference and time it against the vendor's fused epilogue.

use serde::{Deserialize, Serialize};

/// A GEMM's epilogue as a straight-line program over one output element
/// (row `i`, column `j`): each value is computed from earlier ones, and the
/// last is what the kernel stores at (i, j). `[Acc, Convert { to: bf16 }]`
/// is a plain GEMM with a BF16 result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Epilogue {
    /// The program, in order; operands are indices of earlier values.
    pub values: Vec<EpilogueValue>,
}

/// Which index of the output element a vector operand takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Along {
    /// Element `i` (one value per row, as a per-token scale).
    Rows,
    /// Element `j` (one value per column, as a bias).
    Cols,
}

/// A float function of one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnaryFn {
    /// -x
    Neg,
    /// |x|
    Abs,
    /// e^x
    Exp,
    /// tanh(x)
    Tanh,
    /// erf(x)
    Erf,
    /// 1 / sqrt(x)
    Rsqrt,
}

/// A float function of two values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryFn {
    /// lhs + rhs
    Add,
    /// lhs - rhs
    Sub,
    /// lhs * rhs
    Mul,
    /// lhs / rhs
    Div,
    /// max(lhs, rhs)
    Max,
    /// min(lhs, rhs)
    Min,
}

/// One value of an [`Epilogue`] (JSON objects tagged by `op`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum EpilogueValue {
    /// The accumulator: sum over k of A[i][k] B[j][k] in f32 (with a
    /// block-scaled GEMM's scales applied), all splits and pieces added.
    Acc,
    /// A constant.
    Splat {
        /// Its value.
        value: f64,
    },
    /// Element `i` or `j` of a rank-1 input tensor, zero past its end.
    Vector {
        /// The manifest tensor (an input of one dimension).
        tensor: String,
        /// Which index it takes.
        along: Along,
    },
    /// A function of one earlier value.
    Unary {
        /// The function.
        f: UnaryFn,
        /// The operand's index.
        x: usize,
    },
    /// A function of two earlier values.
    Binary {
        /// The function.
        f: BinaryFn,
        /// The first operand's index.
        lhs: usize,
        /// The second operand's index.
        rhs: usize,
    },
    /// An earlier value rounded to `to` (round to nearest even), as a
    /// narrowing conversion does; a widening one is exact and not recorded.
    Convert {
        /// The type rounded to.
        to: super::DType,
        /// The operand's index.
        x: usize,
    },
}

impl Epilogue {
    /// A plain GEMM's: the accumulator rounded to `out`.
    pub fn plain(out: super::DType) -> Epilogue {
        Epilogue { values: vec![EpilogueValue::Acc, EpilogueValue::Convert { to: out, x: 0 }] }
    }

    /// The indices each value reads.
    pub fn operands(value: &EpilogueValue) -> Vec<usize> {
        match value {
            EpilogueValue::Acc | EpilogueValue::Splat { .. } | EpilogueValue::Vector { .. } => Vec::new(),
            EpilogueValue::Unary { x, .. } | EpilogueValue::Convert { x, .. } => vec![*x],
            EpilogueValue::Binary { lhs, rhs, .. } => vec![*lhs, *rhs],
        }
    }

    /// The tensors its vectors read, each once, in order of first use.
    pub fn vector_tensors(&self) -> Vec<(&str, Along)> {
        let mut out: Vec<(&str, Along)> = Vec::new();
        for v in &self.values {
            if let EpilogueValue::Vector { tensor, along } = v {
                if !out.iter().any(|(t, _)| t == tensor) {
                    out.push((tensor, *along));
                }
            }
        }
        out
    }
}
