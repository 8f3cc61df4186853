//! Whether a command can run now and what it would do: the `/` finder shows it before
//! Enter, and the command (or its key in a view) says the same reason when it cannot.

use super::*;

impl App {
    /// What `command` would do now, or why it cannot run.
    pub(super) fn reach(&self, command: SlashCommand) -> Result<String, String> {
        if self.state.is_busy() && !command.while_busy() {
            return Err("a turn is running: wait for it to end".into());
        }
        // `/compact` is not among them: `--preview` looks without changing anything,
        // and the agent refuses the rest in a read-only view.
        let changes_history = matches!(
            command,
            SlashCommand::Summary
                | SlashCommand::Summarise
                | SlashCommand::Undo
                | SlashCommand::Pin
                | SlashCommand::Restore
                | SlashCommand::Drop
        );
        if changes_history && let Some(view) = &self.state.session.read_only {
            return Err(format!("nothing changes in {view}"));
        }
        match command {
            SlashCommand::Undo => match self.state.newest_undoable() {
                Some((_, event)) => Ok(format!("undo {}", event.summary_line())),
                None => Err("nothing to undo: no compaction in force changed this conversation".into()),
            },
            SlashCommand::Fork => self.fork_target().map(|(_, _, stage)| format!("fork before: {stage}")),
            SlashCommand::Summarise => self
                .summarise_target()
                .map(|(request, _)| format!("summarise everything before “{}”", first_line(&request))),
            SlashCommand::Pin | SlashCommand::Restore | SlashCommand::Drop if self.state.tools.is_empty() => {
                Err("no tool result in this conversation yet".into())
            }
            SlashCommand::Label | SlashCommand::Tree if self.state.session.id.is_empty() => {
                Err("this session keeps no journal, so it has no tree or name".into())
            }
            _ => Ok(command.description().to_string()),
        }
    }

    /// The selected marker a fork would start before: its chat entry, its first
    /// stage's id and how that stage reads; or why there is none.
    pub(super) fn fork_target(&self) -> Result<(usize, String, String), String> {
        let selected = self.selected_entry.and_then(|at| Some((at, self.state.chat.get(at)?)));
        let Some((at, ChatEntry::Marker(run))) = selected else {
            return Err("select a compaction marker in the chat first (Tab, ↑↓); /tree forks anywhere".into());
        };
        match run.events.first() {
            Some(first) if !first.id.is_empty() => Ok((at, first.id.clone(), first.summary_line())),
            _ => Err("this compaction changed nothing that a fork could start before".into()),
        }
    }

    /// The selected request a summary would end before, and how many requests with
    /// the same text follow it (as `/tree` tells them apart); or why there is none.
    pub(super) fn summarise_target(&self) -> Result<(String, usize), String> {
        let selected = self
            .selected_entry
            .and_then(|at| Some((at, self.state.chat.get(at)?.request_of()?)));
        let Some((at, request)) = selected else {
            return Err("select a request in the chat first (Tab, then ↑↓)".into());
        };
        if ChatEntry::opening_request(&self.state.chat) == Some(at) {
            return Err("this is the first request: nothing before it to summarise".into());
        }
        if let Some(view) = &self.state.session.read_only {
            return Err(format!("nothing is summarised in {view}"));
        }
        let later_same = self.state.chat[at + 1..]
            .iter()
            .filter_map(ChatEntry::request_of)
            .filter(|later| *later == request)
            .count();
        Ok((request.to_string(), later_same))
    }
}

/// A request's first line, short enough for one row.
fn first_line(text: &str) -> String {
    crate::ellipsized(text.lines().next().unwrap_or(""), 40)
}
