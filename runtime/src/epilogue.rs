//! Fused epilogues at run time: the vectors and matrices (residuals) an
//! epilogue reads, filled with random values; the reference (a GEMM's
//! accumulator in f64 taken through [`Epilogue::eval`]); which vendor
//! baseline computes the same ([`classify`]); and, for epilogues no vendor
//! kernel fuses, an
//! element-wise CUDA C kernel generated from the epilogue ([`cuda_source`])
//! and compiled with NVRTC ([`ElementwiseKernel`]), which runs after a
//! cuBLASLt GEMM writing bf16.
//!
//! Everything here but [`ElementwiseKernel`] and the uploads is pure and
//! unit-tested without a GPU.

use crate::acc_parts::{product_column, AccParts};
use crate::check::Rng;
use crate::cuda::Gpu;
use crate::error::{DriverCtx, Result, RuntimeError};
use crate::gemm::{GemmSize, MatrixSpec, OutputSpec, SaLayout, VectorSpec};
use crate::plan::TensorBinding;
use crate::quantize::OutputCheck;
use cudarc::driver::{sys, CudaFunction, CudaModule, CudaSlice};
use std::ffi::c_void;
use std::fmt::Write as _;
use std::sync::Arc;
use tilec_artifact::{round_to, Along, BinaryFn, DType, Epilogue, EpilogueRow, EpilogueValue, ReduceFn, UnaryFn};

/// One vector's values for a call: as the reference reads them (f64, each
/// exactly representable in the vector's type) and as the kernel does
/// (little-endian bytes of that type).
#[derive(Debug, Clone, PartialEq)]
pub struct HostVector {
    /// The tensor it binds.
    pub spec: VectorSpec,
    /// Its elements.
    pub values: Vec<f64>,
    /// The same elements in the tensor's type, as bytes to upload.
    pub bytes: Vec<u8>,
}

/// The little-endian bytes of `values` (each exact in `dtype`) as `dtype`.
fn encode(dtype: DType, values: impl ExactSizeIterator<Item = f64>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * dtype.size_bytes());
    for x in values {
        match dtype {
            DType::Bf16 => bytes.extend(half::bf16::from_f64(x).to_le_bytes()),
            DType::F16 => bytes.extend(half::f16::from_f64(x).to_le_bytes()),
            DType::F32 => bytes.extend((x as f32).to_le_bytes()),
            other => unreachable!("GemmSpec admits bf16, f16 and f32 vectors and matrices, not {other}"),
        }
    }
    bytes
}

impl HostVector {
    /// `values` rounded to the vector's type, with their bytes.
    pub fn from_values(spec: &VectorSpec, values: &[f64]) -> HostVector {
        let values: Vec<f64> = values.iter().map(|&x| round_to(spec.dtype, x)).collect();
        let bytes = encode(spec.dtype, values.iter().copied());
        HostVector { spec: spec.clone(), values, bytes }
    }

    /// `len` values uniform in [-1, 1), rounded to the vector's type.
    pub fn random(spec: &VectorSpec, len: usize, rng: &mut Rng) -> HostVector {
        let values: Vec<f64> = (0..len).map(|_| rng.uniform() as f64).collect();
        HostVector::from_values(spec, &values)
    }

    /// A binding of a device copy of [`HostVector::bytes`] at `addr`, named as its tensor.
    pub fn binding(&self, addr: u64) -> TensorBinding {
        TensorBinding { name: self.spec.name.clone(), dtype: self.spec.dtype, addr, bytes: self.bytes.len() as u64 }
    }
}

/// Fresh random values for each of `specs` at `size` (M along rows, N along columns).
pub fn random_vectors(specs: &[VectorSpec], size: GemmSize, rng: &mut Rng) -> Vec<HostVector> {
    specs.iter().map(|s| HostVector::random(s, s.len(size) as usize, rng)).collect()
}

/// Device copies of `vectors` and their bindings (by name), for
/// [`crate::GemmBuffers::with_vectors`].
pub fn upload_vectors(gpu: &Gpu, vectors: &[HostVector]) -> Result<(Vec<CudaSlice<u8>>, Vec<TensorBinding>)> {
    upload(gpu, vectors, "cuMemcpyHtoD(epilogue vector)", |v| &v.bytes, HostVector::binding)
}

/// Device copies of `items`' bytes and the bindings `binding` makes of them.
fn upload<T>(
    gpu: &Gpu,
    items: &[T],
    call: &'static str,
    bytes: impl Fn(&T) -> &[u8],
    binding: impl Fn(&T, u64) -> TensorBinding,
) -> Result<(Vec<CudaSlice<u8>>, Vec<TensorBinding>)> {
    let mut slices = Vec::with_capacity(items.len());
    let mut bindings = Vec::with_capacity(items.len());
    for item in items {
        let s = gpu.stream.clone_htod(bytes(item)).ctx(call)?;
        bindings.push(binding(item, gpu.addr(&s)));
        slices.push(s);
    }
    Ok((slices, bindings))
}

/// One matrix's values for a call (a residual `R[M,N]`, row-major): as the
/// reference reads them (each exactly representable in the matrix's type,
/// so f32 holds them exactly) and as the kernel does (little-endian bytes
/// of that type).
#[derive(Debug, Clone, PartialEq)]
pub struct HostMatrix {
    /// The tensor it binds.
    pub spec: MatrixSpec,
    /// Its columns (N); it has `values.len() / cols` rows.
    pub cols: usize,
    /// Its elements, row-major.
    pub values: Vec<f32>,
    /// The same elements in the tensor's type, as bytes to upload.
    pub bytes: Vec<u8>,
}

impl HostMatrix {
    /// `values` (row-major, `cols` columns) rounded to the matrix's type, with their bytes.
    pub fn from_values(spec: &MatrixSpec, cols: usize, values: &[f64]) -> HostMatrix {
        assert!(cols > 0 && values.len() % cols == 0, "HostMatrix::from_values: {} values in rows of {cols}", values.len());
        let values: Vec<f32> = values.iter().map(|&x| round_to(spec.dtype, x) as f32).collect();
        let bytes = encode(spec.dtype, values.iter().map(|&x| x as f64));
        HostMatrix { spec: spec.clone(), cols, values, bytes }
    }

    /// `M x N` values uniform in [-1, 1), rounded to the matrix's type
    /// (drawn on all cores, from one number of `rng`).
    pub fn random(spec: &MatrixSpec, size: GemmSize, rng: &mut Rng) -> HostMatrix {
        let dtype = spec.dtype;
        let values = crate::check::par_fill(spec.len(size) as usize, rng.next_u64(), |g| round_to(dtype, g.uniform() as f64) as f32);
        let bytes = encode(dtype, values.iter().map(|&x| x as f64));
        HostMatrix { spec: spec.clone(), cols: size.n as usize, values, bytes }
    }

    /// Element (`i`, `j`), zero outside the matrix.
    pub fn at(&self, i: usize, j: usize) -> f64 {
        if j >= self.cols {
            return 0.0;
        }
        self.values.get(i * self.cols + j).map_or(0.0, |&x| x as f64)
    }

    /// A binding of a device copy of [`HostMatrix::bytes`] at `addr`, named as its tensor.
    pub fn binding(&self, addr: u64) -> TensorBinding {
        TensorBinding { name: self.spec.name.clone(), dtype: self.spec.dtype, addr, bytes: self.bytes.len() as u64 }
    }
}

/// Fresh random values for each of `specs` at `size` (`M x N` each).
pub fn random_matrices(specs: &[MatrixSpec], size: GemmSize, rng: &mut Rng) -> Vec<HostMatrix> {
    specs.iter().map(|s| HostMatrix::random(s, size, rng)).collect()
}

/// Device copies of `matrices` and their bindings (by name), for
/// [`crate::GemmBuffers::with_matrices`].
pub fn upload_matrices(gpu: &Gpu, matrices: &[HostMatrix]) -> Result<(Vec<CudaSlice<u8>>, Vec<TensorBinding>)> {
    upload(gpu, matrices, "cuMemcpyHtoD(epilogue matrix)", |x| &x.bytes, HostMatrix::binding)
}


/// What one value of an epilogue reads from the call's operands.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Nothing (a value computed from others, or the accumulator).
    None,
    /// Element `i` or `j` of `vectors[k]`.
    Vector(usize, Along),
    /// Element (`i`, `j`) of `matrices[k]`.
    Matrix(usize),
    /// The product's element at output column `j`'s column of this part.
    AccPart(u64),
}

/// An epilogue with its vectors' and matrices' values: what `C[i][j]`
/// should be, given the accumulator.
pub struct EpilogueReference<'a> {
    epilogue: &'a Epilogue,
    /// For each value of the program: which of `vectors` or `matrices` it reads, if any.
    slots: Vec<Slot>,
    vectors: &'a [HostVector],
    matrices: &'a [HostMatrix],
    /// The interleaved parts it reads, as `(block, parts)`, if any.
    gated: Option<(u64, u64)>,
}

impl<'a> EpilogueReference<'a> {
    /// Binds each vector and matrix the epilogue reads to one of `vectors`
    /// or `matrices` by name; an error names an operand without values.
    pub fn new(epilogue: &'a Epilogue, vectors: &'a [HostVector], matrices: &'a [HostMatrix]) -> Result<Self> {
        let mut slots = Vec::with_capacity(epilogue.values.len());
        let missing = |what: &str, tensor: &str| RuntimeError::GemmArgs(format!("the epilogue reads {what} {tensor}; no values for it"));
        for v in &epilogue.values {
            slots.push(match v {
                EpilogueValue::Vector { tensor, along } => {
                    let k = vectors.iter().position(|h| &h.spec.name == tensor).ok_or_else(|| missing("vector", tensor))?;
                    Slot::Vector(k, *along)
                }
                EpilogueValue::Matrix { tensor } => {
                    let k = matrices.iter().position(|h| &h.spec.name == tensor).ok_or_else(|| missing("matrix", tensor))?;
                    Slot::Matrix(k)
                }
                EpilogueValue::AccPart { part, .. } => Slot::AccPart(*part),
                _ => Slot::None,
            });
        }
        let gated = AccParts::of(epilogue).map_err(RuntimeError::GemmArgs)?;
        Ok(EpilogueReference { epilogue, slots, vectors, matrices, gated })
    }

