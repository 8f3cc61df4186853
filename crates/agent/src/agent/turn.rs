//! One turn: the model calls of a request, each after `prepare`, with pairing checked
//! before anything is sent, until the model stops calling tools.

use super::tool_runner::CompactRequest;
use super::*;
use crate::accounting::ReplyEnd;
use crate::compact::markers::{MessageKind, classify, cut_off_note};
use crate::compact::{Aim, TooLong};
use crate::provider::STOP_MAX_TOKENS;

/// Refusals as too long one model call may answer with a reactive compaction: a
/// second refusal (the server measures more exactly than any estimate) gets one more,
/// rather than failing a turn that could fit. Also how many more times a round may
/// aim lower before the retry, while the server's measure says it would not fit.
const MAX_REACTIVE_ROUNDS: u32 = 2;

/// What a reactive compaction did to a request too long for the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shrunk {
    Smaller,
    /// Nothing could be taken out (or the user declined the summary).
    Not,
    /// The user cancelled the turn at the summary's review.
    Cancelled,
}

impl Agent {
    /// The newest user prompt (tool results travel as user messages too).
    pub(super) fn active_request(&self) -> String {
        crate::compact::newest_request(self.conversation.messages())
    }

    pub(super) async fn turn(&mut self, request: String, ops: &mut UnboundedReceiver<Op>) {
        self.turns.current = TurnId(self.turns.current.0 + 1);
        self.turns.running = true;
        self.emit(AgentEvent::TurnStarted {
            turn: self.turns.current,
            request: request.clone(),
        });
        // A request left open (a session killed mid-turn, resumed) is closed first: two
        // user messages in a row are refused by strict chat templates.
        self.close_unanswered("scratchpad stopped before it was answered");
        self.append(Message::user_text(request.clone()));
        self.conversation.tally.turns += 1;
        self.compactions.guard.new_turn();
        let outcome = match self.steps(&request, ops).await {
            Ended::Completed => TurnOutcome::Completed,
            Ended::Cancelled => {
                self.close_unanswered("cancelled by the user");
                TurnOutcome::Cancelled
            }
            Ended::Failed(message) => {
                self.emit(AgentEvent::Error {
                    message: message.clone(),
                });
                self.close_failed_turn(&request, &message);
                TurnOutcome::Failed
            }
        };
        if outcome != TurnOutcome::Completed {
            self.note(Record::Shown {
                item: Past::TurnEnded { outcome },
            });
        }
        self.turns.running = false;
        self.journal_tally(&request);
        self.start_background_if_due();
        self.sync_journal();
        self.emit(AgentEvent::TurnDone {
            turn: self.turns.current,
            outcome,
        });
    }

    /// Where the session stands now, for the session list to read from the tail.
    fn journal_tally(&mut self, request: &str) {
        use crate::session::Tally;
        let answer = self
            .conversation
            .messages()
            .iter()
            .rev()
            .find(|message| message.role() == crate::message::Role::Assistant)
            .map(Message::text)
            .unwrap_or_default();
        self.conversation.tally.last_request = Tally::cut(request);
        self.conversation.tally.last_answer = Tally::cut(&answer);
        self.journal_size();
    }

    /// The session's size now, journaled for the session list: after every turn, and
    /// after an undo, a restore, a drop or a `/compact` changed it between turns.
    pub(super) fn journal_size(&mut self) {
        self.conversation.tally.messages = self.conversation.messages().len();
        self.conversation.tally.estimate = self.conversation.estimate();
        self.note(Record::Tally(self.conversation.tally.clone()));
    }

    /// A failed request must not look answered: unanswered, it leaves the history (the
    /// next request would otherwise carry it, and a prompt too long for the window
    /// would make every later call fail too); after some work, the history says where
    /// it stopped.
    fn close_failed_turn(&mut self, request: &str, reason: &str) {
        let Some(last) = self.conversation.messages().last() else {
            return;
        };
        match classify(last) {
            MessageKind::UserPrompt(text) if text == request => {
                let mut messages = self.conversation.messages().to_vec();
                messages.pop();
                self.change_history(messages);
                self.emit(AgentEvent::Notice {
                    message: "the request got no answer, so it was taken out of the history; send it again when ready"
                        .into(),
                });
                self.emit_context();
            }
            _ => self.close_unanswered(reason),
        }
    }

    /// The history ends with a request or tool results that nothing will answer: the
    /// assistant's side says the request was not finished, so the next request never
    /// follows an unanswered one. (A `[Compacted]` message or an archive marker is
    /// not a request; the wire joins it with the request after it.)
    fn close_unanswered(&mut self, reason: &str) {
        let open = self.conversation.messages().last().is_some_and(|last| {
            matches!(
                classify(last),
                MessageKind::UserPrompt(_) | MessageKind::ToolResults | MessageKind::CutOffNote
            )
        });
        if open {
            self.append(Message::assistant_text(crate::compact::markers::stopped_text(reason)));
        }
    }

