//! The configurations the cost model weighs besides the ranked ones.

use crate::cluster::Along;
use super::candidate::{Candidate, Config, PieceOrder, Pins, Schedule, SplitReduce};
use super::column_halves::{COLUMN_HALF_HANDOVER_REGISTERS, column_halves_candidates, COLUMN_HALVES_TILES};
use super::deferred_epilogue::takes_deferred_epilogue;
use super::epilogue_forms::direct_stores;
use super::epilogue::epilogue_for;
use super::forms::{rescheduled, tile_candidate};
use super::problem::{ceil_div, Machine, Precision, Problem};
use super::rank::rank;
use super::raster::raster_group_for;
use super::scale_widths::spans_few_scale_blocks;
use super::schedule::warp_specialized;
use super::split_k::split_capacity;
use super::stream_k::{takes_stream_k, STREAM_K_SPILLING_BLOCK_NS};
use super::tiles::{BLOCK_MS, BLOCK_N_STEP, every_block_n, holds_whole_groups, promotes_by_row_blocks};
use tilec_dialects::tile::dot::blocks_from_grid_offsets;
use tilec_dialects::tile::reduce::{MAX_SPLITS as SUM_SPLITS, MAX_WORKSPACE_SPLITS};

/// The configurations the cost model weighs besides [`rank`]'s, which the
/// passes apply to any tile: for a block-scaled program whose B scales
/// come in a fixed number of rows, [`rank`]'s forms of every other width
/// those rows serve; each tile's K loop split over 2 to
/// 8 CTAs of a cluster (as many as `tile.sum_splits` adds up)
/// where they run in one wave; split over 2 to 64 CTAs (`workspace_splits`) that
/// add their partial tiles through a global workspace, where there are
/// fewer tiles than SMs and the CTAs run in at most
/// `WORKSPACE_SPLIT_MAX_WAVES` waves, and where they are no more than the
/// SMs, the same adding them in shares; and, for one BF16
/// GEMM, each 128-row tile
/// over two consumers with its last wave's tiles shared by K iterations
/// over every SM (stream-K), which spreads a K loop over more CTAs than
/// there are tiles; for a program with an epilogue, every tile one
/// warpgroup holds under ping-pong consumers, which hide one tile's
/// epilogue behind the other's K loop; and for one whose epilogue works on
/// the converted tile, each of these the deferred epilogue takes, deferred
/// (`takes_deferred_epilogue`). Those already in `ranked` are left out, and so are the
/// stream-K widths whose consumers spill (128x208 and 128x240).
pub fn alternatives(problem: &Problem, machine: &Machine, pins: &Pins, ranked: &[Candidate]) -> Vec<Candidate> {
    let bk = pins.block_k.unwrap_or(problem.precision.block_k());
    let k_blocks = ceil_div(problem.k, bk);
    let block_ms: Vec<i64> = pins.block_m.map_or(BLOCK_MS.to_vec(), |m| vec![m]);
    let block_ns: Vec<i64> = pins.block_n.map_or_else(every_block_n, |n| vec![n]);
    // A program whose B scales come in a fixed number of rows takes the
    // widths whose tiles find their scales in those rows, at any offset
    // into a scale block their grid starts them at.
    let block_ns: Vec<i64> = match problem.b_scale_rows {
        Some(rows) => block_ns.into_iter().filter(|&bn| blocks_from_grid_offsets(bn) <= rows && spans_few_scale_blocks(bn, k_blocks)).collect(),
        None => block_ns,
    };
    let mut shapes: Vec<(i64, i64, i64)> = block_ms.iter().flat_map(|&bm| block_ns.iter().map(move |&bn| (bm, bn, bk))).collect();
    shapes.retain(|&(_, bn, _)| holds_whole_groups(problem, bn));
    let tiles = || shapes.iter().copied();
    let unclustered = pins.cluster.is_none_or(|along| along == Along::None);
    let mut found = Vec::new();
    // The ranking takes one width for such a program
    // (`block_n_across_scale_blocks`); every other width is weighed in
    // the forms the policies give it when pinned.
    if problem.b_scale_rows.is_some() && pins.block_n.is_none() {
        for &bn in block_ns.iter().filter(|&&bn| ranked.iter().all(|c| c.config.block_n != bn) && holds_whole_groups(problem, bn)) {
            found.extend(rank(problem, machine, &Pins { block_n: Some(bn), ..*pins }));
        }
    }
    if problem.clusterable && !problem.varying_k && pins.cluster.is_none() {
        for splits in 2..=SUM_SPLITS {
            found.extend(
                tiles()
                    .filter(|_| k_blocks >= 2 * splits)
                    .filter_map(|tile| tile_candidate(problem, machine, pins, tile, splits, SplitReduce::Cluster))
                    .filter(|c| c.waves == 1 && c.tiles * splits <= split_capacity(machine, splits)),
            );
        }
    }
    // The workspace split counts a tile takes: none where its tiles fill
    // the SMs, none that leave a split too few K blocks.
    let split_counts = |(bm, bn, _): (i64, i64, i64)| {
        let grid_tiles = ceil_div(problem.m, bm) * ceil_div(problem.n, bn);
        let counts = if grid_tiles < machine.sms { workspace_splits(grid_tiles, machine) } else { Vec::new() };
        counts.into_iter().filter(|&s| k_blocks >= MIN_K_BLOCKS_PER_SPLIT * s).collect::<Vec<i64>>()
    };
    if problem.clusterable && !problem.varying_k && unclustered {
        let split: Vec<Candidate> = tiles()
            .flat_map(|tile| split_counts(tile).into_iter().map(move |splits| (tile, splits)))
            .filter_map(|(tile, splits)| tile_candidate(problem, machine, pins, tile, splits, SplitReduce::Workspace))
            .collect();
        // The same splits under a producer warpgroup and one or two
        // consumers, one CTA for each split of each tile; not beside a
        // program's epilogue, whose registers are not weighed: with
        // the reduction's they spilled (docs/cost-model.md).
        let specialised: Vec<Candidate> = split
            .iter()
            .filter(|_| problem.epilogue.is_plain())
            .flat_map(|c| [1, 2].map(|consumers| warp_specialized(problem, machine, pins, c, consumers)))
            .flatten()
            .map(|c| Candidate { sms: machine.sms, ..c })
            .collect();
        found.extend(split.into_iter().chain(specialised).filter(|c| c.waves <= WORKSPACE_SPLIT_MAX_WAVES));
    }
    if problem.precision == Precision::Bf16 && takes_stream_k(problem) && unclustered {
        for tile in tiles().filter(|&(bm, bn, _)| bm == 128 && !STREAM_K_SPILLING_BLOCK_NS.contains(&bn)) {
            let Some(ws) = tile_candidate(problem, machine, pins, tile, 1, SplitReduce::Cluster).and_then(|c| warp_specialized(problem, machine, pins, &c, 2)) else {
                continue;
            };
            if ws.tiles % machine.sms == 0 {
                continue;
            }
            found.push(Candidate { config: Config { stream_k: Some(PieceOrder::InOrder), ..ws.config }, sms: machine.sms, ..ws });
        }
    }
    // An epilogue's element-wise work idles the tensor cores of every
    // schedule but ping-pong, whose consumers run one tile's epilogue beside
    // the other's K loop: every tile one warpgroup holds, in that form.
    if !problem.epilogue.is_plain() && !problem.varying_k && !problem.a_in_registers && unclustered {
        let fits_one_warpgroup = |&(bm, bn, _): &(i64, i64, i64)| bm % 64 == 0 && problem.precision.accumulator_registers(bm, bn, 1).fit_alone();
        for tile in tiles().filter(fits_one_warpgroup) {
            let Some(plain) = tile_candidate(problem, machine, pins, tile, 1, SplitReduce::Cluster) else { continue };
            let epilogue = epilogue_for(problem, tile.1, Schedule::PingPong);
            found.extend(rescheduled(problem, machine, pins, &plain, Schedule::PingPong, 12, epilogue).filter(|p| p.config.stages >= 2));
        }
    }
    // Two consumers sharing each tile's columns, where the kernel lets
    // them (`tile-warp-specialize`'s halves=columns): a BF16 dot with B
    // given N x K and no reduction over a row's columns in the epilogue;
    // persistent, and, as the tiles that share rows, with the last wave
    // shared by K iterations for one GEMM, and split through the
    // workspace where the tiles are fewer than the SMs.
    let shares_columns = problem.precision == Precision::Bf16 && problem.transpose_b && problem.column_group.is_none() && !problem.a_in_registers;
    if shares_columns && unclustered {
        let column_halves: Vec<(i64, i64, i64)> = COLUMN_HALVES_TILES
            .iter()
            .flat_map(|(bm, bns)| bns.clone().step_by(BLOCK_N_STEP as usize).map(move |bn| (*bm, bn, bk)))
            .filter(|&(bm, bn, _)| pins.block_m.is_none_or(|m| m == bm) && pins.block_n.is_none_or(|n| n == bn))
            .collect();
        for &tile in &column_halves {
            let persistent = column_halves_candidates(problem, machine, pins, tile, 1);
            // A split's or a stream-K piece's hand-over holds partial sums
            // beside the accumulators.
            if problem.precision.accumulator_registers(tile.0, tile.1 / 2, 1).running > COLUMN_HALF_HANDOVER_REGISTERS {
                found.extend(persistent);
                continue;
            }
            if takes_stream_k(problem) {
                let stream_k = persistent.iter().filter(|c| c.tiles % machine.sms != 0);
                found.extend(stream_k.map(|c| Candidate { config: Config { stream_k: Some(PieceOrder::InOrder), ..c.config }, sms: machine.sms, ..c.clone() }).collect::<Vec<_>>());
            }
            found.extend(persistent);
            let splittable = problem.clusterable && !problem.varying_k && problem.epilogue.is_plain();
            for splits in split_counts(tile).into_iter().filter(|_| splittable) {
                found.extend(column_halves_candidates(problem, machine, pins, tile, splits).into_iter().filter(|c| c.waves <= WORKSPACE_SPLIT_MAX_WAVES));
            }
        }
    }
    // A workspace split of no more CTAs than the SMs is resident at once,
    // so its splits may wait for each other and add the partial tiles in
    // shares.
    let spread: Vec<Candidate> = found
        .iter()
        .filter(|c| c.config.split_reduce == SplitReduce::Workspace && c.tiles * c.config.splits <= machine.sms)
        .map(|c| Candidate { config: Config { split_reduce: SplitReduce::Spread, ..c.config }, ..c.clone() })
        .collect();
    // Each of them also with direct stores, where each split then stores
    // its own share of the output instead of the last reading the summed
    // tile back; not where A comes into registers, nor for block-scaled
    // FP8 whose A scales are stored K-major (ptxas spilled 12 bytes in
    // both, docs/evidence.md), nor for consumers sharing a tile's columns
    // (unmeasured; their direct stores split in two spill, column_halves.rs).
    let shares_stored: Vec<Candidate> = spread
        .iter()
        .filter(|c| c.config.schedule != Schedule::ColumnHalves && !problem.a_in_registers && (problem.precision == Precision::Bf16 || problem.a_scales_by_run))
        .filter_map(|c| direct_stores(problem, machine, pins, c))
        .filter(|c| c.config.stores_shares(problem))
        .collect();
    found.extend(spread);
    found.extend(shares_stored);
    // An epilogue that works on the converted tile (an FP8 quantisation's
    // absmax, scaling and codes) has that work, not only its stores, moved
    // beside the next tile's K loop by the deferred epilogue: each form
    // weighed so far that `tile-defer-epilogue` takes, deferred.
    if problem.epilogue.defers_work() {
        let deferred: Vec<Candidate> = ranked
            .iter()
            .chain(&found)
            .filter(|c| takes_deferred_epilogue(problem, &c.config))
            .map(|c| Candidate { config: Config { deferred_epilogue: true, ..c.config }, ..c.clone() })
            .collect();
        found.extend(deferred);
    }
    let mut fresh: Vec<Candidate> = Vec::new();
    // Block-scaled tiles promoted an m64 block of rows at a time, which
    // the policies rank only behind the others and the model predicts
    // faster than they run (docs/cost-model.md), are no alternative unless
    // block M is pinned.
    found.retain(|c| pins.block_m.is_some() || !promotes_by_row_blocks(&c.config));
    found.retain(|c| !c.config.split_reduce.through_workspace() || split_stores_fit_registers(problem, &c.config));
    for mut c in found {
        c.config.raster_group = raster_group_for(problem, machine, &c);
        if ranked.iter().chain(&fresh).all(|r| r.config != c.config) {
            c.reason = "an alternative the rules do not rank: weighed by the cost model".to_string();
            fresh.push(c);
        }
    }
    fresh
}

