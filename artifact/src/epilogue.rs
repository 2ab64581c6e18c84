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
    /// Further outputs of one value per row and group of columns (an FP8
    /// quantisation's scales), besides the output the last value is stored
    /// to; empty (and absent from the JSON) for most epilogues.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_stores: Vec<GroupStore>,
}

/// An output holding one value per row and group of `group` columns: the
/// value `x` (the same at every column of a group, as a
/// [`EpilogueValue::GroupReduce`] leaves it) of output row `i` and group
/// `j / group` at element (`i`, `j / group`) of `tensor`, whose logical
/// shape is `M x ceil(N / group)`. The manifest declares the tensor
/// `[ceil(N / group), M]` where it is stored M-major (the scales the next
/// block-scaled GEMM reads, a column's rows adjacent) and
/// `[M, ceil(N / group)]` where row-major.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupStore {
    /// The manifest tensor (an output).
    pub tensor: String,
    /// The stored value's index.
    pub x: usize,
    /// Columns in a group.
    pub group: u64,
}

/// One output row as [`Epilogue::eval_row`] computes it.
#[derive(Clone, Debug, PartialEq)]
pub struct EpilogueRow {
    /// The value stored at each of the row's columns.
    pub values: Vec<f64>,
    /// For each of the epilogue's [`Epilogue::group_stores`], in order, its
    /// value for each group of the row's columns (`ceil(n / group)` of them).
    pub groups: Vec<Vec<f64>>,
}

