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

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compact::StageEvent;
use crate::compact::pairing::repair;
use crate::message::Message;
use crate::protocol::{CallPoint, Past};
use crate::store::create_private_dir;

/// Where journals were kept before they moved out of the workspace (out of the
/// model's reach); found there, they are moved on the first start.
pub const LEGACY_SESSIONS_DIR: &str = ".scratchpad/sessions";

/// The folder of this workspace's journals: in the platform data folder, outside the
/// workspace, where no command or file tool can write, one folder per workspace (its
/// name and a hash of its path).
pub fn sessions_dir(workspace: &Path) -> PathBuf {
    let root = crate::config::data_dir().unwrap_or_else(|| workspace.join(".scratchpad"));
    sessions_dir_under(&root, workspace)
}

/// [`sessions_dir`] under a given data folder.
pub fn sessions_dir_under(data_root: &Path, workspace: &Path) -> PathBuf {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let real = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let hash = sha2::Sha256::digest(real.as_os_str().as_bytes());
    let hex: String = hash[..6].iter().map(|byte| format!("{byte:02x}")).collect();
    let name = real
        .file_name()
        .map(|name| crate::store::safe_file_stem(&name.to_string_lossy()))
        .unwrap_or_else(|| "root".into());
    data_root.join("sessions").join(format!("{name}-{hex}"))
}

/// Move journals left in the workspace's `.scratchpad/sessions/` by an earlier
/// version to [`sessions_dir`]; a line for the user when any moved.
pub fn migrate_legacy(workspace: &Path) -> Result<Option<String>, SessionError> {
    let legacy = workspace.join(LEGACY_SESSIONS_DIR);
    let Ok(entries) = std::fs::read_dir(&legacy) else {
        return Ok(None);
    };
    let target = sessions_dir(workspace);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SessionError::Io { path, source }
    };
    crate::store::create_private_dir(&target).map_err(io(&target))?;
    let mut moved = 0;
    for entry in entries.filter_map(Result::ok) {
        let from = entry.path();
        let is_journal = from
            .extension()
            .is_some_and(|extension| extension == "jsonl" || extension == "torn");
        // Only regular files: a link planted there is not followed.
        if !is_journal || !entry.file_type().is_ok_and(|kind| kind.is_file()) {
            continue;
        }
        let to = target.join(entry.file_name());
        if to.exists() {
            continue;
        }
        if std::fs::rename(&from, &to).is_err() {
            // Another filesystem: copy, flush, then remove the old one.
            std::fs::copy(&from, &to)
                .and_then(|_| File::open(&to)?.sync_all())
                .and_then(|()| std::fs::remove_file(&from))
                .map_err(io(&from))?;
        }
        moved += 1;
    }
    let _ = std::fs::remove_dir(&legacy);
    let _ = std::fs::remove_dir(workspace.join(".scratchpad"));
    Ok((moved > 0).then(|| {
        format!(
            "Moved {moved} session journal(s) from {LEGACY_SESSIONS_DIR}/ to {}, out of the model's reach.",
            target.display()
        )
    }))
}

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

#[derive(Debug, Default)]
pub struct Restored {
    pub messages: Vec<Message>,
    /// Tool results pinned in `/context`, by tool_use id.
    pub pins: std::collections::BTreeSet<String>,
    /// What was skipped or mended to make the history valid, one line each; the
    /// caller journals a [`Record::Repair`] and shows these when not empty.
    pub repairs: Vec<String>,
    /// Everything that happened, in order, for showing the session as it was.
    pub past: Vec<crate::protocol::Past>,
}

pub struct Journal {
    id: String,
    path: PathBuf,
    file: File,
    /// Length of the journal up to its last complete record.
    len: u64,
    /// The session's lock, held for as long as the journal is open.
    _lock: File,
}

/// Where a journal's lock is: `<id>.lock` beside it, holding the holder's pid.
fn lock_path(journal: &Path) -> PathBuf {
    journal.with_extension("lock")
}

/// The pid holding the session's lock, if another process holds it now.
pub fn lock_holder(journal: &Path) -> Option<String> {
    use std::os::fd::AsRawFd;
    let mut options = OpenOptions::new();
    options.read(true);
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(lock_path(journal)).ok()?;
    // SAFETY: flock on a descriptor we own; a lock we get is dropped with the file.
    let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    if free {
        return None;
    }
    let mut holder = String::new();
    file.read_to_string(&mut holder).ok()?;
    Some(holder.trim().to_string())
}

