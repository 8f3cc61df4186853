//! A compaction marker in the chat: its stage's line, the summary, the files as
//! links and, expanded, the receipt; and what `/compact --preview` shows.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::chat::Look;
use super::markdown;
use super::state::MarkerRun;
use super::theme;
use crate::compact::{StageEvent, short_count};
use unicode_width::UnicodeWidthStr;

pub fn marker_style() -> Style {
    Style::default()
        .fg(theme::palette().compaction)
        .add_modifier(Modifier::BOLD)
}

/// Summary lines shown under a collapsed marker.
const SUMMARY_PREVIEW_LINES: usize = 3;
/// Lines of a summary's index an expanded marker shows.
const INDEX_LINES_SHOWN: usize = 12;
/// Receipt items shown under an expanded marker; the rest are counted.
const RECEIPT_ITEMS_SHOWN: usize = 40;

/// A marker: its stage's line (with `×N` when later firings folded into it; selected,
/// it lists each of them), the summary a summarising stage wrote (its first lines, all
/// of them when expanded), then every firing's files as numbered links; expanded,
/// the receipt: why it ran, how long it took, and each item with a link to its text.
pub(super) fn marker_lines(
    marker: &MarkerRun,
    width: usize,
    look: Look,
    link_of_line: &mut Vec<Option<String>>,
) -> Vec<Line<'static>> {
    let run = marker.events.as_slice();
    let Some(newest) = run.last() else {
        return Vec::new();
    };
    let soft = Style::default().fg(theme::palette().soft);
    let muted = Style::default().fg(theme::palette().muted);
    let mut lines = headline_lines(marker, look, width);
    summary_lines(newest, look, width, &mut lines);
    if let Some(loss) = &newest.loss
        && let (Some(retention), Some((kept, found))) = (loss.retention_line(), loss.retained())
    {
        let (mark, colour) = retention_mark(kept, found);
        lines.extend(markdown::wrap(
            &[(retention, soft)],
            width,
            Span::styled(format!("  {mark} "), Style::default().fg(colour)),
            "    ",
        ));
    }
    if let Some(report) = &marker.cache_miss {
        lines.extend(markdown::wrap(
            &[(
                format!("the next call's {}", report.line()),
                Style::default().fg(theme::palette().attention),
            )],
            width,
            Span::styled("  $ ", muted),
            "    ",
        ));
    }
    missing_lines(newest, look, width, &mut lines, link_of_line);
    link_of_line.resize(lines.len(), None);
    let link = Style::default()
        .fg(theme::palette().link)
        .add_modifier(Modifier::UNDERLINED);
    for (n, path) in marker.paths().into_iter().enumerate() {
        let wrapped = markdown::wrap(
            &markdown::path_segments(&path, link, width.saturating_sub(6)),
            width,
            Span::styled(format!("  {} ↳ ", n + 1), muted),
            "      ",
        );
        link_of_line.extend(std::iter::repeat_n(Some(path), wrapped.len()));
        lines.extend(wrapped);
    }
    if look.expanded {
        receipt_lines(newest, width, &mut lines, link_of_line);
    }
    lines
}

/// The marker's headline (its stage's line, `×N` for a run), and selected, each firing
/// of the run.
fn headline_lines(marker: &MarkerRun, look: Look, width: usize) -> Vec<Line<'static>> {
    let run = marker.events.as_slice();
    let Some(newest) = run.last() else {
        return Vec::new();
    };
    let (base, symbol) = if newest.failed() {
        (
            Style::default()
                .fg(theme::palette().failure)
                .add_modifier(Modifier::BOLD),
            "✗ ",
        )
    } else if !run.is_empty() && marker.undone.len() == run.len() {
        // Undone: still there to read (and to redo from its receipt), drawn dim with
        // a hollow mark so it never reads as a stage in force.
        (Style::default().fg(theme::palette().muted), "◇ ")
    } else {
        (marker_style(), "◆ ")
    };
    let style = if look.selected {
        base.add_modifier(Modifier::REVERSED)
    } else {
        base
    };
    let hint = match (look.selected, look.expanded) {
        (true, false) => " · → receipt",
        _ => "",
    };
    let undone = match marker.undone.len() {
        0 => String::new(),
        n if n == run.len() => " (undone)".to_string(),
        n => format!(" ({n} of {} undone)", run.len()),
    };
    let headline = match run {
        [only] => format!("{}{undone}{hint}", only.summary_line()),
        [_, ..] => {
            let net = marker.net_chars_out();
            let direction = if net >= 0 { "out" } else { "more" };
            format!(
                "{} ×{} · {} chars {direction}{undone}{}",
                newest.stage,
                run.len(),
                short_count(net.unsigned_abs() as usize),
                if look.selected { hint } else { " · select to expand" }
            )
        }
        [] => String::new(),
    };
    let soft = Style::default().fg(theme::palette().soft);
    let muted = Style::default().fg(theme::palette().muted);
    let mut lines = markdown::wrap(&[(headline, style)], width, Span::styled(symbol, style), "  ");
    if look.selected && run.len() > 1 {
        for (at, event) in run.iter().enumerate() {
            let undone = if marker.is_undone(at) { " (undone)" } else { "" };
            lines.extend(markdown::wrap(
                &[(format!("{}{undone}", event.summary_line()), soft)],
                width,
                Span::styled("  · ", muted),
                "    ",
            ));
        }
    }
    lines
}

