//! The swapped GEMM (`tile-swap-operands`): C^T = B A^T, weighed beside the
//! GEMM as written, so that the output's rows may fill a tile's columns,
//! which come in steps of 16 where its rows come in steps of 64.

use super::candidate::Pins;
use crate::cluster::Along;
use super::problem::{Precision, Problem};

/// Whether config selection weighs the swapped GEMM's candidates: a BF16
/// GEMM of one problem (not a batch or a grouped GEMM, whose rows are
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
    problem.precision == Precision::Bf16
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::testing::{bf16, fp8};

    #[test]
    fn only_bf16_gemms_of_one_problem_and_a_given_shape_weigh_the_swap() {
        assert!(weighs_swapped(&bf16(88, 3328, 2752), &Pins::default()));
        assert!(!weighs_swapped(&fp8(88, 3328, 2752), &Pins::default()));
        assert!(!weighs_swapped(&Problem { any_n: true, ..bf16(88, 3328, 2752) }, &Pins::default()));
        assert!(!weighs_swapped(&bf16(88, 3328, 2752).swapped(), &Pins::default()));
        assert!(!weighs_swapped(&bf16(88, 3328, 2752), &Pins { block_n: Some(64), ..Pins::default() }));
    }

    #[test]
    fn the_swapped_problem_exchanges_m_and_n_and_stores_column_major() {
        let p = bf16(88, 3328, 2752).swapped();
        assert_eq!((p.m, p.n, p.k, p.output_column_major), (3328, 88, 2752, true));
    }
}
