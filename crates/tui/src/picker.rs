//! The session picker (`/resume`, `scratchpad --resume` without an id): this
//! workspace's sessions, newest first, filtered by what is typed, with the last
//! exchange of the selected one beside the list.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::keymap::{self, Action, View};
use super::theme;
use crate::session::SessionSummary;
use crate::terminal_text::screen_safe;

pub struct Picker {
    /// `None` until the disk answers.
    sessions: Option<Vec<SessionSummary>>,
    filter: String,
    /// Position in the filtered list.
    selected: usize,
    /// The session open now, marked in the list.
    current: Option<String>,
}

pub enum PickerAction {
    Stay,
    Close,
    Open(String),
}

/// Width from which the preview stands beside the list rather than under it.
const SIDE_BY_SIDE_FROM: u16 = 100;

impl Picker {
    pub fn new(current: Option<String>) -> Self {
        Picker {
            sessions: None,
            filter: String::new(),
            selected: 0,
            current,
        }
    }

    pub fn listed(&mut self, sessions: Vec<SessionSummary>) {
        self.sessions = Some(sessions);
        self.selected = 0;
    }

    fn shown(&self) -> Vec<&SessionSummary> {
        self.sessions
            .iter()
            .flatten()
            .filter(|session| session.matches(&self.filter))
            .collect()
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> PickerAction {
        let count = self.shown().len();
        match keymap::action(View::Picker, &key) {
            Some(Action::Close) => return PickerAction::Close,
            Some(Action::Previous) => self.selected = self.selected.saturating_sub(1),
            Some(Action::Next) => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            Some(Action::Open(_)) => {
                if let Some(session) = self.shown().get(self.selected) {
                    return PickerAction::Open(session.id.clone());
                }
            }
            _ => {
                if super::input::edit_line(&mut self.filter, &key) {
                    self.selected = 0;
                }
            }
        }
        PickerAction::Stay
    }

    /// What the picker offers now: continuing a session only when one is shown.
    pub fn offers(&self) -> Vec<crate::keymap::Offer> {
        use crate::keymap::{Action, Offer};
        let any = if self.shown().is_empty() {
            Err("no session matches the filter".to_string())
        } else {
            Ok(())
        };
        vec![
            Offer::ready(Action::Previous, "select"),
            Offer::when(Action::Open(0), "continue", any),
            Offer::ready(Action::Close, "close"),
        ]
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        frame.render_widget(Clear, area);
        let palette = theme::palette();
        let shown = self.shown();
        let total = self.sessions.as_ref().map_or(0, Vec::len);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(palette.accent))
            .title(format!(" sessions · {} of {total} ", shown.len()));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [filter, body, foot] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("filter: ", Style::default().fg(palette.soft)),
                Span::styled(format!("{}▏", self.filter), Style::default().fg(palette.text)),
            ])),
            filter,
        );
        let (list, preview) = if body.width >= SIDE_BY_SIDE_FROM {
            let [list, preview] =
                Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(body);
            (list, Some(preview))
        } else if body.height >= 14 {
            let [list, preview] = Layout::vertical([Constraint::Min(6), Constraint::Length(7)]).areas(body);
            (list, Some(preview))
        } else {
            (body, None)
        };
        self.render_list(frame, list, &shown);
        if let (Some(area), Some(session)) = (preview, shown.get(self.selected)) {
            render_preview(frame, area, session);
        }
        let mut footer = vec![Span::styled("type to filter · ", Style::default().fg(palette.soft))];
        footer.extend(crate::keymap::footer(crate::keymap::View::Picker, &self.offers()).spans);
        frame.render_widget(Paragraph::new(Line::from(footer)), foot);
    }

    fn render_list(&self, frame: &mut Frame<'_>, area: Rect, shown: &[&SessionSummary]) {
        let palette = theme::palette();
        let rows_per_session = 2;
        let fits = (area.height as usize / rows_per_session).max(1);
        let first = self.selected.saturating_sub(fits - 1);
        let mut lines = Vec::new();
        if self.sessions.is_none() {
            lines.push(Line::styled(
                "reading the sessions…",
                Style::default().fg(palette.muted),
            ));
        } else if shown.is_empty() {
            let what = if self.filter.is_empty() {
                "no sessions in this workspace yet".to_string()
            } else {
                format!("no session's requests hold “{}”", self.filter)
            };
            lines.push(Line::styled(what, Style::default().fg(palette.muted)));
        }
        let width = area.width.saturating_sub(2) as usize;
        for (at, session) in shown.iter().enumerate().skip(first).take(fits) {
            let selected = at == self.selected;
            let marker = if selected { "› " } else { "  " };
            let mut title = Style::default().fg(palette.text);
            if selected {
                title = title.fg(palette.accent).add_modifier(Modifier::BOLD);
            }
            let request = session.first_request.as_deref().unwrap_or("(no request yet)");
            lines.push(Line::from(vec![
                Span::styled(marker, Style::default().fg(palette.accent)),
                Span::styled(one_line(request, width), title),
            ]));
            lines.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(
                    whole_facts(&facts(session, self.current.as_deref()), width),
                    Style::default().fg(palette.muted),
                ),
            ]));
        }
        frame.render_widget(Paragraph::new(lines), area);
    }
}

