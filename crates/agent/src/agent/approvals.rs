//! What the user approved "always": never a whole tool of ours, only what the question
//! was about. For `bash`, a prefix rule the modal offered by name (`cargo test …`),
//! which later covers a command only when it is one simple command starting with
//! those words; for file tools, the exact path; for an MCP tool, that tool (its server
//! decides what an input means). Destructive questions are never approved this way.
//!
//! An approval lasts the session (`/clear` forgets it) or, when the user says so, the
//! project: those are kept per workspace in the data folder (outside the workspace,
//! where the model's commands cannot write), read again at every start, and listed
//! and revoked in `/permissions` like the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tools::Job;
use crate::tools::shell_grammar;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Approval {
    /// Commands that are one simple command beginning with these words.
    CommandPrefix(Vec<String>),
    /// One file tool on one path.
    Path { tool: String, path: String },
    /// One MCP tool, whatever its input.
    McpTool(String),
}

impl std::fmt::Display for Approval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Approval::CommandPrefix(words) => write!(f, "bash: \"{} …\"", words.join(" ")),
            Approval::Path { tool, path } => write!(f, "{tool}: {path}"),
            Approval::McpTool(tool) => write!(f, "{tool}: any input"),
        }
    }
}

/// The one simple command `command` consists of, as literal words; `None` for
/// anything more (a pipeline, a list, a substitution, a word known only at run time).
fn single_command(command: &str) -> Option<Vec<String>> {
    let parsed = shell_grammar::parse(command);
    if !parsed.opaque.is_empty() || !parsed.written_files.is_empty() || parsed.commands.len() != 1 {
        return None;
    }
    parsed.commands[0].iter().cloned().collect()
}

/// What "always" would approve for this job: offered in the modal by name.
pub(super) fn rule_for(tool: &str, job: &Job) -> Option<Approval> {
    match job {
        Job::Bash { command, .. } => {
            let words = single_command(command)?;
            let prefix_len = if words.len() > 1 && !words[1].starts_with('-') {
                2
            } else {
                1
            };
            Some(Approval::CommandPrefix(words.into_iter().take(prefix_len).collect()))
        }
        Job::Read { shown, .. } | Job::Write { shown, .. } | Job::Edit { shown, .. } => Some(Approval::Path {
            tool: tool.to_string(),
            path: shown.clone(),
        }),
        Job::Mcp { tool, .. } => Some(Approval::McpTool(tool.qualified.clone())),
        Job::Glob { .. } | Job::Compact { .. } | Job::Recall { .. } => None,
    }
}

/// The file, in the data folder, that keeps each project's approvals.
const PROJECT_FILE: &str = "project-approvals.json";

/// Where a project's approvals are kept: the file, and the workspace's key in it.
#[derive(Debug)]
struct ProjectRecord {
    file: PathBuf,
    workspace: String,
}

/// How long an approval lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    Session,
    Project,
}

/// The approvals in force: this session's, then the project's.
#[derive(Debug, Default)]
pub(super) struct Approvals {
    granted: Vec<Approval>,
    project: Vec<Approval>,
    record: Option<ProjectRecord>,
}

impl Approvals {
    /// The approvals of the project at `workspace`, read from `data_dir` (none kept
    /// without one), and a line when the file could not be read.
    pub(super) fn of_project(data_dir: Option<&Path>, workspace: &Path) -> (Self, Option<String>) {
        let Some(data_dir) = data_dir else {
            return (Self::default(), None);
        };
        let record = ProjectRecord {
            file: data_dir.join(PROJECT_FILE),
            workspace: scratchpad_core::places::workspace_key(workspace),
        };
        let (mut all, problem) = read_records(&record.file);
        let project = all.remove(&record.workspace).unwrap_or_default();
        let approvals = Approvals {
            granted: Vec::new(),
            project,
            record: Some(record),
        };
        (approvals, problem)
    }

    pub(super) fn grant(&mut self, approval: Approval) {
        if !self.granted.contains(&approval) {
            self.granted.push(approval);
        }
    }

    /// Approve for the project: kept in the data folder for every later session.
    pub(super) fn grant_for_project(&mut self, approval: Approval) -> std::io::Result<()> {
        if !self.project.contains(&approval) {
            self.project.push(approval);
        }
        self.save()
    }

    /// Whether an earlier "always" covers this (non-destructive) job.
    pub(super) fn covers(&self, tool: &str, job: &Job) -> bool {
        self.granted
            .iter()
            .chain(&self.project)
            .any(|approval| match (approval, job) {
                (Approval::CommandPrefix(prefix), Job::Bash { command, .. }) => {
                    single_command(command).is_some_and(|words| words.starts_with(prefix))
                }
                (Approval::Path { .. } | Approval::McpTool(_), _) => rule_for(tool, job).as_ref() == Some(approval),
                _ => false,
            })
    }

    /// Every approval with how long it lasts, numbered from 1 in this order.
    pub(super) fn list(&self) -> Vec<(Scope, &Approval)> {
        let session = self.granted.iter().map(|approval| (Scope::Session, approval));
        let project = self.project.iter().map(|approval| (Scope::Project, approval));
        session.chain(project).collect()
    }

    /// Where the project's approvals are kept, when they are.
    pub(super) fn project_file(&self) -> Option<&Path> {
        self.record.as_ref().map(|record| record.file.as_path())
    }

