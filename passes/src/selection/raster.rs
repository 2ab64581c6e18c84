//! The order in which the plain pipeline's CTAs take their tiles.

use crate::cluster::Along;
use super::candidate::{Candidate, Schedule};
use super::problem::{ceil_div, Machine, Problem};

/// Tile rows per group of the grouped tile order.
const RASTER_GROUP: i64 = 8;

/// Grouped tile order: [`RASTER_GROUP`] for a plain pipeline without clusters or
/// splits over more than one wave, more tile rows than a group and an A
/// larger than L2; 0 (the grid's order) otherwise, and for a masked
/// grouped GEMM, whose experts each hold a few rows of tiles. In the grid's
/// column-by-column order the CTAs running at once cover every row of A
/// and so stream all of it from memory for each column of tiles; groups
/// of rows, down M then across N, re-read A from L2. With an A that L2
/// holds the column order already hits L2, and the grouped order measured
/// slower. Persistent kernels keep their own grouped loop, clustered and
/// split candidates their grid.
pub(super) fn raster_group_for(problem: &Problem, machine: &Machine, c: &Candidate) -> i64 {
    let plain = c.config.schedule == Schedule::Pipeline && c.config.cluster == Along::None && c.config.splits == 1 && !problem.varying_k;
    let a_bytes = problem.m * problem.k * problem.precision.operand_bytes();
    if plain && c.waves > 1 && ceil_div(problem.m, c.config.block_m) > RASTER_GROUP && a_bytes > machine.l2_bytes {
        RASTER_GROUP
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::testing::pick;

    #[test]
    fn a_plain_pipeline_over_several_waves_takes_tiles_in_groups() {
        let order = |m, n, k| pick(m, n, k).config.raster_group;
        // Pipelined for their direct stores (rows of C not 16-byte aligned,
        // `epilogue_for`): 16 rows of 256x128 tiles over 4 waves and 64 rows of
        // 128x256 over 16, A of 128 MiB: groups of 8 rows.
        assert_eq!(order(4096, 4100, 16384), 8);
        assert_eq!(order(8192, 8196, 8192), 8);
        // A of 32 MiB, which L2 holds; one wave; no more tile rows than a
        // group: the grid's order.
        assert_eq!(order(4096, 4096, 4096), 0);
        assert_eq!(order(128, 7168, 16384), 0);
        assert_eq!(order(1024, 8192, 65536), 0);
        // Persistent (warp-specialised) picks order their own loop; split
        // picks keep their grid.
        assert_eq!((pick(4096, 32768, 512).config.schedule, order(4096, 32768, 512)), (Schedule::WarpSpecialized { consumers: 2 }, 0));
        assert_eq!((pick(8192, 8192, 8192).config.schedule, order(8192, 8192, 8192)), (Schedule::WarpSpecialized { consumers: 2 }, 0));
        assert_eq!((pick(64, 2112, 7168).config.splits, order(64, 2112, 7168)), (2, 0));
    }
}
