//! The app state, built only from agent events (so it can be tested without a
//! terminal), plus what the user is doing with the screen.

use std::time::{Duration, Instant};

use crate::compact::markers::{MessageKind, classify};
use crate::compact::{Stage, StageEvent};
use crate::context_map::ContextBreakdown;
use crate::message::{ContentBlock, Message};
use crate::protocol::{AgentEvent, CallPoint, ContextStatus, Past, ToolStatus, TurnId, TurnOutcome, Window};
use crate::provider::Usage;
use crate::terminal_text::terminal_safe;

#[derive(Clone, Debug, PartialEq)]
pub enum ChatEntry {
    User(String),
    Assistant {
        text: String,
        streaming: bool,
    },
    /// A compaction stage fired here; later firings of the same stage in the same
    /// turn fold into it (newest last), shown as one line with a count that expands.
    Marker(Vec<StageEvent>),
    /// Something the app says (compaction requested, retries, resumed session).
    Notice(String),
    /// What a compaction would do, from `/compact --preview`: nothing was written.
    Preview(Vec<StageEvent>),
}

impl ChatEntry {
    pub fn paths(&self) -> &[String] {
        match self {
            ChatEntry::Marker(run) => run.last().map_or(&[], |event| &event.paths),
            _ => &[],
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum CallState {
    Running { since: Instant },
    Done { status: ToolStatus, took: Duration },
}

/// Lines of a tool's output the app keeps (and the pane shows when a call expands).
pub const OUTPUT_PREVIEW_LINES: usize = 12;

/// Characters of each kept line.
const OUTPUT_PREVIEW_LINE_CHARS: usize = 400;

/// What the app keeps of a tool's output: its first lines, made safe for the
/// terminal, and how long it was. The whole output is the agent's (and, once a stage
/// saved it, on disk at the call's `saved_path`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputPreview {
    pub head: Vec<String>,
    pub lines: usize,
    pub chars: usize,
}

impl OutputPreview {
    pub fn of(output: &str) -> Self {
        OutputPreview {
            head: output
                .lines()
                .take(OUTPUT_PREVIEW_LINES)
                .map(|line| {
                    terminal_safe(crate::compact::markers::prefix_chars(line, OUTPUT_PREVIEW_LINE_CHARS)).into_owned()
                })
                .collect(),
            lines: output.lines().count(),
            chars: output.chars().count(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub summary: String,
    pub state: CallState,
    pub output: OutputPreview,
    /// Set when a compaction stage saved this result's full text.
    pub saved_path: Option<String>,
    /// The turn that made the call (1 for the first request of the session).
    pub turn: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnState {
    Idle,
    Thinking,
    /// Waiting to retry a failed model call.
    Retrying {
        at: Instant,
        attempt: u32,
        reason: String,
    },
    RunningTool(String),
    Compacting,
    AwaitingPermission,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PermissionPrompt {
    pub request_id: u64,
    pub tool: String,
    pub question: String,
    pub subject: String,
    /// What "always" approves; `None` when the modal does not offer it.
    pub always: Option<String>,
    /// When the modal was first drawn; keys before that, or too soon after, were typed
    /// for something else and are ignored.
    pub shown_at: Option<Instant>,
}

/// `compaction.confirm_lossy`: summarise now or not, with what it would summarise.
#[derive(Clone, Debug, PartialEq)]
pub struct LossyPrompt {
    pub request_id: u64,
    pub estimate: usize,
    pub limit: usize,
    pub preview: Vec<StageEvent>,
    /// When it was first drawn (see [`PermissionPrompt::shown_at`]).
    pub shown_at: Option<Instant>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionInfo {
    pub id: String,
    pub provider: String,
    pub model: String,
    pub workspace: String,
    pub sandbox: String,
    /// Each sandbox layer and what it stops, for `/model`.
    pub sandbox_layers: Vec<String>,
    pub window: Option<Window>,
    /// How the limit was chosen, when the agent had something to say about it.
    pub limit_note: Option<String>,
}

#[derive(Debug)]
pub struct AppState {
    pub chat: Vec<ChatEntry>,
    /// Bumped whenever `chat[i]` changes, so wrapped lines can be cached.
    pub revisions: Vec<u64>,
    /// The last revision handed out; see [`AppState::push`].
    next_revision: u64,
    pub tools: Vec<ToolCall>,
    pub context: Option<ContextStatus>,
    pub timeline: Vec<CallPoint>,
    pub session: SessionInfo,
    pub turn: TurnState,
    /// Between TurnStarted and TurnDone (compaction can also run outside a turn).
    in_turn: bool,
    /// The newest turn the agent started: streamed text of any other is stale.
    current_turn: Option<TurnId>,
    /// Requests started so far, numbering the tool calls' turns.
    pub turns: usize,
    pub banner: Option<String>,
    pub permission: Option<PermissionPrompt>,
    pub lossy: Option<LossyPrompt>,
    pub usage: Option<Usage>,
    pub breakdown: Option<ContextBreakdown>,
    /// Where each file the pipeline wrote came from, for the browser.
    pub written_by: Vec<(String, Stage)>,
}

impl Default for AppState {
    fn default() -> Self {
        AppState {
            chat: Vec::new(),
            revisions: Vec::new(),
            next_revision: 0,
            tools: Vec::new(),
            context: None,
            timeline: Vec::new(),
            session: SessionInfo::default(),
            turn: TurnState::Idle,
            in_turn: false,
            current_turn: None,
            turns: 0,
            banner: None,
            permission: None,
            lossy: None,
            usage: None,
            breakdown: None,
            written_by: Vec::new(),
        }
    }
}

impl AppState {
    pub fn is_busy(&self) -> bool {
        self.turn != TurnState::Idle
    }

    /// A request was sent: busy from now, not only once the agent says the turn
    /// started, so that a second request typed at once is queued instead of sent.
    pub fn submitted(&mut self) {
        self.turn = TurnState::Thinking;
    }

    /// Add a chat entry. Its revision is new to the whole session, so a render cache
    /// keyed by (position, revision) never mistakes it for the entry that was there
    /// before (a streamed reply replaced after a retry).
    pub(crate) fn push(&mut self, entry: ChatEntry) {
        self.chat.push(entry);
        let revision = self.new_revision();
        self.revisions.push(revision);
    }

    fn touch_last(&mut self) {
        let revision = self.new_revision();
        if let Some(last) = self.revisions.last_mut() {
            *last = revision;
        }
    }

    /// Show a stage event: folded into the marker of the same stage since the last
    /// request when there is one (and neither failed), else as a new marker.
    fn add_marker(&mut self, event: StageEvent) {
        let previous = self
            .chat
            .iter()
            .rposition(|entry| matches!(entry, ChatEntry::User(_) | ChatEntry::Marker(_)));
        if let Some(at) = previous
            && let ChatEntry::Marker(run) = &mut self.chat[at]
            && run
                .last()
                .is_some_and(|last| last.stage == event.stage && !last.failed())
            && !event.failed()
        {
            run.push(event);
            let revision = self.new_revision();
            self.revisions[at] = revision;
            return;
        }
        self.push(ChatEntry::Marker(vec![event]));
    }

    fn new_revision(&mut self) -> u64 {
        self.next_revision += 1;
        self.next_revision
    }

    /// Whether something is animating (spinner, elapsed time) and needs ticks.
    pub fn animating(&self) -> bool {
        self.tools.iter().any(|t| matches!(t.state, CallState::Running { .. })) || self.is_busy()
    }

    pub fn apply(&mut self, event: AgentEvent) {
        if let AgentEvent::TextDelta { turn, .. }
        | AgentEvent::ThinkingDelta { turn, .. }
        | AgentEvent::StreamReset { turn, .. } = &event
            && self
                .current_turn
                .is_some_and(|current| current != *turn || !self.in_turn)
        {
            // Streamed after its turn ended (or of an earlier turn): nothing to show.
            return;
        }
        match event {
            AgentEvent::SessionStarted {
                session_id,
                provider,
                model,
                workspace,
                sandbox,
                sandbox_layers,
                window,
                limit_note,
            } => {
                let first = self.session.window.is_none();
                if first && let Some(note) = &limit_note {
                    self.push(ChatEntry::Notice(note.clone()));
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
                };
            }
            AgentEvent::History { messages } => self.load_history(&messages),
            AgentEvent::Replay { past } => self.replay(past),
            AgentEvent::TurnStarted { turn, request } => {
                self.current_turn = Some(turn);
                self.turns += 1;
                self.push(ChatEntry::User(request));
                self.turn = TurnState::Thinking;
                self.in_turn = true;
                self.banner = None;
            }
            AgentEvent::TextDelta { text, .. } => {
                if matches!(self.turn, TurnState::Retrying { .. }) {
                    self.turn = TurnState::Thinking;
                }
                match self.chat.last_mut() {
                    Some(ChatEntry::Assistant {
                        text: current,
                        streaming: true,
                    }) => {
                        current.push_str(&terminal_safe(&text));
                        self.touch_last();
                    }
                    _ => self.push(ChatEntry::Assistant {
                        text: terminal_safe(&text).into_owned(),
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
                self.turn = TurnState::Retrying {
                    at: Instant::now() + Duration::from_millis(delay_ms),
                    attempt: attempt + 1,
                    reason,
                };
            }
            AgentEvent::AssistantMessage { message, .. } => {
                let text = terminal_safe(&message.text()).into_owned();
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
                self.turn = TurnState::RunningTool(name.clone());
                self.tools.push(ToolCall {
                    id,
                    name,
                    summary: terminal_safe(&summary).into_owned(),
                    state: CallState::Running { since: Instant::now() },
                    output: OutputPreview::default(),
                    saved_path: None,
                    turn: self.turns,
                });
            }
            AgentEvent::ToolFinished { id, status, output, .. } => {
                if let Some(call) = self.tools.iter_mut().rev().find(|t| t.id == id) {
                    let took = match call.state {
                        CallState::Running { since } => since.elapsed(),
                        CallState::Done { took, .. } => took,
                    };
                    call.state = CallState::Done { status, took };
                    call.output = OutputPreview::of(&output);
                }
                self.turn = TurnState::Thinking;
            }
            AgentEvent::PermissionRequest {
                request_id,
                tool,
                question,
                subject,
                always,
                ..
            } => {
                self.permission = Some(PermissionPrompt {
                    request_id,
                    tool,
                    question: terminal_safe(&question).into_owned(),
                    subject: terminal_safe(&subject).into_owned(),
                    always,
                    shown_at: None,
                });
                self.turn = TurnState::AwaitingPermission;
            }
            AgentEvent::CompactionRequested { by, focus } => {
                self.turn = TurnState::Compacting;
                let focus = focus.map(|f| format!(" (focus: {f})")).unwrap_or_default();
                self.push(ChatEntry::Notice(format!("compaction requested by the {by}{focus}")));
            }
            AgentEvent::Compaction { event } => {
                self.note_files(&event);
                // A failure is said once, by its marker; a success makes an older banner stale.
                if event.errors.is_empty() && event.replaced > 0 {
                    // The history shrank: an earlier error (too long, a failed stage) is stale.
                    self.banner = None;
                }
                if self.turn == TurnState::Compacting && event.stage == Stage::CompactHistory {
                    self.turn = if self.in_turn {
                        TurnState::Thinking
                    } else {
                        TurnState::Idle
                    };
                }
                self.add_marker(event);
            }
            AgentEvent::Context { status } => self.context = Some(status),
            AgentEvent::ModelCall { point, usage } => {
                self.usage = Some(usage);
                self.note_cache_cost(&point);
                self.timeline.push(point);
            }
            AgentEvent::Undone {
                stage,
                chars_before,
                chars_after,
            } => {
                self.push(ChatEntry::Notice(format!(
                    "↶ undid {stage}: {} → {} chars, the history is as it was before it",
                    crate::compact::short_count(chars_before),
                    crate::compact::short_count(chars_after)
                )));
                self.banner = None;
            }
            AgentEvent::Preview { events } => self.push(ChatEntry::Preview(events)),
            AgentEvent::LossyQuestion {
                request_id,
                estimate,
                limit,
                preview,
            } => {
                self.lossy = Some(LossyPrompt {
                    request_id,
                    estimate,
                    limit,
                    preview,
                    shown_at: None,
                });
                self.turn = TurnState::AwaitingPermission;
            }
            AgentEvent::Breakdown { breakdown } => self.breakdown = Some(breakdown),
            AgentEvent::Notice { message } => self.push(ChatEntry::Notice(message)),
            AgentEvent::Error { message } => {
                if self.turn == TurnState::Compacting && !self.in_turn {
                    self.turn = TurnState::Idle;
                }
                self.banner = Some(message);
            }
            AgentEvent::TurnDone { outcome, .. } => {
                self.turn = TurnState::Idle;
                self.in_turn = false;
                self.permission = None;
                self.lossy = None;
                if let Some(ChatEntry::Assistant { streaming, .. }) = self.chat.last_mut() {
                    *streaming = false;
                    self.touch_last();
                }
                if outcome == TurnOutcome::Cancelled {
                    self.push(ChatEntry::Notice("turn cancelled".into()));
                }
            }
        }
    }

    /// A saved tool result's path names its call by the tool_use id.
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
                self.push(ChatEntry::User(terminal_safe(&text).into_owned()));
            }
            MessageKind::Assistant => {
                let text = terminal_safe(&message.text()).into_owned();
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
                ContentBlock::ToolUse { id, name, input, .. } => self.tools.push(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    summary: terminal_safe(&crate::tools::input_summary(name, input)).into_owned(),
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
                        if *is_error == Some(true) {
                            call.state = CallState::Done {
                                status: ToolStatus::Error,
                                took: Duration::ZERO,
                            };
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A call after a compaction reported what it cost in cache: the newest marker's
    /// receipt says so.
    fn note_cache_cost(&mut self, point: &CallPoint) {
        let Some(rewritten) = point.cache_rewritten else {
            return;
        };
        let Some(at) = self
            .chat
            .iter()
            .rposition(|entry| matches!(entry, ChatEntry::Marker(_)))
        else {
            return;
        };
        if let ChatEntry::Marker(run) = &mut self.chat[at]
            && let Some(newest) = run.last_mut()
        {
            newest.cache_rewritten = Some(rewritten);
            let revision = self.new_revision();
            self.revisions[at] = revision;
        }
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
        }
    }

    /// A resumed session as it happened: its messages, markers and tool calls in
    /// order, and its timeline.
    fn replay(&mut self, past: Vec<Past>) {
        self.chat.clear();
        self.revisions.clear();
        self.tools.clear();
        self.timeline.clear();
        let mut messages = 0;
        for item in past {
            match item {
                Past::Message { message } => {
                    messages += 1;
                    self.show_message(&message);
                }
                Past::Stage { event } => {
                    self.note_files(&event);
                    self.add_marker(event);
                }
                Past::Call { point } => {
                    self.note_cache_cost(&point);
                    self.timeline.push(point);
                }
                Past::Undo { stage } => self.push(ChatEntry::Notice(format!("↶ undid {stage}"))),
            }
        }
        self.push(ChatEntry::Notice(format!(
            "resumed a session of {}",
            crate::compact::counted(messages, "message", "messages")
        )));
    }

    fn load_history(&mut self, messages: &[Message]) {
        self.chat.clear();
        self.revisions.clear();
        self.tools.clear();
        for message in messages {
            self.show_message(message);
        }
        if !messages.is_empty() {
            self.push(ChatEntry::Notice(format!(
                "resumed a session of {}",
                crate::compact::counted(messages.len(), "message", "messages")
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;

    fn stage_event(stage: Stage, paths: &[&str]) -> StageEvent {
        StageEvent {
            messages_after: 49,
            chars_after: 41_900,
            paths: paths.iter().map(|p| p.to_string()).collect(),
            saved: paths
                .iter()
                .filter_map(|path| {
                    let id = path.strip_prefix(".task_outputs/tool-results/")?.strip_suffix(".txt")?;
                    Some(crate::compact::SavedResult {
                        tool_use_id: id.to_string(),
                        path: path.to_string(),
                    })
                })
                .collect(),
            replaced: 12,
            ..StageEvent::start(stage, 60, 84_100, String::new())
        }
    }

    /// A recorded event sequence gives the expected panes.
    #[test]
    fn a_recorded_turn_builds_chat_tools_and_timeline() {
        let mut state = AppState::default();
        let events = vec![
            AgentEvent::TurnStarted {
                turn: crate::protocol::TurnId(1),
                request: "survey".into(),
            },
            AgentEvent::TextDelta {
                turn: crate::protocol::TurnId(1),
                text: "Look".into(),
            },
            AgentEvent::StreamReset {
                turn: crate::protocol::TurnId(1),
                attempt: 1,
                delay_ms: 1000,
                reason: "overloaded".into(),
            },
            AgentEvent::TextDelta {
                turn: crate::protocol::TurnId(1),
                text: "Let me ".into(),
            },
            AgentEvent::TextDelta {
                turn: crate::protocol::TurnId(1),
                text: "look.".into(),
            },
            AgentEvent::AssistantMessage {
                turn: crate::protocol::TurnId(1),
                message: Message::assistant_text("Let me look."),
            },
            AgentEvent::ToolStarted {
                turn: crate::protocol::TurnId(1),
                id: "toolu_1".into(),
                name: "bash".into(),
                summary: "seq 1 100000".into(),
            },
            AgentEvent::ToolFinished {
                turn: crate::protocol::TurnId(1),
                id: "toolu_1".into(),
                name: "bash".into(),
                status: ToolStatus::Ok,
                output: "1\n2\n".into(),
            },
            AgentEvent::Compaction {
                event: stage_event(Stage::ToolResultBudget, &[".task_outputs/tool-results/toolu_1.txt"]),
            },
            AgentEvent::Context {
                status: ContextStatus {
                    estimate: 41_900,
                    limit: 50_000,
                    target: 40_000,
                    messages: 3,
                    snip_max_messages: 50,
                    fixed: 2_400,
                    tokens: None,
                },
            },
            AgentEvent::ModelCall {
                point: CallPoint {
                    before: Some(60_000),
                    estimate: 41_900,
                    messages: 3,
                    request_chars: Some(44_300),
                    input_tokens: Some(10_000),
                    stages: vec![Stage::ToolResultBudget],
                    ..CallPoint::default()
                },
                usage: Usage {
                    input_tokens: 10_000,
                    ..Usage::default()
                },
            },
            AgentEvent::TurnDone {
                turn: crate::protocol::TurnId(1),
                outcome: TurnOutcome::Completed,
            },
        ];
        for event in events {
            state.apply(event);
        }
        assert_eq!(state.chat.len(), 4, "{:?}", state.chat);
        assert_eq!(state.chat[0], ChatEntry::User("survey".into()));
        assert!(matches!(&state.chat[1], ChatEntry::Notice(n) if n.starts_with("retrying (attempt 2)")));
        assert_eq!(
            state.chat[2],
            ChatEntry::Assistant {
                text: "Let me look.".into(),
                streaming: false
            }
        );
        assert!(matches!(&state.chat[3], ChatEntry::Marker(run) if run[0].stage == Stage::ToolResultBudget));
        assert_eq!(
            state.tools[0].saved_path.as_deref(),
            Some(".task_outputs/tool-results/toolu_1.txt")
        );
        assert!(matches!(
            state.tools[0].state,
            CallState::Done {
                status: ToolStatus::Ok,
                ..
            }
        ));
        assert_eq!(state.timeline.len(), 1);
        assert_eq!(state.timeline[0].stages, vec![Stage::ToolResultBudget]);
        assert_eq!(state.turn, TurnState::Idle);
    }

    #[test]
    fn a_user_compaction_outside_a_turn_ends_idle() {
        let mut state = AppState::default();
        state.apply(AgentEvent::CompactionRequested {
            by: crate::protocol::CompactionRequester::User,
            focus: None,
        });
        assert_eq!(state.turn, TurnState::Compacting);
        state.apply(AgentEvent::Compaction {
            event: stage_event(Stage::CompactHistory, &[".transcripts/t.jsonl"]),
        });
        assert_eq!(state.turn, TurnState::Idle);
    }

    #[test]
    fn a_reply_replaced_after_a_retry_gets_a_revision_never_seen_at_its_place() {
        let mut state = AppState::default();
        state.apply(AgentEvent::TurnStarted {
            turn: crate::protocol::TurnId(1),
            request: "go".into(),
        });
        state.apply(AgentEvent::TextDelta {
            turn: crate::protocol::TurnId(1),
            text: "HALF".into(),
        });
        let (at, stale) = (state.chat.len() - 1, state.revisions[state.chat.len() - 1]);
        state.apply(AgentEvent::StreamReset {
            turn: crate::protocol::TurnId(1),
            attempt: 1,
            delay_ms: 1_000,
            reason: "overloaded".into(),
        });
        assert!(matches!(&state.chat[at], ChatEntry::Notice(n) if n.starts_with("retrying")));
        assert_ne!(
            state.revisions[at], stale,
            "the render cache must not reuse the partial text"
        );
        state.apply(AgentEvent::TextDelta {
            turn: crate::protocol::TurnId(1),
            text: "clean\u{1b}]52;c;aGk=\u{7} text\u{1b}[2J".into(),
        });
        assert!(matches!(state.chat.last(), Some(ChatEntry::Assistant { text, .. }) if text == "clean text"));
    }

    #[test]
    fn a_retry_shows_as_retrying_until_text_flows_and_a_compaction_clears_a_stale_banner() {
        let mut state = AppState::default();
        state.apply(AgentEvent::TurnStarted {
            turn: crate::protocol::TurnId(1),
            request: "go".into(),
        });
        state.apply(AgentEvent::StreamReset {
            turn: crate::protocol::TurnId(1),
            attempt: 1,
            delay_ms: 1_100,
            reason: "overloaded".into(),
        });
        let label = crate::tui::status::turn_label(&state.turn);
        assert!(
            label.starts_with("retrying in 1.") && label.ends_with("(attempt 2): overloaded"),
            "{label}"
        );
        state.apply(AgentEvent::TextDelta {
            turn: crate::protocol::TurnId(1),
            text: "ok".into(),
        });
        assert_eq!(state.turn, TurnState::Thinking);
        state.apply(AgentEvent::Error {
            message: "the prompt is too long".into(),
        });
        assert!(state.banner.is_some());
        state.apply(AgentEvent::Compaction {
            event: stage_event(Stage::CompactHistory, &[".transcripts/t.jsonl"]),
        });
        assert_eq!(state.banner, None, "the banner went stale once the history shrank");
    }

    #[test]
    fn firings_of_one_stage_in_one_turn_fold_into_one_marker() {
        let mut state = AppState::default();
        state.apply(AgentEvent::TurnStarted {
            turn: crate::protocol::TurnId(1),
            request: "survey".into(),
        });
        state.apply(AgentEvent::Compaction {
            event: stage_event(Stage::SnipCompact, &[".transcripts/a.jsonl"]),
        });
        state.apply(AgentEvent::AssistantMessage {
            turn: crate::protocol::TurnId(1),
            message: Message::assistant_text("reading on"),
        });
        state.apply(AgentEvent::Compaction {
            event: stage_event(Stage::SnipCompact, &[".transcripts/b.jsonl"]),
        });
        let markers: Vec<usize> = state
            .chat
            .iter()
            .filter_map(|entry| match entry {
                ChatEntry::Marker(run) => Some(run.len()),
                _ => None,
            })
            .collect();
        assert_eq!(markers, vec![2], "one marker, two firings");
        assert_eq!(
            state.chat[1].paths(),
            [".transcripts/b.jsonl".to_string()],
            "links go to the newest"
        );
        state.apply(AgentEvent::Compaction {
            event: stage_event(Stage::MicroCompact, &[]),
        });
        state.apply(AgentEvent::TurnStarted {
            turn: crate::protocol::TurnId(1),
            request: "next".into(),
        });
        state.apply(AgentEvent::Compaction {
            event: stage_event(Stage::MicroCompact, &[]),
        });
        let count = state
            .chat
            .iter()
            .filter(|entry| matches!(entry, ChatEntry::Marker(_)))
            .count();
        assert_eq!(count, 3, "a new request starts new markers");
    }

    #[test]
    fn a_resumed_session_shows_its_messages_markers_tools_and_timeline() {
        let mut state = AppState::default();
        let call = Message::blocks(
            Role::Assistant,
            vec![ContentBlock::tool_use(
                "toolu_1",
                "read_file",
                serde_json::json!({"path": "a.rs"}),
            )],
        );
        let result = Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result("toolu_1", "fn a() {}", false)],
        );
        state.apply(AgentEvent::Replay {
            past: vec![
                Past::Message {
                    message: Message::user_text("read a.rs"),
                },
                Past::Message { message: call },
                Past::Message { message: result },
                Past::Stage {
                    event: stage_event(Stage::MicroCompact, &[".task_outputs/tool-results/toolu_1.txt"]),
                },
                Past::Call {
                    point: CallPoint {
                        before: Some(1_400),
                        estimate: 900,
                        messages: 4,
                        input_tokens: Some(300),
                        stages: vec![Stage::MicroCompact],
                        ..CallPoint::default()
                    },
                },
                Past::Message {
                    message: Message::assistant_text("It defines a."),
                },
            ],
        });
        assert!(matches!(&state.chat[0], ChatEntry::User(text) if text == "read a.rs"));
        assert!(matches!(&state.chat[1], ChatEntry::Marker(run) if run[0].stage == Stage::MicroCompact));
        assert!(matches!(&state.chat[2], ChatEntry::Assistant { text, .. } if text == "It defines a."));
        assert!(matches!(state.chat.last(), Some(ChatEntry::Notice(n)) if n == "resumed a session of 4 messages"));
        assert_eq!(state.tools.len(), 1);
        assert_eq!(state.tools[0].output.head, ["fn a() {}"]);
        assert_eq!(
            state.tools[0].saved_path.as_deref(),
            Some(".task_outputs/tool-results/toolu_1.txt")
        );
        assert_eq!(state.timeline.len(), 1);
        assert_eq!(state.timeline[0].stages, vec![Stage::MicroCompact]);
        assert_eq!(state.timeline[0].input_tokens, Some(300));
    }

    #[test]
    fn history_restores_prompts_markers_and_tools() {
        let mut state = AppState::default();
        let messages = vec![
            Message::user_text("task"),
            Message::user_text("[5 messages archived at .transcripts/t.jsonl]"),
            Message::blocks(
                Role::Assistant,
                vec![ContentBlock::ToolUse {
                    id: "a".into(),
                    name: "glob".into(),
                    input: serde_json::json!({"pattern": "*"}),
                    extra: Default::default(),
                }],
            ),
        ];
        state.apply(AgentEvent::History { messages });
        assert_eq!(state.chat[0], ChatEntry::User("task".into()));
        assert!(matches!(&state.chat[1], ChatEntry::Notice(n) if n.contains("archived at .transcripts/t.jsonl")));
        assert_eq!(state.tools[0].summary, "*");
    }

    #[test]
    fn the_app_keeps_a_preview_of_an_output_not_the_output() {
        let long = (0..5_000).map(|n| format!("line {n}\n")).collect::<String>();
        let preview = OutputPreview::of(&long);
        assert_eq!(preview.head.len(), OUTPUT_PREVIEW_LINES);
        assert_eq!((preview.lines, preview.chars), (5_000, long.chars().count()));
        let wide = OutputPreview::of(&format!("\u{1b}]52;c;x\u{7}{}", "w".repeat(10_000)));
        assert!(wide.head[0].chars().count() <= OUTPUT_PREVIEW_LINE_CHARS);
        assert!(!wide.head[0].contains('\u{1b}'), "made safe for the terminal");
    }

    #[test]
    fn text_streamed_outside_its_turn_is_not_shown() {
        let mut state = AppState::default();
        let delta = |turn, text: &str| AgentEvent::TextDelta {
            turn: TurnId(turn),
            text: text.into(),
        };
        for event in [
            AgentEvent::TurnStarted {
                turn: TurnId(1),
                request: "first".into(),
            },
            delta(1, "one"),
            AgentEvent::TurnDone {
                turn: TurnId(1),
                outcome: TurnOutcome::Cancelled,
            },
            delta(1, " late"),
            AgentEvent::TurnStarted {
                turn: TurnId(2),
                request: "second".into(),
            },
            delta(1, "stale"),
            delta(2, "two"),
        ] {
            state.apply(event);
        }
        let texts: Vec<&str> = state
            .chat
            .iter()
            .filter_map(|entry| match entry {
                ChatEntry::Assistant { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["one", "two"]);
    }
}
