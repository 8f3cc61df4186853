//! The pipeline as the agent runs it: `prepare` before each call on a blocking thread
//! with the history moved in and out, summaries through the review step
//! (`compaction.review_summaries`), and `/compact`.

use super::gate::{Gated, Route};
use super::*;
use crate::accounting::Extent;
use crate::compact::compact_history::Asked;
use crate::compact::markers::{MessageKind, classify};

/// Whether a model call may go ahead after the pipeline.
pub(super) enum Readied {
    Go,
    /// The user cancelled the turn (or quit) while it waited.
    Cancelled,
    /// The loop guard stopped compacting: why, and what to do.
    Stopped(String),
}

impl Agent {
    /// What a summary request may take of the window: its reply and its history text.
    fn summary_budget(&self) -> crate::accounting::SummaryBudget {
        // The instructions, the reminder around the history and a focus.
        let around = crate::compact::SUMMARY_INSTRUCTIONS.chars().count() + 400;
        self.ledger.summary_budget(around)
    }

    /// The summariser for a summary written now (or in the `background`): each of its
    /// calls is said as it starts and as its text streams.
    pub(super) fn summariser(&self, background: bool) -> ProviderSummariser {
        let events = self.events.clone();
        let progress: crate::provider::SummaryProgress = std::sync::Arc::new(move |chars| {
            let _ = events.send(AgentEvent::Summarising { background, chars });
        });
        ProviderSummariser::new(
            self.provider.clone(),
            tokio::runtime::Handle::current(),
            self.summary_budget().max_tokens,
        )
        .choosing(
            self.settings.compaction.summariser,
            self.prompt.system().to_string(),
            self.tools.specs(),
        )
        .with_progress(progress)
    }

    /// The pipeline's settings for a run now: the limit in force (the ledger's) and
    /// the summary input capped to what the window takes.
    pub(super) fn pipeline_config(&self) -> CompactConfig {
        let mut config = self.settings.compaction.clone();
        // The settings keep the limit as configured; the ledger keeps the one in force.
        config.context_char_limit.chars = self.ledger.limit().chars;
        config.summary_input_chars = config.summary_input_chars.min(self.summary_budget().input_chars);
        config
    }

