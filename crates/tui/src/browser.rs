//! The archive browser: `.transcripts/` and `.task_outputs/tool-results/` newest
//! first, and a viewer that renders a transcript's messages (roles, tool calls,
//! results) rather than raw JSON, with search (`/`, `n`, `N`) and jump back (`b`).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, TableState};

use super::hyperlinks::Hyperlink;
use super::keymap::{self, Action, View};
use super::theme;
use crate::compact::render::{Piece, pieces, role_name};
use crate::message::{Message, Role};

mod viewer;

#[derive(Clone, Debug, PartialEq)]
pub struct FileEntry {
    /// Relative to the workspace.
    pub path: String,
    pub size: u64,
    pub modified: u64,
    pub origin: String,
}

pub struct Viewer {
    pub title: String,
    pub lines: Vec<(String, LineRole)>,
    plain: Vec<String>,
    pub scroll: usize,
    /// Where `b` goes: the line the view was on when the search started (or before
    /// the last jump to the top or bottom).
    back: Option<usize>,
    pub typing: Option<String>,
    pub query: String,
    page: usize,
}

pub struct Browser {
    pub entries: Vec<FileEntry>,
    pub selected: usize,
    pub viewer: Option<Viewer>,
    pub error: Option<String>,
    /// Opened straight on one file (from a marker, a link or `/context`): closing its
    /// viewer returns there, not to the list.
    pub opened_on_file: bool,
    /// Where the last frame drew each path of the list, for OSC 8 hyperlinks.
    pub hyperlinks: Vec<Hyperlink>,
    /// The list is being read.
    loading: bool,
    /// A file being read for the viewer.
    opening: Option<String>,
    /// The first entry the list shows: it follows the selection, and only the rows
    /// from here that fit are built, however many files the archive holds.
    first_shown: usize,
}

/// The first row of a list of `rows` visible ones that keeps `selected` in view,
/// moving as little as possible from `first`.
fn scrolled_to(first: usize, selected: usize, rows: usize) -> usize {
    if rows == 0 {
        return selected;
    }
    if selected < first {
        selected
    } else if selected >= first + rows {
        selected + 1 - rows
    } else {
        first
    }
}

pub enum BrowserAction {
    Stay,
    Close,
    /// Read this file (relative to the workspace) for the viewer.
    Open(String),
}

/// What a line of the viewer is, for its colour: chosen where the file is read (off
/// the UI thread), coloured where it is drawn, in the palette in use then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineRole {
    Plain,
    NotAMessage,
    UserHeader,
    AssistantHeader,
    Call,
    ResultHeader,
    ResultText,
    Unknown,
    Note,
}

impl LineRole {
    pub fn style(self) -> Style {
        let palette = theme::palette();
        let header = |colour| Style::default().fg(colour).add_modifier(Modifier::BOLD);
        match self {
            LineRole::Plain => Style::default(),
            LineRole::NotAMessage => Style::default().fg(palette.failure),
            LineRole::UserHeader => header(palette.accent),
            LineRole::AssistantHeader => header(palette.success_bright),
            LineRole::Call => Style::default().fg(palette.attention),
            LineRole::ResultHeader => Style::default().fg(palette.info),
            LineRole::ResultText => Style::default().fg(palette.soft),
            LineRole::Unknown | LineRole::Note => Style::default().fg(palette.muted),
        }
    }
}

/// `text` in `style`, with each occurrence of `query` (found in `lowered`, the line in
/// lower case) marked. Where lower case changed the line's length, the positions do
/// not carry over, and the whole line is marked instead.
fn with_matches_marked(text: &str, lowered: &str, query: &str, style: Style) -> Vec<(String, Style)> {
    let palette = theme::palette();
    let marked = Style::default().fg(palette.text).bg(palette.match_background);
    if lowered.len() != text.len() {
        return vec![(text.to_string(), marked)];
    }
    let mut pieces = Vec::new();
    let mut from = 0;
    for (at, found) in lowered.match_indices(query) {
        let end = at + found.len();
        let (Some(before), Some(hit)) = (text.get(from..at), text.get(at..end)) else {
            return vec![(text.to_string(), marked)];
        };
        if !before.is_empty() {
            pieces.push((before.to_string(), style));
        }
        pieces.push((hit.to_string(), marked));
        from = end;
    }
    if let Some(rest) = text.get(from..).filter(|rest| !rest.is_empty()) {
        pieces.push((rest.to_string(), style));
    }
    pieces
}