    /// `C[i][j]` for accumulator `acc`, in f64. An epilogue reading
    /// interleaved parts or reducing over groups of columns needs the
    /// product's row ([`EpilogueReference::row`]): here they read NaN.
    pub fn at(&self, acc: f64, i: usize, j: usize) -> f64 {
        self.epilogue.eval(acc, |v| self.operand(v, i, j, None))
    }

    fn operand(&self, v: usize, i: usize, j: usize, product: Option<&[f64]>) -> f64 {
        match self.slots[v] {
            Slot::Vector(k, Along::Rows) => self.vectors[k].values[i],
            Slot::Vector(k, Along::Cols) => self.vectors[k].values[j],
            Slot::Matrix(k) => self.matrices[k].at(i, j),
            Slot::AccPart(part) => match (product, self.gated) {
                (Some(row), Some((block, parts))) => {
                    row.get(product_column(block, parts, j as u64, part) as usize).copied().unwrap_or(f64::NAN)
                }
                _ => f64::NAN,
            },
            Slot::None => f64::NAN,
        }
    }

    /// C's columns for `n` product columns: `n / parts` for an epilogue
    /// reading interleaved parts, else `n`.
    pub fn out_cols(&self, n: usize) -> usize {
        self.gated.map_or(n, |(_, parts)| n / parts as usize)
    }

    /// Row `i` of C and of each group store, given row `i` of the product
    /// (all its N columns), in f64 ([`Epilogue::eval_row`]): the
    /// accumulator of C's column `j` is the product's column `j`, an
    /// interleaved part's ([`EpilogueValue::AccPart`]) its column
    /// [`AccParts::column`] of `j` (NaN past the row's end); a group
    /// reduction takes the row's columns of C.
    pub fn row(&self, product: &[f64], i: usize) -> EpilogueRow {
        let cols = self.out_cols(product.len());
        self.epilogue.eval_row(cols, |j| product[j], |v, j| self.operand(v, i, j, Some(product)))
    }

    /// The epilogue over rows `rows` of C: `acc` holds the product's rows,
    /// `rows.len() x n` row-major; C's are `rows.len() x out_cols(n)` and
    /// each group store's `rows.len() x ceil(out_cols(n) / group)` (each
    /// row read as [`EpilogueReference::row`] does); on all cores.
    pub fn rows(&self, acc: &[f64], rows: &[usize], n: usize) -> EpilogueRows {
        self.rows_by(acc, rows, n, |product, i| self.row(product, i))
    }

    /// [`EpilogueReference::rows`] evaluated in f32 as a kernel evaluates
    /// the epilogue ([`Epilogue::in_f32`]), from the kernel's f32
    /// accumulator `acc` (the vectors' and matrices' elements are exact in
    /// f32); an error where the epilogue's f32 results are not fixed by
    /// IEEE arithmetic.
    pub fn rows_f32(&self, acc: &[f32], rows: &[usize], n: usize) -> Result<EpilogueRows> {
        let in_f32 = self.epilogue.in_f32().map_err(|e| RuntimeError::Other(format!("the epilogue has no exact f32 reference: {e}")))?;
        let wide: Vec<f64> = acc.iter().map(|&x| x as f64).collect();
        Ok(self.rows_by(&wide, rows, n, |product, i| {
            let cols = self.out_cols(product.len());
            in_f32.eval_row(cols, |j| product[j] as f32, |v, j| self.operand(v, i, j, Some(product)) as f32)
        }))
    }

    /// The rows of C and the group stores, row `i` of them `row(product, i)`
    /// from the product's row; see [`EpilogueReference::rows`].
    fn rows_by(&self, acc: &[f64], rows: &[usize], n: usize, row: impl Fn(&[f64], usize) -> EpilogueRow + Sync) -> EpilogueRows {
        assert_eq!(acc.len(), rows.len() * n, "EpilogueReference::rows: accumulator size");
        if let Some((block, parts)) = self.gated {
            assert_eq!(n as u64 % (block * parts), 0, "EpilogueReference::rows: {n} columns are not whole runs of {parts} parts of {block}");
        }
        let h = self.out_cols(n);
        let mut values = vec![0.0f64; rows.len() * h];
        let stores = self.epilogue.group_stores.len();
        if h == 0 || rows.is_empty() {
            return EpilogueRows { values, stores: vec![Vec::new(); stores] };
        }
        let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1);
        let rows_per = rows.len().div_ceil(threads).max(1);
        // Each thread's rows of every group store, in row order.
        let parts: Vec<Vec<Vec<f64>>> = std::thread::scope(|s| {
            let handles: Vec<_> = values
                .chunks_mut(rows_per * h)
                .zip(acc.chunks(rows_per * n))
                .zip(rows.chunks(rows_per))
                .map(|((out, acc), rows)| {
                    let row = &row;
                    s.spawn(move || {
                        let mut part = vec![Vec::new(); stores];
                        for (r, &i) in rows.iter().enumerate() {
                            let row = row(&acc[r * n..(r + 1) * n], i);
                            out[r * h..(r + 1) * h].copy_from_slice(&row.values);
                            part.iter_mut().zip(row.groups).for_each(|(p, g)| p.extend(g));
                        }
                        part
                    })
                })
                .collect();
            handles.into_iter().map(|t| t.join().expect("epilogue reference thread")).collect()
        });
        let mut out = EpilogueRows { values, stores: vec![Vec::new(); stores] };
        for part in parts {
            out.stores.iter_mut().zip(part).for_each(|(o, p)| o.extend(p));
        }
        out
    }
}

/// Rows of C and of the group stores as [`EpilogueReference::rows`] computes them.
#[derive(Debug, Clone, PartialEq)]
pub struct EpilogueRows {
    /// C's rows, row-major.
    pub values: Vec<f64>,
    /// Each group store's rows (in the epilogue's order), row-major: a row's
    /// value for each group of C's columns.
    pub stores: Vec<Vec<f64>>,
}

// ------------------------------------------------------------ the vendor's equivalent

/// What an epilogue computes, as far as a vendor kernel can fuse it.
#[derive(Debug, Clone, PartialEq)]
pub enum EpilogueKind {
    /// The accumulator rounded to bf16 (or no epilogue in the manifest).
    Plain,
    /// `acc + bias[j]` rounded to bf16, the bias a bf16 vector along
    /// columns: cuBLASLt's `CUBLASLT_EPILOGUE_BIAS`.
    Bias {
        /// The bias tensor.
        tensor: String,
    },
    /// `gelu_tanh(acc + bias[j])` rounded to bf16: cuBLASLt's
    /// `CUBLASLT_EPILOGUE_GELU_BIAS`.
    BiasGelu {
        /// The bias tensor.
        tensor: String,
    },
    /// `alpha * acc + beta * R[i][j]` rounded to bf16, `R` a bf16 matrix of
    /// C's shape (a residual): cuBLASLt's `D = alpha * A B + beta * C` with
    /// R as its C and D separate.
    Residual {
        /// The residual tensor.
        tensor: String,
        /// The accumulator's factor.
        alpha: f64,
        /// The residual's factor.
        beta: f64,
    },
    /// Interleaved parts of the product taken together (SwiGLU's
    /// `silu(gate) * up`, [`EpilogueValue::AccPart`]): C has `N / parts`
    /// columns. No vendor kernel fuses it; the baseline is one GEMM per
    /// part, of `N / parts` columns on the part's de-interleaved weights,
    /// each writing its bf16 product, then the element-wise kernel
    /// ([`cuda_source`]) reading the products.
    Gated {
        /// Columns in a run.
        block: u64,
        /// How many outputs the product interleaves.
        parts: u64,
    },
    /// An output quantisation: reductions over groups of columns, group
    /// stores, or a last rounding to FP8 (an FP8 GEMM's result as e4m3
    /// codes with per-token scales, [`EpilogueValue::GroupReduce`]). No
    /// vendor kernel fuses it; the baseline is the GEMM writing the bf16
    /// product, then the kernel [`cuda_source`] generates by rows and
    /// groups ([`KernelShape::Rows`]) reading it and writing C and the
    /// group stores.
    Quantize,
    /// Anything else: no vendor kernel fuses it.
    Other,
}

impl EpilogueKind {
    /// A short name for reports: `plain`, `bias`, `bias_gelu`, `residual`, `gated`, `quantize`, `other`.
    pub fn name(&self) -> &'static str {
        match self {
            EpilogueKind::Plain => "plain",
            EpilogueKind::Bias { .. } => "bias",
            EpilogueKind::BiasGelu { .. } => "bias_gelu",
            EpilogueKind::Residual { .. } => "residual",
            EpilogueKind::Gated { .. } => "gated",
            EpilogueKind::Quantize => "quantize",
            EpilogueKind::Other => "other",
        }
    }
}

/// GELU in the tanh form cuBLASLt computes: `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
pub fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh())
}

/// Accumulator values [`classify`] evaluates an epilogue at: both signs,
/// GELU's curved middle, its linear and flat tails.
const CLASSIFY_ACC: [f64; 21] =
    [-37.5, -8.0, -5.0, -3.0, -2.0, -1.5, -1.0, -0.7, -0.3, -0.1, 0.0, 0.05, 0.2, 0.5, 0.9, 1.3, 2.0, 3.0, 5.0, 8.0, 37.5];
