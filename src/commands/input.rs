//! What the offline commands read: a JSON array of messages, a transcript (JSONL of
//! messages, as `.transcripts/` holds) or a session journal, with one error type for
//! everything that can go wrong in them.

use std::path::Path;

use crate::message::Message;
use crate::session::{JournalText, Record, read_journal};

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error(transparent)]
    Journal(#[from] crate::session::SessionError),
    #[error("{path} is not a JSON array of messages: {source}")]
    Parse { path: String, source: serde_json::Error },
    #[error("{path}, line {line}: neither a journal record nor a message: {source}")]
    Line {
        path: String,
        line: usize,
        source: serde_json::Error,
    },
    #[error(
        "{path} ends in a line cut short ({bytes} bytes with no newline, not a whole message or record); \
         a journal torn by a crash is read by `scratchpad --continue`, which sets the line aside"
    )]
    Torn { path: String, bytes: usize },
    #[error("{0} holds no messages: give a JSON array of messages, a transcript or a session journal")]
    Empty(String),
    #[error(
        "no history given, and {0} has no session to read: give one (`compact --input FILE`, \
         `simulate FILE`): a JSON array of messages, a transcript or a session journal"
    )]
    NoInput(String),
    #[error("invalid compaction settings: {0}")]
    Config(crate::setting::InvalidSetting),
    #[error("--keep-from: {0}")]
    KeepFrom(crate::compact::compact_history::KeepFromError),
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

/// The history `compact` reads: `--input`, or else the workspace's newest session.
pub fn input_or_newest(input: Option<&Path>, workspace: &Path) -> Result<std::path::PathBuf, CommandError> {
    match input {
        Some(path) => Ok(path.to_path_buf()),
        None => {
            crate::session::find(workspace, None).map_err(|_| CommandError::NoInput(workspace.display().to_string()))
        }
    }
}

/// Of a session journal, which messages a command reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FromJournal {
    /// The history it holds now: what resuming it would give (appends, compactions
    /// and undos replayed, then mended). `compact` works on this.
    History,
    /// Every message it ever appended, in order: the recording `simulate` replays.
    EveryMessage,
}

/// The messages of `path`: a JSON array, a transcript, or a journal as `journal` says.
pub fn read_messages(path: &Path, journal: FromJournal) -> Result<Vec<Message>, CommandError> {
    let text = read_journal(path)?;
    if text.starts_with(b'[') {
        return crate::message::parse_history(text.into_bytes()).map_err(|source| CommandError::Parse {
            path: path.display().to_string(),
            source,
        });
    }
    let is_journal = text
        .lines()
        .next()
        .is_some_and(|(_, line)| crate::json::from_slice::<Record>(line).is_ok());
    if !is_journal || journal == FromJournal::EveryMessage {
        return every_message(path, &text);
    }
    let restored = crate::session::restore(path)?;
    if restored.messages.is_empty() {
        return Err(CommandError::Empty(path.display().to_string()));
    }
    Ok(restored.messages)
}

/// Every message of a transcript (JSONL of messages) or every message a journal
/// appended (JSONL of records). A last line without its newline counts only if it is
/// whole; one cut short is an error, as is a file with no messages: a replay of part
/// of a recording would report steps that never were.
fn every_message(path: &Path, text: &JournalText) -> Result<Vec<Message>, CommandError> {
    let name = || path.display().to_string();
    let mut messages = Vec::new();
    let mut take = |bytes: &[u8]| -> Result<(), serde_json::Error> {
        if let Ok(record) = crate::json::from_slice::<Record>(bytes) {
            if let Record::Append { message } = record {
                messages.push(message);
            }
            return Ok(());
        }
        messages.push(crate::json::from_slice(bytes)?);
        Ok(())
    };
    for (line, bytes) in text.lines() {
        take(bytes).map_err(|source| CommandError::Line {
            path: name(),
            line,
            source,
        })?;
    }
    if let Some(torn) = text.torn().filter(|tail| !tail.iter().all(u8::is_ascii_whitespace)) {
        take(torn).map_err(|source| {
            if crate::json::from_slice::<serde::de::IgnoredAny>(torn).is_ok() {
                // Whole JSON, just not a message: the same error as any other line.
                CommandError::Line {
                    path: name(),
                    line: text.torn_line_number(),
                    source,
                }
            } else {
                CommandError::Torn {
                    path: name(),
                    bytes: torn.len(),
                }
            }
        })?;
    }
    if messages.is_empty() {
        return Err(CommandError::Empty(name()));
    }
    Ok(messages)
}
