//! Load-time validation: everything a later launch relies on that does not
//! depend on the run-time problem size is checked here.

use crate::manifest::*;
use std::collections::HashSet;
use tilec_target::Target;

/// What is wrong, without where (see [`Invalid`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValidationError {
    /// `format_version` is not the one this crate reads.
    #[error("unsupported format version {found} (this build reads version {expected})")]
    UnsupportedVersion {
        /// The manifest's version.
        found: u32,
        /// [`FORMAT_VERSION`].
        expected: u32,
    },
    /// A required string (`kernel_name`, `target`) is empty.
    #[error("must not be empty")]
    Empty,
    /// `gpu` names no known [`Target`] (the name given).
    #[error("unknown GPU `{0}` (known targets: {known})", known = Target::NAMES.join(", "))]
    UnknownGpu(String),
    /// `gpu` names a target whose PTX target is not the manifest's `target`.
    #[error("GPU `{gpu}` runs {sm} code, not the manifest's target {target}")]
    GpuRunsOtherTarget {
        /// The manifest's `gpu`.
        gpu: String,
        /// That GPU's [`Target::sm`].
        sm: &'static str,
        /// The manifest's `target`.
        target: String,
    },
    /// A name that must be an identifier (see [`is_identifier`]) is not.
    #[error("`{0}` is not a valid identifier ([A-Za-z_$][A-Za-z0-9_$]*)")]
    BadIdentifier(String),
    /// A block, cluster or grid-rule dimension is 0 (the value found).
    #[error("dimension must be at least 1, got {0}")]
    ZeroDim(u32),
    /// The block has more than 1024 threads.
    #[error("{threads} threads per block exceeds 1024")]
    TooManyThreads {
        /// Product of the block's three dimensions.
        threads: u64,
    },
    /// The cluster has more CTAs than a portable cluster launch allows.
    #[error("cluster of {size} CTAs exceeds the portable maximum {max}")]
    ClusterTooLarge {
        /// Product of the cluster's dimensions (saturated at `u32::MAX`).
        size: u32,
        /// [`MAX_PORTABLE_CLUSTER_SIZE`].
        max: u32,
    },
    /// `dynamic_smem_bytes` is above what one sm_90 CTA can have.
    #[error("{bytes} bytes of dynamic shared memory exceed the sm_90 limit of {max}")]
    SmemTooLarge {
        /// The requested bytes.
        bytes: u32,
        /// [`MAX_DYNAMIC_SMEM_SM90`].
        max: u32,
    },
    /// A tiles grid's `splits` is present but below 2 (the value found).
    #[error("splits must be at least 2 when present (leave it out for one CTA a tile), got {0}")]
    TooFewSplits(u32),
    /// A second workspace parameter, or one of 0 bytes a tile.
    #[error("a kernel takes at most one workspace, of at least 1 byte a tile")]
    BadWorkspace,
    /// Two tensors share this name.
    #[error("duplicate tensor name `{0}`")]
    DuplicateTensor(String),
    /// A tensor's rank (given) is 0 or above [`MAX_TMA_RANK`].
    #[error("tensor rank {0} is outside 1..=5")]
    BadRank(usize),
    /// A parameter names a tensor that is not declared.
    #[error("unknown tensor `{0}`")]
    UnknownTensor(String),
    /// A scalar parameter names a symbol that no tensor shape uses.
    #[error("unknown symbol `{0}` (not used in any tensor shape)")]
    UnknownSymbol(String),
    /// A TMA parameter's dtype differs from its tensor's.
    #[error("dtype {param} differs from tensor `{tensor}`'s dtype {declared}")]
    DtypeMismatch {
        /// The tensor's name.
        tensor: String,
        /// The TMA parameter's dtype.
        param: DType,
        /// The tensor's declared dtype.
        declared: DType,
    },
    /// A TMA box has a different number of dimensions than its tensor.
    #[error("box has {box_rank} dims but tensor `{tensor}` has rank {tensor_rank}")]
    BoxRankMismatch {
        /// The tensor's name.
        tensor: String,
        /// Length of `box_dims`.
        box_rank: usize,
        /// Length of the tensor's `shape`.
        tensor_rank: usize,
    },
    /// A TMA box extent is 0 or above [`MAX_TMA_BOX_DIM`].
    #[error("box dim {value} is outside 1..=256")]
    BoxDimOutOfRange {
        /// The extent found.
        value: u32,
    },
    /// The innermost box extent times the element size is not a multiple of
    /// 16 bytes, as TMA requires.
    #[error("inner box extent is {bytes} bytes, not a multiple of 16")]
    InnerBoxNotMultipleOf16 {
        /// Innermost extent in bytes.
        bytes: u32,
    },
    /// The innermost box row is wider than the swizzle span.
    #[error("inner box extent is {bytes} bytes, more than the {span}-byte swizzle span")]
    InnerBoxExceedsSwizzle {
        /// Innermost extent in bytes.
        bytes: u32,
        /// The swizzle span in bytes.
        span: u32,
    },
    /// A flat descriptor's box is not one unswizzled run of elements.
    #[error("a flat descriptor's box is one unswizzled run of elements: {box_rank} box dim(s), swizzle {swizzle:?}")]
    FlatBoxNotOneRun {
        /// Length of `box_dims`.
        box_rank: usize,
        /// The swizzle asked for.
        swizzle: Swizzle,
    },
    /// A tail descriptor (`tail`) whose boxes are not fitted (`fit_rows`):
    /// its rows would be the full box's, and the kernel counts them fitted.
    #[error("a tail descriptor ('tail') fits its rows, so it needs 'fit_rows'")]
    TailWithoutFitRows,
    /// NaN out-of-bounds fill was asked for an integer tensor.
    #[error("NaN out-of-bounds fill needs a floating-point tensor, `{tensor}` is {dtype}")]
    NanFillOnInteger {
        /// The tensor's name.
        tensor: String,
        /// Its integer dtype.
        dtype: DType,
    },
    /// A tensor is not referred to by any parameter, so the kernel could
    /// not reach it.
    #[error("tensor `{0}` is not used by any parameter")]
    UnusedTensor(String),
    /// A scalar literal is not representable in its type (see [`literal_fits`]).
    #[error("literal {value} does not fit {ty:?}")]
    LiteralOutOfRange {
        /// The literal.
        value: f64,
        /// The parameter's type.
        ty: ScalarType,
    },
    /// The parameter buffer, with alignment padding, is above the kernel
    /// parameter limit.
    #[error("parameters need {bytes} bytes, over the {max}-byte limit")]
    ParamsTooLarge {
        /// [`Manifest::param_bytes`].
        bytes: usize,
        /// [`MAX_PARAM_BYTES`].
        max: usize,
    },
    /// No tensor has role `output`.
    #[error("no output tensor")]
    NoOutput,
    /// A constant tensor dimension is 0.
    #[error("constant dimension must be at least 1")]
    ZeroConstDim,
    /// The epilogue has no values (a plain GEMM's is `[acc, convert]`).
    #[error("an epilogue has at least one value (a plain GEMM's is [acc, convert])")]
    EmptyEpilogue,
    /// An epilogue value reads an operand that is not an earlier value.
    #[error("operand {operand} is not an earlier value (value {index} may read values 0..{index})")]
    EpilogueOperandNotEarlier {
        /// The value's index.
        index: usize,
        /// The operand index found.
        operand: usize,
    },
    /// An epilogue's interleaved accumulator part is not one of at least
    /// two parts in runs of at least one column.
    #[error("an accumulator part takes part < parts, parts >= 2 and block >= 1 (got part {part} of {parts}, block {block})")]
    EpilogueAccPart {
        /// Columns in a run.
        block: u64,
        /// The part.
        part: u64,
        /// The parts.
        parts: u64,
    },
    /// An epilogue matrix names a tensor that is not an input of the
    /// output's shape.
    #[error("epilogue matrix `{tensor}` must be an input of the shape of the output `{output}`")]
    EpilogueMatrixNotLikeOutput {
        /// The tensor's name.
        tensor: String,
        /// The output's name.
        output: String,
    },
    /// An epilogue vector names a tensor that is not a rank-1 input.
    #[error("epilogue vector `{tensor}` must be a rank-1 input tensor; it is {what}")]
    EpilogueVectorNotRank1Input {
        /// The tensor's name.
        tensor: String,
        /// What it is instead (`an output`, `of rank 2`).
        what: String,
    },
    /// An epilogue vector's length is not the output dimension it runs along.
    #[error("epilogue vector `{tensor}` along {along} must have the output's {which} dimension `{want}`, it has `{got}`")]
    EpilogueVectorLength {
        /// The tensor's name.
        tensor: String,
        /// `rows` or `cols`.
        along: &'static str,
        /// `row` or `column`.
        which: &'static str,
        /// The output's dimension, as written in its shape.
        want: String,
        /// The vector's one dimension.
        got: String,
    },
    /// An epilogue vector is read but the output has fewer than two dimensions.
    #[error("epilogue vectors need an output of at least two dimensions (rows and columns); `{0}` has fewer")]
    EpilogueOutputRank(String),
    /// An epilogue's group of columns is empty.
    #[error("an epilogue's column group has at least one column")]
    EpilogueGroupZero,
    /// An epilogue group store names an input tensor.
    #[error("epilogue group store `{0}` must be an output tensor; it is an input")]
    EpilogueGroupStoreNotOutput(String),
    /// An epilogue group store names the output the program's last value is stored to.
    #[error("epilogue group store `{0}` is the output the epilogue's last value is stored to; a group store needs an output of its own")]
    EpilogueGroupStoreIsMainOutput(String),
    /// Two epilogue group stores name one tensor.
    #[error("epilogue group store `{0}` is stored to by an earlier group store too")]
    EpilogueGroupStoreTwice(String),
    /// An epilogue group store's tensor is not `[G, M]` or `[M, G]`.
    #[error(
        "epilogue group store `{tensor}` must be [G, {rows}] (M-major) or [{rows}, G], G a symbol of its own for \
         ceil({cols}/{group}) ({rows} and {cols}: the output `{output}`'s rows and columns); it is [{got}]"
    )]
    EpilogueGroupStoreShape {
        /// The tensor's name.
        tensor: String,
        /// The main output's name.
        output: String,
        /// The output's row dimension, as written in its shape.
        rows: String,
        /// The output's column dimension, as written in its shape.
        cols: String,
        /// Columns in a group.
        group: u64,
        /// The tensor's shape, as written.
        got: String,
    },
    /// An epilogue group store names no value of the program.
    #[error("value {x} is not one of the epilogue's {values} values")]
    EpilogueGroupStoreNoValue {
        /// The index found.
        x: usize,
        /// How many values the program has.
        values: usize,
    },
    /// An epilogue group store's value differs between the columns of a group.
    #[error("value {x} may differ between the columns of a group of {group}: it reads value {varies}, {what}")]
    EpilogueGroupStoreVaries {
        /// The stored value's index.
        x: usize,
        /// Columns in a group.
        group: u64,
        /// The value it reads that differs between columns.
        varies: usize,
        /// What that value is (`the accumulator`, ...).
        what: &'static str,
    },
    /// An epilogue converts to a type that is not a float.
    #[error("an epilogue converts to float types only, not {0}")]
    EpilogueConvertNotFloat(DType),
    /// An epilogue constant is not finite.
    #[error("epilogue constant {0} is not finite")]
    EpilogueSplatNotFinite(f64),
}