/// Bias (and residual) values [`classify`] evaluates an epilogue at, each
/// exact in bf16 (as the tensors' values are).
const CLASSIFY_BIAS: [f64; 5] = [-1.25, -0.5, 0.0, 0.375, 2.0];

/// Which vendor epilogue computes what `epilogue` does, decided by
/// evaluating it, not by matching its ops (any order of the same
/// arithmetic matches): its last value must round to bf16, and the value
/// rounded must agree, on a grid of accumulators (and biases or residual
/// elements), with `acc` (plain), `acc + bias` or `gelu_tanh(acc + bias)`
/// to within 1e-9 of `max(1, |acc + bias|)`, or with `alpha * acc + beta *
/// r` to within 1e-9 of `max(1, |alpha acc| + |beta r|)`: f64 rounding of
/// another order of the same ops is far below, the next-closest function
/// (erf-GELU, a missed bias, an intermediate rounding to bf16, a square)
/// far above. The bias must be a bf16 vector along the columns, as
/// cuBLASLt's bias pointer takes it; the residual (read with no vector) a
/// bf16 matrix, as cuBLASLt's C of a bf16 D. `alpha` and `beta` are
/// found by evaluating the epilogue (`alpha` at acc 1, residual 0; `beta`
/// at acc 0, residual 1), so any constants, in any arrangement of the
/// same affine function, match. `None` (a manifest from before epilogues
/// were recorded) is plain. An epilogue reading interleaved parts of the
/// product (one `block` and `parts`) is [`EpilogueKind::Gated`], whatever
/// else it does; else one that reduces or stores per group of columns, or
/// whose last value rounds to an FP8 type, [`EpilogueKind::Quantize`].
pub fn classify(epilogue: Option<&Epilogue>, vectors: &[VectorSpec], matrices: &[MatrixSpec]) -> EpilogueKind {
    let Some(e) = epilogue else { return EpilogueKind::Plain };
    match AccParts::of(e) {
        Ok(Some((block, parts))) => return EpilogueKind::Gated { block, parts },
        Err(_) => return EpilogueKind::Other,
        Ok(None) => {}
    }
    if e.has_groups() || matches!(e.values.last(), Some(EpilogueValue::Convert { to: DType::F8e4m3 | DType::F8e5m2, .. })) {
        return EpilogueKind::Quantize;
    }
    let Some(EpilogueValue::Convert { to: DType::Bf16, x: last }) = e.values.last() else { return EpilogueKind::Other };
    let last = *last;
    let close = |got: f64, want: f64, scale: f64| (got - want).abs() <= 1e-9 * scale.abs().max(1.0);
    if !matrices.is_empty() {
        return match (vectors, matrices) {
            ([], [x]) if x.dtype == DType::Bf16 => {
                // Every value reading a matrix reads this one (and no vector is read).
                let g = |a: f64, r: f64| e.eval_value(last, a, |_| r);
                let (alpha, beta) = (g(1.0, 0.0) - g(0.0, 0.0), g(0.0, 1.0) - g(0.0, 0.0));
                let affine = alpha.is_finite()
                    && beta.is_finite()
                    && CLASSIFY_ACC.iter().all(|&a| {
                        CLASSIFY_BIAS.iter().all(|&r| close(g(a, r), alpha * a + beta * r, (alpha * a).abs() + (beta * r).abs()))
                    });
                if affine {
                    EpilogueKind::Residual { tensor: x.name.clone(), alpha, beta }
                } else {
                    EpilogueKind::Other
                }
            }
            _ => EpilogueKind::Other,
        };
    }
    match vectors {
        [] => {
            let plain = CLASSIFY_ACC.iter().all(|&a| close(e.eval_value(last, a, |_| f64::NAN), a, a));
            if plain {
                EpilogueKind::Plain
            } else {
                EpilogueKind::Other
            }
        }
        [v] if v.along == Along::Cols && v.dtype == DType::Bf16 => {
            let matches = |f: &dyn Fn(f64) -> f64| {
                CLASSIFY_ACC.iter().all(|&a| {
                    CLASSIFY_BIAS.iter().all(|&b| close(e.eval_value(last, a, |_| b), f(a + b), a + b))
                })
            };
            let tensor = v.name.clone();
            if matches(&|x| x) {
                EpilogueKind::Bias { tensor }
            } else if matches(&gelu_tanh) {
                EpilogueKind::BiasGelu { tensor }
            } else {
                EpilogueKind::Other
            }
        }
        _ => EpilogueKind::Other,
    }
}

// ------------------------------------------------------------ the element-wise kernel

/// The C type a vector's elements are read as in the generated kernel.
fn c_type(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        _ => "unsigned short",
    }
}

/// A C expression for the f32 value of element `index` of an array `p`.
fn c_load(d: DType, p: &str, index: &str) -> String {
    match d {
        DType::Bf16 => format!("tilec_bf16_to_f32({p}[{index}])"),
        DType::F16 => format!("tilec_f16_to_f32({p}[{index}])"),
        _ => format!("{p}[{index}]"),
    }
}

/// A C float literal of `v` as the kernel's f32 constant, exact by its bits.
fn c_float(v: f64) -> String {
    let f = v as f32;
    format!("__int_as_float(0x{:08x}) /* {f:?} */", f.to_bits())
}

