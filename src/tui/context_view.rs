//! The /context view: a map of what the context holds (one cell per slice of the limit,
//! coloured by category), a table per category, the ten largest items, and the
//! timeline of the estimate at each model call with the limit and target lines and a
//! mark where each stage fired.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Clear, Dataset, GraphType, Paragraph, Row, Table, TableState};

use super::gauge::token_text;
use super::keymap::{self, Action, View};
use super::state::Compaction;
use super::theme;
use crate::compact::short_count;
use crate::context_map::{Category, ContextBreakdown, Item};
use crate::protocol::CallPoint;
use crate::protocol::TokenFigure;

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
                let Some(item) = selected else {
                    return ContextAction::Tell(format!(
                        "nothing selected: the list of {} is empty",
                        self.list.label()
                    ));
                };
                let Some(id) = item.tool_use_id.clone() else {
                    return ContextAction::Tell(format!(
                        "r, p and d act on tool results, and this is {}; f lists the tool results",
                        item.category.label()
                    ));
                };
                match action {
                    Action::Restore if item.category == Category::ToolResult => {
                        ContextAction::Tell("this tool result is whole already: nothing to put back".into())
                    }
                    Action::Restore => ContextAction::Restore(id),
                    Action::Pin => ContextAction::Pin {
                        tool_use_id: id,
                        pinned: !item.pinned,
                    },
                    _ => ContextAction::Drop(id),
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
            .title(" context · ↑↓ select · Enter opens · f lists · r restores · p pins · d drops · t counts tokens · Esc closes ")
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
        let chart_height = match inner.height {
            30.. => 10,
            17.. => 6,
            _ => 0,
        };
        let table_rows = shown_categories(breakdown).count() as u16 + 3;
        // A small screen keeps the numbers rather than the list of compactions: a
        // heading and up to COMPACTION_ROWS of them from 17 rows, their heading alone
        // below that.
        let compactions_height = match (compactions.len(), inner.height) {
            (0, _) | (_, 0..=16) => 0,
            (count, _) => 1 + count.min(COMPACTION_ROWS) as u16,
        };
        let [top, items_area, compactions_area, chart_area] = Layout::vertical([
            Constraint::Length(table_rows.min(inner.height.saturating_sub(chart_height + 3 + compactions_height))),
            Constraint::Min(3),
            Constraint::Length(compactions_height),
            Constraint::Length(chart_height),
        ])
        .areas(inner);
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
                Paragraph::new(compaction_lines(compactions, scrolled, COMPACTION_ROWS)),
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

/// Compactions the list of them shows at once; PgUp and PgDn scroll by as many.
const COMPACTION_ROWS: usize = 5;

/// The session's compactions, newest first, `rows` of them from the `scrolled`-th:
/// a heading that says which, then a line each (`#12 ◆ micro_compact 52.0k → 38.0k`),
/// the undone ones dim with a hollow mark.
fn compaction_lines(compactions: &[Compaction], scrolled: usize, rows: usize) -> Vec<Line<'static>> {
    let palette = theme::palette();
    let count = compactions.len();
    let shown = count.saturating_sub(scrolled).min(rows);
    let more = if count > rows {
        format!(" · {}–{} of {count} · PgUp/PgDn", scrolled + 1, scrolled + shown)
    } else {
        String::new()
    };
    let mut lines = vec![Line::from(Span::styled(
        format!("compactions, newest first{more}"),
        Style::default().fg(palette.soft),
    ))];
    for (number, compaction) in compactions.iter().enumerate().rev().skip(scrolled).take(rows) {
        let text = format!(
            "#{} {} {} → {}",
            number + 1,
            compaction.stage,
            short_count(compaction.chars_before),
            short_count(compaction.chars_after)
        );
        lines.push(if compaction.undone {
            Line::from(vec![
                Span::styled(format!("◇ {text}"), Style::default().fg(palette.muted)),
                Span::styled(" (undone)", Style::default().fg(palette.muted)),
            ])
        } else {
            Line::from(Span::styled(
                format!("◆ {text}"),
                Style::default().fg(palette.compaction),
            ))
        });
    }
    lines
}

/// One cell per slice of the limit, in category order; free space is dim dots. The
/// fixed part is outside the limit and has no cells.
pub fn render_grid(frame: &mut Frame<'_>, area: Rect, breakdown: &ContextBreakdown) {
    let columns = area.width.max(1) as usize;
    let rows = area.height.max(1) as usize;
    let cells = columns * rows;
    let scale = breakdown.limit.max(breakdown.estimate).max(1) as f64 / cells as f64;
    let mut symbols: Vec<Span<'static>> = Vec::with_capacity(cells);
    let mut carried = 0.0;
    for (category, chars) in breakdown.totals.iter().filter(|(category, _)| !category.is_fixed()) {
        carried += *chars as f64 / scale;
        let count = carried.floor() as usize;
        carried -= count as f64;
        let (symbol, style) = if *category == Category::Free {
            ("·", Style::default().fg(theme::palette().muted))
        } else {
            ("█", Style::default().fg(category_colour(*category)))
        };
        for _ in 0..count {
            symbols.push(Span::styled(symbol, style));
        }
    }
    symbols.truncate(cells);
    let lines: Vec<Line<'static>> = symbols.chunks(columns).map(|row| Line::from(row.to_vec())).collect();
    frame.render_widget(Paragraph::new(lines), area);
}

