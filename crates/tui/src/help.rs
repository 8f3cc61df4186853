//! The keys and commands overlay (`?` on an empty prompt, F1, or /help).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::commands::SlashCommand;
use super::keymap::{self, Action};
use super::markdown;
use super::modal::centered;
use super::theme;

/// The help's scroll position; the box's height (known once drawn) sets a page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HelpView {
    offset: u16,
    page: u16,
}

impl HelpView {
    /// Scroll by a key's action; the next draw keeps the last line at the bottom.
    pub fn scroll(&mut self, action: Action) {
        let page = self.page.max(1);
        self.offset = match action {
            Action::Next => self.offset.saturating_add(1),
            Action::Previous => self.offset.saturating_sub(1),
            Action::PageDown => self.offset.saturating_add(page),
            Action::PageUp => self.offset.saturating_sub(page),
            Action::Top => 0,
            Action::Bottom => u16::MAX,
            _ => self.offset,
        };
    }

    pub fn offset(&self) -> u16 {
        self.offset
    }
}

/// The help's lines at `width` columns: each description wraps under its own column
/// (or, when that column would be too narrow, on the lines below its key).
fn help_lines(width: usize) -> Vec<Line<'static>> {
    const KEY_COLUMN: usize = 34;
    let key_style = Style::default().fg(theme::palette().attention);
    let stacked = width < KEY_COLUMN + 24;
    let mut lines = vec![Line::from(Span::styled(
        "keys",
        Style::default().fg(theme::palette().accent),
    ))];
    let entry = |lines: &mut Vec<Line<'static>>, key: &str, what: &str| {
        let text = [(what.to_string(), Style::default())];
        if stacked {
            lines.push(Line::from(Span::styled(format!("  {key}"), key_style)));
            lines.extend(markdown::wrap(&text, width, Span::raw("      "), "      "));
        } else if key.chars().count() + 3 > KEY_COLUMN {
            // A key longer than its column has a line of its own.
            lines.push(Line::from(Span::styled(format!("  {key}"), key_style)));
            let indent = " ".repeat(KEY_COLUMN);
            lines.extend(markdown::wrap(&text, width, Span::raw(indent.clone()), &indent));
        } else {
            let key = Span::styled(format!("  {key:<32}"), key_style);
            lines.extend(markdown::wrap(&text, width, key, &" ".repeat(KEY_COLUMN)));
        }
    };
    for row in keymap::SCREEN {
        entry(&mut lines, row.keys, row.what);
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "commands",
        Style::default().fg(theme::palette().accent),
    )));
    for command in SlashCommand::all() {
        let usage = format!("{} {}", command.name(), command.arguments());
        entry(&mut lines, usage.trim_end(), command.description());
    }
    for (view, rows) in keymap::VIEWS {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            view.to_lowercase(),
            Style::default().fg(theme::palette().accent),
        )));
        for row in *rows {
            entry(&mut lines, row.keys, row.what);
        }
    }
    lines
}

/// Draw the help scrolled as `view` says, kept so the last line is at the bottom of
/// the box at most, never above a blank page.
pub fn render(frame: &mut Frame<'_>, area: Rect, view: &mut HelpView) {
    // Wide enough for the longest description beside the key column at 120 columns.
    let width = area.width.min(120);
    let lines = help_lines(usize::from(width.saturating_sub(2)));
    let count = lines.len() as u16;
    let popup = centered(area, width, count + 2);
    frame.render_widget(Clear, popup);
    let visible = popup.height.saturating_sub(2);
    view.page = visible;
    view.offset = view.offset.min(count.saturating_sub(visible));
    frame.render_widget(
        Paragraph::new(lines).scroll((view.offset, 0)).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" help · ↑↓ PgUp PgDn Home End scroll · Esc closes "),
        ),
        popup,
    );
}

impl crate::view::OverlayView for HelpView {
    fn name(&self) -> &'static str {
        "the help"
    }

    fn draw(&mut self, frame: &mut Frame<'_>, area: Rect, _shown: &crate::view::Shown<'_>) {
        render(frame, area, self);
    }

    fn key(&mut self, key: crossterm::event::KeyEvent, _shown: &crate::view::Shown<'_>) -> crate::view::Effect {
        match keymap::action(keymap::View::Help, &key) {
            Some(Action::Close) => return crate::view::Effect::Close,
            Some(action) => self.scroll(action),
            None => {}
        }
        crate::view::Effect::Stay
    }

    fn covers_the_screen(&self) -> bool {
        true
    }
}
