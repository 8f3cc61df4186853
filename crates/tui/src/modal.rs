//! The modal for the agent's permission question: the exact command or path, and
//! "always" only where it is offered, naming what it would approve.

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::state::PermissionPrompt;
use super::theme;

pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// Keys typed before the modal was drawn, or within this long after, are ignored: they
/// were meant for the prompt, not as an answer to a question nobody read yet.
pub const TYPE_AHEAD_GRACE: Duration = Duration::from_millis(400);

/// Whether a key pressed now answers a modal first drawn at `shown_at`: it was drawn,
/// and the grace period is over.
pub fn deliberate(shown_at: Option<std::time::Instant>) -> bool {
    shown_at.is_some_and(|shown| shown.elapsed() >= TYPE_AHEAD_GRACE)
}

/// A key to press and what it does, as the modals show them.
pub(super) fn key(k: &'static str, label: &'static str, colour: Color) -> Vec<Span<'static>> {
    vec![
        Span::styled(
            format!(" {k} "),
            Style::default()
                .fg(theme::palette().on_colour)
                .bg(colour)
                .add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(" {label}   ")),
    ]
}

pub fn render(frame: &mut Frame<'_>, area: Rect, prompt: &PermissionPrompt) {
    let popup = centered(area, 76, 11);
    frame.render_widget(Clear, popup);
    let mut keys = key("y", "allow once", theme::palette().success);
    keys.extend(key("n", "deny", theme::palette().failure));
    keys.extend(key("e", "deny, say why", theme::palette().failure));
    // The tool and the exact input once each: a question that names them already is
    // not followed by them again.
    let mut text = Vec::new();
    if !prompt.question.contains(&prompt.tool) {
        text.push(Line::from(Span::styled(
            format!("{} asks:", prompt.tool),
            Style::default().fg(theme::palette().soft),
        )));
    }
    text.push(Line::from(Span::styled(
        prompt.question.clone(),
        Style::default().add_modifier(Modifier::BOLD),
    )));
    if !prompt.question.contains(&prompt.subject) {
        text.push(Line::from(vec![
            Span::styled("  ", Style::default()),
            Span::styled(prompt.subject.clone(), Style::default().fg(theme::palette().info)),
        ]));
    }
    text.push(Line::from(""));
    match &prompt.always {
        Some(rule) => {
            text.push(Line::from(keys));
            let mut always = key("a", "always, this session", theme::palette().attention);
            always.extend(key("p", "always, this project", theme::palette().attention));
            text.push(Line::from(always));
            text.push(Line::from(Span::styled(
                format!("      always allows {rule} (/permissions lists and revokes)"),
                Style::default().fg(theme::palette().soft),
            )));
        }
        None => text.push(Line::from(keys)),
    }
    frame.render_widget(
        Paragraph::new(text).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(theme::palette().attention))
                .title(" permission "),
        ),
        popup,
    );
}
