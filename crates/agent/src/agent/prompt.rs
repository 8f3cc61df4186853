//! The system prompt as sent: scratchpad's own, then the project's instruction files
//! (and the MCP servers' instructions once they are up), and the size of the fixed
//! part it makes with the tools. The prompt and its size change together, never one
//! without the other.

use crate::accounting::fixed_chars;
use crate::accounting::units::text_units;
use crate::compact::EstimateMode;
use crate::instructions::Instructions;
use crate::tools::ToolBox;

pub(super) struct Prompt {
    /// The project's instruction files, as the system prompt carries them.
    pub(super) instructions: Instructions,
    /// The system prompt sent.
    system: String,
    /// Token-like units of the fixed part (system prompt and tools).
    fixed_units: usize,
}

impl Prompt {
    /// scratchpad's `own` prompt with `instructions` after it, sized with `tools`;
    /// also the fixed part's characters as the estimate counts them.
    pub(super) fn new(own: &str, instructions: Instructions, tools: &ToolBox, mode: EstimateMode) -> (Prompt, usize) {
        let system = instructions.system_prompt(own);
        let mut prompt = Prompt {
            instructions,
            system: String::new(),
            fixed_units: 0,
        };
        let fixed = prompt.set_system(system, tools, mode);
        (prompt, fixed)
    }

    /// Send `system` from now on, with `tools` as they are now: its size is made
    /// again with it. The fixed part's characters as the estimate counts them.
    pub(super) fn set_system(&mut self, system: String, tools: &ToolBox, mode: EstimateMode) -> usize {
        let specs = tools.specs();
        let fixed = fixed_chars(&system, &specs, mode);
        self.fixed_units = text_units(&system) + text_units(&serde_json::to_string(&specs).unwrap_or_default());
        self.system = system;
        fixed
    }

    pub(super) fn system(&self) -> &str {
        &self.system
    }

    pub(super) fn fixed_units(&self) -> usize {
        self.fixed_units
    }
}