/// Take the session's advisory lock (`flock` on its lock file, released by the
/// kernel when the process ends, however it ends), or say which process holds it.
fn lock_session(journal: &Path, id: &str) -> Result<File, SessionError> {
    use std::os::fd::AsRawFd;
    let path = lock_path(journal);
    let io = |source| SessionError::Io {
        path: path.clone(),
        source,
    };
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true);
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(&path).map_err(io)?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        return Err(SessionError::Locked {
            id: id.to_string(),
            pid: holder.trim().to_string(),
        });
    }
    file.set_len(0).map_err(io)?;
    write!(file, "{}", std::process::id()).map_err(io)?;
    Ok(file)
}

impl Journal {
    /// A new journal in `dir` (a workspace's [`sessions_dir`]), locked for this process.
    pub fn create(dir: &Path, provider: &str, model: &str) -> Result<Self, SessionError> {
        let dir = dir.to_path_buf();
        let io = |source| SessionError::Io {
            path: dir.clone(),
            source,
        };
        create_private_dir(&dir).map_err(io)?;
        let created_unix = unix_now();
        let base = format!("{}-{}", crate::time::compact_stamp(created_unix), std::process::id());
        // Two sessions of one process in the same second (a `/clear`) get new names:
        // an existing journal is never reopened by accident.
        let (id, path, file) = (0u32..)
            .map(|n| if n == 0 { base.clone() } else { format!("{base}-{n}") })
            .find_map(|id| {
                let path = dir.join(format!("{id}.jsonl"));
                match open_new(&path) {
                    Ok(file) => Some(Ok((id, path, file))),
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => None,
                    Err(error) => Some(Err(error)),
                }
            })
            .unwrap_or_else(|| Err(std::io::ErrorKind::AlreadyExists.into()))
            .map_err(io)?;
        let lock = lock_session(&path, &id)?;
        let mut journal = Journal {
            file,
            id,
            path,
            len: 0,
            _lock: lock,
        };
        journal.append(&Record::Meta {
            version: 1,
            provider: provider.into(),
            model: model.into(),
            created_unix,
        })?;
        Ok(journal)
    }

    /// Reopen an existing journal to continue it. A torn last line is moved to
    /// `<journal>.torn` and cut off, so the next record starts on a fresh line.
    pub fn reopen(path: &Path) -> Result<Self, SessionError> {
        let io = |source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        };
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Before anything is read or cut: a second writer would interleave records.
        let lock = lock_session(path, &id)?;
        let mut file = open_regular(path, OpenOptions::new().read(true).append(true))?;
        let (len, torn) = complete_length(&mut file).map_err(io)?;
        if !torn.is_empty() {
            let side = torn_side_file(path);
            let mut keep = OpenOptions::new();
            keep.create(true).append(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                keep.mode(0o600);
            }
            keep.open(&side)
                .and_then(|mut side| side.write_all(&torn).and_then(|()| side.write_all(b"\n")))
                .map_err(|source| SessionError::Io { path: side, source })?;
            file.set_len(len).map_err(io)?;
            file.sync_data().map_err(io)?;
        }
        Ok(Journal {
            id,
            path: path.to_path_buf(),
            file,
            len,
            _lock: lock,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record as one line, written in a single call. If the write fails
    /// (a full disk), the journal is cut back to its last complete record.
    pub fn append(&mut self, record: &Record) -> Result<(), SessionError> {
        let mut line = crate::json::to_vec(record).map_err(|error| SessionError::Io {
            path: self.path.clone(),
            source: error.into(),
        })?;
        line.push(b'\n');
        match self.file.write_all(&line) {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(source) => {
                let _ = self.file.set_len(self.len);
                Err(SessionError::Io {
                    path: self.path.clone(),
                    source,
                })
            }
        }
    }

    /// Flush to disk: called at the end of every turn and after every compaction.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        self.file.sync_data().map_err(|source| SessionError::Io {
            path: self.path.clone(),
            source,
        })
    }
}

