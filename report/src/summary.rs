//! Shape groups and the geometric mean of the ratio over each.

use crate::schema::{BenchDtype, Shape, ShapeResult};

/// The groups of the design's shape list, in the order reports show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ShapeGroup {
    /// M = N = K.
    Square,
    /// The LLM shapes at M = 64, 128 and 4096.
    /// This variant: M = 64 (and not square).
    M64,
    /// M = 128 (and not square).
    M128,
    /// M = 4096 (and not square).
    M4096,
    /// Anything else.
    Other,
}

impl ShapeGroup {
    /// The group of `s`: square first, then by M.
    ///
    /// ```
    /// use tilec_report::{schema::Shape, summary::ShapeGroup};
    /// assert_eq!(ShapeGroup::of(Shape::new(128, 128, 128)), ShapeGroup::Square);
    /// assert_eq!(ShapeGroup::of(Shape::new(128, 4096, 7168)), ShapeGroup::M128);
    /// assert_eq!(ShapeGroup::of(Shape::new(100, 4096, 7168)), ShapeGroup::Other);
    /// ```
    pub fn of(s: Shape) -> ShapeGroup {
        match s.m {
            _ if s.m == s.n && s.n == s.k => ShapeGroup::Square,
            64 => ShapeGroup::M64,
            128 => ShapeGroup::M128,
            4096 => ShapeGroup::M4096,
            _ => ShapeGroup::Other,
        }
    }
    /// The name tables and charts show (`square`, `M=64`, ..., `other`).
    pub fn label(self) -> &'static str {
        match self {
            ShapeGroup::Square => "square",
            ShapeGroup::M64 => "M=64",
            ShapeGroup::M128 => "M=128",
            ShapeGroup::M4096 => "M=4096",
            ShapeGroup::Other => "other",
        }
    }
}

/// Geometric mean; `None` for no values or any value not positive and finite.
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// One line of the geometric-mean summary.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupMean {
    /// The operand type whose shapes were averaged.
    pub dtype: BenchDtype,
    /// `None` for the overall mean of the dtype.
    pub group: Option<ShapeGroup>,
    /// Shapes with a ratio in the group.
    pub shapes: usize,
    /// Geometric mean of those shapes' ratios (ours over the best baseline,
    /// by TFLOP/s); positive and finite.
    pub geomean: f64,
}

impl GroupMean {
    /// `dtype group` as tables show it, `all` for the overall mean (e.g.
    /// `bf16 M=64`, `fp8 all`).
    pub fn label(&self) -> String {
        format!("{} {}", self.dtype.name(), self.group.map_or("all", ShapeGroup::label))
    }
}

/// The geometric mean of the ratio per dtype and shape group, then over all
/// shapes of the dtype; groups without a ratio are left out.
pub fn group_means(results: &[ShapeResult]) -> Vec<GroupMean> {
    let mut dtypes: Vec<BenchDtype> = results.iter().map(|r| r.dtype).collect();
    dtypes.sort();
    dtypes.dedup();
    let mut out = Vec::new();
    for dtype in dtypes {
        let of_dtype: Vec<&ShapeResult> = results.iter().filter(|r| r.dtype == dtype).collect();
        let mut groups: Vec<ShapeGroup> = of_dtype.iter().map(|r| ShapeGroup::of(r.shape())).collect();
        groups.sort();
        groups.dedup();
        let mut push = |group: Option<ShapeGroup>| {
            let ratios: Vec<f64> = of_dtype
                .iter()
                .filter(|r| group.is_none_or(|g| ShapeGroup::of(r.shape()) == g))
                .filter_map(|r| r.ratio)
                .collect();
            if let Some(g) = geomean(&ratios) {
                out.push(GroupMean { dtype, group, shapes: ratios.len(), geomean: g });
            }
        };
        groups.into_iter().for_each(|g| push(Some(g)));
        push(None);
    }
    out
}
