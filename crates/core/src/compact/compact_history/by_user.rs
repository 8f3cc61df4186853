//! Summaries the user asks for: `/compact` and the `compact` tool (whatever the
//! estimate), summarising up to a request (`--keep-from`, `s`), and the user's own
//! edit of a summary in review.

use super::*;

/// A compaction asked for outside the automatic pipeline: by the model (`compact`
/// tool) or the user (`/compact focus`), whatever the estimate.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// The request the session serves now: the `[Compacted]` message carries it.
    pub active_request: &'a str,
    /// What the summary is to dwell on.
    pub focus: Option<&'a str>,
    /// Who asked, as the receipt says it.
    pub by: &'a str,
    /// A summary prepared in the background: swapped in when it stands and no focus
    /// asks for a summary written to it.
    pub ready: Option<&'a ReadySummary>,
}

impl<'a> Asked<'a> {
    /// Asked by `by` for `active_request`, with no focus and nothing prepared.
    pub fn by(by: &'a str, active_request: &'a str) -> Self {
        Asked {
            active_request,
            focus: None,
            by,
            ready: None,
        }
    }
}

/// The history summarised as `asked`, whatever the estimate.
pub fn force_compact(
    messages: &mut Vec<Message>,
    asked: Asked<'_>,
    ctx: &Context<'_>,
    summariser: &mut dyn Summariser,
) -> StageEvent {
    let config = ctx.config;
    let Asked {
        active_request,
        focus,
        by: requested_by,
        ready,
    } = asked;
    let mut sizes = Sizes::of(messages, config.estimate);
    let started = std::time::Instant::now();
    let trigger = format!("asked for by {requested_by}");
    let focused = focus.is_some_and(|focus| !focus.trim().is_empty());
    let mut discarded = None;
    match ready {
        Some(_) if focused => discarded = Some("a focus was asked for, so the summary is written to it".to_string()),
        Some(ready) => {
            let reason = format!("{trigger}; a summary prepared in the background was ready");
            match try_swap(messages, &mut sizes, active_request, ctx, ready, reason) {
                Ok(mut event) => {
                    event.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    return event;
                }
                Err(why) => discarded = Some(why),
            }
        }
        None => {}
    }
    let end = messages.len();
    // What the summary could free at best: all it replaces, less its frame with no
    // summary at all. A summary that cannot free the floor would only cost a call
    // (and could make the context larger).
    let frame = sizes.measure(&Message::user_text(compacted_text(
        Some(active_request),
        "",
        "",
        // A name as the store makes them, so the frame measures as the real one will.
        &format!(
            "{}/{}",
            crate::store::TRANSCRIPTS_DIR,
            crate::store::unique_transcript_name(Stage::CompactHistory.name())
        ),
        end,
    )));
    let at_best = sizes.total().saturating_sub(sizes.total_with_empty_prefix(end) + frame);
    if at_best < config.summary_floor_chars {
        let mut skipped = StageEvent::start(Stage::CompactHistory, messages.len(), sizes.total(), trigger);
        skipped.errors.push(format!(
            "skipped: a summary of {} could free at most {} chars, under the {}-char floor (summary_floor_chars); nothing was changed",
            crate::compact::counted(end, "message", "messages"),
            at_best,
            config.summary_floor_chars
        ));
        return skipped;
    }
    let mut event = summarise_prefix(
        messages,
        &mut sizes,
        Summarise {
            stage: Stage::CompactHistory,
            end,
            active_request,
            focus,
            trigger,
            within: config.context_char_limit.chars,
        },
        ctx,
        summariser,
    );
    event.background_discarded = discarded.map(set_aside);
    event.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    event
}

/// A point to summarise up to that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeepFromError {
    /// The history has no such message.
    #[error("message {asked} is not in the history (it has {len} messages; keep from 2 to {len})")]
    OutOfRange {
        /// The message asked for (1-based).
        asked: usize,
        /// How many messages the history has.
        len: usize,
    },
    /// Keeping from there would part calls from their results.
    #[error(
        "keeping from message {asked} would split tool results from their calls; the nearest points that do not: {}",
        nearest.iter().map(ToString::to_string).collect::<Vec<_>>().join(" or ")
    )]
    SplitsAPair {
        /// The message asked for (1-based).
        asked: usize,
        /// The closest points that keep every call with its result.
        nearest: Vec<usize>,
    },
}

/// Whether the history may be cut before `messages[at]`: the kept part must not start
/// with results whose calls would be summarised away.
fn cut_keeps_pairs(messages: &[Message], at: usize) -> bool {
    messages.get(at).is_none_or(|message| !message.has_tool_result())
}

