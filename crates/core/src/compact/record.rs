//! The record a summary is written from: the history since the last summary as it
//! was before the recoverable stages thinned it. Messages snip_compact archived come
//! back from their transcript and results that were saved to disk (cleared,
//! persisted, fitted) come back whole, each file read only while it has the hash the
//! store recorded for it. A file that fails that check is left out with a line saying
//! so: what pointed at it stays as it was, and nothing of it is trusted.
//!
//! A record is written one message per line, so a [`Pointer`] (`PATH:LINE`) names one
//! message of it, which [`recall`] reads back under the same check.

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use super::Archive;
use super::background::shape_of;
use super::markers::{MessageKind, ResultKind, classify, classify_result};
use super::pairing::blocks_mut;
use crate::message::{ContentBlock, Message, ToolResultContent};
use crate::store::UnverifiedFile;

/// Snip markers inside archived messages are followed at most this deep: each snip
/// adds one level, and a cycle (a transcript naming itself) must end.
const MAX_DEPTH: usize = 16;

/// The whole record of a span of the history.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// The span's messages, whole: transcripts' messages and saved results put back.
    pub messages: Vec<Message>,
    /// Archive files left out, each as one line saying which and why.
    pub left_out: Vec<String>,
    /// Messages brought back from transcripts, and results brought back whole.
    pub restored_messages: usize,
    /// How many results were brought back whole from saved outputs.
    pub restored_results: usize,
}

impl Record {
    /// Whether it differs from the history it was rebuilt from.
    pub fn restored_anything(&self) -> bool {
        self.restored_messages > 0 || self.restored_results > 0
    }
}

/// The record of `span` (the start of the history, up to where a summary ends).
pub fn rebuild(span: &[Message], store: &dyn Archive) -> Record {
    let mut rebuilding = Rebuilding {
        store,
        transcripts: HashMap::new(),
        record: Record::default(),
    };
    rebuilding.expand(span, 0..span.len(), 0);
    rebuilding.record
}

struct Rebuilding<'s> {
    store: &'s dyn Archive,
    /// Transcripts read so far, parsed, or why they cannot be used.
    transcripts: HashMap<String, Result<Rc<Vec<Message>>, String>>,
    record: Record,
}

impl Rebuilding<'_> {
    /// `list[range]` into the record, each snip marker replaced by the messages it
    /// stands for (read from its transcript, where the marker's own place in `list` is
    /// where they start).
    fn expand(&mut self, list: &[Message], range: std::ops::Range<usize>, depth: usize) {
        for at in range {
            let message = &list[at];
            if let MessageKind::ArchiveMarker { count, path } = classify(message)
                && depth < MAX_DEPTH
            {
                match self.archived_run(list, at, count, &path) {
                    Ok(transcript) => {
                        let before = self.record.messages.len();
                        self.expand(&transcript, at..at + count, depth + 1);
                        self.record.restored_messages += self.record.messages.len() - before;
                        continue;
                    }
                    Err(why) => self.leave_out(&path, &why),
                }
            }
            let mut message = message.clone();
            self.restore_results(&mut message);
            self.record.messages.push(message);
        }
    }

    /// The transcript a marker at `list[at]` names, when it holds `count` messages
    /// from `at` and the message after them is the one after the marker.
    fn archived_run(
        &mut self,
        list: &[Message],
        at: usize,
        count: usize,
        path: &str,
    ) -> Result<Rc<Vec<Message>>, String> {
        let transcript = self.transcript(path)?;
        if transcript.len() < at + count {
            return Err(format!(
                "it holds {} messages, fewer than the {count} archived from message {}",
                transcript.len(),
                at + 1
            ));
        }
        if let (Some(after), Some(next)) = (transcript.get(at + count), list.get(at + 1))
            && shape_of(after) != shape_of(next)
        {
            return Err("its messages do not line up with the history around the marker".to_string());
        }
        Ok(transcript)
    }

    fn transcript(&mut self, path: &str) -> Result<Rc<Vec<Message>>, String> {
        let store = self.store;
        self.transcripts
            .entry(path.to_string())
            .or_insert_with(|| {
                let saved = store.read_saved(path).map_err(|why| why.to_string())?;
                parse_lines(&saved.text).map(Rc::new)
            })
            .clone()
    }

    /// Every result of `message` that a stage saved to disk, whole again.
    fn restore_results(&mut self, message: &mut Message) {
        if !message.has_tool_result() {
            return;
        }
        let mut restored = Vec::new();
        for (index, block) in message.block_slice().iter().enumerate() {
            let ContentBlock::ToolResult { content, .. } = block else {
                continue;
            };
            let (path, preview) = match classify_result(content) {
                ResultKind::Whole => continue,
                ResultKind::Cleared { path } => (path.to_string(), None),
                ResultKind::Persisted(block) => (block.path.to_string(), Some(block.preview.to_string())),
            };
            match self.store.read_saved(&path) {
                Ok(saved)
                    if preview
                        .as_ref()
                        .is_none_or(|preview| saved.text.starts_with(preview.as_str())) =>
                {
                    restored.push((index, saved.text));
                }
                Ok(_) => self.leave_out(&path, "it does not begin with the preview the result shows"),
                Err(why) => self.leave_out(&path, &why.to_string()),
            }
        }
        if restored.is_empty() {
            return;
        }
        self.record.restored_results += restored.len();
        let blocks = blocks_mut(message);
        for (index, text) in restored {
            if let Some(ContentBlock::ToolResult { content, .. }) = blocks.get_mut(index) {
                *content = ToolResultContent::Text(text);
            }
        }
    }

    fn leave_out(&mut self, path: &str, why: &str) {
        let line = format!("{path} was left out of the summary input: {why}");
        if !self.record.left_out.contains(&line) {
            self.record.left_out.push(line);
        }
    }
}

