//! The chat pane: prompts, streamed markdown, compaction markers with their links.
//! Each entry is wrapped once per width and revision and cached; a frame copies only
//! the visible lines.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::hyperlinks::Hyperlink;
use super::markdown;
use super::state::ChatEntry;
use super::theme;
use crate::compact::{StageEvent, short_count};
use unicode_width::UnicodeWidthStr;

#[derive(Default)]
pub struct ChatView {
    width: u16,
    cache: Vec<Option<Rendered>>,
    /// Lines scrolled up from the bottom; 0 follows the stream.
    pub scroll_up: usize,
    /// Rows of the last frame that show a link: (screen row, path).
    pub links: Vec<(u16, String)>,
    /// Rows of the last frame that show a marker line: (screen row, entry index).
    pub marker_rows: Vec<(u16, usize)>,
    /// Where the last frame drew each piece of a link, for OSC 8 hyperlinks.
    pub hyperlinks: Vec<Hyperlink>,
    total_lines: usize,
    page: usize,
    /// The selection the view last scrolled to: a new selection is brought into view.
    shown_selection: Option<usize>,
}

/// One entry wrapped at the current width: its lines and, per line, the index of the
/// link (marker path) it shows, so a click on any row of a wrapped path opens it.
struct Rendered {
    revision: u64,
    selected: bool,
    lines: Vec<Line<'static>>,
    link_of_line: Vec<Option<usize>>,
}

pub fn marker_style() -> Style {
    Style::default().fg(theme::COMPACTION).add_modifier(Modifier::BOLD)
}

fn entry_lines(entry: &ChatEntry, width: usize, selected: bool) -> (Vec<Line<'static>>, Vec<Option<usize>>) {
    let mut link_of_line = Vec::new();
    let mut lines = match entry {
        // Each line the user typed (or pasted) stays a line of its own.
        ChatEntry::User(text) => text
            .split('\n')
            .enumerate()
            .flat_map(|(at, line)| {
                let prefix = if at == 0 {
                    Span::styled("› ", Style::default().fg(theme::ACCENT).add_modifier(Modifier::BOLD))
                } else {
                    Span::raw("  ")
                };
                markdown::wrap(
                    &[(line.to_string(), Style::default().fg(theme::TEXT))],
                    width,
                    prefix,
                    "  ",
                )
            })
            .collect(),
        ChatEntry::Assistant { text, streaming } => {
            let mut lines = markdown::render(text, width, Style::default());
            if *streaming && let Some(last) = lines.last_mut() {
                last.spans.push(Span::styled("▍", Style::default().fg(theme::SOFT)));
            }
            lines
        }
        ChatEntry::Notice(text) => markdown::wrap(
            &[(
                text.clone(),
                Style::default().fg(theme::MUTED).add_modifier(Modifier::ITALIC),
            )],
            width,
            Span::styled("· ", Style::default().fg(theme::MUTED)),
            "  ",
        ),
        ChatEntry::Marker(run) => marker_lines(run, width, selected, &mut link_of_line),
    };
    lines.push(Line::from(""));
    link_of_line.resize(lines.len(), None);
    (lines, link_of_line)
}

/// A marker: its stage's line (with `×N` when later firings folded into it; selected,
/// it lists each of them), then the newest firing's files as numbered links.
fn marker_lines(
    run: &[StageEvent],
    width: usize,
    selected: bool,
    link_of_line: &mut Vec<Option<usize>>,
) -> Vec<Line<'static>> {
    let Some(newest) = run.last() else {
        return Vec::new();
    };
    let (base, symbol) = if newest.failed() {
        (Style::default().fg(theme::FAILURE).add_modifier(Modifier::BOLD), "✗ ")
    } else {
        (marker_style(), "◆ ")
    };
    let style = if selected {
        base.add_modifier(Modifier::REVERSED)
    } else {
        base
    };
    let headline = match run {
        [only] => only.summary_line(),
        [first, ..] => format!(
            "{} ×{} · {} → {} chars{}",
            newest.stage,
            run.len(),
            short_count(first.chars_before),
            short_count(newest.chars_after),
            if selected { "" } else { " · select to expand" }
        ),
        [] => String::new(),
    };
    let mut lines = markdown::wrap(&[(headline, style)], width, Span::styled(symbol, style), "  ");
    if selected && run.len() > 1 {
        for event in run {
            lines.extend(markdown::wrap(
                &[(event.summary_line(), Style::default().fg(theme::SOFT))],
                width,
                Span::styled("  · ", Style::default().fg(theme::MUTED)),
                "    ",
            ));
        }
    }
    link_of_line.resize(lines.len(), None);
    for (n, path) in newest.paths.iter().enumerate() {
        let link = Style::default().fg(theme::LINK).add_modifier(Modifier::UNDERLINED);
        let wrapped = markdown::wrap(
            &markdown::path_segments(path, link),
            width,
            Span::styled(format!("  {} ↳ ", n + 1), Style::default().fg(theme::MUTED)),
            "      ",
        );
        link_of_line.extend(std::iter::repeat_n(Some(n), wrapped.len()));
        lines.extend(wrapped);
    }
    lines
}