/// A validation failure located at a field path such as `params[2].box_dims[1]`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {error}")]
pub struct Invalid {
    /// Path of the offending field, such as `params[2].box_dims[1]` or `block`.
    pub field: String,
    /// What is wrong with it.
    pub error: ValidationError,
}

fn bad(field: impl Into<String>, error: ValidationError) -> Invalid {
    Invalid { field: field.into(), error }
}

/// True if `s` matches `[A-Za-z_$][A-Za-z0-9_$]*`, the names PTX accepts
/// for entries and that the manifest requires for tensors and symbols.
///
/// ```
/// use tilec_artifact::is_identifier;
/// assert!(is_identifier("gemm_bf16$1"));
/// assert!(!is_identifier("1x") && !is_identifier("a-b") && !is_identifier(""));
/// ```
pub fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    match c.next() {
        Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == '$' => {}
        _ => return false,
    }
    c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '$')
}

fn is_float(d: DType) -> bool {
    matches!(d, DType::Bf16 | DType::F16 | DType::F32 | DType::F64 | DType::F8e4m3 | DType::F8e5m2)
}

impl Manifest {
    /// Checks the manifest on its own (not against the PTX; see `Artifact`).
    ///
    /// Checks, in order: the format version, names, the GPU (a known
    /// target whose PTX target is `target`), block (at most 1024
    /// threads) and cluster (at most [`MAX_PORTABLE_CLUSTER_SIZE`] CTAs) sizes,
    /// the grid rule, shared memory, tensors (unique identifiers, rank 1..=5,
    /// an output), each parameter (known tensor or symbol, TMA dtype and box
    /// rules, literals that fit), that every tensor is used, and the parameter
    /// buffer size. The first failure is returned with its field path.
    ///
    /// ```
    /// use tilec_artifact::{Manifest, ValidationError};
    /// let json = r#"{
    ///   "format_version": 1, "kernel_name": "fill", "entry": "fill", "target": "sm_90a",
    ///   "block": [128, 1, 1], "grid": {"rule": "tiles", "block_m": 64, "block_n": 64},
    ///   "tensors": [{"name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output"}],
    ///   "params": [{"kind": "ptr", "tensor": "C"}, {"kind": "scalar", "ty": "i32", "symbol": "K"}]
    /// }"#;
    /// let m = Manifest::from_json_str(json).unwrap();
    /// let err = m.validate().unwrap_err();
    /// assert_eq!(err.field, "params[1].symbol");
    /// assert_eq!(err.error, ValidationError::UnknownSymbol("K".into()));
    /// ```
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.format_version != FORMAT_VERSION {
            return Err(bad(
                "format_version",
                ValidationError::UnsupportedVersion { found: self.format_version, expected: FORMAT_VERSION },
            ));
        }
        if self.kernel_name.is_empty() {
            return Err(bad("kernel_name", ValidationError::Empty));
        }
        if !is_identifier(&self.entry) {
            return Err(bad("entry", ValidationError::BadIdentifier(self.entry.clone())));
        }
        if self.target.is_empty() {
            return Err(bad("target", ValidationError::Empty));
        }
        if let Some(gpu) = &self.gpu {
            let known = Target::from_name(gpu).map_err(|_| bad("gpu", ValidationError::UnknownGpu(gpu.clone())))?;
            if known.sm != self.target {
                return Err(bad(
                    "gpu",
                    ValidationError::GpuRunsOtherTarget { gpu: gpu.clone(), sm: known.sm, target: self.target.clone() },
                ));
            }
        }
        for (i, &d) in self.block.iter().enumerate() {
            if d == 0 {
                return Err(bad(format!("block[{i}]"), ValidationError::ZeroDim(d)));
            }
        }
        let threads: u64 = self.block.iter().map(|&d| d as u64).product();
        if threads > 1024 {
            return Err(bad("block", ValidationError::TooManyThreads { threads }));
        }
        for (i, &d) in self.cluster.iter().enumerate() {
            if d == 0 {
                return Err(bad(format!("cluster[{i}]"), ValidationError::ZeroDim(d)));
            }
        }
        let cs = self.cluster.iter().map(|&d| d as u64).product::<u64>();
        if cs > MAX_PORTABLE_CLUSTER_SIZE as u64 {
            return Err(bad(
                "cluster",
                ValidationError::ClusterTooLarge { size: cs.min(u32::MAX as u64) as u32, max: MAX_PORTABLE_CLUSTER_SIZE },
            ));
        }
        match self.grid {
            GridRule::Tiles { block_m, block_n, group_m, splits } => {
                if let Some(s @ (0 | 1)) = splits {
                    return Err(bad("grid.splits", ValidationError::TooFewSplits(s)));
                }
                if block_m == 0 {
                    return Err(bad("grid.block_m", ValidationError::ZeroDim(0)));
                }
                if block_n == 0 {
                    return Err(bad("grid.block_n", ValidationError::ZeroDim(0)));
                }
                if group_m == Some(0) {
                    return Err(bad("grid.group_m", ValidationError::ZeroDim(0)));
                }
            }
            GridRule::Sms { ctas_per_sm, wave_tile } => {
                if ctas_per_sm == 0 {
                    return Err(bad("grid.ctas_per_sm", ValidationError::ZeroDim(0)));
                }
                if let Some(i) = wave_tile.and_then(|t| t.iter().position(|&d| d == 0)) {
                    return Err(bad(format!("grid.wave_tile[{i}]"), ValidationError::ZeroDim(0)));
                }
            }
        }
        if self.dynamic_smem_bytes > MAX_DYNAMIC_SMEM_SM90 {
            return Err(bad(
                "dynamic_smem_bytes",
                ValidationError::SmemTooLarge { bytes: self.dynamic_smem_bytes, max: MAX_DYNAMIC_SMEM_SM90 },
            ));
        }

