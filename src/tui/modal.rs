//! The permission modal for the agent's questions: the exact command or path, and
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

pub fn render(frame: &mut Frame<'_>, area: Rect, prompt: &PermissionPrompt) {
    let popup = centered(area, 76, 11);
    frame.render_widget(Clear, popup);
    let key = |k: &'static str, label: &'static str, colour: Color| {
        vec![
            Span::styled(
                format!(" {k} "),
                Style::default()
                    .fg(theme::ON_COLOUR)
                    .bg(colour)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::raw(format!(" {label}   ")),
        ]
    };
    let mut keys = key("y", "allow once", theme::SUCCESS);
    keys.extend(key("n", "deny", theme::FAILURE));
    let mut text = vec![
        Line::from(Span::styled(
            format!("{} asks:", prompt.tool),
            Style::default().fg(theme::SOFT),
        )),
        Line::from(Span::styled(
            prompt.question.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Line::from(vec![
            Span::styled("  ", Style::default()),
            Span::styled(prompt.subject.clone(), Style::default().fg(theme::INFO)),
        ]),
        Line::from(""),
    ];
    match &prompt.always {
        Some(rule) => {
            keys.extend(key("a", "always allow", theme::ATTENTION));
            text.push(Line::from(keys));
            text.push(Line::from(Span::styled(
                format!("      always allows {rule} for this session (/permissions lists and revokes)"),
                Style::default().fg(theme::SOFT),
            )));
        }
        None => text.push(Line::from(keys)),
    }
    frame.render_widget(
        Paragraph::new(text).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(theme::ATTENTION))
                .title(" permission "),
        ),
        popup,
    );
}
