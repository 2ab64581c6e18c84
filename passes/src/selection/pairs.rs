//! Block-scaled CTAs two to an SM, each with the stages of half its shared
//! memory.

use super::candidate::{Candidate, Pins, Schedule, SplitReduce};
use super::forms::tile_candidate;
use super::problem::{Machine, Precision, Problem};

/// The fewest stages each CTA of a pair keeps.
const MIN_PAIRED_STAGES: i64 = 3;

/// Pairs, for [`one_wave_of_pairs`] and
/// `paired_split_k`: `tile` in the plain pipeline, shared by
/// `splits` CTAs, with the stages that fit half an SM's shared memory
/// (at least [`MIN_PAIRED_STAGES`]), in one wave; `None` otherwise. Only
/// for one block-scaled GEMM (not batched or grouped), where they were
/// measured.
pub(super) fn paired_candidate(problem: &Problem, machine: &Machine, pins: &Pins, tile: (i64, i64, i64), splits: i64) -> Option<Candidate> {
    if problem.precision != Precision::Fp8BlockScaled || !problem.clusterable || problem.varying_k {
        return None;
    }
    tile_candidate(problem, &machine.paired(), pins, tile, splits, SplitReduce::Cluster).filter(|pairs| pairs.waves == 1 && pairs.config.stages >= MIN_PAIRED_STAGES)
}

/// One wave of pairs: a pipelined block-scaled `best` over two waves one
/// to an SM, as one wave two to an SM, each with the stages that fit half
/// an SM (at least [`MIN_PAIRED_STAGES`]), for one GEMM (not batched or
/// grouped): two CTAs' promotions then overlap on each SM. Where the pairs
/// would still take two waves or more they ran slower.
pub(super) fn one_wave_of_pairs(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    if c.schedule != Schedule::Pipeline || best.waves != 2 {
        return None;
    }
    paired_candidate(problem, machine, pins, (c.block_m, c.block_n, c.block_k), c.splits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::fp8;

    #[test]
    fn block_scaled_ctas_pair_up_on_an_sm_where_that_makes_one_wave() {
        // The benchmark program's problem: tiles of B at any offset into a scale block.
        let scaled = |m, n, k| Problem { b_scale_rows: Some(3), ..fp8(m, n, k) };
        let pick = |m, n, k| choose(&scaled(m, n, k), &Machine::H100, &Pins::default()).unwrap();
        let form = |c: &Candidate| (c.config.block_m, c.config.block_n, c.config.splits, c.config.stages, c.config.schedule, c.waves);
        // Two rows of 64x64 tiles over 56 K blocks: split over the most CTAs
        // that run two to an SM (3 a tile, 198, in clusters of three on 4/5
        // of the SMs; 2 a tile, 256), each with the 5 stages that fit half.
        assert_eq!(form(&pick(128, 2112, 7168)), (64, 64, 3, 5, Schedule::Pipeline, 1));
        assert_eq!(form(&pick(128, 4096, 7168)), (64, 64, 2, 5, Schedule::Pipeline, 1));
        let pairs = pick(128, 4096, 7168);
        assert!(pairs.smem_bytes <= Machine::H100.paired().smem_bytes && Machine::H100.ctas_per_sm(pairs.smem_bytes) == 2);
        // One row of tiles (each B tile read once) keeps one CTA an SM and 8 stages.
        assert_eq!(form(&pick(64, 4096, 7168)), (64, 64, 2, 8, Schedule::Pipeline, 1));
        // 192 tiles of 64x128: two waves one to an SM, one wave two to an SM
        // with 3 stages each; the unpaired tile stays ranked, behind.
        let ranked = rank(&scaled(64, 24576, 1536), &Machine::H100, &Pins::default());
        assert_eq!(form(&ranked[0]), (64, 128, 1, 3, Schedule::Pipeline, 1));
        assert!(ranked[0].reason.starts_with("picked: fewest waves (1 of 2 CTAs an SM)") && ranked[0].reason.contains("the most stages that fit (3, in 1/2 of an SM)"), "{}", ranked[0].reason);
        let unpaired = ranked.iter().find(|c| form(c) == (64, 128, 1, 8, Schedule::Pipeline, 2) && c.config.epilogue == ranked[0].config.epilogue);
        assert_eq!(unpaired.map(|c| c.reason.as_str()), Some("more waves (2 > 1)"));
        // Pairs that would keep 2 stages each are not made (192x4096x4096:
        // 64x128 split in two), nor for BF16, batched or grouped GEMMs.
        assert_eq!(pick(192, 4096, 4096).config.splits, 1);
        assert_eq!(choose(&Problem { precision: Precision::Bf16, ..scaled(128, 4096, 7168) }, &Machine::H100, &Pins::default()).unwrap().config.splits, 1);
        let grouped = Problem { clusterable: false, varying_k: true, ..scaled(64, 24576, 1536) };
        assert_eq!(choose(&grouped, &Machine::H100, &Pins::default()).unwrap().waves, 2);
    }
}
