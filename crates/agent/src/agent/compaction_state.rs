//! What the agent remembers of its compactions: what the session tells the stages (the
//! pins, the instruction files kept verbatim), where the session stood at the newest
//! one that changed the history (so the next says how soon the context came back),
//! and the loop guard that stops summaries which do not hold.

use crate::compact::SincePrevious;

#[derive(Default)]
pub(super) struct CompactionState {
    /// What the session tells the stages (not settings): the results the user pinned,
    /// the instruction files kept verbatim, how receipts name a call's input. Every
    /// run of the pipeline borrows it.
    pub(super) facts: crate::compact::SessionFacts,
    /// Where the session stood at the newest compaction that changed the history.
    pub(super) last: Option<LastCompaction>,
    /// Summaries in a row that did not hold, and whether compacting stopped.
    pub(super) guard: LoopGuard,
}

/// Where the session stood at a compaction, for the next one to say how soon the
/// context came back.
#[derive(Clone, Copy, Debug)]
pub(super) struct LastCompaction {
    pub(super) turns: usize,
    pub(super) model_calls: usize,
    pub(super) unix: u64,
    pub(super) estimate_after: usize,
}

impl CompactionState {
    /// How soon after the newest compaction `now` is, with the session at `turns`
    /// requests and `model_calls` calls; `None` before the first.
    pub(super) fn since(&self, turns: usize, model_calls: usize, now: u64, in_turn: bool) -> Option<SincePrevious> {
        self.last.map(|last| SincePrevious {
            turns: turns.saturating_sub(last.turns),
            model_calls: model_calls.saturating_sub(last.model_calls),
            secs: now.saturating_sub(last.unix),
            estimate_after_previous: last.estimate_after,
            between_turns: !in_turn,
        })
    }
}

/// The loop guard's count: summaries in a row that did not hold, the model calls made
/// when the turn's newest summary ran, and why it stopped compacting, once it has.
#[derive(Debug, Default)]
pub(super) struct LoopGuard {
    strikes: usize,
    calls_at_last_summary: Option<usize>,
    stopped: Option<String>,
}

impl LoopGuard {
    /// A new request: the user is there to read why it stopped, so it tries again.
    pub(super) fn new_turn(&mut self) {
        self.calls_at_last_summary = None;
        self.stopped = None;
    }

    /// Why it stopped compacting, once it has.
    pub(super) fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// A summary ran with `model_calls` made so far; `over` when it left the history
    /// over the limit. It did not hold when it left the history over, or when the
    /// context refilled since the turn's previous summary (a model call came between;
    /// rounds of one recovery, with no call between, are one effort). Whether this
    /// makes `most` in a row (0: never) and the guard is to stop now.
    pub(super) fn summary_ran(&mut self, model_calls: usize, over: bool, most: usize) -> bool {
        let refilled = self.calls_at_last_summary.is_some_and(|calls| model_calls > calls);
        self.calls_at_last_summary = Some(model_calls);
        if !over && !refilled {
            self.strikes = 0;
            return false;
        }
        self.strikes += 1;
        most > 0 && self.strikes >= most && self.stopped.is_none()
    }

    /// Stop compacting on its own, for the reason `why`.
    pub(super) fn stop(&mut self, why: String) {
        self.stopped = Some(why);
    }
}
