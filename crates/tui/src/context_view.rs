//! The /context view: a map of what the context holds and a table per category
//! (`context_table`), the ten largest items, the compactions so far, and the
//! timeline of the estimate at each model call (`context_timeline`).

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState};

use super::context_table::{render_grid, render_table, shown_categories};
use super::context_timeline::render_timeline;
use super::gauge::token_text;
use super::keymap::{self, Action, View};
use super::state::Compaction;
use super::theme;
use crate::compact::short_count;
use crate::context_map::{Category, ContextBreakdown, Item};
use crate::protocol::CallPoint;
use crate::protocol::TokenFigure;

mod health;
use health::{COMPACTION_ROWS, HEALTH_FROM_ROWS, compaction_lines};
pub use health::{cache_line, health_line};

pub fn category_colour(category: Category) -> Color {
    match category {
        Category::SystemAndTools => theme::palette().soft,
        Category::ProjectInstructions => theme::palette().success,
        Category::McpServers => theme::palette().info,
        Category::UserText => theme::palette().accent,
        Category::AssistantText => theme::palette().success_bright,
        Category::ToolUseInput => theme::palette().attention,
        Category::ToolResult => theme::palette().failure_soft,
        Category::PersistedPreview => theme::palette().info,
        Category::ClearedReference => theme::palette().reference,
        Category::ArchiveMarker => theme::palette().archive,
        Category::CompactionSummary => theme::palette().compaction,
        Category::Thinking => theme::palette().code,
        Category::Other => theme::palette().text,
        Category::Framing => theme::palette().muted,
        Category::Free => theme::palette().muted,
    }
}

/// What the view draws: the breakdown (once the agent sent it), the timeline with its
/// lines, the token figure, and each compaction of the session with whether it was
/// undone.
pub struct ContextShown<'a> {
    pub breakdown: Option<&'a ContextBreakdown>,
    pub timeline: &'a [CallPoint],
    pub thresholds: Thresholds,
    pub tokens: Option<&'a TokenFigure>,
    pub compactions: &'a [Compaction],
}

/// The limit and target lines of the timeline: the agent's, which an automatic limit
/// moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    pub limit: usize,
    pub target: usize,
}

pub enum ContextAction {
    Stay,
    Close,
    /// Ask the provider for the exact token count of the history as it is.
    CountTokens,
    /// Put the selected (shortened) tool result back in full.
    Restore(String),
    /// Pin or unpin the selected tool result.
    Pin {
        tool_use_id: String,
        pinned: bool,
    },
    /// Move the selected tool result to the archive now.
    Drop(String),
    /// Open this item: a saved file path, or the item's own text.
    OpenPath(String),
    ShowText {
        title: String,
        text: String,
    },
    /// Say this where the user looks (a key that cannot act on the selection).
    Tell(String),
}

/// Which items the list under the table shows; `f` steps through them in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ItemList {
    #[default]
    Largest,
    ToolResults,
    Whole,
    Persisted,
    Cleared,
    Pinned,
}

impl ItemList {
    pub const ALL: [ItemList; 6] = [
        ItemList::Largest,
        ItemList::ToolResults,
        ItemList::Whole,
        ItemList::Persisted,
        ItemList::Cleared,
        ItemList::Pinned,
    ];

    fn next(self) -> ItemList {
        let at = Self::ALL.iter().position(|&list| list == self).unwrap_or(0);
        Self::ALL[(at + 1) % Self::ALL.len()]
    }

    pub fn label(self) -> &'static str {
        match self {
            ItemList::Largest => "largest items",
            ItemList::ToolResults => "every tool result",
            ItemList::Whole => "tool results: whole",
            ItemList::Persisted => "tool results: persisted",
            ItemList::Cleared => "tool results: cleared",
            ItemList::Pinned => "tool results: pinned",
        }
    }

    /// The items this list shows, in the breakdown's order.
    pub fn items(self, breakdown: &ContextBreakdown) -> Vec<&Item> {
        let results = breakdown.tool_results.iter();
        match self {
            ItemList::Largest => breakdown.largest.iter().collect(),
            ItemList::ToolResults => results.collect(),
            ItemList::Whole => results.filter(|item| item.category == Category::ToolResult).collect(),
            ItemList::Persisted => results
                .filter(|item| item.category == Category::PersistedPreview)
                .collect(),
            ItemList::Cleared => results
                .filter(|item| item.category == Category::ClearedReference)
                .collect(),
            ItemList::Pinned => results.filter(|item| item.pinned).collect(),
        }
    }
}

