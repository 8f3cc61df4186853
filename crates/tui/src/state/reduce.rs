//! The reducer: every agent event folded into the state, one method per event that
//! needs more than a line. The screen is drawn from the state this builds.

use super::*;

impl AppState {
    pub fn apply(&mut self, event: AgentEvent) {
        if let AgentEvent::TextDelta { turn, .. }
        | AgentEvent::ThinkingDelta { turn, .. }
        | AgentEvent::StreamReset { turn, .. } = &event
            && self
                .current_turn
                .is_some_and(|current| current != *turn || !self.turn.in_turn())
        {
            // Streamed after its turn ended (or of an earlier turn): nothing to show.
            return;
        }
        match event {
            AgentEvent::Instructions { note } => self.push(ChatEntry::Instructions(note)),
            AgentEvent::McpServers { starting, failed } => {
                self.session.mcp_starting = starting;
                self.session.mcp_failed = failed;
            }
            event @ AgentEvent::SessionStarted { .. } => self.session_started(event),
            AgentEvent::History { messages } => self.load_history(&messages),
            AgentEvent::EditRequest { text } => self.edit_request = Some(text),
            AgentEvent::Background { event } => self.note_background(&event),
            AgentEvent::Replay { past, in_context } => self.replay(past, in_context),
            AgentEvent::TurnStarted { turn, request } => {
                self.current_turn = Some(turn);
                self.turns += 1;
                self.push(ChatEntry::User(request));
                self.joins_marker = None;
                self.turn.started();
                self.banner = None;
            }
            event @ AgentEvent::TextDelta { .. } => self.streamed_text(event),
            AgentEvent::ThinkingDelta { .. } => {}
            event @ AgentEvent::StreamReset { .. } => self.stream_reset(event),
            event @ AgentEvent::AssistantMessage { .. } => self.answered_whole(event),
            event @ AgentEvent::ToolStarted { .. } => self.tool_started(event),
            AgentEvent::ToolRunning { id, .. } => {
                if let Some(call) = self.tools.iter_mut().rev().find(|t| t.id == id) {
                    call.state = CallState::Running { since: Instant::now() };
                    self.turn.working(TurnState::RunningTool(call.name.clone()));
                }
                self.touch_tool(&id);
            }
            AgentEvent::Answered { request_id } => self.turn.answered(request_id),
            event @ AgentEvent::ToolFinished { .. } => self.tool_finished(event),
            AgentEvent::PermissionRequest {
                request_id,
                tool,
                question,
                subject,
                always,
                ..
            } => self.turn.asked(Question::Permission(PermissionPrompt {
                request_id,
                tool,
                question: screen_safe(&question).into_owned(),
                subject: screen_safe(&subject).into_owned(),
                always,
                shown_at: None,
            })),
            AgentEvent::Compacting => self.turn.working(TurnState::Compacting),
            AgentEvent::Summarising {
                background: true,
                chars,
            } => {
                let since = self.background_summary.map_or_else(Instant::now, |(since, _)| since);
                let since = if chars == 0 { Instant::now() } else { since };
                self.background_summary = Some((since, chars));
            }
            AgentEvent::Summarising {
                background: false,
                chars,
            } => {
                let since = match self.turn.activity() {
                    TurnState::Summarising { since, .. } if chars > 0 => *since,
                    _ => Instant::now(),
                };
                self.turn.working(TurnState::Summarising { since, chars });
            }
            AgentEvent::CompactionRequested { by, focus } => {
                self.joins_marker = None;
                self.turn.working(TurnState::Compacting);
                self.note_compaction_request(by, focus.as_deref());
            }
            AgentEvent::Compaction { event } => {
                self.note_files(&event);
                // A failure is said once, by its marker; a success makes an older banner stale.
                if event.errors.is_empty() && event.replaced > 0 {
                    // The history shrank: an earlier error (too long, a failed stage) is stale.
                    self.banner = None;
                }
                if matches!(event.stage, Stage::CompactHistory | Stage::ReactiveCompact) {
                    self.turn.compaction_done();
                }
                self.add_marker(event);
            }
            AgentEvent::Context { status } => self.context = Some(status),
            // The call's point carries the same report, for the chat and /context.
            AgentEvent::Cache { .. } => {}
            AgentEvent::ModelCall { point, usage } => {
                self.usage = Some(usage);
                self.note_cache_cost(&point);
                self.timeline.push(point);
            }
            event @ AgentEvent::Undone { .. } => self.undone(event),
            AgentEvent::Preview { events } => self.push(ChatEntry::Preview(events)),
            AgentEvent::SummaryReview {
                request_id,
                leaves,
                summary,
                index,
                covers: _,
                retention,
                if_not_applied,
                in_turn,
            } => self.turn.asked(Question::Review(ReviewPrompt {
                request_id,
                leaves,
                summary,
                index,
                retention,
                if_not_applied,
                in_turn,
                shown_at: None,
            })),
            AgentEvent::Breakdown { breakdown } => self.breakdown = Some(breakdown),
            AgentEvent::Notice { message } => self.push(ChatEntry::Notice(message)),
            AgentEvent::Error { message } => self.banner = Some(message),
            AgentEvent::Ready => {
                self.joins_marker = None;
                self.turn.ready();
            }
            AgentEvent::TurnDone { outcome, .. } => {
                self.turn.done();
                if let Some(ChatEntry::Assistant { streaming, .. }) = self.chat.last_mut() {
                    *streaming = false;
                    self.touch_last();
                }
                self.note_turn_end(outcome);
            }
        }
    }