/// The most accumulator registers a consumer thread of a kernel that adds
/// its splits through the workspace holds where it stores a column-major
/// output (a swapped GEMM's), which stores each value on its own: ptxas
/// assembled 104 (128x208 over two consumers) without spills and spilled
/// 12 bytes at 112 (128x224 over two), 120 (192x160 over two sharing its
/// columns) and 128 (128x128 over one) (measured: docs/evidence.md,
/// selection/alternatives.rs, workspace splits that store C).
const COLUMN_MAJOR_SPLIT_REGISTERS: i64 = 104;

/// Whether a workspace split's consumers store the output without
/// spilling: into a column-major output, with few enough accumulators
/// ([`COLUMN_MAJOR_SPLIT_REGISTERS`]); into a row-major one, unless
/// consumers that share each tile's columns store their shares themselves
/// (192x160 spilled 12 bytes; the same section).
fn split_stores_fit_registers(problem: &Problem, c: &Config) -> bool {
    let running = problem.precision.accumulator_registers(c.block_m, c.block_n, c.tile_warpgroups()).running;
    if problem.output_column_major {
        running <= COLUMN_MAJOR_SPLIT_REGISTERS
    } else if c.stores_shares(problem) && c.schedule == (Schedule::WarpSpecialized { consumers: 2 }) {
        !two_consumer_shares_spill(c, running)
    } else {
        !(c.schedule == Schedule::ColumnHalves && c.stores_shares(problem))
    }
}