/// A transcript as readable lines: a header per message, then its blocks.
pub fn transcript_lines(text: &str) -> Vec<(String, LineRole)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let Ok(message) = crate::json::from_str::<Message>(line) else {
            out.push((
                format!("(line {} is not a message) {line}", n + 1),
                LineRole::NotAMessage,
            ));
            continue;
        };
        let header = match message.role() {
            Role::User => LineRole::UserHeader,
            Role::Assistant => LineRole::AssistantHeader,
        };
        out.push((format!("── {} · {} ──", n + 1, role_name(message.role())), header));
        for piece in pieces(&message) {
            match piece {
                Piece::Text(text) => out.extend(text.lines().map(|l| (l.to_string(), LineRole::Plain))),
                Piece::Call { id, name, input } => out.push((format!("⚙ {name} {input}  [{id}]"), LineRole::Call)),
                Piece::Result { id, text, error } => {
                    let label = if error { "error" } else { "result" };
                    out.push((
                        format!("↳ {label} for {id} ({} chars)", text.chars().count()),
                        LineRole::ResultHeader,
                    ));
                    out.extend(text.lines().map(|l| (format!("  {l}"), LineRole::ResultText)));
                }
                Piece::Unknown(kind) => out.push((format!("[{kind} block]"), LineRole::Unknown)),
            }
        }
    }
    out
}

/// `path` in at most `width` characters, keeping its end: `…snip_compact_2026….jsonl`.
fn path_tail(path: &str, width: usize) -> String {
    let count = path.chars().count();
    if count <= width || width == 0 {
        return path.to_string();
    }
    let tail: String = path.chars().skip(count - (width - 1)).collect();
    format!("…{tail}")
}

impl Default for Browser {
    fn default() -> Self {
        Browser::new()
    }
}

impl Browser {
    /// The list, to be filled by [`Browser::listed`] once the disk answers.
    pub fn new() -> Self {
        Browser {
            entries: Vec::new(),
            selected: 0,
            first_shown: 0,
            viewer: None,
            error: None,
            opened_on_file: false,
            hyperlinks: Vec::new(),
            loading: true,
            opening: None,
        }
    }

    /// The browser opened straight on one file (from a marker or a saved path), which
    /// shows once the disk answers.
    pub fn open_on(path: &str) -> Self {
        Browser {
            opened_on_file: true,
            opening: Some(path.to_string()),
            ..Browser::new()
        }
    }

    /// The files as listed now, keeping the selected file selected.
    pub fn listed(&mut self, entries: Vec<FileEntry>) {
        let selected = self
            .opening
            .clone()
            .or_else(|| self.entries.get(self.selected).map(|entry| entry.path.clone()));
        self.entries = entries;
        self.loading = false;
        self.selected = selected
            .and_then(|path| self.entries.iter().position(|entry| entry.path == path))
            .unwrap_or(0);
    }

    /// The file being read for the viewer, if any.
    pub fn opening(&self) -> Option<&str> {
        self.opening.as_deref()
    }

