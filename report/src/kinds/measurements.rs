//! The measurements file (`tilec-measurements/1`), which
//! scripts/collect-measurements.py gathers from a sweep's tilec-bench
//! reports: every kernel that ran and passed, with its config, its median
//! time and the vendor baselines' medians in the same run. `tilec
//! calibrate` fits the cost model to these, and scripts/judge-picks.py
//! judges picks against them.

use crate::schema::{BenchDtype, Shape};
use crate::table::opt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a measurements file.
pub const SCHEMA: &str = "tilec-measurements/1";

/// A measurements file ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurements {
    /// [`SCHEMA`].
    pub schema: String,
    /// The GPU as the run's gpu.txt names it (nvidia-smi's CSV header and line).
    pub gpu: String,
    /// What the shapes are (`training: draw-shapes.py --seed 1 --count 30`).
    pub set: String,
    /// One entry per kernel timed.
    pub records: Vec<Measured>,
}

/// One timed kernel: what a measurements file and a calibration report
/// both say of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// The operand type.
    pub dtype: BenchDtype,
    /// Rows of A and C.
    pub m: u64,
    /// Columns of C.
    pub n: u64,
    /// The reduction length.
    pub k: u64,
    /// The artifact's folder name in the sweep bundle.
    pub artifact: String,
    /// Its config as the bundle's sweep.txt gives it.
    pub config: String,
    /// Its median time, ms.
    pub median_ms: f64,
    /// The fastest baseline's median, ms; null when no baseline ran and
    /// passed.
    pub vendor_ms: Option<f64>,
}

impl Kernel {
    /// The problem's shape.
    pub fn shape(&self) -> Shape {
        Shape::new(self.m, self.n, self.k)
    }
}

/// One timed kernel of a measurements file, with its baselines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The kernel and its time.
    #[serde(flatten)]
    pub kernel: Kernel,
    /// Each baseline that ran and passed: its median, ms.
    pub baselines: BTreeMap<String, f64>,
}

impl Measurements {
    /// The GPU's line (the last of `gpu`), the set, then one line per
    /// kernel: its time, the fastest baseline's over it (above 1 the kernel
    /// is faster), each baseline's time, and its config.
    pub fn table(&self) -> String {
        let mut baselines: Vec<&str> = self.records.iter().flat_map(|r| r.baselines.keys().map(String::as_str)).collect();
        baselines.sort();
        baselines.dedup();
        let mut s = format!("{} on {}: {}\n", self.schema, self.gpu.lines().last().unwrap_or("-"), self.set);
        let _ = write!(s, "{:<18} {:<5} {:<22} {:>9} {:>9} {:>7}", "shape (MxNxK)", "dtype", "artifact", "ms", "vendor_ms", "ratio");
        for b in &baselines {
            let _ = write!(s, " {b:>18}");
        }
        let _ = writeln!(s, "  config");
        for Measured { kernel: r, baselines: timed } in &self.records {
            let ratio = r.vendor_ms.map(|v| v / r.median_ms);
            let _ = write!(
                s,
                "{:<18} {:<5} {:<22} {:>9.4} {:>9} {:>7}",
                r.shape().to_string(),
                r.dtype.name(),
                r.artifact,
                r.median_ms,
                opt(r.vendor_ms, 4),
                opt(ratio, 3)
            );
            for b in &baselines {
                let _ = write!(s, " {:>18}", opt(timed.get(*b).copied(), 4));
            }
            let _ = writeln!(s, "  {}", r.config);
        }
        s
    }
}
