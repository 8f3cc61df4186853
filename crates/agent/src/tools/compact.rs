//! `compact`: the model asks for the conversation to be summarised. It answers at once;
//! the agent compacts once the whole tool batch has run.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Job, Plan, Tool, ToolBox, ToolOutput, ToolsConfig};

pub(crate) struct Compact;

/// What every `compact` call answers.
pub const COMPACT_ANSWER: &str = "Compaction requested after this tool batch.";

#[derive(Deserialize, JsonSchema)]
pub(crate) struct CompactInput {
    /// What the summary should keep in detail.
    focus: Option<String>,
}

impl Tool for Compact {
    const NAME: &'static str = "compact";
    const SUMMARY_FIELD: &'static str = "focus";
    type Input = CompactInput;

    fn description(_: &ToolsConfig) -> String {
        "Summarise the conversation so far into one message to free context. Runs after the current tool batch.".into()
    }

    fn plan(input: CompactInput, _: &ToolBox) -> Plan {
        Plan::Run(Job::Compact { focus: input.focus })
    }
}

pub(super) fn run() -> ToolOutput {
    ToolOutput::ok(COMPACT_ANSWER)
}
