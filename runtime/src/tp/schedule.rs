//! The schedule of one tensor-parallel GEMM on one rank: which GEMM
//! launches and which collectives run, on which rows of which buffer, and
//! which of them wait for which. Pure, so it is unit-tested without a GPU;
//! [`super::ops`] enqueues it.
//!
//! Every buffer is a row space (`rows x row length`, row-major), so a step
//! names a buffer and a first row, and the executor turns that into an
//! address. Chunked buffers are laid out chunk-major: chunk `s` of a
//! collective is the rows `[s*W*mc, (s+1)*W*mc)`, rank `p`'s part of it the
//! `mc` rows from `(s*W + p)*mc`. That is the order NCCL's all-gather
//! writes and its reduce-scatter reads, so no copy is needed.
//!
//! - **All-gather + GEMM** (column parallel): A is split along M (`ml = M/W`
//!   rows a rank), B along N (`nl = N/W`); rank `r` computes `C[:, r*nl..]
//!   = A * B_r^T`. The rank first multiplies its own rows of A, which need
//!   no communication, while chunk 0 of the peers' rows is in flight; then
//!   each chunk's peer rows as the chunk arrives.
//! - **GEMM + reduce-scatter** (row parallel): A and B are split along K
//!   (`kl = K/W`); each rank computes a partial `M x N` product, and the
//!   reduce-scatter sums it so rank `r` holds rows `[r*ml, (r+1)*ml)` of C.
//!   The rows of chunk `s` are `mc` rows of every rank's part; the GEMMs of
//!   chunk `s` run first, then its reduce-scatter while chunk `s+1`'s GEMMs
//!   run.

use crate::check::SCALE_BLOCK;
use crate::gemm::GemmSize;

/// Which tensor-parallel GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// All-gather of A along M, then the GEMM with this rank's columns of C.
    AllGatherGemm,
    /// The GEMM on this rank's slice of K, then a reduce-scatter of C along M.
    GemmReduceScatter,
}

impl Mode {
    /// The command-line name: `ag` or `rs`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::AllGatherGemm => "ag",
            Mode::GemmReduceScatter => "rs",
        }
    }

    /// Parses [`Mode::name`].
    pub fn parse(s: &str) -> Option<Mode> {
        [Mode::AllGatherGemm, Mode::GemmReduceScatter].into_iter().find(|m| m.name() == s)
    }
}

/// A device buffer of one rank, seen as rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Buf {
    /// This rank's A: `ml x K` (all-gather) or `M x kl` (reduce-scatter),
    /// with its block scales where the GEMM takes them.
    A,
    /// The all-gathered A, chunk-major: `M x K`, with its block scales.
    Gathered,
    /// The partial products before the reduce-scatter, chunk-major: `M x N`.
    Partial,
    /// This rank's C: `M x nl` (all-gather) or `ml x N` (reduce-scatter).
    C,
}

/// Rows `[row, row + rows)` of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    /// The buffer.
    pub buf: Buf,
    /// The first row.
    pub row: u64,
    /// How many rows.
    pub rows: u64,
}

/// One GEMM launch: `out = a * B_rank^T` on `a.rows` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmStep {
    /// The rows of A (and of its scales) it reads.
    pub a: Rows,
    /// The rows of the output it writes (as many as `a`).
    pub out: Rows,
    /// Waits for this chunk's collective first.
    pub wait: Option<usize>,
    /// The last GEMM of this chunk: its collective may start after it.
    pub signal: Option<usize>,
}

/// One collective on chunk `chunk`: `send` rows of this rank, `recv` rows
/// it receives (all-gather: `W` times as many; reduce-scatter: `1/W`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommStep {
    /// The chunk.
    pub chunk: usize,
    /// What this rank contributes.
    pub send: Rows,
    /// What this rank receives.
    pub recv: Rows,
}

/// A tensor-parallel GEMM: the global problem `C[M,N] = A[M,K] * B[N,K]^T`
/// split over `world` ranks, its communication cut into `chunks` chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpGemm {
    /// Which split.
    pub mode: Mode,
    /// The global problem.
    pub size: GemmSize,
    /// Ranks (GPUs).
    pub world: usize,
    /// Chunks the communication is cut into (1: no chunking).
    pub chunks: usize,
    /// The GEMM takes 1x128 and 128x128 block scales (FP8), so K and N
    /// splits must fall on scale blocks.
    pub block_scaled: bool,
}

