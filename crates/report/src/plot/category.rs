//! Line charts over named categories on the x axis (a scale curve's sizes), drawn with
//! the same frame, legend and colours as the sweep plots.

use super::frame::{color, draw_legend, draw_mesh, legend_entry, svg_chart, swatch, SIZE};
use plotters::prelude::*;

/// One series of [`by_category`]: its label, a colour index and its points `(category
/// index, y)`.
pub type CategorySeries = (String, usize, Vec<(f64, f64)>);

/// A line chart whose x axis is `categories` (evenly spaced, labelled by name: a scale
/// curve's sizes): each series is a label, a colour index and its points `(category
/// index, y)`.
pub fn by_category(
    title: &str,
    categories: &[String],
    y_desc: &str,
    series: &[CategorySeries],
    log_y: bool,
) -> Result<String, String> {
    let ys = series.iter().flat_map(|s| s.2.iter().map(|p| p.1));
    let (mut ymin, mut ymax) = (f64::INFINITY, 0.0f64);
    for y in ys {
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
    let xrange = -0.25..(categories.len().max(2) - 1) as f64 + 0.25;
    svg_chart(SIZE, title, 80, |b| {
        macro_rules! finish {
            ($chart:expr) => {{
                let mut chart = $chart;
                draw_mesh(
                    chart
                        .configure_mesh()
                        .x_desc("entries in the scale tree")
                        .y_desc(y_desc)
                        .x_labels(categories.len().max(2))
                        .x_label_formatter(&|x| {
                            let i = x.round();
                            match categories.get(i as usize) {
                                Some(c) if (x - i).abs() < 1e-9 && i >= 0.0 => c.clone(),
                                _ => String::new(),
                            }
                        })
                        .y_label_formatter(&|y| crate::table::fmt_us(*y)),
                )?;
                for (label, c, points) in series {
                    let c = color(*c);
                    legend_entry(
                        &mut chart,
                        LineSeries::new(points.iter().copied(), c.stroke_width(2)),
                        label.clone(),
                        swatch(c),
                    )?;
                    chart
                        .draw_series(
                            points
                                .iter()
                                .map(|&(x, y)| Circle::new((x, y), 3, c.filled())),
                        )
                        .map_err(|e| e.to_string())?;
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
