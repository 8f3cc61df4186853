//! The status line (provider, model, workspace, turn state) and the error banner.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::state::{SessionInfo, TurnState};
use super::theme;
use crate::tools::sandbox::SandboxState;

/// The frames of the busy spinner, advanced by the app's tick.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn turn_label(turn: &TurnState) -> String {
    match turn {
        TurnState::Idle => "ready".into(),
        TurnState::Thinking => "thinking".into(),
        TurnState::Retrying { at, attempt, reason } => format!(
            "retrying in {:.1} s (attempt {attempt}): {reason}",
            at.saturating_duration_since(std::time::Instant::now()).as_secs_f64()
        ),
        TurnState::RunningTool(name) => format!("running {name}"),
        TurnState::Compacting => "compacting".into(),
        TurnState::AwaitingPermission => "waiting for your answer".into(),
    }
}

pub fn render(frame: &mut Frame<'_>, area: Rect, session: &SessionInfo, turn: &TurnState, tick: usize) {
    let provider = if session.provider == "demo" {
        Span::styled(
            "offline demo model (set ANTHROPIC_API_KEY for Claude)",
            Style::default()
                .fg(theme::palette().on_colour)
                .bg(theme::palette().attention),
        )
    } else {
        Span::styled(
            session.provider.clone(),
            Style::default().fg(theme::palette().success_bright),
        )
    };
    let state_style = if *turn == TurnState::Idle {
        Style::default().fg(theme::palette().success)
    } else {
        Style::default()
            .fg(theme::palette().attention)
            .add_modifier(Modifier::BOLD)
    };
    let spinner = if *turn == TurnState::Idle {
        "●"
    } else {
        SPINNER[tick % SPINNER.len()]
    };
    let line = Line::from(vec![
        Span::styled(
            " scratchpad ",
            Style::default()
                .fg(theme::palette().on_colour)
                .bg(theme::palette().accent)
                .add_modifier(Modifier::BOLD),
        ),
        // The turn state comes first: a narrow terminal cuts from the right.
        Span::raw(" "),
        Span::styled(format!("{spinner} {}", turn_label(turn)), state_style),
        Span::raw(" · "),
        provider,
        Span::styled(
            format!(" · {}", model_label(&session.model)),
            Style::default().fg(theme::palette().soft),
        ),
        Span::styled(
            session
                .window
                .as_ref()
                .map(|window| format!(" · {} window", crate::compact::short_count(window.tokens as usize)))
                .unwrap_or_default(),
            Style::default().fg(theme::palette().muted),
        ),
        Span::raw(" · "),
        Span::styled(session.workspace.clone(), Style::default().fg(theme::palette().muted)),
        Span::raw(" · "),
        Span::styled(
            session.sandbox.clone(),
            if SandboxState::is_full_label(&session.sandbox) {
                Style::default().fg(theme::palette().success)
            } else {
                Style::default().fg(theme::palette().attention)
            },
        ),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

pub fn render_banner(frame: &mut Frame<'_>, area: Rect, message: &str) {
    let line = Line::from(vec![
        Span::styled(
            " ! ",
            Style::default()
                .fg(theme::palette().on_colour)
                .bg(theme::palette().failure)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" {message} "),
            Style::default().fg(theme::palette().failure_soft),
        ),
        Span::styled(" (Ctrl+D dismisses)", Style::default().fg(theme::palette().muted)),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

/// A model id as shown: llama.cpp names its model by the file's path, of which the
/// file name says enough.
fn model_label(model: &str) -> &str {
    model
        .rsplit(['/', '\\'])
        .next()
        .filter(|name| !name.is_empty())
        .unwrap_or(model)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_model_path_is_shown_by_its_file_name() {
        assert_eq!(super::model_label("/root/models/SmolLM2.gguf"), "SmolLM2.gguf");
        assert_eq!(super::model_label("claude-sonnet-4-5"), "claude-sonnet-4-5");
        assert_eq!(super::model_label("dir/"), "dir/");
    }
}
