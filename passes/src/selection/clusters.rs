//! Clusters of CTAs that share an operand tile and load it once (TMA multicast).

use crate::cluster::{shares_whole_atoms, Along, DEFAULT_CLUSTER_CTAS};
use super::candidate::{Candidate, Config, Pins, Schedule};
use super::problem::{ceil_div, Machine, Precision, Problem};
use super::waves::figures;
use super::schedule::{BF16_PERSISTENT_K_BLOCKS, LONG_K_BLOCKS};
use crate::cost_model::operand_l2_factors;
use tilec_dialects::tile::dot::SCALE_BLOCK_N;

/// The clustered alternative: pairs of CTAs that share an operand tile
/// and load it once (TMA multicast), as DeepGEMM does, where that is legal
/// (one GEMM whose neighbouring tiles read the same operand tiles) and
/// there is more than one wave, along [`pair_direction`]. It is ranked right after the pick,
/// not picked, except where [`prefers_clusters`] says: on the shapes of
/// more than one wave it measured no better, on balance, than the same
/// kernel without.
pub(super) fn cluster_for(problem: &Problem, machine: &Machine, best: &Candidate) -> Along {
    if best.tiles <= machine.sms {
        return Along::None;
    }
    pair_direction(problem, &best.config)
}

/// The dimension along which 2-CTA clusters pair `c`'s tiles, where the
/// program lets neighbouring tiles share an operand tile: along M (sharing
/// B) when the tiles along M are even and B's tile is at least A's, else
/// along N (sharing A) when the tiles along N are even, else along M when
/// those are; none where both counts are odd (half a pair would idle).
fn pair_direction(problem: &Problem, c: &Config) -> Along {
    if !problem.pairs_tiles() {
        return Along::None;
    }
    let even = |extent: i64, block: i64| ceil_div(extent, block) % DEFAULT_CLUSTER_CTAS == 0;
    let (along_m, along_n) = (even(problem.m, c.block_m), even(problem.n, c.block_n));
    match (along_m, along_n) {
        (true, _) if c.block_n >= c.block_m || !along_n => Along::M,
        (_, true) => Along::N,
        _ => Along::None,
    }
}

/// The picks that take their clusters: a BF16 pick
/// warp-specialised for a short K (at most [`BF16_PERSISTENT_K_BLOCKS`])
/// over many waves (`prefers_warp_specialized`), faster in clusters in
/// every run, and a block-scaled pick that two consumers share, wider
/// than one scale block, over a long K (at least [`LONG_K_BLOCKS`]) or
/// with rows off the L2's sectors (`operand_l2_factors`): multicast halves
/// the shared operand's L2 reads, which pays over a long K at any number of
/// waves and where such rows double what a stage takes of L2; over a short
/// K of aligned rows the clusters lost a little. A tile one scale block
/// wide is bound by its consumers' shared-memory reads (each reads all of
/// B's stage), which multicast does not lessen: in clusters it ran slower
/// (measured: docs/evidence.md, selection/clusters.rs, prefers_clusters).
pub(super) fn prefers_clusters(problem: &Problem, machine: &Machine, best: &Candidate) -> bool {
    let k_blocks = problem.k_blocks();
    let c = &best.config;
    let bf16_short = problem.precision == Precision::Bf16 && matches!(c.schedule, Schedule::WarpSpecialized { .. }) && k_blocks <= BF16_PERSISTENT_K_BLOCKS;
    let (a_rows, b_rows) = operand_l2_factors(problem, machine);
    let rows_off_sectors = a_rows > 1.0 || b_rows > 1.0;
    let fp8_wide = problem.precision == Precision::Fp8BlockScaled
        && c.schedule == (Schedule::WarpSpecialized { consumers: 2 })
        && c.block_n > SCALE_BLOCK_N
        && (k_blocks >= LONG_K_BLOCKS || rows_off_sectors);
    bf16_short || fp8_wide
}

