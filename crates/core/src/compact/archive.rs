//! The pipeline's only I/O: where it keeps what it takes out of the context. The disk
//! implementation is [`crate::store::Store`] (the workspace's `.transcripts/` and
//! `.task_outputs/`); [`MemoryArchive`] keeps the same names in memory, for tests and
//! `simulate`, so the core runs the same with nothing written.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::message::Message;
use crate::store::{
    Kept, SavedText, Store, StoreError, TOOL_RESULTS_DIR, TRANSCRIPTS_DIR, UnverifiedFile, safe_file_stem,
    unique_transcript_name,
};

/// Where the stages keep what they take out of the history, and read it back only while
/// it is what they kept: the disk store for a session, [`MemoryArchive`] for a preview.
pub trait Archive: Send + Sync {
    /// Keep the whole history; where it can be found (relative to the workspace) and
    /// the hash of what was written.
    fn write_transcript(&self, stage: &str, messages: &[Message]) -> Result<Kept, StoreError>;
    /// Keep one tool result's full text (an equal saved text is reused).
    fn save_tool_result(&self, tool_use_id: &str, text: &str) -> Result<Kept, StoreError>;
    /// Make everything kept since the last call durable, before the history names it.
    fn sync(&self) -> Result<(), StoreError>;
    /// A kept file's text, only while it has the hash recorded when it was kept.
    fn read_saved(&self, path: &str) -> Result<SavedText, UnverifiedFile>;
    /// A file of the store that no receipt names yet, read and recorded from now on;
    /// only for a block whose preview vouches for it.
    fn adopt(&self, path: &str) -> Result<SavedText, UnverifiedFile>;
}

impl Archive for Store {
    fn write_transcript(&self, stage: &str, messages: &[Message]) -> Result<Kept, StoreError> {
        Store::write_transcript(self, stage, messages)
    }

    fn save_tool_result(&self, tool_use_id: &str, text: &str) -> Result<Kept, StoreError> {
        Store::save_tool_result(self, tool_use_id, text)
    }

    fn sync(&self) -> Result<(), StoreError> {
        Store::sync(self)
    }

    fn read_saved(&self, path: &str) -> Result<SavedText, UnverifiedFile> {
        Store::read_saved(self, path)
    }

    fn adopt(&self, path: &str) -> Result<SavedText, UnverifiedFile> {
        Store::adopt(self, path)
    }
}

/// An archive in memory: the disk store's names and reuse rules, no files.
#[derive(Debug, Default)]
pub struct MemoryArchive {
    files: Mutex<BTreeMap<String, String>>,
}

impl MemoryArchive {
    /// An empty archive.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every file it holds, by path.
    pub fn files(&self) -> BTreeMap<String, String> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Archive for MemoryArchive {
    fn write_transcript(&self, stage: &str, messages: &[Message]) -> Result<Kept, StoreError> {
        let mut text = String::new();
        for message in messages {
            text.push_str(&crate::json::to_string(message)?);
            text.push('\n');
        }
        // Named as on disk, so sizes (the history names the path) match a real run.
        let path = format!("{TRANSCRIPTS_DIR}/{}", unique_transcript_name(stage));
        let digest = crate::digest::of(text.as_bytes());
        self.lock().insert(path.clone(), text);
        Ok(Kept { path, digest })
    }

    fn save_tool_result(&self, tool_use_id: &str, text: &str) -> Result<Kept, StoreError> {
        let kept = |path: String| Kept {
            path,
            digest: crate::digest::of(text.as_bytes()),
        };
        let stem = safe_file_stem(tool_use_id);
        let mut files = self.lock();
        for n in 1.. {
            let path = if n == 1 {
                format!("{TOOL_RESULTS_DIR}/{stem}.txt")
            } else {
                format!("{TOOL_RESULTS_DIR}/{stem}-{n}.txt")
            };
            match files.get(&path) {
                Some(existing) if existing != text => continue,
                Some(_) => return Ok(kept(path)),
                None => {
                    files.insert(path.clone(), text.to_string());
                    return Ok(kept(path));
                }
            }
        }
        unreachable!("the loop returns once a name is free or equal")
    }

    fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Nothing but this archive can change its files: what it holds is what it kept.
    fn read_saved(&self, path: &str) -> Result<SavedText, UnverifiedFile> {
        let files = self.lock();
        let text = files
            .get(path)
            .ok_or_else(|| UnverifiedFile::NotOurs(path.to_string()))?;
        Ok(SavedText {
            path: path.to_string(),
            text: text.clone(),
            digest: crate::digest::of(text.as_bytes()),
        })
    }

    /// Everything it holds, it kept.
    fn adopt(&self, path: &str) -> Result<SavedText, UnverifiedFile> {
        self.read_saved(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_keeps_the_disk_stores_names_and_reuse_rules() {
        let archive = MemoryArchive::new();
        let first = archive.save_tool_result("toolu_1", "out").unwrap();
        assert_eq!(first.path, ".task_outputs/tool-results/toolu_1.txt");
        assert_eq!(first.digest, crate::digest::of(b"out"));
        assert_eq!(
            archive.save_tool_result("toolu_1", "out").unwrap(),
            first,
            "equal text reused"
        );
        let other = archive.save_tool_result("toolu_1", "different").unwrap();
        assert_eq!(
            other.path, ".task_outputs/tool-results/toolu_1-2.txt",
            "never overwritten"
        );
        let transcript = archive
            .write_transcript("snip_compact", &[Message::user_text("hi")])
            .unwrap();
        assert!(transcript.path.starts_with(".transcripts/transcript_snip_compact_"));
        let saved = archive.read_saved(&transcript.path).unwrap();
        assert_eq!(saved.digest, transcript.digest);
        assert_eq!(
            serde_json::from_str::<Message>(saved.text.trim()).unwrap(),
            Message::user_text("hi")
        );
        assert!(archive.read_saved("elsewhere.txt").is_err());
        assert_eq!(archive.len(), 3);
    }
}
