//! Two consumers sharing each tile by columns, which config selection weighs
//! as alternatives.

use super::candidate::{Candidate, Config, Epilogue, Pins, Scales, Schedule, SplitReduce};
use super::epilogue::epilogue_for;
use super::epilogue_forms::chunked_epilogue;
use super::problem::{ceil_div, Machine, Problem};
use super::scales::stages_and_scales;
use super::smem::{buffers_filled, SmemLayout, split_k_blocks};
use super::tiles::{MAX_BLOCK_N, NARROW_BLOCK_N};
use super::waves::with_waves;

/// The tiles two consumers sharing each tile's columns take, as block M
/// and a range of block N: 192 rows (whose halves of rows hold no whole
/// m64 blocks), which cover M up to 192 in one row of tiles so that B is
/// read once, and 128 rows wider than one wgmma's 256 columns, which cover
/// N in fewer column tiles. A consumer holds every row and half of the
/// columns: at most [`COLUMN_HALF_RUNNING_REGISTERS`] accumulators a thread.
pub(super) const COLUMN_HALVES_TILES: [(i64, std::ops::RangeInclusive<i64>); 2] = [(192, 32..=208), (128, 272..=320)];

/// The widest tile two consumers sharing its columns take.
pub(super) fn widest_column_halves() -> i64 {
    COLUMN_HALVES_TILES.iter().map(|(_, bns)| *bns.end()).max().unwrap_or(MAX_BLOCK_N)
}

/// The most running accumulator registers a consumer thread that holds
/// half of a tile's columns keeps: of its 240, the rest hold addresses and
/// loop state (measured: docs/evidence.md, selection/column_halves.rs, column halves).
const COLUMN_HALF_RUNNING_REGISTERS: i64 = 160;

/// The most running accumulator registers a consumer thread that holds
/// half of a tile's columns keeps where it also hands partial tiles over
/// (split-K through the workspace, stream-K): past it ptxas spilled under
/// stream-K (measured: docs/evidence.md, selection/column_halves.rs, column halves).
pub(super) const COLUMN_HALF_HANDOVER_REGISTERS: i64 = 128;

/// `tile` under two consumers that share each tile's columns
/// ([`Schedule::ColumnHalves`]): persistent over the fewest SMs that keep
/// the waves, or, its K loop split `splits` ways through the workspace,
/// one CTA for each split of each tile; with the TMA epilogue where C's
/// rows allow one, and storing directly, whose shared memory leaves room
/// for more stages (a 128x304 tile's TMA buffers leave two). None where a
/// consumer's half holds too many accumulators.
pub(super) fn column_halves_candidates(problem: &Problem, machine: &Machine, pins: &Pins, tile: (i64, i64, i64), splits: i64) -> Vec<Candidate> {
    let (bm, bn, _) = tile;
    if bn % (2 * 8) != 0 || problem.precision.accumulator_registers(bm, bn / 2, 1).running > COLUMN_HALF_RUNNING_REGISTERS {
        return Vec::new();
    }
    // Split in two, the direct stores' consumers spilled under ptxas (each
    // half wider than a narrow tile); split three ways or more, or through
    // the TMA store, none did (measured: docs/evidence.md,
    // selection/column_halves.rs, column halves).
    let spills = |epilogue: Epilogue| epilogue == Epilogue::Global && splits == 2 && bn / 2 > NARROW_BLOCK_N;
    let mut epilogues = vec![epilogue_for(problem, bn / 2, Schedule::ColumnHalves)];
    if epilogues[0] != Epilogue::Global {
        epilogues.push(Epilogue::Global);
    }
    epilogues.into_iter().filter(|&e| !spills(e)).filter_map(|epilogue| column_halves_candidate(problem, machine, pins, tile, epilogue, splits)).collect()
}

