//! cuBLASLt matmul plans for benchmarking: descriptors, layouts and the
//! heuristic's algorithm are made once per shape, so a timed call is just
//! `cublasLtMatmul` (cudarc's safe `matmul` re-runs the heuristic on every
//! call, which would land in the timed region whenever the GPU waits on the
//! host).
//!
//! Row-major `C[M,N] = A[M,K] * B[N,K]^T` is the column-major
//! `C^T (N x M) = op_T(B_buf) * A_buf` (see [`crate::blas`]): cuBLASLt's A is
//! our B buffer (`K x N`, ld K, transposed), its B our A buffer (`K x M`, ld
//! K, not transposed), C/D `N x M` with ld N. That is the "TN" layout FP8
//! requires on Hopper.
//!
//! FP8: A and B are `CUDA_R_8F_E4M3`, C and D `CUDA_R_16BF`, compute
//! `CUBLAS_COMPUTE_32F`, scale type `CUDA_R_32F`, and
//! `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` / `B_SCALE_POINTER` point at one
//! f32 each in device memory: `D = scale_a_lt * scale_b_lt * (A_lt B_lt)`.
//!
//! FP8 block-scaled (cuBLASLt 12.9 and later, Hopper): the same types, with
//! `CUBLASLT_MATMUL_DESC_A_SCALE_MODE` / `B_SCALE_MODE` set. Our A gets
//! one f32 per row and 128 of K (`VEC128_32F`), our B one per 128x128 block
//! (`BLK128x128_32F`). Since cuBLASLt's A is our B, the modes are set
//! crosswise: its A (our B) `BLK128x128_32F`, its B (our A) `VEC128_32F`,
//! and the scale pointers likewise. The scale tensors it reads, in our
//! operand order (`KB = ceil(K/128)`, `NB = ceil(N/128)`):
//! - our A's scales M-major: scale of row `i`, K block `kb` at `kb * M + i`
//!   (`SA[KB,M]`, as an M-major kernel takes it; the transpose of a
//!   K-major kernel's `SA[M,KB]`, see [`crate::check::BlockScales::sa_m_major`]);
//! - our B's scales `SB[NB,KB]` row-major with each row padded to 16 bytes:
//!   block `(nb, kb)` at `nb * KB_lt + kb`, `KB_lt` = KB rounded up to 4
//!   ([`crate::check::BlockScales::sb_lt`]; PyTorch's `_scaled_mm` asks the
//!   same of its 128x128 scales). Unpadded, cuBLASLt reads every row past
//!   the first from the wrong place wherever KB is not a multiple of 4.
//!
//! Fused epilogues ([`LtEpilogue`]): `CUBLASLT_EPILOGUE_BIAS` or
//! `CUBLASLT_EPILOGUE_GELU_BIAS` with `CUBLASLT_MATMUL_DESC_BIAS_POINTER`
//! at a bf16 vector (`CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE` = `CUDA_R_16BF`).
//! cuBLASLt's bias has one element per row of its (column-major, `N x M`)
//! problem: one per column of our row-major `C[M,N]`, a bias `Bias[N]`.
//!
//! A residual ([`LtEpilogue::Residual`]): `D = alpha * (A B) + beta * C`
//! with cuBLASLt's C a bf16 matrix other than D, described by the same
//! layout (column-major `N x M`, ld N: our row-major `R[M,N]`, as D is our
//! `C[M,N]`), alpha and beta f32 host scalars. No cuBLASLt epilogue is set.
//!
//! That is the layout PyTorch's `_scaled_mm` hands cuBLASLt for the same
//! recipe (A's scales M-major, B's given as the transposed view of an
//! `(N/128) x (K/128)` row-major tensor). tilec-bench checks every cuBLASLt
//! output against a reference before timing it, so a misread layout shows
//! as a failed check, not as a wrong figure.

use crate::blas::tn_row_major_to_col_major;
use crate::error::{ld_library_path, Result, RuntimeError};
use cudarc::cublaslt::result as lr;
use cudarc::cublaslt::sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::ffi::c_void;
use std::sync::Arc;

/// Hopper's recommended cuBLASLt workspace.
pub const WORKSPACE_BYTES: usize = 32 << 20;

fn lt_err(call: &'static str) -> impl Fn(lr::CublasError) -> RuntimeError {
    move |err| RuntimeError::CublasLt { call, err }
}

/// A cuBLASLt handle and workspace on one stream.
pub struct LtHandle {
    handle: sys::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    stream: Arc<CudaStream>,
}

