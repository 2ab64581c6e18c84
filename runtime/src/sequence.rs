//! BF16 GEMMs run back to back on one stream, as a model's layers run
//! them: each step's A is the previous step's C where the shapes chain
//! (same M, K equal to the previous N), so a step that started reading
//! before the previous one finished would read the wrong A. With
//! programmatic dependent launch on, each kernel may start while the one
//! before it runs and must wait for it before touching memory
//! (`tile-programmatic-launch`); [`Chain::check`] is how that is tested:
//! every output poisoned, the whole chain launched, then each step checked
//! against FP64 on sampled rows of what it read. `tilec-gpu-test --chain`
//! and `tilec-bench --sequence` run it.

use crate::check::{bf16_to_f64, cpu_gemm_tn_rows, par_fill, passes, rel_frobenius, sample_rows, POISON_BF16};
use crate::epilogue::take_rows;
use crate::error::{DriverCtx, Result};
use crate::{BoundGemm, Cublas, Gemm, GemmBuffers, GemmSize, Gpu};
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use std::sync::Arc;

/// FP64 multiply-adds the check of one step may spend.
const CHECK_BUDGET: u64 = 1 << 27;

/// One GEMM of a chain and its buffers.
struct Step {
    size: GemmSize,
    /// The earlier step whose C is this step's A; `None`: `own_a` is.
    from: Option<usize>,
    own_a: Option<CudaSlice<bf16>>,
    b: CudaSlice<bf16>,
    c: CudaSlice<bf16>,
}

/// GEMMs in order on one GPU, with their inputs and outputs.
pub struct Chain {
    steps: Vec<Step>,
}

/// What [`Chain::check`] saw at one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCheck {
    /// Relative Frobenius error of the sampled rows against FP64.
    pub rel_err: f64,
    /// Elements of the whole output that are not finite (the poison left
    /// in place, or computed from a poisoned A).
    pub not_finite: usize,
    /// The step read the previous step's output.
    pub chained: bool,
}

impl StepCheck {
    /// Within `threshold` and every element finite.
    pub fn pass(&self, threshold: f64) -> bool {
        self.not_finite == 0 && passes(self.rel_err, threshold)
    }
}

impl Chain {
    /// The steps `sizes`, in order. A step whose M is the previous step's
    /// and whose K is the previous N reads the previous C as its A; any
    /// other draws an A of its own. Inputs are uniform in [-1, 1) and
    /// weights (B) in +-sqrt(3 / K), so a step's output has its input's
    /// spread however long the chain.
    pub fn new(gpu: &Gpu, sizes: &[GemmSize], seed: u64) -> Result<Chain> {
        let s = &gpu.stream;
        let mut steps: Vec<Step> = Vec::with_capacity(sizes.len());
        for (i, &size) in sizes.iter().enumerate() {
            let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
            let step_seed = seed.wrapping_add((i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let from = i.checked_sub(1).filter(|&p| sizes[p].m == size.m && sizes[p].n == size.k);
            let own_a = match from {
                Some(_) => None,
                None => Some(s.clone_htod(&par_fill(m * k, step_seed, |r| bf16::from_f32(r.uniform()))).ctx("cuMemcpyHtoD(A)")?),
            };
            let scale = (3.0 / k as f32).sqrt();
            let b = s.clone_htod(&par_fill(n * k, step_seed ^ 0xB, |r| bf16::from_f32(r.uniform() * scale))).ctx("cuMemcpyHtoD(B)")?;
            let c = unsafe { s.alloc::<bf16>(m * n) }.ctx("cuMemAlloc(C)")?;
            steps.push(Step { size, from, own_a, b, c });
        }
        Ok(Chain { steps })
    }

    /// Steps in the chain.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// True for a chain of no steps.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Steps that read the previous step's output.
    pub fn chained(&self) -> usize {
        self.steps.iter().filter(|s| s.from.is_some()).count()
    }

    /// Step `i`'s size, A, B and C, its C writable while its A, an
    /// earlier step's C or its own, is read.
    fn operands_mut(&mut self, i: usize) -> (GemmSize, &CudaSlice<bf16>, &CudaSlice<bf16>, &mut CudaSlice<bf16>) {
        let (before, after) = self.steps.split_at_mut(i);
        let Step { size, from, own_a, b, c } = &mut after[0];
        let a = match from {
            Some(j) => &before[*j].c,
            None => own_a.as_ref().expect("a step that does not chain has its own A"),
        };
        (*size, a, b, c)
    }

    fn a_of(&self, i: usize) -> &CudaSlice<bf16> {
        let step = &self.steps[i];
        match step.from {
            Some(j) => &self.steps[j].c,
            None => step.own_a.as_ref().expect("a step that does not chain has its own A"),
        }
    }

    /// Binds step `i` to `gemm` (its buffers and size).
    pub fn bind(&self, gpu: &Gpu, i: usize, gemm: &Gemm) -> Result<BoundGemm> {
        let step = &self.steps[i];
        gemm.bind_raw(step.size, GemmBuffers::new(gpu.bind("A", self.a_of(i)), gpu.bind("B", &step.b), gpu.bind("C", &step.c)))
    }

    /// Fills every output with NaN and waits.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        for step in &mut self.steps {
            gpu.poison16(&mut step.c, POISON_BF16)?;
        }
        gpu.sync("poisoning the chain's outputs")
    }

