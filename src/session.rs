//! The session journal: every message appended to the history, every compaction that
//! replaced it, and the estimate after each model call, as JSON lines under
//! `.scratchpad/sessions/`. Replaying it restores the exact history; a line cut by a
//! crash (kill -9 mid-write) is ignored, so at most the message being written is lost.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compact::StageEvent;
use crate::message::Message;
use crate::store::create_private_dir;

pub const SESSIONS_DIR: &str = ".scratchpad/sessions";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Meta {
        version: u32,
        provider: String,
        model: String,
        created_unix: u64,
    },
    Append {
        message: Message,
    },
    Replace {
        messages: Vec<Message>,
    },
    Stage {
        event: StageEvent,
    },
    /// The estimate sent with one model call, and the tokens the API reported for it.
    Call {
        estimate: usize,
        messages: usize,
        input_tokens: Option<u64>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session journal {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("no session found in {0}")]
    NoneFound(PathBuf),
    #[error("session {0} not found")]
    NotFound(String),
}

/// A point of the context timeline: the estimate at one model call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    pub estimate: usize,
    pub messages: usize,
    pub input_tokens: Option<u64>,
    /// Stages that fired in the `prepare` before this call.
    pub stages: Vec<crate::compact::Stage>,
}

#[derive(Debug, Default)]
pub struct Restored {
    pub messages: Vec<Message>,
    pub stages: Vec<StageEvent>,
    pub timeline: Vec<TimelinePoint>,
}

pub struct Journal {
    id: String,
    path: PathBuf,
    file: File,
}

impl Journal {
    pub fn create(workspace: &Path, provider: &str, model: &str) -> Result<Self, SessionError> {
        let dir = workspace.join(SESSIONS_DIR);
        let io = |source| SessionError::Io {
            path: dir.clone(),
            source,
        };
        create_private_dir(&dir).map_err(io)?;
        let created_unix = unix_now();
        let id = format!("{}-{}", crate::time::compact_stamp(created_unix), std::process::id());
        let path = dir.join(format!("{id}.jsonl"));
        let mut journal = Journal {
            file: open_append(&path).map_err(io)?,
            id,
            path,
        };
        journal.append(&Record::Meta {
            version: 1,
            provider: provider.into(),
            model: model.into(),
            created_unix,
        })?;
        Ok(journal)
    }

    /// Reopen an existing journal to continue it.
    pub fn reopen(path: &Path) -> Result<Self, SessionError> {
        let file = open_append(path).map_err(|source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Journal {
            id,
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record as one line, written in a single call.
    pub fn append(&mut self, record: &Record) -> Result<(), SessionError> {
        let mut line = serde_json::to_vec(record).map_err(|error| SessionError::Io {
            path: self.path.clone(),
            source: error.into(),
        })?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(|source| SessionError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Flush to disk: called at the end of every turn and after every compaction.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        self.file.sync_data().map_err(|source| SessionError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Replay a journal. Lines that do not parse (a write cut by a crash) are skipped.
pub fn restore(path: &Path) -> Result<Restored, SessionError> {
    let file = File::open(path).map_err(|source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut restored = Restored::default();
    let mut pending_stages = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        let line = line.map_err(|source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let Ok(record) = serde_json::from_slice::<Record>(&line) else {
            continue;
        };
        match record {
            Record::Meta { .. } => {}
            Record::Append { message } => restored.messages.push(message),
            Record::Replace { messages } => restored.messages = messages,
            Record::Stage { event } => {
                pending_stages.push(event.stage);
                restored.stages.push(event);
            }
            Record::Call {
                estimate,
                messages,
                input_tokens,
            } => restored.timeline.push(TimelinePoint {
                estimate,
                messages,
                input_tokens,
                stages: std::mem::take(&mut pending_stages),
            }),
        }
    }
    Ok(restored)
}

/// The journal with `id`, or the newest one when `id` is `None`.
pub fn find(workspace: &Path, id: Option<&str>) -> Result<PathBuf, SessionError> {
    let dir = workspace.join(SESSIONS_DIR);
    if let Some(id) = id {
        let path = dir.join(format!("{}.jsonl", id.trim_end_matches(".jsonl")));
        return if path.is_file() {
            Ok(path)
        } else {
            Err(SessionError::NotFound(id.to_string()))
        };
    }
    let newest = std::fs::read_dir(&dir)
        .map_err(|_| SessionError::NoneFound(dir.clone()))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .max();
    newest.map(|(_, path)| path).ok_or(SessionError::NoneFound(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_appends_and_replacements_and_skips_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path(), "demo", "offline-demo").unwrap();
        journal
            .append(&Record::Append {
                message: Message::user_text("a"),
            })
            .unwrap();
        journal
            .append(&Record::Append {
                message: Message::assistant_text("b"),
            })
            .unwrap();
        journal
            .append(&Record::Replace {
                messages: vec![Message::user_text("[Compacted] x")],
            })
            .unwrap();
        journal
            .append(&Record::Call {
                estimate: 40,
                messages: 1,
                input_tokens: Some(10),
            })
            .unwrap();
        journal
            .append(&Record::Append {
                message: Message::assistant_text("c"),
            })
            .unwrap();
        journal.sync().unwrap();
        let path = journal.path().to_path_buf();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"type\":\"append\",\"message\":{\"role\":\"us")
            .unwrap();
        let restored = restore(&path).unwrap();
        assert_eq!(
            restored.messages,
            vec![Message::user_text("[Compacted] x"), Message::assistant_text("c")]
        );
        assert_eq!(restored.timeline.len(), 1);
        assert_eq!(find(dir.path(), None).unwrap(), path);
        assert_eq!(find(dir.path(), Some(journal.id())).unwrap(), path);
        assert!(matches!(find(dir.path(), Some("nope")), Err(SessionError::NotFound(_))));
    }
}
