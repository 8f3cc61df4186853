//! The agent task: owns the history, runs `prepare` before every model call, streams
//! the response, runs the tools in order and journals everything. The UI talks to it
//! only through [`Op`]s and [`AgentEvent`]s.

mod approvals;
mod background;
mod compaction;
mod context_ops;
mod instructions;
mod mcp;
mod sessions;
mod tool_runner;
mod turn;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use approvals::Approvals;

use crate::accounting::units::{history_units, message_units, text_units};
use crate::accounting::{Extent, Ledger, LimitChoice, fixed_chars, known_window};
use crate::compact::compact_history::compact_history_swapping;
use crate::compact::pairing::{check_pairing, repair};
use crate::compact::{CompactConfig, Sizes, StageEvent, Summariser, prepare_recoverable, reactive_compact};
use crate::instructions::Instructions;
use crate::message::{ContentBlock, Message, Role, ToolResultContent};
use crate::protocol::{
    AgentEvent, CompactionRequester, ContextStatus, Op, Past, PermissionAnswer, ToolStatus, TurnId, TurnOutcome,
    Window, WindowSource,
};
use crate::provider::error::TokenOverflow;
use crate::provider::{ModelRequest, Provider, ProviderError, ProviderSummariser, StreamEvent};
use crate::session::{Journal, Record};
use crate::store::Store;
use crate::tools::sandbox::SandboxState;
use crate::tools::{Job, Plan, ToolBox, ToolOutput, input_summary};

/// What to do when a tool needs the user's permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskPolicy {
    /// Ask through a `PermissionRequest` event and wait for the answer.
    Ask,
    /// Headless with `--yes`.
    Approve,
    /// Headless without `--yes`.
    Refuse,
}

#[derive(Clone, Debug)]
pub struct AgentSettings {
    pub compaction: CompactConfig,
    /// scratchpad's own system prompt; the project's instruction files follow it.
    pub system_prompt: String,
    pub instructions: crate::instructions::InstructionsConfig,
    pub max_tokens: u32,
    /// Model calls one request may take before the agent stops it.
    pub max_steps: usize,
    pub ask: AskPolicy,
    /// The window when neither the server nor the table of known models says.
    pub configured_window_tokens: u64,
    pub limit_choice: LimitChoice,
    /// Where what outlives a session is kept, outside the workspace (the project's
    /// approvals); `None` keeps nothing.
    pub data_dir: Option<std::path::PathBuf>,
}

pub const SYSTEM_PROMPT: &str = include_str!("../../assets/system_prompt.md");

/// Said when the server reports that its chat template leaves tool definitions out.
const TOOLS_NOT_RENDERED: &str = "the server's chat template does not render tools (llama.cpp reports supports_tools: false): \
     the model never sees scratchpad's tools, so it cannot read, edit or run anything. \
     Start llama-server with --jinja and a template that renders tools, e.g. \
     --chat-template-file models/templates/Qwen-Qwen2.5-7B-Instruct.jinja";

/// The fixed part of a request with `system` as its system prompt: its characters as
/// the estimate counts them, and its token-like units.
fn fixed_part(system: &str, tools: &ToolBox, mode: crate::compact::EstimateMode) -> (usize, usize) {
    let specs = tools.specs();
    let chars = fixed_chars(system, &specs, mode);
    let units = text_units(system) + text_units(&serde_json::to_string(&specs).unwrap_or_default());
    (chars, units)
}

