//! The pipeline's only I/O: where it keeps what it takes out of the context. The disk
//! implementation is [`crate::store::Store`] (the workspace's `.transcripts/` and
//! `.task_outputs/`); [`MemoryArchive`] keeps the same names in memory, for tests and
//! `simulate`, so the core runs the same with nothing written.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::message::Message;
use crate::store::{Store, StoreError, TOOL_RESULTS_DIR, TRANSCRIPTS_DIR, safe_file_stem, unique_transcript_name};

pub trait Archive: Send + Sync {
    /// Keep the whole history; the path it can be found at, relative to the workspace.
    fn write_transcript(&self, stage: &str, messages: &[Message]) -> Result<String, StoreError>;
    /// Keep one tool result's full text (an equal saved text is reused).
    fn save_tool_result(&self, tool_use_id: &str, text: &str) -> Result<String, StoreError>;
    /// Make everything kept since the last call durable, before the history names it.
    fn sync(&self) -> Result<(), StoreError>;
    /// `path` as kept by this archive, if it is one of its files.
    fn trusted_path(&self, path: &str) -> Option<String>;
    /// A kept file's path and text.
    fn read_saved(&self, path: &str) -> Option<(String, String)>;
}

impl Archive for Store {
    fn write_transcript(&self, stage: &str, messages: &[Message]) -> Result<String, StoreError> {
        Store::write_transcript(self, stage, messages)
    }

    fn save_tool_result(&self, tool_use_id: &str, text: &str) -> Result<String, StoreError> {
        Store::save_tool_result(self, tool_use_id, text)
    }

    fn sync(&self) -> Result<(), StoreError> {
        Store::sync(self)
    }

    fn trusted_path(&self, path: &str) -> Option<String> {
        Store::trusted_path(self, path)
    }

    fn read_saved(&self, path: &str) -> Option<(String, String)> {
        Store::read_saved(self, path)
    }
}

/// An archive in memory: the disk store's names and reuse rules, no files.
#[derive(Debug, Default)]
pub struct MemoryArchive {
    files: Mutex<BTreeMap<String, String>>,
}

impl MemoryArchive {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Archive for MemoryArchive {
    fn write_transcript(&self, stage: &str, messages: &[Message]) -> Result<String, StoreError> {
        let mut text = String::new();
        for message in messages {
            text.push_str(&serde_json::to_string(message)?);
            text.push('\n');
        }
        // Named as on disk, so sizes (the history names the path) match a real run.
        let path = format!("{TRANSCRIPTS_DIR}/{}", unique_transcript_name(stage));
        self.lock().insert(path.clone(), text);
        Ok(path)
    }

    fn save_tool_result(&self, tool_use_id: &str, text: &str) -> Result<String, StoreError> {
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
                Some(_) => return Ok(path),
                None => {
                    files.insert(path.clone(), text.to_string());
                    return Ok(path);
                }
            }
        }
        unreachable!("the loop returns once a name is free or equal")
    }

    fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn trusted_path(&self, path: &str) -> Option<String> {
        self.lock().contains_key(path).then(|| path.to_string())
    }

    fn read_saved(&self, path: &str) -> Option<(String, String)> {
        self.lock().get(path).map(|text| (path.to_string(), text.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_keeps_the_disk_stores_names_and_reuse_rules() {
        let archive = MemoryArchive::new();
        let first = archive.save_tool_result("toolu_1", "out").unwrap();
        assert_eq!(first, ".task_outputs/tool-results/toolu_1.txt");
        assert_eq!(
            archive.save_tool_result("toolu_1", "out").unwrap(),
            first,
            "equal text reused"
        );
        let other = archive.save_tool_result("toolu_1", "different").unwrap();
        assert_eq!(other, ".task_outputs/tool-results/toolu_1-2.txt", "never overwritten");
        let transcript = archive
            .write_transcript("snip_compact", &[Message::user_text("hi")])
            .unwrap();
        assert!(transcript.starts_with(".transcripts/transcript_snip_compact_"));
        let (_, text) = archive.read_saved(&transcript).unwrap();
        assert_eq!(
            serde_json::from_str::<Message>(text.trim()).unwrap(),
            Message::user_text("hi")
        );
        assert_eq!(archive.trusted_path("elsewhere.txt"), None);
        assert_eq!(archive.len(), 3);
    }
}
