//! The chat pane: prompts, streamed markdown, compaction markers with their links.
//! Each entry is wrapped once per width and revision and cached; a frame copies only
//! the visible lines.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::hyperlinks::Hyperlink;
use super::markdown;
use super::marker::{cache_cost, marker_lines, marker_style, preview_lines};
use super::state::{CallState, ChatEntry, ToolCall};
use super::theme;
use super::tools_pane;
use unicode_width::UnicodeWidthStr;

#[derive(Default)]
pub struct ChatView {
    width: u16,
    /// The palette the cached lines were coloured with.
    palette: Option<theme::Palette>,
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
    /// The marker last drawn with its receipt: opening or closing one keeps the
    /// selected marker where it was on screen.
    shown_expanded: Option<usize>,
    /// Whether the last frame drew tool calls in the chat.
    inline_tools: bool,
}

/// One entry wrapped at the current width: its lines and, per line, the index of the
/// link (marker path) it shows, so a click on any row of a wrapped path opens it.
struct Rendered {
    revision: u64,
    look: Look,
    lines: Vec<Line<'static>>,
    /// The path each line links to.
    link_of_line: Vec<Option<String>>,
}

/// What the chat shows: its entries with their revisions (a changed revision redraws
/// that entry), and the welcome for when there are none.
pub struct ChatContent<'a> {
    pub entries: &'a [ChatEntry],
    pub revisions: &'a [u64],
    pub welcome: &'a [Line<'static>],
    /// The tool calls the chat's tool entries name, drawn in the chat only when the
    /// tool pane does not fit (`inline_tools`); `tick` turns their spinners.
    pub tools: &'a [ToolCall],
    pub inline_tools: bool,
    pub tick: usize,
}

/// The marker the user selected, and the one shown with its receipt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarkerFocus {
    pub selected: Option<usize>,
    pub expanded: Option<usize>,
}

/// How an entry is drawn besides its content: selected, and (a marker) expanded into
/// its receipt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Look {
    pub selected: bool,
    pub expanded: bool,
    /// A request that opens the chat: nothing before it to summarise.
    pub opening: bool,
}

/// The tool calls to draw in the chat, when the pane does not fit, and the tick.
#[derive(Clone, Copy)]
struct InlineTools<'a> {
    calls: &'a [ToolCall],
    tick: usize,
}

fn entry_lines(
    entry: &ChatEntry,
    width: usize,
    look: Look,
    inline: Option<InlineTools<'_>>,
) -> (Vec<Line<'static>>, Vec<Option<String>>) {
    let mut link_of_line = Vec::new();
    if let ChatEntry::Tool(index) = entry {
        // One line each, with no blank line between: a run of calls reads as a list.
        let lines = match inline.and_then(|tools| Some((tools.calls.get(*index)?, tools.tick))) {
            Some((call, tick)) => {
                let lines = tools_pane::call_lines(call, width, tick, look.selected, look.expanded);
                link_of_line = vec![call.saved_path.clone(); lines.len()];
                lines
            }
            None => Vec::new(),
        };
        return (lines, link_of_line);
    }
    let mut lines = match entry {
        ChatEntry::Pasted { shown, full } => {
            let summarise = if look.opening {
                " · nothing before it to summarise"
            } else {
                " · s: summarise all before this"
            };
            let (text, hint) = match (look.expanded, look.selected) {
                (true, true) => (full, format!("  ← folds the paste again{summarise}")),
                (true, false) => (full, "  ← folds the paste again".to_string()),
                (false, true) => (shown, format!("  → shows the paste{summarise}")),
                (false, false) => (shown, String::new()),
            };
            let mut lines = request_lines(text, width, look.selected);
            if !hint.is_empty() {
                lines.push(Line::from(Span::styled(
                    hint,
                    Style::default().fg(theme::palette().muted),
                )));
            }
            lines
        }
        ChatEntry::User(text) => {
            let mut lines = request_lines(text, width, look.selected);
            if look.selected {
                let hint = if look.opening {
                    "  the first request: nothing before it to summarise"
                } else {
                    "  s: summarise all before this, keep this and the rest verbatim"
                };
                lines.push(Line::from(Span::styled(
                    hint,
                    Style::default().fg(theme::palette().muted),
                )));
            }
            lines
        }
        ChatEntry::Assistant { text, streaming } => {
            let mut lines = markdown::render(text, width, Style::default());
            if *streaming && let Some(last) = lines.last_mut() {
                last.spans
                    .push(Span::styled("▍", Style::default().fg(theme::palette().soft)));
            }
            lines
        }
        ChatEntry::Notice(text) => notice_lines(text, width),
        ChatEntry::Marker(marker) => marker_lines(marker, width, look, &mut link_of_line),
        ChatEntry::Preview(events) => preview_lines(events, width, &mut link_of_line),
        ChatEntry::Instructions(note) => instructions_lines(note, width, &mut link_of_line),
        ChatEntry::Tool(_) => Vec::new(),
    };
    lines.push(Line::from(""));
    link_of_line.resize(lines.len(), None);
    (lines, link_of_line)
}

