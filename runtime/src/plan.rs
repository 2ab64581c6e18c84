//! Pure launch planning: binds problem sizes and buffers to a manifest,
//! validates them, and computes the grid, the exact `cuTensorMapEncodeTiled`
//! arguments, and the scalar values. No CUDA call happens here, so all of it
//! is unit-tested without a GPU.

use crate::error::{Result, RuntimeError};
use cudarc::driver::sys;
use std::collections::BTreeMap;
use tilec_artifact::*;
use tilec_target::fewest_keeping_turns;

/// Values of the shape symbols (M, N, K, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problem {
    /// Symbol name to value.
    pub symbols: BTreeMap<String, u64>,
}

impl Problem {
    /// M, N, K of a GEMM.
    pub fn gemm(m: u64, n: u64, k: u64) -> Self {
        Problem::default().with("M", m).with("N", n).with("K", k)
    }
    /// The problem with `symbol` bound to `value`.
    pub fn with(mut self, symbol: &str, value: u64) -> Self {
        self.symbols.insert(symbol.to_string(), value);
        self
    }
    /// The value of `symbol`, or [`RuntimeError::MissingSymbol`].
    pub fn get(&self, symbol: &str) -> Result<u64> {
        self.symbols.get(symbol).copied().ok_or_else(|| RuntimeError::MissingSymbol(symbol.to_string()))
    }
}

/// A device buffer bound to a manifest tensor (address and size only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorBinding {
    /// The manifest tensor it binds.
    pub name: String,
    /// The buffer's element type.
    pub dtype: DType,
    /// The buffer's device address.
    pub addr: u64,
    /// The buffer's size in bytes.
    pub bytes: u64,
}

/// The arguments of one `cuTensorMapEncodeTiled` call, innermost dimension
/// first as CUDA wants them. Only the first `rank` entries are meaningful.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmaEncode {
    /// The tensor's name.
    pub tensor: String,
    /// The element type, as CUDA names it.
    pub data_type: sys::CUtensorMapDataType,
    /// Dimensions in use (at most 5).
    pub rank: u32,
    /// The tensor's device address.
    pub global_address: u64,
    /// Extent of each dimension, innermost first.
    pub global_dim: [u64; 5],
    /// Byte strides of dimensions 1..rank (dimension 0 is contiguous).
    pub global_strides: [u64; 4],
    /// The box TMA copies, innermost first.
    pub box_dim: [u32; 5],
    /// Element strides (all 1).
    pub element_strides: [u32; 5],
    /// Interleaving (none).
    pub interleave: sys::CUtensorMapInterleave,
    /// The shared-memory swizzle.
    pub swizzle: sys::CUtensorMapSwizzle,
    /// L2 promotion of the loads.
    pub l2_promotion: sys::CUtensorMapL2promotion,
    /// What out-of-bounds elements read as (zero).
    pub oob_fill: sys::CUtensorMapFloatOOBfill,
}

/// One kernel parameter's value, in manifest order.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// A TMA descriptor, passed by value.
    Tma(TmaEncode),
    /// A device pointer.
    Ptr(u64),
    /// A 32-bit signed scalar.
    I32(i32),
    /// A 32-bit unsigned scalar.
    U32(u32),
    /// A 64-bit signed scalar.
    I64(i64),
    /// A 64-bit unsigned scalar.
    U64(u64),
    /// A 32-bit float.
    F32(f32),
    /// A zeroed device buffer of this many bytes that the launch allocates
    /// (the manifest's `workspace`).
    Workspace(u64),
}

/// Everything one launch needs, computed without a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchPlan {
    /// CTAs along x, y, z.
    pub grid: [u32; 3],
    /// Threads per CTA along x, y, z.
    pub block: [u32; 3],
    /// CTAs per cluster along x, y, z.
    pub cluster: [u32; 3],
    /// Dynamic shared memory per CTA, in bytes.
    pub dynamic_smem_bytes: u32,
    /// The kernel's parameters, in signature order.
    pub params: Vec<ParamValue>,
}

