//! cuBLAS / cuBLASLt baselines for the GEMM tilec compiles:
//! row-major `C[M,N] = A[M,K] * B[N,K]^T`, bf16 in and out, fp32 compute.
//!
//! cuBLAS is column-major. A row-major `X[r,c]` is the column-major `X^T`
//! (`c x r`, leading dimension `c`). So `C^T = B * A^T` in column-major:
//! the first operand is the B buffer (column-major `K x N`, transposed to
//! `N x K`), the second is the A buffer (column-major `K x M`, used as is),
//! and the result is column-major `N x M` with leading dimension N — exactly
//! row-major C. That is cuBLAS "TN" with m = N, n = M, k = K.

use crate::error::{check_lib, DriverCtx, Result, RuntimeError};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::cublaslt::{CudaBlasLT, Matmul, MatmulConfig};
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use std::sync::Arc;

/// The column-major call that computes a row-major TN GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColMajorCall {
    /// First operand (`A` in cuBLAS terms) is transposed.
    pub transa: bool,
    /// Second operand is transposed.
    pub transb: bool,
    /// Rows of cuBLAS's (column-major) C.
    pub m: i32,
    /// Columns of cuBLAS's C.
    pub n: i32,
    /// The reduction length.
    pub k: i32,
    /// Leading dimension of cuBLAS's first operand.
    pub lda: i32,
    /// Leading dimension of cuBLAS's second operand.
    pub ldb: i32,
    /// Leading dimension of C.
    pub ldc: i32,
    /// True: cuBLAS's first operand is our B buffer and its second our A.
    pub swap_operands: bool,
}

/// Maps row-major `C[M,N] = A[M,K] * B[N,K]^T` to a column-major cuBLAS call.
pub fn tn_row_major_to_col_major(m: u64, n: u64, k: u64) -> Result<ColMajorCall> {
    let fit = |v: u64, what: &str| {
        i32::try_from(v).map_err(|_| RuntimeError::Other(format!("{what} = {v} does not fit cuBLAS's int")))
    };
    Ok(ColMajorCall {
        transa: true,
        transb: false,
        m: fit(n, "N")?,
        n: fit(m, "M")?,
        k: fit(k, "K")?,
        lda: fit(k, "K")?,
        ldb: fit(k, "K")?,
        ldc: fit(n, "N")?,
        swap_operands: true,
    })
}

/// Column-major GEMM with cuBLAS semantics, on the CPU, for testing the
/// mapping: `C(m x n) = op(A) * op(B)`, element (i, j) at `i + j * ld`.
pub fn col_major_gemm_reference(c: &ColMajorCall, a: &[f64], b: &[f64]) -> Vec<f64> {
    let (m, n, k) = (c.m as usize, c.n as usize, c.k as usize);
    let (lda, ldb, ldc) = (c.lda as usize, c.ldb as usize, c.ldc as usize);
    let mut out = vec![0.0; ldc * n];
    for j in 0..n {
        for i in 0..m {
            let mut s = 0.0;
            for p in 0..k {
                let av = if c.transa { a[p + i * lda] } else { a[i + p * lda] };
                let bv = if c.transb { b[j + p * ldb] } else { b[p + j * ldb] };
                s += av * bv;
            }
            out[i + j * ldc] = s;
        }
    }
    out
}

/// cuBLAS (`cublasGemmEx`, bf16, `CUBLAS_COMPUTE_32F`).
pub struct Cublas {
    blas: CudaBlas,
}

