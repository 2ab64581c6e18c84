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

use crate::check::Rng;
use crate::cuda::Gpu;
use crate::error::{DriverCtx, Result, RuntimeError};
use crate::gemm::{GemmSize, MatrixSpec, VectorSpec};
use crate::plan::TensorBinding;
use cudarc::driver::{sys, CudaFunction, CudaModule, CudaSlice};
use std::ffi::c_void;
use std::fmt::Write as _;
use std::sync::Arc;
use tilec_artifact::{round_to, Along, BinaryFn, DType, Epilogue, EpilogueValue, UnaryFn};

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

/// How an epilogue's interleaved accumulator parts ([`EpilogueValue::AccPart`])
/// sit among the product's columns: `parts` outputs (SwiGLU's gate and up:
/// 2) in runs of `block` columns. The GEMM computes `N` product columns;
/// its output C has `N / parts` (`N` a multiple of `parts * block`), and
/// output column `j` of part `p` is product column [`AccParts::column`].
/// An epilogue reading no part is an ordinary one (`C[M,N]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccParts {
    /// Columns in a run.
    pub block: u64,
    /// How many outputs the product's columns interleave.
    pub parts: u64,
    /// The symbol of C's columns (`H`), bound to `N / parts` at a call.
    pub cols: String,
}

