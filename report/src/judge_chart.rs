//! The judge chart: per shape and baseline, the pick's ratio (baseline time
//! over the pick's, above 1 the pick is faster) in one judge report, or in
//! two side by side (A a hollow grey circle, B a filled one, joined), on a
//! log axis centred on 1.0. Shapes are grouped by dtype, shape group and
//! baseline, each such section in a colour of its own with each report's
//! geometric mean drawn across it and listed beside the plot.

use crate::chart::{ratio_axes, Area, DrawResult, PANEL};
use crate::kinds::judge::{group_rows, ratio_rows, GroupRow, JudgeReport, RatioRow};
use crate::table::{opt, short_name};
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Section colours, in section order, repeating.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];
/// The first report's colour when two are drawn.
const EARLIER: RGBColor = RGBColor(0x88, 0x88, 0x88);


/// What is drawn: the shapes with a ratio in some report, and per section
/// (dtype, group, baseline) its slots and its means.
struct Plan<'a> {
    rows: Vec<RatioRow<'a>>,
    sections: Vec<(GroupRow<'a>, std::ops::Range<usize>)>,
}

fn plan<'a>(reports: &[&'a JudgeReport]) -> Plan<'a> {
    let all = ratio_rows(reports);
    let rows: Vec<RatioRow<'a>> = all.iter().filter(|r| r.ratios.iter().any(Option::is_some)).cloned().collect();
    let same = |g: &GroupRow, r: &RatioRow| g.dtype == r.dtype && g.group == r.group && g.baseline == r.baseline;
    let sections = group_rows(reports, &all)
        .into_iter()
        .filter_map(|g| {
            let first = rows.iter().position(|r| same(&g, r))?;
            let len = rows[first..].iter().take_while(|r| same(&g, r)).count();
            Some((g, first..first + len))
        })
        .collect();
    Plan { rows, sections }
}

/// Draws `reports` (one, or two to compare: `(name, report)`, the name
/// shown in the legend) as SVG text.
pub fn judge_chart_svg(reports: &[(&str, &JudgeReport)]) -> Result<String, String> {
    if !(1..=2).contains(&reports.len()) {
        return Err(format!("the judge chart draws one or two reports, not {}", reports.len()));
    }
    let judged: Vec<&JudgeReport> = reports.iter().map(|(_, r)| *r).collect();
    let plan = plan(&judged);
    if plan.rows.is_empty() {
        return Err("no shape has a measured pick and a baseline: nothing to plot".into());
    }
    let names: Vec<&str> = reports.iter().map(|(n, _)| short_name(n)).collect();
    let mut svg = String::new();
    {
        let width = (140 + 14 * plan.rows.len() as u32).max(600) + PANEL + 100;
        let root = SVGBackend::with_string(&mut svg, (width, 680)).into_drawing_area();
        draw(&root, &plan, &names).map_err(|e| format!("drawing the chart: {e}"))?;
        root.present().map_err(|e| format!("drawing the chart: {e}"))?;
    }
    Ok(svg)
}

/// The y range: every ratio and mean, and 1.0, with a margin.
fn y_range(plan: &Plan) -> (f64, f64) {
    let ratios = plan.rows.iter().flat_map(|r| r.ratios.iter().flatten().copied());
    let means = plan.sections.iter().flat_map(|(g, _)| g.summaries.iter().flatten().filter_map(|s| s.geomean));
    let (lo, hi) = ratios.chain(means).fold((1.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (lo / 1.1, hi * 1.1)
}

fn draw(root: &Area, plan: &Plan, names: &[&str]) -> DrawResult {
    root.fill(&WHITE)?;
    let title = match names {
        [a, b] => format!("config selection's picks: baseline time / pick's time per shape, {a} (A) and {b} (B)"),
        _ => format!("config selection's picks: baseline time / pick's time per shape, {}", names[0]),
    };
    let root = root.titled(&title, ("sans-serif", 16))?;
    let (plot, panel) = root.split_horizontally(root.dim_in_pixel().0 - PANEL - 100);
    let (lo, hi) = y_range(plan);
    let n = plan.rows.len();
    let mut chart = ratio_axes(&plot, n, (lo, hi), 110, "baseline / pick (log scale; above 1: the pick is faster)")?;
    let two = names.len() == 2;
    for (k, (group, slots)) in plan.sections.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        for (i, summary) in group.summaries.iter().enumerate() {
            let Some(mean) = summary.and_then(|s| s.geomean) else { continue };
            let style = if two && i == 0 { EARLIER.mix(0.8).stroke_width(2) } else { color.mix(0.7).stroke_width(2) };
            chart.draw_series(LineSeries::new([(SegmentValue::Exact(slots.start), mean), (SegmentValue::Exact(slots.end), mean)], style))?;
        }
        for i in slots.clone() {
            let r = &plan.rows[i];
            let x = SegmentValue::CenterOf(i);
            if let [Some(a), Some(b)] = r.ratios[..] {
                chart.draw_series(LineSeries::new([(x.clone(), a), (x.clone(), b)], color.mix(0.5).stroke_width(1)))?;
            }
            for (j, v) in r.ratios.iter().enumerate() {
                let Some(v) = *v else { continue };
                let style = if two && j == 0 { EARLIER.stroke_width(1) } else { color.filled() };
                chart.draw_series([Circle::new((x.clone(), v), 3, style)])?;
            }
        }
    }
    let label = TextStyle::from(("sans-serif", 10).into_font().transform(FontTransform::Rotate90)).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, r) in plan.rows.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i), lo));
        plot.draw(&Text::new(r.shape, (x, y + 6), label.clone()))?;
    }
    draw_panel(&panel, plan, names)
}

/// The legend and, per section, each report's geometric mean.
fn draw_panel(panel: &Area, plan: &Plan, names: &[&str]) -> DrawResult {
    let style = ("sans-serif", 13).into_font();
    let mut y = 40;
    if let [a, b] = names {
        panel.draw(&Circle::new((16, y + 6), 4, EARLIER.stroke_width(1)))?;
        panel.draw(&Text::new(format!("A: {a}"), (28, y), style.clone()))?;
        panel.draw(&Circle::new((16, y + 30), 4, BLACK.filled()))?;
        panel.draw(&Text::new(format!("B: {b}"), (28, y + 24), style.clone()))?;
        y += 60;
    }
    let head = if names.len() == 2 { "geometric mean, A -> B (shapes)" } else { "geometric mean (shapes)" };
    panel.draw(&Text::new(head, (10, y), style.clone().style(FontStyle::Bold)))?;
    for (k, (g, _)) in plan.sections.iter().enumerate() {
        y += 24;
        let color = PALETTE[k % PALETTE.len()];
        panel.draw(&PathElement::new([(10, y + 7), (34, y + 7)], color.stroke_width(3)))?;
        let means: Vec<String> =
            g.summaries.iter().map(|s| s.map_or("-".to_string(), |s| format!("{} ({})", opt(s.geomean, 3), s.compared))).collect();
        let text = format!("{} {} vs {}: {}", g.dtype.name(), g.group, g.baseline, means.join(" -> "));
        panel.draw(&Text::new(text, (42, y), style.clone()))?;
    }
    Ok(())
}
