//! Runs one GEMM kernel (BF16, or block-scaled FP8) on several streams at
//! once, round after round, and checks every result: a kernel whose launches shared state
//! (a workspace, a counter) would give wrong sums, or sums that differ
//! between rounds, or hang. Each stream binds the kernel to its own output,
//! so its launches take the stream's own workspace. With
//! [`Lanes::HostThreads`] each stream is driven by a host thread of its own,
//! which binds the one shared [`Gemm`] handle to its output and launches
//! it every round, as a server's request threads would. A kernel with a fused
//! epilogue gets fresh random vectors and matrices and is checked on sampled rows
//! against the FP64 CPU product taken through the epilogue
//! ([`crate::epilogue`]) instead of cuBLAS.

use crate::check::{bf16_to_f64, passes, random_bf16, rel_frobenius, sample_rows, seed_from_time, Rng, POISON_BF16};
use crate::epilogue::{random_matrices, random_vectors, reference_rows, take_rows, upload_matrices, upload_vectors, CPU_REFERENCE_BUDGET};
use crate::error::{DriverCtx, Result};
use crate::blockscaled::BlockScaledOperands;
use crate::{Cublas, Gemm, GemmBuffers, GemmSize, Gpu, Scales, TensorBinding};
use cudarc::driver::CudaSlice;
use half::bf16;

/// What [`check_concurrent`] saw.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcurrentCheck {
    /// Results checked: streams times rounds.
    pub results: usize,
    /// Results whose error against the reference (cuBLAS, or for a fused
    /// epilogue the FP64 one on sampled rows) is above the threshold.
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

/// Who issues the launches of [`check_concurrent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// This thread, on each stream in turn (bound once).
    Streams,
    /// A host thread per stream, each binding the shared handle anew every
    /// round and launching on its own stream.
    HostThreads,
}

/// What every stream's launch reads.
enum Inputs {
    /// BF16 A and B, and an epilogue's vectors and matrices (bound, and
    /// the slices that hold them).
    Bf16 { a: CudaSlice<bf16>, b: CudaSlice<bf16>, vector_bindings: Vec<TensorBinding>, matrix_bindings: Vec<TensorBinding>, _slices: (Vec<CudaSlice<u8>>, Vec<CudaSlice<u8>>) },
    /// Block-scaled FP8 operands and their scales.
    BlockScaled(BlockScaledOperands),
}

