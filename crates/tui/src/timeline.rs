//! The context timeline as an SVG chart for `simulate --plot`, drawn with `plotters`:
//! each model call as the estimate before `prepare` and after it (so a compaction is a
//! vertical drop), the limit and target lines labelled, a mark per stage fired, axes
//! with ticks and a legend. The TUI draws the same points in `/context`.

use plotters::prelude::*;

use crate::compact::{CompactConfig, Stage};
use crate::protocol::CallPoint;

const WIDTH: u32 = 900;
/// How far apart (in calls) the marks of stages that fired before one call are drawn.
const MARK_SPACING: f64 = 0.2;
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

/// How tall a timeline is drawn, for the SVG and `/context` alike: tall enough for
/// every call up to 1.6 times the limit, never less than 1.25 times it, so the limit
/// and the target lines stay apart and readable whatever one call did (in a chart of
/// five rows they still fall on rows of their own). Calls above are drawn at the top
/// and counted, for the axis to say so.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Scale {
    pub(crate) top: f64,
    /// Calls whose estimate before `prepare` is above `top`.
    pub(crate) clipped: usize,
}

impl Scale {
    pub(crate) fn of(points: &[CallPoint], limit: usize) -> Scale {
        let limit = limit.max(1) as f64;
        let highest = points.iter().map(CallPoint::before).max().unwrap_or(0) as f64;
        let top = (highest * 1.1).clamp(limit * 1.25, limit * 1.6);
        Scale {
            top,
            clipped: points.iter().filter(|p| p.before() as f64 > top).count(),
        }
    }

    /// A value as drawn: at most the top.
    pub(crate) fn clip(&self, value: usize) -> f64 {
        (value as f64).min(self.top)
    }

