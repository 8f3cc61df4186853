//! `scratchpad undo [--session ID]`: put a saved session's history back as it was
//! before its newest compaction stage, as `/undo` does in the app, and journal it so
//! `--continue` picks the session up from there.

use std::io::Write;
use std::path::Path;

use crate::compact::CompactConfig;
use crate::compact::undo::{UndoError, undo};
use crate::protocol::Past;
use crate::session::{self, Journal, Record, SessionError};
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum UndoCommandError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("nothing to undo: no compaction changed session {0}")]
    Nothing(String),
    #[error(transparent)]
    Undo(#[from] UndoError),
    #[error("cannot write the result: {0}")]
    Output(#[from] std::io::Error),
}

/// Undo the newest stage of the session `id` (or the newest session) in `workspace`.
pub fn run(
    workspace: &Path,
    id: Option<&str>,
    config: &CompactConfig,
    out: &mut dyn Write,
) -> Result<(), UndoCommandError> {
    let path = session::find(workspace, id)?;
    let (mut journal, restored) = Journal::resume(&path)?;
    let store = Store::new(workspace);
    let mut stages = Vec::new();
    for item in &restored.past {
        match item {
            Past::Stage { event } => {
                store.recognise(&event.digests);
                if event.can_be_undone() {
                    stages.push(event);
                }
            }
            Past::Undo { .. } => {
                stages.pop();
            }
            _ => {}
        }
    }
    let name = session::id_of(&path);
    let event = stages.last().ok_or_else(|| UndoCommandError::Nothing(name.clone()))?;
    let messages = undo(&restored.messages, event, &store, config.estimate)?;
    let before = config.estimate.count(&restored.messages);
    let after = config.estimate.count(&messages);
    journal.append(&Record::Undo {
        stage: event.stage,
        undid: event.id.clone(),
        messages,
    })?;
    journal.sync()?;
    writeln!(
        out,
        "undid {} in session {name}: {before} → {after} chars; `scratchpad --continue` picks it up from there",
        event.stage
    )?;
    Ok(())
}
