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
//!   size. Either way, each grid dimension is then rounded up to a multiple
//!   of the cluster dimension; the kernel must tolerate CTAs past the last tile.

use serde::{Deserialize, Serialize};

/// The manifest format this crate reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Upper bound of dynamic shared memory per block on sm_90 (227 KiB).
pub const MAX_DYNAMIC_SMEM_SM90: u32 = 232_448;
/// Largest portable cluster size (more needs a non-portable opt-in).
pub const MAX_PORTABLE_CLUSTER_SIZE: u32 = 8;
/// Largest TMA box extent in any dimension.
pub const MAX_TMA_BOX_DIM: u32 = 256;
/// Largest tensor rank a tiled TMA descriptor accepts (without interleave).
pub const MAX_TMA_RANK: usize = 5;
/// Kernel parameter space limit on sm_70+ with CUDA >= 12.1.
pub const MAX_PARAM_BYTES: usize = 32_764;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format_version: u32,
    /// Human-facing kernel name (e.g. "gemm_bf16_128x128x64").
    pub kernel_name: String,
    /// The `.entry` symbol in `kernel.ptx`.
    pub entry: String,
    /// PTX target the kernel was compiled for, e.g. "sm_90a".
    pub target: String,
    /// Threads per CTA, [x, y, z].
    pub block: [u32; 3],
    /// CTAs per cluster, [x, y, z]; [1, 1, 1] means no cluster launch.
    #[serde(default = "one3")]
    pub cluster: [u32; 3],
    pub grid: GridRule,
    #[serde(default)]
    pub dynamic_smem_bytes: u32,
    pub tensors: Vec<TensorDecl>,
    /// Kernel parameters in PTX order.
    pub params: Vec<Param>,
}

fn one3() -> [u32; 3] {
    [1, 1, 1]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum GridRule {
    /// One CTA per (block_m x block_n) output tile.
    Tiles {
        block_m: u32,
        block_n: u32,
        /// Grouped (L2-friendly) rasterisation: 1-D grid, the kernel maps ids.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group_m: Option<u32>,
    },
    /// Persistent: `ctas_per_sm` CTAs per SM, SM count read at run time.
    Sms {
        #[serde(default = "one")]
        ctas_per_sm: u32,
    },
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DType {
    Bf16,
    F16,
    F32,
    F64,
    F8e4m3,
    F8e5m2,
    I8,
    U8,
    I32,
    U32,
    I64,
}

impl DType {
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F8e4m3 | DType::F8e5m2 | DType::I8 | DType::U8 => 1,
            DType::Bf16 | DType::F16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 => 8,
        }
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Input,
    Output,
}

/// One dimension of a tensor shape: a symbol bound at run time or a constant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dim {
    Const(u64),
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorDecl {
    pub name: String,
    pub dtype: DType,
    /// Outer-to-inner; the last dimension is contiguous.
    pub shape: Vec<Dim>,
    pub role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Swizzle {
    #[default]
    #[serde(rename = "none")]
    None,
    #[serde(rename = "32B")]
    B32,
    #[serde(rename = "64B")]
    B64,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum L2Promotion {
    #[serde(rename = "none")]
    None,
    #[serde(rename = "64B")]
    B64,
    #[default]
    #[serde(rename = "128B")]
    B128,
    #[serde(rename = "256B")]
    B256,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OobFill {
    #[default]
    Zero,
    /// NaN "request zero FMA" fill; floating-point tensors only.
    Nan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interleave {
    #[default]
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmaParam {
    pub tensor: String,
    /// Must equal the tensor's dtype (checked).
    pub dtype: DType,
    /// Box extents, outer-to-inner (same order as the tensor's shape).
    pub box_dims: Vec<u32>,
    #[serde(default)]
    pub swizzle: Swizzle,
    #[serde(default)]
    pub l2_promotion: L2Promotion,
    #[serde(default)]
    pub oob_fill: OobFill,
    #[serde(default)]
    pub interleave: Interleave,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalarType {
    I32,
    U32,
    I64,
    U64,
    F32,
}

impl ScalarType {
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Param {
    /// A `CUtensorMap` passed by value (128 bytes, `__grid_constant__`).
    Tma(TmaParam),
    /// A global pointer (u64) to a tensor's first element.
    Ptr { tensor: String },
    Scalar {
        ty: ScalarType,
        #[serde(flatten)]
        source: ScalarSource,
    },
}

impl Param {
    /// Size and alignment of this parameter in the kernel's parameter space.
    pub fn size_align(&self) -> (usize, usize) {
        match self {
            Param::Tma(_) => (128, 64),
            Param::Ptr { .. } => (8, 8),
            Param::Scalar { ty, .. } => (ty.size_bytes(), ty.size_bytes()),
        }
    }
}

impl Manifest {
    pub fn tensor(&self, name: &str) -> Option<&TensorDecl> {
        self.tensors.iter().find(|t| t.name == name)
    }

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

    pub fn from_json_str(s: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(s)
    }

    pub fn to_json_string(&self) -> String {
        serde_json::to_string_pretty(self).expect("manifest serialises")
    }
}
