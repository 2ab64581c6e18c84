//! The ratio chart: per shape, our best kernel's TFLOP/s over the faster
//! baseline's, with its p10..p90 as an error bar, on a log axis centred on
//! 1.0 (equal speed); shapes grouped (square, M = 64, 128, 4096) with each
//! group's geometric mean drawn across it. SVG through plotters: no fonts or
//! system libraries needed.

use crate::schema::{Report, ShapeResult};
use crate::summary::{group_means, ShapeGroup};
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{SegmentValue, SegmentedCoord};
use plotters::coord::types::RangedCoordusize;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colour of a shape group's points and mean.
fn group_color(g: ShapeGroup) -> RGBColor {
    match g {
        ShapeGroup::Square => RGBColor(0x1f, 0x77, 0xb4),
        ShapeGroup::M64 => RGBColor(0xd6, 0x27, 0x28),
        ShapeGroup::M128 => RGBColor(0xff, 0x7f, 0x0e),
        ShapeGroup::M4096 => RGBColor(0x2c, 0xa0, 0x2c),
        ShapeGroup::Other => RGBColor(0x7f, 0x7f, 0x7f),
    }
}

/// The shapes with a ratio, in chart order: by dtype, then group, then as run.
fn plotted(report: &Report) -> Vec<&ShapeResult> {
    let mut v: Vec<&ShapeResult> = report.results.iter().filter(|r| r.ratio_stats.is_some()).collect();
    v.sort_by_key(|r| (r.dtype, ShapeGroup::of(r.shape())));
    v
}

/// The y range: every error bar and 1.0, with a margin, on a log axis.
fn y_range(rows: &[&ShapeResult]) -> (f64, f64) {
    let (mut lo, mut hi) = (1.0f64, 1.0f64);
    for q in rows.iter().filter_map(|r| r.ratio_stats.as_ref()) {
        lo = lo.min(q.p10).min(q.median);
        hi = hi.max(q.p90).max(q.median);
    }
    (lo / 1.15, hi * 1.15)
}

/// Tick values for the log axis between `lo` and `hi`: tenths, and
/// quarters above 1.5.
pub(crate) fn y_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let tenths = (1..=15).map(|t| t as f64 / 10.0);
    let quarters = (7..=40).map(|q| q as f64 / 4.0);
    tenths.chain(quarters).filter(|&y| y >= lo && y <= hi).collect()
}

/// Width of the side panel with the geometric means.
pub(crate) const PANEL: u32 = 300;

/// Draws the chart of `report` as SVG text.
pub fn ratio_chart_svg(report: &Report) -> Result<String, String> {
    let rows = plotted(report);
    if rows.is_empty() {
        return Err("no shape has both a kernel of ours and a baseline timed: nothing to plot".into());
    }
    let several_dtypes = rows.iter().any(|r| r.dtype != rows[0].dtype);
    let names: Vec<String> = rows
        .iter()
        .map(|r| if several_dtypes { format!("{} {}", r.shape(), r.dtype.name()) } else { r.shape().to_string() })
        .collect();
    let mut svg = String::new();
    {
        let width = (140 + 44 * rows.len() as u32).max(600) + PANEL;
        let root = SVGBackend::with_string(&mut svg, (width, 680)).into_drawing_area();
        draw(&root, report, &rows, &names).map_err(|e| format!("drawing the chart: {e}"))?;
        root.present().map_err(|e| format!("drawing the chart: {e}"))?;
    }
    Ok(svg)
}

pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
/// A ratio chart's coordinates: one segment a shape, a log axis of ratios.
pub(crate) type RatioChart<'b, 'a> = ChartContext<'b, SVGBackend<'a>, Cartesian2d<SegmentedCoord<RangedCoordusize>, WithKeyPoints<LogCoord<f64>>>>;

/// The axes of a chart of ratios over `n` shapes, `lo..hi` on a log axis
/// described by `y_desc`, with the line of equal speed at 1.0 drawn.
pub(crate) fn ratio_axes<'b, 'a>(plot: &'b Area<'a>, n: usize, (lo, hi): (f64, f64), x_label_area: u32, y_desc: &str) -> Result<RatioChart<'b, 'a>, Box<dyn std::error::Error>> {
    let mut chart = ChartBuilder::on(plot)
        .margin(10)
        .x_label_area_size(x_label_area)
        .y_label_area_size(60)
        .build_cartesian_2d((0..n).into_segmented(), (lo..hi).log_scale().with_key_points(y_ticks(lo, hi)))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|_| String::new())
        .y_desc(y_desc)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .draw()?;
    chart.draw_series(LineSeries::new([(SegmentValue::Exact(0), 1.0), (SegmentValue::Last, 1.0)], BLACK.stroke_width(1)))?;
    Ok(chart)
}

