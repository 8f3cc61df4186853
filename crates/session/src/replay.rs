//! Reading a journal back: its complete lines replayed into a history that is valid to
//! send, with every record applied once and every mend named.

use std::fs::OpenOptions;
use std::path::Path;

use super::journal::open_regular;
use super::{Record, SessionError};
use crate::compact::pairing::repair;
use crate::message::Message;
use crate::record::Past;

#[derive(Debug, Default)]
pub struct Restored {
    pub messages: Vec<Message>,
    /// Tool results pinned in `/context`, by tool_use id.
    pub pins: std::collections::BTreeSet<String>,
    /// What was skipped or mended to make the history valid, one line each; the
    /// caller journals a [`Record::Repair`] and shows these when not empty.
    pub repairs: Vec<String>,
    /// Everything that happened, in order, for showing the session as it was.
    pub past: Vec<crate::record::Past>,
    /// The sequence number the next record appended gets: one above the highest read.
    pub next_seq: u64,
}

/// The largest journal we read; a bigger one is refused rather than filling memory.
pub const MAX_JOURNAL_BYTES: u64 = 4 << 30;

/// A JSON-lines file as read: its complete lines, and a last line without its newline
/// (written by a process that died mid-write) kept apart.
pub struct JournalText {
    bytes: Vec<u8>,
}

impl JournalText {
    /// Bytes up to and including the last newline. Found when asked: a history given
    /// as one JSON array has no lines, and looking for its last newline read all of it
    /// backwards (9 MB: about half a millisecond).
    fn complete_len(&self) -> usize {
        memchr::memrchr(b'\n', &self.bytes).map_or(0, |at| at + 1)
    }

    /// Complete lines with their 1-based line numbers; blank lines are skipped.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.bytes[..self.complete_len()]
            .split(|&b| b == b'\n')
            .enumerate()
            .map(|(at, line)| (at + 1, line))
            .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
    }

    /// Whether the text (after leading whitespace) starts with `byte`.
    pub fn starts_with(&self, byte: u8) -> bool {
        self.bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&byte)
    }

    /// The whole file (for formats that are not line based).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The torn last line, if the file does not end with a newline.
    pub fn torn(&self) -> Option<&[u8]> {
        let complete_len = self.complete_len();
        (complete_len < self.bytes.len()).then(|| &self.bytes[complete_len..])
    }

    /// The 1-based number of the line after the last newline (the torn one, if any).
    pub fn torn_line_number(&self) -> usize {
        self.bytes[..self.complete_len()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }
}

/// Read a journal or transcript: only a regular file, at most [`MAX_JOURNAL_BYTES`].
/// `--continue`, `simulate` and `compact` all read through here.
pub fn read_journal(path: &Path) -> Result<JournalText, SessionError> {
    let mut file = open_regular(path, OpenOptions::new().read(true))?;
    let bytes = super::whole_file::read_whole(&mut file, MAX_JOURNAL_BYTES).map_err(|source| SessionError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if bytes.len() as u64 > MAX_JOURNAL_BYTES {
        return Err(SessionError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_JOURNAL_BYTES,
        });
    }
    let text = JournalText { bytes };
    if let Some((_, first)) = text.lines().next()
        && let Ok(Record::Meta { version, .. }) = crate::json::from_slice::<Record>(first)
        && version > super::FORMAT_VERSION
    {
        return Err(SessionError::NewerFormat {
            path: path.to_path_buf(),
            version,
        });
    }
    Ok(text)
}

/// Replay a journal into a history that is valid to send. A torn last line is left
/// out; a complete line that is not a record is skipped and named in `repairs`; then
/// [`repair`] mends what is left (calls without results, orphan results, an assistant
/// message first), each mend named in `repairs`.
pub fn restore(path: &Path) -> Result<Restored, SessionError> {
    let text = read_journal(path)?;
    let mut replay = Replay::new(&text);
    for (number, line) in text.lines() {
        replay.feed(number, line);
    }
    Ok(replay.finish())
}

/// What one line did to the history being replayed.
pub enum Fed {
    /// Not applied (not a record, or a repeat); the reason is among the repairs.
    Skipped,
    /// A message joined the history: the `position`-th message shown (1-based).
    Appended { position: usize },
    /// A compaction stage's record.
    Stage { event: Box<crate::compact::StageEvent> },
    /// The session's first record: what it was made for, and for a fork where it
    /// branched from.
    Meta {
        provider: String,
        model: String,
        parent: Option<super::Origin>,
    },
    /// Any other record.
    Other,
}

