//! Tile shapes: the block M and N values a candidate takes, and which of
//! them are ranked behind the others.

use super::candidate::{Config, Pins, Scales};
use super::problem::{AccumulatorRegisters, Problem};

/// The block M values a tile takes: whole m64 wgmma blocks, one to four.
pub const BLOCK_MS: [i64; 3] = [64, 128, 256];

/// The widest block N (one wgmma's N).
pub const MAX_BLOCK_N: i64 = 256;

/// wgmma's N step for BF16/FP8 operands with an FP32 accumulator, and the
/// granularity that keeps a row of C 32-byte aligned.
pub const BLOCK_N_STEP: i64 = 16;

/// Whether a block-scaled tile's warpgroups each hold more than one m64
/// block of rows, which they promote one block at a time. Such a tile is
/// ranked behind the others, as a warp-specialised alternative, unless
/// block M is pinned: over a long K it has fewer stages and each consumer
/// promotes its two blocks in series; it gains only over a short K.
pub(super) fn promotes_by_row_blocks(c: &Config) -> bool {
    c.scales != Scales::None && c.block_m > 64 * c.tile_warpgroups()
}

/// Whether a tile whose warpgroups each hold `registers` of accumulators is
/// weighed: any that fit, where block M is pinned; otherwise not where a
/// warpgroup holds two or more m64 row blocks of a block-scaled tile in
/// more than [`ROW_BLOCK_REGISTERS`]. 256x112 and 256x128 over two
/// consumers assemble without spills (each row block's wgmma takes the
/// registers of the block promoted before it), but ran slower than the
/// picks at M = 4096 (measured: docs/evidence.md, selection/tiles.rs,
/// weighs_row_blocks); the cost model, which charges each row block's
/// wait, predicts them slower too.
pub(super) fn weighs_row_blocks(pins: &Pins, registers: AccumulatorRegisters) -> bool {
    let one_row_block = registers.partial() == registers.running;
    pins.block_m.is_some() || one_row_block || registers.total <= ROW_BLOCK_REGISTERS
}

/// The most accumulator registers a thread of a warpgroup holding two or
/// more m64 row blocks takes in a tile weighed without pinning block M
/// (256x96 over two consumers: 96 running, 48 partial).
pub(super) const ROW_BLOCK_REGISTERS: i64 = 144;

/// The block N candidates: every multiple of [`BLOCK_N_STEP`] up to [`MAX_BLOCK_N`].
pub(super) fn every_block_n() -> Vec<i64> {
    (1..=MAX_BLOCK_N / BLOCK_N_STEP).map(|i| i * BLOCK_N_STEP).collect()
}

/// Block N holds whole groups of the columns the epilogue reduces.
pub(super) fn holds_whole_groups(problem: &Problem, block_n: i64) -> bool {
    problem.column_group.is_none_or(|g| block_n % g == 0)
}

/// The widest tile whose K steps are too short for the plain
/// pipeline to hide its load issue.
pub(super) const NARROW_BLOCK_N: i64 = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::{Pins, Schedule};
    use crate::selection::problem::Machine;
    use crate::selection::rank::{choose, rank};
    use crate::selection::problem::Precision;
    use crate::selection::testing::fp8;

    #[test]
    fn fp8_row_block_tiles_are_ranked_last_unless_pinned() {
        let p = Problem { b_scale_rows: Some(3), ..fp8(4096, 7168, 2048) };
        let pins = Pins { block_n: Some(96), ..Pins::default() };
        let ranked = rank(&p, &Machine::H100, &pins);
        assert_eq!((ranked[0].config.block_m, ranked[0].config.block_n), (128, 96));
        let tall = ranked.last().expect("candidates");
        assert_eq!((tall.config.block_m, tall.config.schedule), (256, Schedule::WarpSpecialized { consumers: 2 }));
        assert!(ranked[..ranked.len() - 1].iter().all(|c| c.config.block_m < 256));
        assert_eq!(tall.reason, "256-row alternative, promoted an m64 block at a time (policy `promotes_by_row_blocks`: ranked, not picked unless block M is pinned)");
        let pinned = choose(&p, &Machine::H100, &Pins { block_m: Some(256), ..pins }).expect("a pinned 256-row tile fits");
        assert_eq!((pinned.config.block_m, pinned.config.schedule), (256, Schedule::WarpSpecialized { consumers: 2 }));
    }

    #[test]
    fn wide_row_block_tiles_are_weighed_only_with_block_m_pinned() {
        let scaled = Precision::Fp8BlockScaled;
        let (none, pinned) = (Pins::default(), Pins { block_m: Some(256), ..Pins::default() });
        // 256x128 over two consumers: two row blocks, 128 running and 64
        // partial, 192 in all; 256x96: 144; 128x176: one row block, 176.
        let wide = scaled.accumulator_registers(128, 128, 1);
        assert!(wide.fit_shared());
        assert!(!weighs_row_blocks(&none, wide));
        assert!(weighs_row_blocks(&pinned, wide));
        assert!(weighs_row_blocks(&none, scaled.accumulator_registers(128, 96, 1)));
        assert!(weighs_row_blocks(&none, scaled.accumulator_registers(64, 176, 1)));
        // Unpinned, no candidate of 4096x7168x16384 is a 256x128 tile;
        // pinned, one is picked.
        let p = fp8(4096, 7168, 16384);
        assert!(rank(&p, &Machine::H100, &Pins { block_n: Some(128), ..none }).iter().all(|c| c.config.block_m < 256));
        let pick = choose(&p, &Machine::H100, &Pins { block_n: Some(128), ..pinned }).expect("a pinned 256x128 tile fits");
        assert_eq!((pick.config.block_m, pick.config.block_n), (256, 128));
    }
}
