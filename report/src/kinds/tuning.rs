//! The tuning file (`tilec-tuning/1`), which `tilec-bench --tuning` writes
//! and `tilec compile --tuning` reads: read with tilec-artifact's own type,
//! so that this reader and the compiler cannot disagree about it.

use crate::table::opt;
use std::fmt::Write as _;
pub use tilec_artifact::{Tuning, TUNING_SCHEMA as SCHEMA};

/// The target, then per problem the fastest config measured, its time, the
/// fastest baseline's over it (above 1 the config is faster) and how many
/// configs were timed.
pub fn table(tuning: &Tuning) -> String {
    let mut s = format!("{} for {}\n", tuning.schema, tuning.target);
    let _ = writeln!(s, "{:<5} {:<18} {:>9} {:>9} {:>7} {:>10}  config", "dtype", "shape (MxNxK)", "ms", "vendor_ms", "ratio", "candidates");
    for e in &tuning.entries {
        let ratio = e.vendor_ms.map(|v| v / e.median_ms);
        let _ = writeln!(
            s,
            "{:<5} {:<18} {:>9.4} {:>9} {:>7} {:>10}  {}",
            e.dtype,
            format!("{}x{}x{}", e.m, e.n, e.k),
            e.median_ms,
            opt(e.vendor_ms, 4),
            opt(ratio, 3),
            e.candidates,
            e.config
        );
    }
    s
}
