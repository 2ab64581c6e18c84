//! The ranks of a tensor-parallel run: one GPU, one NCCL communicator and
//! one communication stream each, driven by one host thread each (rank i
//! is device i).
//!
//! NCCL collectives block until every rank has joined them, so a rank that
//! fails while the others wait in a collective would hang the run. Every
//! step that can fail on one rank alone (loading kernels, allocating,
//! binding) therefore ends in [`Rank::agree`], and all ranks stop together
//! when one of them failed.

use crate::cuda::Gpu;
use crate::error::{check_lib, DriverCtx, Result, RuntimeError};
use cudarc::driver::CudaStream;
use cudarc::nccl::{Comm, Id};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

/// `Ok` if libnccl can be loaded, else an error naming the search path. The
/// Python environment's `nvidia/nccl/lib` ships it as `libnccl.so.2`, a
/// name cudarc does not try: link it as `libnccl.so` in a directory on
/// `LD_LIBRARY_PATH` (the GPU bundle's `gpu-env.sh` does).
pub fn ensure_nccl() -> Result<()> {
    check_lib(unsafe { cudarc::nccl::sys::is_culib_present() }, "libnccl", "nccl")
}

/// What the ranks share: the agreement barrier and whether a rank failed.
struct Shared {
    barrier: Barrier,
    failed: AtomicBool,
}

impl Shared {
    /// Waits for every rank to reach `step`; `Ok` only if every rank brings
    /// `Ok`. A rank's own error is returned as is; the others learn that a
    /// peer failed.
    fn agree<T>(&self, rank: usize, step: &str, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.failed.store(true, Ordering::SeqCst);
        }
        self.barrier.wait();
        match r {
            Ok(_) if self.failed.load(Ordering::SeqCst) => Err(RuntimeError::PeerFailed { rank, step: step.to_string() }),
            r => r,
        }
    }
}

/// One rank of the world.
pub struct Rank {
    /// This rank's GPU; its stream (non-blocking) runs the GEMMs.
    pub gpu: Gpu,
    /// The stream the collectives run on (non-blocking, highest priority).
    pub comm_stream: Arc<CudaStream>,
    /// The communicator, bound to `comm_stream`.
    pub comm: Comm,
    /// This rank's index.
    pub rank: usize,
    /// Ranks in all.
    pub world: usize,
    shared: Arc<Shared>,
}

impl Rank {
    /// Turns an NCCL error into a runtime error naming the call and rank.
    pub fn nccl<T>(&self, call: &'static str, r: std::result::Result<T, cudarc::nccl::result::NcclError>) -> Result<T> {
        r.map_err(|err| RuntimeError::Nccl { call, rank: self.rank, err })
    }

    /// Waits for every rank to reach `step`; `Ok` only if every rank brings
    /// `Ok`. A rank's own error is returned as is; the others learn that a
    /// peer failed.
    pub fn agree<T>(&self, step: &str, r: Result<T>) -> Result<T> {
        self.shared.agree(self.rank, step, r)
    }
}

/// Opens rank `rank`'s GPU, current on this thread, with its two streams.
fn open_gpu(rank: usize) -> Result<(Gpu, Arc<CudaStream>)> {
    let mut gpu = Gpu::new(rank)?;
    gpu.ctx.bind_to_thread().ctx("cuCtxSetCurrent")?;
    // The GEMMs get a non-blocking stream of their own: the legacy default
    // stream would serialise with any blocking stream a library makes.
    gpu.stream = gpu.ctx.new_stream().ctx("cuStreamCreate(GEMM)")?;
    // The collectives' stream has the highest priority, so the block
    // scheduler gives NCCL's CTAs the next free SMs instead of queueing them
    // behind every CTA of a GEMM launched at the same time.
    let (_, highest) = cudarc::driver::result::stream::get_priority_range().ctx("cuCtxGetStreamPriorityRange")?;
    let comm_stream = gpu.ctx.new_stream_with_priority(highest).ctx("cuStreamCreateWithPriority(communication)")?;
    Ok((gpu, comm_stream))
}

/// Runs `f` on every rank of a world of `world` GPUs, each on its own
/// thread, and returns each rank's result in rank order. If ranks failed,
/// the error is the first one that is not a [`RuntimeError::PeerFailed`].
pub fn run_world<R: Send>(world: usize, f: impl Fn(&Rank) -> Result<R> + Sync) -> Result<Vec<R>> {
    crate::cuda::ensure_cuda()?;
    ensure_nccl()?;
    let devices = cudarc::driver::CudaContext::device_count().ctx("cuDeviceGetCount")?;
    if world == 0 || world > devices as usize {
        return Err(RuntimeError::TpArgs(format!("{world} ranks asked, this machine has {devices} GPUs")));
    }
    let id = Id::new().map_err(|err| RuntimeError::Nccl { call: "ncclGetUniqueId", rank: 0, err })?;
    let shared = Arc::new(Shared { barrier: Barrier::new(world), failed: AtomicBool::new(false) });
    let mut results: Vec<Result<R>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let (shared, f) = (shared.clone(), &f);
                scope.spawn(move || -> Result<R> {
                    // Communicator set-up is itself collective: no rank may
                    // enter it unless all can.
                    let (gpu, comm_stream) = shared.agree(rank, "opening the GPUs", open_gpu(rank))?;
                    // NCCL takes the device from the thread's current context,
                    // which open_gpu made this rank's.
                    let comm = Comm::from_rank(comm_stream.clone(), rank, world, id)
                        .map_err(|err| RuntimeError::Nccl { call: "ncclCommInitRank", rank, err })?;
                    f(&Rank { gpu, comm_stream, comm, rank, world, shared })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(RuntimeError::Other("a rank's thread panicked".into()))))
            .collect()
    });
    let cause = results.iter().position(|r| r.as_ref().is_err_and(|e| !matches!(e, RuntimeError::PeerFailed { .. })));
    if let Some(Err(e)) = cause.map(|i| results.swap_remove(i)) {
        return Err(e);
    }
    results.into_iter().collect()
}
