//! `recall`: the archived message(s) an index entry points at (`PATH:LINE` in a
//! record a summary was written from), read back only while the file has the hash
//! scratchpad recorded when it wrote it. Anything else, inside the archive or out, is
//! refused.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Job, Plan, Tool, ToolBox, ToolOutput, ToolsConfig};
use crate::compact::record::{Pointer, recall};
use crate::store::Store;

pub(crate) struct Recall;

/// Most messages one call returns.
const MOST_MESSAGES: u64 = 20;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct RecallInput {
    /// PATH:LINE
    pointer: String,
    /// Messages from there (1-20, default 1).
    count: Option<u64>,
}

impl Tool for Recall {
    const NAME: &'static str = "recall";
    const SUMMARY_FIELD: &'static str = "pointer";
    type Input = RecallInput;

    fn description(_: &ToolsConfig) -> String {
        "Read back archived messages at a PATH:LINE pointer from a [Compacted] message's index.".into()
    }

    fn plan(input: RecallInput, _: &ToolBox) -> Plan {
        match input.pointer.parse::<Pointer>() {
            Ok(pointer) => Plan::Run(Job::Recall {
                pointer,
                count: usize::try_from(input.count.unwrap_or(1).clamp(1, MOST_MESSAGES)).unwrap_or(1),
            }),
            Err(error) => Plan::Invalid(error.to_string()),
        }
    }
}

/// The messages at `pointer`, as the summariser reads messages, each under its line.
pub(super) fn run(archive: &Store, pointer: &Pointer, count: usize) -> ToolOutput {
    match recall(archive, pointer, count) {
        Ok(messages) => {
            let mut text = String::new();
            for (line, message) in messages {
                text.push_str(&format!("[{}:{line}]\n", pointer.path));
                text.push_str(crate::compact::render::to_text(std::slice::from_ref(&message)).trim_end());
                text.push_str("\n\n");
            }
            ToolOutput::ok(text.trim_end().to_string())
        }
        Err(error) => ToolOutput::error(format!("recall refused: {error}")),
    }
}
