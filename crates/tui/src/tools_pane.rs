//! The tool-call pane: each call with its status, input summary, time and output
//! (collapsed; the selected call expands and shows where its full output was saved).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::state::{CallState, ToolCall};
use super::status::SPINNER;
use super::theme;
use crate::protocol::ToolStatus;

fn status_span(call: &ToolCall, tick: usize) -> (Span<'static>, String) {
    match &call.state {
        CallState::Pending => (
            Span::styled("·", Style::default().fg(theme::palette().muted)),
            String::new(),
        ),
        CallState::Running { since } => (
            Span::styled(
                SPINNER[tick % SPINNER.len()],
                Style::default().fg(theme::palette().attention),
            ),
            format!("{}s", since.elapsed().as_secs()),
        ),
        CallState::Done { status, took } => {
            let (mark, colour) = match status {
                ToolStatus::Ok => ("✓", theme::palette().success),
                ToolStatus::Error => ("✗", theme::palette().failure),
                ToolStatus::Refused => ("⊘", theme::palette().failure_soft),
                ToolStatus::Cancelled => ("■", theme::palette().muted),
            };
            // Sub-second calls read as "<1s": tenths would flicker between runs and say little.
            let time = if took.is_zero() {
                String::new()
            } else if took.as_secs() == 0 {
                "<1s".to_string()
            } else {
                format!("{:.1}s", took.as_secs_f64())
            };
            (Span::styled(mark, Style::default().fg(colour)), time)
        }
    }
}

/// One call as the pane and the chat show it: its status, name, input and time on one
/// line (reversed when selected); expanded, where its output was saved and the start
/// of the output.
pub fn call_lines(call: &ToolCall, width: usize, tick: usize, selected: bool, expanded: bool) -> Vec<Line<'static>> {
    let (mark, time) = status_span(call, tick);
    let name_style = Style::default().fg(theme::palette().text).add_modifier(Modifier::BOLD);
    let row_style = if selected {
        Style::default().add_modifier(Modifier::REVERSED)
    } else {
        Style::default()
    };
    // The name keeps room for the mark and the time; the summary gets what is left.
    let name = super::ellipsized(&call.name, width.saturating_sub(4 + time.len()).max(1));
    let fixed = 2 + name.chars().count() + 1 + time.len() + 1;
    let summary = super::ellipsized(&call.summary, width.saturating_sub(fixed));
    let mut lines = vec![
        Line::from(vec![
            mark,
            Span::raw(" "),
            Span::styled(name, name_style),
            Span::raw(" "),
            Span::styled(summary, Style::default().fg(theme::palette().soft)),
            Span::raw(" "),
            Span::styled(time, Style::default().fg(theme::palette().muted)),
        ])
        .style(row_style),
    ];
    if !expanded {
        return lines;
    }
    if let Some(path) = &call.saved_path {
        lines.push(Line::from(Span::styled(
            format!("  saved: {path}"),
            Style::default()
                .fg(theme::palette().link)
                .add_modifier(Modifier::UNDERLINED),
        )));
    }
    let total = call.output.lines;
    for line in &call.output.head {
        let shown = super::ellipsized(line, width.saturating_sub(4));
        lines.push(Line::from(Span::styled(
            format!("  │ {shown}"),
            Style::default().fg(theme::palette().muted),
        )));
    }
    if total > call.output.head.len() {
        lines.push(Line::from(Span::styled(
            format!(
                "  │ … {} more lines ({} chars)",
                total - call.output.head.len(),
                call.output.chars
            ),
            Style::default().fg(theme::palette().muted),
        )));
    }
    lines
}

pub fn render(
    frame: &mut Frame<'_>,
    area: Rect,
    calls: &[ToolCall],
    selected: Option<usize>,
    focused: bool,
    tick: usize,
) {
    let border = if focused {
        theme::palette().accent
    } else {
        theme::palette().muted
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(border))
        .title(format!(" tool calls ({}) ", calls.len()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut selected_end = 0;
    for (at, call) in calls.iter().enumerate() {
        if at > 0 && calls[at - 1].turn != call.turn {
            let label = format!("── request {} ", call.turn);
            let rule = "─".repeat(width.saturating_sub(label.chars().count()));
            lines.push(Line::from(Span::styled(
                format!("{label}{rule}"),
                Style::default().fg(theme::palette().muted),
            )));
        }
        let is_selected = selected == Some(at);
        lines.extend(call_lines(call, width, tick, is_selected, is_selected));
        if is_selected {
            selected_end = lines.len();
        }
    }
    if calls.is_empty() {
        lines.push(Line::from(Span::styled(
            "no tool calls yet",
            Style::default().fg(theme::palette().muted),
        )));
    }
    // Keep the newest in view; while the pane has focus, the selected call instead.
    let height = inner.height as usize;
    let end = if focused && selected.is_some() {
        selected_end.max(height.min(lines.len()))
    } else {
        lines.len()
    };
    let start = end.saturating_sub(height);
    let visible: Vec<Line<'static>> = lines.into_iter().skip(start).take(height).collect();
    frame.render_widget(Paragraph::new(visible), inner);
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::protocol::ToolStatus;
    use crate::state::OutputPreview;

    #[test]
    fn a_long_tool_name_is_cut_with_an_ellipsis() {
        let call = ToolCall {
            id: "t".into(),
            name: "a_tool_with_a_remarkably_long_name".into(),
            summary: "input".into(),
            state: CallState::Done {
                status: ToolStatus::Ok,
                took: std::time::Duration::from_millis(300),
            },
            output: OutputPreview::default(),
            saved_path: None,
            turn: 1,
        };
        let mut terminal = Terminal::new(TestBackend::new(20, 4)).unwrap();
        terminal
            .draw(|frame| render(frame, frame.area(), &[call], None, false, 0))
            .unwrap();
        let row: String = (0..20)
            .map(|x| terminal.backend().buffer()[(x, 1)].symbol().to_string())
            .collect();
        assert!(row.contains('…'), "{row:?}");
        assert!(row.contains("<1s"), "the time stays: {row:?}");
    }
}
