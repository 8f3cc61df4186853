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
pub mod summary_input;
pub mod tool_result_budget;
pub mod undo;

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::setting::InvalidSetting;
pub use archive::{Archive, MemoryArchive};

pub use compact_history::{Asked, SUMMARY_INSTRUCTIONS, force_compact};
pub use estimate::{EstimateMode, Sizes, estimate_chars};
pub use extractive::ExtractiveSummariser;
pub use prepare::{Prepared, newest_request, prepare, prepare_recoverable, prepare_sized};
pub use reactive_compact::{Aim, TooLong, reactive_compact};

/// Every threshold of the pipeline, in characters of the serialised history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactConfig {
    /// Stage 1 fires while the newest tool batch holds more than this.
    pub tool_result_budget_chars: usize,
    /// Stage 1 persists only results larger than this.
    pub persist_result_over_chars: usize,
    /// Preview kept in a `<persisted-output>` block by stage 1.
    pub persisted_preview_chars: usize,
    /// Stage 2 fires above this many messages.
    pub snip_max_messages: usize,
    /// Messages kept from the start of the history by stage 2.
    pub snip_keep_head: usize,
    /// CONTEXT_CHAR_LIMIT: stage 3 fires above it, stage 4 guarantees it.
    pub context_char_limit: usize,
    /// Stage 3 clears old results until the estimate is at or under this share of the limit.
    pub micro_target_percent: usize,
    /// Newest seen tool results stage 3 leaves whole.
    pub micro_keep_recent: usize,
    /// Stage 3 leaves results of at most this many characters alone.
    pub micro_min_chars: usize,
    /// Preview kept by fit_tool_results.
    pub fit_preview_chars: usize,
    /// Newest messages reactive compaction keeps verbatim.
    pub reactive_keep_messages: usize,
    /// Longest history text handed to the summariser, room given by value.
    pub summary_input_chars: usize,
    /// Most of the limit, in percent, the index of a `[Compacted]` message may take (0: no index).
    pub index_percent: usize,
    /// Summaries in a row that did not hold (the history still over the limit after
    /// one, or the context filled again within the turn) before scratchpad stops
    /// compacting on its own and says why (0: never stops).
    pub loop_guard: usize,
    /// A summary asked for (`/compact`, the `compact` tool) that could free at most
    /// this many characters is skipped and said, instead of run.
    pub summary_floor_chars: usize,
    /// How the estimate counts characters: the seed's `json.dumps` layout or compact JSON.
    pub estimate: EstimateMode,
    /// Ask before an automatic summary (stage 4), showing what it would summarise.
    pub confirm_lossy: bool,
    /// Who writes a summary: the model, the server's own compaction, or no one (the
    /// extractive summary).
    pub summariser: SummariserChoice,
    /// Summarise the older part of the history in the background once the estimate
    /// passes this share of the limit, ready to swap in at the limit (0: never).
    pub background_at_percent: usize,
    /// When a turn ends past `background_at_percent` and its summary is ready, swap it
    /// in then (the user is idle) rather than at the limit.
    pub compact_when_idle: bool,
    /// Tool results the user pinned in `/context`: stage 3 leaves them whole. Session
    /// state (journaled), not a setting.
    #[serde(skip)]
    pub pinned: std::collections::BTreeSet<String>,
    /// How receipts name a call's input, handed in by whoever owns the tools.
    #[serde(skip)]
    pub describe_input: receipt::InputDescriber,
    /// The project instruction files the system prompt carries, by path (session
    /// state, not a setting): the summariser is told they stay, and every summarising
    /// stage's receipt lists them as kept verbatim.
    #[serde(skip)]
    pub verbatim_instructions: Vec<String>,
}

