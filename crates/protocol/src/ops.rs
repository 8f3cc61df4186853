//! What the UI (or the headless driver) asks of the agent.

use serde::{Deserialize, Serialize};

use crate::session::record::ForkAt;

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
    /// Summarise everything before a request of the open session and keep it and
    /// what follows verbatim: the request's text, and how many later requests have
    /// the same text (to tell repeated ones apart).
    SummariseUpTo {
        request: String,
        later_same: usize,
    },
    /// `/summary`: show the summary prepared in the background for review.
    ReviewReady,
    /// The answer to [`super::AgentEvent::SummaryReview`].
    Review {
        request_id: u64,
        answer: ReviewAnswer,
    },
    Quit,
}

/// What the user did with a summary in review.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewAnswer {
    /// As the model wrote it.
    Apply,
    /// With the user's text in place of the model's.
    Edited { summary: String },
    /// Not at all: the history stays as it was and the call goes over the limit.
    Reject,
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
            | Op::SummariseUpTo { .. }
            | Op::Fork { .. } => true,
            Op::Inspect
            | Op::CountTokens
            | Op::Preview { .. }
            | Op::Instructions
            | Op::Mcp { .. }
            | Op::Permissions { .. }
            | Op::Permission { .. }
            | Op::Review { .. }
            | Op::ReviewReady
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
