//! Undo of one compaction stage: the history exactly as it was before the stage, plus
//! whatever was appended since. Stages that replace messages archived the whole history
//! first, so it comes back from their transcript; stages that shrink tool results get
//! each result back from its saved file (or, for a preview block an earlier stage left,
//! from the receipt). Every piece is checked against the sizes the receipt recorded
//! before anything is changed.

use super::Archive;
use super::estimate::EstimateMode;
use super::markers::{ResultKind, classify_result};
use super::pairing::{blocks_mut, rename_repeated_ids};
use super::{Stage, StageEvent};
use crate::message::{ContentBlock, Message, ToolResultContent};
use crate::store::UnverifiedFile;

/// The text of `path`, only if it is ours, unchanged since it was kept, and has the
/// hash `event` recorded for it.
fn verified_text(store: &dyn Archive, event: &StageEvent, path: &str) -> Result<String, UndoError> {
    let stage = event.stage;
    let saved = store
        .read_saved(path)
        .map_err(|why| UndoError::Unverified { stage, why })?;
    match event.digests.get(&saved.path) {
        Some(recorded) if crate::digest::matches(recorded, saved.text.as_bytes()) => Ok(saved.text),
        Some(_) => Err(UndoError::Unverified {
            stage,
            why: UnverifiedFile::Changed(saved.path),
        }),
        None => Err(UndoError::Unverified {
            stage,
            why: UnverifiedFile::NoRecord(saved.path),
        }),
    }
}

/// Why a stage could not be undone; the history is left as it was.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UndoError {
    /// The stage changed nothing.
    #[error("{0} changed nothing, so there is nothing to undo")]
    NothingChanged(Stage),
    /// What the stage kept cannot be read back as it was kept.
    #[error("{stage} cannot be undone: {why}")]
    Unverified {
        /// The stage.
        stage: Stage,
        /// What is wrong with its file.
        why: UnverifiedFile,
    },
    /// A file does not hold what the stage recorded.
    #[error("{path} does not hold what {stage} recorded ({detail}); nothing was changed")]
    Mismatch {
        /// The stage.
        stage: Stage,
        /// The file.
        path: String,
        /// What differs.
        detail: String,
    },
    /// The history no longer has what the stage left where it left it.
    #[error("the history no longer has what {stage} left ({detail}); nothing was changed")]
    Moved {
        /// The stage.
        stage: Stage,
        /// What moved.
        detail: String,
    },
}

/// The history before `event`, given the history now (`event` being the newest stage
/// that changed it). Nothing is written; an error changes nothing.
pub fn undo(
    messages: &[Message],
    event: &StageEvent,
    store: &dyn Archive,
    mode: EstimateMode,
) -> Result<Vec<Message>, UndoError> {
    if event.replaced == 0 {
        return Err(UndoError::NothingChanged(event.stage));
    }
    match event.stage {
        Stage::SnipCompact | Stage::CompactHistory | Stage::ReactiveCompact => {
            from_transcript(messages, event, store, mode)
        }
        Stage::ToolResultBudget | Stage::MicroCompact | Stage::FitToolResults => {
            from_saved_results(messages, event, store, mode)
        }
    }
}

fn from_transcript(
    messages: &[Message],
    event: &StageEvent,
    store: &dyn Archive,
    mode: EstimateMode,
) -> Result<Vec<Message>, UndoError> {
    let stage = event.stage;
    let path = event.archived.clone().ok_or(UndoError::Moved {
        stage,
        detail: "it names no transcript".into(),
    })?;
    let text = verified_text(store, event, &path)?;
    let mismatch = |detail: String| UndoError::Mismatch {
        stage,
        path: path.clone(),
        detail,
    };
    let before: Vec<Message> = text
        .lines()
        .enumerate()
        .map(|(at, line)| crate::json::from_str(line).map_err(|error| mismatch(format!("line {}: {error}", at + 1))))
        .collect::<Result<_, _>>()?;
    if before.len() != event.messages_before {
        return Err(mismatch(format!(
            "{} messages, the stage saw {}",
            before.len(),
            event.messages_before
        )));
    }
    let chars = mode.count(&before);
    if chars != event.chars_before {
        return Err(mismatch(format!("{chars} chars, the stage saw {}", event.chars_before)));
    }
    if messages.len() < event.messages_after {
        return Err(UndoError::Moved {
            stage,
            detail: format!("{} messages, the stage left {}", messages.len(), event.messages_after),
        });
    }
    let mut restored = before;
    restored.extend_from_slice(&messages[event.messages_after..]);
    // A call made since the stage may reuse the id of one it took out (the id was
    // free then); with both back, the later one gets its own, as a live call would.
    rename_repeated_ids(&mut restored);
    Ok(restored)
}

