//! The status line (provider, model, workspace, turn state) and the error banner.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::state::{SessionInfo, TurnState};
use crate::tools::sandbox::SandboxState;

/// The frames of the busy spinner, advanced by the app's tick.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn turn_label(turn: &TurnState) -> String {
    match turn {
        TurnState::Idle => "ready".into(),
        TurnState::Thinking => "thinking".into(),
        TurnState::RunningTool(name) => format!("running {name}"),
        TurnState::Compacting => "compacting".into(),
        TurnState::AwaitingPermission => "waiting for your answer".into(),
    }
}

pub fn render(frame: &mut Frame<'_>, area: Rect, session: &SessionInfo, turn: &TurnState, tick: usize) {
    let provider = if session.provider == "demo" {
        Span::styled(
            "offline demo model (set ANTHROPIC_API_KEY for Claude)",
            Style::default().fg(Color::Black).bg(Color::Yellow),
        )
    } else {
        Span::styled(session.provider.clone(), Style::default().fg(Color::LightGreen))
    };
    let state_style = if *turn == TurnState::Idle {
        Style::default().fg(Color::Green)
    } else {
        Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD)
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
                .fg(Color::Black)
                .bg(Color::LightBlue)
                .add_modifier(Modifier::BOLD),
        ),
        Span::raw(" "),
        provider,
        Span::styled(format!(" · {} · ", session.model), Style::default().fg(Color::Gray)),
        Span::styled(session.workspace.clone(), Style::default().fg(Color::DarkGray)),
        Span::raw(" · "),
        Span::styled(format!("{spinner} {}", turn_label(turn)), state_style),
        Span::raw(" · "),
        Span::styled(
            session.sandbox.clone(),
            if session.sandbox == SandboxState::Enforced.label() {
                Style::default().fg(Color::Green)
            } else {
                Style::default().fg(Color::Yellow)
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
                .fg(Color::White)
                .bg(Color::Red)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!(" {message} "), Style::default().fg(Color::LightRed)),
        Span::styled(" (Ctrl+D dismisses)", Style::default().fg(Color::DarkGray)),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}