/// Shared memory the hardware keeps for each CTA besides what it asks for.
const CTA_RESERVED_SMEM_BYTES: u32 = 1024;

/// The dynamic shared memory with which a CTA of a kernel that asks for
/// `dynamic` (and has `static_bytes` of its own) has its SM to itself: no
/// less than `dynamic`, and more than half of the SM's `sm_bytes` with the
/// static and reserved bytes counted, so that no second CTA fits beside it
/// (at most `max_dynamic`, the most a CTA may opt in to).
///
/// Why: a grid of at most one CTA an SM launched with programmatic
/// dependent launch starts while the previous kernel runs, and its CTAs go
/// where shared memory is free, two to an SM beside the previous kernel's
/// where they fit, while other SMs stand idle once that kernel ends. With
/// each CTA claiming more than half an SM they spread one to an SM as
/// without the launch attribute (docs/findings.md, HBM and memory-bound
/// GEMMs: the swapped M = 8 layer's picks).
pub fn smem_alone_on_sm(dynamic: u32, static_bytes: u32, sm_bytes: u32, max_dynamic: u32) -> u32 {
    let more_than_half = (sm_bytes / 2 + 1).saturating_sub(static_bytes + CTA_RESERVED_SMEM_BYTES);
    dynamic.max(more_than_half.min(max_dynamic))
}

/// Whether a launch of `grid` over `sms` SMs takes at most one CTA an SM.
pub fn one_cta_an_sm(grid: [u32; 3], sms: u32) -> bool {
    grid.iter().map(|&d| d as u64).product::<u64>() <= sms as u64
}

/// The `cuTensorMapEncodeTiled` element type of a manifest type.
pub fn tma_data_type(d: DType) -> sys::CUtensorMapDataType {
    use sys::CUtensorMapDataType as T;
    match d {
        DType::Bf16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::F64 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        // TMA moves FP8 and 8-bit integers as bytes.
        DType::F8e4m3 | DType::F8e5m2 | DType::I8 | DType::U8 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        DType::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        DType::U32 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        DType::I64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
    }
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

fn round_up(a: u64, b: u64) -> u64 {
    ceil_div(a, b) * b
}

/// The grid for a manifest's rule. `num_sms` is the device's SM count.
pub fn compute_grid(m: &Manifest, problem: &Problem, num_sms: u32) -> Result<[u32; 3]> {
    let c = m.cluster.map(|d| d as u64);
    let g: [u64; 3] = match m.grid {
        GridRule::Tiles { block_m, block_n, group_m, splits } => {
            let [rows, cols, batch] = output_extent(m, problem)?;
            let tm = ceil_div(rows, block_m as u64).max(1);
            let tn = ceil_div(cols, block_n as u64).max(1);
            let splits = splits.unwrap_or(1) as u64;
            let base = if group_m.is_some() { [tm * tn, batch, splits] } else { [tm, tn, batch * splits] };
            [round_up(base[0], c[0]), round_up(base[1], c[1]), round_up(base[2], c[2])]
        }
        GridRule::Sms { ctas_per_sm, wave_tile } => {
            let total = num_sms as u64 * ctas_per_sm as u64;
            let mut clusters = (total / (c[0] * c[1] * c[2])).max(1);
            if let Some([rows, cols]) = wave_tile {
                let [r, n, batch] = output_extent(m, problem)?;
                let units = ceil_div(r, rows as u64) * ceil_div(n, cols as u64) * batch;
                clusters = fewest_keeping_turns(units, clusters);
            }
            [clusters * c[0], c[1], c[2]]
        }
    };
    if g[0] > i32::MAX as u64 || g[1] > 65535 || g[2] > 65535 {
        return Err(RuntimeError::GridTooLarge { grid: g });
    }
    Ok(g.map(|d| d as u32))
}

/// Rows, columns and the product of any leading dimensions of the output
/// tensor the `tiles` rule tiles (its last two dimensions are the output
/// tile's); symbols `M` and `N` when the manifest has no rank-2 or higher
/// output.
fn output_extent(m: &Manifest, problem: &Problem) -> Result<[u64; 3]> {
    match m.tensors.iter().find(|t| t.role == Role::Output && t.shape.len() >= 2) {
        Some(out) => {
            let shape = resolve_shape(out, problem)?;
            let (batch, tile) = shape.split_at(shape.len() - 2);
            Ok([tile[0], tile[1], batch.iter().product()])
        }
        None => Ok([problem.get("M")?, problem.get("N")?, 1]),
    }
}

/// Resolves a tensor's shape (outer-to-inner) and checks every dimension.
pub fn resolve_shape(t: &TensorDecl, problem: &Problem) -> Result<Vec<u64>> {
    t.shape
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let v = match d {
                Dim::Const(c) => *c,
                Dim::Sym(s) => problem.get(s)?,
            };
            if v == 0 {
                return Err(RuntimeError::ZeroSizedDim { tensor: t.name.clone(), dim: i, symbol: d.to_string() });
            }
            Ok(v)
        })
        .collect()
}