    async fn steps(&mut self, request: &str, ops: &mut UnboundedReceiver<Op>) -> Ended {
        match self.discover_again(ops).await {
            Ok(()) => {}
            Err(Interrupted::Quit) => {
                self.turns.quit = true;
                return Ended::Cancelled;
            }
            Err(Interrupted::Cancel) => return Ended::Cancelled,
        }
        let mut reactive_rounds = 0;
        let mut step = 0;
        while step < self.settings.max_steps {
            step += 1;
            // Before the pipeline: a changed file or MCP server changes the fixed part,
            // and so the limit.
            if self.refresh_mcp(ops).await.is_err() {
                return Ended::Cancelled;
            }
            self.refresh_instructions();
            // The server's count before the pipeline decides, and again for what a
            // stage left: the limit and the reply's `max_tokens` follow its tokenizer.
            self.count_request().await;
            match self.prepare_history(request, ops).await {
                compaction::Readied::Go => {}
                compaction::Readied::Cancelled => return Ended::Cancelled,
                compaction::Readied::Stopped(why) => return Ended::Failed(why),
            }
            self.count_request().await;
            // A request the server's count says its window cannot take with a reply
            // would only be refused: it is shrunk as after a refusal, unsent.
            if let Some(overflow) = self.counted_overflow()
                && reactive_rounds < MAX_REACTIVE_ROUNDS
            {
                if self.ledger.limit().note.window_too_small() {
                    return self.no_summary_fits(&format!(
                        "the server counted {} tokens, more than its {}-token window holds with a reply",
                        overflow.prompt_tokens, overflow.max_tokens
                    ));
                }
                reactive_rounds += 1;
                step -= 1;
                let cause = TooLong::Counted {
                    tokens: overflow.prompt_tokens,
                    window: overflow.max_tokens,
                };
                let shrunk = self.shrink_to_fit(request, Some(overflow), cause, ops).await;
                if shrunk == Shrunk::Cancelled {
                    return Ended::Cancelled;
                }
                if shrunk == Shrunk::Not {
                    return Ended::Failed(format!(
                        "The request is too long for the model's window ({} tokens as the server counted it, of its {}) and compaction could not shrink it.",
                        overflow.prompt_tokens, overflow.max_tokens
                    ));
                }
                continue;
            }
            let max_tokens = self.reply_tokens();
            let response = match self.call_model(ops).await {
                Ok(response) => response,
                Err(CallFailed::Interrupted) => return Ended::Cancelled,
                Err(CallFailed::Provider(ProviderError::ContextTooLong { message, .. }))
                    if self.ledger.limit().note.window_too_small() =>
                {
                    return self.no_summary_fits(&message);
                }
                Err(CallFailed::Provider(ProviderError::ContextTooLong { message, overflow }))
                    if reactive_rounds < MAX_REACTIVE_ROUNDS =>
                {
                    reactive_rounds += 1;
                    step -= 1;
                    tracing::warn!(%message, "prompt refused as too long; compacting reactively");
                    if let Some(overflow) = overflow {
                        let note = self.ledger.refused(self.extent(), overflow.prompt_tokens);
                        self.apply_limit(note);
                        let window = Window {
                            tokens: overflow.max_tokens,
                            source: WindowSource::Server {
                                endpoint: "refusal".into(),
                            },
                        };
                        self.learn_window(window, "the server's refusal stated the window");
                    }
                    let shrunk = self.shrink_to_fit(request, overflow, TooLong::Refused, ops).await;
                    if shrunk == Shrunk::Cancelled {
                        return Ended::Cancelled;
                    }
                    if shrunk == Shrunk::Not {
                        return Ended::Failed(format!(
                            "The prompt is too long and reactive compaction could not shrink it: {message}"
                        ));
                    }
                    continue;
                }
                Err(CallFailed::Provider(error)) => return Ended::Failed(error.to_string()),
            };
            let reached = (response.stop_reason.as_deref() == Some(STOP_MAX_TOKENS))
                .then(|| self.ledger.reply_end(&response.usage, max_tokens));
            let cut_off = response.cut_off;
            let mut content = response.content;
            let calls = checked_calls(&mut content, self.conversation.messages());
            if content.is_empty() {
                content.push(ContentBlock::text("(no response)"));
            }
            let message = Message::blocks(Role::Assistant, content);
            self.emit(AgentEvent::AssistantMessage {
                turn: self.turns.current,
                message: message.clone(),
            });
            self.append(message);
            // Calls cut off by max_tokens are not run; the model reads why, after the
            // results of the calls that were complete, and may try again smaller.
            let cut_note = (!cut_off.is_empty()).then(|| {
                let names: Vec<&str> = cut_off.iter().map(|call| call.name.as_str()).collect();
                let reached = reached.unwrap_or(ReplyEnd::MaxTokens { max_tokens }).to_string();
                self.emit(AgentEvent::Notice {
                    message: format!(
                        "the response reached {reached} inside a call to {}; \
                         that call was not run and the model was asked to retry smaller",
                        names.join(", ")
                    ),
                });
                ContentBlock::text(cut_off_note(&cut_off, &reached))
            });
            if calls.is_empty() {
                let Some(note) = cut_note else {
                    if let Some(reached) = reached {
                        self.emit(AgentEvent::Notice {
                            message: format!("the reply stopped at {reached}"),
                        });
                    }
                    return Ended::Completed;
                };
                self.append(Message::blocks(Role::User, vec![note]));
                continue;
            }
            let batch = self.run_tools(calls, ops).await;
            let mut results = batch.results;
            results.extend(cut_note);
            self.append(Message::blocks(Role::User, results));
            self.sync_journal();
            if batch.cancelled {
                return Ended::Cancelled;
            }
            if let Some(CompactRequest { focus }) = batch.compact
                && let gate::Gated::Cancelled = self
                    .compact_now(CompactionRequester::Model, focus, request.to_string(), ops)
                    .await
            {
                return Ended::Cancelled;
            }
        }
        Ended::Failed(format!(
            "Stopped after {} model calls in one request.",
            self.settings.max_steps
        ))
    }

