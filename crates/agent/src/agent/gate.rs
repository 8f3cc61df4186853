//! The one gate every summary passes (`compaction.confirm_lossy`): asked first where
//! nobody asked for it (stage 4, the reactive retry, the model's `compact` tool),
//! then reviewed before it goes in, on every route. Esc or Ctrl+C at either cancels
//! the turn.

use super::*;
use crate::protocol::ReviewAnswer;

/// What became of a summary in review.
enum Reviewed {
    Apply,
    Reject,
    /// The turn was cancelled (or the app quit) while it waited.
    Cancelled,
}

/// The answer to the summarise question.
pub(super) enum LossyAnswer {
    Summarise,
    NotNow,
    /// Esc or Ctrl+C: the turn stops here (or the app quits).
    Cancelled,
}

/// Where a summary came from, for the gate every summary passes with
/// `compaction.confirm_lossy`: the question before it where nobody asked for it,
/// the review after it on every route.
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

impl Route {
    /// Whether the user is asked before the summary is written: only where nobody
    /// asked for one (the limit, the model's tool). A refusal cannot be sent as it is,
    /// so it is not asked, but its summary is still reviewed.
    fn asks_first(self) -> bool {
        matches!(self, Route::Limit | Route::Tool)
    }
}

/// What the gate made of a summary.
pub(super) enum Gated {
    /// In the history (or there was no summary to gate).
    Applied,
    /// The user said no, before or after; the history is as it was.
    Declined,
    /// The turn was cancelled (or the app quit) at the question or the review.
    Cancelled,
}

impl Agent {
    /// Whether summaries pass the gate: `compaction.confirm_lossy` where someone is
    /// there to answer.
    fn gates_summaries(&self) -> bool {
        self.settings.compaction.confirm_lossy && self.settings.ask == AskPolicy::Ask
    }

    /// Write a summary with `work` and let it into the history through the one gate
    /// every summary passes (`compaction.confirm_lossy`): reviewed on every route
    /// (asked first, [`Agent::ask_first`], where nobody asked for it). The events of
    /// what went in; none when the user said no, cancelled, or the work failed (said).
    pub(super) async fn summarise_gated<F>(
        &mut self,
        route: Route,
        ops: &mut UnboundedReceiver<Op>,
        work: F,
    ) -> (Gated, Vec<StageEvent>)
    where
        F: FnOnce(&mut Vec<Message>, &mut Sizes, &CompactConfig, &Store, &mut dyn Summariser) -> Vec<StageEvent>
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
                let limit = self.settings.compaction.context_char_limit;
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

    /// The question before a summary nobody asked for, where the gate is on: asked
    /// before anything is taken for it (a background summary stays ready after "not
    /// now").
    pub(super) async fn ask_first(
        &mut self,
        route: Route,
        request: &str,
        ops: &mut UnboundedReceiver<Op>,
    ) -> LossyAnswer {
        if !self.gates_summaries() || !route.asks_first() {
            return LossyAnswer::Summarise;
        }
        let asked_by = (route == Route::Tool).then_some(CompactionRequester::Model);
        self.confirm_lossy(request, asked_by, ops).await
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
            Route::Limit => "not applied, the history stays as it was and this call goes over the limit",
            Route::Reactive => "not applied, the history stays as it was and the turn ends: the server refuses it",
            Route::Tool => "not applied, the history stays as it was and the model carries on",
            Route::User => "not applied, the history stays as it was",
        };
        self.emit(AgentEvent::SummaryReview {
            request_id,
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

    /// Ask whether to summarise now, showing what it would do.
    async fn confirm_lossy(
        &mut self,
        request: &str,
        asked_by: Option<CompactionRequester>,
        ops: &mut UnboundedReceiver<Op>,
    ) -> LossyAnswer {
        let preview = {
            use crate::compact::preview::{Preview, preview};
            let messages = self.conversation.messages().to_vec();
            let request = request.to_string();
            let config = self.settings.compaction.clone();
            let workspace = self.tools.workspace().root().to_path_buf();
            let what = match asked_by {
                Some(_) => Preview::Compact { focus: None },
                None => Preview::Prepare,
            };
            tokio::task::spawn_blocking(move || preview(&messages, &request, &config, &workspace, &what))
                .await
                .unwrap_or_default()
        };
        let request_id = self.turns.next_question();
        self.emit(AgentEvent::LossyQuestion {
            request_id,
            estimate: self.conversation.estimate(),
            limit: self.settings.compaction.context_char_limit,
            preview,
            asked_by,
        });
        loop {
            match ops.recv().await {
                Some(Op::Lossy {
                    request_id: id,
                    compact_now,
                }) if id == request_id => {
                    self.emit(AgentEvent::Answered { request_id });
                    return if compact_now {
                        LossyAnswer::Summarise
                    } else {
                        LossyAnswer::NotNow
                    };
                }
                None | Some(Op::Quit) => {
                    self.turns.quit = true;
                    return LossyAnswer::Cancelled;
                }
                Some(Op::Cancel) => {
                    self.emit(AgentEvent::Answered { request_id });
                    return LossyAnswer::Cancelled;
                }
                Some(Op::Inspect) => self.emit(self.breakdown()),
                Some(_) => {}
            }
        }
    }
}