impl AccParts {
    /// The one `(block, parts)` of every [`EpilogueValue::AccPart`] of
    /// `epilogue`, or `None` if it reads none; an error where two differ.
    pub fn of(epilogue: &Epilogue) -> std::result::Result<Option<(u64, u64)>, String> {
        let mut found: Option<(u64, u64)> = None;
        for (i, v) in epilogue.values.iter().enumerate() {
            if let EpilogueValue::AccPart { block, parts, .. } = *v {
                match found {
                    None => found = Some((block, parts)),
                    Some(f) if f != (block, parts) => {
                        return Err(format!(
                            "the epilogue's accumulator parts interleave differently: value {i} reads {parts} parts in runs of {block}, \
                             an earlier one {} in runs of {}",
                            f.1, f.0
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(found)
    }

    /// The product column that output column `j` of part `part` reads:
    /// `parts * block * (j / block) + part * block + j % block`.
    pub fn column(&self, j: u64, part: u64) -> u64 {
        product_column(self.block, self.parts, j, part)
    }

    /// C's columns for `n` product columns: `n / parts`.
    pub fn out_cols(&self, n: u64) -> u64 {
        n / self.parts
    }

    /// Checks that `n` product columns interleave whole runs of every part.
    pub fn check_n(&self, n: u64) -> Result<()> {
        let whole = self.parts * self.block;
        if n % whole != 0 {
            return Err(RuntimeError::GemmArgs(format!(
                "N={n} product columns do not interleave {} parts in whole runs of {} columns: N must be a multiple of {whole} \
                 (C then has N/{} columns)",
                self.parts, self.block, self.parts
            )));
        }
        Ok(())
    }
}

/// [`AccParts::column`] of `parts` parts in runs of `block`.
fn product_column(block: u64, parts: u64, j: u64, part: u64) -> u64 {
    parts * block * (j / block) + part * block + j % block
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
    /// interleaved parts needs the product's row ([`EpilogueReference::at_row`]):
    /// here they read NaN.
    pub fn at(&self, acc: f64, i: usize, j: usize) -> f64 {
        self.epilogue.eval(acc, |v| self.operand(v, i, j, None))
    }

    /// `C[i][j]` given row `i` of the product (all its N columns), in f64:
    /// the accumulator is the product's column `j`, an interleaved part's
    /// ([`EpilogueValue::AccPart`]) its column [`AccParts::column`] of `j`
    /// (NaN past the row's end).
    pub fn at_row(&self, product: &[f64], i: usize, j: usize) -> f64 {
        let acc = product.get(j).copied().unwrap_or(f64::NAN);
        self.epilogue.eval(acc, |v| self.operand(v, i, j, Some(product)))
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

    /// The epilogue over rows `rows` of C: `acc` holds the product's rows,
    /// `rows.len() x n` row-major; the result is `rows.len() x out_cols(n)`
    /// (each element read as [`EpilogueReference::at_row`] does); on all cores.
    pub fn rows(&self, acc: &[f64], rows: &[usize], n: usize) -> Vec<f64> {
        assert_eq!(acc.len(), rows.len() * n, "EpilogueReference::rows: accumulator size");
        let h = self.out_cols(n);
        if let Some((block, parts)) = self.gated {
            assert_eq!(n as u64 % (block * parts), 0, "EpilogueReference::rows: {n} columns are not whole runs of {parts} parts of {block}");
        }
        let mut out = vec![0.0f64; rows.len() * h];
        if n == 0 || h == 0 {
            return out;
        }
        let threads = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(1);
        let rows_per = rows.len().div_ceil(threads).max(1);
        std::thread::scope(|s| {
            for ((out, acc), rows) in out.chunks_mut(rows_per * h).zip(acc.chunks(rows_per * n)).zip(rows.chunks(rows_per)) {
                s.spawn(move || {
                    for (r, &i) in rows.iter().enumerate() {
                        let product = &acc[r * n..(r + 1) * n];
                        for j in 0..h {
                            out[r * h + j] = self.at_row(product, i, j);
                        }
                    }
                });
            }
        });
        out
    }
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
    /// columns. No vendor kernel fuses it; the baseline is the GEMM
    /// writing the whole bf16 product, then the element-wise kernel
    /// ([`cuda_source`]) reading its parts.
    Gated {
        /// Columns in a run.
        block: u64,
        /// How many outputs the product interleaves.
        parts: u64,
    },
    /// Anything else: no vendor kernel fuses it.
    Other,
}

impl EpilogueKind {
    /// A short name for reports: `plain`, `bias`, `bias_gelu`, `residual`, `gated`, `other`.
    pub fn name(&self) -> &'static str {
        match self {
            EpilogueKind::Plain => "plain",
            EpilogueKind::Bias { .. } => "bias",
            EpilogueKind::BiasGelu { .. } => "bias_gelu",
            EpilogueKind::Residual { .. } => "residual",
            EpilogueKind::Gated { .. } => "gated",
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
/// else it does.
pub fn classify(epilogue: Option<&Epilogue>, vectors: &[VectorSpec], matrices: &[MatrixSpec]) -> EpilogueKind {
    let Some(e) = epilogue else { return EpilogueKind::Plain };
    match AccParts::of(e) {
        Ok(Some((block, parts))) => return EpilogueKind::Gated { block, parts },
        Err(_) => return EpilogueKind::Other,
        Ok(None) => {}
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
__device__ __forceinline__ float tilec_max(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b); }
__device__ __forceinline__ float tilec_min(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fffffff) : fminf(a, b); }
"#;

/// The entry name of the generated kernel.
pub const ELEMENTWISE_ENTRY: &str = "tilec_epilogue";

/// CUDA C of an element-wise kernel that applies `epilogue` in place to a
/// bf16 `C[M,N]` holding a GEMM's result (the accumulator rounded to bf16):
/// `tilec_epilogue(unsigned short* c, <one pointer per vector, in the
/// order of `vectors`>, <one per matrix, in the order of `matrices`>, long
/// long m, long long n)`. Each thread takes 8 consecutive elements with one
/// 16-byte load and store (the tail element by element), and as many of
/// each matrix (row-major `[M,N]`, as C: 16 bytes of a bf16 or f16 one, 32
/// of an f32 one), in a grid-stride loop; the arithmetic is f32, as the
/// fused kernel's, with `expf`, `tanhf`, `erff` and `rsqrtf`, and
/// conversions rounding to nearest even through PTX `cvt`. `vectors` and
/// `matrices` must name every vector and matrix the epilogue reads.
///
/// An epilogue reading interleaved parts of the product
/// ([`EpilogueValue::AccPart`], [`AccParts`]) cannot run in place: its
/// kernel is `tilec_epilogue(unsigned short* c, const unsigned short* p,
/// <vectors>, <matrices>, long long m, long long n)`, reading the bf16
/// product `p[M, parts*n]` and writing `C[M,n]` (`n = N / parts`, a
/// multiple of `block`). Its 8 outputs read 8 consecutive product columns
/// of each part, one 16-byte load each where `n` and `block` are multiples
/// of 8 (element by element otherwise); the accumulator ([`EpilogueValue::Acc`]),
/// where read, is the product's column `j`.
pub fn cuda_source(epilogue: &Epilogue, vectors: &[VectorSpec], matrices: &[MatrixSpec]) -> std::result::Result<String, String> {
    let gated = AccParts::of(epilogue)?;
    // The product's columns the program reads, gated: `None` for the accumulator's own (`j`), else a part.
    let mut sources: Vec<Option<u64>> = Vec::new();
    let mut body = String::new();
    for (i, v) in epilogue.values.iter().enumerate() {
        let expr = match v {
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
            EpilogueValue::Splat { value } => c_float(*value),
            EpilogueValue::Vector { tensor, along } => {
                let k = vectors
                    .iter()
                    .position(|s| &s.name == tensor)
                    .ok_or_else(|| format!("the epilogue reads vector {tensor}, which is not among the kernel's vectors"))?;
                let index = match along {
                    Along::Rows => "i",
                    Along::Cols => "j",
                };
                c_load(vectors[k].dtype, &format!("v{k}"), index)
            }
            EpilogueValue::Matrix { tensor } => {
                let k = matrices
                    .iter()
                    .position(|s| &s.name == tensor)
                    .ok_or_else(|| format!("the epilogue reads matrix {tensor}, which is not among the kernel's matrices"))?;
                c_load(matrices[k].dtype, &format!("r{k}g.v"), "e")
            }
            EpilogueValue::Unary { f, x } => match f {
                UnaryFn::Neg => format!("-x{x}"),
                UnaryFn::Abs => format!("fabsf(x{x})"),
                UnaryFn::Exp => format!("expf(x{x})"),
                UnaryFn::Tanh => format!("tanhf(x{x})"),
                UnaryFn::Erf => format!("erff(x{x})"),
                UnaryFn::Rsqrt => format!("rsqrtf(x{x})"),
            },
            EpilogueValue::Binary { f, lhs, rhs } => match f {
                BinaryFn::Add => format!("x{lhs} + x{rhs}"),
                BinaryFn::Sub => format!("x{lhs} - x{rhs}"),
                BinaryFn::Mul => format!("x{lhs} * x{rhs}"),
                BinaryFn::Div => format!("x{lhs} / x{rhs}"),
                BinaryFn::Max => format!("tilec_max(x{lhs}, x{rhs})"),
                BinaryFn::Min => format!("tilec_min(x{lhs}, x{rhs})"),
            },
            EpilogueValue::Convert { to, x } => match to {
                DType::Bf16 => format!("tilec_round_bf16(x{x})"),
                DType::F16 => format!("tilec_round_f16(x{x})"),
                DType::F8e4m3 => format!("tilec_round_e4m3(x{x})"),
                DType::F8e5m2 => format!("tilec_round_e5m2(x{x})"),
                DType::F32 | DType::F64 => format!("x{x}"),
                other => return Err(format!("the epilogue converts to {other}, not a float type")),
            },
        };
        for operand in Epilogue::operands(v) {
            if operand >= i {
                return Err(format!("value {i} reads value {operand}, not an earlier one"));
            }
        }
        let _ = writeln!(body, "      const float x{i} = {expr};");
    }
    let Some(last) = epilogue.values.len().checked_sub(1) else {
        return Err("the epilogue has no values".into());
    };
    let mut params: String = vectors.iter().enumerate().map(|(k, v)| format!(", const {}* __restrict__ v{k}", c_type(v.dtype))).collect();
    // Each matrix's 8 elements of the group, loaded as C's are.
    let mut loads = String::new();
    for (k, x) in matrices.iter().enumerate() {
        let (ty, group) = match x.dtype {
            DType::F32 => ("float", "tilec_f32x8"),
            _ => ("unsigned short", "tilec_u16x8"),
        };
        let _ = write!(params, ", const {ty}* __restrict__ r{k}");
        let _ = write!(
            loads,
            r#"    {group} r{k}g;
    if (whole) {{
      r{k}g = *reinterpret_cast<const {group}*>(r{k} + base);
    }} else {{
      for (int e = 0; e < 8; ++e) r{k}g.v[e] = base + e < total ? r{k}[base + e] : ({ty})0;
    }}
"#
        );
    }
    // Both kernels end alike: each element of the group through the
    // epilogue, from (i, j) on, and the group stored.
    let compute_and_store = format!(
        r#"#pragma unroll
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
    let mut src = String::from(CUDA_PRELUDE);
    let Some((block, parts)) = gated else {
        let _ = write!(
            src,
            r#"
extern "C" __global__ void {ELEMENTWISE_ENTRY}(unsigned short* __restrict__ c{params}, long long m, long long n) {{
  const long long total = m * n;
  const long long groups = (total + 7) / 8;
  for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += (long long)gridDim.x * blockDim.x) {{
    const long long base = g * 8;
    const bool whole = base + 8 <= total;
    tilec_u16x8 in, out;
    if (whole) {{
      in = *reinterpret_cast<const tilec_u16x8*>(c + base);
    }} else {{
      for (int e = 0; e < 8; ++e) in.v[e] = base + e < total ? c[base + e] : (unsigned short)0;
    }}
{loads}    long long i = base / n;
    long long j = base - i * n;
{compute_and_store}"#
        );
        return Ok(src);
    };
    // Gated: each source's 8 product elements, a 16-byte load where the
    // group lies in one row and one run (n and block multiples of 8), else one by one.
    let name = |s: &Option<u64>| s.map_or_else(|| "qag".to_string(), |p| format!("q{p}g"));
    let col = |s: &Option<u64>, j: &str| s.map_or_else(|| j.to_string(), |p| format!("tilec_col({j}, {p})"));
    let decl: String = sources.iter().map(|s| format!(", {}", name(s))).collect();
    let mut vector_loads = String::new();
    let mut scalar_loads = String::new();
    for s in &sources {
        let _ = writeln!(vector_loads, "      {} = *reinterpret_cast<const tilec_u16x8*>(p + i * pn + {});", name(s), col(s, "j"));
        let _ = writeln!(scalar_loads, "        {}.v[e] = inside ? p[xi * pn + {}] : (unsigned short)0;", name(s), col(s, "xj"));
    }
    let runs = if block % 8 == 0 { "whole && n % 8 == 0" } else { "false" };
    let _ = write!(
        src,
        r#"// Output column j of part q reads the product's column {parts}*{block}*(j/{block}) + q*{block} + j%{block}.
__device__ __forceinline__ long long tilec_col(long long j, long long q) {{ return {whole_run}LL * (j / {block}LL) + q * {block}LL + j % {block}LL; }}

extern "C" __global__ void {ELEMENTWISE_ENTRY}(unsigned short* __restrict__ c, const unsigned short* __restrict__ p{params}, long long m, long long n) {{
  const long long total = m * n;
  const long long pn = {parts}LL * n;
  const long long groups = (total + 7) / 8;
  for (long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += (long long)gridDim.x * blockDim.x) {{
    const long long base = g * 8;
    const bool whole = base + 8 <= total;
    long long i = base / n;
    long long j = base - i * n;
    tilec_u16x8 out{decl};
    if ({runs}) {{
{vector_loads}    }} else {{
      for (int e = 0; e < 8; ++e) {{
        const bool inside = base + e < total;
        const long long xi = (base + e) / n;
        const long long xj = base + e - xi * n;
{scalar_loads}      }}
    }}
{loads}{compute_and_store}"#,
        whole_run = parts * block
    );
    Ok(src)
}

/// Threads per block of the element-wise kernel.
const ELEMENTWISE_THREADS: u32 = 256;

/// The generated element-wise kernel, compiled with NVRTC and loaded.
pub struct ElementwiseKernel {
    _module: Arc<CudaModule>,
    func: CudaFunction,
    /// Vectors and matrices it takes.
    operands: usize,
    /// It reads interleaved parts of a separate product ([`ElementwiseKernel::launch_gated`]).
    gated: bool,
    max_blocks: u32,
}

impl ElementwiseKernel {
    /// Generates the kernel for `epilogue` ([`cuda_source`]), compiles it
    /// for the device's compute capability with NVRTC and loads it.
    pub fn new(gpu: &Gpu, epilogue: &Epilogue, vectors: &[VectorSpec], matrices: &[MatrixSpec]) -> Result<Self> {
        let src = cuda_source(epilogue, vectors, matrices).map_err(RuntimeError::Other)?;
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
        let operands = vectors.len() + matrices.len();
        let gated = matches!(AccParts::of(epilogue), Ok(Some(_)));
        Ok(ElementwiseKernel { _module: module, func, operands, gated, max_blocks: gpu.num_sms * 16 })
    }

    /// Applies the epilogue in place to the bf16 `m x n` C at device address
    /// `c`, reading the vectors and then the matrices at `operands` (each in
    /// the order given to [`ElementwiseKernel::new`]); asynchronous on
    /// `gpu`'s stream. An epilogue of interleaved parts runs with
    /// [`ElementwiseKernel::launch_gated`] instead.
    pub fn launch(&self, gpu: &Gpu, c: u64, operands: &[u64], m: u64, n: u64) -> Result<()> {
        if self.gated {
            return Err(RuntimeError::GemmArgs("the epilogue reads interleaved parts of the product: launch_gated takes it".into()));
        }
        self.launch_with(gpu, c, None, operands, m, n)
    }

    /// Applies an epilogue of interleaved parts to the bf16 product
    /// `[m, n]` at device address `product`, writing the bf16 `C[m, n /
    /// parts]` at `c` (separate buffers; `n` a multiple of `parts *
    /// block`), reading the vectors and then the matrices at `operands`;
    /// asynchronous on `gpu`'s stream.
    pub fn launch_gated(&self, gpu: &Gpu, c: u64, product: u64, operands: &[u64], m: u64, n: u64, parts: u64) -> Result<()> {
        if !self.gated {
            return Err(RuntimeError::GemmArgs("the epilogue reads no interleaved parts of the product: launch takes it".into()));
        }
        self.launch_with(gpu, c, Some(product), operands, m, n / parts)
    }

    fn launch_with(&self, gpu: &Gpu, c: u64, product: Option<u64>, operands: &[u64], m: u64, n: u64) -> Result<()> {
        if operands.len() != self.operands {
            return Err(RuntimeError::GemmArgs(format!(
                "the epilogue kernel takes {} vectors and matrices, {} given",
                self.operands,
                operands.len()
            )));
        }
        let groups = (m * n).div_ceil(8);
        let blocks = groups.div_ceil(ELEMENTWISE_THREADS as u64).clamp(1, self.max_blocks as u64) as u32;
        let (mut c, mut m, mut n) = (c, m as i64, n as i64);
        let mut product = product;
        let mut vecs: Vec<u64> = operands.to_vec();
        let mut params: Vec<*mut c_void> = Vec::with_capacity(4 + vecs.len());
        params.push(&mut c as *mut u64 as *mut c_void);
        if let Some(p) = product.as_mut() {
            params.push(p as *mut u64 as *mut c_void);
        }
        for v in vecs.iter_mut() {
            params.push(v as *mut u64 as *mut c_void);
        }
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
/// `matrices` (element (i, j) for row `i`). `rows.len() x n`, or `rows.len()
/// x n/parts` for an epilogue of interleaved parts (each output element
/// reading the product at its parts' columns, [`EpilogueReference::at_row`]).
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
) -> Result<Vec<f64>> {
    let reference = EpilogueReference::new(epilogue, vectors, matrices)?;
    let acc = crate::check::cpu_gemm_tn_rows(a, b, n, k, rows);
    Ok(reference.rows(&acc, rows, n))
}

/// Rows `rows` of a row-major bf16 `C` with `n` columns, widened.
pub fn take_rows(c: &[half::bf16], rows: &[usize], n: usize) -> Vec<f64> {
    rows.iter().flat_map(|&i| c[i * n..(i + 1) * n].iter().map(|x| x.to_f64())).collect()
}

/// The outcome of one shape of a GEMM with an epilogue.
#[derive(Debug, Clone, PartialEq)]
pub struct EpilogueCheck {
    /// The seed the inputs (vectors and matrices too) were drawn from.
    pub seed: u64,
    /// `||out - ref||_F / ||ref||_F` over the checked rows.
    pub err: f64,
    /// Rows checked (all of C's when `M*N*K` is within [`CPU_REFERENCE_BUDGET`]).
    pub rows: usize,
    /// The error is within the threshold.
    pub pass: bool,
}

/// A checked call, kept bound with its buffers so that it can be timed.
pub struct EpilogueCall {
    /// The check's outcome.
    pub check: EpilogueCheck,
    /// The kernel bound to the inputs it was checked on.
    pub bound: crate::BoundGemm,
    _buffers: Vec<CudaSlice<u8>>,
    _c: CudaSlice<half::bf16>,
}

fn raw_binding(gpu: &Gpu, name: &str, dtype: DType, s: &CudaSlice<u8>) -> TensorBinding {
    TensorBinding { name: name.into(), dtype, addr: gpu.addr(s), bytes: s.len() as u64 }
}

/// Runs `gemm` (a BF16 GEMM, B `[N,K]` or `[K,N]`, or a block-scaled FP8
/// one) once on fresh random inputs of `size`, its epilogue's vectors and
/// matrices filled with fresh random values, C poisoned with NaN first,
/// and checks C against the FP64 CPU product on evenly spread rows (all
/// rows within [`CPU_REFERENCE_BUDGET`]) taken through [`Epilogue::eval`]
/// (a matrix read at the element's (i, j); an epilogue of interleaved parts
/// fed all N product columns of each row, C being `M x N/parts`). FP8 inputs
/// and power-of-two block scales are drawn as `crate::blockscaled` draws
/// them. A manifest without an epilogue is checked as `[acc, convert bf16]`.
pub fn check_with_epilogue(gpu: &Gpu, gemm: &crate::Gemm, size: GemmSize, threshold: f64) -> Result<EpilogueCall> {
    use crate::check::*;
    use crate::gemm::{BLayout, GemmBuffers, Scales};
    let spec = gemm.spec();
    let plain = Epilogue::plain(DType::Bf16);
    let epilogue = spec.epilogue.as_ref().unwrap_or(&plain);
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    let s = &gpu.stream;
    let up = |bytes: &[u8], what: &'static str| s.clone_htod(bytes).ctx(what);
    let bf16_bytes = |v: &[half::bf16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let f32_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut keep = Vec::new();
    let (a_f32, b_f32, buffers) = match (spec.input, spec.scales) {
        (DType::Bf16, Scales::None) => {
            let a_h = random_bf16(m * k, &mut rng);
            let b_h = random_bf16(n * k, &mut rng);
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
            let a_h = random_e4m3(m * k, &mut rng);
            let b_h = random_e4m3(n * k, &mut rng);
            let sa_h = random_pow2_scales(bs.sa_len(), &mut rng);
            let sb_h = random_pow2_scales(bs.sb_len(), &mut rng);
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
    let mut c = unsafe { s.alloc::<half::bf16>(m * h) }.ctx("cuMemAlloc(C)")?;
    gpu.poison16(&mut c, POISON_BF16)?;
    let (a, b, scales) = buffers;
    let mut buffers = GemmBuffers::new(a, b, gpu.bind("C", &c)).with_vectors(vector_bindings).with_matrices(matrix_bindings);
    buffers.scales = scales;
    let mut bound = gemm.bind_raw(size, buffers)?;
    bound.launch_checked()?;
    let out = s.clone_dtoh(&c).ctx("cuMemcpyDtoH(C)")?;
    let rows = sample_rows(m, n, k, CPU_REFERENCE_BUDGET);
    let reference = reference_rows(epilogue, &vectors, &matrices, &a_f32, &b_f32, n, k, &rows)?;
    let err = rel_frobenius(&take_rows(&out, &rows, h), &reference);
    let check = EpilogueCheck { seed, err, rows: rows.len(), pass: passes(err, threshold) };
    Ok(EpilogueCall { check, bound, _buffers: keep, _c: c })
}