/// The cluster sizes config selection weighs for a kernel whose tiles fit
/// one wave: pairs, and fours, which ran faster where the tiles fit the
/// SMs clusters of four fill. Clusters of eight, which the passes build,
/// fill as many SMs as those of four and ran no faster at
/// 1818x1176x21728; they are not weighed.
const ONE_WAVE_CLUSTER_CTAS: [i64; 2] = [2, 4];

/// The fewest K blocks over which config selection weighs a BF16 kernel
/// of one wave in clusters. Multicast saves L2 reads in proportion to the
/// K loop, but a pair runs its stages in lockstep: beside their unclustered
/// twins, BF16 one-wave pairs under two consumers lost at the nine shapes
/// of 6 to 73 K blocks measured (190x7296x1856 0.77x) and won at three of
/// the four of 340 to 759 K blocks (2174x1344x48576 1.34x); none was
/// measured between. FP8's block-scaled K blocks, twice the bytes and with
/// a promotion each, won in pairs at 13 and 45 K blocks as well as over
/// deep ones, so it has no such floor (measured: docs/evidence.md,
/// selection/clusters.rs, one-wave clusters).
const BF16_ONE_WAVE_CLUSTER_K_BLOCKS: i64 = 128;

/// The cluster sizes config selection weighs for a K split through the
/// workspace: pairs only. In clusters of four, splits over grid z that the
/// model predicted faster ran at 0.49 to 0.73 of the picks they replaced
/// on ten shapes of eighteen (measured: docs/evidence.md,
/// selection/clusters.rs, clusters of four).
const SPLIT_CLUSTER_CTAS: [i64; 1] = [2];