#[derive(Default)]
pub struct ContextView {
    pub selected: usize,
    pub list: ItemList,
    /// How many of the newest compactions the list of them is scrolled past.
    pub compactions_scrolled: usize,
}

impl ContextView {
    /// One key in the view; `compactions` is how many the session had (their list
    /// scrolls).
    pub fn handle_key(
        &mut self,
        key: KeyEvent,
        breakdown: Option<&ContextBreakdown>,
        compactions: usize,
    ) -> ContextAction {
        let items = breakdown.map(|b| self.list.items(b)).unwrap_or_default();
        let selected = items.get(self.selected).copied();
        match keymap::action(View::Context, &key) {
            Some(Action::Close) => ContextAction::Close,
            Some(Action::CountTokens) => ContextAction::CountTokens,
            Some(Action::ScrollDown) => {
                self.compactions_scrolled =
                    (self.compactions_scrolled + COMPACTION_ROWS).min(compactions.saturating_sub(COMPACTION_ROWS));
                ContextAction::Stay
            }
            Some(Action::ScrollUp) => {
                self.compactions_scrolled = self.compactions_scrolled.saturating_sub(COMPACTION_ROWS);
                ContextAction::Stay
            }
            Some(Action::NextList) => {
                self.list = self.list.next();
                self.selected = 0;
                ContextAction::Stay
            }
            Some(action @ (Action::Restore | Action::Pin | Action::Drop)) => {
                match (self.tool_result_target(action, breakdown), action) {
                    (Err(why), _) => ContextAction::Tell(why),
                    (Ok((id, _)), Action::Restore) => ContextAction::Restore(id),
                    (Ok((tool_use_id, pinned)), Action::Pin) => ContextAction::Pin {
                        tool_use_id,
                        pinned: !pinned,
                    },
                    (Ok((id, _)), _) => ContextAction::Drop(id),
                }
            }
            Some(Action::Next) => {
                self.selected = (self.selected + 1).min(items.len().saturating_sub(1));
                ContextAction::Stay
            }
            Some(Action::Previous) => {
                self.selected = self.selected.saturating_sub(1);
                ContextAction::Stay
            }
            Some(Action::Open(_)) => match selected {
                Some(item) => match &item.saved_path {
                    Some(path) => ContextAction::OpenPath(path.clone()),
                    None => ContextAction::ShowText {
                        title: format!(
                            "message {} · {} · {} chars",
                            item.message,
                            item.category.label(),
                            item.chars
                        ),
                        text: item.text.clone(),
                    },
                },
                None => ContextAction::Stay,
            },
            _ => ContextAction::Stay,
        }
    }

    /// The selected item `action` (restore, pin or drop) would act on: its tool
    /// result's id and whether it is pinned, or why there is none.
    fn tool_result_target(
        &self,
        action: Action,
        breakdown: Option<&ContextBreakdown>,
    ) -> Result<(String, bool), String> {
        let items = breakdown.map(|b| self.list.items(b)).unwrap_or_default();
        let Some(item) = items.get(self.selected) else {
            return Err(format!("nothing selected: the list of {} is empty", self.list.label()));
        };
        let Some(id) = item.tool_use_id.clone() else {
            let lists = keymap::key_in(View::Context, Action::NextList).unwrap_or_default();
            return Err(format!(
                "this acts on tool results, and this is {}; {lists} lists the tool results",
                item.category.label()
            ));
        };
        if action == Action::Restore && item.category == Category::ToolResult {
            return Err("this tool result is whole already: nothing to put back".into());
        }
        Ok((id, item.pinned))
    }