/// A request as the chat shows it: each line the user typed (or pasted) a line of its
/// own, the first led by `› `; reversed while selected, as a selected marker is.
fn request_lines(text: &str, width: usize, selected: bool) -> Vec<Line<'static>> {
    let text_style = Style::default().fg(theme::palette().text);
    let text_style = if selected {
        text_style.add_modifier(Modifier::REVERSED)
    } else {
        text_style
    };
    text.split('\n')
        .enumerate()
        .flat_map(|(at, line)| {
            let prefix = if at == 0 {
                Span::styled(
                    "› ",
                    Style::default()
                        .fg(theme::palette().accent)
                        .add_modifier(Modifier::BOLD),
                )
            } else {
                Span::raw("  ")
            };
            markdown::wrap(&[(line.to_string(), text_style)], width, prefix, "  ")
        })
        .collect()
}

/// A notice as lines: each of its own lines wrapped on its own (a list stays a list),
/// the first led by `· `, the rest indented under it.
fn notice_lines(text: &str, width: usize) -> Vec<Line<'static>> {
    let muted = Style::default().fg(theme::palette().muted);
    let style = muted.add_modifier(Modifier::ITALIC);
    text.lines()
        .enumerate()
        .flat_map(|(at, line)| {
            let lead = if at == 0 { "· " } else { "  " };
            markdown::wrap(&[(line.to_string(), style)], width, Span::styled(lead, muted), "  ")
        })
        .collect()
}

