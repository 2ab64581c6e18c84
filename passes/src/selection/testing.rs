//! Problems and summaries the unit tests of config selection share.

use super::candidate::{Candidate, Pins};
use super::problem::{Machine, Precision, Problem};
use super::rank::choose;

/// A plain BF16 program's problem: A staged, tiles sharing operands, a
/// K loop of fixed length.
pub(super) fn bf16(m: i64, n: i64, k: i64) -> Problem {
    Problem { m, n, k, precision: Precision::Bf16, any_n: false, clusterable: true, routed_rows: false, varying_k: false, b_scale_rows: None, a_in_registers: false, transpose_b: true, a_scales_by_run: false, column_group: None, output_bytes: 2, epilogue: crate::cost_model::epilogue::EpilogueWork::default(), output_column_major: false, row_block_scales: None }
}

/// The same for block-scaled FP8, its tiles of B starting scale blocks.
pub(super) fn fp8(m: i64, n: i64, k: i64) -> Problem {
    Problem { precision: Precision::Fp8BlockScaled, ..bf16(m, n, k) }
}

pub(super) fn pick(m: i64, n: i64, k: i64) -> Candidate {
    choose(&bf16(m, n, k), &Machine::H100, &Pins::default()).unwrap()
}

/// (block_m, block_n, stages, epilogue, waves, last wave) of the pick.
pub(super) fn summary(c: &Candidate) -> (i64, i64, i64, &'static str, i64, i64) {
    (c.config.block_m, c.config.block_n, c.config.stages, c.config.epilogue.word(), c.waves, c.last_wave)
}

/// The epilogues as `summary` names them.
pub(super) const TMA: &str = "tma";

pub(super) const GLOBAL: &str = "global";
