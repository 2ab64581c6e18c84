//! What a single call that only moves a GEMM's bytes reaches of the HBM
//! roofline (`tilec-stream-ceiling/1`), written by
//! `scripts/anchors/stream_ceiling.py`: per shape and dtype the bytes, the
//! roofline time, the median times of a copy of those bytes, of the
//! vendor's GEMM and of an empty launch (CUDA events, tilec-bench's
//! method), and the fraction of the roofline each reaches.

use crate::table::opt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a stream-ceiling run.
pub const SCHEMA: &str = "tilec-stream-ceiling/1";

/// A stream-ceiling run ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamCeiling {
    /// [`SCHEMA`].
    pub schema: String,
    /// The GPU as PyTorch names it.
    pub gpu: String,
    /// PyTorch's version.
    pub torch: String,
    /// Triton's version (the copy kernel's compiler).
    pub triton: String,
    /// The bandwidth the roofline takes, bytes a second.
    pub hbm_bytes_per_s: f64,
    /// Geometric means by dtype (`fp8`, `bf16`).
    pub summary: BTreeMap<String, CeilingSummary>,
    /// One record a shape and dtype.
    pub records: Vec<CeilingShape>,
}

/// One dtype's geometric means of the roofline fractions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingSummary {
    /// Shapes timed.
    pub shapes: i64,
    /// The copy's.
    pub copy_roofline: Option<f64>,
    /// The vendor GEMM's.
    pub vendor_roofline: Option<f64>,
    /// The roofline time over itself plus an empty launch's.
    pub bound_roofline: Option<f64>,
}

/// One shape and dtype of a [`StreamCeiling`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CeilingShape {
    /// Rows of A and C.
    pub m: i64,
    /// Columns of C.
    pub n: i64,
    /// The reduction length.
    pub k: i64,
    /// `fp8` (block-scaled, its scales counted) or `bf16`.
    pub dtype: String,
    /// Bytes read: A, B and the scales.
    pub read_bytes: i64,
    /// Bytes written: C.
    pub written_bytes: i64,
    /// The bytes at the roofline's bandwidth, ms.
    pub roofline_ms: f64,
    /// Each contender's median time, ms (`copy_<words>`, the vendor's
    /// `cublaslt_per_tensor` or `cublas`, `empty`).
    pub events_ms: BTreeMap<String, f64>,
    /// The roofline time over the faster copy's.
    pub copy_roofline: f64,
    /// The roofline time over the vendor GEMM's.
    pub vendor_roofline: f64,
    /// The roofline time over itself plus an empty launch's.
    pub bound_roofline: f64,
}

impl StreamCeiling {
    /// Per shape and dtype the roofline, the faster copy, the vendor and
    /// an empty launch (us) with the fractions, then each dtype's means.
    pub fn table(&self) -> String {
        let mut s = format!("{} on {} (torch {}, triton {}; roofline at {:.2} TB/s)\n", self.schema, self.gpu, self.torch, self.triton, self.hbm_bytes_per_s / 1e12);
        let _ = writeln!(s, "{:<18} {:<5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}", "shape (MxNxK)", "dtype", "roof_us", "copy_us", "vendor", "empty", "copy", "vendor", "bound");
        for r in &self.records {
            let copy = r.events_ms.iter().filter(|(name, _)| name.starts_with("copy_")).map(|(_, &ms)| ms).reduce(f64::min);
            let vendor = r.events_ms.iter().find(|(name, _)| !name.starts_with("copy_") && name.as_str() != "empty").map(|(_, &ms)| ms);
            let us = |ms: Option<f64>| opt(ms.map(|v| v * 1e3), 1);
            let _ = writeln!(
                s,
                "{:<18} {:<5} {:>8.1} {:>8} {:>8} {:>8} {:>8.3} {:>8.3} {:>8.3}",
                format!("{}x{}x{}", r.m, r.n, r.k),
                r.dtype,
                r.roofline_ms * 1e3,
                us(copy),
                us(vendor),
                us(r.events_ms.get("empty").copied()),
                r.copy_roofline,
                r.vendor_roofline,
                r.bound_roofline
            );
        }
        for (dtype, g) in &self.summary {
            let _ = writeln!(s, "{dtype} ({} shapes): copy {} vendor {} bound {}", g.shapes, opt(g.copy_roofline, 3), opt(g.vendor_roofline, 3), opt(g.bound_roofline, 3));
        }
        s
    }
}
