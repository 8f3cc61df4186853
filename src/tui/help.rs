//! The keys and commands overlay (`?` on an empty prompt, F1, or /help).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::commands::SlashCommand;
use super::modal::centered;
use super::theme;

/// Every key of the main screen; the README's key table is checked against this.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the request"),
    ("Alt+Enter, Shift+Enter, Ctrl+J", "new line"),
    (
        "Up / Down",
        "previous / next request (single-line prompt); move in the slash-command popup",
    ),
    (
        "Tab",
        "complete a slash command; otherwise cycle focus: prompt → chat markers → tool calls",
    ),
    (
        "Esc",
        "cancel the running turn (its command's process group is killed); close a view",
    ),
    ("Up / Down in the chat", "select a compaction marker"),
    ("Enter, 1–9 in the chat", "open the selected marker's first / nth file"),
    (
        "Enter in tool calls",
        "expand the newest call, open a saved output, or collapse",
    ),
    (
        "PgUp / PgDn, mouse wheel",
        "scroll the chat (End follows the stream again)",
    ),
    ("click on a link", "open that file in the browser"),
    ("Ctrl+T", "transcript browser"),
    ("Ctrl+X", "the /context view"),
    ("Ctrl+D", "dismiss the error banner"),
    ("?, F1", "help (on an empty prompt; ↑↓ scroll it in a small terminal)"),
    (
        "Ctrl+C",
        "cancel the running turn or clear the prompt; twice within 2 s quits",
    ),
];

/// Lines of help text, for scrolling it in a small terminal.
pub fn line_count() -> u16 {
    (KEYS.len() + SlashCommand::ALL.len() + 3) as u16
}

/// Draw the help scrolled by `offset` lines, which is kept so the last line is at
/// the bottom of the box at most, never above a blank page.
pub fn render(frame: &mut Frame<'_>, area: Rect, offset: &mut u16) {
    // Wide enough for the longest description beside the key column at 120 columns.
    let popup = centered(area, 120, line_count() + 3);
    frame.render_widget(Clear, popup);
    let mut lines = vec![Line::from(Span::styled("keys", Style::default().fg(theme::ACCENT)))];
    for (key, what) in KEYS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {key:<32}"), Style::default().fg(theme::ATTENTION)),
            Span::raw(*what),
        ]));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("commands", Style::default().fg(theme::ACCENT))));
    for command in SlashCommand::ALL {
        let usage = format!("{} {}", command.name(), command.arguments());
        lines.push(Line::from(vec![
            Span::styled(
                format!("  {:<32}", usage.trim_end()),
                Style::default().fg(theme::ATTENTION),
            ),
            Span::raw(command.description()),
        ]));
    }
    let visible = popup.height.saturating_sub(2);
    *offset = (*offset).min(line_count().saturating_sub(visible));
    frame.render_widget(
        Paragraph::new(lines).scroll((*offset, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" help · ↑↓ scroll · Esc closes "),
        ),
        popup,
    );
}