/// The facts of a session in the picker: where it is open (first: it decides whether
/// it can be resumed), whether it is a branch, and the list's facts.
fn facts(session: &SessionSummary, current: Option<&str>) -> Vec<String> {
    let mut parts = session.facts();
    // Forks of one session read alike otherwise: each says first where it branched
    // (the preview names the session it branched from).
    if let Some(origin) = &session.parent {
        parts.insert(0, format!("⑂ {}", origin.at));
    }
    if current == Some(session.id.as_str()) {
        parts.insert(0, "open here".into());
    } else if session.open_in.is_some() {
        parts.insert(0, "open elsewhere".into());
    }
    parts
}

/// As many whole facts as fit in `width` columns, in order: a fact is never cut to a
/// stub (`op…`).
fn whole_facts(parts: &[String], width: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    let mut line = String::new();
    for part in parts {
        let part = crate::text::flatten_whitespace(&screen_safe(part));
        let joined = if line.is_empty() {
            part.clone()
        } else {
            format!("{line} · {part}")
        };
        if joined.width() <= width {
            line = joined;
        }
    }
    if line.is_empty() {
        return one_line(parts.first().map_or("", String::as_str), width);
    }
    line
}

fn render_preview(frame: &mut Frame<'_>, area: Rect, session: &SessionSummary) {
    let palette = theme::palette();
    let block = Block::default()
        .borders(Borders::LEFT | Borders::TOP)
        .border_style(Style::default().fg(palette.muted))
        .title(format!(" {} ", session.id));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let muted = Style::default().fg(palette.muted);
    let mut lines = Vec::new();
    if let Some(parent) = &session.parent {
        lines.push(Line::styled(format!("⑂ a branch of {parent}"), muted));
    }
    if let Some(pid) = &session.open_in {
        lines.push(Line::styled(format!("open in another scratchpad (pid {pid})"), muted));
    }
    if !session.branches.is_empty() {
        lines.push(Line::styled(
            format!("branches: {}", session.branches.join(", ")),
            muted,
        ));
    }
    if !lines.is_empty() {
        lines.push(Line::raw(""));
    }
    match &session.tally {
        // The request as the chat shows it (a large paste collapsed), the answer as
        // the chat renders it (markdown, not its marks).
        Some(tally) => {
            let text = Style::default().fg(palette.text);
            let soft = Style::default().fg(palette.soft);
            let request = screen_safe(&tally.last_request).into_owned();
            match super::input::collapsed_size(&request) {
                Some(size) => {
                    let first = request.lines().next().unwrap_or_default();
                    lines.push(Line::styled(format!("› {first} [pasted {size}]"), text));
                }
                None => {
                    for (at, line) in request.lines().enumerate() {
                        let lead = if at == 0 { "› " } else { "  " };
                        lines.push(Line::styled(format!("{lead}{line}"), text));
                    }
                }
            }
            lines.push(Line::raw(""));
            let answer = screen_safe(&tally.last_answer).into_owned();
            lines.extend(super::markdown::render(&answer, usize::from(inner.width.max(1)), soft));
        }
        None => lines.push(Line::styled("no turn of this session ended yet", muted)),
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// `text` on one line in at most `width` columns, safe to draw.
fn one_line(text: &str, width: usize) -> String {
    super::ellipsized(&crate::text::flatten_whitespace(&screen_safe(text)), width)
}

impl crate::view::OverlayView for Picker {
    fn offers(&self, _shown: &crate::view::Shown<'_>) -> Vec<crate::keymap::Offer> {
        Picker::offers(self)
    }

    fn keys(&self) -> crate::keymap::View {
        crate::keymap::View::Picker
    }

    fn name(&self) -> &'static str {
        "/resume"
    }

    fn draw(&mut self, frame: &mut Frame<'_>, area: Rect, _shown: &crate::view::Shown<'_>) {
        self.render(frame, area);
    }

    fn key(&mut self, key: KeyEvent, _shown: &crate::view::Shown<'_>) -> crate::view::Effect {
        match self.handle_key(key) {
            PickerAction::Stay => crate::view::Effect::Stay,
            PickerAction::Close => crate::view::Effect::Close,
            PickerAction::Open(session) => crate::view::Effect::CloseAndSend(crate::protocol::Op::Resume { session }),
        }
    }

    /// Typing filters the sessions.
    fn takes_typing(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::whole_facts;

    /// A fact is kept whole or left out, never cut to a stub (`op…`).
    #[test]
    fn facts_are_kept_whole_or_left_out() {
        let parts: Vec<String> = ["open here", "2026-11-30 05:43", "2 turns", "36.0k chars"]
            .iter()
            .map(|part| part.to_string())
            .collect();
        assert_eq!(
            whole_facts(&parts, 80),
            "open here · 2026-11-30 05:43 · 2 turns · 36.0k chars"
        );
        assert_eq!(whole_facts(&parts, 40), "open here · 2026-11-30 05:43 · 2 turns");
        assert_eq!(whole_facts(&parts, 12), "open here");
    }
}