const CUDA_PRELUDE: &str = r#"// Generated by tilec-runtime (runtime/src/epilogue.rs) from a manifest's epilogue.
struct alignas(16) tilec_u16x8 { unsigned short v[8]; };
struct alignas(16) tilec_f32x8 { float v[8]; };
__device__ __forceinline__ float tilec_bf16_to_f32(unsigned short x) { return __uint_as_float(((unsigned int)x) << 16); }
__device__ __forceinline__ unsigned short tilec_f32_to_bf16(float x) {
  unsigned short r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r;
}
__device__ __forceinline__ float tilec_f16_to_f32(unsigned short x) { float r; asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x)); return r; }
__device__ __forceinline__ unsigned short tilec_f32_to_f16(float x) {
  unsigned short r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r;
}
__device__ __forceinline__ float tilec_round_bf16(float x) { return tilec_bf16_to_f32(tilec_f32_to_bf16(x)); }
__device__ __forceinline__ float tilec_round_f16(float x) { return tilec_f16_to_f32(tilec_f32_to_f16(x)); }
__device__ __forceinline__ float tilec_round_e4m3(float x) {
  unsigned short p; unsigned int h2;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;" : "=h"(p) : "f"(x));
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(p));
  return tilec_f16_to_f32((unsigned short)(h2 & 0xffff));
}
__device__ __forceinline__ float tilec_round_e5m2(float x) {
  unsigned short p; unsigned int h2;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %1;" : "=h"(p) : "f"(x));
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(p));
  return tilec_f16_to_f32((unsigned short)(h2 & 0xffff));
}
// NaN if either is NaN, as the fused kernel's maximumf and minimumf.
__device__ __forceinline__ float tilec_max(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ float tilec_min(float a, float b) { float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
"#;

/// The entry name of the generated kernel.
pub const ELEMENTWISE_ENTRY: &str = "tilec_epilogue";

/// How the generated epilogue kernel ([`cuda_source`]) reads the GEMM's
/// bf16 result and writes C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelShape {
    /// In place: C holds the GEMM's bf16 result and gets the epilogue's
    /// ([`ElementwiseKernel::launch`]).
    InPlace,
    /// From the bf16 products of interleaved parts ([`AccParts`]), each
    /// `[M,N/parts]`, to C `[M,N/parts]` ([`ElementwiseKernel::launch_gated`]).
    Gated {
        /// Columns in a run.
        block: u64,
        /// How many outputs the product interleaves.
        parts: u64,
    },
    /// From the bf16 product `[M,N]` to C (bf16, or f8e4m3 codes) and the
    /// group stores, by units of a row and a group of `group` columns, each
    /// taken by `group / 8` lanes of a warp ([`ElementwiseKernel::launch_rows`]):
    /// the kernel of an epilogue that reduces over groups of columns,
    /// stores per group or writes FP8 (an output quantisation).
    Rows {
        /// Columns in a unit: the epilogue's group.
        group: u64,
    },
}

/// Columns each lane of the rows kernel takes: one 16-byte load of bf16.
const ROWS_LANE_COLUMNS: u64 = 8;

/// Units each lane of the rows kernel holds at once, their work
/// interleaved: one unit's loads and reductions wait while the other's
/// arithmetic runs.
const ROWS_LANE_UNITS: u64 = 2;

/// Columns in a unit of the rows kernel where the epilogue has no group of
/// its own (an FP8 C without scales): a warp's 32 lanes of 8 columns.
const ROWS_DEFAULT_GROUP: u64 = 256;

/// The shape of the kernel [`cuda_source`] generates for `epilogue`
/// writing `output`: [`KernelShape::Rows`] where the epilogue reduces or
/// stores per group of columns or C is FP8, over its one group size (each
/// [`EpilogueValue::GroupReduce`]'s and group store's), which must be 8,
/// 16, 32, 64, 128 or 256 (1 to 32 lanes of 8 columns: a warp holds whole
/// groups), 256 where it has none; [`KernelShape::Gated`] where it reads
/// interleaved parts (not together with the rows kernel's work); else
/// [`KernelShape::InPlace`].
pub fn kernel_shape(epilogue: &Epilogue, output: &OutputSpec) -> std::result::Result<KernelShape, String> {
    let gated = AccParts::of(epilogue)?;
    let rows = epilogue.has_groups() || output.dtype != DType::Bf16;
    match (gated, rows) {
        (None, false) => return Ok(KernelShape::InPlace),
        (Some((block, parts)), false) => return Ok(KernelShape::Gated { block, parts }),
        (Some(_), true) => {
            return Err("the epilogue reads interleaved parts of the product and also reduces or stores per group of columns \
                        or writes FP8: no generated kernel does both"
                .into())
        }
        (None, true) => {}
    }
    if !matches!(output.dtype, DType::Bf16 | DType::F8e4m3) {
        return Err(format!("the generated kernel writes a bf16 or f8e4m3 C, not {}", output.dtype));
    }
    let reductions = epilogue.values.iter().filter_map(|v| match v {
        EpilogueValue::GroupReduce { group, .. } => Some(*group),
        _ => None,
    });
    let mut groups = reductions.chain(epilogue.group_stores.iter().map(|s| s.group));
    let group = groups.next().unwrap_or(ROWS_DEFAULT_GROUP);
    if let Some(other) = groups.find(|&g| g != group) {
        return Err(format!("the epilogue's groups are of {group} and {other} columns: the generated kernel takes one group size"));
    }
    if !group.is_multiple_of(ROWS_LANE_COLUMNS) || !(group / ROWS_LANE_COLUMNS).is_power_of_two() || group > 32 * ROWS_LANE_COLUMNS {
        return Err(format!(
            "groups of {group} columns: the generated kernel takes groups of 8, 16, 32, 64, 128 or 256 (1 to 32 lanes of a warp, 8 columns each)"
        ));
    }
    Ok(KernelShape::Rows { group })
}

/// The index and element type of vector `tensor` among `vectors`.
fn vector_of(vectors: &[VectorSpec], tensor: &str) -> std::result::Result<(usize, DType), String> {
    let k = vectors
        .iter()
        .position(|s| s.name == tensor)
        .ok_or_else(|| format!("the epilogue reads vector {tensor}, which is not among the kernel's vectors"))?;
    Ok((k, vectors[k].dtype))
}

/// The index and element type of matrix `tensor` among `matrices`.
fn matrix_of(matrices: &[MatrixSpec], tensor: &str) -> std::result::Result<(usize, DType), String> {
    let k = matrices
        .iter()
        .position(|s| s.name == tensor)
        .ok_or_else(|| format!("the epilogue reads matrix {tensor}, which is not among the kernel's matrices"))?;
    Ok((k, matrices[k].dtype))
}

/// The C expression of one value computed from others (a constant, a
/// function, a conversion), value `k` spelled `x(k)`; `leaf` spells the
/// rest (the accumulator, parts, vectors, matrices), which each kernel
/// reads its own way.
fn value_expr(
    value: &EpilogueValue,
    x: &dyn Fn(usize) -> String,
    leaf: &mut dyn FnMut(&EpilogueValue) -> std::result::Result<String, String>,
) -> std::result::Result<String, String> {
    Ok(match value {
        EpilogueValue::Splat { value } => c_float(*value),
        EpilogueValue::Unary { f, x: a } => {
            let a = x(*a);
            match f {
                UnaryFn::Neg => format!("-{a}"),
                UnaryFn::Abs => format!("fabsf({a})"),
                UnaryFn::Exp => format!("expf({a})"),
                UnaryFn::Tanh => format!("tanhf({a})"),
                UnaryFn::Erf => format!("erff({a})"),
                UnaryFn::Rsqrt => format!("rsqrtf({a})"),
            }
        }
        EpilogueValue::Binary { f, lhs, rhs } => {
            let (l, r) = (x(*lhs), x(*rhs));
            match f {
                BinaryFn::Add => format!("{l} + {r}"),
                BinaryFn::Sub => format!("{l} - {r}"),
                BinaryFn::Mul => format!("{l} * {r}"),
                BinaryFn::Div => format!("{l} / {r}"),
                BinaryFn::Max => format!("tilec_max({l}, {r})"),
                BinaryFn::Min => format!("tilec_min({l}, {r})"),
            }
        }
        EpilogueValue::Convert { to, x: a } => {
            let a = x(*a);
            match to {
                DType::Bf16 => format!("tilec_round_bf16({a})"),
                DType::F16 => format!("tilec_round_f16({a})"),
                DType::F8e4m3 => format!("tilec_round_e4m3({a})"),
                DType::F8e5m2 => format!("tilec_round_e5m2({a})"),
                DType::F32 | DType::F64 => a,
                other => return Err(format!("the epilogue converts to {other}, not a float type")),
            }
        }
        other => leaf(other)?,
    })
}

/// CUDA C of the kernel that applies `epilogue` after a GEMM that wrote
/// its bf16 result (the accumulator rounded to bf16), shaped as
/// [`kernel_shape`] says for `output`; the arithmetic is f32, as the fused
/// kernel's, with `expf`, `tanhf`, `erff` and `rsqrtf`, and conversions
/// rounding to nearest even through PTX `cvt`. `vectors` and `matrices`
/// must name every vector and matrix the epilogue reads.
///
/// In place ([`KernelShape::InPlace`]): `tilec_epilogue(unsigned short* c,
/// <one pointer per vector, in the order of `vectors`>, <one per matrix, in
/// the order of `matrices`>, long long m, long long n)` on a bf16
/// `C[M,N]`. Each thread takes 8 consecutive elements with one 16-byte
/// load and store (the tail element by element), and as many of each
/// matrix (row-major `[M,N]`, as C: 16 bytes of a bf16 or f16 one, 32 of an
/// f32 one), in a grid-stride loop.
///
/// Interleaved parts of the product ([`KernelShape::Gated`],
/// [`EpilogueValue::AccPart`]) run after one GEMM per part, each of the
/// part's weights (B's rows of that part, de-interleaved:
/// [`AccParts::part_rows`]): the kernel is `tilec_epilogue(unsigned short*
/// c, const unsigned short* p0, ..., <one pointer per part>, <vectors>,
/// <matrices>, long long m, long long n)`, reading part `q`'s bf16 product
/// `p<q>[M,n]` and writing `C[M,n]` (`n = N / parts`). Part `q` of output
/// (i, j) is its product's element (i, j), so that each part's 8 elements
/// are one 16-byte load as C's in place; the accumulator
/// ([`EpilogueValue::Acc`]), where read, is the interleaved product's
/// column `j`, read element by element from the part that holds it.
///
/// By rows and groups ([`KernelShape::Rows`], an output quantisation):
/// `tilec_epilogue(T* c, const unsigned short* p, <one float* per group
/// store, in the epilogue's order>, <vectors>, <matrices>, long long m,
/// long long n)`, reading the bf16 product `p[M,N]` and writing C (`T`:
/// `unsigned short` bf16 or `unsigned char` f8e4m3 codes) and the group
/// stores, each laid out as its [`crate::gemm::GroupStoreSpec::layout`] says. Each lane
/// takes 8 adjacent columns of a row with one 16-byte load of their bf16
/// and one store of their values (8 bytes of codes), `group / 8` lanes a
/// unit (a row's group: 16 lanes for groups of 128, a warp two adjacent
/// units), so that a warp reads and writes contiguous runs; a grid-stride
/// loop over the units, the next ones' loads issued before these ones'
/// reductions, each lane stepping its (row, group) without dividing. The
/// program runs in order: each value that differs between a group's
/// columns on the lane's columns, each one that does not
/// ([`Epilogue::varies_within`]: a scale) once, each
/// [`EpilogueValue::GroupReduce`] over the lane's columns below `n` and
/// then across the unit's lanes (`__shfl_xor_sync`, every lane getting the
/// same value); the unit's first lane stores each group store's value.
/// Vectors along columns and matrices read zero past `n`. Where the last
/// value rounds to C's type, the store's own conversion does that rounding
/// (two codes an instruction).
pub fn cuda_source(
    epilogue: &Epilogue,
    vectors: &[VectorSpec],
    matrices: &[MatrixSpec],
    output: &OutputSpec,
) -> std::result::Result<String, String> {
    for (i, v) in epilogue.values.iter().enumerate() {
        if let Some(operand) = Epilogue::operands(v).into_iter().find(|&k| k >= i) {
            return Err(format!("value {i} reads value {operand}, not an earlier one"));
        }
    }
    if epilogue.values.is_empty() {
        return Err("the epilogue has no values".into());
    }
    match kernel_shape(epilogue, output)? {
        KernelShape::InPlace => elementwise_source(epilogue, vectors, matrices, None),
        KernelShape::Gated { block, parts } => elementwise_source(epilogue, vectors, matrices, Some((block, parts))),
        KernelShape::Rows { group } => rows_source(epilogue, vectors, matrices, output, group),
    }
}

/// [`cuda_source`] of the in-place kernel, or of the one reading the
/// products of `gated`'s `(block, parts)` parts.
fn elementwise_source(
    epilogue: &Epilogue,
    vectors: &[VectorSpec],
    matrices: &[MatrixSpec],
    gated: Option<(u64, u64)>,
) -> std::result::Result<String, String> {
    // The products the program reads, gated: `None` for the accumulator (the interleaved product's column `j`), else a part's.
    let mut sources: Vec<Option<u64>> = Vec::new();
    let mut body = String::new();
    for (i, v) in epilogue.values.iter().enumerate() {
        let mut leaf = |v: &EpilogueValue| -> std::result::Result<String, String> {
            Ok(match v {
                EpilogueValue::Acc if gated.is_none() => "tilec_bf16_to_f32(in.v[e])".to_string(),
                EpilogueValue::Acc => {
                    if !sources.contains(&None) {
                        sources.push(None);
                    }
                    "tilec_bf16_to_f32(qag.v[e])".to_string()
                }
                EpilogueValue::AccPart { part, .. } => {
                    if !sources.contains(&Some(*part)) {
                        sources.push(Some(*part));
                    }
                    format!("tilec_bf16_to_f32(q{part}g.v[e])")
                }
                EpilogueValue::Vector { tensor, along } => {
                    let (k, dtype) = vector_of(vectors, tensor)?;
                    let index = match along {
                        Along::Rows => "i",
                        Along::Cols => "j",
                    };
                    c_load(dtype, &format!("v{k}"), index)
                }
                EpilogueValue::Matrix { tensor } => {
                    let (k, dtype) = matrix_of(matrices, tensor)?;
                    c_load(dtype, &format!("r{k}g.v"), "e")
                }
                _ => return Err(format!("value {i} reduces over a group of columns: the element-wise kernels compute none")),
            })
        };
        let expr = value_expr(v, &|k| format!("x{k}"), &mut leaf)?;
        let _ = writeln!(body, "      const float x{i} = {expr};");
    }
    let last = epilogue.values.len() - 1;
    let vector_params: String = vectors.iter().enumerate().map(|(k, v)| format!(", const {}* __restrict__ v{k}", c_type(v.dtype))).collect();
    let mut src = String::from(CUDA_PRELUDE);
    // What the kernel reads at C's elements: C itself in place; gated, each part's product (its own
    // `[M, n]`, at C's index), the accumulator element by element from its part.
    let (pointers, mut loads) = match gated {
        None => (String::new(), load_group("in", "tilec_u16x8", "unsigned short", "c")),
        Some((block, parts)) => {
            let pointers: String = (0..parts).map(|q| format!(", const unsigned short* __restrict__ p{q}")).collect();
            let mut loads = String::new();
            for s in &sources {
                match s {
                    Some(q) => loads.push_str(&load_group(&format!("q{q}g"), "tilec_u16x8", "unsigned short", &format!("p{q}"))),
                    None => {
                        let args: String = (0..parts).map(|q| format!("p{q}, ")).collect();
                        let _ = write!(
                            loads,
                            "    tilec_u16x8 qag;\n    for (int e = 0; e < 8; ++e) {{\n      const long long xi = (base + e) / n;\n      \
                             qag.v[e] = base + e < total ? tilec_acc({args}xi, base + e - xi * n, n) : (unsigned short)0;\n    }}\n"
                        );
                        let whole = parts * block;
                        let choose: String = (0..parts - 1).map(|q| format!("q == {q} ? p{q} : ")).collect();
                        let _ = write!(
                            src,
                            r#"
// The accumulator of output column j, the interleaved product's column j: part (j % {whole}) / {block}'s column
// {block} * (j / {whole}) + j % {block}.
__device__ __forceinline__ unsigned short tilec_acc({}long long i, long long j, long long n) {{
  const long long q = j % {whole}LL / {block}LL;
  const unsigned short* __restrict__ p = {choose}p{};
  return p[i * n + {block}LL * (j / {whole}LL) + j % {block}LL];
}}
"#,
                            (0..parts).map(|q| format!("const unsigned short* __restrict__ p{q}, ")).collect::<String>(),
                            parts - 1
                        );
                    }
                }
            }
            (pointers, loads)
        }
    };
    // Each matrix's 8 elements of the group, loaded as C's are.
    let mut matrix_params = String::new();
    for (k, x) in matrices.iter().enumerate() {
        let (ty, group) = match x.dtype {
            DType::F32 => ("float", "tilec_f32x8"),
            _ => ("unsigned short", "tilec_u16x8"),
        };
        let _ = write!(matrix_params, ", const {ty}* __restrict__ r{k}");
        loads.push_str(&load_group(&format!("r{k}g"), group, ty, &format!("r{k}")));
    }
    let _ = write!(
        src,
        r#"
extern "C" __global__ void {ELEMENTWISE_ENTRY}(unsigned short* __restrict__ c{pointers}{vector_params}{matrix_params}, long long m, long long n) {{
  const long long total = m * n;
  const long long groups = (total + 7) / 8;
  for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += (long long)gridDim.x * blockDim.x) {{
    const long long base = g * 8;
    const bool whole = base + 8 <= total;
{loads}    long long i = base / n;
    long long j = base - i * n;
    tilec_u16x8 out;
    #pragma unroll
    for (int e = 0; e < 8; ++e) {{
{body}      out.v[e] = tilec_f32_to_bf16(x{last});
      if (++j == n) {{ j = 0; ++i; }}
      if (i >= m) break;
    }}
    if (whole) {{
      *reinterpret_cast<tilec_u16x8*>(c + base) = out;
    }} else {{
      for (int e = 0; e < 8; ++e) if (base + e < total) c[base + e] = out.v[e];
    }}
  }}
}}
"#
    );
    Ok(src)
}

