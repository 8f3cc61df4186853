//! `read_file`: a text file of the workspace, whole or a range of lines.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::files::{looks_binary, read_capped};
use super::workspace::Workspace;
use super::{Job, PathAccess, Plan, Tool, ToolBox, ToolOutput, ToolsConfig};

pub(crate) struct ReadFile;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ReadFileInput {
    /// The file, relative to the workspace.
    path: String,
    /// The first line to show, 1-based.
    offset: Option<u64>,
    /// How many lines to show.
    limit: Option<u64>,
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    const SUMMARY_FIELD: &'static str = "path";
    type Input = ReadFileInput;

    fn description(config: &ToolsConfig) -> String {
        format!(
            "Read a text file in the workspace. Optional 1-based line offset and line limit \
             (without a limit, the first {} lines).",
            config.read_default_lines
        )
    }

    fn plan(input: ReadFileInput, tools: &ToolBox) -> Plan {
        let offset = usize::try_from(input.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
        let limit = input.limit.map_or(tools.config.read_default_lines, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
        tools.plan_path(Self::NAME, &input.path, PathAccess::Read, |path, shown| Job::Read {
            path,
            shown,
            offset,
            limit,
        })
    }
}

pub fn run(workspace: &Workspace, path: &Path, shown: &str, offset: usize, limit: usize) -> ToolOutput {
    let bytes = match read_capped(workspace, path, shown) {
        Ok((bytes, stamp)) => {
            workspace.saw(path, stamp);
            bytes
        }
        Err(refused) => return refused,
    };
    if looks_binary(&bytes) {
        return ToolOutput::ok(format!("{shown} is a binary file ({} bytes); not shown", bytes.len()));
    }
    let text = String::from_utf8_lossy(&bytes);
    if text.is_empty() {
        return ToolOutput::ok(format!("{shown} is empty"));
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = offset.saturating_sub(1).min(lines.len());
    let end = start.saturating_add(limit).min(lines.len());
    let mut out: String = lines[start..end].concat();
    if end < lines.len() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("... ({} more lines)", lines.len() - end));
    }
    ToolOutput::ok(out)
}
