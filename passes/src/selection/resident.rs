//! Resident scales: where block-scaled FP8's scales wait in the swapped
//! GEMM's plain pipeline of one m64 row block (decode sizes).
//!
//! There both scales are narrow tiles the second warp copies with each
//! stage (the tokens' scales and B's block scales), and each copy's 32
//! arrivals hold the stage's barrier back beside its TMA loads, on a K
//! block whose wgmma is small. Copied a chunk of K blocks at a time
//! instead ([`Scales::Resident`], `tile-pipeline{scales=resident}`), a
//! stage waits for its TMA loads alone; the chunk's copy and the wait for
//! it come once before the K loop, which a CTA must run long enough to
//! repay. Tiles of two row blocks a warpgroup (a K block's wgmma twice as
//! long) and unswapped ones (A's scales one flat TMA box a stage, only B's
//! copied) gain nothing on balance and keep their scales staged
//! (measured on decode draws it was fitted on and on two drawn after:
//! docs/evidence.md, selection/resident.rs).

use super::candidate::{Candidate, Config, Schedule, Scales};
use super::problem::{Machine, Precision, Problem};
use super::smem::split_k_blocks;
use super::waves::figures;

/// K blocks a CTA runs, at the least, for its scales to be resident: fewer
/// do not repay the chunk's copy before the loop (the measured picks lost at
/// 9 and fewer and gained from 12 on: docs/evidence.md, selection/resident.rs).
pub const RESIDENT_MIN_K_BLOCKS: i64 = 10;

/// Whether `config`'s scales are resident rather than staged: a
/// block-scaled swapped GEMM ([`Problem::row_block_scales`]) in the plain
/// pipeline (of more than one stage: one stage has no `tile-pipeline`),
/// one m64 row block a tile, over at least [`RESIDENT_MIN_K_BLOCKS`] K
/// blocks a CTA.
pub fn prefers_resident_scales(problem: &Problem, config: &Config) -> bool {
    let k_blocks_per_cta = split_k_blocks(problem, config.block_k, config.splits.max(1));
    problem.precision == Precision::Fp8BlockScaled
        && problem.row_block_scales.is_some()
        && config.schedule == Schedule::Pipeline
        && config.stages > 1
        && config.scales == Scales::Staged
        && config.block_m == 64
        && k_blocks_per_cta >= RESIDENT_MIN_K_BLOCKS
}

/// `candidate` with its scales resident where [`prefers_resident_scales`]
/// says so and the resident buffers fit beside its stages; otherwise as
/// it is.
pub fn with_resident_scales(problem: &Problem, machine: &Machine, candidate: Candidate) -> Candidate {
    if !prefers_resident_scales(problem, &candidate.config) {
        return candidate;
    }
    let config = Config { scales: Scales::Resident, ..candidate.config };
    let resident = Candidate { reason: candidate.reason.clone(), ..figures(problem, machine, config) };
    if resident.smem_bytes <= machine.smem_bytes {
        resident
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::{Epilogue, SplitReduce};
    use crate::selection::testing::fp8;

    /// A 64x16 swapped decode tile, split in two through a cluster.
    fn decode_tile(block_m: i64) -> Config {
        Config { stages: 8, num_warps: 4, schedule: Schedule::Pipeline, epilogue: Epilogue::Global, scales: Scales::Staged, splits: 2, split_reduce: SplitReduce::Cluster, ..Config::neutral((block_m, 16, 128)) }
    }

    #[test]
    fn swapped_single_row_block_tiles_over_enough_k_blocks_hold_their_scales() {
        let swapped = |m, n, k| Problem { b_scale_rows: Some(3), ..fp8(m, n, k) }.swapped();
        // 4608 / 128 = 36 K blocks, 18 a CTA: resident.
        assert!(prefers_resident_scales(&swapped(2, 3072, 4608), &decode_tile(64)));
        // 2304 / 128 = 18 K blocks, 9 a CTA: the copy before the loop is not repaid.
        assert!(!prefers_resident_scales(&swapped(2, 3072, 2304), &decode_tile(64)));
        // Two m64 row blocks a warpgroup: staged.
        assert!(!prefers_resident_scales(&swapped(2, 3072, 4608), &decode_tile(128)));
        // Unswapped: A's scales go by TMA, staged.
        assert!(!prefers_resident_scales(&Problem { b_scale_rows: Some(3), ..fp8(64, 4096, 7168) }, &decode_tile(64)));
        // Warp-specialised: its producer runs ahead of the consumers.
        let ws = Config { schedule: Schedule::WarpSpecialized { consumers: 1 }, ..decode_tile(64) };
        assert!(!prefers_resident_scales(&swapped(2, 3072, 4608), &ws));
        let moved = with_resident_scales(&swapped(2, 3072, 4608), &Machine::H100, figures(&swapped(2, 3072, 4608), &Machine::H100, decode_tile(64)));
        assert_eq!(moved.config.scales, Scales::Resident);
    }
}
