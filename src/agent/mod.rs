//! The agent task: owns the history, runs `prepare` before every model call, streams
//! the response, runs the tools in order and journals everything. The UI talks to it
//! only through [`Op`]s and [`AgentEvent`]s.

mod approvals;

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use approvals::Approvals;

use crate::accounting::{Ledger, LimitChoice, fixed_chars, known_window};
use crate::compact::compact_history::compact_history;
use crate::compact::pairing::{check_pairing, repair};
use crate::compact::{
    CompactConfig, Sizes, StageEvent, Summariser, force_compact, prepare_recoverable, prepare_sized, reactive_compact,
};
use crate::message::{ContentBlock, Message, Role, ToolResultContent};
use crate::protocol::{
    AgentEvent, CompactionRequester, ContextStatus, Op, Past, PermissionAnswer, ToolStatus, TurnOutcome, Window,
    WindowSource,
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
    pub system_prompt: String,
    pub max_tokens: u32,
    /// Model calls one request may take before the agent stops it.
    pub max_steps: usize,
    pub ask: AskPolicy,
    /// The window when neither the server nor the table of known models says.
    pub configured_window_tokens: u64,
    pub limit_choice: LimitChoice,
}

pub const SYSTEM_PROMPT: &str = include_str!("../../assets/system_prompt.md");

pub struct Agent {
    provider: Arc<dyn Provider>,
    settings: AgentSettings,
    store: Store,
    tools: ToolBox,
    journal: Option<Journal>,
    messages: Vec<Message>,
    /// Per-message sizes of `messages`, kept in step with it: the estimate.
    sizes: Sizes,
    /// The window, the fixed part, the last measured call and the limit in force.
    ledger: Ledger,
    events: UnboundedSender<AgentEvent>,
    approvals: Approvals,
    next_request_id: u64,
    quit: bool,
    /// Shown once the session starts (what restoring it mended).
    notices: Vec<String>,
    /// A resumed session's earlier runs, shown once it starts.
    past: Vec<Past>,
    /// The stages that changed the history, oldest first, for `/undo` (newest first).
    stage_log: Vec<StageEvent>,
}

/// One tool call of a model response, checked: ids unique within the response, input
/// an object. A call that failed the check is answered with `problem` instead of run.
struct ToolCall {
    id: String,
    name: String,
    input: serde_json::Value,
    problem: Option<String>,
}

