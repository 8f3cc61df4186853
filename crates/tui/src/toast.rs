//! Short feedback from the app itself ("press Ctrl+C again to quit", "only the newest
//! compaction can be undone", the answer to a key in `/context`), drawn over whatever
//! view is open, where the eye is, and gone on its own. Errors from the agent are not
//! toasts: they stay in the banner until dismissed.

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};
use unicode_width::UnicodeWidthStr;

use super::theme;

/// How long a toast stays unless it says otherwise.
pub const TOAST_FOR: Duration = Duration::from_secs(4);

/// The most lines of text a toast takes.
const MAX_LINES: u16 = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toast {
    pub text: String,
    pub until: Instant,
}

impl Toast {
    pub fn new(text: impl Into<String>, lasting: Duration) -> Self {
        Toast {
            text: text.into(),
            until: Instant::now() + lasting,
        }
    }

    pub fn expired(&self, now: Instant) -> bool {
        now >= self.until
    }

    /// Drawn at the bottom right of `area` (the views' area), in at most half its
    /// width unless the text needs more, wrapped to at most three lines.
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        if area.width < 8 || area.height < 3 {
            return;
        }
        let widest = area.width.saturating_sub(2);
        let text_width = u16::try_from(self.text.width()).unwrap_or(u16::MAX);
        let width = (text_width + 4).min(widest).max((area.width / 2).min(text_width + 4));
        let inner = width.saturating_sub(4).max(1);
        let lines = text_width.div_ceil(inner).clamp(1, MAX_LINES);
        let height = (lines + 2).min(area.height);
        let toast = Rect {
            x: area.x + area.width - width - 1,
            y: area.y + area.height - height,
            width,
            height,
        };
        let palette = theme::palette();
        frame.render_widget(Clear, toast);
        frame.render_widget(
            Paragraph::new(Line::from(self.text.as_str()))
                .wrap(Wrap { trim: true })
                .style(Style::default().fg(palette.text))
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .border_type(BorderType::Rounded)
                        .border_style(Style::default().fg(palette.info))
                        .padding(ratatui::widgets::Padding::horizontal(1)),
                ),
            toast,
        );
    }
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;

    fn drawn(toast: &Toast, width: u16, height: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
        terminal.draw(|frame| toast.render(frame, frame.area())).expect("draw");
        let buffer = terminal.backend().buffer().clone();
        (0..height)
            .map(|y| (0..width).map(|x| buffer[(x, y)].symbol().to_string()).collect())
            .collect()
    }

    #[test]
    fn a_toast_sits_at_the_bottom_right_and_wraps_a_long_text() {
        let toast = Toast::new("press Ctrl+C again to quit", TOAST_FOR);
        let screen = drawn(&toast, 40, 6);
        assert!(screen[3].trim_start().starts_with('╭'), "{screen:#?}");
        assert!(screen[4].contains("press Ctrl+C again to quit"), "{screen:#?}");
        assert!(screen[5].trim_end().ends_with('╯'), "{screen:#?}");
        assert_eq!(screen[5].chars().last(), Some(' '), "one column from the edge");
        let long = Toast::new(
            "only the newest compaction can be undone: undo micro_compact first (/undo)",
            TOAST_FOR,
        );
        let screen = drawn(&long, 40, 8);
        let text: String = screen
            .iter()
            .map(|row| row.trim_matches(|c: char| c == ' ' || c == '│'))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(text.contains("undo micro_compact first"), "{screen:#?}");
    }

    #[test]
    fn a_toast_expires() {
        let toast = Toast::new("hello", Duration::from_millis(10));
        assert!(!toast.expired(Instant::now()));
        assert!(toast.expired(Instant::now() + Duration::from_millis(20)));
    }
}
