//! The two channels between the UI (or headless driver) and the agent task: `Op`s in,
//! `AgentEvent`s out. Everything the screen shows is built from these events.

use serde::{Deserialize, Serialize};

use crate::compact::StageEvent;
use crate::message::Message;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    Submit {
        text: String,
    },
    Cancel,
    /// `/compact [focus]`.
    Compact {
        focus: Option<String>,
    },
    Permission {
        request_id: u64,
        answer: PermissionAnswer,
    },
    /// `/clear`: start a new conversation (and session journal).
    Clear,
    /// List the session's approvals (and first revoke number `revoke`, 1-based).
    Permissions {
        revoke: Option<usize>,
    },
    /// `/context`: ask for a breakdown of what the context holds.
    Inspect,
    /// `/context`'s refresh: count the prompt tokens exactly, where the provider can.
    CountTokens,
    /// `/undo`, or `u` on a marker: put the history back as it was before the newest
    /// compaction stage. With a stage id, only if that stage is the newest: a marker
    /// that is not (or was undone already) must not undo another stage.
    Undo {
        stage_id: Option<String>,
    },
    /// `r` in `/context`: a shortened tool result back in full from its saved file.
    Restore {
        tool_use_id: String,
    },
    /// `p` in `/context`: stage 3 leaves a pinned tool result whole.
    Pin {
        tool_use_id: String,
        pinned: bool,
    },
    /// `d` in `/context`: a tool result to the archive now, with a receipt.
    Drop {
        tool_use_id: String,
    },
    /// `/compact --preview [focus]`: what `/compact` would do, writing nothing.
    Preview {
        focus: Option<String>,
    },
    /// `/instructions`: read the project's instruction files again and show them.
    Instructions,
    /// `/mcp`: list the MCP servers, or first restart or disable one for the session.
    Mcp {
        action: Option<McpAction>,
    },
    /// `/resume`: continue another session of this workspace instead of this one.
    Resume {
        session: String,
    },
    /// A new session from a point of this one (`session: None`) or of another, the
    /// parent left as it was; the agent continues in the new one.
    Fork {
        session: Option<String>,
        at: ForkAt,
    },
    /// The answer to [`AgentEvent::LossyQuestion`]: summarise now, or send this call
    /// over the limit.
    Lossy {
        request_id: u64,
        compact_now: bool,
    },
    Quit,
}

impl Op {
    /// Whether the op sends, runs or changes something (what a read-only view refuses);
    /// looking, previewing and counting do not.
    pub fn changes_the_session(&self) -> bool {
        match self {
            Op::Submit { .. }
            | Op::Compact { .. }
            | Op::Clear
            | Op::Undo { .. }
            | Op::Restore { .. }
            | Op::Pin { .. }
            | Op::Drop { .. }
            | Op::Resume { .. }
            | Op::Fork { .. } => true,
            Op::Inspect
            | Op::CountTokens
            | Op::Preview { .. }
            | Op::Instructions
            | Op::Mcp { .. }
            | Op::Permissions { .. }
            | Op::Permission { .. }
            | Op::Lossy { .. }
            | Op::Cancel
            | Op::Quit => false,
        }
    }
}

/// What `/mcp` does to a server before listing them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpAction {
    Restart(String),
    Disable(String),
    /// Trust this version of the workspace's `.mcp.json` and start its servers.
    Trust,
}

/// Who asked for a compaction outside the automatic pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionRequester {
    /// `/compact` in the app.
    User,
    /// The `compact` tool.
    Model,
}

impl std::fmt::Display for CompactionRequester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CompactionRequester::User => "user",
            CompactionRequester::Model => "model",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAnswer {
    AllowOnce,
    Deny,
    /// Denied, with the user's words for the model: why not, or what to do instead.
    DenyBecause(String),
    AlwaysForSession,
    /// Always, in this project: kept outside the workspace for later sessions.
    AlwaysForProject,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    Refused,
    Cancelled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed,
    Failed,
    Cancelled,
}

/// One thing that happened in an earlier run of a session, from its journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Past {
    /// A message joined the history.
    Message { message: crate::message::Message },
    /// A compaction stage fired.
    Stage { event: Box<crate::compact::StageEvent> },
    /// A model call.
    Call { point: CallPoint },
    /// The newest compaction stage then was undone: `undid` is its id (empty in
    /// journals from before stages had ids).
    Undo {
        stage: crate::compact::Stage,
        #[serde(default)]
        undid: String,
    },
    /// A turn that did not complete (cancelled or failed).
    TurnEnded { outcome: TurnOutcome },
    /// `/compact` or the `compact` tool asked for a compaction, with its focus.
    CompactionRequested {
        by: CompactionRequester,
        focus: Option<String>,
    },
    /// What `/compact --preview` showed.
    Preview { events: Vec<crate::compact::StageEvent> },
    /// The project's instruction files changed during the session.
    Instructions { note: InstructionsNote },
    /// The session is a fork: where it branched from (its first record).
    Forked { origin: Origin },
    /// A summary being prepared in the background started, finished, failed or was
    /// set aside.
    Background { event: BackgroundEvent },
}