/// The project's instruction files: one line naming each with its size (a link when
/// there is one file; a link line per file when there are more), what changed and
/// what that cost in cache, and each file left out or cut.
fn instructions_lines(
    note: &crate::protocol::InstructionsNote,
    width: usize,
    link_of_line: &mut Vec<Option<String>>,
) -> Vec<Line<'static>> {
    let muted = Style::default().fg(theme::palette().muted);
    let soft = Style::default().fg(theme::palette().soft);
    let link = Style::default()
        .fg(theme::palette().link)
        .add_modifier(Modifier::UNDERLINED);
    let sized = |row: &crate::protocol::InstructionRow| format!(" {}", row.size());
    let mut lines = Vec::new();
    let mut push = |wrapped: Vec<Line<'static>>, path: Option<&str>, lines: &mut Vec<Line<'static>>| {
        link_of_line.resize(lines.len(), None);
        link_of_line.extend(std::iter::repeat_n(path.map(str::to_string), wrapped.len()));
        lines.extend(wrapped);
    };
    if note.changes.is_empty() {
        match note.files.as_slice() {
            [] => {}
            [only] => {
                let mut pieces = markdown::path_segments(&only.path, link, width.saturating_sub(18));
                pieces.push((sized(only), muted));
                let wrapped = markdown::wrap(&pieces, width, Span::styled("· instructions: ", muted), "  ");
                push(wrapped, Some(&only.path), &mut lines);
            }
            files => {
                push(
                    markdown::wrap(&[(note.headline(), muted)], width, Span::styled("· ", muted), "  "),
                    None,
                    &mut lines,
                );
                for row in files {
                    let pieces = markdown::path_segments(&row.path, link, width.saturating_sub(6));
                    let wrapped = markdown::wrap(&pieces, width, Span::styled("  ↳ ", muted), "    ");
                    push(wrapped, Some(&row.path), &mut lines);
                }
            }
        }
    } else {
        let style = marker_style();
        push(
            markdown::wrap(&[(note.headline(), style)], width, Span::styled("◆ ", style), "  "),
            None,
            &mut lines,
        );
        for row in &note.files {
            let mut pieces = markdown::path_segments(&row.path, link, width.saturating_sub(14));
            pieces.push((sized(row), muted));
            let wrapped = markdown::wrap(&pieces, width, Span::styled("  ↳ ", muted), "    ");
            push(wrapped, Some(&row.path), &mut lines);
        }
        if let Some(rewritten) = note.cache_rewritten {
            let cost = cache_cost(rewritten);
            push(
                markdown::wrap(&[(cost, soft)], width, Span::styled("  ", muted), "  "),
                None,
                &mut lines,
            );
        }
        if let Some(report) = &note.cache_miss {
            let said = format!("the next call's {}", report.line());
            push(
                markdown::wrap(
                    &[(said, Style::default().fg(theme::palette().attention))],
                    width,
                    Span::styled("  $ ", muted),
                    "    ",
                ),
                None,
                &mut lines,
            );
        }
    }
    let attention = Style::default().fg(theme::palette().attention);
    for problem in &note.problems {
        push(
            markdown::wrap(
                &[(problem.clone(), attention)],
                width,
                Span::styled("  ! ", attention),
                "    ",
            ),
            None,
            &mut lines,
        );
    }
    lines
}

impl ChatView {
    /// The screen row of the first line of the newest marker the last frame showed.
    pub fn newest_marker_row(&self) -> Option<u16> {
        let &(_, newest) = self.marker_rows.iter().max_by_key(|&&(_, entry)| entry)?;
        self.marker_rows
            .iter()
            .filter(|&&(_, entry)| entry == newest)
            .map(|&(row, _)| row)
            .min()
    }

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

    /// After an entry at `start` changed height: its first line stays on screen row
    /// `row` (where it was), or, if what it now shows runs past the bottom, moves up
    /// to show more of it, never above the top. Not on screen before: brought in.
    fn keep_in_place(&mut self, start: usize, height: usize, row: Option<usize>) {
        let Some(row) = row else {
            self.bring_into_view(start, height);
            return;
        };
        let page = self.page.max(1);
        let mut top = start.saturating_sub(row.min(page - 1));
        if start + height > top + page {
            top = start.min((start + height).saturating_sub(page));
        }
        self.scroll_up = self.total_lines.saturating_sub(top + page);
    }

    pub fn follow(&mut self) {
        self.scroll_up = 0;
    }

