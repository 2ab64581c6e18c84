//! Host-side splitting of a global problem into the ranks' inputs, and the
//! gathering of the ranks' outputs into the global C. Pure, so the split is
//! unit-tested without a GPU; the executor and the check share it.

use super::schedule::{Mode, TpGemm};
use crate::check::SCALE_BLOCK;

/// A row-major host matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<T> {
    /// `rows * cols` elements, row by row.
    pub data: Vec<T>,
    /// Rows.
    pub rows: usize,
    /// Columns (elements a row).
    pub cols: usize,
}

impl<T: Copy> Matrix<T> {
    /// Wraps `data`; its length must be `rows * cols`.
    pub fn new(data: Vec<T>, rows: usize, cols: usize) -> Self {
        assert_eq!(data.len(), rows * cols, "a {rows}x{cols} matrix needs {} elements", rows * cols);
        Matrix { data, rows, cols }
    }

    /// Rows `[r0, r0 + n)`.
    pub fn row_block(&self, r0: usize, n: usize) -> Matrix<T> {
        Matrix::new(self.data[r0 * self.cols..(r0 + n) * self.cols].to_vec(), n, self.cols)
    }

    /// Columns `[c0, c0 + n)` of every row.
    pub fn col_block(&self, c0: usize, n: usize) -> Matrix<T> {
        let data = self.data.chunks_exact(self.cols).flat_map(|row| row[c0..c0 + n].iter().copied()).collect();
        Matrix::new(data, self.rows, n)
    }

    /// Writes `part` at row `r0`, column `c0`.
    pub fn place(&mut self, part: &Matrix<T>, r0: usize, c0: usize) {
        for (i, row) in part.data.chunks_exact(part.cols).enumerate() {
            let at = (r0 + i) * self.cols + c0;
            self.data[at..at + part.cols].copy_from_slice(row);
        }
    }
}

/// The inputs of a GEMM: A and B (bf16, or e4m3 as bytes) and, for a
/// block-scaled GEMM, `SA[M, KB]` and `SB[NB, KB]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs<T> {
    /// `A[M, K]`.
    pub a: Matrix<T>,
    /// `B[N, K]`.
    pub b: Matrix<T>,
    /// `(SA, SB)` where the GEMM is block-scaled.
    pub scales: Option<(Matrix<f32>, Matrix<f32>)>,
}

impl<T: Copy> Inputs<T> {
    /// Rank `rank`'s inputs under `tp`: rows of A and B (all-gather) or
    /// columns of both (reduce-scatter), with the matching scale blocks.
    /// Split points fall on scale blocks ([`TpGemm::validate`]); a single
    /// rank's part may end in a partial block, whose scale it keeps.
    pub fn shard(&self, tp: &TpGemm, rank: usize) -> Inputs<T> {
        let l = tp.local();
        let block = SCALE_BLOCK;
        match tp.mode {
            Mode::AllGatherGemm => {
                let (ml, nl) = (l.a_rows as usize, l.b_rows as usize);
                Inputs {
                    a: self.a.row_block(rank * ml, ml),
                    b: self.b.row_block(rank * nl, nl),
                    scales: self
                        .scales
                        .as_ref()
                        .map(|(sa, sb)| (sa.row_block(rank * ml, ml), sb.row_block(rank * nl / block, nl.div_ceil(block)))),
                }
            }
            Mode::GemmReduceScatter => {
                let kl = l.k as usize;
                Inputs {
                    a: self.a.col_block(rank * kl, kl),
                    b: self.b.col_block(rank * kl, kl),
                    scales: self.scales.as_ref().map(|(sa, sb)| {
                        let (kb0, kbl) = (rank * kl / block, kl.div_ceil(block));
                        (sa.col_block(kb0, kbl), sb.col_block(kb0, kbl))
                    }),
                }
            }
        }
    }
}