    /// A prompt too long for the window (`overflow`: its tokens and the window, where
    /// the server said) shrunk by reactive compaction aimed at what the window takes;
    /// while the server's own measure says the result would still not fit, aimed lower
    /// before it is sent. Whether the first round made the history smaller.
    async fn shrink_to_fit(
        &mut self,
        request: &str,
        overflow: Option<TokenOverflow>,
        cause: TooLong,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Shrunk {
        let fit = overflow.map(|overflow| self.refusal_fit(overflow));
        let goal = fit.as_ref().map(|fit| self.fitting_goal(fit));
        let aim = Aim { target: goal, cause };
        let first = self.reactive_round(request, aim, ops).await;
        if first != Shrunk::Smaller {
            return first;
        }
        if let Some(fit) = fit {
            for _ in 0..MAX_REACTIVE_ROUNDS {
                let predicted = self.predicted_tokens(&fit);
                if predicted <= fit.budget_tokens {
                    break;
                }
                let goal = (self.conversation.estimate() as f64 * fit.budget_tokens / predicted * 0.95) as usize;
                let aim = Aim {
                    target: Some(goal),
                    cause,
                };
                match self.reactive_round(request, aim, ops).await {
                    Shrunk::Smaller => {}
                    Shrunk::Not => break,
                    Shrunk::Cancelled => return Shrunk::Cancelled,
                }
            }
        }
        Shrunk::Smaller
    }

    /// Where the window cannot hold even the system prompt and tools, no summary can
    /// fit either: none is asked for, and the turn fails saying why.
    fn no_summary_fits(&self, too_long: &str) -> Ended {
        let why = self.ledger.limit().note.message().unwrap_or_default();
        Ended::Failed(format!(
            "The prompt is too long for the model: {too_long}. {why} Nothing was summarised: no summary could fit either."
        ))
    }

    /// The request as the server just counted it, where its window cannot take it
    /// with the least reply: what a refusal would have said.
    fn counted_overflow(&self) -> Option<TokenOverflow> {
        let figure = self.ledger.tokens()?;
        let window = self.ledger.window().tokens;
        (figure.basis == crate::protocol::TokenBasis::Counted
            && figure.tokens + crate::accounting::MIN_REPLY_TOKENS > window)
            .then_some(TokenOverflow {
                prompt_tokens: figure.tokens,
                max_tokens: window,
            })
    }

    /// One reactive compaction aimed as `aim` says (half the history when the server
    /// did not say how much it takes), its summary through the gate.
    async fn reactive_round(&mut self, request: &str, aim: Aim, ops: &mut UnboundedReceiver<Op>) -> Shrunk {
        self.emit(AgentEvent::Compacting);
        let request = request.to_string();
        let (gated, events) = self
            .summarise_gated(gate::Route::Reactive, ops, move |messages, sizes, ctx, summariser| {
                let events = reactive_compact(messages, &request, aim, ctx, summariser);
                *sizes = Sizes::of(messages, ctx.config.estimate);
                events
            })
            .await;
        match gated {
            gate::Gated::Cancelled => return Shrunk::Cancelled,
            gate::Gated::Declined => return Shrunk::Not,
            gate::Gated::Applied => {}
        }
        if events
            .iter()
            .any(|event| event.stage == crate::compact::Stage::ReactiveCompact && event.replaced > 0)
        {
            self.summary_ran(true);
        }
        if events.iter().any(|event| event.replaced > 0) {
            Shrunk::Smaller
        } else {
            Shrunk::Not
        }
    }

    /// The request the history makes now.
    pub(super) fn model_request(&self) -> ModelRequest<'_> {
        ModelRequest {
            system: self.prompt.system().to_string(),
            tools: self.tools.specs(),
            messages: self.conversation.messages(),
            max_tokens: self.reply_tokens(),
            cache_check: crate::provider::CacheCheck::Off,
            think: false,
        }
    }