    /// A file the viewer asked for arrived (or could not be read).
    pub fn opened(&mut self, path: String, lines: Result<Vec<(String, LineRole)>, String>) {
        if self.opening.as_deref() != Some(path.as_str()) {
            return; // asked for another file since
        }
        self.opening = None;
        match lines {
            Ok(lines) => {
                self.viewer = Some(Viewer::from_lines(path, lines));
                self.error = None;
            }
            Err(error) => self.error = Some(error),
        }
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> BrowserAction {
        if let Some(viewer) = &mut self.viewer {
            if !viewer.handle_key(key) {
                self.viewer = None;
                if self.opened_on_file {
                    return BrowserAction::Close;
                }
            }
            return BrowserAction::Stay;
        }
        match keymap::action(View::Browser, &key) {
            Some(Action::Close) => return BrowserAction::Close,
            Some(Action::Next) => {
                self.selected = (self.selected + 1).min(self.entries.len().saturating_sub(1));
            }
            Some(Action::Previous) => self.selected = self.selected.saturating_sub(1),
            Some(Action::Open(_)) => {
                if let Some(entry) = self.entries.get(self.selected) {
                    self.opening = Some(entry.path.clone());
                    return BrowserAction::Open(entry.path.clone());
                }
            }
            _ => {}
        }
        BrowserAction::Stay
    }

    /// What the list offers now: opening only when there is a file to open.
    pub fn offers(&self) -> Vec<crate::keymap::Offer> {
        use crate::keymap::{Action, Offer};
        let any = if self.entries.is_empty() {
            Err("the archive is empty".to_string())
        } else {
            Ok(())
        };
        vec![
            Offer::ready(Action::Previous, "select"),
            Offer::when(Action::Open(0), "opens", any),
            Offer::ready(Action::Close, "closes"),
        ]
    }

    /// ` transcripts and saved outputs (N) · Enter opens · … `.
    fn title(&self) -> Line<'static> {
        let mut spans = vec![Span::raw(format!(
            " transcripts and saved outputs ({}) · ",
            self.entries.len()
        ))];
        spans.extend(crate::keymap::footer(crate::keymap::View::Browser, &self.offers()).spans);
        spans.push(Span::raw(" "));
        Line::from(spans)
    }

    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect) {
        self.hyperlinks.clear();
        if let Some(viewer) = &mut self.viewer {
            viewer.render(frame, area);
            return;
        }
        frame.render_widget(Clear, area);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(theme::palette().link))
            .title(self.title());
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if self.entries.is_empty() {
            let text = self.error.clone().unwrap_or_else(|| {
                if self.loading {
                    "Reading the archive…".into()
                } else {
                    "Nothing archived yet: compaction writes here when it shortens the context.".into()
                }
            });
            frame.render_widget(
                Paragraph::new(Span::styled(text, Style::default().fg(theme::palette().muted))),
                inner,
            );
            return;
        }
        // The end of a path tells files apart (stage, time, counter): cut its start.
        let path_width = usize::from(inner.width).saturating_sub(16 + 7 + 18 + 3);
        let shown_rows = usize::from(inner.height.saturating_sub(1));
        self.selected = self.selected.min(self.entries.len() - 1);
        self.first_shown = scrolled_to(self.first_shown, self.selected, shown_rows)
            .min(self.entries.len().saturating_sub(shown_rows.max(1)));
        let visible = &self.entries[self.first_shown..(self.first_shown + shown_rows).min(self.entries.len())];
        let rows = visible.iter().map(|entry| {
            Row::new(vec![
                crate::time::short_stamp(entry.modified),
                crate::compact::short_count(entry.size as usize),
                entry.origin.clone(),
                path_tail(&entry.path, path_width),
            ])
        });
        const COLUMNS: [u16; 3] = [16, 7, 18];
        let table = Table::new(
            rows,
            [
                Constraint::Length(COLUMNS[0]),
                Constraint::Length(COLUMNS[1]),
                Constraint::Length(COLUMNS[2]),
                Constraint::Min(10),
            ],
        )
        .header(
            Row::new(vec!["modified (UTC)", "size", "written by", "path"])
                .style(Style::default().fg(theme::palette().soft)),
        )
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
        let mut state = TableState::default().with_selected(Some(self.selected - self.first_shown));
        frame.render_stateful_widget(table, inner, &mut state);
        // The path column starts after the three others and their one-cell gaps.
        let path_x = inner.x + COLUMNS.iter().sum::<u16>() + COLUMNS.len() as u16;
        for (row, entry) in visible.iter().enumerate() {
            let style = if self.first_shown + row == self.selected {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            self.hyperlinks.push(Hyperlink {
                row: inner.y + 1 + row as u16,
                x: path_x,
                text: path_tail(&entry.path, path_width),
                style,
                path: entry.path.clone(),
            });
        }
        if let Some(error) = &self.error {
            let bottom = Rect {
                y: inner.y + inner.height.saturating_sub(1),
                height: 1,
                ..inner
            };
            frame.render_widget(
                Paragraph::new(Span::styled(
                    error.clone(),
                    Style::default().fg(theme::palette().failure),
                )),
                bottom,
            );
        }
    }
}

impl crate::view::OverlayView for Browser {
    fn offers(&self, _shown: &crate::view::Shown<'_>) -> Vec<crate::keymap::Offer> {
        match &self.viewer {
            Some(viewer) => viewer.offers(),
            None => Browser::offers(self),
        }
    }

    fn keys(&self) -> crate::keymap::View {
        if self.viewer.is_some() {
            crate::keymap::View::Viewer
        } else {
            crate::keymap::View::Browser
        }
    }

