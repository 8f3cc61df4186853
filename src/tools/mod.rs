//! The agent's tools: bash, read_file, write_file, edit_file, glob and compact.
//! A call is first *planned* (input parsed, permission judged) and then *run*, so the
//! agent can ask the user between the two.

pub mod bash;
pub mod files;
pub mod glob;
pub mod permissions;
pub mod sandbox;
pub mod shell_grammar;
pub mod workspace;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::provider::ToolSpec;
use bash::Shell;
use globset::{Glob, GlobSet, GlobSetBuilder};
use permissions::{PermissionConfig, Verdict, judge_command};
use sandbox::{Sandbox, SandboxConfig, SandboxState};
use workspace::{Resolved, Workspace};

pub const COMPACT_TOOL: &str = "compact";
pub const COMPACT_ANSWER: &str = "Compaction requested after this tool batch.";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Default bash timeout in seconds (a call may ask for less or more, up to 10 minutes).
    pub bash_timeout_secs: u64,
    /// Bytes of command output kept in memory; the rest is dropped and counted.
    pub output_cap_bytes: usize,
    /// Lines read_file shows when the call gives no limit.
    pub read_default_lines: usize,
    /// Environment variables (glob patterns) that commands never see.
    pub hide_env: Vec<String>,
    pub permissions: PermissionConfig,
    pub sandbox: SandboxConfig,
}

/// The secrets scratchpad itself reads; always hidden from commands.
pub const ALWAYS_HIDDEN_ENV: &[&str] = &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"];

impl ToolsConfig {
    /// `hide_env` plus [`ALWAYS_HIDDEN_ENV`] as one matcher; a bad pattern is named.
    pub fn hidden_env_matcher(&self) -> Result<GlobSet, String> {
        env_matcher(
            ALWAYS_HIDDEN_ENV
                .iter()
                .copied()
                .chain(self.hide_env.iter().map(String::as_str)),
        )
    }
}

fn env_matcher<'a>(patterns: impl Iterator<Item = &'a str>) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|error| format!("hide_env pattern `{pattern}`: {error}"))?;
        builder.add(glob);
    }
    builder.build().map_err(|error| format!("hide_env: {error}"))
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            bash_timeout_secs: 120,
            output_cap_bytes: 1_000_000,
            read_default_lines: 2_000,
            hide_env: vec!["*_API_KEY".into(), "*_SECRET_KEY".into(), "*_AUTH_TOKEN".into()],
            permissions: PermissionConfig::default(),
            sandbox: SandboxConfig::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: false,
        }
    }

    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
        }
    }
}

/// A parsed, judged tool call ready to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    Bash {
        command: String,
        timeout: Duration,
    },
    Read {
        path: PathBuf,
        shown: String,
        offset: usize,
        limit: usize,
    },
    Write {
        path: PathBuf,
        shown: String,
        content: String,
    },
    Edit {
        path: PathBuf,
        shown: String,
        old: String,
        new: String,
    },
    Glob {
        pattern: String,
    },
    Compact {
        focus: Option<String>,
    },
}

