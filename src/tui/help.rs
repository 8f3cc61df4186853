//! The keys and commands overlay (`?` on an empty prompt, F1, or /help).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::input::COMMANDS;
use super::modal::centered;
use super::theme;

pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the request"),
    ("Alt+Enter, Shift+Enter, Ctrl+J", "new line"),
    ("Up / Down", "previous / next request (single-line prompt)"),
    ("Esc", "cancel the running turn; close a view"),
    ("Tab", "focus: prompt → chat markers → tool calls"),
    ("Up / Down (chat)", "select a compaction marker"),
    ("Enter, 1-9 (chat)", "open the marker's first / nth file"),
    ("Enter (tool calls)", "expand / collapse the selected call"),
    ("PgUp / PgDn, wheel", "scroll the chat; End follows again"),
    ("click", "open a marker's link in the browser"),
    ("Ctrl+T", "transcript browser"),
    ("Ctrl+X", "the /context view"),
    ("Ctrl+D", "dismiss the error banner"),
    ("Ctrl+C", "quit"),
    ("?, F1", "this help (on an empty prompt)"),
];

/// Lines of help text, for scrolling it in a small terminal.
pub fn line_count() -> u16 {
    (KEYS.len() + COMMANDS.len() + 3) as u16
}

pub fn render(frame: &mut Frame<'_>, area: Rect, offset: u16) {
    let popup = centered(area, 78, line_count() + 3);
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
    for (name, what) in COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {name:<32}"), Style::default().fg(theme::ATTENTION)),
            Span::raw(*what),
        ]));
    }
    frame.render_widget(
        Paragraph::new(lines).scroll((offset, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" help · ↑↓ scroll · Esc closes "),
        ),
        popup,
    );
}