impl Default for CompactConfig {
    fn default() -> Self {
        CompactConfig {
            tool_result_budget_chars: 200_000,
            persist_result_over_chars: 30_000,
            persisted_preview_chars: 2_000,
            snip_max_messages: 50,
            snip_keep_head: 3,
            context_char_limit: 50_000,
            micro_target_percent: 80,
            micro_keep_recent: 3,
            micro_min_chars: 120,
            fit_preview_chars: 1_000,
            reactive_keep_messages: 5,
            summary_input_chars: 80_000,
            index_percent: DEFAULT_INDEX_PERCENT,
            loop_guard: 3,
            summary_floor_chars: 500,
            estimate: EstimateMode::Seed,
            confirm_lossy: false,
            summariser: SummariserChoice::Model,
            background_at_percent: DEFAULT_BACKGROUND_AT_PERCENT,
            compact_when_idle: false,
            pinned: std::collections::BTreeSet::new(),
            describe_input: receipt::InputDescriber::default(),
            verbatim_instructions: Vec::new(),
        }
    }
}

/// `compaction.summariser`: who writes the summaries of stage 4, reactive compaction,
/// `/compact` and the `compact` tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SummariserChoice {
    /// The model, asked with the summary instructions.
    #[default]
    Model,
    /// The server compacts the history itself (Anthropic's compaction on demand); its
    /// block goes first in the history. Where it cannot, the model.
    Server,
    /// No model: the requests, files and commands, extracted (what `--summary-stub`
    /// uses).
    Extractive,
}

/// Where a background summary starts by default: a turn of an agent session adds a
/// tenth to a fifth of the limit (a few tool rounds), so at 70% two or three turns are
/// left for a summary call that takes seconds to minutes, while little of what it
/// covers is still likely to change (the newest messages stay out of it).
pub const DEFAULT_BACKGROUND_AT_PERCENT: usize = 70;

/// The index's share of the limit by default: at 50,000 chars, 5,000, about sixty
/// entries, while the summary and the kept messages keep nine tenths.
pub const DEFAULT_INDEX_PERCENT: usize = 10;

/// The smallest limit the pipeline accepts: the compacted message's own frame and a
/// transcript path must fit under it.
pub const MIN_CONTEXT_CHAR_LIMIT: usize = 2_000;

impl CompactConfig {
    /// Check the relations between fields; the message names the offending key.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.context_char_limit < MIN_CONTEXT_CHAR_LIMIT {
            return Err(InvalidSetting::new(
                "context_char_limit",
                format!(
                    "context_char_limit must be at least {MIN_CONTEXT_CHAR_LIMIT}, got {}",
                    self.context_char_limit
                ),
            ));
        }
        if self.background_at_percent > 100 {
            return Err(InvalidSetting::new(
                "background_at_percent",
                format!(
                    "background_at_percent must be between 0 (off) and 100, got {}",
                    self.background_at_percent
                ),
            ));
        }
        if !(1..=100).contains(&self.micro_target_percent) {
            return Err(InvalidSetting::new(
                "micro_target_percent",
                format!(
                    "micro_target_percent must be between 1 and 100, got {}",
                    self.micro_target_percent
                ),
            ));
        }
        if self.index_percent > 50 {
            return Err(InvalidSetting::new(
                "index_percent",
                format!(
                    "index_percent must be between 0 (no index) and 50, got {}",
                    self.index_percent
                ),
            ));
        }
        if self.snip_max_messages < self.snip_keep_head.saturating_add(2) {
            return Err(InvalidSetting::new(
                "snip_max_messages",
                format!(
                    "snip_max_messages ({}) must exceed snip_keep_head ({}) by at least 2",
                    self.snip_max_messages, self.snip_keep_head
                ),
            ));
        }
        if self.snip_keep_head == 0 {
            return Err(InvalidSetting::new(
                "snip_keep_head",
                "snip_keep_head must be at least 1 (the first user message)",
            ));
        }
        if self.persisted_preview_chars >= self.persist_result_over_chars {
            return Err(InvalidSetting::new(
                "persisted_preview_chars",
                format!(
                    "persisted_preview_chars ({}) must be smaller than persist_result_over_chars ({})",
                    self.persisted_preview_chars, self.persist_result_over_chars
                ),
            ));
        }
        if self.summary_input_chars < 1_000 {
            return Err(InvalidSetting::new(
                "summary_input_chars",
                format!(
                    "summary_input_chars must be at least 1000, got {}",
                    self.summary_input_chars
                ),
            ));
        }
        Ok(())
    }

    /// Most characters the index of a `[Compacted]` message may take.
    pub fn index_room(&self) -> usize {
        self.context_char_limit / 100 * self.index_percent + self.context_char_limit % 100 * self.index_percent / 100
    }

    pub fn micro_target_chars(&self) -> usize {
        // Exact for every limit: no product that could overflow.
        self.context_char_limit / 100 * self.micro_target_percent
            + self.context_char_limit % 100 * self.micro_target_percent / 100
    }

    /// Messages stage 2 keeps from the end: the rest of the budget after the head
    /// and the archive marker.
    pub fn snip_keep_tail(&self) -> usize {
        self.snip_max_messages - self.snip_keep_head - 1
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumIter)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Stage {
    ToolResultBudget,
    SnipCompact,
    MicroCompact,
    FitToolResults,
    CompactHistory,
    ReactiveCompact,
}