fn open_new(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create_new(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Open `path` only if it is a regular file, without following a link and without
/// blocking on a FIFO, so a journal swapped for `/dev/zero` or a pipe is an error.
fn open_regular(path: &Path, options: &mut OpenOptions) -> Result<File, SessionError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|source| {
        if source.raw_os_error() == Some(libc::ELOOP) {
            SessionError::NotAFile(path.to_path_buf())
        } else {
            SessionError::Read {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    let regular = file.metadata().is_ok_and(|meta| meta.is_file());
    if regular {
        Ok(file)
    } else {
        Err(SessionError::NotAFile(path.to_path_buf()))
    }
}

/// The length up to the last newline and the bytes after it (a torn line), reading
/// backwards from the end in blocks, so reopening a long journal reads only its tail.
fn complete_length(file: &mut File) -> std::io::Result<(u64, Vec<u8>)> {
    use std::io::{Seek, SeekFrom};
    const BLOCK: u64 = 64 * 1024;
    let size = file.metadata()?.len();
    let mut end = size;
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let mut block = vec![0; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut block)?;
        if let Some(at) = block.iter().rposition(|&b| b == b'\n') {
            let complete = start + at as u64 + 1;
            return Ok((complete, torn_tail(file, complete, size)?));
        }
        end = start;
    }
    Ok((0, torn_tail(file, 0, size)?))
}

fn torn_tail(file: &mut File, from: u64, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut tail = vec![0; (size - from) as usize];
    file.seek(SeekFrom::Start(from))?;
    file.read_exact(&mut tail)?;
    Ok(tail)
}

/// Where the bytes of a torn last line are kept.
pub fn torn_side_file(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".torn");
    PathBuf::from(name)
}

/// The largest journal we read; a bigger one is refused rather than filling memory.
pub const MAX_JOURNAL_BYTES: u64 = 4 << 30;

/// A JSON-lines file as read: its complete lines, and a last line without its newline
/// (written by a process that died mid-write) kept apart.
pub struct JournalText {
    bytes: Vec<u8>,
    /// Bytes up to and including the last newline.
    complete_len: usize,
}

impl JournalText {
    /// Complete lines with their 1-based line numbers; blank lines are skipped.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.bytes[..self.complete_len]
            .split(|&b| b == b'\n')
            .enumerate()
            .map(|(at, line)| (at + 1, line))
            .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
    }

    /// Whether the text (after leading whitespace) starts with `byte`.
    pub fn starts_with(&self, byte: u8) -> bool {
        self.bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&byte)
    }

    /// The whole file as text (for formats that are not line based).
    pub fn into_string(self) -> std::io::Result<String> {
        String::from_utf8(self.bytes).map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
    }

    /// The torn last line, if the file does not end with a newline.
    pub fn torn(&self) -> Option<&[u8]> {
        (self.complete_len < self.bytes.len()).then(|| &self.bytes[self.complete_len..])
    }

    /// The 1-based number of the line after the last newline (the torn one, if any).
    pub fn torn_line_number(&self) -> usize {
        self.bytes[..self.complete_len].iter().filter(|&&b| b == b'\n').count() + 1
    }
}

