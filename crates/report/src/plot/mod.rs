//! SVG plots of sweeps (plotters, SVG backend only: text is left to the viewer's fonts,
//! so nothing here needs a font library): throughput against concurrency (or an open
//! loop's offered rate) per operation, p50 / p99 (and an open loop's service p99) against
//! it, several runs overlaid with a legend. Levels where metabench was the bottleneck are
//! ringed, levels the engine's own counters mark as engine-bound are crossed.

use crate::labeled_run::{op_names_of, LabeledRun};
use crate::model::{SweepResults, BREAKDOWN_PARTS};
use plotters::prelude::*;

mod frame;
use frame::{
    color, cross, draw_legend, draw_mesh, legend_entry, legend_note, ring, svg_chart, swatch, SIZE,
};

/// A rendered plot: a file name (`throughput-mkdir.svg`) and the SVG text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plot {
    /// File name to save it under.
    pub file: String,
    /// Title, for captions.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

#[derive(Clone)]
struct Series {
    label: String,
    color: RGBColor,
    points: Vec<(f64, f64)>,
    /// Per point: (client-bound, engine-bound); empty when not marked.
    marks: Vec<(bool, bool)>,
}

/// A level's x: its offered rate in an open loop, else its clients.
fn level_x(l: &crate::Level) -> f64 {
    l.offered_ops_per_s.unwrap_or(l.clients as f64)
}

/// A level's marks: (client-bound, engine-bound).
fn level_marks(l: &crate::Level) -> (bool, bool) {
    (
        l.client.client_bound,
        l.engine.as_ref().is_some_and(|e| e.engine_bound),
    )
}

/// `op`'s levels in `run` as (x, level op, marks).
fn op_levels<'a>(
    run: &'a SweepResults,
    op: &'a str,
) -> impl Iterator<Item = (f64, &'a crate::LevelOp, (bool, bool))> + 'a {
    run.levels.iter().filter_map(move |l| {
        l.ops
            .iter()
            .find(|o| o.op == op)
            .map(|o| (level_x(l), o, level_marks(l)))
    })
}

/// The x axis's name for these sweeps.
fn x_desc(sweeps: &[(&str, &SweepResults)]) -> &'static str {
    match (
        sweeps.iter().all(|(_, s)| s.is_open_loop()),
        sweeps.iter().any(|(_, s)| s.is_open_loop()),
    ) {
        (true, _) => "offered calls/s (open loop)",
        (false, true) => "concurrent clients, or offered calls/s for open loops",
        _ => "concurrent clients",
    }
}

/// The x axis of a line chart.
enum XAxis<'a> {
    /// Clients, or an open loop's offered rate, on a log₂ axis labelled 1, 2, 4, …:
    /// doubling levels are evenly spaced (points below 1 are left out).
    Levels(&'a str),
    /// Named categories, evenly spaced (a scale curve's sizes): a point's x is its index.
    Categories(&'a str, &'a [String]),
}