/// Where two consumers sharing a tile's rows, each split storing its share
/// of a row-major output, spilled under ptxas: 128x224 tiles split three
/// ways or more (112 accumulator registers a thread; 256x112, as many, did
/// not) and tiles of 128 registers a thread split in two (128x256 and
/// 256x128; split three to sixteen ways they did not) (measured:
/// docs/evidence.md, selection/alternatives.rs, workspace splits that
/// store C).
fn two_consumer_shares_spill(c: &Config, running: i64) -> bool {
    (c.block_m == 128 && c.block_n == SHARES_SPILLING_BLOCK_N && c.splits > 2) || (running >= SHARES_SPILLING_REGISTERS && c.splits == 2)
}

/// The width whose 128-row tiles' shares spilled split three ways or more
/// ([`two_consumer_shares_spill`]).
const SHARES_SPILLING_BLOCK_N: i64 = 224;

/// The accumulator registers a thread at which shares split in two
/// spilled ([`two_consumer_shares_spill`]).
const SHARES_SPILLING_REGISTERS: i64 = 128;

/// The split counts weighed for every tile count, for a K loop shared
/// through a global workspace: steps that grow by about half, up to the
/// most `tile.reduce_splits` adds.
const WORKSPACE_SPLITS: [i64; 11] = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];

