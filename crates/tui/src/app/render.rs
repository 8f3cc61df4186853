//! The layout of the screen and the drawing of each part, overlays last.

use super::*;
use crate::finder::{self, Found};

/// Below this size no view can show anything useful.
const MIN_WIDTH: u16 = 20;
const MIN_HEIGHT: u16 = 5;

impl App {
    pub fn render(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            self.render_too_small(frame, area);
            return;
        }
        let narrow = area.width < 90 || area.height < 24;
        let gauge_height = if narrow { 1 } else { 2 };
        let banner_height = u16::from(self.state.banner.is_some());
        let input_height = self.input.height(area.width).min(area.height.saturating_sub(6).max(3));
        let [status_area, main, gauge_area, banner_area, input_area] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(gauge_height),
            Constraint::Length(banner_height),
            Constraint::Length(input_height),
        ])
        .areas(area);
        status::render(
            frame,
            status_area,
            &self.state.session,
            &self.state.turn.state(),
            self.tick,
        );
        self.tools_visible = area.width >= 90;
        if !self.tools_visible && self.focus == Focus::Tools {
            self.focus = Focus::Input;
        }
        let (chat_area, tools_area) = if self.tools_visible {
            let [chat, tools] =
                Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(main);
            (chat, Some(tools))
        } else {
            (main, None)
        };
        self.render_chat(frame, chat_area);
        if matches!(self.overlay, Overlay::None)
            && let Some(note) = self.tour.render(frame, chat_area, self.chat.newest_marker_row())
        {
            // The rows under the note show no path: no link is written over it.
            let rows = note.y..note.y + note.height;
            self.chat.hyperlinks.retain(|link| !rows.contains(&link.row));
        }
        if let Some(tools_area) = tools_area {
            tools_pane::render(
                frame,
                tools_area,
                &self.state.tools,
                self.selected_tool,
                self.focus == Focus::Tools,
                self.tick,
            );
        }
        let writing = self
            .state
            .background_summary
            .map(|(since, chars)| super::status::summary_progress(since, chars));
        gauge::render(frame, gauge_area, self.state.context.as_ref(), writing.as_deref());
        if let Some(banner) = &self.state.banner {
            status::render_banner(frame, banner_area, banner);
        }
        let prompt = if self.denying.is_some() {
            PromptState::Reason
        } else if self.state.session.read_only.is_some() {
            PromptState::ReadOnly
        } else if self.queued {
            PromptState::Queued
        } else if self.state.is_busy() {
            PromptState::Busy
        } else {
            PromptState::Ready
        };
        self.input.render(frame, input_area, prompt, self.focus == Focus::Input);
        let found: Vec<Found> = self
            .input
            .completions()
            .into_iter()
            .map(|command| Found::new(command, self.reach(command)))
            .collect();
        finder::draw(frame, input_area, &found, self.input.completion());
        let overlay_area = Rect {
            y: main.y,
            height: main.height + gauge_height,
            ..main
        };
        self.render_overlay(frame, area, overlay_area);
        self.render_question(frame, area);
    }

    /// Nothing fits: say so rather than draw a jumble, with no links left over from
    /// the last frame.
    fn render_too_small(&mut self, frame: &mut Frame<'_>, area: Rect) {
        self.chat.hyperlinks.clear();
        if let Overlay::Browser(browser) = &mut self.overlay {
            browser.hyperlinks.clear();
        }
        let note = format!(
            "terminal too small: {}×{}, needs {MIN_WIDTH}×{MIN_HEIGHT}",
            area.width, area.height
        );
        frame.render_widget(
            ratatui::widgets::Paragraph::new(note).wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
    }

    /// The chat, with the welcome on top while the chat holds only what the start said.
    fn render_chat(&mut self, frame: &mut Frame<'_>, chat_area: Rect) {
        let selected_entry = if self.focus == Focus::Chat {
            self.selected_entry
        } else {
            None
        };
        // While the chat holds only what the start said (instruction files, MCP
        // servers: most real projects have some), the welcome stays on top of it.
        let welcome = if self
            .state
            .chat
            .iter()
            .all(|entry| matches!(entry, ChatEntry::Notice(_) | ChatEntry::Instructions(_)))
        {
            super::super::welcome::lines(&self.state.session)
        } else {
            Vec::new()
        };
        self.chat.render(
            frame,
            chat_area,
            ChatContent {
                entries: &self.state.chat,
                revisions: &self.state.revisions,
                welcome: &welcome,
                tools: &self.state.tools,
                inline_tools: !self.tools_visible,
                tick: self.tick,
            },
            MarkerFocus {
                selected: selected_entry,
                expanded: self.expanded_entry,
            },
            self.focus == Focus::Chat,
        );
    }

    /// The open overlay over the chat and the gauge (help over the whole `area`), and
    /// a toast over it.
    fn render_overlay(&mut self, frame: &mut Frame<'_>, area: Rect, overlay_area: Rect) {
        let shown = Shown {
            state: &self.state,
            thresholds: self.thresholds(),
        };
        if let Some(view) = self.overlay.view_mut() {
            let area = if view.covers_the_screen() { area } else { overlay_area };
            view.draw(frame, area, &shown);
        }
        if let Some(toast) = &self.toast {
            toast.render(frame, overlay_area);
        }
    }

    /// The question waiting for an answer, or the summary in review, over everything.
    fn render_question(&mut self, frame: &mut Frame<'_>, area: Rect) {
        let drawn = match self.state.turn.question_mut() {
            Some(Question::Permission(prompt)) if self.denying.is_none() => {
                modal::render(frame, area, prompt);
                true
            }
            Some(Question::Review(_)) => true,
            _ => false,
        };
        if drawn && let Some(question) = self.state.turn.question_mut() {
            question.shown_at_mut().get_or_insert_with(std::time::Instant::now);
        }
        if let Some(prompt) = self.state.turn.review().cloned()
            && let Some(editor) = self.review_editor()
        {
            super::super::review::render(frame, area, &prompt, editor);
        }
    }

    /// The limit and the target the agent works to now (the configured ones until it
    /// says).
    pub(super) fn thresholds(&self) -> Thresholds {
        match &self.state.context {
            Some(status) => Thresholds {
                limit: status.limit,
                target: status.target,
            },
            None => Thresholds {
                limit: self.config.context_char_limit.chars,
                target: self.config.micro_target_chars(),
            },
        }
    }
}