/// What a summarising stage wrote: the summary's first lines (all of them expanded),
/// who wrote it, expanded the index kept with it, and whether it grew.
fn summary_lines(newest: &StageEvent, look: Look, width: usize, lines: &mut Vec<Line<'static>>) {
    let soft = Style::default().fg(theme::palette().soft);
    let muted = Style::default().fg(theme::palette().muted);
    if let Some(summary) = &newest.summary {
        let summary_lines: Vec<&str> = summary.lines().filter(|l| !l.trim().is_empty()).collect();
        let shown = if look.expanded {
            summary_lines.len()
        } else {
            SUMMARY_PREVIEW_LINES
        };
        for line in summary_lines.iter().take(shown) {
            lines.extend(markdown::wrap(
                &[(line.to_string(), soft)],
                width,
                Span::styled("  │ ", muted),
                "  │ ",
            ));
        }
        if summary_lines.len() > shown {
            lines.push(Line::from(Span::styled(
                format!(
                    "  │ … {} (→ shows the whole summary)",
                    crate::compact::counted(summary_lines.len() - shown, "more line", "more lines")
                ),
                muted,
            )));
        }
    }
    if newest.summary_note.as_ref().is_some_and(|note| note.by_server) {
        lines.extend(markdown::wrap(
            &[(
                "written by the server: its compaction block goes first in the history as it wrote it (not editable; undo puts the history back)".to_string(),
                soft,
            )],
            width,
            Span::styled("  ", muted),
            "  ",
        ));
    }
    if look.expanded
        && let Some(note) = &newest.summary_note
        && !note.index.is_empty()
    {
        // The heading is for the model; the user reads the entries.
        let entries: Vec<&str> = note.index.lines().skip(1).collect();
        lines.push(Line::from(Span::styled(
            format!(
                "  index kept by scratchpad ({}):",
                crate::compact::counted(
                    entries.iter().filter(|line| line.starts_with("- ")).count(),
                    "entry",
                    "entries"
                )
            ),
            soft,
        )));
        for entry in entries.iter().take(INDEX_LINES_SHOWN) {
            lines.extend(markdown::wrap(
                &[(entry.to_string(), soft)],
                width,
                Span::styled("  ┆ ", muted),
                "  ┆   ",
            ));
        }
        if entries.len() > INDEX_LINES_SHOWN {
            lines.push(Line::from(Span::styled(
                format!(
                    "  ┆ … {} more lines (in the [Compacted] message)",
                    entries.len() - INDEX_LINES_SHOWN
                ),
                muted,
            )));
        }
    }
    if let (Some(note), Some(summary)) = (&newest.summary_note, &newest.summary)
        && let Some(previous) = note.previous_summary_chars
    {
        let chars = summary.chars().count();
        let share = note.summary_percent_of_limit;
        let trend = if chars > previous { "grew" } else { "did not grow" };
        let mut said = format!(
            "summary {} → {} chars ({trend})",
            short_count(previous),
            short_count(chars)
        );
        let style = if chars > previous && share > crate::compact::compact_history::SUMMARY_GROWTH_PERCENT {
            said.push_str(&format!("; it takes {share}% of the limit"));
            Style::default().fg(theme::palette().attention)
        } else {
            soft
        };
        lines.extend(markdown::wrap(&[(said, style)], width, Span::styled("  ", muted), "  "));
    }
}

