//! The epilogue's other forms: the pick with direct stores, and a
//! warp-specialised tile's TMA store in chunks.

use super::candidate::{Candidate, Epilogue, Pins};
use super::epilogue::output_swizzle_bytes;
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
/// through a buffer half the tile wide whose rows still take a swizzle of
/// at least [`CHUNK_SWIZZLE_BYTES`], leaves room for one more stage takes
/// that stage (block-scaled FP8 keeps its whole buffer: the stage gained it
/// little, and 128x176 has no such half). Its consumers wait for data when
/// only two stages run ahead of them
/// (measured: docs/evidence.md, selection/epilogue_forms.rs, chunked_epilogue).
pub(super) fn chunked_epilogue(problem: &Problem, machine: &Machine, pins: &Pins, c: Candidate) -> Candidate {
    let Epilogue::Tma { columns } = c.config.epilogue else {
        return c;
    };
    if problem.precision != Precision::Bf16 {
        return c;
    }
    let half = columns / 2;
    if half % BLOCK_N_STEP != 0 || output_swizzle_bytes(&c.config, half) < CHUNK_SWIZZLE_BYTES {
        return c;
    }
    match rescheduled(problem, machine, pins, &c, c.config.schedule, c.config.num_warps, Epilogue::Tma { columns: half }) {
        Some(chunked) if chunked.config.stages > c.config.stages => chunked,
        _ => c,
    }
}

/// The narrowest swizzle of a chunk's rows that is worth its extra stage:
/// chunks of 64-byte swizzled rows (128x192's 96 columns, the 32 of a
/// 192x128 tile whose consumers share its columns) ran faster than the
/// whole tile's buffer with one stage less; those of 32-byte swizzled rows
/// (128x224's 112 columns) ran slower, and unswizzled ones (128x176's 88)
/// slower still (measured: docs/evidence.md, selection/epilogue_forms.rs,
/// chunked_epilogue).
const CHUNK_SWIZZLE_BYTES: u32 = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::candidate::Schedule;
    use crate::selection::rank::{choose, rank};
    use crate::selection::testing::bf16;

    #[test]
    fn chunked_epilogues_keep_a_64_byte_swizzle() {
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
        // 128x192: 96-column halves (192 bytes) take the 64-byte swizzle
        // where the tile's rows take 128: a fifth stage.
        let halves = pinned(Precision::Bf16, 192);
        assert_eq!((halves.stages, halves.epilogue_chunk()), (5, Some(96)));
        // 128x224: 112-column halves (224 bytes) take only the 32-byte one.
        let thin = pinned(Precision::Bf16, 224);
        assert_eq!(thin.epilogue_chunk(), None);
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
