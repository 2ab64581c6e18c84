//! The K loop's schedule: the plain pipeline, or warp specialisation with one
//! or two consumers.

use super::candidate::{Candidate, Epilogue, Pins, Schedule};
use super::epilogue::epilogue_for;
use super::epilogue_forms::chunked_epilogue;
use super::forms::{rescheduled, tile_candidate};
use super::tiles::weighs_row_blocks;
use super::problem::{Machine, Precision, Problem};
use super::swap::consumer_holds_swapped_scales;
use super::tall_tiles::prefers_tall_shared_tiles;
use super::tiles::NARROW_BLOCK_N;

/// Whether the warp-specialised form of `best` is the pick rather than an
/// alternative. In general it is an alternative (one or two consumers,
/// persistent, grouped tile order): with the same tile it measured below
/// the plain pipeline. The exceptions, with the same K loop for every tile
/// or at most [`FEW_WAVES`] waves of tiles: over at least 32 blocks of K, block-scaled
/// FP8 or a tile at most 32 columns wide; over more than
/// [`PERSISTENT_WAVES`] waves (from two with a tile of at least 128 rows),
/// block-scaled FP8, and BF16 where the warp-specialised `alternative` has
/// two consumers sharing each tile and a TMA-store epilogue, at any K (they
/// wait with no wgmma group in flight, which runs each stage's loads an
/// iteration further ahead; over one wave, or with direct stores whose
/// epilogue the consumers wait for, that gains nothing
/// (measured: docs/evidence.md, selection/schedule.rs, prefers_warp_specialized)),
/// and over more than [`PERSISTENT_WAVES`] waves BF16 with at most
/// [`BF16_PERSISTENT_K_BLOCKS`] K blocks, or
/// [`BF16_CHUNKED_PERSISTENT_K_BLOCKS`] with the extra stage of a chunked
/// epilogue ([`chunked_epilogue`]).
///
/// Why each gains: block-scaled FP8 waits for each block's wgmma before
/// promoting it, and a second, independent consumer keeps the tensor cores
/// busy meanwhile; over many waves the persistent producer hides each
/// tile's prologue behind the last one's work (over one or two there is
/// too little to hide); a short BF16 K loop's TMA-store epilogue overlaps
/// the next tile's main loop, while a longer one's pipelined tiles
/// amortise their prologue and epilogue themselves; and a tile at most
/// [`NARROW_BLOCK_N`] wide has K steps whose wgmma (64x16 or 64x32) is too
/// short for one warpgroup that both waits on it and issues the next loads,
/// so a dedicated producer hides the issue. A K loop whose trip count is
/// data (a masked grouped GEMM) over more than [`FEW_WAVES`] waves keeps
/// the pipeline: a persistent CTA's static share of many tiles then holds
/// data-dependent work, which the tiles grid balances in hardware.
pub(super) fn prefers_warp_specialized(problem: &Problem, best: &Candidate, alternative: Option<&Candidate>) -> bool {
    let k_blocks = problem.k_blocks();
    let fp8 = problem.precision == Precision::Fp8BlockScaled;
    let balanced = !problem.varying_k || best.waves <= FEW_WAVES;
    let long_k = k_blocks >= LONG_K_BLOCKS && (fp8 || best.config.block_n <= NARROW_BLOCK_N);
    // Over exactly two waves only a tile two consumers split gains (a
    // one-consumer 64-row tile has no neighbour to overlap).
    let two_consumer_waves = if best.config.block_m >= 128 { PERSISTENT_WAVES - 1 } else { PERSISTENT_WAVES };
    let many_fp8_tiles = fp8 && best.waves > two_consumer_waves;
    let chunked = alternative.is_some_and(|c| c.config.epilogue_chunk().is_some());
    let two_consumers_storing_by_tma = alternative.is_some_and(|c| c.config.schedule == Schedule::WarpSpecialized { consumers: 2 } && matches!(c.config.epilogue, Epilogue::Tma { .. }));
    let short_bf16_k_blocks = if chunked { BF16_CHUNKED_PERSISTENT_K_BLOCKS } else { BF16_PERSISTENT_K_BLOCKS };
    let shared_bf16_tiles = !fp8 && two_consumers_storing_by_tma && best.waves > two_consumer_waves;
    let many_short_bf16_tiles = !fp8 && k_blocks <= short_bf16_k_blocks && best.waves > PERSISTENT_WAVES;
    balanced && (long_k || many_fp8_tiles || shared_bf16_tiles || many_short_bf16_tiles)
}