/// The declaration of `var`, a group (`group`: `tilec_u16x8` or
/// `tilec_f32x8`) of the 8 elements of type `ty` at `ptr + base` in an
/// element-wise kernel: one 16- or 32-byte load where the group is whole
/// (`base` a multiple of 8, so aligned), else element by element, zero past
/// the end.
fn load_group(var: &str, group: &str, ty: &str, ptr: &str) -> String {
    format!(
        r#"    {group} {var};
    if (whole) {{
      {var} = *reinterpret_cast<const {group}*>({ptr} + base);
    }} else {{
      for (int e = 0; e < 8; ++e) {var}.v[e] = base + e < total ? {ptr}[base + e] : ({ty})0;
    }}
"#
    )
}

/// What the rows kernel adds to [`CUDA_PRELUDE`]: f8e4m3 codes, one or a
/// pair (`lo` in the low byte), and an add for sums.
const ROWS_PRELUDE: &str = r#"__device__ __forceinline__ unsigned char tilec_f32_to_e4m3(float x) {
  unsigned short p; asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;" : "=h"(p) : "f"(x)); return (unsigned char)(p & 0xff);
}
__device__ __forceinline__ unsigned short tilec_f32x2_to_e4m3x2(float lo, float hi) {
  unsigned short p; asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(p) : "f"(hi), "f"(lo)); return p;
}
__device__ __forceinline__ float tilec_add(float a, float b) { return a + b; }
"#;