/// A transcript's messages, one JSON message a line.
fn parse_lines(text: &str) -> Result<Vec<Message>, String> {
    text.lines()
        .enumerate()
        .map(|(at, line)| {
            crate::json::from_str(line).map_err(|error| format!("line {} is not a message: {error}", at + 1))
        })
        .collect()
}

/// One message of a record: the file and its 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pointer {
    /// The record file, relative to the workspace.
    pub path: String,
    /// The message's line in it (1 is the first).
    pub line: usize,
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path, self.line)
    }
}

impl std::str::FromStr for Pointer {
    type Err = RecallError;

    /// `PATH:LINE`.
    fn from_str(text: &str) -> Result<Self, RecallError> {
        let malformed = || RecallError::Malformed(text.to_string());
        let (path, line) = text.trim().rsplit_once(':').ok_or_else(malformed)?;
        let line = line.parse().ok().filter(|line| *line > 0).ok_or_else(malformed)?;
        if path.is_empty() {
            return Err(malformed());
        }
        Ok(Pointer {
            path: path.to_string(),
            line,
        })
    }
}

/// Why `recall` could not give what a pointer names.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecallError {
    /// The pointer is not `PATH:LINE`.
    #[error("`{0}` is not a pointer: write it as PATH:LINE, as the index gives it (line 1 is the first)")]
    Malformed(String),
    /// The file is not one of ours, or changed since it was kept.
    #[error("{0}")]
    Unverified(UnverifiedFile),
    /// The file does not hold messages.
    #[error("{path} is not a record of messages: {why}")]
    NotARecord {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The line is past the file's end.
    #[error("{path} has {lines} lines; there is no line {line}")]
    PastTheEnd {
        /// The file.
        path: String,
        /// How many lines it has.
        lines: usize,
        /// The line asked for.
        line: usize,
    },
}