impl Stage {
    /// As the lesson names it (`snip_compact`), as serialised.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Every stage, in pipeline order.
    pub fn all() -> impl Iterator<Item = Stage> {
        <Stage as strum::IntoEnumIterator>::iter()
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the full text of a replaced tool result is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedResult {
    pub tool_use_id: String,
    pub path: String,
}

/// What one stage did, for markers and links in a UI and for the session journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageEvent {
    /// The id of its journal record, given when it is journaled (an undo names it);
    /// empty before that, and in journals written before stages had ids.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    pub stage: Stage,
    pub messages_before: usize,
    pub messages_after: usize,
    pub chars_before: usize,
    pub chars_after: usize,
    /// Files this stage wrote, relative to the workspace (the marker links these, and
    /// the browser credits them to this stage).
    pub paths: Vec<String>,
    /// The whole history's transcript, for the stages that archive one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<String>,
    /// Every tool result this stage replaced, with where its full text is now (a file
    /// it wrote or one saved earlier).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub saved: Vec<SavedResult>,
    /// The digest ([`crate::digest`]) of every file the stage wrote or relies on (its
    /// transcript, each saved result), by path: undo and `r` put back only a file that
    /// still has it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub digests: std::collections::BTreeMap<String, String>,
    /// How many blocks (or, for history stages, messages) were replaced.
    pub replaced: usize,
    /// Failures that left a block or the history unchanged (full disk, summariser error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Why the stage ran: which threshold, or who asked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trigger: String,
    /// How long the stage took, summary included.
    #[serde(default)]
    pub took_ms: u64,
    /// The receipt: every message or tool result that left the context or shrank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<ReceiptItem>,
    /// The summary that replaced the history, for the stages that write one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// What the summarised messages mention that the summary does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<loss::LossReport>,
    /// Cached prompt tokens the next call had to write again (known after that call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_rewritten: Option<u64>,
    /// A summarising stage had to cut the current request to fit its `[Compacted]`
    /// message: the characters kept of the whole (which is in the transcript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_cut: Option<RequestCut>,
    /// What a summarising stage left verbatim, a line each: the instruction files in
    /// the system prompt, the current request, pinned results it kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_verbatim: Vec<String>,
    /// Stage 4 swapped in a summary prepared in the background: when and at what cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swapped: Option<Box<Swapped>>,
    /// A background summary stage 4 could not use, and why (it summarised instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_discarded: Option<String>,
    /// What the stage freed: its estimate before less after (negative when it grew).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freed: Option<Box<Freed>>,
    /// How soon the context came back: since the previous compaction that changed the
    /// history (none for the session's first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_previous: Option<Box<SincePrevious>>,
    /// The user did this by hand (a result dropped from /context), not the pipeline:
    /// the marker says so and is never grouped with the pipeline's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_user: bool,
    /// What a summarising stage wrote its summary from, and whether you edited it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_note: Option<Box<SummaryNote>>,
}

/// What a compaction freed, in characters of the estimate and in tokens at the
/// session's measured characters per token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freed {
    pub chars: i64,
    pub tokens: i64,
}

