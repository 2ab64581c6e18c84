//! `tilec-bench --grouped`: the vendor baselines of a grouped GEMM
//! ([`crate::grouped`]), checked and then timed in interleaved rounds.
//!
//! Per problem, three contenders on the problem's layout (contiguous
//! segments padded to the block M, or masked `[G, M_max, K]` buffers):
//! - `cublas-loop`: one `cublasGemmEx` (BF16, FP32 compute) per non-empty expert;
//! - `cublas-grouped`: one `cublasGemmGroupedBatchedEx` (BF16) over the
//!   non-empty experts, each its own group of one problem (cudarc 0.19's
//!   `cublas::sys` has the binding, loaded from libcublas like the rest);
//! - `cublaslt-fp8-block-loop`: one cuBLASLt FP8 e4m3 block-scaled matmul
//!   (1x128 scales for A, 128x128 for B; see [`crate::lt`]) per non-empty
//!   expert, with plans made before timing.
//!
//! Empty experts are skipped by every contender, as a caller would. The FP8
//! calls cover each expert's rows rounded up to 16 (cuBLASLt FP8's
//! granularity), reaching into the segment's padding; TFLOP/s count the
//! valid rows only, for every contender.
//!
//! Inputs are fresh for each problem; outputs are poisoned before the one
//! checked launch; the check is an FP64 CPU product on the first and last
//! valid row of every expert (all of C's columns), taken through the
//! epilogue of a contender that computes one ([`check_output`]). No L2 rotation: B alone,
//! `G x N x K`, spans at least 8 x 4096 x 2048 elements, several times the
//! L2 in either type.
//!
//! Our grouped kernels (`--artifact` with `--grouped`) join as further
//! contenders, named by their artifact folder: their manifest signature is
//! in [`crate::grouped`]'s docs, read by [`crate::grouped::GroupedSpec`],
//! whose `problem` binds a layout's symbols. A kernel runs on the problems
//! of its form (contiguous or masked), on the baselines' inputs of its type
//! (BF16, or the FP8 values and scales cuBLASLt gets), into its own
//! poisoned output, checked like them.
//!
//! Where our kernels on a problem compute an epilogue
//! ([`crate::grouped::GroupedEpilogue`], one for all of them), the vendor
//! fuses none: its equivalent joins the baselines above (which still
//! compute, and are checked as, the plain product), as the single GEMM's
//! unfused baseline is made ([`crate::epilogue`]): the per-expert cuBLAS
//! loop writing the bf16 product, then the element-wise kernel generated
//! from the epilogue over the whole buffer (padding rows included), in
//! place (`cublas-loop+nvrtc-epilogue`); for interleaved parts, one GEMM a
//! part per expert on the part's de-interleaved weights into a product of
//! its own, then the kernel reading the parts' products and writing C
//! (`cublas-loop-<parts>gemm+nvrtc-gated`). Its TFLOP/s count the product's
//! N columns, as everyone's.

use crate::check::*;
use crate::cuda::Gpu;
use crate::error::{DriverCtx, Result, RuntimeError};
use crate::cuda::Kernel;
use crate::gemm::SaLayout;
use crate::epilogue::ElementwiseKernel;
use crate::gemm::OutputSpec;
use crate::grouped::{check_output, label, GroupedEpilogue, GroupedForm, GroupedKind, GroupedProblem, GroupedSpec};
use tilec_artifact::{Artifact, DType};
use crate::lt::{LtGemm, LtHandle, LtInput};
use crate::timing::{Launch, RunOptions, Timer};
use crate::Cublas;
use cudarc::cublas::sys as cb;
use cudarc::driver::CudaSlice;
use half::bf16;
use std::ffi::c_void;
use tilec_report::schema::Stats;

pub use tilec_report::kinds::{GroupedReport, GroupedResult, GroupedRun, GROUPED_SCHEMA};
use tilec_report::table::format_grouped_rows;

/// The arguments of one `cublasGemmGroupedBatchedEx` call, kept alive
/// while it is timed (the pointer arrays live on the device).
struct GroupedBatched {
    trans_a: Vec<cb::cublasOperation_t>,
    trans_b: Vec<cb::cublasOperation_t>,
    m: Vec<i32>,
    n: Vec<i32>,
    k: Vec<i32>,
    ld_a: Vec<i32>,
    ld_b: Vec<i32>,
    ld_c: Vec<i32>,
    alpha: Vec<f32>,
    beta: Vec<f32>,
    group_size: Vec<i32>,
    a_ptrs: CudaSlice<u64>,
    b_ptrs: CudaSlice<u64>,
    c_ptrs: CudaSlice<u64>,
}