pub struct Agent {
    /// The project's instruction files, as the system prompt carries them.
    instructions: Instructions,
    /// The system prompt sent: scratchpad's own, then the instruction files.
    system: String,
    provider: Arc<dyn Provider>,
    settings: AgentSettings,
    store: Store,
    tools: ToolBox,
    journal: Option<Journal>,
    messages: Vec<Message>,
    /// Per-message sizes of `messages`, kept in step with it: the estimate.
    sizes: Sizes,
    /// Token-like units of `messages`, kept in step with it, and of the fixed part:
    /// what the token figure follows through a compaction.
    units: usize,
    fixed_units: usize,
    /// The window, the fixed part, the last measured call and the limit in force.
    ledger: Ledger,
    events: UnboundedSender<AgentEvent>,
    approvals: Approvals,
    next_request_id: u64,
    /// The running (or last) turn: its events carry it.
    turn: TurnId,
    quit: bool,
    /// Shown once the session starts (what restoring it mended).
    notices: Vec<String>,
    /// A resumed session's earlier runs, shown once it starts.
    past: Vec<Past>,
    /// The stages that changed the history, oldest first, for `/undo` (newest first).
    stage_log: Vec<StageEvent>,
    /// Where the session stands, journaled at the end of each turn for the session list.
    tally: crate::session::Tally,
    /// The summary being prepared in the background for stage 4 to swap in.
    background: background::Background,
    /// What became of it since the last call (started at a percent, ready), for that
    /// call's timeline point.
    background_marks: (Option<usize>, bool),
    /// The server did not answer at the start (down, or loading its model): it is
    /// asked again before each request until it does.
    rediscover: bool,
    /// What the journal last said serves the session (model, window tokens), so a
    /// `served` line is written only when discovery learns something new.
    served_recorded: Option<(String, Option<u64>)>,
    /// A read-only view of a session (open elsewhere, perhaps): why, for the user.
    /// Nothing is sent, run or changed.
    read_only: Option<String>,
    /// The MCP servers' revision last taken in, and the lines last said of them.
    mcp_revision: u64,
    mcp_lines: Vec<String>,
}

/// One tool call of a model response, checked: ids unique within the response, input
/// an object. A call that failed the check is answered with `problem` instead of run.
struct ToolCall {
    id: String,
    name: String,
    input: serde_json::Value,
    problem: Option<String>,
}

/// Check the calls of a response before it enters the history. A call repeating
/// the id of a call earlier in the history (some servers number calls afresh in every
/// response) or having none is renamed and run: the id only pairs a call with its
/// result. A duplicate
/// id within the response is renamed too (the API rejects two results for one id) but
/// not run, as is a non-object input (wrapped in an object, which the API requires),
/// each with a problem the model reads.
fn checked_calls(content: &mut [ContentBlock], history: &[Message]) -> Vec<ToolCall> {
    let mut taken: HashSet<String> = history
        .iter()
        .flat_map(|message| message.tool_use_ids().map(str::to_string))
        .collect();
    let mut in_response: HashSet<String> = HashSet::new();
    let mut calls = Vec::new();
    for block in content {
        let ContentBlock::ToolUse { id, name, input, .. } = block else {
            continue;
        };
        let mut problems = Vec::new();
        let original = id.clone();
        if !id.is_empty() && in_response.contains(id.as_str()) {
            problems.push(format!(
                "this call repeated the id {original:?} of another call in the same response, so it was not run; \
                 give every call its own id"
            ));
        }
        if id.is_empty() || taken.contains(id.as_str()) {
            let base = if original.is_empty() { "call" } else { original.as_str() };
            *id = (2..)
                .map(|n| format!("{base}_dup{n}"))
                .find(|candidate| !taken.contains(candidate))
                .unwrap_or_default();
            tracing::warn!(original, renamed = %id, "a tool call reused an id; renamed");
        }
        if !input.is_object() {
            let original = std::mem::take(input);
            problems.push(format!(
                "the input of this call must be a JSON object, got {original}; it was not run"
            ));
            *input = serde_json::json!({ "invalid_input": original });
        }
        taken.insert(id.clone());
        in_response.insert(original);
        calls.push(ToolCall {
            id: id.clone(),
            name: name.clone(),
            input: input.clone(),
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
        });
    }
    calls
}

enum Interrupted {
    Cancel,
    Quit,
}