/// [`cuda_source`] of the rows kernel, a warp for each row and group of
/// `group` columns.
fn rows_source(
    epilogue: &Epilogue,
    vectors: &[VectorSpec],
    matrices: &[MatrixSpec],
    output: &OutputSpec,
    group: u64,
) -> std::result::Result<String, String> {
    let cols = ROWS_LANE_COLUMNS;
    let lanes = group / cols;
    let units = 32 / lanes;
    let values = &epilogue.values;
    // How each value is held: a reduction once for the unit (`r{k}`), a value the same at every
    // column of the group once (`x{k}`), every other value once a lane column (`x{k}[e]`).
    let uniform: Vec<bool> = (0..values.len()).map(|k| epilogue.varies_within(k, group).is_none()).collect();
    let at = |k: usize, e: &str| match values[k] {
        EpilogueValue::GroupReduce { .. } => format!("r{k}"),
        _ if uniform[k] => format!("x{k}"),
        _ => format!("x{k}[{e}]"),
    };
    // C's value: the last one, or what its last rounding rounds where that is to C's type (encoding
    // rounds the same way, once), the rounding then left out where nothing else reads it.
    let last = values.len() - 1;
    let stored = match values.last() {
        Some(EpilogueValue::Convert { to, x }) if *to == output.dtype && !epilogue.group_stores.iter().any(|s| s.x == last) => *x,
        _ => last,
    };
    let mut decls = String::new();
    let mut body = String::new();
    // The column values since the last reduction or group value, computed in one loop over the lane's columns.
    let mut run = String::new();
    let mut run_reads_j = false;
    let end_run = |body: &mut String, run: &mut String, reads_j: &mut bool| {
        if !run.is_empty() {
            let j = if *reads_j { "        const int j = j0 + e;\n" } else { "" };
            let _ = write!(body, "      #pragma unroll\n      for (int e = 0; e < {cols}; ++e) {{\n{j}{run}      }}\n");
            run.clear();
            *reads_j = false;
        }
    };
    for (i, v) in values.iter().enumerate().filter(|&(i, _)| i != last || stored == last) {
        if let EpilogueValue::GroupReduce { f, x, .. } = v {
            end_run(&mut body, &mut run, &mut run_reads_j);
            let (op, identity) = match f {
                ReduceFn::Max => ("tilec_max", "__int_as_float(0xff800000) /* -inf */"),
                ReduceFn::Min => ("tilec_min", "__int_as_float(0x7f800000) /* inf */"),
                ReduceFn::Add => ("tilec_add", "0.0f"),
            };
            // The lane's columns inside the product as a tree, then across the unit's lanes.
            let _ = write!(
                body,
                r#"      float t{i}[{cols}];
      #pragma unroll
      for (int e = 0; e < {cols}; ++e) t{i}[e] = e < valid ? {x} : {identity};
      #pragma unroll
      for (int s = 1; s < {cols}; s <<= 1)
        #pragma unroll
        for (int e = 0; e < {cols}; e += 2 * s) t{i}[e] = {op}(t{i}[e], t{i}[e + s]);
      float r{i} = t{i}[0];
      #pragma unroll
      for (int o = {half}; o > 0; o >>= 1) r{i} = {op}(r{i}, __shfl_xor_sync(0xffffffffu, r{i}, o));
"#,
                x = at(*x, "e"),
                half = lanes / 2
            );
            continue;
        }
        let mut reads_j = false;
        let mut leaf = |v: &EpilogueValue| -> std::result::Result<String, String> {
            Ok(match v {
                EpilogueValue::Acc => "tilec_column(in[k], e)".to_string(),
                EpilogueValue::Vector { tensor, along: Along::Rows } => {
                    let (k, dtype) = vector_of(vectors, tensor)?;
                    format!("(i < m ? {} : 0.0f)", c_load(dtype, &format!("v{k}"), "i"))
                }
                EpilogueValue::Vector { tensor, along: Along::Cols } => {
                    let (k, dtype) = vector_of(vectors, tensor)?;
                    reads_j = true;
                    format!("(e < valid ? {} : 0.0f)", c_load(dtype, &format!("v{k}"), "j"))
                }
                EpilogueValue::Matrix { tensor } => {
                    let (k, dtype) = matrix_of(matrices, tensor)?;
                    reads_j = true;
                    format!("(e < valid ? {} : 0.0f)", c_load(dtype, &format!("r{k}"), "(long long)i * n + j"))
                }
                _ => return Err(format!("value {i} reads an interleaved part of the product: the rows kernel reads none")),
            })
        };
        let expr = match v {
            // The product is bf16 already.
            EpilogueValue::Convert { to: DType::Bf16, x } if values[*x] == EpilogueValue::Acc => at(*x, "e"),
            _ => value_expr(v, &|k| at(k, "e"), &mut leaf)?,
        };
        if uniform[i] {
            end_run(&mut body, &mut run, &mut run_reads_j);
            let _ = writeln!(body, "      const float x{i} = {expr};");
        } else {
            run_reads_j |= reads_j;
            let _ = writeln!(decls, "      float x{i}[{cols}];");
            let _ = writeln!(run, "        x{i}[e] = {expr};");
        }
    }
    end_run(&mut body, &mut run, &mut run_reads_j);
    let (out_ty, encode) = match output.dtype {
        // Two codes a conversion, a pair of columns at a time.
        DType::F8e4m3 => (
            "unsigned char",
            format!(
                "for (int e = 0; e < {cols}; e += 2) {{\n        const unsigned short pair = tilec_f32x2_to_e4m3x2({}, {});\n        \
                 out.v[e] = (unsigned char)(pair & 0xff);\n        out.v[e + 1] = (unsigned char)(pair >> 8);\n      }}",
                at(stored, "e"),
                at(stored, "e + 1")
            ),
        ),
        _ => ("unsigned short", format!("for (int e = 0; e < {cols}; ++e) out.v[e] = tilec_f32_to_bf16({});", at(stored, "e"))),
    };
    let out_bytes = cols * output.dtype.size_bytes() as u64;
    let mut params: String = String::new();
    let mut stores = String::new();
    for (k, s) in epilogue.group_stores.iter().enumerate() {
        let spec = output
            .group_stores
            .iter()
            .find(|o| o.name == s.tensor)
            .ok_or_else(|| format!("the epilogue stores to {}, which is not among the kernel's group stores", s.tensor))?;
        let index = match spec.layout {
            SaLayout::MMajor => "(long long)q * m + i",
            SaLayout::KMajor => "(long long)i * groups + q",
        };
        let _ = write!(params, ", float* __restrict__ s{k}");
        let _ = writeln!(stores, "        s{k}[{index}] = {};", at(s.x, "0"));
    }
    params.extend(vectors.iter().enumerate().map(|(k, v)| format!(", const {}* __restrict__ v{k}", c_type(v.dtype))));
    params.extend(matrices.iter().enumerate().map(|(k, x)| format!(", const {}* __restrict__ r{k}", c_type(x.dtype))));
    let group_stores = if stores.is_empty() { String::new() } else { format!("      if (part == 0 && valid > 0) {{\n{stores}      }}\n") };
    let mut src = String::from(CUDA_PRELUDE);
    src.push_str(ROWS_PRELUDE);
    let _ = write!(
        src,
        r#"
// A lane's {cols} columns of the product, as bf16 pairs, and of C.
struct alignas(16) tilec_u32x4 {{ unsigned int v[4]; }};
struct alignas({out_bytes}) tilec_lane_out {{ {out_ty} v[{cols}]; }};

// The product's columns j0 .. j0 + {cols} of row i: one 16-byte load where they are whole and aligned
// (n a multiple of {cols}), else element by element, zero outside the product. Kept as loaded until
// used, so that the load is in flight meanwhile.
__device__ __forceinline__ tilec_u32x4 tilec_load(const unsigned short* __restrict__ p, int i, int j0, int m, int n) {{
  tilec_u32x4 w;
  if (i < m && n % {cols} == 0 && j0 + {cols} <= n) {{
    w = *reinterpret_cast<const tilec_u32x4*>(p + (long long)i * n + j0);
  }} else {{
    #pragma unroll
    for (int e = 0; e < 4; ++e) w.v[e] = 0;
    #pragma unroll
    for (int e = 0; e < {cols}; ++e) if (i < m && j0 + e < n) w.v[e >> 1] |= (unsigned int)p[(long long)i * n + j0 + e] << (16 * (e & 1));
  }}
  return w;
}}

// Column e of a lane's, widened.
__device__ __forceinline__ float tilec_column(const tilec_u32x4& w, int e) {{
  const unsigned int x = w.v[e >> 1];
  return __uint_as_float((e & 1) ? (x & 0xffff0000u) : (x << 16));
}}

extern "C" __global__ void {ELEMENTWISE_ENTRY}({out_ty}* __restrict__ c, const unsigned short* __restrict__ p{params}, long long m64, long long n64) {{
  // {lanes} lanes take a unit, row i's group q of {group} columns, {cols} adjacent columns each, and a warp {units}
  // adjacent units; each lane holds {ROWS_LANE_UNITS} units a grid of warps apart, so that their loads and reductions
  // overlap, and walks their (i, q) without dividing.
  const int m = (int)m64, n = (int)n64;
  const int groups = (n + {group} - 1) / {group};
  const long long units = m64 * groups;
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  const long long step = warps * {units} * {ROWS_LANE_UNITS};
  const int di = (int)(step / groups), dq = (int)(step - (long long)di * groups);
  const int lane = threadIdx.x & 31;
  const int part = lane % {lanes};
  int iu[{ROWS_LANE_UNITS}], qu[{ROWS_LANE_UNITS}];
  tilec_u32x4 next[{ROWS_LANE_UNITS}];
  #pragma unroll
  for (int k = 0; k < {ROWS_LANE_UNITS}; ++k) {{
    const long long u = (warp + k * warps) * {units} + lane / {lanes};
    iu[k] = (int)(u / groups);
    qu[k] = (int)(u - (long long)iu[k] * groups);
    next[k] = tilec_load(p, iu[k], qu[k] * {group} + part * {cols}, m, n);
  }}
  for (long long first = warp * {units}; first < units; first += step) {{
    // The next units' columns load before these units' reductions wait on the warp.
    tilec_u32x4 in[{ROWS_LANE_UNITS}];
    #pragma unroll
    for (int k = 0; k < {ROWS_LANE_UNITS}; ++k) {{
      int ni = iu[k] + di, nq = qu[k] + dq;
      if (nq >= groups) {{ nq -= groups; ++ni; }}
      in[k] = next[k];
      next[k] = tilec_load(p, ni, nq * {group} + part * {cols}, m, n);
    }}
    #pragma unroll
    for (int k = 0; k < {ROWS_LANE_UNITS}; ++k) {{
      const int i = iu[k], q = qu[k];
      const int j0 = q * {group} + part * {cols};
      // The lane's columns inside the product.
      const int valid = i < m ? min({cols}, n - j0) : 0;
{decls}{body}      tilec_lane_out out;
      #pragma unroll
      {encode}
      {out_ty}* row = c + (long long)i * n + j0;
      if (valid == {cols} && n % {cols} == 0) {{
        *reinterpret_cast<tilec_lane_out*>(row) = out;
      }} else {{
        // Unrolled, so that `out` stays in registers.
        #pragma unroll
        for (int e = 0; e < {cols}; ++e) if (e < valid) row[e] = out.v[e];
      }}
{group_stores}      iu[k] += di;
      qu[k] += dq;
      if (qu[k] >= groups) {{ qu[k] -= groups; ++iu[k]; }}
    }}
  }}
}}
"#
    );
    Ok(src)
}

/// Threads per block of the element-wise kernel.
const ELEMENTWISE_THREADS: u32 = 256;

/// The generated epilogue kernel, compiled with NVRTC and loaded.
pub struct ElementwiseKernel {
    _module: Arc<CudaModule>,
    func: CudaFunction,
    /// Vectors and matrices it takes.
    operands: usize,
    /// Group stores it writes.
    stores: usize,
    /// How it reads and writes: which launch takes it.
    shape: KernelShape,
    max_blocks: u32,
}

