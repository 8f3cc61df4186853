//! What a session journal holds, line by line: the [`Record`]s and every type they
//! carry. These are the file format, owned here and nowhere else, so that a change
//! to the screen or the agent cannot change what is written to disk unnoticed; the
//! fixtures in `tests/fixtures/journals/` (one per [`FORMAT_VERSION`] so far) must
//! still load.
//!
//! Format versions, as `meta` records them:
//! - 1: a record per line.
//! - 2: each record numbered (`{"seq":N,…}`, see `numbering`), so a copied line is
//!   told from a record that merely reads alike. Version 1 lines load whole.

use serde::{Deserialize, Serialize};

use crate::compact::{Stage, StageEvent};
use crate::message::Message;

/// The journal format this build writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Meta {
        version: u32,
        provider: String,
        model: String,
        created_unix: u64,
        /// For a fork: the session it branched from and where.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<Origin>,
    },
    /// The model and window the server said it serves, once discovery learned them
    /// (at the start, or later for a server that was down or loading): the newest
    /// such line says what served the session, where `meta` has only what was
    /// configured when the journal was made.
    Served {
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        window_tokens: Option<u64>,
    },
    Append {
        message: Message,
    },
    Replace {
        messages: Vec<Message>,
    },
    Stage {
        event: Box<StageEvent>,
    },
    /// One model call: the estimate before and after compaction, and the tokens the
    /// API reported for it.
    Call(CallPoint),
    /// The history after an invalid one was mended on resume, and what was mended.
    Repair {
        messages: Vec<Message>,
        notes: Vec<String>,
    },
    /// A tool result pinned (stage 3 leaves it whole) or unpinned in `/context`.
    Pin {
        tool_use_id: String,
        pinned: bool,
    },
    /// The newest compaction stage was undone: the history as it was before it.
    Undo {
        stage: Stage,
        /// The id of the stage record undone: replayed, the undo applies only while
        /// that stage is the newest, so a repeated record never undoes another one.
        /// Empty in journals written before stages had ids.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        undid: String,
        messages: Vec<Message>,
    },
    /// Something the chat showed that no other record keeps (a cancelled turn, a
    /// requested compaction and its focus, a preview), so a resumed session shows it.
    Shown {
        item: Past,
    },
    /// Where the session stands, written at the end of each turn: the session list
    /// reads it from the journal's tail instead of replaying the whole journal.
    Tally(Tally),
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
pub enum TurnOutcome {
    Completed,
    Failed,
    Cancelled,
}

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    Refused,
    Cancelled,
}

/// One thing that happened in an earlier run of a session, from its journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Past {
    /// A message joined the history.
    Message { message: Message },
    /// A compaction stage fired.
    Stage { event: Box<StageEvent> },
    /// A model call.
    Call { point: CallPoint },
    /// The newest compaction stage then was undone: `undid` is its id (empty in
    /// journals from before stages had ids).
    Undo {
        stage: Stage,
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
    Preview { events: Vec<StageEvent> },
    /// The project's instruction files changed during the session.
    Instructions { note: InstructionsNote },
    /// The session is a fork: where it branched from (its first record).
    Forked { origin: Origin },
    /// A summary being prepared in the background started, finished, failed or was
    /// set aside.
    Background { event: BackgroundEvent },
    /// A tool call ended: how, and how long it took, so a resumed chat shows it as
    /// it was (a result alone says only whether it was an error).
    CallEnded {
        id: String,
        status: ToolStatus,
        took_ms: u64,
    },
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
    /// The next call's prompt cache missed on the changed system prompt, as the
    /// server said (known after that call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_miss: Option<CacheReport>,
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
                | Past::CallEnded { .. }
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
    Stage { id: String, stage: Stage },
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
    pub stages: Vec<Stage>,
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
    /// The response's id, the next call's `diagnostics.previous_message_id` (also
    /// after a resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// What the server said about the prompt cache for this call, where it found the
    /// request diverged from the previous one (Anthropic's cache diagnostics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheReport>,
}

/// Why a call's prompt cache could not reuse the previous call's prefix, as the
/// server says it, and what scratchpad itself changed in that prefix since.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheReport {
    /// The server's reason as it names it (`tools_changed`); `None` while the server
    /// was still comparing when it answered.
    pub reason: Option<String>,
    /// Prompt tokens after the point where the two requests diverged, by the server's
    /// estimate (only for the `*_changed` reasons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_input_tokens: Option<u64>,
    /// What scratchpad changed in the prefix since the previous call, by its own
    /// hashes; `None` when it cannot tell (the previous call was before a resume).
    pub ours: Option<Vec<PrefixChange>>,
    /// The compaction stages (their event ids) that ran since the previous call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<String>,
}

/// A part of the request's prefix that scratchpad changed between two calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum PrefixChange {
    Model,
    System,
    Tools,
    /// The first message (1-based) that is not what the previous call sent there.
    Message {
        position: usize,
    },
}

impl CacheReport {
    /// Whether the server named a divergence (not a comparison still pending).
    pub fn missed(&self) -> bool {
        self.reason.is_some()
    }