    /// `max_tokens` for a call with the history as it is: what the window leaves.
    fn reply_tokens(&self) -> u32 {
        self.ledger.reply_tokens(self.extent())
    }

    /// One model call.
    pub(super) async fn call_model(
        &mut self,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Result<crate::provider::ModelResponse, CallFailed> {
        self.guard_pairing();
        self.poll_background();
        self.give_way_to_the_turn();
        let mut request = self.model_request();
        request.cache_check = self.server.cache_chain.check();
        request.think = true;
        let sent = super::cache_chain::PrefixPrint::of(self.provider.model(), &request);
        let (sink, mut deltas) = unbounded_channel();
        let events = self.events.clone();
        let turn = self.turns.current;
        let forward = tokio::spawn(async move {
            while let Some(delta) = deltas.recv().await {
                let event = match delta {
                    StreamEvent::Text(text) => AgentEvent::TextDelta { turn, text },
                    StreamEvent::Thinking(text) => AgentEvent::ThinkingDelta { turn, text },
                    StreamEvent::ToolUseStarted { .. } => continue,
                    StreamEvent::Retrying {
                        attempt,
                        delay_ms,
                        reason,
                    } => AgentEvent::StreamReset {
                        turn,
                        attempt,
                        delay_ms,
                        reason,
                    },
                };
                let _ = events.send(event);
            }
        });
        let provider = self.provider.clone();
        let inspect = || self.breakdown();
        let result = unless_interrupted(ops, &self.events, &inspect, provider.complete(&request, &sink)).await;
        drop(sink);
        let _ = forward.await;
        match result {
            Err(Interrupted::Quit) => {
                self.turns.quit = true;
                Err(CallFailed::Interrupted)
            }
            Err(Interrupted::Cancel) => Err(CallFailed::Interrupted),
            Ok(Err(error)) => Err(CallFailed::Provider(error)),
            Ok(Ok(response)) => {
                let usage = response.usage;
                self.ledger.thought(usage.thinking_tokens);
                let (mut point, note) =
                    self.ledger
                        .called(self.extent(), self.conversation.messages().len(), usage.prompt_tokens());
                self.ledger.cache(
                    &mut point,
                    usage.cache_read_input_tokens,
                    usage.cache_creation_input_tokens,
                );
                (point.background_started, point.background_ready) = std::mem::take(&mut self.background.marks);
                let report =
                    self.server
                        .cache_chain
                        .answered(sent, response.id.clone(), response.cache_diagnosis.clone());
                point.response_id = response.id.clone();
                point.cache = report.clone();
                self.note(Record::Call(point.clone()));
                self.turns.model_calls += 1;
                self.apply_limit(note);
                self.emit(AgentEvent::ModelCall {
                    point,
                    usage: response.usage,
                });
                if let Some(report) = report {
                    self.emit(AgentEvent::Cache { report });
                }
                self.emit_context();
                Ok(response)
            }
        }
    }

    /// Nothing invalid is ever sent: a bug that broke pairing fails loudly in debug
    /// builds; in release the history is mended, journaled and the user told.
    pub(super) fn guard_pairing(&mut self) {
        let Err(problem) = check_pairing(self.conversation.messages()) else {
            return;
        };
        debug_assert!(false, "history about to be sent is invalid: {problem:?}");
        let (notes, result) = self.conversation.repair();
        self.journaled(result);
        tracing::error!(?problem, ?notes, "repaired an invalid history before a model call");
        for note in notes {
            self.emit(AgentEvent::Notice {
                message: format!("mended the history before sending it: {note}"),
            });
        }
    }
}

/// How the model calls of a request ended.
enum Ended {
    Completed,
    /// The user cancelled the turn or quit.
    Cancelled,
    /// Why it failed, for the user and for the history.
    Failed(String),
}

/// Why a model call gave no response.
pub(super) enum CallFailed {
    /// The user cancelled the turn or quit.
    Interrupted,
    Provider(ProviderError),
}
