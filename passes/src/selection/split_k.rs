//! Split-K over a cluster: CTAs that share one tile's K loop and add their
//! partial tiles in shared memory.

use crate::cluster::Along;
use super::candidate::{Candidate, Pins, SplitReduce};
use super::forms::tile_candidate;
use super::pairs::paired_candidate;
use super::problem::{ceil_div, Machine, Problem};
use super::schedule::LONG_K_BLOCKS;
use super::tiles::{BLOCK_MS, NARROW_BLOCK_N};

/// The CTAs that share a narrow tile's doubled K loop.
const SPLITS: i64 = 2;

/// The most CTAs that share one tile's K loop.
pub(super) const MAX_SPLITS: i64 = 4;

/// The CTAs that `splits`-CTA clusters may occupy. Pairs fill
/// every SM; larger clusters must each fit the SMs of one GPC, which
/// leaves some SMs of each GPC out: [`LARGE_CLUSTER_SM_FIFTHS`] fifths of
/// the SMs held clusters of three and four in one wave where more did not
/// (measured: docs/evidence.md, selection/split_k.rs, split_capacity).
pub(super) fn split_capacity(machine: &Machine, splits: i64) -> i64 {
    if splits <= 2 {
        machine.sms
    } else {
        machine.sms * LARGE_CLUSTER_SM_FIFTHS / 5
    }
}

/// The fifths of the SMs that clusters of more than two CTAs may occupy
/// ([`split_capacity`]).
const LARGE_CLUSTER_SM_FIFTHS: i64 = 4;

/// Split-K, for `best`, the best pipelined candidate, over a long K in one
/// wave: where `prefers_warp_specialized` would run its narrow tile (at
/// most [`NARROW_BLOCK_N`] columns), a tile twice as tall (where that adds
/// no padding along M) or else twice as wide whose K loop two CTAs of a
/// cluster share, each running half the K loop in the plain pipeline and
/// summing their partial tiles in shared memory (`tile-split-k`): as many
/// CTAs, each with half the K steps and twice the work per step (more
/// splits of larger tiles ran slower than two); where its tiles fill at
/// most half the SMs, the same tile shared by the most CTAs (2 to 4) that
/// fit, each with fewer than [`LONG_K_BLOCKS`] K blocks, two to an SM where
/// that suits ([`paired_split_k`]), since such a tile leaves SMs idle.
/// Pipelined either way; the unsplit pick is ranked next. `None` where the program's tensors are chosen
/// by data or batched (a grouped or masked GEMM), where a cluster (or, to
/// grow the tile, the tile) is pinned, or where nothing fits.
pub(super) fn split_k(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    let long_k = ceil_div(problem.k, c.block_k) >= LONG_K_BLOCKS;
    if !problem.clusterable || problem.varying_k || pins.cluster.is_some_and(|along| along != Along::None) || best.waves != 1 || !long_k {
        return None;
    }
    let tile_pinned = pins.block_m.is_some() || pins.block_n.is_some();
    let ((block_m, block_n), splits) = if c.block_n <= NARROW_BLOCK_N && !tile_pinned {
        let padded_m = |block_m: i64| ceil_div(problem.m, block_m) * block_m;
        let taller = SPLITS * c.block_m;
        let grown = if BLOCK_MS.contains(&taller) && padded_m(taller) == padded_m(c.block_m) { (taller, c.block_n) } else { (c.block_m, SPLITS * c.block_n) };
        (grown, SPLITS)
    } else {
        // Each split's K loop short enough that `prefers_warp_specialized` pipelines it: a long
        // one keeps the one-consumer kernel, which beat the split
        // (measured: docs/evidence.md, selection/split_k.rs, split_k).
        let k_blocks = ceil_div(problem.k, c.block_k);
        let short = |s: i64| ceil_div(k_blocks, s) < LONG_K_BLOCKS;
        if let Some(pairs) = paired_split_k(problem, machine, pins, best, short) {
            return Some(pairs);
        }
        let fits = |s: i64| best.tiles * s <= split_capacity(machine, s) && short(s);
        let splits = (2..=MAX_SPLITS).rev().find(|&s| fits(s))?;
        ((c.block_m, c.block_n), splits)
    };
    tile_candidate(problem, machine, pins, (block_m, block_n, c.block_k), splits, SplitReduce::Cluster).filter(|split| split.last_wave <= split_capacity(machine, splits) && split.waves == 1)
}