/// Await `work` unless the user cancels or quits first; other ops that arrive meanwhile
/// are answered as "busy".
async fn unless_interrupted<T>(
    ops: &mut UnboundedReceiver<Op>,
    events: &UnboundedSender<AgentEvent>,
    inspect: &(dyn Fn() -> AgentEvent + Sync),
    work: impl Future<Output = T>,
) -> Result<T, Interrupted> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => return Ok(out),
            op = ops.recv() => match op {
                None | Some(Op::Quit) => return Err(Interrupted::Quit),
                Some(Op::Cancel) => return Err(Interrupted::Cancel),
                Some(Op::Permission { .. }) => {}
                // The breakdown only reads: it is answered while the turn runs.
                Some(Op::Inspect) => {
                    let _ = events.send(inspect());
                }
                Some(_) => {
                    let _ = events.send(AgentEvent::Error {
                        message: "A turn is running: wait for it to finish or press Esc to cancel it.".into(),
                    });
                }
            },
        }
    }
}

impl Agent {
    pub fn new(
        provider: Arc<dyn Provider>,
        settings: AgentSettings,
        tools: ToolBox,
        journal: Option<Journal>,
        history: Vec<Message>,
        events: UnboundedSender<AgentEvent>,
    ) -> Self {
        let store = Store::new(tools.workspace().root());
        let (approvals, approvals_problem) =
            Approvals::of_project(settings.data_dir.as_deref(), tools.workspace().root());
        let sizes = Sizes::of(&history, settings.compaction.estimate);
        let window = known_window(provider.model()).unwrap_or(Window {
            tokens: settings.configured_window_tokens,
            source: WindowSource::Configured,
        });
        let instructions = Instructions::load(tools.workspace().root(), &settings.instructions);
        let system = instructions.system_prompt(&settings.system_prompt);
        let (fixed, fixed_units) = fixed_part(&system, &tools, settings.compaction.estimate);
        let units = history_units(&history);
        let ledger = Ledger::new(
            window,
            fixed,
            u64::from(settings.max_tokens),
            settings.limit_choice,
            settings.compaction.context_char_limit,
        )
        .with_basis(provider.token_basis());
        let mut settings = settings;
        settings.compaction.context_char_limit = ledger.limit().chars;
        settings.compaction.verbatim_instructions = instructions.shown_paths();
        Agent {
            instructions,
            system,
            provider,
            settings,
            store,
            tools,
            journal,
            messages: history,
            sizes,
            units,
            fixed_units,
            ledger,
            events,
            approvals,
            next_request_id: 1,
            turn: TurnId::default(),
            quit: false,
            notices: approvals_problem.into_iter().collect(),
            past: Vec::new(),
            stage_log: Vec::new(),
            tally: crate::session::Tally::default(),
            background: background::Background::Idle,
            background_marks: (None, false),
            rediscover: false,
            served_recorded: None,
            read_only: None,
            mcp_revision: 0,
            mcp_lines: Vec::new(),
        }
    }

    /// Make this a read-only view (`reason` says of what): every op that would send,
    /// run or change something is refused with that line.
    pub fn with_read_only(mut self, reason: Option<String>) -> Self {
        self.read_only = reason;
        self
    }

    /// A resumed session's earlier runs: shown at start, and its last measured call
    /// gives the gauge its tokens until the next call reports.
    pub fn with_past(mut self, past: Vec<Past>) -> Self {
        self.take_in_past(&past);
        self.past = past;
        self
    }

