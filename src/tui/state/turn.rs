//! Where the running turn is, the questions it is waiting on, and what the session
//! said about itself when it started.

use std::time::Instant;

use crate::compact::StageEvent;
use crate::protocol::Window;

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
    /// A summary call for the turn: since when, and the characters of it streamed.
    Summarising {
        since: Instant,
        chars: usize,
    },
    /// Waiting for the user's answer to question `request_id` (a permission, or
    /// whether to summarise).
    AwaitingAnswer {
        request_id: u64,
    },
}

impl TurnState {
    /// Compacting, or writing the summary of a compaction.
    pub fn is_compacting(&self) -> bool {
        matches!(self, TurnState::Compacting | TurnState::Summarising { .. })
    }
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

/// `compaction.confirm_lossy`: a summary written and waiting for review.
#[derive(Clone, Debug, PartialEq)]
pub struct ReviewPrompt {
    pub request_id: u64,
    /// As the model wrote it.
    pub summary: String,
    /// The index that goes in after it.
    pub index: String,
    /// Messages it stands for.
    pub covers: usize,
    pub retention: Option<String>,
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
    /// A read-only view of a saved session: what it is. Nothing typed is sent.
    pub read_only: Option<String>,
    /// MCP servers still starting, and those that failed.
    pub mcp_starting: Vec<String>,
    pub mcp_failed: Vec<String>,
}

impl SessionInfo {
    /// Whether this session talks to the offline demo model.
    pub fn is_demo(&self) -> bool {
        crate::provider::demo::is_demo(&self.provider)
    }
}
