//! The one review step every summary passes (`compaction.review_summaries`), whatever
//! wrote it (stage 4, the reactive retry, the model's `compact` tool, `/compact`, a
//! summary up to a request): what leaves, the summary and its index, then apply (as
//! written or edited) or not now. Esc or Ctrl+C cancels the turn.

use super::*;
use crate::protocol::ReviewAnswer;

/// What became of a summary in review.
enum Reviewed {
    Apply,
    Reject,
    /// The turn was cancelled (or the app quit) while it waited.
    Cancelled,
}

/// Where a summary came from: what not applying it leaves depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// Stage 4, or the swap of a summary prepared in the background.
    Limit,
    /// The model's `compact` tool.
    Tool,
    /// After a refusal as too long, or a count over the window.
    Reactive,
    /// The user asked: `/compact`, or `s` to summarise up to a request.
    User,
}

/// What the gate made of a summary.
pub(super) enum Gated {
    /// In the history (or there was no summary to gate).
    Applied,
    /// The user said not now; the history is as it was.
    Declined,
    /// The turn was cancelled (or the app quit) in the review.
    Cancelled,
}

impl Agent {
    /// Whether summaries pass the gate: `compaction.review_summaries` where someone is
    /// there to answer.
    fn gates_summaries(&self) -> bool {
        self.settings.compaction.review_summaries && self.settings.ask == AskPolicy::Ask
    }

    /// Write a summary with `work` and let it into the history through the one review
    /// step every summary passes (`compaction.review_summaries`). The events of what
    /// went in; none when the user said not now, cancelled, or the work failed (said).
    pub(super) async fn summarise_gated<F>(
        &mut self,
        route: Route,
        ops: &mut UnboundedReceiver<Op>,
        work: F,
    ) -> (Gated, Vec<StageEvent>)
    where
        F: FnOnce(&mut Vec<Message>, &mut Sizes, &crate::compact::Context<'_>, &mut dyn Summariser) -> Vec<StageEvent>
            + Send
            + 'static,
    {
        let Some((mut messages, mut sizes, mut events)) = self.run_on_history(work).await else {
            return (Gated::Applied, Vec::new());
        };
        let reviewed = if self.gates_summaries() {
            self.review_summary(route, &mut messages, &mut sizes, &mut events, ops)
                .await
        } else {
            Reviewed::Apply
        };
        match reviewed {
            Reviewed::Apply => (Gated::Applied, self.compacted(messages, sizes, events)),
            Reviewed::Reject => {
                let limit = self.ledger.limit().chars;
                let estimate = self.conversation.estimate();
                let over = if route == Route::User || estimate <= limit {
                    String::new()
                } else {
                    format!(
                        ": this call goes over the limit ({} > {} chars)",
                        crate::compact::short_count(estimate),
                        crate::compact::short_count(limit)
                    )
                };
                self.emit(AgentEvent::Notice {
                    message: format!("the summary was not applied; the history is as it was{over}"),
                });
                (Gated::Declined, Vec::new())
            }
            Reviewed::Cancelled => (Gated::Cancelled, Vec::new()),
        }
    }

    /// Show a summary a stage wrote for review before the model reads it, and take the
    /// answer in: as written, edited (the event keeps the model's text), or not at all.
    async fn review_summary(
        &mut self,
        route: Route,
        messages: &mut [Message],
        sizes: &mut Sizes,
        events: &mut [StageEvent],
        ops: &mut UnboundedReceiver<Op>,
    ) -> Reviewed {
        let Some(event) = events.iter_mut().find(|event| {
            matches!(
                event.stage,
                crate::compact::Stage::CompactHistory | crate::compact::Stage::ReactiveCompact
            ) && event.replaced > 0
        }) else {
            return Reviewed::Apply;
        };
        let text = messages.first().map(Message::text).unwrap_or_default();
        let Some(parts) = crate::compact::markers::compacted_parts(&text) else {
            return Reviewed::Apply;
        };
        let request_id = self.turns.next_question();
        let if_not_applied = match route {
            Route::Limit => "Not now: the history stays as it was and this call goes over the limit.",
            Route::Reactive => "Not now: the history stays as it was and the turn ends, as the server refuses it.",
            Route::Tool => "Not now: the history stays as it was and the model carries on.",
            Route::User => "Not now: the history stays as it was.",
        };
        let leaves = format!(
            "{} ({} chars), kept in {}; the summary and its index take {} chars in their place",
            crate::compact::counted(event.replaced, "message", "messages"),
            crate::compact::short_count(event.chars_before),
            event.paths.first().map_or("the transcript", String::as_str),
            crate::compact::short_count(event.chars_after),
        );
        self.emit(AgentEvent::SummaryReview {
            request_id,
            leaves,
            summary: event.summary.clone().unwrap_or_else(|| parts.summary.to_string()),
            index: parts.index.to_string(),
            covers: event.replaced,
            retention: event.loss.as_ref().and_then(|loss| loss.retention_line()),
            if_not_applied: if_not_applied.into(),
            in_turn: route != Route::User,
        });
        let answer = loop {
            match ops.recv().await {
                Some(Op::Review { request_id: id, answer }) if id == request_id => break answer,
                None | Some(Op::Quit) => {
                    self.turns.quit = true;
                    return Reviewed::Cancelled;
                }
                Some(Op::Cancel) => {
                    self.emit(AgentEvent::Answered { request_id });
                    return Reviewed::Cancelled;
                }
                Some(Op::Inspect) => self.emit(self.breakdown()),
                Some(_) => {}
            }
        };
        self.emit(AgentEvent::Answered { request_id });
        match answer {
            ReviewAnswer::Apply => Reviewed::Apply,
            ReviewAnswer::Reject => Reviewed::Reject,
            ReviewAnswer::Edited { summary } => {
                let config = self.pipeline_config();
                let ctx = crate::compact::Context {
                    config: &config,
                    store: &self.store,
                    facts: &self.compactions.facts,
                };
                if let Err(error) =
                    crate::compact::compact_history::edit_summary(messages, sizes, event, &summary, &ctx)
                {
                    self.emit(AgentEvent::Notice {
                        message: format!("the edit was not applied ({error}); the summary went in as written"),
                    });
                }
                Reviewed::Apply
            }
        }
    }
}