/// How a [`EpilogueValue::GroupReduce`] combines a group's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReduceFn {
    /// The largest (NaN if any is NaN).
    Max,
    /// The smallest (NaN if any is NaN).
    Min,
    /// The sum.
    Add,
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
    /// The accumulator: sum over k of `A[i][k] B[j][k]` in f32 (with a
    /// block-scaled GEMM's scales applied), all splits and pieces added.
    Acc,
    /// The accumulator of another column than the output element's: the
    /// product's columns interleave `parts` outputs in runs of `block`
    /// (gate and up projections in one GEMM, `parts = 2`), and output
    /// column `j` of part `part` is the product's column
    /// `parts * block * (j / block) + part * block + j % block`. The output
    /// then has `N / parts` columns (`N`, the product's, a multiple of
    /// `parts * block`). Every such value of an epilogue has one `block`
    /// and `parts`.
    AccPart {
        /// Columns in a run.
        block: u64,
        /// Which of the interleaved outputs, from 0.
        part: u64,
        /// How many outputs the product's columns interleave.
        parts: u64,
    },
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
    /// Element (`i`, `j`) of a rank-2 input of the output's shape (a
    /// residual added to the product), zero outside it.
    Matrix {
        /// The manifest tensor (an input of the output's dimensions).
        tensor: String,
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
    /// An earlier value reduced over the output element's group of `group`
    /// columns in its row: columns `group * (j / group)` up to the next
    /// multiple of `group`, those inside the output (an absmax for an FP8
    /// quantisation's scale is the max of the absolute values).
    GroupReduce {
        /// The reduction.
        f: ReduceFn,
        /// The operand's index.
        x: usize,
        /// Columns in a group.
        group: u64,
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
        Epilogue { values: vec![EpilogueValue::Acc, EpilogueValue::Convert { to: out, x: 0 }], group_stores: Vec::new() }
    }

    /// The indices each value reads.
    pub fn operands(value: &EpilogueValue) -> Vec<usize> {
        match value {
            EpilogueValue::Acc | EpilogueValue::AccPart { .. } | EpilogueValue::Splat { .. } | EpilogueValue::Vector { .. } | EpilogueValue::Matrix { .. } => Vec::new(),
            EpilogueValue::Unary { x, .. } | EpilogueValue::Convert { x, .. } | EpilogueValue::GroupReduce { x, .. } => vec![*x],
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

    /// The tensors its matrices read, each once, in order of first use.
    pub fn matrix_tensors(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for v in &self.values {
            if let EpilogueValue::Matrix { tensor } = v {
                if !out.contains(&tensor.as_str()) {
                    out.push(tensor);
                }
            }
        }
        out
    }
}

impl Epilogue {
    /// The value it stores for one output element, computed in f64:
    /// `acc` is the accumulator, `vector(i)` the element that value `i` (a
    /// [`EpilogueValue::Vector`], [`EpilogueValue::Matrix`] or
    /// [`EpilogueValue::AccPart`]) reads for this output element, or the
    /// reduction a [`EpilogueValue::GroupReduce`] gives it (a
    /// vector's element `i` of the row or `j` of the column, as its `along`
    /// says; a matrix's element (`i`, `j`); the product's element at the
    /// part's column; a reduction needs the whole row: [`Epilogue::eval_row`]
    /// computes it). `convert`
    /// rounds to nearest even as [`round_to`] does. The epilogue must be
    /// valid ([`crate::Manifest::validate`]); an empty one gives NaN.
    ///
    /// ```
    /// use tilec_artifact::{DType, Epilogue};
    /// let plain = Epilogue::plain(DType::Bf16);
    /// assert_eq!(plain.eval(1.0 + 1.0 / 1024.0, |_| 0.0), 1.0);
    /// ```
    pub fn eval(&self, acc: f64, vector: impl Fn(usize) -> f64) -> f64 {
        match self.values.len() {
            0 => f64::NAN,
            n => self.eval_value(n - 1, acc, vector),
        }
    }

    /// Value `index` of the program (see [`Epilogue::eval`]), computing
    /// only the values up to it; NaN for an index past the end.
    pub fn eval_value(&self, index: usize, acc: f64, vector: impl Fn(usize) -> f64) -> f64 {
        if index >= self.values.len() {
            return f64::NAN;
        }
        // Short programs (all tilec writes) evaluate without allocating: the
        // runtime's reference calls this once per element of C.
        let mut stack = [0.0f64; 64];
        let mut heap = Vec::new();
        let v: &mut [f64] = if index < stack.len() {
            &mut stack[..=index]
        } else {
            heap.resize(index + 1, 0.0);
            &mut heap
        };
        for (i, value) in self.values[..=index].iter().enumerate() {
            let x = match value {
                EpilogueValue::Acc => acc,
                _ => element(value, &|k| earlier(v, k, i)).unwrap_or_else(|| vector(i)),
            };
            v[i] = x;
        }
        v[index]
    }

    /// One output row of `n` columns, computed in f64: each column's stored
    /// value and each group store's value for each group of columns.
    /// `acc(j)` is column `j`'s accumulator and `leaf(i, j)` the element
    /// that value `i` (a [`EpilogueValue::Vector`], [`EpilogueValue::Matrix`]
    /// or [`EpilogueValue::AccPart`]) reads at column `j`, as for
    /// [`Epilogue::eval`]. A [`EpilogueValue::GroupReduce`] reduces its
    /// operand over the columns of `j`'s group that are below `n` (a last,
    /// partial group reduces fewer); a group store takes its value at its
    /// group's first column (the same at each of its columns in a valid
    /// epilogue). The epilogue must be valid: an operand that is not an
    /// earlier value reads NaN, and a group of no columns reduces to NaN and
    /// stores nothing.
    ///
    /// ```
    /// use tilec_artifact::{Epilogue, EpilogueValue, GroupStore, ReduceFn, UnaryFn};
    /// // Each column divided by its group's absmax, which is stored too.
    /// let e = Epilogue {
    ///     values: vec![
    ///         EpilogueValue::Acc,
    ///         EpilogueValue::Unary { f: UnaryFn::Abs, x: 0 },
    ///         EpilogueValue::GroupReduce { f: ReduceFn::Max, x: 1, group: 2 },
    ///         EpilogueValue::Binary { f: tilec_artifact::BinaryFn::Div, lhs: 0, rhs: 2 },
    ///     ],
    ///     group_stores: vec![GroupStore { tensor: "S".into(), x: 2, group: 2 }],
    /// };
    /// let acc = [1.0, -4.0, 0.5, 0.25, 8.0];
    /// let row = e.eval_row(5, |j| acc[j], |_, _| f64::NAN);
    /// assert_eq!(row.values, [0.25, -1.0, 1.0, 0.5, 1.0]);
    /// assert_eq!(row.groups, [vec![4.0, 0.5, 8.0]]);
    /// ```
    pub fn eval_row(&self, n: usize, acc: impl Fn(usize) -> f64, leaf: impl Fn(usize, usize) -> f64) -> EpilogueRow {
        self.eval_row_with(n, acc, leaf, element)
    }

    /// [`Epilogue::eval_row`] computing each element-wise value with
    /// `element` (f64 or f32 arithmetic; values held as f64 either way).
    fn eval_row_with(
        &self,
        n: usize,
        acc: impl Fn(usize) -> f64,
        leaf: impl Fn(usize, usize) -> f64,
        element: fn(&EpilogueValue, &dyn Fn(usize) -> f64) -> Option<f64>,
    ) -> EpilogueRow {
        // Each value's n columns, value-major.
        let mut cols: Vec<Vec<f64>> = Vec::with_capacity(self.values.len());
        for (i, value) in self.values.iter().enumerate() {
            let col = match *value {
                EpilogueValue::GroupReduce { f, x, group } => match usize::try_from(group) {
                    Ok(g) if g > 0 && x < i => {
                        let mut out = vec![0.0; n];
                        for (o, xs) in out.chunks_mut(g).zip(cols[x].chunks(g)) {
                            o.fill(f.reduce(xs.iter().copied()));
                        }
                        out
                    }
                    _ => vec![f64::NAN; n],
                },
                EpilogueValue::Acc => (0..n).map(&acc).collect(),
                _ => (0..n)
                    .map(|j| element(value, &|k| if k < i { cols[k][j] } else { f64::NAN }).unwrap_or_else(|| leaf(i, j)))
                    .collect(),
            };
            cols.push(col);
        }
        let groups = self
            .group_stores
            .iter()
            .map(|s| match (usize::try_from(s.group), cols.get(s.x)) {
                (Ok(g), Some(col)) if g > 0 => col.iter().step_by(g).copied().collect(),
                (Ok(g), None) if g > 0 => vec![f64::NAN; n.div_ceil(g)],
                _ => Vec::new(),
            })
            .collect();
        let values = cols.pop().unwrap_or_else(|| vec![f64::NAN; n]);
        EpilogueRow { values, groups }
    }

    /// True if it reduces over groups of columns or stores per group (an
    /// FP8 quantisation's scales): its reference needs whole rows
    /// ([`Epilogue::eval_row`]).
    pub fn has_groups(&self) -> bool {
        !self.group_stores.is_empty() || self.values.iter().any(|v| matches!(v, EpilogueValue::GroupReduce { .. }))
    }

    /// The first value that value `index` reads (itself included) which
    /// may differ between the columns of one group of `group`: the
    /// accumulator, an accumulator part, a matrix, a vector along columns,
    /// or a reduction over groups that do not hold whole groups of `group`
    /// (a reduction over `g` columns is the same across a group of `group`
    /// where `g` is a multiple of `group`). `None` if the value is the
    /// same at every column of such a group, as a group store's must be
    /// (and as a kernel may compute once a group).
    pub fn varies_within(&self, index: usize, group: u64) -> Option<usize> {
        let mut varies: Vec<Option<usize>> = Vec::with_capacity(self.values.len());
        for (i, value) in self.values.iter().enumerate().take(index.saturating_add(1)) {
            let v = match value {
                EpilogueValue::Splat { .. } | EpilogueValue::Vector { along: Along::Rows, .. } => None,
                EpilogueValue::GroupReduce { group: g, .. } => (!g.is_multiple_of(group)).then_some(i),
                EpilogueValue::Acc | EpilogueValue::AccPart { .. } | EpilogueValue::Matrix { .. } | EpilogueValue::Vector { .. } => Some(i),
                _ => Epilogue::operands(value).into_iter().find_map(|k| if k < i { varies[k] } else { Some(i) }),
            };
            varies.push(v);
        }
        varies.get(index).copied().flatten()
    }

    /// True if it is a plain GEMM's: the accumulator, at most rounded once
    /// (to any type), with no vectors or other values.
    pub fn is_plain(&self) -> bool {
        matches!(&self.values[..], [EpilogueValue::Acc] | [EpilogueValue::Acc, EpilogueValue::Convert { x: 0, .. }])
    }
}

/// An epilogue whose evaluation in f32 ([`F32Epilogue::eval_row`]) is, bit
/// for bit, what a kernel computing it in f32 stores; made by
/// [`Epilogue::in_f32`].
#[derive(Clone, Copy, Debug)]
pub struct F32Epilogue<'a> {
    epilogue: &'a Epilogue,
}

impl Epilogue {
    /// The epilogue evaluated in f32 as a kernel evaluates it, where that
    /// fixes every bit of its results: each value rounded to f32 as it is
    /// computed (add, sub, mul and div as IEEE's, rounding to nearest even:
    /// a kernel's division must be `div.rn.f32`, nvcc's and LLVM's
    /// default; max and min NaN if either operand is; a constant the f32
    /// nearest its value; a conversion rounding as [`round_to`] does, the
    /// 8-bit floats saturating). Given an accumulator that is the kernel's
    /// (inputs whose product is exact in f32), its C values and group
    /// values are then the kernel's exactly: the reference an exact check
    /// compares with.
    ///
    /// An error names the first value whose f32 result is fixed by more
    /// than IEEE arithmetic:
    /// - `exp`, `tanh`, `erf`, `rsqrt`: the device's approximations, which
    ///   the host does not reproduce;
    /// - a `group_reduce` `add`: an f32 sum depends on the order of its
    ///   additions, which is the kernel's own;
    /// - an `add` or `sub` of a product (or of a product's negation): the
    ///   kernel may contract the two into one fused multiply-add (nvcc's
    ///   default and tilec's lowering both allow it), which rounds once
    ///   where the program rounds twice.
    ///
    /// ```
    /// use tilec_artifact::{BinaryFn, Epilogue, EpilogueValue};
    /// // acc / 3 in f32 is not acc / 3 in f64.
    /// let e = Epilogue {
    ///     values: vec![EpilogueValue::Acc, EpilogueValue::Splat { value: 3.0 }, EpilogueValue::Binary { f: BinaryFn::Div, lhs: 0, rhs: 1 }],
    ///     group_stores: Vec::new(),
    /// };
    /// let row = e.in_f32().unwrap().eval_row(1, |_| 1.0, |_, _| f32::NAN);
    /// assert_eq!(row.values, [(1.0f32 / 3.0) as f64]);
    /// ```
    pub fn in_f32(&self) -> Result<F32Epilogue<'_>, String> {
        for (i, value) in self.values.iter().enumerate() {
            match *value {
                EpilogueValue::Unary { f: f @ (UnaryFn::Exp | UnaryFn::Tanh | UnaryFn::Erf | UnaryFn::Rsqrt), .. } => {
                    return Err(format!(
                        "value {i} takes {}: its f32 value is the device's approximation, which the host does not reproduce",
                        format!("{f:?}").to_lowercase()
                    ))
                }
                EpilogueValue::GroupReduce { f: ReduceFn::Add, .. } => {
                    return Err(format!("value {i} sums over a group of columns: an f32 sum depends on the kernel's order of additions"))
                }
                EpilogueValue::Binary { f: BinaryFn::Add | BinaryFn::Sub, lhs, rhs } => {
                    if let Some(k) = [lhs, rhs].into_iter().find(|&k| k < i && self.is_product(k)) {
                        return Err(format!(
                            "value {i} adds value {k}, a product: the kernel may fuse the two into one multiply-add, rounding once"
                        ));
                    }
                }
                _ => {}
            }
        }
        Ok(F32Epilogue { epilogue: self })
    }

    /// True if value `k` is a product, or a product negated or converted to
    /// f32 or f64 (which a kernel computing in f32 leaves as it is): what a
    /// multiply-add may fuse.
    fn is_product(&self, k: usize) -> bool {
        match self.values.get(k) {
            Some(EpilogueValue::Binary { f: BinaryFn::Mul, .. }) => true,
            Some(&EpilogueValue::Unary { f: UnaryFn::Neg, x }) | Some(&EpilogueValue::Convert { to: super::DType::F32 | super::DType::F64, x }) => {
                x < k && self.is_product(x)
            }
            _ => false,
        }
    }
}

