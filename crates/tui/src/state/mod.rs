//! The app state, built only from agent events (so it can be tested without a
//! terminal), plus what the user is doing with the screen. `cells` are what the chat
//! and the tools pane show; `turn` is where the running turn is and what it asks.

mod cells;
mod replay;
mod turn;

use std::time::{Duration, Instant};

use crate::compact::markers::{MessageKind, classify};
use crate::compact::{Stage, StageEvent};
use crate::context_map::ContextBreakdown;
use crate::message::{ContentBlock, Message};
use crate::protocol::CompactionRequester;
use crate::protocol::{AgentEvent, BackgroundEvent, CallPoint, ContextStatus, Past, ToolStatus, TurnId, TurnOutcome};
use crate::provider::Usage;
use crate::terminal_text::screen_safe;

pub use cells::{CallState, ChatEntry, Compaction, MarkerRun, OUTPUT_PREVIEW_LINES, OutputPreview, ToolCall};
pub use turn::{LossyPrompt, PermissionPrompt, Question, ReviewPrompt, SessionInfo, Turn, TurnState};

#[derive(Debug, Default)]
pub struct AppState {
    pub chat: Vec<ChatEntry>,
    /// Bumped whenever `chat[i]` changes, so wrapped lines can be cached.
    pub revisions: Vec<u64>,
    /// The last revision handed out; see [`AppState::push`].
    next_revision: u64,
    pub tools: Vec<ToolCall>,
    pub context: Option<ContextStatus>,
    pub timeline: Vec<CallPoint>,
    /// A summary being written in the background: since when, and the characters of
    /// it streamed so far.
    pub background_summary: Option<(Instant, usize)>,
    pub session: SessionInfo,
    /// Where the turn is and what it asks: the one place that decides it.
    pub turn: Turn,
    /// The newest turn the agent started: streamed text of any other is stale.
    current_turn: Option<TurnId>,
    /// Requests started so far, numbering the tool calls' turns.
    pub turns: usize,
    pub banner: Option<String>,
    pub usage: Option<Usage>,
    pub breakdown: Option<ContextBreakdown>,
    /// Where each file the pipeline wrote came from, for the browser.
    pub written_by: Vec<(String, Stage)>,
    /// The firings that undo can still put back, oldest first, as (chat entry, member
    /// of its marker): the agent's stage log as the chat shows it.
    undoable: Vec<(usize, usize)>,
    /// A request given back to edit (a fork made before it), for the prompt to take.
    pub edit_request: Option<String>,
    /// The pipeline's newest marker, which a next event of its stage joins until the
    /// user does something (see [`AppState::add_marker`]).
    joins_marker: Option<usize>,
    /// Every session this run worked in, oldest first (`/clear` starts another): the
    /// way back to each is said at the end.
    pub sessions: Vec<String>,
}

impl AppState {
    pub fn is_busy(&self) -> bool {
        self.turn.is_busy()
    }

    /// A request was sent (see [`Turn::submitted`]).
    pub fn submitted(&mut self) {
        self.turn.submitted();
    }

    /// Add a chat entry. Its revision is new to the whole session, so a render cache
    /// keyed by (position, revision) never mistakes it for the entry that was there
    /// before (a streamed reply replaced after a retry).
    pub(crate) fn push(&mut self, entry: ChatEntry) {
        self.chat.push(entry);
        let revision = self.new_revision();
        self.revisions.push(revision);
    }

    /// Every compaction the chat shows, oldest first, with whether it was undone: what
    /// `/context` lists.
    pub fn compactions(&self) -> Vec<Compaction> {
        self.chat
            .iter()
            .filter_map(|entry| match entry {
                ChatEntry::Marker(run) => Some(run),
                _ => None,
            })
            .flat_map(|run| {
                run.events
                    .iter()
                    .enumerate()
                    .filter(|(_, event)| event.replaced > 0)
                    .map(|(at, event)| Compaction {
                        stage: event.stage,
                        chars_before: event.chars_before,
                        chars_after: event.chars_after,
                        undone: run.is_undone(at),
                        retention: event.loss.as_ref().and_then(|loss| loss.retention_line()),
                        freed: event.freed.as_ref().map(|freed| freed.chars),
                        turns_since_previous: event.since_previous.as_ref().map(|since| since.turns),
                        calls_since_previous: event.since_previous.as_ref().map(|since| since.model_calls),
                        summary_chars: event.summary.as_ref().map(|summary| summary.chars().count()),
                    })
            })
            .collect()
    }

    /// A tool call joins the tool list, and the chat at this point.
    fn add_tool(&mut self, call: ToolCall) {
        self.tools.push(call);
        self.push(ChatEntry::Tool(self.tools.len() - 1));
    }

