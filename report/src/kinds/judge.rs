//! The judge report (`tilec-judge/1`), which scripts/judge-picks.py writes:
//! config selection's pick for each measured shape, its time against the
//! vendor baselines timed in the same run as a ratio (baseline time over
//! the pick's, above 1 the pick is faster), and per dtype, shape group and
//! baseline the geometric mean and the lowest ratio. The README's headline
//! figures are those summaries. Also the comparison of two such reports,
//! which [`crate::judge_chart`] draws.

use crate::compare::change;
use crate::schema::BenchDtype;
use crate::summary::geomean;
use crate::table::opt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema of a judge report.
pub const SCHEMA: &str = "tilec-judge/1";

/// A judge report ([`SCHEMA`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeReport {
    /// [`SCHEMA`].
    pub schema: String,
    /// The measurements files (`tilec-measurements/1`) the picks were found in.
    pub measurements: Vec<String>,
    /// Per dtype, group and baseline, in the order the script printed them.
    pub summary: Vec<JudgeSummary>,
    /// One row per measured (dtype, shape), by dtype then shape.
    pub rows: Vec<JudgeRow>,
}

/// The picks of one dtype and shape group against one baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSummary {
    /// The operand type.
    pub dtype: BenchDtype,
    /// The shape group (`validation`, `benchmark`, ..., `other`).
    pub group: String,
    /// The baseline (`cublas`: the faster of cuBLAS and cuBLASLt;
    /// `block-scaled`, `per-tensor`: cuBLASLt's FP8 GEMMs).
    pub baseline: String,
    /// Shapes in the group.
    pub shapes: usize,
    /// Shapes whose pick was measured and the baseline ran.
    pub compared: usize,
    /// Shapes whose pick no measurements file holds.
    pub unmeasured: usize,
    /// Geometric mean of the compared shapes' ratios; `None` when none was.
    pub geomean: Option<f64>,
    /// The lowest of those ratios; `None` when none was compared.
    pub lowest: Option<f64>,
}

/// One shape's pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeRow {
    /// The operand type.
    pub dtype: BenchDtype,
    /// `MxNxK`.
    pub shape: String,
    /// The shape group.
    pub group: String,
    /// The pick as `tilec compile --explain` prints it, without `sms=`.
    pub config: String,
    /// Some measurements file timed this very config at this shape.
    pub measured: bool,
    /// Baseline time over the pick's, per baseline that ran (empty when
    /// the pick was not measured).
    pub ratios: BTreeMap<String, f64>,
}

impl JudgeReport {
    /// The baselines of `dtype`, in the summary's order, then any only a
    /// row names.
    fn baselines(&self, dtype: BenchDtype) -> Vec<&str> {
        let from_summary = self.summary.iter().filter(|s| s.dtype == dtype).map(|s| s.baseline.as_str());
        let from_rows = self.rows.iter().filter(|r| r.dtype == dtype).flat_map(|r| r.ratios.keys().map(String::as_str));
        let mut v: Vec<&str> = Vec::new();
        for b in from_summary.chain(from_rows) {
            if !v.contains(&b) {
                v.push(b);
            }
        }
        v
    }

