//! The project's instruction files in the agent: read at the start, read again before
//! every model call (an edit reaches the next request, with a marker, since it
//! rewrites the cached prefix), and on `/instructions`.

use super::*;
use crate::protocol::{InstructionRow, InstructionsNote};

impl Agent {
    /// What the chat and `/context` show of the files now, with `changes`.
    pub(super) fn instructions_note(&self, changes: Vec<String>) -> InstructionsNote {
        InstructionsNote {
            files: self
                .prompt
                .instructions
                .files
                .iter()
                .map(|file| InstructionRow {
                    path: file.shown.clone(),
                    chars: file.text.chars().count(),
                    prompt_chars: file.prompt_chars(),
                    cut: file.is_cut(),
                })
                .collect(),
            problems: self.prompt.instructions.problems.clone(),
            changes,
            cache_rewritten: None,
            cache_miss: None,
        }
    }

    /// The start's line: which files the system prompt carries, and any left out.
    pub(super) fn announce_instructions(&self) {
        let note = self.instructions_note(Vec::new());
        if !note.files.is_empty() || !note.problems.is_empty() {
            self.emit(AgentEvent::Instructions { note });
        }
    }

    /// Before a model call: read the files again, and take in any change.
    pub(super) fn refresh_instructions(&mut self) {
        self.take_in_changes();
    }

    /// `/instructions`: read the files again and show them, changed or not.
    pub(super) fn reload_instructions(&mut self) {
        if self.take_in_changes() {
            return;
        }
        if self.prompt.instructions.files.is_empty() && self.prompt.instructions.problems.is_empty() {
            self.emit(AgentEvent::Notice {
                message: format!(
                    "no project instructions: none of {} in the workspace, the folders up to the repository root, \
                     or the config folder",
                    self.settings.instructions.files.join(", ")
                ),
            });
        } else {
            self.emit(AgentEvent::Instructions {
                note: self.instructions_note(Vec::new()),
            });
        }
    }

    /// Read the files again; when they changed, use them from the next request on and
    /// say what changed (journaled, so a resumed session shows it too).
    fn take_in_changes(&mut self) -> bool {
        let newer = Instructions::load(self.tools.workspace().root(), &self.settings.instructions);
        let changes = self.prompt.instructions.changes(&newer);
        if changes.is_empty() {
            return false;
        }
        self.set_instructions(newer);
        let note = self.instructions_note(changes);
        self.note(Record::Shown {
            item: Past::Instructions { note: note.clone() },
        });
        self.emit(AgentEvent::Instructions { note });
        true
    }

    /// The system prompt carries `instructions` from the next request on.
    fn set_instructions(&mut self, instructions: Instructions) {
        self.compactions.facts.verbatim_instructions = instructions.shown_paths();
        self.prompt.instructions = instructions;
        self.take_in_system(self.system_prompt_now());
    }

    /// The system prompt as it is now: scratchpad's own with the instruction files,
    /// then the MCP servers' instructions.
    pub(super) fn system_prompt_now(&self) -> String {
        format!(
            "{}{}",
            self.prompt.instructions.system_prompt(&self.settings.system_prompt),
            super::mcp::mcp_instructions(self.tools.mcp())
        )
    }

    /// `system` is sent from the next request on, with the tools as they are now: the
    /// fixed part, its units and the limit follow.
    pub(super) fn take_in_system(&mut self, system: String) {
        let before = self.extent();
        let fixed = self
            .prompt
            .set_system(system, &self.tools, self.settings.compaction.estimate);
        let note = self.ledger.fixed_changed(fixed, before, self.extent());
        self.apply_limit(note);
        self.emit_context();
    }
}