    /// The tool call with this id changed: its chat entry is drawn again.
    fn touch_tool(&mut self, id: &str) {
        let Some(index) = self.tools.iter().rposition(|call| call.id == id) else {
            return;
        };
        if let Some(at) = self.chat.iter().rposition(|entry| *entry == ChatEntry::Tool(index)) {
            self.revisions[at] = self.new_revision();
        }
    }

    /// The newest request, `full`, was typed with a paste collapsed: show it as it was
    /// typed (`shown`), whole on demand.
    pub fn collapse_newest_request(&mut self, full: &str, shown: String) {
        if let Some(entry) = self.chat.last_mut()
            && matches!(entry, ChatEntry::User(text) if text == full)
        {
            *entry = ChatEntry::Pasted {
                shown,
                full: full.to_string(),
            };
            self.touch_last();
        }
    }

    fn touch_last(&mut self) {
        let revision = self.new_revision();
        if let Some(last) = self.revisions.last_mut() {
            *last = revision;
        }
    }

    /// Show a stage event: folded into the pipeline's newest marker when it is of the
    /// same stage and nothing the user did came between (a request, an undo, a
    /// compaction asked for, an action between turns), and neither failed; else a new
    /// marker. What the user did by hand is a marker of its own: the chat reads in
    /// order.
    fn add_marker(&mut self, event: StageEvent) {
        let undoable = event.can_be_undone();
        if let Some(at) = self.joins_marker.take()
            && !event.by_user
            && let Some(ChatEntry::Marker(run)) = self.chat.get_mut(at)
            && run
                .newest()
                .is_some_and(|last| last.stage == event.stage && !last.failed())
            && !event.failed()
        {
            self.joins_marker = Some(at);
            run.events.push(event);
            let member = run.events.len() - 1;
            if undoable {
                self.undoable.push((at, member));
            }
            let revision = self.new_revision();
            self.revisions[at] = revision;
            return;
        }
        let by_user = event.by_user;
        self.push(ChatEntry::Marker(MarkerRun::new(event)));
        if undoable {
            self.undoable.push((self.chat.len() - 1, 0));
        }
        self.joins_marker = (!by_user).then_some(self.chat.len() - 1);
    }

    /// The newest firing still in force was undone: its marker says so.
    fn mark_undone(&mut self) {
        let Some((at, member)) = self.undoable.pop() else {
            return;
        };
        if let Some(ChatEntry::Marker(run)) = self.chat.get_mut(at) {
            run.undone.insert(member);
            let revision = self.new_revision();
            self.revisions[at] = revision;
        }
    }

    /// The newest firing still in force, with the chat entry of its marker: what `u`
    /// may undo.
    pub fn newest_undoable(&self) -> Option<(usize, &StageEvent)> {
        let &(at, member) = self.undoable.last()?;
        match self.chat.get(at) {
            Some(ChatEntry::Marker(run)) => run.events.get(member).map(|event| (at, event)),
            _ => None,
        }
    }

    fn new_revision(&mut self) -> u64 {
        self.next_revision += 1;
        self.next_revision
    }

