//! The context timeline as an SVG chart for `simulate --plot`, drawn with `plotters`:
//! each model call as the estimate before `prepare` and after it (so a compaction is a
//! vertical drop), the limit and target lines labelled, a mark per stage fired, axes
//! with ticks and a legend. The TUI draws the same points in `/context`.

use plotters::prelude::*;

use crate::compact::{CompactConfig, Stage};
use crate::protocol::CallPoint;

const WIDTH: u32 = 900;
const HEIGHT: u32 = 420;

/// Each stage's colour in the chart, as RGB.
pub(crate) fn stage_colour(stage: Stage) -> RGBColor {
    match stage {
        Stage::ToolResultBudget => RGBColor(0x1f, 0x77, 0xb4),
        Stage::SnipCompact => RGBColor(0x94, 0x67, 0xbd),
        Stage::MicroCompact => RGBColor(0x2c, 0xa0, 0x2c),
        Stage::FitToolResults => RGBColor(0x17, 0xbe, 0xcf),
        Stage::CompactHistory => RGBColor(0xd6, 0x27, 0x28),
        Stage::ReactiveCompact => RGBColor(0xff, 0x7f, 0x0e),
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot draw the timeline: {0}")]
pub(crate) struct PlotError(String);

/// The chart as an SVG document.
pub(crate) fn svg(points: &[CallPoint], config: &CompactConfig) -> Result<String, PlotError> {
    let mut out = String::new();
    draw(&mut out, points, config).map_err(|error| PlotError(error.to_string()))?;
    Ok(out)
}

fn draw(out: &mut String, points: &[CallPoint], config: &CompactConfig) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let limit = config.context_char_limit;
    let target = config.micro_target_chars();
    let top = points.iter().map(CallPoint::before).max().unwrap_or(0).max(limit) as f64 * 1.1;
    let calls = points.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption("context estimate per model call", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.5..calls + 0.5, 0.0..top)?;
    chart
        .configure_mesh()
        .x_desc("model call")
        .y_desc("estimate (chars)")
        .x_labels(points.len().clamp(2, 12))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    for (value, label, colour) in [
        (limit, format!("limit {limit}"), RED),
        (target, format!("target {target}"), RGBColor(0xff, 0x8c, 0x00)),
    ] {
        chart
            .draw_series(LineSeries::new(
                [(0.5, value as f64), (calls + 0.5, value as f64)],
                colour.stroke_width(1),
            ))?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], colour));
    }
    // The saw-tooth: at call i from the estimate before prepare down to the one sent.
    let saw: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            let x = (i + 1) as f64;
            [(x, p.before() as f64), (x, p.estimate as f64)]
        })
        .collect();
    chart
        .draw_series(LineSeries::new(saw, BLACK.stroke_width(2)))?
        .label("estimate (before → after prepare)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.stroke_width(2)));
    for stage in Stage::all() {
        let colour = stage_colour(stage);
        let marks: Vec<(f64, f64)> = points
            .iter()
            .enumerate()
            .filter(|(_, p)| p.stages.contains(&stage))
            .map(|(i, p)| ((i + 1) as f64, p.estimate as f64))
            .collect();
        if marks.is_empty() {
            continue;
        }
        chart
            .draw_series(marks.into_iter().map(|at| Circle::new(at, 4, colour.filled())))?
            .label(stage.name())
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_has_axes_a_legend_and_a_drop_per_compaction() {
        let config = CompactConfig::default();
        let points = vec![
            CallPoint {
                estimate: 20_000,
                messages: 3,
                ..CallPoint::default()
            },
            CallPoint {
                before: Some(61_000),
                estimate: 39_000,
                messages: 9,
                stages: vec![Stage::MicroCompact],
                ..CallPoint::default()
            },
        ];
        let svg = svg(&points, &config).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        for text in [
            "limit 50000",
            "target 40000",
            "model call",
            "micro_compact",
            "estimate (chars)",
        ] {
            assert!(svg.contains(text), "{text}");
        }
        assert!(svg.contains("<circle"), "a stage mark");
        // The drop at call 2 is a vertical segment: two points with the same x.
        assert!(svg.contains("<polyline"));
    }
}