/// Read a journal or transcript: only a regular file, at most [`MAX_JOURNAL_BYTES`].
/// `--continue`, `simulate` and `compact` all read through here.
pub fn read_journal(path: &Path) -> Result<JournalText, SessionError> {
    let mut file = open_regular(path, OpenOptions::new().read(true))?;
    let mut bytes = Vec::new();
    Read::by_ref(&mut file)
        .take(MAX_JOURNAL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| SessionError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > MAX_JOURNAL_BYTES {
        return Err(SessionError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_JOURNAL_BYTES,
        });
    }
    let complete_len = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
    Ok(JournalText { bytes, complete_len })
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Replay a journal into a history that is valid to send. A torn last line is left
/// out; a complete line that is not a record is skipped and named in `repairs`; then
/// [`repair`] mends what is left (calls without results, orphan results, an assistant
/// message first), each mend named in `repairs`.
pub fn restore(path: &Path) -> Result<Restored, SessionError> {
    let text = read_journal(path)?;
    let mut restored = Restored::default();
    let mut stages_since_call = Vec::new();
    // Ids of the stages in force (journaled, not undone), oldest first.
    let mut live_stages: Vec<String> = Vec::new();
    let mut seen_stages: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut previous_line: &[u8] = &[];
    // Appended lines that carry tool ids: one seen again is the same record twice.
    let mut tool_lines: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
    if let Some(torn) = text.torn() {
        restored.repairs.push(format!(
            "the last line of the journal ({} bytes) was cut by a crash and is left out",
            torn.len()
        ));
    }
    for (number, line) in text.lines() {
        let repeated = line == previous_line;
        previous_line = line;
        let Ok(record) = crate::json::from_slice::<Record>(line) else {
            restored
                .repairs
                .push(format!("line {number} of the journal is not a record and was skipped"));
            continue;
        };
        if repeated && !matches!(record, Record::Call(_)) {
            restored.repairs.push(format!(
                "line {number} of the journal repeats the line before it and was skipped"
            ));
            continue;
        }
        match record {
            Record::Meta { .. } => {}
            Record::Append { message } => {
                let has_tool_ids = message.has_tool_use() || message.has_tool_result();
                if has_tool_ids && !tool_lines.insert(line) {
                    restored.repairs.push(format!(
                        "line {number} of the journal repeats an earlier record of tool calls or results and was skipped"
                    ));
                    continue;
                }
                restored.past.push(Past::Message {
                    message: message.clone(),
                });
                restored.messages.push(message);
            }
            Record::Replace { messages } | Record::Repair { messages, .. } => restored.messages = messages,
            Record::Pin { tool_use_id, pinned } => {
                if pinned {
                    restored.pins.insert(tool_use_id);
                } else {
                    restored.pins.remove(&tool_use_id);
                }
            }
            Record::Undo { stage, undid, messages } => {
                if !undid.is_empty() {
                    if live_stages.last() != Some(&undid) {
                        restored.repairs.push(format!(
                            "line {number} of the journal undoes stage {undid}, which is not the newest stage, and was skipped"
                        ));
                        continue;
                    }
                    live_stages.pop();
                }
                restored.messages = messages;
                restored.past.push(Past::Undo { stage });
            }
            Record::Stage { event } => {
                if !event.id.is_empty() {
                    if !seen_stages.insert(event.id.clone()) {
                        restored.repairs.push(format!(
                            "line {number} of the journal repeats stage {} and was skipped",
                            event.id
                        ));
                        continue;
                    }
                    if event.replaced > 0 {
                        live_stages.push(event.id.clone());
                    }
                }
                stages_since_call.push(event.stage);
                restored.past.push(Past::Stage { event });
            }
            Record::Call(mut point) => {
                // Journals before the points carried their stages left them out.
                if point.stages.is_empty() {
                    point.stages = std::mem::take(&mut stages_since_call);
                }
                stages_since_call.clear();
                restored.past.push(Past::Call { point });
            }
        }
    }
    restored.repairs.extend(repair(&mut restored.messages));
    Ok(restored)
}

/// The journal with `id`, or the newest one when `id` is `None`.
pub fn find(workspace: &Path, id: Option<&str>) -> Result<PathBuf, SessionError> {
    find_in(&sessions_dir(workspace), id)
}

/// [`find`] in a given folder of journals.
pub fn find_in(dir: &Path, id: Option<&str>) -> Result<PathBuf, SessionError> {
    let dir = dir.to_path_buf();
    if let Some(id) = id {
        let id = id.trim_end_matches(".jsonl");
        if crate::store::safe_file_stem(id) != id {
            return Err(SessionError::NotFound(id.to_string()));
        }
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
            .append(&Record::Call(CallPoint {
                estimate: 40,
                messages: 1,
                request_chars: Some(100),
                input_tokens: Some(10),
                ..CallPoint::default()
            }))
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
        assert_eq!(
            restored
                .past
                .iter()
                .filter(|item| matches!(item, Past::Call { .. }))
                .count(),
            1
        );
        assert_eq!(find_in(dir.path(), None).unwrap(), path);
        assert_eq!(find_in(dir.path(), Some(journal.id())).unwrap(), path);
        assert!(matches!(
            find_in(dir.path(), Some("nope")),
            Err(SessionError::NotFound(_))
        ));
        assert!(matches!(
            find_in(dir.path(), Some("../x")),
            Err(SessionError::NotFound(_))
        ));
    }

    use crate::compact::pairing::check_pairing;
    use crate::message::{ContentBlock, Role};

    /// A scripted session: a prompt, a tool round, a compaction, then a kill while the
    /// second tool runs (the call is the last record).
    fn scripted_records() -> Vec<Record> {
        let call = |id: &str| {
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::text("checking"),
                    ContentBlock::tool_use(id, "bash", serde_json::json!({"command": "ls"})),
                ],
            )
        };
        let result = |id: &str| Message::blocks(Role::User, vec![ContentBlock::tool_result(id, "a\nb ✓", false)]);
        vec![
            Record::Meta {
                version: 1,
                provider: "demo".into(),
                model: "m".into(),
                created_unix: 1,
            },
            Record::Append {
                message: Message::user_text("list the files"),
            },
            Record::Append { message: call("t1") },
            Record::Append { message: result("t1") },
            Record::Call(CallPoint {
                estimate: 300,
                messages: 3,
                input_tokens: Some(90),
                ..CallPoint::default()
            }),
            Record::Replace {
                messages: vec![Message::user_text("[Compacted] summary"), call("t1"), result("t1")],
            },
            Record::Append { message: call("t2") },
            Record::Append { message: result("t2") },
            Record::Append {
                message: Message::assistant_text("done"),
            },
            Record::Append {
                message: Message::user_text("now again"),
            },
            Record::Append { message: call("t3") },
        ]
    }

    fn replay(records: &[Record]) -> Vec<Message> {
        let mut messages = Vec::new();
        for record in records {
            match record {
                Record::Append { message } => messages.push(message.clone()),
                Record::Replace { messages: all } | Record::Repair { messages: all, .. } => messages = all.clone(),
                _ => {}
            }
        }
        messages
    }

    #[test]
    fn a_cut_anywhere_restores_a_valid_history_losing_at_most_the_record_being_written() {
        let records = scripted_records();
        let lines: Vec<Vec<u8>> = records
            .iter()
            .map(|record| {
                let mut line = serde_json::to_vec(record).unwrap();
                line.push(b'\n');
                line
            })
            .collect();
        let whole: Vec<u8> = lines.concat();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.jsonl");
        for cut in 0..=whole.len() {
            std::fs::write(&path, &whole[..cut]).unwrap();
            let restored = restore(&path).unwrap();
            assert_eq!(check_pairing(&restored.messages), Ok(()), "cut at byte {cut}");
            // Complete records are the ones whose newline made it to disk.
            let mut ends = 0;
            let complete = lines
                .iter()
                .take_while(|line| {
                    ends += line.len();
                    ends <= cut
                })
                .count();
            let mut expected = replay(&records[..complete]);
            repair(&mut expected);
            assert_eq!(restored.messages, expected, "cut at byte {cut}");
            if !restored.messages.is_empty() {
                assert_eq!(restored.messages[0].role, Role::User);
            }
        }
        // The full journal ends with a call that never ran: it gets an interrupted result.
        std::fs::write(&path, &whole).unwrap();
        let restored = restore(&path).unwrap();
        let last = restored.messages.last().unwrap();
        assert!(last.text().is_empty() && last.has_tool_result());
        assert_eq!(restored.repairs.len(), 1, "{:?}", restored.repairs);
    }

    #[test]
    fn reopening_moves_a_torn_tail_aside_so_the_next_record_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path(), "demo", "m").unwrap();
        journal
            .append(&Record::Append {
                message: Message::user_text("first"),
            })
            .unwrap();
        let path = journal.path().to_path_buf();
        drop(journal);
        let torn = b"{\"type\":\"append\",\"message\":{\"role\":\"assistant\",\"con";
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(torn)
            .unwrap();
        let mut journal = Journal::reopen(&path).unwrap();
        journal
            .append(&Record::Append {
                message: Message::assistant_text("second"),
            })
            .unwrap();
        let restored = restore(&path).unwrap();
        assert_eq!(
            restored.messages,
            vec![Message::user_text("first"), Message::assistant_text("second")]
        );
        assert!(restored.repairs.is_empty(), "{:?}", restored.repairs);
        let side = std::fs::read(torn_side_file(&path)).unwrap();
        assert_eq!(&side[..torn.len()], torn, "the torn bytes are kept");
    }

    /// Older journals wrote a call without its stages or the estimate before them; the
    /// stages journaled since the previous call become the point's.
    #[test]
    fn an_older_call_record_takes_the_stages_journaled_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.jsonl");
        let stage: crate::compact::StageEvent = serde_json::from_value(serde_json::json!({
            "stage": "snip_compact", "messages_before": 60, "messages_after": 50,
            "chars_before": 900, "chars_after": 400, "paths": [], "replaced": 10
        }))
        .unwrap();
        let text = format!(
            "{}\n{}\n{}\n",
            serde_json::to_string(&Record::Append {
                message: Message::user_text("go")
            })
            .unwrap(),
            serde_json::to_string(&Record::Stage { event: stage }).unwrap(),
            r#"{"type":"call","estimate":400,"messages":1,"input_tokens":120}"#,
        );
        std::fs::write(&path, text).unwrap();
        let restored = restore(&path).unwrap();
        let Some(Past::Call { point }) = restored.past.last() else {
            panic!("{:?}", restored.past)
        };
        assert_eq!(point.stages, vec![crate::compact::Stage::SnipCompact]);
        assert_eq!((point.before(), point.input_tokens), (400, Some(120)));
        assert!(restored.repairs.is_empty(), "{:?}", restored.repairs);
    }

    /// A journal whose records were written twice (a copy, a sync tool's merge):
    /// each loads once, so no tool id is sent twice and no stage is undone twice.
    #[test]
    fn repeated_records_load_once_and_an_undo_applies_only_to_the_stage_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("twice.jsonl");
        let call = Record::Append {
            message: Message::blocks(
                Role::Assistant,
                vec![ContentBlock::tool_use(
                    "t1",
                    "bash",
                    serde_json::json!({"command": "ls"}),
                )],
            ),
        };
        let result = Record::Append {
            message: Message::blocks(Role::User, vec![ContentBlock::tool_result("t1", "a\nb", false)]),
        };
        let stage = |id: &str| {
            let mut event = StageEvent::start(crate::compact::Stage::MicroCompact, 3, 100, String::new());
            event.id = id.to_string();
            event.replaced = 1;
            Record::Stage { event }
        };
        let undo = |id: &str, text: &str| Record::Undo {
            stage: crate::compact::Stage::MicroCompact,
            undid: id.to_string(),
            messages: vec![Message::user_text(text)],
        };
        let records = [
            Record::Append {
                message: Message::user_text("go"),
            },
            call.clone(),
            result.clone(),
            call,
            result,
            stage("s1"),
            stage("s2"),
            undo("s2", "before s2"),
            stage("s1"),
            undo("s2", "never was"),
            undo("s1", "before s1"),
            undo("s1", "before s1"),
        ];
        let text: String = records
            .iter()
            .map(|record| serde_json::to_string(record).unwrap() + "\n")
            .collect();
        std::fs::write(&path, text).unwrap();
        let restored = restore(&path).unwrap();
        assert_eq!(restored.messages, vec![Message::user_text("before s1")]);
        let undos = restored
            .past
            .iter()
            .filter(|item| matches!(item, Past::Undo { .. }))
            .count();
        assert_eq!(undos, 2, "s2 once, then s1 once");
        for line in [4, 5, 9, 10, 12] {
            assert!(
                restored.repairs.iter().any(|r| r.starts_with(&format!("line {line} "))),
                "line {line}: {:?}",
                restored.repairs
            );
        }
    }

    #[test]
    fn a_garbage_line_is_skipped_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.jsonl");
        let call = Message::blocks(
            Role::Assistant,
            vec![ContentBlock::tool_use("t1", "bash", serde_json::json!({}))],
        );
        let text = format!(
            "{}\n{}\nnot json at all\n{}\n",
            serde_json::to_string(&Record::Append {
                message: Message::user_text("go")
            })
            .unwrap(),
            serde_json::to_string(&Record::Append { message: call }).unwrap(),
            serde_json::to_string(&Record::Append {
                message: Message::user_text("next")
            })
            .unwrap(),
        );
        std::fs::write(&path, text).unwrap();
        let restored = restore(&path).unwrap();
        assert_eq!(check_pairing(&restored.messages), Ok(()));
        assert!(
            restored.repairs.iter().any(|r| r.contains("line 3")),
            "{:?}",
            restored.repairs
        );
        assert!(restored.messages[2].text().contains("next"), "the prompt is kept");
    }

    #[cfg(unix)]
    #[test]
    fn a_journal_that_is_a_fifo_or_a_link_to_a_device_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.jsonl");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(matches!(restore(&fifo), Err(SessionError::NotAFile(_))));
        assert!(matches!(Journal::reopen(&fifo), Err(SessionError::NotAFile(_))));
        let link = dir.path().join("zero.jsonl");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(restore(&link), Err(SessionError::NotAFile(_))));
    }

    #[test]
    fn two_sessions_in_the_same_second_get_their_own_journals() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = Journal::create(dir.path(), "demo", "m").unwrap();
        first
            .append(&Record::Append {
                message: Message::user_text("before /clear"),
            })
            .unwrap();
        let second = Journal::create(dir.path(), "demo", "m").unwrap();
        assert_ne!(first.id(), second.id());
        assert_ne!(first.path(), second.path());
        assert!(
            restore(second.path()).unwrap().messages.is_empty(),
            "the cleared session is not resurrected"
        );
        assert_eq!(restore(first.path()).unwrap().messages.len(), 1);
    }
}