/// The per-rank shapes of a [`TpGemm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalShapes {
    /// Rows of A a rank holds (`M/W`, or `M` for reduce-scatter).
    pub a_rows: u64,
    /// Rows of B a rank holds (`N/W`, or `N`).
    pub b_rows: u64,
    /// K of a rank's GEMM (`K`, or `K/W`).
    pub k: u64,
    /// N of a rank's GEMM: columns of its output rows.
    pub n: u64,
    /// Rows of a rank's C (`M`, or `M/W`).
    pub c_rows: u64,
    /// Rows of one rank's part of one chunk (`M/(W*chunks)`).
    pub chunk_rows: u64,
}

impl TpGemm {
    /// Checks that the split is whole: M divides into `world * chunks`
    /// parts, the split dimension into `world`, and with block scales the
    /// split falls on 128-wide scale blocks. The message says which.
    pub fn validate(&self) -> Result<(), String> {
        let GemmSize { m, n, k } = self.size;
        let (w, s) = (self.world as u64, self.chunks as u64);
        if w == 0 || s == 0 {
            return Err(format!("{} ranks and {} chunks: both must be at least 1", self.world, self.chunks));
        }
        if m == 0 || n == 0 || k == 0 {
            return Err(format!("{m}x{n}x{k} has a zero dimension"));
        }
        if m % (w * s) != 0 {
            return Err(format!("M = {m} does not split into {w} ranks x {s} chunks of whole rows"));
        }
        let (name, split) = match self.mode {
            Mode::AllGatherGemm => ("N", n),
            Mode::GemmReduceScatter => ("K", k),
        };
        if split % w != 0 {
            return Err(format!("{name} = {split} does not split into {w} ranks"));
        }
        // One rank holds the whole scale grid; more must split it on block edges.
        if self.block_scaled && w > 1 && (split / w) % SCALE_BLOCK as u64 != 0 {
            return Err(format!(
                "{name} = {split} over {w} ranks gives {} a rank, not a multiple of the {SCALE_BLOCK}-wide scale blocks",
                split / w
            ));
        }
        Ok(())
    }

    /// The shapes one rank holds and computes.
    pub fn local(&self) -> LocalShapes {
        let GemmSize { m, n, k } = self.size;
        let w = self.world as u64;
        let chunk_rows = m / w / self.chunks as u64;
        match self.mode {
            Mode::AllGatherGemm => LocalShapes { a_rows: m / w, b_rows: n / w, k, n: n / w, c_rows: m, chunk_rows },
            Mode::GemmReduceScatter => LocalShapes { a_rows: m, b_rows: n, k: k / w, n, c_rows: m / w, chunk_rows },
        }
    }

    /// The rows of buffer `buf` on a rank.
    pub fn rows_of(&self, buf: Buf) -> u64 {
        let l = self.local();
        match buf {
            Buf::A => l.a_rows,
            Buf::Gathered | Buf::Partial => self.size.m,
            Buf::C => l.c_rows,
        }
    }

    /// The collectives of the overlapped operation on every rank, in order.
    pub fn comm_steps(&self) -> Vec<CommStep> {
        let (w, mc) = (self.world as u64, self.local().chunk_rows);
        (0..self.chunks)
            .map(|s| {
                let chunk = Rows { buf: Buf::A, row: s as u64 * mc, rows: mc };
                let all = |buf| Rows { buf, row: s as u64 * w * mc, rows: w * mc };
                match self.mode {
                    Mode::AllGatherGemm => CommStep { chunk: s, send: chunk, recv: all(Buf::Gathered) },
                    Mode::GemmReduceScatter => {
                        CommStep { chunk: s, send: all(Buf::Partial), recv: Rows { buf: Buf::C, ..chunk } }
                    }
                }
            })
            .collect()
    }

