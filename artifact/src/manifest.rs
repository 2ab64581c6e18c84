//! Manifest types: everything the runtime needs to launch a compiled kernel.
//!
//! Conventions (also in `docs/artifact.md`):
//! - Tensors are dense and row-major. `shape` is written outer-to-inner
//!   (`["M", "K"]` means K is contiguous).
//! - TMA `box_dims` are written in the same order as the tensor's `shape`,
//!   outer-to-inner. The runtime reverses them (CUDA wants innermost first).
//! - Grid rule `tiles`: grid = (ceil(M / block_m), ceil(N / block_n), 1), or,
//!   with `group_m`, a 1-D grid of ceil(M/block_m) * ceil(N/block_n) CTAs
//!   whose rasterisation the kernel does itself. Grid rule `sms`: a 1-D grid
//!   of `ctas_per_sm * num_SMs` CTAs rounded down to a multiple of the cluster
//!   size, or, with `wave_tile`, the fewest whole clusters that keep the
//!   number of waves over its units. Either way, each grid dimension is then
//!   rounded up to a multiple of the cluster dimension; the kernel must
//!   tolerate CTAs past the last tile.

use serde::{Deserialize, Serialize};
use tilec_target::Target;

/// The manifest format this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Upper bound of dynamic shared memory per block on sm_90 (227 KiB): every
/// target's [`Target::smem_per_cta_bytes`] (a test checks that they agree).
pub const MAX_DYNAMIC_SMEM_SM90: u32 = Target::DEFAULT.smem_per_cta_bytes;
/// Largest portable cluster size (more needs a non-portable opt-in): every
/// target's [`Target::max_cluster_size`] (a test checks that they agree).
pub const MAX_PORTABLE_CLUSTER_SIZE: u32 = Target::DEFAULT.max_cluster_size;
/// Largest TMA box extent in any dimension.
pub const MAX_TMA_BOX_DIM: u32 = 256;
/// Largest tensor rank a tiled TMA descriptor accepts (without interleave).
pub const MAX_TMA_RANK: usize = 5;
/// Kernel parameter space limit on sm_70+ with CUDA >= 12.1.
pub const MAX_PARAM_BYTES: usize = 32_764;

/// The launch manifest of one compiled kernel, stored as `manifest.json`.
/// Unknown JSON fields are rejected; [`Manifest::validate`] checks
/// everything that does not depend on the run-time problem size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Format of this manifest; must equal [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Human-facing kernel name (e.g. "gemm_bf16_128x128x64").
    pub kernel_name: String,
    /// The `.entry` symbol in `kernel.ptx`.
    pub entry: String,
    /// PTX target the kernel was compiled for, e.g. "sm_90a".
    pub target: String,
    /// The GPU the kernel was compiled for, a [`Target`] name (e.g. "h200")
    /// whose PTX target is `target`: the runtime refuses to load the kernel
    /// on another GPU tilec knows. Absent (JSON default) in manifests
    /// written before the GPU was recorded, which the runtime loads on any
    /// device their `target` runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The configuration config selection chose, as `tilec compile
    /// --explain` prints it (without its `sms=` column); absent where no
    /// config selection decided the kernel. What a tuning run records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// What the kernel computes from a GEMM's accumulator before storing
    /// its output (see [`crate::Epilogue`]); absent where the program is not one
    /// GEMM whose epilogue tilec can describe (a grouped GEMM's kernels,
    /// hand-written nv IR), which the runtime's GEMM handle then refuses
    /// unless the kernel's tensors are exactly a plain GEMM's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epilogue: Option<crate::Epilogue>,
    /// Threads per CTA, [x, y, z].
    pub block: [u32; 3],
    /// CTAs per cluster, [x, y, z]; [1, 1, 1] means no cluster launch.
    #[serde(default = "one3")]
    pub cluster: [u32; 3],
    /// How the runtime derives the grid from the problem size (JSON `grid`,
    /// an object tagged by `rule`).
    pub grid: GridRule,
    /// Dynamic shared memory per CTA in bytes (JSON default 0); at most
    /// [`MAX_DYNAMIC_SMEM_SM90`]. The runtime opts in above 48 KiB.
    #[serde(default)]
    pub dynamic_smem_bytes: u32,
    /// The kernel waits for the grids its launch depends on before it
    /// touches memory (`tile-programmatic-launch`), so the runtime may
    /// launch it with programmatic dependent launch, overlapping the
    /// previous kernel's tail on the stream (JSON default false: launched
    /// only after the previous kernel completes).
    #[serde(default)]
    pub programmatic_launch: bool,
    /// The GEMM's logical tensors, which parameters name; names are unique,
    /// every tensor is used by a parameter and at least one is an output.
    pub tensors: Vec<TensorDecl>,
    /// Kernel parameters in PTX order.
    pub params: Vec<Param>,
}

