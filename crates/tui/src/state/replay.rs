//! The chat rebuilt from what the agent sends whole: a resumed session's past, or a
//! history put in place of the current one.

use super::*;

impl AppState {
    /// A message of the history in the chat and the tool pane.
    fn show_message(&mut self, message: &Message) {
        match classify(message) {
            MessageKind::CompactedSummary { .. } => {
                self.push(ChatEntry::Notice(
                    "earlier conversation compacted into a summary".into(),
                ));
            }
            MessageKind::ArchiveMarker { count, path } => {
                self.push(ChatEntry::Notice(format!(
                    "{} archived at {path}",
                    crate::compact::counted(count, "message", "messages")
                )));
            }
            MessageKind::UserPrompt(text) if !text.is_empty() => {
                self.turns += 1;
                self.joins_marker = None;
                self.push(ChatEntry::User(screen_safe(&text).into_owned()));
            }
            MessageKind::Assistant => {
                let text = screen_safe(&message.text()).into_owned();
                if !text.is_empty() {
                    self.push(ChatEntry::Assistant { text, streaming: false });
                }
            }
            MessageKind::CutOffNote => {
                self.push(ChatEntry::Notice(
                    "the model's call was cut off by max_tokens; it was asked to retry smaller".into(),
                ));
            }
            MessageKind::UserPrompt(_) | MessageKind::ToolResults => {}
        }
        for block in message.block_slice() {
            match block {
                ContentBlock::ToolUse { id, name, input, .. } => self.add_tool(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    summary: screen_safe(&crate::tools::input_summary(name, input)).into_owned(),
                    state: CallState::Done {
                        status: ToolStatus::Ok,
                        took: Duration::ZERO,
                    },
                    output: OutputPreview::default(),
                    saved_path: None,
                    turn: self.turns,
                }),
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => {
                    if let Some(call) = self.tools.iter_mut().rev().find(|t| &t.id == tool_use_id) {
                        call.output = OutputPreview::of(&content.full_text());
                        // How it ended, where the journal said (refused, cancelled, its
                        // time), stands; a result alone says only that it failed.
                        if *is_error == Some(true)
                            && let CallState::Done { status, .. } = &mut call.state
                            && *status == ToolStatus::Ok
                        {
                            *status = ToolStatus::Error;
                        }
                    }
                    self.touch_tool(tool_use_id);
                }
                _ => {}
            }
        }
    }

    /// A resumed session as it happened: its messages, markers and tool calls in
    /// order, and its timeline.
    pub(super) fn replay(&mut self, past: Vec<Past>, in_context: usize) {
        self.start_afresh();
        let mut messages = 0;
        // A fork just made (no model call yet) was not resumed: it starts from what
        // it took.
        let mut forked = false;
        let mut called = false;
        for item in past {
            match item {
                Past::Message { message } => {
                    messages += 1;
                    self.show_message(&message);
                }
                Past::Stage { event } => {
                    self.note_files(&event);
                    self.add_marker(*event);
                }
                Past::Call { point } => {
                    called = true;
                    self.note_cache_cost(&point);
                    self.timeline.push(point);
                }
                Past::Undo { stage, .. } => {
                    self.joins_marker = None;
                    self.mark_undone();
                    self.push(ChatEntry::Notice(format!("↶ undid {stage}")));
                }
                Past::TurnEnded { outcome } => self.note_turn_end(outcome),
                Past::CompactionRequested { by, focus } => {
                    self.joins_marker = None;
                    self.note_compaction_request(by, focus.as_deref());
                }
                Past::Preview { events } => self.push(ChatEntry::Preview(events)),
                Past::Instructions { note } => self.push(ChatEntry::Instructions(note)),
                Past::Forked { origin } => {
                    forked = true;
                    self.push(ChatEntry::Notice(branch_line(&origin)));
                }
                Past::Background { event } => self.note_background(&event),
                Past::CallEnded { id, status, took_ms } => {
                    if let Some(call) = self.tools.iter_mut().rev().find(|call| call.id == id) {
                        call.state = CallState::Done {
                            status,
                            took: Duration::from_millis(took_ms),
                        };
                    }
                    self.touch_tool(&id);
                }
            }
        }
        let what = if forked && !called {
            "a fork that starts from"
        } else {
            "resumed a session of"
        };
        self.push(ChatEntry::Notice(format!(
            "{what} {}, {in_context} in context",
            crate::compact::counted(messages, "message", "messages")
        )));
    }

    /// The history as it now is, with nothing of how it came to be: a session started
    /// afresh (`/clear`) or resumed from its messages alone. The timeline and the
    /// markers that undo could act on belong to what came before.
    pub(super) fn load_history(&mut self, messages: &[Message]) {
        self.start_afresh();
        for message in messages {
            self.show_message(message);
        }
        if !messages.is_empty() {
            self.push(ChatEntry::Notice(format!(
                "resumed a session of {}, all in context",
                crate::compact::counted(messages.len(), "message", "messages")
            )));
        }
    }

    /// Nothing shown yet: the chat, the tool calls, the turns, the timeline and the
    /// markers undo could act on, all gone.
    fn start_afresh(&mut self) {
        self.chat.clear();
        self.revisions.clear();
        self.tools.clear();
        self.turns = 0;
        self.timeline.clear();
        self.undoable.clear();
        self.joins_marker = None;
    }
}