/// The time between a compaction and the one before it, in what the session did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SincePrevious {
    pub turns: usize,
    pub model_calls: usize,
    pub secs: u64,
    /// The estimate the previous compaction left, which this one started from.
    pub estimate_after_previous: usize,
    /// This one ran between turns (`/compact`, `s`), not in one.
    #[serde(default)]
    pub between_turns: bool,
}

impl SincePrevious {
    /// `the last one was 4 turns ago`, `… in this turn, 3 model calls ago`, or between
    /// turns `… in the turn before, 3 model calls ago`.
    pub fn describe(&self) -> String {
        let calls = counted(self.model_calls, "model call", "model calls");
        match (self.turns, self.between_turns) {
            (0, false) => format!("the last one was in this turn, {calls} ago"),
            (0, true) if self.model_calls == 0 => "the last one was just before, with no model call since".into(),
            (0, true) => format!("the last one was in the turn before, {calls} ago"),
            (turns, _) => format!("the last one was {} ago", counted(turns, "turn", "turns")),
        }
    }
}

/// The record a summary was written from, what did not make it in, and the model's
/// own text when you edited the summary before it went in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryNote {
    /// The record, one message a line: what the `[Compacted]` message and its index
    /// point into (the transcript itself when no earlier stage had moved anything out).
    pub path: String,
    /// Archive files the record could not take back (changed, cut, not ours), a line
    /// each: the summariser read what pointed at them instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// Entries the index had to leave out to fit its share of the limit.
    #[serde(default)]
    pub index_cut: usize,
    /// The index the `[Compacted]` message carries after the summary, as it went in
    /// (empty: none fitted).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub index: String,
    /// The summary of the earlier `[Compacted]` message this one folded in, in
    /// characters, to see whether summaries grow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_summary_chars: Option<usize>,
    /// The summary's share of the limit, in percent.
    #[serde(default)]
    pub summary_percent_of_limit: usize,
    /// The summary as the model wrote it, when you edited it in review (`summary`
    /// holds what went in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_summary: Option<String>,
    /// The server wrote the summary (its compaction block, first in the history).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_server: bool,
}

/// How a background summary came to stand in for stage 4's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Swapped {
    /// The estimate's share of the limit when the summary started.
    pub prepared_at_percent: usize,
    /// Seconds between its start and the swap.
    pub age_secs: u64,
    /// How long the model took to write it.
    pub summary_ms: u64,
    /// How long the turn waited for it at the limit (0 when it was ready).
    pub waited_ms: u64,
    /// Results among the summarised messages that a recoverable stage saved to disk
    /// since (the summary read their text, which is kept there).
    pub results_rewritten: usize,
    /// Summarised messages snip_compact moved to a transcript since.
    #[serde(default)]
    pub archived_since: usize,
    /// Prompt tokens the summary request read from the provider's cache and wrote to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_written: Option<u64>,
}

/// How much of the current request a `[Compacted]` message kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCut {
    pub kept: usize,
    pub whole: usize,
}

/// One message or tool result that a stage took out of the context or shrank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceiptItem {
    /// 1-based position of its message in the history before the stage.
    pub position: usize,
    pub role: crate::message::Role,
    /// What it was, in one line: `read_file src/a.rs (result)`, `user: fix the parser`.
    pub what: String,
    pub chars_before: usize,
    pub chars_after: usize,
    /// Where its full text is now (a saved output or the transcript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved: Option<String>,
    /// The call a shrunk tool result answers, to find it again for undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// A shrunk result's text before the stage when that was not the whole output (a
    /// preview block an earlier stage left): undo puts exactly this back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub was: Option<String>,
}