/// Draws line series against `x`, ringing and crossing the points each series marks;
/// `log_y` for latencies.
fn draw(
    title: &str,
    x: XAxis<'_>,
    y_desc: &str,
    series: &[Series],
    log_y: bool,
) -> Result<String, String> {
    let series: Vec<Series> = match x {
        XAxis::Categories(..) => series.to_vec(),
        XAxis::Levels(_) => series
            .iter()
            .map(|s| {
                let kept: Vec<usize> = (0..s.points.len())
                    .filter(|&i| s.points[i].0 >= 1.0)
                    .collect();
                Series {
                    label: s.label.clone(),
                    color: s.color,
                    points: kept
                        .iter()
                        .map(|&i| (s.points[i].0.log2(), s.points[i].1))
                        .collect(),
                    marks: kept
                        .iter()
                        .filter_map(|&i| s.marks.get(i).copied())
                        .collect(),
                }
            })
            .collect(),
    };
    let (any_client_bound, any_engine_bound) = series
        .iter()
        .flat_map(|s| s.marks.iter())
        .fold((false, false), |(c, e), m| (c || m.0, e || m.1));
    let series = &series[..];
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::INFINITY, 0.0f64, f64::INFINITY, 0.0f64);
    for &(x, y) in pts {
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        if y > 0.0 {
            ymin = ymin.min(y);
        }
        ymax = ymax.max(y);
    }
    if !ymin.is_finite() {
        ymin = 1.0;
    }
    if ymax <= 0.0 {
        ymax = 1.0;
    }
    let (x_desc, x_labels, xrange) = match x {
        XAxis::Levels(desc) => {
            // From the lowest level's power of two (1 client, or an open loop's first rate).
            let xmin = if xmin.is_finite() { xmin.floor() } else { 0.0 };
            let labels = (xmax.floor() - xmin) as usize + 2;
            (desc, labels, xmin - 0.25..xmax.max(xmin + 1.0) + 0.25)
        }
        XAxis::Categories(desc, names) => {
            let n = names.len().max(2);
            (desc, n, -0.25..(n - 1) as f64 + 0.25)
        }
    };
    let x_label = |v: &f64| {
        let i = v.round();
        if (v - i).abs() > 1e-9 || i < 0.0 {
            return String::new();
        }
        match x {
            XAxis::Levels(_) => format!("{:.0}", i.exp2()),
            XAxis::Categories(_, names) => names.get(i as usize).cloned().unwrap_or_default(),
        }
    };
    svg_chart(SIZE, title, 80, |b| {
        macro_rules! finish {
            ($chart:expr) => {{
                let mut chart = $chart;
                draw_mesh(
                    chart
                        .configure_mesh()
                        .x_desc(x_desc)
                        .y_desc(y_desc)
                        .x_labels(x_labels)
                        .x_label_formatter(&x_label)
                        .y_label_formatter(&|y| crate::table::fmt_us(*y)),
                )?;
                for s in series {
                    let c = s.color;
                    legend_entry(
                        &mut chart,
                        LineSeries::new(s.points.iter().copied(), c.stroke_width(2)),
                        s.label.clone(),
                        swatch(c),
                    )?;
                    chart
                        .draw_series(
                            s.points
                                .iter()
                                .map(|&(x, y)| Circle::new((x, y), 3, c.filled())),
                        )
                        .map_err(|e| e.to_string())?;
                    let marked = s.points.iter().zip(&s.marks);
                    chart
                        .draw_series(
                            marked
                                .clone()
                                .filter(|(_, m)| m.0)
                                .map(|(&p, _)| ring(p, 7)),
                        )
                        .map_err(|e| e.to_string())?;
                    chart
                        .draw_series(marked.filter(|(_, m)| m.1).map(|(&p, _)| cross(p, 6)))
                        .map_err(|e| e.to_string())?;
                }
                // What the marks mean.
                if any_client_bound {
                    let note = "ringed: metabench was the bottleneck (client-bound)";
                    legend_note(&mut chart, note, |(x, y)| ring((x + 8, y), 6))?;
                }
                if any_engine_bound {
                    let note = "crossed: the engine's counters show it as the bottleneck";
                    legend_note(&mut chart, note, |(x, y)| cross((x + 8, y), 5))?;
                }
                draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
            }};
        }
        if log_y {
            finish!(b
                .build_cartesian_2d(xrange.clone(), (ymin / 1.5..ymax * 1.5).log_scale())
                .map_err(|e| e.to_string())?)
        } else {
            finish!(b
                .build_cartesian_2d(xrange.clone(), 0f64..ymax * 1.1)
                .map_err(|e| e.to_string())?)
        }
    })
}

/// One series of [`by_category`]: its label, a colour index and its points `(category
/// index, y)`.
pub type CategorySeries = (String, usize, Vec<(f64, f64)>);

