//! The context timeline: the estimate at each model call, with the limit and target
//! lines and a mark where each stage fired. Drawn as SVG for `simulate --plot`; the TUI
//! draws the same points as a chart.

use crate::compact::{CompactConfig, Stage};
use crate::protocol::CallPoint;

pub fn stage_colour(stage: Stage) -> &'static str {
    match stage {
        Stage::ToolResultBudget => "#1f77b4",
        Stage::SnipCompact => "#9467bd",
        Stage::MicroCompact => "#2ca02c",
        Stage::FitToolResults => "#17becf",
        Stage::CompactHistory => "#d62728",
        Stage::ReactiveCompact => "#ff7f0e",
    }
}

pub fn svg(points: &[CallPoint], config: &CompactConfig) -> String {
    let (width, height, pad) = (900.0_f64, 360.0_f64, 40.0_f64);
    let max = points
        .iter()
        .map(|p| p.estimate)
        .max()
        .unwrap_or(0)
        .max(config.context_char_limit) as f64
        * 1.1;
    let n = points.len().max(2) as f64 - 1.0;
    let x = |i: usize| pad + (width - 2.0 * pad) * i as f64 / n;
    let y = |v: f64| height - pad - (height - 2.0 * pad) * v / max;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"monospace\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (value, label, colour) in [
        (config.context_char_limit as f64, "limit", "#d62728"),
        (config.micro_target_chars() as f64, "target", "#ff7f0e"),
    ] {
        out.push_str(&format!(
            "<line x1=\"{pad}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-dasharray=\"4 3\"/>\
             <text x=\"{}\" y=\"{:.1}\" fill=\"{colour}\">{label} {}</text>\n",
            width - pad,
            width - pad - 90.0,
            y(value) - 3.0,
            value as usize,
            y = y(value),
        ));
    }
    let path: Vec<String> = points
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.estimate as f64)))
        .collect();
    out.push_str(&format!(
        "<polyline fill=\"none\" stroke=\"#333\" stroke-width=\"1.5\" points=\"{}\"/>\n",
        path.join(" ")
    ));
    for (i, point) in points.iter().enumerate() {
        for (k, stage) in point.stages.iter().enumerate() {
            out.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\"><title>{stage} at call {}</title></circle>\n",
                x(i),
                y(point.estimate as f64) - 9.0 * k as f64,
                stage_colour(*stage),
                i + 1
            ));
        }
    }
    let mut legend_x = pad;
    for stage in [
        Stage::ToolResultBudget,
        Stage::SnipCompact,
        Stage::MicroCompact,
        Stage::FitToolResults,
        Stage::CompactHistory,
        Stage::ReactiveCompact,
    ] {
        out.push_str(&format!(
            "<circle cx=\"{legend_x:.1}\" cy=\"16\" r=\"4\" fill=\"{}\"/><text x=\"{:.1}\" y=\"20\">{stage}</text>\n",
            stage_colour(stage),
            legend_x + 7.0
        ));
        legend_x += 8.0 + 7.2 * stage.name().len() as f64 + 12.0;
    }
    out.push_str(&format!(
        "<text x=\"{pad}\" y=\"{}\">estimate (chars) after prepare, per model call</text>\n</svg>\n",
        height - 12.0
    ));
    out
}
