//! Waves of tiles over the SMs, and the order that ranks candidates by them: fewest waves, fullest last wave, least padded work, widest N.

use std::cmp::Ordering;
use super::candidate::{Candidate, Config, Schedule};
use super::problem::{ceil_div, Machine, Precision, Problem};
use tilec_target::fewest_keeping_turns;

/// Rules 2, 3 and 9 for `c`: its waves, the SMs its last wave keeps busy,
/// and the fewest SMs that keep the waves. A wave is the CTAs the GPU runs
/// at once: in the plain pipeline, R to an SM where its shared memory and
/// registers let R share one and they make more than two such waves (rule
/// 6 fills shared memory unless K is short, so most tiles run one to an
/// SM), or, block-scaled, where they are more than the SMs and R to an SM
/// runs them all at once; a persistent kernel runs one CTA an SM.
pub(super) fn with_waves(problem: &Problem, machine: &Machine, mut c: Candidate) -> Candidate {
    let ctas = c.tiles * c.config.splits;
    let resident = match c.config.schedule {
        Schedule::Pipeline => {
            let accumulators = problem.precision.accumulator_registers(c.config.block_m, c.config.block_n, c.config.tile_warpgroups()).total;
            let fit = machine.ctas_per_sm(c.smem_bytes).min(machine.ctas_per_sm_by_registers(c.config.num_warps, accumulators));
            let held_at_once = problem.precision == Precision::Fp8BlockScaled && ctas > machine.sms && ctas <= machine.sms * fit;
            if fit > 1 && (ctas > 2 * machine.sms * fit || held_at_once) {
                fit
            } else {
                1
            }
        }
        Schedule::WarpSpecialized { .. } | Schedule::PingPong | Schedule::ColumnHalves => 1,
    };
    let at_once = machine.sms * resident;
    c.waves = ceil_div(ctas, at_once);
    c.last_wave = ceil_div(ctas - (c.waves - 1) * at_once, resident);
    c.sms = ceil_div(ctas, c.waves * resident);
    c
}

/// Rules 2-5 as an order: the better candidate first.
pub(super) fn compare(a: &Candidate, b: &Candidate) -> Ordering {
    let padded = |c: &Candidate| c.tiles * c.config.block_m * c.config.block_n;
    a.waves
        .cmp(&b.waves)
        .then(b.last_wave.cmp(&a.last_wave))
        .then(padded(a).cmp(&padded(b)))
        .then(b.config.block_n.cmp(&a.config.block_n))
        .then(a.config.block_m.cmp(&b.config.block_m))
}

/// The time rule 2's waves take, in elements of C an SM computes: waves
/// times the tiles an SM runs at once times their area (fewer waves of
/// wider tiles are not less work).
pub(super) fn wave_work(c: &Candidate) -> i64 {
    let resident = ceil_div(c.tiles * c.config.splits, c.waves * c.sms);
    c.waves * resident * c.config.block_m * c.config.block_n
}

/// The CTAs the launcher starts for a persistent candidate: the fewest
/// whole clusters that keep the busiest one's turns over the tiles, or the
/// pairs of tiles 2-CTA clusters walk (the manifest's `wave_tile`). Over
/// single tiles that is [`with_waves`]' count; over pairs that count can
/// be odd.
pub(super) fn persistent_sms(problem: &Problem, machine: &Machine, c: &Config) -> i64 {
    let [pair_m, pair_n] = c.cluster.tiles();
    let units = ceil_div(ceil_div(problem.m, c.block_m), pair_m) * ceil_div(ceil_div(problem.n, c.block_n), pair_n);
    let cluster = pair_m * pair_n;
    cluster * fewest_keeping_turns(units as u64, (machine.sms / cluster) as u64) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::Pins;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{fp8, pick};

    #[test]
    fn co_resident_ctas_make_a_wave_over_many_tiles() {
        let pins = Pins { block_n: Some(128), ..Pins::default() };
        // 64x128 tiles with 3 stages and staged scales (K is 4 blocks; rule
        // 11) take 91160 bytes and 168 registers a thread: two to an SM,
        // 16384 of them in 63 waves,
        // as many as 8192 128x128 tiles one to an SM; rule 5 ranks the
        // narrower M first, and rule 7 then grows it to 128 rows over two
        // consumers (block-scaled FP8 over many waves).
        let ranked = rank(&fp8(4096, 32768, 512), &Machine::H100, &pins);
        let pipelined = ranked.iter().find(|c| c.config.schedule == Schedule::Pipeline).expect("the pipelined tile");
        assert_eq!((pipelined.config.block_m, pipelined.config.num_warps, pipelined.config.stages, pipelined.waves, pipelined.last_wave), (64, 4, 3, 63, 8));
        assert_eq!(Machine::H100.ctas_per_sm(pipelined.smem_bytes), 2);
        let pick = &ranked[0];
        assert_eq!((pick.config.block_m, pick.config.schedule, pick.waves), (128, Schedule::WarpSpecialized { consumers: 2 }, 63));
        // Over two waves or fewer the tiles count one to an SM.
        let two_waves = choose(&fp8(128, 32768, 512), &Machine::H100, &pins).expect("a pick");
        assert_eq!((two_waves.config.block_m, two_waves.waves), (128, 2));
        assert_eq!(Machine::H100.ctas_per_sm_by_registers(8, 128), 1);
        assert_eq!(Machine::H100.ctas_per_sm_by_registers(4, 128), 3);
    }

    #[test]
    fn fewest_sms_that_keep_the_waves() {
        // 512 tiles in 4 waves need ceil(512/4) = 128 SMs, not 132.
        assert_eq!(pick(4096, 4096, 4096).sms, 128);
        // 128 tiles in one wave: 128 SMs.
        assert_eq!(pick(64, 24576, 1536).sms, 128);
    }
}