    /// The server's reason in words.
    pub fn reason_words(&self) -> String {
        match self.reason.as_deref() {
            None => "the server was still comparing".into(),
            Some("model_changed") => "the model changed".into(),
            Some("system_changed") => "the system prompt changed".into(),
            Some("tools_changed") => "the tools changed".into(),
            Some("messages_changed") => "the messages changed".into(),
            Some("previous_message_not_found") => {
                "the server no longer has the previous request to compare with".into()
            }
            Some("unavailable") => "the server could not compare".into(),
            Some(other) => other.replace('_', " "),
        }
    }

    /// What scratchpad changed, in words: `scratchpad changed the tool list and
    /// message 3`, or that it changed nothing (the miss is not ours).
    pub fn ours_words(&self) -> String {
        let Some(ours) = &self.ours else {
            return "scratchpad cannot tell what changed (the previous call was before a resume)".into();
        };
        if ours.is_empty() {
            return "scratchpad changed nothing in it".into();
        }
        let parts: Vec<String> = ours
            .iter()
            .map(|change| match change {
                PrefixChange::Model => "the model".to_string(),
                PrefixChange::System => "the system prompt".to_string(),
                PrefixChange::Tools => "the tool list".to_string(),
                PrefixChange::Message { position } => format!("message {position}"),
            })
            .collect();
        let joined = match parts.as_slice() {
            [only] => only.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
            [] => String::new(),
        };
        format!("scratchpad changed {joined}")
    }

    /// The server's estimate of the tokens after the divergence, as `, 4.3k tokens`.
    fn tokens_words(&self) -> String {
        self.missed_input_tokens
            .map(|tokens| format!(", {} tokens", crate::compact::short_count(tokens as usize)))
            .unwrap_or_default()
    }

    /// Whether the server compared at all: not when the previous request is gone
    /// or it could not.
    fn compared(&self) -> bool {
        !matches!(
            self.reason.as_deref(),
            Some("previous_message_not_found" | "unavailable")
        )
    }

    /// The gauge's few words: `cache missed: the tools changed, 4.3k tokens
    /// (scratchpad's change)`.
    pub fn short(&self) -> String {
        let whose = match &self.ours {
            Some(ours) if ours.is_empty() => " (not scratchpad's change)",
            Some(_) => " (scratchpad's change)",
            None => "",
        };
        match self.reason {
            None => "cache check pending".into(),
            Some(_) if !self.compared() => "cache not compared".into(),
            Some(_) => format!("cache missed: {}{}{whose}", self.reason_words(), self.tokens_words()),
        }
    }

    /// Why, and whose change it was: `the tools changed, 4.3k tokens · scratchpad
    /// changed the tool list`.
    pub fn detail(&self) -> String {
        if self.reason.is_none() || !self.compared() {
            return self.reason_words();
        }
        format!("{}{} · {}", self.reason_words(), self.tokens_words(), self.ours_words())
    }

    /// One line for the marker and `-p`: `cache missed: the tools changed, 4.3k
    /// tokens · scratchpad changed the tool list`.
    pub fn line(&self) -> String {
        let lead = match self.reason {
            None => "cache check pending",
            Some(_) if !self.compared() => "cache not compared",
            Some(_) => "cache missed",
        };
        format!("{lead}: {}", self.detail())
    }
}

impl CallPoint {
    /// The estimate before compaction: `estimate` itself when nothing fired.
    pub fn before(&self) -> usize {
        self.before.unwrap_or(self.estimate).max(self.estimate)
    }
}

/// Where a session stands at the end of a turn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Requests sent in the session (a fork counts those of its history too).
    pub turns: usize,
    /// Compaction stages that changed the history.
    pub compactions: usize,
    pub messages: usize,
    /// The estimate of the history, in characters.
    pub estimate: usize,
    /// The newest request and the answer to it, cut to `TALLY_TEXT_CHARS`.
    #[serde(default)]
    pub last_request: String,
    #[serde(default)]
    pub last_answer: String,
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

#[cfg(test)]
mod cache_report_tests {
    use super::*;

    /// Each reason the server gives, in words, and whose change it was.
    #[test]
    fn every_cache_miss_reason_is_said_in_words() {
        let report = |reason: &str, ours: Option<Vec<PrefixChange>>| CacheReport {
            reason: Some(reason.into()),
            missed_input_tokens: reason.ends_with("_changed").then_some(4_300),
            ours,
            stages: Vec::new(),
        };
        let lines: Vec<String> = [
            report("model_changed", Some(vec![PrefixChange::Model])),
            report("system_changed", Some(vec![PrefixChange::System])),
            report("tools_changed", Some(Vec::new())),
            report("messages_changed", Some(vec![PrefixChange::Message { position: 3 }])),
            report("previous_message_not_found", None),
            report("unavailable", Some(Vec::new())),
            report("brand_new_reason", Some(Vec::new())),
        ]
        .iter()
        .map(CacheReport::line)
        .collect();
        assert_eq!(
            lines,
            [
                "cache missed: the model changed, 4.3k tokens · scratchpad changed the model",
                "cache missed: the system prompt changed, 4.3k tokens · scratchpad changed the system prompt",
                "cache missed: the tools changed, 4.3k tokens · scratchpad changed nothing in it",
                "cache missed: the messages changed, 4.3k tokens · scratchpad changed message 3",
                "cache not compared: the server no longer has the previous request to compare with",
                "cache not compared: the server could not compare",
                "cache missed: brand new reason · scratchpad changed nothing in it",
            ]
        );
    }
}
