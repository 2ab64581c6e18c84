//! Checking a GEMM whose epilogue quantises its output: FP8 codes in C
//! and per-group values (scales) in its group stores
//! ([`tilec_artifact::GroupStore`]), as an FP8 GEMM's result quantised to
//! e4m3 with per-token 1x128 scales for the next block-scaled GEMM.
//!
//! Two policies, each where it can decide ([`OutputCheck`] computes the
//! figures of both):
//!
//! - Exact inputs ([`EXACT_POLICY`], [`OutputCheck::pass_exact`]): inputs
//!   whose product is exact in f32 whatever the order of summation
//!   ([`crate::check::ExactInputs`]), so that the kernel's accumulator is
//!   the reference's; the reference is the epilogue evaluated in f32 as
//!   the kernel evaluates it ([`tilec_artifact::Epilogue::in_f32`]), and
//!   every value of C and of each group store must equal it (the two zeros
//!   of C counting as one: the sign of an exactly zero sum is the order of
//!   summation's).
//! - Random inputs ([`POLICY`], [`OutputCheck::pass`]): the reference is
//!   the epilogue in f64 on the f64 product, the kernel's in f32 on its
//!   f32 accumulator, so where a rounding is close the two differ: bf16(acc)
//!   by one bf16 unit where the f32 sum lands across a rounding boundary,
//!   moving a group's absmax and so its scale and all its codes, and where
//!   a row nearly cancels, a small value by many of e4m3's fine steps near
//!   zero. So codes are not compared one by one: C's values, decoded with
//!   their scales (each code's value times its group's scale, as the next
//!   GEMM reads them), must be within [`CODE_TOLERANCE`] of the reference's
//!   decoded values by their relative error; each group
//!   store's value within a relative [`STORE_TOLERANCE`] of the
//!   reference's. The fraction of codes equal to the reference's is
//!   reported, for information. `tilec-bench` checks its runs (ours and the
//!   cuBLASLt FP8 baseline, whose accumulation is less precise still) with
//!   this policy too.
//!
//! Under both, a value left as the poison written before the launch (NaN)
//! fails, as does NaN anywhere.
//!
//! Pure, unit-tested without a GPU.

use crate::check::{e4m3_to_f32, passes, rel_frobenius};
use crate::epilogue::EpilogueRows;
use crate::gemm::OutputSpec;
use tilec_artifact::DType;

/// Largest relative distance of a stored value (a scale) from the
/// reference's that passes random inputs, relative to the larger of the
/// two: 2^-6, two bf16 units of a group's absmax (one moves the scale by at
/// most 2^-7): one for the absmax's rounding, one for the kernel's f32
/// arithmetic against the reference's f64 and a baseline's less precise
/// accumulation.
pub const STORE_TOLERANCE: f64 = 1.0 / 64.0;

/// Largest relative error (Frobenius) of FP8 codes decoded with their
/// scales from the reference's decoded values that passes random inputs:
/// 2^-4, half of e4m3's relative step at the bottom of a binade. Where a
/// rounding is close the two quantise to neighbouring codes, each a step of
/// at most 2^-3 apart, so how many differ (and the error) depends on the
/// draw: a fifth of the codes one step off stays under it, a wrong scale, a
/// wrong group or codes a step off everywhere do not.
pub const CODE_TOLERANCE: f64 = 1.0 / 16.0;

/// The policy on exact inputs, as the tools print it.
pub const EXACT_POLICY: &str = "exact inputs (the product exact in f32): every value of C (both zeros equal) and of each group store \
                                equal to the epilogue evaluated in f32 as the kernel does";

/// The policy on random inputs, as the tools print it.
pub const POLICY: &str = "random inputs: C's values within the relative error threshold of the fp64 reference's (FP8 codes decoded \
                          with their group's scale: within 2^-4 of the reference's decoded values), each group store's value within \
                          a relative 2^-6; the equal fraction is information";

/// C's values compared with the reference's one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueMatch {
    /// Values compared.
    pub values: usize,
    /// Values equal to the reference's (+0 equal to -0).
    pub equal: usize,
    /// Values that are NaN (left poisoned, or a NaN computed), in the output or the reference.
    pub nan: usize,
}

impl ValueMatch {
    /// Compares `out` with `reference`, one to one (lengths checked by the caller).
    fn compare(out: &[f64], reference: &[f64]) -> ValueMatch {
        let mut m = ValueMatch { values: out.len(), equal: 0, nan: 0 };
        for (&o, &r) in out.iter().zip(reference) {
            m.nan += usize::from(o.is_nan() || r.is_nan());
            m.equal += usize::from(o == r);
        }
        m
    }

    /// The fraction of the values equal to the reference's (1 for none compared).
    pub fn equal_fraction(&self) -> f64 {
        fraction(self.equal, self.values)
    }
}

/// `part / whole`, 1 for nothing.
fn fraction(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
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
    /// Values compared.
    pub values: usize,
    /// Values equal to the reference's rounded to f32, the store's type
    /// (where the reference is the f32 evaluation, itself).
    pub equal: usize,
}

