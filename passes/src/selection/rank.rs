//! The ranking: every candidate the policies shape, best first, and the pick.

use crate::cluster::{shares_whole_atoms, Along, DEFAULT_CLUSTER_CTAS};
use super::candidate::{Candidate, Config, Pins, Schedule, SplitReduce};
use super::checks::check_pins;
use super::clusters::{cluster_for, prefers_clusters};
use super::deep_pairs::deep_paired_rows;
use super::deferred_epilogue::deferred_epilogue;
use super::epilogue_forms::direct_stores;
use super::forms::tile_candidate;
use super::pairs::one_wave_of_pairs;
use super::ping_pong::{ping_pong, prefers_ping_pong};
use super::problem::{Machine, Precision, Problem};
use super::raster::raster_group_for;
use super::reasons::{loss_reason, pick_reason};
use super::scale_widths::block_n_across_scale_blocks;
use super::schedule::{prefers_warp_specialized, two_consumer_tile, warp_specialized};
use super::split_k::split_k;
use super::stream_k::stream_k_for;
use super::tall_tiles::shares_tall_tile;
use super::tiles::{BLOCK_MS, every_block_n, holds_whole_groups, promotes_by_row_blocks};
use super::waves::{compare, persistent_sms, with_waves};

/// Every tile configuration the policies allow for `problem`, best first;
/// right after the pick, its clustered (`cluster_for`), warp-specialised
/// (`warp_specialized`) and direct-store (`direct_stores`) alternatives.
/// Empty when the pins leave nothing that fits.
pub fn rank(problem: &Problem, machine: &Machine, pins: &Pins) -> Vec<Candidate> {
    let bk = pins.block_k.unwrap_or(problem.precision.block_k());
    let block_ms: Vec<i64> = pins.block_m.map_or(BLOCK_MS.to_vec(), |m| vec![m]);
    let block_ns: Vec<i64> = match pins.block_n {
        Some(n) => vec![n],
        None if problem.column_group.is_some() => every_block_n().into_iter().filter(|&n| holds_whole_groups(problem, n)).collect(),
        None if problem.b_scale_rows.is_some() => vec![block_n_across_scale_blocks(problem, machine, pins, &block_ms, bk)],
        None => every_block_n(),
    };
    // Row-block tiles wait behind the others unless block M is pinned.
    let (mut row_blocked, mut ranked): (Vec<Candidate>, Vec<Candidate>) = block_ms
        .iter()
        .flat_map(|&bm| block_ns.iter().map(move |&bn| (bm, bn)))
        .filter_map(|(bm, bn)| tile_candidate(problem, machine, pins, (bm, bn, bk), 1, SplitReduce::Cluster))
        .partition(|c| pins.block_m.is_none() && promotes_by_row_blocks(&c.config));
    ranked.sort_by(compare);
    row_blocked.sort_by(compare);
    if let Some(pairs) = ranked.first().and_then(|best| one_wave_of_pairs(problem, machine, pins, best)) {
        ranked.insert(0, pairs);
    }
    if let Some(best) = ranked.first().cloned() {
        if let Some(direct) = direct_stores(problem, machine, pins, &best) {
            ranked.insert(1, direct);
        }
        if let Some(pingpong) = ping_pong(problem, machine, pins, &ranked) {
            ranked.insert(1, pingpong);
        }
        for consumers in [2, 1] {
            let tile = if consumers == 2 { two_consumer_tile(problem, machine, pins, &best) } else { Some(best.clone()) };
            if let Some(ws) = tile.and_then(|tile| warp_specialized(problem, machine, pins, &tile, consumers)) {
                ranked.insert(1, ws);
            }
        }
    }
    if ranked.first().is_some_and(|best| prefers_warp_specialized(problem, best, ranked.get(1))) {
        // Block-scaled FP8 takes two consumers where there are two (each
        // promotes beside the other's wgmma); otherwise the alternative
        // right after the pick.
        let fp8 = problem.precision == Precision::Fp8BlockScaled;
        let two = ranked.iter().position(|c| fp8 && c.config.schedule == Schedule::WarpSpecialized { consumers: 2 });
        if let Some(i) = two.or_else(|| ranked.get(1).filter(|c| c.config.schedule != Schedule::Pipeline).map(|_| 1)) {
            ranked[..=i].rotate_right(1);
        }
    }
    if ranked.first().is_some_and(|best| prefers_ping_pong(problem, best)) {
        if let Some(i) = ranked.iter().position(|c| c.config.schedule == Schedule::PingPong) {
            ranked[..=i].rotate_right(1);
        }
    }
    if let Some(split) = ranked.iter().find(|c| c.config.schedule == Schedule::Pipeline).and_then(|narrow| split_k(problem, machine, pins, narrow)) {
        ranked.insert(0, split);
    }
    if let Some(along) = pins.cluster {
        let ctas = pins.cluster_ctas.unwrap_or(DEFAULT_CLUSTER_CTAS);
        ranked.retain(|c| along == Along::None || shares_whole_atoms(along.shared_rows(c.config.block_m, c.config.block_n), ctas));
        for c in &mut ranked {
            c.config.cluster = along;
            c.config.cluster_ctas = ctas;
            *c = with_waves(problem, machine, c.clone());
        }
    } else if let Some(best) = ranked.first() {
        let cluster = cluster_for(problem, machine, best);
        if cluster != Along::None {
            let clustered = Candidate { config: Config { cluster, ..best.config }, ..best.clone() };
            let at = if prefers_clusters(problem, machine, best) { 0 } else { 1 };
            ranked.insert(at, clustered);
        }
    }
    if let Some(deep) = ranked.first().and_then(|best| deep_paired_rows(problem, machine, pins, best)) {
        ranked.insert(0, deep);
    }
    if let Some(tall) = row_blocked.first().and_then(|tile| warp_specialized(problem, machine, pins, tile, 2)) {
        ranked.push(tall);
    }
    for c in &mut ranked {
        c.config.raster_group = raster_group_for(problem, machine, c);
        if c.config.schedule != Schedule::Pipeline {
            c.sms = persistent_sms(problem, machine, &c.config);
        }
    }
    if let Some(order) = ranked.first().and_then(|best| stream_k_for(problem, machine, best)) {
        let shared = Candidate { config: Config { stream_k: Some(order), ..ranked[0].config }, sms: machine.sms, ..ranked[0].clone() };
        ranked.insert(0, shared);
    }
    if let Some(deferred) = ranked.first().and_then(|best| deferred_epilogue(problem, machine, pins, best)) {
        ranked.insert(0, deferred);
    }
    if let Some(best) = ranked.first().cloned() {
        let tall = shares_tall_tile(problem, pins, &best);
        for (i, c) in ranked.iter_mut().enumerate() {
            c.reason = if i == 0 { pick_reason(&best, machine, tall) } else { loss_reason(c, &best, tall) };
        }
    }
    ranked
}