    /// The GEMM launches of the overlapped operation on rank `rank`, in the
    /// order they are issued.
    pub fn gemm_steps(&self, rank: usize) -> Vec<GemmStep> {
        let (w, l) = (self.world as u64, self.local());
        let (ml, mc) = (self.size.m / w, l.chunk_rows);
        let rows = |buf, row| Rows { buf, row, rows: mc };
        match self.mode {
            Mode::AllGatherGemm => {
                let own = GemmStep {
                    a: Rows { buf: Buf::A, row: 0, rows: ml },
                    out: Rows { buf: Buf::C, row: rank as u64 * ml, rows: ml },
                    wait: None,
                    signal: None,
                };
                let peers = (0..self.chunks).flat_map(move |s| {
                    (1..w).map(move |i| {
                        let p = (rank as u64 + i) % w;
                        GemmStep {
                            a: rows(Buf::Gathered, (s as u64 * w + p) * mc),
                            out: rows(Buf::C, p * ml + s as u64 * mc),
                            wait: Some(s),
                            signal: None,
                        }
                    })
                });
                std::iter::once(own).chain(peers).collect()
            }
            Mode::GemmReduceScatter => (0..self.chunks)
                .flat_map(move |s| {
                    (0..w).map(move |p| GemmStep {
                        a: rows(Buf::A, p * ml + s as u64 * mc),
                        out: rows(Buf::Partial, (s as u64 * w + p) * mc),
                        wait: None,
                        signal: (p == w - 1).then_some(s),
                    })
                })
                .collect(),
        }
    }

    /// The rank's whole GEMM as one launch (the "GEMM alone" baseline): on
    /// the gathered A, or into the partial products.
    pub fn whole_gemm(&self) -> GemmStep {
        let m = self.size.m;
        let (a, out) = match self.mode {
            Mode::AllGatherGemm => (Buf::Gathered, Buf::C),
            Mode::GemmReduceScatter => (Buf::A, Buf::Partial),
        };
        GemmStep { a: Rows { buf: a, row: 0, rows: m }, out: Rows { buf: out, row: 0, rows: m }, wait: None, signal: None }
    }

    /// The same operation unchunked: the "communication alone" baseline and
    /// the reference layout (with one chunk, chunk-major is row-major).
    pub fn unchunked(&self) -> TpGemm {
        TpGemm { chunks: 1, ..*self }
    }

