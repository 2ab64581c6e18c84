#![warn(missing_docs)]
//! The GPUs tilec compiles for. A [`Target`] holds the hardware facts of one
//! GPU that config selection, the lowering, the runtime and the benchmark
//! read, so that each fact is written once: SMs, shared memory, registers,
//! L2, HBM, tensor-core peaks, clusters, and the PTX target.
//!
//! A target is named on the command line (`tilec compile --target h100`),
//! in a pass pipeline (`tile-select-config{target=h100}`) and in an
//! artifact's manifest (`"gpu": "h100"`); the runtime recognises the device
//! it runs on from the name and memory size the driver reports
//! ([`Target::matches_device`]) and refuses an artifact compiled for another
//! target. `docs/targets.md` says where each fact comes from and how to add
//! a target.

mod known;
mod target;

pub use target::Target;

/// Rows a TMA box fitted to its tensor's rows copies are a multiple of
/// this (`tile-fit-tma-boxes`): the period of every TMA swizzle, so the
/// rows land where a full box puts them. A fact of sm_90's TMA, the same on
/// every target.
pub const TMA_ROW_GRAIN: u64 = 8;

/// A tensor TMA copies must start each row this many bytes apart, or a
/// multiple of it (`cuTensorMapEncodeTiled`'s global strides): the runtime
/// refuses other strides, pads A's and B's rows where K leaves them
/// short, and `tilec compile --shape` says which.
pub const TMA_STRIDE_ALIGN_BYTES: u64 = 16;

/// A persistent kernel's balanced grid (the manifest's `sms` rule): the
/// fewest of `workers` clusters that run `units` wave tiles in as many
/// turns as all of them would, `ceil(units / turns)` with `turns =
/// ceil(units / workers)`. Config selection ranks by it, and the launcher
/// starts it.
pub fn fewest_keeping_turns(units: u64, workers: u64) -> u64 {
    let turns = units.div_ceil(workers.max(1)).max(1);
    units.div_ceil(turns).clamp(1, workers.max(1))
}

#[cfg(test)]
mod tests;
