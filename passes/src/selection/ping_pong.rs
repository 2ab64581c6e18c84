//! Ping-pong consumers: two warpgroups that take turns at whole tiles.

use super::candidate::{Candidate, Pins, Schedule};
use super::epilogue::epilogue_for;
use super::problem::{Machine, Precision, Problem};
use super::schedule::{PERSISTENT_WAVES, rescheduled};

/// Rule 7's ping-pong exception: block-scaled FP8 at most 128 rows tall
/// with at least [`FP8_PING_PONG_K_BLOCKS`] K blocks, where the pick is
/// warp-specialised over at least [`PERSISTENT_WAVES`] waves, takes the
/// ping-pong consumers (64-row tiles in turn). Over one wave a CTA has one
/// tile and the second consumer nothing to take turns at
/// (measured: docs/evidence.md, config_rules.rs, prefers_ping_pong).
pub(super) fn prefers_ping_pong(problem: &Problem, best: &Candidate) -> bool {
    let k_blocks = problem.k_blocks();
    problem.precision == Precision::Fp8BlockScaled
        && problem.m <= 128
        && k_blocks >= FP8_PING_PONG_K_BLOCKS
        && best.waves >= PERSISTENT_WAVES
        && matches!(best.config.schedule, Schedule::WarpSpecialized { .. })
}

/// Rule 7: the fewest K blocks over which block-scaled FP8's ping-pong
/// consumers beat the warp-specialised pick at M <= 128.
const FP8_PING_PONG_K_BLOCKS: i64 = 12;

/// Rule 7's ping-pong alternative: the best-ranked tile whose accumulators
/// one consumer warpgroup holds, split over two consumers that take turns at
/// whole tiles, persistent. None where the K loop's trip count is data (a
/// masked grouped GEMM: a consumer could not count the other's K steps), or
/// where the dot reads A from registers: a consumer of two holds a whole
/// tile's accumulators and A's fragments in 232 registers (128x128
/// spilled).
pub(super) fn ping_pong(problem: &Problem, machine: &Machine, pins: &Pins, ranked: &[Candidate]) -> Option<Candidate> {
    if problem.varying_k || problem.a_in_registers {
        return None;
    }
    let fits_one_warpgroup = |c: &&Candidate| problem.precision.accumulator_registers(c.config.block_m, c.config.block_n, 1).fit_alone();
    let tile = ranked.iter().find(fits_one_warpgroup)?;
    let schedule = Schedule::PingPong;
    let pingpong = rescheduled(problem, machine, pins, tile, schedule, 12, epilogue_for(problem, tile.config.block_n, schedule))?;
    Some(pingpong).filter(|p| p.config.stages >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::rank::rank;
    use crate::selection::testing::{bf16, TMA};

    #[test]
    fn a_in_registers_takes_no_ping_pong_consumers() {
        let tile = Pins { block_m: Some(128), block_n: Some(128), ..Pins::default() };
        // A 128x128 tile (the A-in-registers example's) over many waves has a
        // ping-pong alternative, but not when the dot reads A from registers.
        let has_ping_pong = |p: Problem| rank(&p, &Machine::H100, &tile).iter().any(|c| c.config.schedule == Schedule::PingPong);
        assert!(has_ping_pong(bf16(4096, 4096, 4096)));
        assert!(!has_ping_pong(Problem { a_in_registers: true, ..bf16(4096, 4096, 4096) }));
        assert!(!rank(&Problem { a_in_registers: true, ..bf16(4096, 4096, 4096) }, &Machine::H100, &tile).is_empty());
    }

    #[test]
    fn ping_pong_is_ranked_not_picked() {
        let p = bf16(4096, 4096, 4096);
        let ranked = rank(&p, &Machine::H100, &Pins::default());
        assert_ne!(ranked[0].config.schedule, Schedule::PingPong);
        // The best tile one warpgroup's registers hold (64x256 before 128x128
        // by rule 5), with an output tile per consumer: 4 stages of 40960
        // bytes, 2 * 32768 for the outputs, 10 barriers.
        let pingpong = ranked.iter().find(|c| c.config.schedule == Schedule::PingPong).expect("a ping-pong alternative");
        assert_eq!((pingpong.config.block_m, pingpong.config.block_n, pingpong.config.stages, pingpong.config.epilogue.word()), (64, 256, 4, TMA));
        assert_eq!(pingpong.smem_bytes, 4 * 40960 + 2 * 32768 + 10 * 8);
        assert_eq!(pingpong.reason, "ping-pong alternative: two consumers take turns at whole 64x256 tiles");
        // Block-scaled FP8 adds its partial product: 64x128 (64 + 64 registers).
        let fp8 = rank(&Problem { precision: Precision::Fp8BlockScaled, ..p }, &Machine::H100, &Pins { block_n: Some(128), ..Pins::default() });
        let fp8_pingpong = fp8.iter().find(|c| c.config.schedule == Schedule::PingPong).expect("an FP8 ping-pong alternative");
        assert_eq!((fp8_pingpong.config.block_m, fp8_pingpong.config.block_n), (64, 128));
        // A masked grouped GEMM's K loop is data: no ping-pong.
        let masked = rank(&Problem { varying_k: true, ..p }, &Machine::H100, &Pins::default());
        assert!(masked.iter().all(|c| c.config.schedule != Schedule::PingPong));
    }
}
