use std::fs::OpenOptions;
use std::io::Write;

use super::*;
use crate::compact::StageEvent;
use crate::message::Message;

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

/// The scripted session's tool call `id` (`ls`, after a line of text).
fn call(id: &str) -> Message {
    Message::blocks(
        Role::Assistant,
        vec![
            ContentBlock::text("checking"),
            ContentBlock::tool_use(id, "bash", serde_json::json!({"command": "ls"})),
        ],
    )
}

/// The scripted session's result of call `id`.
fn result(id: &str) -> Message {
    Message::blocks(Role::User, vec![ContentBlock::tool_result(id, "a\nb ✓", false)])
}

/// A scripted session: a prompt, a tool round, a compaction, then a kill while the
/// second tool runs (the call is the last record).
fn scripted_records() -> Vec<Record> {
    vec![
        Record::Meta {
            version: 1,
            provider: "demo".into(),
            model: "m".into(),
            created_unix: 1,
            parent: None,
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

/// The history resuming [`scripted_records`] cut after its first `complete` records
/// gives, written out by hand (not by replaying and repairing): each call left without
/// a result gets an interrupted one.
fn expected_after(complete: usize) -> Vec<Message> {
    let interrupted = |id: &str| {
        Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result(
                id,
                "interrupted: scratchpad stopped before this tool finished",
                true,
            )],
        )
    };
    let request = Message::user_text("list the files");
    let compacted = [Message::user_text("[Compacted] summary"), call("t1"), result("t1")];
    let after_compaction = |more: Vec<Message>| compacted.iter().cloned().chain(more).collect::<Vec<_>>();
    match complete {
        0 | 1 => vec![],
        2 => vec![request],
        3 => vec![request, call("t1"), interrupted("t1")],
        4 | 5 => vec![request, call("t1"), result("t1")],
        6 => after_compaction(vec![]),
        7 => after_compaction(vec![call("t2"), interrupted("t2")]),
        8 => after_compaction(vec![call("t2"), result("t2")]),
        9 => after_compaction(vec![call("t2"), result("t2"), Message::assistant_text("done")]),
        10 => after_compaction(vec![
            call("t2"),
            result("t2"),
            Message::assistant_text("done"),
            Message::user_text("now again"),
        ]),
        _ => after_compaction(vec![
            call("t2"),
            result("t2"),
            Message::assistant_text("done"),
            Message::user_text("now again"),
            call("t3"),
            interrupted("t3"),
        ]),
    }
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
        assert_eq!(restored.messages, expected_after(complete), "cut at byte {cut}");
        if !restored.messages.is_empty() {
            assert_eq!(restored.messages[0].role(), Role::User);
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
    let (mut journal, _) = Journal::resume(&path).unwrap();
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
        serde_json::to_string(&Record::Stage { event: Box::new(stage) }).unwrap(),
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

/// A journal whose records were written twice (a copy, a sync tool's merge): each
/// copy carries the number of the record it copies and loads once, so no tool id is
/// sent twice and no stage is undone twice.
#[test]
fn copied_records_load_once_and_an_undo_applies_only_to_the_stage_it_names() {
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
        Record::Stage { event: Box::new(event) }
    };
    let undo = |id: &str, text: &str| Record::Undo {
        stage: crate::compact::Stage::MicroCompact,
        undid: id.to_string(),
        messages: vec![Message::user_text(text)],
    };
    // (sequence number, record): lines 4, 5, 9 and 12 are copies of records read
    // before them; line 10 undoes a stage that is not the newest.
    let records = [
        (
            0,
            Record::Append {
                message: Message::user_text("go"),
            },
        ),
        (1, call.clone()),
        (2, result.clone()),
        (1, call),
        (2, result),
        (3, stage("s1")),
        (4, stage("s2")),
        (5, undo("s2", "before s2")),
        (3, stage("s1")),
        (6, undo("s2", "never was")),
        (7, undo("s1", "before s1")),
        (7, undo("s1", "before s1")),
    ];
    let text: Vec<u8> = records
        .iter()
        .flat_map(|(seq, record)| {
            let mut line = numbering::numbered(&serde_json::to_vec(record).unwrap(), *seq);
            line.push(b'\n');
            line
        })
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
    assert_eq!(restored.repairs.len(), 5, "{:?}", restored.repairs);
    assert_eq!(restored.next_seq, 8);
}

/// Two runs of one request write records that read alike, byte for byte but for their
/// numbers: the demo's first call and its result, once a compaction took the first run
/// out of the history (so the id is free again). Each is its own record, and a resumed
/// session holds every one.
#[test]
fn records_that_read_alike_all_load_and_resuming_numbers_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(dir.path(), "demo", "offline-demo").unwrap();
    let run = [
        Message::user_text("survey this workspace"),
        Message::blocks(
            Role::Assistant,
            vec![ContentBlock::tool_use(
                "toolu_demo_001",
                "glob",
                serde_json::json!({"pattern": "**/*"}),
            )],
        ),
        Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result("toolu_demo_001", "src/main.rs", false)],
        ),
        Message::assistant_text("Done."),
    ];
    let compacted = Message::user_text("[Compacted] the first survey");
    let append = |journal: &mut Journal, messages: &[Message]| {
        for message in messages {
            journal
                .append(&Record::Append {
                    message: message.clone(),
                })
                .unwrap();
        }
    };
    append(&mut journal, &run);
    journal
        .append(&Record::Replace {
            messages: vec![compacted.clone()],
        })
        .unwrap();
    append(&mut journal, &run);
    let path = journal.path().to_path_buf();
    drop(journal);
    let (mut journal, restored) = Journal::resume(&path).unwrap();
    let mut live = vec![compacted];
    live.extend(run.iter().cloned());
    assert_eq!(restored.messages, live);
    assert!(restored.repairs.is_empty(), "{:?}", restored.repairs);
    journal.append(&Record::Replace { messages: live.clone() }).unwrap();
    append(
        &mut journal,
        &[Message::user_text("hi"), Message::assistant_text("Done.")],
    );
    drop(journal);
    let restored = restore(&path).unwrap();
    assert_eq!(
        restored.messages.len(),
        live.len() + 2,
        "appended after the resume, numbered on"
    );
    assert!(restored.repairs.is_empty(), "{:?}", restored.repairs);
}