        let mut names = HashSet::new();
        for (i, t) in self.tensors.iter().enumerate() {
            let f = format!("tensors[{i}]");
            if !is_identifier(&t.name) {
                return Err(bad(format!("{f}.name"), ValidationError::BadIdentifier(t.name.clone())));
            }
            if !names.insert(t.name.as_str()) {
                return Err(bad(format!("{f}.name"), ValidationError::DuplicateTensor(t.name.clone())));
            }
            if t.shape.is_empty() || t.shape.len() > MAX_TMA_RANK {
                return Err(bad(format!("{f}.shape"), ValidationError::BadRank(t.shape.len())));
            }
            for (j, d) in t.shape.iter().enumerate() {
                match d {
                    Dim::Const(0) => return Err(bad(format!("{f}.shape[{j}]"), ValidationError::ZeroConstDim)),
                    Dim::Sym(s) if !is_identifier(s) => {
                        return Err(bad(format!("{f}.shape[{j}]"), ValidationError::BadIdentifier(s.clone())))
                    }
                    _ => {}
                }
            }
        }
        if !self.tensors.iter().any(|t| t.role == Role::Output) {
            return Err(bad("tensors", ValidationError::NoOutput));
        }

        let symbols = self.symbols();
        let mut used = HashSet::new();
        let mut workspaces = 0;
        for (i, p) in self.params.iter().enumerate() {
            let f = format!("params[{i}]");
            match p {
                Param::Ptr { tensor } => {
                    if self.tensor(tensor).is_none() {
                        return Err(bad(format!("{f}.tensor"), ValidationError::UnknownTensor(tensor.clone())));
                    }
                    used.insert(tensor.as_str());
                }
                Param::Tma(tma) => {
                    let t = self
                        .tensor(&tma.tensor)
                        .ok_or_else(|| bad(format!("{f}.tensor"), ValidationError::UnknownTensor(tma.tensor.clone())))?;
                    used.insert(tma.tensor.as_str());
                    validate_tma(&f, tma, t)?;
                }
                Param::Workspace { bytes_per_tile } => {
                    workspaces += 1;
                    if workspaces > 1 || *bytes_per_tile == 0 {
                        return Err(bad(f, ValidationError::BadWorkspace));
                    }
                }
                Param::Scalar { ty, source } => match source {
                    ScalarSource::Symbol(s) => {
                        if !symbols.iter().any(|x| x == s) {
                            return Err(bad(format!("{f}.symbol"), ValidationError::UnknownSymbol(s.clone())));
                        }
                    }
                    ScalarSource::Literal(v) => {
                        if !literal_fits(*v, *ty) {
                            return Err(bad(
                                format!("{f}.literal"),
                                ValidationError::LiteralOutOfRange { value: *v, ty: *ty },
                            ));
                        }
                    }
                },
            }
        }
        for (i, t) in self.tensors.iter().enumerate() {
            if !used.contains(t.name.as_str()) {
                return Err(bad(format!("tensors[{i}]"), ValidationError::UnusedTensor(t.name.clone())));
            }
        }
        if let Some(epilogue) = &self.epilogue {
            self.validate_epilogue(epilogue)?;
        }
        let pb = self.param_bytes();
        if pb > MAX_PARAM_BYTES {
            return Err(bad("params", ValidationError::ParamsTooLarge { bytes: pb, max: MAX_PARAM_BYTES }));
        }
        Ok(())
    }
}