/// Check the calls of a response before it enters the history. A duplicate id is
/// renamed (the API rejects two results for one id) and a non-object input is wrapped
/// in an object (the API rejects anything else), each with a problem the model reads.
fn checked_calls(content: &mut [ContentBlock]) -> Vec<ToolCall> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut calls = Vec::new();
    for block in content {
        let ContentBlock::ToolUse { id, name, input, .. } = block else {
            continue;
        };
        let mut problems = Vec::new();
        if id.is_empty() || seen.contains(id.as_str()) {
            let original = id.clone();
            *id = (2..)
                .map(|n| format!("{original}_dup{n}"))
                .find(|candidate| !seen.contains(candidate))
                .unwrap_or_default();
            problems.push(format!(
                "this call repeated the id {original:?} of another call in the same response, so it was not run; \
                 give every call its own id"
            ));
        }
        if !input.is_object() {
            let original = std::mem::take(input);
            problems.push(format!(
                "the input of this call must be a JSON object, got {original}; it was not run"
            ));
            *input = serde_json::json!({ "invalid_input": original });
        }
        seen.insert(id.clone());
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
        let sizes = Sizes::of(&history, settings.compaction.estimate);
        let window = known_window(provider.model()).unwrap_or(Window {
            tokens: settings.configured_window_tokens,
            source: WindowSource::Configured,
        });
        let fixed = fixed_chars(&settings.system_prompt, &ToolBox::specs(), settings.compaction.estimate);
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
        Agent {
            provider,
            settings,
            store,
            tools,
            journal,
            messages: history,
            sizes,
            ledger,
            events,
            approvals: Approvals::default(),
            next_request_id: 1,
            quit: false,
            notices: Vec::new(),
            past: Vec::new(),
            stage_log: Vec::new(),
        }
    }

    /// A resumed session's earlier runs: shown at start, and its last measured call
    /// gives the gauge its tokens until the next call reports.
    pub fn with_past(mut self, past: Vec<Past>) -> Self {
        for item in &past {
            match item {
                Past::Stage { event } if event.replaced > 0 => self.stage_log.push(event.clone()),
                Past::Undo { .. } => {
                    self.stage_log.pop();
                }
                _ => {}
            }
        }
        if let Some(point) = past.iter().rev().find_map(|item| match item {
            Past::Call { point } if point.input_tokens.is_some() => Some(point),
            _ => None,
        }) {
            self.ledger.restore(point);
            self.settings.compaction.context_char_limit = self.ledger.limit().chars;
        }
        self.past = past;
        self
    }

    /// Notices to show when the session starts.
    pub fn with_notices(mut self, notices: Vec<String>) -> Self {
        self.notices = notices;
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
        self.journal(Record::Append {
            message: message.clone(),
        });
        self.messages.push(message);
        self.emit_context();
    }

    fn replace(&mut self, messages: Vec<Message>, sizes: Sizes, events: Vec<StageEvent>) {
        if events.is_empty() {
            return;
        }
        if events.iter().all(|e| e.replaced == 0) {
            let estimate = self.sizes.total();
            self.ledger
                .compacted(estimate, estimate, events.iter().map(|event| event.stage));
            for event in events {
                self.emit(AgentEvent::Compaction { event });
            }
            return;
        }
        self.ledger.compacted(
            self.sizes.total(),
            sizes.total(),
            events.iter().map(|event| event.stage),
        );
        self.stage_log
            .extend(events.iter().filter(|event| event.replaced > 0).cloned());
        self.sizes = sizes;
        self.journal(Record::Replace {
            messages: messages.clone(),
        });
        for event in events {
            self.journal(Record::Stage { event: event.clone() });
            self.emit(AgentEvent::Compaction { event });
        }
        self.messages = messages;
        self.sync_journal();
        self.emit_context();
    }

    fn emit_context(&self) {
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

    /// What the context holds now, for `/context`.
    fn breakdown(&self) -> AgentEvent {
        AgentEvent::Breakdown {
            breakdown: crate::context_map::breakdown(
                &self.settings.system_prompt,
                &ToolBox::specs(),
                &self.messages,
                &self.settings.compaction,
            ),
        }
    }

    fn announce_session(&self) {
        self.emit(AgentEvent::SessionStarted {
            session_id: self.journal.as_ref().map(|j| j.id().to_string()).unwrap_or_default(),
            provider: self.provider.kind().to_string(),
            model: self.provider.model().to_string(),
            workspace: self.tools.workspace().root().display().to_string(),
            sandbox: self.tools.sandbox().label().to_string(),
            window: self.ledger.window().clone(),
            limit_note: self.ledger.limit().note.message(),
        });
    }

    /// Serve ops until the channel closes or the user quits.
    pub async fn run(mut self, mut ops: UnboundedReceiver<Op>) -> Vec<Message> {
        if let Some(window) = self.provider.discover_window().await {
            // Told once, at the start, with the session: no separate notice.
            let _ = self.ledger.set_window(window);
            self.apply_limit(None);
        }
        self.announce_session();
        if let SandboxState::Unavailable(reason) = self.tools.sandbox() {
            self.emit(AgentEvent::Notice {
                message: format!(
                    "No sandbox for commands: {reason}. Every command not known to be read-only will ask first."
                ),
            });
        }
        if !self.past.is_empty() {
            let past = std::mem::take(&mut self.past);
            self.emit(AgentEvent::Replay { past });
        } else if !self.messages.is_empty() {
            self.emit(AgentEvent::History {
                messages: self.messages.clone(),
            });
        }
        for message in std::mem::take(&mut self.notices) {
            self.emit(AgentEvent::Notice { message });
        }
        self.emit_context();
        while !self.quit {
            let Some(op) = ops.recv().await else { break };
            match op {
                Op::Submit { text } => self.turn(text, &mut ops).await,
                Op::Compact { focus } => {
                    let request = self.active_request();
                    self.compact_now(CompactionRequester::User, focus, request).await;
                    self.sync_journal();
                }
                Op::Clear => self.clear(),
                Op::Permissions { revoke } => self.permissions(revoke),
                Op::Inspect => self.emit(self.breakdown()),
                Op::CountTokens => self.count_exactly().await,
                Op::Undo => self.undo_newest(),
                Op::Restore { tool_use_id } => self.restore_result(&tool_use_id),
                Op::Pin { tool_use_id, pinned } => self.pin(tool_use_id, pinned),
                Op::Drop { tool_use_id } => self.drop_result(tool_use_id).await,
                Op::Preview { focus } => self.preview_compact(focus).await,
                Op::Quit => break,
                Op::Cancel | Op::Permission { .. } | Op::Lossy { .. } => {}
            }
        }
        self.sync_journal();
        self.messages
    }

    fn clear(&mut self) {
        self.approvals.clear();
        self.messages.clear();
        self.sizes = Sizes::of(&[], self.settings.compaction.estimate);
        self.stage_log.clear();
        self.ledger.clear();
        self.settings.compaction.context_char_limit = self.ledger.limit().chars;
        if self.journal.is_some() {
            match Journal::create(
                self.tools.workspace().root(),
                self.provider.kind(),
                self.provider.model(),
            ) {
                Ok(journal) => {
                    self.journal = Some(journal);
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

    fn summariser(&self) -> ProviderSummariser {
        ProviderSummariser::new(self.provider.clone(), tokio::runtime::Handle::current())
    }

    /// Run a pipeline function on a blocking thread with the history moved in and out.
    async fn on_history<F>(&mut self, work: F) -> Vec<StageEvent>
    where
        F: FnOnce(&mut Vec<Message>, &mut Sizes, &CompactConfig, &Store, &mut dyn Summariser) -> Vec<StageEvent>
            + Send
            + 'static,
    {
        let mut messages = std::mem::take(&mut self.messages);
        let mut sizes = self.sizes.clone();
        let config = self.settings.compaction.clone();
        let store = self.store.clone();
        let mut summariser = self.summariser();
        let original = messages.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let events = work(&mut messages, &mut sizes, &config, &store, &mut summariser);
            (messages, sizes, events)
        })
        .await;
        match joined {
            Ok((messages, sizes, events)) => {
                self.messages = original;
                self.replace(messages, sizes, events.clone());
                events
            }
            Err(error) => {
                self.messages = original;
                self.emit(AgentEvent::Error {
                    message: format!("compaction failed: {error}"),
                });
                Vec::new()
            }
        }
    }

    async fn prepare_history(&mut self, request: &str, ops: &mut UnboundedReceiver<Op>) {
        let request = request.to_string();
        let ask_first = self.settings.compaction.confirm_lossy && self.settings.ask == AskPolicy::Ask;
        if !ask_first {
            self.on_history(move |messages, sizes, config, store, summariser| {
                let taken = std::mem::replace(sizes, Sizes::of(&[], config.estimate));
                let prepared = prepare_sized(std::mem::take(messages), taken, &request, config, store, summariser);
                *messages = prepared.messages;
                *sizes = prepared.sizes;
                prepared.events
            })
            .await;
            return;
        }
        self.on_history(|messages, sizes, config, store, _| {
            let taken = std::mem::replace(sizes, Sizes::of(&[], config.estimate));
            let prepared = prepare_recoverable(std::mem::take(messages), taken, config, store);
            *messages = prepared.messages;
            *sizes = prepared.sizes;
            prepared.events
        })
        .await;
        let limit = self.settings.compaction.context_char_limit;
        let estimate = self.sizes.total();
        if estimate <= limit {
            return;
        }
        if self.confirm_lossy(&request, estimate, limit, ops).await {
            self.on_history(move |messages, sizes, config, store, summariser| {
                let ctx = crate::compact::Context { config, store };
                crate::compact::timed(|| compact_history(messages, sizes, &request, &ctx, summariser))
            })
            .await;
        } else if !self.quit {
            self.emit(AgentEvent::Notice {
                message: format!(
                    "not summarised: this call goes over the limit ({} > {} chars)",
                    crate::compact::short_count(estimate),
                    crate::compact::short_count(limit)
                ),
            });
        }
    }

    /// Ask whether to summarise now, showing what it would do. `false` for not now
    /// (and when the turn is cancelled or the app quits).
    async fn confirm_lossy(
        &mut self,
        request: &str,
        estimate: usize,
        limit: usize,
        ops: &mut UnboundedReceiver<Op>,
    ) -> bool {
        let preview = {
            use crate::compact::preview::{Preview, preview};
            let messages = self.messages.clone();
            let request = request.to_string();
            let config = self.settings.compaction.clone();
            let workspace = self.tools.workspace().root().to_path_buf();
            tokio::task::spawn_blocking(move || preview(&messages, &request, &config, &workspace, &Preview::Prepare))
                .await
                .unwrap_or_default()
        };
        let request_id = self.next_request_id;
        self.next_request_id += 1;
        self.emit(AgentEvent::LossyQuestion {
            request_id,
            estimate,
            limit,
            preview,
        });
        loop {
            match ops.recv().await {
                Some(Op::Lossy {
                    request_id: id,
                    compact_now,
                }) if id == request_id => return compact_now,
                None | Some(Op::Quit) => {
                    self.quit = true;
                    return false;
                }
                Some(Op::Cancel) => return false,
                Some(Op::Inspect) => self.emit(self.breakdown()),
                Some(_) => {}
            }
        }
    }

    async fn compact_now(&mut self, by: CompactionRequester, focus: Option<String>, request: String) {
        self.emit(AgentEvent::CompactionRequested {
            by,
            focus: focus.clone(),
        });
        if self.messages.is_empty() {
            self.emit(AgentEvent::Error {
                message: "Nothing to compact yet.".into(),
            });
            return;
        }
        let requested_by = match by {
            CompactionRequester::User => "the user (/compact)",
            CompactionRequester::Model => "the model (the compact tool)",
        };
        self.on_history(move |messages, sizes, config, store, summariser| {
            let event = force_compact(
                messages,
                &request,
                focus.as_deref(),
                requested_by,
                config,
                store,
                summariser,
            );
            *sizes = Sizes::of(messages, config.estimate);
            vec![event]
        })
        .await;
    }

    /// The newest user prompt (tool results travel as user messages too).
    fn active_request(&self) -> String {
        crate::commands::compact::newest_request(&self.messages)
    }

    async fn turn(&mut self, request: String, ops: &mut UnboundedReceiver<Op>) {
        self.emit(AgentEvent::TurnStarted {
            request: request.clone(),
        });
        self.append(Message::user_text(request.clone()));
        let outcome = self.steps(&request, ops).await;
        self.sync_journal();
        self.emit(AgentEvent::TurnDone { outcome });
    }

    async fn steps(&mut self, request: &str, ops: &mut UnboundedReceiver<Op>) -> TurnOutcome {
        let mut reactive_used = false;
        let mut step = 0;
        while step < self.settings.max_steps {
            step += 1;
            self.prepare_history(request, ops).await;
            let response = match self.call_model(ops).await {
                Ok(response) => response,
                Err(CallFailed::Interrupted) => return TurnOutcome::Cancelled,
                Err(CallFailed::Provider(ProviderError::ContextTooLong { message, overflow })) if !reactive_used => {
                    reactive_used = true;
                    step -= 1;
                    tracing::warn!(%message, "prompt refused as too long; compacting reactively");
                    let request = request.to_string();
                    let target = overflow.map(|overflow| self.fitting_estimate(overflow));
                    let events = self
                        .on_history(move |messages, sizes, config, store, summariser| {
                            let events = reactive_compact(messages, &request, target, config, store, summariser);
                            *sizes = Sizes::of(messages, config.estimate);
                            events
                        })
                        .await;
                    if events.iter().all(|e| e.replaced == 0) {
                        self.emit(AgentEvent::Error {
                            message: format!(
                                "The prompt is too long and reactive compaction could not shrink it: {message}"
                            ),
                        });
                        return TurnOutcome::Failed;
                    }
                    continue;
                }
                Err(CallFailed::Provider(error)) => {
                    self.emit(AgentEvent::Error {
                        message: error.to_string(),
                    });
                    return TurnOutcome::Failed;
                }
            };
            let mut content = response.content;
            let calls = checked_calls(&mut content);
            if content.is_empty() {
                content.push(ContentBlock::text("(no response)"));
            }
            let message = Message::blocks(Role::Assistant, content);
            self.emit(AgentEvent::AssistantMessage {
                message: message.clone(),
            });
            self.append(message);
            if calls.is_empty() {
                return TurnOutcome::Completed;
            }
            let batch = self.run_tools(calls, ops).await;
            self.append(Message::blocks(Role::User, batch.results));
            self.sync_journal();
            if batch.cancelled {
                return TurnOutcome::Cancelled;
            }
            if let Some(CompactRequest { focus }) = batch.compact {
                self.compact_now(CompactionRequester::Model, focus, request.to_string())
                    .await;
            }
        }
        self.emit(AgentEvent::Error {
            message: format!("Stopped after {} model calls in one request.", self.settings.max_steps),
        });
        TurnOutcome::Failed
    }

    /// `r` in `/context`: a shortened tool result back in full.
    fn restore_result(&mut self, tool_use_id: &str) {
        let mut messages = self.messages.clone();
        let mut sizes = self.sizes.clone();
        match crate::compact::micro_compact::restore_result(&mut messages, &mut sizes, &self.store, tool_use_id) {
            Ok(chars) => {
                self.journal(Record::Replace {
                    messages: messages.clone(),
                });
                self.sync_journal();
                self.messages = messages;
                self.sizes = sizes;
                self.ledger.changed(self.sizes.total());
                self.emit(AgentEvent::Notice {
                    message: format!(
                        "put back in full: {} ({} chars)",
                        crate::compact::receipt::describe_result(&self.messages, self.messages.len(), tool_use_id),
                        crate::compact::short_count(chars)
                    ),
                });
                self.emit_context();
                self.emit(self.breakdown());
            }
            Err(why) => self.emit(AgentEvent::Error {
                message: format!("cannot put {tool_use_id} back: {why}"),
            }),
        }
    }

    /// `p` in `/context`: pin or unpin a tool result; journaled, so it lasts.
    fn pin(&mut self, tool_use_id: String, pinned: bool) {
        self.journal(Record::Pin {
            tool_use_id: tool_use_id.clone(),
            pinned,
        });
        self.sync_journal();
        if pinned {
            self.settings.compaction.pinned.insert(tool_use_id);
        } else {
            self.settings.compaction.pinned.remove(&tool_use_id);
        }
        self.emit(self.breakdown());
    }

    /// `d` in `/context`: a tool result to the archive now, as a manual micro-compaction.
    async fn drop_result(&mut self, tool_use_id: String) {
        if self.settings.compaction.pinned.contains(&tool_use_id) {
            self.pin(tool_use_id.clone(), false);
        }
        let events = self
            .on_history(move |messages, sizes, config, store, _| {
                let ctx = crate::compact::Context { config, store };
                crate::compact::timed(|| {
                    crate::compact::micro_compact::drop_result(messages, sizes, &ctx, &tool_use_id)
                })
            })
            .await;
        if events.is_empty() {
            self.emit(AgentEvent::Notice {
                message: "nothing to drop: that result is already a reference".into(),
            });
        }
        self.emit(self.breakdown());
    }

    /// `/compact --preview`: the receipts `/compact` would produce, writing nothing.
    async fn preview_compact(&mut self, focus: Option<String>) {
        if self.messages.is_empty() {
            self.emit(AgentEvent::Notice {
                message: "nothing to compact yet".into(),
            });
            return;
        }
        let messages = self.messages.clone();
        let request = self.active_request();
        let config = self.settings.compaction.clone();
        let workspace = self.tools.workspace().root().to_path_buf();
        let work = move || {
            use crate::compact::preview::{Preview, preview};
            preview(&messages, &request, &config, &workspace, &Preview::Compact { focus })
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(events) => self.emit(AgentEvent::Preview { events }),
            Err(error) => self.emit(AgentEvent::Error {
                message: format!("the preview failed: {error}"),
            }),
        }
    }

    /// `/undo`: the history as it was before the newest stage that changed it.
    fn undo_newest(&mut self) {
        let Some(event) = self.stage_log.last() else {
            self.emit(AgentEvent::Notice {
                message: "nothing to undo: no compaction changed this conversation".into(),
            });
            return;
        };
        let stage = event.stage;
        let mode = self.settings.compaction.estimate;
        match crate::compact::undo::undo(&self.messages, event, &self.store, mode) {
            Ok(restored) => {
                let chars_before = self.sizes.total();
                self.journal(Record::Undo {
                    stage,
                    messages: restored.clone(),
                });
                self.sync_journal();
                self.stage_log.pop();
                self.sizes = Sizes::of(&restored, mode);
                self.messages = restored;
                self.ledger.changed(self.sizes.total());
                self.emit(AgentEvent::Undone {
                    stage,
                    chars_before,
                    chars_after: self.sizes.total(),
                });
                self.emit_context();
            }
            Err(error) => self.emit(AgentEvent::Error {
                message: error.to_string(),
            }),
        }
    }

    /// The request the history makes now.
    fn model_request(&self) -> ModelRequest {
        ModelRequest {
            system: self.settings.system_prompt.clone(),
            tools: ToolBox::specs(),
            messages: self.messages.clone(),
            max_tokens: self.settings.max_tokens,
        }
    }

    /// `/context`'s exact refresh: the provider counts the request as it is now.
    async fn count_exactly(&mut self) {
        match self.provider.count_tokens(&self.model_request()).await {
            Ok(Some(tokens)) => {
                let note = self.ledger.counted(tokens, self.sizes.total());
                self.apply_limit(note);
                self.emit_context();
            }
            Ok(None) => self.emit(AgentEvent::Notice {
                message: format!(
                    "the {} provider offers no exact token count; the figure is the last call's",
                    self.provider.kind()
                ),
            }),
            Err(error) => self.emit(AgentEvent::Error {
                message: format!("counting tokens failed: {error}"),
            }),
        }
    }

    /// One model call.
    async fn call_model(
        &mut self,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<crate::provider::ModelResponse, CallFailed> {
        self.guard_pairing();
        let request = self.model_request();
        let (sink, mut deltas) = unbounded_channel();
        let events = self.events.clone();
        let forward = tokio::spawn(async move {
            while let Some(delta) = deltas.recv().await {
                let event = match delta {
                    StreamEvent::Text(text) => AgentEvent::TextDelta { text },
                    StreamEvent::Thinking(text) => AgentEvent::ThinkingDelta { text },
                    StreamEvent::ToolUseStarted { .. } => continue,
                    StreamEvent::Retrying {
                        attempt,
                        delay_ms,
                        reason,
                    } => AgentEvent::StreamReset {
                        attempt,
                        delay_ms,
                        reason,
                    },
                };
                let _ = events.send(event);
            }
        });
        let provider = self.provider.clone();
        let inspect = || self.breakdown();
        let result = unless_interrupted(ops, &self.events, &inspect, provider.complete(&request, &sink)).await;
        drop(sink);
        let _ = forward.await;
        match result {
            Err(Interrupted::Quit) => {
                self.quit = true;
                Err(CallFailed::Interrupted)
            }
            Err(Interrupted::Cancel) => Err(CallFailed::Interrupted),
            Ok(Err(error)) => Err(CallFailed::Provider(error)),
            Ok(Ok(response)) => {
                let usage = response.usage;
                let (mut point, note) =
                    self.ledger
                        .called(self.sizes.total(), self.messages.len(), usage.prompt_tokens());
                self.ledger.cache(
                    &mut point,
                    usage.cache_read_input_tokens,
                    usage.cache_creation_input_tokens,
                );
                self.journal(Record::Call(point.clone()));
                self.apply_limit(note);
                self.emit(AgentEvent::ModelCall {
                    point,
                    usage: response.usage,
                });
                self.emit_context();
                Ok(response)
            }
        }
    }

    /// The estimate of the messages that would fit what the server said it takes: the
    /// whole request (system prompt and tools included) measured against the tokens it
    /// counted gives the characters per token, with a tenth kept in reserve.
    fn fitting_estimate(&self, overflow: TokenOverflow) -> usize {
        let request_chars = self.ledger.request_chars(self.sizes.total()) as f64;
        let fixed = self.ledger.fixed();
        let chars_per_token = request_chars / overflow.prompt_tokens.max(1) as f64;
        let fitting = overflow.max_tokens as f64 * chars_per_token * 0.9;
        (fitting as usize).saturating_sub(fixed)
    }

    /// Nothing invalid is ever sent: a bug that broke pairing fails loudly in debug
    /// builds; in release the history is mended, journaled and the user told.
    fn guard_pairing(&mut self) {
        let Err(problem) = check_pairing(&self.messages) else {
            return;
        };
        debug_assert!(false, "history about to be sent is invalid: {problem:?}");
        let notes = repair(&mut self.messages);
        tracing::error!(?problem, ?notes, "repaired an invalid history before a model call");
        self.journal(Record::Repair {
            messages: self.messages.clone(),
            notes: notes.clone(),
        });
        self.sizes = Sizes::of(&self.messages, self.settings.compaction.estimate);
        for note in notes {
            self.emit(AgentEvent::Notice {
                message: format!("mended the history before sending it: {note}"),
            });
        }
    }

    /// Run every call of one response in order. Every call gets exactly one result,
    /// also when refused or cancelled. Returns the results, a compaction request
    /// (with its focus) and whether the user cancelled.
    async fn run_tools(&mut self, calls: Vec<ToolCall>, ops: &mut UnboundedReceiver<Op>) -> Batch {
        let mut results = Vec::with_capacity(calls.len());
        let mut compact = None;
        let mut cancelled = false;
        for ToolCall {
            id,
            name,
            input,
            problem,
        } in calls
        {
            self.emit(AgentEvent::ToolStarted {
                id: id.clone(),
                name: name.clone(),
                summary: input_summary(&name, &input),
            });
            let (output, status) = if let Some(problem) = problem {
                (ToolOutput::error(format!("Error: {problem}")), ToolStatus::Error)
            } else if cancelled || self.quit {
                (
                    ToolOutput::error("Cancelled by the user before it ran."),
                    ToolStatus::Cancelled,
                )
            } else {
                match self.tools.plan(&name, &input) {
                    Plan::Refused(reason) => (ToolOutput::error(reason), ToolStatus::Refused),
                    Plan::Invalid(message) => (ToolOutput::error(message), ToolStatus::Error),
                    Plan::Run(job) => self.run_job(job, &mut compact, &mut cancelled, ops).await,
                    Plan::Ask {
                        question,
                        destructive,
                        job,
                    } => match self.permission(&name, &question, destructive, &job, ops).await {
                        Decision::Allowed => self.run_job(job, &mut compact, &mut cancelled, ops).await,
                        Decision::Denied => (
                            ToolOutput::error(format!("Refused: the user did not allow this. ({question})")),
                            ToolStatus::Refused,
                        ),
                        Decision::NobodyToAsk => (
                            ToolOutput::error(format!(
                                "Refused: this needs the user's approval, and this run cannot ask \
                                 (headless without --yes). ({question})"
                            )),
                            ToolStatus::Refused,
                        ),
                        Decision::Cancelled => {
                            cancelled = true;
                            (ToolOutput::error("Cancelled by the user."), ToolStatus::Cancelled)
                        }
                    },
                }
            };
            self.emit(AgentEvent::ToolFinished {
                id: id.clone(),
                name,
                status,
                output: output.text.clone(),
            });
            results.push(ContentBlock::ToolResult {
                tool_use_id: id,
                content: ToolResultContent::Text(output.text),
                is_error: output.is_error.then_some(true),
                extra: Default::default(),
            });
        }
        Batch {
            results,
            compact,
            cancelled,
        }
    }

    async fn run_job(
        &mut self,
        job: Job,
        compact: &mut Option<CompactRequest>,
        cancelled: &mut bool,
        ops: &mut UnboundedReceiver<Op>,
    ) -> (ToolOutput, ToolStatus) {
        if let Job::Compact { focus } = &job {
            *compact = Some(CompactRequest { focus: focus.clone() });
        }
        let inspect = || self.breakdown();
        match unless_interrupted(ops, &self.events, &inspect, self.tools.run(job)).await {
            Ok(output) => {
                let status = if output.is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                (output, status)
            }
            Err(interrupted) => {
                *cancelled = true;
                self.quit |= matches!(interrupted, Interrupted::Quit);
                (
                    ToolOutput::error("Cancelled by the user while running; the process was killed."),
                    ToolStatus::Cancelled,
                )
            }
        }
    }

    /// Ask the user about `job`, unless an earlier "always" covers it.
    async fn permission(
        &mut self,
        tool: &str,
        question: &str,
        destructive: bool,
        job: &Job,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Decision {
        match self.settings.ask {
            AskPolicy::Approve => return Decision::Allowed,
            AskPolicy::Refuse => return Decision::NobodyToAsk,
            AskPolicy::Ask => {}
        }
        if !destructive && self.approvals.covers(tool, job) {
            return Decision::Allowed;
        }
        let always = (!destructive).then(|| approvals::rule_for(tool, job)).flatten();
        let request_id = self.next_request_id;
        self.next_request_id += 1;
        self.emit(AgentEvent::PermissionRequest {
            request_id,
            tool: tool.to_string(),
            question: question.to_string(),
            subject: job.subject(),
            always: always.as_ref().map(ToString::to_string),
        });
        loop {
            match ops.recv().await {
                Some(Op::Permission { request_id: id, answer }) if id == request_id => {
                    return match answer {
                        PermissionAnswer::AllowOnce => Decision::Allowed,
                        PermissionAnswer::Deny => Decision::Denied,
                        PermissionAnswer::AlwaysForSession => match always {
                            Some(rule) => {
                                self.approvals.grant(rule);
                                Decision::Allowed
                            }
                            // Not offered for this question: it counts as once.
                            None => Decision::Allowed,
                        },
                    };
                }
                None | Some(Op::Quit) => {
                    self.quit = true;
                    return Decision::Cancelled;
                }
                Some(Op::Cancel) => return Decision::Cancelled,
                Some(Op::Inspect) => self.emit(self.breakdown()),
                Some(_) => {}
            }
        }
    }

    /// `/permissions`: list the approvals, or revoke one by its number.
    fn permissions(&mut self, revoke: Option<usize>) {
        if let Some(number) = revoke {
            let message = match number.checked_sub(1).and_then(|index| self.approvals.revoke(index)) {
                Some(approval) => format!("revoked: {approval}"),
                None => format!("there is no approval number {number}"),
            };
            self.emit(AgentEvent::Notice { message });
        }
        let list = self.approvals.list();
        let message = if list.is_empty() {
            "no approvals in this session".to_string()
        } else {
            let lines: Vec<String> = list
                .iter()
                .enumerate()
                .map(|(at, approval)| format!("{}. {approval}", at + 1))
                .collect();
            format!(
                "approved for this session (/permissions revoke N):\n{}",
                lines.join("\n")
            )
        };
        self.emit(AgentEvent::Notice { message });
    }
}

/// Why a model call gave no response.
enum CallFailed {
    /// The user cancelled the turn or quit.
    Interrupted,
    Provider(ProviderError),
}

/// The `compact` tool was called in a batch, with this focus.
struct CompactRequest {
    focus: Option<String>,
}

/// What running one response's tool calls gave.
struct Batch {
    /// One result per call, in order.
    results: Vec<ContentBlock>,
    compact: Option<CompactRequest>,
    /// The user cancelled during the batch (later calls got "cancelled" results).
    cancelled: bool,
}

/// The user's answer to a permission question.
enum Decision {
    Allowed,
    Denied,
    /// Headless without `--yes`: there is no one to ask.
    NobodyToAsk,
    /// The user cancelled the turn (or quit) instead of answering.
    Cancelled,
}
