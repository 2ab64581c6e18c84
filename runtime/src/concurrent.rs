//! Runs one BF16 GEMM kernel on several streams at once, round after
//! round, and checks every result: a kernel whose launches shared state
//! (a workspace, a counter) would give wrong sums, or sums that differ
//! between rounds, or hang. Each stream binds the kernel to its own output,
//! so its launches take the stream's own workspace.

use crate::check::{bf16_to_f64, passes, random_bf16, rel_frobenius, seed_from_time, Rng, POISON_BF16};
use crate::error::{DriverCtx, Result};
use crate::{Cublas, Gemm, GemmSize, Gpu};
use half::bf16;

/// What [`check_concurrent`] saw.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcurrentCheck {
    /// Results checked: streams times rounds.
    pub results: usize,
    /// Results whose error against cuBLAS is above the threshold.
    pub wrong: usize,
    /// Results that differ in any bit from the first stream's first round
    /// (the kernel's sum is deterministic: every launch must agree).
    pub differing: usize,
    /// The largest relative error against cuBLAS.
    pub worst_err: f64,
    /// The inputs' seed.
    pub seed: u64,
}

impl ConcurrentCheck {
    /// Every result right and identical.
    pub fn pass(&self) -> bool {
        self.wrong == 0 && self.differing == 0
    }
}

/// Runs `gemm` at `size` on `streams` streams at once, `rounds` times,
/// each round with every output poisoned first, and compares each output
/// with cuBLAS's and with the first one.
pub fn check_concurrent(gpu: &Gpu, gemm: &Gemm, blas: &Cublas, size: GemmSize, streams: usize, rounds: usize, threshold: f64) -> Result<ConcurrentCheck> {
    let seed = seed_from_time();
    let mut rng = Rng::new(seed);
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    let s = &gpu.stream;
    let a = s.clone_htod(&random_bf16(m * k, &mut rng)).ctx("cuMemcpyHtoD")?;
    let b = s.clone_htod(&random_bf16(n * k, &mut rng)).ctx("cuMemcpyHtoD")?;
    let mut reference = unsafe { s.alloc::<bf16>(m * n) }.ctx("cuMemAlloc")?;
    blas.gemm_bf16_tn(size.m, size.n, size.k, &a, &b, &mut reference)?;
    let reference = bf16_to_f64(&s.clone_dtoh(&reference).ctx("cuMemcpyDtoH")?);
    let lanes = (0..streams).map(|_| gpu.ctx.new_stream().ctx("cuStreamCreate")).collect::<Result<Vec<_>>>()?;
    let mut outputs = (0..streams).map(|_| unsafe { s.alloc::<bf16>(m * n) }.ctx("cuMemAlloc")).collect::<Result<Vec<_>>>()?;
    let mut bound = outputs.iter().map(|c| gemm.bind(gpu, size, &a, &b, c)).collect::<Result<Vec<_>>>()?;
    let mut check = ConcurrentCheck { results: 0, wrong: 0, differing: 0, worst_err: 0.0, seed };
    let mut first: Option<Vec<bf16>> = None;
    for _ in 0..rounds {
        for c in outputs.iter_mut() {
            gpu.poison16(c, POISON_BF16)?;
        }
        gpu.sync("poisoning the outputs")?;
        for (launch, lane) in bound.iter_mut().zip(&lanes) {
            launch.launch(lane)?;
        }
        for lane in &lanes {
            lane.synchronize().ctx("cuStreamSynchronize")?;
        }
        for c in &outputs {
            let out = s.clone_dtoh(c).ctx("cuMemcpyDtoH")?;
            let err = rel_frobenius(&bf16_to_f64(&out), &reference);
            check.results += 1;
            check.worst_err = check.worst_err.max(err);
            check.wrong += usize::from(!passes(err, threshold));
            match &first {
                None => first = Some(out),
                Some(f) => check.differing += usize::from(f.iter().zip(&out).any(|(x, y)| x.to_bits() != y.to_bits())),
            }
        }
    }
    Ok(check)
}