/// The pick: the first of [`rank`], or why there is none.
pub fn choose(problem: &Problem, machine: &Machine, pins: &Pins) -> Result<Candidate, String> {
    check_pins(problem, pins)?;
    rank(problem, machine, pins).into_iter().next().ok_or_else(|| {
        format!(
            "no configuration fits {}x{}x{} with the pinned values {pins:?} in {} bytes of shared memory",
            problem.m, problem.n, problem.k, machine.smem_bytes
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::selection::testing::{GLOBAL, pick, summary, TMA};

    // Shared memory per stage is (BM + BN) * 64 * 2 bytes + an 8-byte barrier;
    // the TMA epilogue adds BM * BN * 2 bytes; the budget is 232448 bytes.
    #[test]
    fn benchmark_shapes() {
        let table: &[((i64, i64, i64), (i64, i64, i64, &str, i64, i64))] = &[
            // 128x256: 32*16 = 512 tiles, 4 waves (3*132 = 396, last 116). Three waves
            // would need BM*BN >= 4096^2/396 = 42366 > 32768 (the largest tile
            // whose accumulators fit).
            // 256x128 ties on waves, last wave and padding; wider N wins.
            // Stages: 3*49160 + 65536 = 213016 fits, 4 would be 262176; over
            // more than 2 waves the tile over two consumers is picked
            // (`prefers_warp_specialized`),
            // whose output in 128-column chunks (32768 bytes) leaves room for 4.
            ((4096, 4096, 4096), (128, 256, 4, TMA, 4, 116)),
            // 64*32 = 2048 tiles, 16 waves, last 2048 - 15*132 = 68; 15 waves needs
            // BM*BN >= 8192^2/1980 = 33893. Over at least 6 waves the two
            // consumers share the tile as 256x128 (`prefers_tall_shared_tiles`),
            // with the output in
            // 64-column chunks: 4*49152 + 2*128*64*2 + 8 mbarriers = 229440.
            ((8192, 8192, 8192), (256, 128, 4, TMA, 16, 68)),
            // BM 64 pads M least; BN 16 gives ceil(2112/16) = 132 tiles, one full wave.
            // A 16-column tile over 112 K blocks is split (`split_k`): 64x32 tiles,
            // 66 of them, two CTAs each (132). Stages capped at 8: 8*12296, the
            // partial tile on a 1024-byte boundary (8192) and the output (4096).
            ((64, 2112, 7168), (64, 32, 8, TMA, 1, 132)),
            // One wave needs ceil(24576/BN) <= 132, BN >= 187: BN 192 gives 128 tiles
            // (208: 119, 224: 110, 256: 96). 6*32776 + 24576 = 221232; 7 stages do not fit.
            ((64, 24576, 1536), (64, 192, 6, TMA, 1, 128)),
            // ceil(32768/BN) <= 132 needs BN 256: 128 tiles. 4*40968 + 32768 = 196640.
            ((64, 32768, 512), (64, 256, 4, TMA, 1, 128)),
            // BN 64: 112 tiles (48 would be 150 tiles, two waves; 80 gives 90).
            // 8*16392 + 8192 = 139328.
            ((64, 7168, 16384), (64, 64, 8, TMA, 1, 112)),
            // BN 32: 128 tiles (16 would be 256, two waves); narrow: split into
            // 64 tiles of 64x64, two CTAs each.
            ((64, 4096, 7168), (64, 64, 8, TMA, 1, 128)),
            ((64, 7168, 2048), (64, 64, 8, TMA, 1, 112)),
            // 64x32: 2*66 = 132 tiles; 128x16: 1*132, same padding (270336 elements);
            // wider N wins; narrow: split into 66 tiles of 128x32, two CTAs each.
            ((128, 2112, 7168), (128, 32, 8, TMA, 1, 132)),
            // BM 128: BN 192 gives 128 tiles; BM 64 would need ceil(24576/BN) <= 66.
            // 4*40968 + 49152 = 213024; 5 stages do not fit.
            ((128, 24576, 1536), (128, 192, 4, TMA, 1, 128)),
            // 128x256: 128 tiles. 3*49160 + 65536 = 213016.
            ((128, 32768, 512), (128, 256, 3, TMA, 1, 128)),
            // BM 64: ceil(7168/BN) <= 66 needs BN 112, 2*64 = 128 tiles; BM 128, BN 64
            // gives 112. 8*22536 + 14336 = 194624.
            ((128, 7168, 16384), (64, 112, 8, TMA, 1, 128)),
            // 64x64 and 128x32 both give 128 tiles and 524288 padded elements; wider N.
            // Its two rows of 64x64 tiles over 112 K blocks take `deep_paired_rows`: one
            // consumer, clusters along M, 13*16384 + 8192 + 26 mbarriers = 221392.
            ((128, 4096, 7168), (64, 64, 13, TMA, 1, 128)),
            ((128, 7168, 2048), (64, 112, 8, TMA, 1, 128)),
            // 128x176: 32*12 = 384 tiles, 3 waves, last 120. Two waves would need
            // <= 264 tiles (128x256 gives 288); 128x192 gives 352 (last 88), 128x160
            // 448 (4 waves). Two consumers (`prefers_warp_specialized`): 4*38920 + 45056 + 8
            // mbarriers = 200768; 5 stages do not fit.
            ((4096, 2112, 7168), (128, 176, 4, TMA, 3, 120)),
            // 32*96 = 3072 tiles, 24 waves, last 3072 - 23*132 = 36; 23 waves needs
            // BM*BN >= 33156. Shared as 256x128 as at 8192^3.
            ((4096, 24576, 1536), (256, 128, 4, TMA, 24, 36)),
            // 32*128 = 4096 tiles, 32 waves, last 4; 31 waves needs BM*BN >= 32800.
            // Warp-specialised (`prefers_warp_specialized`), shared as 256x128
            // (`prefers_tall_shared_tiles`).
            ((4096, 32768, 512), (256, 128, 4, TMA, 32, 4)),
            // 32*28 = 896 tiles, 7 waves, last 104; 128x240 and 128x224 take 8
            // waves. Two consumers share 256x128 tiles (7 waves:
            // `prefers_tall_shared_tiles`).
            ((4096, 7168, 16384), (256, 128, 4, TMA, 7, 104)),
            // 4 waves: two consumers share the 128x256 tile itself, as at 4096^3.
            ((4096, 4096, 7168), (128, 256, 4, TMA, 4, 116)),
            ((4096, 7168, 2048), (256, 128, 4, TMA, 7, 104)),
        ];
        assert_eq!(table.len(), 20);
        for &((m, n, k), expected) in table {
            assert_eq!(summary(&pick(m, n, k)), expected, "{m}x{n}x{k}");
        }
    }

    #[test]
    fn edge_cases() {
        // M = 1: BM 64 pads least; BN 32 gives 128 tiles (16 would be 256, two
        // waves); a narrow tile over 64 K blocks is split: 64 tiles of 64x64.
        assert_eq!(summary(&pick(1, 4096, 4096)), (64, 64, 8, TMA, 1, 128));
        // N = 4100: rows of 8200 bytes are not 16-byte aligned, so no TMA store.
        // 256x128: 16*33 = 528 tiles, four full waves; 128x256 gives 544 (5 waves).
        // 4*49160 = 196640; 5 stages would be 245800.
        assert_eq!(summary(&pick(4096, 4100, 4096)), (256, 128, 4, GLOBAL, 4, 132));
        // K = 32, less than one 64-wide block: one K block, so one stage,
        // and three 128x112 tiles an SM (`with_waves`): 1184 in 3 waves.
        assert_eq!(summary(&pick(4096, 4096, 32)), (128, 112, 1, TMA, 3, 131));
        // The smallest problem: one 64x16 tile.
        assert_eq!(summary(&pick(1, 8, 8)), (64, 16, 1, TMA, 1, 1));
    }
}