    /// Whether something is animating (spinner, elapsed time, a summary's counter in
    /// the background) and needs ticks.
    pub fn animating(&self) -> bool {
        self.tools.iter().any(|t| matches!(t.state, CallState::Running { .. }))
            || self.is_busy()
            || self.background_summary.is_some()
    }

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
            AgentEvent::SessionStarted {
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
            } => {
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
            AgentEvent::TextDelta { text, .. } => {
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
            AgentEvent::ThinkingDelta { .. } => {}
            AgentEvent::StreamReset {
                attempt,
                delay_ms,
                reason,
                ..
            } => {
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
            AgentEvent::AssistantMessage { message, .. } => {
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
            AgentEvent::ToolStarted { id, name, summary, .. } => {
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
            AgentEvent::ToolRunning { id, .. } => {
                if let Some(call) = self.tools.iter_mut().rev().find(|t| t.id == id) {
                    call.state = CallState::Running { since: Instant::now() };
                    self.turn.working(TurnState::RunningTool(call.name.clone()));
                }
                self.touch_tool(&id);
            }
            AgentEvent::Answered { request_id } => self.turn.answered(request_id),
            AgentEvent::ToolFinished { id, status, output, .. } => {
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
            AgentEvent::Undone {
                stage,
                undid: _,
                chars_before,
                chars_after,
            } => {
                self.joins_marker = None;
                self.mark_undone();
                self.push(ChatEntry::Notice(format!(
                    "↶ undid {stage}: {} → {} chars, the history is as it was before it",
                    crate::compact::short_count(chars_before),
                    crate::compact::short_count(chars_after)
                )));
                self.banner = None;
            }
            AgentEvent::Preview { events } => self.push(ChatEntry::Preview(events)),
            AgentEvent::SummaryReview {
                request_id,
                summary,
                index,
                covers,
                retention,
                if_not_applied,
                in_turn,
            } => self.turn.asked(Question::Review(ReviewPrompt {
                request_id,
                summary,
                index,
                covers,
                retention,
                if_not_applied,
                in_turn,
                shown_at: None,
            })),
            AgentEvent::LossyQuestion {
                request_id,
                estimate,
                limit,
                preview,
                asked_by,
            } => self.turn.asked(Question::Summarise(LossyPrompt {
                request_id,
                estimate,
                limit,
                preview,
                asked_by,
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

    /// The chat's note for a turn that did not complete, live and resumed alike.
    fn note_turn_end(&mut self, outcome: TurnOutcome) {
        match outcome {
            TurnOutcome::Completed => {}
            TurnOutcome::Cancelled => self.push(ChatEntry::Notice("turn cancelled".into())),
            TurnOutcome::Failed => self.push(ChatEntry::Notice("turn failed".into())),
        }
    }

    /// The chat's note for a compaction asked for, with its focus.
    fn note_compaction_request(&mut self, by: CompactionRequester, focus: Option<&str>) {
        let focus = focus
            .map(|f| format!(" (focus: {})", screen_safe(f)))
            .unwrap_or_default();
        self.push(ChatEntry::Notice(format!("compaction requested by the {by}{focus}")));
    }

    /// A call after a compaction reported what it cost in cache: the newest marker's
    /// receipt says so. A miss the server named goes on the marker of the stage that
    /// changed the prefix, or on the instruction files that changed the system prompt.
    fn note_cache_cost(&mut self, point: &CallPoint) {
        if let Some(report) = point.cache.as_ref().filter(|report| report.missed()) {
            self.note_cache_miss(report);
        }
        let Some(rewritten) = point.cache_rewritten else {
            return;
        };
        // A changed instruction file rewrites the cached prefix as a compaction does.
        let Some(at) = self
            .chat
            .iter()
            .rposition(|entry| matches!(entry, ChatEntry::Marker(_) | ChatEntry::Instructions(_)))
        else {
            return;
        };
        let noted = match &mut self.chat[at] {
            ChatEntry::Marker(run) => run.events.last_mut().map(|newest| &mut newest.cache_rewritten),
            ChatEntry::Instructions(note) => Some(&mut note.cache_rewritten),
            _ => None,
        };
        if let Some(noted) = noted {
            *noted = Some(rewritten);
            let revision = self.new_revision();
            self.revisions[at] = revision;
        }
    }

    fn note_cache_miss(&mut self, report: &crate::protocol::CacheReport) {
        let changed_system = report
            .ours
            .as_ref()
            .is_some_and(|ours| ours.contains(&crate::protocol::PrefixChange::System));
        let at = self.chat.iter().rposition(|entry| match entry {
            ChatEntry::Marker(run) => run.events.iter().any(|event| report.stages.contains(&event.id)),
            ChatEntry::Instructions(note) => changed_system && !note.changes.is_empty(),
            _ => false,
        });
        // Nothing of ours on screen caused it: a line of its own where it happened,
        // before the answer that call is still streaming.
        let Some(at) = at else {
            let before_answer = match self.chat.last() {
                Some(ChatEntry::Assistant { streaming: true, .. }) => self.chat.len() - 1,
                _ => self.chat.len(),
            };
            self.chat.insert(before_answer, ChatEntry::Notice(report.line()));
            self.revisions.insert(before_answer, 0);
            // Every entry from there on is at a new place: drawn afresh.
            for place in before_answer..self.revisions.len() {
                self.revisions[place] = self.new_revision();
            }
            return;
        };
        match &mut self.chat[at] {
            ChatEntry::Marker(run) => run.cache_miss = Some(report.clone()),
            ChatEntry::Instructions(note) => note.cache_miss = Some(report.clone()),
            _ => return,
        }
        let revision = self.new_revision();
        self.revisions[at] = revision;
    }

    /// Which stage wrote each file, and where each tool call's full output now is.
    fn note_files(&mut self, event: &StageEvent) {
        for path in &event.paths {
            self.written_by.push((path.clone(), event.stage));
        }
        for saved in &event.saved {
            if let Some(call) = self.tools.iter_mut().rev().find(|call| call.id == saved.tool_use_id) {
                call.saved_path = Some(saved.path.clone());
            }
            self.touch_tool(&saved.tool_use_id);
        }
    }
}

impl AppState {
    /// A background summary moved on: the chat says it quietly (the gauge follows the
    /// context status).
    fn note_background(&mut self, event: &BackgroundEvent) {
        if !matches!(event, BackgroundEvent::Started { .. }) {
            self.background_summary = None;
        }
        self.push(ChatEntry::Notice(event.line()));
    }
}

/// The first marker of a branch: where it came from.
pub fn branch_line(origin: &crate::protocol::Origin) -> String {
    format!("⑂ a branch of {origin}")
}

#[cfg(test)]
mod tests;
