//! `glob`: workspace files matching a pattern, sorted, never outside the workspace.
//! The walk (the `ignore` crate, as ripgrep walks) honours `.gitignore` files, and
//! skips `.git`, build caches (folders marked with a `CACHEDIR.TAG`, like cargo's
//! `target/`) and scratchpad's own folders: the model never gets our journals and
//! archives offered as workspace files.

use std::path::Path;

use globset::GlobBuilder;
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Job, Plan, Tool, ToolBox, ToolOutput, ToolsConfig};
use crate::store::OWN_FOLDERS;

const MAX_SHOWN: usize = 200;

pub(crate) struct Glob;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GlobInput {
    /// The pattern, relative to the workspace, e.g. `src/**/*.rs`.
    pattern: String,
}

impl Tool for Glob {
    const NAME: &'static str = "glob";
    const SUMMARY_FIELD: &'static str = "pattern";
    type Input = GlobInput;

    fn description(_: &ToolsConfig) -> String {
        format!("List workspace files matching a glob pattern (`**` matches any depth), sorted, at most {MAX_SHOWN}.")
    }

    fn plan(input: GlobInput, _: &ToolBox) -> Plan {
        Plan::Run(Job::Glob { pattern: input.pattern })
    }
}

pub fn glob(root: &Path, pattern: &str) -> ToolOutput {
    let pattern = pattern.trim().trim_start_matches("./");
    if pattern.is_empty() {
        return ToolOutput::error("glob: the pattern is empty");
    }
    if Path::new(pattern).is_absolute() || pattern.split('/').any(|part| part == "..") {
        return ToolOutput::error("glob: patterns must stay inside the workspace (no absolute paths, no `..`)");
    }
    let matcher = match GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(glob) => glob.compile_matcher(),
        Err(error) => return ToolOutput::error(format!("glob: invalid pattern: {error}")),
    };
    let top = root.to_path_buf();
    let mut matches: Vec<String> = WalkBuilder::new(root)
        .follow_links(false)
        .hidden(false)
        .require_git(false)
        .filter_entry(move |entry| {
            let name = entry.file_name();
            let ours = entry.path().parent() == Some(top.as_path()) && OWN_FOLDERS.iter().any(|own| name == *own);
            let cache = entry.file_type().is_some_and(|t| t.is_dir()) && entry.path().join("CACHEDIR.TAG").is_file();
            name != ".git" && !ours && !cache
        })
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| !t.is_dir()))
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(root).ok()?.to_str()?.to_string();
            matcher.is_match(&relative).then_some(relative)
        })
        .collect();
    matches.sort();
    if matches.is_empty() {
        return ToolOutput::ok(format!("No files match `{pattern}`"));
    }
    let total = matches.len();
    let mut out = matches.into_iter().take(MAX_SHOWN).collect::<Vec<_>>().join("\n");
    if total > MAX_SHOWN {
        out.push_str(&format!(
            "\n... {} more (showing {MAX_SHOWN} of {total})",
            total - MAX_SHOWN
        ));
    }
    ToolOutput::ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursive_sorted_capped_and_confined() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        for file in ["src/b.rs", "src/a.rs", "src/deep/c.rs", "README.md", ".git/config"] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        assert_eq!(glob(dir.path(), "**/*.rs").text, "src/a.rs\nsrc/b.rs\nsrc/deep/c.rs");
        assert_eq!(glob(dir.path(), "src/*.rs").text, "src/a.rs\nsrc/b.rs");
        assert_eq!(glob(dir.path(), "*.txt").text, "No files match `*.txt`");
        assert!(glob(dir.path(), "../*").is_error);
        assert!(glob(dir.path(), "/etc/*").is_error);
        for i in 0..250 {
            std::fs::write(dir.path().join(format!("f{i:03}.txt")), "").unwrap();
        }
        let many = glob(dir.path(), "*.txt").text;
        assert_eq!(many.lines().count(), 201);
        assert!(many.ends_with("... 50 more (showing 200 of 250)"));
    }

    #[test]
    fn gitignored_files_build_caches_and_our_own_folders_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        for folder in [
            "src",
            "target/debug",
            ".transcripts",
            ".task_outputs/tool-results",
            ".scratchpad/sessions",
            "gen",
        ] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        }
        std::fs::write(
            dir.path().join("target/CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        std::fs::write(dir.path().join(".gitignore"), "gen/\n").unwrap();
        for file in [
            "src/a.rs",
            "target/debug/b.rs",
            ".transcripts/t.jsonl",
            ".task_outputs/tool-results/r.txt",
            ".scratchpad/sessions/s.jsonl",
            "gen/c.rs",
            ".hidden.rs",
        ] {
            std::fs::write(dir.path().join(file), "").unwrap();
        }
        assert_eq!(glob(dir.path(), "**/*").text, ".gitignore\n.hidden.rs\nsrc/a.rs");
    }
}
