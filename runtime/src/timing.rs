//! Event timing of kernels in interleaved rounds.
//!
//! Every kernel of a comparison runs once per round, in turn (A B C A B C
//! ...), each launch between two CUDA events, so clock and thermal drift
//! hit all of them alike and a per-round ratio is meaningful. Each round
//! starts one kernel further on (A B C, B C A, C A B, ...), so every kernel
//! runs in every position of a round equally often: a kernel's position in
//! a fixed order moved its time by a few percent. And every block of as
//! many rounds as there are kernels rotates a different shuffle of them, so
//! no kernel always follows the same one: with rotation alone, the kernel
//! listed right after cuBLASLt's block-scaled FP8 GEMM ran slower, whichever
//! kernel it was (measured: docs/evidence.md, timing.rs, module
//! documentation). While a batch
//! of rounds is enqueued, a one-thread spin kernel holds the stream, so the
//! host's launch overhead does not leak into the events.

use crate::rng::Rng;
use crate::cuda::Gpu;
use crate::error::{DriverCtx, Result};
use cudarc::driver::{sys, CudaEvent, CudaFunction};
use std::ffi::c_void;
use std::time::Instant;

/// A one-thread kernel that spins on %globaltimer for `ns` nanoseconds.
const SPIN_PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64

.visible .entry tilec_spin(
    .param .u64 tilec_spin_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [tilec_spin_ns];
    mov.u64 %rd2, %globaltimer;
$L_spin:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $L_spin;
    ret;
}
"#;

/// Most launches enqueued behind one spin kernel.
const CHUNK: usize = 256;
/// Fewest timed rounds, however slow the kernels.
pub const MIN_ROUNDS: usize = 5;

/// Rounds to time: `asked`, but no more than keep the timed part near
/// `budget_ms` per kernel given one round's estimated time `round_ms` of
/// `kernels` kernels, and never fewer than [`MIN_ROUNDS`] (nor `asked`).
pub fn rounds_within(asked: usize, kernels: usize, round_ms: f64, budget_ms: f64) -> usize {
    let fit = (budget_ms * kernels as f64 / round_ms.max(1e-6)) as usize;
    asked.min(fit.max(MIN_ROUNDS))
}

/// The order of `kernels` kernels in round `round`: a shuffle of them drawn
/// for each block of `kernels` rounds (the first block keeps the listed
/// order), started at `round mod kernels`.
pub fn round_order(round: usize, kernels: usize) -> impl Iterator<Item = usize> {
    let mut shuffle: Vec<usize> = (0..kernels).collect();
    let block = round / kernels.max(1);
    if block > 0 {
        let mut rng = Rng::new(block as u64);
        for i in (1..kernels).rev() {
            shuffle.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
    }
    (0..kernels).map(move |j| shuffle[(round + j) % kernels])
}

/// How a benchmark mode of `tilec-bench` (`--grouped`, `--sequence`)
/// checks, times and reports its contenders.
#[derive(Debug, Clone)]
pub struct RunOptions<'a> {
    /// The command line, for the report.
    pub command_line: &'a [String],
    /// Untimed runs per contender.
    pub warmup: usize,
    /// Timed rounds.
    pub reps: usize,
    /// Largest relative error that passes.
    pub threshold: f64,
    /// Hold the stream with a spin kernel while enqueuing.
    pub spin: bool,
    /// Cap a slow contender's timed runs near this many milliseconds.
    pub max_run_ms: f64,
    /// Where to write the JSON report.
    pub json: Option<&'a str>,
}

impl RunOptions<'_> {
    /// The timer these options ask for on `gpu`.
    pub fn timer<'g>(&self, gpu: &'g Gpu) -> Timer<'g> {
        Timer::new(gpu, self.spin, self.max_run_ms)
    }
}

/// Times kernels on one GPU's stream.
pub struct Timer<'a> {
    gpu: &'a Gpu,
    spin: Option<CudaFunction>,
    max_run_ms: f64,
}

