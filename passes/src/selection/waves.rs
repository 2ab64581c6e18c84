//! Waves of tiles over the SMs, and the order that ranks candidates by them:
//! fewest waves, fullest last wave, least padded work, widest N.

use std::cmp::Ordering;
use super::candidate::{Candidate, Config, Schedule};
use super::problem::{ceil_div, Machine, Precision, Problem};
use tilec_target::fewest_keeping_turns;

/// The waves of `c`: its waves, ceil(CTAs / (SMs * R)), the SMs its last
/// wave keeps busy, and the fewest SMs that keep the waves,
/// ceil(CTAs / waves). A wave is the CTAs the GPU runs at once: in the
/// plain pipeline, R to an SM where its shared memory and registers let R
/// share one and they make more than [`CO_RESIDENT_MIN_WAVES`] such waves
/// (the stages fill shared memory unless K is short, so most tiles run one
/// to an SM), or, block-scaled, where they are more than the SMs and R to
/// an SM runs them all at once; a persistent kernel runs one CTA an SM.
/// Co-resident CTAs pay over a short K and many tiles, where one CTA's
/// prologue and epilogue run beside the other's main loop; over fewer
/// waves the smaller tile that lets two share an SM ran slower.
pub(super) fn with_waves(problem: &Problem, machine: &Machine, mut c: Candidate) -> Candidate {
    let ctas = c.tiles * c.config.splits;
    let resident = match c.config.schedule {
        Schedule::Pipeline => {
            let accumulators = problem.precision.accumulator_registers(c.config.block_m, c.config.block_n, c.config.tile_warpgroups()).total;
            let fit = machine.ctas_per_sm(c.smem_bytes).min(machine.ctas_per_sm_by_registers(c.config.num_warps, accumulators));
            let held_at_once = problem.precision == Precision::Fp8BlockScaled && ctas > machine.sms && ctas <= machine.sms * fit;
            if fit > 1 && (ctas > CO_RESIDENT_MIN_WAVES * machine.sms * fit || held_at_once) {
                fit
            } else {
                1
            }
        }
        Schedule::WarpSpecialized { .. } | Schedule::PingPong | Schedule::ColumnHalves => 1,
    };
    let at_once = machine.sms_for(&c.config) * resident;
    c.waves = ceil_div(ctas, at_once);
    c.last_wave = ceil_div(ctas - (c.waves - 1) * at_once, resident);
    c.sms = ceil_div(ctas, c.waves * resident);
    c
}

/// The waves of co-resident CTAs that a plain pipeline's tiles must exceed
/// to count R to an SM ([`with_waves`]).
const CO_RESIDENT_MIN_WAVES: i64 = 2;

/// The ranking's order, the better candidate first: fewest waves; then the
/// fullest last wave (the SMs it keeps busy); then the least padded work
/// (tiles * BM * BN, the elements computed including those past M and N);
/// then the widest N, since a wider tile re-reads A fewer times; then the
/// narrowest M.
pub(super) fn compare(a: &Candidate, b: &Candidate) -> Ordering {
    let padded = |c: &Candidate| c.tiles * c.config.block_m * c.config.block_n;
    a.waves
        .cmp(&b.waves)
        .then(b.last_wave.cmp(&a.last_wave))
        .then(padded(a).cmp(&padded(b)))
        .then(b.config.block_n.cmp(&a.config.block_n))
        .then(a.config.block_m.cmp(&b.config.block_m))
}

/// The time [`with_waves`]' waves take, in elements of C an SM computes: waves
/// times the tiles an SM runs at once times their area (fewer waves of
/// wider tiles are not less work).
pub(super) fn wave_work(c: &Candidate) -> i64 {
    let resident = ceil_div(c.tiles * c.config.splits, c.waves * c.sms);
    c.waves * resident * c.config.block_m * c.config.block_n
}

/// The CTAs the launcher starts for a persistent candidate: the fewest
/// whole clusters that keep the busiest one's turns over the tiles, or the
/// runs of tiles clusters walk (the manifest's `wave_tile`). Over single
/// tiles that is [`with_waves`]' count; over runs that count can be odd.
pub(super) fn persistent_sms(problem: &Problem, machine: &Machine, c: &Config) -> i64 {
    let [run_m, run_n] = c.cluster.tiles(c.cluster_ctas);
    let units = ceil_div(ceil_div(problem.m, c.block_m), run_m) * ceil_div(ceil_div(problem.n, c.block_n), run_n);
    let cluster = run_m * run_n;
    cluster * fewest_keeping_turns(units as u64, (machine.sms_for(c) / cluster) as u64) as i64
}

/// `config`'s figures for `problem` (tiles, waves, the SMs it runs on,
/// shared memory), as [`rank`](fn@super::rank) lists them: what the cost model reads of a
/// configuration taken from elsewhere (a measurement, a tuning file).
pub fn figures(problem: &Problem, machine: &Machine, config: Config) -> Candidate {
    let tiles = ceil_div(problem.m, config.block_m) * ceil_div(problem.n, config.block_n);
    let smem_bytes = config.smem_layout().smem_bytes(problem, config.stages);
    let mut c = with_waves(problem, machine, Candidate { config, tiles, waves: 0, last_wave: 0, sms: 0, smem_bytes, reason: String::new() });
    if config.stream_k.is_some() || (config.schedule != Schedule::Pipeline && !config.persistent()) {
        c.sms = machine.sms_for(&config);
    } else if config.persistent() {
        c.sms = persistent_sms(problem, machine, &config);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::{Pins, SplitReduce};
    use crate::selection::forms::tile_candidate;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8, pick};

    #[test]
    fn co_resident_ctas_make_a_wave_over_many_tiles() {
        let pins = Pins { block_n: Some(128), ..Pins::default() };
        // 64x128 tiles with 3 stages and staged scales (K is 4 blocks;
        // `stages_and_scales`) take 91160 bytes and 168 registers a thread: two to an SM,
        // 16384 of them in 63 waves,
        // as many as 8192 128x128 tiles one to an SM; `compare` ranks the
        // narrower M first, and `two_consumer_tile` then grows it to 128 rows over two
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

    #[test]
    fn fewer_waves_then_a_fuller_last_wave_then_less_padding_then_wider_n_rank_first() {
        let p = bf16(4096, 4096, 4096);
        let tile = |bm, bn| tile_candidate(&p, &Machine::H100, &Pins::default(), (bm, bn, 64), 1, SplitReduce::Cluster).expect("a tile that fits");
        let first = |a: &Candidate, b: &Candidate| compare(a, b) == Ordering::Less && compare(b, a) == Ordering::Greater;
        // 128x256: 512 tiles in 4 waves; 128x128: 1024 in 8.
        assert!(first(&tile(128, 256), &tile(128, 128)));
        // Same waves, same last wave and padding: the wider N.
        let (wide, tall) = (tile(128, 256), tile(256, 128));
        assert_eq!((wide.waves, wide.last_wave), (tall.waves, tall.last_wave));
        assert!(first(&wide, &tall));
        // Same waves: the fuller last wave, even with more padding.
        let fuller = Candidate { last_wave: wide.last_wave + 1, tiles: wide.tiles + 1, ..wide.clone() };
        assert!(first(&fuller, &wide));
        // Same waves and last wave: less padded work.
        let padded = Candidate { tiles: wide.tiles + 1, ..wide.clone() };
        assert!(first(&wide, &padded));
        // Everything equal but M: the narrower.
        let narrower_m = Candidate { config: Config { block_m: 64, ..wide.config }, tiles: 2 * wide.tiles, ..wide.clone() };
        assert!(first(&narrower_m, &wide));
    }
}