/// The split counts weighed for `tiles` tiles: [`WORKSPACE_SPLITS`], and
/// for each number of waves up to [`WORKSPACE_SPLIT_MAX_WAVES`] the most
/// splits whose CTAs fit that many waves of one CTA an SM. A fixed list
/// leaves waves part empty: 75 tiles split in six take 3.4 waves, in
/// seven 3.98, each CTA with a seventh of the K loop; of the counts that
/// take the same waves the most finish first, and the model weighs their
/// extra partial tiles against that.
fn workspace_splits(tiles: i64, machine: &Machine) -> Vec<i64> {
    let filling = (1..=WORKSPACE_SPLIT_MAX_WAVES).map(|waves| waves * machine.sms / tiles.max(1));
    let mut counts: Vec<i64> = WORKSPACE_SPLITS.into_iter().chain(filling).filter(|s| (2..=MAX_WORKSPACE_SPLITS).contains(s)).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The most waves a workspace split's CTAs may take. Splits past one wave
/// can still fill the SMs better: 48 tiles over 132 SMs fill 73% of one
/// wave, split in eight they fill 91% of the third. The cost model weighs
/// that against the extra partial tiles through L2; past a few waves each
/// split's K range is short and its pipeline mostly fill and drain.
const WORKSPACE_SPLIT_MAX_WAVES: i64 = 4;

/// The fewest K blocks a workspace split runs: fewer leave its pipeline
/// mostly fill and drain, and its partial tile's trip through L2 costs
/// more than the K steps it takes off the others.
const MIN_K_BLOCKS_PER_SPLIT: i64 = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost_model::epilogue::EpilogueWork;
    use crate::selection::smem::SmemLayout;
    use crate::selection::split_k::MAX_SPLITS;
    use crate::selection::Epilogue;
    use crate::selection::testing::{bf16, fp8};
    use tilec_target::Target;

    /// A swapped GEMM's workspace splits store C column-major: only those
    /// whose consumers hold few enough accumulators are weighed (the
    /// 128x208 twins stay, 128x224 does not). Into a row-major output,
    /// consumers sharing each tile's columns store no shares themselves.
    #[test]
    fn workspace_splits_store_without_spilling() {
        let row_major = bf16(1502, 296, 22864);
        let ranked = rank(&row_major, &Machine::H100, &Pins::default());
        let found = alternatives(&row_major, &Machine::H100, &Pins::default(), &ranked);
        assert!(found.iter().any(|c| c.config.schedule == Schedule::ColumnHalves && c.config.split_reduce == SplitReduce::Spread));
        assert!(!found.iter().any(|c| c.config.schedule == Schedule::ColumnHalves && c.config.stores_shares(&row_major)));
        let p = bf16(197, 1024, 63360).swapped();
        let ranked = rank(&p, &Machine::H100, &Pins::default());
        let found = alternatives(&p, &Machine::H100, &Pins::default(), &ranked);
        let splits: Vec<&Candidate> = found.iter().filter(|c| c.config.split_reduce.through_workspace()).collect();
        assert!(splits.iter().any(|c| (c.config.block_m, c.config.block_n, c.config.split_reduce) == (128, 208, SplitReduce::Spread)));
        assert!(splits.iter().all(|c| split_stores_fit_registers(&p, &c.config)));
        let two_consumers = |bn| Config { schedule: Schedule::WarpSpecialized { consumers: 2 }, ..Config::neutral((128, bn, 64)) };
        assert!(split_stores_fit_registers(&p, &two_consumers(208)) && !split_stores_fit_registers(&p, &two_consumers(224)));
        // Two consumers storing their shares of a row-major tile: 128x224
        // split past two ways and 128 registers split in two spilled.
        let q = bf16(227, 3456, 35072);
        let shares = |bm, bn, splits| Config { epilogue: Epilogue::Global, splits, split_reduce: SplitReduce::Spread, ..Config { block_m: bm, ..two_consumers(bn) } };
        assert!(shares(128, 224, 4).stores_shares(&q));
        for (bm, bn, splits, fits) in [(128, 224, 2, true), (128, 224, 3, false), (128, 224, 8, false), (256, 112, 4, true), (128, 256, 2, false), (256, 128, 2, false), (128, 256, 3, true), (128, 240, 2, true)] {
            assert_eq!(split_stores_fit_registers(&q, &shares(bm, bn, splits)), fits, "{bm}x{bn} split {splits}");
        }
        let ranked = rank(&q, &Machine::H100, &Pins::default());
        assert!(alternatives(&q, &Machine::H100, &Pins::default(), &ranked).iter().all(|c| split_stores_fit_registers(&q, &c.config)));
    }

    #[test]
    fn an_epilogue_brings_ping_pong_alternatives() {
        let machine = Machine::of(&Target::H200);
        let gelu = crate::cost_model::epilogue::EpilogueWork { lane_ops: 6, sfu_ops: 1, ..Default::default() };
        for (m, n, k) in [(4096, 4096, 4096), (4096, 32768, 512), (1000, 1000, 1000)] {
            let plain = bf16(m, n, k);
            let fused = Problem { epilogue: gelu, ..plain };
            let ping_pong = |p: &Problem| {
                let ranked = rank(p, &machine, &Pins::default());
                alternatives(p, &machine, &Pins::default(), &ranked).into_iter().filter(|c| c.config.schedule == Schedule::PingPong).collect::<Vec<_>>()
            };
            let added = ping_pong(&fused);
            assert!(!added.is_empty(), "{m}x{n}x{k}: no ping-pong alternative for an epilogue");
            assert!(added.iter().all(|c| precision_fits_one_warpgroup(c)), "{m}x{n}x{k}: a ping-pong tile one warpgroup cannot hold");
            assert!(ping_pong(&plain).is_empty(), "{m}x{n}x{k}: the plain program's alternatives are unchanged");
        }
    }

    fn precision_fits_one_warpgroup(c: &Candidate) -> bool {
        Precision::Bf16.accumulator_registers(c.config.block_m, c.config.block_n, 1).fit_alone() && c.config.stages >= 2
    }

    #[test]
    fn a_block_scaled_program_weighs_every_width_its_scale_rows_serve() {
        let widths = |p: &Problem| {
            let ranked = rank(p, &Machine::H100, &Pins::default());
            let all: Vec<Candidate> = ranked.iter().cloned().chain(alternatives(p, &Machine::H100, &Pins::default(), &ranked)).collect();
            let mut block_ns: Vec<i64> = all.iter().map(|c| c.config.block_n).collect();
            block_ns.sort_unstable();
            block_ns.dedup();
            block_ns
        };
        // Three scale rows serve any width up to 256 at any offset; the
        // ranking takes one of them.
        let three = Problem { b_scale_rows: Some(3), ..fp8(64, 7168, 16384) };
        assert_eq!(rank(&three, &Machine::H100, &Pins::default()).iter().map(|c| c.config.block_n).collect::<std::collections::BTreeSet<_>>().len(), 1);
        // At 128 K blocks every width whose accumulators fit is weighed
        // (past 192 they outgrow the registers at 64 rows).
        let all = widths(&three);
        assert!(every_block_n().into_iter().filter(|&n| n <= 192).all(|n| all.contains(&n)), "{all:?}");
        // Two rows leave out the widths whose tiles touch three blocks
        // (176 starts a tile 112 rows into one).
        let two = widths(&Problem { b_scale_rows: Some(2), ..fp8(64, 7168, 16384) });
        assert!(two.contains(&192) && two.contains(&112) && !two.contains(&176), "{two:?}");
        // Below 32 K blocks a tile spanning three blocks is no candidate.
        let short = widths(&Problem { b_scale_rows: Some(3), ..fp8(64, 7168, 2048) });
        assert!(short.contains(&192) && !short.contains(&176), "{short:?}");
    }

    /// Added in shares, a split's CTAs wait for each other: only a grid no
    /// larger than the SMs, all of it resident, is weighed so, each beside
    /// the same split added by its last CTA.
    #[test]
    fn spread_splits_are_weighed_where_the_grid_fits_the_sms() {
        for p in [bf16(512, 512, 65536), bf16(1024, 1024, 16384), fp8(197, 1024, 63360), bf16(2, 320, 38528)] {
            let ranked = rank(&p, &Machine::H100, &Pins::default());
            let all = alternatives(&p, &Machine::H100, &Pins::default(), &ranked);
            let spread: Vec<&Candidate> = all.iter().filter(|c| c.config.split_reduce == SplitReduce::Spread).collect();
            assert!(!spread.is_empty(), "{}x{}x{}", p.m, p.n, p.k);
            for c in &spread {
                assert!(c.tiles * c.config.splits <= Machine::H100.sms, "{}", c.config);
                let twin = Config { split_reduce: SplitReduce::Workspace, ..c.config };
                // Stored in shares, a split stored by TMA before may be its source instead.
                let from = |s: &&&Candidate| s.config.epilogue != Epilogue::Global && (s.config.block_m, s.config.block_n, s.config.splits, s.config.schedule) == (c.config.block_m, c.config.block_n, c.config.splits, c.config.schedule);
                let made_from_tma = c.config.stores_shares(&p) && spread.iter().any(|s| from(&s));
                assert!(made_from_tma || all.iter().any(|w| w.config == twin), "{} without its last-arrival twin", c.config);
            }
            // Each split stores its share where the kernel stores directly.
            assert!(spread.iter().any(|c| c.config.stores_shares(&p)), "{}x{}x{}: no split storing its shares", p.m, p.n, p.k);
            let over = all.iter().filter(|c| c.config.split_reduce == SplitReduce::Workspace && c.tiles * c.config.splits > Machine::H100.sms);
            for c in over {
                let twin = Config { split_reduce: SplitReduce::Spread, ..c.config };
                assert!(all.iter().all(|s| s.config != twin), "{} spread past the SMs", c.config);
            }
        }
        // Not made from TMA-stored splits after an epilogue, nor with A in registers.
        let gelu = EpilogueWork { lane_ops: 10, sfu_ops: 1, ..Default::default() };
        for p in [Problem { epilogue: gelu, ..bf16(512, 512, 65536) }, Problem { a_in_registers: true, ..bf16(512, 512, 65536) }] {
            let ranked = rank(&p, &Machine::H100, &Pins::default());
            let all = alternatives(&p, &Machine::H100, &Pins::default(), &ranked);
            for c in all.iter().filter(|c| c.config.split_reduce == SplitReduce::Spread && c.config.epilogue == Epilogue::Global) {
                let twin = Config { split_reduce: SplitReduce::Workspace, ..c.config };
                assert!(all.iter().any(|w| w.config == twin), "{} made for {}", c.config, p.epilogue);
            }
        }
    }

    #[test]
    fn workspace_split_counts_fill_whole_waves() {
        // 75 tiles over 132 SMs: the most splits that fit two, three and
        // four waves are 3, 5 and 7 (525 CTAs, 99% of four waves); the
        // fixed steps alone skip 5 and 7.
        let counts = workspace_splits(75, &Machine::H100);
        assert!([3, 5, 7].iter().all(|s| counts.contains(s)), "{counts:?}");
        assert!(!WORKSPACE_SPLITS.contains(&5) && !WORKSPACE_SPLITS.contains(&7));
        assert!(counts.windows(2).all(|w| w[0] < w[1]) && counts.iter().all(|s| (2..=MAX_WORKSPACE_SPLITS).contains(s)), "{counts:?}");
        // One tile: the counts stop at the most the reduction adds.
        assert_eq!(workspace_splits(1, &Machine::H100).last(), Some(&MAX_WORKSPACE_SPLITS));
        // 1818x1176x21728 in 128x256 tiles (15 x 5): split in seven, weighed.
        let p = bf16(1818, 1176, 21728);
        let ranked = rank(&p, &Machine::H100, &Pins::default());
        let all = alternatives(&p, &Machine::H100, &Pins::default(), &ranked);
        assert!(all.iter().any(|c| (c.config.block_m, c.config.block_n, c.config.splits) == (128, 256, 7) && c.tiles * 7 == 525), "split in seven");
    }

    #[test]
    fn workspace_splits_are_weighed_where_tiles_are_fewer_than_the_sms() {
        let workspace = |p: &Problem| {
            let ranked = rank(p, &Machine::H100, &Pins::default());
            alternatives(p, &Machine::H100, &Pins::default(), &ranked).into_iter().filter(|c| c.config.split_reduce == SplitReduce::Workspace).collect::<Vec<_>>()
        };
        let deep = workspace(&bf16(512, 512, 65536));
        assert!(deep.iter().any(|c| c.config.splits > MAX_SPLITS * 2), "splits past a cluster's");
        for c in &deep {
            assert!(c.tiles < Machine::H100.sms && c.waves <= WORKSPACE_SPLIT_MAX_WAVES, "{}", c.config);
            assert!(ceil_div(65536, c.config.block_k) >= MIN_K_BLOCKS_PER_SPLIT * c.config.splits, "{}", c.config);
            // No partial tile in shared memory: the workspace holds them.
            assert_eq!(c.smem_bytes, SmemLayout { splits: 1, ..c.config.smem_layout() }.smem_bytes(&bf16(512, 512, 65536), c.config.stages));
        }
        assert!(workspace(&bf16(4096, 4096, 4096)).is_empty(), "as many tiles as SMs need no split");
        assert!(workspace(&bf16(512, 512, 128)).is_empty(), "two K blocks are too few to share");
        // 48 FP8 tiles of 128x128 fill 73% of one wave of the H100's SMs;
        // split in eight they fill most of a third, the split the H200 ran
        // faster at 1009x704x51264 (docs/cost-model.md).
        let few = workspace(&fp8(1009, 704, 51264));
        assert!(few.iter().any(|c| c.config.splits == 8 && c.waves == 3), "{:?}", few.iter().map(|c| c.config.to_string()).collect::<Vec<_>>());
        assert!(few.iter().all(|c| c.waves <= WORKSPACE_SPLIT_MAX_WAVES));
        assert!(!workspace(&fp8(256, 512, 16384)).is_empty(), "block-scaled FP8 takes its ranked widths");
        assert!(WORKSPACE_SPLITS.iter().all(|&s| (2..=MAX_WORKSPACE_SPLITS).contains(&s)));
    }
}