impl StoreCheck {
    /// Compares the values `out` of group store `name` with the reference's, one to one.
    pub fn compare(name: &str, out: &[f32], reference: &[f64]) -> Result<StoreCheck, String> {
        if out.len() != reference.len() {
            return Err(format!("{} values of {name} to compare with the reference's {}", out.len(), reference.len()));
        }
        let mut check = StoreCheck { name: name.to_string(), worst: 0.0, values: out.len(), equal: 0 };
        for (&o, &r) in out.iter().zip(reference) {
            let o = o as f64;
            check.equal += usize::from(o == r as f32 as f64);
            if !o.is_finite() || !r.is_finite() {
                check.worst = f64::NAN;
            } else if !check.worst.is_nan() {
                let larger = o.abs().max(r.abs());
                check.worst = check.worst.max(if larger == 0.0 { 0.0 } else { (o - r).abs() / larger });
            }
        }
        Ok(check)
    }

    /// Every value within [`STORE_TOLERANCE`] of the reference's.
    pub fn within_tolerance(&self) -> bool {
        self.worst.is_finite() && self.worst <= STORE_TOLERANCE
    }

    /// Every value equal to the reference's (rounded to f32).
    pub fn all_equal(&self) -> bool {
        self.equal == self.values
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
/// values and each group store's, the figures of both policies (see the
/// module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct OutputCheck {
    /// C holds FP8 codes.
    pub codes: bool,
    /// `||out - ref||_F / ||ref||_F` of C's values over the rows, FP8
    /// codes decoded with their scales (where C has one group store) in
    /// both.
    pub err: f64,
    /// C's values against the reference's, one by one.
    pub c: ValueMatch,
    /// Each group store against the reference's, in the epilogue's order.
    pub stores: Vec<StoreCheck>,
}

impl OutputCheck {
    /// Compares what a kernel writing `output` wrote over some rows of
    /// `cols` columns with the reference's rows: `c`, C's bytes of those
    /// rows (row-major), and `stores`, each group store's values of them (a
    /// row's groups adjacent, in the epilogue's order), against
    /// `reference`'s values and stores. An f8e4m3 C with one group store
    /// has its codes decoded with it (code times the value of its row and
    /// group) for [`OutputCheck::err`]; with several, which holds the scales
    /// is not known, an error.
    pub fn new(output: &OutputSpec, cols: usize, c: &[u8], stores: &[Vec<f32>], reference: &EpilogueRows) -> Result<OutputCheck, String> {
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
        if cols == 0 || !values.len().is_multiple_of(cols) {
            return Err(format!("{} values of C are not rows of {cols} columns", values.len()));
        }
        let rows = values.len() / cols;
        let mut checks = Vec::with_capacity(stores.len());
        for ((spec, got), want) in output.group_stores.iter().zip(stores).zip(&reference.stores) {
            let groups = rows * spec.groups_of(cols as u64) as usize;
            if want.len() != groups {
                return Err(format!("the reference has {} values of {} for {rows} rows of {groups} groups", want.len(), spec.name));
            }
            checks.push(StoreCheck::compare(&spec.name, got, want)?);
        }
        let codes = output.dtype == DType::F8e4m3;
        let err = match &output.group_stores[..] {
            [scale] if codes => {
                let group = scale.group as usize;
                let groups = cols.div_ceil(group);
                let decode = |v: &[f64], s: &dyn Fn(usize) -> f64| -> Vec<f64> {
                    v.iter().enumerate().map(|(x, &code)| code * s(x / cols * groups + x % cols / group)).collect()
                };
                rel_frobenius(&decode(&values, &|q| stores[0][q] as f64), &decode(&reference.values, &|q| reference.stores[0][q]))
            }
            [_, _, ..] if codes => {
                return Err(format!(
                    "C is f8e4m3 with {} group stores: the check decodes its codes with one, their scales",
                    output.group_stores.len()
                ))
            }
            _ => rel_frobenius(&values, &reference.values),
        };
        Ok(OutputCheck { codes, err, c: ValueMatch::compare(&values, &reference.values), stores: checks })
    }

    /// Random inputs' policy ([`POLICY`]): C's values within `threshold`
    /// by their relative error (FP8 codes decoded: within the larger of it
    /// and [`CODE_TOLERANCE`]; NaN failing) and every group store's within
    /// [`STORE_TOLERANCE`].
    pub fn pass(&self, threshold: f64) -> bool {
        self.c.nan == 0 && passes(self.err, self.threshold(threshold)) && self.stores.iter().all(StoreCheck::within_tolerance)
    }

    /// The relative error C's values are held to under random inputs'
    /// policy, given the threshold for other outputs: FP8 codes' decoded
    /// values the larger of it and [`CODE_TOLERANCE`].
    pub fn threshold(&self, threshold: f64) -> f64 {
        if self.codes {
            threshold.max(CODE_TOLERANCE)
        } else {
            threshold
        }
    }

    /// Exact inputs' policy ([`EXACT_POLICY`]): every value of C and of
    /// every group store equal to the reference's.
    pub fn pass_exact(&self) -> bool {
        self.c.nan == 0 && self.c.equal == self.c.values && self.stores.iter().all(StoreCheck::all_equal)
    }

    /// The figures of the values compared one by one, for a report:
    /// `codes 99.92% equal; SQ 98.44% equal, worst 3.1e-3` (C named `C`
    /// where it is not FP8).
    pub fn summary(&self) -> String {
        let nan = if self.c.nan > 0 { format!(", {} NaN", self.c.nan) } else { String::new() };
        let c = format!("{} {:.2}% equal{nan}", if self.codes { "codes" } else { "C" }, 100.0 * self.c.equal_fraction());
        let stores = self.stores.iter().map(|s| format!("{} {:.2}% equal, worst {:.2e}", s.name, 100.0 * fraction(s.equal, s.values), s.worst));
        std::iter::once(c).chain(stores).collect::<Vec<_>>().join("; ")
    }
}