impl Cublas {
    /// A handle whose calls run on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self> {
        check_lib(unsafe { cudarc::cublas::sys::is_culib_present() }, "libcublas", "cublas")?;
        let blas = CudaBlas::new(stream).map_err(|err| RuntimeError::Cublas { call: "cublasCreate", err })?;
        Ok(Cublas { blas })
    }

    /// `cublasGetVersion`, e.g. 130100 (None if the call fails).
    pub fn version(&self) -> Option<i64> {
        let mut v = 0;
        let r = unsafe { cudarc::cublas::sys::cublasGetVersion_v2(*self.blas.handle(), &mut v) };
        (r == cudarc::cublas::sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS).then_some(v as i64)
    }

    /// Row-major `C[M,N] = A[M,K] * B[N,K]^T`.
    pub fn gemm_bf16_tn(
        &self,
        m: u64,
        n: u64,
        k: u64,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        c: &mut CudaSlice<bf16>,
    ) -> Result<()> {
        check_sizes(m, n, k, a.len(), b.len(), c.len())?;
        let call = tn_row_major_to_col_major(m, n, k)?;
        let op = |t: bool| {
            if t {
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T
            } else {
                cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let cfg = GemmConfig {
            transa: op(call.transa),
            transb: op(call.transb),
            m: call.m,
            n: call.n,
            k: call.k,
            alpha: bf16::ONE,
            lda: call.lda,
            ldb: call.ldb,
            beta: bf16::ZERO,
            ldc: call.ldc,
        };
        unsafe { self.blas.gemm(cfg, b, a, c) }.map_err(|err| RuntimeError::Cublas { call: "cublasGemmEx", err })
    }
}

/// Multiply-adds the FP64 check of a cuBLAS reference may spend.
const REF_CHECK_BUDGET: u64 = 1 << 28;

impl Cublas {
    /// A reference for a correctness check too large for the CPU:
    /// `A[M,K] * B[N,K]^T` by cuBLAS on `gpu` (FP32 accumulation, bf16
    /// output), first checked against FP64 on evenly sampled rows (within
    /// `threshold`), so a wrong reference cannot pass a wrong kernel.
    /// Returns the `M x N` result.
    pub fn checked_reference(
        &self,
        gpu: &crate::cuda::Gpu,
        a: &[bf16],
        b: &[bf16],
        size: crate::gemm::GemmSize,
        threshold: f64,
    ) -> Result<Vec<f64>> {
        use crate::check::{bf16_to_f64, cpu_gemm_tn_rows, passes, rel_frobenius, sample_rows, POISON_BF16};
        let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
        let s = &gpu.stream;
        let a_d = s.clone_htod(a).ctx("cuMemcpyHtoD(reference A)")?;
        let b_d = s.clone_htod(b).ctx("cuMemcpyHtoD(reference B)")?;
        let mut c = unsafe { s.alloc::<bf16>(m * n) }.ctx("cuMemAlloc(reference C)")?;
        gpu.poison16(&mut c, POISON_BF16)?;
        self.gemm_bf16_tn(size.m, size.n, size.k, &a_d, &b_d, &mut c)?;
        gpu.sync("cuBLAS reference")?;
        let reference = bf16_to_f64(&s.clone_dtoh(&c).ctx("cuMemcpyDtoH(reference C)")?);
        let rows = sample_rows(m, n, k, REF_CHECK_BUDGET);
        let to_f32 = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
        let cpu = cpu_gemm_tn_rows(&to_f32(a), &to_f32(b), n, k, &rows);
        let sampled: Vec<f64> = rows.iter().flat_map(|&i| reference[i * n..(i + 1) * n].to_vec()).collect();
        let ref_err = rel_frobenius(&sampled, &cpu);
        if !passes(ref_err, threshold) {
            return Err(RuntimeError::Other(format!(
                "the cuBLAS reference disagrees with FP64 on {} sampled rows ({ref_err:.3e})",
                rows.len()
            )));
        }
        Ok(reference)
    }

    /// The cuBLAS handle (bound to the stream given to [`Cublas::new`]).
    pub fn handle(&self) -> cudarc::cublas::sys::cublasHandle_t {
        *self.blas.handle()
    }

    /// Row-major `C[M,N] = A[M,K] * B[N,K]^T` on device addresses, for
    /// calls on parts of larger buffers (one expert of a grouped GEMM).
    ///
    /// # Safety
    /// `a`, `b`, `c` must hold `M x K`, `N x K`, `M x N` bf16 elements.
    pub unsafe fn gemm_bf16_tn_raw(&self, m: u64, n: u64, k: u64, a: u64, b: u64, c: u64) -> Result<()> {
        use cudarc::cublas::sys;
        let call = tn_row_major_to_col_major(m, n, k)?;
        let op = |t: bool| if t { sys::cublasOperation_t::CUBLAS_OP_T } else { sys::cublasOperation_t::CUBLAS_OP_N };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let bf16 = sys::cudaDataType_t::CUDA_R_16BF;
        let status = sys::cublasGemmEx(
            self.handle(),
            op(call.transa),
            op(call.transb),
            call.m,
            call.n,
            call.k,
            &alpha as *const f32 as *const std::ffi::c_void,
            b as *const std::ffi::c_void, // cuBLAS's A: our B
            bf16,
            call.lda,
            a as *const std::ffi::c_void, // cuBLAS's B: our A
            bf16,
            call.ldb,
            &beta as *const f32 as *const std::ffi::c_void,
            c as *mut std::ffi::c_void,
            bf16,
            call.ldc,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        );
        status.result().map_err(|err| RuntimeError::Cublas { call: "cublasGemmEx", err })
    }
}

/// cuBLASLt (`cublasLtMatmul` with its heuristic's first algorithm).
pub struct CublasLt {
    lt: CudaBlasLT,
}

impl CublasLt {
    /// A handle whose calls run on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self> {
        check_lib(unsafe { cudarc::cublaslt::sys::is_culib_present() }, "libcublasLt", "cublasLt")?;
        let lt = CudaBlasLT::new(stream).map_err(|err| RuntimeError::CublasLt { call: "cublasLtCreate", err })?;
        Ok(CublasLt { lt })
    }

    /// Row-major `C[M,N] = A[M,K] * B[N,K]^T`.
    pub fn gemm_bf16_tn(
        &self,
        m: u64,
        n: u64,
        k: u64,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        c: &mut CudaSlice<bf16>,
    ) -> Result<()> {
        check_sizes(m, n, k, a.len(), b.len(), c.len())?;
        let call = tn_row_major_to_col_major(m, n, k)?;
        let cfg = MatmulConfig {
            transa: call.transa,
            transb: call.transb,
            transc: false,
            m: call.m as u64,
            n: call.n as u64,
            k: call.k as u64,
            alpha: 1.0,
            lda: call.lda as i64,
            ldb: call.ldb as i64,
            beta: 0.0,
            ldc: call.ldc as i64,
            stride_a: None,
            stride_b: None,
            stride_c: None,
            stride_bias: None,
            batch_size: None,
        };
        unsafe { self.lt.matmul(cfg, b, a, c, None, None) }
            .map_err(|err| RuntimeError::CublasLt { call: "cublasLtMatmul", err })
    }
}

fn check_sizes(m: u64, n: u64, k: u64, a: usize, b: usize, c: usize) -> Result<()> {
    for (name, need, have) in [("A", m * k, a), ("B", n * k, b), ("C", m * n, c)] {
        if (have as u64) < need {
            return Err(RuntimeError::BufferTooSmall { tensor: name.into(), need: need * 2, have: have as u64 * 2 });
        }
    }
    if m == 0 || n == 0 || k == 0 {
        return Err(RuntimeError::Other(format!("zero-sized GEMM {m}x{n}x{k}")));
    }
    Ok(())
}
