//! The tool calls of one response, in order: each planned, asked about where needed,
//! run with cancellation, and answered with a result.

use super::*;

impl Agent {
    /// Run every call of one response in order. Every call gets exactly one result,
    /// also when refused or cancelled. Returns the results, a compaction request
    /// (with its focus) and whether the user cancelled.
    pub(super) async fn run_tools(&mut self, calls: Vec<ToolCall>, ops: &mut UnboundedReceiver<Op>) -> Batch {
        let mut results = Vec::with_capacity(calls.len());
        let mut compact = None;
        let mut cancelled = false;
        for ToolCall {
            id,
            name,
            input,
            problem,
        } in calls
        {
            self.emit(AgentEvent::ToolStarted {
                turn: self.turns.current,
                id: id.clone(),
                name: name.clone(),
                summary: input_summary(&name, &input),
            });
            let began = std::time::Instant::now();
            let (output, status) = if let Some(problem) = problem {
                (ToolOutput::error(format!("Error: {problem}")), ToolStatus::Error)
            } else if cancelled || self.turns.quit {
                (
                    ToolOutput::error("Cancelled by the user before it ran."),
                    ToolStatus::Cancelled,
                )
            } else {
                let plan = self.tools.plan(&name, &input);
                let result_cap = match &plan {
                    Plan::Run(Job::Mcp { tool, .. })
                    | Plan::Ask {
                        job: Job::Mcp { tool, .. },
                        ..
                    } => Some(tool.max_result_chars),
                    _ => None,
                };
                let (output, status) = match plan {
                    Plan::Refused(reason) => (ToolOutput::error(reason), ToolStatus::Refused),
                    Plan::Invalid(message) => (ToolOutput::error(message), ToolStatus::Error),
                    Plan::Run(job) => self.run_job(&id, job, &mut compact, &mut cancelled, ops).await,
                    Plan::Ask {
                        question,
                        destructive,
                        job,
                    } => match self.permission(&name, &question, destructive, &job, ops).await {
                        Decision::Allowed => self.run_job(&id, job, &mut compact, &mut cancelled, ops).await,
                        Decision::Denied(None) => (
                            ToolOutput::error(format!("Refused: the user did not allow this. ({question})")),
                            ToolStatus::Refused,
                        ),
                        Decision::Denied(Some(reason)) => (
                            ToolOutput::error(format!(
                                "Refused: the user did not allow this, and said: {reason} ({question})"
                            )),
                            ToolStatus::Refused,
                        ),
                        Decision::NobodyToAsk => (
                            ToolOutput::error(format!(
                                "Refused: this needs the user's approval, and this run cannot ask \
                                 (headless without --yes). ({question})"
                            )),
                            ToolStatus::Refused,
                        ),
                        Decision::Cancelled => {
                            cancelled = true;
                            (ToolOutput::error("Cancelled by the user."), ToolStatus::Cancelled)
                        }
                    },
                };
                match result_cap {
                    Some(cap) => (self.saved_beyond(&id, output, cap), status),
                    None => (output, status),
                }
            };
            self.emit(AgentEvent::ToolFinished {
                turn: self.turns.current,
                id: id.clone(),
                name,
                status,
                output: output.text.clone(),
            });
            self.note(Record::Shown {
                item: Past::CallEnded {
                    id: id.clone(),
                    status,
                    took_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
                },
            });
            results.push(ContentBlock::ToolResult {
                tool_use_id: id,
                content: ToolResultContent::Text(output.text),
                is_error: output.is_error.then_some(true),
                extra: Default::default(),
            });
        }
        Batch {
            results,
            compact,
            cancelled,
        }
    }

    /// An MCP result longer than its server's `max_result_chars`: saved whole to the
    /// archive (recorded, so it can be read back), and the model gets its start and the
    /// path; never a silent cut. Should the save fail, the whole result is kept.
    fn saved_beyond(&mut self, id: &str, output: ToolOutput, cap: usize) -> ToolOutput {
        let chars = output.text.chars().count();
        if chars <= cap {
            return output;
        }
        let saved = self
            .store
            .save_tool_result(id, &output.text)
            .and_then(|kept| self.store.sync().map(|()| kept));
        match saved {
            Ok(kept) => {
                let preview = crate::text::prefix_chars(&output.text, cap);
                ToolOutput {
                    text: crate::compact::markers::persisted_output(&kept.path, chars, preview),
                    is_error: output.is_error,
                }
            }
            Err(error) => {
                self.emit(AgentEvent::Notice {
                    message: format!("a {chars}-char MCP result could not be saved ({error}); it is kept whole"),
                });
                output
            }
        }
    }

