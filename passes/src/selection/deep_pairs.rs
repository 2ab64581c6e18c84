//! Deep pairs: two rows of narrow tiles over a long K, in clusters, with deep
//! pipelines.

use crate::cluster::{Along, DEFAULT_CLUSTER_CTAS};
use super::candidate::{Candidate, Config, Pins, Schedule};
use super::problem::{ceil_div, Machine, Precision, Problem};
use super::schedule::warp_specialized;
use super::smem::{buffers_filled, STAGES_LIMIT};

/// Deep pairs: a BF16 pick of one wave over exactly two rows of 64-row tiles at
/// most [`DEEP_PAIR_MAX_BLOCK_N`] wide, over at least
/// [`DEEP_PAIR_K_BLOCKS`] K blocks, runs warp-specialised with one
/// consumer, its two rows of tiles in 2-CTA clusters along M (each B tile
/// loaded once for both) and the most stages that fit, up to
/// [`STAGES_LIMIT`]: B is nearly all the bytes, and a narrow tile's K steps
/// are too short for fewer stages to cover the memory's latency. cuBLAS
/// runs this shape so (`nvjet_sm90_tst_64x64_64x13_2x1`: 64x64, 13 stages,
/// 2x1 clusters). It needs all three: with fewer stages it loses, and the
/// pipeline with as many stages gains nothing; wider tiles gain nothing
/// (measured: docs/evidence.md, selection/deep_pairs.rs, deep_paired_rows
/// and DEEP_PAIR_K_BLOCKS).
pub(super) fn deep_paired_rows(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = &best.config;
    let applies = problem.precision == Precision::Bf16
        && problem.pairs_tiles()
        && !problem.varying_k
        && pins.cluster.is_none()
        && pins.stages.is_none()
        && c.schedule == Schedule::Pipeline
        && c.splits == 1
        && best.waves == 1
        && c.block_m == 64
        && ceil_div(problem.m, c.block_m) == DEFAULT_CLUSTER_CTAS
        && c.block_n <= DEEP_PAIR_MAX_BLOCK_N
        && problem.k_blocks() >= DEEP_PAIR_K_BLOCKS;
    if !applies {
        return None;
    }
    let ws = warp_specialized(problem, machine, pins, best, 1)?;
    let layout = ws.config.smem_layout();
    let stages = layout.stages_that_fit(problem, machine, STAGES_LIMIT, buffers_filled(problem, machine, ws.config.schedule, ws.config.block_k, ws.tiles, ws.config.splits))?;
    let config = Config { stages, cluster: Along::M, ..ws.config };
    Some(Candidate { config, smem_bytes: layout.smem_bytes(problem, stages), ..ws })
}

/// The widest tile that takes the deep clustered schedule.
const DEEP_PAIR_MAX_BLOCK_N: i64 = 64;

/// The fewest K blocks for it, the fewest it measured faster
/// over; half as many measured slower and between them is unmeasured
/// (measured: docs/evidence.md, selection/deep_pairs.rs, deep_paired_rows
/// and DEEP_PAIR_K_BLOCKS).
const DEEP_PAIR_K_BLOCKS: i64 = 112;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::rank::{choose, rank};
    use crate::selection::smem::MAX_STAGES;
    use crate::selection::testing::bf16;

    #[test]
    fn two_rows_of_narrow_tiles_pair_up_with_deep_pipelines() {
        // One wave of 64x64 tiles over two rows (M = 128) and 112 K
        // blocks: one consumer, pairs along M sharing B, the most stages that
        // fit (13 of 16: 14 do not). The pipelined tile follows.
        let ranked = rank(&bf16(128, 4096, 7168), &Machine::H100, &Pins::default());
        let deep = &ranked[0];
        assert_eq!((deep.config.schedule, deep.config.cluster, deep.config.stages), (Schedule::WarpSpecialized { consumers: 1 }, Along::M, 13));
        assert!(deep.reason.contains("policy `deep_paired_rows`"), "{}", deep.reason);
        assert_eq!((ranked[1].config.schedule, ranked[1].config.stages), (Schedule::Pipeline, 8));
        // Not for wider tiles (64x112), one row of tiles (M = 64), 64 K
        // blocks, data-chosen operands, or pinned stages or clusters.
        for (p, pins) in [
            (bf16(128, 7168, 16384), Pins::default()),
            (bf16(64, 4096, 7168), Pins::default()),
            (bf16(128, 4096, 4096), Pins::default()),
            (Problem { clusterable: false, ..bf16(128, 4096, 7168) }, Pins::default()),
            (bf16(128, 4096, 7168), Pins { stages: Some(8), ..Pins::default() }),
            (bf16(128, 4096, 7168), Pins { cluster: Some(Along::None), ..Pins::default() }),
        ] {
            let c = choose(&p, &Machine::H100, &pins).unwrap().config;
            let deep = c.schedule == Schedule::WarpSpecialized { consumers: 1 } && c.cluster == Along::M && c.stages > MAX_STAGES;
            assert!(!deep, "{}x{}x{} {pins}", p.m, p.n, p.k);
        }
    }
}
