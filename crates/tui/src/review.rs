//! The one review step for any summary (`compaction.review_summaries`, `/summary`):
//! what leaves the context, the model's summary in an editor, the index scratchpad
//! adds after it, and what the two keep of the record. The summary goes in as it
//! stands in the editor (apply), or not at all (not now).

mod preview;
pub use preview::PreviewView;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui_textarea::TextArea;

use super::modal::{centered, key};
use super::state::ReviewPrompt;
use super::theme;
use crate::protocol::ReviewAnswer;

/// The editor of one summary in review.
pub struct ReviewEditor {
    pub request_id: u64,
    textarea: TextArea<'static>,
    original: String,
}

impl ReviewEditor {
    pub fn new(prompt: &ReviewPrompt) -> Self {
        let mut textarea = TextArea::new(prompt.summary.split('\n').map(str::to_string).collect());
        textarea.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        textarea.set_cursor_line_style(Style::default());
        // Most edits add a line the model left out: the cursor starts at the end.
        textarea.move_cursor(ratatui_textarea::CursorMove::Bottom);
        textarea.move_cursor(ratatui_textarea::CursorMove::End);
        ReviewEditor {
            request_id: prompt.request_id,
            textarea,
            original: prompt.summary.clone(),
        }
    }

    /// A key the editor takes (everything but the review's own keys).
    pub fn input(&mut self, key: crossterm::event::KeyEvent) {
        self.textarea.input(key);
    }

    /// Pasted text, at the cursor.
    pub fn paste(&mut self, text: &str) {
        self.textarea.insert_str(text);
    }

    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    /// The answer applying it gives: as written when nothing changed.
    pub fn applied(&self) -> ReviewAnswer {
        let text = self.text();
        if text == self.original {
            ReviewAnswer::Apply
        } else {
            ReviewAnswer::Edited { summary: text }
        }
    }

    fn edited(&self) -> bool {
        self.text() != self.original
    }
}

/// Lines of the index shown under the editor; the rest are counted.
const INDEX_LINES_SHOWN: usize = 8;

pub fn render(frame: &mut Frame<'_>, area: Rect, prompt: &ReviewPrompt, editor: &mut ReviewEditor) {
    let popup = centered(area, 100, area.height.saturating_sub(4).max(12));
    frame.render_widget(Clear, popup);
    let palette = theme::palette();
    let soft = Style::default().fg(palette.soft);
    let title = if editor.edited() {
        " review the summary · edited "
    } else {
        " review the summary before the model reads it "
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(palette.attention))
        .title(title);
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    // The heading is for the model (the pane's title says what it is); without it the
    // entries and the count of those not shown fit the pane at 80 columns too.
    let index_lines: Vec<&str> = prompt.index.lines().skip(1).collect();
    let index_rows = u16::try_from(index_lines.len().min(INDEX_LINES_SHOWN) + 1).unwrap_or(1);
    let mut said = vec![format!("What leaves the context: {}.", prompt.leaves)];
    if let Some(retention) = &prompt.retention {
        said.push(format!("With the index it {retention}."));
    }
    said.push(prompt.if_not_applied.clone());
    // As many rows as the heading wraps to, so "not now" is never cut off.
    let width = usize::from(inner.width).max(1);
    let heading_rows: usize = said.iter().map(|line| textwrap::wrap(line, width).len()).sum();
    let [heading, editor_area, index_area, keys_area] = Layout::vertical([
        Constraint::Length(u16::try_from(heading_rows).unwrap_or(u16::MAX)),
        Constraint::Min(3),
        Constraint::Length(index_rows + 1),
        Constraint::Length(1),
    ])
    .areas(inner);
    let said: Vec<Line<'static>> = said
        .into_iter()
        .enumerate()
        .map(|(at, line)| {
            let style = if at == 0 {
                Style::default().add_modifier(Modifier::BOLD)
            } else {
                soft
            };
            Line::from(Span::styled(line, style))
        })
        .collect();
    frame.render_widget(Paragraph::new(said).wrap(Wrap { trim: false }), heading);
    editor.textarea.set_block(
        Block::default()
            .borders(Borders::TOP)
            .border_style(soft)
            .title(" summary (yours to edit) "),
    );
    frame.render_widget(&editor.textarea, editor_area);
    let mut index: Vec<Line<'static>> = index_lines
        .iter()
        .take(INDEX_LINES_SHOWN)
        .map(|line| Line::from(Span::styled(line.to_string(), soft)))
        .collect();
    if index_lines.len() > INDEX_LINES_SHOWN {
        index.push(Line::from(Span::styled(
            format!("… {} more lines of index", index_lines.len() - INDEX_LINES_SHOWN),
            soft,
        )));
    }
    frame.render_widget(
        Paragraph::new(index).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::TOP)
                .border_style(soft)
                .title(" index, added after it (kept by scratchpad) "),
        ),
        index_area,
    );
    let mut keys = key("Ctrl+S", "apply", palette.success);
    keys.extend(key("Ctrl+R", "not now", palette.attention));
    keys.push(Span::styled(
        if prompt.in_turn {
            "Esc cancels the turn"
        } else {
            "Esc closes it, nothing changes"
        },
        soft,
    ));
    frame.render_widget(Paragraph::new(Line::from(keys)), keys_area);
}