    /// Lines to say once the agent starts, after any of its own.
    pub fn with_notices(mut self, notices: Vec<String>) -> Self {
        self.notices.extend(notices);
        self
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn emit(&self, event: AgentEvent) {
        let _ = self.events.send(event);
    }

    fn journal(&mut self, record: Record) {
        if let Some(journal) = &mut self.journal
            && let Err(error) = journal.append(&record)
        {
            let _ = self.events.send(AgentEvent::Error {
                message: format!("{error} (the session continues in memory)"),
            });
        }
    }

    fn sync_journal(&mut self) {
        if let Some(journal) = &mut self.journal
            && let Err(error) = journal.sync()
        {
            let _ = self.events.send(AgentEvent::Error {
                message: error.to_string(),
            });
        }
    }

    fn append(&mut self, message: Message) {
        self.sizes.push(&message);
        self.units += message_units(&message);
        self.journal(Record::Append {
            message: message.clone(),
        });
        self.messages.push(message);
        self.emit_context();
    }

    /// The history's size now, both ways the accounting weighs it.
    fn extent(&self) -> Extent {
        Extent {
            estimate: self.sizes.total(),
            units: self.fixed_units + self.units,
        }
    }

    /// Put a whole new history in place (its size table given), keeping its units in
    /// step; the extent it replaced is returned.
    fn set_history(&mut self, messages: Vec<Message>, sizes: Sizes) -> Extent {
        let before = self.extent();
        self.units = history_units(&messages);
        self.messages = messages;
        self.sizes = sizes;
        before
    }

    /// The history after a pipeline run, and what its stages did.
    fn replace(&mut self, messages: Vec<Message>, sizes: Sizes, events: Vec<StageEvent>) {
        if events.is_empty() {
            self.messages = messages;
            return;
        }
        if events.iter().all(|e| e.replaced == 0) {
            self.messages = messages;
            let extent = self.extent();
            self.ledger
                .compacted(extent, extent, events.iter().map(|event| event.stage));
            for event in events {
                self.emit(AgentEvent::Compaction { event });
            }
            return;
        }
        let journaled = messages.clone();
        let before = self.set_history(messages, sizes);
        self.ledger
            .compacted(before, self.extent(), events.iter().map(|event| event.stage));
        self.journal(Record::Replace { messages: journaled });
        for mut event in events {
            event.id = crate::session::new_stage_id();
            if event.can_be_undone() {
                self.stage_log.push(event.clone());
                self.tally.compactions += 1;
            }
            self.journal(Record::Stage {
                event: Box::new(event.clone()),
            });
            self.emit(AgentEvent::Compaction { event });
        }
        self.sync_journal();
        self.emit_context();
    }

    pub(super) fn emit_context(&self) {
        let config = &self.settings.compaction;
        self.emit(AgentEvent::Context {
            status: ContextStatus {
                estimate: self.sizes.total(),
                limit: config.context_char_limit,
                target: config.micro_target_chars(),
                messages: self.messages.len(),
                snip_max_messages: config.snip_max_messages,
                fixed: self.ledger.fixed(),
                tokens: self.ledger.tokens().cloned(),
                background: self.background.status(),
            },
        });
    }

    /// A limit decision changed: the pipeline uses the new limit from the next call.
    fn apply_limit(&mut self, note: Option<String>) {
        self.settings.compaction.context_char_limit = self.ledger.limit().chars;
        if let Some(message) = note {
            self.emit(AgentEvent::Notice { message });
        }
    }

    /// Ask a server that did not answer at the start again: once it does, its window
    /// and model replace the configured ones, said in a notice and in the session
    /// line.
    async fn discover_again(&mut self) {
        if !self.rediscover {
            return;
        }
        let facts = self.provider.discover().await;
        self.rediscover = facts.unreachable;
        if facts.model.is_some() || facts.window.is_some() {
            self.record_served();
        }
        let Some(window) = facts.window else { return };
        self.learn_window(window, "the server answers now");
    }

    /// Journal what the server said it serves, when that is news to the journal.
    fn record_served(&mut self) {
        let window = self.ledger.window();
        let window_tokens = matches!(window.source, WindowSource::Server { .. }).then_some(window.tokens);
        let served = (self.provider.model().to_string(), window_tokens);
        if self.served_recorded.as_ref() == Some(&served) {
            return;
        }
        self.journal(Record::Served {
            model: served.0.clone(),
            window_tokens: served.1,
        });
        self.served_recorded = Some(served);
    }

    /// The server told the window (`how`): the limit follows it, and the user is told.
    fn learn_window(&mut self, window: Window, how: &str) {
        if window.tokens == self.ledger.window().tokens {
            return;
        }
        let note = self.ledger.set_window(window.clone());
        self.apply_limit(note);
        self.record_served();
        self.emit(AgentEvent::Notice {
            message: format!(
                "{how}: its window is {} tokens ({}), model {}; the limit is now {} chars",
                window.tokens,
                window.source,
                self.provider.model(),
                crate::compact::short_count(self.ledger.limit().chars)
            ),
        });
        self.announce_session();
        self.emit_context();
    }

    fn announce_session(&self) {
        self.emit(AgentEvent::SessionStarted {
            session_id: self.journal.as_ref().map(|j| j.id().to_string()).unwrap_or_default(),
            provider: self.provider.kind().to_string(),
            model: self.provider.model().to_string(),
            workspace: self.tools.workspace().root().display().to_string(),
            sandbox: self.tools.sandbox().mode(),
            sandbox_layers: self.tools.sandbox().details(),
            window: self.ledger.window().clone(),
            limit_note: self.ledger.limit().note.message(),
            read_only: self.read_only.clone(),
        });
    }

    /// Serve ops until the channel closes or the user quits.
    pub async fn run(mut self, mut ops: UnboundedReceiver<Op>) -> Vec<Message> {
        let facts = self.provider.discover().await;
        self.rediscover = facts.unreachable;
        if let Some(window) = facts.window.clone() {
            // Told once, at the start, with the session: no separate notice.
            let _ = self.ledger.set_window(window);
            self.apply_limit(None);
        }
        if facts.model.is_some() || facts.window.is_some() {
            self.record_served();
        }
        self.announce_session();
        mcp::watch_servers(self.tools.mcp(), self.events.clone());
        if facts.renders_tools == Some(false) {
            self.emit(AgentEvent::Notice {
                message: TOOLS_NOT_RENDERED.into(),
            });
        }
        match self.tools.sandbox() {
            SandboxState::Unavailable(reason) => self.emit(AgentEvent::Notice {
                message: format!(
                    "No sandbox for commands: {reason}. Every command not known to be read-only will ask first."
                ),
            }),
            SandboxState::Partial { missing, .. } => {
                let missing: Vec<String> = missing.iter().map(|(layer, why)| format!("{layer} ({why})")).collect();
                self.emit(AgentEvent::Notice {
                    message: format!(
                        "The sandbox is incomplete here: no {}. Every command not known to be read-only will ask first.",
                        missing.join(", no ")
                    ),
                });
            }
            SandboxState::Enforced { .. } | SandboxState::Off => {}
        }
        if !self.past.is_empty() {
            let past = std::mem::take(&mut self.past);
            self.emit(AgentEvent::Replay {
                past,
                in_context: self.messages.len(),
            });
        } else if !self.messages.is_empty() {
            self.emit(AgentEvent::History {
                messages: self.messages.clone(),
            });
        }
        for message in std::mem::take(&mut self.notices) {
            self.emit(AgentEvent::Notice { message });
        }
        // After the replay, which starts the chat afresh.
        self.announce_instructions();
        if let Some(view) = &self.read_only {
            self.emit(AgentEvent::Notice {
                message: format!("This is {view}."),
            });
        }
        self.emit_context();
        // A server that becomes ready, fails or is disabled changes the tools offered
        // and the fixed part: taken in when it happens, not at the next request.
        let mut mcp_changes = self.tools.mcp().changes();
        let mut mcp_watched = true;
        // What changed before the watch began (a server that failed at once).
        self.take_in_mcp_change();
        while !self.quit {
            let op = tokio::select! {
                op = ops.recv() => op,
                changed = mcp_changes.changed(), if mcp_watched => {
                    match changed {
                        Ok(()) => self.take_in_mcp_change(),
                        Err(_) => mcp_watched = false,
                    }
                    continue;
                }
                joined = background::settled(&mut self.background),
                    if self.swaps_when_idle() || self.background.is_running() => {
                    self.background_settled(joined).await;
                    continue;
                }
            };
            let Some(op) = op else { break };
            if let Some(view) = &self.read_only
                && op.changes_the_session()
            {
                self.emit(AgentEvent::Error {
                    message: format!("Not done: this is {view}. Start scratchpad without --read-only to work."),
                });
                if matches!(op, Op::Submit { .. }) {
                    self.emit(AgentEvent::TurnDone {
                        turn: self.turn,
                        outcome: TurnOutcome::Failed,
                    });
                }
                continue;
            }
            // These change the history outside a turn: a background summary of what
            // they changed is set aside, and one starts if the estimate calls for it.
            let changes_history = matches!(
                op,
                Op::Compact { .. } | Op::Undo { .. } | Op::Restore { .. } | Op::Drop { .. }
            );
            match op {
                Op::Submit { text } => self.turn(text, &mut ops).await,
                Op::Compact { focus } => {
                    let request = self.active_request();
                    self.compact_now(CompactionRequester::User, focus, request).await;
                    self.sync_journal();
                }
                Op::Clear => self.clear(),
                Op::Permissions { revoke } => self.permissions(revoke),
                Op::Instructions => self.reload_instructions(),
                Op::Mcp { action } => self.mcp_command(action).await,
                Op::Inspect => self.emit(self.breakdown()),
                Op::CountTokens => self.count_exactly().await,
                Op::Undo { stage_id } => self.undo_newest(stage_id.as_deref()),
                Op::Restore { tool_use_id } => self.restore_result(&tool_use_id),
                Op::Pin { tool_use_id, pinned } => self.pin(tool_use_id, pinned),
                Op::Drop { tool_use_id } => self.drop_result(tool_use_id).await,
                Op::Preview { focus } => self.preview_compact(focus).await,
                Op::Resume { session } => self.resume_session(&session),
                Op::Fork { session, at } => self.fork_session(session.as_deref(), &at),
                Op::Quit => break,
                Op::Cancel | Op::Permission { .. } | Op::Lossy { .. } => {}
            }
            if changes_history {
                self.start_background_if_due();
                if (self.tally.messages, self.tally.estimate) != (self.messages.len(), self.sizes.total()) {
                    self.journal_size();
                    self.sync_journal();
                }
            }
        }
        self.sync_journal();
        // A session nobody sent a request in leaves nothing behind.
        if let Some(journal) = self.journal.take() {
            journal.leave();
        }
        self.messages
    }

    fn clear(&mut self) {
        self.discard_background("/clear started a new conversation");
        self.approvals.clear();
        self.set_history(Vec::new(), Sizes::of(&[], self.settings.compaction.estimate));
        self.stage_log.clear();
        self.tally = crate::session::Tally::default();
        self.ledger.clear();
        self.settings.compaction.context_char_limit = self.ledger.limit().chars;
        if let Some(folder) = self.sessions_folder() {
            match Journal::create(&folder, self.provider.kind(), self.provider.model()) {
                Ok(journal) => {
                    if let Some(left) = self.journal.replace(journal) {
                        left.leave();
                    }
                    // The new journal has not heard what serves the session yet.
                    if self.served_recorded.take().is_some() {
                        self.record_served();
                    }
                    self.announce_session();
                }
                Err(error) => self.emit(AgentEvent::Error {
                    message: error.to_string(),
                }),
            }
        }
        self.emit(AgentEvent::History { messages: Vec::new() });
        self.emit_context();
    }
}