impl F32Epilogue<'_> {
    /// One output row of `n` columns as [`Epilogue::eval_row`] computes it,
    /// but in f32 ([`Epilogue::in_f32`]): `acc(j)` is column `j`'s
    /// accumulator and `leaf(i, j)` what value `i` reads at column `j` (a
    /// vector's, a matrix's or a part's element), both in f32. The row's
    /// values are f32 values, widened.
    pub fn eval_row(&self, n: usize, acc: impl Fn(usize) -> f32, leaf: impl Fn(usize, usize) -> f32) -> EpilogueRow {
        self.epilogue.eval_row_with(n, |j| acc(j) as f64, |i, j| leaf(i, j) as f64, element_f32)
    }
}

/// [`element`] in f32: each operand an f32 value (held as f64), the result
/// rounded to f32 as [`Epilogue::in_f32`] says.
fn element_f32(value: &EpilogueValue, at: &dyn Fn(usize) -> f64) -> Option<f64> {
    let at = |k: usize| at(k) as f32;
    let x = match *value {
        EpilogueValue::Splat { value } => value as f32,
        EpilogueValue::Unary { f: UnaryFn::Neg, x } => -at(x),
        EpilogueValue::Unary { f: UnaryFn::Abs, x } => at(x).abs(),
        // Refused by Epilogue::in_f32: the device's value is not known here.
        EpilogueValue::Unary { f: UnaryFn::Exp | UnaryFn::Tanh | UnaryFn::Erf | UnaryFn::Rsqrt, .. } => f32::NAN,
        EpilogueValue::Binary { f, lhs, rhs } => f.apply_f32(at(lhs), at(rhs)),
        EpilogueValue::Convert { to, x } => round_to(to, at(x) as f64) as f32,
        EpilogueValue::Acc
        | EpilogueValue::AccPart { .. }
        | EpilogueValue::Vector { .. }
        | EpilogueValue::Matrix { .. }
        | EpilogueValue::GroupReduce { .. } => return None,
    };
    Some(x as f64)
}