fn draw(root: &Area, report: &Report, rows: &[&ShapeResult], names: &[String]) -> DrawResult {
    root.fill(&WHITE)?;
    let mut baselines: Vec<&str> = rows.iter().filter_map(|r| r.best_baseline.as_deref()).collect();
    baselines.sort();
    baselines.dedup();
    let title = format!(
        "tilec / faster of {}: TFLOP/s ratio, median and p10..p90 per shape ({}, {}{})",
        baselines.join(", "),
        report.device.name,
        report.date_utc,
        report.commit.as_deref().map(|c| format!(", commit {}", &c[..c.len().min(12)])).unwrap_or_default()
    );
    let root = root.titled(&title, ("sans-serif", 16))?;
    let (plot, panel) = root.split_horizontally(root.dim_in_pixel().0 - PANEL);
    let owned: Vec<ShapeResult> = rows.iter().map(|r| (*r).clone()).collect();
    let means = group_means(&owned);
    let (lo, hi) = y_range(rows);
    let n = rows.len();
    let mut chart = ratio_axes(&plot, n, (lo, hi), 150, "ours / baseline (log scale; above 1: ours faster)")?;
    // Each group's geometric mean across its shapes.
    for mean in &means {
        let Some(group) = mean.group else { continue };
        let idx: Vec<usize> =
            (0..n).filter(|&i| rows[i].dtype == mean.dtype && ShapeGroup::of(rows[i].shape()) == group).collect();
        let (first, last) = (idx[0], idx[idx.len() - 1]);
        chart.draw_series(LineSeries::new(
            [(SegmentValue::Exact(first), mean.geomean), (SegmentValue::Exact(last + 1), mean.geomean)],
            group_color(group).mix(0.6).stroke_width(2),
        ))?;
    }
    for (i, r) in rows.iter().enumerate() {
        let q = r.ratio_stats.as_ref().expect("plotted rows have a ratio");
        let color = group_color(ShapeGroup::of(r.shape()));
        chart.draw_series([ErrorBar::new_vertical(
            SegmentValue::CenterOf(i),
            q.p10,
            q.median,
            q.p90,
            color.filled().stroke_width(2),
            10,
        )])?;
    }
    // Shape names below the axis, reading downwards (the mesh would centre
    // rotated labels on the axis).
    let label = TextStyle::from(("sans-serif", 12).into_font().transform(FontTransform::Rotate90))
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, name) in names.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i), lo));
        plot.draw(&Text::new(name.as_str(), (x, y + 6), label.clone()))?;
    }
    let rounds = rows.iter().all(|r| r.ratio_stats.as_ref().is_some_and(|q| q.from == "rounds"));
    draw_means_panel(&panel, &means, rounds)
}

/// The geometric means, one line each, beside the plot, and what the error
/// bars are.
fn draw_means_panel(panel: &Area, means: &[crate::summary::GroupMean], rounds: bool) -> DrawResult {
    let style = ("sans-serif", 14).into_font();
    let bars: &[&str] = if rounds {
        &["bars: p10..p90 of the per-round ratio,", "dot: its median"]
    } else {
        &["bars: baseline median time over our", "p90..p10 times (a report without rounds)"]
    };
    for (i, line) in bars.iter().enumerate() {
        panel.draw(&Text::new(*line, (10, 100 + 24 * (means.len() as i32 + i as i32)), style.clone()))?;
    }
    panel.draw(&Text::new("geometric mean of the ratio", (10, 40), style.clone().style(FontStyle::Bold)))?;
    for (i, m) in means.iter().enumerate() {
        let y = 70 + 24 * i as i32;
        let color = m.group.map_or(BLACK, group_color);
        panel.draw(&PathElement::new([(10, y + 7), (34, y + 7)], color.stroke_width(3)))?;
        panel.draw(&Text::new(format!("{}: {:.3} ({} shapes)", m.label(), m.geomean, m.shapes), (42, y), style.clone()))?;
    }
    Ok(())
}
