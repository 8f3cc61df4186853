//! A file open in the archive browser: scrolling, search and the jump back, and how
//! it is drawn.

use super::*;

/// A file of the workspace as the viewer shows it: a transcript's messages rendered,
/// anything else as its lines (disk work: it runs off the UI thread).
impl Viewer {
    pub fn from_lines(title: String, lines: Vec<(String, LineRole)>) -> Viewer {
        let plain = lines.iter().map(|(l, _)| l.to_lowercase()).collect();
        Viewer {
            title,
            lines,
            plain,
            scroll: 0,
            back: None,
            typing: None,
            query: String::new(),
            page: 10,
        }
    }

    fn jump_to(&mut self, line: usize) {
        self.back = Some(self.scroll);
        self.scroll = line;
    }

    /// Next (or previous) line matching the query, wrapping around.
    pub fn find(&mut self, forward: bool) -> bool {
        if self.query.is_empty() {
            return false;
        }
        let query = self.query.to_lowercase();
        let count = self.plain.len();
        for step in 1..=count {
            let at = if forward {
                (self.scroll + step) % count
            } else {
                (self.scroll + count - step % count) % count
            };
            if self.plain[at].contains(&query) {
                // Stepping through matches keeps where the search started.
                self.scroll = at;
                return true;
            }
        }
        false
    }

    /// `3/17` when the top line is the 3rd of 17 matching lines, `–/17` between
    /// matches, `no match`; `None` without a query.
    pub fn match_status(&self) -> Option<String> {
        if self.query.is_empty() {
            return None;
        }
        let query = self.query.to_lowercase();
        let matches: Vec<usize> = (0..self.plain.len())
            .filter(|&at| self.plain[at].contains(&query))
            .collect();
        Some(match matches.iter().position(|&at| at == self.scroll) {
            _ if matches.is_empty() => "no match".to_string(),
            Some(index) => format!("{}/{}", index + 1, matches.len()),
            None => format!("–/{}", matches.len()),
        })
    }

    /// The furthest the view scrolls: the last line at the bottom of a full page.
    fn max_scroll(&self) -> usize {
        self.lines.len().saturating_sub(self.page.max(1))
    }

    /// One key in the viewer: whether the viewer stays open (Esc and q close it).
    pub(super) fn handle_key(&mut self, key: KeyEvent) -> bool {
        // Typing a search query is text entry, not bindings.
        if let Some(typing) = &mut self.typing {
            match key.code {
                KeyCode::Esc => self.typing = None,
                KeyCode::Enter => {
                    self.query = std::mem::take(typing);
                    self.typing = None;
                    // Search from just before the top so a match on the first line counts.
                    let start = self.scroll;
                    self.scroll = start.checked_sub(1).unwrap_or(self.plain.len().saturating_sub(1));
                    if self.find(true) {
                        self.back = Some(start);
                    } else {
                        self.scroll = start;
                    }
                }
                KeyCode::Backspace => {
                    typing.pop();
                }
                KeyCode::Char(c) => typing.push(c),
                _ => {}
            }
            return true;
        }
        let max = self.max_scroll();
        match keymap::action(View::Viewer, &key) {
            Some(Action::Close) => return false,
            Some(Action::Search) => self.typing = Some(String::new()),
            Some(Action::NextMatch) => {
                self.find(true);
            }
            Some(Action::PreviousMatch) => {
                self.find(false);
            }
            Some(Action::JumpBack) => {
                if let Some(back) = self.back.take() {
                    self.scroll = back.min(max);
                }
            }
            Some(Action::Next) => self.scroll = (self.scroll + 1).min(max),
            Some(Action::Previous) => self.scroll = self.scroll.saturating_sub(1),
            Some(Action::PageDown) => self.scroll = (self.scroll + self.page).min(max),
            Some(Action::PageUp) => self.scroll = self.scroll.saturating_sub(self.page),
            Some(Action::Top) => self.jump_to(0),
            Some(Action::Bottom) => self.jump_to(max),
            _ => {}
        }
        true
    }

    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.max_scroll() as isize;
        self.scroll = (self.scroll as isize + delta).clamp(0, max) as usize;
    }

    /// What the viewer offers now: the next and previous match once there is a
    /// search, the jump back once there is somewhere to go back to.
    pub fn offers(&self) -> Vec<crate::keymap::Offer> {
        use crate::keymap::{Action, Offer};
        let searched = if self.query.is_empty() {
            Err("search first (/)".to_string())
        } else {
            Ok(())
        };
        let back = match self.back {
            Some(_) => Ok(()),
            None => Err("nowhere to jump back to yet".to_string()),
        };
        vec![
            Offer::ready(Action::Previous, "scroll"),
            Offer::ready(Action::Search, "search"),
            Offer::when(Action::NextMatch, "next", searched.clone()),
            Offer::when(Action::PreviousMatch, "previous", searched),
            Offer::when(Action::JumpBack, "jump back", back),
            Offer::ready(Action::Close, "back"),
        ]
    }

    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect) {
        frame.render_widget(Clear, area);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(Style::default().fg(theme::palette().link))
            .title(format!(
                " {} · line {}/{} ",
                self.title,
                self.scroll + 1,
                self.lines.len().max(1)
            ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [body, foot] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        self.page = body.height.max(1) as usize;
        let query = self.query.to_lowercase();
        // Long lines wrap; scrolling moves by whole lines of the file.
        let width = body.width.max(1) as usize;
        let height = body.height as usize;
        let mut visible: Vec<Line<'static>> = Vec::with_capacity(height);
        for (at, (text, role)) in self.lines.iter().enumerate().skip(self.scroll) {
            if visible.len() >= height {
                break;
            }
            let style = role.style();
            let pieces = if !query.is_empty() && self.plain[at].contains(&query) {
                with_matches_marked(text, &self.plain[at], &query, style)
            } else {
                vec![(text.clone(), style)]
            };
            visible.extend(crate::markdown::wrap(&pieces, width, Span::raw(""), ""));
        }
        visible.truncate(height);
        frame.render_widget(Paragraph::new(visible), body);
        let soft = Style::default().fg(theme::palette().soft);
        let footer = match &self.typing {
            Some(typing) => Line::styled(format!("/{typing}▏"), soft),
            None => {
                let mut spans = Vec::new();
                if !self.query.is_empty() {
                    let status = self.match_status().unwrap_or_default();
                    spans.push(Span::styled(format!("“{}” · {status} · ", self.query), soft));
                }
                spans.extend(crate::keymap::footer(crate::keymap::View::Viewer, &self.offers()).spans);
                Line::from(spans)
            }
        };
        frame.render_widget(Paragraph::new(footer), foot);
    }
}