    /// What the view offers now, for its title: restore, pin and drop only on a tool
    /// result they can act on.
    pub fn offers(&self, breakdown: Option<&ContextBreakdown>) -> Vec<keymap::Offer> {
        use keymap::Offer;
        let on = |action| self.tool_result_target(action, breakdown).map(|_| ());
        vec![
            Offer::ready(Action::Previous, "select"),
            Offer::ready(Action::Open(0), "opens"),
            Offer::ready(Action::NextList, "lists"),
            Offer::when(Action::Restore, "restores", on(Action::Restore)),
            Offer::when(Action::Pin, "pins", on(Action::Pin)),
            Offer::when(Action::Drop, "drops", on(Action::Drop)),
            Offer::ready(Action::CountTokens, "counts tokens"),
            Offer::ready(Action::Close, "closes"),
        ]
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, shown: ContextShown<'_>) {
        let ContextShown {
            breakdown,
            timeline,
            thresholds: lines,
            tokens,
            compactions,
        } = shown;
        frame.render_widget(Clear, area);
        let tokens_line = match tokens {
            Some(figure) => {
                let full = format!(" {} ", token_text(figure, true));
                if full.chars().count() + 2 <= area.width as usize {
                    full
                } else {
                    format!(" {} ", token_text(figure, false))
                }
            }
            None => " tokens: no call measured yet ".to_string(),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(theme::palette().link))
            .title(self.title(shown.breakdown))
            .title_bottom(Line::from(tokens_line).right_aligned());
        let chars_per_token = tokens.map(|figure| figure.chars_per_token);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let Some(breakdown) = breakdown else {
            frame.render_widget(Paragraph::new("asking the agent for the breakdown…"), inner);
            return;
        };
        // Small screens keep the numbers: the timeline shrinks first, then the grid
        // goes before the table loses its labels.
        let mut chart_height = match inner.height {
            30.. => 10,
            17.. => 6,
            _ => 0,
        };
        let table_rows = shown_categories(breakdown).count() as u16 + 3;
        // A small screen keeps the numbers rather than the list of compactions: a
        // heading and up to COMPACTION_ROWS of them from 17 rows, none below that;
        // the health line from HEALTH_FROM_ROWS.
        let health = (inner.height >= HEALTH_FROM_ROWS)
            .then(|| health_line(compactions))
            .flatten();
        let mut compactions_height = match (compactions.len(), inner.height) {
            (0, _) | (_, 0..=16) => 0,
            (count, _) => 1 + u16::from(health.is_some()) + count.min(COMPACTION_ROWS) as u16,
        };
        let cache = (inner.height >= HEALTH_FROM_ROWS)
            .then(|| cache_line(timeline))
            .flatten();
        let cache_height = u16::from(cache.is_some());
        // The table keeps room for the messages and the free room below the fixed
        // part: the timeline gives way first, then the list of compactions (at 80x24
        // with one MCP server the table showed the fixed part alone).
        // Its least rows: the header, the fixed part's categories, the messages
        // (merged), the free room and the two totals.
        let fixed_rows = shown_categories(breakdown)
            .filter(|(category, _)| category.is_fixed())
            .count() as u16;
        let least = fixed_rows + 5;
        let table_room = |chart: u16, listed: u16| inner.height.saturating_sub(chart + 3 + listed + cache_height);
        if table_room(chart_height, compactions_height) < least {
            chart_height = 0;
        }
        if table_room(chart_height, compactions_height) < least {
            compactions_height = 0;
        }
        let [top, items_area, cache_area, compactions_area, chart_area] = Layout::vertical([
            Constraint::Length(
                table_rows.min(
                    inner
                        .height
                        .saturating_sub(chart_height + 3 + compactions_height + cache_height),
                ),
            ),
            Constraint::Min(3),
            Constraint::Length(cache_height),
            Constraint::Length(compactions_height),
            Constraint::Length(chart_height),
        ])
        .areas(inner);
        if let Some(cache) = cache {
            frame.render_widget(
                Paragraph::new(Span::styled(cache, Style::default().fg(theme::palette().attention))),
                cache_area,
            );
        }
        if inner.width >= 100 {
            let [grid_area, table_area] =
                Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(top);
            render_grid(frame, grid_area, breakdown);
            render_table(frame, table_area, breakdown, chars_per_token);
        } else {
            render_table(frame, top, breakdown, chars_per_token);
        }
        self.render_items(frame, items_area, breakdown);
        if compactions_height > 0 {
            let scrolled = self
                .compactions_scrolled
                .min(compactions.len().saturating_sub(COMPACTION_ROWS));
            frame.render_widget(
                Paragraph::new(compaction_lines(compactions, health, scrolled, COMPACTION_ROWS)),
                compactions_area,
            );
        }
        if chart_height > 0 {
            render_timeline(frame, chart_area, timeline, lines);
        }
    }