impl GroupedBatched {
    /// Row-major `C_g = A_g * B_g^T` for each live expert, mapped as in
    /// [`crate::blas`]: cuBLAS's A is our B_g (transposed), its B our A_g.
    fn new(gpu: &Gpu, p: &GroupedProblem, a: u64, b: u64, c: u64) -> Result<Self> {
        let experts = p.live();
        let g = experts.len();
        let fit = |v: u64| i32::try_from(v).map_err(|_| RuntimeError::Other(format!("{v} does not fit cuBLAS's int")));
        let (n, k) = (fit(p.n)?, fit(p.k)?);
        let mut rows = Vec::with_capacity(g);
        let (mut ap, mut bp, mut cp) = (Vec::new(), Vec::new(), Vec::new());
        for &(e, off, r) in &experts {
            rows.push(fit(r)?);
            ap.push(b + (e as u64 * p.n * p.k) * 2);
            bp.push(a + off * p.k * 2);
            cp.push(c + off * p.n * 2);
        }
        let up = |v: &[u64]| gpu.stream.clone_htod(v).ctx("cuMemcpyHtoD(pointer array)");
        Ok(GroupedBatched {
            trans_a: vec![cb::cublasOperation_t::CUBLAS_OP_T; g],
            trans_b: vec![cb::cublasOperation_t::CUBLAS_OP_N; g],
            m: vec![n; g],
            n: rows,
            k: vec![k; g],
            ld_a: vec![k; g],
            ld_b: vec![k; g],
            ld_c: vec![n; g],
            alpha: vec![1.0; g],
            beta: vec![0.0; g],
            group_size: vec![1; g],
            a_ptrs: up(&ap)?,
            b_ptrs: up(&bp)?,
            c_ptrs: up(&cp)?,
        })
    }

    fn run(&self, gpu: &Gpu, blas: &Cublas) -> Result<()> {
        let bf = cb::cudaDataType_t::CUDA_R_16BF;
        let status = unsafe {
            cb::cublasGemmGroupedBatchedEx(
                blas.handle(),
                self.trans_a.as_ptr(),
                self.trans_b.as_ptr(),
                self.m.as_ptr(),
                self.n.as_ptr(),
                self.k.as_ptr(),
                self.alpha.as_ptr() as *const c_void,
                gpu.addr(&self.a_ptrs) as *const *const c_void,
                bf,
                self.ld_a.as_ptr(),
                gpu.addr(&self.b_ptrs) as *const *const c_void,
                bf,
                self.ld_b.as_ptr(),
                self.beta.as_ptr() as *const c_void,
                gpu.addr(&self.c_ptrs) as *const *mut c_void,
                bf,
                self.ld_c.as_ptr(),
                self.group_size.len() as i32,
                self.group_size.as_ptr(),
                cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            )
        };
        status.result().map_err(|err| RuntimeError::Cublas { call: "cublasGemmGroupedBatchedEx", err })
    }
}

/// A contender that passed its check: its run index and one launch.
type Contender<'a> = (usize, Box<dyn FnMut(usize) -> Result<()> + 'a>);

/// One of our grouped kernels: its name (the artifact folder), the loaded
/// kernel and what it computes.
pub struct OurGrouped {
    /// The artifact folder, the contender's name.
    pub name: String,
    /// The loaded kernel.
    pub kernel: Kernel,
    /// Its form, input type and epilogue, from the manifest.
    pub spec: GroupedSpec,
}

impl OurGrouped {
    /// Whether the kernel computes `p`: the kernel's form is the problem's.
    pub fn computes(&self, p: &GroupedProblem) -> bool {
        matches!(
            (self.spec.kind, p.form),
            (GroupedKind::Contiguous, GroupedForm::Contiguous { .. }) | (GroupedKind::Masked, GroupedForm::Masked { .. })
        )
    }

    /// The kernel takes block-scaled FP8 inputs.
    fn fp8(&self) -> bool {
        self.spec.input == DType::F8e4m3
    }

