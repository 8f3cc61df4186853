//! `scratchpad compact`: run `prepare` once on a recorded history, so a policy can be
//! dry-run without a model. The result goes to stdout as JSON, the stage events to
//! stderr as JSON lines.

use std::io::Write;
use std::path::Path;

use crate::compact::markers::{MessageKind, classify};
use crate::compact::preview::{Preview, preview};
use crate::compact::{CompactConfig, Prepared, ReceiptItem, StageEvent, Summariser, prepare};
use crate::message::Message;
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum CompactCommandError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error(transparent)]
    Journal(#[from] crate::session::SessionError),
    #[error("{path} is not a JSON array of messages: {source}")]
    Parse { path: String, source: serde_json::Error },
    #[error("{path}, line {line}: neither a journal record nor a message: {source}")]
    Line {
        path: String,
        line: usize,
        source: serde_json::Error,
    },
    #[error(
        "{path} ends in a line cut short ({bytes} bytes with no newline, not a whole message or record); \
         a journal torn by a crash is read by `scratchpad --continue`, which sets the line aside"
    )]
    Torn { path: String, bytes: usize },
    #[error("{0} holds no messages: give a JSON array of messages, a transcript or a session journal")]
    Empty(String),
    #[error(
        "no --input given, and {0} has no session to read: pass --input FILE (a JSON array of messages, \
         a transcript or a session journal)"
    )]
    NoInput(String),
    #[error("invalid compaction settings: {0}")]
    Config(String),
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

/// The history `compact` reads: `--input`, or else the workspace's newest session.
pub fn input_or_newest(input: Option<&Path>, workspace: &Path) -> Result<std::path::PathBuf, CompactCommandError> {
    match input {
        Some(path) => Ok(path.to_path_buf()),
        None => crate::session::find(workspace, None)
            .map_err(|_| CompactCommandError::NoInput(workspace.display().to_string())),
    }
}

/// The history to compact: a JSON array of messages, a transcript (JSONL of messages,
/// as `.transcripts/` holds) or a session journal, whose history is the one resuming
/// it would give (appends, compactions and undos replayed, then mended).
pub fn load_history(path: &Path) -> Result<Vec<Message>, CompactCommandError> {
    let text = crate::session::read_journal(path)?;
    if text.starts_with(b'[') {
        return crate::message::parse_history(text.into_bytes()).map_err(|source| CompactCommandError::Parse {
            path: path.display().to_string(),
            source,
        });
    }
    let journal = text
        .lines()
        .next()
        .is_some_and(|(_, line)| crate::json::from_slice::<crate::session::Record>(line).is_ok());
    if !journal {
        return crate::commands::simulate::load_recording(path);
    }
    let restored = crate::session::restore(path)?;
    if restored.messages.is_empty() {
        return Err(CompactCommandError::Empty(path.display().to_string()));
    }
    Ok(restored.messages)
}

/// The newest user prompt's text: what `prepare` keeps as the current request.
/// Archive markers are not prompts; a `[Compacted]` message carries the request it
/// was made for.
pub fn newest_request(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|message| match classify(message) {
            MessageKind::UserPrompt(text) => Some(text),
            MessageKind::CompactedSummary { request: Some(request) } => Some(request),
            _ => None,
        })
        .unwrap_or_default()
}

/// What a pipe on stdout or stderr is widened to (Linux's unprivileged maximum).
#[cfg(target_os = "linux")]
const PIPE_BYTES: libc::c_int = 1 << 20;

