#![warn(missing_docs)]
//! tilec-report: the `tilec-bench` JSON report ([`schema`]), every other
//! kind of report tilec's tools write, told apart by their schema
//! ([`kinds`]: grouped and tensor-parallel runs, config selection's judged
//! picks, measurements, calibration, tuning, checks, compile time, fuzz
//! runs), the text tables ([`table`]), the geometric means per shape group
//! ([`summary`]), the comparison of two GEMM reports ([`compare`]; two judge
//! reports: [`kinds::judge`]) and, with the default `svg` feature, the charts
//! ([`chart`], [`judge_chart`]). Pure Rust: no CUDA, MLIR or LLVM, so
//! reports are drawn on the build machine.

#[cfg(feature = "svg")]
pub mod chart;
pub mod compare;
#[cfg(feature = "svg")]
pub mod judge_chart;
pub mod kinds;
pub mod schema;
pub mod summary;
pub mod table;

#[cfg(test)]
mod tests;
