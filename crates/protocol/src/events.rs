//! What the agent tells the UI: every status the screen shows is built from these.

use serde::{Deserialize, Serialize};

use super::{
    BackgroundEvent, CallPoint, CompactionRequester, ContextBreakdown, ContextStatus, InstructionsNote, Past,
    ToolStatus, TurnOutcome, Window,
};
use crate::compact::StageEvent;
use crate::message::Message;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The project's instruction files: at the start, on `/instructions`, and when
    /// one changed before a model call.
    Instructions {
        note: InstructionsNote,
    },
    /// The MCP servers still starting and those that failed, whenever that changes:
    /// what the status line shows.
    McpServers {
        starting: Vec<String>,
        failed: Vec<String>,
    },
    SessionStarted {
        /// The journal's id; empty when the session is not journaled.
        session_id: String,
        provider: String,
        model: String,
        workspace: String,
        /// What confines commands, e.g. `workspace-write` (see `SandboxState::mode`).
        sandbox: String,
        /// Each layer of the sandbox, active or missing and what it stops (`/model`).
        #[serde(default)]
        sandbox_layers: Vec<String>,
        /// The model's context window, found or configured.
        window: Window,
        /// How the limit was chosen, when there is something to say about it.
        limit_note: Option<String>,
        /// The note warns of trouble (the window is too small for what is sent), not
        /// only how the limit was chosen: print mode says it at the start.
        #[serde(default)]
        limit_warning: bool,
        /// A read-only view of a saved session: what it is, in a phrase. Nothing
        /// typed is sent in it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        read_only: Option<String>,
    },
    /// A resumed session as it happened, oldest first, sent once at start: what the
    /// app shows of it (the history itself follows as [`AgentEvent::History`]).
    Replay {
        past: Vec<Past>,
        /// How many messages the history holds now (compaction having replaced some
        /// of those the session ever had).
        #[serde(default)]
        in_context: usize,
    },
    /// A request given back to edit: the fork was made just before it.
    EditRequest {
        text: String,
    },
    /// A background summary's progress, for the gauge and a quiet line in the chat.
    Background {
        event: BackgroundEvent,
    },
    History {
        messages: Vec<Message>,
    },
    TurnStarted {
        turn: TurnId,
        request: String,
    },
    TextDelta {
        turn: TurnId,
        text: String,
    },
    ThinkingDelta {
        turn: TurnId,
        text: String,
    },
    /// The streamed attempt failed and is being retried: discard its partial text.
    StreamReset {
        turn: TurnId,
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// An assistant message was added to the history.
    AssistantMessage {
        turn: TurnId,
        message: Message,
    },
    /// A call of the model's response is next: asked about, refused, or run.
    ToolStarted {
        turn: TurnId,
        id: String,
        name: String,
        summary: String,
    },
    /// The question `request_id` (a permission, or a summary in review) was answered:
    /// the turn goes on.
    Answered {
        request_id: u64,
    },
    /// The call now runs (after any question was answered): its time starts here.
    ToolRunning {
        turn: TurnId,
        id: String,
    },
    ToolFinished {
        turn: TurnId,
        id: String,
        name: String,
        status: ToolStatus,
        /// The output as the model sees it (possibly long).
        output: String,
    },
    PermissionRequest {
        turn: TurnId,
        request_id: u64,
        tool: String,
        question: String,
        /// Exactly what would run or be opened: the command, or the path.
        subject: String,
        /// What "always" would approve, e.g. `bash: "cargo test …"`; `None` when it is
        /// not offered (destructive or unclassifiable commands).
        always: Option<String>,
    },
    /// A refusal as too long is being answered: the reactive stage runs (and may ask
    /// a model for a summary) before the call is sent again.
    Compacting,
    /// The model or the user asked for compaction; the summary is being written.
    CompactionRequested {
        by: CompactionRequester,
        focus: Option<String>,
    },
    Compaction {
        event: StageEvent,
    },
    Context {
        status: ContextStatus,
    },
    /// A model call finished: its timeline point, with what it reported.
    ModelCall {
        point: CallPoint,
        usage: Usage,
    },
    /// A summary is being written (in the `background`, or for the turn): the
    /// characters of it streamed so far, 0 as a summary call starts.
    Summarising {
        background: bool,
        chars: usize,
    },
    /// The server said why the call's prompt cache could not reuse the previous
    /// call's prefix (or that it was still comparing); also on the call's point.
    Cache {
        report: super::CacheReport,
    },
    /// `/undo` put the history back as it was before the newest `stage`.
    Undone {
        stage: crate::compact::Stage,
        /// The id of the stage undone.
        undid: String,
        chars_before: usize,
        chars_after: usize,
    },
    /// `compaction.review_summaries` (or `/summary`): a summary is written and waits
    /// in the one review step before the model reads it: apply it, edit it, or not
    /// now (the history as it was).
    SummaryReview {
        request_id: u64,
        /// What leaves the context, in a line: how many messages, their size, where
        /// they are kept, and what the summary takes in their place.
        #[serde(default)]
        leaves: String,
        /// The summary as the model wrote it.
        summary: String,
        /// The index scratchpad keeps after it (read-only).
        index: String,
        /// How many messages it stands for.
        covers: usize,
        /// What the summary and the index keep of the record (`keeps 18/20: …`).
        retention: Option<String>,
        /// What not applying it leaves, in a phrase (the history as it was, and
        /// whether a call then goes over the limit).
        #[serde(default)]
        if_not_applied: String,
        /// Whether a turn waits on it (Esc cancels the turn) or none runs (Esc
        /// closes it).
        #[serde(default)]
        in_turn: bool,
    },
    /// The answer to `Op::Preview`: the receipts `/compact` would produce.
    Preview {
        events: Vec<StageEvent>,
    },
    /// The answer to `Op::Inspect`.
    Breakdown {
        breakdown: ContextBreakdown,
    },
    Error {
        message: String,
    },
    /// Something the user should know that is not an error, e.g. what restoring a
    /// session mended.
    Notice {
        message: String,
    },
    TurnDone {
        turn: TurnId,
        outcome: TurnOutcome,
    },
    /// What was asked between turns (`/compact`, `/summary`, an undo, a cancel, ...)
    /// is done and no turn runs: the app is ready for a request.
    Ready,
}

/// Which request of the session a turn-scoped event belongs to (1 for the first), so
/// that nothing of one turn is taken for another's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TurnId(pub u64);

/// Token counts as the API reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    /// Of the output, the tokens spent thinking, where the server reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_tokens: Option<u64>,
}

impl Usage {
    /// Everything the prompt cost, cached or not.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }
}
