//! The sessions of a workspace as the picker and `scratchpad sessions` show them. Each
//! journal is read at its head (where it branched from, its first request) and its
//! tail (the newest [`Tally`]), never whole: a thousand long sessions list at once.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::journal::{lock_holder, open_regular, read_range};
use super::{Origin, Past, Record, Tally};
use crate::compact::markers::{MessageKind, classify};

/// Characters of the newest request and answer a tally keeps: enough for a preview.
const TALLY_TEXT_CHARS: usize = 600;

impl Tally {
    /// The requests and compactions of a session's past (a resumed one's, a fork's).
    pub fn of_past(past: &[Past]) -> Tally {
        let mut tally = Tally::default();
        for item in past {
            match item {
                Past::Message { message } if matches!(classify(message), MessageKind::UserPrompt(_)) => {
                    tally.turns += 1;
                }
                Past::Stage { event } if event.can_be_undone() => tally.compactions += 1,
                _ => {}
            }
        }
        tally
    }

    /// `text` cut to what a tally keeps.
    pub fn cut(text: &str) -> String {
        let kept = crate::text::prefix_chars(text, TALLY_TEXT_CHARS);
        if kept.len() < text.len() {
            format!("{kept}…")
        } else {
            text.to_string()
        }
    }
}

/// One session as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    pub id: String,
    /// The journal (for `simulate` and `compact`).
    pub path: PathBuf,
    /// For a fork: where it branched from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<Origin>,
    pub created_unix: u64,
    /// When the journal was last written.
    pub last_used_unix: u64,
    pub first_request: Option<String>,
    /// Absent until the first turn ends (or in journals older than tallies).
    pub tally: Option<Tally>,
    /// Ids of the sessions forked from this one.
    pub branches: Vec<String>,
    /// The pid of another scratchpad that has it open now; never this process, which
    /// knows the session it has open by its id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_in: Option<String>,
}

impl SessionSummary {
    /// What a list says of the session beside its request, in one place for the picker
    /// and `scratchpad sessions`: when it was last used, its turns, its size in context
    /// now, its compactions (when any) and its branches.
    pub fn facts(&self) -> Vec<String> {
        use crate::compact::{counted, short_count};
        let mut parts = vec![crate::time::short_stamp(self.last_used_unix)];
        match &self.tally {
            Some(tally) => {
                parts.push(counted(tally.turns, "turn", "turns"));
                parts.push(format!("{} chars", short_count(tally.estimate)));
                if tally.compactions > 0 {
                    parts.push(counted(tally.compactions, "compaction", "compactions"));
                }
            }
            None => parts.push("no turn ended".into()),
        }
        if !self.branches.is_empty() {
            parts.push(format!("⑂ {}", counted(self.branches.len(), "branch", "branches")));
        }
        parts
    }

    /// Whether `filter` (lowercase words, all of which must match) is in its requests
    /// or its id.
    pub fn matches(&self, filter: &str) -> bool {
        let mut text = self.id.to_lowercase();
        for part in [
            self.first_request.as_deref(),
            self.tally.as_ref().map(|t| t.last_request.as_str()),
        ]
        .into_iter()
        .flatten()
        {
            text.push('\n');
            text.push_str(&part.to_lowercase());
        }
        filter
            .split_whitespace()
            .all(|word| text.contains(&word.to_lowercase()))
    }
}

/// Bytes read first at each end of a journal; grown fourfold while the record sought
/// is not in them, up to [`MOST_READ`].
const FIRST_READ: u64 = 8 << 10;
const MOST_READ: u64 = 2 << 20;

/// Every session in `dir`, newest first. A journal that cannot be read is left out,
/// and so is one with no request yet (nothing to go back to), unless it is a fork.
pub fn list(dir: &Path) -> Vec<SessionSummary> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    let mut sessions: Vec<SessionSummary> = paths
        .iter()
        .filter_map(|path| summarise(path))
        .filter(|s| s.first_request.is_some() || s.tally.is_some() || s.parent.is_some())
        .collect();
    let children: Vec<(String, String)> = sessions
        .iter()
        .filter_map(|s| s.parent.as_ref().map(|p| (p.session.clone(), s.id.clone())))
        .collect();
    for (parent, child) in children {
        if let Some(session) = sessions.iter_mut().find(|s| s.id == parent) {
            session.branches.push(child);
        }
    }
    sessions.sort_by(|a, b| b.last_used_unix.cmp(&a.last_used_unix).then_with(|| b.id.cmp(&a.id)));
    sessions
}

/// One journal's summary from its head and tail.
fn summarise(path: &Path) -> Option<SessionSummary> {
    let mut file = open_regular(path, OpenOptions::new().read(true)).ok()?;
    let meta = file.metadata().ok()?;
    let size = meta.len();
    let last_used_unix = meta.modified().map_or(0, crate::time::unix_of);
    let id = super::id_of(path);
    let mut summary = SessionSummary {
        id,
        path: path.to_path_buf(),
        parent: None,
        created_unix: 0,
        last_used_unix,
        first_request: None,
        tally: None,
        branches: Vec::new(),
        open_in: lock_holder(path).filter(|pid| *pid != std::process::id().to_string()),
    };
    read_head(&mut file, size, &mut summary);
    summary.tally = read_tally(&mut file, size);
    Some(summary)
}

