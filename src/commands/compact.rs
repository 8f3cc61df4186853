//! `scratchpad compact`: run `prepare` once on a recorded history, so a policy can be
//! dry-run without a model. The result goes to stdout as JSON, the stage events to
//! stderr as JSON lines.

use std::io::Write;
use std::path::Path;

use crate::compact::markers::{MessageKind, classify};
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
    #[error("invalid compaction settings: {0}")]
    Config(String),
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

pub fn load_history(path: &Path) -> Result<Vec<Message>, CompactCommandError> {
    let text = crate::session::read_journal(path)?
        .into_string()
        .map_err(|source| CompactCommandError::Read {
            path: path.display().to_string(),
            source,
        })?;
    crate::message::parse_history(&text).map_err(|source| CompactCommandError::Parse {
        path: path.display().to_string(),
        source,
    })
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
    let prepared = prepare(messages, &request, config, &store, summariser);
    // Buffered: serde writes a token at a time, and stderr is unbuffered (a receipt
    // of a large history was hundreds of thousands of tiny writes).
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stdout);
    crate::json::to_writer(&mut out, &prepared.messages).map_err(std::io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    let mut err = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stderr);
    for event in &prepared.events {
        crate::json::to_writer(&mut err, event).map_err(std::io::Error::from)?;
        writeln!(err)?;
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
    let events = preview(&messages, &request, config, workspace, &Preview::Prepare);
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stdout);
    for event in &events {
        crate::json::to_writer(&mut out, event).map_err(std::io::Error::from)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::archive_marker;
    use crate::compact::markers::compacted_text;

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
