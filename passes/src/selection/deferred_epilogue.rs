//! The deferred epilogue: each output tile stored during the next tile's
//! first K steps.

use crate::cluster::Along;
use super::candidate::{Candidate, Config, Epilogue, Pins, Schedule};
use super::epilogue::keeps_output_swizzle;
use super::forms::rescheduled;
use super::problem::{ceil_div, Machine, Precision, Problem};

/// The deferred epilogue (`tile-defer-epilogue`) for a BF16 pick
/// that two consumers share, persistent, unclustered and without stream-K,
/// over at least [`DEFERRED_EPILOGUE_MIN_WAVES`] waves and
/// [`DEFERRED_EPILOGUE_MIN_K_BLOCKS`] K blocks, its output stored through a
/// buffer [`DEFERRED_EPILOGUE_COLUMNS`] wide, a chunk a K step: the stores
/// overlap the next tile's wgmma instead of idling the tensor cores. Where
/// the pick's output is one chunk, or its CTAs form clusters over a short
/// K, there is too little to overlap and it did not pay
/// (measured: docs/evidence.md, selection/deferred_epilogue.rs, deferred_epilogue and its
/// constants). A stream-K loop over tiles carries its pieces' state,
/// which the pass does not take.
pub(super) fn deferred_epilogue(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = &best.config;
    let Epilogue::Tma { columns } = c.epilogue else { return None };
    let chunks = c.block_n % DEFERRED_EPILOGUE_COLUMNS == 0 && c.block_n >= 2 * DEFERRED_EPILOGUE_COLUMNS;
    let applies = problem.precision == Precision::Bf16
        && takes_deferred_epilogue(problem, c)
        && chunks
        && keeps_output_swizzle(c, columns, DEFERRED_EPILOGUE_COLUMNS)
        && best.waves >= DEFERRED_EPILOGUE_MIN_WAVES
        && ceil_div(problem.k, c.block_k) >= DEFERRED_EPILOGUE_MIN_K_BLOCKS;
    if !applies {
        return None;
    }
    let chunked = rescheduled(problem, machine, pins, best, c.schedule, c.num_warps, Epilogue::Tma { columns: DEFERRED_EPILOGUE_COLUMNS })?;
    Some(Candidate { config: Config { deferred_epilogue: true, ..chunked.config }, ..chunked })
}

/// Whether `tile-defer-epilogue` takes `c` (two consumers sharing each
/// tile's rows, persistent, unclustered, its K loop whole and not shared
/// by stream-K, the TMA epilogue) and its consumers hold the carried tile,
/// BF16 pairs, beside the accumulators: at most
/// [`DEFERRED_CARRY_REGISTERS`] registers a thread in all.
pub(super) fn takes_deferred_epilogue(problem: &Problem, c: &Config) -> bool {
    let registers = problem.precision.accumulator_registers(c.block_m, c.block_n, 2);
    c.schedule == (Schedule::WarpSpecialized { consumers: 2 })
        && c.persistent()
        && c.cluster == Along::None
        && c.splits == 1
        && c.stream_k.is_none()
        && matches!(c.epilogue, Epilogue::Tma { .. })
        && !c.deferred_epilogue
        && registers.total + registers.running / 2 <= DEFERRED_CARRY_REGISTERS
}

/// The most registers a consumer thread of a deferred epilogue holds in
/// accumulators, partial sums and the carried tile: block-scaled FP8
/// 128x128 (160) and BF16 128x256 (192) spill nothing, FP8 128x176 (220)
/// spilled (measured: docs/evidence.md, selection/deferred_epilogue.rs,
/// takes_deferred_epilogue).
const DEFERRED_CARRY_REGISTERS: i64 = 192;

/// The deferred output buffer's columns, one 128-byte swizzle row
/// of BF16: wider chunks leave fewer K steps to spread the stores over,
/// narrower ones a narrower swizzle; 64 ran faster than 128 and 32
/// (measured: docs/evidence.md, selection/deferred_epilogue.rs,
/// deferred_epilogue and its constants).
pub(super) const DEFERRED_EPILOGUE_COLUMNS: i64 = 64;

/// The fewest K blocks over which the deferred epilogue measured
/// faster: a shorter K loop has fewer steps to hide the chunks in
/// (measured: docs/evidence.md, selection/deferred_epilogue.rs,
/// deferred_epilogue and its constants).
pub(super) const DEFERRED_EPILOGUE_MIN_K_BLOCKS: i64 = 64;

