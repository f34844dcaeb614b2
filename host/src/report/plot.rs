//! The SVG plot of a saved report (`host plot`, `--plot`): one figure per workload, a series
//! per style, drawn with plotters.

use super::{SavedProblem, SavedReport, SavedRow};
use anyhow::Result;
use std::path::Path;

/// One workload's picture: per style, its fastest experiment at each size against the
/// workload's baseline (the reference).
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub workload: String,
    /// The baseline experiment.
    pub reference: String,
    /// Whether ratios read as "% of the reference" (a vendor library or the driver) rather
    /// than as a speed-up over it (a kernel of ours).
    pub as_percent: bool,
    pub rate_unit: Option<String>,
    /// The sizes, in the order run.
    pub sizes: Vec<String>,
    /// The reference at each size (ratio 1), where it was timed.
    pub reference_points: Vec<Option<Point>>,
    /// One per style, in the order first run.
    pub series: Vec<Series>,
}

/// A style's fastest experiment at each size of a [`Figure`] (`None`: none of the style ran
/// there, or the reference did not).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub style: String,
    pub raw_ptx: bool,
    pub points: Vec<Option<Point>>,
}

/// One experiment at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub experiment: String,
    pub stages: Option<u32>,
    /// The reference's median time over this one's (above 1: faster than the reference).
    pub ratio: f64,
    pub rate: Option<f64>,
}

impl Figure {
    /// The figure of one workload's problems; `None` when nothing was compared with the
    /// reference. Only rows that were timed and passed their checks count.
    pub(super) fn new(problems: &[&SavedProblem]) -> Option<Figure> {
        let first = problems.first()?;
        let timed = |r: &&SavedRow| r.passed && r.median_ms.is_some_and(|ms| ms > 0.0);
        let mut reference = None;
        let mut reference_points = Vec::new();
        let mut series: Vec<Series> = Vec::new();
        for (i, problem) in problems.iter().enumerate() {
            let base = problem
                .baseline
                .as_deref()
                .and_then(|b| problem.rows.iter().filter(timed).find(|r| r.name == b));
            let Some(base) = base else {
                reference_points.push(None);
                continue;
            };
            reference.get_or_insert_with(|| base.name.clone());
            let base_ms = base.median_ms.unwrap_or(f64::NAN);
            let point = |r: &SavedRow| Point {
                experiment: r.name.clone(),
                stages: r.stages,
                ratio: base_ms / r.median_ms.unwrap_or(f64::NAN),
                rate: r.rate,
            };
            reference_points.push(Some(point(base)));
            for row in problem.rows.iter().filter(timed) {
                if row.name == base.name {
                    continue;
                }
                let s = match series.iter().position(|s| s.style == row.style) {
                    Some(s) => s,
                    None => {
                        series.push(Series {
                            style: row.style.clone(),
                            raw_ptx: row.role == "raw_ptx",
                            points: vec![None; problems.len()],
                        });
                        series.len() - 1
                    }
                };
                let candidate = point(row);
                let best = &mut series[s].points[i];
                if best.as_ref().is_none_or(|b| candidate.ratio > b.ratio) {
                    *best = Some(candidate);
                }
            }
        }
        if series.is_empty() {
            return None;
        }
        Some(Figure {
            workload: first.workload.clone(),
            reference: reference?,
            as_percent: first.baseline_as_percent,
            rate_unit: first.rate_unit.clone(),
            sizes: problems.iter().map(|p| p.size.clone()).collect(),
            reference_points,
            series,
        })
    }

    /// One size: bars per style instead of lines.
    pub fn bars(&self) -> bool {
        self.sizes.len() == 1
    }

    /// The largest ratio drawn.
    fn max_ratio(&self) -> f64 {
        let points = self.series.iter().flat_map(|s| s.points.iter().flatten());
        points.fold(1.0, |m, p| m.max(p.ratio))
    }

    /// A ratio as the axis shows it.
    fn tick(&self, ratio: f64) -> String {
        if self.as_percent {
            format!("{:.0}%", 100.0 * ratio)
        } else {
            format!("{ratio:.1}x")
        }
    }

    /// A ratio as a bar's label shows it.
    pub fn value(&self, ratio: f64) -> String {
        if self.as_percent {
            format!("{:.1}%", 100.0 * ratio)
        } else {
            format!("{ratio:.2}x")
        }
    }

    /// What the ratio axis shows.
    fn ratio_axis(&self) -> String {
        if self.as_percent {
            format!("% of {}  (its time / the style's time)", self.reference)
        } else {
            format!(
                "speed-up: x of {}  (its time / the style's time)",
                self.reference
            )
        }
    }

    /// A rate with its unit, if known.
    fn rate(&self, rate: Option<f64>) -> Option<String> {
        let rate = number(rate?);
        Some(match &self.rate_unit {
            Some(unit) => format!("{rate} {unit}"),
            None => rate,
        })
    }
}

