//! The frame every plot shares: an SVG canvas with its caption, the mesh, the legend
//! and its marks, and the series' colours.

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::element::{CoordMapper, Drawable, PointCollection};
use plotters::prelude::*;

/// Every plot's size, in pixels.
pub(super) const SIZE: (u32, u32) = (900, 540);

/// The colour of series `i` (Tableau 10, repeating).
pub(super) fn color(i: usize) -> RGBColor {
    // Tableau 10: distinct in print and for common colour-vision deficiencies.
    const C: [(u8, u8, u8); 10] = [
        (31, 119, 180),
        (255, 127, 14),
        (44, 160, 44),
        (214, 39, 40),
        (148, 103, 189),
        (140, 86, 75),
        (227, 119, 194),
        (127, 127, 127),
        (188, 189, 34),
        (23, 190, 207),
    ];
    let (r, g, b) = C[i % C.len()];
    RGBColor(r, g, b)
}

/// An SVG of `size` pixels on white, captioned `title`: `body` draws the chart with the
/// builder it is handed (margins set, the y axis's labels `y_label_area` pixels wide).
pub(super) fn svg_chart(
    size: (u32, u32),
    title: &str,
    y_label_area: u32,
    body: impl FnOnce(&mut ChartBuilder<'_, '_, SVGBackend<'_>>) -> Result<(), String>,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(y_label_area);
        body(&mut b)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// Draws a mesh its caller has configured, without the light grid lines.
pub(super) fn draw_mesh<X, Y>(
    mesh: &mut MeshStyle<'_, '_, X, Y, SVGBackend<'_>>,
) -> Result<(), String>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    mesh.light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|e| e.to_string())
}

/// Draws `series` on `chart`, and lists it in the legend as `label` beside `mark`.
pub(super) fn legend_entry<'a, 'b, CT, B, E, S>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    series: S,
    label: impl Into<String>,
    mark: impl Fn((i32, i32)) -> E + 'a,
) -> Result<(), String>
where
    CT: CoordTranslate,
    B: CoordMapper,
    for<'c> &'c S::Item: PointCollection<'c, CT::From, B>,
    S::Item: Drawable<SVGBackend<'b>, B>,
    S: IntoIterator,
    E: IntoDynElement<'a, SVGBackend<'b>, (i32, i32)>,
{
    chart
        .draw_series(series)
        .map_err(|e| e.to_string())?
        .label(label)
        .legend(mark);
    Ok(())
}

/// A legend entry with no series of its own: `label` beside `mark`.
pub(super) fn legend_note<'a, 'b, CT, E>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    label: &str,
    mark: impl Fn((i32, i32)) -> E + 'a,
) -> Result<(), String>
where
    CT: CoordTranslate<From = (f64, f64)>,
    E: IntoDynElement<'a, SVGBackend<'b>, (i32, i32)>,
{
    legend_entry(chart, Vec::<Circle<(f64, f64), i32>>::new(), label, mark)
}

/// The mark of a level where metabench was the bottleneck: a ring.
pub(super) fn ring<C>(at: C, size: i32) -> Circle<C, i32> {
    Circle::new(at, size, BLACK.stroke_width(1))
}

/// The mark of a level the engine's counters show as the bottleneck: a cross.
pub(super) fn cross<C>(at: C, size: i32) -> Cross<C, i32> {
    Cross::new(at, size, RED.stroke_width(2))
}

/// A series' legend mark: a square of its colour.
pub(super) fn swatch(c: RGBColor) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.filled())
}

/// Draws `chart`'s legend at `position`, on a pale ground with a thin border.
pub(super) fn draw_legend<'a, 'b: 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}