    /// cuBLAS runs every step in order on its stream (asynchronous).
    pub fn launch_cublas(&mut self, blas: &Cublas) -> Result<()> {
        for i in 0..self.steps.len() {
            let (GemmSize { m, n, k }, a, b, c) = self.operands_mut(i);
            blas.gemm_bf16_tn(m, n, k, a, b, c)?;
        }
        Ok(())
    }

    /// Each step's output against FP64 on sampled rows of the A it read
    /// and its B (after the launches have finished: call it after a sync).
    pub fn check(&self, gpu: &Gpu) -> Result<Vec<StepCheck>> {
        let s = &gpu.stream;
        let to_f32 = |v: Vec<bf16>| v.into_iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
        let mut out = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            let (m, n, k) = (step.size.m as usize, step.size.n as usize, step.size.k as usize);
            let a = to_f32(s.clone_dtoh(self.a_of(i)).ctx("cuMemcpyDtoH(A)")?);
            let b = to_f32(s.clone_dtoh(&step.b).ctx("cuMemcpyDtoH(B)")?);
            let c = s.clone_dtoh(&step.c).ctx("cuMemcpyDtoH(C)")?;
            let rows = sample_rows(m, n, k, CHECK_BUDGET);
            let reference = cpu_gemm_tn_rows(&a, &b, n, k, &rows);
            let not_finite = bf16_to_f64(&c).iter().filter(|x| !x.is_finite()).count();
            out.push(StepCheck { rel_err: rel_frobenius(&take_rows(&c, &rows, n), &reference), not_finite, chained: step.from.is_some() });
        }
        Ok(out)
    }
}

/// Launches `bound` in order on `stream`, each with programmatic
/// dependent launch on or off (refused, before anything is launched, for a
/// kernel compiled without `tile-programmatic-launch`).
pub fn launch_all(bound: &mut [BoundGemm], stream: &Arc<CudaStream>, programmatic: bool) -> Result<()> {
    for gemm in bound.iter_mut() {
        gemm.set_programmatic_launch(programmatic)?;
    }
    for gemm in bound.iter_mut() {
        gemm.launch(stream)?;
    }
    Ok(())
}

/// The sizes of a chain of `steps` GEMMs on one `M x N x K` shape whose
/// outputs feed the next: N and K swap at every step (`M x N x K`,
/// `M x K x N`, ...), so each step's K is the previous step's N.
pub fn alternating(size: GemmSize, steps: usize) -> Vec<GemmSize> {
    (0..steps).map(|i| if i % 2 == 0 { size } else { GemmSize::new(size.m, size.k, size.n) }).collect()
}