    /// The session the agent serves: its facts for the status line, and the limit's note once.
    fn session_started(&mut self, event: AgentEvent) {
        let AgentEvent::SessionStarted {
            session_id,
            provider,
            model,
            workspace,
            sandbox,
            sandbox_layers,
            window,
            limit_note,
            read_only,
            // The app says every note; only print mode picks the warnings.
            limit_warning: _,
        } = event
        else {
            return;
        };
        let first = self.session.window.is_none();
        // The demo's small limit is the point of the demo: no hint to raise it.
        if first
            && !crate::provider::demo::is_demo(&provider)
            && let Some(note) = &limit_note
        {
            self.push(ChatEntry::Notice(note.clone()));
        }
        if !session_id.is_empty() && self.sessions.last() != Some(&session_id) {
            self.sessions.push(session_id.clone());
        }
        self.session = SessionInfo {
            id: session_id,
            provider,
            model,
            workspace,
            sandbox,
            sandbox_layers,
            window: Some(window),
            limit_note,
            read_only,
            // Said by their own event, which may come first.
            mcp_starting: std::mem::take(&mut self.session.mcp_starting),
            mcp_failed: std::mem::take(&mut self.session.mcp_failed),
        };
    }

    /// Text streamed into the answer being written.
    fn streamed_text(&mut self, event: AgentEvent) {
        let AgentEvent::TextDelta { text, .. } = event else {
            return;
        };
        if matches!(self.turn.activity(), TurnState::Retrying { .. }) {
            self.turn.working(TurnState::Thinking);
        }
        match self.chat.last_mut() {
            Some(ChatEntry::Assistant {
                text: current,
                streaming: true,
            }) => {
                current.push_str(&screen_safe(&text));
                self.touch_last();
            }
            _ => self.push(ChatEntry::Assistant {
                text: screen_safe(&text).into_owned(),
                streaming: true,
            }),
        }
    }

    /// A stream cut short and retried: what was streamed goes, and the retry is said.
    fn stream_reset(&mut self, event: AgentEvent) {
        let AgentEvent::StreamReset {
            attempt,
            delay_ms,
            reason,
            ..
        } = event
        else {
            return;
        };
        if matches!(self.chat.last(), Some(ChatEntry::Assistant { streaming: true, .. })) {
            self.chat.pop();
            self.revisions.pop();
        }
        self.push(ChatEntry::Notice(format!(
            "retrying (attempt {}) in {:.1} s: {reason}",
            attempt + 1,
            delay_ms as f64 / 1000.0
        )));
        self.turn.working(TurnState::Retrying {
            at: Instant::now() + Duration::from_millis(delay_ms),
            attempt: attempt + 1,
            reason,
        });
    }

    /// The whole answer: it replaces what was streamed of it.
    fn answered_whole(&mut self, event: AgentEvent) {
        let AgentEvent::AssistantMessage { message, .. } = event else {
            return;
        };
        let text = screen_safe(&message.text()).into_owned();
        match self.chat.last_mut() {
            Some(ChatEntry::Assistant {
                text: current,
                streaming,
            }) if *streaming => {
                *current = text;
                *streaming = false;
                self.touch_last();
            }
            _ if !text.is_empty() => self.push(ChatEntry::Assistant { text, streaming: false }),
            _ => {}
        }
    }

    /// A tool call about to run: its row in the tool pane.
    fn tool_started(&mut self, event: AgentEvent) {
        let AgentEvent::ToolStarted { id, name, summary, .. } = event else {
            return;
        };
        self.turn.working(TurnState::RunningTool(name.clone()));
        self.add_tool(ToolCall {
            id,
            name,
            summary: screen_safe(&summary).into_owned(),
            state: CallState::Pending,
            output: OutputPreview::default(),
            saved_path: None,
            turn: self.turns,
        });
    }

    /// A tool call done: its status, how long it took and its output.
    fn tool_finished(&mut self, event: AgentEvent) {
        let AgentEvent::ToolFinished { id, status, output, .. } = event else {
            return;
        };
        if let Some(call) = self.tools.iter_mut().rev().find(|t| t.id == id) {
            let took = match call.state {
                CallState::Pending => Duration::ZERO,
                CallState::Running { since } => since.elapsed(),
                CallState::Done { took, .. } => took,
            };
            call.state = CallState::Done { status, took };
            call.output = OutputPreview::of(&output);
        }
        self.touch_tool(&id);
        self.turn.working(TurnState::Thinking);
    }

    /// A compaction undone: its marker says so, and the chat says what came back.
    fn undone(&mut self, event: AgentEvent) {
        let AgentEvent::Undone {
            stage,
            undid: _,
            chars_before,
            chars_after,
        } = event
        else {
            return;
        };
        self.joins_marker = None;
        self.mark_undone();
        self.push(ChatEntry::Notice(format!(
            "↶ undid {stage}: {} → {} chars, the history is as it was before it",
            crate::compact::short_count(chars_before),
            crate::compact::short_count(chars_after)
        )));
        self.banner = None;
    }
}
