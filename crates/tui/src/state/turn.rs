//! Where the running turn is, the questions it is waiting on, and what the session
//! said about itself when it started.

use std::time::Instant;

use crate::protocol::Window;

/// What the status line says the turn is doing: [`Turn::state`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TurnState {
    #[default]
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
    /// A question waits for the user's answer (a permission, or whether to
    /// summarise).
    Asking,
    /// A summary waits for the user's review.
    Reviewing,
    /// The user cancelled; the agent has not yet said the turn ended.
    Cancelling,
}

impl TurnState {
    /// Compacting, or writing the summary of a compaction.
    pub fn is_compacting(&self) -> bool {
        matches!(self, TurnState::Compacting | TurnState::Summarising { .. })
    }
}

/// What the agent waits on the user for: one question at a time.
#[derive(Clone, Debug, PartialEq)]
pub enum Question {
    Permission(PermissionPrompt),
    /// A summary written and waiting in the one review step.
    Review(ReviewPrompt),
}

impl Question {
    pub fn request_id(&self) -> u64 {
        match self {
            Question::Permission(prompt) => prompt.request_id,
            Question::Review(prompt) => prompt.request_id,
        }
    }

    /// When it was first drawn: keys before that, or too soon after, were typed for
    /// something else and are ignored.
    pub fn shown_at(&self) -> Option<Instant> {
        match self {
            Question::Permission(prompt) => prompt.shown_at,
            Question::Review(prompt) => prompt.shown_at,
        }
    }

    /// [`Question::shown_at`], to set when it is first drawn.
    pub fn shown_at_mut(&mut self) -> &mut Option<Instant> {
        match self {
            Question::Permission(prompt) => &mut prompt.shown_at,
            Question::Review(prompt) => &mut prompt.shown_at,
        }
    }
}

/// The one turn-state machine: every route (a request, a question, a review, a
/// compaction between turns, a cancel) changes the turn through these transitions,
/// each driven by the agent's event that says it happened, except the user's cancel,
/// which holds "cancelling" until the agent says the turn ended or it is ready.
#[derive(Clone, Debug, Default)]
pub struct Turn {
    /// What runs now, questions aside.
    activity: TurnState,
    /// Between the agent's TurnStarted and TurnDone.
    started: bool,
    /// A request was sent and its turn has not started yet.
    sent: bool,
    question: Option<Question>,
}

impl Turn {
    /// What the status line shows: a cancel first, then a question, then the work.
    pub fn state(&self) -> TurnState {
        match (&self.activity, &self.question) {
            (TurnState::Cancelling, _) => TurnState::Cancelling,
            (_, Some(Question::Review(_))) => TurnState::Reviewing,
            (_, Some(_)) => TurnState::Asking,
            (activity, None) => activity.clone(),
        }
    }

    /// Something runs (a turn, or work between turns): a request typed now waits.
    pub fn is_busy(&self) -> bool {
        self.activity != TurnState::Idle || self.sent
    }

    /// Between the agent's TurnStarted and TurnDone.
    pub fn in_turn(&self) -> bool {
        self.started
    }

    pub fn question(&self) -> Option<&Question> {
        self.question.as_ref()
    }

    pub fn question_mut(&mut self) -> Option<&mut Question> {
        self.question.as_mut()
    }

    pub fn permission(&self) -> Option<&PermissionPrompt> {
        match &self.question {
            Some(Question::Permission(prompt)) => Some(prompt),
            _ => None,
        }
    }

    pub fn review(&self) -> Option<&ReviewPrompt> {
        match &self.question {
            Some(Question::Review(prompt)) => Some(prompt),
            _ => None,
        }
    }

    /// The user sent a request: busy from now, not only once the agent says the turn
    /// started, so that a second request typed at once is queued instead of sent.
    pub fn submitted(&mut self) {
        self.sent = true;
        self.activity = TurnState::Thinking;
    }

    pub(super) fn started(&mut self) {
        self.sent = false;
        self.started = true;
        self.activity = TurnState::Thinking;
    }

    /// The agent moved on to `activity`; a cancel already asked for stays shown until
    /// the agent says the turn ended.
    pub(super) fn working(&mut self, activity: TurnState) {
        if self.activity != TurnState::Cancelling {
            self.activity = activity;
        }
    }

    pub fn activity(&self) -> &TurnState {
        &self.activity
    }

    pub(super) fn asked(&mut self, question: Question) {
        self.question = Some(question);
    }

    pub fn answered(&mut self, request_id: u64) {
        if self.question.as_ref().is_some_and(|q| q.request_id() == request_id) {
            self.question = None;
        }
    }

    /// A summary went in (or failed): the turn thinks on, or between turns the app
    /// waits for the agent's ready.
    pub(super) fn compaction_done(&mut self) {
        if self.activity.is_compacting() {
            self.activity = if self.started {
                TurnState::Thinking
            } else {
                TurnState::Idle
            };
        }
    }

    pub(super) fn done(&mut self) {
        self.activity = TurnState::Idle;
        self.started = false;
        self.question = None;
    }

    /// The agent finished what it was asked between turns.
    pub(super) fn ready(&mut self) {
        if !self.started && !self.sent {
            self.activity = TurnState::Idle;
        }
    }

    /// The user's Esc or Ctrl+C: the question goes, and what runs is cancelling until
    /// the agent says otherwise. Whether there was anything to cancel (the caller
    /// then sends the agent the cancel).
    pub fn cancel(&mut self) -> bool {
        let anything = self.question.take().is_some() || self.is_busy();
        if self.is_busy() {
            self.activity = TurnState::Cancelling;
        }
        anything
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
    /// See [`Question::shown_at`].
    pub shown_at: Option<Instant>,
}

/// `compaction.review_summaries` (or `/summary`): a summary written and waiting in the
/// one review step.
#[derive(Clone, Debug, PartialEq)]
pub struct ReviewPrompt {
    pub request_id: u64,
    /// What leaves the context, in a line.
    pub leaves: String,
    /// As the model wrote it.
    pub summary: String,
    /// The index that goes in after it.
    pub index: String,
    pub retention: Option<String>,
    /// What not applying it leaves.
    pub if_not_applied: String,
    /// Whether a turn waits on it (Esc cancels the turn) or none runs.
    pub in_turn: bool,
    /// See [`Question::shown_at`].
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