impl ChatView {
    pub fn scroll(&mut self, delta: isize) {
        let max = self.total_lines.saturating_sub(self.page);
        self.scroll_up = (self.scroll_up as isize + delta).clamp(0, max as isize) as usize;
    }

    pub fn page(&self) -> usize {
        self.page.max(1)
    }

    /// Scroll the least that shows lines `start..start + height` (their start, when
    /// they are taller than the page).
    fn bring_into_view(&mut self, start: usize, height: usize) {
        let bottom = self.total_lines.saturating_sub(self.scroll_up);
        let top = bottom.saturating_sub(self.page);
        let end = start + height.min(self.page);
        let new_bottom = if start < top {
            start + self.page
        } else if end > bottom {
            end
        } else {
            return;
        };
        self.scroll_up = self.total_lines.saturating_sub(new_bottom.min(self.total_lines));
    }

    pub fn follow(&mut self) {
        self.scroll_up = 0;
    }

    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        entries: &[ChatEntry],
        revisions: &[u64],
        selected: Option<usize>,
        focused: bool,
    ) {
        let border = if focused { theme::ACCENT } else { theme::MUTED };
        let title = if self.scroll_up > 0 {
            format!(" chat · ↑{} lines (End to follow) ", self.scroll_up)
        } else {
            " chat ".to_string()
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(border))
            .title(title);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let width = inner.width.max(1);
        if width != self.width {
            self.width = width;
            self.cache.clear();
        }
        self.cache.resize_with(entries.len(), || None);
        for (at, entry) in entries.iter().enumerate() {
            let revision = revisions.get(at).copied().unwrap_or(0);
            let is_selected = selected == Some(at);
            let fresh = matches!(&self.cache[at], Some(cached) if cached.revision == revision && cached.selected == is_selected);
            if !fresh {
                let (lines, link_of_line) = entry_lines(entry, width as usize, is_selected);
                self.cache[at] = Some(Rendered {
                    revision,
                    selected: is_selected,
                    lines,
                    link_of_line,
                });
            }
        }
        let heights: Vec<usize> = self
            .cache
            .iter()
            .map(|c| c.as_ref().map_or(0, |r| r.lines.len()))
            .collect();
        let total: usize = heights.iter().sum();
        // Scrolled up, the view stays on what the user is reading while the stream grows
        // below it; at the bottom it follows.
        if self.scroll_up > 0 && total > self.total_lines {
            self.scroll_up += total - self.total_lines;
        }
        self.total_lines = total;
        self.page = inner.height as usize;
        self.scroll_up = self.scroll_up.min(self.total_lines.saturating_sub(self.page));
        if selected != self.shown_selection {
            self.shown_selection = selected;
            if let Some(at) = selected.filter(|&at| at < heights.len()) {
                self.bring_into_view(heights[..at].iter().sum(), heights[at]);
            }
        }
        // The window [top, top + page) in whole-chat line numbers.
        let bottom = self.total_lines.saturating_sub(self.scroll_up);
        let top = bottom.saturating_sub(self.page);
        let mut visible: Vec<Line<'static>> = Vec::with_capacity(self.page);
        self.links.clear();
        self.marker_rows.clear();
        self.hyperlinks.clear();
        let mut line_no = 0;
        for (at, height) in heights.iter().enumerate() {
            if line_no + height <= top {
                line_no += height;
                continue;
            }
            if line_no >= bottom {
                break;
            }
            let Some(rendered) = &self.cache[at] else { continue };
            let paths = entries[at].paths();
            for (k, line) in rendered.lines.iter().enumerate() {
                let global = line_no + k;
                if global < top || global >= bottom {
                    continue;
                }
                let row = inner.y + (global - top) as u16;
                if matches!(entries[at], ChatEntry::Marker(_)) {
                    self.marker_rows.push((row, at));
                    if let Some(path) = rendered.link_of_line[k].and_then(|n| paths.get(n)) {
                        self.links.push((row, path.clone()));
                        if let [prefix, shown @ ..] = line.spans.as_slice()
                            && let Some(first) = shown.first()
                        {
                            self.hyperlinks.push(Hyperlink {
                                row,
                                x: inner.x + prefix.content.width() as u16,
                                text: shown.iter().map(|span| span.content.as_ref()).collect(),
                                style: first.style,
                                path: path.clone(),
                            });
                        }
                    }
                }
                visible.push(line.clone());
            }
            line_no += height;
        }
        if entries.is_empty() {
            visible.push(Line::from(Span::styled(
                "Type a request and press Enter. ? shows the keys, / the commands.",
                Style::default().fg(theme::MUTED),
            )));
        }
        frame.render_widget(Paragraph::new(visible), inner);
    }
}