impl LtHandle {
    /// A handle and its workspace on `stream`.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self> {
        if !unsafe { sys::is_culib_present() } {
            return Err(RuntimeError::LibraryNotLoaded {
                lib: "libcublasLt",
                candidates: cudarc::get_lib_name_candidates("cublasLt"),
                ld_library_path: ld_library_path(),
            });
        }
        let handle = lr::create_handle().map_err(lt_err("cublasLtCreate"))?;
        let workspace = unsafe { stream.alloc::<u8>(WORKSPACE_BYTES) }
            .map_err(|err| RuntimeError::Driver { call: "cuMemAlloc(cuBLASLt workspace)", err })?;
        Ok(LtHandle { handle, workspace, stream })
    }

    /// `cublasLtGetVersion()`, e.g. 130100.
    pub fn version() -> u64 {
        unsafe { sys::cublasLtGetVersion() as u64 }
    }
}

impl Drop for LtHandle {
    fn drop(&mut self) {
        unsafe {
            let _ = lr::destroy_handle(self.handle);
        }
    }
}

/// Operand type of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LtInput {
    /// BF16 operands, no scales.
    Bf16,
    /// fp8 e4m3 with per-tensor scales (device f32 pointers).
    Fp8E4m3 {
        /// Device address of A's f32 scale.
        scale_a: u64,
        /// Device address of B's f32 scale.
        scale_b: u64,
    },
    /// fp8 e4m3 with block scales (device f32 pointers, layouts above):
    /// `sa_m_major` is A's 1x128 scales M-major, `sb` B's 128x128 scales
    /// `[NB,KB]` row-major, rows padded to 16 bytes.
    Fp8BlockScaled {
        /// Device address of A's scales, M-major (`[K/128, M]`).
        sa_m_major: u64,
        /// Device address of B's scales (`[N/128, K/128]`, rows padded to 16 bytes).
        sb: u64,
    },
}

impl LtInput {
    /// cuBLASLt's A and B scale pointers and modes, in its operand order
    /// (its A is our B: see the module docs). None for BF16.
    pub fn lt_scales(self) -> Option<[(u64, sys::cublasLtMatmulMatrixScale_t); 2]> {
        use sys::cublasLtMatmulMatrixScale_t as Mode;
        match self {
            LtInput::Bf16 => None,
            LtInput::Fp8E4m3 { scale_a, scale_b } => {
                Some([(scale_b, Mode::CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F), (scale_a, Mode::CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)])
            }
            LtInput::Fp8BlockScaled { sa_m_major, sb } => Some([
                (sb, Mode::CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F),
                (sa_m_major, Mode::CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F),
            ]),
        }
    }
}

/// The epilogue cuBLASLt fuses into a plan (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LtEpilogue {
    /// None: D = the product, rounded to bf16.
    #[default]
    None,
    /// `D[i,j] = acc + bias[j]`: `CUBLASLT_EPILOGUE_BIAS`, `bias` the
    /// device address of a bf16 vector of N elements.
    Bias {
        /// Device address of the bf16 bias, one element per column of C.
        bias: u64,
    },
    /// `D[i,j] = gelu_tanh(acc + bias[j])`: `CUBLASLT_EPILOGUE_GELU_BIAS`.
    GeluBias {
        /// Device address of the bf16 bias, one element per column of C.
        bias: u64,
    },
    /// `D[i,j] = alpha * acc + beta * R[i,j]`: cuBLASLt's alpha and beta,
    /// with `R` as its C (read) and our C as its D (written).
    Residual {
        /// Device address of the bf16 `R[M,N]`, row-major (C's shape).
        r: u64,
        /// The product's factor.
        alpha: f32,
        /// The residual's factor.
        beta: f32,
    },
}

impl LtEpilogue {
    /// cuBLASLt's epilogue and the bias address, or `None` for no epilogue
    /// attribute (none, or a residual, which is alpha and beta).
    pub fn lt(self) -> Option<(sys::cublasLtEpilogue_t, u64)> {
        match self {
            LtEpilogue::None | LtEpilogue::Residual { .. } => None,
            LtEpilogue::Bias { bias } => Some((sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS, bias)),
            LtEpilogue::GeluBias { bias } => Some((sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS, bias)),
        }
    }

    /// cuBLASLt's alpha, beta and C (the matrix read) for a call writing D
    /// at `d`: `(1, 0, d)` but for a residual.
    pub fn scaling(self, d: u64) -> (f32, f32, u64) {
        match self {
            LtEpilogue::Residual { r, alpha, beta } => (alpha, beta, r),
            _ => (1.0, 0.0, d),
        }
    }
}