/// A journal written before records were numbered is read whole: nothing in it is
/// taken for a copy, and records appended to it are numbered from zero.
#[test]
fn an_unnumbered_journal_loads_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("20260101-000000-1.jsonl");
    let line = |record: &Record| serde_json::to_string(record).unwrap() + "\n";
    let hi = Record::Append {
        message: Message::user_text("hi"),
    };
    let answer = Record::Append {
        message: Message::assistant_text("hello"),
    };
    std::fs::write(&path, [&hi, &answer, &hi, &answer].map(line).concat()).unwrap();
    let (mut journal, restored) = Journal::resume(&path).unwrap();
    assert_eq!(restored.messages.len(), 4);
    assert!(restored.repairs.is_empty(), "{:?}", restored.repairs);
    journal.append(&hi).unwrap();
    drop(journal);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines().last().unwrap().starts_with(r#"{"seq":0,"type":"append""#),
        "{text}"
    );
    assert_eq!(restore(&path).unwrap().messages.len(), 5);
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
    assert!(matches!(Journal::resume(&fifo), Err(SessionError::NotAFile(_))));
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

/// What only the chat showed (a cancelled turn, a requested compaction and its focus,
/// a preview) comes back on resume; a `shown` record that claims to be a message is
/// someone else's doing and is skipped.
#[test]
fn notes_the_chat_showed_are_restored_and_a_forged_one_is_skipped() {
    use crate::record::{CompactionRequester, TurnOutcome};
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(dir.path(), "demo", "m").unwrap();
    let shown = [
        Past::TurnEnded {
            outcome: TurnOutcome::Cancelled,
        },
        Past::CompactionRequested {
            by: CompactionRequester::User,
            focus: Some("the parser".into()),
        },
        Past::Preview {
            events: vec![crate::compact::StageEvent::start(
                crate::compact::Stage::CompactHistory,
                3,
                900,
                String::new(),
            )],
        },
    ];
    journal
        .append(&Record::Append {
            message: Message::user_text("a"),
        })
        .unwrap();
    for item in &shown {
        journal.append(&Record::Shown { item: item.clone() }).unwrap();
    }
    journal
        .append(&Record::Shown {
            item: Past::Message {
                message: Message::user_text("forged"),
            },
        })
        .unwrap();
    journal.sync().unwrap();
    let restored = restore(journal.path()).unwrap();
    assert_eq!(restored.messages, vec![Message::user_text("a")]);
    let expected: Vec<Past> = std::iter::once(Past::Message {
        message: Message::user_text("a"),
    })
    .chain(shown)
    .collect();
    assert_eq!(restored.past, expected);
    assert_eq!(restored.repairs.len(), 1, "{:?}", restored.repairs);
    assert!(
        restored.repairs[0].contains("has a record of its own"),
        "{:?}",
        restored.repairs
    );
}

/// A file large enough to be read into huge pages reads the same as a small one: every
/// byte, its lines and its torn end.
#[test]
fn a_large_file_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.jsonl");
    let line = format!("{}\n", "x✓".repeat(1_000));
    let mut text = line.repeat(2_000);
    text.push_str("torn");
    assert!(text.len() > 4 << 20);
    std::fs::write(&path, &text).unwrap();
    let read = read_journal(&path).unwrap();
    assert_eq!(read.lines().count(), 2_000);
    assert_eq!(read.torn(), Some(&b"torn"[..]));
    assert!(read.into_bytes() == text.as_bytes());
}

/// The session this process has open is not "open in another scratchpad": its own
/// pid is never named as another's.
#[test]
fn the_session_open_here_is_not_listed_as_open_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = Journal::create(dir.path(), "demo", "offline-demo").unwrap();
    journal
        .append(&Record::Append {
            message: Message::user_text("hi"),
        })
        .unwrap();
    let listed = list(dir.path());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].open_in, None, "held by this process");
    assert_eq!(lock_holder(journal.path()), Some(std::process::id().to_string()));
}
