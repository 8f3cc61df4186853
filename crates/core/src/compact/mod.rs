//! The compaction pipeline: pure, synchronous and UI-free. It takes messages and
//! returns messages plus typed events; the only side effects are files written
//! through the [`Store`](crate::store::Store) before the history refers to them.
//!
//! Stages run cheapest and most recoverable first (see [`prepare()`]):
//! 1. [`tool_result_budget`] — persist the largest results of the newest tool batch
//! 2. [`snip_compact`] — archive the middle of a long history
//! 3. [`micro_compact`] — clear old seen tool results, then fit the rest
//! 4. [`compact_history`] — summarise everything into one message
//!
//! plus [`reactive_compact()`] for when the API refuses a prompt as too long.

pub mod archive;
pub mod background;
pub mod compact_history;
mod config;
mod durable;
pub mod estimate;
pub mod extractive;
pub mod index;
pub mod loss;
pub mod markers;
pub mod micro_compact;
pub mod pairing;
pub mod prepare;
pub mod preview;
pub mod reactive_compact;
pub mod receipt;
pub mod record;
pub mod render;
pub mod snip_compact;
mod stage_event;
pub mod summary_input;
pub mod tool_result_budget;
pub mod undo;
pub use config::{
    AUTO_LIMIT, BackgroundSwap, CompactConfig, DEFAULT_BACKGROUND_AT_PERCENT, DEFAULT_CONTEXT_CHAR_LIMIT,
    DEFAULT_INDEX_PERCENT, Limit, MIN_CONTEXT_CHAR_LIMIT, SessionFacts, SummariserChoice,
};
pub use stage_event::{
    Freed, ReceiptItem, RequestCut, SavedResult, SincePrevious, Stage, StageEvent, SummaryNote, Swapped, timed,
};

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::setting::InvalidSetting;
pub use archive::{Archive, MemoryArchive};

pub use compact_history::{Asked, SUMMARY_INSTRUCTIONS, force_compact};
pub use estimate::{EstimateMode, Sizes, estimate_chars};
pub use extractive::ExtractiveSummariser;
pub use prepare::{Prepared, newest_request, prepare, prepare_recoverable, prepare_sized};
pub use reactive_compact::{Aim, TooLong, reactive_compact};

/// `1 message`, `3 messages`: a count with its noun in the right number.
pub fn counted(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// `84123` → `84.1k`, `1234567` → `1.2M`.
pub fn short_count(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    } else if n >= 1_000 {
        format!("{:.1}k", n as f64 / 1_000.0)
    } else {
        n.to_string()
    }
}

/// What the summariser is asked to do.
#[derive(Clone, Debug)]
pub struct SummaryRequest<'a> {
    /// The system instructions: what to record and not to obey the history.
    pub instructions: String,
    /// The history rendered as text, capped at `summary_input_chars`.
    pub history_text: String,
    /// The messages themselves (the record: what earlier stages moved to disk back in
    /// place), for summarisers that work on structure.
    pub messages: &'a [Message],
    /// The messages as the history holds them now (what the model sees), for a
    /// summariser that asks the server to compact them.
    pub span: &'a [Message],
    /// The characters the summary may take in the history (a share of what the target
    /// leaves), for a summariser that sizes its reply; `None` when nothing says.
    pub room_chars: Option<usize>,
    /// Archive files the record could not take back, a line each.
    pub left_out: &'a [String],
    /// What `/compact focus` or the `compact` tool asked to keep in detail.
    pub focus: Option<&'a str>,
}

/// Why a summariser could not write a summary, in words for the receipt.
#[derive(Debug, thiserror::Error)]
#[error("summary failed: {0}")]
pub struct SummaryError(pub String);

/// A summary as it goes into the history: its text, and where the server wrote it, the
/// server's own compaction block, kept byte for byte first in the history.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The summary's text.
    pub text: String,
    /// The server's compaction block, when the server wrote the summary.
    pub server_block: Option<serde_json::Value>,
}

