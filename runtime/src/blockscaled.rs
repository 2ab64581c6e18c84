//! The GPU correctness check of a block-scaled FP8 GEMM artifact
//! (`A[M,K]`, `SA[M,KB]` or M-major `SA[KB,M]`, `B[N,K]`, `SB[NB,KB]` ->
//! bf16 `C[M,N]`; see [`crate::check::BlockScales`]).
//!
//! Each call draws fresh e4m3 inputs and power-of-two scales log-uniform
//! over 2^-10..2^10 (a scale applied to the wrong block is off by up to
//! 2^20), poisons C with NaN and launches once. The reference is the
//! dequantised product: in FP64 on the CPU when `M*N*K` is at most
//! [`CPU_REF_LIMIT`], else cuBLAS BF16 with FP32 accumulation on the GPU on
//! the dequantised operands, which are exact in bf16 (see
//! [`crate::check::random_pow2_scales`]), so that reference differs from
//! the exact product only by FP32 summation and its bf16 output rounding;
//! it must itself agree with FP64 on evenly sampled rows.
//! cuBLASLt's own block-scaled FP8 GEMM runs on the same inputs as a second
//! opinion; its error is reported, and does not decide the verdict.
//!
//! Tolerance: both our output and the reference are rounded to bf16 (unit
//! roundoff 2^-9, an RMS relative error near 2^-9/sqrt(3) = 1.1e-3 each), and
//! FP32 accumulation adds about sqrt(K) * 2^-24; the relative Frobenius
//! distance of two correct results is about 2e-3. The default threshold
//! 1e-2 leaves a 5x margin, while one misplaced scale block moves its
//! outputs by a factor of at least 2.

use crate::check::*;
use crate::cuda::Gpu;
use crate::error::{DriverCtx, Result, RuntimeError};
use crate::gemm::{Gemm, GemmBuffers, GemmSize, Scales};
use crate::lt::{LtGemm, LtHandle, LtInput};
use crate::Cublas;
use cudarc::driver::CudaSlice;
use half::bf16;

/// Largest `M*N*K` checked against the FP64 CPU reference.
pub const CPU_REF_LIMIT: u64 = 1 << 27;

/// The outcome of one shape.
#[derive(Debug, Clone)]
pub struct BlockScaledCheck {
    /// The seed the inputs were drawn from.
    pub seed: u64,
    /// `||out-ref||/||ref||` of our kernel.
    pub err: f64,
    /// Which reference: "fp64 cpu" or "cublas bf16 on dequantised inputs".
    pub reference: &'static str,
    /// cuBLASLt block-scaled against the same reference, or why it did not run.
    pub lt_err: std::result::Result<f64, String>,
    /// Our kernel's error is within the threshold.
    pub pass: bool,
}

/// Fresh block-scaled operands of one size on the GPU (see the module
/// docs) and the reference their product is checked against.
pub struct BlockScaledOperands {
    /// The seed the inputs were drawn from.
    pub seed: u64,
    a: CudaSlice<u8>,
    b: CudaSlice<u8>,
    sa: CudaSlice<f32>,
    sa_t: CudaSlice<f32>,
    sb: CudaSlice<f32>,
    /// SB as cuBLASLt reads it, rows padded to 16 bytes (`BlockScales::sb_lt`).
    sb_lt: CudaSlice<f32>,
    /// The dequantised product, row-major `M x N`.
    pub reference: Vec<f64>,
    /// Which reference: "fp64 cpu" or "cublas bf16 on dequantised inputs".
    pub reference_name: &'static str,
}

