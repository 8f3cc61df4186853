//! What `/context` shows of the context over time: the estimate at each model call,
//! with the limit and target lines and a mark where each stage fired.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};

use super::context_view::Thresholds;
use super::theme;
use crate::compact::short_count;
use crate::protocol::CallPoint;

/// The estimate at each call as a saw-tooth (see `Scale::saw_tooth`), with the calls
/// after a compaction and what a compaction cost in cache marked.
pub fn render_timeline(frame: &mut Frame<'_>, area: Rect, timeline: &[CallPoint], lines: Thresholds) {
    let scale = crate::timeline::Scale::of(timeline, lines.limit);
    let points = scale.saw_tooth(timeline);
    let marks: Vec<(f64, f64)> = timeline
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.stages.is_empty())
        .map(|(i, p)| ((i + 1) as f64, scale.clip(p.estimate)))
        .collect();
    // What a compaction cost in cache: marked at the top of its drop.
    let cache_marks: Vec<(f64, f64)> = timeline
        .iter()
        .enumerate()
        .filter(|(_, p)| p.cache_rewritten.is_some_and(|tokens| tokens > 0))
        .map(|(i, p)| ((i + 1) as f64, scale.clip(p.before())))
        .collect();
    // Where a background summary started and where it was ready, on the estimate line.
    let background_marks: Vec<(f64, f64)> = timeline
        .iter()
        .enumerate()
        .filter(|(_, p)| p.background_started.is_some() || p.background_ready)
        .map(|(i, p)| ((i + 1) as f64, scale.clip(p.before())))
        .collect();
    let calls = timeline.len().max(2) as f64;
    let limit = [(1.0, lines.limit as f64), (calls, lines.limit as f64)];
    let target = [(1.0, lines.target as f64), (calls, lines.target as f64)];
    let palette = theme::palette();
    // The legend has its own row under the chart: it never covers a call.
    let legend = Line::from(vec![
        Span::styled("── ", Style::default().fg(palette.failure)),
        Span::styled(
            format!("limit {}  ", short_count(lines.limit)),
            Style::default().fg(palette.soft),
        ),
        Span::styled("── ", Style::default().fg(palette.attention)),
        Span::styled(
            format!("target {}  ", short_count(lines.target)),
            Style::default().fg(palette.soft),
        ),
        Span::styled("── ", Style::default().fg(palette.text)),
        Span::styled("estimate  ", Style::default().fg(palette.soft)),
        Span::styled("• ", Style::default().fg(palette.compaction)),
        Span::styled("stage fired  ", Style::default().fg(palette.soft)),
        Span::styled("• ", Style::default().fg(palette.attention)),
        Span::styled("cache rewritten  ", Style::default().fg(palette.soft)),
        Span::styled("• ", Style::default().fg(palette.reference)),
        Span::styled("background summary started / ready", Style::default().fg(palette.soft)),
    ]);
    let datasets = vec![
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(palette.failure))
            .data(&limit),
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(palette.attention))
            .data(&target),
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(palette.text))
            .data(&points),
        Dataset::default()
            .graph_type(GraphType::Scatter)
            .marker(Marker::Dot)
            .style(Style::default().fg(palette.attention))
            .data(&cache_marks),
        Dataset::default()
            .graph_type(GraphType::Scatter)
            .marker(Marker::Dot)
            .style(Style::default().fg(palette.reference))
            .data(&background_marks),
        Dataset::default()
            .graph_type(GraphType::Scatter)
            .marker(Marker::Dot)
            .style(Style::default().fg(palette.compaction))
            .data(&marks),
    ];
    let title = match scale.clipped_note() {
        Some(note) => format!(" timeline · {} model calls · {note} ", timeline.len()),
        None => format!(" timeline · {} model calls ", timeline.len()),
    };
    let top_label = if scale.clipped > 0 {
        format!("≥{}", short_count(scale.top as usize))
    } else {
        short_count(scale.top as usize)
    };
    let [chart_area, legend_area] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
    let chart = Chart::new(datasets)
        .legend_position(None)
        .block(Block::default().borders(Borders::TOP).title(title))
        .x_axis(
            Axis::default()
                .bounds([1.0, calls])
                .labels(["1".to_string(), format!("{}", timeline.len())]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, scale.top])
                .labels(["0".to_string(), top_label]),
        );
    frame.render_widget(chart, chart_area);
    frame.render_widget(Paragraph::new(legend), legend_area);
}
