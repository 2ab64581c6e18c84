//! The calibration report (`tilec-calibration/1`), which `tilec calibrate
//! --report` writes (src/bin/tilec/calibrate.rs): the cost model's constants, as
//! fitted or as compiled in, and per measured kernel its predicted time
//! against the measured one, with the summary figures of the fit.

use crate::kinds::measurements::Kernel;
use crate::table::opt;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schema of a calibration report.
pub const SCHEMA: &str = "tilec-calibration/1";

/// A calibration report ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// [`SCHEMA`].
    pub schema: String,
    /// The measurements files (`tilec-measurements/1`) read.
    pub inputs: Vec<String>,
    /// The constants were fitted to these kernels (`--fit`), not the ones
    /// compiled in.
    pub fitted: bool,
    /// Each constant's name and value.
    pub constants: Vec<(String, f64)>,
    /// Kernels predicted.
    pub kernels: usize,
    /// Median of |predicted / measured - 1|.
    pub median_relative_error: f64,
    /// Its 90th percentile.
    pub p90_relative_error: f64,
    /// Shapes with measured kernels.
    pub problems: usize,
    /// Shapes where the kernel predicted fastest is within 5% of the
    /// fastest measured.
    pub picks_within_5_percent: usize,
    /// Geometric mean of that kernel's time over the fastest's.
    pub pick_over_fastest_geomean: f64,
    /// One row per kernel.
    pub rows: Vec<CalibrationRow>,
}

/// One kernel: its measurement and the model's prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRow {
    /// The kernel and its measured time.
    #[serde(flatten)]
    pub kernel: Kernel,
    /// The model's time, ms.
    pub predicted_ms: f64,
    /// What the model says bounds the kernel (`mma`, `memory`, `latency`, ...).
    pub bound: String,
    /// |predicted / measured - 1|.
    pub relative_error: f64,
}

impl Calibration {
    /// The summary figures and constants, then one line per kernel.
    pub fn table(&self) -> String {
        let mut s = format!("{} ({}) from {}\n", self.schema, if self.fitted { "fitted" } else { "constants as compiled" }, self.inputs.join(", "));
        let _ = writeln!(
            s,
            "{} kernels: median |predicted/measured - 1| {:.3}, 90th percentile {:.3}",
            self.kernels, self.median_relative_error, self.p90_relative_error
        );
        let _ = writeln!(
            s,
            "{} problems: the kernel predicted fastest within 5% of the fastest measured on {}; its time over the fastest's, geometric mean {:.3}",
            self.problems, self.picks_within_5_percent, self.pick_over_fastest_geomean
        );
        for (name, value) in &self.constants {
            let _ = writeln!(s, "  {name:<34} {value:.4e}");
        }
        let _ = writeln!(s, "\n{:<18} {:<5} {:>10} {:>12} {:>7} {:<9} {:>9}  config", "shape (MxNxK)", "dtype", "measured", "predicted", "error", "bound", "vendor_ms");
        for CalibrationRow { kernel: r, predicted_ms, bound, relative_error } in &self.rows {
            let _ = writeln!(
                s,
                "{:<18} {:<5} {:>10.4} {:>12.4} {:>7.3} {:<9} {:>9}  {}",
                r.shape().to_string(),
                r.dtype.name(),
                r.median_ms,
                predicted_ms,
                relative_error,
                bound,
                opt(r.vendor_ms, 4),
                r.config
            );
        }
        s
    }
}
