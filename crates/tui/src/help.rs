//! The keys and commands overlay (`?` on an empty prompt, F1, or /help).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::commands::SlashCommand;
use super::keymap::{self, Action, Row, View};
use super::markdown;
use super::modal::centered;
use super::theme;

/// The help's scroll position; the box's height (known once drawn) sets a page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HelpView {
    offset: u16,
    page: u16,
    /// The view it was opened from, whose keys come first.
    from: Option<View>,
}

impl HelpView {
    /// The help opened from `view`: that view's keys first, then the rest.
    pub fn on(view: View) -> Self {
        HelpView {
            from: Some(view),
            ..HelpView::default()
        }
    }

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

/// The help's lines at `width` columns, the keys of the view it was opened `from`
/// first (a view's own section, or the screen's rows for the part of it that had the
/// focus), then the screen's keys, the commands and every other view's: each
/// description wraps under its own column (or, when that column would be too
/// narrow, on the lines below its key).
fn help_lines(width: usize, from: Option<View>) -> Vec<Line<'static>> {
    const KEY_COLUMN: usize = 34;
    let key_style = Style::default().fg(theme::palette().attention);
    let heading_style = Style::default().fg(theme::palette().accent);
    let stacked = width < KEY_COLUMN + 24;
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
    let bound_in = |row: &Row, view: View| row.bindings.iter().any(|&(at, _, _)| at == view);
    // The prompt's keys open the screen's list anyway.
    let from = from.filter(|&view| view != View::Prompt);
    let own_section = from.and_then(|view| {
        keymap::VIEWS
            .iter()
            .position(|(_, rows)| rows.iter().any(|row| bound_in(row, view)))
    });
    let mut lines = Vec::new();
    if let Some(view) = from {
        lines.push(Line::from(Span::styled(
            format!("here, {}", view.place()),
            heading_style,
        )));
        match own_section {
            Some(at) => keymap::VIEWS[at]
                .1
                .iter()
                .for_each(|row| entry(&mut lines, row.keys, row.what)),
            None => keymap::SCREEN
                .iter()
                .filter(|row| bound_in(row, view))
                .for_each(|row| entry(&mut lines, row.keys, row.what)),
        }
        lines.push(Line::from(""));
    }
    lines.push(Line::from(Span::styled("keys", heading_style)));
    for row in keymap::SCREEN {
        entry(&mut lines, row.keys, row.what);
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("commands (/ finds them)", heading_style)));
    for command in SlashCommand::all() {
        let usage = format!("{} {}", command.name(), command.arguments());
        entry(&mut lines, usage.trim_end(), command.description());
    }
    for (at, (view, rows)) in keymap::VIEWS.iter().enumerate() {
        if Some(at) == own_section {
            continue;
        }
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(view.to_lowercase(), heading_style)));
        for row in *rows {
            entry(&mut lines, row.keys, row.what);
        }
    }
    lines
}

/// What the help offers: it scrolls and closes, always.
fn offers() -> Vec<keymap::Offer> {
    use keymap::Offer;
    vec![
        Offer::ready(Action::Previous, "scroll"),
        Offer::ready(Action::PageDown, "a page"),
        Offer::ready(Action::Top, "top"),
        Offer::ready(Action::Bottom, "bottom"),
        Offer::ready(Action::Close, "closes"),
    ]
}

/// ` help · ↑↓ scroll · … `: its name and its keys.
fn title() -> Line<'static> {
    let mut spans = vec![Span::raw(" help · ")];
    spans.extend(keymap::footer(View::Help, &offers()).spans);
    spans.push(Span::raw(" "));
    Line::from(spans)
}

/// Draw the help scrolled as `view` says, kept so the last line is at the bottom of
/// the box at most, never above a blank page.
pub fn render(frame: &mut Frame<'_>, area: Rect, view: &mut HelpView) {
    // Wide enough for the longest description beside the key column at 120 columns.
    let width = area.width.min(120);
    let lines = help_lines(usize::from(width.saturating_sub(2)), view.from);
    let count = lines.len() as u16;
    let popup = centered(area, width, count + 2);
    frame.render_widget(Clear, popup);
    let visible = popup.height.saturating_sub(2);
    view.page = visible;
    view.offset = view.offset.min(count.saturating_sub(visible));
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((view.offset, 0))
            .block(Block::default().borders(Borders::ALL).title(title())),
        popup,
    );
}

impl crate::view::OverlayView for HelpView {
    fn offers(&self, _shown: &crate::view::Shown<'_>) -> Vec<crate::keymap::Offer> {
        offers()
    }

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

    fn keys(&self) -> View {
        View::Help
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    /// Opened from /context, the help starts with /context's keys, which are not
    /// listed a second time further down; opened from the chat, with the chat's.
    #[test]
    fn the_help_starts_with_the_keys_of_where_it_was_opened() {
        let from_context = text(&help_lines(100, Some(View::Context)));
        assert_eq!(from_context[0], "here, in /context");
        assert!(
            from_context[1].contains("select an item of the list"),
            "{:?}",
            &from_context[..3]
        );
        assert!(!from_context.iter().any(|line| line == "in /context"));
        let from_chat = text(&help_lines(100, Some(View::Chat)));
        assert_eq!(from_chat[0], "here, in the chat");
        assert!(
            from_chat[1].contains("select a request, a compaction marker"),
            "{:?}",
            &from_chat[..3]
        );
        let from_prompt = text(&help_lines(100, Some(View::Prompt)));
        assert_eq!(from_prompt[0], "keys");
        assert_eq!(from_prompt, text(&help_lines(100, None)));
    }
}