    /// The summary table, then one line per shape with its ratio to each
    /// baseline of its dtype (`-` where none) and its pick.
    pub fn table(&self) -> String {
        let mut s = format!("{} from {}\n", self.schema, self.measurements.join(", "));
        let _ = writeln!(s, "{:<5} {:<12} {:<13} {:>6} {:>8} {:>10} {:>8} {:>7}", "dtype", "group", "baseline", "shapes", "compared", "unmeasured", "geomean", "lowest");
        for g in &self.summary {
            let _ = writeln!(
                s,
                "{:<5} {:<12} {:<13} {:>6} {:>8} {:>10} {:>8} {:>7}",
                g.dtype.name(),
                g.group,
                g.baseline,
                g.shapes,
                g.compared,
                g.unmeasured,
                opt(g.geomean, 3),
                opt(g.lowest, 3)
            );
        }
        let mut dtypes: Vec<BenchDtype> = self.rows.iter().map(|r| r.dtype).collect();
        dtypes.dedup();
        for dtype in dtypes {
            let baselines = self.baselines(dtype);
            let _ = write!(s, "\n{:<5} {:<18} {:<12}", "dtype", "shape (MxNxK)", "group");
            for b in &baselines {
                let _ = write!(s, " {b:>13}");
            }
            let _ = writeln!(s, "  pick");
            for r in self.rows.iter().filter(|r| r.dtype == dtype) {
                let _ = write!(s, "{:<5} {:<18} {:<12}", dtype.name(), r.shape, r.group);
                for b in &baselines {
                    let _ = write!(s, " {:>13}", opt(r.ratios.get(*b).copied(), 3));
                }
                let _ = writeln!(s, "  {}{}", r.config, if r.measured { "" } else { " (unmeasured)" });
            }
        }
        s
    }
}

/// One shape and baseline across several judge reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioRow<'a> {
    /// The operand type.
    pub dtype: BenchDtype,
    /// `MxNxK`.
    pub shape: &'a str,
    /// The shape's group in the first report that has it.
    pub group: &'a str,
    /// The baseline.
    pub baseline: &'a str,
    /// Per report, the pick's ratio to the baseline (`None`: the report
    /// lacks the shape, or its pick was not measured).
    pub ratios: Vec<Option<f64>>,
    /// Per report, the pick (`None`: the report lacks the shape).
    pub picks: Vec<Option<&'a str>>,
}

/// One dtype, group and baseline across several judge reports.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRow<'a> {
    /// The operand type.
    pub dtype: BenchDtype,
    /// The shape group.
    pub group: &'a str,
    /// The baseline.
    pub baseline: &'a str,
    /// Per report, its summary line (`None` when it has none).
    pub summaries: Vec<Option<&'a JudgeSummary>>,
    /// Shapes with a ratio in every report.
    pub common: usize,
    /// Per report, the geometric mean over those common shapes, so that a
    /// change in which shapes were measured does not pass for a change in
    /// speed.
    pub common_geomeans: Vec<Option<f64>>,
}

/// The index of `key` in `order`, appended first when new.
fn position<T: PartialEq>(order: &mut Vec<T>, key: T) -> usize {
    order.iter().position(|k| *k == key).unwrap_or_else(|| {
        order.push(key);
        order.len() - 1
    })
}

/// The shapes and baselines of `reports`, matched by dtype and shape, by
/// dtype, then group and baseline in the order the reports name them, then
/// shape as the reports list them.
pub fn ratio_rows<'a>(reports: &[&'a JudgeReport]) -> Vec<RatioRow<'a>> {
    let (mut groups, mut baselines) = (Vec::new(), Vec::new());
    let mut rows: Vec<(usize, usize, RatioRow<'a>)> = Vec::new();
    for (i, report) in reports.iter().enumerate() {
        for r in &report.rows {
            for baseline in report.baselines(r.dtype) {
                let found = rows.iter_mut().find(|(_, _, x)| x.dtype == r.dtype && x.shape == r.shape && x.baseline == baseline);
                let row = match found {
                    Some((_, _, row)) => row,
                    None => {
                        let (g, b) = (position(&mut groups, r.group.as_str()), position(&mut baselines, baseline));
                        let empty = RatioRow { dtype: r.dtype, shape: &r.shape, group: &r.group, baseline, ratios: vec![None; reports.len()], picks: vec![None; reports.len()] };
                        rows.push((g, b, empty));
                        &mut rows.last_mut().expect("just pushed").2
                    }
                };
                row.ratios[i] = r.ratios.get(baseline).copied();
                row.picks[i] = Some(&r.config);
            }
        }
    }
    rows.sort_by_key(|(g, b, r)| (r.dtype, *g, *b));
    rows.into_iter().map(|(_, _, r)| r).collect()
}