    fn render_items(&self, frame: &mut Frame<'_>, area: Rect, breakdown: &ContextBreakdown) {
        let items = self.list.items(breakdown);
        let count = items.len();
        let rows = items.into_iter().map(|item| {
            let saved = item
                .saved_path
                .as_deref()
                .map(|p| format!(" → {p}"))
                .unwrap_or_default();
            Row::new(vec![
                Span::styled("■", Style::default().fg(category_colour(item.category))),
                Span::raw(short_count(item.chars)),
                Span::raw(if item.message == 0 {
                    "system".to_string()
                } else {
                    format!("#{} {}", item.message, item.role)
                }),
                Span::raw(format!(
                    "{}{}{saved}",
                    if item.pinned { "[pinned] " } else { "" },
                    item.preview
                )),
            ])
        });
        let table = Table::new(
            rows,
            [
                Constraint::Length(1),
                Constraint::Length(7),
                Constraint::Length(14),
                Constraint::Min(10),
            ],
        )
        .header(
            Row::new(vec![String::new(), "chars".into(), "where".into(), {
                let list = match self.list {
                    ItemList::Largest => self.list.label().to_string(),
                    list => format!("{} ({count})", list.label()),
                };
                let pinned = if breakdown.pinned.is_empty() {
                    String::new()
                } else {
                    format!(" · pinned: {}", breakdown.pinned.join(", "))
                };
                format!("{list} · f: {}{pinned}", self.list.next().label())
            }])
            .style(Style::default().fg(theme::palette().soft)),
        )
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
        let mut state = TableState::default().with_selected(Some(self.selected));
        frame.render_stateful_widget(table, area, &mut state);
    }
}

impl ContextView {
    /// ` context · ↑↓ select · … `: its name and what it offers now.
    fn title(&self, breakdown: Option<&ContextBreakdown>) -> Line<'static> {
        let mut spans = vec![Span::raw(" context · ")];
        spans.extend(keymap::footer(View::Context, &self.offers(breakdown)).spans);
        spans.push(Span::raw(" "));
        Line::from(spans)
    }
}

impl crate::view::OverlayView for ContextView {
    fn offers(&self, shown: &crate::view::Shown<'_>) -> Vec<keymap::Offer> {
        ContextView::offers(self, shown.state.breakdown.as_ref())
    }

    fn keys(&self) -> crate::keymap::View {
        crate::keymap::View::Context
    }

    fn name(&self) -> &'static str {
        "/context"
    }

    fn draw(&mut self, frame: &mut Frame<'_>, area: Rect, shown: &crate::view::Shown<'_>) {
        let state = shown.state;
        self.render(
            frame,
            area,
            ContextShown {
                breakdown: state.breakdown.as_ref(),
                timeline: &state.timeline,
                thresholds: shown.thresholds,
                tokens: state.context.as_ref().and_then(|c| c.tokens.as_ref()),
                compactions: &state.compactions(),
            },
        );
    }

    fn key(&mut self, key: KeyEvent, shown: &crate::view::Shown<'_>) -> crate::view::Effect {
        use crate::protocol::Op;
        use crate::view::Effect;
        let compactions = shown.state.compactions().len();
        match self.handle_key(key, shown.state.breakdown.as_ref(), compactions) {
            ContextAction::Stay => Effect::Stay,
            ContextAction::Close => Effect::Close,
            ContextAction::CountTokens => Effect::Send(Op::CountTokens),
            ContextAction::Restore(tool_use_id) => Effect::Send(Op::Restore { tool_use_id }),
            ContextAction::Pin { tool_use_id, pinned } => Effect::Send(Op::Pin { tool_use_id, pinned }),
            ContextAction::Drop(tool_use_id) => Effect::Send(Op::Drop { tool_use_id }),
            ContextAction::Tell(text) => Effect::Tell(text),
            ContextAction::OpenPath(path) => Effect::OpenPath(path),
            ContextAction::ShowText { title, text } => Effect::ShowText { title, text },
        }
    }
}
