//! How the output tile is stored: the TMA store where it can, else direct
//! stores.

use super::candidate::{Config, Epilogue, Schedule};
use super::problem::Problem;
use super::smem::OUTPUT_ELEM_BITS;
use super::tiles::NARROW_BLOCK_N;

/// The TMA store where it can, which ran faster than direct stores in both
/// schedules; it needs rows of C a multiple of [`TMA_ROW_ALIGN_BYTES`]
/// long (and a kernel for any N cannot count on that). A warp-specialised
/// tile at most [`NARROW_BLOCK_N`] wide stores directly: its store of a few
/// kilobytes is no work to hide, and the round trip through shared memory
/// costs more than it saves. So does an output buffer whose rows no
/// swizzle divides (rows an odd multiple of 16 bytes: a column-halves
/// consumer's 88 of a 176-column tile): unswizzled, it goes out in strips
/// 16 bytes wide, half a 32-byte sector of each row a TMA store, and
/// measured slower than storing directly (docs/evidence.md,
/// selection/epilogue.rs, unswizzled output buffers). A column-major
/// output is stored directly: a TMA store writes the tile's rows.
pub(super) fn epilogue_for(problem: &Problem, block_n: i64, schedule: Schedule) -> Epilogue {
    let narrow_specialised = schedule != Schedule::Pipeline && block_n <= NARROW_BLOCK_N;
    let unswizzled = crate::layout_rules::swizzle_bytes(block_n, (8 * problem.output_bytes) as u32, crate::layout_rules::SWIZZLE_ROWS) == 0;
    if !problem.any_n && !problem.output_column_major && (problem.n * problem.output_bytes) % TMA_ROW_ALIGN_BYTES == 0 && !narrow_specialised && !unswizzled {
        Epilogue::Tma { columns: block_n }
    } else {
        Epilogue::Global
    }
}

/// The alignment TMA needs of a row of C, in bytes.
const TMA_ROW_ALIGN_BYTES: i64 = 16;

/// Whether an output buffer `chunk` columns wide swizzles C's rows as widely
/// as one `columns` wide does for `c`'s tile (`deferred_epilogue` chunks
/// only so; `chunked_epilogue` takes a narrower one down to
/// `CHUNK_SWIZZLE_BYTES`).
pub(super) fn keeps_output_swizzle(c: &Config, columns: i64, chunk: i64) -> bool {
    output_swizzle_bytes(c, chunk) >= output_swizzle_bytes(c, columns)
}

/// The swizzle, in bytes, of an output buffer `columns` wide for `c`'s tile
/// (0: none).
pub(super) fn output_swizzle_bytes(c: &Config, columns: i64) -> u32 {
    crate::layout_rules::swizzle_bytes(columns, OUTPUT_ELEM_BITS, c.block_m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::testing::bf16;

    #[test]
    fn the_tma_store_where_rows_align_and_a_tile_is_not_narrow_and_specialised() {
        let ws = Schedule::WarpSpecialized { consumers: 1 };
        assert_eq!(epilogue_for(&bf16(4096, 4096, 4096), 256, Schedule::Pipeline), Epilogue::Tma { columns: 256 });
        assert_eq!(epilogue_for(&bf16(64, 2112, 7168), NARROW_BLOCK_N, Schedule::Pipeline), Epilogue::Tma { columns: NARROW_BLOCK_N });
        // A warp-specialised tile at most 32 columns wide stores directly.
        assert_eq!(epilogue_for(&bf16(64, 2112, 7168), NARROW_BLOCK_N, ws), Epilogue::Global);
        assert_eq!(epilogue_for(&bf16(64, 2112, 7168), 2 * NARROW_BLOCK_N, ws), Epilogue::Tma { columns: 2 * NARROW_BLOCK_N });
        // Rows of 4100 BF16 (8200 bytes) are not 16-byte aligned; nor
        // need a kernel for any N's be.
        assert_eq!(epilogue_for(&bf16(4096, 4100, 4096), 128, Schedule::Pipeline), Epilogue::Global);
        assert_eq!(epilogue_for(&Problem { any_n: true, ..bf16(4096, 4096, 4096) }, 128, Schedule::Pipeline), Epilogue::Global);
        // A buffer of 88 columns (176 bytes) no swizzle divides stores directly.
        assert_eq!(epilogue_for(&bf16(12000, 640, 384), 88, Schedule::ColumnHalves), Epilogue::Global);
        assert_eq!(epilogue_for(&bf16(12000, 640, 384), 80, Schedule::ColumnHalves), Epilogue::Tma { columns: 80 });
        // One-byte outputs need N a multiple of 16.
        assert_eq!(epilogue_for(&Problem { output_bytes: 1, ..bf16(4096, 4104, 4096) }, 128, Schedule::Pipeline), Epilogue::Global);
    }
}