/// A rate to three or four significant digits.
fn number(x: f64) -> String {
    let digits = if x >= 100.0 {
        0
    } else if x >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$}")
}

impl Series {
    /// The depth (stages) of the fastest experiment, if one depth wins at every size.
    pub fn depth(&self) -> Option<u32> {
        let mut depths = self.points.iter().flatten().map(|p| p.stages);
        let first = depths.next()??;
        depths.all(|d| d == Some(first)).then_some(first)
    }

    /// Where the winning depth changes with the size, the depth at each size (`-`: none
    /// ran), as the legend writes it under the line's name.
    pub fn depths(&self) -> Option<String> {
        let varies =
            self.depth().is_none() && self.points.iter().flatten().any(|p| p.stages.is_some());
        let depth = |p: &Option<Point>| {
            p.as_ref()
                .and_then(|p| p.stages)
                .map_or("-".to_string(), |d| d.to_string())
        };
        varies.then(|| {
            let depths: Vec<String> = self.points.iter().map(depth).collect();
            format!("depth by size: {}", depths.join(" "))
        })
    }

    /// The legend's name of the line: the style, and its depth where one wins everywhere.
    pub fn label(&self) -> String {
        match self.depth() {
            Some(d) => format!("{}, depth {d}", self.style),
            None if self.depths().is_some() => format!("{}, depth varies", self.style),
            None => self.style.clone(),
        }
    }
}

/// A size as the x axis writes it: `1024x1024x1024` as `1024³`, so that seven sizes fit.
fn size_label(size: &str) -> String {
    let parts: Vec<&str> = size.split('x').collect();
    if parts.len() == 3 && parts.iter().all(|p| *p == parts[0] && !p.is_empty()) {
        format!("{}³", parts[0])
    } else {
        size.to_string()
    }
}

const WIDTH: u32 = 1000;
const HEIGHT: u32 = 600;
const FONT: &str = "sans-serif";
// Font sizes as plotters takes them: the SVG gets them divided by 1.24 (16: 12.9 px).
const TITLE: u32 = 22;
const SUBTITLE: u32 = 16;
const LABEL: u32 = 16;
const AXIS: u32 = 17;
const NOTE: u32 = 15;

/// The lines' colours (Tableau 10), one per style in the order first run.
const PALETTE: [plotters::prelude::RGBColor; 10] = {
    use plotters::prelude::RGBColor;
    [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(127, 127, 127),
    ]
};
const REFERENCE: plotters::prelude::RGBColor = plotters::prelude::RGBColor(70, 70, 70);
const MUTED: plotters::prelude::RGBColor = plotters::prelude::RGBColor(110, 110, 110);

type DrawResult = Result<(), Box<dyn std::error::Error>>;
type Area<'a> =
    plotters::prelude::DrawingArea<plotters::prelude::SVGBackend<'a>, plotters::coord::Shift>;

/// The SVG: per figure, a title and either lines (several sizes) or bars (one).
pub(super) fn draw(report: &SavedReport, figures: &[Figure], path: &Path) -> DrawResult {
    use plotters::prelude::*;

    let root = SVGBackend::new(path, (WIDTH, HEIGHT * figures.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    for (figure, area) in figures.iter().zip(root.split_evenly((figures.len(), 1))) {
        let (head, body) = area.split_vertically(58);
        let at = if figure.bars() {
            format!(" at {}", figure.sizes[0])
        } else {
            String::new()
        };
        head.draw_text(
            &format!(
                "{}{at} on {}: each style's fastest experiment against {}",
                figure.workload, report.device.name, figure.reference
            ),
            &TextStyle::from((FONT, TITLE).into_font()).color(&BLACK),
            (18, 12),
        )?;
        let what = if figure.bars() {
            "per style"
        } else {
            "per problem size, in the order run"
        };
        let ratio = if figure.as_percent {
            format!("% of {}", figure.reference)
        } else {
            format!("speed-up over {}", figure.reference)
        };
        head.draw_text(
            &format!(
                "{ratio} {what}; median of {} launches; {} = {}",
                report.timing.reps,
                figure.reference,
                figure.tick(1.0)
            ),
            &TextStyle::from((FONT, SUBTITLE).into_font()).color(&MUTED),
            (18, 38),
        )?;
        if figure.bars() {
            draw_bars(&body, figure)?;
        } else {
            draw_lines(&body, figure)?;
        }
    }
    root.present()?;
    Ok(())
}

/// Style `i`'s marker (one of four shapes), centred on pixel `at` of `area`: filled, or for
/// raw PTX hollow and larger, so that it rings a library style's marker at the same value.
fn draw_marker(
    area: &Area,
    i: usize,
    raw_ptx: bool,
    (x, y): (i32, i32),
    colour: plotters::prelude::RGBColor,
) -> DrawResult {
    use plotters::prelude::*;
    let (style, r) = if raw_ptx {
        (colour.stroke_width(2), 8)
    } else {
        (colour.filled(), 5)
    };
    match i % 4 {
        0 => area.draw(&Circle::new((x, y), r, style))?,
        1 => {
            // Pointing up, centred on its centroid (TriangleMarker is always filled).
            let r = f64::from(r + 2);
            let corner = |deg: f64| {
                let rad = deg.to_radians();
                (
                    x + (r * rad.cos()).round() as i32,
                    y - (r * rad.sin()).round() as i32,
                )
            };
            let corners = [corner(90.0), corner(210.0), corner(330.0)];
            if raw_ptx {
                let closed = [corners[0], corners[1], corners[2], corners[0]];
                area.draw(&PathElement::new(closed, style))?
            } else {
                area.draw(&Polygon::new(corners, style))?
            }
        }
        2 => area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], style))?,
        _ => area.draw(&Cross::new((x, y), r, colour.stroke_width(3)))?,
    }
    Ok(())
}