/// What became of a summary prepared in the background, for stage 4 to swap in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BackgroundEvent {
    /// It started on the oldest `messages` messages, the estimate at `percent` of the limit.
    Started { percent: usize, messages: usize },
    /// It is written, ready for the limit.
    Ready { took_ms: u64 },
    /// The limit came first: the turn waits for it (started `started_secs_ago`).
    Waiting { started_secs_ago: u64 },
    /// The summary call failed; stage 4 will summarise as usual.
    Failed { error: String },
    /// It no longer stands for the start of the history (or the session changed).
    Discarded { reason: String },
}

impl BackgroundEvent {
    /// A background summary's progress in one quiet line (the chat, headless output).
    pub fn line(&self) -> String {
        match self {
            BackgroundEvent::Started { percent, messages } => format!(
                "◌ at {percent}% of the limit: summarising the oldest {} in the background, to swap in at the limit",
                crate::compact::counted(*messages, "message", "messages")
            ),
            BackgroundEvent::Ready { took_ms } => format!(
                "◌ the background summary is ready ({:.1} s); stage 4 will swap it in with no wait",
                *took_ms as f64 / 1000.0
            ),
            BackgroundEvent::Waiting { started_secs_ago } => format!(
                "◌ at the limit before the background summary is done: waiting for it (started {started_secs_ago} s ago)"
            ),
            BackgroundEvent::Failed { error } => {
                format!("◌ the background summary failed ({error}); at the limit the history is summarised as usual")
            }
            BackgroundEvent::Discarded { reason } => format!("◌ the background summary was set aside: {reason}"),
        }
    }
}

/// The project's instruction files as the system prompt carries them: said at the
/// start, on `/instructions`, and when they change (which rewrites the cached prefix).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionsNote {
    pub files: Vec<InstructionRow>,
    /// Files left out or cut, a line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// What changed since the files were last read: empty at the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<String>,
    /// Cached prompt tokens the next call had to write again (known after that call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_rewritten: Option<u64>,
}

impl InstructionsNote {
    /// The one line that says it: the files with their sizes, or what changed.
    pub fn headline(&self) -> String {
        if self.changes.is_empty() {
            let listed: Vec<String> = self.files.iter().map(InstructionRow::sized).collect();
            format!("instructions: {}", listed.join(", "))
        } else {
            format!(
                "instructions changed: {} · the system prompt changed, so its cached prefix is written again",
                self.changes.join(", ")
            )
        }
    }
}

impl InstructionRow {
    /// `AGENTS.md (2.1k)`, `AGENTS.md (32.0k, cut)`.
    pub fn sized(&self) -> String {
        format!("{} {}", self.path, self.size())
    }

    /// `(2.1k)`, `(32.0k, cut)`.
    pub fn size(&self) -> String {
        format!(
            "({}{})",
            crate::compact::short_count(self.chars),
            if self.cut { ", cut" } else { "" }
        )
    }
}

/// One instruction file: its path as shown (the link opens it) and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionRow {
    pub path: String,
    pub chars: usize,
    /// Its block's characters in the system prompt (delimiters included): its share
    /// of the fixed part.
    pub prompt_chars: usize,
    pub cut: bool,
}

impl Past {
    /// Whether this is a note the chat showed and nothing else: what a journal's
    /// `shown` record may hold (never a message or a stage, which have records of
    /// their own that replay checks).
    pub fn is_chat_only(&self) -> bool {
        matches!(
            self,
            Past::TurnEnded { .. }
                | Past::CompactionRequested { .. }
                | Past::Preview { .. }
                | Past::Background { .. }
                | Past::Instructions { .. }
        )
    }
}

/// Where a session branched from: its parent's id and the point in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub session: String,
    #[serde(flatten)]
    pub at: ForkPoint,
}

/// A point of a session, as a fork records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum ForkPoint {
    /// Just before the `position`-th message the session showed (1-based).
    Message { position: usize },
    /// Just before compaction stage `id` changed the history.
    Stage { id: String, stage: crate::compact::Stage },
}

impl std::fmt::Display for ForkPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForkPoint::Message { position } => write!(f, "before message {position}"),
            ForkPoint::Stage { stage, .. } => write!(f, "before {stage}"),
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            ForkPoint::Message { .. } => write!(f, "session {} {}", self.session, self.at),
            ForkPoint::Stage { id, .. } => write!(f, "session {} {} ({id})", self.session, self.at),
        }
    }
}