impl ElementwiseKernel {
    /// Generates the kernel for `epilogue` writing `output` ([`cuda_source`]),
    /// compiles it for the device's compute capability with NVRTC and loads it.
    pub fn new(gpu: &Gpu, epilogue: &Epilogue, vectors: &[VectorSpec], matrices: &[MatrixSpec], output: &OutputSpec) -> Result<Self> {
        let src = cuda_source(epilogue, vectors, matrices, output).map_err(RuntimeError::Other)?;
        let shape = kernel_shape(epilogue, output).map_err(RuntimeError::Other)?;
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(RuntimeError::LibraryNotLoaded {
                lib: "libnvrtc",
                candidates: cudarc::get_lib_name_candidates("nvrtc"),
                ld_library_path: crate::error::ld_library_path(),
            });
        }
        // NVRTC takes the architecture as a 'static str.
        let arch: &'static str = match gpu.cc {
            (9, 0) => "sm_90",
            (8, 9) => "sm_89",
            (10, 0) => "sm_100",
            (12, 0) => "sm_120",
            _ => "sm_80",
        };
        let opts = cudarc::nvrtc::CompileOptions { arch: Some(arch), name: Some("tilec_epilogue.cu".into()), ..Default::default() };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(&src, opts)
            .map_err(|e| RuntimeError::Other(format!("NVRTC could not compile the epilogue kernel: {e:?}\n{src}")))?;
        let module = gpu.ctx.load_module(ptx).ctx("cuModuleLoadData(epilogue kernel)")?;
        let func = module.load_function(ELEMENTWISE_ENTRY).ctx("cuModuleGetFunction(tilec_epilogue)")?;
        let (operands, stores) = (vectors.len() + matrices.len(), epilogue.group_stores.len());
        Ok(ElementwiseKernel { _module: module, func, operands, stores, shape, max_blocks: gpu.num_sms * 16 })
    }

    /// How the kernel reads and writes, which says which launch takes it.
    pub fn shape(&self) -> KernelShape {
        self.shape
    }

    /// Applies the epilogue in place to the bf16 `m x n` C at device address
    /// `c`, reading the vectors and then the matrices at `operands` (each in
    /// the order given to [`ElementwiseKernel::new`]); asynchronous on
    /// `gpu`'s stream. Other shapes run with [`ElementwiseKernel::launch_gated`]
    /// or [`ElementwiseKernel::launch_rows`] instead.
    pub fn launch(&self, gpu: &Gpu, c: u64, operands: &[u64], m: u64, n: u64) -> Result<()> {
        if self.shape != KernelShape::InPlace {
            return Err(self.other_launch("launch"));
        }
        self.launch_with(gpu, &[c], operands, m, n, (m * n).div_ceil(8))
    }

    /// Applies an epilogue of interleaved parts to the parts' bf16
    /// products at device addresses `products` (one per part, in order,
    /// each `[m, cols]`: the GEMM of the part's de-interleaved weights),
    /// writing the bf16 `C[m, cols]` at `c` (a buffer of its own), reading
    /// the vectors and then the matrices at `operands`; asynchronous on
    /// `gpu`'s stream.
    pub fn launch_gated(&self, gpu: &Gpu, c: u64, products: &[u64], operands: &[u64], m: u64, cols: u64) -> Result<()> {
        let KernelShape::Gated { parts, .. } = self.shape else { return Err(self.other_launch("launch_gated")) };
        if products.len() as u64 != parts {
            return Err(RuntimeError::GemmArgs(format!("the epilogue kernel reads {parts} parts' products, {} given", products.len())));
        }
        let pointers: Vec<u64> = std::iter::once(c).chain(products.iter().copied()).collect();
        self.launch_with(gpu, &pointers, operands, m, cols, (m * cols).div_ceil(8))
    }

    /// Applies an epilogue by rows and groups ([`KernelShape::Rows`]) to the
    /// bf16 product `[m, n]` at device address `product`, writing C `[m,
    /// n]` at `c` (bf16 or f8e4m3, as the kernel was generated for) and the
    /// group stores at `stores` (in the epilogue's order), reading the
    /// vectors and then the matrices at `operands`; asynchronous on `gpu`'s
    /// stream.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_rows(&self, gpu: &Gpu, c: u64, product: u64, stores: &[u64], operands: &[u64], m: u64, n: u64) -> Result<()> {
        let KernelShape::Rows { group } = self.shape else { return Err(self.other_launch("launch_rows")) };
        if stores.len() != self.stores {
            return Err(RuntimeError::GemmArgs(format!("the epilogue kernel writes {} group stores, {} given", self.stores, stores.len())));
        }
        // It holds a row or column index in 32 bits, and a column one group past the last.
        if m > i32::MAX as u64 || n > i32::MAX as u64 - group {
            return Err(RuntimeError::GemmArgs(format!(
                "the epilogue kernel indexes rows and columns with 32 bits: M={m} and N={n} must stay below 2^31 (N by a group more)"
            )));
        }
        // A warp holds 32 lanes' worth of units, twice.
        let warps = (m * n.div_ceil(group)).div_ceil(32 * ROWS_LANE_COLUMNS / group * ROWS_LANE_UNITS);
        let pointers: Vec<u64> = [c, product].into_iter().chain(stores.iter().copied()).collect();
        self.launch_with(gpu, &pointers, operands, m, n, warps * 32)
    }

    /// The error of a launch (`launch`, ...) that does not take the kernel's shape.
    fn other_launch(&self, launch: &str) -> RuntimeError {
        let takes = match self.shape {
            KernelShape::InPlace => "launch (in place)",
            KernelShape::Gated { .. } => "launch_gated (the products of interleaved parts)",
            KernelShape::Rows { .. } => "launch_rows (by rows and groups of columns)",
        };
        RuntimeError::GemmArgs(format!("the epilogue kernel is launched with {takes}, not {launch}"))
    }

    /// Launches with the `pointers` (C, then the product and the group
    /// stores where the kernel takes them), the vectors' and matrices'
    /// `operands`, `m` and `n`, over a grid of `threads` threads (one for
    /// 8 elements, or 8 columns of a row) in at most `max_blocks` blocks,
    /// the kernel looping over the rest.
    fn launch_with(&self, gpu: &Gpu, pointers: &[u64], operands: &[u64], m: u64, n: u64, threads: u64) -> Result<()> {
        if operands.len() != self.operands {
            return Err(RuntimeError::GemmArgs(format!(
                "the epilogue kernel takes {} vectors and matrices, {} given",
                self.operands,
                operands.len()
            )));
        }
        let blocks = threads.div_ceil(ELEMENTWISE_THREADS as u64).clamp(1, self.max_blocks as u64) as u32;
        let mut addrs: Vec<u64> = pointers.iter().chain(operands).copied().collect();
        let (mut m, mut n) = (m as i64, n as i64);
        let mut params: Vec<*mut c_void> = addrs.iter_mut().map(|a| a as *mut u64 as *mut c_void).collect();
        params.push(&mut m as *mut i64 as *mut c_void);
        params.push(&mut n as *mut i64 as *mut c_void);
        unsafe {
            sys::cuLaunchKernel(
                self.func.cu_function(),
                blocks,
                1,
                1,
                ELEMENTWISE_THREADS,
                1,
                1,
                0,
                gpu.stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .ctx("cuLaunchKernel(tilec_epilogue)")
    }
}

// ------------------------------------------------------------ checking a kernel

/// Multiply-adds the FP64 CPU reference of a GEMM with an epilogue may
/// spend per shape: every row up to `M*N*K` = 2^28, evenly spread rows beyond.
pub const CPU_REFERENCE_BUDGET: u64 = 1 << 28;

/// Rows `rows` of `C = epilogue(A * B^T)`: the FP64 CPU product (A `m x k`
/// and B `n x k` row-major, as f32 values: bf16 inputs, or dequantised FP8
/// ones) taken through the epilogue in f64, reading `vectors` and
/// `matrices` (element (i, j) for row `i`): C's `rows.len() x n`, or
/// `rows.len() x n/parts` for an epilogue of interleaved parts (each output
/// element reading the product at its parts' columns), and each group
/// store's values of those rows ([`EpilogueReference::rows`]).
#[allow(clippy::too_many_arguments)]
pub fn reference_rows(
    epilogue: &Epilogue,
    vectors: &[HostVector],
    matrices: &[HostMatrix],
    a: &[f32],
    b: &[f32],
    n: usize,
    k: usize,
    rows: &[usize],
) -> Result<EpilogueRows> {
    let reference = EpilogueReference::new(epilogue, vectors, matrices)?;
    let acc = crate::check::cpu_gemm_tn_rows(a, b, n, k, rows);
    Ok(reference.rows(&acc, rows, n))
}

/// Rows `rows` of a row-major bf16 `C` with `n` columns, widened.
pub fn take_rows(c: &[half::bf16], rows: &[usize], n: usize) -> Vec<f64> {
    rows.iter().flat_map(|&i| c[i * n..(i + 1) * n].iter().map(|x| x.to_f64())).collect()
}

/// The inputs a check draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inputs {
    /// Uniform in [-1, 1) (FP8: rounded to e4m3, with power-of-two block
    /// scales over 2^-10..2^10), checked against the epilogue in f64 on the
    /// FP64 product ([`crate::quantize::POLICY`] for quantised outputs, the
    /// threshold for the rest).
    Random,
    /// Inputs whose product is exact in f32 ([`crate::check::ExactInputs`]),
    /// checked value for value against the epilogue evaluated in f32 as the
    /// kernel does ([`crate::quantize::EXACT_POLICY`]).
    Exact,
}

impl Inputs {
    /// `random` or `exact`, for a report.
    pub fn name(self) -> &'static str {
        match self {
            Inputs::Random => "random",
            Inputs::Exact => "exact",
        }
    }
}

/// The outcome of one shape of a GEMM with an epilogue.
#[derive(Debug, Clone, PartialEq)]
pub struct EpilogueCheck {
    /// The inputs drawn.
    pub inputs: Inputs,
    /// The seed the inputs (vectors and matrices too) were drawn from.
    pub seed: u64,
    /// C and the group stores over the checked rows against the reference.
    pub out: OutputCheck,
    /// Rows checked (all of C's when `M*N*K` is within [`CPU_REFERENCE_BUDGET`]).
    pub rows: usize,
    /// The outputs pass: [`OutputCheck::pass`] at the threshold for random
    /// inputs, [`OutputCheck::pass_exact`] for exact ones.
    pub pass: bool,
}

/// A checked call, kept bound with its buffers so that it can be timed.
pub struct EpilogueCall {
    /// The check's outcome.
    pub check: EpilogueCheck,
    /// The kernel bound to the inputs it was checked on.
    pub bound: crate::BoundGemm,
    _buffers: Vec<CudaSlice<u8>>,
    _stores: Vec<CudaSlice<f32>>,
}