/// The fewest waves of tiles it measured faster over: the last
/// tile's stores stay exposed, a larger share of fewer tiles
/// (measured: docs/evidence.md, selection/deferred_epilogue.rs,
/// deferred_epilogue and its constants).
pub(super) const DEFERRED_EPILOGUE_MIN_WAVES: i64 = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::alternatives::alternatives;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::{bf16, fp8, pick};
    use tilec_dialects::tile::dot::SCALE_BLOCK_N;
    use tilec_target::Target;

    #[test]
    fn chunked_outputs_over_many_waves_and_a_long_k_defer_their_epilogue() {
        // 4096^3: 512 tiles of 128x256 over 4 waves and 64 K blocks, the
        // output in four 64-column chunks, one a K step; the same kernel
        // storing two 128-column chunks between tiles ranks next.
        let ranked = rank(&bf16(4096, 4096, 4096), &Machine::H100, &Pins::default());
        let (deferred, next) = (&ranked[0], &ranked[1]);
        assert!(deferred.config.deferred_epilogue && deferred.config.epilogue_chunk() == Some(64));
        assert_eq!((deferred.config.stages, deferred.smem_bytes), (4, 213056));
        assert!(deferred.reason.contains("; each tile stored during the next one's first K steps, 64 columns a step (policy `deferred_epilogue`"), "{}", deferred.reason);
        assert!(deferred.config.to_string().ends_with(" epilogue_cols=64 epilogue_deferred"), "{}", deferred.config);
        assert_eq!(next.config, Config { deferred_epilogue: false, epilogue: Epilogue::Tma { columns: 128 }, ..deferred.config });
        assert_eq!(next.reason, "the pick with each tile stored between its K loop and the next tile's (policy `deferred_epilogue`)");
        for (m, n, k) in [(4096, 4096, 7168), (4096, 7168, 16384)] {
            assert!(pick(m, n, k).config.deferred_epilogue, "{m}x{n}x{k}");
        }
        // Not with one chunk (128x176), in clusters over a short K, under
        // stream-K, over 2 waves or under 64 K blocks, nor for FP8.
        for (m, n, k) in [(4096, 2112, 7168), (4096, 32768, 512), (4096, 7168, 2048), (8192, 8192, 8192), (2048, 4096, 7168), (4096, 4096, 2048)] {
            assert!(!pick(m, n, k).config.deferred_epilogue, "{m}x{n}x{k}");
        }
        let deferred_for = |problem: Problem| choose(&problem, &Machine::H100, &Pins::default()).unwrap().config.deferred_epilogue;
        assert!(!deferred_for(fp8(4096, 4096, 4096)));
    }

    /// The deferred epilogue is weighed where it would hide an epilogue's
    /// work on the converted tile, in the forms the pass takes whose
    /// consumers hold the carried tile; a plain GEMM's or one whose
    /// epilogue works before the conversion gets no such alternative.
    #[test]
    fn deferred_forms_are_weighed_where_they_hide_work_after_the_conversion() {
        let machine = Machine::of(&Target::H200);
        let quantise = crate::cost_model::epilogue::EpilogueWork { lane_ops: 5, deferrable_lane_ops: 5, ..Default::default() };
        let gelu = crate::cost_model::epilogue::EpilogueWork { lane_ops: 6, sfu_ops: 1, ..Default::default() };
        let deferred_alternatives = |p: &Problem| {
            let ranked = rank(p, &machine, &Pins::default());
            alternatives(p, &machine, &Pins::default(), &ranked).into_iter().filter(|c| c.config.deferred_epilogue).collect::<Vec<_>>()
        };
        for (m, n, k) in [(4096, 24576, 1536), (4096, 7168, 2048), (4096, 4096, 7168)] {
            let scaled = Problem { b_scale_rows: Some(1), column_group: Some(SCALE_BLOCK_N), ..fp8(m, n, k) };
            let deferred = deferred_alternatives(&Problem { epilogue: quantise, ..scaled });
            assert!(!deferred.is_empty(), "{m}x{n}x{k}: no deferred form weighed");
            for c in &deferred {
                assert!(takes_deferred_epilogue(&scaled, &Config { deferred_epilogue: false, ..c.config }), "{m}x{n}x{k}: {}", c.config);
                assert_eq!((c.config.block_n, c.config.cluster), (SCALE_BLOCK_N, Along::None), "{}", c.config);
            }
            assert!(deferred_alternatives(&scaled).is_empty(), "{m}x{n}x{k}: a plain GEMM's forms deferred");
            assert!(deferred_alternatives(&Problem { epilogue: gelu, ..scaled }).is_empty(), "{m}x{n}x{k}: work before the conversion deferred");
        }
        // The carried tile fits beside 128x128's accumulators and partials
        // (160 registers), not beside 128x176's (220).
        let fp8_tile = |bn| Config { block_n: bn, schedule: Schedule::WarpSpecialized { consumers: 2 }, num_warps: 12, epilogue: Epilogue::Tma { columns: bn }, ..Config::neutral((128, bn, 128)) };
        let scaled = fp8(4096, 4096, 7168);
        assert!(fp8_tile(128).persistent() && takes_deferred_epilogue(&scaled, &fp8_tile(128)));
        assert!(!takes_deferred_epilogue(&scaled, &fp8_tile(176)));
    }
}
