//! Clustered twins gathered from committed measurements
//! (`tilec-cluster-twins/1`), written by `scripts/cluster-twins.py`: each
//! persistent, unsplit kernel timed beside the same config in 2-CTA
//! clusters in one run, over more than one wave, with the unclustered time
//! over the clustered one, grouped by what the clustering policy looks at,
//! training files apart from the others.

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schema of a twins report.
pub const SCHEMA: &str = "tilec-cluster-twins/1";

/// A twins report ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterTwins {
    /// [`SCHEMA`].
    pub schema: String,
    /// `bf16` or `fp8`.
    pub dtype: String,
    /// One row a set and group.
    pub summary: Vec<TwinGroup>,
    /// One row a shape and clustered config.
    pub pairs: Vec<TwinPair>,
}

/// The pairs of one set (`training`, `other`) and group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwinGroup {
    /// `training` (a file the cost model was fitted on) or `other`.
    pub set: String,
    /// The schedule and what the policy weighs (width, K, waves, rows).
    pub group: String,
    /// Pairs in the group.
    pub pairs: i64,
    /// Geometric mean of the unclustered time over the clustered one.
    pub gain_geomean: f64,
    /// Pairs whose cluster ran over 5% faster.
    pub faster_by_5pct: i64,
    /// Pairs whose cluster ran over 5% slower.
    pub slower_by_5pct: i64,
}

/// One shape's clustered config against its twin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwinPair {
    /// MxNxK.
    pub shape: String,
    /// The clustered config.
    pub config: String,
    /// `training` or `other`.
    pub set: String,
    /// Its [`TwinGroup::group`].
    pub group: String,
    /// Tiles over the SMs.
    pub waves: f64,
    /// Unclustered time over clustered, geometric mean over the files.
    pub gain: f64,
    /// The measurements files that timed both.
    pub files: Vec<String>,
}

impl ClusterTwins {
    /// Each set and group's pairs and gain, then every pair.
    pub fn table(&self) -> String {
        let mut s = format!("{} ({}): unclustered time over clustered\n", self.schema, self.dtype);
        for g in &self.summary {
            let _ = writeln!(s, "{:<9} {:<42} {:>3} pairs {:>7.3}x  {} over 5% faster, {} over 5% slower", g.set, g.group, g.pairs, g.gain_geomean, g.faster_by_5pct, g.slower_by_5pct);
        }
        for p in &self.pairs {
            let _ = writeln!(s, "{:<18} {:<9} {:>5.1} waves {:>7.3}  {}", p.shape, p.set, p.waves, p.gain, p.config);
        }
        s
    }
}