fn raw_binding(gpu: &Gpu, name: &str, dtype: DType, s: &CudaSlice<u8>) -> TensorBinding {
    TensorBinding { name: name.into(), dtype, addr: gpu.addr(s), bytes: s.len() as u64 }
}

/// Runs `gemm` (a BF16 GEMM, B `[N,K]` or `[K,N]`, or a block-scaled FP8
/// one) once on fresh `inputs` of `size`, its epilogue's vectors and
/// matrices filled with fresh random values, C and the group stores
/// poisoned with NaN first (every byte 0xFF), and checks them on evenly
/// spread rows (all rows within [`CPU_REFERENCE_BUDGET`]) against the CPU
/// product taken through the epilogue row by row (a matrix read at the
/// element's (i, j); an epilogue of interleaved parts fed all N product
/// columns of each row, C being `M x N/parts`; a group reduction over the
/// row's columns), as [`OutputCheck`] compares them:
/// - [`Inputs::Random`]: FP64 product, epilogue in f64
///   ([`EpilogueReference::rows`]); C's values (FP8 codes decoded with
///   their scales) within the threshold by their relative error, group
///   stores as [`crate::quantize::POLICY`] says. FP8 inputs and
///   power-of-two block scales are drawn as `crate::blockscaled` draws them.
/// - [`Inputs::Exact`]: inputs drawn by [`crate::check::ExactInputs::for_k`] (A's first
///   row zero where M > 1, so that a row's reductions see only zeros), the
///   product exact in f32, the epilogue evaluated in f32
///   ([`EpilogueReference::rows_f32`]; an error where the epilogue has no
///   exact f32 value, [`Epilogue::in_f32`]); every value equal.
///
/// A manifest without an epilogue is checked as `[acc, convert bf16]`.
pub fn check_with_epilogue(gpu: &Gpu, gemm: &crate::Gemm, size: GemmSize, threshold: f64, inputs: Inputs) -> Result<EpilogueCall> {
    use crate::check::*;
    use crate::gemm::{BLayout, GemmBuffers, Scales};
    let spec = gemm.spec();
    let plain = Epilogue::plain(DType::Bf16);
    let epilogue = spec.epilogue.as_ref().unwrap_or(&plain);
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    let exact = match inputs {
        Inputs::Random => None,
        Inputs::Exact => Some(ExactInputs::for_k(k, spec.scales == Scales::Block).map_err(RuntimeError::GemmArgs)?),
    };
    // Exact inputs' elements as f32 values (None for random inputs), the first `zero_row` zero where M > 1.
    let elements = |len: usize, zero_row: usize, rng: &mut Rng| -> Option<Vec<f32>> {
        let mut v = exact?.elements(len, rng);
        if m > 1 {
            v[..zero_row].fill(0.0);
        }
        Some(v)
    };
    let s = &gpu.stream;
    let up = |bytes: &[u8], what: &'static str| s.clone_htod(bytes).ctx(what);
    let bf16_bytes = |v: &[half::bf16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let f32_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut keep = Vec::new();
    let (a_f32, b_f32, buffers) = match (spec.input, spec.scales) {
        (DType::Bf16, Scales::None) => {
            let draw = |values: Option<Vec<f32>>, len: usize, rng: &mut Rng| match values {
                Some(v) => v.into_iter().map(half::bf16::from_f32).collect(),
                None => random_bf16(len, rng),
            };
            let a_h = draw(elements(m * k, k, &mut rng), m * k, &mut rng);
            let b_h = draw(elements(n * k, 0, &mut rng), n * k, &mut rng);
            let b_kernel = match spec.b_layout {
                BLayout::Nk => b_h.clone(),
                BLayout::Kn => (0..k * n).map(|x| b_h[(x % n) * k + x / n]).collect(),
            };
            let a = up(&bf16_bytes(&a_h), "cuMemcpyHtoD(A)")?;
            let b = up(&bf16_bytes(&b_kernel), "cuMemcpyHtoD(B)")?;
            let (ab, bb) = (raw_binding(gpu, "A", DType::Bf16, &a), raw_binding(gpu, "B", DType::Bf16, &b));
            keep.extend([a, b]);
            let to_f32 = |v: &[half::bf16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
            (to_f32(&a_h), to_f32(&b_h), (ab, bb, None))
        }
        (DType::F8e4m3, Scales::Block) => {
            let bs = BlockScales::new(m, n, k);
            let draw = |values: Option<Vec<f32>>, len: usize, rng: &mut Rng| match values {
                Some(v) => v.into_iter().map(f32_to_e4m3).collect(),
                None => random_e4m3(len, rng),
            };
            let a_h = draw(elements(m * k, k, &mut rng), m * k, &mut rng);
            let b_h = draw(elements(n * k, 0, &mut rng), n * k, &mut rng);
            let scales = |len: usize, rng: &mut Rng| match exact {
                Some(x) => x.scales(len, rng),
                None => random_pow2_scales(len, rng),
            };
            let sa_h = scales(bs.sa_len(), &mut rng);
            let sb_h = scales(bs.sb_len(), &mut rng);
            let sa_kernel = spec.sa_layout.arrange(&sa_h, m, bs.kb());
            let a = up(&a_h, "cuMemcpyHtoD(A)")?;
            let b = up(&b_h, "cuMemcpyHtoD(B)")?;
            let sa = up(&f32_bytes(&sa_kernel), "cuMemcpyHtoD(SA)")?;
            let sb = up(&f32_bytes(&sb_h), "cuMemcpyHtoD(SB)")?;
            let bind = (
                raw_binding(gpu, "A", DType::F8e4m3, &a),
                raw_binding(gpu, "B", DType::F8e4m3, &b),
                Some((raw_binding(gpu, "SA", DType::F32, &sa), raw_binding(gpu, "SB", DType::F32, &sb))),
            );
            keep.extend([a, b, sa, sb]);
            (bs.dequant_a(&a_h, &sa_h), bs.dequant_b(&b_h, &sb_h), bind)
        }
        (input, scales) => {
            return Err(RuntimeError::GemmArgs(format!(
                "the epilogue check runs BF16 GEMMs and block-scaled FP8 ones, not {input} with scales {scales:?}"
            )))
        }
    };
    let out = spec.out_size(size);
    let h = out.n as usize;
    let vectors = random_vectors(&spec.vectors, out, &mut rng);
    let (vector_slices, vector_bindings) = upload_vectors(gpu, &vectors)?;
    keep.extend(vector_slices);
    let matrices = random_matrices(&spec.matrices, out, &mut rng);
    let (matrix_slices, matrix_bindings) = upload_matrices(gpu, &matrices)?;
    keep.extend(matrix_slices);
    // 0xFF bytes are NaN as bf16, as e4m3 and as f32: an element left unwritten fails.
    let elem = spec.output.dtype.size_bytes();
    let mut c = unsafe { s.alloc::<u8>(m * h * elem) }.ctx("cuMemAlloc(C)")?;
    gpu.poison8(&mut c, 0xFF)?;
    let mut stores = Vec::with_capacity(spec.output.group_stores.len());
    for st in &spec.output.group_stores {
        let mut buf = unsafe { s.alloc::<f32>(st.len(out) as usize) }.ctx("cuMemAlloc(group store)")?;
        gpu.poison8(&mut buf, 0xFF)?;
        stores.push(buf);
    }
    let store_bindings: Vec<TensorBinding> = spec.output.group_stores.iter().zip(&stores).map(|(st, b)| gpu.bind(&st.name, b)).collect();
    let (a, b, scales) = buffers;
    let c_binding = raw_binding(gpu, &spec.output.name, spec.output.dtype, &c);
    let mut buffers = GemmBuffers::new(a, b, c_binding)
        .with_vectors(vector_bindings)
        .with_matrices(matrix_bindings)
        .with_group_stores(store_bindings);
    buffers.scales = scales;
    let mut bound = gemm.bind_raw(size, buffers)?;
    bound.launch_checked()?;
    let c_out = s.clone_dtoh(&c).ctx("cuMemcpyDtoH(C)")?;
    let rows = sample_rows(m, n, k, CPU_REFERENCE_BUDGET);
    let reference = EpilogueReference::new(epilogue, &vectors, &matrices)?;
    let acc = cpu_gemm_tn_rows(&a_f32, &b_f32, n, k, &rows);
    let reference = match inputs {
        Inputs::Random => reference.rows(&acc, &rows, n),
        Inputs::Exact => {
            let acc32: Vec<f32> = acc.iter().map(|&x| x as f32).collect();
            if let Some((x, _)) = acc.iter().zip(&acc32).find(|&(&x, &y)| x != y as f64) {
                return Err(RuntimeError::Other(format!("the exact inputs' product has {x}, which f32 does not hold: {exact:?} for K={k}")));
            }
            reference.rows_f32(&acc32, &rows, n)?
        }
    };
    let c_rows: Vec<u8> = rows.iter().flat_map(|&i| c_out[i * h * elem..(i + 1) * h * elem].iter().copied()).collect();
    let mut store_rows = Vec::with_capacity(stores.len());
    for (st, buf) in spec.output.group_stores.iter().zip(&stores) {
        store_rows.push(st.rows(&s.clone_dtoh(buf).ctx("cuMemcpyDtoH(group store)")?, &rows, out));
    }
    let checked = OutputCheck::new(&spec.output, h, &c_rows, &store_rows, &reference).map_err(RuntimeError::Other)?;
    let pass = match inputs {
        Inputs::Random => checked.pass(threshold),
        Inputs::Exact => checked.pass_exact(),
    };
    let check = EpilogueCheck { inputs, seed, rows: rows.len(), pass, out: checked };
    keep.push(c);
    Ok(EpilogueCall { check, bound, _buffers: keep, _stores: stores })
}