/// The messages of a record from `pointer` on, at most `count` of them, each with its
/// line: only from a file of the store that still has the hash recorded for it.
pub fn recall(store: &dyn Archive, pointer: &Pointer, count: usize) -> Result<Vec<(usize, Message)>, RecallError> {
    let saved = store.read_saved(&pointer.path).map_err(RecallError::Unverified)?;
    let lines: Vec<&str> = saved.text.lines().collect();
    if pointer.line > lines.len() {
        return Err(RecallError::PastTheEnd {
            path: saved.path,
            lines: lines.len(),
            line: pointer.line,
        });
    }
    lines
        .iter()
        .enumerate()
        .skip(pointer.line - 1)
        .take(count.max(1))
        .map(|(at, line)| {
            crate::json::from_str(line)
                .map(|message| (at + 1, message))
                .map_err(|error| RecallError::NotARecord {
                    path: saved.path.clone(),
                    why: format!("line {}: {error}", at + 1),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::{archive_marker, cleared_reference, persisted_output};
    use crate::compact::{CompactConfig, MemoryArchive, Stage, prepare};
    use crate::history::{Call, History};
    use crate::store::Store;

    fn rounds(n: usize, chars: usize) -> Vec<Message> {
        let mut history = History::new().request("read everything");
        for i in 0..n {
            history = history.round(Call::new(
                "read_file",
                serde_json::json!({"path": format!("f{i}.rs")}),
                format!("line {i}\n").repeat(chars / 7),
            ));
        }
        history.build()
    }

    /// Snip and micro_compact both ran; the record is the history as it was before.
    #[test]
    fn the_record_is_the_history_before_the_recoverable_stages() {
        let archive = MemoryArchive::new();
        let config = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(25_000),
            snip_max_messages: 12,
            ..CompactConfig::default()
        };
        let original = rounds(9, 6_000);
        let prepared = prepare(
            original.clone(),
            "read everything",
            &crate::compact::Context::new(&config, &archive),
            &mut crate::compact::ExtractiveSummariser,
        );
        let fired: Vec<Stage> = prepared.events.iter().map(|event| event.stage).collect();
        assert!(
            fired.contains(&Stage::SnipCompact) && fired.contains(&Stage::MicroCompact),
            "{fired:?}"
        );
        assert_ne!(prepared.messages, original);
        let record = rebuild(&prepared.messages, &archive);
        assert_eq!(record.left_out, Vec::<String>::new());
        assert_eq!(record.messages, original);
        assert!(record.restored_messages > 0 && record.restored_results > 0);
    }

    /// A transcript changed on disk after it was written is not trusted: the marker
    /// stays, and a line says why.
    #[test]
    fn a_changed_or_foreign_file_is_left_out_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let archived = rounds(2, 200);
        let kept = store.write_transcript("snip_compact", &archived).unwrap();
        let file = dir.path().join(&kept.path);
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("line 0", "forged")).unwrap();
        let history = vec![
            archived[0].clone(),
            Message::user_text(archive_marker(4, &kept.path)),
            Message::assistant_text("done"),
        ];
        let record = rebuild(&history, &store);
        assert_eq!(record.messages, history);
        assert_eq!(record.left_out.len(), 1);
        assert!(record.left_out[0].contains("digest differs"), "{:?}", record.left_out);

        let foreign = vec![Message::blocks(
            crate::message::Role::User,
            vec![
                ContentBlock::tool_result("a", cleared_reference("notes/elsewhere.txt"), false),
                ContentBlock::tool_result(
                    "b",
                    persisted_output(".task_outputs/tool-results/x.txt", 10, "p"),
                    false,
                ),
            ],
        )];
        let record = rebuild(&foreign, &store);
        assert_eq!(record.messages, foreign);
        assert_eq!(record.left_out.len(), 2, "{:?}", record.left_out);
    }

    #[test]
    fn recall_reads_a_line_of_a_recorded_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let messages = rounds(2, 100);
        let kept = store.write_transcript("record", &messages).unwrap();
        let pointer: Pointer = format!("{}:2", kept.path).parse().unwrap();
        let got = recall(&store, &pointer, 2).unwrap();
        assert_eq!(got, vec![(2, messages[1].clone()), (3, messages[2].clone())]);
        let past: Pointer = format!("{}:99", kept.path).parse().unwrap();
        assert!(matches!(
            recall(&store, &past, 1),
            Err(RecallError::PastTheEnd { lines: 5, .. })
        ));
        let outside: Pointer = "../etc/passwd:1".parse().unwrap();
        assert!(matches!(recall(&store, &outside, 1), Err(RecallError::Unverified(_))));
        std::fs::write(dir.path().join("Cargo.toml"), "x").unwrap();
        let unrecorded: Pointer = "Cargo.toml:1".parse().unwrap();
        assert!(recall(&store, &unrecorded, 1).is_err());
        assert!("no-line".parse::<Pointer>().is_err());
        assert!("a.jsonl:0".parse::<Pointer>().is_err());
    }
}