impl StageEvent {
    /// A stage starting on a history of `messages` messages and `chars` characters: it
    /// has changed nothing yet. Tests build the events a UI shows from this, naming only
    /// the fields they care about.
    pub fn start(stage: Stage, messages: usize, chars: usize, trigger: String) -> Self {
        StageEvent {
            id: String::new(),
            stage,
            messages_before: messages,
            messages_after: messages,
            chars_before: chars,
            chars_after: chars,
            paths: Vec::new(),
            archived: None,
            saved: Vec::new(),
            digests: std::collections::BTreeMap::new(),
            replaced: 0,
            errors: Vec::new(),
            trigger,
            took_ms: 0,
            items: Vec::new(),
            summary: None,
            loss: None,
            cache_rewritten: None,
            request_cut: None,
            kept_verbatim: Vec::new(),
            swapped: None,
            background_discarded: None,
            summary_note: None,
            freed: None,
            since_previous: None,
            by_user: false,
        }
    }

    /// The stage is over: its sizes after.
    fn stop(&mut self, messages: usize, chars: usize) {
        self.messages_after = messages;
        self.chars_after = chars;
    }

    fn finish(mut self, messages: usize, chars: usize) -> Option<Self> {
        self.stop(messages, chars);
        (self.replaced > 0 || !self.errors.is_empty()).then_some(self)
    }

    /// The tool result at `position` (0-based message index) went from `before` to
    /// `after` characters; its full text is at `saved.path`.
    fn saved(&mut self, receipt: receipt::Shrunk, tool_use_id: &str, saved: markers::Saved) {
        let path = saved.kept.path;
        if saved.written && !self.paths.contains(&path) {
            self.paths.push(path.clone());
        }
        self.digests.insert(path.clone(), saved.kept.digest);
        self.items.push(receipt.item(tool_use_id, Some(path.clone())));
        self.saved.push(SavedResult {
            tool_use_id: tool_use_id.to_string(),
            path,
        });
    }

    /// The stage wrote the whole history to `transcript`.
    fn archived(&mut self, transcript: crate::store::Kept) {
        self.paths.push(transcript.path.clone());
        self.digests.insert(transcript.path.clone(), transcript.digest);
        self.archived = Some(transcript.path);
    }

    /// The stage changed the history, so undo can put it back: the stages that can be
    /// undone, newest first, are exactly these.
    pub fn can_be_undone(&self) -> bool {
        self.replaced > 0
    }

    /// The stage changed nothing because something failed (a full disk, the summariser).
    pub fn failed(&self) -> bool {
        self.replaced == 0 && !self.errors.is_empty()
    }

    /// One line for logs and the headless output, e.g.
    /// `snip_compact · 37 messages archived · 84.1k → 41.9k chars`, or
    /// `tool_result_budget failed · cannot write …` when it changed nothing.
    pub fn summary_line(&self) -> String {
        if self.failed() {
            return format!("{} failed · {}", self.stage, self.errors.join("; "));
        }
        let n = self.replaced;
        let what = match self.stage {
            Stage::ToolResultBudget => format!("{} persisted", counted(n, "tool result", "tool results")),
            Stage::SnipCompact => format!("{} archived", counted(n, "message", "messages")),
            Stage::MicroCompact if self.by_user => {
                format!(
                    "{} dropped by you from /context",
                    counted(n, "tool result", "tool results")
                )
            }
            Stage::MicroCompact => format!("{} cleared", counted(n, "old tool result", "old tool results")),
            Stage::FitToolResults => format!("{} shortened", counted(n, "tool result", "tool results")),
            Stage::CompactHistory | Stage::ReactiveCompact => {
                format!("{} summarised", counted(n, "message", "messages"))
            }
        };
        let mut line = format!(
            "{} · {} · {} → {} chars",
            self.stage,
            what,
            short_count(self.chars_before),
            short_count(self.chars_after)
        );
        if let Some(freed) = &self.freed {
            let summarised = matches!(self.stage, Stage::CompactHistory | Stage::ReactiveCompact);
            let amount = if freed.chars < 0 {
                format!("grew by {}", short_count(freed.chars.unsigned_abs() as usize))
            } else if summarised && freed.chars.unsigned_abs() as usize * 5 < self.chars_before {
                // A summary is worth its loss only where it frees room: saying so keeps
                // a costly one that did not from passing unnoticed.
                format!(
                    "freed only {}, under a fifth of the history",
                    short_count(freed.chars.unsigned_abs() as usize)
                )
            } else {
                format!("freed {}", short_count(freed.chars.unsigned_abs() as usize))
            };
            match &self.since_previous {
                Some(since) => line.push_str(&format!(" · {amount}; {}", since.describe())),
                None => line.push_str(&format!(" · {amount}")),
            }
        }
        if let Some(cut) = self.request_cut {
            line.push_str(&format!(
                " · your request was cut to {} of {} chars (whole in the transcript)",
                short_count(cut.kept),
                short_count(cut.whole)
            ));
        }
        if let Some(swapped) = &self.swapped {
            line.push_str(" · ");
            line.push_str(&swapped.describe());
        }
        if let Some(why) = &self.background_discarded {
            line.push_str(" · ");
            line.push_str(why);
        }
        for error in &self.errors {
            line.push_str(" · error: ");
            line.push_str(error);
        }
        line
    }
}

