//! `scratchpad compact`: run `prepare` once on a recorded history, so a policy can be
//! dry-run without a model. The result goes to stdout as JSON, the stage events to
//! stderr as JSON lines.

use std::io::Write;
use std::path::Path;

use crate::compact::{CompactConfig, Prepared, Summariser, prepare};
use crate::message::{Message, is_user_prompt};
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum CompactCommandError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path} is not a JSON array of messages: {source}")]
    Parse { path: String, source: serde_json::Error },
    #[error("invalid compaction settings: {0}")]
    Config(String),
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

pub fn load_history(path: &Path) -> Result<Vec<Message>, CompactCommandError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompactCommandError::Read {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| CompactCommandError::Parse {
        path: path.display().to_string(),
        source,
    })
}

/// The newest user prompt's text: what `prepare` keeps as the current request.
pub fn newest_request(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| is_user_prompt(m))
        .map(Message::text)
        .unwrap_or_default()
}

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
    serde_json::to_writer(&mut *stdout, &prepared.messages).map_err(std::io::Error::from)?;
    writeln!(stdout)?;
    for event in &prepared.events {
        serde_json::to_writer(&mut *stderr, event).map_err(std::io::Error::from)?;
        writeln!(stderr)?;
    }
    Ok(prepared)
}