/// Ratio against size: one line per style, the reference flat at 1, the legend on the right.
fn draw_lines(body: &Area, figure: &Figure) -> DrawResult {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let (plot_area, legend) = body.split_horizontally(WIDTH - 270);
    let n = figure.sizes.len();
    let top = figure.max_ratio() * 1.08;
    let tick = |v: &f64| figure.tick(*v);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_left(14)
        .margin_right(24)
        .margin_top(8)
        .margin_bottom(6)
        .x_label_area_size(72)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_labels(10)
        .y_label_formatter(&tick)
        .y_desc(figure.ratio_axis())
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, AXIS))
        .bold_line_style(RGBColor(225, 225, 225))
        .max_light_lines(0)
        .draw()?;

    // The x axis by hand: a size and the reference's rate under each point.
    let grid = RGBColor(235, 235, 235);
    let base = plot_area.get_base_pixel();
    let local = |(x, y): (i32, i32)| (x - base.0, y - base.1);
    chart.draw_series(std::iter::once(PathElement::new(
        [(-0.5, 0.0), (n as f64 - 0.5, 0.0)],
        BLACK,
    )))?;
    for (i, size) in figure.sizes.iter().enumerate() {
        let x = i as f64;
        chart.draw_series(std::iter::once(PathElement::new(
            [(x, 0.0), (x, top)],
            grid,
        )))?;
        let (px, py) = local(chart.backend_coord(&(x, 0.0)));
        plot_area.draw(&PathElement::new([(px, py), (px, py + 5)], BLACK))?;
        let centre = Pos::new(HPos::Center, VPos::Top);
        plot_area.draw(&Text::new(
            size_label(size),
            (px, py + 9),
            TextStyle::from((FONT, LABEL)).pos(centre),
        ))?;
        if let Some(rate) = figure.reference_points[i].as_ref().and_then(|p| p.rate) {
            plot_area.draw(&Text::new(
                number(rate),
                (px, py + 28),
                TextStyle::from((FONT, NOTE)).color(&MUTED).pos(centre),
            ))?;
        }
    }
    let (left, py) = local(chart.backend_coord(&(-0.5, 0.0)));
    let (right, _) = local(chart.backend_coord(&(n as f64 - 0.5, 0.0)));
    plot_area.draw(&Text::new(
        match &figure.rate_unit {
            Some(unit) => format!("problem size; in grey: {}'s {unit}", figure.reference),
            None => "problem size".to_string(),
        },
        ((left + right) / 2, py + 50),
        TextStyle::from((FONT, AXIS)).pos(Pos::new(HPos::Center, VPos::Top)),
    ))?;

    // The reference, then the styles.
    chart.draw_series(LineSeries::new(
        [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
        REFERENCE.stroke_width(3),
    ))?;
    // Raw PTX last: its dashes and rings stay visible over a library style at the same value.
    let mut order: Vec<(usize, &Series)> = figure.series.iter().enumerate().collect();
    order.sort_by_key(|(_, series)| series.raw_ptx);
    for (s, series) in order {
        let colour = PALETTE[s % PALETTE.len()];
        let style = colour.stroke_width(2);
        // Consecutive sizes with a point make a line; a missing size breaks it.
        let xy = |(i, p): (usize, &Option<Point>)| p.as_ref().map(|p| (i as f64, p.ratio));
        let mut run: Vec<(f64, f64)> = Vec::new();
        for point in series.points.iter().enumerate().map(xy).chain([None]) {
            match point {
                Some(xy) => run.push(xy),
                None if run.is_empty() => {}
                None if series.raw_ptx => {
                    let run = std::mem::take(&mut run);
                    chart.draw_series(DashedLineSeries::new(run, 9, 5, style))?;
                }
                None => {
                    chart.draw_series(LineSeries::new(std::mem::take(&mut run), style))?;
                }
            }
        }
        for (i, point) in series.points.iter().enumerate() {
            if let Some(point) = point {
                let at = local(chart.backend_coord(&(i as f64, point.ratio)));
                draw_marker(&plot_area, s, series.raw_ptx, at, colour)?;
            }
        }
    }

    // The legend: a line per style, the depth by size under it where it changes.
    let text = TextStyle::from((FONT, LABEL)).pos(Pos::new(HPos::Left, VPos::Center));
    let note = TextStyle::from((FONT, NOTE))
        .color(&MUTED)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = 24;
    legend.draw(&PathElement::new(
        [(8, y), (40, y)],
        REFERENCE.stroke_width(3),
    ))?;
    legend.draw(&Text::new(
        format!("{} = {}", figure.reference, figure.tick(1.0)),
        (48, y),
        text.clone(),
    ))?;
    for (s, series) in figure.series.iter().enumerate() {
        y += 28;
        let colour = PALETTE[s % PALETTE.len()];
        let style = colour.stroke_width(2);
        let dashes: &[(i32, i32)] = if series.raw_ptx {
            &[(8, 16), (22, 30), (36, 40)]
        } else {
            &[(8, 40)]
        };
        for &(from, to) in dashes {
            legend.draw(&PathElement::new([(from, y), (to, y)], style))?;
        }
        draw_marker(&legend, s, series.raw_ptx, (24, y), colour)?;
        legend.draw(&Text::new(series.label(), (48, y), text.clone()))?;
        if let Some(depths) = series.depths() {
            y += 19;
            legend.draw(&Text::new(depths, (48, y), note.clone()))?;
        }
    }
    if figure.series.iter().any(|s| s.raw_ptx) {
        y += 38;
        legend.draw(&Text::new("dashed, hollow: raw PTX", (8, y), note.clone()))?;
    }
    Ok(())
}

