//! The context gauge: estimated characters against CONTEXT_CHAR_LIMIT, with ticks at
//! the micro-compact target and the limit, coloured by zone, and the fixed part of
//! every request beside it; the message count against the snip limit; and, once a call
//! was measured, its tokens against the window and its characters per token (marked
//! `≈` when re-estimated after a compaction); and where a background summary started
//! (`╎`), and whether it is ready.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme;
use crate::compact::short_count;
use crate::protocol::{ContextStatus, TokenBasis, TokenFigure};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    Calm,
    Warm,
    Over,
}

pub fn zone(status: &ContextStatus) -> Zone {
    if status.estimate > status.limit {
        Zone::Over
    } else if status.estimate > status.target {
        Zone::Warm
    } else {
        Zone::Calm
    }
}

pub fn zone_colour(zone: Zone) -> Color {
    match zone {
        Zone::Calm => theme::palette().success,
        Zone::Warm => theme::palette().attention,
        Zone::Over => theme::palette().failure,
    }
}

/// A tick's colour: over the zone's colour in a filled cell, over the background in
/// an empty one.
pub fn tick_colour(filled: bool) -> Color {
    let palette = theme::palette();
    if filled { palette.on_colour } else { palette.text }
}

/// The bar alone: `width` cells, filled to estimate/limit, a tick at the target and one
/// at the limit (the last cell).
pub fn bar(status: &ContextStatus, width: usize) -> Vec<Span<'static>> {
    let width = width.max(3);
    let colour = zone_colour(zone(status));
    let limit = status.limit.max(1);
    let filled = ((status.estimate.min(limit) as f64 / limit as f64) * width as f64).round() as usize;
    let target_at = ((status.target as f64 / limit as f64) * width as f64).round() as usize;
    let target_at = target_at.min(width - 1);
    // Where a background summary started, between the ticks.
    let background_at = status
        .background
        .map(|background| ((background.started_at_percent as f64 / 100.0) * width as f64).round() as usize)
        .map(|at| at.min(width - 1));
    (0..width)
        .map(|i| {
            let is_tick = i == target_at || i == width - 1;
            let (symbol, style) = match (i < filled, is_tick) {
                (true, true) => ("┃", Style::default().fg(tick_colour(true)).bg(colour)),
                (false, true) => ("┃", Style::default().fg(tick_colour(false))),
                (true, false) if background_at == Some(i) => ("╎", Style::default().fg(tick_colour(true)).bg(colour)),
                (false, false) if background_at == Some(i) => ("╎", Style::default().fg(tick_colour(false))),
                (true, false) => ("█", Style::default().fg(colour)),
                (false, false) => ("░", Style::default().fg(theme::palette().muted)),
            };
            Span::styled(symbol, style)
        })
        .collect()
}

/// What the gauge's text says. The estimate against the limit always; the other
/// fields whole or not at all, the most useful first while they fit
/// ([`BY_USE`]), so the text is never cut mid-word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Shown {
    /// The characters the token figure is for.
    request_chars: bool,
    tokens: bool,
    fixed: bool,
    background: bool,
    messages: bool,
    cache: bool,
}

/// The fields in the order they are kept when not all fit: what is going on (a
/// summary being written or ready, a cache miss) before figures.
const BY_USE: [fn(&mut Shown); 6] = [
    |shown| shown.background = true,
    |shown| shown.cache = true,
    |shown| shown.messages = true,
    |shown| shown.tokens = true,
    |shown| shown.fixed = true,
    |shown| shown.request_chars = true,
];