/// The waves of tiles to exceed for the persistent
/// warp-specialised kernel to hide each tile's prologue and epilogue
/// behind its neighbours' work.
pub(super) const PERSISTENT_WAVES: i64 = 2;

/// The most K blocks at which the persistent warp-specialised
/// kernel with a TMA-store epilogue overtakes the pipeline for BF16 over
/// many waves (with a longer K the pipeline's tiles amortise their
/// prologue and epilogue themselves).
pub(super) const BF16_PERSISTENT_K_BLOCKS: i64 = 32;

/// The same with the warp-specialised kernel's extra stage from a
/// chunked epilogue ([`chunked_epilogue`]), for a tile two consumers do not share: the
/// stage gains over a moderate K and is worth less than the pipeline's own
/// amortisation over a longer one; two consumers keep no wgmma group in
/// flight and take any K
/// (measured: docs/evidence.md, selection/schedule.rs, BF16_CHUNKED_PERSISTENT_K_BLOCKS).
const BF16_CHUNKED_PERSISTENT_K_BLOCKS: i64 = 64;

/// The most waves of tiles whose K loops are data (a masked grouped
/// GEMM) that a persistent CTA's static share still balances.
const FEW_WAVES: i64 = 4;

/// The fewest K blocks that make a long K (for warp specialisation and
/// split-K).
pub(super) const LONG_K_BLOCKS: i64 = 32;

/// The tile two consumers split, the pick's; for block-scaled FP8
/// over more than two waves, a pick of 64 rows grows to 128 (where M has
/// them), so that each of two consumers promotes beside the other's wgmma
/// (measured: docs/evidence.md, selection/schedule.rs, two_consumer_tile).
///
/// Tall shared tiles ([`prefers_tall_shared_tiles`]): a BF16 128x256 pick
/// over at least `TALL_SHARED_WAVES` waves is shared as 256x128 (each consumer 128x128) where that tile takes as
/// many waves.
pub(super) fn two_consumer_tile(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    let tall = (c.block_m, c.block_n) == (128, 256) && prefers_tall_shared_tiles(problem, pins, best.waves);
    if let Some(turned) = tall.then(|| tile_candidate(problem, machine, pins, (256, 128, c.block_k), c.splits, c.split_reduce)).flatten().filter(|t| t.waves == best.waves) {
        return Some(turned);
    }
    let grow = problem.precision == Precision::Fp8BlockScaled && best.waves > PERSISTENT_WAVES && c.block_m == 64 && problem.m >= 128 && pins.block_m.is_none();
    if !grow {
        return Some(best.clone());
    }
    tile_candidate(problem, machine, pins, (128, c.block_n, c.block_k), c.splits, c.split_reduce)
}

