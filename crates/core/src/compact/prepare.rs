//! `prepare`: runs before every model call, cheapest and most recoverable stage first.

use super::compact_history::compact_history;
use super::estimate::Sizes;
use super::markers::{MessageKind, classify};
use super::micro_compact::{fit_tool_results, micro_compact};
use super::snip_compact::snip_compact;
use super::tool_result_budget::tool_result_budget;
use super::{Context, StageEvent, Summariser, timed};
use crate::message::Message;

/// The history after `prepare`, its size table, and what each stage did.
#[derive(Debug)]
pub struct Prepared {
    /// The history to send.
    pub messages: Vec<Message>,
    /// The size table of `messages`, kept in step by every stage.
    pub sizes: Sizes,
    /// What each stage that fired did, in order.
    pub events: Vec<StageEvent>,
}

impl Prepared {
    /// The estimate of `messages` after every stage.
    pub fn estimate(&self) -> usize {
        self.sizes.total()
    }
}

/// Bring `messages` within the configured bounds. `active_request` is the newest user
/// prompt (tool results travel as user messages too, so it is passed explicitly).
pub fn prepare(
    messages: Vec<Message>,
    active_request: &str,
    ctx: &Context<'_>,
    summariser: &mut dyn Summariser,
) -> Prepared {
    let sizes = Sizes::of(&messages, ctx.config.estimate);
    prepare_sized(messages, sizes, active_request, ctx, summariser)
}

/// [`prepare`] for a caller that keeps the size table of its history (the agent), so
/// that nothing is serialised again just to measure it.
pub fn prepare_sized(
    messages: Vec<Message>,
    sizes: Sizes,
    active_request: &str,
    ctx: &Context<'_>,
    summariser: &mut dyn Summariser,
) -> Prepared {
    let mut prepared = prepare_recoverable(messages, sizes, ctx);
    prepared.events.extend(timed(|| {
        compact_history(
            &mut prepared.messages,
            &mut prepared.sizes,
            active_request,
            ctx,
            summariser,
            None,
        )
    }));
    prepared
}

/// Stages 1 to 3 of [`prepare`]: everything recoverable, nothing summarised. A caller
/// that asks before the lossy stage (`compaction.review_summaries`) runs stage 4 itself.
pub fn prepare_recoverable(mut messages: Vec<Message>, mut sizes: Sizes, ctx: &Context<'_>) -> Prepared {
    let mut events = Vec::new();
    events.extend(timed(|| tool_result_budget(&mut messages, &mut sizes, ctx)));
    events.extend(timed(|| snip_compact(&mut messages, &mut sizes, ctx)));
    events.extend(timed(|| micro_compact(&mut messages, &mut sizes, ctx)));
    events.extend(timed(|| fit_tool_results(&mut messages, &mut sizes, ctx)));
    Prepared {
        messages,
        sizes,
        events,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::{archive_marker, compacted_text};

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
            "",
            "p",
            4,
        ))];
        assert_eq!(newest_request(&compacted), "the real\nrequest");
        assert_eq!(newest_request(&[]), "");
    }
}