/// `candidate` in clusters of each size its kind weighs whose CTAs can
/// split the shared operand tile's rows, where the cost model finds it
/// bound by L2 (`l2_bound`): neighbouring tiles load the operand tile they
/// share once (TMA multicast), dividing its L2 traffic by the cluster's
/// CTAs, and the model weighs that against the SMs a cluster size leaves
/// idle ([`Machine::sms_for`]). Two kinds are weighed so:
/// - a block-scaled K split through the workspace (the splits of a tile
///   stay apart, grid z), in pairs (`SPLIT_CLUSTER_CTAS`). Such splits ran
///   faster in clusters, the others (and BF16's) slower on balance: the
///   pair runs in lockstep, which costs where L2 does not bound (measured:
///   docs/evidence.md, selection/clusters.rs, clustered splits);
/// - an unsplit kernel whose tiles fit one wave under two consumers, which
///   `cluster_for` pairs only over several waves: each tile reads its
///   operands' whole K loops through L2. Such kernels ran faster in
///   clusters over a deep K (BF16's, at least
///   `BF16_ONE_WAVE_CLUSTER_K_BLOCKS`); those of one consumer, whose
///   64-row tiles take a K block in half the time, slower on balance
///   (measured: docs/evidence.md, selection/clusters.rs, one-wave
///   clusters), in pairs and fours (`ONE_WAVE_CLUSTER_CTAS`).
///
/// Not for consumers sharing a tile's columns (unmeasured in clusters),
/// stream-K, nor under a cluster pin.
pub fn clustered_alternatives(problem: &Problem, machine: &Machine, pins: &Pins, candidate: &Candidate, l2_bound: bool) -> Vec<Candidate> {
    let c = &candidate.config;
    let free = l2_bound && pins.cluster.is_none() && c.cluster == Along::None && c.schedule != Schedule::ColumnHalves && c.stream_k.is_none();
    let block_scaled_split = c.splits > 1 && problem.precision == Precision::Fp8BlockScaled && c.split_reduce.through_workspace();
    let deep_enough = problem.precision != Precision::Bf16 || problem.k_blocks() >= BF16_ONE_WAVE_CLUSTER_K_BLOCKS;
    let one_wave = c.splits == 1 && candidate.tiles <= machine.sms && c.schedule == (Schedule::WarpSpecialized { consumers: 2 }) && deep_enough;
    let along = pair_direction(problem, c);
    if !free || !(block_scaled_split || one_wave) || along == Along::None {
        return Vec::new();
    }
    let sizes: &[i64] = if one_wave { &ONE_WAVE_CLUSTER_CTAS } else { &SPLIT_CLUSTER_CTAS };
    sizes
        .iter()
        .filter(|&&ctas| shares_whole_atoms(along.shared_rows(c.block_m, c.block_n), ctas))
        .map(|&ctas| Candidate { reason: candidate.reason.clone(), ..figures(problem, machine, Config { cluster: along, cluster_ctas: ctas, ..*c }) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::{Config, Pins};
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8};

    #[test]
    fn clusters_pair_even_tiles_of_more_than_one_wave() {
        let p = bf16(4096, 4096, 4096);
        let tile = Pins { block_m: Some(128), block_n: Some(256), ..Pins::default() };
        // The direction of the ranking's clustered alternative.
        let cluster_of = |p: Problem, pins: &Pins| rank(&p, &Machine::H100, pins).iter().map(|c| c.config.cluster).find(|&a| a != Along::None).unwrap_or(Along::None);
        // 128x256 tiles: 32 x 16, B's tile the larger: along M.
        assert_eq!(cluster_of(p, &Pins::default()), Along::M);
        // 4096x4096 picks 256x128 when M is 3968 (16 x 32 tiles): A's tile is
        // the larger, so along N.
        assert_eq!(cluster_of(Problem { m: 3968, ..p }, &Pins::default()), Along::N);
        // 128x256 tiles of 3968 rows: 31 along M (odd), 16 along N: along N.
        assert_eq!(cluster_of(Problem { m: 3968, ..p }, &tile), Along::N);
        // Both odd (31 x 15): no cluster; none for a single wave (128x2112:
        // 132 tiles of 64x32) or a grouped GEMM either.
        let none = |p: Problem, pins: &Pins| rank(&p, &Machine::H100, pins).iter().all(|c| c.config.cluster == Along::None);
        assert!(none(Problem { m: 3968, n: 3840, ..p }, &tile));
        assert!(none(Problem { m: 128, n: 2112, k: 7168, ..p }, &Pins::default()));
        assert!(none(Problem { clusterable: false, ..p }, &Pins::default()));
    }

    /// Block-scaled workspace splits bound by L2 pair their tiles; BF16's,
    /// those not bound by L2, a cluster pin, consumers sharing the columns
    /// and tiles that pair oddly both ways do not.
    #[test]
    fn l2_bound_block_scaled_workspace_splits_pair_their_tiles() {
        use crate::selection::candidate::SplitReduce;
        let p = Problem { b_scale_rows: Some(16), ..fp8(941, 1936, 38160) };
        let split = |problem: &Problem, schedule: Schedule| {
            let config = Config { stages: 4, num_warps: 12, schedule, splits: 3, split_reduce: SplitReduce::Workspace, ..Config::neutral((128, 176, 128)) };
            crate::selection::figures(problem, &Machine::H100, config)
        };
        let ws2 = Schedule::WarpSpecialized { consumers: 2 };
        let clustered = |p: &Problem, pins: &Pins, c: &Candidate, l2_bound: bool| clustered_alternatives(p, &Machine::H100, pins, c, l2_bound);
        // 8 tiles along M (941 rows), 11 along N: along M, sharing B;
        // 176 rows of B split into two shares of 88, not four of 44.
        let paired = clustered(&p, &Pins::default(), &split(&p, ws2), true);
        assert_eq!(paired.iter().map(|c| c.config).collect::<Vec<_>>(), [Config { cluster: Along::M, ..split(&p, ws2).config }]);
        assert!(clustered(&p, &Pins::default(), &split(&p, ws2), false).is_empty(), "not bound by L2");
        assert!(clustered(&p, &Pins { cluster: Some(Along::None), ..Pins::default() }, &split(&p, ws2), true).is_empty(), "pinned");
        assert!(clustered(&p, &Pins::default(), &split(&p, Schedule::ColumnHalves), true).is_empty(), "column halves");
        let b = bf16(941, 1936, 38160);
        assert!(clustered(&b, &Pins::default(), &split(&b, ws2), true).is_empty(), "BF16");
        // 7 tiles along M (896 rows) and 11 along N: no pair.
        let odd = Problem { m: 896, ..p };
        assert!(clustered(&odd, &Pins::default(), &split(&odd, ws2), true).is_empty(), "odd both ways");
    }

    /// Unsplit kernels of one wave under two consumers that are bound by
    /// L2 cluster their tiles in twos and fours (and the launcher's CTAs are
    /// counted again for the clusters); those of one consumer, of more than
    /// one wave, not bound by L2 or pinned do not.
    #[test]
    fn one_wave_two_consumer_kernels_bound_by_l2_pair_their_tiles() {
        let p = bf16(1818, 1176, 21728);
        let kernel = |p: &Problem, (bm, bn): (i64, i64), consumers: i64| {
            let config = Config { stages: 4, num_warps: 4 + 4 * consumers, schedule: Schedule::WarpSpecialized { consumers }, ..Config::neutral((bm, bn, 64)) };
            crate::selection::figures(p, &Machine::H100, config)
        };
        let wide = kernel(&p, (128, 160), 2);
        assert_eq!(wide.tiles, 120);
        let clustered = |p: &Problem, pins: &Pins, c: &Candidate, l2_bound: bool| clustered_alternatives(p, &Machine::H100, pins, c, l2_bound);
        // 15 tiles along M (1818 rows), 8 along N: along N, sharing A's
        // 128 rows in clusters of 2 and 4.
        let grouped = clustered(&p, &Pins::default(), &wide, true);
        assert_eq!(grouped.iter().map(|c| (c.config.cluster, c.config.cluster_ctas)).collect::<Vec<_>>(), [(Along::N, 2), (Along::N, 4)]);
        assert!(grouped.iter().all(|c| c.config == Config { cluster: Along::N, cluster_ctas: c.config.cluster_ctas, ..wide.config }));
        // 120 tiles: 60 pairs on 120 SMs, 30 fours on the 120 SMs clusters of four fill.
        assert_eq!((grouped[0].sms, grouped[1].sms, grouped[1].waves), (120, 120, 1));
        assert!(clustered(&p, &Pins::default(), &wide, false).is_empty(), "not bound by L2");
        assert!(clustered(&p, &Pins { cluster: Some(Along::None), ..Pins::default() }, &wide, true).is_empty(), "pinned");
        assert!(clustered(&p, &Pins::default(), &kernel(&p, (64, 160), 1), true).is_empty(), "one consumer");
        // 4096x4096 in 128x160 tiles: 832, several waves (`cluster_for`'s).
        let many = bf16(4096, 4096, 4096);
        assert!(clustered(&many, &Pins::default(), &kernel(&many, (128, 160), 2), true).is_empty(), "several waves");
        // A BF16 K loop shorter than the floor (1856 / 64 = 29 K blocks) is
        // not weighed in clusters; one at the floor is; block-scaled FP8's
        // is at any depth.
        let k_of = |k_blocks: i64| Problem { k: 64 * k_blocks, ..p };
        let shallow = k_of(29);
        assert!(clustered(&shallow, &Pins::default(), &kernel(&shallow, (128, 160), 2), true).is_empty(), "shallow BF16 K");
        let floor = k_of(BF16_ONE_WAVE_CLUSTER_K_BLOCKS);
        assert_eq!(clustered(&floor, &Pins::default(), &kernel(&floor, (128, 160), 2), true).len(), 2, "BF16 K at the floor");
        let scaled = Problem { b_scale_rows: Some(10), ..fp8(1818, 1176, 1856) };
        let fp8_kernel = crate::selection::figures(&scaled, &Machine::H100, Config { block_k: 128, ..kernel(&scaled, (128, 160), 2).config });
        assert!(!clustered(&scaled, &Pins::default(), &fp8_kernel, true).is_empty(), "shallow FP8 K");
    }

    #[test]
    fn a_cluster_pin_applies_to_every_candidate() {
        let p = bf16(128, 2112, 7168);
        // A single wave: `cluster_for` ranks no cluster, but a pin pairs every candidate.
        // The split pick (`split_k`) is its own cluster: a pin leaves it out.
        let pinned = rank(&p, &Machine::H100, &Pins { cluster: Some(Along::N), ..Pins::default() });
        let unpinned: Vec<Candidate> = rank(&p, &Machine::H100, &Pins::default()).into_iter().filter(|c| c.config.splits == 1).collect();
        assert_eq!(pinned.len(), unpinned.len());
        assert!(pinned.iter().zip(&unpinned).all(|(c, u)| c.config == Config { cluster: Along::N, ..u.config }));
        assert!(pinned[0].reason.ends_with("; in 2-CTA clusters along n"));
        // Pinning none removes the clustered alternative.
        let q = Problem { m: 4096, n: 4096, ..p };
        assert!(rank(&q, &Machine::H100, &Pins { cluster: Some(Along::None), ..Pins::default() }).iter().all(|c| c.config.cluster == Along::None));
        let err = choose(&Problem { clusterable: false, ..q }, &Machine::H100, &Pins { cluster: Some(Along::M), ..Pins::default() }).unwrap_err();
        assert!(err.contains("a cluster needs CTAs whose tiles share an operand tile"), "{err}");
    }

    /// A block-scaled pick two consumers share, wider than one scale block,
    /// takes clusters over a long K at any number of waves, and over a
    /// short K only where the operands' rows are off the L2's sectors.
    #[test]
    fn block_scaled_two_consumer_picks_cluster_over_a_long_k_or_rows_off_the_sectors() {
        let scaled = |m, n, k| Problem { b_scale_rows: Some(3), ..fp8(m, n, k) };
        let cluster = |m, n, k| choose(&scaled(m, n, k), &Machine::H100, &Pins::default()).unwrap().config.cluster;
        // 128x176 over two consumers: 32 K blocks and 6 waves, 64 and 23,
        // 56 and 3, 56 and 2.
        assert_eq!(cluster(4096, 4096, 4096), Along::M);
        assert_eq!(cluster(8192, 8192, 8192), Along::M);
        assert_eq!(cluster(4096, 2112, 7168), Along::M);
        assert_eq!(cluster(2048, 2112, 7168), Along::M);
        // 16 K blocks and fewer, rows on the sectors: none.
        for (m, n, k) in [(4096, 7168, 2048), (4096, 24576, 1536), (4096, 32768, 512)] {
            assert_eq!(cluster(m, n, k), Along::None, "{m}x{n}x{k}");
        }
        // The same with rows of FP8 an odd multiple of 16 bytes apart.
        for (m, n, k) in [(4096, 7168, 2064), (4096, 24576, 1552)] {
            assert_ne!(cluster(m, n, k), Along::None, "{m}x{n}x{k}");
        }
        // Nor where the operands are chosen by data.
        let grouped = Problem { clusterable: false, ..scaled(4096, 4096, 4096) };
        assert_eq!(choose(&grouped, &Machine::H100, &Pins::default()).unwrap().config.cluster, Along::None);
        // Nor over tiles one scale block wide (pinned, or held by the
        // epilogue's 128-column groups), which shared memory bounds.
        let one_block = Pins { block_n: Some(SCALE_BLOCK_N), ..Pins::default() };
        for (m, n, k) in [(4096, 4096, 7168), (4096, 7168, 16384), (4096, 2112, 7168)] {
            let pick = choose(&scaled(m, n, k), &Machine::H100, &one_block).unwrap();
            assert_eq!((pick.config.block_n, pick.config.cluster), (SCALE_BLOCK_N, Along::None), "{m}x{n}x{k}");
        }
    }
}
