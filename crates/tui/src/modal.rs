//! The modals for the agent's questions: permission (the exact command or path, and
//! "always" only where it is offered, naming what it would approve), and, with
//! `compaction.confirm_lossy`, whether to summarise now (with what it would summarise).

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::state::{LossyPrompt, PermissionPrompt};
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

/// Messages of a lossy preview listed in its modal; the rest are counted.
const LOSSY_ITEMS_SHOWN: usize = 5;

pub fn render_lossy(frame: &mut Frame<'_>, area: Rect, prompt: &LossyPrompt) {
    let soft = Style::default().fg(theme::palette().soft);
    let items: Vec<&crate::compact::ReceiptItem> = prompt.preview.iter().flat_map(|event| &event.items).collect();
    let chars: usize = items.iter().map(|item| item.chars_before).sum();
    let why = match prompt.asked_by {
        Some(by) => format!(
            "The {by} asks for a summary of the history ({} of {} chars).",
            crate::compact::short_count(prompt.estimate),
            crate::compact::short_count(prompt.limit)
        ),
        None => format!(
            "The recoverable stages were not enough: {} > {} chars.",
            crate::compact::short_count(prompt.estimate),
            crate::compact::short_count(prompt.limit)
        ),
    };
    let mut text = vec![
        Line::from(Span::styled(why, Style::default().add_modifier(Modifier::BOLD))),
        Line::from(Span::styled(
            format!(
                "Summarising replaces {} ({} chars) with one summary; the transcript keeps them.",
                crate::compact::counted(items.len(), "message", "messages"),
                crate::compact::short_count(chars)
            ),
            soft,
        )),
        Line::from(""),
    ];
    for item in items.iter().take(LOSSY_ITEMS_SHOWN) {
        text.push(Line::from(Span::styled(
            format!(
                "  #{} · {} · {} chars",
                item.position,
                item.what,
                crate::compact::short_count(item.chars_before)
            ),
            Style::default().fg(theme::palette().info),
        )));
    }
    if items.len() > LOSSY_ITEMS_SHOWN {
        text.push(Line::from(Span::styled(
            format!("  … and {} more", items.len() - LOSSY_ITEMS_SHOWN),
            soft,
        )));
    }
    let mut keys = key("c", "compact now", theme::palette().success);
    keys.extend(key("n", "not now", theme::palette().attention));
    keys.extend(key("x", "open /context", theme::palette().info));
    let not_now = match prompt.asked_by {
        Some(_) => "not now leaves the history as it is",
        None => "not now sends this call over the limit",
    };
    let keys = vec![
        Line::from(keys),
        Line::from(Span::styled(format!("{not_now} · Esc cancels the turn"), soft)),
    ];
    // As tall as what it says, and the keys always in view below it: a short terminal
    // cuts the list, never the keys.
    let width = area.width.min(80);
    let inner_width = usize::from(width.saturating_sub(2)).max(1);
    let rows =
        |lines: &[Line<'_>]| -> usize { lines.iter().map(|line| line.width().max(1).div_ceil(inner_width)).sum() };
    let height = u16::try_from(rows(&text) + rows(&keys) + 2).unwrap_or(u16::MAX);
    let popup = centered(area, width, height);
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(theme::palette().attention))
        .title(" summarise the history? ");
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let keys_rows = u16::try_from(rows(&keys)).unwrap_or(2).min(inner.height);
    let [body, keys_area] = Layout::vertical([Constraint::Min(0), Constraint::Length(keys_rows)]).areas(inner);
    frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), body);
    frame.render_widget(Paragraph::new(keys).wrap(Wrap { trim: false }), keys_area);
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