/// Runs `gemm` at `size` on `streams` streams at once, `rounds` times,
/// each round with every output poisoned first, and compares each output
/// with cuBLAS's and with the first one.
pub fn check_concurrent(gpu: &Gpu, gemm: &Gemm, blas: &Cublas, size: GemmSize, streams: usize, rounds: usize, threshold: f64, lanes_of: Lanes) -> Result<ConcurrentCheck> {
    let spec = gemm.spec();
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    let s = &gpu.stream;
    // C, the vectors along columns and the matrices have N / parts columns for a gated epilogue.
    let h = spec.out_size(size).n as usize;
    let (seed, inputs, rows, reference) = if spec.scales == Scales::Block {
        // Block-scaled FP8: its own operands and scales, against the dequantised product.
        let mut operands = BlockScaledOperands::draw(gpu, gemm, blas, size, threshold)?;
        let reference = std::mem::take(&mut operands.reference);
        (operands.seed, Inputs::BlockScaled(operands), None, reference)
    } else {
        let seed = seed_from_time();
        let mut rng = Rng::new(seed);
        let (a_h, b_h) = (random_bf16(m * k, &mut rng), random_bf16(n * k, &mut rng));
        let a = s.clone_htod(&a_h).ctx("cuMemcpyHtoD")?;
        let b = s.clone_htod(&b_h).ctx("cuMemcpyHtoD")?;
        // Plain: cuBLAS on every row. With an epilogue: FP64 on sampled rows, through it.
        let vectors = random_vectors(&spec.vectors, spec.out_size(size), &mut rng);
        let (vector_slices, vector_bindings) = upload_vectors(gpu, &vectors)?;
        let matrices = random_matrices(&spec.matrices, spec.out_size(size), &mut rng);
        let (matrix_slices, matrix_bindings) = upload_matrices(gpu, &matrices)?;
        let (rows, reference) = match spec.epilogue.as_ref().filter(|_| spec.has_epilogue()) {
            Some(epilogue) => {
                let rows = sample_rows(m, n, k, CPU_REFERENCE_BUDGET);
                let to_f32 = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
                let reference = reference_rows(epilogue, &vectors, &matrices, &to_f32(&a_h), &to_f32(&b_h), n, k, &rows)?;
                (Some(rows), reference.values)
            }
            None => {
                let mut reference = unsafe { s.alloc::<bf16>(m * n) }.ctx("cuMemAlloc")?;
                blas.gemm_bf16_tn(size.m, size.n, size.k, &a, &b, &mut reference)?;
                (None, bf16_to_f64(&s.clone_dtoh(&reference).ctx("cuMemcpyDtoH")?))
            }
        };
        let inputs = Inputs::Bf16 { a, b, vector_bindings, matrix_bindings, _slices: (vector_slices, matrix_slices) };
        (seed, inputs, rows, reference)
    };
    let lanes = (0..streams).map(|_| gpu.ctx.new_stream().ctx("cuStreamCreate")).collect::<Result<Vec<_>>>()?;
    let mut outputs = (0..streams).map(|_| unsafe { s.alloc::<bf16>(m * h) }.ctx("cuMemAlloc")).collect::<Result<Vec<_>>>()?;
    let buffers = |c: &CudaSlice<bf16>| match &inputs {
        Inputs::Bf16 { a, b, vector_bindings, matrix_bindings, .. } => GemmBuffers::new(gpu.bind("A", a), gpu.bind("B", b), gpu.bind("C", c))
            .with_vectors(vector_bindings.clone())
            .with_matrices(matrix_bindings.clone()),
        Inputs::BlockScaled(operands) => operands.buffers(gpu, gemm, c),
    };
    let mut bound = match lanes_of {
        Lanes::Streams => outputs.iter().map(|c| gemm.bind_raw(size, buffers(c))).collect::<Result<Vec<_>>>()?,
        Lanes::HostThreads => Vec::new(),
    };
    let mut check = ConcurrentCheck { results: 0, wrong: 0, differing: 0, worst_err: 0.0, seed };
    let mut first: Option<Vec<bf16>> = None;
    for _ in 0..rounds {
        for c in outputs.iter_mut() {
            gpu.poison16(c, POISON_BF16)?;
        }
        gpu.sync("poisoning the outputs")?;
        match lanes_of {
            Lanes::Streams => {
                for (launch, lane) in bound.iter_mut().zip(&lanes) {
                    launch.launch(lane)?;
                }
                for lane in &lanes {
                    lane.synchronize().ctx("cuStreamSynchronize")?;
                }
            }
            Lanes::HostThreads => std::thread::scope(|scope| {
                let threads: Vec<_> = outputs
                    .iter()
                    .zip(&lanes)
                    .map(|(c, lane)| {
                        let buffers = buffers(c);
                        scope.spawn(move || -> Result<()> {
                            gpu.ctx.bind_to_thread().ctx("cuCtxSetCurrent")?;
                            gemm.bind_raw(size, buffers)?.launch(lane)?;
                            lane.synchronize().ctx("cuStreamSynchronize")
                        })
                    })
                    .collect();
                threads.into_iter().try_for_each(|t| t.join().expect("a launching thread panicked"))
            })?,
        }
        for c in &outputs {
            let out = s.clone_dtoh(c).ctx("cuMemcpyDtoH")?;
            let err = match &rows {
                Some(rows) => rel_frobenius(&take_rows(&out, rows, h), &reference),
                None => rel_frobenius(&bf16_to_f64(&out), &reference),
            };
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
