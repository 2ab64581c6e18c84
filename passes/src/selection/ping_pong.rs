//! Ping-pong consumers: two warpgroups that take turns at whole tiles.

use super::candidate::{Candidate, Pins, Schedule};
use super::epilogue::epilogue_for;
use super::forms::rescheduled;
use super::problem::{Machine, Precision, Problem};
use super::schedule::PERSISTENT_WAVES;

/// Where ping-pong consumers are the pick: block-scaled FP8 at most
/// [`FP8_PING_PONG_MAX_M`] rows tall with at least [`FP8_PING_PONG_K_BLOCKS`]
/// K blocks, where the pick is warp-specialised over at least
/// [`PERSISTENT_WAVES`] waves, takes the ping-pong consumers (64-row tiles
/// in turn): one consumer's promotion overlaps the other's tile. With a
/// short K, or over one wave, where a CTA has one tile, the second consumer
/// has nothing to take turns at
/// (measured: docs/evidence.md, selection/ping_pong.rs, prefers_ping_pong).
pub(super) fn prefers_ping_pong(problem: &Problem, best: &Candidate) -> bool {
    let k_blocks = problem.k_blocks();
    problem.precision == Precision::Fp8BlockScaled
        && problem.m <= FP8_PING_PONG_MAX_M
        && k_blocks >= FP8_PING_PONG_K_BLOCKS
        && best.waves >= PERSISTENT_WAVES
        && matches!(best.config.schedule, Schedule::WarpSpecialized { .. })
}

/// The tallest block-scaled FP8 problem whose warp-specialised pick goes to
/// ping-pong consumers: M of one 128-row tile (two 64-row tiles in turn).
const FP8_PING_PONG_MAX_M: i64 = 128;

/// The fewest K blocks over which block-scaled FP8's ping-pong
/// consumers beat the warp-specialised pick at M <= [`FP8_PING_PONG_MAX_M`].
const FP8_PING_PONG_K_BLOCKS: i64 = 12;

/// The ping-pong alternative: the best-ranked tile whose accumulators
/// one consumer warpgroup holds, split over two consumers that take turns at
/// whole tiles, persistent. Ranked as an alternative, not picked (except
/// where [`prefers_ping_pong`] says): where a tile two warpgroups share
/// fits, they measured below it. None where the K loop's trip count is data (a
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
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8, TMA};

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
        // by `compare`), with an output tile per consumer: 4 stages of 40960
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

    #[test]
    fn short_block_scaled_problems_over_two_waves_or_more_take_ping_pong() {
        let pins = Pins { block_n: Some(128), ..Pins::default() };
        let schedule = |m, n, k| choose(&fp8(m, n, k), &Machine::H100, &pins).unwrap().config.schedule;
        // 128x24576x1536: 12 K blocks, 2 waves of 128x128 over two consumers.
        assert_eq!(schedule(128, 24576, 1536), Schedule::PingPong);
        // 4 K blocks, one wave, or more than 128 rows: not.
        assert_ne!(schedule(128, 32768, 512), Schedule::PingPong);
        assert_ne!(schedule(128, 7168, 16384), Schedule::PingPong);
        assert_ne!(schedule(256, 24576, 1536), Schedule::PingPong);
    }
}