/// Operand `k` of value `me` among the values computed so far: NaN where
/// it is not an earlier value (an unvalidated program).
fn earlier(v: &[f64], k: usize, me: usize) -> f64 {
    if k < me {
        v[k]
    } else {
        f64::NAN
    }
}

/// An element-wise value computed from its operands (`at(k)`: value `k`)
/// in f64; `None` for the values that read the call's operands (the
/// accumulator, parts, vectors, matrices) or reduce over columns.
fn element(value: &EpilogueValue, at: &dyn Fn(usize) -> f64) -> Option<f64> {
    Some(match *value {
        EpilogueValue::Splat { value } => value,
        EpilogueValue::Unary { f, x } => f.apply(at(x)),
        EpilogueValue::Binary { f, lhs, rhs } => f.apply(at(lhs), at(rhs)),
        EpilogueValue::Convert { to, x } => round_to(to, at(x)),
        EpilogueValue::Acc
        | EpilogueValue::AccPart { .. }
        | EpilogueValue::Vector { .. }
        | EpilogueValue::Matrix { .. }
        | EpilogueValue::GroupReduce { .. } => return None,
    })
}

impl UnaryFn {
    /// The function's value at `x`, in f64.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnaryFn::Neg => -x,
            UnaryFn::Abs => x.abs(),
            UnaryFn::Exp => x.exp(),
            UnaryFn::Tanh => x.tanh(),
            UnaryFn::Erf => erf(x),
            UnaryFn::Rsqrt => 1.0 / x.sqrt(),
        }
    }
}

