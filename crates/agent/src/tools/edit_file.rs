//! `edit_file`: one exact occurrence of a text replaced in a workspace file.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::files::{read_capped, write_whole};
use super::workspace::Workspace;
use super::{Job, PathAccess, Plan, Tool, ToolBox, ToolOutput, ToolsConfig};

pub(crate) struct EditFile;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct EditFileInput {
    /// The file, relative to the workspace.
    path: String,
    /// The exact text to replace; it must occur once.
    old_text: String,
    /// What replaces it.
    new_text: String,
}

impl Tool for EditFile {
    const NAME: &'static str = "edit_file";
    const SUMMARY_FIELD: &'static str = "path";
    type Input = EditFileInput;

    fn description(_: &ToolsConfig) -> String {
        "Replace one exact occurrence of old_text with new_text in a file.".into()
    }

    fn plan(input: EditFileInput, tools: &ToolBox) -> Plan {
        tools.plan_path(Self::NAME, &input.path, PathAccess::Write, |path, shown| Job::Edit {
            path,
            shown,
            old: input.old_text,
            new: input.new_text,
        })
    }
}

pub fn run(workspace: &Workspace, path: &Path, shown: &str, old: &str, new: &str) -> ToolOutput {
    if old.is_empty() {
        return ToolOutput::error("old_text is empty; use write_file to create a file");
    }
    let (bytes, now) = match read_capped(workspace, path, shown) {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    // The file as the model knew it: changed since (another process appended lines)
    // and the edit would be made to text the model never saw.
    if workspace.last_seen(path).is_some_and(|seen| seen != now) {
        return ToolOutput::error(format!(
            "{shown} changed since you last read it (someone else wrote it); read it again, then edit"
        ));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!("{shown} is not UTF-8 text; edit_file will not change it"));
    };
    match text.matches(old).count() {
        0 => ToolOutput::error(format!(
            "old_text was not found in {shown}; read the file and copy the text exactly"
        )),
        1 => match write_whole(workspace, path, shown, &text.replacen(old, new, 1), Some(now)) {
            Ok(()) => ToolOutput::ok(format!("Edited {shown}: replaced 1 occurrence")),
            Err(refused) => refused,
        },
        n => ToolOutput::error(format!(
            "old_text occurs {n} times in {shown}; include more surrounding text so it is unique"
        )),
    }
}
