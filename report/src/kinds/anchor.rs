//! DeepGEMM beside tilec's picks (`tilec-anchor-deepgemm/1`), written by
//! `scripts/anchors/compare-deepgemm.py` from a DeepGEMM run and the picks
//! timed on the same machine: per shape each one's time, its ratio to
//! cuBLASLt's per-tensor FP8 in its own run, the roofline each reaches and
//! ncu's kernel durations where taken; geometric means by group.

use crate::table::opt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of an anchor comparison.
pub const SCHEMA: &str = "tilec-anchor-deepgemm/1";

/// An anchor comparison ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// [`SCHEMA`].
    pub schema: String,
    /// The GPU as DeepGEMM's run names it.
    pub gpu: String,
    /// PyTorch's version in DeepGEMM's run.
    pub torch: String,
    /// The set tilec's measurements name.
    pub tilec_set: String,
    /// Geometric means by group (`m_64_128`, `m_4096`).
    pub summary: BTreeMap<String, AnchorSummary>,
    /// One record a shape both timed.
    pub records: Vec<AnchorShape>,
}

/// One group's geometric means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorSummary {
    /// Shapes in the group.
    pub shapes: i64,
    /// tilec's picks' speed over per-tensor FP8.
    pub tilec_over_per_tensor: Option<f64>,
    /// DeepGEMM's speed over per-tensor FP8.
    pub deepgemm_over_per_tensor: Option<f64>,
    /// The fraction of the roofline tilec's picks reach.
    pub tilec_roofline: Option<f64>,
    /// The fraction of the roofline DeepGEMM reaches.
    pub deepgemm_roofline: Option<f64>,
}

/// One shape: both configs, times (ms), ratios and roofline fractions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnchorShape {
    /// Rows of A and C.
    pub m: i64,
    /// Columns of C.
    pub n: i64,
    /// The reduction length.
    pub k: i64,
    /// The config tilec picked.
    pub tilec_config: String,
    /// DeepGEMM's block sizes, stages and multicast.
    pub deepgemm_config: String,
    /// tilec's pick's median time, ms.
    pub tilec_ms: f64,
    /// cuBLASLt per-tensor FP8 in tilec's run, ms.
    pub tilec_per_tensor_ms: f64,
    /// DeepGEMM's median time, ms.
    pub deepgemm_ms: f64,
    /// cuBLASLt per-tensor FP8 in DeepGEMM's run, ms.
    pub deepgemm_per_tensor_ms: f64,
    /// tilec's speed over per-tensor FP8.
    pub tilec_over_per_tensor: f64,
    /// DeepGEMM's speed over per-tensor FP8.
    pub deepgemm_over_per_tensor: f64,
    /// The fraction of the roofline tilec's pick reaches.
    pub tilec_roofline: f64,
    /// The fraction of the roofline DeepGEMM reaches.
    pub deepgemm_roofline: f64,
    /// DeepGEMM's TFLOP/s by its profiled kernel time.
    pub deepgemm_kineto_tflops: Option<f64>,
    /// DeepGEMM's kernel duration under ncu, us.
    pub ncu_deepgemm_us: Option<f64>,
    /// tilec's kernel duration under ncu, us.
    pub ncu_tilec_us: Option<f64>,
    /// tilec's TFLOP/s by ncu's duration.
    pub ncu_tilec_tflops: Option<f64>,
    /// DeepGEMM's TFLOP/s by ncu's duration.
    pub ncu_deepgemm_tflops: Option<f64>,
    /// DeepGEMM's published H800 figure for the shape, TFLOP/s.
    pub deepgemm_published_h800_tflops: Option<f64>,
}

impl Anchor {
    /// Per shape both ratios to per-tensor FP8, both roofline fractions and
    /// ncu's durations; then each group's geometric means.
    pub fn table(&self) -> String {
        let mut s = format!("{} on {}: {}\n", self.schema, self.gpu, self.tilec_set);
        let _ = writeln!(s, "{:<18} {:>8} {:>8} {:>10} {:>10} {:>9} {:>9}", "shape (MxNxK)", "tilec/pt", "dg/pt", "roof tilec", "roof dg", "ncu tilec", "ncu dg");
        for r in &self.records {
            let _ = writeln!(
                s,
                "{:<18} {:>8.3} {:>8.3} {:>10.3} {:>10.3} {:>9} {:>9}",
                format!("{}x{}x{}", r.m, r.n, r.k),
                r.tilec_over_per_tensor,
                r.deepgemm_over_per_tensor,
                r.tilec_roofline,
                r.deepgemm_roofline,
                opt(r.ncu_tilec_us, 1),
                opt(r.ncu_deepgemm_us, 1)
            );
        }
        for (group, g) in &self.summary {
            let _ = writeln!(
                s,
                "{group} ({} shapes): tilec {} DeepGEMM {} of per-tensor FP8; roofline tilec {} DeepGEMM {}",
                g.shapes,
                opt(g.tilec_over_per_tensor, 3),
                opt(g.deepgemm_over_per_tensor, 3),
                opt(g.tilec_roofline, 3),
                opt(g.deepgemm_roofline, 3)
            );
        }
        s
    }
}