fn one3() -> [u32; 3] {
    [1, 1, 1]
}

/// How many CTAs to launch for a problem size; JSON `{"rule": "tiles", ...}`
/// or `{"rule": "sms", ...}`. Each grid dimension is then rounded up to a
/// multiple of the cluster's, so kernels must tolerate CTAs past the last
/// tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum GridRule {
    /// One CTA per (block_m x block_n) output tile.
    Tiles {
        /// Rows of C (the M axis) per CTA; the grid's x extent is ceil(M / block_m).
        /// At least 1.
        block_m: u32,
        /// Columns of C (the N axis) per CTA; the grid's y extent is
        /// ceil(N / block_n). At least 1.
        block_n: u32,
        /// Grouped (L2-friendly) rasterisation: 1-D grid, the kernel maps ids.
        ///
        /// When present (at least 1), the grid is 1-D with one CTA per tile and the
        /// kernel maps CTA ids to tiles itself (grouping `group_m` tile rows); the
        /// runtime uses only its presence.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group_m: Option<u32>,
        /// CTAs that share each output tile along grid z (split-K's splits,
        /// which the kernel tells apart by block id z); absent for one. At
        /// least 2 when present; the grid's z extent is the product of the
        /// output's leading dimensions times it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        splits: Option<u32>,
    },
    /// Persistent: `ctas_per_sm` CTAs per SM, SM count read at run time.
    Sms {
        /// CTAs per SM (JSON default 1); the grid is `ctas_per_sm * SMs` rounded
        /// down to whole clusters, at least one cluster. At least 1.
        #[serde(default = "one")]
        ctas_per_sm: u32,
        /// The rows and columns of the output one cluster takes a turn of
        /// the kernel's loop over tiles, when every turn takes whole tiles
        /// (JSON `wave_tile`, optional). The grid is then the fewest whole
        /// clusters that keep the number of turns the busiest cluster runs
        /// over the `ceil(R / rows) * ceil(C / cols) * B` units (`R x C` the
        /// output's last two dimensions, `B` the product of the others):
        /// every cluster runs as many turns as the busiest, instead of a
        /// few running one turn fewer. Without it the grid is the whole
        /// device's (stream-K divides its last wave by the grid).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wave_tile: Option<[u32; 2]>,
    },
}

fn one() -> u32 {
    1
}

/// Element type of a tensor; JSON spells it as [`DType::name`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    /// bfloat16: 8 exponent and 7 mantissa bits, 2 bytes.
    Bf16,
    /// IEEE binary16, 2 bytes.
    F16,
    /// IEEE binary32, 4 bytes.
    F32,
    /// IEEE binary64, 8 bytes.
    F64,
    /// 8-bit float with 4 exponent and 3 mantissa bits (E4M3), 1 byte.
    F8e4m3,
    /// 8-bit float with 5 exponent and 2 mantissa bits (E5M2), 1 byte.
    F8e5m2,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// Signed 64-bit integer.
    I64,
}