/// One of [`column_halves_candidates`]; `None` where not two stages fit.
fn column_halves_candidate(problem: &Problem, machine: &Machine, pins: &Pins, (bm, bn, bk): (i64, i64, i64), epilogue: Epilogue, splits: i64) -> Option<Candidate> {
    let schedule = Schedule::ColumnHalves;
    let tiles = ceil_div(problem.m, bm) * ceil_div(problem.n, bn);
    // A workspace split keeps no partial tile in shared memory and fills
    // no more stages than its share of K blocks.
    let layout = SmemLayout { tile: (bm, bn, bk), epilogue, scales: Scales::None, schedule, splits: 1 };
    let (filled, split_reduce) = match splits {
        1 => (buffers_filled(problem, machine, schedule, bk, tiles, 1), SplitReduce::Cluster),
        _ => (split_k_blocks(problem, bk, splits), SplitReduce::Workspace),
    };
    let (stages, scales) = stages_and_scales(problem, machine, pins, layout, filled)?;
    let config = Config { stages, num_warps: 12, schedule, epilogue, scales, splits, split_reduce, ..Config::neutral((bm, bn, bk)) };
    let candidate = Candidate { config, tiles, waves: 0, last_wave: 0, sms: 0, smem_bytes: layout.with_scales(scales).smem_bytes(problem, stages), reason: String::new() };
    let candidate = chunked_epilogue(problem, machine, pins, with_waves(problem, machine, candidate));
    let candidate = if splits > 1 { Candidate { sms: machine.sms, ..candidate } } else { candidate };
    Some(candidate).filter(|c| c.config.stages >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Along;
    use crate::selection::alternatives::alternatives;
    use crate::selection::rank::rank;
    use crate::selection::testing::{bf16, fp8};

    /// Consumers that share a tile's columns are weighed only where
    /// `tile-warp-specialize{halves=columns}` builds them (a BF16 dot with B
    /// given N x K and no reduction over a row's columns), and only in the
    /// forms that assembled without spills: at most 160 running
    /// accumulators a consumer, 128 with a split or stream-K, and no
    /// direct stores split in two where the TMA store can take the half.
    #[test]
    fn column_halves_are_weighed_where_the_passes_build_them() {
        let machine = Machine::of(&tilec_target::Target::DEFAULT);
        let halves = |p: &Problem| {
            let ranked = rank(p, &machine, &Pins::default());
            alternatives(p, &machine, &Pins::default(), &ranked).into_iter().filter(|c| c.config.schedule == Schedule::ColumnHalves).collect::<Vec<_>>()
        };
        for p in [bf16(154, 22384, 4944), bf16(2072, 656, 59056), bf16(11084, 896, 4864)] {
            let found = halves(&p);
            assert!(!found.is_empty(), "{}x{}x{}", p.m, p.n, p.k);
            for c in &found {
                let running = p.precision.accumulator_registers(c.config.block_m, c.config.block_n / 2, 1).running;
                let hands_over = c.config.splits > 1 || c.config.stream_k.is_some();
                assert!(running <= COLUMN_HALF_RUNNING_REGISTERS && (!hands_over || running <= COLUMN_HALF_HANDOVER_REGISTERS), "{}", c.config);
                // Split in two, a half wide enough for the TMA store takes it.
                assert!(!(c.config.splits == 2 && c.config.epilogue == Epilogue::Global && c.config.block_n / 2 > NARROW_BLOCK_N), "{}", c.config);
                assert!(c.config.block_n % 16 == 0 && c.config.cluster == Along::None, "{}", c.config);
            }
        }
        assert!(halves(&bf16(2072, 656, 59056)).iter().any(|c| c.config.splits > 1 && c.config.split_reduce == SplitReduce::Workspace));
        assert!(halves(&Problem { transpose_b: false, ..bf16(154, 22384, 4944) }).is_empty());
        assert!(halves(&Problem { column_group: Some(128), ..bf16(154, 22384, 4944) }).is_empty());
        assert!(halves(&Problem { a_in_registers: true, ..bf16(154, 22384, 4944) }).is_empty());
        assert!(halves(&fp8(154, 22384, 4944)).is_empty());
    }
}