/// What the summary and the index left out: a count, and expanded each thing with
/// where it is, linked to the record it was found in.
fn missing_lines(
    newest: &StageEvent,
    look: Look,
    width: usize,
    lines: &mut Vec<Line<'static>>,
    link_of_line: &mut Vec<Option<String>>,
) {
    let soft = Style::default().fg(theme::palette().soft);
    let muted = Style::default().fg(theme::palette().muted);
    if let Some(loss) = newest.loss.as_ref().filter(|loss| loss.total > 0) {
        let attention = Style::default().fg(theme::palette().attention);
        let count = format!("not in the summary or the index ({})", loss.total);
        if look.expanded {
            lines.push(Line::from(Span::styled(format!("  ! {count}:"), attention)));
            link_of_line.resize(lines.len(), None);
            for missing in &loss.missing {
                let wrapped = markdown::wrap(
                    &[(
                        format!(
                            "{} · {} · {}",
                            missing.kind.label(),
                            missing.text,
                            where_missing(missing, newest.summary_note.as_deref())
                        ),
                        soft,
                    )],
                    width,
                    Span::styled("    - ", muted),
                    "      ",
                );
                link_of_line.extend(std::iter::repeat_n(newest.archived.clone(), wrapped.len()));
                lines.extend(wrapped);
            }
            if loss.total > loss.missing.len() {
                lines.push(Line::from(Span::styled(
                    format!("    … and {} more", loss.total - loss.missing.len()),
                    muted,
                )));
            }
        } else {
            lines.push(Line::from(Span::styled(
                format!("  ! {count} · → lists them"),
                attention,
            )));
        }
    }
}

/// What a change of the cached prefix (a compaction, an edited instruction file) cost
/// the next call.
pub(super) fn cache_cost(rewritten: u64) -> String {
    format!(
        "cache: the next call wrote {} cached prompt tokens again",
        short_count(rewritten as usize)
    )
}

/// `/compact --preview`: what each stage would do, with its receipt; nothing was written.
pub(super) fn preview_lines(
    events: &[StageEvent],
    width: usize,
    link_of_line: &mut Vec<Option<String>>,
) -> Vec<Line<'static>> {
    let soft = Style::default().fg(theme::palette().soft);
    let heading = Style::default()
        .fg(theme::palette().compaction)
        .add_modifier(Modifier::ITALIC);
    let mut lines = markdown::wrap(
        &[(
            "preview of /compact · nothing was written and no model was asked".to_string(),
            heading,
        )],
        width,
        Span::styled("◇ ", heading),
        "  ",
    );
    for event in events {
        lines.extend(markdown::wrap(
            &[(event.summary_line(), soft)],
            width,
            Span::raw("  "),
            "  ",
        ));
        link_of_line.resize(lines.len(), None);
        receipt_lines(event, width, &mut lines, link_of_line);
    }
    // The paths a preview names were not written: nothing to open.
    link_of_line.clear();
    lines
}