    /// The launch of the kernel on `inputs` (of its input type) into `out`
    /// (the layout's rows x C's columns).
    fn prepare(&self, gpu: &Gpu, p: &GroupedProblem, inputs: &GroupedInputs, out: &CudaSlice<bf16>) -> Result<crate::cuda::Prepared> {
        let problem = self.spec.problem(p)?;
        let routing = match self.spec.kind {
            GroupedKind::Contiguous => "expert",
            GroupedKind::Masked => "counts",
        };
        let mut tensors = vec![gpu.bind(routing, &inputs.routing), gpu.bind("C", out)];
        if self.fp8() {
            let (mut a, mut b) = (gpu.bind("A", &inputs.a8), gpu.bind("B", &inputs.b8));
            (a.dtype, b.dtype) = (DType::F8e4m3, DType::F8e4m3);
            let sa = self.spec.sa_layout.choose(&inputs.sa, &inputs.sa_m_major);
            tensors.extend([a, b, gpu.bind("SA", sa), gpu.bind("SB", &inputs.sb)]);
        } else {
            tensors.extend([gpu.bind("A", &inputs.a), gpu.bind("B", &inputs.b)]);
        }
        self.kernel.prepare(&problem, &tensors)
    }
}

/// Fresh inputs of a grouped problem in its layout, BF16 and block-scaled
/// FP8 (e4m3 values, power-of-two scales over the layout's rows): host
/// copies for the reference, device copies for the launches, and the
/// routing the form reads (contiguous: the expert of each row block;
/// masked: each expert's count).
struct GroupedInputs {
    a_h: Vec<bf16>,
    b_h: Vec<bf16>,
    a: CudaSlice<bf16>,
    b: CudaSlice<bf16>,
    a8_h: Vec<u8>,
    b8_h: Vec<u8>,
    sa_h: Vec<f32>,
    sb_h: Vec<f32>,
    a8: CudaSlice<u8>,
    b8: CudaSlice<u8>,
    /// SA row-major over the layout's rows (`[rows, KB]`), as K-major kernels read it.
    sa: CudaSlice<f32>,
    /// SA as M-major kernels read it: `[KB, rows]` (contiguous form), each
    /// expert's `[KB, MM]` (masked form).
    sa_m_major: CudaSlice<f32>,
    /// SA M-major within each cuBLASLt call's rows, as cuBLASLt reads it.
    sa_t: CudaSlice<f32>,
    sb: CudaSlice<f32>,
    /// SB as cuBLASLt reads it: each expert's `[NB, KB]` with rows padded
    /// to 16 bytes (`BlockScales::sb_lt`), `[G * NB, KB_lt]`.
    sb_lt: CudaSlice<f32>,
    routing: CudaSlice<i32>,
}

/// cuBLASLt FP8 wants the row count a multiple of 16: each FP8 call covers
/// its expert's rows rounded up, into the segment's padding.
fn fp8_rows(r: u64) -> u64 {
    r.div_ceil(16) * 16
}

/// SA M-major within each cuBLASLt FP8 call's rows (its expert's rows rounded up to 16),
/// from SA row-major over the layout's rows (`[rows, kb]`). A call's rows stay within its
/// segment: a masked expert's M_max need not be a multiple of 16 (only the cuBLASLt
/// baselines, which refuse such layouts, read this copy).
fn cublaslt_sa(p: &GroupedProblem, sa: &[f32], kb: usize) -> Vec<f32> {
    let mut out = vec![0f32; sa.len()];
    for &(_, off, r) in &p.live() {
        let r = fp8_rows(r).min(p.segment_rows(r));
        let part = BlockScales::new(r as usize, p.n as usize, p.k as usize);
        let (o, len) = (off as usize * kb, r as usize * kb);
        out[o..o + len].copy_from_slice(&part.sa_m_major(&sa[o..o + len]));
    }
    out
}

