//! How an epilogue's interleaved accumulator parts (SwiGLU's gate and up
//! in one GEMM) sit among the product's columns: what a GEMM's spec, the
//! epilogue's reference and the grouped GEMMs all read.

use crate::error::{Result, RuntimeError};
use tilec_artifact::{Epilogue, EpilogueValue};

/// How an epilogue's interleaved accumulator parts ([`EpilogueValue::AccPart`])
/// sit among the product's columns: `parts` outputs (SwiGLU's gate and up:
/// 2) in runs of `block` columns. The GEMM computes `N` product columns;
/// its output C has `N / parts` (`N` a multiple of `parts * block`), and
/// output column `j` of part `p` is product column [`AccParts::column`].
/// An epilogue reading no part is an ordinary one (`C[M,N]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccParts {
    /// Columns in a run.
    pub block: u64,
    /// How many outputs the product's columns interleave.
    pub parts: u64,
    /// The symbol of C's columns (`H`), bound to `N / parts` at a call.
    pub cols: String,
}

impl AccParts {
    /// The one `(block, parts)` of every [`EpilogueValue::AccPart`] of
    /// `epilogue`, or `None` if it reads none; an error where two differ.
    pub fn of(epilogue: &Epilogue) -> std::result::Result<Option<(u64, u64)>, String> {
        let mut found: Option<(u64, u64)> = None;
        for (i, v) in epilogue.values.iter().enumerate() {
            if let EpilogueValue::AccPart { block, parts, .. } = *v {
                match found {
                    None => found = Some((block, parts)),
                    Some(f) if f != (block, parts) => {
                        return Err(format!(
                            "the epilogue's accumulator parts interleave differently: value {i} reads {parts} parts in runs of {block}, \
                             an earlier one {} in runs of {}",
                            f.1, f.0
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(found)
    }

    /// The product column that output column `j` of part `part` reads:
    /// `parts * block * (j / block) + part * block + j % block`.
    pub fn column(&self, j: u64, part: u64) -> u64 {
        product_column(self.block, self.parts, j, part)
    }

    /// C's columns for `n` product columns: `n / parts`.
    pub fn out_cols(&self, n: u64) -> u64 {
        n / self.parts
    }

    /// Checks that `n` product columns interleave whole runs of every part.
    pub fn check_n(&self, n: u64) -> Result<()> {
        let whole = self.parts * self.block;
        if n % whole != 0 {
            return Err(RuntimeError::GemmArgs(format!(
                "N={n} product columns do not interleave {} parts in whole runs of {} columns: N must be a multiple of {whole} \
                 (C then has N/{} columns)",
                self.parts, self.block, self.parts
            )));
        }
        Ok(())
    }

    /// Part `part`'s rows of `rows`, a row-major matrix of rows `width`
    /// long each covering `per_row` of the product's columns (B `[N,K]`:
    /// one; its block scales `SB[NB,KB]`: 128), in the order of the part's
    /// output columns: the weights (or their scales) of a GEMM of the part
    /// alone, whose product's column `j` is the interleaved product's
    /// [`AccParts::column`] of `j`. The rows must cover whole runs of every
    /// part ([`AccParts::check_n`]), and a run whole rows (`block` a
    /// multiple of `per_row`).
    pub fn part_rows<T: Copy>(&self, rows: &[T], width: usize, per_row: u64, part: u64) -> Result<Vec<T>> {
        if per_row == 0 || !self.block.is_multiple_of(per_row) {
            return Err(RuntimeError::GemmArgs(format!(
                "runs of {} columns are not whole rows of {per_row} columns: their rows cannot be taken apart",
                self.block
            )));
        }
        if width == 0 || !rows.len().is_multiple_of(width) {
            return Err(RuntimeError::GemmArgs(format!("{} elements are not rows of {width}", rows.len())));
        }
        if part >= self.parts {
            return Err(RuntimeError::GemmArgs(format!("part {part} of {}", self.parts)));
        }
        let n = (rows.len() / width) as u64 * per_row;
        self.check_n(n)?;
        let out_rows = n / self.parts / per_row;
        let mut out = Vec::with_capacity(out_rows as usize * width);
        for r in 0..out_rows {
            let from = (self.column(r * per_row, part) / per_row) as usize;
            out.extend_from_slice(&rows[from * width..(from + 1) * width]);
        }
        Ok(out)
    }
}

/// [`AccParts::column`] of `parts` parts in runs of `block`.
pub(crate) fn product_column(block: u64, parts: u64, j: u64, part: u64) -> u64 {
    parts * block * (j / block) + part * block + j % block
}