/// The first record (where it branched from) and the first request.
fn read_head(file: &mut File, size: u64, summary: &mut SessionSummary) {
    let mut want = FIRST_READ;
    loop {
        let Some(bytes) = read_range(file, 0, want.min(size)).ok() else {
            return;
        };
        let complete = memchr::memrchr(b'\n', &bytes).map_or(0, |at| at + 1);
        for line in bytes[..complete].split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            match crate::json::from_slice::<Record>(line) {
                Ok(Record::Meta {
                    created_unix, parent, ..
                }) => {
                    summary.created_unix = created_unix;
                    summary.parent = parent;
                }
                Ok(Record::Append { message }) => {
                    if let MessageKind::UserPrompt(text) = classify(&message) {
                        summary.first_request = Some(Tally::cut(&text));
                        return;
                    }
                }
                _ => {}
            }
        }
        if want >= size || want >= MOST_READ {
            return;
        }
        want *= 4;
    }
}

/// The newest tally in the journal's tail.
fn read_tally(file: &mut File, size: u64) -> Option<Tally> {
    let mut want = FIRST_READ;
    loop {
        let start = size.saturating_sub(want);
        let bytes = read_range(file, start, size - start).ok()?;
        // The first line of a block that starts mid-journal may be cut: skipped.
        let lines = bytes.split(|&b| b == b'\n').skip(usize::from(start > 0));
        let tally = lines
            .filter(|line| memchr::memmem::find(line, b"\"type\":\"tally\"").is_some())
            .filter_map(|line| match crate::json::from_slice::<Record>(line) {
                Ok(Record::Tally(tally)) => Some(tally),
                _ => None,
            })
            .last();
        if tally.is_some() || start == 0 || want >= MOST_READ {
            return tally;
        }
        want *= 4;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::message::Message;
    use crate::record::ForkPoint;

    fn line(record: &Record) -> Vec<u8> {
        let mut text = crate::json::to_vec(record).unwrap();
        text.push(b'\n');
        text
    }

    fn meta(parent: Option<Origin>) -> Record {
        Record::Meta {
            version: 1,
            provider: "demo".into(),
            model: "m".into(),
            created_unix: 7,
            parent,
        }
    }

    /// Head and tail around a middle that is never read (a hole of zeros, which is no
    /// record at all), the newest tally taken, forks linked to their parents, and a
    /// session with no request left out.
    #[test]
    fn sessions_are_summarised_from_both_ends_of_their_journals() {
        let dir = tempfile::tempdir().unwrap();
        let tally = |turns| Tally {
            turns,
            compactions: 2,
            messages: 9,
            estimate: 12_345,
            last_request: "last".into(),
            last_answer: "answer".into(),
        };
        let mut head = line(&meta(None));
        head.extend(line(&Record::Append {
            message: Message::user_text("the first request"),
        }));
        let mut tail = line(&Record::Tally(tally(3)));
        tail.extend(line(&Record::Append {
            message: Message::assistant_text("x".repeat(100)),
        }));
        tail.extend(line(&Record::Tally(tally(4))));
        let parent = dir.path().join("20261201-000001-1.jsonl");
        let mut file = std::fs::File::create(&parent).unwrap();
        file.write_all(&head).unwrap();
        file.set_len(5 << 20).unwrap();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).unwrap();
        file.write_all(b"\n").unwrap();
        file.write_all(&tail).unwrap();
        drop(file);

        let origin = Origin {
            session: "20261201-000001-1".into(),
            at: ForkPoint::Message { position: 2 },
        };
        let mut fork = line(&meta(Some(origin.clone())));
        fork.extend(line(&Record::Append {
            message: Message::user_text("the first request"),
        }));
        std::fs::write(dir.path().join("20261201-000002-1.jsonl"), fork).unwrap();
        std::fs::write(dir.path().join("20261201-000003-1.jsonl"), line(&meta(None))).unwrap();

        let listed = list(dir.path());
        let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids.len(), 2, "{ids:?}: the session with no request is left out");
        let parent = listed.iter().find(|s| s.id == "20261201-000001-1").unwrap();
        assert_eq!(parent.first_request.as_deref(), Some("the first request"));
        assert_eq!(parent.tally, Some(tally(4)), "the newest tally");
        assert_eq!(parent.branches, vec!["20261201-000002-1".to_string()]);
        assert_eq!(parent.created_unix, 7);
        let child = listed.iter().find(|s| s.id == "20261201-000002-1").unwrap();
        assert_eq!(child.parent, Some(origin));
        assert_eq!(child.tally, None, "no turn ended yet");
        assert!(parent.matches("FIRST request") && parent.matches("last") && !parent.matches("absent"));
    }

    #[test]
    fn a_tally_cut_keeps_whole_characters() {
        let long = "é".repeat(TALLY_TEXT_CHARS + 5);
        let cut = Tally::cut(&long);
        assert_eq!(cut.chars().count(), TALLY_TEXT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(Tally::cut("short"), "short");
    }
}