/// Produces the lossy summary for stage 4 and reactive compaction. The model call
/// lives in the provider; the pipeline only sees this trait.
pub trait Summariser {
    /// A factual summary of the history `request` holds.
    fn summarise(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError>;

    /// The summary a stage puts into the history: by default the text of
    /// [`Summariser::summarise`]; a summariser that asks the server to compact gives
    /// the server's block with it.
    fn summarise_for_history(&mut self, request: &SummaryRequest<'_>) -> Result<Summary, SummaryError> {
        self.summarise(request).map(|text| Summary {
            text,
            server_block: None,
        })
    }
}

/// The facts of a run outside any session.
static NO_FACTS: SessionFacts = SessionFacts::NONE;

/// Shared by every stage: the thresholds, where files go, and what the session says.
pub struct Context<'a> {
    /// The thresholds.
    pub config: &'a CompactConfig,
    /// Where removed text is kept.
    pub store: &'a dyn Archive,
    /// The pins, the instruction files kept verbatim, how inputs are named.
    pub facts: &'a SessionFacts,
}

impl<'a> Context<'a> {
    /// A run outside any session ([`SessionFacts::NONE`]).
    pub fn new(config: &'a CompactConfig, store: &'a dyn Archive) -> Self {
        Context {
            config,
            store,
            facts: &NO_FACTS,
        }
    }

    /// The same run with other thresholds (a stage aiming lower, a summary given
    /// more room).
    pub fn with_config<'b>(&'b self, config: &'b CompactConfig) -> Context<'b> {
        Context {
            config,
            store: self.store,
            facts: self.facts,
        }
    }
}

/// The one way the stages' tests run a stage: with the default thresholds and `store`,
/// on the size table `prepare` would keep, which must still be the history's after.
#[cfg(test)]
pub(crate) fn run_stage<H: AsMut<[Message]> + ?Sized>(
    history: &mut H,
    store: &crate::store::Store,
    stage: impl FnOnce(&mut H, &mut Sizes, &Context<'_>) -> Option<StageEvent>,
) -> Option<StageEvent> {
    let config = CompactConfig::default();
    let ctx = Context::new(&config, store);
    let mut sizes = Sizes::of(history.as_mut(), config.estimate);
    let event = stage(history, &mut sizes, &ctx);
    assert_eq!(sizes.total(), estimate_chars(history.as_mut()));
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Between turns a compaction is not "in this turn": `/compact` right after a turn
    /// that compacted says the turn before.
    #[test]
    fn the_time_since_the_last_compaction_says_between_turns() {
        let since = |turns, model_calls, between_turns| SincePrevious {
            turns,
            model_calls,
            secs: 5,
            estimate_after_previous: 1_000,
            between_turns,
        };
        assert_eq!(
            since(0, 3, false).describe(),
            "the last one was in this turn, 3 model calls ago"
        );
        assert_eq!(
            since(0, 3, true).describe(),
            "the last one was in the turn before, 3 model calls ago"
        );
        assert_eq!(
            since(0, 0, true).describe(),
            "the last one was just before, with no model call since"
        );
        assert_eq!(since(2, 9, true).describe(), "the last one was 2 turns ago");
    }

    /// A summary that freed under a fifth of the history says so; one that freed more,
    /// or a stage that summarises nothing, says what it freed plainly.
    #[test]
    fn a_summary_that_freed_under_a_fifth_says_so() {
        let event = |stage: Stage, before: usize, after: usize| {
            let mut event = StageEvent::start(stage, 10, before, String::new());
            event.replaced = 4;
            event.stop(3, after);
            event.freed = Some(Box::new(Freed {
                chars: i64::try_from(before - after).unwrap(),
                tokens: 0,
            }));
            event.summary_line()
        };
        let poor = event(Stage::CompactHistory, 10_200, 8_600);
        assert!(poor.contains("freed only 1.6k, under a fifth of the history"), "{poor}");
        let good = event(Stage::CompactHistory, 10_200, 4_000);
        assert!(good.contains("freed 6.2k") && !good.contains("under a fifth"), "{good}");
        let micro = event(Stage::MicroCompact, 10_200, 9_000);
        assert!(micro.contains("freed 1.2k") && !micro.contains("fifth"), "{micro}");
    }
}