/// The `cuTensorMapEncodeTiled` arguments for a TMA parameter over a dense
/// row-major tensor of `shape` (outer-to-inner) at `addr`; a flat one
/// addresses all its elements as one dimension.
pub fn tma_encode_args(tma: &TmaParam, shape: &[u64], addr: u64) -> Result<TmaEncode> {
    let name = &tma.tensor;
    let elem = tma.dtype.size_bytes() as u64;
    if !addr.is_multiple_of(16) {
        return Err(RuntimeError::Misaligned { tensor: name.clone(), addr, align: 16 });
    }
    let flat_dims;
    let shape = if tma.flat {
        let elements = shape.iter().product::<u64>();
        // The kernel addresses an element by its signed 32-bit index.
        if elements > i32::MAX as u64 {
            return Err(RuntimeError::FlatTooLarge { tensor: name.clone(), elements });
        }
        flat_dims = [elements];
        &flat_dims[..]
    } else {
        shape
    };
    let rank = shape.len();
    let mut global_dim = [1u64; 5];
    let mut global_strides = [0u64; 4];
    let mut box_dim = [1u32; 5];
    let mut stride = elem;
    for i in 0..rank {
        // i counts from the innermost dimension
        let d = shape[rank - 1 - i];
        if d > 1u64 << 32 {
            return Err(RuntimeError::DimTooLarge { tensor: name.clone(), dim: rank - 1 - i, value: d });
        }
        global_dim[i] = d;
        box_dim[i] = tma.box_dims[rank - 1 - i];
        if i > 0 {
            if !stride.is_multiple_of(tilec_target::TMA_STRIDE_ALIGN_BYTES) {
                return Err(RuntimeError::StrideNotMultipleOf16 { tensor: name.clone(), dim: rank - 1 - i, stride });
            }
            if stride >= 1u64 << 40 {
                return Err(RuntimeError::StrideTooLarge { tensor: name.clone(), dim: rank - 1 - i, stride });
            }
            global_strides[i - 1] = stride;
        }
        stride = stride.saturating_mul(d);
    }
    if rank >= 2 {
        // The kernel expects the bytes of as many rows (`fit_rows`).
        box_dim[1] = tma.fitted_rows(box_dim[1], shape[rank - 2]);
    }
    Ok(TmaEncode {
        tensor: name.clone(),
        data_type: tma_data_type(tma.dtype),
        rank: rank as u32,
        global_address: addr,
        global_dim,
        global_strides,
        box_dim,
        element_strides: [1; 5],
        interleave: sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle: match tma.swizzle {
            Swizzle::None => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            Swizzle::B32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            Swizzle::B64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            Swizzle::B128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
        },
        l2_promotion: match tma.l2_promotion {
            L2Promotion::None => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            L2Promotion::B64 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            L2Promotion::B128 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            L2Promotion::B256 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        },
        oob_fill: match tma.oob_fill {
            OobFill::Zero => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            OobFill::Nan => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
        },
    })
}

