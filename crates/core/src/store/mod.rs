//! Where compaction puts what it takes out of the context: `.transcripts/` for whole
//! histories and `.task_outputs/tool-results/` for single tool outputs, both rooted in
//! the workspace.
//!
//! Every file is written completely to a temporary name and renamed into place; a
//! stage writes all its files, then [`Store::sync`] flushes them in one pass and the
//! folders once, before the history refers to any of them. So the history never names
//! a file that is missing or half written, and a stage that saves 90 results pays for
//! one round of flushes instead of 90. Files are private to the user (mode 0600).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::message::Message;

mod own_folders;
mod transcript;

use own_folders::refuse_links;
pub use own_folders::{create_own_folder, create_private_dir, read_json_whole, safe_file_stem, write_json_whole};
use transcript::write_jsonl_hashed;

/// Where transcripts go in a workspace.
pub const TRANSCRIPTS_DIR: &str = ".transcripts";
/// Where saved tool results go in a workspace.
pub const TOOL_RESULTS_DIR: &str = ".task_outputs/tool-results";

/// The archive's folders in a workspace: read-only to every command and file tool.
pub const ARCHIVE_FOLDERS: [&str; 2] = [TRANSCRIPTS_DIR, ".task_outputs"];

/// The folders scratchpad keeps in a workspace: journals, transcripts, saved outputs.
/// Each gets a `.gitignore` of `*` when created, and `glob` never lists them.
pub const OWN_FOLDERS: &[&str] = &[".scratchpad", ".transcripts", ".task_outputs"];

/// Why the archive could not keep something.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The history could not be serialised.
    #[error("cannot serialise the history: {0}")]
    Serialise(#[from] serde_json::Error),
}

/// A file the archive keeps: its path relative to the workspace and the digest of its
/// bytes ([`crate::digest`]), recorded when it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// The file, relative to the workspace.
    pub path: String,
    /// The digest of its bytes.
    pub digest: String,
}

/// The text of a kept file, read back and checked against its recorded digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedText {
    /// The file, relative to the workspace.
    pub path: String,
    /// Its text.
    pub text: String,
    /// The digest it was recorded with, which its bytes match.
    pub digest: String,
}

/// The archive on disk, in a workspace's own folders: transcripts and saved results,
/// each recorded with its digest when written and read back only while it matches.
#[derive(Clone, Debug)]
pub struct Store {
    workspace: PathBuf,
    durable: bool,
    /// A preview: files are named as they would be, and nothing is written.
    dry_run: bool,
    /// Files renamed into place but not yet flushed to disk.
    unsynced: Arc<Mutex<Vec<PathBuf>>>,
    /// The hash of every file this session's receipts record, by path: a file is read
    /// back only while its bytes still have that hash.
    digests: Arc<Mutex<HashMap<String, String>>>,
}