/// A journal's records applied one at a time, in order, with every record applied once
/// and every skip named: what [`restore`] does to a whole journal, and a fork does to
/// the lines up to its point.
pub struct Replay {
    restored: Restored,
    stages_since_call: Vec<crate::compact::Stage>,
    /// Ids of the stages in force (journaled, not undone), oldest first.
    live_stages: Vec<String>,
    seen_stages: std::collections::HashSet<String>,
    /// The highest sequence number applied: a line numbered at or below it is a copy.
    highest_seq: Option<u64>,
    appended: usize,
}

impl Replay {
    pub fn new(text: &JournalText) -> Self {
        let mut restored = Restored::default();
        if let Some(torn) = text.torn() {
            restored.repairs.push(format!(
                "the last line of the journal ({} bytes) was cut by a crash and is left out",
                torn.len()
            ));
        }
        Replay {
            restored,
            stages_since_call: Vec::new(),
            live_stages: Vec::new(),
            seen_stages: std::collections::HashSet::new(),
            highest_seq: None,
            appended: 0,
        }
    }

    /// The history as replayed so far, before any mend.
    pub fn messages(&self) -> &[Message] {
        &self.restored.messages
    }

    /// Take the newest message back out (a fork stops just before it).
    pub fn unappend(&mut self) {
        self.restored.messages.pop();
        if matches!(self.restored.past.last(), Some(Past::Message { .. })) {
            self.restored.past.pop();
        }
        self.appended -= 1;
    }

    /// Apply line `number` of the journal.
    pub fn feed(&mut self, number: usize, line: &[u8]) -> Fed {
        let restored = &mut self.restored;
        let Ok(record) = crate::json::from_slice::<Record>(line) else {
            restored
                .repairs
                .push(format!("line {number} of the journal is not a record and was skipped"));
            return Fed::Skipped;
        };
        if let Some(seq) = super::numbering::number_of(line) {
            if self.highest_seq.is_some_and(|highest| seq <= highest) {
                restored.repairs.push(format!(
                    "line {number} of the journal is a copy of record {seq}, read before it, and was skipped"
                ));
                return Fed::Skipped;
            }
            self.highest_seq = Some(seq);
            restored.next_seq = seq + 1;
        }
        match record {
            Record::Meta {
                provider,
                model,
                parent,
                ..
            } => {
                if let Some(origin) = &parent {
                    restored.past.push(Past::Forked { origin: origin.clone() });
                }
                return Fed::Meta {
                    provider,
                    model,
                    parent,
                };
            }
            Record::Served { .. } | Record::Tally(_) => {}
            Record::Append { message } => {
                restored.past.push(Past::Message {
                    message: message.clone(),
                });
                restored.messages.push(message);
                self.appended += 1;
                return Fed::Appended {
                    position: self.appended,
                };
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
                    if self.live_stages.last() != Some(&undid) {
                        restored.repairs.push(format!(
                            "line {number} of the journal undoes stage {undid}, which is not the newest stage, and was skipped"
                        ));
                        return Fed::Skipped;
                    }
                    self.live_stages.pop();
                }
                restored.messages = messages;
                restored.past.push(Past::Undo { stage, undid });
            }
            Record::Stage { event } => {
                if !event.id.is_empty() {
                    if !self.seen_stages.insert(event.id.clone()) {
                        restored.repairs.push(format!(
                            "line {number} of the journal repeats stage {} and was skipped",
                            event.id
                        ));
                        return Fed::Skipped;
                    }
                    if event.can_be_undone() {
                        self.live_stages.push(event.id.clone());
                    }
                }
                self.stages_since_call.push(event.stage);
                restored.past.push(Past::Stage { event: event.clone() });
                return Fed::Stage { event };
            }
            Record::Shown { item } => {
                if !item.is_chat_only() {
                    restored.repairs.push(format!(
                        "line {number} of the journal shows something that has a record of its own and was skipped"
                    ));
                    return Fed::Skipped;
                }
                restored.past.push(item);
            }
            Record::Call(mut point) => {
                // Journals before the points carried their stages left them out.
                if point.stages.is_empty() {
                    point.stages = std::mem::take(&mut self.stages_since_call);
                }
                self.stages_since_call.clear();
                restored.past.push(Past::Call { point });
            }
        }
        Fed::Other
    }

    /// The history replayed, mended to be valid to send (each mend named).
    pub fn finish(mut self) -> Restored {
        let mended = repair(&mut self.restored.messages);
        self.restored.repairs.extend(mended);
        self.restored
    }

    /// The history replayed, as it stands, before any mend.
    pub fn into_messages(self) -> Vec<Message> {
        self.restored.messages
    }
}