/// The receipt under an expanded marker.
fn receipt_lines(
    event: &StageEvent,
    width: usize,
    lines: &mut Vec<Line<'static>>,
    link_of_line: &mut Vec<Option<String>>,
) {
    let soft = Style::default().fg(theme::palette().soft);
    let muted = Style::default().fg(theme::palette().muted);
    let link = Style::default()
        .fg(theme::palette().link)
        .add_modifier(Modifier::UNDERLINED);
    let mut push = |new: Vec<Line<'static>>, target: Option<String>, lines: &mut Vec<Line<'static>>| {
        link_of_line.resize(lines.len(), None);
        link_of_line.extend(std::iter::repeat_n(target, new.len()));
        lines.extend(new);
    };
    let why = if event.trigger.is_empty() {
        format!("took {} ms", event.took_ms)
    } else {
        format!("why: {} · took {} ms", event.trigger, event.took_ms)
    };
    push(
        markdown::wrap(&[(why, soft)], width, Span::styled("  ", muted), "  "),
        None,
        lines,
    );
    if !event.kept_verbatim.is_empty() {
        let kept = format!("kept verbatim: {}", event.kept_verbatim.join(", "));
        push(
            markdown::wrap(&[(kept, soft)], width, Span::styled("  ", muted), "  "),
            None,
            lines,
        );
    }
    if let Some(note) = &event.summary_note {
        let mut said = format!("summarised from the whole record: {}", note.path);
        if note.index_cut > 0 {
            said.push_str(&format!(
                " · the index cut {} to fit",
                crate::compact::counted(note.index_cut, "entry", "entries")
            ));
        }
        push(
            markdown::wrap(&[(said, soft)], width, Span::styled("  ", muted), "  "),
            Some(note.path.clone()),
            lines,
        );
        if note.model_summary.is_some() {
            push(
                markdown::wrap(
                    &[(
                        "you edited this summary in review; the model's own text is kept in the journal".to_string(),
                        soft,
                    )],
                    width,
                    Span::styled("  ✎ ", muted),
                    "    ",
                ),
                None,
                lines,
            );
        }
        let attention = Style::default().fg(theme::palette().attention);
        for line in &note.left_out {
            push(
                markdown::wrap(
                    &[(line.clone(), attention)],
                    width,
                    Span::styled("  ! ", attention),
                    "    ",
                ),
                None,
                lines,
            );
        }
    }
    if let Some(rewritten) = event.cache_rewritten {
        let cost = cache_cost(rewritten);
        push(
            markdown::wrap(&[(cost, soft)], width, Span::styled("  ", muted), "  "),
            None,
            lines,
        );
    }
    let heading = format!(
        "receipt: {} left or shrank",
        crate::compact::counted(event.items.len(), "item", "items")
    );
    push(
        vec![Line::from(Span::styled(format!("  {heading}"), soft))],
        None,
        lines,
    );
    for item in event.items.iter().take(RECEIPT_ITEMS_SHOWN) {
        let role = match item.role {
            crate::message::Role::User => "user",
            crate::message::Role::Assistant => "assistant",
        };
        let sizes = if item.chars_after == 0 {
            format!("{} chars", short_count(item.chars_before))
        } else {
            format!("{} → {}", short_count(item.chars_before), short_count(item.chars_after))
        };
        let described = format!("#{} {role} · {} · {sizes}", item.position, item.what);
        // Items in the stage's transcript link to it without repeating its path.
        let saved = item
            .saved
            .as_ref()
            .filter(|saved| event.archived.as_ref() != Some(*saved));
        let one_line = saved.is_some_and(|saved| 4 + described.width() + 3 + saved.width() <= width);
        let mut segments = vec![(described, soft)];
        if let Some(saved) = saved.filter(|_| one_line) {
            segments.push((" ↳ ".to_string(), muted));
            segments.push((saved.clone(), link));
        }
        let wrapped = markdown::wrap(&segments, width, Span::styled("    ", muted), "      ");
        push(wrapped, item.saved.clone(), lines);
        // A path that does not fit after its description gets a line of its own, so it
        // is never cut in two where a line would hold it whole.
        if let Some(saved) = saved.filter(|_| !one_line) {
            let wrapped = markdown::wrap(
                &markdown::path_segments(saved, link, width.saturating_sub(8)),
                width,
                Span::styled("      ↳ ", muted),
                "        ",
            );
            push(wrapped, item.saved.clone(), lines);
        }
    }
    if event.items.len() > RECEIPT_ITEMS_SHOWN {
        let more = &event.items[RECEIPT_ITEMS_SHOWN..];
        let chars: usize = more.iter().map(|item| item.chars_before).sum();
        let line = format!(
            "    … and {} more ({} chars), in the transcript",
            more.len(),
            short_count(chars)
        );
        push(
            vec![Line::from(Span::styled(line, muted))],
            event.archived.clone(),
            lines,
        );
    }
}
/// Where a fact a summary left out is: its line in the record the marker links
/// (`record line 12`), else its pointer, else its position among the summarised.
fn where_missing(missing: &crate::compact::loss::Missing, note: Option<&crate::compact::SummaryNote>) -> String {
    let Some(at) = &missing.at else {
        return format!("#{}", missing.position);
    };
    note.and_then(|note| at.strip_prefix(note.path.as_str())?.strip_prefix(':'))
        .map_or_else(|| at.clone(), |line| format!("record line {line}"))
}

/// The mark and colour of a retention figure: they follow the figure, so a summary
/// that kept a sixth of what its record held is never a green tick.
pub fn retention_mark(kept: usize, found: usize) -> (&'static str, ratatui::style::Color) {
    let palette = theme::palette();
    match kept * 100 / found.max(1) {
        90.. => ("✓", palette.success),
        50..=89 => ("~", palette.attention),
        _ => ("!", palette.failure),
    }
}
