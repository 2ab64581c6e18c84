//! Tall shared tiles: two consumers sharing 256x128 instead of 128x256 over many waves.

use super::candidate::{Candidate, Pins, Schedule};
use super::problem::{Precision, Problem};

/// Rule 16's conditions besides the tile: BF16, at least
/// [`TALL_SHARED_WAVES`] waves, and pins that leave the tile's shape.
pub(super) fn tall_sharing_applies(problem: &Problem, pins: &Pins, waves: i64) -> bool {
    problem.precision == Precision::Bf16 && waves >= TALL_SHARED_WAVES && pins.block_m.is_none() && pins.block_n.is_none()
}

/// Whether rule 16 made `c` (a pick) two consumers sharing 256x128.
pub(super) fn shares_tall_tile(problem: &Problem, pins: &Pins, c: &Candidate) -> bool {
    let shared = (c.config.block_m, c.config.block_n) == (256, 128) && c.config.schedule == (Schedule::WarpSpecialized { consumers: 2 });
    shared && tall_sharing_applies(problem, pins, c.waves)
}

/// Rule 16: the fewest waves of 128x256 tiles over which two consumers
/// share 256x128 ones instead: the taller tile gained over many waves,
/// nothing over four and less over two
/// (measured: docs/evidence.md, config_rules.rs, TALL_SHARED_WAVES).
pub(super) const TALL_SHARED_WAVES: i64 = 6;