impl Store {
    /// The archive of `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Store {
            workspace: workspace.into(),
            durable: true,
            dry_run: false,
            unsynced: Arc::default(),
            digests: Arc::default(),
        }
    }

    /// Files a session's receipts recorded (read from its journal on resume), so they
    /// can be read back, each only while it still has its recorded hash.
    pub fn recognise<'a>(&self, kept: impl IntoIterator<Item = (&'a String, &'a String)>) {
        let mut digests = self.lock_digests();
        for (path, digest) in kept {
            digests.insert(path.clone(), digest.clone());
        }
    }

    /// The hash recorded for `path`, if any receipt of this session names it.
    pub fn recorded_digest(&self, path: &str) -> Option<String> {
        self.lock_digests().get(path).cloned()
    }

    fn remember(&self, path: &str, digest: &str) -> Kept {
        self.lock_digests().insert(path.to_string(), digest.to_string());
        Kept {
            path: path.to_string(),
            digest: digest.to_string(),
        }
    }

    fn lock_digests(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.digests.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Skip the fsync before rename. Only for throwaway directories (benchmarks of the
    /// pure pipeline); a real session keeps the default.
    #[cfg(any(test, feature = "test-support"))]
    pub fn without_fsync(mut self) -> Self {
        self.durable = false;
        self
    }

    /// For previews: every read is real, every write is only named. The pipeline runs
    /// exactly as it would, and nothing on disk changes.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// The workspace it keeps files in.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Where it keeps transcripts.
    pub fn transcripts_dir(&self) -> PathBuf {
        self.workspace.join(TRANSCRIPTS_DIR)
    }

    /// Where it keeps saved tool results.
    pub fn tool_results_dir(&self) -> PathBuf {
        self.workspace.join(TOOL_RESULTS_DIR)
    }

    /// Write the whole history as JSONL (one message a line) and return its path
    /// relative to the workspace. The name carries the stage and the time, so names
    /// sort by age; a counter keeps names from one process unique.
    pub fn write_transcript(&self, stage: &str, messages: &[Message]) -> Result<Kept, StoreError> {
        let path = format!("{TRANSCRIPTS_DIR}/{}", unique_transcript_name(stage));
        if self.dry_run {
            let digest = write_jsonl_hashed(io::sink(), None, messages)
                .map_err(|source| self.write_error(Path::new(&path), source))?;
            return Ok(self.remember(&path, &digest));
        }
        create_own_folder(&self.workspace, TRANSCRIPTS_DIR)
            .map_err(|source| self.write_error(&self.transcripts_dir(), source))?;
        let temp = self.temp_path(&self.transcripts_dir(), "transcript");
        let file = self
            .create_private(&temp)
            .map_err(|source| self.write_error(&temp, source))?;
        let digest = write_jsonl_hashed(&file, Some(std::os::fd::AsFd::as_fd(&file)), messages).map_err(|source| {
            let _ = fs::remove_file(&temp);
            self.write_error(&temp, source)
        })?;
        self.commit(&temp, &self.workspace.join(&path))?;
        // One file per stage: durable at once, before the stage replaces anything.
        self.sync()?;
        Ok(self.remember(&path, &digest))
    }

    /// Save one tool result's full text under a name derived from its tool_use id.
    /// An existing file with the same content is reused; a different one is never
    /// overwritten. Durable only after the next [`Store::sync`].
    pub fn save_tool_result(&self, tool_use_id: &str, text: &str) -> Result<Kept, StoreError> {
        let path = self.save_tool_result_at(tool_use_id, text)?;
        Ok(self.remember(&path, &crate::digest::of(text.as_bytes())))
    }

    fn save_tool_result_at(&self, tool_use_id: &str, text: &str) -> Result<String, StoreError> {
        let dir = self.tool_results_dir();
        if !self.dry_run {
            refuse_links(&self.workspace, TOOL_RESULTS_DIR).map_err(|source| self.write_error(&dir, source))?;
        }
        let safe = safe_file_stem(tool_use_id);
        let mut n = 1;
        let mut made_folder = false;
        loop {
            let name = if n == 1 {
                format!("{safe}.txt")
            } else {
                format!("{safe}-{n}.txt")
            };
            let path = dir.join(&name);
            if self.dry_run {
                // The name a real save would take: the first free one, or an equal file.
                match fs::read(&path) {
                    Ok(existing) if existing != text.as_bytes() => {
                        n += 1;
                        continue;
                    }
                    _ => return Ok(format!("{TOOL_RESULTS_DIR}/{name}")),
                }
            }
            // Written under its final name: no history names it before `sync`, and a
            // file cut short by a crash differs from any text, so it is never reused.
            match self.create_private(&path) {
                Ok(mut file) => {
                    if let Err(source) = file.write_all(text.as_bytes()) {
                        let _ = fs::remove_file(&path);
                        return Err(self.write_error(&path, source));
                    }

                    self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).push(path);
                    return Ok(format!("{TOOL_RESULTS_DIR}/{name}"));
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    if fs::read(&path).is_ok_and(|existing| existing == text.as_bytes()) {
                        self.unsynced.lock().unwrap_or_else(|e| e.into_inner()).push(path);
                        return Ok(format!("{TOOL_RESULTS_DIR}/{name}"));
                    }
                    n += 1;
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound && !made_folder => {
                    // The first save of a session: make the folder, then try again.
                    create_own_folder(&self.workspace, TOOL_RESULTS_DIR)
                        .map_err(|source| self.write_error(&dir, source))?;
                    made_folder = true;
                }
                Err(source) => return Err(self.write_error(&path, source)),
            }
        }
    }

    /// Flush every file written since the last call, then each folder holding one
    /// (once), so that the renames are durable too. Call before the history names them.
    pub fn sync(&self) -> Result<(), StoreError> {
        let pending = std::mem::take(&mut *self.unsynced.lock().unwrap_or_else(|e| e.into_inner()));
        if !self.durable || pending.is_empty() {
            return Ok(());
        }
        let mut folders: Vec<&Path> = Vec::new();
        for path in &pending {
            if let Some(parent) = path.parent()
                && !folders.contains(&parent)
            {
                folders.push(parent);
            }
        }
        if pending.len() >= SYNCFS_FROM_FILES && folders.len() == 1 && sync_filesystem(folders[0]).is_ok() {
            return Ok(());
        }
        for path in &pending {
            File::open(path)
                .and_then(|file| file.sync_data())
                .map_err(|source| self.write_error(path, source))?;
        }
        for folder in folders {
            File::open(folder)
                .and_then(|dir| dir.sync_all())
                .map_err(|source| self.write_error(folder, source))?;
        }
        Ok(())
    }

    /// A path read back from a marker in the history is trusted only when it names an
    /// existing regular file inside one of the store's folders, compared after both are
    /// resolved: no `..`, no link out, and a store folder that is itself a link (a
    /// legitimate setup) still holds trusted files.
    pub fn trusted_path(&self, path: &str) -> Option<String> {
        let candidate = Path::new(path);
        let absolute = if candidate.is_absolute() {
            candidate.to_path_buf()
        } else {
            self.workspace.join(candidate)
        };
        // The file itself must not be a link: only files we wrote are trusted.
        if fs::symlink_metadata(&absolute).ok()?.file_type().is_symlink() {
            return None;
        }
        let resolved = absolute.canonicalize().ok()?;
        if !fs::metadata(&resolved).ok()?.is_file() {
            return None;
        }
        [TRANSCRIPTS_DIR, TOOL_RESULTS_DIR].iter().find_map(|dir| {
            // A store folder that is a link holds nothing of ours.
            refuse_links(&self.workspace, dir).ok()?;
            let root = self.workspace.join(dir).canonicalize().ok()?;
            let relative = resolved.strip_prefix(&root).ok()?;
            let clean = relative.components().all(|c| matches!(c, Component::Normal(_)));
            clean.then(|| format!("{dir}/{}", relative.display()))
        })
    }

    /// The text of a file the store saved, when `path` is trusted and the file still
    /// has the hash its receipt recorded; a file no receipt of this session names, or
    /// one whose bytes changed, is not ours.
    pub fn read_saved(&self, path: &str) -> Result<SavedText, UnverifiedFile> {
        let trusted = self
            .trusted_path(path)
            .ok_or_else(|| UnverifiedFile::NotOurs(path.to_string()))?;
        let recorded = self
            .recorded_digest(&trusted)
            .ok_or_else(|| UnverifiedFile::NoRecord(trusted.clone()))?;
        let bytes = fs::read(self.workspace.join(&trusted)).map_err(|_| UnverifiedFile::NotOurs(trusted.clone()))?;
        if !crate::digest::matches(&recorded, &bytes) {
            return Err(UnverifiedFile::Changed(trusted));
        }
        let text = String::from_utf8(bytes).map_err(|_| UnverifiedFile::Changed(trusted.clone()))?;
        Ok(SavedText {
            path: trusted,
            text,
            digest: recorded,
        })
    }

    /// A file inside the store that no receipt of this session names yet (one an
    /// earlier session or the seed wrote), read and from now on recorded with its
    /// hash: for a block whose own preview vouches for the file. A file a receipt names
    /// must still have its recorded hash.
    pub fn adopt(&self, path: &str) -> Result<SavedText, UnverifiedFile> {
        match self.read_saved(path) {
            Err(UnverifiedFile::NoRecord(trusted)) => {
                let bytes =
                    fs::read(self.workspace.join(&trusted)).map_err(|_| UnverifiedFile::NotOurs(trusted.clone()))?;
                let text = String::from_utf8(bytes).map_err(|_| UnverifiedFile::NotOurs(trusted.clone()))?;
                let digest = crate::digest::of(text.as_bytes());
                self.remember(&trusted, &digest);
                Ok(SavedText {
                    path: trusted,
                    text,
                    digest,
                })
            }
            other => other,
        }
    }

    /// A fresh temporary name in `dir` (which exists).
    fn temp_path(&self, dir: &Path, stem: &str) -> PathBuf {
        let unique = format!(
            ".{stem}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        dir.join(unique)
    }

    fn create_private(&self, path: &Path) -> io::Result<File> {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        options.open(path)
    }

    fn commit(&self, temp: &Path, target: &Path) -> Result<(), StoreError> {
        fs::rename(temp, target).map_err(|source| {
            let _ = fs::remove_file(temp);
            self.write_error(target, source)
        })?;
        self.unsynced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(target.to_path_buf());
        Ok(())
    }

    fn write_error(&self, path: &Path, source: io::Error) -> StoreError {
        StoreError::Write {
            path: path.strip_prefix(&self.workspace).unwrap_or(path).to_path_buf(),
            source,
        }
    }
}

/// Why a saved file was not read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnverifiedFile {
    /// The path is not a file in our folders (missing, a link, a special file).
    #[error("{0} is missing or not one of scratchpad's files")]
    NotOurs(String),
    /// This session recorded no digest for it.
    #[error("no receipt of this session records {0}, so its content cannot be checked")]
    NoRecord(String),
    /// Its bytes differ from the digest recorded.
    #[error(
        "{0} does not have the content its receipt recorded (its digest differs): it was changed after it was written"
    )]
    Changed(String),
}