impl BlockScaledOperands {
    /// Draws A, B and their scales for `gemm` (a block-scaled artifact) at
    /// `size` and computes the reference, itself checked against FP64 on
    /// sampled rows where it comes from cuBLAS.
    pub fn draw(gpu: &Gpu, gemm: &Gemm, blas: &Cublas, size: GemmSize, threshold: f64) -> Result<BlockScaledOperands> {
        if gemm.spec().scales != Scales::Block {
            return Err(RuntimeError::GemmArgs("not a block-scaled FP8 GEMM (want SA[M,KB] or SA[KB,M], and SB[NB,KB])".into()));
        }
        let seed = seed_from_time();
        let mut rng = Rng::new(seed);
        let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
        let bs = BlockScales::new(m, n, k);
        let a_h = random_e4m3(m * k, &mut rng);
        let b_h = random_e4m3(n * k, &mut rng);
        let sa_h = random_pow2_scales(bs.sa_len(), &mut rng);
        let sb_h = random_pow2_scales(bs.sb_len(), &mut rng);
        let s = &gpu.stream;
        let a = s.clone_htod(&a_h).ctx("cuMemcpyHtoD(A)")?;
        let b = s.clone_htod(&b_h).ctx("cuMemcpyHtoD(B)")?;
        let sa = s.clone_htod(&sa_h).ctx("cuMemcpyHtoD(SA)")?;
        let sa_t = s.clone_htod(&bs.sa_m_major(&sa_h)).ctx("cuMemcpyHtoD(SA_t)")?;
        let sb = s.clone_htod(&sb_h).ctx("cuMemcpyHtoD(SB)")?;
        let sb_lt = s.clone_htod(&bs.sb_lt(&sb_h)).ctx("cuMemcpyHtoD(SB for cuBLASLt)")?;
        let (reference, reference_name) = if (m * n * k) as u64 <= CPU_REF_LIMIT {
            (bs.cpu_reference(&a_h, &sa_h, &b_h, &sb_h), "fp64 cpu")
        } else {
            let (a_deq, b_deq) = (bs.dequant_a(&a_h, &sa_h), bs.dequant_b(&b_h, &sb_h));
            let exact = |v: &[f32]| exact_bf16(v).ok_or_else(|| RuntimeError::Other("dequantised input not exact in bf16".into()));
            let reference = blas.checked_reference(gpu, &exact(&a_deq)?, &exact(&b_deq)?, size, threshold)?;
            (reference, "cublas bf16 on dequantised inputs")
        };
        Ok(BlockScaledOperands { seed, a, b, sa, sa_t, sb, sb_lt, reference, reference_name })
    }

    /// `gemm`'s bindings of these operands, with `c` as its output (the
    /// scales of A in the layout its manifest asks for).
    pub fn buffers(&self, gpu: &Gpu, gemm: &Gemm, c: &CudaSlice<bf16>) -> GemmBuffers {
        GemmBuffers::new(gpu.bind("A", &self.a), gpu.bind("B", &self.b), gpu.bind("C", c))
            .with_scales(gpu.bind("SA", gemm.spec().sa_layout.choose(&self.sa, &self.sa_t)), gpu.bind("SB", &self.sb))
    }
}

/// Runs `gemm` (a block-scaled artifact) once on fresh inputs of `size`
/// and checks it; see the module docs.
pub fn check_block_scaled(
    gpu: &Gpu,
    gemm: &Gemm,
    blas: &Cublas,
    lt: &LtHandle,
    size: GemmSize,
    threshold: f64,
) -> Result<BlockScaledCheck> {
    let operands = BlockScaledOperands::draw(gpu, gemm, blas, size, threshold)?;
    let (m, n) = (size.m as usize, size.n as usize);
    let s = &gpu.stream;
    let mut c = unsafe { s.alloc::<bf16>(m * n) }.ctx("cuMemAlloc(C)")?;
    gpu.poison16(&mut c, POISON_BF16)?;
    gemm.bind_raw(size, operands.buffers(gpu, gemm, &c))?.launch_checked()?;
    let out = bf16_to_f64(&s.clone_dtoh(&c).ctx("cuMemcpyDtoH(C)")?);
    let reference = &operands.reference;
    let err = rel_frobenius(&out, reference);
    let lt_err = (|| -> Result<f64> {
        let input = LtInput::Fp8BlockScaled { sa_m_major: gpu.addr(&operands.sa_t), sb: gpu.addr(&operands.sb_lt) };
        let plan = LtGemm::new(lt, size.m, size.n, size.k, input)?;
        gpu.poison16(&mut c, POISON_BF16)?;
        unsafe { plan.run(lt, gpu.addr(&operands.a), gpu.addr(&operands.b), gpu.addr(&c)) }?;
        gpu.sync("cuBLASLt block-scaled")?;
        Ok(rel_frobenius(&bf16_to_f64(&s.clone_dtoh(&c).ctx("cuMemcpyDtoH(C)")?), reference))
    })()
    .map_err(|e| e.to_string());
    Ok(BlockScaledCheck { seed: operands.seed, err, reference: operands.reference_name, lt_err, pass: passes(err, threshold) })
}
