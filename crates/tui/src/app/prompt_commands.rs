//! What the prompt sends: a request to the agent (or the answer to a question
//! waiting for one), an interrupt, or a slash command.

use super::*;

impl App {
    pub(super) fn submit(&mut self, text: String) {
        if let Some(request_id) = self.stop_denying() {
            self.send(Op::Permission {
                request_id,
                answer: PermissionAnswer::DenyBecause(text),
            });
            self.state.turn.answered(request_id);
            return;
        }
        match SlashCommand::parse(&text) {
            Some(Ok((command, rest))) => {
                match self.reach(command) {
                    Ok(_) => self.run_command(command, rest),
                    Err(why) => self.tell(format!("{}: {why}", command.name())),
                }
                return;
            }
            Some(Err(name)) => {
                self.tell(format!("unknown command /{name}; /help lists them"));
                // The text stays, to be corrected.
                self.input.set_text(&text);
                return;
            }
            None => {}
        }
        if let Some(view) = &self.state.session.read_only {
            // Nothing is sent from a read-only view; the text stays, to be copied.
            self.tell(format!("not sent: this is {view}"));
            self.input.set_text(&text);
            return;
        }
        if self.state.is_busy() {
            // Queued, not lost: it stays in the prompt, editable, until the turn ends;
            // what is typed next starts on a line of its own rather than running on.
            self.input.set_text(&format!("{}\n", text.trim_end_matches('\n')));
            self.queued = true;
            return;
        }
        self.chat.follow();
        self.send(Op::Submit { text });
        self.state.submitted();
    }

    /// Ctrl+C: the first press cancels the running turn (or clears the prompt); a
    /// second within [`QUIT_WINDOW`] quits.
    ///
    /// Only a press that did nothing else (an idle app, an empty prompt) arms the
    /// quit: one that cancelled a turn or cleared the prompt is followed by another
    /// press, often in haste, that must not end the session.
    pub(super) fn interrupt(&mut self) {
        let now = Instant::now();
        if self.state.is_busy() || self.state.turn.question().is_some() {
            self.last_interrupt = None;
            self.cancel();
            return;
        }
        if !self.input.is_empty() {
            self.last_interrupt = None;
            self.input.clear();
            self.tell("prompt cleared · Ctrl+C on an empty prompt, twice, quits");
            return;
        }
        if self
            .last_interrupt
            .is_some_and(|at| now.duration_since(at) < QUIT_WINDOW)
        {
            self.send(Op::Quit);
            self.quit = true;
            return;
        }
        self.last_interrupt = Some(now);
        self.tell_for("press Ctrl+C again to quit", QUIT_WINDOW);
    }

    fn run_command(&mut self, command: SlashCommand, rest: &str) {
        match command {
            SlashCommand::Compact => match rest.strip_prefix("--preview").map(str::trim) {
                Some(focus) => {
                    let focus = (!focus.is_empty()).then(|| focus.to_string());
                    self.overlay = Overlay::Preview(super::super::review::PreviewView::new(focus.clone()));
                    self.send(Op::Preview { focus });
                }
                None => self.send(Op::Compact {
                    focus: (!rest.is_empty()).then(|| rest.to_string()),
                }),
            },
            SlashCommand::Context => self.open_context(),
            SlashCommand::Summary => self.send(Op::ReviewReady),
            SlashCommand::Archive => {
                self.under = None;
                self.browse(Browser::new());
            }
            SlashCommand::Clear => self.send(Op::Clear),
            SlashCommand::Resume => self.open_picker(),
            SlashCommand::Tree => self.open_tree(false),
            SlashCommand::Undo => self.send(Op::Undo { stage_id: None }),
            SlashCommand::Permissions => match rest.strip_prefix("revoke").map(str::trim) {
                None if rest.is_empty() => self.send(Op::Permissions { revoke: None }),
                Some(number) if number.parse::<usize>().is_ok() => self.send(Op::Permissions {
                    revoke: number.parse().ok(),
                }),
                _ => self.tell(format!("usage: {} {}", command.name(), command.arguments())),
            },
            SlashCommand::Instructions => self.send(Op::Instructions),
            SlashCommand::Mcp => {
                let action = match rest
                    .split_once(char::is_whitespace)
                    .map(|(verb, name)| (verb, name.trim()))
                {
                    _ if rest.is_empty() => Ok(None),
                    None if rest == "trust" => Ok(Some(McpAction::Trust)),
                    Some(("restart", name)) if !name.is_empty() => Ok(Some(McpAction::Restart(name.to_string()))),
                    Some(("disable", name)) if !name.is_empty() => Ok(Some(McpAction::Disable(name.to_string()))),
                    _ => Err(()),
                };
                match action {
                    Ok(action) => self.send(Op::Mcp { action }),
                    Err(()) => self.tell(format!("usage: {} {}", command.name(), command.arguments())),
                }
            }
            SlashCommand::Model => {
                // One item a line, as /mcp lists its servers.
                let info = &self.state.session;
                let mut lines = vec![format!("provider {} · model {}", info.provider, info.model)];
                if let Some(window) = &info.window {
                    lines.push(format!(
                        "window {} tokens ({})",
                        crate::compact::short_count(window.tokens as usize),
                        window.source
                    ));
                }
                if let Some(status) = &self.state.context {
                    let how = info.limit_note.as_deref().unwrap_or("as configured");
                    lines.push(format!(
                        "limit {} chars · {how}",
                        crate::compact::short_count(status.limit)
                    ));
                }
                lines.push(crate::tools::sandbox::SandboxState::label_of(&info.sandbox));
                lines.extend(info.sandbox_layers.iter().map(|layer| format!("  {layer}")));
                self.note(lines.join("\n"));
            }
            SlashCommand::Help => self.overlay = Overlay::Help(HelpView::on(View::Prompt)),
            SlashCommand::Summarise => match self.summarise_target() {
                Ok((request, later_same)) => self.send(Op::SummariseUpTo { request, later_same }),
                Err(why) => self.tell(why),
            },
            // Named in the finder before Enter, so no second press confirms it.
            SlashCommand::Fork => match self.fork_target() {
                Ok((_, first, _)) => self.send(Op::Fork {
                    session: None,
                    at: crate::protocol::ForkAt::Stage(first),
                }),
                Err(why) => self.tell(why),
            },
            SlashCommand::Count => {
                self.open_context();
                self.send(Op::CountTokens);
            }
            SlashCommand::Pin | SlashCommand::Restore | SlashCommand::Drop => self.pick_a_tool_result(command),
            SlashCommand::Label if rest.is_empty() => {
                self.tell(format!(
                    "usage: {} {} (l in /tree names any point)",
                    command.name(),
                    command.arguments()
                ));
            }
            SlashCommand::Label => {
                let key = crate::session::labels::key(&self.state.session.id, None);
                self.request(DiskJob::Label {
                    key,
                    label: rest.to_string(),
                });
            }
            SlashCommand::Quit => {
                self.send(Op::Quit);
                self.quit = true;
            }
        }
    }

    /// `/pin`, `/restore`, `/drop`: they act on a tool result chosen in /context, so
    /// it opens on the tool results, in hand (its letters act at once), and says
    /// which key does it.
    fn pick_a_tool_result(&mut self, command: SlashCommand) {
        self.open_context();
        if let Overlay::Context(view) = &mut self.overlay {
            view.list = crate::context_view::ItemList::ToolResults;
        }
        self.in_hand = Some(std::mem::discriminant(&self.overlay));
        let key = command.action().and_then(keymap::hint).unwrap_or_default();
        self.tell(format!("select a tool result with ↑↓, then {key}"));
    }
}