impl GroupedInputs {
    fn new(gpu: &Gpu, p: &GroupedProblem, seed: u64) -> Result<Self> {
        let s = &gpu.stream;
        let (rows, n, k, g) = (p.buffer_rows() as usize, p.n as usize, p.k as usize, p.groups());
        let a_h = par_fill(rows * k, seed, |r| bf16::from_f32(r.uniform()));
        let b_h = par_fill(g * n * k, seed ^ 0xB, |r| bf16::from_f32(r.uniform()));
        let a8_h = par_fill(rows * k, seed ^ 0xA8, |r| f32_to_e4m3(r.uniform()));
        let b8_h = par_fill(g * n * k, seed ^ 0xB8, |r| f32_to_e4m3(r.uniform()));
        let whole = BlockScales::new(rows, n, k);
        let (kb, nb) = (whole.kb(), whole.nb());
        let mut scale_rng = Rng::new(seed ^ 0x5CA1E);
        let sa_h = random_pow2_scales(rows * kb, &mut scale_rng);
        let sb_h = random_pow2_scales(g * nb * kb, &mut scale_rng);
        let sa_t_h = cublaslt_sa(p, &sa_h, kb);
        let sa_m_major_h = match p.form {
            GroupedForm::Contiguous { .. } => SaLayout::MMajor.arrange(&sa_h, rows, kb),
            GroupedForm::Masked { m_max } => sa_h.chunks((m_max as usize * kb).max(1)).flat_map(|e| SaLayout::MMajor.arrange(e, m_max as usize, kb)).collect(),
        };
        let routing_h = p.routing()?;
        Ok(GroupedInputs {
            a: s.clone_htod(&a_h).ctx("cuMemcpyHtoD(A)")?,
            b: s.clone_htod(&b_h).ctx("cuMemcpyHtoD(B)")?,
            a8: s.clone_htod(&a8_h).ctx("cuMemcpyHtoD(A8)")?,
            b8: s.clone_htod(&b8_h).ctx("cuMemcpyHtoD(B8)")?,
            sa: s.clone_htod(&sa_h).ctx("cuMemcpyHtoD(SA)")?,
            sa_m_major: s.clone_htod(&sa_m_major_h).ctx("cuMemcpyHtoD(SA M-major)")?,
            sa_t: s.clone_htod(&sa_t_h).ctx("cuMemcpyHtoD(SA_t)")?,
            sb: s.clone_htod(&sb_h).ctx("cuMemcpyHtoD(SB)")?,
            sb_lt: s.clone_htod(&whole.sb_lt(&sb_h)).ctx("cuMemcpyHtoD(SB for cuBLASLt)")?,
            routing: s.clone_htod(&routing_h).ctx("cuMemcpyHtoD(routing)")?,
            a_h,
            b_h,
            a8_h,
            b8_h,
            sa_h,
            sb_h,
        })
    }

    /// Row `row` of A (in the layout's rows), as f32: BF16, or FP8 dequantised.
    fn a_row(&self, p: &GroupedProblem, row: u64, fp8: bool) -> Vec<f32> {
        let (r, k) = (row as usize, p.k as usize);
        if !fp8 {
            return self.a_h[r * k..(r + 1) * k].iter().map(|x| x.to_f32()).collect();
        }
        let one = BlockScales::new(1, p.n as usize, k);
        let kb = one.kb();
        one.dequant_a(&self.a8_h[r * k..(r + 1) * k], &self.sa_h[r * kb..(r + 1) * kb])
    }

    /// Expert `e`'s B (N x K), as f32: BF16, or FP8 dequantised.
    fn b_expert(&self, p: &GroupedProblem, e: usize, fp8: bool) -> Vec<f32> {
        let (n, k) = (p.n as usize, p.k as usize);
        if !fp8 {
            return self.b_h[e * n * k..(e + 1) * n * k].iter().map(|x| x.to_f32()).collect();
        }
        let one = BlockScales::new(1, n, k);
        let per = one.nb() * one.kb();
        one.dequant_b(&self.b8_h[e * n * k..(e + 1) * n * k], &self.sb_h[e * per..(e + 1) * per])
    }
}

/// Runs `kernel` once on fresh inputs of `p` (drawn from `seed`) into a
/// poisoned output; returns its relative error against FP64 (through its
/// epilogue) on the first and last valid row of every expert, as the
/// benchmark checks it ([`check_output`]).
pub fn check_grouped_kernel(gpu: &Gpu, kernel: &OurGrouped, p: &GroupedProblem, seed: u64) -> Result<f64> {
    if !kernel.computes(p) {
        return Err(RuntimeError::GemmArgs(format!("{p}: the kernel is {:?} {}", kernel.spec.kind, kernel.spec.input)));
    }
    let cols = kernel.spec.out_cols(p)?;
    let inputs = GroupedInputs::new(gpu, p, seed)?;
    let mut out = unsafe { gpu.stream.alloc::<bf16>((p.buffer_rows() * cols) as usize) }.ctx("cuMemAlloc(C)")?;
    gpu.poison16(&mut out, POISON_BF16)?;
    kernel.prepare(gpu, p, &inputs, &out)?.launch()?;
    gpu.sync(&kernel.name)?;
    let h = gpu.stream.clone_dtoh(&out).ctx("cuMemcpyDtoH(C)")?;
    let fp8 = kernel.fp8();
    check_output(p, kernel.spec.epilogue.as_ref(), &h, |row| inputs.a_row(p, row, fp8), |e| inputs.b_expert(p, e, fp8))
}