fn from_saved_results(
    messages: &[Message],
    event: &StageEvent,
    store: &dyn Archive,
    mode: EstimateMode,
) -> Result<Vec<Message>, UndoError> {
    let stage = event.stage;
    let mut restored = messages.to_vec();
    for item in event.items.iter().rev() {
        let (Some(id), Some(path)) = (&item.tool_use_id, &item.saved) else {
            continue;
        };
        let at = item.position - 1;
        let moved = |detail: String| UndoError::Moved { stage, detail };
        let content = restored
            .get_mut(at)
            .map(blocks_mut)
            .and_then(|blocks| {
                blocks.iter_mut().find_map(|block| match block {
                    ContentBlock::ToolResult {
                        tool_use_id, content, ..
                    } if tool_use_id == id => Some(content),
                    _ => None,
                })
            })
            .ok_or_else(|| moved(format!("no result for {id} in message {}", item.position)))?;
        let points_there = match classify_result(content) {
            ResultKind::Persisted(block) => block.path == path,
            ResultKind::Cleared { path: cleared } => cleared == path,
            ResultKind::Whole => false,
        };
        if !points_there {
            return Err(moved(format!("the result for {id} no longer points at {path}")));
        }
        let text = match &item.was {
            Some(was) => was.clone(),
            None => verified_text(store, event, path)?,
        };
        let back = ToolResultContent::Text(text);
        let chars = mode.count(&back);
        if chars != item.chars_before {
            return Err(UndoError::Mismatch {
                stage,
                path: path.clone(),
                detail: format!("{chars} chars for {id}, the stage saw {}", item.chars_before),
            });
        }
        *content = back;
    }
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::{CompactConfig, ExtractiveSummariser, estimate_chars, prepare};
    use crate::history::{Call, History};

    use crate::store::Store;

    fn history(rounds: usize) -> Vec<Message> {
        let mut history = History::new().request("read everything");
        for i in 0..rounds {
            history = history.round(Call::new(
                "read_file",
                serde_json::json!({"path": format!("f{i}.rs")}),
                format!("line {i}\n").repeat(800),
            ));
        }
        history.build()
    }

    /// A config under which `prepare` runs several stages on `history(9)`.
    fn several_stages() -> CompactConfig {
        CompactConfig {
            context_char_limit: crate::compact::Limit::chars(20_000),
            snip_max_messages: 12,
            ..CompactConfig::default()
        }
    }

    /// Undo each stage `prepare` ran, newest first, and get the input back exactly.
    #[test]
    fn undoing_every_stage_gives_back_the_history_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let config = several_stages();
        let original = history(9);
        let prepared = prepare(
            original.clone(),
            "read everything",
            &crate::compact::Context::new(&config, &store),
            &mut ExtractiveSummariser,
        );
        assert!(prepared.events.len() >= 2, "{:?}", prepared.events);
        let mut now = prepared.messages;
        for event in prepared.events.iter().rev() {
            now = undo(&now, event, &store, config.estimate).unwrap();
            assert_eq!(estimate_chars(&now), event.chars_before, "{}", event.stage);
        }
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            serde_json::to_string(&original).unwrap()
        );
    }

    /// A call made after a summary may reuse the id of a call the summary took out (a
    /// provider that numbers calls afresh): undoing the summary brings both back, and
    /// the later one gets an id of its own, with its result, so no id is sent twice.
    #[test]
    fn undoing_a_summary_gives_a_reused_call_id_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let config = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(2_000),
            ..CompactConfig::default()
        };
        let original = History::new()
            .request("read")
            .rounds(4, "read_file", &serde_json::json!({"path": "a.rs"}), |i| {
                format!("line {i}\n").repeat(60)
            })
            .build();
        let reused = original[1].tool_use_ids().next().unwrap().to_string();
        let mut messages = original.clone();
        let event = crate::compact::compact_history::force_compact(
            &mut messages,
            crate::compact::compact_history::Asked::by("the user (/compact)", "read"),
            &crate::compact::Context::new(&config, &store),
            &mut ExtractiveSummariser,
        );
        assert!(
            messages.iter().all(|m| m.tool_use_ids().next().is_none()),
            "every call summarised"
        );
        messages.push(Message::blocks(
            crate::message::Role::Assistant,
            vec![ContentBlock::tool_use(
                &reused,
                "read_file",
                serde_json::json!({"path": "b.rs"}),
            )],
        ));
        messages.push(Message::blocks(
            crate::message::Role::User,
            vec![ContentBlock::tool_result(&reused, "fn b() {}", false)],
        ));
        let undone = undo(&messages, &event, &store, config.estimate).unwrap();
        assert_eq!(
            undone[..original.len()],
            original[..],
            "the history before it, as it was"
        );
        crate::compact::pairing::check_pairing(&undone).expect("each call paired, no id twice");
        let later = undone[original.len()].tool_use_ids().next().unwrap().to_string();
        assert_ne!(later, reused);
        assert_eq!(
            undone[original.len() + 1].tool_result_ids().next(),
            Some(later.as_str())
        );
    }

    /// Receipts an earlier version journaled name each file by its SHA-256: a session
    /// resumed from them still undoes, from files checked against those.
    #[test]
    fn receipts_of_an_earlier_version_still_undo() {
        use sha2::Digest;
        let dir = tempfile::tempdir().unwrap();
        let config = several_stages();
        let original = history(9);
        let prepared = prepare(
            original.clone(),
            "read everything",
            &crate::compact::Context::new(&config, &Store::new(dir.path())),
            &mut ExtractiveSummariser,
        );
        let resumed = Store::new(dir.path());
        let mut now = prepared.messages;
        for mut event in prepared.events.into_iter().rev() {
            for (path, digest) in &mut event.digests {
                let bytes = std::fs::read(dir.path().join(path.as_str())).unwrap();
                assert!(crate::digest::matches(digest, &bytes));
                *digest = format!("{:x}", sha2::Sha256::digest(&bytes));
            }
            resumed.recognise(&event.digests);
            now = undo(&now, &event, &resumed, config.estimate).unwrap();
        }
        assert_eq!(
            serde_json::to_string(&now).unwrap(),
            serde_json::to_string(&original).unwrap()
        );
    }

    #[test]
    fn a_changed_file_is_refused_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let config = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(20_000),
            ..CompactConfig::default()
        };
        let prepared = prepare(
            history(9),
            "r",
            &crate::compact::Context::new(&config, &store),
            &mut ExtractiveSummariser,
        );
        let micro = prepared
            .events
            .iter()
            .find(|e| e.stage == Stage::MicroCompact)
            .expect("micro_compact fired");
        let path = micro.items[0].saved.clone().unwrap();
        let original = std::fs::read(dir.path().join(&path)).unwrap();
        // The same length, one byte different: sizes alone would not see it.
        let mut forged = original.clone();
        forged[0] ^= 1;
        std::fs::write(dir.path().join(&path), &forged).unwrap();
        let refused = undo(&prepared.messages, micro, &store, config.estimate).unwrap_err();
        assert_eq!(
            refused,
            UndoError::Unverified {
                stage: Stage::MicroCompact,
                why: UnverifiedFile::Changed(path.clone())
            }
        );
        assert!(refused.to_string().contains(&path), "{refused}");
    }
}
