//! Checking a GEMM whose epilogue quantises its output: FP8 codes in C
//! and per-group values (scales) in its group stores
//! ([`tilec_artifact::GroupStore`]), as an FP8 GEMM's result quantised to
//! e4m3 with per-token 1x128 scales for the next block-scaled GEMM.
//!
//! The reference is the epilogue in f64 on the f64 product
//! ([`tilec_artifact::Epilogue::eval_row`]), the kernel's in f32 on its f32
//! accumulator, so the two may differ where a rounding is close: the
//! product rounded to bf16 moves by one bf16 unit (2^-8 relative) where
//! the f32 sum lands across a rounding boundary, a group's absmax and so
//! its scale with it, and a code whose scaled value sits near the middle
//! of two e4m3 values rounds the other way. Hence [`POLICY`]: each stored
//! value within a relative [`STORE_TOLERANCE`] of the reference's, every
//! code within one e4m3 step of the reference's code (adjacent
//! representable values), and at least [`MIN_EXACT`] of the codes equal.
//! A code or stored value left as the poison written before the launch
//! (NaN) fails, as does NaN anywhere.
//!
//! `tilec-bench` checks every run against cuBLAS's BF16 product, and
//! cuBLASLt's FP8 GEMM, its baseline's first half, accumulates with less
//! precision than that: where a row's values nearly cancel, its product
//! differs by more than a rounding, and the code of such a small value by
//! several steps. The benchmark therefore checks codes as it checks every
//! output, by the relative error of their values within its threshold,
//! with the stored values as above ([`BENCH_POLICY`]).
//!
//! Pure, unit-tested without a GPU.

use crate::check::{e4m3_to_f32, f32_to_e4m3, passes, rel_frobenius};
use crate::epilogue::EpilogueRows;
use crate::gemm::OutputSpec;
use tilec_artifact::DType;

/// Largest relative distance of a stored value (a scale) from the
/// reference's that passes, relative to the larger of the two: 2^-7, the
/// most one bf16 unit of a group's absmax can move it by.
pub const STORE_TOLERANCE: f64 = 1.0 / 128.0;

/// Fewest of the codes, as a fraction, that must equal the reference's.
pub const MIN_EXACT: f64 = 0.99;

/// The comparison policy, as the tools print it.
pub const POLICY: &str = "FP8 codes: each within one e4m3 step of the reference's (adjacent values), at least 99% exactly equal; \
                          group stores: each within a relative 2^-7 of the reference's; poison (NaN) fails";

/// The benchmark's comparison policy, as it reports it (see the module docs).
pub const BENCH_POLICY: &str = "FP8 codes: their values within the relative error threshold of the reference's; \
                                group stores: each within a relative 2^-7 of the reference's; poison (NaN) fails";

/// The position of an e4m3 code among the format's values in order: its
/// magnitude bits (which order the non-negative values) with its sign, so
/// that adjacent representable values are one apart and both zeros are 0.
/// `None` for NaN (`S.1111.111`).
///
/// ```
/// use tilec_runtime::quantize::e4m3_index;
/// assert_eq!(e4m3_index(0x00), Some(0));
/// assert_eq!(e4m3_index(0x80), Some(0)); // -0
/// assert_eq!(e4m3_index(0x7E), Some(126)); // 448
/// assert_eq!(e4m3_index(0x81), Some(-1)); // the negative value nearest zero
/// assert_eq!(e4m3_index(0xFF), None);
/// ```
pub fn e4m3_index(code: u8) -> Option<i32> {
    let magnitude = (code & 0x7F) as i32;
    if magnitude == 0x7F {
        return None;
    }
    Some(if code & 0x80 != 0 { -magnitude } else { magnitude })
}

/// C's FP8 codes compared with the reference's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeCheck {
    /// Codes compared.
    pub codes: usize,
    /// Codes equal to the reference's.
    pub exact: usize,
    /// The largest distance in e4m3 steps of a code from the reference's.
    pub max_steps: u32,
    /// Codes that are NaN (left poisoned, or a NaN computed), in the output or the reference.
    pub nan: usize,
}

impl CodeCheck {
    /// Compares e4m3 codes `out` with the reference's values `reference`
    /// (each an e4m3 value, as an epilogue's last rounding to f8e4m3 leaves
    /// it), one to one.
    pub fn compare(out: &[u8], reference: &[f64]) -> CodeCheck {
        assert_eq!(out.len(), reference.len(), "CodeCheck::compare: length mismatch");
        let mut check = CodeCheck { codes: out.len(), exact: 0, max_steps: 0, nan: 0 };
        for (&o, &r) in out.iter().zip(reference) {
            match (e4m3_index(o), e4m3_index(f32_to_e4m3(r as f32))) {
                (Some(a), Some(b)) => {
                    check.exact += usize::from(a == b);
                    check.max_steps = check.max_steps.max(a.abs_diff(b));
                }
                _ => check.nan += 1,
            }
        }
        check
    }

    /// The fraction of the codes equal to the reference's (1 for none compared).
    pub fn exact_fraction(&self) -> f64 {
        if self.codes == 0 {
            1.0
        } else {
            self.exact as f64 / self.codes as f64
        }
    }

