//! Tall shared tiles: two consumers sharing 256x128 instead of 128x256 over
//! many waves.

use super::candidate::{Candidate, Pins, Schedule};
use super::problem::{Precision, Problem};

/// Tall shared tiles: whether a BF16 128x256 pick that two consumers share
/// over `waves` waves is shared as 256x128 instead, each consumer holding
/// 128x128 (cuBLAS's tile for such shapes), where that tile takes as many
/// waves (`two_consumer_tile` checks the tile): over at least
/// [`TALL_SHARED_WAVES`] waves, with pins that leave the tile's shape.
/// The clustered alternative then pairs its CTAs along N, which multicasts
/// A's 256 rows. Over fewer waves it gained nothing.
pub(super) fn prefers_tall_shared_tiles(problem: &Problem, pins: &Pins, waves: i64) -> bool {
    problem.precision == Precision::Bf16 && waves >= TALL_SHARED_WAVES && pins.block_m.is_none() && pins.block_n.is_none()
}

/// Whether [`prefers_tall_shared_tiles`] made `c` (a pick) two consumers sharing 256x128.
pub(super) fn shares_tall_tile(problem: &Problem, pins: &Pins, c: &Candidate) -> bool {
    let shared = (c.config.block_m, c.config.block_n) == (256, 128) && c.config.schedule == (Schedule::WarpSpecialized { consumers: 2 });
    shared && prefers_tall_shared_tiles(problem, pins, c.waves)
}

/// The fewest waves of 128x256 tiles over which two consumers
/// share 256x128 ones instead: the taller tile gained over many waves,
/// nothing over four and less over two
/// (measured: docs/evidence.md, selection/tall_tiles.rs, TALL_SHARED_WAVES).
pub(super) const TALL_SHARED_WAVES: i64 = 6;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::problem::Machine;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8, pick};

    #[test]
    fn two_consumers_share_tall_tiles_over_many_waves() {
        let none = Pins::default();
        assert!(prefers_tall_shared_tiles(&bf16(8192, 8192, 8192), &none, TALL_SHARED_WAVES));
        assert!(!prefers_tall_shared_tiles(&bf16(8192, 8192, 8192), &none, TALL_SHARED_WAVES - 1));
        assert!(!prefers_tall_shared_tiles(&fp8(8192, 8192, 8192), &none, TALL_SHARED_WAVES));
        assert!(!prefers_tall_shared_tiles(&bf16(8192, 8192, 8192), &Pins { block_m: Some(128), ..none }, TALL_SHARED_WAVES));
        // 8192^3: 16 waves of 128x256 shared as 256x128; 4096^3's 4 waves
        // keep 128x256.
        let tall = pick(8192, 8192, 8192);
        assert_eq!((tall.config.block_m, tall.config.block_n, tall.config.schedule), (256, 128, Schedule::WarpSpecialized { consumers: 2 }));
        let wide = pick(4096, 4096, 4096);
        assert_eq!((wide.config.block_m, wide.config.block_n), (128, 256));
        // Pinning the tile keeps it: 128x256 over two consumers at 8192^3.
        let pinned = choose(&bf16(8192, 8192, 8192), &Machine::H100, &Pins { block_n: Some(256), ..Pins::default() }).unwrap();
        assert_eq!((pinned.config.block_m, pinned.config.block_n, pinned.config.schedule), (128, 256, Schedule::WarpSpecialized { consumers: 2 }));
        assert!(!pinned.reason.contains("prefers_tall_shared_tiles"), "{}", pinned.reason);
        // Unpinned, --explain says why 256x128 and why not 128x256.
        let ranked = rank(&bf16(8192, 8192, 8192), &Machine::H100, &Pins::default());
        assert!(ranked[0].reason.contains("over 6 waves or more (policy `prefers_tall_shared_tiles`)"), "{}", ranked[0].reason);
        let wide = ranked.iter().find(|c| (c.config.block_m, c.config.block_n) == (128, 256)).expect("128x256 ranked");
        assert_eq!(wide.reason, "the 128x256 tile, which two consumers share as 256x128 over 6 waves or more (policy `prefers_tall_shared_tiles`)");
    }
}
