//! The session journal: every message appended to the history, every compaction that
//! replaced it, and the estimate after each model call, as JSON lines in the platform
//! data folder ([`sessions_dir`]: outside the workspace, out of the model's reach).
//! Replaying it restores the exact history. One process writes a session at a time:
//! its lock is held while the journal is open.
//!
//! A crash may cut the last line (kill -9 mid-write, a full disk): reopening moves
//! the torn bytes to a side file and truncates the journal to its last complete line,
//! so the next record starts on a line of its own; a failed append is cut back the
//! same way. The restored history is checked before anything is sent: a call left
//! without a result (a kill while a tool ran) gets an "interrupted" result, recorded as
//! a repair, so a session can always be resumed.
//!
//! `place`: where a workspace's journals are; `journal`: the one writer of a
//! session; `replay`: reading a journal back into a history; [`fork`]: a new session
//! from any point of another, the parent left untouched; `listing`: the sessions of
//! a workspace as the picker shows them, read from each journal's head and tail;
//! [`family`]: a session and its forks as `/tree` draws them, with their [`labels`].

mod family;
mod fork;
mod journal;
pub mod labels;
mod listing;
mod numbering;
mod place;
mod replay;
mod whole_file;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::compact::StageEvent;
use crate::message::Message;
use crate::protocol::CallPoint;

pub use family::{Branch, Node, family, nodes_of};
pub use fork::{ForkAt, ForkError, ForkPoint, Forked, Origin, fork, history_at};
pub use journal::{Journal, lock_holder, torn_side_file};
pub use listing::{SessionSummary, Tally, list};
pub use place::{
    LEGACY_FOLDER, LEGACY_SESSIONS_DIR, find, find_in, id_of, migrate_legacy, sessions_dir, sessions_dir_under,
    way_back,
};
pub use replay::{Fed, JournalText, MAX_JOURNAL_BYTES, Replay, Restored, read_journal, restore};

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
        stage: crate::compact::Stage,
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
        item: crate::protocol::Past,
    },
    /// Where the session stands, written at the end of each turn: the session list
    /// reads it from the journal's tail instead of replaying the whole journal.
    Tally(Tally),
}

/// A new id for a stage record: the time, the process and a counter, unique among
/// every session's records.
pub fn new_stage_id() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        crate::time::compact_stamp(unix_now()),
        std::process::id(),
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session journal {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("no session found in {0}")]
    NoneFound(PathBuf),
    #[error("session {0} not found")]
    NotFound(String),
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{0} is not a regular file")]
    NotAFile(PathBuf),
    #[error(
        "session {id} is open in another scratchpad (pid {pid}); start a new session, or look at it without changing it: scratchpad --resume {id} --read-only"
    )]
    Locked { id: String, pid: String },
    #[error("session journal {path} is larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
}

use crate::time::unix_now;

#[cfg(test)]
mod tests;