/// The global `C[M, N]` from every rank's C, in rank order.
pub fn gather_c<T: Copy + Default>(tp: &TpGemm, parts: &[Matrix<T>]) -> Matrix<T> {
    let (m, n) = (tp.size.m as usize, tp.size.n as usize);
    let mut c = Matrix::new(vec![T::default(); m * n], m, n);
    for (rank, part) in parts.iter().enumerate() {
        match tp.mode {
            Mode::AllGatherGemm => c.place(part, 0, rank * part.cols),
            Mode::GemmReduceScatter => c.place(part, rank * part.rows, 0),
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::GemmSize;

    /// A matrix whose element names its place: `100 * row + col`.
    fn labelled(rows: usize, cols: usize) -> Matrix<u32> {
        Matrix::new((0..rows * cols).map(|x| (100 * (x / cols) + x % cols) as u32).collect(), rows, cols)
    }

    fn inputs(m: usize, n: usize, k: usize) -> Inputs<u32> {
        let (kb, nb) = (k.div_ceil(SCALE_BLOCK), n.div_ceil(SCALE_BLOCK));
        let f = |m: Matrix<u32>| Matrix::new(m.data.iter().map(|&x| x as f32).collect(), m.rows, m.cols);
        Inputs { a: labelled(m, k), b: labelled(n, k), scales: Some((f(labelled(m, kb)), f(labelled(nb, kb)))) }
    }

    fn tp(mode: Mode, m: u64, n: u64, k: u64) -> TpGemm {
        TpGemm { mode, size: GemmSize::new(m, n, k), world: 2, chunks: 1, block_scaled: true }
    }

    #[test]
    fn all_gather_ranks_hold_rows_of_a_and_b_and_their_scales() {
        let t = tp(Mode::AllGatherGemm, 4, 512, 256);
        let s = inputs(4, 512, 256).shard(&t, 1);
        assert_eq!((s.a.rows, s.a.cols, s.a.data[0]), (2, 256, 200));
        assert_eq!((s.b.rows, s.b.data[0], s.b.data[256]), (256, 25600, 25700));
        let (sa, sb) = s.scales.unwrap();
        assert_eq!((sa.rows, sa.cols, sa.data[0]), (2, 2, 200.0));
        // B rows 256..512 are SB row 2 and 3.
        assert_eq!((sb.rows, sb.data[0], sb.data[2]), (2, 200.0, 300.0));
    }

    #[test]
    fn reduce_scatter_ranks_hold_columns_of_k_and_their_scale_blocks() {
        let t = tp(Mode::GemmReduceScatter, 4, 8, 512);
        let s = inputs(4, 8, 512).shard(&t, 1);
        assert_eq!((s.a.rows, s.a.cols, s.a.data[0], s.a.data[256]), (4, 256, 256, 356));
        assert_eq!((s.b.rows, s.b.cols, s.b.data[0]), (8, 256, 256));
        let (sa, sb) = s.scales.unwrap();
        assert_eq!((sa.rows, sa.cols, sa.data[0], sa.data[2]), (4, 2, 2.0, 102.0));
        assert_eq!((sb.rows, sb.cols, sb.data[..2].to_vec()), (1, 2, vec![2.0, 3.0]));
    }

    #[test]
    fn one_rank_keeps_the_partial_last_scale_block() {
        let t = TpGemm { world: 1, ..tp(Mode::GemmReduceScatter, 4, 200, 300) };
        let s = inputs(4, 200, 300).shard(&t, 0);
        let (sa, sb) = s.scales.unwrap();
        assert_eq!((sa.cols, sb.rows, sb.cols), (3, 2, 3));
        let t = TpGemm { world: 1, ..tp(Mode::AllGatherGemm, 4, 200, 300) };
        assert_eq!(inputs(4, 200, 300).shard(&t, 0).scales.unwrap().1.rows, 2);
    }

    #[test]
    fn gathered_c_puts_each_rank_at_its_columns_or_rows() {
        let full = labelled(4, 6);
        let ag = tp(Mode::AllGatherGemm, 4, 6, 128);
        assert_eq!(gather_c(&ag, &[full.col_block(0, 3), full.col_block(3, 3)]), full);
        let rs = tp(Mode::GemmReduceScatter, 4, 6, 128);
        assert_eq!(gather_c(&rs, &[full.row_block(0, 2), full.row_block(2, 2)]), full);
    }
}
