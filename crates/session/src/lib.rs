#![warn(unreachable_pub)]
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
//! [`family`]: a session and its forks as `/tree` draws them, with their [`labels`];
//! [`record`]: the format itself, every type a journal line holds.

// The core's modules under the names this crate's modules use for them.
use scratchpad_core::{compact, digest, json, message, store, text, time};

mod family;
mod fork;
mod journal;
pub mod labels;
mod listing;
mod numbering;
mod place;
pub mod record;
mod replay;
mod whole_file;

use std::path::PathBuf;

pub use family::{Branch, Node, family, nodes_of};
pub use fork::{ForkAt, ForkError, Forked, fork, history_at};
pub use journal::{Journal, lock_holder, torn_side_file};
pub use listing::{SessionSummary, list};
pub use place::{
    LEGACY_FOLDER, LEGACY_SESSIONS_DIR, find, find_in, id_of, migrate_legacy, sessions_dir, sessions_dir_under,
    way_back,
};
pub use record::{
    BackgroundEvent, CallPoint, CompactionRequester, FORMAT_VERSION, ForkPoint, InstructionRow, InstructionsNote,
    Origin, Past, Record, Tally, TurnOutcome,
};
pub use replay::{Fed, JournalText, MAX_JOURNAL_BYTES, Replay, Restored, read_journal, restore};

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
    #[error(
        "session journal {path} was written by a newer scratchpad (format {version}; this one reads up to {}): update scratchpad to open it",
        record::FORMAT_VERSION
    )]
    NewerFormat { path: PathBuf, version: u32 },
    #[error("session journal {path} is larger than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
}

use crate::time::unix_now;

#[cfg(test)]
mod tests;