    pub fn render(
        &mut self,
        frame: &mut Frame<'_>,
        area: Rect,
        content: ChatContent<'_>,
        markers: MarkerFocus,
        focused: bool,
    ) {
        let ChatContent {
            entries,
            revisions,
            welcome,
            tools,
            inline_tools,
            tick,
        } = content;
        let inline = inline_tools.then_some(InlineTools { calls: tools, tick });
        let MarkerFocus { selected, expanded } = markers;
        let border = if focused {
            theme::palette().accent
        } else {
            theme::palette().muted
        };
        let title = if self.scroll_up > 0 {
            format!(" chat · ↑{} lines (End to follow) ", self.scroll_up)
        } else {
            " chat ".to_string()
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(border))
            .title(title);
        let mut inner = block.inner(area);
        frame.render_widget(block, area);
        if entries.is_empty() {
            frame.render_widget(Paragraph::new(welcome.to_vec()).wrap(Wrap { trim: false }), inner);
            return;
        }
        if !welcome.is_empty() {
            inner = render_welcome(frame, inner, welcome);
        }
        let width = inner.width.max(1);
        let palette = theme::palette();
        if width != self.width || self.palette != Some(palette) || inline_tools != self.inline_tools {
            self.width = width;
            self.palette = Some(palette);
            self.inline_tools = inline_tools;
            self.cache.clear();
        }
        self.cache.resize_with(entries.len(), || None);
        // A receipt opens or closes: note the screen row of the marker it belongs to
        // (the selected one) before its height changes.
        let anchor = (expanded != self.shown_expanded)
            .then(|| selected.or(expanded).or(self.shown_expanded))
            .flatten()
            .filter(|&at| at < entries.len());
        let anchor_row = anchor.and_then(|at| {
            let start: usize = self.cache[..at]
                .iter()
                .map(|c| c.as_ref().map_or(0, |r| r.lines.len()))
                .sum();
            let bottom = self.total_lines.saturating_sub(self.scroll_up);
            let top = bottom.saturating_sub(self.page);
            (self.cache[at].is_some() && (top..bottom).contains(&start)).then(|| start - top)
        });
        self.shown_expanded = expanded;
        let opening = crate::state::ChatEntry::opening_request(entries);
        for (at, entry) in entries.iter().enumerate() {
            let revision = revisions.get(at).copied().unwrap_or(0);
            let look = Look {
                selected: selected == Some(at),
                expanded: expanded == Some(at),
                opening: opening == Some(at),
            };
            // A running call's spinner and time move on every tick.
            let running = inline.is_some_and(|tools| {
                matches!(entry, ChatEntry::Tool(index)
                    if tools.calls.get(*index).is_some_and(|call| matches!(call.state, CallState::Running { .. })))
            });
            let fresh = !running
                && matches!(&self.cache[at], Some(cached) if cached.revision == revision && cached.look == look);
            if !fresh {
                let (lines, link_of_line) = entry_lines(entry, width as usize, look, inline);
                self.cache[at] = Some(Rendered {
                    revision,
                    look,
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
        if let Some(at) = anchor {
            self.keep_in_place(heights[..at].iter().sum(), heights[at], anchor_row);
        }
        // The window [top, top + page) in whole-chat line numbers.
        let bottom = self.total_lines.saturating_sub(self.scroll_up);
        let top = bottom.saturating_sub(self.page);
        let visible = self.visible_lines(entries, &heights, inner, top..bottom);
        frame.render_widget(Paragraph::new(visible), inner);
    }

    /// The lines of the chat in `window` (whole-chat line numbers) for the pane
    /// `inner`, noting on the way the rows of markers and of the paths they link.
    fn visible_lines(
        &mut self,
        entries: &[ChatEntry],
        heights: &[usize],
        inner: Rect,
        window: std::ops::Range<usize>,
    ) -> Vec<Line<'static>> {
        let (top, bottom) = (window.start, window.end);
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
            for (k, line) in rendered.lines.iter().enumerate() {
                let global = line_no + k;
                if global < top || global >= bottom {
                    continue;
                }
                let row = inner.y + (global - top) as u16;
                let is_marker = matches!(entries[at], ChatEntry::Marker(_));
                if is_marker {
                    self.marker_rows.push((row, at));
                }
                if (is_marker || matches!(entries[at], ChatEntry::Instructions(_)))
                    && let Some(path) = &rendered.link_of_line[k]
                {
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
                visible.push(line.clone());
            }
            line_no += height;
        }
        visible
    }
}
/// The welcome above the start's notes, taking at most half of `inner`: the room
/// left below it.
fn render_welcome(frame: &mut Frame<'_>, inner: Rect, welcome: &[Line<'static>]) -> Rect {
    let welcome_lines: Vec<Line<'static>> = welcome
        .iter()
        .flat_map(|line| {
            let segments: Vec<(String, Style)> = line
                .spans
                .iter()
                .map(|span| (span.content.to_string(), span.style))
                .collect();
            markdown::wrap(&segments, usize::from(inner.width), Span::raw(""), "")
        })
        .chain(std::iter::once(Line::default()))
        .collect();
    let height = (welcome_lines.len() as u16).min(inner.height / 2);
    let [top, rest] = Layout::vertical([Constraint::Length(height), Constraint::Min(0)]).areas(inner);
    frame.render_widget(Paragraph::new(welcome_lines), top);
    rest
}
