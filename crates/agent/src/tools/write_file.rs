//! `write_file`: a whole file of the workspace, created with its folders.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::files::write_whole;
use super::workspace::Workspace;
use super::{Job, PathAccess, Plan, Tool, ToolBox, ToolOutput, ToolsConfig};

pub(crate) struct WriteFile;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct WriteFileInput {
    /// The file, relative to the workspace.
    path: String,
    /// The whole new content.
    content: String,
}

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    const SUMMARY_FIELD: &'static str = "path";
    type Input = WriteFileInput;

    fn description(_: &ToolsConfig) -> String {
        "Write a whole file in the workspace, creating parent folders.".into()
    }

    fn plan(input: WriteFileInput, tools: &ToolBox) -> Plan {
        tools.plan_path(Self::NAME, &input.path, PathAccess::Write, |path, shown| Job::Write {
            path,
            shown,
            content: input.content,
        })
    }
}

pub fn run(workspace: &Workspace, path: &Path, shown: &str, content: &str) -> ToolOutput {
    match write_whole(workspace, path, shown, content, None) {
        Ok(()) => ToolOutput::ok(format!("Wrote {} bytes to {shown}", content.len())),
        Err(refused) => refused,
    }
}
