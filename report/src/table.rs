//! The text tables: one run's results, and the geometric means; the
//! grouped and tensor-parallel reports' tables.

use crate::kinds::{GroupedReport, GroupedResult, TpReport};
use crate::schema::{RowCheck, ShapeResult, Stats};
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
/// for small-M ones (`HBM`), of the report's peaks; `roofline` its TFLOP/s
/// as a percentage of the shape's roofline (the lower of the peak and what
/// the HBM bandwidth allows); `check` is that kernel's check (FAIL only when no
/// kernel of ours passed). Candidates that failed their check (never timed)
/// are listed under the table.
pub fn format_table(results: &[ShapeResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<18} {:<5} {:>8} {:>9} {:>8} {:>6} {:>13} {:>11} {:>8} {:>5}  best ours",
        "shape (MxNxK)", "dtype", "ours_TF", "cublas_TF", "lt_TF", "ratio", "p10..p90", "of peak", "roofline", "check"
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
            "{:<18} {:<5} {:>8} {:>9} {:>8} {:>6} {:>13} {:>11} {:>8} {:>5}  {}",
            shape.to_string(),
            r.dtype.name(),
            opt(ours.and_then(|o| o.tflops), 1),
            opt(tf(&["cublas"]), 1),
            opt(tf(&["cublaslt", "cublaslt-fp8"]), 1),
            opt(r.ratio, 3),
            spread,
            of_peak.unwrap_or_else(|| "-".into()),
            ours.and_then(|o| o.pct_roofline).map_or_else(|| "-".into(), |p| format!("{p:.1}%")),
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

/// The grouped report's table, as `tilec-bench --grouped` prints it, under
/// a line naming the run ([`format_grouped_rows`]).
pub fn format_grouped_table(report: &GroupedReport) -> String {
    format!("{} on {}, {}\n{}", report.schema, report.device, report.date_utc, format_grouped_rows(&report.results))
}

/// Per grouped problem, each contender's median time and TFLOP/s, its
/// ratio to the per-group cuBLAS loop (`vs loop`, above 1 is faster) and
/// its check, under a header line.
pub fn format_grouped_rows(results: &[GroupedResult]) -> String {
    let mut s = String::new();
    let names = results.iter().flat_map(|r| &r.runs).map(|run| short_name(&run.name).len());
    let w = names.chain([26]).max().unwrap_or(26);
    let _ = writeln!(s, "{:<44} {:<w$} {:>9} {:>8} {:>9} {:>9}", "problem", "contender", "ms", "TFLOP/s", "vs loop", "err");
    for r in results {
        let base = r.runs.iter().find(|x| x.name == "cublas-loop").and_then(|x| x.stats.as_ref()).map(|s| s.median_ms);
        for run in &r.runs {
            let ms = run.stats.as_ref().map(|s| s.median_ms);
            let ratio = base.zip(ms).map(|(b, m)| b / m);
            let err = match (run.rel_err, &run.error) {
                (_, Some(e)) => format!("ERROR {e}"),
                (Some(e), None) => format!("{e:.2e}{}", if run.pass { "" } else { " FAIL" }),
                (None, None) => "-".into(),
            };
            let _ = writeln!(
                s,
                "{:<44} {:<w$} {:>9} {:>8} {:>9} {:>9}",
                r.label,
                short_name(&run.name),
                opt(ms, 3),
                opt(run.tflops, 1),
                opt(ratio, 3),
                err
            );
        }
        if let Some(e) = &r.error {
            let _ = writeln!(s, "{:<44} ERROR {e}", r.label);
        }
    }
    s
}

/// The median of `v`, ms (`None` if empty or not finite).
fn median(v: &[f64]) -> Option<f64> {
    Stats::from_samples(v).map(|s| s.median_ms)
}

/// The tensor-parallel report's table, as `tilec-tp` prints it: per chunk
/// count, the median time of each way, the ideal overlap (the longer of
/// communication and GEMM alone), how close the overlapped run comes to it
/// (`ideal/ov`, the median over rounds), the gain over running them one
/// after the other (`seq/ov`), TFLOP/s of the overlapped run and the check.
pub fn format_tp_table(report: &TpReport) -> String {
    let [m, n, k] = report.shape;
    let mut s = format!(
        "{}: {} GPUs, {} {m}x{n}x{k} {}, kernel {}, seed {:#x}\n",
        report.schema,
        report.gpus,
        report.mode,
        report.dtype,
        short_name(&report.kernel),
        report.seed
    );
    let _ = writeln!(
        s,
        "{:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8} {:>10}",
        "chunks", "comm_sms", "overlap_ms", "comm_ms", "gemm_ms", "seq_ms", "ideal_ms", "ideal/ov", "seq/ov", "TFLOP/s", "error"
    );
    for r in &report.rows {
        let (ov, comm, gemm, seq) = (report.way(r, "overlapped"), report.way(r, "comm alone"), report.way(r, "gemm alone"), report.way(r, "sequential"));
        let med = |v: Option<&[f64]>| v.and_then(median);
        let (ov_ms, comm_ms, gemm_ms, seq_ms) = (med(ov), med(comm), med(gemm), med(seq));
        let ideal = comm_ms.zip(gemm_ms).map(|(c, g)| c.max(g));
        // Per round: max(comm, gemm) over the overlapped time; the median of those.
        let eff = match (ov, comm, gemm) {
            (Some(o), Some(c), Some(g)) => {
                median(&o.iter().zip(c).zip(g).map(|((o, c), g)| c.max(*g) / o).collect::<Vec<_>>())
            }
            _ => None,
        };
        let _ = writeln!(
            s,
            "{:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>8} {:>10.2e} {}",
            r.chunks,
            r.comm_sms,
            opt(ov_ms, 3),
            opt(comm_ms, 3),
            opt(gemm_ms, 3),
            opt(seq_ms, 3),
            opt(ideal, 3),
            opt(eff, 3),
            opt(seq_ms.zip(ov_ms).map(|(q, o)| q / o), 3),
            opt(ov_ms.map(|o| report.flops() / o / 1e9), 0),
            r.error,
            if r.pass { "pass" } else { "FAIL" }
        );
    }
    s
}
