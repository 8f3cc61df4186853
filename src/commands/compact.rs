//! `scratchpad compact`: run `prepare` once on a recorded history, so a policy can be
//! dry-run without a model. The result goes to stdout as JSON, the stage events to
//! stderr as JSON lines.

use std::io::Write;
use std::path::Path;

use crate::compact::preview::{Preview, preview};
use crate::compact::{CompactConfig, Prepared, StageEvent, Summariser, prepare};
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
    let request = request.map_or_else(|| crate::compact::newest_request(&messages), str::to_string);
    let store = Store::new(workspace);
    let prepared = prepare(messages, &request, config, &store, summariser);
    // Buffered: serde writes a token at a time, and stderr is unbuffered (a receipt
    // of a large history was hundreds of thousands of tiny writes).
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stdout);
    crate::json::to_writer(&mut out, &prepared.messages).map_err(std::io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    let mut err = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stderr);
    for event in &prepared.events {
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
    let request = request.map_or_else(|| crate::compact::newest_request(&messages), str::to_string);
    let events = preview(&messages, &request, config, workspace, &Preview::Prepare);
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stdout);
    for event in &events {
        write_event(&mut out, event)?;
    }
    out.flush()?;
    Ok(events)
}

/// `event` as one JSON line.
fn write_event(out: &mut impl Write, event: &StageEvent) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