fn scalar_value(index: usize, ty: ScalarType, source: &ScalarSource, problem: &Problem) -> Result<ParamValue> {
    match source {
        ScalarSource::Literal(v) => Ok(match ty {
            ScalarType::I32 => ParamValue::I32(*v as i32),
            ScalarType::U32 => ParamValue::U32(*v as u32),
            ScalarType::I64 => ParamValue::I64(*v as i64),
            ScalarType::U64 => ParamValue::U64(*v as u64),
            ScalarType::F32 => ParamValue::F32(*v as f32),
        }),
        ScalarSource::Symbol(s) => {
            let value = problem.get(s)?;
            let over = || RuntimeError::ScalarOverflow { index, symbol: s.clone(), value, ty };
            Ok(match ty {
                ScalarType::I32 => ParamValue::I32(i32::try_from(value).map_err(|_| over())?),
                ScalarType::U32 => ParamValue::U32(u32::try_from(value).map_err(|_| over())?),
                ScalarType::I64 => ParamValue::I64(i64::try_from(value).map_err(|_| over())?),
                ScalarType::U64 => ParamValue::U64(value),
                ScalarType::F32 => ParamValue::F32(value as f32),
            })
        }
    }
}

/// Binds `problem` and `tensors` to the manifest, checks everything a launch
/// relies on, and returns the launch plan.
pub fn plan_launch(m: &Manifest, problem: &Problem, tensors: &[TensorBinding], num_sms: u32) -> Result<LaunchPlan> {
    // Bindings: every declared tensor exactly once, nothing else.
    for (i, b) in tensors.iter().enumerate() {
        if m.tensor(&b.name).is_none() {
            return Err(RuntimeError::UnknownTensor(b.name.clone()));
        }
        if tensors[..i].iter().any(|o| o.name == b.name) {
            return Err(RuntimeError::DuplicateBinding(b.name.clone()));
        }
    }
    let syms = m.symbols();
    for s in &syms {
        problem.get(s)?;
    }
    for (s, &v) in &problem.symbols {
        if !syms.contains(s) && !(matches!(m.grid, GridRule::Tiles { .. }) && (s == "M" || s == "N")) {
            return Err(RuntimeError::UnusedSymbol { symbol: s.clone(), value: v });
        }
    }
    let mut shapes = BTreeMap::new();
    for t in &m.tensors {
        let b = tensors
            .iter()
            .find(|b| b.name == t.name)
            .ok_or_else(|| RuntimeError::MissingTensor(t.name.clone()))?;
        if b.dtype != t.dtype {
            return Err(RuntimeError::DtypeMismatch { tensor: t.name.clone(), expected: t.dtype, got: b.dtype });
        }
        let shape = resolve_shape(t, problem)?;
        let need = shape
            .iter()
            .try_fold(t.dtype.size_bytes() as u64, |acc, &d| acc.checked_mul(d))
            .unwrap_or(u64::MAX);
        if b.bytes < need {
            return Err(RuntimeError::BufferTooSmall { tensor: t.name.clone(), need, have: b.bytes });
        }
        let align = t.dtype.size_bytes() as u64;
        if b.addr % align != 0 {
            return Err(RuntimeError::Misaligned { tensor: t.name.clone(), addr: b.addr, align });
        }
        shapes.insert(t.name.as_str(), (shape, b.addr));
    }
    let grid = compute_grid(m, problem, num_sms)?;
    let mut params = Vec::with_capacity(m.params.len());
    for (i, p) in m.params.iter().enumerate() {
        params.push(match p {
            Param::Tma(tma) => {
                let (shape, addr) = &shapes[tma.tensor.as_str()];
                ParamValue::Tma(tma_encode_args(tma, shape, *addr)?)
            }
            Param::Ptr { tensor } => ParamValue::Ptr(shapes[tensor.as_str()].1),
            Param::Scalar { ty, source } => scalar_value(i, *ty, source, problem)?,
            Param::Workspace { bytes_per_tile } => ParamValue::Workspace(grid[0] as u64 * grid[1] as u64 * bytes_per_tile),
        });
    }
    Ok(LaunchPlan { grid, block: m.block, cluster: m.cluster, dynamic_smem_bytes: m.dynamic_smem_bytes, params })
}
