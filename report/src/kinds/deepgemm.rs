//! DeepGEMM's run on the GPU machine (`tilec-deepgemm-run/1`), written by
//! `scripts/anchors/deepgemm_anchor.py`: per shape DeepGEMM's config, its
//! check, its single calls' median times (CUDA events) beside cuBLASLt's
//! FP8 through PyTorch in the same rounds, and its kernel time under the
//! profiler (DeepGEMM's own `bench_kineto`).

use crate::table::opt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a DeepGEMM run.
pub const SCHEMA: &str = "tilec-deepgemm-run/1";

/// A DeepGEMM run ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeepGemmRun {
    /// [`SCHEMA`].
    pub schema: String,
    /// The GPU as PyTorch names it.
    pub gpu: String,
    /// PyTorch's version.
    pub torch: String,
    /// The DeepGEMM and CUTLASS commits the bundle was built from.
    pub versions: String,
    /// The SMs DeepGEMM's heuristic counts.
    pub deep_gemm_sms: i64,
    /// One record a shape.
    pub records: Vec<DeepGemmShape>,
}

/// One shape of a [`DeepGemmRun`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeepGemmShape {
    /// Rows of A and C.
    pub m: i64,
    /// Columns of C.
    pub n: i64,
    /// The reduction length.
    pub k: i64,
    /// DeepGEMM's block sizes, stages and multicast.
    pub config: String,
    /// `pass`, or why the check failed.
    pub check: String,
    /// Each contender's median time, ms (`deepgemm`, `cublaslt_per_tensor`,
    /// `cublaslt_block_scaled` where it runs).
    #[serde(default)]
    pub events_ms: BTreeMap<String, f64>,
    /// Each contender's time in every round, ms.
    #[serde(default)]
    pub events_samples_ms: BTreeMap<String, Vec<f64>>,
    /// Why cuBLASLt's block-scaled FP8 refused the shape.
    pub cublaslt_block_scaled_refused: Option<String>,
    /// DeepGEMM's mean kernel time under the profiler, ms.
    pub kineto_ms: Option<f64>,
    /// Why the profiler gave none.
    pub kineto_error: Option<String>,
}

impl DeepGemmRun {
    /// Per shape the config, the check, DeepGEMM's and the baselines'
    /// medians, DeepGEMM's speed over per-tensor FP8 and its profiled time.
    pub fn table(&self) -> String {
        let mut s = format!("{} on {} ({}; torch {})\n", self.schema, self.gpu, self.versions, self.torch);
        let _ = writeln!(s, "{:<18} {:>9} {:>10} {:>10} {:>8} {:>10}  check  config", "shape (MxNxK)", "ms", "per-tensor", "block", "ratio", "kineto_ms");
        for r in &self.records {
            let (dg, pt) = (r.events_ms.get("deepgemm").copied(), r.events_ms.get("cublaslt_per_tensor").copied());
            let ratio = dg.zip(pt).map(|(d, p)| p / d);
            let _ = writeln!(
                s,
                "{:<18} {:>9} {:>10} {:>10} {:>8} {:>10}  {:<5}  {}",
                format!("{}x{}x{}", r.m, r.n, r.k),
                opt(dg, 4),
                opt(pt, 4),
                opt(r.events_ms.get("cublaslt_block_scaled").copied(), 4),
                opt(ratio, 3),
                opt(r.kineto_ms, 4),
                r.check,
                r.config
            );
        }
        s
    }
}