impl Manifest {
    /// The epilogue's checks: at least one value, operands strictly
    /// earlier, constants finite, conversions to float types, groups of at
    /// least one column, every vector a rank-1 input whose one dimension is
    /// the output's rows (the second-last dimension, `along: rows`) or
    /// columns (the last, `along: cols`), and every group store
    /// ([`Manifest::validate_group_stores`]). Errors are located at
    /// `epilogue.values[i]`'s or `epilogue.group_stores[i]`'s field.
    fn validate_epilogue(&self, epilogue: &crate::Epilogue) -> Result<(), Invalid> {
        use crate::{Along, EpilogueValue};
        if epilogue.values.is_empty() {
            return Err(bad("epilogue.values", ValidationError::EmptyEpilogue));
        }
        let output = self.tensors.iter().find(|t| t.role == Role::Output).expect("validated: an output exists");
        for (i, v) in epilogue.values.iter().enumerate() {
            let f = format!("epilogue.values[{i}]");
            let operands: Vec<(&str, usize)> = match v {
                EpilogueValue::Acc | EpilogueValue::Vector { .. } | EpilogueValue::Matrix { .. } => Vec::new(),
                EpilogueValue::AccPart { block, part, parts } => {
                    if *block == 0 || *parts < 2 || part >= parts {
                        return Err(bad(f.clone(), ValidationError::EpilogueAccPart { block: *block, part: *part, parts: *parts }));
                    }
                    Vec::new()
                }
                EpilogueValue::Splat { value } => {
                    if !value.is_finite() {
                        return Err(bad(format!("{f}.value"), ValidationError::EpilogueSplatNotFinite(*value)));
                    }
                    Vec::new()
                }
                EpilogueValue::Unary { x, .. } => vec![("x", *x)],
                EpilogueValue::GroupReduce { x, group, .. } => {
                    if *group == 0 {
                        return Err(bad(format!("{f}.group"), ValidationError::EpilogueGroupZero));
                    }
                    vec![("x", *x)]
                }
                EpilogueValue::Convert { to, x } => {
                    if !is_float(*to) {
                        return Err(bad(format!("{f}.to"), ValidationError::EpilogueConvertNotFloat(*to)));
                    }
                    vec![("x", *x)]
                }
                EpilogueValue::Binary { lhs, rhs, .. } => vec![("lhs", *lhs), ("rhs", *rhs)],
            };
            for (name, operand) in operands {
                if operand >= i {
                    return Err(bad(
                        format!("{f}.{name}"),
                        ValidationError::EpilogueOperandNotEarlier { index: i, operand },
                    ));
                }
            }
            if let EpilogueValue::Matrix { tensor } = v {
                let t = self
                    .tensor(tensor)
                    .ok_or_else(|| bad(format!("{f}.tensor"), ValidationError::UnknownTensor(tensor.clone())))?;
                if t.role != Role::Input || t.shape != output.shape {
                    return Err(bad(
                        format!("{f}.tensor"),
                        ValidationError::EpilogueMatrixNotLikeOutput { tensor: tensor.clone(), output: output.name.clone() },
                    ));
                }
                continue;
            }
            let EpilogueValue::Vector { tensor, along } = v else { continue };
            let t = self
                .tensor(tensor)
                .ok_or_else(|| bad(format!("{f}.tensor"), ValidationError::UnknownTensor(tensor.clone())))?;
            let not = |what: String| {
                bad(format!("{f}.tensor"), ValidationError::EpilogueVectorNotRank1Input { tensor: tensor.clone(), what })
            };
            if t.role != Role::Input {
                return Err(not("an output".into()));
            }
            if t.shape.len() != 1 {
                return Err(not(format!("of rank {}", t.shape.len())));
            }
            let r = output.shape.len();
            if r < 2 {
                return Err(bad(format!("{f}.tensor"), ValidationError::EpilogueOutputRank(output.name.clone())));
            }
            let (want, along_name, which) = match along {
                Along::Rows => (&output.shape[r - 2], "rows", "row"),
                Along::Cols => (&output.shape[r - 1], "cols", "column"),
            };
            if &t.shape[0] != want {
                return Err(bad(
                    format!("{f}.along"),
                    ValidationError::EpilogueVectorLength {
                        tensor: tensor.clone(),
                        along: along_name,
                        which,
                        want: want.to_string(),
                        got: t.shape[0].to_string(),
                    },
                ));
            }
        }
        self.validate_group_stores(epilogue, output)
    }