    /// Run call `id`'s job, said by [`AgentEvent::ToolRunning`] as it starts.
    pub(super) async fn run_job(
        &mut self,
        id: &str,
        job: Job,
        compact: &mut Option<CompactRequest>,
        cancelled: &mut bool,
        ops: &mut UnboundedReceiver<Op>,
    ) -> (ToolOutput, ToolStatus) {
        if let Job::Compact { focus } = &job {
            *compact = Some(CompactRequest { focus: focus.clone() });
        }
        self.emit(AgentEvent::ToolRunning {
            turn: self.turns.current,
            id: id.to_string(),
        });
        let inspect = || self.breakdown();
        match unless_interrupted(ops, &self.events, &inspect, self.tools.run(job)).await {
            Ok(output) => {
                let status = if output.is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                (output, status)
            }
            Err(interrupted) => {
                *cancelled = true;
                self.turns.quit |= matches!(interrupted, Interrupted::Quit);
                (
                    ToolOutput::error("Cancelled by the user while running; the process was killed."),
                    ToolStatus::Cancelled,
                )
            }
        }
    }

    /// Ask the user about `job`, unless an earlier "always" covers it.
    pub(super) async fn permission(
        &mut self,
        tool: &str,
        question: &str,
        destructive: bool,
        job: &Job,
        ops: &mut UnboundedReceiver<Op>,
    ) -> Decision {
        match self.settings.ask {
            AskPolicy::Approve => return Decision::Allowed,
            AskPolicy::Refuse => return Decision::NobodyToAsk,
            AskPolicy::Ask => {}
        }
        if !destructive && self.approvals.covers(tool, job) {
            return Decision::Allowed;
        }
        let always = (!destructive).then(|| approvals::rule_for(tool, job)).flatten();
        let request_id = self.turns.next_question();
        self.emit(AgentEvent::PermissionRequest {
            turn: self.turns.current,
            request_id,
            tool: tool.to_string(),
            question: question.to_string(),
            subject: job.subject(),
            always: always.as_ref().map(ToString::to_string),
        });
        loop {
            match ops.recv().await {
                Some(Op::Permission { request_id: id, answer }) if id == request_id => {
                    self.emit(AgentEvent::Answered { request_id });
                    return match answer {
                        PermissionAnswer::AllowOnce => Decision::Allowed,
                        PermissionAnswer::Deny => Decision::Denied(None),
                        PermissionAnswer::DenyBecause(reason) => Decision::Denied(Some(reason)),
                        PermissionAnswer::AlwaysForSession => match always {
                            Some(rule) => {
                                self.approvals.grant(rule);
                                Decision::Allowed
                            }
                            // Not offered for this question: it counts as once.
                            None => Decision::Allowed,
                        },
                        PermissionAnswer::AlwaysForProject => match always {
                            Some(rule) => {
                                if let Err(error) = self.approvals.grant_for_project(rule.clone()) {
                                    self.emit(AgentEvent::Notice {
                                        message: format!(
                                            "{rule} could not be kept for the project ({error}); it is approved for this session"
                                        ),
                                    });
                                    self.approvals.grant(rule);
                                }
                                Decision::Allowed
                            }
                            None => Decision::Allowed,
                        },
                    };
                }
                None | Some(Op::Quit) => {
                    self.turns.quit = true;
                    return Decision::Cancelled;
                }
                Some(Op::Cancel) => return Decision::Cancelled,
                Some(Op::Inspect) => self.emit(self.breakdown()),
                Some(_) => {}
            }
        }
    }
}

/// The `compact` tool was called in a batch, with this focus.
pub(super) struct CompactRequest {
    pub(super) focus: Option<String>,
}

/// What running one response's tool calls gave.
pub(super) struct Batch {
    /// One result per call, in order.
    pub(super) results: Vec<ContentBlock>,
    pub(super) compact: Option<CompactRequest>,
    /// The user cancelled during the batch (later calls got "cancelled" results).
    pub(super) cancelled: bool,
}

/// The user's answer to a permission question.
pub(super) enum Decision {
    Allowed,
    /// With the user's words for the model, when they gave any.
    Denied(Option<String>),
    /// Headless without `--yes`: there is no one to ask.
    NobodyToAsk,
    /// The user cancelled the turn (or quit) instead of answering.
    Cancelled,
}
