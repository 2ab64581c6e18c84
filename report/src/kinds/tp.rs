//! The tensor-parallel GEMM report (`tilec-tp --json`), field for field
//! what `runtime/src/bin/tilec-tp.rs` writes: these are the very types it
//! writes.

use serde::{Deserialize, Serialize};

/// The schema of a tensor-parallel report.
pub const TP_SCHEMA: &str = "tilec-tp/1";

/// One chunk count's outcome in a tensor-parallel report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpRow {
    /// Chunks the communication is split into.
    pub chunks: usize,
    /// SMs given to communication (0: NCCL's choice).
    pub comm_sms: u32,
    /// Relative error of the overlapped result.
    pub error: f64,
    /// The check passed.
    pub pass: bool,
    /// Per way (in [`TpReport::ways`]' order), per round: the slowest
    /// rank's time, ms.
    pub ms: Vec<Vec<f64>>,
}

/// A tensor-parallel GEMM report ([`TP_SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpReport {
    /// [`TP_SCHEMA`].
    pub schema: String,
    /// GPUs in the run.
    pub gpus: usize,
    /// `ag` (all-gather + GEMM) or `rs` (GEMM + reduce-scatter).
    pub mode: String,
    /// The whole GEMM's `[M, N, K]`.
    pub shape: [u64; 3],
    /// Element type of A and B.
    pub dtype: String,
    /// The kernel artifact.
    pub kernel: String,
    /// The inputs' seed.
    pub seed: u64,
    /// The ways each round runs (`overlapped`, `comm alone`, `gemm alone`,
    /// `sequential`).
    pub ways: Vec<String>,
    /// One row per chunk count.
    pub rows: Vec<TpRow>,
}

impl TpReport {
    /// `2 M N K` of the whole GEMM.
    pub fn flops(&self) -> f64 {
        let [m, n, k] = self.shape;
        2.0 * m as f64 * n as f64 * k as f64
    }
    /// `row`'s round times of the way called `name` (`None` if the report
    /// has no such way).
    pub fn way<'a>(&self, row: &'a TpRow, name: &str) -> Option<&'a [f64]> {
        let i = self.ways.iter().position(|w| w == name)?;
        row.ms.get(i).map(Vec::as_slice)
    }
}
