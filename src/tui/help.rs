//! The keys and commands overlay (`?` on an empty prompt, F1, or /help).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::commands::SlashCommand;
use super::markdown;
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
        "Right / Left in the chat",
        "show / hide the selected marker's receipt and whole summary",
    ),
    ("u in the chat", "undo the selected marker's compaction (the newest)"),
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

/// The keys of each view, for the help and the README (checked against each other).
pub const VIEW_KEYS: &[(&str, &[(&str, &str)])] = &[
    (
        "In the transcript browser",
        &[
            ("Up / Down, j / k", "select a file"),
            ("Enter", "open it"),
            ("Esc, q", "close the browser"),
        ],
    ),
    (
        "In the viewer",
        &[
            ("Up / Down, PgUp / PgDn, g / G", "scroll"),
            ("/", "search"),
            ("n / N", "next / previous match"),
            ("b", "jump back to where the search started"),
            ("Esc, q", "back to where it was opened (the list, the chat or /context)"),
        ],
    ),
    (
        "In /context",
        &[
            ("Up / Down", "select one of the largest items"),
            ("Enter", "open it: its saved file, or its text"),
            ("r", "put a shortened tool result back in full"),
            ("p", "pin a tool result (stage 3 leaves it whole) or unpin it"),
            ("d", "move a tool result to the archive now, with a receipt"),
            ("t", "count the tokens exactly, where the provider can"),
            ("Esc, q", "close"),
        ],
    ),
    (
        "In a permission question",
        &[
            ("y, Enter", "allow once"),
            ("n", "deny"),
            ("a", "always allow, where offered"),
            ("Esc", "cancel the turn"),
        ],
    ),
];

/// The most lines the help can have (at its narrowest), bounding its scroll offset.
pub fn line_count() -> u16 {
    help_lines(20).len() as u16
}

/// The help's lines at `width` columns: each description wraps under its own column
/// (or, when that column would be too narrow, on the lines below its key).
fn help_lines(width: usize) -> Vec<Line<'static>> {
    const KEY_COLUMN: usize = 34;
    let key_style = Style::default().fg(theme::ATTENTION);
    let stacked = width < KEY_COLUMN + 24;
    let mut lines = vec![Line::from(Span::styled("keys", Style::default().fg(theme::ACCENT)))];
    let entry = |lines: &mut Vec<Line<'static>>, key: &str, what: &str| {
        let text = [(what.to_string(), Style::default())];
        if stacked {
            lines.push(Line::from(Span::styled(format!("  {key}"), key_style)));
            lines.extend(markdown::wrap(&text, width, Span::raw("      "), "      "));
        } else {
            let key = Span::styled(format!("  {key:<32}"), key_style);
            lines.extend(markdown::wrap(&text, width, key, &" ".repeat(KEY_COLUMN)));
        }
    };
    for (key, what) in KEYS {
        entry(&mut lines, key, what);
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("commands", Style::default().fg(theme::ACCENT))));
    for command in SlashCommand::ALL {
        let usage = format!("{} {}", command.name(), command.arguments());
        entry(&mut lines, usage.trim_end(), command.description());
    }
    for (view, keys) in VIEW_KEYS {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            view.to_lowercase(),
            Style::default().fg(theme::ACCENT),
        )));
        for (key, what) in *keys {
            entry(&mut lines, key, what);
        }
    }
    lines
}

/// Draw the help scrolled by `offset` lines, which is kept so the last line is at
/// the bottom of the box at most, never above a blank page.
pub fn render(frame: &mut Frame<'_>, area: Rect, offset: &mut u16) {
    // Wide enough for the longest description beside the key column at 120 columns.
    let width = area.width.min(120);
    let lines = help_lines(usize::from(width.saturating_sub(2)));
    let count = lines.len() as u16;
    let popup = centered(area, width, count + 2);
    frame.render_widget(Clear, popup);
    let visible = popup.height.saturating_sub(2);
    *offset = (*offset).min(count.saturating_sub(visible));
    frame.render_widget(
        Paragraph::new(lines).scroll((*offset, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" help · ↑↓ scroll · Esc closes "),
        ),
        popup,
    );
}