impl DType {
    /// Bytes per element: 1 for the 8-bit types, 2 for bf16 and f16, 4 for the
    /// 32-bit types, 8 for f64 and i64.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F8e4m3 | DType::F8e5m2 | DType::I8 | DType::U8 => 1,
            DType::Bf16 | DType::F16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 => 8,
        }
    }
    /// The lower-case spelling used in the manifest JSON and by `Display`
    /// (`bf16`, `f8e4m3`, ...).
    ///
    /// ```
    /// assert_eq!(tilec_artifact::DType::F8e4m3.name(), "f8e4m3");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F8e4m3 => "f8e4m3",
            DType::F8e5m2 => "f8e5m2",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
        }
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the kernel reads or writes a tensor (JSON `input` or `output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Read by the kernel.
    Input,
    /// Written by the kernel; a manifest needs at least one.
    Output,
}

/// One dimension of a tensor shape: a symbol bound at run time or a constant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dim {
    /// A fixed extent (a JSON number), at least 1.
    Const(u64),
    /// A size bound at launch by name (a JSON string such as `"M"`); an
    /// identifier.
    Sym(String),
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Const(c) => write!(f, "{c}"),
            Dim::Sym(s) => f.write_str(s),
        }
    }
}

/// A logical tensor of the GEMM (one element of the JSON `tensors`): dense,
/// row-major, bound to a device buffer at launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorDecl {
    /// Identifier, unique among the manifest's tensors; parameters refer to the
    /// tensor by it.
    pub name: String,
    /// Element type; the buffer bound to the tensor must hold this type.
    pub dtype: DType,
    /// Outer-to-inner; the last dimension is contiguous.
    pub shape: Vec<Dim>,
    /// Whether the kernel reads or writes it.
    pub role: Role,
}

/// Shared-memory swizzle of a TMA box (JSON `none`, `32B`, `64B`, `128B`;
/// default `none`). With a swizzle, the box's inner extent in bytes must not
/// exceed the span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Swizzle {
    /// No swizzle.
    #[default]
    #[serde(rename = "none")]
    None,
    /// 32-byte swizzle span.
    #[serde(rename = "32B")]
    B32,
    /// 64-byte swizzle span.
    #[serde(rename = "64B")]
    B64,
    /// 128-byte swizzle span.
    #[serde(rename = "128B")]
    B128,
}

impl Swizzle {
    /// Swizzle span in bytes (0 for none).
    pub fn span_bytes(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }
}

/// L2 sector promotion of a TMA load (JSON `none`, `64B`, `128B`, `256B`;
/// default `128B`), passed to `cuTensorMapEncodeTiled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum L2Promotion {
    /// No promotion.
    #[serde(rename = "none")]
    None,
    /// Promote to 64-byte sectors.
    #[serde(rename = "64B")]
    B64,
    /// Promote to 128-byte sectors (the default).
    #[default]
    #[serde(rename = "128B")]
    B128,
    /// Promote to 256-byte sectors.
    #[serde(rename = "256B")]
    B256,
}

/// What a TMA load writes for elements outside the tensor (JSON `zero` or
/// `nan`; default `zero`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OobFill {
    /// Zeros, which leave a GEMM's sums unchanged.
    #[default]
    Zero,
    /// NaN "request zero FMA" fill; floating-point tensors only.
    Nan,
}

/// TMA interleave layout (JSON `none`, the default); only non-interleaved
/// descriptors are supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interleave {
    /// Not interleaved.
    #[default]
    None,
}

/// A TMA descriptor parameter (JSON `{"kind": "tma", ...}`): the runtime
/// encodes a tiled `CUtensorMap` of `tensor` with these box and mode
/// settings, deriving global dims and strides from the tensor's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmaParam {
    /// Name of the tensor (in [`Manifest::tensors`]) the descriptor addresses.
    pub tensor: String,
    /// Must equal the tensor's dtype (checked).
    pub dtype: DType,
    /// Box extents, outer-to-inner (same order as the tensor's shape); one
    /// extent when `flat`.
    pub box_dims: Vec<u32>,
    /// The descriptor addresses the tensor as one dimension of all its
    /// elements in memory order, each box a run of them (JSON default
    /// `false`, left out when false): how a kernel loads a column of a
    /// column-major tensor, such as a K block's row scales stored M-major.
    #[serde(default, skip_serializing_if = "is_false")]
    pub flat: bool,
    /// The box's rows (its second-last extent) stop at the tensor's rows
    /// rounded up to [`tilec_target::TMA_ROW_GRAIN`], where the tensor has fewer rows
    /// than the box (JSON default `false`, left out when false): the
    /// runtime encodes the descriptor with [`TmaParam::fitted_rows`] of
    /// the launch's shape, and the kernel expects the bytes of as many.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fit_rows: bool,
    /// With `fit_rows`: the descriptor of the boxes that straddle the
    /// tensor's last row, whose rows stop at the rows left past the last
    /// whole box, rounded up to [`tilec_target::TMA_ROW_GRAIN`] (JSON
    /// default `false`, left out when false). The kernel takes it for a box
    /// whose first row plus the box's rows passes the tensor's, and expects
    /// the bytes of as many rows: the copy engine pays for every row of a
    /// box, zero-filled ones included.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tail: bool,
    /// Shared-memory swizzle of the box (JSON default `none`).
    #[serde(default)]
    pub swizzle: Swizzle,
    /// L2 promotion (JSON default `128B`).
    #[serde(default)]
    pub l2_promotion: L2Promotion,
    /// Fill for out-of-bounds elements (JSON default `zero`).
    #[serde(default)]
    pub oob_fill: OobFill,
    /// Interleave layout (JSON default `none`, the only one).
    #[serde(default)]
    pub interleave: Interleave,
}

