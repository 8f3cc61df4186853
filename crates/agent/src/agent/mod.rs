//! The agent task: owns the history, runs `prepare` before every model call, streams
//! the response, runs the tools in order and journals everything. The UI talks to it
//! only through [`Op`]s and [`AgentEvent`]s.

mod approvals;
mod background;
mod background_state;
mod cache_chain;
mod compaction;
mod compaction_state;
mod context_ops;
mod conversation;
mod gate;
mod instructions;
mod interrupt;
mod mcp;
mod mcp_state;
mod opening;
mod prompt;
mod server_state;
mod sessions;
mod settings;
mod token_count;
mod tool_calls;
mod tool_runner;
mod turn;
mod turn_state;
mod window;
pub use settings::{AgentSettings, AskPolicy, SYSTEM_PROMPT};

use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use approvals::Approvals;
use background_state::BackgroundState;
use compaction_state::{CompactionState, LastCompaction};
use conversation::{Conversation, Journaled};
use interrupt::{Interrupted, unless_interrupted};
use mcp_state::McpState;
use opening::Opening;
use prompt::Prompt;
use server_state::ServerState;
use tool_calls::{ToolCall, checked_calls};
use turn_state::TurnState;

use crate::accounting::{Extent, Ledger, LimitChoice, known_window};
use crate::compact::compact_history::compact_history;
use crate::compact::pairing::check_pairing;
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

/// Said when the server reports that its chat template leaves tool definitions out.
const TOOLS_NOT_RENDERED: &str = "the server's chat template does not render tools (llama.cpp reports supports_tools: false): \
     the model never sees scratchpad's tools, so it cannot read, edit or run anything. \
     Start llama-server with --jinja and a template that renders tools, e.g. \
     --chat-template-file models/templates/Qwen-Qwen2.5-7B-Instruct.jinja";

/// What the user is told when the journal could not be written.
fn journal_failed(error: &crate::session::SessionError) -> AgentEvent {
    AgentEvent::Error {
        message: format!("{error} (the session continues in memory)"),
    }
}