impl StageEvent {
    /// [`StageEvent::summary_line`], and for a summary what it keeps: the line the
    /// headless run prints (the app shows the retention on a line of its own).
    pub fn report_line(&self) -> String {
        let mut line = self.summary_line();
        if let Some(retention) = self.loss.as_ref().and_then(|loss| loss.retention_line()) {
            line.push_str(" · ");
            line.push_str(&retention);
        }
        line
    }
}

impl Swapped {
    /// `swapped in a summary prepared at 71% (2 min ago), wait 0.0 s`, and what else
    /// the receipt should say of it.
    pub fn describe(&self) -> String {
        let age = match self.age_secs {
            secs if secs < 60 => format!("{secs} s ago"),
            secs if secs < 3_600 => format!("{} min ago", secs / 60),
            secs => format!("{} h ago", secs / 3_600),
        };
        let mut text = format!(
            "swapped in a summary prepared at {}% ({age}), wait {:.1} s",
            self.prepared_at_percent,
            self.waited_ms as f64 / 1000.0
        );
        if self.results_rewritten > 0 {
            text.push_str(&format!(
                " ({} it read saved to disk since: still valid, the text it read is there)",
                counted(self.results_rewritten, "tool result", "tool results")
            ));
        }
        if self.archived_since > 0 {
            text.push_str(&format!(
                " ({} it read archived by snip_compact since: still valid, they are in the transcript)",
                counted(self.archived_since, "message", "messages")
            ));
        }
        if let Some(read) = self.cache_read {
            text.push_str(&format!(
                " · its request read {} cached tokens, wrote {}",
                short_count(read as usize),
                short_count(self.cache_written.unwrap_or(0) as usize)
            ));
        }
        text
    }
}

/// Run a stage, noting on each event it returns how long it took.
pub fn timed<E: IntoIterator<Item = StageEvent>>(run: impl FnOnce() -> E) -> Vec<StageEvent> {
    let started = std::time::Instant::now();
    let mut events: Vec<StageEvent> = run().into_iter().collect();
    let took = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    for event in &mut events {
        event.took_ms = took;
    }
    events
}

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

#[derive(Debug, thiserror::Error)]
#[error("summary failed: {0}")]
pub struct SummaryError(pub String);

/// A summary as it goes into the history: its text, and where the server wrote it, the
/// server's own compaction block, kept byte for byte first in the history.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub text: String,
    pub server_block: Option<serde_json::Value>,
}

/// Produces the lossy summary for stage 4 and reactive compaction. The model call
/// lives in the provider; the pipeline only sees this trait.
pub trait Summariser {
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

/// Shared by every stage: the thresholds and where files go.
pub struct Context<'a> {
    pub config: &'a CompactConfig,
    pub store: &'a dyn Archive,
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