/// One kernel to time: `f(i)` issues one launch; `i` counts every launch of
/// the measurement, so rotating buffer sets by `i` never gives two
/// consecutive launches the same inputs.
pub type Launch<'f> = &'f mut dyn FnMut(usize) -> Result<()>;

impl<'a> Timer<'a> {
    /// `spin`: hold the stream with the spin kernel while enqueuing (falls
    /// back to no spin, with a warning, where it cannot load). A slow set of
    /// kernels gets fewer rounds, about `max_run_ms` of timed launches per
    /// kernel (see [`rounds_within`]).
    pub fn new(gpu: &'a Gpu, spin: bool, max_run_ms: f64) -> Timer<'a> {
        let spin = spin.then(|| {
            gpu.ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(SPIN_PTX))
                .and_then(|m| m.load_function("tilec_spin"))
                .map_err(|e| println!("warning: spin kernel unavailable ({e}); timing without it"))
                .ok()
        });
        Timer { gpu, spin: spin.flatten(), max_run_ms }
    }

    /// True when the spin kernel is in use.
    pub fn spins(&self) -> bool {
        self.spin.is_some()
    }

    fn hold_stream(&self, ns: u64) -> Result<()> {
        let Some(f) = &self.spin else { return Ok(()) };
        let mut ns = ns;
        let mut params = [&mut ns as *mut u64 as *mut c_void];
        unsafe {
            sys::cuLaunchKernel(
                f.cu_function(),
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                self.gpu.stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .ctx("cuLaunchKernel(spin)")
    }

    /// Warms every kernel up (`warmup` calls each, interleaved; fewer when
    /// slow), then times `rounds` rounds. Returns, per kernel, the time of
    /// its launch in each round, ms.
    pub fn time_rounds(&self, warmup: usize, rounds: usize, kernels: &mut [Launch]) -> Result<Vec<Vec<f64>>> {
        let nk = kernels.len();
        let mut i = 0;
        let mut est_ms = 0.0;
        for f in kernels.iter_mut() {
            let t0 = Instant::now();
            f(i)?;
            i += 1;
            self.gpu.sync("first warm-up call")?;
            est_ms += t0.elapsed().as_secs_f64() * 1e3;
        }
        let warmup = warmup.saturating_sub(1).min((self.max_run_ms / 4.0 / est_ms.max(1e-6)) as usize);
        for _ in 0..warmup {
            for f in kernels.iter_mut() {
                f(i)?;
                i += 1;
            }
        }
        self.gpu.sync("warm-up")?;
        let rounds = rounds_within(rounds, nk, est_ms, self.max_run_ms);
        let new_event = |_| self.gpu.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).ctx("cuEventCreate");
        let record = |e: &CudaEvent| e.record(&self.gpu.stream).ctx("cuEventRecord");
        let mut out = vec![Vec::with_capacity(rounds); nk];
        let per_chunk = (CHUNK / nk.max(1)).max(1);
        let mut done = 0;
        while done < rounds {
            let n = per_chunk.min(rounds - done);
            let events: Vec<CudaEvent> = (0..2 * n * nk).map(new_event).collect::<Result<_>>()?;
            // Long enough for the host to enqueue the batch (a few us a launch).
            self.hold_stream((1_000_000 + 40_000 * (n * nk) as u64).min(50_000_000))?;
            for round in 0..n {
                for k in round_order(done + round, nk) {
                    let e = 2 * (round * nk + k);
                    record(&events[e])?;
                    kernels[k](i)?;
                    i += 1;
                    record(&events[e + 1])?;
                }
            }
            self.gpu.sync("timed rounds")?;
            for round in 0..n {
                for (k, times) in out.iter_mut().enumerate() {
                    let e = 2 * (round * nk + k);
                    let ms = events[e].elapsed_ms(&events[e + 1]).ctx("cuEventElapsedTime")?;
                    times.push(ms as f64);
                }
            }
            done += n;
        }
        Ok(out)
    }
}