/// Per dtype, group and baseline of any report: each report's summary and
/// the geometric means over the shapes every report has a ratio for.
pub fn group_rows<'a>(reports: &[&'a JudgeReport], rows: &[RatioRow<'a>]) -> Vec<GroupRow<'a>> {
    let mut out: Vec<GroupRow<'a>> = Vec::new();
    for report in reports {
        for s in &report.summary {
            if !out.iter().any(|g| g.dtype == s.dtype && g.group == s.group && g.baseline == s.baseline) {
                out.push(GroupRow { dtype: s.dtype, group: &s.group, baseline: &s.baseline, summaries: Vec::new(), common: 0, common_geomeans: Vec::new() });
            }
        }
    }
    for g in &mut out {
        g.summaries = reports
            .iter()
            .map(|r| r.summary.iter().find(|s| s.dtype == g.dtype && s.group == g.group && s.baseline == g.baseline))
            .collect();
        let common: Vec<&RatioRow> = rows
            .iter()
            .filter(|r| r.dtype == g.dtype && r.group == g.group && r.baseline == g.baseline && r.ratios.iter().all(Option::is_some))
            .collect();
        g.common = common.len();
        g.common_geomeans = (0..reports.len()).map(|i| geomean(&common.iter().filter_map(|r| r.ratios[i]).collect::<Vec<_>>())).collect();
    }
    out
}

/// Two judge reports side by side: per shape and baseline the pick's
/// ratio in A and in B and its change (and the picks when they differ),
/// then per group and baseline the geometric mean in each report and over
/// the shapes both compared.
pub fn format_judge_compare(a: &JudgeReport, b: &JudgeReport) -> String {
    let reports = [a, b];
    let rows = ratio_rows(&reports);
    let mut s = String::new();
    let _ = writeln!(s, "A: {} from {}", a.schema, a.measurements.join(", "));
    let _ = writeln!(s, "B: {} from {}", b.schema, b.measurements.join(", "));
    let _ = writeln!(s, "{:<5} {:<18} {:<12} {:<13} {:>8} {:>8} {:>8}  pick A -> B", "dtype", "shape (MxNxK)", "group", "baseline", "ratio_A", "ratio_B", "change");
    for r in &rows {
        let picks = match (r.picks[0], r.picks[1]) {
            (Some(pa), Some(pb)) if pa == pb => "same".to_string(),
            (pa, pb) => format!("{} -> {}", pa.unwrap_or("-"), pb.unwrap_or("-")),
        };
        let _ = writeln!(
            s,
            "{:<5} {:<18} {:<12} {:<13} {:>8} {:>8} {:>8}  {picks}",
            r.dtype.name(),
            r.shape,
            r.group,
            r.baseline,
            opt(r.ratios[0], 3),
            opt(r.ratios[1], 3),
            change(r.ratios[0], r.ratios[1])
        );
    }
    let _ = writeln!(s, "\n{:<5} {:<12} {:<13} {:>13} {:>13} {:>8}   {:>6} {:>8} {:>8}", "dtype", "group", "baseline", "geomean_A", "geomean_B", "change", "common", "A", "B");
    for g in group_rows(&reports, &rows) {
        let mean = |i: usize| g.summaries[i].and_then(|x| x.geomean);
        let with_count = |i: usize| match g.summaries[i] {
            Some(x) => format!("{} ({})", opt(x.geomean, 3), x.compared),
            None => "-".into(),
        };
        let _ = writeln!(
            s,
            "{:<5} {:<12} {:<13} {:>13} {:>13} {:>8}   {:>6} {:>8} {:>8}",
            g.dtype.name(),
            g.group,
            g.baseline,
            with_count(0),
            with_count(1),
            change(mean(0), mean(1)),
            g.common,
            opt(g.common_geomeans[0], 3),
            opt(g.common_geomeans[1], 3)
        );
    }
    s
}