/// Widen `output` when it is a pipe narrower than `PIPE_BYTES`: a long history's
/// receipt is megabytes, and through the usual 64 KB the writer waited on the reader
/// for each (10k messages: 2 MB of receipts took 5.6 ms to write, 2.4 through 1 MB).
/// Anything else, or a refusal, is left as it was.
pub fn widen_pipe(output: std::os::fd::BorrowedFd<'_>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = output.as_raw_fd();
        // SAFETY: both calls only read and set the pipe's size; `fd` is open while
        // borrowed. On anything but a pipe they fail and change nothing.
        unsafe {
            let size = libc::fcntl(fd, libc::F_GETPIPE_SZ);
            if (0..PIPE_BYTES).contains(&size) {
                libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = output;
}

/// Bytes gathered before each write to stdout or stderr.
const OUTPUT_BUFFER: usize = 1 << 16;

pub fn run(
    input: &Path,
    request: Option<&str>,
    config: &CompactConfig,
    workspace: &Path,
    summariser: &mut dyn Summariser,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Prepared, CompactCommandError> {
    config.validate().map_err(CompactCommandError::Config)?;
    let messages = load_history(input)?;
    let request = request.map_or_else(|| newest_request(&messages), str::to_string);
    let store = Store::new(workspace);
    let mut prepared = prepare(messages, &request, config, &store, summariser);
    // Buffered: serde writes a token at a time, and stderr is unbuffered (a receipt
    // of a large history was hundreds of thousands of tiny writes).
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stdout);
    crate::json::to_writer(&mut out, &prepared.messages).map_err(std::io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    let mut err = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stderr);
    for event in &mut prepared.events {
        write_event(&mut err, event)?;
    }
    err.flush()?;
    Ok(prepared)
}

/// `compact --dry-run`: the receipts of what `run` would do, one JSON line each on
/// `stdout`; nothing is written and no model is asked.
pub fn dry_run(
    input: &Path,
    request: Option<&str>,
    config: &CompactConfig,
    workspace: &Path,
    stdout: &mut dyn Write,
) -> Result<Vec<StageEvent>, CompactCommandError> {
    config.validate().map_err(CompactCommandError::Config)?;
    let messages = load_history(input)?;
    let request = request.map_or_else(|| newest_request(&messages), str::to_string);
    let mut events = preview(&messages, &request, config, workspace, &Preview::Prepare);
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stdout);
    for event in &mut events {
        write_event(&mut out, event)?;
    }
    out.flush()?;
    Ok(events)
}

/// Receipts of at least twice this many items are serialised on every core, in runs
/// of about this many.
const ITEMS_PER_RUN: usize = 1_000;

/// `event` as one JSON line. A receipt is shallow, our own: serialised without the
/// growing stack, whose check at every token slowed down its megabytes. A long one's
/// items are serialised side by side and written where one stand-in item was (10k
/// messages: 2 MB of receipt took 1.7 ms on one core). `event` is as it was after.
fn write_event(out: &mut impl Write, event: &mut StageEvent) -> std::io::Result<()> {
    let runs = event.items.len() / ITEMS_PER_RUN;
    let spliced = if runs < 2 { None } else { head_around_items(event)? };
    let Some((head, items_at)) = spliced else {
        serde_json::to_writer(&mut *out, event)?;
        return writeln!(out);
    };
    let items = &event.items;
    let serialised = crate::parallel::map(runs, 1, |run| {
        let run = &items[run * items.len() / runs..(run + 1) * items.len() / runs];
        let mut text = Vec::with_capacity(run.len() * 256);
        for (at, item) in run.iter().enumerate() {
            if at > 0 {
                text.push(b',');
            }
            serde_json::to_writer(&mut text, item)?;
        }
        Ok::<_, serde_json::Error>(text)
    });
    out.write_all(&head[..items_at.start])?;
    for (at, run) in serialised.into_iter().enumerate() {
        if at > 0 {
            out.write_all(b",")?;
        }
        out.write_all(&run?)?;
    }
    out.write_all(&head[items_at.end..])?;
    writeln!(out)
}

/// `event` serialised with one stand-in item for its items, and where that item is in
/// the text; `None` should it not be found there. `event` is as it was after.
fn head_around_items(event: &mut StageEvent) -> std::io::Result<Option<(Vec<u8>, std::ops::Range<usize>)>> {
    let stand_in = ReceiptItem {
        // No real item has it: positions start at 1.
        position: 0,
        role: crate::message::Role::User,
        what: String::new(),
        chars_before: 0,
        chars_after: 0,
        saved: None,
        tool_use_id: None,
        was: None,
    };
    let stand_in_text = serde_json::to_vec(&stand_in)?;
    let items = std::mem::replace(&mut event.items, vec![stand_in]);
    let head = serde_json::to_vec(event);
    event.items = items;
    let head = head?;
    Ok(memchr::memmem::find(&head, &stand_in_text).map(|at| (head, at..at + stand_in_text.len())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::archive_marker;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_pipe_for_the_output_is_widened_and_a_file_left_alone() {
        use std::os::fd::{AsFd, AsRawFd};
        let pipe_size = |fd: std::os::fd::BorrowedFd<'_>| {
            // SAFETY: reads the size of an open descriptor.
            unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) }
        };
        let (_reader, writer) = std::io::pipe().unwrap();
        assert!(pipe_size(writer.as_fd()) < PIPE_BYTES);
        widen_pipe(writer.as_fd());
        assert_eq!(pipe_size(writer.as_fd()), PIPE_BYTES);
        let file = tempfile::tempfile().unwrap();
        widen_pipe(file.as_fd());
        assert_eq!(pipe_size(file.as_fd()), -1, "not a pipe");
    }

    /// What `simulate` reads, `compact` reads too: a transcript as its messages, and a
    /// journal as the history it holds now (after its compactions), not every message
    /// it ever appended.
    #[test]
    fn compact_reads_transcripts_and_journals() {
        use crate::session::{Journal, Record};
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("transcript.jsonl");
        let messages = vec![Message::user_text("a"), Message::assistant_text("b")];
        let lines: String = messages
            .iter()
            .map(|m| format!("{}\n", serde_json::to_string(m).unwrap()))
            .collect();
        std::fs::write(&transcript, lines).unwrap();
        assert_eq!(load_history(&transcript).unwrap(), messages);

        let mut journal = Journal::create(dir.path(), "demo", "m").unwrap();
        for message in &messages {
            journal
                .append(&Record::Append {
                    message: message.clone(),
                })
                .unwrap();
        }
        let compacted = vec![Message::user_text("[Compacted] a and b")];
        journal
            .append(&Record::Replace {
                messages: compacted.clone(),
            })
            .unwrap();
        journal
            .append(&Record::Append {
                message: Message::assistant_text("c"),
            })
            .unwrap();
        journal.sync().unwrap();
        assert_eq!(
            load_history(journal.path()).unwrap(),
            vec![compacted[0].clone(), Message::assistant_text("c")]
        );

        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        assert!(matches!(load_history(&empty), Err(CompactCommandError::Empty(_))));
    }
    use crate::compact::markers::compacted_text;

    /// A long receipt, serialised in runs side by side, is the bytes of one
    /// serialisation; so is a short one, and the event is left as it was.
    #[test]
    fn an_event_line_is_its_json_however_long_its_receipt() {
        for len in [0, 3, 2 * ITEMS_PER_RUN - 1, 2 * ITEMS_PER_RUN, 5 * ITEMS_PER_RUN + 7] {
            let mut event = StageEvent::start(
                crate::compact::Stage::SnipCompact,
                len + 10,
                99_000,
                "a \"test\"".into(),
            );
            event.items = (0..len)
                .map(|at| ReceiptItem {
                    position: at + 1,
                    role: if at % 2 == 0 {
                        crate::message::Role::User
                    } else {
                        crate::message::Role::Assistant
                    },
                    what: format!("line {at}: \"quoted\" ✓\n"),
                    chars_before: at * 7,
                    chars_after: 0,
                    saved: (at % 3 == 0).then(|| ".transcripts/t.jsonl".to_string()),
                    tool_use_id: (at % 5 == 0).then(|| format!("toolu_{at}")),
                    was: None,
                })
                .collect();
            event.summary = Some("after the items".into());
            let before = event.clone();
            let mut line = Vec::new();
            write_event(&mut line, &mut event).unwrap();
            let mut expected = serde_json::to_vec(&before).unwrap();
            expected.push(b'\n');
            assert!(line == expected, "{len} items");
            assert_eq!(event, before);
        }
    }

    #[test]
    fn the_newest_request_skips_markers_and_unwraps_compacted_messages() {
        let history = vec![
            Message::user_text("first"),
            Message::assistant_text("ok"),
            Message::user_text(archive_marker(3, ".transcripts/t.jsonl")),
        ];
        assert_eq!(newest_request(&history), "first");
        let compacted = vec![Message::user_text(compacted_text(
            Some("the real\nrequest"),
            "s",
            "p",
            4,
        ))];
        assert_eq!(newest_request(&compacted), "the real\nrequest");
        assert_eq!(newest_request(&[]), "");
    }
}