impl BinaryFn {
    /// The function's value at `(lhs, rhs)`, in f64. `max` and `min` of a
    /// NaN and a number are NaN, as the kernel's `maximumf`/`minimumf`.
    pub fn apply(self, lhs: f64, rhs: f64) -> f64 {
        match self {
            BinaryFn::Add => lhs + rhs,
            BinaryFn::Sub => lhs - rhs,
            BinaryFn::Mul => lhs * rhs,
            BinaryFn::Div => lhs / rhs,
            BinaryFn::Max if lhs.is_nan() || rhs.is_nan() => f64::NAN,
            BinaryFn::Min if lhs.is_nan() || rhs.is_nan() => f64::NAN,
            BinaryFn::Max => lhs.max(rhs),
            BinaryFn::Min => lhs.min(rhs),
        }
    }
}

impl BinaryFn {
    /// The function's value at `(lhs, rhs)` in f32 arithmetic (IEEE,
    /// rounding to nearest even); `max` and `min` as [`BinaryFn::apply`]'s.
    pub fn apply_f32(self, lhs: f32, rhs: f32) -> f32 {
        match self {
            BinaryFn::Add => lhs + rhs,
            BinaryFn::Sub => lhs - rhs,
            BinaryFn::Mul => lhs * rhs,
            BinaryFn::Div => lhs / rhs,
            // The larger or smaller of two f32 values is one of them: f64 computes it exactly.
            BinaryFn::Max | BinaryFn::Min => self.apply(lhs as f64, rhs as f64) as f32,
        }
    }
}