/// The categories worth a row: those holding something, and the free space.
fn shown_categories(breakdown: &ContextBreakdown) -> impl Iterator<Item = &(Category, usize)> {
    breakdown
        .totals
        .iter()
        .filter(|(category, chars)| *chars > 0 || *category == Category::Free)
}

/// Characters and tokens per category. The message categories sum to the gauge's
/// estimate (the total row), which is what the limit applies to; the fixed part is the
/// gauge's `+N fixed`, outside the limit.
fn render_table(frame: &mut Frame<'_>, area: Rect, breakdown: &ContextBreakdown, chars_per_token: Option<f64>) {
    let limit = breakdown.limit.max(1);
    let tokens = |chars: usize| {
        chars_per_token
            .filter(|r| *r > 0.0)
            .map(|ratio| short_count((chars as f64 / ratio) as usize))
            .unwrap_or_else(|| "–".into())
    };
    let share = |chars: usize| format!("{:.1}%", chars as f64 * 100.0 / limit as f64);
    // When the rows do not fit, the smallest message categories share one row, so
    // the fixed part, the free space and the totals always show.
    let categories: Vec<(Category, usize)> = shown_categories(breakdown).copied().collect();
    // Three rows are the header and the totals; each instruction file and each MCP
    // server has one.
    let room = (area.height as usize)
        .saturating_sub(3 + breakdown.instructions.len() + breakdown.mcp_servers.len())
        .max(2);
    let mut by_size: Vec<&(Category, usize)> = categories
        .iter()
        .filter(|(category, _)| category.counts_against_limit())
        .collect();
    by_size.sort_by_key(|(_, chars)| std::cmp::Reverse(*chars));
    let mut merged: Vec<Category> = if categories.len() > room {
        let keep = room.saturating_sub(categories.len() - by_size.len() + 1);
        by_size.iter().skip(keep).map(|(category, _)| *category).collect()
    } else {
        Vec::new()
    };
    // One category in a shared row saves no room: it keeps its own.
    if merged.len() < 2 {
        merged.clear();
    }
    let row = |colour: Option<Category>, label: String, chars: usize, of_limit: String| {
        Row::new(vec![
            colour.map_or_else(
                || Span::raw(" "),
                |c| Span::styled("■", Style::default().fg(category_colour(c))),
            ),
            Span::raw(label),
            Span::raw(short_count(chars)),
            Span::raw(of_limit),
            Span::raw(tokens(chars)),
        ])
    };
    let mut rows: Vec<Row> = Vec::new();
    for (category, chars) in &categories {
        if merged.contains(category) {
            continue;
        }
        if *category == Category::Free && !merged.is_empty() {
            let sum: usize = categories
                .iter()
                .filter(|(c, _)| merged.contains(c))
                .map(|(_, n)| n)
                .sum();
            let label = if merged.len() == by_size.len() {
                format!("messages ({} categories)", merged.len())
            } else {
                format!("{} smaller categories", merged.len())
            };
            rows.push(row(None, label, sum, share(sum)));
        }
        let of_limit = if category.is_fixed() {
            "outside".to_string()
        } else {
            share(*chars)
        };
        rows.push(row(Some(*category), category.label().to_string(), *chars, of_limit));
        if *category == Category::ProjectInstructions {
            for file in &breakdown.instructions {
                let label = format!("  {}{}", file.path, if file.cut { " (cut)" } else { "" });
                rows.push(row(None, label, file.prompt_chars, String::new()));
            }
        }
        if *category == Category::McpServers {
            for server in &breakdown.mcp_servers {
                let label = format!(
                    "  {} ({} tool{})",
                    server.name,
                    server.tools,
                    if server.tools == 1 { "" } else { "s" }
                );
                rows.push(row(None, label, server.chars, String::new()));
            }
        }
    }
    let bold = Style::default().add_modifier(Modifier::BOLD);
    rows.push(
        Row::new(vec![
            Span::raw(""),
            Span::raw("messages: the estimate (limited)"),
            Span::raw(short_count(breakdown.estimate)),
            Span::raw(share(breakdown.estimate)),
            Span::raw(tokens(breakdown.estimate)),
        ])
        .style(bold),
    );
    rows.push(Row::new(vec![
        Span::raw(""),
        Span::raw("request: + fixed part"),
        Span::raw(short_count(breakdown.estimate + breakdown.fixed)),
        Span::raw(""),
        Span::raw(tokens(breakdown.estimate + breakdown.fixed)),
    ]));
    let table = Table::new(
        rows,
        [
            Constraint::Length(1),
            Constraint::Length(33),
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Length(7),
        ],
    )
    .header(
        Row::new(vec!["", "category", "chars", "of limit", "tokens"]).style(Style::default().fg(theme::palette().soft)),
    );
    frame.render_widget(table, area);
}