/// The per-expert cuBLAS loop: `C_g[r, n] = A_g[r, k] * B[g][n, k]^T`
/// (BF16, FP32 compute) for each expert `(g, first row, r)` of
/// `experts`, A at `a` and C at `c` over the layout's rows, B at `b`
/// (`[G, n, k]`).
fn cublas_loop(blas: &Cublas, experts: &[(usize, u64, u64)], (n, k): (u64, u64), a: u64, b: u64, c: u64) -> Result<()> {
    for &(e, off, r) in experts {
        unsafe { blas.gemm_bf16_tn_raw(r, n, k, a + off * k * 2, b + (e as u64 * n * k) * 2, c + off * n * 2)? };
    }
    Ok(())
}

/// The vendor's equivalent of a grouped GEMM with an epilogue (see the
/// module docs): the per-expert cuBLAS loop, then the generated
/// element-wise kernel over the layout's rows.
struct EpilogueLoop {
    kernel: ElementwiseKernel,
    /// The experts that have rows: (expert, first row, rows).
    experts: Vec<(usize, u64, u64)>,
    /// The layout's rows, the product's columns (N), K and C's columns.
    rows: u64,
    n: u64,
    k: u64,
    cols: u64,
    /// Each part's weights of every expert, `[G, cols, K]`, at `weights`,
    /// and its product over the layout's rows, `[rows, cols]`, at
    /// `products`; none in place.
    weights: Vec<u64>,
    products: Vec<u64>,
    _buffers: Vec<CudaSlice<bf16>>,
}

impl EpilogueLoop {
    /// The contender's name.
    fn name(epilogue: &GroupedEpilogue) -> String {
        match &epilogue.gated {
            Some(g) => format!("cublas-loop-{}gemm+nvrtc-gated", g.parts),
            None => "cublas-loop+nvrtc-epilogue".into(),
        }
    }

    /// Compiles the kernel and, for interleaved parts, uploads each part's
    /// weights of every expert taken from `b_h` (B `[G, N, K]`) and
    /// allocates its product.
    fn new(gpu: &Gpu, p: &GroupedProblem, epilogue: &GroupedEpilogue, b_h: &[bf16]) -> Result<Self> {
        let cols = epilogue.out_cols(p.n)?;
        let kernel = ElementwiseKernel::new(gpu, &epilogue.epilogue, &[], &[], &OutputSpec::bf16_c())?;
        let (rows, n, k) = (p.buffer_rows(), p.n as usize, p.k as usize);
        let (mut weights, mut products, mut buffers) = (Vec::new(), Vec::new(), Vec::new());
        if let Some(g) = &epilogue.gated {
            for q in 0..g.parts {
                let mut w = Vec::with_capacity(p.groups() * cols as usize * k);
                for expert in b_h.chunks(n * k) {
                    w.extend(g.part_rows(expert, k, 1, q)?);
                }
                let w = gpu.stream.clone_htod(&w).ctx("cuMemcpyHtoD(B part)")?;
                let product = unsafe { gpu.stream.alloc::<bf16>((rows * cols) as usize) }.ctx("cuMemAlloc(part product)")?;
                weights.push(gpu.addr(&w));
                products.push(gpu.addr(&product));
                buffers.extend([w, product]);
            }
        }
        Ok(EpilogueLoop { kernel, experts: p.live(), rows, n: p.n, k: p.k, cols, weights, products, _buffers: buffers })
    }

    /// One run on the BF16 A at `a` and B at `b`, into C at `c`
    /// (`[rows, cols]`); asynchronous.
    fn run(&self, gpu: &Gpu, blas: &Cublas, a: u64, b: u64, c: u64) -> Result<()> {
        if self.products.is_empty() {
            cublas_loop(blas, &self.experts, (self.n, self.k), a, b, c)?;
            return self.kernel.launch(gpu, c, &[], self.rows, self.n);
        }
        for (&w, &product) in self.weights.iter().zip(&self.products) {
            cublas_loop(blas, &self.experts, (self.cols, self.k), a, w, product)?;
        }
        self.kernel.launch_gated(gpu, c, &self.products, &[], self.rows, self.cols)
    }
}

