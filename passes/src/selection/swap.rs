//! The swapped GEMM (`tile-swap-operands`): C^T = B A^T, weighed beside the
//! GEMM as written, so that the output's rows may fill a tile's columns,
//! which come in steps of 16 where its rows come in steps of 64.

use super::candidate::Pins;
use crate::cluster::Along;
use super::problem::{Precision, Problem};

/// Whether config selection weighs the swapped GEMM's candidates: a BF16
/// GEMM, or a block-scaled FP8 one of at most 32 rows whose program takes
/// the offset into B's first scale block (a tile of the swapped GEMM's rows
/// may start inside one), of one problem (not a batch or a grouped GEMM, whose rows are
/// chosen by data) for a given shape, with B read N x K and A from shared
/// memory (the swapped dot reads B's tile as its first operand, K-major),
/// no reduction over groups of C's columns (which would run down the
/// swapped tile's rows) and no block size pinned
/// (pins name the program's tile, not the swapped one's), nor a cluster
/// along M or N (which a column-major output rules out). A program whose
/// output is already column-major computes C^T as written. What else the
/// program's epilogue mixes in (a bias it can turn, a residual it cannot)
/// is the rewrite's to decide (`analysis::operand_swap`).
pub fn weighs_swapped(problem: &Problem, pins: &Pins) -> bool {
    let precision = match problem.precision {
        Precision::Bf16 => true,
        // B's block scales then run along the tile's rows, from the offset
        // the program computes into their first block. The swapped
        // promotion costs up to twice the FMAs of the GEMM's own (a
        // product and a shared-memory read per column scale beside each
        // FMA), which only a GEMM whose every tile leaves more than half
        // of a wgmma's 64 rows empty wins back (measured: docs/evidence.md,
        // selection/swap.rs, weighs_swapped).
        Precision::Fp8BlockScaled => problem.b_scale_rows.is_some() && problem.m <= FP8_SWAP_MAX_ROWS,
    };
    precision
        && problem.clusterable
        && !problem.varying_k
        && !problem.any_n
        && problem.transpose_b
        && !problem.a_in_registers
        && problem.column_group.is_none()
        && !problem.output_column_major
        && pins.block_m.is_none()
        && pins.block_n.is_none()
        && pins.cluster.is_none_or(|along| along == Along::None)
}

/// Whether a warp-specialised consumer of the swapped block-scaled GEMM
/// holds its promotion in registers: beside the running result and one m64
/// row block's partial it holds a quarter of the tile's `bn` columns'
/// scales and their products with the row block's, which past 160 columns
/// a row block spill a consumer's registers (128x192 over two consumers
/// spilled 56 bytes, 128x160 and two row blocks of 96 a consumer did not:
/// docs/evidence.md, selection/swap.rs, consumer_holds_swapped_scales).
pub fn consumer_holds_swapped_scales(problem: &Problem, rows: i64, bn: i64) -> bool {
    problem.row_block_scales.is_none() || rows > 64 || bn <= SWAPPED_SCALES_MAX_COLUMNS
}

/// The most rows of C for which config selection weighs the swapped
/// block-scaled GEMM: half a wgmma's 64.
const FP8_SWAP_MAX_ROWS: i64 = 32;

/// The widest tile of the swapped block-scaled GEMM a consumer of one m64
/// row block holds with its column scales.
const SWAPPED_SCALES_MAX_COLUMNS: i64 = 160;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::testing::{bf16, fp8};

    #[test]
    fn gemms_of_one_problem_and_a_given_shape_weigh_the_swap() {
        assert!(weighs_swapped(&bf16(88, 3328, 2752), &Pins::default()));
        assert!(!weighs_swapped(&fp8(88, 3328, 2752), &Pins::default()), "B's tiles start scale blocks: no offset for the swapped rows");
        assert!(weighs_swapped(&Problem { b_scale_rows: Some(3), ..fp8(32, 3328, 2752) }, &Pins::default()));
        assert!(!weighs_swapped(&Problem { b_scale_rows: Some(3), ..fp8(33, 3328, 2752) }, &Pins::default()), "past half a wgmma's rows the swapped promotion costs more than it saves");
        assert!(!weighs_swapped(&Problem { any_n: true, ..bf16(88, 3328, 2752) }, &Pins::default()));
        assert!(!weighs_swapped(&bf16(88, 3328, 2752).swapped(), &Pins::default()));
        assert!(!weighs_swapped(&bf16(88, 3328, 2752), &Pins { block_n: Some(64), ..Pins::default() }));
    }

    #[test]
    fn the_swapped_problem_exchanges_m_and_n_and_stores_column_major() {
        let p = bf16(88, 3328, 2752).swapped();
        assert_eq!((p.m, p.n, p.k, p.output_column_major), (3328, 88, 2752, true));
        let scaled = Problem { b_scale_rows: Some(3), ..fp8(88, 3328, 2752) }.swapped();
        assert_eq!((scaled.b_scale_rows, scaled.row_block_scales), (None, Some(3)), "B's block scales run along the swapped tile's rows");
    }

    #[test]
    fn a_consumer_of_one_row_block_holds_the_column_scales_of_at_most_160_columns() {
        let swapped = Problem { b_scale_rows: Some(3), ..fp8(88, 3328, 2752) }.swapped();
        assert!(consumer_holds_swapped_scales(&swapped, 64, 160));
        assert!(!consumer_holds_swapped_scales(&swapped, 64, 192));
        assert!(consumer_holds_swapped_scales(&swapped, 128, 96), "two row blocks of 96 columns");
        assert!(consumer_holds_swapped_scales(&fp8(88, 3328, 2752), 64, 192), "unswapped: no column scales");
    }
}