    /// GEMM flops of the whole operation, all ranks together.
    pub fn flops(&self) -> f64 {
        2.0 * self.size.m as f64 * self.size.n as f64 * self.size.k as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(mode: Mode, m: u64, n: u64, k: u64, world: usize, chunks: usize) -> TpGemm {
        TpGemm { mode, size: GemmSize::new(m, n, k), world, chunks, block_scaled: false }
    }

    /// A 64x16x8 problem over 1, 2 and 4 ranks and chunks.
    fn splits(mode: Mode) -> impl Iterator<Item = TpGemm> {
        [1, 2, 4].into_iter().flat_map(move |w| [1, 2, 4].into_iter().map(move |s| tp(mode, 64, 16, 8, w, s)))
    }

    /// Every row of every output buffer is written exactly once, from the
    /// row of A it must come from.
    fn assert_covers(t: &TpGemm, rank: usize) {
        let steps = t.gemm_steps(rank);
        let out_rows = t.rows_of(steps[0].out.buf) as usize;
        let mut written = vec![0u32; out_rows];
        for g in &steps {
            assert_eq!(g.a.rows, g.out.rows, "{g:?}");
            for i in 0..g.out.rows {
                written[(g.out.row + i) as usize] += 1;
            }
        }
        assert!(written.iter().all(|&c| c == 1), "{t:?} rank {rank}: rows written {written:?}");
    }

    #[test]
    fn all_gather_own_rows_first_then_each_chunk_of_each_peer() {
        let t = tp(Mode::AllGatherGemm, 16, 8, 4, 2, 2);
        assert_eq!(t.validate(), Ok(()));
        let l = t.local();
        assert_eq!((l.a_rows, l.b_rows, l.k, l.n, l.c_rows, l.chunk_rows), (8, 4, 4, 4, 16, 4));
        let g = t.gemm_steps(1);
        // Rank 1's own rows are C rows 8..16; they wait for nothing.
        assert_eq!(g[0].a, Rows { buf: Buf::A, row: 0, rows: 8 });
        assert_eq!(g[0].out, Rows { buf: Buf::C, row: 8, rows: 8 });
        assert_eq!(g[0].wait, None);
        // Chunk 0 of rank 0 sits at gathered rows 0..4 and is C rows 0..4;
        // chunk 1 of rank 0 at gathered rows 8..12 (chunk-major) is C rows 4..8.
        assert_eq!(g[1].a, Rows { buf: Buf::Gathered, row: 0, rows: 4 });
        assert_eq!(g[1].out, Rows { buf: Buf::C, row: 0, rows: 4 });
        assert_eq!(g[1].wait, Some(0));
        assert_eq!(g[2].a, Rows { buf: Buf::Gathered, row: 8, rows: 4 });
        assert_eq!(g[2].out, Rows { buf: Buf::C, row: 4, rows: 4 });
        assert_eq!(g[2].wait, Some(1));
        assert_eq!(g.len(), 3);
        let c = t.comm_steps();
        assert_eq!(c[1].send, Rows { buf: Buf::A, row: 4, rows: 4 });
        assert_eq!(c[1].recv, Rows { buf: Buf::Gathered, row: 8, rows: 8 });
        for t in splits(Mode::AllGatherGemm) {
            (0..t.world).for_each(|r| assert_covers(&t, r));
        }
    }

    #[test]
    fn reduce_scatter_chunk_holds_every_ranks_rows_and_signals_once() {
        let t = tp(Mode::GemmReduceScatter, 16, 8, 4, 2, 2);
        assert_eq!(t.validate(), Ok(()));
        let g = t.gemm_steps(0);
        // Chunk 0 = A rows 0..4 (rank 0's part) and 8..12 (rank 1's part),
        // written to partial rows 0..8 in rank order.
        assert_eq!(g[0].a, Rows { buf: Buf::A, row: 0, rows: 4 });
        assert_eq!(g[1].a, Rows { buf: Buf::A, row: 8, rows: 4 });
        assert_eq!(g[1].out, Rows { buf: Buf::Partial, row: 4, rows: 4 });
        assert_eq!((g[0].signal, g[1].signal, g[3].signal), (None, Some(0), Some(1)));
        let c = t.comm_steps();
        assert_eq!(c[1].send, Rows { buf: Buf::Partial, row: 8, rows: 8 });
        assert_eq!(c[1].recv, Rows { buf: Buf::C, row: 4, rows: 4 });
        for t in splits(Mode::GemmReduceScatter) {
            (0..t.world).for_each(|r| assert_covers(&t, r));
            let signals: Vec<usize> = t.gemm_steps(0).iter().filter_map(|g| g.signal).collect();
            assert_eq!(signals, (0..t.chunks).collect::<Vec<_>>());
        }
    }

    #[test]
    fn world_of_one_is_a_plain_gemm_with_a_copy() {
        let t = tp(Mode::AllGatherGemm, 8, 8, 8, 1, 1);
        let g = t.gemm_steps(0);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].out, Rows { buf: Buf::C, row: 0, rows: 8 });
        let t = tp(Mode::GemmReduceScatter, 8, 8, 8, 1, 1);
        assert_eq!(t.comm_steps()[0].recv, Rows { buf: Buf::C, row: 0, rows: 8 });
    }

    #[test]
    fn splits_that_are_not_whole_are_errors_that_say_why() {
        let err = |t: TpGemm| t.validate().unwrap_err();
        assert_eq!(err(tp(Mode::AllGatherGemm, 100, 8, 8, 2, 4)), "M = 100 does not split into 2 ranks x 4 chunks of whole rows");
        assert_eq!(err(tp(Mode::AllGatherGemm, 16, 9, 8, 2, 1)), "N = 9 does not split into 2 ranks");
        assert_eq!(err(tp(Mode::GemmReduceScatter, 16, 8, 9, 2, 1)), "K = 9 does not split into 2 ranks");
        let fp8 = TpGemm { block_scaled: true, ..tp(Mode::GemmReduceScatter, 16, 8, 384, 2, 1) };
        assert_eq!(err(fp8), "K = 384 over 2 ranks gives 192 a rank, not a multiple of the 128-wide scale blocks");
        let fp8 = TpGemm { block_scaled: true, ..tp(Mode::AllGatherGemm, 16, 512, 8, 2, 1) };
        assert_eq!(fp8.validate(), Ok(()));
        let fp8 = TpGemm { block_scaled: true, ..tp(Mode::AllGatherGemm, 16, 1000, 8, 1, 1) };
        assert_eq!(fp8.validate(), Ok(()));
        assert!(err(tp(Mode::AllGatherGemm, 16, 8, 8, 0, 1)).contains("at least 1"));
        assert!(err(tp(Mode::AllGatherGemm, 0, 8, 8, 1, 1)).contains("zero dimension"));
        assert_eq!(Mode::parse("rs"), Some(Mode::GemmReduceScatter));
        assert_eq!(Mode::parse("x"), None);
    }
}