/// The one epilogue our kernels on `p` compute beyond rounding to bf16,
/// if any; an error where they compute different ones, each of which
/// would need a vendor equivalent of its own.
fn ours_epilogue<'a>(ours: &'a [OurGrouped], p: &GroupedProblem) -> Result<Option<&'a GroupedEpilogue>> {
    let mut found: Option<&GroupedEpilogue> = None;
    for e in ours.iter().filter(|k| k.computes(p)).filter_map(|k| k.spec.epilogue.as_ref()) {
        match found {
            Some(f) if f != e => {
                return Err(RuntimeError::Other(format!("{p}: our kernels compute different epilogues: time each in a run of its own")))
            }
            _ => found = Some(e),
        }
    }
    Ok(found)
}

/// Checks and times the baselines on `p` with inputs drawn from `seed`.
#[allow(clippy::too_many_arguments)]
pub fn bench_grouped(
    gpu: &Gpu,
    timer: &Timer,
    blas: &Cublas,
    lt: &LtHandle,
    ours: &[OurGrouped],
    p: &GroupedProblem,
    seed: u64,
    (warmup, reps): (usize, usize),
    threshold: f64,
) -> GroupedResult {
    let mut res = GroupedResult {
        problem: p.to_string(),
        label: label(p),
        groups: p.groups(),
        n: p.n,
        k: p.k,
        total_rows: p.total_rows(),
        flops: p.flops(),
        seed,
        runs: Vec::new(),
        error: None,
    };
    if let Err(e) = bench_into(gpu, timer, blas, lt, ours, p, seed, (warmup, reps), threshold, &mut res) {
        res.error = Some(e.to_string());
    }
    res
}

