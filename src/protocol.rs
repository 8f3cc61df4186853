//! The two channels between the UI (or headless driver) and the agent task: `Op`s in,
//! `AgentEvent`s out. Everything the screen shows is built from these events.

use serde::{Deserialize, Serialize};

use crate::compact::StageEvent;
use crate::message::Message;
use crate::provider::Usage;

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
    Quit,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAnswer {
    AllowOnce,
    Deny,
    AlwaysForSession,
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
    Stage { event: crate::compact::StageEvent },
    /// A model call: the estimate sent and the prompt tokens the API reported.
    Call {
        estimate: usize,
        messages: usize,
        input_tokens: Option<u64>,
    },
}

/// What the context holds now, for the gauge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextStatus {
    pub estimate: usize,
    pub limit: usize,
    pub target: usize,
    pub messages: usize,
    pub snip_max_messages: usize,
    /// Prompt tokens the API reported for the last call, with the estimate it was for.
    pub last_call: Option<CallTokens>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallTokens {
    pub input_tokens: u64,
    pub estimate: usize,
    pub window_tokens: u64,
}

impl CallTokens {
    pub fn chars_per_token(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            self.estimate as f64 / self.input_tokens as f64
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    SessionStarted {
        session_id: String,
        provider: String,
        model: String,
        workspace: String,
        /// What confines commands, e.g. `sandbox: workspace-write`.
        sandbox: String,
    },
    /// The whole history, sent at start (resume) and after `/clear`.
    /// A resumed session as it happened, oldest first, sent once at start: what the
    /// app shows of it (the history itself follows as [`AgentEvent::History`]).
    Replay {
        past: Vec<Past>,
    },
    History {
        messages: Vec<Message>,
    },
    TurnStarted {
        request: String,
    },
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        text: String,
    },
    /// The streamed attempt failed and is being retried: discard its partial text.
    StreamReset {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// An assistant message was added to the history.
    AssistantMessage {
        message: Message,
    },
    ToolStarted {
        id: String,
        name: String,
        summary: String,
    },
    ToolFinished {
        id: String,
        name: String,
        status: ToolStatus,
        /// The output as the model sees it (possibly long).
        output: String,
    },
    PermissionRequest {
        request_id: u64,
        tool: String,
        question: String,
        /// Exactly what would run or be opened: the command, or the path.
        subject: String,
        /// What "always" would approve, e.g. `bash: "cargo test …"`; `None` when it is
        /// not offered (destructive or unclassifiable commands).
        always: Option<String>,
    },
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
    Usage {
        usage: Usage,
    },
    /// The answer to `Op::Inspect`.
    Breakdown {
        breakdown: crate::context_map::ContextBreakdown,
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
        outcome: TurnOutcome,
    },
}
