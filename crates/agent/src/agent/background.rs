//! The summary prepared before it is needed: started once the estimate passes
//! `compaction.background_at_percent`, as a separate model call while the user's turns
//! go on (at most one at a time, dropped with the session), and handed to stage 4 to
//! swap in. The live history is never changed from here: the call works on a copy of
//! the messages it covers, fingerprinted, and the swap checks they still stand.

use std::time::Instant;

use futures::FutureExt;

use super::*;
use crate::compact::background::{Prefix, ReadySummary, Standing, fingerprint, percent_of_limit, prefix_to_summarise};
use crate::protocol::BackgroundEvent;

/// Where the background summary is.
#[derive(Default)]
pub(super) enum Background {
    #[default]
    Idle,
    Running(RunningSummary),
    Ready(ReadySummary),
    /// The last one failed: the next starts once the history has grown past
    /// `retry_from` messages, not before every call.
    Failed {
        retry_from: usize,
    },
}

pub(super) struct RunningSummary {
    prefix: Prefix,
    started_at_percent: usize,
    started_unix: u64,
    started: Instant,
    task: tokio::task::JoinHandle<Finished>,
}

impl Drop for RunningSummary {
    /// Dropped with the session (or set aside): the call stops with it.
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Background {
    /// What the gauge marks.
    pub(super) fn status(&self) -> Option<crate::protocol::BackgroundStatus> {
        let (started_at_percent, ready) = match self {
            Background::Running(running) => (running.started_at_percent, false),
            Background::Ready(ready) => (ready.started_at_percent, true),
            Background::Idle | Background::Failed { .. } => return None,
        };
        Some(crate::protocol::BackgroundStatus {
            started_at_percent,
            ready,
        })
    }

    pub(super) fn is_running(&self) -> bool {
        matches!(self, Background::Running(_))
    }

    fn prefix(&self) -> Option<&Prefix> {
        match self {
            Background::Running(running) => Some(&running.prefix),
            Background::Ready(ready) => Some(&ready.prefix),
            Background::Idle | Background::Failed { .. } => None,
        }
    }
}

/// A summary the background call wrote, and what its request read from the provider's
/// cache and wrote to it (for a provider that caches prompt prefixes).
pub(super) struct Written {
    summary: String,
    cache: Option<(u64, u64)>,
    server_block: Option<serde_json::Value>,
}

/// What a background summary call gave: its summary or error, its notices, and how
/// long it took, measured by the call itself as it ended (not when it was noticed).
pub(super) struct Finished {
    result: Result<Written, String>,
    notices: Vec<String>,
    took: std::time::Duration,
}

/// A background summary call's end, or why its task ended without one.
pub(super) type Joined = Result<Finished, tokio::task::JoinError>;

/// Resolves once the summary is no longer being written: with the call's outcome when
/// it was running (taken from its handle here, which is then spent), at once with
/// `None` when it is ready already. For the idle loop, which says it is ready the
/// moment it is, and swaps it in where that is wanted.
pub(super) async fn settled(background: &mut Background) -> Option<Joined> {
    match background {
        Background::Running(running) => Some((&mut running.task).await),
        _ => None,
    }
}

impl Agent {
    /// Whether an idle swap is wanted: `compaction.background_swap = "when_idle"`, no turn running,
    /// and a summary written or being written while the estimate is past the threshold.
    pub(super) fn swaps_when_idle(&self) -> bool {
        let config = &self.pipeline_config();
        config.background_swap == crate::compact::BackgroundSwap::WhenIdle
            && config.background_at_percent > 0
            && percent_of_limit(self.conversation.sizes(), config) >= config.background_at_percent
            && matches!(self.background.job, Background::Running(_) | Background::Ready(_))
    }

    /// The idle loop saw the summary call end (`joined`) or found one ready: it is
    /// said at once, and swapped in when an idle swap is wanted.
    pub(super) async fn background_settled(&mut self, joined: Option<Joined>) {
        if self.swaps_when_idle() {
            self.swap_while_idle(joined).await;
        } else if let Some(joined) = joined
            && let Background::Running(running) = std::mem::take(&mut self.background.job)
        {
            self.finish_background(&running, joined);
        }
    }