#[allow(clippy::too_many_arguments)]
fn bench_into(
    gpu: &Gpu,
    timer: &Timer,
    blas: &Cublas,
    lt: &LtHandle,
    ours: &[OurGrouped],
    p: &GroupedProblem,
    seed: u64,
    (warmup, reps): (usize, usize),
    threshold: f64,
    res: &mut GroupedResult,
) -> Result<()> {
    p.validate().map_err(RuntimeError::Other)?;
    if !p.rows.iter().all(|&r| p.segment_rows(r).is_multiple_of(16)) {
        return Err(RuntimeError::Other(format!("{p}: segments must hold a multiple of 16 rows for cuBLASLt FP8")));
    }
    let s = &gpu.stream;
    let (rows, n, k) = (p.buffer_rows() as usize, p.n as usize, p.k as usize);
    let experts = p.live();
    let inputs = GroupedInputs::new(gpu, p, seed)?;
    let mut c = unsafe { s.alloc::<bf16>(rows * n) }.ctx("cuMemAlloc(C)")?;
    let (pa, pb, pc) = (gpu.addr(&inputs.a), gpu.addr(&inputs.b), gpu.addr(&c));
    let (bf16_row, bf16_b) = (|row| inputs.a_row(p, row, false), |e| inputs.b_expert(p, e, false));
    let scales = BlockScales::new(rows, n, k);
    let (kb, kb_lt, nb) = (scales.kb(), scales.kb_lt(), scales.nb());
    let mut c8 = unsafe { s.alloc::<bf16>(rows * n) }.ctx("cuMemAlloc(C8)")?;
    let (pa8, pb8, psa, psb, pc8) =
        (gpu.addr(&inputs.a8), gpu.addr(&inputs.b8), gpu.addr(&inputs.sa_t), gpu.addr(&inputs.sb_lt), gpu.addr(&c8));
    let (fp8_row, fp8_b) = (|row| inputs.a_row(p, row, true), |e| inputs.b_expert(p, e, true));

    let loop_bf16 = |_: usize| cublas_loop(blas, &experts, (p.n, p.k), pa, pb, pc);
    let grouped = GroupedBatched::new(gpu, p, pa, pb, pc);
    let lt_plans: Result<Vec<(usize, u64, LtGemm)>> = experts
        .iter()
        .map(|&(e, off, r)| {
            let input = LtInput::Fp8BlockScaled { sa_m_major: psa + off * kb as u64 * 4, sb: psb + (e * nb * kb_lt) as u64 * 4 };
            Ok((e, off, LtGemm::new(lt, fp8_rows(r), p.n, p.k, input)?))
        })
        .collect();
    let loop_fp8 = |plans: &[(usize, u64, LtGemm)]| -> Result<()> {
        for (e, off, plan) in plans {
            unsafe { plan.run(lt, pa8 + off * p.k, pb8 + (*e as u64 * p.n * p.k), pc8 + off * p.n * 2)? };
        }
        Ok(())
    };

    // Check each contender once on a poisoned output, through the epilogue it computes.
    let check = |name: &str,
                 out: &mut CudaSlice<bf16>,
                 launch: &mut dyn FnMut() -> Result<()>,
                 fp8: bool,
                 epilogue: Option<&GroupedEpilogue>|
     -> GroupedRun {
        let r = (|| -> Result<f64> {
            gpu.poison16(out, POISON_BF16)?;
            launch()?;
            gpu.sync(name)?;
            let h = s.clone_dtoh(out).ctx("cuMemcpyDtoH(C)")?;
            if fp8 {
                check_output(p, epilogue, &h, fp8_row, fp8_b)
            } else {
                check_output(p, epilogue, &h, bf16_row, bf16_b)
            }
        })();
        match r {
            Ok(err) => {
                let pass = passes(err, threshold);
                let error = (!pass).then(|| "check failed; not timed".to_string());
                GroupedRun { rel_err: err.is_finite().then_some(err), pass, error, ..GroupedRun::new(name) }
            }
            Err(e) => GroupedRun { error: Some(e.to_string()), ..GroupedRun::new(name) },
        }
    };
    let not_run = |name: &str, e: &RuntimeError| GroupedRun { error: Some(e.to_string()), ..GroupedRun::new(name) };
    res.runs.push(check("cublas-loop", &mut c, &mut || loop_bf16(0), false, None));
    res.runs.push(match &grouped {
        Ok(gb) => check("cublas-grouped", &mut c, &mut || gb.run(gpu, blas), false, None),
        Err(e) => not_run("cublas-grouped", e),
    });
    res.runs.push(match &lt_plans {
        Ok(plans) => check("cublaslt-fp8-block-loop", &mut c8, &mut || loop_fp8(plans), true, None),
        Err(e) => not_run("cublaslt-fp8-block-loop", e),
    });
    // The vendor's equivalent of our kernels' epilogue (BF16), into its own output.
    let epilogue = ours_epilogue(ours, p)?;
    let mut vendor_epilogue = epilogue.map(|e| {
        let made = EpilogueLoop::new(gpu, p, e, &inputs.b_h)
            .and_then(|l| Ok((unsafe { s.alloc::<bf16>((l.rows * l.cols) as usize) }.ctx("cuMemAlloc(C epilogue)")?, l)));
        (res.runs.len(), EpilogueLoop::name(e), made)
    });
    if let Some((_, name, made)) = &mut vendor_epilogue {
        res.runs.push(match made {
            Ok((out, l)) => {
                let pc = gpu.addr(out);
                check(name, out, &mut || l.run(gpu, blas, pa, pb, pc), false, epilogue)
            }
            Err(e) => not_run(name, e),
        });
    }
    // Our kernels on the same inputs (of their type), each into its own output.
    let mut prepared = Vec::new();
    for kernel in ours.iter().filter(|k| k.computes(p)) {
        let index = res.runs.len();
        let made = kernel.spec.out_cols(p).and_then(|cols| {
            let out = unsafe { s.alloc::<bf16>(rows * cols as usize) }.ctx("cuMemAlloc(C ours)")?;
            Ok((kernel.prepare(gpu, p, &inputs, &out)?, out))
        });
        match made {
            Ok((mut launch, mut out)) => {
                res.runs.push(check(&kernel.name, &mut out, &mut || launch.launch(), kernel.fp8(), kernel.spec.epilogue.as_ref()));
                prepared.push((index, launch, out));
            }
            Err(e) => res.runs.push(not_run(&kernel.name, &e)),
        }
    }
    let (ok_loop, ok_grouped, ok_fp8) = (res.runs[0].pass, res.runs[1].pass, res.runs[2].pass);
    let mut timed: Vec<Contender> = Vec::new();
    if ok_loop {
        timed.push((0, Box::new(loop_bf16)));
    }
    if let (true, Ok(gb)) = (ok_grouped, &grouped) {
        timed.push((1, Box::new(move |_| gb.run(gpu, blas))));
    }
    if let (true, Ok(plans)) = (ok_fp8, &lt_plans) {
        timed.push((2, Box::new(move |_| loop_fp8(plans))));
    }
    if let Some((index, _, Ok((out, l)))) = &vendor_epilogue {
        if res.runs[*index].pass {
            let pc = gpu.addr(out);
            timed.push((*index, Box::new(move |_| l.run(gpu, blas, pa, pb, pc))));
        }
    }
    for (index, launch, _out) in prepared.iter_mut() {
        if res.runs[*index].pass {
            timed.push((*index, Box::new(move |_| launch.launch())));
        }
    }
    if timed.is_empty() {
        return Ok(());
    }
    let mut launches: Vec<Launch> = timed.iter_mut().map(|(_, f)| &mut **f as Launch).collect();
    let rounds = timer.time_rounds(warmup, reps, &mut launches)?;
    for ((index, _), round_ms) in timed.iter().zip(rounds) {
        let run = &mut res.runs[*index];
        run.stats = Stats::from_samples(&round_ms);
        run.tflops = run.stats.as_ref().map(|st| p.flops() / (st.median_ms * 1e-3) / 1e12);
        run.round_ms = round_ms;
    }
    Ok(())
}