/// One shape's matmul: descriptors plus the chosen algorithm.
pub struct LtGemm {
    desc: sys::cublasLtMatmulDesc_t,
    a_layout: sys::cublasLtMatrixLayout_t,
    b_layout: sys::cublasLtMatrixLayout_t,
    c_layout: sys::cublasLtMatrixLayout_t,
    algo: sys::cublasLtMatmulAlgo_t,
    /// Rows of C.
    pub m: u64,
    /// Columns of C.
    pub n: u64,
    /// The reduction dimension.
    pub k: u64,
    /// The operands' type and scales.
    pub input: LtInput,
    /// The fused epilogue, if any.
    pub epilogue: LtEpilogue,
    /// Workspace bytes the chosen algorithm needs.
    pub workspace_needed: usize,
}

impl Drop for LtGemm {
    fn drop(&mut self) {
        unsafe {
            let _ = lr::destroy_matrix_layout(self.a_layout);
            let _ = lr::destroy_matrix_layout(self.b_layout);
            let _ = lr::destroy_matrix_layout(self.c_layout);
            let _ = lr::destroy_matmul_desc(self.desc);
        }
    }
}

impl LtGemm {
    /// Builds the plan for row-major `C[M,N] = A[M,K] * B[N,K]^T` and asks
    /// the heuristic for its best algorithm. `scale_a`/`scale_b` of
    /// [`LtInput::Fp8E4m3`] belong to our A and B.
    pub fn new(h: &LtHandle, m: u64, n: u64, k: u64, input: LtInput) -> Result<Self> {
        LtGemm::with_epilogue(h, m, n, k, input, LtEpilogue::None)
    }