    /// Each group store's checks: its tensor an output other than `output`
    /// (the one the last value is stored to), stored to once, of shape
    /// `[G, M]` (M-major) or `[M, G]` (`M` the output's row dimension, `G` a
    /// symbol that is neither of the output's dimensions, bound to
    /// `ceil(N / group)`); a group of at least one column; and its value one
    /// of the program's, the same at every column of a group
    /// ([`crate::Epilogue::varies_within`]).
    fn validate_group_stores(&self, epilogue: &crate::Epilogue, output: &TensorDecl) -> Result<(), Invalid> {
        use crate::EpilogueValue;
        for (i, store) in epilogue.group_stores.iter().enumerate() {
            let f = format!("epilogue.group_stores[{i}]");
            let tensor = &store.tensor;
            let at_tensor = |error| Err(bad(format!("{f}.tensor"), error));
            let Some(t) = self.tensor(tensor) else { return at_tensor(ValidationError::UnknownTensor(tensor.clone())) };
            if t.role != Role::Output {
                return at_tensor(ValidationError::EpilogueGroupStoreNotOutput(tensor.clone()));
            }
            if t.name == output.name {
                return at_tensor(ValidationError::EpilogueGroupStoreIsMainOutput(tensor.clone()));
            }
            if epilogue.group_stores[..i].iter().any(|s| &s.tensor == tensor) {
                return at_tensor(ValidationError::EpilogueGroupStoreTwice(tensor.clone()));
            }
            let r = output.shape.len();
            if r < 2 {
                return at_tensor(ValidationError::EpilogueOutputRank(output.name.clone()));
            }
            let (rows, cols) = (&output.shape[r - 2], &output.shape[r - 1]);
            let group_dim = |d: &Dim| matches!(d, Dim::Sym(_)) && d != rows && d != cols;
            let laid_out = match &t.shape[..] {
                [a, b] => (b == rows && group_dim(a)) || (a == rows && group_dim(b)),
                _ => false,
            };
            if !laid_out {
                let got: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
                return at_tensor(ValidationError::EpilogueGroupStoreShape {
                    tensor: tensor.clone(),
                    output: output.name.clone(),
                    rows: rows.to_string(),
                    cols: cols.to_string(),
                    group: store.group,
                    got: got.join(", "),
                });
            }
            if store.group == 0 {
                return Err(bad(format!("{f}.group"), ValidationError::EpilogueGroupZero));
            }
            if store.x >= epilogue.values.len() {
                return Err(bad(
                    format!("{f}.x"),
                    ValidationError::EpilogueGroupStoreNoValue { x: store.x, values: epilogue.values.len() },
                ));
            }
            if let Some(varies) = epilogue.varies_within(store.x, store.group) {
                let what = match epilogue.values[varies] {
                    EpilogueValue::Acc => "the accumulator",
                    EpilogueValue::AccPart { .. } => "an accumulator part",
                    EpilogueValue::Matrix { .. } => "a matrix element",
                    EpilogueValue::Vector { .. } => "a vector's element of the column",
                    _ => "a reduction over groups that split this one",
                };
                return Err(bad(
                    format!("{f}.x"),
                    ValidationError::EpilogueGroupStoreVaries { x: store.x, group: store.group, varies, what },
                ));
            }
        }
        Ok(())
    }
}