    /// The user is idle and the summary is ready: swap it in now, so the next request
    /// starts small and the prompt cache is rewritten at a quiet moment.
    async fn swap_while_idle(&mut self, joined: Option<Joined>) {
        if let Some(joined) = joined
            && let Background::Running(running) = std::mem::take(&mut self.background.job)
        {
            self.finish_background(&running, joined);
        }
        let Some(ready) = self.take_ready_summary() else {
            return;
        };
        let request = self.active_request();
        let outcome = std::sync::Arc::new(std::sync::Mutex::new(None));
        let why_not = outcome.clone();
        self.on_history(move |messages, sizes, ctx, _| {
            let mut events = Vec::new();
            events.extend(crate::compact::timed(
                || match crate::compact::compact_history::swap_now(messages, sizes, &request, ctx, &ready) {
                    Ok(event) => Some(event),
                    Err(why) => {
                        *why_not.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                        None
                    }
                },
            ));
            events
        })
        .await;
        let why_not = outcome.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(why) = why_not {
            self.background_event(BackgroundEvent::Discarded { reason: why });
        }
        self.sync_journal();
        self.emit_context();
    }

    fn background_event(&mut self, event: BackgroundEvent) {
        match &event {
            BackgroundEvent::Started { percent, .. } => self.background.marks.0 = Some(*percent),
            BackgroundEvent::Ready { .. } => self.background.marks.1 = true,
            _ => {}
        }
        self.note(Record::Shown {
            item: Past::Background { event: event.clone() },
        });
        self.emit(AgentEvent::Background { event });
        self.emit_context();
    }

    /// A finished call becomes a ready summary (or a failure), without waiting.
    pub(super) fn poll_background(&mut self) {
        let Background::Running(running) = &mut self.background.job else {
            return;
        };
        let Some(joined) = (&mut running.task).now_or_never() else {
            return;
        };
        if let Background::Running(running) = std::mem::take(&mut self.background.job) {
            self.finish_background(&running, joined);
        }
    }

    /// Wait for a running summary (the limit came first), saying so; Esc or a quit
    /// stops the wait (the summary goes on). How long it waited.
    pub(super) async fn wait_for_background(&mut self, ops: &mut UnboundedReceiver<Op>) -> std::time::Duration {
        let waited = Instant::now();
        let Background::Running(mut running) = std::mem::take(&mut self.background.job) else {
            return waited.elapsed();
        };
        self.background_event(BackgroundEvent::Waiting {
            started_secs_ago: running.started.elapsed().as_secs(),
        });
        loop {
            tokio::select! {
                joined = &mut running.task => {
                    self.finish_background(&running, joined);
                    return waited.elapsed();
                }
                op = ops.recv() => match op {
                    Some(Op::Cancel) => break,
                    None | Some(Op::Quit) => {
                        self.turns.quit = true;
                        break;
                    }
                    Some(Op::Inspect) => self.emit(self.breakdown()),
                    Some(_) => {}
                },
            }
        }
        self.background.job = Background::Running(running);
        waited.elapsed()
    }

    fn finish_background(&mut self, running: &RunningSummary, joined: Joined) {
        let Finished { result, notices, took } = joined.unwrap_or_else(|error| Finished {
            result: Err(error.to_string()),
            notices: Vec::new(),
            took: running.started.elapsed(),
        });
        let took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        for message in notices {
            self.emit(AgentEvent::Notice { message });
        }
        match result {
            Ok(written) => {
                self.background.job = Background::Ready(ReadySummary {
                    prefix: running.prefix.clone(),
                    summary: written.summary,
                    model_summary: None,
                    started_at_percent: running.started_at_percent,
                    started_unix: running.started_unix,
                    took_ms,
                    cache_read: written.cache.map(|(read, _)| read),
                    cache_written: written.cache.map(|(_, wrote)| wrote),
                    server_block: written.server_block,
                });
                self.background_event(BackgroundEvent::Ready { took_ms });
            }
            Err(error) => {
                self.background.job = Background::Failed {
                    retry_from: self.conversation.messages().len() + self.settings.compaction.reactive_keep_messages,
                };
                self.background_event(BackgroundEvent::Failed { error });
            }
        }
    }

