//! `/compact --preview` in the one review step: what `/compact` would take out of the
//! context, each stage with its receipt, before anything is written or a model asked;
//! then compact now (Ctrl+S) or not now. The summary itself is written only on apply
//! (and, with `compaction.review_summaries`, reviewed before it goes in).

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::compact::{Stage, StageEvent, counted, short_count};
use crate::keymap::{self, Action, Offer, View};
use crate::modal::centered;
use crate::protocol::Op;
use crate::theme;
use crate::view::{Effect, OverlayView, Shown};

/// A preview asked for, and what it found once the agent says.
pub struct PreviewView {
    /// What the summary is to dwell on (`/compact --preview FOCUS`).
    focus: Option<String>,
    /// The receipts of what `/compact` would do; `None` until they come.
    events: Option<Vec<StageEvent>>,
    scroll: u16,
}

impl PreviewView {
    pub fn new(focus: Option<String>) -> Self {
        PreviewView {
            focus,
            events: None,
            scroll: 0,
        }
    }

    /// The agent's receipts of what `/compact` would do.
    pub fn previewed(&mut self, events: Vec<StageEvent>) {
        self.events = Some(events);
    }

    /// What would leave the context, in a line.
    fn leaves(&self) -> String {
        let Some(events) = &self.events else {
            return "asking the agent what /compact would do…".into();
        };
        let summarised = events
            .iter()
            .find(|event| event.stage == Stage::CompactHistory && event.replaced > 0);
        match summarised {
            Some(event) => format!(
                "What leaves the context: {} ({} chars), kept in a transcript written when it goes in; a summary takes their place.",
                counted(event.replaced, "message", "messages"),
                short_count(event.items.iter().map(|item| item.chars_before).sum()),
            ),
            None if events.is_empty() => "Nothing would leave the context: there is nothing to compact yet.".into(),
            None => {
                "Only what the recoverable stages below name would leave the context; nothing is summarised.".into()
            }
        }
    }

    /// Compact now, unless this is a read-only view or nothing would change.
    fn offers(&self, read_only: Option<&str>) -> Vec<Offer> {
        let now = match (&self.events, read_only) {
            (_, Some(view)) => Err(format!("nothing changes in {view}")),
            (None, _) => Err("the preview is not here yet".to_string()),
            (Some(events), _) if events.iter().all(|event| event.replaced == 0) => {
                Err("nothing to compact yet".to_string())
            }
            _ => Ok(()),
        };
        vec![
            Offer::when(Action::ApplySummary, "compact now", now),
            Offer::ready(Action::RejectSummary, "not now"),
            Offer::ready(Action::Previous, "scroll"),
        ]
    }
}

impl OverlayView for PreviewView {
    fn name(&self) -> &'static str {
        "the preview"
    }

    fn keys(&self) -> View {
        View::Preview
    }

    fn offers(&self, shown: &Shown<'_>) -> Vec<Offer> {
        PreviewView::offers(self, shown.state.session.read_only.as_deref())
    }

    fn draw(&mut self, frame: &mut Frame<'_>, area: Rect, shown: &Shown<'_>) {
        let popup = centered(area, 100, area.height.saturating_sub(4).max(10));
        frame.render_widget(Clear, popup);
        let palette = theme::palette();
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(palette.attention))
            .title(" preview of /compact · nothing is written until you apply it ");
        let inner = block.inner(popup);
        frame.render_widget(block, popup);
        let leaves = self.leaves();
        let width = usize::from(inner.width).max(1);
        let heading_rows = u16::try_from(textwrap::wrap(&leaves, width).len()).unwrap_or(1);
        let [heading, body, keys_area] = Layout::vertical([
            Constraint::Length(heading_rows),
            Constraint::Min(1),
            Constraint::Length(1),
        ])
        .areas(inner);
        frame.render_widget(
            Paragraph::new(Span::styled(leaves, Style::default().add_modifier(Modifier::BOLD)))
                .wrap(Wrap { trim: false }),
            heading,
        );
        let lines: Vec<Line<'static>> = match &self.events {
            Some(events) => crate::marker::preview_lines(events, width, &mut Vec::new()),
            None => Vec::new(),
        };
        let most = u16::try_from(lines.len())
            .unwrap_or(u16::MAX)
            .saturating_sub(body.height);
        self.scroll = self.scroll.min(most);
        frame.render_widget(Paragraph::new(lines).scroll((self.scroll, 0)), body);
        let offers = PreviewView::offers(self, shown.state.session.read_only.as_deref());
        frame.render_widget(Paragraph::new(keymap::footer(View::Preview, &offers)), keys_area);
    }

    fn key(&mut self, key: KeyEvent, shown: &Shown<'_>) -> Effect {
        match keymap::action(View::Preview, &key) {
            Some(Action::ApplySummary) => {
                let offers = PreviewView::offers(self, shown.state.session.read_only.as_deref());
                match offers
                    .into_iter()
                    .find(|offer| offer.action == Action::ApplySummary)
                    .map(|offer| offer.now)
                {
                    Some(Err(why)) => Effect::Tell(why),
                    _ => Effect::CloseAndSend(Op::Compact {
                        focus: self.focus.clone(),
                    }),
                }
            }
            Some(Action::RejectSummary | Action::Close) => Effect::Close,
            Some(Action::Previous) => {
                self.scroll = self.scroll.saturating_sub(1);
                Effect::Stay
            }
            Some(Action::Next) => {
                self.scroll = self.scroll.saturating_add(1);
                Effect::Stay
            }
            _ => Effect::Stay,
        }
    }
}