/// A point as the user names it: a message position, or a stage's id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForkAt {
    Message(usize),
    Stage(String),
}

impl std::str::FromStr for ForkAt {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("give a message position (1, 2, …) or a compaction stage's id".into());
        }
        Ok(match text.parse::<usize>() {
            Ok(position) => ForkAt::Message(position),
            Err(_) => ForkAt::Stage(text.to_string()),
        })
    }
}

/// One model call as the timeline shows it: the estimate before the compaction that
/// preceded it and the estimate sent, so a compaction is a vertical drop.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallPoint {
    /// The estimate before the stages of `stages` ran (absent in older journals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<usize>,
    /// The estimate sent.
    pub estimate: usize,
    pub messages: usize,
    /// Characters of the whole request: the fixed part plus `estimate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_chars: Option<usize>,
    /// Token-like units of the whole request (a digit or a mark each, a unit per four
    /// letters): what moves the figure after a compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_units: Option<usize>,
    /// Prompt tokens the call reported (input + cache read + cache creation).
    pub input_tokens: Option<u64>,
    /// The tokens the gauge showed for this request before it was sent, to be held
    /// against `input_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_tokens: Option<u64>,
    /// Stages that fired since the previous call.
    #[serde(default)]
    pub stages: Vec<crate::compact::Stage>,
    /// Prompt tokens this call read from the provider's cache (Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Cached prompt tokens of the previous call that this call had to write again
    /// because the stages before it changed the prompt: what the compaction cost in
    /// cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_rewritten: Option<u64>,
    /// A background summary started (at this share of the limit) since the previous
    /// call, and whether one became ready: the timeline marks both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_started: Option<usize>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background_ready: bool,
}

impl CallPoint {
    /// The estimate before compaction: `estimate` itself when nothing fired.
    pub fn before(&self) -> usize {
        self.before.unwrap_or(self.estimate).max(self.estimate)
    }
}

/// What the context holds now, for the gauge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextStatus {
    /// The seed's estimate of the messages: what the limit applies to.
    pub estimate: usize,
    pub limit: usize,
    pub target: usize,
    pub messages: usize,
    pub snip_max_messages: usize,
    /// The system prompt and tool definitions, sent with every request and outside
    /// the limit.
    pub fixed: usize,
    /// Tokens of the last call, or re-estimated from its ratio after a compaction.
    pub tokens: Option<TokenFigure>,
    /// A summary being prepared in the background for stage 4.
    #[serde(default)]
    pub background: Option<BackgroundStatus>,
}

/// A background summary as the gauge marks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundStatus {
    /// The estimate's share of the limit when it started.
    pub started_at_percent: usize,
    pub ready: bool,
}

/// The model's context window and where that figure came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub tokens: u64,
    pub source: WindowSource,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum WindowSource {
    /// The server said so, e.g. llama.cpp's `/props`.
    Server { endpoint: String },
    /// The table of known models.
    ModelTable { family: String },
    /// `provider.context_window_tokens`.
    Configured,
}

impl std::fmt::Display for WindowSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowSource::Server { endpoint } => write!(f, "from the server's {endpoint}"),
            WindowSource::ModelTable { family } => write!(f, "known for {family}"),
            WindowSource::Configured => write!(f, "from provider.context_window_tokens"),
        }
    }
}

/// Where a token figure comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenBasis {
    /// Reported by the API for the last call.
    Reported,
    /// The offline demo's count: a stated rule applied to the request it received.
    DemoCount,
    /// Re-estimated from the last measured ratio after the history changed by
    /// compaction; replaced when the next call reports.
    Estimated,
    /// Counted exactly by the provider's counting endpoint for the history as it is.
    Counted,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenFigure {
    pub tokens: u64,
    pub window_tokens: u64,
    /// Characters of the request `tokens` is for (fixed part + estimate).
    pub request_chars: usize,
    /// `request_chars / tokens`: measured by a call, or re-estimated by content after
    /// a compaction, so that it applies to what the context holds.
    pub chars_per_token: f64,
    pub basis: TokenBasis,
}

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
    /// The question `request_id` (a permission or the summarise question) was answered:
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
    /// `/undo` put the history back as it was before the newest `stage`.
    Undone {
        stage: crate::compact::Stage,
        /// The id of the stage undone.
        undid: String,
        chars_before: usize,
        chars_after: usize,
    },
    /// `compaction.confirm_lossy`: the recoverable stages were not enough; summarise
    /// (`preview` is what it would do) or not?
    LossyQuestion {
        request_id: u64,
        estimate: usize,
        limit: usize,
        preview: Vec<StageEvent>,
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
}

impl Usage {
    /// Everything the prompt cost, cached or not.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }
}

