//! Results of several `tilec-bench/2` runs gathered into one record under a
//! hand-written header (`tilec-bench-results/1`): the GPU, the day and what
//! was swept, without the runs' device, config and artifact sections. It is
//! summarised and tabulated as a GEMM report.

use crate::schema::{Peaks, ShapeResult};
use crate::table::format_report_tables;
use serde::{Deserialize, Serialize};

/// The schema of a gathered-results record.
pub const SCHEMA: &str = "tilec-bench-results/1";

/// A gathered-results record ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// [`SCHEMA`].
    pub schema: String,
    /// The GPU's name.
    pub gpu: String,
    /// The day of the runs.
    pub date: String,
    /// What was swept.
    pub what: String,
    /// One entry per (dtype, shape), as `tilec-bench/2` wrote it.
    pub results: Vec<ShapeResult>,
}

impl BenchResults {
    /// Parses the record and summarises each shape as [`crate::schema::Report::from_json`]
    /// does, with the H100's peaks: the records of this kind predate
    /// `tilec-bench/3`'s peaks and were all taken on an H100.
    pub fn from_json(s: &str) -> Result<Self, serde_json::Error> {
        let mut r: BenchResults = serde_json::from_str(s)?;
        let peaks = Peaks::default();
        r.results.iter_mut().for_each(|x| x.summarize(&peaks));
        Ok(r)
    }

    /// The header line, then the GEMM results table and geometric means.
    pub fn table(&self) -> String {
        format!("{} on {}, {}: {}\n{}", self.schema, self.gpu, self.date, self.what, format_report_tables(&self.results))
    }
}
