//! The lines of `/context` about the session's compactions: the prompt cache's
//! misses, whether the summaries held (the health line), and the list of compactions.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::theme;
use crate::compact::short_count;
use crate::protocol::CallPoint;
use crate::state::Compaction;

/// Compactions the list of them shows at once; PgUp and PgDn scroll by as many.
pub(super) const COMPACTION_ROWS: usize = 5;

/// Rows the view needs inside its border before it spends one on the health line.
pub(super) const HEALTH_FROM_ROWS: u16 = 30;

/// The prompt cache in one line, from the server's diagnostics: how many calls it
/// missed on, and why the newest miss happened. `None` when no call reported one.
pub fn cache_line(timeline: &[CallPoint]) -> Option<String> {
    let reported: Vec<(usize, &crate::protocol::CacheReport)> = timeline
        .iter()
        .enumerate()
        .filter_map(|(at, point)| Some((at + 1, point.cache.as_ref()?)))
        .filter(|(_, report)| report.missed())
        .collect();
    let &(call, newest) = reported.last()?;
    Some(format!(
        "cache: {} of {} not reused · newest, call {call}: {}",
        reported.len(),
        crate::compact::counted(timeline.len(), "call", "calls"),
        newest.detail()
    ))
}

/// Whether compaction pays off, in one line: how many changed the history, what they
/// freed on average, how many turns apart they came (the median), and whether the
/// summaries grow. `None` before any.
pub fn health_line(compactions: &[Compaction]) -> Option<String> {
    let standing: Vec<&Compaction> = compactions.iter().filter(|compaction| !compaction.undone).collect();
    if standing.is_empty() {
        return None;
    }
    let mut line = format!(
        "health: {}",
        crate::compact::counted(standing.len(), "compaction", "compactions")
    );
    let freed: Vec<i64> = standing.iter().filter_map(|compaction| compaction.freed).collect();
    if !freed.is_empty() {
        let mean = freed.iter().sum::<i64>() / i64::try_from(freed.len()).unwrap_or(1);
        let said = short_count(mean.unsigned_abs() as usize);
        line.push_str(&if mean >= 0 {
            format!(" · mean freed {said}")
        } else {
            format!(" · mean grew {said}")
        });
    }
    let median = |mut values: Vec<usize>| {
        values.sort_unstable();
        values.get(values.len() / 2).copied()
    };
    let turns = median(
        standing
            .iter()
            .filter_map(|compaction| compaction.turns_since_previous)
            .collect(),
    );
    let calls = median(
        standing
            .iter()
            .filter_map(|compaction| compaction.calls_since_previous)
            .collect(),
    );
    if let (Some(turns), Some(calls)) = (turns, calls) {
        line.push_str(&format!(
            " · median {} ({}) apart",
            crate::compact::counted(turns, "turn", "turns"),
            crate::compact::counted(calls, "model call", "model calls")
        ));
    }
    let summaries: Vec<usize> = standing
        .iter()
        .filter_map(|compaction| compaction.summary_chars)
        .collect();
    if summaries.len() >= 2 {
        let shown: Vec<String> = summaries
            .iter()
            .rev()
            .take(4)
            .rev()
            .map(|chars| short_count(*chars))
            .collect();
        let (first, last) = (summaries[0], summaries[summaries.len() - 1]);
        let trend = if last > first + first / 10 {
            "growing"
        } else if last + last / 10 < first {
            "shrinking"
        } else {
            "steady"
        };
        line.push_str(&format!(" · summaries {} ({trend})", shown.join(" → ")));
    }
    Some(line)
}

/// The session's compactions, newest first, `rows` of them from the `scrolled`-th:
/// a heading that says which, then a line each (`#12 ◆ micro_compact 52.0k → 38.0k`),
/// the undone ones dim with a hollow mark.
pub(super) fn compaction_lines(
    compactions: &[Compaction],
    health: Option<String>,
    scrolled: usize,
    rows: usize,
) -> Vec<Line<'static>> {
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
    if let Some(health) = health {
        lines.push(Line::from(Span::styled(health, Style::default().fg(palette.soft))));
    }
    for (number, compaction) in compactions.iter().enumerate().rev().skip(scrolled).take(rows) {
        let mut text = format!(
            "#{} {} {} → {}",
            number + 1,
            compaction.stage,
            short_count(compaction.chars_before),
            short_count(compaction.chars_after)
        );
        if let Some(retention) = &compaction.retention {
            text.push_str(" · ");
            text.push_str(retention);
        }
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