    fn name(&self) -> &'static str {
        "the archive browser"
    }

    fn draw(&mut self, frame: &mut Frame<'_>, area: Rect, _shown: &crate::view::Shown<'_>) {
        self.render(frame, area);
    }

    fn key(&mut self, key: KeyEvent, _shown: &crate::view::Shown<'_>) -> crate::view::Effect {
        match self.handle_key(key) {
            BrowserAction::Stay => crate::view::Effect::Stay,
            BrowserAction::Close => crate::view::Effect::Close,
            BrowserAction::Open(path) => crate::view::Effect::Disk(crate::disk::DiskJob::Open { path }),
        }
    }

    /// A file being read takes what is typed (its search).
    fn takes_typing(&self) -> bool {
        self.viewer.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn many_files(count: usize) -> Vec<FileEntry> {
        (0..count)
            .map(|n| FileEntry {
                path: format!(".task_outputs/tool-results/toolu_{n:06}.txt"),
                size: 1_000,
                modified: 1_800_000_000,
                origin: "micro_compact".into(),
            })
            .collect()
    }

    /// With 120,000 files, a frame builds the rows that fit and no others; the
    /// selection stays in view as it moves, at both ends.
    #[test]
    fn only_the_rows_that_fit_are_drawn_and_the_selection_stays_in_view() {
        use ratatui::Terminal;
        use ratatui::backend::TestBackend;
        let mut browser = Browser::new();
        browser.listed(many_files(120_000));
        let mut terminal = Terminal::new(TestBackend::new(100, 12)).unwrap();
        let mut draw = |browser: &mut Browser| {
            terminal.draw(|frame| browser.render(frame, frame.area())).unwrap();
            terminal.backend().to_string()
        };
        let screen = draw(&mut browser);
        assert_eq!(browser.hyperlinks.len(), 9, "12 rows less borders and header");
        assert!(screen.contains("toolu_000000.txt") && screen.contains("toolu_000008.txt"));
        assert!(!screen.contains("toolu_000009.txt"));
        for _ in 0..12 {
            browser.handle_key(KeyEvent::from(crossterm::event::KeyCode::Down));
        }
        let screen = draw(&mut browser);
        assert_eq!(browser.selected, 12);
        assert!(
            screen.contains("toolu_000012.txt") && !screen.contains("toolu_000003.txt"),
            "{screen}"
        );
        browser.selected = 119_999;
        let screen = draw(&mut browser);
        assert!(
            screen.contains("toolu_119999.txt") && screen.contains("toolu_119991.txt"),
            "{screen}"
        );
        assert_eq!(
            browser.hyperlinks.last().map(|link| link.path.as_str()),
            Some(".task_outputs/tool-results/toolu_119999.txt")
        );
        browser.selected = 5;
        let screen = draw(&mut browser);
        assert!(screen.contains("toolu_000005.txt") && !screen.contains("toolu_119999.txt"));
    }

    #[test]
    fn the_window_moves_as_little_as_it_can() {
        assert_eq!(scrolled_to(0, 3, 10), 0);
        assert_eq!(scrolled_to(0, 10, 10), 1);
        assert_eq!(scrolled_to(20, 5, 10), 5);
        assert_eq!(scrolled_to(20, 25, 10), 20);
        assert_eq!(scrolled_to(7, 7, 0), 7);
    }

    fn viewer(lines: &[&str]) -> Viewer {
        Viewer::from_lines(
            "t".into(),
            lines.iter().map(|l| (l.to_string(), LineRole::Plain)).collect(),
        )
    }

    fn search(viewer: &mut Viewer, query: &str) {
        viewer.handle_key(KeyEvent::from(KeyCode::Char('/')));
        for c in query.chars() {
            viewer.handle_key(KeyEvent::from(KeyCode::Char(c)));
        }
        viewer.handle_key(KeyEvent::from(KeyCode::Enter));
    }

    #[test]
    fn a_long_path_keeps_its_end() {
        assert_eq!(path_tail(".transcripts/t.jsonl", 40), ".transcripts/t.jsonl");
        assert_eq!(
            path_tail(".transcripts/transcript_snip_compact_0042.jsonl", 12),
            "…_0042.jsonl"
        );
    }

    #[test]
    fn search_counts_matches_and_says_when_there_is_none() {
        let mut view = viewer(&["a bug", "fine", "another BUG", "fine"]);
        search(&mut view, "bug");
        assert_eq!(view.match_status().as_deref(), Some("1/2"));
        view.handle_key(KeyEvent::from(KeyCode::Char('n')));
        assert_eq!(view.match_status().as_deref(), Some("2/2"));
        search(&mut view, "absent");
        assert_eq!(view.match_status().as_deref(), Some("no match"));
    }

    #[test]
    fn the_end_puts_the_last_line_at_the_bottom_not_the_top() {
        let lines: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut view = viewer(&refs);
        view.page = 10;
        view.handle_key(KeyEvent::from(KeyCode::Char('G')));
        assert_eq!(view.scroll, 20);
        view.scroll_by(50);
        assert_eq!(view.scroll, 20);
    }
}
