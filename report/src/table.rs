//! The text tables: one run's results, and the geometric means.

use crate::schema::{RowCheck, ShapeResult};
use crate::summary::{group_means, GroupMean};
use std::fmt::Write as _;

pub(crate) fn opt(v: Option<f64>, prec: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.prec$}"),
        _ => "-".into(),
    }
}

/// Shortens an artifact path to its last component for tables and charts.
pub fn short_name(name: &str) -> &str {
    let t = name.trim_end_matches('/');
    t.rsplit('/').next().unwrap_or(t)
}

impl RowCheck {
    /// The table's `check` column: `ok`, `FAIL`, `ERROR`, or `-` when no
    /// kernel of ours ran.
    pub fn label(self) -> &'static str {
        match self {
            RowCheck::Ok => "ok",
            RowCheck::Fail => "FAIL",
            RowCheck::Error => "ERROR",
            RowCheck::NoOurs => "-",
        }
    }
}

/// The results table: one row per shape and dtype. TFLOP/s come from median
/// times; `ratio` is ours over the faster baseline with its p10..p90;
/// `of peak` is our best kernel's TFLOP/s as a percentage of the dtype's peak
/// for large shapes, its bytes moved as a percentage of the HBM bandwidth
/// for small-M ones (`HBM`), of the report's peaks; `check` is that kernel's check (FAIL only when no
/// kernel of ours passed). Candidates that failed their check (never timed)
/// are listed under the table.
pub fn format_table(results: &[ShapeResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<18} {:<5} {:>8} {:>9} {:>8} {:>6} {:>13} {:>11} {:>5}  best ours",
        "shape (MxNxK)", "dtype", "ours_TF", "cublas_TF", "lt_TF", "ratio", "p10..p90", "of peak", "check"
    );
    for r in results {
        let shape = r.shape();
        let ours = r.best_ours.as_deref().and_then(|n| r.run(n));
        let tf = |names: &[&str]| names.iter().find_map(|n| r.run(n).filter(|x| x.usable()).and_then(|x| x.tflops));
        let spread = r.ratio_stats.as_ref().map_or("-".into(), |q| format!("{:.3}..{:.3}", q.p10, q.p90));
        let of_peak = match ours {
            Some(o) if shape.is_small_m() => o.pct_hbm.map(|p| format!("{p:.1}% HBM")),
            Some(o) => o.pct_peak.map(|p| format!("{p:.1}% peak")),
            None => None,
        };
        let _ = writeln!(
            s,
            "{:<18} {:<5} {:>8} {:>9} {:>8} {:>6} {:>13} {:>11} {:>5}  {}",
            shape.to_string(),
            r.dtype.name(),
            opt(ours.and_then(|o| o.tflops), 1),
            opt(tf(&["cublas"]), 1),
            opt(tf(&["cublaslt", "cublaslt-fp8"]), 1),
            opt(r.ratio, 3),
            spread,
            of_peak.unwrap_or_else(|| "-".into()),
            r.row_check().label(),
            r.best_ours.as_deref().map(short_name).unwrap_or("-"),
        );
    }
    s.push_str(&failed_candidates(results));
    s
}

/// One line per candidate that failed its check on some shape.
fn failed_candidates(results: &[ShapeResult]) -> String {
    let mut failed: Vec<(&str, usize)> = Vec::new();
    for r in results {
        for run in r.failed_ours() {
            match failed.iter_mut().find(|(n, _)| *n == run.name) {
                Some((_, count)) => *count += 1,
                None => failed.push((&run.name, 1)),
            }
        }
    }
    let mut s = String::new();
    for (name, count) in failed {
        let _ = writeln!(s, "check failed (not timed, not in the rows above): {} on {count} shape(s)", short_name(name));
    }
    s
}

/// The geometric means of the ratio, one line per dtype and shape group.
pub fn format_means(means: &[GroupMean]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{:<14} {:>6} {:>8}", "geomean", "shapes", "ratio");
    for g in means {
        let _ = writeln!(s, "{:<14} {:>6} {:>8.3}", g.label(), g.shapes, g.geomean);
    }
    s
}

/// The results table followed by the geometric means.
pub fn format_report_tables(results: &[ShapeResult]) -> String {
    format!("{}\n{}", format_table(results), format_means(&group_means(results)))
}