    /// `/summary`: the summary prepared in the background, shown for review (and to
    /// edit) before it goes in; said plainly when none is ready.
    pub(super) fn review_ready(&mut self) {
        self.poll_background();
        let Background::Ready(ready) = &self.background.job else {
            let message = match self.background.job {
                Background::Running(_) => "the background summary is still being written; /summary shows it once ready",
                _ => "no summary is prepared in the background now",
            };
            self.emit(AgentEvent::Notice {
                message: message.to_string(),
            });
            return;
        };
        let end = ready.prefix.end.min(self.conversation.messages().len());
        let record = crate::compact::record::rebuild(&self.conversation.messages()[..end], &self.store);
        let index = crate::compact::index::Index::build(&record.messages, "the record (written when it goes in)")
            .render(|text| text.chars().count() <= self.settings.compaction.index_room())
            .text;
        let leaves = format!(
            "{} ({} chars), kept in a transcript written when it goes in; the summary takes {} chars in their place",
            crate::compact::counted(end, "message", "messages"),
            crate::compact::short_count(crate::compact::estimate::json_chars(
                &self.conversation.messages()[..end]
            )),
            crate::compact::short_count(ready.summary.chars().count()),
        );
        let request_id = self.turns.next_question();
        self.background.reviewing = Some(request_id);
        self.emit(AgentEvent::SummaryReview {
            request_id,
            leaves,
            summary: ready.summary.clone(),
            index,
            covers: end,
            retention: None,
            if_not_applied: "Not now: it is set aside until the history has grown.".into(),
            in_turn: false,
        });
    }

    /// The answer to a `/summary` review: kept, kept with the user's edit (the model's
    /// text kept with it), or set aside until the history has grown.
    pub(super) fn reviewed_ready(&mut self, request_id: u64, answer: crate::protocol::ReviewAnswer) {
        if self.background.reviewing != Some(request_id) {
            return;
        }
        self.background.reviewing = None;
        self.emit(AgentEvent::Answered { request_id });
        let Background::Ready(ready) = &mut self.background.job else {
            self.emit(AgentEvent::Notice {
                message: "the background summary was set aside meanwhile; nothing to apply the review to".into(),
            });
            return;
        };
        match answer {
            crate::protocol::ReviewAnswer::Apply => {}
            crate::protocol::ReviewAnswer::Edited { .. } if ready.server_block.is_some() => {
                self.emit(AgentEvent::Notice {
                    message: "the server wrote this summary as its own signed block, which cannot be edited; it goes in as written".into(),
                });
            }
            crate::protocol::ReviewAnswer::Edited { summary } if !summary.trim().is_empty() => {
                if ready.model_summary.is_none() {
                    ready.model_summary = Some(std::mem::replace(&mut ready.summary, summary));
                } else {
                    ready.summary = summary;
                }
                self.emit(AgentEvent::Notice {
                    message: "your edit of the background summary goes in at the limit".into(),
                });
            }
            crate::protocol::ReviewAnswer::Edited { .. } => self.emit(AgentEvent::Notice {
                message: "an empty summary is not applied; the summary stays as the model wrote it".into(),
            }),
            crate::protocol::ReviewAnswer::Reject => {
                self.discard_background("you set it aside in review");
                // Not started again at once for the same messages: after the history grew.
                self.background.job = Background::Failed {
                    retry_from: self.conversation.messages().len() + self.settings.compaction.reactive_keep_messages,
                };
            }
        }
    }

    /// Esc on a `/summary` review between turns: closed unanswered, the summary kept
    /// as it is, ready for the limit.
    pub(super) fn close_ready_review(&mut self) {
        if let Some(request_id) = self.background.reviewing.take() {
            self.emit(AgentEvent::Answered { request_id });
            self.emit(AgentEvent::Notice {
                message: "the review was closed; the background summary stays ready (/summary shows it again)".into(),
            });
        }
    }

    /// Set aside whatever is prepared or running, saying why.
    pub(super) fn discard_background(&mut self, reason: &str) {
        if matches!(self.background.job, Background::Running(_) | Background::Ready(_)) {
            self.background.job = Background::Idle;
            self.background_event(BackgroundEvent::Discarded {
                reason: reason.to_string(),
            });
        } else {
            self.background.job = Background::Idle;
        }
    }

    /// The ready summary, for stage 4 (which reports whether it was used).
    pub(super) fn take_ready_summary(&mut self) -> Option<ReadySummary> {
        match std::mem::take(&mut self.background.job) {
            Background::Ready(ready) => Some(ready),
            other => {
                self.background.job = other;
                None
            }
        }
    }

    /// [`Agent::start_background_if_due`] while a turn runs: not where the summary
    /// would compete with the turn's requests for the server's one cache.
    pub(super) fn start_background_in_turn(&mut self) {
        if !self.background.when_idle {
            self.start_background_if_due();
        }
    }

    /// Before a turn's request, on a server whose requests share one cache: a summary
    /// being written in the background gives way (set aside, to start again once the
    /// turn is idle) rather than overflow that cache with the request.
    pub(super) fn give_way_to_the_turn(&mut self) {
        if self.background.when_idle && matches!(self.background.job, Background::Running(_)) {
            self.discard_background(
                "it would share the server's one cache with the turn's request; it starts again when the turn is done",
            );
        }
    }