    /// [`LtGemm::new`] with a fused epilogue (see [`LtEpilogue`]); the
    /// heuristic answers NOT_SUPPORTED where cuBLASLt has no kernel for it.
    pub fn with_epilogue(h: &LtHandle, m: u64, n: u64, k: u64, input: LtInput, epilogue: LtEpilogue) -> Result<Self> {
        if m == 0 || n == 0 || k == 0 {
            return Err(RuntimeError::Other(format!("zero-sized GEMM {m}x{n}x{k}")));
        }
        let call = tn_row_major_to_col_major(m, n, k)?;
        let in_ty = match input {
            LtInput::Bf16 => sys::cudaDataType_t::CUDA_R_16BF,
            // Unsupported FP8 shapes (K not a multiple of 16, ...) make the
            // heuristic answer NOT_SUPPORTED.
            LtInput::Fp8E4m3 { .. } | LtInput::Fp8BlockScaled { .. } => sys::cudaDataType_t::CUDA_R_8F_E4M3,
        };
        let out_ty = sys::cudaDataType_t::CUDA_R_16BF;
        let desc = lr::create_matmul_desc(sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, sys::cudaDataType_t::CUDA_R_32F)
            .map_err(lt_err("cublasLtMatmulDescCreate"))?;
        // From here on, `plan` owns what was made and drops it on error.
        let a_layout = lr::create_matrix_layout(in_ty, call.k as u64, call.m as u64, call.lda as i64)
            .map_err(lt_err("cublasLtMatrixLayoutCreate(A)"));
        let b_layout = lr::create_matrix_layout(in_ty, call.k as u64, call.n as u64, call.ldb as i64)
            .map_err(lt_err("cublasLtMatrixLayoutCreate(B)"));
        let c_layout = lr::create_matrix_layout(out_ty, call.m as u64, call.n as u64, call.ldc as i64)
            .map_err(lt_err("cublasLtMatrixLayoutCreate(C)"));
        let (a_layout, b_layout, c_layout) = match (a_layout, b_layout, c_layout) {
            (Ok(a), Ok(b), Ok(c)) => (a, b, c),
            (a, b, c) => {
                unsafe {
                    for l in [&a, &b, &c].into_iter().flatten() {
                        let _ = lr::destroy_matrix_layout(*l);
                    }
                    let _ = lr::destroy_matmul_desc(desc);
                }
                return Err(a.and(b).and(c).expect_err("one layout failed"));
            }
        };
        let mut plan = LtGemm {
            desc,
            a_layout,
            b_layout,
            c_layout,
            algo: unsafe { std::mem::zeroed() },
            m,
            n,
            k,
            input,
            epilogue,
            workspace_needed: 0,
        };
        let set = |attr: sys::cublasLtMatmulDescAttributes_t, ptr: *const c_void, size: usize| {
            unsafe { lr::set_matmul_desc_attribute(desc, attr, ptr, size) }
                .map_err(lt_err("cublasLtMatmulDescSetAttribute"))
        };
        // cublasOperation_t is an int: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1.
        let (ta, tb) = (call.transa as i32, call.transb as i32);
        let sz_op = std::mem::size_of::<i32>();
        set(sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA, &ta as *const _ as *const c_void, sz_op)?;
        set(sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSB, &tb as *const _ as *const c_void, sz_op)?;
        if let Some(scales) = input.lt_scales() {
            // swap_operands is always true here: cuBLASLt's A is our B, as lt_scales assumes.
            debug_assert!(call.swap_operands);
            use sys::cublasLtMatmulDescAttributes_t as Attr;
            let ptr_sz = std::mem::size_of::<*const c_void>();
            let mode_sz = std::mem::size_of::<i32>();
            let [(pa, mode_a), (pb, mode_b)] = scales;
            let (pa, pb) = (pa as *const c_void, pb as *const c_void);
            set(Attr::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &pa as *const _ as *const c_void, ptr_sz)?;
            set(Attr::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &pb as *const _ as *const c_void, ptr_sz)?;
            // Scalar is the default mode, and cuBLASLt before 12.8 has no
            // mode attribute: set the modes only where they are not scalar.
            for (attr, mode) in [(Attr::CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a), (Attr::CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b)] {
                if mode != sys::cublasLtMatmulMatrixScale_t::CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F {
                    let mode = mode as i32;
                    set(attr, &mode as *const i32 as *const c_void, mode_sz)?;
                }
            }
        }
        if let Some((epi, bias)) = epilogue.lt() {
            use sys::cublasLtMatmulDescAttributes_t as Attr;
            // The bias runs along cuBLASLt's rows: our N (asserted by the mapping).
            debug_assert!(call.swap_operands && call.m as u64 == n);
            let epi = epi as u32;
            set(Attr::CUBLASLT_MATMUL_DESC_EPILOGUE, &epi as *const u32 as *const c_void, std::mem::size_of::<u32>())?;
            let bias = bias as *const c_void;
            set(Attr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias as *const _ as *const c_void, std::mem::size_of::<*const c_void>())?;
            let bias_ty = sys::cudaDataType_t::CUDA_R_16BF as i32;
            set(Attr::CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_ty as *const i32 as *const c_void, std::mem::size_of::<i32>())?;
        }
        let pref = lr::create_matmul_pref().map_err(lt_err("cublasLtMatmulPreferenceCreate"))?;
        let ws = WORKSPACE_BYTES as u64;
        let r = unsafe {
            lr::set_matmul_pref_attribute(
                pref,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &ws as *const u64 as *const c_void,
                std::mem::size_of::<u64>(),
            )
            .map_err(lt_err("cublasLtMatmulPreferenceSetAttribute"))
            .and_then(|_| {
                lr::get_matmul_algo_heuristic(h.handle, desc, a_layout, b_layout, c_layout, c_layout, pref)
                    .map_err(lt_err("cublasLtMatmulAlgoGetHeuristic"))
            })
        };
        unsafe {
            let _ = lr::destroy_matmul_pref(pref);
        }
        let heur = r?;
        plan.algo = heur.algo;
        plan.workspace_needed = heur.workspaceSize;
        Ok(plan)
    }

    /// Issues the matmul on `h`'s stream: `a`, `b`, `c` are device addresses
    /// of our row-major `A[M,K]`, `B[N,K]`, `C[M,N]` (written; with a
    /// residual, cuBLASLt's D, its C being the residual).
    ///
    /// # Safety
    /// The buffers must hold the plan's shape and element types.
    pub unsafe fn run(&self, h: &LtHandle, a: u64, b: u64, c: u64) -> Result<()> {
        let (alpha, beta, c_in) = self.epilogue.scaling(c);
        let (ws, _g) = h.workspace.device_ptr(&h.stream);
        let stream = h.stream.cu_stream() as sys::cudaStream_t;
        lr::matmul(
            h.handle,
            self.desc,
            &alpha as *const f32 as *const c_void,
            &beta as *const f32 as *const c_void,
            b as *const c_void, // cuBLASLt's A: our B
            self.a_layout,
            a as *const c_void, // cuBLASLt's B: our A
            self.b_layout,
            c_in as *const c_void, // cuBLASLt's C: the residual, or D itself (beta 0)
            self.c_layout,
            c as *mut c_void,
            self.c_layout,
            &self.algo,
            ws as *mut c_void,
            WORKSPACE_BYTES,
            stream,
        )
        .map_err(lt_err("cublasLtMatmul"))
    }
}