/// The estimate at each call as a saw-tooth (see `Scale::saw_tooth`), with the calls
/// after a compaction and what a compaction cost in cache marked.
pub fn render_timeline(frame: &mut Frame<'_>, area: Rect, timeline: &[CallPoint], lines: Thresholds) {
    let scale = crate::timeline::Scale::of(timeline, lines.limit);
    let points = scale.saw_tooth(timeline);
    let marks: Vec<(f64, f64)> = timeline
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.stages.is_empty())
        .map(|(i, p)| ((i + 1) as f64, scale.clip(p.estimate)))
        .collect();
    // What a compaction cost in cache: marked at the top of its drop.
    let cache_marks: Vec<(f64, f64)> = timeline
        .iter()
        .enumerate()
        .filter(|(_, p)| p.cache_rewritten.is_some_and(|tokens| tokens > 0))
        .map(|(i, p)| ((i + 1) as f64, scale.clip(p.before())))
        .collect();
    // Where a background summary started and where it was ready, on the estimate line.
    let background_marks: Vec<(f64, f64)> = timeline
        .iter()
        .enumerate()
        .filter(|(_, p)| p.background_started.is_some() || p.background_ready)
        .map(|(i, p)| ((i + 1) as f64, scale.clip(p.before())))
        .collect();
    let calls = timeline.len().max(2) as f64;
    let limit = [(1.0, lines.limit as f64), (calls, lines.limit as f64)];
    let target = [(1.0, lines.target as f64), (calls, lines.target as f64)];
    let palette = theme::palette();
    // The legend has its own row under the chart: it never covers a call.
    let legend = Line::from(vec![
        Span::styled("── ", Style::default().fg(palette.failure)),
        Span::styled(
            format!("limit {}  ", short_count(lines.limit)),
            Style::default().fg(palette.soft),
        ),
        Span::styled("── ", Style::default().fg(palette.attention)),
        Span::styled(
            format!("target {}  ", short_count(lines.target)),
            Style::default().fg(palette.soft),
        ),
        Span::styled("── ", Style::default().fg(palette.text)),
        Span::styled("estimate  ", Style::default().fg(palette.soft)),
        Span::styled("• ", Style::default().fg(palette.compaction)),
        Span::styled("stage fired  ", Style::default().fg(palette.soft)),
        Span::styled("• ", Style::default().fg(palette.attention)),
        Span::styled("cache rewritten  ", Style::default().fg(palette.soft)),
        Span::styled("• ", Style::default().fg(palette.reference)),
        Span::styled("background summary started / ready", Style::default().fg(palette.soft)),
    ]);
    let datasets = vec![
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(palette.failure))
            .data(&limit),
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(palette.attention))
            .data(&target),
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(palette.text))
            .data(&points),
        Dataset::default()
            .graph_type(GraphType::Scatter)
            .marker(Marker::Dot)
            .style(Style::default().fg(palette.attention))
            .data(&cache_marks),
        Dataset::default()
            .graph_type(GraphType::Scatter)
            .marker(Marker::Dot)
            .style(Style::default().fg(palette.reference))
            .data(&background_marks),
        Dataset::default()
            .graph_type(GraphType::Scatter)
            .marker(Marker::Dot)
            .style(Style::default().fg(palette.compaction))
            .data(&marks),
    ];
    let title = match scale.clipped_note() {
        Some(note) => format!(" timeline · {} model calls · {note} ", timeline.len()),
        None => format!(" timeline · {} model calls ", timeline.len()),
    };
    let top_label = if scale.clipped > 0 {
        format!("≥{}", short_count(scale.top as usize))
    } else {
        short_count(scale.top as usize)
    };
    let [chart_area, legend_area] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(area);
    let chart = Chart::new(datasets)
        .legend_position(None)
        .block(Block::default().borders(Borders::TOP).title(title))
        .x_axis(
            Axis::default()
                .bounds([1.0, calls])
                .labels(["1".to_string(), format!("{}", timeline.len())]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, scale.top])
                .labels(["0".to_string(), top_label]),
        );
    frame.render_widget(chart, chart_area);
    frame.render_widget(Paragraph::new(legend), legend_area);
}