    /// No NaN, every code within one step, and at least [`MIN_EXACT`] exact.
    pub fn pass(&self) -> bool {
        self.nan == 0 && self.max_steps <= 1 && self.exact_fraction() >= MIN_EXACT
    }
}

/// One group store compared with the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreCheck {
    /// The manifest tensor.
    pub name: String,
    /// The largest distance of a value from the reference's relative to
    /// the larger of the two; NaN where a value (or the reference's) is not
    /// finite.
    pub worst: f64,
}

impl StoreCheck {
    /// Compares the values `out` of group store `name` with the reference's, one to one.
    pub fn compare(name: &str, out: &[f32], reference: &[f64]) -> StoreCheck {
        assert_eq!(out.len(), reference.len(), "StoreCheck::compare: length mismatch");
        let mut worst = 0.0f64;
        for (&o, &r) in out.iter().zip(reference) {
            let o = o as f64;
            if !o.is_finite() || !r.is_finite() {
                worst = f64::NAN;
                break;
            }
            let larger = o.abs().max(r.abs());
            worst = worst.max(if larger == 0.0 { 0.0 } else { (o - r).abs() / larger });
        }
        StoreCheck { name: name.to_string(), worst }
    }

    /// Every value within [`STORE_TOLERANCE`] of the reference's.
    pub fn pass(&self) -> bool {
        self.worst.is_finite() && self.worst <= STORE_TOLERANCE
    }
}

/// The values of the elements of type `dtype` (bf16 or f8e4m3, C's
/// types) in `bytes`, widened; `None` for another type.
pub fn widen(dtype: DType, bytes: &[u8]) -> Option<Vec<f64>> {
    Some(match dtype {
        DType::Bf16 => bytes.chunks_exact(2).map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f64()).collect(),
        DType::F8e4m3 => bytes.iter().map(|&b| e4m3_to_f32(b) as f64).collect(),
        _ => return None,
    })
}

/// A GEMM's outputs over some rows compared with the reference's: C's
/// values (and codes, where C is FP8) and each group store's.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputCheck {
    /// `||out - ref||_F / ||ref||_F` of C's values over the rows.
    pub err: f64,
    /// C's codes against the reference's, where C is f8e4m3.
    pub codes: Option<CodeCheck>,
    /// Each group store against the reference's, in the epilogue's order.
    pub stores: Vec<StoreCheck>,
}

impl OutputCheck {
    /// Compares what a kernel writing `output` wrote over some rows with
    /// the reference's rows: `c`, C's bytes of those rows (row-major), and
    /// `stores`, each group store's values of them (a row's groups
    /// adjacent, in the epilogue's order), against `reference`'s values
    /// and stores.
    pub fn new(output: &OutputSpec, c: &[u8], stores: &[Vec<f32>], reference: &EpilogueRows) -> Result<OutputCheck, String> {
        let values = widen(output.dtype, c).ok_or_else(|| format!("C is {}: the check reads bf16 and f8e4m3", output.dtype))?;
        if values.len() != reference.values.len() || stores.len() != reference.stores.len() || stores.len() != output.group_stores.len() {
            return Err(format!(
                "{} values of C and {} group stores to compare with the reference's {} and {}",
                values.len(),
                stores.len(),
                reference.values.len(),
                reference.stores.len()
            ));
        }
        let codes = (output.dtype == DType::F8e4m3).then(|| CodeCheck::compare(c, &reference.values));
        let mut checks = Vec::with_capacity(stores.len());
        for ((spec, got), want) in output.group_stores.iter().zip(stores).zip(&reference.stores) {
            if got.len() != want.len() {
                return Err(format!("{} values of {} to compare with the reference's {}", got.len(), spec.name, want.len()));
            }
            checks.push(StoreCheck::compare(&spec.name, got, want));
        }
        Ok(OutputCheck { err: rel_frobenius(&values, &reference.values), codes, stores: checks })
    }

    /// C passes (its codes as [`CodeCheck::pass`] says where it is FP8,
    /// else its error within `threshold`) and every group store does:
    /// [`POLICY`].
    pub fn pass(&self, threshold: f64) -> bool {
        let c = match &self.codes {
            Some(codes) => codes.pass(),
            None => passes(self.err, threshold),
        };
        c && self.stores.iter().all(StoreCheck::pass)
    }

    /// C's values (codes or not) within `threshold` by their relative error
    /// (NaN failing) and every group store as [`StoreCheck::pass`] says:
    /// [`BENCH_POLICY`].
    pub fn pass_by_error(&self, threshold: f64) -> bool {
        passes(self.err, threshold) && self.stores.iter().all(StoreCheck::pass)
    }

    /// The codes' and stores' figures, for a report: `codes 99.92% exact,
    /// max 1 step; SQ worst 3.1e-3`; empty where there are neither.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.codes {
            let nan = if c.nan > 0 { format!(", {} NaN", c.nan) } else { String::new() };
            parts.push(format!("codes {:.2}% exact, max {} step{}{nan}", 100.0 * c.exact_fraction(), c.max_steps, if c.max_steps == 1 { "" } else { "s" }));
        }
        parts.extend(self.stores.iter().map(|s| format!("{} worst {:.2e}", s.name, s.worst)));
        parts.join("; ")
    }
}