impl Job {
    /// Exactly what the job runs or touches, as shown to the user when asked.
    pub fn subject(&self) -> String {
        match self {
            Job::Bash { command, .. } => command.clone(),
            Job::Read { shown, .. } | Job::Write { shown, .. } | Job::Edit { shown, .. } => shown.clone(),
            Job::Glob { pattern } => pattern.clone(),
            Job::Compact { focus } => focus.clone().unwrap_or_default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    Run(Job),
    /// Needs the user's yes first; a `destructive` one is never approved "always".
    Ask {
        question: String,
        destructive: bool,
        job: Job,
    },
    /// Refused by the permission rules: this is the tool result.
    Refused(String),
    /// The call itself is wrong (unknown tool, missing field, bad path): this is the
    /// tool result.
    Invalid(String),
}

#[derive(Clone, Debug)]
pub struct ToolBox {
    workspace: Workspace,
    config: ToolsConfig,
    shell: Shell,
}

impl ToolBox {
    /// `config` was validated, so its `hide_env` patterns compile.
    pub fn new(workspace: Workspace, config: ToolsConfig) -> Self {
        let shell = Shell {
            cwd: workspace.root().to_path_buf(),
            cap: config.output_cap_bytes,
            // Should a bad pattern get past validation, our own keys stay hidden.
            hide_env: config
                .hidden_env_matcher()
                .or_else(|_| env_matcher(ALWAYS_HIDDEN_ENV.iter().copied()))
                .unwrap_or_else(|_| GlobSet::empty()),
            sandbox: Sandbox::new(config.sandbox.clone(), workspace.root()),
        };
        ToolBox {
            workspace,
            config,
            shell,
        }
    }

    /// What the sandbox does on this machine.
    pub fn sandbox(&self) -> &SandboxState {
        self.shell.sandbox.state()
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub fn specs() -> Vec<ToolSpec> {
        let spec = |name: &str, description: &str, schema: Value| ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
        };
        vec![
            spec(
                "bash",
                "Run a shell command in the workspace (bash -c). stdout and stderr are merged. Default timeout 120 s.",
                json!({"type":"object","properties":{
                    "command":{"type":"string","description":"The command line"},
                    "timeout_secs":{"type":"integer","description":"Timeout in seconds (max 600)"}},
                    "required":["command"]}),
            ),
            spec(
                "read_file",
                "Read a text file in the workspace. Optional 1-based line offset and line limit.",
                json!({"type":"object","properties":{
                    "path":{"type":"string"},"offset":{"type":"integer"},"limit":{"type":"integer"}},
                    "required":["path"]}),
            ),
            spec(
                "write_file",
                "Write a whole file in the workspace, creating parent folders.",
                json!({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},
                    "required":["path","content"]}),
            ),
            spec(
                "edit_file",
                "Replace one exact occurrence of old_text with new_text in a file.",
                json!({"type":"object","properties":{
                    "path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}},
                    "required":["path","old_text","new_text"]}),
            ),
            spec(
                "glob",
                "List workspace files matching a glob pattern (`**` matches any depth), sorted, at most 200.",
                json!({"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}),
            ),
            spec(
                COMPACT_TOOL,
                "Summarise the conversation so far into one message to free context. Runs after the current tool batch.",
                json!({"type":"object","properties":{"focus":{"type":"string","description":"What the summary should keep in detail"}}}),
            ),
        ]
    }

    /// Parse and judge a call.
    pub fn plan(&self, name: &str, input: &Value) -> Plan {
        let text = |key: &str| input.get(key).and_then(Value::as_str);
        let number = |key: &str| input.get(key).and_then(Value::as_u64);
        let missing = |key: &str| Plan::Invalid(format!("{name}: missing string field `{key}`"));
        match name {
            "bash" => {
                let Some(command) = text("command") else {
                    return missing("command");
                };
                let secs = number("timeout_secs")
                    .unwrap_or(self.config.bash_timeout_secs)
                    .clamp(1, 600);
                let job = Job::Bash {
                    command: command.to_string(),
                    timeout: Duration::from_secs(secs),
                };
                match judge_command(command, &self.config.permissions, self.workspace.root()) {
                    Verdict::Allow
                        if matches!(self.sandbox(), SandboxState::Unavailable(_))
                            && !permissions::is_read_only(command) =>
                    {
                        Plan::Ask {
                            question:
                                "No sandbox is available here and this command is not known to be read-only. Run it?"
                                    .into(),
                            destructive: false,
                            job,
                        }
                    }
                    Verdict::Allow => Plan::Run(job),
                    Verdict::Ask { question, destructive } => Plan::Ask {
                        question,
                        destructive,
                        job,
                    },
                    Verdict::Deny(reason) => Plan::Refused(format!("Refused: {reason}.")),
                }
            }
            "read_file" | "write_file" | "edit_file" => {
                let Some(raw) = text("path") else {
                    return missing("path");
                };
                let (path, outside) = match self.workspace.resolve(raw) {
                    Ok(Resolved::Inside(path)) => (path, false),
                    Ok(Resolved::Outside(path)) => (path, true),
                    Err(error) => return Plan::Invalid(format!("{name}: {error}")),
                };
                let shown = self.workspace.display(&path);
                let job = match name {
                    "read_file" => Job::Read {
                        path,
                        shown: shown.clone(),
                        offset: number("offset").unwrap_or(1).max(1) as usize,
                        limit: number("limit").map_or(self.config.read_default_lines, |n| n as usize),
                    },
                    "write_file" => {
                        let Some(content) = text("content") else {
                            return missing("content");
                        };
                        Job::Write {
                            path,
                            shown: shown.clone(),
                            content: content.to_string(),
                        }
                    }
                    _ => {
                        let (Some(old), Some(new)) = (text("old_text"), text("new_text")) else {
                            return missing("old_text` and `new_text");
                        };
                        Job::Edit {
                            path,
                            shown: shown.clone(),
                            old: old.to_string(),
                            new: new.to_string(),
                        }
                    }
                };
                if outside && !self.config.permissions.allow_outside_workspace {
                    Plan::Ask {
                        question: format!("{name} wants `{shown}`, which is outside the workspace. Allow?"),
                        destructive: false,
                        job,
                    }
                } else {
                    Plan::Run(job)
                }
            }
            "glob" => match text("pattern") {
                Some(pattern) => Plan::Run(Job::Glob {
                    pattern: pattern.to_string(),
                }),
                None => missing("pattern"),
            },
            COMPACT_TOOL => Plan::Run(Job::Compact {
                focus: text("focus").map(str::to_string),
            }),
            other => Plan::Invalid(format!("Unknown tool `{other}`.")),
        }
    }

    /// File work on a blocking thread, so a slow disk never stalls the agent.
    async fn blocking(&self, work: impl FnOnce(&Workspace) -> ToolOutput + Send + 'static) -> ToolOutput {
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || work(&workspace))
            .await
            .unwrap_or_else(|error| ToolOutput::error(format!("the tool failed: {error}")))
    }

    pub async fn run(&self, job: Job) -> ToolOutput {
        match job {
            Job::Bash { command, timeout } => self.shell.run(&command, timeout).await,
            Job::Read {
                path,
                shown,
                offset,
                limit,
            } => {
                self.blocking(move |ws| files::read(ws, &path, &shown, offset, limit))
                    .await
            }
            Job::Write { path, shown, content } => {
                self.blocking(move |ws| files::write(ws, &path, &shown, &content)).await
            }
            Job::Edit { path, shown, old, new } => {
                self.blocking(move |ws| files::edit(ws, &path, &shown, &old, &new))
                    .await
            }
            Job::Glob { pattern } => {
                let root = self.workspace.root().to_path_buf();
                tokio::task::spawn_blocking(move || glob::glob(&root, &pattern))
                    .await
                    .unwrap_or_else(|error| ToolOutput::error(format!("glob failed: {error}")))
            }
            Job::Compact { .. } => ToolOutput::ok(COMPACT_ANSWER),
        }
    }
}

/// A short one-line description of a call's input, for the tool pane.
pub fn input_summary(name: &str, input: &Value) -> String {
    let key = match name {
        "bash" => "command",
        "glob" => "pattern",
        COMPACT_TOOL => "focus",
        _ => "path",
    };
    let text = input
        .get(key)
        .and_then(Value::as_str)
        .map_or_else(|| input.to_string(), str::to_string);
    let flat = crate::compact::markers::flatten_whitespace(&text);
    crate::compact::markers::prefix_chars(&flat, 120).to_string()
}