/// What the context holds, by category: the data behind the `/context` view (made by
/// `context_map::breakdown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    SystemAndTools,
    /// The project's instruction files, in the system prompt.
    ProjectInstructions,
    /// The MCP servers' tool definitions and instructions.
    McpServers,
    UserText,
    AssistantText,
    ToolUseInput,
    ToolResult,
    PersistedPreview,
    ClearedReference,
    ArchiveMarker,
    CompactionSummary,
    Other,
    /// The JSON around the blocks (roles, brackets, separators), counted by the estimate.
    Framing,
    Free,
}

impl Category {
    pub const ALL: [Category; 14] = [
        Category::SystemAndTools,
        Category::ProjectInstructions,
        Category::McpServers,
        Category::UserText,
        Category::AssistantText,
        Category::ToolUseInput,
        Category::ToolResult,
        Category::PersistedPreview,
        Category::ClearedReference,
        Category::ArchiveMarker,
        Category::CompactionSummary,
        Category::Other,
        Category::Framing,
        Category::Free,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Category::SystemAndTools => "system prompt + tools",
            Category::ProjectInstructions => "project instructions",
            Category::McpServers => "MCP servers",
            Category::UserText => "user text",
            Category::AssistantText => "assistant text",
            Category::ToolUseInput => "tool_use inputs",
            Category::ToolResult => "tool results (whole)",
            Category::PersistedPreview => "tool results (persisted preview)",
            Category::ClearedReference => "tool results (cleared reference)",
            Category::ArchiveMarker => "archive markers",
            Category::CompactionSummary => "compaction summaries",
            Category::Other => "other blocks",
            Category::Framing => "message framing (JSON)",
            Category::Free => "free to the limit",
        }
    }
}

/// One block of the context, for the lists of `/context`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub category: Category,
    pub chars: usize,
    /// 1-based message number, 0 for the system prompt and tools.
    pub message: usize,
    pub role: String,
    pub preview: String,
    /// Where the full text is, when this block was shortened.
    pub saved_path: Option<String>,
    /// The block's text (capped) for showing it.
    pub text: String,
    /// For a tool result: its call, to restore, pin or drop it from `/context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Pinned: stage 3 leaves it whole.
    #[serde(default)]
    pub pinned: bool,
}

/// What the context holds, counted exactly as the gauge counts: the message
/// categories sum to the estimate, which the limit applies to; the system prompt and
/// tools are the fixed part beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextBreakdown {
    pub limit: usize,
    /// The seed's estimate of the messages: the gauge's figure.
    pub estimate: usize,
    /// The system prompt and tools: the gauge's `+N fixed`.
    pub fixed: usize,
    /// Characters per category, in `Category::ALL` order (free space last).
    pub totals: Vec<(Category, usize)>,
    pub largest: Vec<Item>,
    /// Every tool result, in history order, whatever its state: what `/context`
    /// lists to restore, pin or drop.
    #[serde(default)]
    pub tool_results: Vec<Item>,
    /// The pinned tool results, described (`read_file src/a.rs (result)`).
    #[serde(default)]
    pub pinned: Vec<String>,
    /// The project's instruction files, each its share of the fixed part: a row each
    /// under their category.
    #[serde(default)]
    pub instructions: Vec<InstructionRow>,
    /// Each ready MCP server's share of the fixed part: a row each under their
    /// category.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerRow>,
}

/// One MCP server's share of the fixed part: its tool definitions and its
/// instructions' block in the system prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McpServerRow {
    pub name: String,
    pub tools: usize,
    pub chars: usize,
}

impl Category {
    /// Whether the limit counts this category (the fixed part and free space are not).
    pub fn counts_against_limit(self) -> bool {
        !matches!(
            self,
            Category::SystemAndTools | Category::ProjectInstructions | Category::McpServers | Category::Free
        )
    }

    /// Whether it is part of the fixed part: the system prompt, the instruction files
    /// and the tools, sent with every request and outside the limit.
    pub fn is_fixed(self) -> bool {
        matches!(
            self,
            Category::SystemAndTools | Category::ProjectInstructions | Category::McpServers
        )
    }
}

#[cfg(test)]
mod tests {
    /// The protocol is a leaf: besides the message model and the stage events it
    /// names nothing else of ours, so UIs and the agent depend on it, not on each other.
    #[test]
    fn the_protocol_names_only_messages_and_stage_events() {
        let source = include_str!("protocol.rs");
        let code = &source[..source.find("#[cfg(test)]").unwrap_or(source.len())];
        for (at, line) in code.lines().enumerate() {
            for mention in line.match_indices("crate::").map(|(i, _)| &line[i..]) {
                assert!(
                    mention.starts_with("crate::message") || mention.starts_with("crate::compact"),
                    "protocol.rs:{}: {line}",
                    at + 1
                );
            }
        }
    }
}
