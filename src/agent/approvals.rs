//! What the user approved "always for this session": never a whole tool of ours, only
//! what the question was about. For `bash`, a prefix rule the modal offered by name
//! (`cargo test …`), which later covers a command only when it is one simple command
//! starting with those words; for file tools, the exact path; for an MCP tool, that
//! tool (its server decides what an input means). Destructive questions are never
//! approved this way, and `/clear` forgets everything.

use crate::tools::Job;
use crate::tools::shell_grammar;

#[derive(Clone, Debug, PartialEq, Eq)]
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
        Job::Glob { .. } | Job::Compact { .. } => None,
    }
}

/// The approvals of this session.
#[derive(Debug, Default)]
pub(super) struct Approvals {
    granted: Vec<Approval>,
}

impl Approvals {
    pub(super) fn grant(&mut self, approval: Approval) {
        if !self.granted.contains(&approval) {
            self.granted.push(approval);
        }
    }

    /// Whether an earlier "always" covers this (non-destructive) job.
    pub(super) fn covers(&self, tool: &str, job: &Job) -> bool {
        self.granted.iter().any(|approval| match (approval, job) {
            (Approval::CommandPrefix(prefix), Job::Bash { command, .. }) => {
                single_command(command).is_some_and(|words| words.starts_with(prefix))
            }
            (Approval::Path { .. } | Approval::McpTool(_), _) => rule_for(tool, job).as_ref() == Some(approval),
            _ => false,
        })
    }

    pub(super) fn list(&self) -> &[Approval] {
        &self.granted
    }

    /// Revoke the `index`-th approval (0-based); `None` if there is none.
    pub(super) fn revoke(&mut self, index: usize) -> Option<Approval> {
        (index < self.granted.len()).then(|| self.granted.remove(index))
    }

    pub(super) fn clear(&mut self) {
        self.granted.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

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
        assert_eq!(
            approvals.revoke(0).map(|a| a.to_string()).as_deref(),
            Some("read_file: /outside/a.txt")
        );
        assert!(!approvals.covers("read_file", &read("/outside/a.txt")));
        assert_eq!(approvals.revoke(0), None);
    }
}
