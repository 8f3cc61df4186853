//! What the user does to the context between turns: `/undo`, `/compact --preview`, and
//! from `/context` restore, pin, drop, the breakdown and the exact token count; and
//! `/permissions`.

use super::*;

impl Agent {
    /// What the context holds now, for `/context`.
    pub(super) fn breakdown(&self) -> AgentEvent {
        let mut breakdown = crate::context_map::breakdown(
            self.prompt.system(),
            &self.instructions_note(Vec::new()).files,
            &super::mcp::server_rows(self.tools.mcp(), self.settings.compaction.estimate),
            &self.tools.specs(),
            self.conversation.messages(),
            &self.pipeline_config(),
            &self.compactions.facts,
        );
        breakdown.thinking_tokens = self.ledger.thinking_tokens();
        breakdown.counted = self.counted_categories();
        if breakdown.counted.is_none() {
            breakdown.weighed = self.weighed_categories();
        }
        AgentEvent::Breakdown { breakdown }
    }

    /// Each category's tokens weighed by its own content, where a call measured the
    /// request's tokens per unit: the message categories by their text's units, the
    /// fixed part by its units, shared among its rows as a counted one is.
    fn weighed_categories(&self) -> Option<crate::protocol::CountedTokens> {
        let rate = self.ledger.tokens_per_unit()?;
        let weigh = |units: usize| (units as f64 * rate).round() as u64;
        let fixed = weigh(self.prompt.fixed_units());
        let mut categories = self.fixed_rows(fixed);
        for (category, text) in
            crate::context_map::category_texts(self.conversation.messages(), &self.settings.compaction)
        {
            categories.push((category, weigh(crate::accounting::units::text_units(&text))));
        }
        Some(crate::protocol::CountedTokens {
            total: weigh(self.prompt.fixed_units() + self.conversation.units()),
            fixed,
            categories,
        })
    }

    /// `/context` opened between turns: where the server counts, each category is
    /// counted for it first (a failure leaves the column estimated, and says why).
    pub(super) async fn inspect(&mut self) {
        if self.server_counts() {
            match self.count_categories().await {
                // The count is the gauge's figure now, and the limit may follow it.
                Ok(()) => self.emit_context(),
                Err(why) => self.emit(AgentEvent::Notice {
                    message: format!("/context's tokens are estimated: the server's count failed ({why})"),
                }),
            }
        }
        self.emit(self.breakdown());
    }

    /// `r` in `/context`: a shortened tool result back in full.
    pub(super) fn restore_result(&mut self, tool_use_id: &str) {
        let mut messages = self.conversation.messages().to_vec();
        let mut sizes = self.conversation.sizes().clone();
        match crate::compact::micro_compact::restore_result(&mut messages, &mut sizes, &self.store, tool_use_id) {
            Ok(chars) => {
                self.change_history_sized(messages, sizes);
                self.sync_journal();
                self.emit(AgentEvent::Notice {
                    message: format!(
                        "put back in full: {} ({} chars)",
                        crate::compact::receipt::describe_result(
                            self.conversation.messages(),
                            self.conversation.messages().len(),
                            tool_use_id,
                            self.compactions.facts.describe_input
                        ),
                        crate::compact::short_count(chars)
                    ),
                });
                self.emit_context();
                self.emit(self.breakdown());
            }
            Err(why) => self.emit(AgentEvent::Error {
                message: format!("cannot put {tool_use_id} back: {why}"),
            }),
        }
    }

    /// `p` in `/context`: pin or unpin a tool result; journaled, so it lasts.
    pub(super) fn pin(&mut self, tool_use_id: String, pinned: bool) {
        self.note(Record::Pin {
            tool_use_id: tool_use_id.clone(),
            pinned,
        });
        self.sync_journal();
        if pinned {
            self.compactions.facts.pinned.insert(tool_use_id);
        } else {
            self.compactions.facts.pinned.remove(&tool_use_id);
        }
        self.emit(self.breakdown());
    }

    /// `d` in `/context`: a tool result to the archive now, as a manual micro-compaction.
    pub(super) async fn drop_result(&mut self, tool_use_id: String) {
        if self.compactions.facts.pinned.contains(&tool_use_id) {
            self.pin(tool_use_id.clone(), false);
        }
        let events = self
            .on_history(move |messages, sizes, ctx, _| {
                crate::compact::timed(|| crate::compact::micro_compact::drop_result(messages, sizes, ctx, &tool_use_id))
            })
            .await;
        if events.is_empty() {
            self.emit(AgentEvent::Notice {
                message: "nothing to drop: that result is already a reference".into(),
            });
        }
        self.emit(self.breakdown());
    }