impl ReduceFn {
    /// The reduction of `xs` in f64, in order: `max` and `min` are NaN if
    /// any value is (as [`BinaryFn::apply`]'s); NaN for no values.
    pub fn reduce(self, xs: impl IntoIterator<Item = f64>) -> f64 {
        let mut xs = xs.into_iter();
        let Some(first) = xs.next() else { return f64::NAN };
        xs.fold(first, |r, x| match self {
            ReduceFn::Max => BinaryFn::Max.apply(r, x),
            ReduceFn::Min => BinaryFn::Min.apply(r, x),
            ReduceFn::Add => r + x,
        })
    }
}

/// The error function, accurate to a few units in the last place of f64
/// (std has none). For |x| < 3 the series
/// `erf(x) = 2/sqrt(pi) e^(-x^2) sum_n (2x^2)^n x / (2n+1)!!`, whose terms
/// are all positive (no cancellation); beyond, `1 - erfc(x)` with erfc's
/// continued fraction (Lentz), which converges fast there; 1 beyond 6,
/// where erfc is below half an ulp of 1.
///
/// ```
/// let e = tilec_artifact::erf(1.0);
/// assert!((e - 0.8427007929497149).abs() < 1e-15);
/// ```
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let a = x.abs();
    let r = if a < 3.0 {
        erf_series(a)
    } else if a < 6.0 {
        1.0 - erfc_continued_fraction(a)
    } else {
        1.0
    };
    r.copysign(x)
}

/// The complementary error function `1 - erf(x)`, accurate also where it is
/// tiny (large x), by the continued fraction for x >= 3.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x >= 3.0 {
        erfc_continued_fraction(x)
    } else {
        1.0 - erf(x)
    }
}

fn erf_series(a: f64) -> f64 {
    let x2 = a * a;
    let mut term = a;
    let mut sum = a;
    let mut n = 0.0;
    while term > sum * 1e-17 {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
        if n > 200.0 {
            break;
        }
    }
    std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp() * sum
}

/// erfc(x) for x >= 3: `e^(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))`,
/// evaluated by the modified Lentz method.
fn erfc_continued_fraction(x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    // f = b0 + a1/(b1 + a2/(b2 + ...)) with b_i = x, a_i = i/2.
    let mut f = x;
    let mut c = f;
    let mut d = 0.0;
    for i in 1..500 {
        let an = i as f64 / 2.0;
        d = x + an * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = x + an / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

/// `x` rounded to the nearest value of `to` (ties to even), as a narrowing
/// conversion does: bf16 and f16 overflow to infinity; the 8-bit floats
/// saturate to their largest finite value (as PTX's `cvt.rn.satfinite`,
/// the only conversion to them it has); f64 (and any integer type) is
/// returned unchanged. NaN stays NaN.
///
/// ```
/// use tilec_artifact::{round_to, DType};
/// assert_eq!(round_to(DType::Bf16, 1.0 + 1.0 / 256.0), 1.0); // a tie: to even
/// assert_eq!(round_to(DType::Bf16, 1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
/// assert_eq!(round_to(DType::F16, 70000.0), f64::INFINITY);
/// assert_eq!(round_to(DType::F8e4m3, 1000.0), 448.0);
/// ```
pub fn round_to(to: super::DType, x: f64) -> f64 {
    use super::DType;
    // (fraction bits, smallest normal exponent, largest finite, saturate)
    let (p, emin, max, saturate) = match to {
        DType::F32 => return x as f32 as f64,
        DType::Bf16 => (7, -126, (2.0 - 2f64.powi(-7)) * 2f64.powi(127), false),
        DType::F16 => (10, -14, 65504.0, false),
        DType::F8e4m3 => (3, -6, 448.0, true),
        DType::F8e5m2 => (2, -14, 57344.0, true),
        _ => return x,
    };
    if !x.is_finite() {
        return if saturate && x.is_infinite() { max.copysign(x) } else { x };
    }
    if x == 0.0 {
        return x;
    }
    // The exponent of |x| (x is finite and nonzero; f64 subnormals are far
    // below every format's own).
    let e = ((x.abs().to_bits() >> 52) as i32 - 1023).max(emin);
    let quantum = 2f64.powi(e - p);
    // x / quantum is exact (a power-of-two scale) and below 2^53.
    let r = (x / quantum).round_ties_even() * quantum;
    if r.abs() > max {
        return if saturate { max.copysign(x) } else { f64::INFINITY.copysign(x) };
    }
    r
}
