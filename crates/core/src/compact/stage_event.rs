//! What a stage did, as the chat, `/tree`, the journal and the receipts show it: the
//! stage, what it freed and saved, how long since the one before, and what a summary
//! left in place.

use super::*;

/// A stage of the pipeline, cheapest and most recoverable first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumIter)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Stage {
    /// Stage 1: a batch of tool results over budget, the largest saved to disk.
    ToolResultBudget,
    /// Stage 2: old messages archived to a transcript.
    SnipCompact,
    /// Stage 3: seen tool results cleared to a reference.
    MicroCompact,
    /// Stage 3's second half: the largest results shortened to a preview.
    FitToolResults,
    /// Stage 4: the history summarised.
    CompactHistory,
    /// A summary after the server refused a prompt as too long.
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
    /// The call the result answers.
    pub tool_use_id: String,
    /// Where its full text was saved, relative to the workspace.
    pub path: String,
}

/// What one stage did, for markers and links in a UI and for the session journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageEvent {
    /// The id of its journal record, given when it is journaled (an undo names it);
    /// empty before that, and in journals written before stages had ids.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Which stage.
    pub stage: Stage,
    /// Messages in the history before it ran.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
    /// The estimate before it ran, in characters.
    pub chars_before: usize,
    /// The estimate after.
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
    /// Characters of the estimate.
    pub chars: i64,
    /// Tokens, at the session's characters per token.
    pub tokens: i64,
}

/// The time between a compaction and the one before it, in what the session did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SincePrevious {
    /// Requests sent in between.
    pub turns: usize,
    /// Model calls made in between.
    pub model_calls: usize,
    /// Seconds in between.
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
    /// Prompt tokens the summary request wrote to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_written: Option<u64>,
}

/// How much of the current request a `[Compacted]` message kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCut {
    /// Characters of the request the message kept.
    pub kept: usize,
    /// Characters of the whole request.
    pub whole: usize,
}

/// One message or tool result that a stage took out of the context or shrank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceiptItem {
    /// 1-based position of its message in the history before the stage.
    pub position: usize,
    /// Its message's role.
    pub role: crate::message::Role,
    /// What it was, in one line: `read_file src/a.rs (result)`, `user: fix the parser`.
    pub what: String,
    /// Its characters before.
    pub chars_before: usize,
    /// Its characters after.
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
    pub(super) fn stop(&mut self, messages: usize, chars: usize) {
        self.messages_after = messages;
        self.chars_after = chars;
    }

    pub(super) fn finish(mut self, messages: usize, chars: usize) -> Option<Self> {
        self.stop(messages, chars);
        (self.replaced > 0 || !self.errors.is_empty()).then_some(self)
    }

    /// The tool result at `position` (0-based message index) went from `before` to
    /// `after` characters; its full text is at `saved.path`.
    pub(super) fn saved(&mut self, receipt: receipt::Shrunk, tool_use_id: &str, saved: markers::Saved) {
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
    pub(super) fn archived(&mut self, transcript: crate::store::Kept) {
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