/// True if the literal `v` is representable as `ty`: finite; for `f32`
/// within its range; for integer types a whole number within the type's
/// range, and for the 64-bit ones within +-2^53, where every integer is
/// exact in the JSON's `f64`.
///
/// ```
/// use tilec_artifact::{literal_fits, ScalarType};
/// assert!(literal_fits(-1.0, ScalarType::I32));
/// assert!(!literal_fits(-1.0, ScalarType::U32));
/// assert!(!literal_fits(0.5, ScalarType::I64));
/// assert!(literal_fits(0.5, ScalarType::F32));
/// ```
pub fn literal_fits(v: f64, ty: ScalarType) -> bool {
    if !v.is_finite() {
        return false;
    }
    let int = v.fract() == 0.0;
    match ty {
        ScalarType::F32 => v.abs() <= f32::MAX as f64,
        ScalarType::I32 => int && v >= i32::MIN as f64 && v <= i32::MAX as f64,
        ScalarType::U32 => int && v >= 0.0 && v <= u32::MAX as f64,
        ScalarType::I64 => int && v >= -(2f64.powi(53)) && v <= 2f64.powi(53),
        ScalarType::U64 => int && v >= 0.0 && v <= 2f64.powi(53),
    }
}

fn validate_tma(f: &str, tma: &TmaParam, t: &TensorDecl) -> Result<(), Invalid> {
    if tma.dtype != t.dtype {
        return Err(bad(
            format!("{f}.dtype"),
            ValidationError::DtypeMismatch { tensor: t.name.clone(), param: tma.dtype, declared: t.dtype },
        ));
    }
    if tma.flat && (tma.box_dims.len() != 1 || tma.swizzle != Swizzle::None) {
        return Err(bad(
            format!("{f}.box_dims"),
            ValidationError::FlatBoxNotOneRun { box_rank: tma.box_dims.len(), swizzle: tma.swizzle },
        ));
    }
    if tma.tail && !tma.fit_rows {
        return Err(bad(format!("{f}.tail"), ValidationError::TailWithoutFitRows));
    }
    if !tma.flat && tma.box_dims.len() != t.shape.len() {
        return Err(bad(
            format!("{f}.box_dims"),
            ValidationError::BoxRankMismatch {
                tensor: t.name.clone(),
                box_rank: tma.box_dims.len(),
                tensor_rank: t.shape.len(),
            },
        ));
    }
    for (j, &b) in tma.box_dims.iter().enumerate() {
        if b == 0 || b > MAX_TMA_BOX_DIM {
            return Err(bad(format!("{f}.box_dims[{j}]"), ValidationError::BoxDimOutOfRange { value: b }));
        }
    }
    let last = tma.box_dims.len() - 1;
    let inner_bytes = tma.box_dims[last] * t.dtype.size_bytes() as u32;
    if !inner_bytes.is_multiple_of(16) {
        return Err(bad(format!("{f}.box_dims[{last}]"), ValidationError::InnerBoxNotMultipleOf16 { bytes: inner_bytes }));
    }
    let span = tma.swizzle.span_bytes();
    if span != 0 && inner_bytes > span {
        return Err(bad(
            format!("{f}.box_dims[{last}]"),
            ValidationError::InnerBoxExceedsSwizzle { bytes: inner_bytes, span },
        ));
    }
    if tma.oob_fill == OobFill::Nan && !is_float(t.dtype) {
        return Err(bad(
            format!("{f}.oob_fill"),
            ValidationError::NanFillOnInteger { tensor: t.name.clone(), dtype: t.dtype },
        ));
    }
    Ok(())
}
