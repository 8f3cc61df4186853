//! A new session from any point of another: just before one of its messages, or just
//! before one of its compaction stages, rebuilt from the stage's transcript and saved
//! results and checked against the hashes its receipt recorded, as undo is. The parent
//! is only read, never locked or written, so it may be open in another scratchpad.

use std::path::Path;

use super::record::{ForkPoint, Origin};
use super::replay::{Fed, Replay, read_journal};
use super::{Journal, Record, SessionError};
use crate::compact::Stage;
use crate::compact::estimate::EstimateMode;
use crate::compact::markers::{MessageKind, classify};
use crate::compact::undo::{UndoError, undo};
use crate::message::Message;
pub use crate::record::ForkAt;
use crate::store::Store;

#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("session {session} shows {count} messages: there is no message {position}")]
    NoMessage {
        session: String,
        position: usize,
        count: usize,
    },
    #[error(
        "message {position} of session {session} answers a tool call: a fork before it would leave the call without its result; fork at a request"
    )]
    SplitsCall { session: String, position: usize },
    #[error("session {session} has no compaction stage {id}")]
    NoStage { session: String, id: String },
    #[error("cannot rebuild the history before {stage} of session {session}, so nothing was written: {source}")]
    Unverified {
        session: String,
        stage: Stage,
        source: UndoError,
    },
}

/// The history of a session at a point, and what the point was.
#[derive(Debug)]
pub struct PointInTime {
    pub messages: Vec<Message>,
    pub point: ForkPoint,
    /// The request at a message point that is one: given back to edit.
    pub request: Option<String>,
    /// The provider and model the session was made for (its first record).
    pub provider: String,
    pub model: String,
}

/// The history the session in `journal` had at `at`, its files read from `store` (the
/// workspace's). Nothing is written; a transcript or saved result that no longer has
/// the hash its stage recorded is an error.
pub fn history_at(journal: &Path, at: &ForkAt, store: &Store, mode: EstimateMode) -> Result<PointInTime, ForkError> {
    let session = super::id_of(journal);
    let text = read_journal(journal)?;
    let mut replay = Replay::new(&text);
    let mut lines = text.lines();
    let mut made_for = (String::new(), String::new());
    match at {
        ForkAt::Message(position) => {
            let mut count = 0;
            for (number, line) in lines.by_ref() {
                if let Fed::Appended { position: shown } = feed(&mut replay, &mut made_for, number, line) {
                    count = shown;
                    if shown == *position {
                        let message = replay.messages().last().cloned();
                        replay.unappend();
                        let request = message.as_ref().and_then(|message| match classify(message) {
                            MessageKind::UserPrompt(text) => Some(text),
                            _ => None,
                        });
                        if message.as_ref().is_some_and(Message::has_tool_result) && request.is_none() {
                            return Err(ForkError::SplitsCall {
                                session,
                                position: *position,
                            });
                        }
                        let messages = replay.into_messages();
                        let (provider, model) = made_for;
                        return Ok(PointInTime {
                            messages,
                            point: ForkPoint::Message { position: *position },
                            request,
                            provider,
                            model,
                        });
                    }
                }
            }
            Err(ForkError::NoMessage {
                session,
                position: *position,
                count,
            })
        }
        ForkAt::Stage(id) => {
            let target = lines
                .by_ref()
                .find_map(|(number, line)| match feed(&mut replay, &mut made_for, number, line) {
                    Fed::Stage { event } if event.id == *id => Some(event),
                    _ => None,
                })
                .ok_or_else(|| ForkError::NoStage {
                    session: session.clone(),
                    id: id.clone(),
                })?;
            // The history journaled with a run of stages is the one after all of them:
            // the stages after the target in the same run are undone first.
            let mut run = vec![target.clone()];
            for (number, line) in lines {
                if !matches!(crate::json::from_slice::<Record>(line), Ok(Record::Stage { .. })) {
                    break;
                }
                if let Fed::Stage { event } = replay.feed(number, line) {
                    run.push(event);
                }
            }
            let mut messages = replay.messages().to_vec();
            for event in run.iter().rev() {
                store.recognise(&event.digests);
                if !event.can_be_undone() {
                    continue;
                }
                messages = undo(&messages, event, store, mode).map_err(|source| ForkError::Unverified {
                    session: session.clone(),
                    stage: event.stage,
                    source,
                })?;
            }
            let (provider, model) = made_for;
            Ok(PointInTime {
                messages,
                point: ForkPoint::Stage {
                    id: id.clone(),
                    stage: target.stage,
                },
                request: None,
                provider,
                model,
            })
        }
    }
}

/// A new session, locked for this process, holding the history `journal` had at `at`.
#[derive(Debug)]
pub struct Forked {
    pub journal: Journal,
    pub origin: Origin,
    pub messages: Vec<Message>,
    /// The request the fork was made before, to edit and send again.
    pub request: Option<String>,
}

/// Fork the session in `journal` at `at` into a new journal beside it. The parent is
/// read, never written; on any error nothing is written.
pub fn fork(journal: &Path, at: &ForkAt, store: &Store, mode: EstimateMode) -> Result<Forked, ForkError> {
    let point = history_at(journal, at, store, mode)?;
    let origin = Origin {
        session: super::id_of(journal),
        at: point.point,
    };
    let folder = journal.parent().unwrap_or(Path::new("."));
    let created = Journal::create_branch(folder, &point.provider, &point.model, origin.clone(), &point.messages)?;
    Ok(Forked {
        journal: created,
        origin,
        messages: point.messages,
        request: point.request,
    })
}

/// Apply a line, noting what the session was made for from its first record.
fn feed(replay: &mut Replay, made_for: &mut (String, String), number: usize, line: &[u8]) -> Fed {
    let fed = replay.feed(number, line);
    if let Fed::Meta { provider, model, .. } = &fed {
        *made_for = (provider.clone(), model.clone());
    }
    fed
}