/// What `tilec-bench --grouped` was asked for.
#[derive(Debug, Clone)]
pub struct GroupedArgs<'a> {
    /// How the contenders are checked, timed and reported.
    pub run: RunOptions<'a>,
    /// The problems to run.
    pub problems: Vec<GroupedProblem>,
    /// The seed problems' inputs derive from.
    pub seed: u64,
    /// Our grouped kernels, each a contender on the problems it computes.
    pub artifacts: Vec<(String, Artifact)>,
}

/// Runs every problem of `args` on GPU 0, prints a line per problem and
/// the table, and writes the JSON report when asked.
pub fn run_grouped(args: &GroupedArgs) -> Result<GroupedReport> {
    let gpu = Gpu::new(0)?;
    let timer = args.run.timer(&gpu);
    let blas = Cublas::new(gpu.stream.clone())?;
    let lt = LtHandle::new(gpu.stream.clone())?;
    let mut ours = Vec::new();
    for (name, artifact) in &args.artifacts {
        let spec = GroupedSpec::from_manifest(&artifact.manifest)?;
        ours.push(OurGrouped { name: name.clone(), kernel: gpu.load(artifact)?, spec });
    }
    println!(
        "device: {} (sm_{}{}, {} SMs); cuBLAS {:?}, cuBLASLt {}; seed {:#x}",
        gpu.name,
        gpu.cc.0,
        gpu.cc.1,
        gpu.num_sms,
        blas.version(),
        LtHandle::version(),
        args.seed
    );
    let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut report = GroupedReport {
        schema: GROUPED_SCHEMA.into(),
        device: gpu.name.clone(),
        date_utc: tilec_report::schema::date_utc(created),
        command_line: args.run.command_line.to_vec(),
        seed: args.seed,
        warmup: args.run.warmup,
        reps: args.run.reps,
        threshold: args.run.threshold,
        results: Vec::new(),
    };
    for (i, p) in args.problems.iter().enumerate() {
        let seed = args.seed.wrapping_add((i as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let r = bench_grouped(&gpu, &timer, &blas, &lt, &ours, p, seed, (args.run.warmup, args.run.reps), args.run.threshold);
        print!("[{}/{}] {}", i + 1, args.problems.len(), format_grouped_rows(std::slice::from_ref(&r)).lines().skip(1).collect::<Vec<_>>().join("\n"));
        println!();
        report.results.push(r);
    }
    println!();
    print!("{}", format_grouped_rows(&report.results));
    if let Some(path) = args.run.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| RuntimeError::Other(format!("grouped report: {e}")))?;
        std::fs::write(path, text).map_err(|e| RuntimeError::Other(format!("writing {path}: {e}")))?;
        println!("wrote {path}");
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cublaslt_scales_stay_within_a_masked_segment_of_any_height() {
        // M_max 131 and 5: the counts round up to 16 past their segments; the last
        // expert's rows end the buffer (the fuzz run's panic).
        for spec in ["masked/131:124x136:0,1,131", "masked/5:16x4088:0,0,5"] {
            let p = GroupedProblem::parse(spec).unwrap();
            let kb = BlockScales::new(1, p.n as usize, p.k as usize).kb();
            let sa: Vec<f32> = (0..p.buffer_rows() as usize * kb).map(|i| i as f32).collect();
            let out = cublaslt_sa(&p, &sa, kb);
            assert_eq!(out.len(), sa.len(), "{spec}");
            let mut sorted_in = sa.clone();
            sorted_in.sort_by(f32::total_cmp);
            assert!(out.iter().all(|v| sorted_in.binary_search_by(|x| x.total_cmp(v)).is_ok()), "{spec}: every value comes from SA");
        }
    }
}
