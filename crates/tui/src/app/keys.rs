//! What a key or a click does, by focus and overlay.

use super::*;

impl App {
    pub fn handle_event(&mut self, event: Event) {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.handle_key(key),
            // A summary in review takes a paste, as it takes typed keys.
            Event::Paste(text) if self.state.turn.review().is_some() => {
                if let Some(editor) = self.review_editor() {
                    editor.paste(&text);
                }
            }
            // Text goes to the prompt, and so does the focus: Enter then sends it, as
            // it would after typed letters, instead of acting on the pane.
            Event::Paste(text) if self.takes_paste() => {
                self.focus = Focus::Input;
                self.input.paste(&text);
            }
            Event::Mouse(mouse) => match mouse.kind {
                MouseEventKind::ScrollUp => self.scroll(-3),
                MouseEventKind::ScrollDown => self.scroll(3),
                MouseEventKind::Down(MouseButton::Left) if matches!(self.overlay, Overlay::None) => {
                    if let Some((_, path)) = self.chat.links.iter().find(|(row, _)| *row == mouse.row).cloned() {
                        self.open_path(&path);
                    } else if let Some(&(_, entry)) = self.chat.marker_rows.iter().find(|(row, _)| *row == mouse.row) {
                        self.focus = Focus::Chat;
                        self.selected_entry = Some(entry);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// A key while the agent waits on a question or a review: Esc and Ctrl+C cancel
    /// (one route for every question), the question's own keys answer it once it has
    /// been on screen long enough to be read, and the review's editor takes the rest.
    /// Whether the key was the question's.
    fn answer_question(&mut self, key: KeyEvent) -> bool {
        // Typing why a call is denied: Esc goes back to the question; every other key
        // is the prompt's, and Enter denies with its text (see `submit`).
        if self.denying.is_some() {
            if keymap::action(View::Permission, &key) == Some(Action::CancelTurn) {
                self.stop_denying();
                return true;
            }
            return false;
        }
        let Some(question) = self.state.turn.question().cloned() else {
            return false;
        };
        let view = match question {
            Question::Permission(_) => View::Permission,
            Question::Review(_) => View::Review,
        };
        let action = keymap::action(view, &key);
        if action == Some(Action::CancelTurn) {
            self.cancel();
            return true;
        }
        if !modal::deliberate(question.shown_at()) {
            return true;
        }
        let request_id = question.request_id();
        let op = match (question, action) {
            (Question::Review(_), Some(Action::ApplySummary)) => self.review_editor().map(|editor| Op::Review {
                request_id,
                answer: editor.applied(),
            }),
            (Question::Review(_), Some(Action::RejectSummary)) => Some(Op::Review {
                request_id,
                answer: crate::protocol::ReviewAnswer::Reject,
            }),
            (Question::Review(_), _) => {
                if let Some(editor) = self.review_editor() {
                    editor.input(key);
                }
                None
            }
            (Question::Permission(prompt), action) => {
                let answer = match action {
                    Some(Action::AllowOnce) => Some(PermissionAnswer::AllowOnce),
                    Some(Action::Deny) => Some(PermissionAnswer::Deny),
                    Some(Action::DenyBecause) => {
                        self.denying = Some(Denying {
                            request_id,
                            draft: self.input.text(),
                        });
                        self.input.clear();
                        self.focus = Focus::Input;
                        None
                    }
                    Some(Action::AlwaysAllow) if prompt.always.is_some() => Some(PermissionAnswer::AlwaysForSession),
                    Some(Action::AlwaysForProject) if prompt.always.is_some() => {
                        Some(PermissionAnswer::AlwaysForProject)
                    }
                    _ => None,
                };
                answer.map(|answer| Op::Permission { request_id, answer })
            }
        };
        if let Some(op) = op {
            self.send(op);
            // Gone at once: the agent's Answered says the same when it takes it.
            self.state.turn.answered(request_id);
            self.review_editor = None;
        }
        true
    }

    /// Prose typed while a view is open is the prompt's, not the view's commands
    /// (`r` in /context restores, `s` in /tree summarises): a letter typed before
    /// the user has moved in the view closes it and goes to the prompt, said in a
    /// toast. A key that moves in the view puts it in hand, and its letters act.
    fn hand_typing_to_the_prompt(&mut self, key: &KeyEvent) {
        if matches!(self.overlay, Overlay::None) {
            self.in_hand = None;
            return;
        }
        let open = std::mem::discriminant(&self.overlay);
        let letter = matches!(key.code, KeyCode::Char(_))
            && !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if !letter {
            if !matches!(key.code, KeyCode::Esc) {
                self.in_hand = Some(open);
            }
            return;
        }
        if self.in_hand == Some(open) || self.overlay.takes_typing() {
            return;
        }
        let name = self.overlay.name();
        self.overlay = Overlay::None;
        self.under = None;
        self.focus = Focus::Input;
        self.tell(format!(
            "{name} closed: what you type goes to the prompt (move in {name} with ↑↓ first to use its keys)"
        ));
    }

    fn scroll(&mut self, delta: isize) {
        match &mut self.overlay {
            Overlay::Browser(browser) => {
                if let Some(viewer) = &mut browser.viewer {
                    viewer.scroll_by(delta);
                }
            }
            Overlay::None => self.chat.scroll(-delta),
            _ => {}
        }
    }

    /// The chat entries Up/Down select: requests (to summarise up to), markers with
    /// files, and tool calls while they are drawn in the chat (the tool pane does not
    /// fit).
    fn selectable_entries(&self) -> Vec<usize> {
        self.state
            .chat
            .iter()
            .enumerate()
            .filter(|(_, entry)| match entry {
                ChatEntry::Tool(_) => !self.tools_visible,
                ChatEntry::User(_) | ChatEntry::Pasted { .. } => true,
                entry => !entry.paths().is_empty(),
            })
            .map(|(at, _)| at)
            .collect()
    }

    /// What Tab into the chat selects: the newest marker or call, which the chat's keys
    /// mostly act on; the newest request only when there is neither.
    fn first_selection(&self) -> Option<usize> {
        let selectable = self.selectable_entries();
        selectable
            .iter()
            .rev()
            .find(|&&at| ChatEntry::request_of(&self.state.chat[at]).is_none())
            .or(selectable.last())
            .copied()
    }

    pub fn handle_key(&mut self, key: KeyEvent) {
        // A fork asked about waits for the very next key only.
        if keymap::action(View::Chat, &key) != Some(Action::ForkBefore) {
            self.fork_asked = None;
        }
        let screen = keymap::action(View::Screen, &key);
        if screen == Some(Action::Interrupt) {
            self.interrupt();
            return;
        }
        if self.answer_question(key) {
            return;
        }
        self.hand_typing_to_the_prompt(&key);
        if self.overlay_key(key) || self.screen_key(screen) {
            return;
        }
        let chat_action = keymap::action(View::Chat, &key);
        let selected = self.selected_entry.and_then(|at| self.state.chat.get(at));
        let on_marker = matches!(selected, Some(ChatEntry::Marker(_)));
        let on_request = selected.and_then(ChatEntry::request_of).is_some();
        // A letter that acts on the selection is the chat's; any other is the prompt's.
        let acts_on_selection = self.focus == Focus::Chat
            && match chat_action {
                Some(Action::Undo | Action::ForkBefore) => on_marker,
                Some(Action::SummariseUpTo) => on_request,
                _ => false,
            };
        let typing = matches!(key.code, KeyCode::Char(c) if !c.is_ascii_digit())
            && !acts_on_selection
            && !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if typing && self.focus != Focus::Input {
            // Letters are for the prompt, wherever the focus was.
            self.focus = Focus::Input;
        }
        match self.focus {
            Focus::Chat => self.chat_key(key),
            Focus::Tools => self.tools_key(key),
            Focus::Input => {
                if keymap::action(View::Prompt, &key) == Some(Action::Help) && self.input.is_empty() {
                    self.overlay = Overlay::Help(HelpView::on(View::Prompt));
                    return;
                }
                if let InputAction::Submit(text) = self.input.handle_key(key) {
                    self.pasted_request = self.input.take_sent_shown().map(|shown| (text.clone(), shown));
                    self.submit(text);
                }
            }
        }
    }

    /// A key for the open view, which owns every key while it is open: whether
    /// there was one.
    fn overlay_key(&mut self, key: KeyEvent) -> bool {
        let shown = Shown {
            state: &self.state,
            thresholds: self.thresholds(),
        };
        let Some(view) = self.overlay.view_mut() else {
            return false;
        };
        // F1 over a view: the help, that view's keys first, and back to it after.
        let help = keymap::action(View::Screen, &key) == Some(Action::Help);
        if help && view.keys() != View::Help {
            let here = view.keys();
            self.under = Some(std::mem::replace(&mut self.overlay, Overlay::Help(HelpView::on(here))));
            return true;
        }
        let effect = view.key(key, &shown);
        self.carry_out(effect);
        true
    }

    /// What a view asked for, done.
    fn carry_out(&mut self, effect: Effect) {
        match effect {
            Effect::Stay => {}
            Effect::Close => self.close_view(),
            Effect::Send(op) => self.send(op),
            Effect::CloseAndSend(op) => {
                self.close_view();
                self.send(op);
            }
            Effect::Disk(job) => self.request(job),
            Effect::Tell(text) => self.tell(text),
            Effect::OpenPath(path) => {
                self.leave_context();
                self.browse(Browser::open_on(&path));
            }
            Effect::ShowText { title, text } => {
                self.leave_context();
                let lines = crate::terminal_text::screen_safe(&text)
                    .lines()
                    .map(|l| (l.to_string(), crate::browser::LineRole::Plain))
                    .collect();
                let mut browser = Browser::new();
                browser.viewer = Some(Viewer::from_lines(title, lines));
                browser.opened_on_file = true;
                self.browse(browser);
            }
        }
    }

    /// Close the open view. The browser goes back where it was opened from (`/context`
    /// or the chat); what `/context` said was about it, so its toast goes with it.
    fn close_view(&mut self) {
        match self.overlay {
            Overlay::Browser(_) | Overlay::Help(_) => {
                self.overlay = self.under.take().unwrap_or(Overlay::None);
            }
            Overlay::Context(_) => {
                self.overlay = Overlay::None;
                self.toast = None;
            }
            _ => self.overlay = Overlay::None,
        }
    }

    /// A key bound on the whole screen (with no overlay open): whether it was one.
    fn screen_key(&mut self, screen: Option<Action>) -> bool {
        match screen {
            Some(Action::OpenBrowser) => {
                self.under = None;
                self.browse(Browser::new());
            }
            Some(Action::OpenContext) => {
                self.open_context();
            }
            Some(Action::DismissBanner) => {
                if self.state.banner.take().is_none()
                    && let Some(stop) = self.tour.dismiss()
                {
                    self.request(DiskJob::Tour { dismiss: Some(stop) });
                }
            }
            Some(Action::Help) => {
                let here = match self.focus {
                    Focus::Input => View::Prompt,
                    Focus::Chat => View::Chat,
                    Focus::Tools => View::Tools,
                };
                self.overlay = Overlay::Help(HelpView::on(here));
            }
            Some(Action::CancelOrBack) => {
                if self.state.is_busy() {
                    self.cancel();
                } else if self.focus == Focus::Input && self.input.is_empty() {
                    let now = Instant::now();
                    if self
                        .last_escape
                        .take()
                        .is_some_and(|at| now.duration_since(at) < REWIND_WINDOW)
                    {
                        self.open_tree(true);
                    } else {
                        self.last_escape = Some(now);
                    }
                } else {
                    self.focus = Focus::Input;
                }
            }
            Some(Action::ScrollUp) => self.chat.scroll(self.chat.page() as isize),
            Some(Action::ScrollDown) => self.chat.scroll(-(self.chat.page() as isize)),
            // Back to the newest: the selection goes too, so no key acts on a marker
            // out of sight.
            Some(Action::Follow) if self.focus != Focus::Input || self.input.is_empty() => {
                self.selected_entry = None;
                self.expanded_entry = None;
                self.chat.follow();
            }
            Some(Action::CompleteOrCycleFocus) if self.input.completions().is_empty() => {
                // A hidden tool pane (narrow terminal) is not a stop.
                self.focus = match self.focus {
                    Focus::Input => Focus::Chat,
                    Focus::Chat if self.tools_visible => Focus::Tools,
                    Focus::Chat | Focus::Tools => Focus::Input,
                };
                if self.focus == Focus::Chat && self.selected_entry.is_none() {
                    self.selected_entry = self.first_selection();
                }
            }
            _ => return false,
        }
        true
    }

    fn chat_key(&mut self, key: KeyEvent) {
        let markers = self.selectable_entries();
        let position = self.selected_entry.and_then(|m| markers.iter().position(|&e| e == m));
        match keymap::action(View::Chat, &key) {
            Some(Action::Undo) => self.undo_selected(),
            Some(Action::ForkBefore) => self.fork_before_selected(),
            Some(Action::SummariseUpTo) => self.summarise_up_to_selected(),
            Some(Action::ShowReceipt) => self.expanded_entry = self.selected_entry,
            Some(Action::HideReceipt) => self.expanded_entry = None,
            Some(Action::Previous) => {
                self.selected_entry = match position {
                    Some(p) => markers.get(p.saturating_sub(1)).copied(),
                    None => self.first_selection(),
                }
            }
            Some(Action::Next) => {
                self.selected_entry = match position {
                    Some(p) => markers.get((p + 1).min(markers.len().saturating_sub(1))).copied(),
                    None => self.first_selection(),
                }
            }
            Some(Action::Open(nth)) => match self.selected_entry.and_then(|at| self.state.chat.get(at)) {
                // A call in the chat: its saved output, or else its output under it.
                Some(ChatEntry::Tool(index)) => {
                    match self.state.tools.get(*index).and_then(|call| call.saved_path.clone()) {
                        Some(path) => self.open_path(&path),
                        None if self.expanded_entry == self.selected_entry => self.expanded_entry = None,
                        None => self.expanded_entry = self.selected_entry,
                    }
                }
                Some(entry) => {
                    if let Some(path) = entry.paths().get(usize::from(nth)).cloned() {
                        self.open_path(&path);
                    }
                }
                None => {}
            },
            _ => {}
        }
    }

    fn tools_key(&mut self, key: KeyEvent) {
        let count = self.state.tools.len();
        match keymap::action(View::Tools, &key) {
            Some(Action::Previous) => {
                self.selected_tool = Some(
                    self.selected_tool
                        .map_or(count.saturating_sub(1), |s| s.saturating_sub(1)),
                );
            }
            Some(Action::Next) => {
                self.selected_tool = Some(
                    self.selected_tool
                        .map_or(count.saturating_sub(1), |s| (s + 1).min(count.saturating_sub(1))),
                );
            }
            Some(Action::Open(_)) => {
                if let Some(path) = self
                    .selected_tool
                    .and_then(|s| self.state.tools.get(s))
                    .and_then(|call| call.saved_path.clone())
                {
                    self.open_path(&path);
                } else if self.selected_tool.is_some() {
                    self.selected_tool = None;
                } else {
                    self.selected_tool = count.checked_sub(1);
                }
            }
            _ => {}
        }
    }
}
