#![warn(missing_docs)]
//! tilec-report: the `tilec-bench` JSON report ([`schema`]), the other
//! kinds of report it reads, told apart by their schema ([`kinds`]), the text
//! tables ([`table`]), the geometric means per shape group ([`summary`]), the
//! comparison of two reports ([`compare`]) and, with the default `svg`
//! feature, the ratio chart ([`chart`]). Pure Rust: no CUDA, MLIR or LLVM,
//! so reports are drawn on the build machine.

#[cfg(feature = "svg")]
pub mod chart;
pub mod compare;
pub mod kinds;
pub mod schema;
pub mod summary;
pub mod table;

#[cfg(test)]
mod tests;