/// One size: a horizontal bar per style, the reference's on top, each with its ratio and
/// rate.
fn draw_bars(body: &Area, figure: &Figure) -> DrawResult {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let mut bars: Vec<(String, RGBColor, &Point)> = Vec::new();
    if let Some(p) = &figure.reference_points[0] {
        bars.push((format!("{} (reference)", figure.reference), REFERENCE, p));
    }
    for (s, series) in figure.series.iter().enumerate() {
        if let Some(p) = &series.points[0] {
            let raw = if series.raw_ptx { " (raw PTX)" } else { "" };
            bars.push((
                format!("{}{raw}", series.label()),
                PALETTE[s % PALETTE.len()],
                p,
            ));
        }
    }
    let m = bars.len();
    let top = figure.max_ratio() * 1.35;
    let tick = |v: &f64| figure.tick(*v);
    let mut chart = ChartBuilder::on(body)
        .margin_left(14)
        .margin_right(24)
        .margin_top(8)
        .margin_bottom(10)
        .x_label_area_size(56)
        .y_label_area_size(290)
        .build_cartesian_2d(0.0..top, -0.5..m as f64 - 0.5)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_labels(12)
        .x_label_formatter(&tick)
        .x_desc(figure.ratio_axis())
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, AXIS))
        .bold_line_style(RGBColor(225, 225, 225))
        .max_light_lines(0)
        .draw()?;
    let base = body.get_base_pixel();
    let local = |(x, y): (i32, i32)| (x - base.0, y - base.1);
    chart.draw_series(DashedLineSeries::new(
        [(1.0, -0.5), (1.0, m as f64 - 0.5)],
        6,
        4,
        REFERENCE.stroke_width(1),
    ))?;
    chart.draw_series(std::iter::once(PathElement::new(
        [(0.0, -0.5), (0.0, m as f64 - 0.5)],
        BLACK,
    )))?;
    // The values in one column right of the longest bar and of the reference's line.
    let column = figure.max_ratio().max(1.0);
    for (i, (name, colour, point)) in bars.iter().enumerate() {
        let y = (m - 1 - i) as f64;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y - 0.32), (point.ratio, y + 0.32)],
            colour.mix(0.9).filled(),
        )))?;
        let (px, py) = local(chart.backend_coord(&(0.0, y)));
        body.draw(&Text::new(
            name.clone(),
            (px - 10, py),
            TextStyle::from((FONT, LABEL)).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        let rate = figure
            .rate(point.rate)
            .map_or(String::new(), |r| format!(",  {r}"));
        let (px, py) = local(chart.backend_coord(&(column, y)));
        body.draw(&Text::new(
            format!("{}{rate}", figure.value(point.ratio)),
            (px + 12, py),
            TextStyle::from((FONT, LABEL)).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}
