//! Hopper transform utilities that more than one pass calls, so that no
//! pass reaches into another's file:
//!
//! ```text
//!  dot.rs       the dots that become wgmma: tile.dot and the block-scaled tile.dot_scaled
//!  staging.rs   staging: TMA-staged and copied loads, multi-stage buffers and their mbarrier, the shared-memory budget
//!  wgmma.rs     a dot as fence / nv.wgmma / commit / wait (and promotion), groups in flight, the drain after a loop
//!  counting.rs  stage and phase arithmetic: trip counts, iterations from the kernel's start, stage, round, parity
//!  schedule.rs  a K loop's software-pipelining schedule (stages, groups in flight) and its pipeline.stage/order record
//!  expand.rs    the schedule expanded for one warpgroup: prologue, wait, wgmma, refill, drain
//!  prefetch.rs  register loads (a scaled dot's scales, when not staged) issued one iteration ahead, loop-carried;
//!               the slice of a K loop's body that computes another iteration's values (tile-prefetch-l2's too)
//! ```
//!
//! `tile-pipeline` is the schedule plus `expand`; `tile-warp-specialize`
//! expands the same schedule across a producer and consumer roles with the
//! same counting; `tile-lower-to-nv` stages one iteration at a time.

/// Warps in a warpgroup, the unit a wgmma runs on and a consumer role is
/// made of.
pub const WARPS_PER_WARPGROUP: i64 = 4;

pub mod counting;
pub mod dot;
pub mod expand;
pub mod prefetch;
pub mod schedule;
pub mod staging;
pub mod wgmma;
