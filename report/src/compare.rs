//! Two reports side by side: per shape, the ratio to the baseline in each
//! and its change; then the same for the geometric means.

use crate::schema::{Report, ShapeResult};
use crate::summary::group_means;
use crate::table::{opt, short_name};
use std::fmt::Write as _;

/// `b / a - 1` in percent, when both are there.
pub(crate) fn change(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => format!("{:+.1}%", (b / a - 1.0) * 100.0),
        _ => "-".into(),
    }
}

fn ours_tf(r: &ShapeResult) -> Option<f64> {
    r.best_ours.as_deref().and_then(|n| r.run(n)).and_then(|o| o.tflops)
}

/// The comparison table of `a` (before) and `b` (after). Shapes are matched
/// by M, N, K and dtype; one only in a report shows `-` for the other.
pub fn format_compare(a: &Report, b: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "A: {} {} commit {}", a.date_utc, a.device.name, a.commit.as_deref().unwrap_or("unknown"));
    let _ = writeln!(s, "B: {} {} commit {}", b.date_utc, b.device.name, b.commit.as_deref().unwrap_or("unknown"));
    let _ = writeln!(
        s,
        "{:<18} {:<5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  best ours A -> B",
        "shape (MxNxK)", "dtype", "ratio_A", "ratio_B", "change", "TF_A", "TF_B", "change"
    );
    let key = |r: &ShapeResult| (r.m, r.n, r.k, r.dtype);
    let mut rows: Vec<(Option<&ShapeResult>, Option<&ShapeResult>)> =
        a.results.iter().map(|ra| (Some(ra), b.results.iter().find(|rb| key(rb) == key(ra)))).collect();
    rows.extend(b.results.iter().filter(|rb| !a.results.iter().any(|ra| key(ra) == key(rb))).map(|rb| (None, Some(rb))));
    for (ra, rb) in rows {
        let any = ra.or(rb).expect("one side is present");
        let ratio = |r: Option<&ShapeResult>| r.and_then(|r| r.ratio);
        let tf = |r: Option<&ShapeResult>| r.and_then(ours_tf);
        fn best(r: Option<&ShapeResult>) -> &str {
            r.and_then(|r| r.best_ours.as_deref()).map_or("-", short_name)
        }
        let _ = writeln!(
            s,
            "{:<18} {:<5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}  {} -> {}",
            any.shape().to_string(),
            any.dtype.name(),
            opt(ratio(ra), 3),
            opt(ratio(rb), 3),
            change(ratio(ra), ratio(rb)),
            opt(tf(ra), 1),
            opt(tf(rb), 1),
            change(tf(ra), tf(rb)),
            best(ra),
            best(rb),
        );
    }
    let (ma, mb) = (group_means(&a.results), group_means(&b.results));
    let _ = writeln!(s, "\n{:<14} {:>8} {:>8} {:>8}", "geomean", "A", "B", "change");
    let mut labels: Vec<String> = ma.iter().map(|g| g.label()).collect();
    labels.extend(mb.iter().map(|g| g.label()).filter(|l| !ma.iter().any(|g| &g.label() == l)));
    for label in labels {
        let find = |m: &[crate::summary::GroupMean]| m.iter().find(|g| g.label() == label).map(|g| g.geomean);
        let (ga, gb) = (find(&ma), find(&mb));
        let _ = writeln!(s, "{:<14} {:>8} {:>8} {:>8}", label, opt(ga, 3), opt(gb, 3), change(ga, gb));
    }
    s
}