/// The warp-specialised alternative: the best tile split over `consumers` warpgroups fed
/// by a producer, persistent over the fewest SMs that keep the waves.
pub(super) fn warp_specialized(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate, consumers: i64) -> Option<Candidate> {
    let c = best.config;
    // Each consumer owns BM / consumers rows, at least one m64 wgmma, and
    // accumulators that fit its registers (a lone consumer's as light as
    // a lone warpgroup's in the plain pipeline).
    let rows = c.block_m / consumers;
    let registers = problem.precision.accumulator_registers(rows, c.block_n, 1);
    let fits = if consumers == 1 { registers.fit_alone() } else { registers.fit_shared() && weighs_row_blocks(pins, registers) } && consumer_holds_swapped_scales(problem, rows, c.block_n);
    if c.block_m % (64 * consumers) != 0 || !fits {
        return None;
    }
    let schedule = Schedule::WarpSpecialized { consumers };
    let specialised = rescheduled(problem, machine, pins, best, schedule, 4 * (consumers + 1), epilogue_for(problem, c.block_n, schedule))?;
    let specialised = chunked_epilogue(problem, machine, pins, specialised);
    Some(specialised).filter(|s| s.config.stages >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Along;
    use crate::selection::candidate::{Config, Scales};
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8, GLOBAL, pick, TMA};

    #[test]
    fn bf16_over_many_waves_is_warp_specialized_with_tma_stores() {
        let pick_of = |m, n, k| pick(m, n, k).config;
        // At most 32 K blocks over more than 2 waves: persistent, the
        // TMA-store epilogue, and pairs in clusters (`prefers_clusters`);
        // the same kernel without clusters ranks second. Over 8, 12 and 32
        // blocks (7 waves or more), 256x128 over two consumers (`prefers_tall_shared_tiles`)
        // with 4 stages, its output stored 64 columns at a time (`chunked_epilogue`:
        // 4*(384*64*2) + 2*128*64*2 + 8 mbarriers = 229440 bytes), paired
        // along N to multicast A's 256 rows.
        for (n, k) in [(24576, 1536), (7168, 2048), (32768, 512)] {
            let c = pick_of(4096, n, k);
            let got = ((c.block_m, c.block_n), c.schedule, c.epilogue.word(), c.epilogue_chunk(), c.stages, c.cluster);
            assert_eq!(got, ((256, 128), Schedule::WarpSpecialized { consumers: 2 }, TMA, Some(64), 4, Along::N), "4096x{n}x{k}");
            let problem = bf16(4096, n, k);
            let second = &rank(&problem, &Machine::H100, &Pins::default())[1];
            assert_eq!(second.config, Config { cluster: Along::None, ..c });
        }
        // A longer K over more than 2 waves is warp-specialised too where
        // two consumers share the tile (with a stage more from the chunks),
        // without clusters past 32 blocks: 64, 112 and 256 K blocks; the
        // 128x256 tile itself over 4 waves, 256x128 over 7 (`prefers_tall_shared_tiles`),
        // all three stored 64 columns a K step of the next tile
        // (`deferred_epilogue`).
        for (n, k, tile, chunk) in [(4096, 4096, (128, 256), 64), (4096, 7168, (128, 256), 64), (7168, 16384, (256, 128), 64)] {
            let c = pick_of(4096, n, k);
            let got = ((c.block_m, c.block_n), c.schedule, c.stages, c.epilogue_chunk(), c.cluster);
            assert_eq!(got, (tile, Schedule::WarpSpecialized { consumers: 2 }, 4, Some(chunk), Along::None), "4096x{n}x{k}");
        }
        // So is 128x176, whose whole output tile leaves room for 4 stages.
        let narrow = pick_of(4096, 2112, 7168);
        assert_eq!((narrow.block_n, narrow.schedule, narrow.stages, narrow.epilogue_chunk()), (176, Schedule::WarpSpecialized { consumers: 2 }, 4, None));
        // Two waves too; one keeps the pipeline.
        assert_eq!(pick_of(2048, 4096, 7168).schedule, Schedule::WarpSpecialized { consumers: 2 });
        assert_eq!(pick_of(128, 24576, 1536).schedule, Schedule::Pipeline);
        // C rows that TMA cannot store (N * 2 bytes not a multiple of 16)
        // take direct stores in the warp-specialised tile too.
        assert_eq!(pick_of(4096, 24572, 1536).epilogue.word(), GLOBAL);
    }

    #[test]
    fn pins_restrict_the_choice() {
        let square = fp8(4096, 4096, 4096);
        // FP8 with B's scales per 128x128 block: the program pins BN = 128.
        // 256x128 would hold 2 * 256 * 128 accumulators (the result and the
        // block being promoted), over two warpgroups' registers; 128x128
        // takes 8 warps. Per stage 256*128 bytes of operands + 8 = 32776;
        // 6*32776 + 32768 = 229424 fits, 7 stages do not.
        // With K = 4096 (32 scale blocks) the warp-specialised tile is the pick
        // (`prefers_warp_specialized`): two consumers, the output tile
        // (`epilogue_for`) and its scales staged (`stages_and_scales`): 5 stages of 32776 + 516 bytes and
        // 32768 for the output (6 would need 232520). With K = 2048 (16
        // blocks) or 512 (4) over 8 or more waves it is too, and so it is
        // over 2 waves (M = 128). One scale block wide it takes no clusters
        // (`prefers_clusters`), ranking the clustered kernel next.
        let c = choose(&square, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() }).unwrap();
        assert_eq!((c.config.block_m, c.config.block_n, c.config.block_k, c.config.stages), (128, 128, 128, 5));
        assert_eq!((c.config.schedule, c.config.scales, c.config.cluster), (Schedule::WarpSpecialized { consumers: 2 }, Scales::Staged, Along::None));
        let ranked = rank(&square, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() });
        assert_eq!(ranked[1].config, Config { cluster: Along::M, ..c.config });
        assert_eq!(ranked[1].reason, "the pick in 2-CTA clusters along m, multicasting B");
        assert!(ranked[2].reason.starts_with("pipelined alternative of the pick's tile"));
        let pick = |p: Problem| choose(&p, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() }).unwrap();
        let shorter = pick(Problem { k: 2048, ..square });
        assert_eq!((shorter.config.schedule, shorter.waves), (Schedule::WarpSpecialized { consumers: 2 }, 8));
        // A short K over many tiles: 128x128 over two consumers too
        // (`prefers_warp_specialized`), rather than the 64x128 pipeline two to an SM that ranks first
        // by `with_waves`, with 5 stages for 4 K blocks: over 8 waves the producer
        // fills the fifth with the next tile's first K block (`buffers_filled`).
        let shortest = pick(Problem { k: 512, ..square });
        assert_eq!((shortest.config.block_m, shortest.config.schedule, shortest.config.stages, shortest.config.scales), (128, Schedule::WarpSpecialized { consumers: 2 }, 5, Scales::Staged));
        // Two waves of 128x128 go to two consumers as well, and with 4 K
        // blocks stay there, with as many stages as K blocks (a CTA's two
        // tiles leave little to run ahead into); with 12 (M = 128) the
        // ping-pong consumers take 64-row tiles in turn. 64x128 (M = 64),
        // whose warp-specialised form has one consumer, keeps the pipeline,
        // two CTAs to an SM in one wave (`one_wave_of_pairs`).
        let two_waves = pick(Problem { m: 128, n: 32768, k: 512, ..square });
        assert_eq!((two_waves.config.schedule, two_waves.waves, two_waves.config.stages), (Schedule::WarpSpecialized { consumers: 2 }, 2, 4));
        let few_tiles = pick(Problem { m: 128, n: 24576, k: 1536, ..square });
        assert_eq!((few_tiles.config.block_m, few_tiles.config.schedule), (64, Schedule::PingPong));
        // Over one wave a CTA has one tile: one consumer, not ping-pong.
        let one_wave = pick(Problem { m: 128, n: 7168, k: 16384, ..square });
        assert_eq!((one_wave.config.block_m, one_wave.config.schedule, one_wave.waves), (64, Schedule::WarpSpecialized { consumers: 1 }, 1));
        let few_short_tiles = pick(Problem { m: 64, n: 32768, k: 512, ..square });
        assert_eq!((few_short_tiles.config.block_m, few_short_tiles.config.schedule, few_short_tiles.waves), (64, Schedule::Pipeline, 1));
        // A K loop whose trip count is data over more than four waves (8
        // here) keeps the pipeline (its scales staged at the cost of one of
        // 6 stages, `stages_and_scales`), and ranks the warp-specialised tile second;
        // over four waves (8 experts of 256 rows) it is warp-specialised.
        let masked = rank(&Problem { varying_k: true, clusterable: false, ..square }, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() });
        assert_eq!((masked[0].config.schedule, masked[0].config.stages, masked[0].config.scales, masked[0].waves), (Schedule::Pipeline, 5, Scales::Staged, 8));
        assert_eq!(masked[1].config.schedule, Schedule::WarpSpecialized { consumers: 2 });
        let few = choose(&Problem { m: 2048, k: 7168, varying_k: true, clusterable: false, ..square }, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() }).unwrap();
        assert_eq!((few.config.schedule, few.waves), (Schedule::WarpSpecialized { consumers: 2 }, 4));
        let c = choose(&Problem { precision: Precision::Bf16, ..square }, &Machine::H100, &Pins { block_n: Some(192), stages: Some(2), ..Pins::default() }).unwrap();
        assert_eq!((c.config.block_n, c.config.stages), (192, 2));
    }
}