/// A line chart whose x axis is `categories` (evenly spaced, labelled by name: a scale
/// curve's sizes, `x_desc` naming them); `log_y` for latencies.
pub fn by_category(
    title: &str,
    x_desc: &str,
    categories: &[String],
    y_desc: &str,
    series: &[CategorySeries],
    log_y: bool,
) -> Result<String, String> {
    let series: Vec<Series> = series
        .iter()
        .map(|(label, c, points)| Series {
            label: label.clone(),
            color: color(*c),
            points: points.clone(),
            marks: Vec::new(),
        })
        .collect();
    draw(
        title,
        XAxis::Categories(x_desc, categories),
        y_desc,
        &series,
        log_y,
    )
}

/// Every plot of the sweeps among `runs`: `throughput.svg` (one series per operation and
/// run), then per operation `throughput-OP.svg` (one series per run) and `latency-OP.svg`
/// (p50 and p99 of each run). Empty when there is no sweep.
pub fn sweep_plots(runs: &[LabeledRun]) -> Result<Vec<Plot>, String> {
    let sw = LabeledRun::sweeps_of(runs);
    if sw.is_empty() {
        return Ok(Vec::new());
    }
    let x_desc = x_desc(&sw);
    let mut ops: Vec<String> = Vec::new();
    for (_, s) in &sw {
        for op in s.op_names() {
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    let throughput = |s: &SweepResults, op: &str| {
        let (points, marks) = op_levels(s, op)
            .map(|(x, o, m)| ((x, o.ops_per_s), m))
            .unzip();
        (points, marks)
    };
    let mut plots = Vec::new();
    let mut all = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        for (j, (label, s)) in sw.iter().enumerate() {
            let (points, marks): (Vec<_>, Vec<_>) = throughput(s, op);
            if !points.is_empty() {
                all.push(Series {
                    label: format!("{op} — {label}"),
                    color: color(i * sw.len() + j),
                    points,
                    marks,
                });
            }
        }
    }
    let title = "Throughput vs concurrency".to_owned();
    plots.push(Plot {
        file: "throughput.svg".into(),
        svg: draw(&title, XAxis::Levels(x_desc), "ops/s", &all, false)?,
        title,
    });
    for op in &ops {
        let tput: Vec<Series> = sw
            .iter()
            .enumerate()
            .map(|(j, (label, s))| {
                let (points, marks) = throughput(s, op);
                Series {
                    label: label.to_string(),
                    color: color(j),
                    points,
                    marks,
                }
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        let title = format!("{op}: throughput vs concurrency");
        plots.push(Plot {
            file: format!("throughput-{}.svg", file_safe(op)),
            svg: draw(&title, XAxis::Levels(x_desc), "ops/s", &tput, false)?,
            title,
        });
        let mut lat = Vec::new();
        for (j, (label, s)) in sw.iter().enumerate() {
            let levels: Vec<_> = op_levels(s, op).collect();
            if levels.is_empty() {
                continue;
            }
            let c = color(j);
            let pale = RGBColor(
                ((c.0 as u16 + 255) / 2) as u8,
                ((c.1 as u16 + 255) / 2) as u8,
                ((c.2 as u16 + 255) / 2) as u8,
            );
            let from_start = if s.is_open_loop() {
                " (from the intended start)"
            } else {
                ""
            };
            let percentile = |p: &str, color, us: fn(&crate::Latency) -> f64| Series {
                label: format!("{label} {p}{from_start}"),
                color,
                points: levels
                    .iter()
                    .map(|(x, o, _)| (*x, us(&o.latency)))
                    .collect(),
                marks: Vec::new(),
            };
            lat.push(percentile("p50", pale, |l| l.p50_us));
            lat.push(Series {
                marks: levels.iter().map(|(_, _, m)| *m).collect(),
                ..percentile("p99", c, |l| l.p99_us)
            });
            let service: Vec<(f64, f64)> = levels
                .iter()
                .filter_map(|(x, o, _)| o.service.as_ref().map(|sv| (*x, sv.p99_us)))
                .collect();
            if !service.is_empty() {
                lat.push(Series {
                    label: format!("{label} service p99"),
                    color: RGBColor(c.0 / 2, c.1 / 2, c.2 / 2),
                    points: service,
                    marks: Vec::new(),
                });
            }
        }
        let title = format!("{op}: p50 and p99 latency vs concurrency");
        plots.push(Plot {
            file: format!("latency-{}.svg", file_safe(op)),
            svg: draw(
                &title,
                XAxis::Levels(x_desc),
                "latency, µs (log)",
                &lat,
                true,
            )?,
            title,
        });
    }
    Ok(plots)
}

/// Every plot of `runs`: [`ops_plot`] when there are `ops` runs, then [`sweep_plots`],
/// [`latency_at_plot`] and [`breakdown_plots`].
pub fn plots(runs: &[LabeledRun]) -> Result<Vec<Plot>, String> {
    let mut out: Vec<Plot> = ops_plot(runs)?.into_iter().collect();
    out.extend(sweep_plots(runs)?);
    out.extend(latency_at_plot(runs)?);
    out.extend(breakdown_plots(runs)?);
    Ok(out)
}

/// The colour of each part of a breakdown, in [`BREAKDOWN_PARTS`] order.
fn part_color(i: usize) -> RGBColor {
    const C: [(u8, u8, u8); 7] = [
        (31, 119, 180),  // client
        (214, 39, 40),   // lock wait
        (127, 127, 127), // wire
        (44, 160, 44),   // engine
        (255, 127, 14),  // client wait
        (148, 103, 189), // retry waste
        (188, 189, 34),  // unexplained
    ];
    let (r, g, b) = C[i % C.len()];
    RGBColor(r, g, b)
}

/// One chart per sweep among `runs` that has breakdowns (`breakdown-LABEL.svg`): for each
/// operation, a stacked bar per level (its clients below it) of where the mean latency
/// went, µs per call. A part that is unknown is not drawn (the unexplained part holds it);
/// a negative unexplained part is drawn below zero.
pub fn breakdown_plots(runs: &[LabeledRun]) -> Result<Vec<Plot>, String> {
    let mut plots = Vec::new();
    for (label, s) in LabeledRun::sweeps_of(runs) {
        // (slot, clients, op, breakdown), each operation's levels side by side, a gap
        // between operations.
        let mut bars = Vec::new();
        let mut groups: Vec<(f64, String)> = Vec::new();
        let mut slot = 0.0;
        for op in s.op_names() {
            let first = slot;
            for l in &s.levels {
                if let Some(b) = l
                    .ops
                    .iter()
                    .find(|o| o.op == op)
                    .and_then(|o| o.breakdown.as_ref())
                {
                    bars.push((slot, l.clients, b));
                    slot += 1.0;
                }
            }
            if slot > first {
                groups.push(((first + slot - 1.0) / 2.0, op));
                slot += 1.0;
            }
        }
        if bars.is_empty() {
            continue;
        }
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for (_, _, b) in &bars {
            let (neg, pos) = b.parts().iter().flatten().fold((0.0, 0.0), |(n, p), v| {
                if *v < 0.0 {
                    (n + v, p)
                } else {
                    (n, p + v)
                }
            });
            lo = lo.min(neg);
            hi = hi.max(pos);
        }
        let (lo, hi) = (lo * 1.1, hi * 1.15);
        let title = format!("{label}: where the time goes, µs per call");
        let n = slot;
        let svg = svg_chart(SIZE, &title, 70, |b| {
            let mut chart = b
                .build_cartesian_2d(-1.0f64..n, lo..hi.max(1.0))
                .map_err(|e| e.to_string())?;
            let slots: Vec<(f64, u32)> = bars.iter().map(|(x, c, _)| (*x, *c)).collect();
            draw_mesh(
                chart
                    .configure_mesh()
                    .x_desc("operation; concurrent clients under each bar")
                    .y_desc("µs per call")
                    .x_labels((n as usize + 2).min(200))
                    .x_label_formatter(&|x| {
                        slots
                            .iter()
                            .find(|(s, _)| (s - x).abs() < 0.01)
                            .map_or(String::new(), |(_, c)| c.to_string())
                    })
                    .y_label_formatter(&|y| crate::table::fmt_us(*y)),
            )?;
            for (i, name) in BREAKDOWN_PARTS.iter().enumerate() {
                let c = part_color(i);
                let mut rects = Vec::new();
                for (x, _, b) in &bars {
                    let parts = b.parts();
                    let Some(v) = parts[i] else { continue };
                    // Stacked in part order: positives upward from 0, negatives downward.
                    let below: f64 = parts[..i]
                        .iter()
                        .flatten()
                        .filter(|p| (**p < 0.0) == (v < 0.0))
                        .sum();
                    rects.push(Rectangle::new(
                        [(x - 0.4, below), (x + 0.4, below + v)],
                        c.filled(),
                    ));
                }
                legend_entry(&mut chart, rects, *name, swatch(c))?;
            }
            chart
                .draw_series(groups.iter().map(|(x, op)| {
                    Text::new(
                        op.clone(),
                        (*x - 0.4, hi.max(1.0) * 0.97),
                        ("sans-serif", 14).into_font(),
                    )
                }))
                .map_err(|e| e.to_string())?;
            draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
        })?;
        plots.push(Plot {
            file: format!("breakdown-{}.svg", file_safe(label)),
            title,
            svg,
        });
    }
    Ok(plots)
}

/// The `ops` runs as grouped horizontal bars (`ops.svg`): µs/op of every operation on a
/// log axis, one bar series per run. `None` without `ops` runs.
pub fn ops_plot(runs: &[LabeledRun]) -> Result<Option<Plot>, String> {
    let ops_runs = LabeledRun::ops_of(runs);
    let mut names: Vec<String> = Vec::new();
    for (_, o) in &ops_runs {
        for r in &o.results {
            if r.skipped.is_none() && r.latency.mean_us > 0.0 && !names.contains(&r.op) {
                names.push(r.op.clone());
            }
        }
    }
    let series: Vec<(String, Vec<Option<f64>>)> = ops_runs
        .iter()
        .map(|(label, o)| {
            let values = names
                .iter()
                .map(|op| {
                    o.get(op)
                        .filter(|r| r.skipped.is_none() && r.latency.mean_us > 0.0)
                        .map(|r| r.latency.mean_us)
                })
                .collect();
            (label.to_string(), values)
        })
        .collect();
    bars(
        "ops.svg",
        "µs/op per operation (log scale)".to_owned(),
        "µs/op",
        &names,
        &series,
    )
}

/// The client count at which the report compares each operation's latency across runs,
/// as the published HDFS / S3 / JuiceFS comparison did.
pub const LATENCY_AT_CLIENTS: u32 = 20;

/// The sweeps' mean latency per operation at [`LATENCY_AT_CLIENTS`] clients, or each
/// run's nearest level (`latency-at-20.svg`), as grouped bars: one series per run.
/// `None` without a closed-loop sweep.
pub fn latency_at_plot(runs: &[LabeledRun]) -> Result<Option<Plot>, String> {
    let sw = LabeledRun::sweeps_of(runs);
    let names = op_names_of(&sw);
    let series: Vec<(String, Vec<Option<f64>>)> = sw
        .iter()
        .filter_map(|(label, s)| {
            let level = s.level_near(LATENCY_AT_CLIENTS)?;
            let values = names
                .iter()
                .map(|op| {
                    level
                        .ops
                        .iter()
                        .find(|o| &o.op == op && o.latency.mean_us > 0.0)
                        .map(|o| o.latency.mean_us)
                })
                .collect();
            let at = match level.clients {
                LATENCY_AT_CLIENTS => String::new(),
                c => format!(" (at {c})"),
            };
            Some((format!("{label}{at}"), values))
        })
        .collect();
    bars(
        &format!("latency-at-{LATENCY_AT_CLIENTS}.svg"),
        format!("Mean latency per operation at {LATENCY_AT_CLIENTS} clients, µs (log scale)"),
        "µs/op",
        &names,
        &series,
    )
}

/// Grouped horizontal bars on a log axis: one row per name, top to bottom, and one bar
/// series per run (`None`: no bar). `None` when there is nothing to draw.
fn bars(
    file: &str,
    title: String,
    x_desc: &str,
    names: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<Option<Plot>, String> {
    let values = series.iter().flat_map(|(_, v)| v.iter().flatten().copied());
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if names.is_empty() || series.is_empty() || hi <= 0.0 {
        return Ok(None);
    }
    let (lo, hi) = (lo / 2.0, hi * 2.0);
    let n = names.len();
    let height = 140 + 14 * n as u32 * (series.len() as u32).max(1);
    let svg = svg_chart((SIZE.0, height), &title, 130, |b| {
        let mut chart = b
            .build_cartesian_2d((lo..hi).log_scale(), -0.5f64..n as f64 - 0.5)
            .map_err(|e| e.to_string())?;
        draw_mesh(
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_labels(n + 1)
                .y_label_formatter(&|y| {
                    let i = y.round();
                    if (y - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < names.len() {
                        // Top to bottom in the given order.
                        names[names.len() - 1 - i as usize].clone()
                    } else {
                        String::new()
                    }
                })
                .x_label_formatter(&|x| crate::table::fmt_us(*x)),
        )?;
        let band = 0.8 / series.len() as f64;
        for (j, (label, values)) in series.iter().enumerate() {
            let c = color(j);
            let drawn: Vec<Rectangle<(f64, f64)>> = values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let v = (*v)?;
                    let row = (n - 1 - i) as f64;
                    let top = row + 0.4 - j as f64 * band;
                    Some(Rectangle::new(
                        [(lo, top - band * 0.9), (v, top)],
                        c.filled(),
                    ))
                })
                .collect();
            legend_entry(&mut chart, drawn, label.clone(), swatch(c))?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
    })?;
    Ok(Some(Plot {
        file: file.to_owned(),
        title,
        svg,
    }))
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AnyResults, Level, LevelOp};

    fn sweep(scale: f64, ops: &[&str]) -> AnyResults {
        AnyResults::Sweep(SweepResults {
            header: crate::RunHeader {
                kind: "sweep".into(),
                ..Default::default()
            },
            levels: [1u32, 2, 4, 8]
                .iter()
                .map(|&c| Level {
                    clients: c,
                    ops: ops
                        .iter()
                        .map(|op| LevelOp {
                            op: op.to_string(),
                            ops_per_s: scale * c as f64 * 1000.0 / (1.0 + 0.1 * c as f64),
                            latency: crate::Latency {
                                p50_us: 100.0 * c as f64,
                                p99_us: 400.0 * c as f64,
                                ..Default::default()
                            },
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }

    fn svg_texts(svg: &str) -> Vec<String> {
        roxmltree::Document::parse(svg)
            .unwrap()
            .descendants()
            .filter(|n| n.tag_name().name() == "text")
            .filter_map(|n| n.text().map(|t| t.trim().to_owned()))
            .collect()
    }

    #[test]
    fn bound_levels_are_marked_and_open_loops_plot_against_the_offered_rate() {
        let AnyResults::Sweep(mut run) = sweep(1.0, &["getattr"]) else {
            unreachable!()
        };
        run.levels[1].client.client_bound = true;
        run.levels[2].engine = Some(crate::model::EngineCheck {
            engine_bound: true,
            ..Default::default()
        });
        let label = |run: SweepResults| {
            vec![LabeledRun {
                label: "redis".into(),
                run: AnyResults::Sweep(run),
            }]
        };
        let plots = sweep_plots(&label(run.clone())).unwrap();
        let texts = svg_texts(&plots[0].svg);
        assert!(
            texts.iter().any(|t| t.contains("client-bound")),
            "{texts:?}"
        );
        assert!(
            texts.iter().any(|t| t.contains("engine's counters")),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t == "concurrent clients"), "{texts:?}");
        // An open loop: x is the offered rate, and service time has its own series.
        run.plan.rate = Some("1000..8000:x2".into());
        for (i, level) in run.levels.iter_mut().enumerate() {
            level.offered_ops_per_s = Some(1000.0 * 2f64.powi(i as i32));
            level.ops[0].service = Some(crate::model::ServiceTime {
                p99_us: 50.0,
                ..Default::default()
            });
        }
        let plots = sweep_plots(&label(run)).unwrap();
        let latency = plots
            .iter()
            .find(|p| p.file == "latency-getattr.svg")
            .unwrap();
        let texts = svg_texts(&latency.svg);
        assert!(
            texts.iter().any(|t| t.contains("offered calls/s")),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t.contains("service p99")), "{texts:?}");
        assert!(texts.iter().any(|t| t == "1024"), "{texts:?}");
        assert!(
            !texts.iter().any(|t| t == "1"),
            "the axis starts at the first rate"
        );
    }

    /// One stacked chart per sweep with breakdowns: a bar per operation and level, a
    /// rectangle per known part (none for an unknown one), a negative unexplained part
    /// drawn below zero, every part in the legend, the operations named over their bars.
    #[test]
    fn breakdown_bars_stack_the_known_parts_of_each_level() {
        let mut run = match sweep(1.0, &["create", "getattr"]) {
            AnyResults::Sweep(s) => s,
            _ => unreachable!(),
        };
        for l in &mut run.levels {
            for o in &mut l.ops {
                let mut b = crate::Breakdown {
                    mean_us: 100.0 * l.clients as f64,
                    client_us: Some(10.0),
                    lock_wait_us: Some(0.0),
                    wire_us: Some(40.0),
                    engine_us: (o.op == "create").then_some(20.0),
                    client_wait_us: Some(5.0),
                    retry_waste_us: Some(0.0),
                    ..Default::default()
                };
                b.explain();
                o.breakdown = Some(b);
            }
        }
        // The first level's unexplained part: 100 - 75 (create) or 100 - 55 (getattr);
        // make one negative.
        run.levels[0].ops[0].breakdown.as_mut().unwrap().mean_us = 50.0;
        run.levels[0].ops[0].breakdown.as_mut().unwrap().explain();
        let levels = run.levels.len();
        let runs = vec![
            LabeledRun {
                label: "redis".into(),
                run: AnyResults::Sweep(run.clone()),
            },
            LabeledRun {
                label: "old".into(),
                run: AnyResults::Sweep(SweepResults {
                    levels: run
                        .levels
                        .iter()
                        .cloned()
                        .map(|mut l| {
                            l.ops.iter_mut().for_each(|o| o.breakdown = None);
                            l
                        })
                        .collect(),
                    ..run
                }),
            },
        ];
        let plots = breakdown_plots(&runs).unwrap();
        assert_eq!(plots.len(), 1, "a run without breakdowns has no chart");
        assert_eq!(plots[0].file, "breakdown-redis.svg");
        let doc = roxmltree::Document::parse(&plots[0].svg).unwrap();
        let filled = |rgb: &str| {
            doc.descendants()
                .filter(|n| n.tag_name().name() == "rect" && n.attribute("fill") == Some(rgb))
                .count()
        };
        // Engine (green): one per create level, none for getattr's unknown; plus its
        // legend swatch.
        assert_eq!(filled("#2CA02C"), levels + 1);
        // Wire (grey): every bar, and the swatch.
        assert_eq!(filled("#7F7F7F"), 2 * levels + 1);
        let texts = svg_texts(&plots[0].svg);
        for part in BREAKDOWN_PARTS {
            assert!(texts.iter().any(|t| t == part), "{part}: {texts:?}");
        }
        assert!(texts.iter().any(|t| t == "create") && texts.iter().any(|t| t == "getattr"));
    }

    #[test]
    fn svg_parses_with_one_series_per_operation_and_engine() {
        let runs = vec![
            LabeledRun {
                label: "redis".into(),
                run: sweep(2.0, &["mkdir", "lookup", "create"]),
            },
            LabeledRun {
                label: "sqlite".into(),
                run: sweep(1.0, &["mkdir", "lookup", "create"]),
            },
        ];
        let plots = sweep_plots(&runs).unwrap();
        assert_eq!(plots.len(), 1 + 2 * 3);
        for p in &plots {
            let doc = roxmltree::Document::parse(&p.svg)
                .unwrap_or_else(|e| panic!("{}: not XML: {e}", p.file));
            assert_eq!(doc.root_element().tag_name().name(), "svg", "{}", p.file);
        }
        // Series are the 2-px polylines (axes and ticks are 1 px).
        let count = |svg: &str, tag: &str| {
            roxmltree::Document::parse(svg)
                .unwrap()
                .descendants()
                .filter(|n| n.tag_name().name() == tag && n.attribute("stroke-width") == Some("2"))
                .count()
        };
        let overview = &plots[0];
        assert_eq!(overview.file, "throughput.svg");
        assert_eq!(count(&overview.svg, "polyline"), 6, "{}", overview.svg);
        let t = svg_texts(&overview.svg);
        for op in ["mkdir", "lookup", "create"] {
            for e in ["redis", "sqlite"] {
                let label = format!("{op} — {e}");
                assert!(t.contains(&label), "no legend entry {label}: {t:?}");
            }
        }
        let mkdir = plots
            .iter()
            .find(|p| p.file == "throughput-mkdir.svg")
            .unwrap();
        assert_eq!(count(&mkdir.svg, "polyline"), 2);
        let lat = plots
            .iter()
            .find(|p| p.file == "latency-mkdir.svg")
            .unwrap();
        assert_eq!(count(&lat.svg, "polyline"), 4);
        let t = svg_texts(&lat.svg);
        assert!(t.contains(&"sqlite p99".to_owned()), "{t:?}");
        // No sweep, no sweep plot; no ops run, no ops plot.
        let ops_only = vec![LabeledRun {
            label: "x".into(),
            run: AnyResults::Ops(Default::default()),
        }];
        assert!(sweep_plots(&ops_only).unwrap().is_empty());
        assert!(ops_plot(&runs).unwrap().is_none());
    }

    #[test]
    fn ops_bars_have_one_series_per_engine() {
        let ops = |label: &str, k: f64| LabeledRun {
            label: label.into(),
            run: AnyResults::Ops(crate::OpsResults::of(
                ["mkdir", "lookup", "rename"]
                    .iter()
                    .enumerate()
                    .map(|(i, op)| crate::OpResult {
                        op: op.to_string(),
                        latency: crate::Latency {
                            count: 10,
                            mean_us: k * 100.0 * (i + 1) as f64,
                            ..Default::default()
                        },
                        ..Default::default()
                    })
                    .collect(),
            )),
        };
        let runs = vec![ops("redis", 1.0), ops("mysql", 3.0)];
        let p = ops_plot(&runs).unwrap().unwrap();
        let doc = roxmltree::Document::parse(&p.svg).unwrap();
        let texts = svg_texts(&p.svg);
        for t in ["redis", "mysql", "mkdir", "lookup", "rename"] {
            assert!(texts.contains(&t.to_owned()), "{t}: {texts:?}");
        }
        // Three bars and a legend swatch per engine, in its colour.
        for c in ["#1F77B4", "#FF7F0E"] {
            let bars = doc
                .descendants()
                .filter(|n| n.tag_name().name() == "rect" && n.attribute("fill") == Some(c))
                .count();
            assert_eq!(bars, 4, "{c}");
        }
        assert_eq!(plots(&runs).unwrap().len(), 1);
    }
}
