//! The epilogue's other forms: the pick with direct stores, and a
//! warp-specialised tile's TMA store in chunks.

use super::candidate::{Candidate, Epilogue, Pins};
use super::epilogue::keeps_output_swizzle;
use super::forms::rescheduled;
use super::problem::{Machine, Precision, Problem};
use super::tiles::BLOCK_N_STEP;

/// The direct-store alternative: the pick with direct stores, which frees the output
/// tile's shared memory for more stages (128x256: 4 stages instead of 3).
pub(super) fn direct_stores(problem: &Problem, machine: &Machine, pins: &Pins, best: &Candidate) -> Option<Candidate> {
    let c = best.config;
    if !matches!(c.epilogue, Epilogue::Tma { .. }) {
        return None;
    }
    rescheduled(problem, machine, pins, best, c.schedule, c.num_warps, Epilogue::Global)
}

/// The chunked epilogue: a BF16 warp-specialised tile whose TMA epilogue, stored
/// through a buffer half the tile wide that keeps the tile's swizzle,
/// leaves room for one more stage takes that stage (block-scaled FP8 keeps
/// its whole buffer: the stage gained it little, and 128x176 has no such
/// half). Its consumers wait for data when only two stages run ahead of
/// them. A chunk must keep the tile's swizzle: 88-column chunks of
/// 128x176, whose 176-byte rows no swizzle divides, ran slower with the
/// extra stage than without
/// (measured: docs/evidence.md, selection/epilogue_forms.rs, chunked_epilogue).
pub(super) fn chunked_epilogue(problem: &Problem, machine: &Machine, pins: &Pins, c: Candidate) -> Candidate {
    let Epilogue::Tma { columns } = c.config.epilogue else {
        return c;
    };
    if problem.precision != Precision::Bf16 {
        return c;
    }
    let half = columns / 2;
    if half % BLOCK_N_STEP != 0 || !keeps_output_swizzle(&c.config, columns, half) {
        return c;
    }
    match rescheduled(problem, machine, pins, &c, c.config.schedule, c.config.num_warps, Epilogue::Tma { columns: half }) {
        Some(chunked) if chunked.config.stages > c.config.stages => chunked,
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::Schedule;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::bf16;

    #[test]
    fn chunked_epilogues_keep_the_swizzle() {
        let problem = |precision| Problem { precision, ..bf16(4096, 24576, 1536) };
        let pinned = |precision, block_n| choose(&problem(precision), &Machine::H100, &Pins { block_n: Some(block_n), ..Pins::default() }).unwrap().config;
        // 128x256 over two consumers: 128-column halves keep the 128-byte
        // swizzle and free 32768 bytes, a fourth stage.
        let wide = pinned(Precision::Bf16, 256);
        assert_eq!((wide.schedule, wide.stages, wide.epilogue_chunk()), (Schedule::WarpSpecialized { consumers: 2 }, 4, Some(128)));
        assert_eq!(wide.smem_layout().smem_bytes(&problem(Precision::Bf16), 4), 229440);
        // 128x176: 352-byte rows take the 32-byte swizzle, 88-column halves
        // (176 bytes) none, so the whole buffer stays.
        let narrow = pinned(Precision::Bf16, 176);
        assert_eq!((narrow.schedule, narrow.epilogue_chunk()), (Schedule::WarpSpecialized { consumers: 2 }, None));
    }

    #[test]
    fn the_direct_store_alternative_gives_the_output_tile_to_stages() {
        let p = bf16(128, 32768, 512);
        let ranked = rank(&p, &Machine::H100, &Pins::default());
        let pick = &ranked[0];
        assert_eq!((pick.config.block_m, pick.config.block_n, pick.config.stages, pick.config.epilogue), (128, 256, 3, Epilogue::Tma { columns: 256 }));
        let direct = direct_stores(&p, &Machine::H100, &Pins::default(), pick).expect("a direct-store form");
        assert_eq!((direct.config.epilogue, direct.config.stages), (Epilogue::Global, 4));
        assert!(direct_stores(&p, &Machine::H100, &Pins::default(), &direct).is_none());
    }
}