    /// Revoke the `index`-th approval of [`Approvals::list`] (0-based); `None` if
    /// there is none. A project's is removed from its file too.
    pub(super) fn revoke(&mut self, index: usize) -> Option<std::io::Result<(Scope, Approval)>> {
        if index < self.granted.len() {
            return Some(Ok((Scope::Session, self.granted.remove(index))));
        }
        let at = index - self.granted.len();
        (at < self.project.len()).then(|| {
            let approval = self.project.remove(at);
            self.save().map(|()| (Scope::Project, approval))
        })
    }

    /// Forget this session's approvals (`/clear`); the project's stay.
    pub(super) fn clear(&mut self) {
        self.granted.clear();
    }

    /// Write the project's approvals into the file, with every other project's as
    /// they are there now (written whole, then renamed into place).
    fn save(&self) -> std::io::Result<()> {
        let Some(record) = &self.record else {
            return Err(std::io::Error::other("there is no data folder to keep the approval in"));
        };
        let (mut all, _) = read_records(&record.file);
        if self.project.is_empty() {
            all.remove(&record.workspace);
        } else {
            all.insert(record.workspace.clone(), self.project.clone());
        }
        crate::store::write_json_whole(&record.file, &all)
    }
}

/// Every project's approvals in `file`; none (and a line) when it is there but is not
/// such a file.
fn read_records(file: &Path) -> (BTreeMap<String, Vec<Approval>>, Option<String>) {
    match crate::store::read_json_whole(file) {
        Ok(all) => (all.unwrap_or_default(), None),
        Err(error) => (
            BTreeMap::new(),
            Some(format!("not a file of approvals: {error}; no project approval applies")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    /// An approval for the project outlives the session: a later one in the same
    /// workspace reads it, another workspace does not, and a revoke removes it from
    /// the file. A broken file is said and applies nothing.
    #[test]
    fn a_project_approval_is_kept_for_the_next_session_and_revoked_from_the_file() {
        let data = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let (mut first, problem) = Approvals::of_project(Some(data.path()), workspace.path());
        assert!(problem.is_none());
        first
            .grant_for_project(rule_for("bash", &bash("cargo test")).unwrap())
            .unwrap();
        first.grant(rule_for("bash", &bash("ls -la")).unwrap());
        first.clear();
        assert!(
            first.covers("bash", &bash("cargo test -q")),
            "/clear keeps the project's"
        );
        let (mut next, _) = Approvals::of_project(Some(data.path()), workspace.path());
        assert!(next.covers("bash", &bash("cargo test --workspace")));
        assert!(!next.covers("bash", &bash("ls -la")), "the session's went with it");
        let (elsewhere, _) = Approvals::of_project(Some(data.path()), other.path());
        assert!(!elsewhere.covers("bash", &bash("cargo test")));
        let (scope, revoked) = next.revoke(0).unwrap().unwrap();
        assert_eq!(
            (scope, revoked.to_string()),
            (Scope::Project, "bash: \"cargo test …\"".to_string())
        );
        let (after, _) = Approvals::of_project(Some(data.path()), workspace.path());
        assert!(!after.covers("bash", &bash("cargo test")), "revoked from the file");
        std::fs::write(data.path().join(PROJECT_FILE), "not json").unwrap();
        let (broken, problem) = Approvals::of_project(Some(data.path()), workspace.path());
        assert!(broken.list().is_empty());
        assert!(problem.unwrap().contains("not a file of approvals"));
    }

    fn bash(command: &str) -> Job {
        Job::Bash {
            command: command.into(),
            timeout: Duration::from_secs(1),
            git_writable: false,
        }
    }

    #[test]
    fn a_prefix_rule_covers_one_simple_command_and_nothing_chained_to_it() {
        let rule = rule_for("bash", &bash("cargo test --workspace")).unwrap();
        assert_eq!(rule.to_string(), "bash: \"cargo test …\"");
        let mut approvals = Approvals::default();
        approvals.grant(rule);
        assert!(approvals.covers("bash", &bash("cargo test -p scratchpad")));
        assert!(!approvals.covers("bash", &bash("cargo build")));
        assert!(!approvals.covers("bash", &bash("cargo test; rm -rf x")));
        assert!(!approvals.covers("bash", &bash("cargo test $(curl x)")));
        assert!(!approvals.covers("bash", &bash("cargo test > /etc/x")));
    }

    #[test]
    fn a_path_approval_is_that_tool_on_that_path() {
        let read = |shown: &str| Job::Read {
            path: PathBuf::from("/outside").join(shown),
            shown: shown.into(),
            offset: 1,
            limit: 10,
        };
        let mut approvals = Approvals::default();
        approvals.grant(rule_for("read_file", &read("/outside/a.txt")).unwrap());
        assert!(approvals.covers("read_file", &read("/outside/a.txt")));
        assert!(!approvals.covers("read_file", &read("/outside/b.txt")));
        let revoked = approvals.revoke(0).expect("one approval").expect("no file to write");
        assert_eq!(revoked.1.to_string(), "read_file: /outside/a.txt");
        assert!(!approvals.covers("read_file", &read("/outside/a.txt")));
        assert!(approvals.revoke(0).is_none());
    }
}
