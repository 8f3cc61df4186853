//! What `/context` shows of the context now: a map with one cell per slice of the
//! limit, coloured by category, and a table per category.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table};

use super::context_view::category_colour;
use super::theme;
use crate::compact::short_count;
use crate::context_map::{Category, ContextBreakdown};

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
pub(super) fn shown_categories(breakdown: &ContextBreakdown) -> impl Iterator<Item = &(Category, usize)> {
    breakdown
        .totals
        .iter()
        .filter(|(category, chars)| *chars > 0 || *category == Category::Free)
}

/// Characters and tokens per category. The message categories sum to the gauge's
/// estimate (the total row), which is what the limit applies to; the fixed part is the
/// gauge's `+N fixed`, outside the limit. Tokens are the server's count where it
/// counted this history (the column says `counted`), else each category weighed by
/// its own content, else characters at the default ratio.
pub(super) fn render_table(
    frame: &mut Frame<'_>,
    area: Rect,
    breakdown: &ContextBreakdown,
    chars_per_token: Option<f64>,
) {
    let limit = breakdown.limit.max(1);
    let by_ratio = |chars: usize| {
        chars_per_token
            .filter(|r| *r > 0.0)
            .map(|ratio| short_count((chars as f64 / ratio) as usize))
            .unwrap_or_else(|| "–".into())
    };
    // The server's count where it counted, else each category weighed by its own
    // content, else (no call measured yet) the characters at the default ratio.
    let counted = breakdown.counted.as_ref().or(breakdown.weighed.as_ref());
    // A row's tokens: the categories it holds as counted, else its chars by ratio.
    let tokens = |categories: &[Category], chars: usize| match counted {
        Some(counted) => short_count(categories.iter().filter_map(|c| counted.of(*c)).sum::<u64>() as usize),
        None => by_ratio(chars),
    };
    // A file's or server's part of its category: its share of the counted tokens.
    let part_tokens = |category: Category, part: usize, whole: usize| match counted.and_then(|c| c.of(category)) {
        Some(tokens) => short_count((tokens as f64 * part as f64 / whole.max(1) as f64).round() as usize),
        None => by_ratio(part),
    };
    let share = |chars: usize| format!("{:.1}%", chars as f64 * 100.0 / limit as f64);
    // When the rows do not fit, the smallest message categories share one row, so
    // the fixed part, the free space and the totals always show.
    let categories: Vec<(Category, usize)> = shown_categories(breakdown).copied().collect();
    let Merged {
        merged,
        all_messages,
        details,
    } = merged_categories(&categories, breakdown, area.height as usize);
    let row = |colour: Option<Category>, label: String, chars: usize, of_limit: String, tokens: String| {
        Row::new(vec![
            colour.map_or_else(
                || Span::raw(" "),
                |c| Span::styled("■", Style::default().fg(category_colour(c))),
            ),
            Span::raw(label),
            Span::raw(short_count(chars)),
            Span::raw(of_limit),
            Span::raw(tokens),
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
            let label = if all_messages {
                format!("messages ({} categories)", merged.len())
            } else {
                format!("{} smaller categories", merged.len())
            };
            rows.push(row(None, label, sum, share(sum), tokens(&merged, sum)));
        }
        let of_limit = if category.is_fixed() {
            "outside".to_string()
        } else {
            share(*chars)
        };
        let label = match (category, breakdown.thinking_tokens) {
            (Category::Thinking, Some(tokens)) => format!(
                "{} (last reply: {} tokens)",
                category.label(),
                short_count(tokens as usize)
            ),
            _ => category.label().to_string(),
        };
        // Free space is not text: its tokens are what the limit's ratio makes of it.
        let category_tokens = if *category == Category::Free {
            by_ratio(*chars)
        } else {
            tokens(&[*category], *chars)
        };
        rows.push(row(Some(*category), label, *chars, of_limit, category_tokens));
        if *category == Category::ProjectInstructions && details {
            for file in &breakdown.instructions {
                let label = format!("  {}{}", file.path, if file.cut { " (cut)" } else { "" });
                let tokens = part_tokens(*category, file.prompt_chars, *chars);
                rows.push(row(None, label, file.prompt_chars, String::new(), tokens));
            }
        }
        if *category == Category::McpServers && details {
            for server in &breakdown.mcp_servers {
                let label = format!(
                    "  {} ({} tool{})",
                    server.name,
                    server.tools,
                    if server.tools == 1 { "" } else { "s" }
                );
                let tokens = part_tokens(*category, server.chars, *chars);
                rows.push(row(None, label, server.chars, String::new(), tokens));
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
            Span::raw(counted.map_or_else(
                || by_ratio(breakdown.estimate),
                |counted| short_count(counted.messages() as usize),
            )),
        ])
        .style(bold),
    );
    rows.push(Row::new(vec![
        Span::raw(""),
        Span::raw("request: + fixed part"),
        Span::raw(short_count(breakdown.estimate + breakdown.fixed)),
        Span::raw(""),
        Span::raw(counted.map_or_else(
            || by_ratio(breakdown.estimate + breakdown.fixed),
            |counted| short_count(counted.total as usize),
        )),
    ]));
    frame.render_widget(table_of(rows, breakdown.counted.is_some()), area);
}

/// Which message categories share one row because the rows do not all fit, and
/// whether the instruction files and MCP servers get rows of their own.
struct Merged {
    merged: Vec<Category>,
    /// Every message category is in the shared row.
    all_messages: bool,
    details: bool,
}

/// What fits in `height` rows: on a short screen the smallest message categories
/// share a row, and the messages and the free room show before the fixed part's
/// details.
fn merged_categories(categories: &[(Category, usize)], breakdown: &ContextBreakdown, height: usize) -> Merged {
    // Three rows are the header and the totals; each instruction file and each MCP
    // server has one, where there is room for them beside every category: on a short
    // screen the messages and the free room show before the fixed part's details.
    // The least the table needs: the header and the messages' total, the fixed
    // part's rows, one row of messages (merged when need be) and the free room.
    let sub_rows = breakdown.instructions.len() + breakdown.mcp_servers.len();
    let fixed_rows = categories.iter().filter(|(category, _)| category.is_fixed()).count();
    let details = height >= 2 + fixed_rows + 2 + sub_rows;
    let room = height.saturating_sub(3 + if details { sub_rows } else { 0 }).max(2);
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
    Merged {
        all_messages: merged.len() == by_size.len(),
        merged,
        details,
    }
}

/// The table of `rows` under its header; the last column says `counted` where the
/// server counted.
fn table_of(rows: Vec<Row<'_>>, counted: bool) -> Table<'_> {
    Table::new(
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
        Row::new(vec![
            "",
            "category",
            "chars",
            "of limit",
            if counted { "counted" } else { "tokens" },
        ])
        .style(Style::default().fg(theme::palette().soft)),
    )
}