    /// Run a pipeline function on a blocking thread, on a copy of the history: what it
    /// gives back replaces the history only when it finished, so a panic or a lost
    /// thread leaves the history as it was.
    pub(super) async fn on_history<F>(&mut self, work: F) -> Vec<StageEvent>
    where
        F: FnOnce(&mut Vec<Message>, &mut Sizes, &crate::compact::Context<'_>, &mut dyn Summariser) -> Vec<StageEvent>
            + Send
            + 'static,
    {
        match self.run_on_history(work).await {
            Some((messages, sizes, events)) => self.compacted(messages, sizes, events),
            None => Vec::new(),
        }
    }

    /// [`Agent::on_history`] without taking the outcome in: the history and events the
    /// work gave back, or `None` (said) when it failed.
    pub(super) async fn run_on_history<F>(&mut self, work: F) -> Option<(Vec<Message>, Sizes, Vec<StageEvent>)>
    where
        F: FnOnce(&mut Vec<Message>, &mut Sizes, &crate::compact::Context<'_>, &mut dyn Summariser) -> Vec<StageEvent>
            + Send
            + 'static,
    {
        let mut messages = self.conversation.messages().to_vec();
        let mut sizes = self.conversation.sizes().clone();
        let config = self.pipeline_config();
        let store = self.store.clone();
        let facts = self.compactions.facts.clone();
        let mut summariser = self.summariser(false);
        let joined = tokio::task::spawn_blocking(move || {
            let ctx = crate::compact::Context {
                config: &config,
                store: &store,
                facts: &facts,
            };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                work(&mut messages, &mut sizes, &ctx, &mut summariser)
            }));
            (messages, sizes, outcome, summariser.take_notices())
        })
        .await;
        if let Ok((_, _, _, notices)) = &joined {
            for message in notices {
                self.emit(AgentEvent::Notice {
                    message: message.clone(),
                });
            }
        }
        match joined {
            Ok((messages, sizes, Ok(events), _)) => Some((messages, sizes, events)),
            Ok((_, _, Err(_), _)) => {
                self.emit(AgentEvent::Error {
                    message: "compaction failed (a bug, logged); the history is kept".into(),
                });
                tracing::error!("a compaction stage panicked");
                None
            }
            Err(error) => {
                self.emit(AgentEvent::Error {
                    message: format!("compaction failed: {error}"),
                });
                None
            }
        }
    }

    /// The pipeline before a model call: the recoverable stages, then, still over the
    /// limit, stage 4 (reviewed with `compaction.review_summaries`), which swaps in a
    /// summary prepared in the background when one stands, waiting for it if it is
    /// still being written; unless the loop guard stopped compacting, which ends the
    /// turn with why.
    pub(super) async fn prepare_history(&mut self, request: &str, ops: &mut UnboundedReceiver<Op>) -> Readied {
        if let Some(why) = self.compactions.guard.stopped()
            && self.conversation.estimate() > self.ledger.limit().chars
        {
            return Readied::Stopped(why.to_string());
        }
        if !self.prepare_and_compact(request, ops).await {
            return Readied::Cancelled;
        }
        match self.compactions.guard.stopped() {
            Some(why) => Readied::Stopped(why.to_string()),
            None => Readied::Go,
        }
    }

    /// A summary ran (stage 4 when `reactive` is false, which must leave the history
    /// under the limit; reactive compaction aims at the server's size, not the limit,
    /// and is bounded on its own). Enough in a row that did not hold and the guard
    /// stops compacting on its own, saying why.
    pub(super) fn summary_ran(&mut self, reactive: bool) {
        let over = !reactive && self.conversation.estimate() > self.ledger.limit().chars;
        let most = self.settings.compaction.loop_guard;
        if self.compactions.guard.summary_ran(self.turns.model_calls, over, most) {
            let why = self.loop_report(most);
            tracing::warn!(%why, "the loop guard stopped automatic compaction");
            self.compactions.guard.stop(why);
        }
    }

    /// Why compaction stopped, in one line: what takes the room and what to do.
    fn loop_report(&self, most: usize) -> String {
        let AgentEvent::Breakdown { breakdown } = self.breakdown() else {
            return format!("compaction stopped after {most} summaries in a row did not hold");
        };
        let biggest: Vec<String> = breakdown
            .largest
            .iter()
            .filter(|item| item.message > 0)
            .take(3)
            .map(|item| {
                format!(
                    "#{} {} {}",
                    item.message,
                    item.role,
                    crate::compact::short_count(item.chars)
                )
            })
            .collect();
        format!(
            "compaction stopped: {most} summaries in a row did not keep the history under the limit ({} chars) \
             or it filled again within the turn. What takes the room: the fixed part (system prompt and tools) {}; \
             the biggest messages {}. What you can do: pin less or drop an item (/context, p or d), raise \
             compaction.context_char_limit.chars, or start a fork from a summary (/tree); a new request tries again.",
            crate::compact::short_count(breakdown.limit),
            crate::compact::short_count(breakdown.fixed),
            if biggest.is_empty() {
                "(none)".to_string()
            } else {
                biggest.join(", ")
            }
        )
    }

    async fn prepare_and_compact(&mut self, request: &str, ops: &mut UnboundedReceiver<Op>) -> bool {
        let request = request.to_string();
        self.poll_background();
        self.on_history(|messages, sizes, ctx, _| {
            let taken = std::mem::replace(sizes, Sizes::of(&[], ctx.config.estimate));
            let prepared = prepare_recoverable(std::mem::take(messages), taken, ctx);
            *messages = prepared.messages;
            *sizes = prepared.sizes;
            prepared.events
        })
        .await;
        let limit = self.ledger.limit().chars;
        if self.conversation.estimate() <= limit {
            self.start_background_in_turn();
            return true;
        }
        let mut waited = std::time::Duration::ZERO;
        if matches!(self.background.job, background::Background::Running(_)) {
            waited = self.wait_for_background(ops).await;
            if matches!(self.background.job, background::Background::Running(_)) {
                // Esc (or a quit) during the wait: the turn stops; the summary goes on.
                return false;
            }
        }
        let ready = self.take_ready_summary();
        let waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
        let summarised = request.clone();
        let (gated, events) = self
            .summarise_gated(Route::Limit, ops, move |messages, sizes, ctx, summariser| {
                let mut events = crate::compact::timed(|| {
                    compact_history(messages, sizes, &summarised, ctx, summariser, ready.as_ref())
                });
                for event in &mut events {
                    if let Some(swapped) = &mut event.swapped {
                        swapped.waited_ms = waited_ms;
                    }
                }
                events
            })
            .await;
        match gated {
            Gated::Cancelled => return false,
            Gated::Declined => {}
            Gated::Applied => {
                if events
                    .iter()
                    .any(|event| event.stage == crate::compact::Stage::CompactHistory && event.replaced > 0)
                {
                    self.summary_ran(false);
                }
            }
        }
        self.start_background_in_turn();
        true
    }

    /// Summarise everything before a request of the history (the `later_same`-th
    /// from the end among those with its text) and keep it and what follows verbatim.
    pub(super) async fn summarise_up_to(&mut self, request: &str, later_same: usize, ops: &mut UnboundedReceiver<Op>) {
        let found = self
            .conversation
            .messages()
            .iter()
            .enumerate()
            .rev()
            // The chat shows a request made safe for the screen: either text is it.
            .filter(|(_, message)| {
                matches!(classify(message), MessageKind::UserPrompt(text)
                    if text == request || crate::terminal_text::screen_safe(&text) == request)
            })
            .nth(later_same)
            .map(|(at, _)| at);
        let Some(at) = found else {
            // Say what took it out: snip_compact archives whole messages, a summary
            // holds what it replaced.
            let archived = self
                .conversation
                .messages()
                .iter()
                .find_map(|message| match classify(message) {
                    MessageKind::ArchiveMarker { path, .. } => Some(path),
                    _ => None,
                });
            let holder = match archived {
                Some(path) => format!("snip_compact archived it to {path}"),
                None => "a summary holds it now".to_string(),
            };
            self.emit(AgentEvent::Error {
                message: format!(
                    "that request is no longer in the history as it was ({holder}): fork before it instead (Enter in /tree)"
                ),
            });
            return;
        };
        if at == 0 {
            self.emit(AgentEvent::Error {
                message: "nothing comes before that request to summarise".into(),
            });
            return;
        }
        self.discard_background("the history was summarised up to a point you chose");
        self.emit(AgentEvent::Compacting);
        let active = self.active_request();
        let summarised = active.clone();
        self.summarise_gated(Route::User, ops, move |messages, sizes, ctx, summariser| {
            let asked = Asked::by("the user (summarise up to a request)", &summarised);
            match crate::compact::compact_history::summarise_up_to(messages, at + 1, asked, ctx, summariser) {
                Ok(event) => {
                    *sizes = Sizes::of(messages, ctx.config.estimate);
                    vec![event]
                }
                Err(error) => {
                    let mut refused = StageEvent::start(
                        crate::compact::Stage::CompactHistory,
                        messages.len(),
                        sizes.total(),
                        String::new(),
                    );
                    refused.errors.push(error.to_string());
                    vec![refused]
                }
            }
        })
        .await;
    }

    /// A summary now, asked for by the user (`/compact`) or the model (the `compact`
    /// tool), through the gate.
    pub(super) async fn compact_now(
        &mut self,
        by: CompactionRequester,
        focus: Option<String>,
        request: String,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Gated {
        // Nothing is journaled for a request that does nothing.
        if self.conversation.messages().is_empty() {
            self.emit(AgentEvent::Error {
                message: "Nothing to compact yet.".into(),
            });
            return Gated::Declined;
        }
        self.note(Record::Shown {
            item: Past::CompactionRequested {
                by,
                focus: focus.clone(),
            },
        });
        self.emit(AgentEvent::CompactionRequested {
            by,
            focus: focus.clone(),
        });
        let (requested_by, route) = match by {
            CompactionRequester::User => ("the user (/compact)", Route::User),
            CompactionRequester::Model => ("the model (the compact tool)", Route::Tool),
        };
        self.poll_background();
        let ready = self.take_ready_summary();
        let summarised = request.clone();
        let (gated, _) = self
            .summarise_gated(route, ops, move |messages, sizes, ctx, summariser| {
                let asked = Asked {
                    focus: focus.as_deref(),
                    ready: ready.as_ref(),
                    ..Asked::by(requested_by, &summarised)
                };
                let event = crate::compact::compact_history::force_compact(messages, asked, ctx, summariser);
                *sizes = Sizes::of(messages, ctx.config.estimate);
                vec![event]
            })
            .await;
        gated
    }

    /// What a refusal measured: the server's tokens per unit of the request it refused
    /// (content-aware, unlike one characters-per-token average) and its average
    /// characters per token, and what a retry may take, a tenth of the window kept in
    /// reserve for the reply and the error of the units.
    pub(super) fn refusal_fit(&self, overflow: TokenOverflow) -> RefusalFit {
        let Extent { estimate, units } = self.extent();
        let request_chars = self.ledger.request_chars(estimate) as f64;
        RefusalFit {
            tokens_per_unit: overflow.prompt_tokens as f64 / units.max(1) as f64,
            chars_per_token: request_chars / overflow.prompt_tokens.max(1) as f64,
            budget_tokens: overflow.max_tokens as f64 * (1.0 - REFUSAL_MARGIN),
        }
    }

    /// The tokens the history as it is now would take, by `fit`'s measure.
    pub(super) fn predicted_tokens(&self, fit: &RefusalFit) -> f64 {
        self.extent().units as f64 * fit.tokens_per_unit
    }

    /// The estimate (characters) to aim the first reactive round at: the token budget
    /// in characters at the refused request's average characters per token, less the
    /// fixed part. What is kept may be denser than that average (a pasted run of
    /// digits after prose); [`Agent::predicted_tokens`] checks the result by content
    /// before the retry is sent.
    pub(super) fn fitting_goal(&self, fit: &RefusalFit) -> usize {
        ((fit.budget_tokens * fit.chars_per_token) as usize).saturating_sub(self.ledger.fixed())
    }
}

/// Of the window a refusal stated, the share a retry leaves unused.
const REFUSAL_MARGIN: f64 = 0.1;

/// A refused request's measure: tokens per unit and characters per token, and the
/// tokens a retry may take.
#[derive(Clone, Copy, Debug)]
pub(super) struct RefusalFit {
    pub(super) tokens_per_unit: f64,
    pub(super) chars_per_token: f64,
    pub(super) budget_tokens: f64,
}