pub struct Agent {
    provider: Arc<dyn Provider>,
    settings: AgentSettings,
    store: Store,
    tools: ToolBox,
    /// The system prompt as sent, with the instruction files in it.
    prompt: Prompt,
    /// The history, its sizes, the journal, the undo log and the session's tally.
    conversation: Conversation,
    /// The window, the fixed part, the last measured call and the limit in force.
    ledger: Ledger,
    events: UnboundedSender<AgentEvent>,
    approvals: Approvals,
    turns: TurnState,
    compactions: CompactionState,
    /// The summary being prepared in the background for stage 4 to swap in.
    background: BackgroundState,
    server: ServerState,
    mcp: McpState,
    /// Said once the session starts.
    opening: Opening,
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
        let store = tools.archive().clone();
        let (approvals, approvals_problem) =
            Approvals::of_project(settings.data_dir.as_deref(), tools.workspace().root());
        let window = known_window(provider.model()).unwrap_or(Window {
            tokens: settings.configured_window_tokens,
            source: WindowSource::Configured,
        });
        let instructions = Instructions::load(tools.workspace().root(), &settings.instructions);
        let (prompt, fixed) = Prompt::new(
            &settings.system_prompt,
            instructions,
            &tools,
            settings.compaction.estimate,
        );
        let ledger = Ledger::new(
            window,
            fixed,
            u64::from(settings.max_tokens),
            LimitChoice::of(settings.compaction.context_char_limit),
            settings.compaction.context_char_limit.chars,
        )
        .with_basis(provider.token_basis());
        let conversation = Conversation::new(history, journal, settings.compaction.estimate);
        let facts = crate::compact::SessionFacts {
            verbatim_instructions: prompt.instructions.shown_paths(),
            ..crate::tools::session_facts()
        };
        Agent {
            provider,
            settings,
            store,
            tools,
            prompt,
            conversation,
            ledger,
            events,
            approvals,
            turns: TurnState::default(),
            compactions: CompactionState {
                facts,
                ..CompactionState::default()
            },
            background: BackgroundState::default(),
            server: ServerState::default(),
            mcp: McpState::default(),
            opening: Opening {
                notices: approvals_problem.into_iter().collect(),
                past: Vec::new(),
            },
        }
    }

    /// The tool results a resumed session had pinned: stage 3 leaves them whole.
    pub fn with_pins(mut self, pins: std::collections::BTreeSet<String>) -> Self {
        self.compactions.facts.pinned = pins;
        self
    }

    /// A resumed session's earlier runs: shown at start, and its last measured call
    /// gives the gauge its tokens until the next call reports.
    pub fn with_past(mut self, past: Vec<Past>) -> Self {
        self.conversation.take_in_stages(&past);
        self.take_in_past(&past);
        self.opening.past = past;
        self
    }

    /// Lines to say once the agent starts, after any of its own.
    pub fn with_notices(mut self, notices: Vec<String>) -> Self {
        self.opening.notices.extend(notices);
        self
    }

    pub fn messages(&self) -> &[Message] {
        self.conversation.messages()
    }

    fn emit(&self, event: AgentEvent) {
        let _ = self.events.send(event);
    }

    /// Say what a journal write came to, when it failed: the change holds in memory.
    fn journaled(&self, result: Journaled) {
        if let Err(error) = result {
            self.emit(journal_failed(&error));
        }
    }

    /// Journal a record that leaves the history as it is.
    fn note(&mut self, record: Record) {
        let result = self.conversation.note(record);
        self.journaled(result);
    }

    fn sync_journal(&mut self) {
        let result = self.conversation.sync();
        self.journaled(result);
    }

    fn append(&mut self, message: Message) {
        let result = self.conversation.append(message);
        self.journaled(result);
        self.emit_context();
    }

    /// The history's size now, both ways the accounting weighs it.
    fn extent(&self) -> Extent {
        Extent {
            estimate: self.conversation.estimate(),
            units: self.prompt.fixed_units() + self.conversation.units(),
        }
    }

    /// A whole new history in place of this one (not a compaction: the limit's
    /// accounting sees a change), journaled.
    fn change_history(&mut self, messages: Vec<Message>) {
        let before = self.extent();
        let result = self.conversation.replace(messages);
        self.journaled(result);
        self.ledger.changed(before, self.extent());
    }

    /// [`Agent::change_history`] with the new history's size table already made.
    fn change_history_sized(&mut self, messages: Vec<Message>, sizes: Sizes) {
        let before = self.extent();
        let result = self.conversation.replace_sized(messages, sizes);
        self.journaled(result);
        self.ledger.changed(before, self.extent());
    }

    /// The history after a pipeline run, and what its stages did (given back with
    /// their ids).
    fn compacted(&mut self, messages: Vec<Message>, sizes: Sizes, mut events: Vec<StageEvent>) -> Vec<StageEvent> {
        self.weigh(&mut events);
        let before = self.extent();
        let (events, result) = self.conversation.compacted(messages, sizes, events);
        self.journaled(result);
        if events.is_empty() {
            return events;
        }
        self.ledger
            .compacted(before, self.extent(), events.iter().map(|event| event.stage));
        // Those journaled (they have ids) that undo can act on.
        self.conversation.tally.compactions += events
            .iter()
            .filter(|event| !event.id.is_empty() && event.can_be_undone())
            .count();
        for event in &events {
            if event.replaced > 0 {
                self.server.cache_chain.stage_ran(&event.id);
            }
            self.emit(AgentEvent::Compaction { event: event.clone() });
        }
        self.emit_context();
        events
    }

    /// What each stage that changed the history freed, and how soon after the previous
    /// compaction it came (the stages of one run share that previous one).
    fn weigh(&mut self, events: &mut [StageEvent]) {
        let ratio = self.ledger.chars_per_token();
        let now = crate::time::unix_now();
        let since = self.compactions.since(
            self.conversation.tally.turns,
            self.turns.model_calls,
            now,
            self.turns.running,
        );
        let mut changed = None;
        for event in events.iter_mut().filter(|event| event.replaced > 0) {
            let chars = i64::try_from(event.chars_before).unwrap_or(i64::MAX)
                - i64::try_from(event.chars_after).unwrap_or(i64::MAX);
            event.freed = Some(Box::new(crate::compact::Freed {
                chars,
                tokens: (chars as f64 / ratio).round() as i64,
            }));
            event.since_previous = since.map(Box::new);
            changed = Some(event.chars_after);
        }
        if let Some(estimate_after) = changed {
            self.compactions.last = Some(LastCompaction {
                turns: self.conversation.tally.turns,
                model_calls: self.turns.model_calls,
                unix: now,
                estimate_after,
            });
        }
    }

    pub(super) fn emit_context(&self) {
        let config = &self.pipeline_config();
        self.emit(AgentEvent::Context {
            status: ContextStatus {
                estimate: self.conversation.estimate(),
                limit: config.context_char_limit.chars,
                target: config.micro_target_chars(),
                messages: self.conversation.messages().len(),
                snip_max_messages: config.snip_max_messages,
                fixed: self.ledger.fixed(),
                tokens: self.ledger.tokens().cloned(),
                background: self.background.job.status(),
                cache_missed: self.server.cache_chain.last_miss().cloned(),
            },
        });
    }

    fn announce_session(&self) {
        self.emit(AgentEvent::SessionStarted {
            session_id: self
                .conversation
                .journal()
                .map(|j| j.id().to_string())
                .unwrap_or_default(),
            provider: self.provider.kind().to_string(),
            model: self.provider.model().to_string(),
            workspace: self.tools.workspace().root().display().to_string(),
            sandbox: self.tools.sandbox().mode(),
            sandbox_layers: self.tools.sandbox().details(),
            window: self.ledger.window().clone(),
            limit_note: self.ledger.limit().note.message(),
            limit_warning: self.ledger.limit().note.is_warning(),
            read_only: self.settings.read_only.clone(),
        });
    }

    /// Serve ops until the channel closes or the user quits.
    pub async fn run(mut self, mut ops: UnboundedReceiver<Op>) -> Vec<Message> {
        self.start().await;
        // A server that becomes ready, fails or is disabled changes the tools offered
        // and the fixed part: taken in when it happens, not at the next request.
        let mut mcp_changes = self.tools.mcp().changes();
        let mut mcp_watched = true;
        // What changed before the watch began (a server that failed at once).
        self.take_in_mcp_change();
        while !self.turns.quit {
            let op = tokio::select! {
                op = ops.recv() => op,
                changed = mcp_changes.changed(), if mcp_watched => {
                    match changed {
                        Ok(()) => self.take_in_mcp_change(),
                        Err(_) => mcp_watched = false,
                    }
                    continue;
                }
                joined = background::settled(&mut self.background.job),
                    if self.swaps_when_idle() || self.background.job.is_running() => {
                    self.background_settled(joined).await;
                    continue;
                }
            };
            match op {
                None | Some(Op::Quit) => break,
                Some(op) if self.refused_in_read_only(&op) => {}
                Some(op) => self.serve(op, &mut ops).await,
            }
        }
        let (messages, synced) = self.conversation.end();
        if let Err(error) = synced {
            let _ = self.events.send(journal_failed(&error));
        }
        messages
    }

    /// Before the first op: what the server states, and everything said once as the
    /// session starts.
    async fn start(&mut self) {
        let facts = self.provider.discover().await;
        self.server.rediscover = facts.unreachable.is_some();
        self.background.when_idle = facts.llama_cpp;
        self.server.count.set_asks(facts.llama_cpp);
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
        if self.settings.compaction.summariser == crate::compact::SummariserChoice::Server
            && !self.provider.compacts_on_server()
        {
            self.emit(AgentEvent::Notice {
                message: format!(
                    "compaction.summariser = \"server\": the {} server here has no compaction of its own, so the model writes the summaries",
                    self.provider.kind()
                ),
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
        if !self.opening.past.is_empty() {
            let past = std::mem::take(&mut self.opening.past);
            self.emit(AgentEvent::Replay {
                past,
                in_context: self.conversation.messages().len(),
            });
        } else if !self.conversation.messages().is_empty() {
            self.emit(AgentEvent::History {
                messages: self.conversation.messages().to_vec(),
            });
        }
        for message in std::mem::take(&mut self.opening.notices) {
            self.emit(AgentEvent::Notice { message });
        }
        // After the replay, which starts the chat afresh.
        self.announce_instructions();
        if let Some(view) = &self.settings.read_only {
            self.emit(AgentEvent::Notice {
                message: format!("This is {view}."),
            });
        }
        self.emit_context();
    }

    /// In a read-only view, an op that would change the session is refused with why.
    fn refused_in_read_only(&self, op: &Op) -> bool {
        let Some(view) = &self.settings.read_only else {
            return false;
        };
        if !op.changes_the_session() {
            return false;
        }
        self.emit(AgentEvent::Error {
            message: format!("Not done: this is {view}. Start scratchpad without --read-only to work."),
        });
        if matches!(op, Op::Submit { .. }) {
            self.emit(AgentEvent::TurnDone {
                turn: self.turns.current,
                outcome: TurnOutcome::Failed,
            });
        } else {
            self.emit(AgentEvent::Ready);
        }
        true
    }

    /// One op: a turn, or something done between turns (which ends in `Ready`).
    async fn serve(&mut self, op: Op, ops: &mut UnboundedReceiver<Op>) {
        // These change the history outside a turn: a background summary of what
        // they changed is set aside, and one starts if the estimate calls for it.
        let changes_history = matches!(
            op,
            Op::Compact { .. } | Op::SummariseUpTo { .. } | Op::Undo { .. } | Op::Restore { .. } | Op::Drop { .. }
        );
        let is_turn = matches!(op, Op::Submit { .. });
        match op {
            Op::Submit { text } => self.turn(text, ops).await,
            Op::Compact { focus } => {
                let request = self.active_request();
                self.compact_now(CompactionRequester::User, focus, request, ops).await;
                self.sync_journal();
            }
            Op::Clear => self.clear(),
            Op::Permissions { revoke } => self.permissions(revoke),
            Op::Instructions => self.reload_instructions(),
            Op::Mcp { action } => self.mcp_command(action).await,
            Op::Inspect => self.inspect().await,
            Op::CountTokens => self.count_exactly().await,
            Op::Undo { stage_id } => self.undo_newest(stage_id.as_deref()),
            Op::Restore { tool_use_id } => self.restore_result(&tool_use_id),
            Op::Pin { tool_use_id, pinned } => self.pin(tool_use_id, pinned),
            Op::Drop { tool_use_id } => self.drop_result(tool_use_id).await,
            Op::Preview { focus } => self.preview_compact(focus).await,
            Op::Resume { session } => self.resume_session(&session),
            Op::Fork { session, at } => self.fork_session(session.as_deref(), &at),
            Op::ReviewReady => self.review_ready(),
            Op::SummariseUpTo { request, later_same } => {
                self.summarise_up_to(&request, later_same, ops).await;
                self.sync_journal();
            }
            Op::Review { request_id, answer } => self.reviewed_ready(request_id, answer),
            Op::Quit => self.turns.quit = true,
            // Between turns, Esc closes a `/summary` review; the summary stays ready.
            Op::Cancel => self.close_ready_review(),
            Op::Permission { .. } => {}
        }
        if changes_history {
            // Where the server counts, the figure after the change is its count of
            // what is left, not a scaled one.
            self.count_request().await;
            self.start_background_if_due();
            if (self.conversation.tally.messages, self.conversation.tally.estimate)
                != (self.conversation.messages().len(), self.conversation.estimate())
            {
                self.journal_size();
                self.sync_journal();
            }
        }
        // A turn ends with its own TurnDone; anything else done between turns ends
        // here, whatever it said on the way.
        if !is_turn {
            self.emit(AgentEvent::Ready);
        }
    }

    fn clear(&mut self) {
        self.discard_background("/clear started a new conversation");
        // A new conversation counts its compactions afresh.
        self.compactions.last = None;
        self.approvals.clear();
        self.conversation.tally = crate::session::Tally::default();
        self.ledger.clear();
        let journal = self
            .sessions_folder()
            .map(|folder| Journal::create(&folder, self.provider.kind(), self.provider.model()));
        let journal = match journal {
            Some(Ok(journal)) => Some(journal),
            Some(Err(error)) => {
                self.emit(AgentEvent::Error {
                    message: error.to_string(),
                });
                None
            }
            None => None,
        };
        let started = journal.is_some();
        self.conversation.start_over(journal, Vec::new(), &[]);
        if started {
            // The new journal has not heard what serves the session yet.
            if self.server.served_recorded.take().is_some() {
                self.record_served();
            }
            self.announce_session();
        }
        self.emit(AgentEvent::History { messages: Vec::new() });
        self.emit_context();
    }
}
