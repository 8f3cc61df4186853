//! The one writer of a session: a journal opened (or created) under the session's
//! lock, appended one whole line per record, cut back to its last complete record
//! when a write fails or a crash tore it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::{Origin, Record, Restored, SessionError, unix_now};
use crate::message::Message;
use crate::store::create_private_dir;

pub struct Journal {
    id: String,
    path: PathBuf,
    file: File,
    /// Length of the journal up to its last complete record.
    len: u64,
    /// The sequence number of the next record (see [`numbering`](super::numbering)).
    next_seq: u64,
    /// Made by this process and given nothing but what every journal starts with: a
    /// session nobody used, which leaves nothing behind when it is left.
    blank: bool,
    /// The session's lock, held for as long as the journal is open.
    _lock: File,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
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
    /// A new journal in `dir` (a workspace's [`sessions_dir`](super::sessions_dir)),
    /// locked for this process.
    pub fn create(dir: &Path, provider: &str, model: &str) -> Result<Self, SessionError> {
        Self::create_with(dir, provider, model, None, &[])
    }

    /// A new journal that starts where `parent` points, holding `messages` (the
    /// history there), written whole before it gets its name: a crash leaves either
    /// no fork or all of it, never a branch with half a history.
    pub fn create_branch(
        dir: &Path,
        provider: &str,
        model: &str,
        parent: Origin,
        messages: &[Message],
    ) -> Result<Self, SessionError> {
        Self::create_with(dir, provider, model, Some(parent), messages)
    }

    fn create_with(
        dir: &Path,
        provider: &str,
        model: &str,
        parent: Option<Origin>,
        messages: &[Message],
    ) -> Result<Self, SessionError> {
        let dir = dir.to_path_buf();
        let io = |source| SessionError::Io {
            path: dir.clone(),
            source,
        };
        create_private_dir(&dir).map_err(io)?;
        let created_unix = unix_now();
        let mut next_seq = 0;
        let mut text = record_line(
            &dir,
            next_seq,
            &Record::Meta {
                version: super::FORMAT_VERSION,
                provider: provider.into(),
                model: model.into(),
                created_unix,
                parent,
            },
        )?;
        for message in messages {
            next_seq += 1;
            text.extend(record_line(
                &dir,
                next_seq,
                &Record::Append {
                    message: message.clone(),
                },
            )?);
        }
        let base = format!("{}-{}", crate::time::compact_stamp(created_unix), std::process::id());
        let temp = tempfile::Builder::new()
            .prefix(".new-session-")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(io)?;
        temp.as_file().write_all(&text).map_err(io)?;
        temp.as_file().sync_data().map_err(io)?;
        // Two sessions of one process in the same second (a `/clear`) get new names:
        // an existing journal is never reopened by accident (a link never replaces).
        let (id, path) = (0u32..)
            .map(|n| if n == 0 { base.clone() } else { format!("{base}-{n}") })
            .find_map(|id| {
                let path = dir.join(format!("{id}.jsonl"));
                match std::fs::hard_link(temp.path(), &path) {
                    Ok(()) => Some(Ok((id, path))),
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => None,
                    Err(error) => Some(Err(error)),
                }
            })
            .unwrap_or_else(|| Err(std::io::ErrorKind::AlreadyExists.into()))
            .map_err(io)?;
        drop(temp);
        File::open(&dir).and_then(|folder| folder.sync_all()).map_err(io)?;
        let lock = lock_session(&path, &id)?;
        let file = open_regular(&path, OpenOptions::new().append(true))?;
        Ok(Journal {
            file,
            id,
            path,
            len: text.len() as u64,
            next_seq: next_seq + 1,
            blank: messages.is_empty(),
            _lock: lock,
        })
    }

    /// Continue an existing journal: locked first, so nothing can append between the
    /// read and the lock; a torn last line moved to `<journal>.torn` and cut off, so
    /// the next record starts on a fresh line; then replayed, and numbered on from its
    /// highest record.
    pub fn resume(path: &Path) -> Result<(Self, Restored), SessionError> {
        let mut journal = Self::reopen(path)?;
        let restored = super::restore(path)?;
        journal.next_seq = restored.next_seq;
        Ok((journal, restored))
    }

    fn reopen(path: &Path) -> Result<Self, SessionError> {
        let io = |source| SessionError::Io {
            path: path.to_path_buf(),
            source,
        };
        let id = super::id_of(path);
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
            next_seq: 0,
            blank: false,
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
        let line = record_line(&self.path, self.next_seq, record)?;
        if !matches!(record, Record::Meta { .. } | Record::Served { .. }) {
            self.blank = false;
        }
        match self.file.write_all(&line) {
            Ok(()) => {
                self.len += line.len() as u64;
                self.next_seq += 1;
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

    /// Leave this session for another: a session nobody used is removed with its lock
    /// (it would only clutter the list), any other is kept as it is.
    pub fn leave(self) {
        if self.blank {
            let Journal { path, _lock, .. } = self;
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(lock_path(&path));
            drop(_lock);
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

/// One record as line `seq` of a journal at `path`.
fn record_line(path: &Path, seq: u64, record: &Record) -> Result<Vec<u8>, SessionError> {
    let object = crate::json::to_vec(record).map_err(|error| SessionError::Io {
        path: path.to_path_buf(),
        source: error.into(),
    })?;
    let mut line = super::numbering::numbered(&object, seq);
    line.push(b'\n');
    Ok(line)
}

/// Open `path` only if it is a regular file, without following a link and without
/// blocking on a FIFO, so a journal swapped for `/dev/zero` or a pipe is an error.
pub(super) fn open_regular(path: &Path, options: &mut OpenOptions) -> Result<File, SessionError> {
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
    const BLOCK: u64 = 64 * 1024;
    let size = file.metadata()?.len();
    let mut end = size;
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let block = read_range(file, start, end - start)?;
        if let Some(at) = block.iter().rposition(|&b| b == b'\n') {
            let complete = start + at as u64 + 1;
            return Ok((complete, read_range(file, complete, size - complete)?));
        }
        end = start;
    }
    Ok((0, read_range(file, 0, size)?))
}

/// `len` bytes of `file` from `start`.
pub(super) fn read_range(file: &mut File, start: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let len = usize::try_from(len).map_err(std::io::Error::other)?;
    let mut bytes = vec![0; len];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Where the bytes of a torn last line are kept.
pub fn torn_side_file(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".torn");
    PathBuf::from(name)
}
