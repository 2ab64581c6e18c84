//! Tile shapes: the block M and N values a candidate takes, and which of
//! them are ranked behind the others.

use super::candidate::{Config, Scales};
use super::problem::Problem;

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
}