/// Summarise everything before message `keep_from` (1-based, as the session shows
/// messages) and keep it and everything after it verbatim, whatever the estimate: the
/// user chose where the summary ends. Refused, naming the nearest points that work,
/// where it would split a call from its result.
pub fn summarise_up_to(
    messages: &mut Vec<Message>,
    keep_from: usize,
    asked: Asked<'_>,
    ctx: &Context<'_>,
    summariser: &mut dyn Summariser,
) -> Result<StageEvent, KeepFromError> {
    let config = ctx.config;
    let len = messages.len();
    if keep_from < 2 || keep_from > len {
        return Err(KeepFromError::OutOfRange { asked: keep_from, len });
    }
    let at = keep_from - 1;
    if !cut_keeps_pairs(messages, at) {
        let before = (1..at).rev().find(|&point| cut_keeps_pairs(messages, point));
        let after = (at + 1..len).find(|&point| cut_keeps_pairs(messages, point));
        return Err(KeepFromError::SplitsAPair {
            asked: keep_from,
            nearest: before.into_iter().chain(after).map(|point| point + 1).collect(),
        });
    }
    let mut sizes = Sizes::of(messages, config.estimate);
    // The kept messages may alone be over the limit (the user chose them): the summary
    // then still gets the room the history has now, not none.
    let roomy = CompactConfig {
        context_char_limit: crate::compact::Limit::chars(config.context_char_limit.chars.max(sizes.total())),
        ..config.clone()
    };
    let within = roomy.context_char_limit.chars;
    let ctx = ctx.with_config(&roomy);
    let started = std::time::Instant::now();
    let mut event = summarise_prefix(
        messages,
        &mut sizes,
        Summarise {
            stage: Stage::CompactHistory,
            end: at,
            active_request: asked.active_request,
            focus: asked.focus,
            trigger: format!(
                "asked for by {}: summarise up to message {keep_from}, keep it and the {} after it",
                asked.by,
                len - keep_from
            ),
            within,
        },
        &ctx,
        summariser,
    );
    event.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(event)
}

/// Why an edited summary cannot replace the one in the history.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EditError {
    /// The history does not start with this stage's summary any more.
    #[error("the history does not start with the summary this stage wrote")]
    NotASummary,
    /// The edit left nothing.
    #[error("the summary is empty")]
    Empty,
    /// The server's signed compaction block cannot be changed.
    #[error("the server wrote this summary as its own signed block, which cannot be edited")]
    ServerSummary,
}

/// The summary `event` put in as the first message of `messages` replaced by
/// `edited` (what the user wrote in review), fitted to the limit as the model's was.
/// The event then holds the edit as its summary and keeps the model's text, its sizes
/// and retention are those of the edited message, and a cut is said. Nothing changes
/// on an error.
pub fn edit_summary(
    messages: &mut [Message],
    sizes: &mut Sizes,
    event: &mut StageEvent,
    edited: &str,
    ctx: &Context<'_>,
) -> Result<(), EditError> {
    if edited.trim().is_empty() {
        return Err(EditError::Empty);
    }
    if messages
        .first()
        .and_then(crate::compact::markers::server_compaction)
        .is_some()
    {
        return Err(EditError::ServerSummary);
    }
    let first = messages.first().ok_or(EditError::NotASummary)?;
    let text = first.text();
    let parts = compacted_parts(&text).ok_or(EditError::NotASummary)?;
    let budget = ctx
        .config
        .context_char_limit
        .chars
        .saturating_sub(sizes.total_with_empty_prefix(1));
    let (compacted, request_cut) = fitted_message(
        parts.request,
        edited,
        Framing {
            index: parts.index,
            path: parts.path,
            count: parts.count,
        },
        budget,
        sizes,
    );
    if let Some(note) = &mut event.summary_note {
        if note.model_summary.is_none() {
            note.model_summary = event.summary.clone();
        }
        note.summary_percent_of_limit = edited.chars().count() * 100 / ctx.config.context_char_limit.chars.max(1);
        let record = ctx.store.read_saved(&note.path).ok().and_then(|saved| {
            saved
                .text
                .lines()
                .map(|line| crate::json::from_str(line).ok())
                .collect::<Option<Vec<Message>>>()
        });
        if let Some(record) = record {
            event.loss = Some(loss::report(&record, &compacted.text(), &note.path));
        }
    }
    event.request_cut = request_cut;
    event.summary = Some(edited.to_string());
    let replacement = [compacted];
    messages[0] = replacement[0].clone();
    sizes.splice(0..1, &replacement);
    event.chars_after = sizes.total();
    Ok(())
}