    /// After the history changed: a summary whose messages no longer start it is set
    /// aside, and one is started once the estimate is past the threshold.
    pub(super) fn start_background_if_due(&mut self) {
        self.poll_background();
        if let Some(prefix) = self.background.job.prefix() {
            match crate::compact::background::standing(prefix, self.conversation.messages()) {
                Standing::Changed(why) => {
                    self.discard_background(&format!("the history it summarised changed ({why})"))
                }
                // Kept when the history merely grew: a swap summarises its messages
                // and keeps the newer ones verbatim, if they fit then.
                Standing::Stands { .. } => {}
            }
        }
        // With no model as summariser, stage 4 summarises when it runs: at no cost.
        if self.settings.read_only.is_some()
            || self.settings.compaction.summariser == crate::compact::SummariserChoice::Extractive
        {
            return;
        }
        match self.background.job {
            Background::Idle => {}
            Background::Failed { retry_from } if self.conversation.messages().len() >= retry_from => {}
            _ => return,
        }
        let config = self.pipeline_config();
        let Some(end) = prefix_to_summarise(self.conversation.messages(), self.conversation.sizes(), &config) else {
            return;
        };
        let prefix = fingerprint(self.conversation.messages(), end);
        let covered = self.conversation.messages()[..end].to_vec();
        let span = covered.clone();
        // A server without compaction of its own was said once, at the start.
        let by_server = self.settings.compaction.summariser == crate::compact::SummariserChoice::Server
            && self.provider.compacts_on_server();
        let store = self.store.clone();
        let facts = self.compactions.facts.clone();
        let mut summariser = self.summariser(true);
        // The request of the last calls, for a provider that caches it.
        let (system, tools) = (self.prompt.system().to_string(), self.tools.specs());
        let task = tokio::spawn(async move {
            let started = Instant::now();
            // The summary reads the whole record, as stage 4's does: what earlier
            // stages moved to disk comes back from the archive, read off the runtime.
            let record =
                match tokio::task::spawn_blocking(move || crate::compact::record::rebuild(&covered, &store)).await {
                    Ok(record) => record,
                    Err(error) => {
                        return Finished {
                            result: Err(format!("the record could not be rebuilt: {error}")),
                            notices: Vec::new(),
                            took: started.elapsed(),
                        };
                    }
                };
            // The cached form replays the history as it stands, so it is used only
            // when that history is the whole record.
            let whole = !record.restored_anything() && record.left_out.is_empty();
            let request = crate::compact::compact_history::summary_request(&record, None, &config, &facts);
            let mut notices = Vec::new();
            // The server's compaction of the messages as they are, where it is the
            // summariser; the model's summary where it cannot.
            if by_server {
                let asked = crate::compact::SummaryRequest {
                    span: &span,
                    ..request.clone()
                };
                match summariser.compact_on_server(&asked).await {
                    Ok(summary) => {
                        return Finished {
                            result: Ok(Written {
                                summary: summary.text,
                                cache: None,
                                server_block: summary.server_block,
                            }),
                            notices,
                            took: started.elapsed(),
                        };
                    }
                    Err(why) => notices.push(format!("{why}; the model wrote the background summary instead")),
                }
            }
            let cached = if whole {
                summariser
                    .summarise_cached(system, tools, &record.messages, &request.instructions)
                    .await
            } else {
                None
            };
            let result = match cached {
                Some(Ok(written)) => Ok(Written {
                    summary: written.text,
                    cache: Some((written.cache_read, written.cache_written)),
                    server_block: None,
                }),
                // Asked plainly instead: the history as text, as stage 4 asks.
                other => {
                    if let Some(Err(error)) = other {
                        notices.push(format!("{error}; the background summary was asked for plainly instead"));
                    }
                    summariser
                        .summarise_async(&request)
                        .await
                        .map(|summary| Written {
                            summary,
                            cache: None,
                            server_block: None,
                        })
                        .map_err(|error| error.to_string())
                }
            };
            notices.extend(summariser.take_notices());
            Finished {
                result,
                notices,
                took: started.elapsed(),
            }
        });
        let percent = percent_of_limit(self.conversation.sizes(), &self.pipeline_config());
        self.background.job = Background::Running(RunningSummary {
            prefix,
            started_at_percent: percent,
            started_unix: crate::time::unix_now(),
            started: Instant::now(),
            task,
        });
        self.background_event(BackgroundEvent::Started { percent, messages: end });
    }
}