/// From this many files on, one flush of the whole filesystem is much cheaper than a
/// flush per file (measured here: 770 files of 10 KB, 11-24 ms against 175-206 ms). It
/// also flushes other programs' pending writes on that disk, which a small batch is
/// not worth waiting for.
const SYNCFS_FROM_FILES: usize = 32;

/// Flush every pending write of the filesystem holding `folder`, its folder entries
/// included (Linux `syncfs`).
fn sync_filesystem(folder: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let dir = File::open(folder)?;
        // SAFETY: a valid open descriptor for the duration of the call.
        if unsafe { libc::syncfs(dir.as_raw_fd()) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = folder;
        Err(io::ErrorKind::Unsupported.into())
    }
}

static TEMP_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `transcript_snip_compact_20261202-163748_0004711-0003.jsonl`: stage, UTC time,
/// process and a per-process counter, so names are unique and sort by time. Fixed
/// widths keep the length (and so the estimate of a marker naming it) stable.
/// A transcript's file name: the stage, the time, the process and a counter, so names
/// sort by age and never collide.
pub(crate) fn unique_transcript_name(stage: &str) -> String {
    let secs = crate::time::unix_now();
    let sequence = TEMP_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "transcript_{stage}_{}_{:07}-{sequence:04}.jsonl",
        crate::time::compact_stamp(secs),
        std::process::id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use transcript::TRANSCRIPT_CHUNK;

    #[test]
    fn transcript_is_jsonl_with_a_unique_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let history = vec![Message::user_text("a"), Message::assistant_text("b\nc")];
        let path = store.write_transcript("snip_compact", &history).unwrap().path;
        assert!(path.starts_with(".transcripts/transcript_snip_compact_"));
        let text = fs::read_to_string(store.workspace().join(&path)).unwrap();
        assert_eq!(
            text,
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\\nc\"}\n"
        );
        let second = store.write_transcript("snip_compact", &history).unwrap().path;
        assert_ne!(second, path);
        let names: Vec<_> = fs::read_dir(store.transcripts_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != ".gitignore")
            .collect();
        assert_eq!(names.len(), 2, "no temp files remain: {names:?}");
        let ignore = fs::read_to_string(store.transcripts_dir().join(".gitignore")).unwrap();
        assert_eq!(ignore, "*\n", "git never shows our archives as untracked");
    }

    /// A history of several chunks: the bytes are the JSON lines in order, the hash is
    /// theirs, and a sink that fails part way reports its own error, not the pipe's.
    #[test]
    fn a_transcript_of_many_chunks_is_whole_hashed_and_a_failed_write_says_why() {
        let history: Vec<Message> = (0..600)
            .map(|n| Message::user_text(format!("{n} ✓ {}", "x".repeat(5_000))))
            .collect();
        let mut bytes = Vec::new();
        let digest = write_jsonl_hashed(&mut bytes, None, &history).unwrap();
        assert!(bytes.len() > 2 * TRANSCRIPT_CHUNK, "{} bytes", bytes.len());
        let mut expected = Vec::new();
        for message in &history {
            crate::json::to_writer(&mut expected, message).unwrap();
            expected.push(b'\n');
        }
        assert!(bytes == expected, "the transcript is the JSON lines in order");
        assert_eq!(digest, crate::digest::of(&expected));
        // Into a file put on its way to disk chunk by chunk: the same bytes.
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("t.jsonl")).unwrap();
        let on_disk = write_jsonl_hashed(&file, Some(std::os::fd::AsFd::as_fd(&file)), &history).unwrap();
        assert_eq!(on_disk, digest);
        assert!(fs::read(dir.path().join("t.jsonl")).unwrap() == expected);

        #[derive(Debug)]
        struct FullDisk(usize);
        impl Write for FullDisk {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                if self.0 < bytes.len() {
                    return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
                }
                self.0 -= bytes.len();
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let error = write_jsonl_hashed(FullDisk(TRANSCRIPT_CHUNK), None, &history).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::StorageFull, "{error}");
    }

    /// Messages kept as their text go out where they lie and parsed ones serialised
    /// between them, over batches of many pieces, through a writer that takes a few
    /// bytes of a few buffers a call and is sometimes interrupted.
    #[test]
    fn kept_and_parsed_messages_go_out_whole_through_short_writes() {
        let texts: Vec<String> = (0..2_500)
            .map(|n| match n % 7 {
                0 => format!(r#"{{"role": "user", "content": "spaced {n}"}}"#),
                _ => format!(r#"{{"role":"user","content":"kept {n} ✓"}}"#),
            })
            .collect();
        let history = crate::message::parse_history(format!("[{}]", texts.join(","))).unwrap();
        assert!(history.iter().any(|message| message.raw().is_some()));
        assert!(history.iter().any(|message| message.raw().is_none()));
        let mut expected = Vec::new();
        for message in &history {
            crate::json::to_writer(&mut expected, message).unwrap();
            expected.push(b'\n');
        }

        #[derive(Default)]
        struct Trickle {
            bytes: Vec<u8>,
            calls: usize,
        }
        impl Write for Trickle {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.write_vectored(&[io::IoSlice::new(bytes)])
            }
            fn write_vectored(&mut self, buffers: &[io::IoSlice<'_>]) -> io::Result<usize> {
                self.calls += 1;
                if self.calls.is_multiple_of(5) {
                    return Err(io::Error::from(io::ErrorKind::Interrupted));
                }
                let mut room = 100;
                for buffer in buffers.iter().take(3) {
                    let taken = buffer.len().min(room);
                    self.bytes.extend_from_slice(&buffer[..taken]);
                    room -= taken;
                }
                Ok(100 - room)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut trickle = Trickle::default();
        let digest = write_jsonl_hashed(&mut trickle, None, &history).unwrap();
        assert!(trickle.bytes == expected, "the transcript is the JSON lines in order");
        assert_eq!(digest, crate::digest::of(&expected));
    }

    #[cfg(unix)]
    #[test]
    fn files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let path = store.save_tool_result("toolu_1", "x").unwrap().path;
        let mode = fs::metadata(store.workspace().join(&path))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn tool_results_reuse_identical_files_and_never_overwrite_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let first = store.save_tool_result("../evil/id", "one").unwrap().path;
        assert_eq!(first, ".task_outputs/tool-results/___evil_id.txt");
        assert_eq!(store.save_tool_result("../evil/id", "one").unwrap().path, first);
        let second = store.save_tool_result("../evil/id", "two").unwrap().path;
        assert_eq!(second, ".task_outputs/tool-results/___evil_id-2.txt");
        assert_eq!(fs::read_to_string(store.workspace().join(&first)).unwrap(), "one");
        assert_eq!(fs::read_to_string(store.workspace().join(&second)).unwrap(), "two");
    }

    #[test]
    fn write_failure_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the folder should be: creating the folder fails even as root.
        fs::write(dir.path().join(".task_outputs"), "in the way").unwrap();
        let store = Store::new(dir.path());
        let error = store.save_tool_result("t", "x").unwrap_err();
        assert!(error.to_string().contains(".task_outputs"), "{error}");
        fs::write(dir.path().join(".transcripts"), "in the way").unwrap();
        assert!(store.write_transcript("snip_compact", &[]).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_store_folder_swapped_for_a_link_is_refused_and_nothing_is_written_through_it() {
        let elsewhere = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(".task_outputs")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(".transcripts")).unwrap();
        let store = Store::new(dir.path());
        let error = store.save_tool_result("t1", "full text").unwrap_err().to_string();
        assert!(error.contains(".task_outputs is a link"), "{error}");
        let error = store.write_transcript("snip_compact", &[]).unwrap_err().to_string();
        assert!(error.contains(".transcripts is a link"), "{error}");
        assert_eq!(
            fs::read_dir(elsewhere.path()).unwrap().count(),
            0,
            "nothing written outside"
        );
        fs::create_dir_all(elsewhere.path().join("tool-results")).unwrap();
        fs::write(elsewhere.path().join("tool-results/t1.txt"), "planted").unwrap();
        assert_eq!(store.trusted_path(".task_outputs/tool-results/t1.txt"), None);
    }

    #[test]
    fn a_file_is_read_back_only_while_it_has_its_recorded_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let history = vec![Message::user_text("a"), Message::assistant_text("b")];
        let transcript = store.write_transcript("snip_compact", &history).unwrap();
        let on_disk = fs::read(dir.path().join(&transcript.path)).unwrap();
        assert_eq!(
            transcript.digest,
            crate::digest::of(&on_disk),
            "the hash is of the bytes written"
        );
        let preview = Store::new(dir.path()).dry_run();
        assert_eq!(
            preview.write_transcript("snip_compact", &history).unwrap().digest,
            transcript.digest,
            "a preview names the same content"
        );
        let saved = store.save_tool_result("t1", "the full output").unwrap();
        assert_eq!(store.read_saved(&saved.path).unwrap().text, "the full output");

        // Another session's store knows nothing of them until its receipts say so.
        let resumed = Store::new(dir.path());
        assert_eq!(
            resumed.read_saved(&saved.path),
            Err(UnverifiedFile::NoRecord(saved.path.clone()))
        );
        resumed.recognise([(&saved.path, &saved.digest)]);
        assert_eq!(resumed.read_saved(&saved.path).unwrap().text, "the full output");

        // The same length, other bytes: refused, by name.
        let forged = "THE full output";
        fs::write(dir.path().join(&saved.path), forged).unwrap();
        let refused = store.read_saved(&saved.path).unwrap_err();
        assert_eq!(refused, UnverifiedFile::Changed(saved.path.clone()));
        assert!(refused.to_string().contains(&saved.path), "{refused}");
        fs::write(dir.path().join(&transcript.path), b"").unwrap();
        assert_eq!(
            store.read_saved(&transcript.path),
            Err(UnverifiedFile::Changed(transcript.path.clone())),
            "a wiped transcript is not ours any more"
        );
    }

    /// A session journaled by an earlier version recorded each file's SHA-256 as bare
    /// hex: its archive is still read back, and still refused once changed.
    #[test]
    fn a_file_an_earlier_version_recorded_by_its_sha256_is_still_checked() {
        use sha2::Digest;
        let dir = tempfile::tempdir().unwrap();
        let saved = Store::new(dir.path())
            .save_tool_result("t1", "the full output")
            .unwrap();
        let sha256 = format!("{:x}", sha2::Sha256::digest(b"the full output"));
        let resumed = Store::new(dir.path());
        resumed.recognise([(&saved.path, &sha256)]);
        let read = resumed.read_saved(&saved.path).unwrap();
        assert_eq!(read.text, "the full output");
        assert_eq!(read.digest, sha256, "named as it was recorded");
        fs::write(dir.path().join(&saved.path), "THE full output").unwrap();
        assert_eq!(
            resumed.read_saved(&saved.path),
            Err(UnverifiedFile::Changed(saved.path.clone()))
        );
    }

    #[test]
    fn only_paths_inside_the_store_are_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let saved = store.save_tool_result("t1", "x").unwrap().path;
        assert_eq!(store.trusted_path(&saved).as_deref(), Some(saved.as_str()));
        let absolute = store.workspace().join(&saved);
        assert_eq!(
            store.trusted_path(absolute.to_str().unwrap()).as_deref(),
            Some(saved.as_str())
        );
        fs::write(dir.path().join("outside.txt"), "x").unwrap();
        assert_eq!(store.trusted_path("outside.txt"), None);
        assert_eq!(store.trusted_path(".task_outputs/tool-results/../../outside.txt"), None);
        assert_eq!(store.trusted_path("/etc/passwd"), None);
        assert_eq!(store.trusted_path(".task_outputs/tool-results/missing.txt"), None);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/hostname", store.tool_results_dir().join("link.txt")).unwrap();
            assert_eq!(store.trusted_path(".task_outputs/tool-results/link.txt"), None);
        }
    }
}