    /// The estimate at each call as a saw-tooth: at call `i` (from 1) the line runs
    /// from the estimate before that call's compaction down to the estimate sent, so a
    /// compaction is a vertical drop.
    pub(crate) fn saw_tooth(&self, points: &[CallPoint]) -> Vec<(f64, f64)> {
        points
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                let x = (i + 1) as f64;
                [(x, self.clip(p.before())), (x, self.clip(p.estimate))]
            })
            .collect()
    }

    /// What the axis says of the clipped calls, if any.
    pub(crate) fn clipped_note(&self) -> Option<String> {
        (self.clipped > 0).then(|| {
            format!(
                "{} above {} drawn at the top",
                crate::compact::counted(self.clipped, "call", "calls"),
                crate::compact::short_count(self.top as usize)
            )
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot draw the timeline: {0}")]
pub struct PlotError(String);

/// The chart as an SVG document.
pub fn svg(points: &[CallPoint], config: &CompactConfig) -> Result<String, PlotError> {
    let mut out = String::new();
    draw(&mut out, points, config).map_err(|error| PlotError(error.to_string()))?;
    Ok(out)
}

/// How a legend entry looks: a line of a width, or a dot.
#[derive(Clone, Copy)]
enum Swatch {
    Line(RGBColor, u32),
    Dot(RGBColor),
}

fn draw(out: &mut String, points: &[CallPoint], config: &CompactConfig) -> Result<(), Box<dyn std::error::Error>> {
    const LEGEND_WIDTH: u32 = 230;
    let root = SVGBackend::with_string(out, (WIDTH + LEGEND_WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    // The legend has its own column: it never covers a call.
    let (plot, legend) = root.split_horizontally(WIDTH);
    let limit = config.context_char_limit.chars;
    let target = config.micro_target_chars();
    let scale = Scale::of(points, limit);
    let calls = points.len().max(1) as f64;
    let y_desc = match scale.clipped_note() {
        Some(note) => format!("estimate (chars; {note})"),
        None => "estimate (chars)".to_string(),
    };
    let mut chart = ChartBuilder::on(&plot)
        .caption("context estimate per model call", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.5..calls + 0.5, 0.0..scale.top)?;
    chart
        .configure_mesh()
        .x_desc("model call")
        .y_desc(y_desc)
        .x_labels(points.len().clamp(2, 12))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE)
        .draw()?;
    let mut entries: Vec<(String, Swatch)> = Vec::new();
    for (value, label, colour) in [
        (limit, format!("limit {limit}"), RED),
        (target, format!("target {target}"), RGBColor(0xff, 0x8c, 0x00)),
    ] {
        chart.draw_series(LineSeries::new(
            [(0.5, value as f64), (calls + 0.5, value as f64)],
            colour.stroke_width(1),
        ))?;
        entries.push((label, Swatch::Line(colour, 1)));
    }
    let saw = scale.saw_tooth(points);
    chart.draw_series(LineSeries::new(saw, BLACK.stroke_width(2)))?;
    entries.push(("estimate (before → after prepare)".into(), Swatch::Line(BLACK, 2)));
    for stage in Stage::all() {
        let colour = stage_colour(stage);
        // Stages that fired before the same call sit side by side, not on top of
        // each other.
        let marks: Vec<(f64, f64)> = points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let nth = p.stages.iter().position(|fired| *fired == stage)?;
                let spread = (nth as f64 - (p.stages.len() - 1) as f64 / 2.0) * MARK_SPACING;
                Some(((i + 1) as f64 + spread, scale.clip(p.estimate)))
            })
            .collect();
        if marks.is_empty() {
            continue;
        }
        chart.draw_series(marks.into_iter().map(|at| Circle::new(at, 4, colour.filled())))?;
        entries.push((stage.name().to_string(), Swatch::Dot(colour)));
    }
    for (row, (label, swatch)) in entries.iter().enumerate() {
        let y = 40 + 22 * row as i32;
        match *swatch {
            Swatch::Line(colour, width) => {
                legend.draw(&PathElement::new([(8, y), (24, y)], colour.stroke_width(width)))?
            }
            Swatch::Dot(colour) => legend.draw(&Circle::new((16, y), 4, colour.filled()))?,
        }
        legend.draw(&Text::new(label.clone(), (30, y - 7), ("sans-serif", 13)))?;
    }
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

    #[test]
    fn one_spike_is_clipped_and_the_limit_stays_readable() {
        let call = |before: usize, estimate: usize| CallPoint {
            before: Some(before),
            estimate,
            messages: 5,
            ..CallPoint::default()
        };
        let calm = Scale::of(&[call(20_000, 20_000), call(61_000, 39_000)], 50_000);
        assert_eq!(calm.clipped, 0);
        assert!((calm.top - 67_100.0).abs() < 1.0, "{calm:?}");
        let small = Scale::of(&[call(2_000, 2_000)], 50_000);
        assert_eq!(small.top, 62_500.0, "never less than 1.25 times the limit");
        let spiked = [call(20_000, 20_000), call(350_000, 30_000), call(40_000, 40_000)];
        let scale = Scale::of(&spiked, 50_000);
        assert_eq!(scale.top, 80_000.0, "1.6 times the limit at most");
        assert_eq!(scale.clipped, 1);
        assert_eq!(scale.clip(350_000), 80_000.0);
        assert_eq!(
            scale.clipped_note().as_deref(),
            Some("1 call above 80.0k drawn at the top")
        );

        let svg = svg(&spiked, &CompactConfig::default()).unwrap();
        assert!(svg.contains("1 call above 80.0k drawn at the top"), "the axis says so");
        // The legend is in its own column, right of the plot.
        let legend_x = |label: &str| -> f64 {
            let at = svg.find(label).unwrap_or_else(|| panic!("{label} in the legend"));
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let x = tag
                .split("x=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap();
            x.parse().unwrap()
        };
        let at = svg.find("limit 50000").unwrap();
        assert!(
            legend_x("limit 50000") >= f64::from(WIDTH),
            "{}",
            &svg[at.saturating_sub(200)..at + 20]
        );
    }

    #[test]
    fn stages_before_one_call_are_drawn_side_by_side() {
        let points = vec![CallPoint {
            before: Some(70_000),
            estimate: 30_000,
            messages: 9,
            stages: vec![Stage::SnipCompact, Stage::MicroCompact, Stage::CompactHistory],
            ..CallPoint::default()
        }];
        let svg = svg(&points, &CompactConfig::default()).unwrap();
        let centres: std::collections::BTreeSet<String> = svg
            .split("<circle")
            .skip(1)
            .filter_map(|circle| circle.split("cx=\"").nth(1)?.split('"').next().map(str::to_string))
            .collect();
        // Three stage marks and their three legend swatches, each at its own x.
        assert!(centres.len() >= 4, "the marks do not hide each other: {centres:?}");
    }
}
