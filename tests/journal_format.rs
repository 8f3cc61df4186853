//! Journals written by earlier versions still load: one fixture per journal format so
//! far (`tests/fixtures/journals/format-N.jsonl`, each the head and tail of a real
//! session of the offline demo, written by a build of that format, its long strings
//! cut). The history replayed is checked against a plain reading of the lines (the
//! last `replace`, then the messages appended after it), so a change to the types in
//! `session::record` that no longer reads a line is caught here, not by a user whose
//! session will not resume.

use scratchpad::session::{self, FORMAT_VERSION, Journal, Past, SessionError};
use serde_json::Value;

fn fixture(version: u32) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/journals/format-{version}.jsonl"))
}

/// The history a journal holds, read plainly: the newest `replace`, then every
/// message appended after it (the fixtures have no undo, repair or copied line).
fn plain_history(lines: &[Value]) -> Vec<Value> {
    let mut history = Vec::new();
    for line in lines {
        match line["type"].as_str() {
            Some("replace") => history = line["messages"].as_array().unwrap().clone(),
            Some("append") => history.push(line["message"].clone()),
            _ => {}
        }
    }
    history
}

fn lines_of(version: u32) -> Vec<Value> {
    std::fs::read_to_string(fixture(version))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn every_earlier_format_replays_to_the_history_its_lines_hold() {
    for version in 1..=FORMAT_VERSION {
        let lines = lines_of(version);
        assert_eq!(lines[0]["type"], "meta", "format {version}");
        assert_eq!(lines[0]["version"], version, "the fixture is of format {version}");
        let restored = session::restore(&fixture(version)).unwrap();
        assert!(restored.repairs.is_empty(), "format {version}: {:?}", restored.repairs);
        let replayed: Vec<Value> = restored
            .messages
            .iter()
            .map(|message| serde_json::to_value(message).unwrap())
            .collect();
        assert_eq!(replayed, plain_history(&lines), "format {version}");
        assert_eq!(
            replayed[0]["content"], "survey this workspace",
            "format {version}: the request"
        );
        let count = |kind: &str| lines.iter().filter(|line| line["type"] == kind).count();
        let stages = restored
            .past
            .iter()
            .filter(|past| matches!(past, Past::Stage { .. }))
            .count();
        let appended = restored
            .past
            .iter()
            .filter(|past| matches!(past, Past::Message { .. }))
            .count();
        assert_eq!(stages, count("stage"), "format {version}: every stage is in the past");
        assert!(stages > 0, "format {version}: the fixture has stages");
        assert_eq!(appended, count("append"), "format {version}");
        let shown = restored.past.iter().filter(|past| past.is_chat_only()).count();
        assert_eq!(shown, count("shown"), "format {version}: every note the chat showed");
        let numbered = lines.iter().filter_map(|line| line["seq"].as_u64()).max();
        assert_eq!(
            restored.next_seq,
            numbered.map_or(0, |highest| highest + 1),
            "format {version}"
        );
    }
}

/// Resumed, an earlier format's journal is appended to in the current one, and reads
/// back whole: the old lines as they were, the new one numbered.
#[test]
fn an_earlier_format_resumes_and_reads_back_whole() {
    for version in 1..=FORMAT_VERSION {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("20261206-000000-1.jsonl");
        std::fs::copy(fixture(version), &path).unwrap();
        let (mut journal, restored) = Journal::resume(&path).unwrap();
        let before = restored.messages.len();
        journal
            .append(&session::Record::Append {
                message: scratchpad::message::Message::user_text("and one more thing"),
            })
            .unwrap();
        drop(journal);
        let again = session::restore(&path).unwrap();
        assert!(again.repairs.is_empty(), "format {version}: {:?}", again.repairs);
        assert_eq!(again.messages.len(), before + 1, "format {version}");
        assert_eq!(&again.messages[..before], &restored.messages[..], "format {version}");
    }
}

/// A journal of a format newer than this build reads is refused with a plain line,
/// never half read and then written to.
#[test]
fn a_newer_format_is_refused_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("20261206-000000-1.jsonl");
    let mut lines = lines_of(FORMAT_VERSION);
    lines[0]["version"] = Value::from(FORMAT_VERSION + 1);
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let before = std::fs::read(&path).unwrap();
    let error = Journal::resume(&path).map(|_| ()).unwrap_err();
    assert!(matches!(error, SessionError::NewerFormat { .. }), "{error}");
    let said = error.to_string();
    assert!(
        said.contains("newer scratchpad") && said.contains("update scratchpad"),
        "{said}"
    );
    assert!(session::restore(&path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing was written");
}
