//! `scratchpad sessions` and `scratchpad fork`: the workspace's sessions as a list or
//! JSON, and a new session from any point of one, for scripting.

use std::io::Write;
use std::path::Path;

use crate::compact::CompactConfig;
use crate::session::{self, ForkAt, ForkError, SessionSummary};
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum SessionsCommandError {
    #[error(transparent)]
    Session(#[from] session::SessionError),
    #[error(transparent)]
    Fork(#[from] ForkError),
    #[error("cannot write the list: {0}")]
    Output(#[from] std::io::Error),
}

/// The sessions of `workspace`, newest first: one line each, or JSON.
pub fn list(workspace: &Path, json: bool, out: &mut dyn Write) -> Result<(), SessionsCommandError> {
    let sessions = session::list(&session::sessions_dir(workspace));
    if json {
        crate::json::to_writer(&mut *out, &sessions).map_err(std::io::Error::from)?;
        writeln!(out)?;
        return Ok(());
    }
    if sessions.is_empty() {
        writeln!(out, "no sessions in this workspace yet")?;
        return Ok(());
    }
    for summary in &sessions {
        writeln!(out, "{}", row(summary))?;
    }
    Ok(())
}

/// One session in one line: id, when, its size, and its first request.
pub fn row(summary: &SessionSummary) -> String {
    let mut parts = summary.facts();
    if let Some(parent) = &summary.parent {
        parts.push(format!("a branch of {}", parent.session));
    }
    if let Some(pid) = &summary.open_in {
        parts.push(format!("open in pid {pid}"));
    }
    let request = summary.first_request.as_deref().unwrap_or("(no request yet)");
    let request = crate::text::one_line(request, 100);
    format!(
        "{}  {}  {}",
        summary.id,
        parts.join(" · "),
        crate::terminal_text::screen_safe(&request)
    )
}

/// Fork session `id` of `workspace` at `at`; the new session's id goes to `out`, what
/// was done to `note`.
pub fn fork(
    workspace: &Path,
    id: &str,
    at: &ForkAt,
    config: &CompactConfig,
    out: &mut dyn Write,
    note: &mut dyn Write,
) -> Result<String, SessionsCommandError> {
    let parent = session::find(workspace, Some(id))?;
    let store = Store::new(workspace);
    let forked = session::fork(&parent, at, &store, config.estimate)?;
    let new_id = forked.journal.id().to_string();
    writeln!(out, "{new_id}")?;
    writeln!(
        note,
        "forked session {id} {} into {new_id} ({}); `scratchpad --resume {new_id}` continues it",
        forked.origin.at,
        crate::compact::counted(forked.messages.len(), "message", "messages")
    )?;
    if let Some(request) = &forked.request {
        writeln!(note, "the request at that point was: {request}")?;
    }
    Ok(new_id)
}