fn details(status: &ContextStatus, shown: Shown, writing: Option<&str>) -> Vec<Span<'static>> {
    let percent = status.estimate * 100 / status.limit.max(1);
    let colour = zone_colour(zone(status));
    let mut spans = vec![Span::styled(
        format!(
            "{} / {} chars ({percent}%)",
            short_count(status.estimate),
            short_count(status.limit)
        ),
        Style::default().fg(colour).add_modifier(Modifier::BOLD),
    )];
    if shown.fixed {
        spans.push(Span::styled(
            format!(" · +{} fixed", short_count(status.fixed)),
            Style::default().fg(theme::palette().soft),
        ));
    }
    if shown.messages {
        let messages_colour = if status.messages > status.snip_max_messages {
            theme::palette().failure
        } else {
            theme::palette().soft
        };
        spans.push(Span::styled(
            format!(" · {}/{} msgs", status.messages, status.snip_max_messages),
            Style::default().fg(messages_colour),
        ));
    }
    if let Some(background) = status.background.filter(|_| shown.background) {
        let (text, colour) = if background.ready {
            (
                format!(
                    " · summary ready (from {}%; /summary reviews it)",
                    background.started_at_percent
                ),
                theme::palette().success,
            )
        } else {
            (
                match writing {
                    Some(progress) => format!(" · summarising since {}% ({progress})", background.started_at_percent),
                    None => format!(" · summarising since {}%", background.started_at_percent),
                },
                theme::palette().soft,
            )
        };
        spans.push(Span::styled(text, Style::default().fg(colour)));
    }
    if let Some(figure) = status.tokens.as_ref().filter(|_| shown.tokens) {
        spans.push(Span::styled(
            format!(" · {}", token_text(figure, shown.request_chars)),
            Style::default().fg(theme::palette().soft),
        ));
    }
    if let Some(report) = status.cache_missed.as_ref().filter(|_| shown.cache) {
        spans.push(Span::styled(
            format!(" · {}", report.short()),
            Style::default().fg(theme::palette().attention),
        ));
    }
    spans
}

/// The most of the text that fits `width` columns: each field, most useful first,
/// kept when it still fits.
fn fitted_details(status: &ContextStatus, width: usize, writing: Option<&str>) -> Vec<Span<'static>> {
    let mut shown = Shown::default();
    for keep in BY_USE {
        let mut more = shown;
        keep(&mut more);
        if width_of(&details(status, more, writing)) <= width {
            shown = more;
        }
    }
    details(status, shown, writing)
}

fn width_of(spans: &[Span]) -> usize {
    use unicode_width::UnicodeWidthStr;
    spans.iter().map(|span| span.content.width()).sum()
}

/// The fewest cells the bar keeps, however narrow the terminal: enough to read how
/// full it is and see both ticks apart.
const MIN_BAR: usize = 20;

/// A token figure as the gauge and `/context` say it: `9.1k of 200.0k tokens (last
/// call, 36.4k chars) · 4.0 chars/token`, with `≈` when it is an estimate;
/// `with_chars` names the characters of the request the tokens are for.
pub fn token_text(figure: &TokenFigure, with_chars: bool) -> String {
    let (approx, basis, joint) = match figure.basis {
        TokenBasis::Reported => ("", "last call", ", "),
        TokenBasis::DemoCount => ("", "demo count", " of "),
        TokenBasis::Estimated => ("≈", "estimated", " for "),
        TokenBasis::Counted => ("", "server's count", ", "),
    };
    let chars = if with_chars {
        format!("{joint}{} chars", short_count(figure.request_chars))
    } else {
        String::new()
    };
    format!(
        "{approx}{} of {} tokens ({basis}{chars}) · {:.1} chars/token",
        short_count(figure.tokens as usize),
        short_count(figure.window_tokens as usize),
        figure.chars_per_token
    )
}

/// `writing`: how far a summary being written in the background is, when one is.
pub fn render(frame: &mut Frame<'_>, area: Rect, status: Option<&ContextStatus>, writing: Option<&str>) {
    let Some(status) = status else {
        frame.render_widget(
            Paragraph::new(Span::styled(
                "context: waiting for the agent…",
                Style::default().fg(theme::palette().muted),
            )),
            area,
        );
        return;
    };
    let label = Span::styled(" context ", Style::default().fg(theme::palette().soft));
    let narrow = area.width < 90;
    let width = usize::from(area.width);
    if area.height >= 2 && !narrow {
        let mut first = vec![label];
        first.extend(bar(status, width - 10));
        // Always under the bar, so the figures stay where the eye left them (they
        // jumped to the left edge when that showed more).
        let indent = "          ";
        let mut second = vec![Span::raw(indent)];
        second.extend(fitted_details(status, width - indent.len(), writing));
        frame.render_widget(Paragraph::new(vec![Line::from(first), Line::from(second)]), area);
    } else {
        let details = fitted_details(status, width.saturating_sub(MIN_BAR + 1), writing);
        let bar_width = width.saturating_sub(width_of(&details) + 1).max(3);
        let mut line = bar(status, bar_width);
        line.push(Span::raw(" "));
        line.extend(details);
        frame.render_widget(Paragraph::new(Line::from(line)), area);
    }
}