impl TmaParam {
    /// The rows the box copies from a tensor of `tensor_rows` rows: the
    /// full box, or with `fit_rows` the tensor's rows rounded up to
    /// [`tilec_target::TMA_ROW_GRAIN`] where that is fewer (never under
    /// the grain); with `tail` too, the rows past the last whole box
    /// (a whole box where there are none), rounded up the same way.
    pub fn fitted_rows(&self, box_rows: u32, tensor_rows: u64) -> u32 {
        if !self.fit_rows {
            return box_rows;
        }
        let rows = if self.tail { (tensor_rows.max(1) - 1) % u64::from(box_rows.max(1)) + 1 } else { tensor_rows };
        let grain = tilec_target::TMA_ROW_GRAIN;
        let rounded = rows.div_ceil(grain).max(1) * grain;
        rounded.min(u64::from(box_rows)) as u32
    }
}

/// PTX type of a scalar kernel parameter (JSON `ty`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalarType {
    /// Signed 32-bit (`.s32`).
    I32,
    /// Unsigned 32-bit (`.u32`).
    U32,
    /// Signed 64-bit (`.s64`).
    I64,
    /// Unsigned 64-bit (`.u64`).
    U64,
    /// IEEE binary32 (`.f32`).
    F32,
}

impl ScalarType {
    /// Bytes in the parameter buffer, which is also the alignment: 4 or 8.
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::U64 => 8,
        }
    }
}

/// Where a scalar's value comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalarSource {
    /// A shape symbol such as "M".
    Symbol(String),
    /// A constant.
    Literal(f64),
}

/// One kernel parameter, listed in PTX order; JSON is an object tagged by
/// `kind` (`tma`, `ptr`, `scalar` or `workspace`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Param {
    /// A `CUtensorMap` passed by value (128 bytes, `__grid_constant__`).
    Tma(TmaParam),
    /// A global pointer (u64) to a tensor's first element.
    Ptr {
        /// Name of the tensor whose buffer address is passed.
        tensor: String,
    },
    /// A 4- or 8-byte scalar whose value is a shape symbol's or a literal
    /// (JSON `{"kind": "scalar", "ty": ..., "symbol": "M"}` or `"literal": 8`).
    Scalar {
        /// PTX type of the parameter; a literal must fit it.
        ty: ScalarType,
        /// Where the value comes from (flattened into the parameter's object).
        #[serde(flatten)]
        source: ScalarSource,
    },
    /// A global pointer (u64) to scratch memory the runtime allocates,
    /// zeroed, for the launches of one bound call, and which the kernel
    /// leaves zeroed again: `bytes_per_tile` bytes for each CTA position
    /// (x, y) of the grid, that is each output tile, whatever the grid's z
    /// extent (JSON `{"kind": "workspace", "bytes_per_tile": N}`). At most
    /// one, with at least 1 byte a tile.
    Workspace {
        /// Bytes for each (x, y) position of the grid.
        bytes_per_tile: u64,
    },
}

impl Param {
    /// Size and alignment of this parameter in the kernel's parameter space.
    pub fn size_align(&self) -> (usize, usize) {
        match self {
            Param::Tma(_) => (128, 64),
            Param::Ptr { .. } | Param::Workspace { .. } => (8, 8),
            Param::Scalar { ty, .. } => (ty.size_bytes(), ty.size_bytes()),
        }
    }
}

impl Manifest {
    /// The declared tensor named `name`, if any.
    pub fn tensor(&self, name: &str) -> Option<&TensorDecl> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// CTAs per cluster: the product of [`Manifest::cluster`]'s dimensions (1
    /// without a cluster launch).
    pub fn cluster_size(&self) -> u32 {
        self.cluster.iter().product()
    }

    /// Every symbol used by a tensor shape, sorted and deduplicated.
    pub fn symbols(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .tensors
            .iter()
            .flat_map(|t| t.shape.iter())
            .filter_map(|d| match d {
                Dim::Sym(s) => Some(s.clone()),
                Dim::Const(_) => None,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Total bytes of the kernel parameter buffer, with alignment padding.
    pub fn param_bytes(&self) -> usize {
        let mut off = 0usize;
        for p in &self.params {
            let (s, a) = p.size_align();
            off = off.div_ceil(a) * a + s;
        }
        off
    }

    /// Parses manifest JSON without validating it; use
    /// [`parse_manifest`](crate::parse_manifest) to do both.
    pub fn from_json_str(s: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(s)
    }

    /// Pretty-printed JSON, as [`Artifact::write`](crate::Artifact::write)
    /// stores it (without the trailing newline it adds).
    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(self).expect("manifest serialises")
    }
}

/// Serde's test for leaving a `false` flag out of the JSON.
fn is_false(b: &bool) -> bool {
    !*b
}