/// Split-K in pairs: `best`, whose tiles of B serve more than one row of
/// tiles, split over the most CTAs (2 to 4) that run at once two to an SM,
/// each split's K loop `short`, where that is more CTAs than SMs: two CTAs'
/// promotions then overlap on each SM. With one row of tiles such pairs
/// lost. `None` otherwise.
fn paired_split_k(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate, short: impl Fn(i64) -> bool) -> Option<Candidate> {
    let c = best.config;
    if ceil_div(problem.m, c.block_m) < 2 {
        return None;
    }
    let fits = |s: i64| best.tiles * s > machine.sms && best.tiles * s <= 2 * split_capacity(machine, s) && short(s);
    let splits = (2..=MAX_SPLITS).rev().find(|&s| fits(s))?;
    paired_candidate(problem, machine, pins, (c.block_m, c.block_n, c.block_k), splits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::Schedule;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8, pick};

    #[test]
    fn narrow_tiles_with_a_long_k_split_k_in_two() {
        // 64x16, 64x32 and 64x32 tiles over 112 K blocks in one wave: tiles
        // twice as large, two CTAs each, pipelined; taller where M holds two
        // rows of the narrow tiles (128x2112), wider where a taller tile
        // would pad M (64 rows); the unsplit tile, warp-specialised with one
        // consumer, next.
        for ((m, n), narrow, split_tile) in [((64, 2112), 16, (64, 32)), ((128, 2112), 32, (128, 32)), ((64, 4096), 32, (64, 64))] {
            let ranked = rank(&bf16(m, n, 7168), &Machine::H100, &Pins::default());
            let (split, unsplit) = (ranked[0].config, ranked[1].config);
            assert_eq!((split.block_m, split.block_n, split.splits, split.schedule), (split_tile.0, split_tile.1, 2, Schedule::Pipeline), "{m}x{n}x7168");
            assert_eq!((unsplit.block_m, unsplit.block_n, unsplit.splits, unsplit.schedule), (64, narrow, 1, Schedule::WarpSpecialized { consumers: 1 }), "{m}x{n}x7168");
            assert_eq!(ranked[0].tiles * 2, ranked[0].sms);
        }
        let c = pick(64, 2112, 7168);
        assert!(c.reason.ends_with("; K split over 2 CTAs of a cluster (a long K in one wave of narrow or few tiles)"), "{}", c.reason);
        // The partial f32 tile counts: 8 stages of (64 + 32) * 128 bytes and
        // 8 barriers, then 64*32*4 and the 64*32*2 output tile.
        assert_eq!(c.smem_bytes, 8 * 12288 + 8192 + 4096 + 8 * 8);
        // 64-column tiles, or K under 32 blocks, keep one CTA per tile (and
        // at 128x4096x7168 take `deep_paired_rows`' schedule).
        for (m, n, k) in [(128, 4096, 7168), (64, 2112, 1024)] {
            assert_eq!(pick(m, n, k).config.splits, 1, "{m}x{n}x{k}");
        }
        // Operands chosen by data or batched (grouped, masked): never split;
        // nor with N or a cluster pinned.
        let never = |p: Problem, pins: &Pins| rank(&p, &Machine::H100, pins).iter().all(|c| c.config.splits == 1);
        assert!(never(Problem { clusterable: false, ..bf16(64, 2112, 7168) }, &Pins::default()));
        assert!(never(Problem { varying_k: true, ..bf16(64, 2112, 7168) }, &Pins::default()));
        assert!(never(bf16(64, 2112, 7168), &Pins { block_n: Some(16), ..Pins::default() }));
        assert!(never(bf16(64, 2112, 7168), &Pins { cluster: Some(Along::N), ..Pins::default() }));
    }

    #[test]
    fn few_tiles_share_their_k_loop_over_a_cluster() {
        let pins = Pins { block_n: Some(128), ..Pins::default() };
        let split = |m, n, k| {
            let pick = choose(&fp8(m, n, k), &Machine::H100, &pins).unwrap();
            let c = pick.config;
            (c.block_m, c.block_n, c.splits, c.schedule, pick.sms)
        };
        // 64x128 tiles over 56 K blocks: 17 tiles take 4 CTAs each (68);
        // 34 and 32 take 3 (102 and 96: four would pass 4/5 of the SMs);
        // 64 take 2, which pair on every SM.
        assert_eq!(split(64, 2112, 7168), (64, 128, 4, Schedule::Pipeline, 68));
        assert_eq!(split(128, 2112, 7168), (64, 128, 3, Schedule::Pipeline, 102));
        assert_eq!(split(64, 4096, 7168), (64, 128, 3, Schedule::Pipeline, 96));
        assert_eq!(split(128, 4096, 7168), (64, 128, 2, Schedule::Pipeline, 128));
        // 56 tiles over 128 K blocks: halves of 64 blocks stay long, so the
        // one-consumer kernel keeps the whole loop; 112 tiles fill the SMs.
        assert_eq!(split(64, 7168, 16384).2, 1);
        assert_eq!(split(128, 7168, 16384).2, 1);
        // The partial tile and its stages fit: 7 stages of (64 + 128) * 128
        // bytes and the staged scales, 32 KiB of partial, 16 KiB of output.
        let c = choose(&fp8(64, 2112, 7168), &Machine::H100, &pins).unwrap();
        assert_eq!(c.config.stages, 7);
        assert!(c.smem_bytes <= Machine::H100.smem_bytes);
    }
}