    /// `/compact --preview`: the receipts `/compact` would produce, writing nothing.
    pub(super) async fn preview_compact(&mut self, focus: Option<String>) {
        if self.conversation.messages().is_empty() {
            self.emit(AgentEvent::Notice {
                message: "nothing to compact yet".into(),
            });
            return;
        }
        let messages = self.conversation.messages().to_vec();
        let request = self.active_request();
        let config = self.pipeline_config();
        let facts = self.compactions.facts.clone();
        let workspace = self.tools.workspace().root().to_path_buf();
        let work = move || {
            use crate::compact::preview::{Preview, preview};
            preview(
                &messages,
                &request,
                &config,
                &facts,
                &workspace,
                &Preview::Compact { focus },
            )
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(events) => {
                self.note(Record::Shown {
                    item: Past::Preview { events: events.clone() },
                });
                self.sync_journal();
                self.emit(AgentEvent::Preview { events });
            }
            Err(error) => self.emit(AgentEvent::Error {
                message: format!("the preview failed: {error}"),
            }),
        }
    }

    /// `/undo`: the history as it was before the newest stage that changed it.
    pub(super) fn undo_newest(&mut self, only: Option<&str>) {
        let Some(event) = self.conversation.stage_log().last() else {
            self.emit(AgentEvent::Notice {
                message: "nothing to undo: no compaction changed this conversation".into(),
            });
            return;
        };
        if let Some(wanted) = only
            && wanted != event.id
        {
            let message = if self.conversation.stage_log().iter().any(|live| live.id == wanted) {
                format!(
                    "only the newest compaction can be undone: undo {} first (/undo)",
                    event.stage
                )
            } else {
                "that compaction was undone already".to_string()
            };
            self.emit(AgentEvent::Notice { message });
            return;
        }
        let stage = event.stage;
        let undid = event.id.clone();
        let mode = self.settings.compaction.estimate;
        match crate::compact::undo::undo(self.conversation.messages(), event, &self.store, mode) {
            Ok(restored) => {
                let chars_before = self.conversation.estimate();
                let before = self.extent();
                let result = self.conversation.undo_newest(restored);
                self.journaled(result);
                self.ledger.changed(before, self.extent());
                self.emit(AgentEvent::Undone {
                    stage,
                    undid,
                    chars_before,
                    chars_after: self.conversation.estimate(),
                });
                self.emit_context();
            }
            Err(error) => self.emit(AgentEvent::Error {
                message: error.to_string(),
            }),
        }
    }

    /// `/context`'s exact refresh: the provider counts the request as it is now
    /// (and each category, where the server counts locally).
    pub(super) async fn count_exactly(&mut self) {
        if self.server_counts() {
            match self.count_categories().await {
                Ok(()) => {
                    self.emit_context();
                    self.emit(self.breakdown());
                }
                Err(why) => self.emit(AgentEvent::Error {
                    message: format!("counting tokens failed: {why}"),
                }),
            }
            return;
        }
        match self.provider.count_tokens(&self.model_request()).await {
            Ok(Some(tokens)) => {
                let note = self.ledger.counted(tokens, self.extent());
                self.apply_limit(note);
                self.emit_context();
            }
            Ok(None) => self.emit(AgentEvent::Notice {
                message: format!(
                    "the {} provider offers no exact token count; the figure is the last call's",
                    self.provider.kind()
                ),
            }),
            Err(error) => self.emit(AgentEvent::Error {
                message: format!("counting tokens failed: {error}"),
            }),
        }
    }

    /// `/permissions`: list the approvals, or revoke one by its number.
    pub(super) fn permissions(&mut self, revoke: Option<usize>) {
        use super::approvals::Scope;
        if let Some(number) = revoke {
            let message = match number.checked_sub(1).and_then(|index| self.approvals.revoke(index)) {
                Some(Ok((_, approval))) => format!("revoked: {approval}"),
                Some(Err(error)) => {
                    format!("revoked for this session, but the project's file could not be written: {error}")
                }
                None => format!("there is no approval number {number}"),
            };
            self.emit(AgentEvent::Notice { message });
        }
        let list = self.approvals.list();
        let message = if list.is_empty() {
            "no approvals: a question's a (this session) or p (this project) adds one".to_string()
        } else {
            let lines: Vec<String> = list
                .iter()
                .enumerate()
                .map(|(at, (scope, approval))| {
                    let lasts = match scope {
                        Scope::Session => "this session",
                        Scope::Project => "this project",
                    };
                    format!("{}. {approval} · {lasts}", at + 1)
                })
                .collect();
            let kept = match self.approvals.project_file() {
                Some(file) if list.iter().any(|(scope, _)| *scope == Scope::Project) => {
                    format!("\nthe project's are kept in {}", file.display())
                }
                _ => String::new(),
            };
            format!("approved (/permissions revoke N):\n{}{kept}", lines.join("\n"))
        };
        self.emit(AgentEvent::Notice { message });
    }
}
