//! The agent's tools: bash, read_file, write_file, edit_file, glob and compact, one
//! file each. A call is first *planned* (input parsed, permission judged) and then
//! *run*, so the agent can ask the user between the two. Each tool is one `Tool`:
//! its name, its description, its input type (the schema the model reads is derived
//! from it, so description, schema and parsing cannot drift) and its plan; its job
//! runs in the same file.

pub mod bash;
pub mod compact;
pub mod edit_file;
mod files;
pub mod glob;
pub mod permissions;
pub mod read_file;
pub mod recall;
pub mod sandbox;
pub mod shell_grammar;
pub mod workspace;
pub mod write_file;

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::ToolSpec;
pub use crate::process::environment::{ALWAYS_HIDDEN_ENV, DEFAULT_HIDDEN_ENV, HiddenEnv, user_variable, withhold};
use crate::setting::InvalidSetting;
pub use crate::tool_output::ToolOutput;
use bash::Shell;
use permissions::PermissionConfig;
use sandbox::{Sandbox, SandboxConfig, SandboxState};
use workspace::{Resolved, Workspace};

pub use compact::COMPACT_ANSWER;
pub const COMPACT_TOOL: &str = <compact::Compact as Tool>::NAME;

/// One tool as the model sees it and as a call of it is planned.
pub(crate) trait Tool {
    /// The name the model calls it by.
    const NAME: &'static str;
    /// The input field that says what a call is about in one line (the tool pane,
    /// receipts).
    const SUMMARY_FIELD: &'static str;
    /// The call's input: parsed with serde, described by its JSON schema.
    type Input: DeserializeOwned + JsonSchema;
    /// What the model reads about the tool; limits are quoted from `config`.
    fn description(config: &ToolsConfig) -> String;
    /// Judge a parsed call: run it, ask first, refuse it, or say what is wrong.
    fn plan(input: Self::Input, tools: &ToolBox) -> Plan;
}

/// A tool in the table: what the model reads, and how a call is planned.
struct Registered {
    name: &'static str,
    summary_field: &'static str,
    spec: fn(&ToolsConfig) -> ToolSpec,
    plan: fn(&ToolBox, &Value) -> Plan,
}

const fn register<T: Tool>() -> Registered {
    Registered {
        name: T::NAME,
        summary_field: T::SUMMARY_FIELD,
        spec: spec_of::<T>,
        plan: plan_of::<T>,
    }
}

/// Every tool, in the order the model sees them.
const TOOLS: [Registered; 7] = [
    register::<bash::Bash>(),
    register::<read_file::ReadFile>(),
    register::<write_file::WriteFile>(),
    register::<edit_file::EditFile>(),
    register::<glob::Glob>(),
    register::<compact::Compact>(),
    register::<recall::Recall>(),
];

fn spec_of<T: Tool>(config: &ToolsConfig) -> ToolSpec {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|settings| settings.meta_schema = None);
    let schema = settings.into_generator().into_root_schema_for::<T::Input>();
    let mut schema = serde_json::to_value(schema).unwrap_or_default();
    plain_schema(&mut schema);
    ToolSpec {
        name: T::NAME.into(),
        description: T::description(config),
        input_schema: schema,
    }
}

/// The schema as the APIs take it: no `title`, no integer `format` annotations
/// (`uint64`), which some servers' grammar builders reject, and an optional field
/// simply not required rather than also offered as `null`.
fn plain_schema(schema: &mut Value) {
    if let Value::Object(map) = schema {
        map.remove("title");
        if let Some(Value::Array(types)) = map.get_mut("type") {
            types.retain(|kind| kind != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                map.insert("type".into(), only);
            }
        }
        if map
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|format| format.starts_with("int") || format.starts_with("uint"))
        {
            map.remove("format");
        }
        map.values_mut().for_each(plain_schema);
    }
}

/// An MCP call runs outside the sandbox: asked about unless its server or tool is
/// trusted in the config (or approved "always" in this session, which the agent knows).
fn plan_mcp(tool: crate::mcp::McpTool, input: &Value) -> Plan {
    let trusted = tool.trusted;
    let question = format!(
        "{} (a tool of the MCP server `{}`, which runs outside the sandbox) with {}. Allow?",
        tool.qualified,
        tool.server,
        input_summary(&tool.qualified, input)
    );
    let job = Job::Mcp {
        tool,
        input: input.clone(),
    };
    if trusted {
        Plan::Run(job)
    } else {
        Plan::Ask {
            question,
            destructive: false,
            job,
        }
    }
}

fn plan_of<T: Tool>(tools: &ToolBox, input: &Value) -> Plan {
    match T::Input::deserialize(input) {
        Ok(parsed) => T::plan(parsed, tools),
        Err(error) => Plan::Invalid(format!("{}: {error}", T::NAME)),
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Default bash timeout in seconds (a call may ask for less or more, up to 10 minutes).
    pub bash_timeout_secs: u64,
    /// Bytes of command output kept in memory; the rest is dropped and counted.
    pub output_cap_bytes: usize,
    /// Lines read_file shows when the call gives no limit.
    pub read_default_lines: usize,
    /// Environment variables (glob patterns, case-insensitive) that commands never see.
    pub hide_env: Vec<String>,
    /// Variables `hide_env` matches that are handed to commands all the same, on
    /// purpose (glob patterns; never our own keys).
    pub pass_env: Vec<String>,
    pub permissions: PermissionConfig,
    pub sandbox: SandboxConfig,
}

impl ToolsConfig {
    /// `hide_env` and `pass_env` as one matcher; a bad pattern is named, with the key
    /// it is under.
    pub fn hidden_env_matcher(&self) -> Result<HiddenEnv, InvalidSetting> {
        // The usual patterns are compiled once: they are needed at start, to take the
        // secrets out of scratchpad's own environment, and again to check the settings
        // (each compiling took about 0.2 ms of every start).
        static DEFAULT: std::sync::OnceLock<Result<HiddenEnv, InvalidSetting>> = std::sync::OnceLock::new();
        if self.pass_env.is_empty() && self.hide_env.iter().eq(DEFAULT_HIDDEN_ENV) {
            return DEFAULT.get_or_init(|| HiddenEnv::compile(&self.hide_env, &[])).clone();
        }
        HiddenEnv::compile(&self.hide_env, &self.pass_env)
    }
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            bash_timeout_secs: 120,
            output_cap_bytes: 1_000_000,
            read_default_lines: 2_000,
            hide_env: DEFAULT_HIDDEN_ENV.iter().map(|pattern| pattern.to_string()).collect(),
            pass_env: Vec::new(),
            permissions: PermissionConfig::default(),
            sandbox: SandboxConfig::default(),
        }
    }
}

/// A parsed, judged tool call ready to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    Bash {
        command: String,
        timeout: Duration,
        /// Approved to write the repository's `.git` (otherwise bound read-only).
        git_writable: bool,
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
    /// Archived messages at a pointer into a record.
    Recall {
        pointer: crate::compact::record::Pointer,
        count: usize,
    },
    /// A tool of an MCP server, named as the model calls it.
    Mcp {
        tool: crate::mcp::McpTool,
        input: Value,
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
            Job::Recall { pointer, .. } => pointer.to_string(),
            Job::Mcp { input, .. } => crate::json::to_string(input).unwrap_or_default(),
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

/// What a file tool does with its path: writes are refused in the archive and asked
/// about in `.git`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PathAccess {
    Read,
    Write,
}

#[derive(Clone, Debug)]
pub struct ToolBox {
    workspace: Workspace,
    config: ToolsConfig,
    shell: Shell,
    mcp: std::sync::Arc<crate::mcp::McpHub>,
    /// The archive compaction writes to: `recall` reads it back under the hashes it
    /// recorded, so it is the agent's own store, shared.
    archive: crate::store::Store,
}

impl ToolBox {
    /// `config` was validated, so its `hide_env` patterns compile.
    pub fn new(workspace: Workspace, config: ToolsConfig) -> Self {
        let shell = Shell {
            cwd: workspace.root().to_path_buf(),
            cap: config.output_cap_bytes,
            // Should a bad pattern get past validation, our own keys stay hidden.
            hide_env: config.hidden_env_matcher().unwrap_or_else(|_| HiddenEnv::ours_only()),
            sandbox: {
                let mut sandbox = Sandbox::new(config.sandbox.clone(), workspace.root());
                for folder in crate::store::ARCHIVE_FOLDERS {
                    sandbox.protect(workspace.root().join(folder));
                }
                sandbox.protect(crate::session::sessions_dir(workspace.root()));
                // The folder an earlier version kept journals in, where there is one:
                // nothing may be planted there (it is read once, at the first start).
                let legacy = workspace.root().join(crate::session::LEGACY_FOLDER);
                if std::fs::symlink_metadata(&legacy).is_ok_and(|meta| meta.is_dir()) {
                    sandbox.protect(legacy);
                }
                if let Some(data) = scratchpad_core::places::data_dir() {
                    sandbox.hide(data);
                }
                sandbox
            },
        };
        let archive = crate::store::Store::new(workspace.root());
        ToolBox {
            workspace,
            config,
            shell,
            mcp: crate::mcp::McpHub::empty(),
            archive,
        }
    }

    /// The workspace's archive, as compaction writes and `recall` reads it.
    pub fn archive(&self) -> &crate::store::Store {
        &self.archive
    }

    /// The tools of these MCP servers too.
    pub fn with_mcp(mut self, hub: std::sync::Arc<crate::mcp::McpHub>) -> Self {
        self.mcp = hub;
        self
    }

    /// The MCP servers whose tools the model gets.
    pub fn mcp(&self) -> &std::sync::Arc<crate::mcp::McpHub> {
        &self.mcp
    }

    /// What the sandbox does on this machine.
    pub fn sandbox(&self) -> &SandboxState {
        self.shell.sandbox.state()
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Every tool as the model sees it, with the limits of `config`.
    pub fn specs_for(config: &ToolsConfig) -> Vec<ToolSpec> {
        TOOLS.iter().map(|tool| (tool.spec)(config)).collect()
    }

    /// Every tool as the model sees it: ours, then those of the MCP servers ready now.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = Self::specs_for(&self.config);
        specs.extend(self.mcp.tools().into_iter().map(|tool| tool.spec));
        specs
    }

    /// Parse and judge a call.
    pub fn plan(&self, name: &str, input: &Value) -> Plan {
        if let Some(tool) = TOOLS.iter().find(|tool| tool.name == name) {
            return (tool.plan)(self, input);
        }
        if name.starts_with(crate::mcp::naming::PREFIX)
            && let Some(tool) = self.mcp.tool(name)
        {
            return plan_mcp(tool, input);
        }
        Plan::Invalid(format!("Unknown tool `{name}`."))
    }

    /// A call on a path: resolved in the workspace, and asked about first when it is
    /// outside (unless the permissions allow that).
    fn plan_path(&self, name: &str, raw: &str, access: PathAccess, job: impl FnOnce(PathBuf, String) -> Job) -> Plan {
        let (path, outside) = match self.workspace.resolve(raw) {
            Ok(Resolved::Inside(path)) => (path, false),
            Ok(Resolved::Outside(path)) => (path, true),
            Err(error) => return Plan::Invalid(format!("{name}: {error}")),
        };
        let shown = self.workspace.display(&path);
        let writes = access == PathAccess::Write;
        if writes && let Some(folder) = self.archive_folder(&path) {
            return Plan::Refused(format!(
                "Refused: `{folder}/` is scratchpad's own (what compaction saved, or an earlier version's journals), read-only to tools."
            ));
        }
        let into_git = writes && self.shell.sandbox.git_state().covers(self.workspace.root(), &path);
        let server = if writes { self.server_owning(&path) } else { None };
        let job = job(path, shown.clone());
        if into_git {
            return Plan::Ask {
                question: format!(
                    "{name} wants `{shown}`, which is git state (a repository's .git, new or existing: git runs \
                     its hooks and config outside the sandbox). Allow?"
                ),
                destructive: true,
                job,
            };
        }
        if let Some(server) = server {
            return Plan::Ask {
                question: format!(
                    "{name} wants `{shown}`, the code of MCP server `{server}` (it runs outside the sandbox \
                     when scratchpad starts). Allow?"
                ),
                destructive: true,
                job,
            };
        }
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

    /// Every MCP server's code in the workspace, with the server's name.
    fn server_code(&self) -> Vec<(String, PathBuf)> {
        let root = self.workspace.root();
        self.mcp
            .code_in(&root.canonicalize().unwrap_or_else(|_| root.to_path_buf()))
    }

    /// The MCP server whose code `path` is, if any.
    fn server_owning(&self, path: &Path) -> Option<String> {
        let path = path.canonicalize().ok()?;
        self.server_code()
            .into_iter()
            .find_map(|(server, code)| (code == path).then_some(server))
    }

    /// The archive folder `path` lies in (or is), if any: the archive's, or the one
    /// an earlier version kept journals in.
    fn archive_folder(&self, path: &Path) -> Option<&'static str> {
        crate::store::ARCHIVE_FOLDERS
            .iter()
            .copied()
            .chain([crate::session::LEGACY_FOLDER])
            .find(|folder| path.starts_with(self.workspace.root().join(folder)))
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
            Job::Bash {
                command,
                timeout,
                git_writable,
            } => {
                let server_code: Vec<PathBuf> = self.server_code().into_iter().map(|(_, path)| path).collect();
                self.shell.run(&command, timeout, git_writable, &server_code).await
            }
            Job::Read {
                path,
                shown,
                offset,
                limit,
            } => {
                self.blocking(move |ws| read_file::run(ws, &path, &shown, offset, limit))
                    .await
            }
            Job::Write { path, shown, content } => {
                self.blocking(move |ws| write_file::run(ws, &path, &shown, &content))
                    .await
            }
            Job::Edit { path, shown, old, new } => {
                self.blocking(move |ws| edit_file::run(ws, &path, &shown, &old, &new))
                    .await
            }
            Job::Glob { pattern } => {
                let root = self.workspace.root().to_path_buf();
                tokio::task::spawn_blocking(move || glob::glob(&root, &pattern))
                    .await
                    .unwrap_or_else(|error| ToolOutput::error(format!("glob failed: {error}")))
            }
            Job::Compact { .. } => compact::run(),
            Job::Recall { pointer, count } => {
                let archive = self.archive.clone();
                tokio::task::spawn_blocking(move || recall::run(&archive, &pointer, count))
                    .await
                    .unwrap_or_else(|error| ToolOutput::error(format!("recall failed: {error}")))
            }
            Job::Mcp { tool, input } => self.mcp.call(&tool, input).await,
        }
    }
}

/// What the tools tell every run of the pipeline, in or out of a session: receipts
/// name a call's input by the field its tool says a call is about
/// ([`input_summary`]).
pub fn session_facts() -> crate::compact::SessionFacts {
    crate::compact::SessionFacts {
        describe_input: crate::compact::receipt::InputDescriber(input_summary),
        ..crate::compact::SessionFacts::default()
    }
}

/// A short one-line description of a call's input, for the tool pane: its tool's
/// summary field, or the whole input for a tool we do not know or a call without it.
pub fn input_summary(name: &str, input: &Value) -> String {
    let text = TOOLS
        .iter()
        .find(|tool| tool.name == name)
        .and_then(|tool| input.get(tool.summary_field))
        .and_then(Value::as_str)
        .map_or_else(|| input.to_string(), str::to_string);
    let flat = crate::text::flatten_whitespace(&text);
    crate::text::prefix_chars(&flat, 120).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of_type(schema: &Value) -> Value {
        match schema["type"].as_str() {
            Some("integer") => Value::from(1),
            // A path, a command, a pattern and a recall pointer (PATH:LINE) alike.
            _ => Value::from("a.txt:1"),
        }
    }

    /// The usual patterns, compiled once, hide what they hide compiled afresh; other
    /// patterns are not given the usual ones.
    #[test]
    fn the_usual_hidden_variables_are_compiled_once_and_others_apart() {
        let usual = ToolsConfig::default();
        let fresh = HiddenEnv::compile(&usual.hide_env, &[]).unwrap();
        for name in [
            "ANTHROPIC_API_KEY",
            "GITHUB_TOKEN",
            "aws_secret",
            "AWS_REGION",
            "HOME",
            "PATH",
            "TMUX",
        ] {
            for _ in 0..2 {
                assert_eq!(
                    usual.hidden_env_matcher().unwrap().hides(name),
                    fresh.hides(name),
                    "{name}"
                );
            }
        }
        let own = ToolsConfig {
            hide_env: vec!["HOME".into()],
            ..ToolsConfig::default()
        };
        assert!(own.hidden_env_matcher().unwrap().hides("HOME"));
        assert!(!own.hidden_env_matcher().unwrap().hides("GITHUB_TOKEN"));
        let passing = ToolsConfig {
            pass_env: vec!["GITHUB_TOKEN".into()],
            ..ToolsConfig::default()
        };
        assert!(!passing.hidden_env_matcher().unwrap().hides("GITHUB_TOKEN"));
    }

    /// The fallback where the kernel has no sandbox: the status says so, and a command
    /// not known to be read-only is a question naming it, while a read-only one runs.
    #[test]
    fn without_a_sandbox_commands_ask_first_and_the_status_says_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let mut tools = ToolBox::new(Workspace::new(dir.path()).unwrap(), ToolsConfig::default());
        tools.shell.sandbox = Sandbox::without(tools.config.sandbox.clone(), dir.path(), &[sandbox::Layer::Landlock]);
        assert_eq!(tools.sandbox().label(), "sandbox: unavailable");
        match tools.plan("bash", &serde_json::json!({"command": "touch made && echo ok"})) {
            Plan::Ask {
                question, destructive, ..
            } => {
                assert!(question.contains("sandbox: unavailable"), "{question}");
                assert!(!destructive, "approvable for the session");
            }
            _ => panic!("an unsandboxed command that writes must ask first"),
        }
        assert!(
            matches!(
                tools.plan("bash", &serde_json::json!({"command": "ls -la"})),
                Plan::Run(_)
            ),
            "a read-only command runs"
        );
    }

    /// Each tool's one-line summary is a field its schema has, so it cannot drift.
    #[test]
    fn each_summary_field_is_in_its_schema() {
        for (tool, spec) in TOOLS.iter().zip(ToolBox::specs_for(&ToolsConfig::default())) {
            assert!(
                spec.input_schema["properties"].get(tool.summary_field).is_some(),
                "{}.{}",
                tool.name,
                tool.summary_field
            );
        }
        let call = serde_json::json!({"command": "cargo  test\n--quiet", "timeout_secs": 5});
        assert_eq!(input_summary("bash", &call), "cargo test --quiet");
        assert_eq!(input_summary("grep", &serde_json::json!({"q": "x"})), r#"{"q":"x"}"#);
    }

    /// The schema the model reads and the parser that takes its calls come from one
    /// type: a call with just the required fields parses, and each one left out is
    /// named; descriptions quote the configured limits.
    #[test]
    fn each_schema_is_what_its_parser_takes() {
        let config = ToolsConfig {
            bash_timeout_secs: 42,
            read_default_lines: 77,
            ..ToolsConfig::default()
        };
        let specs = ToolBox::specs_for(&config);
        let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "bash",
                "read_file",
                "write_file",
                "edit_file",
                "glob",
                COMPACT_TOOL,
                "recall"
            ]
        );
        assert!(specs[0].description.contains("Default timeout 42 s"));
        assert!(specs[1].description.contains("the first 77 lines"));
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolBox::new(Workspace::new(dir.path()).unwrap(), config);
        for spec in &specs {
            let schema = &spec.input_schema;
            assert_eq!(schema["type"], "object", "{}", spec.name);
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let call: serde_json::Map<String, Value> = required
                .iter()
                .map(|name| (name.to_string(), value_of_type(&schema["properties"][name])))
                .collect();
            let plan = tools.plan(&spec.name, &Value::Object(call.clone()));
            assert!(!matches!(plan, Plan::Invalid(_)), "{}: {plan:?}", spec.name);
            for name in &required {
                let mut partial = call.clone();
                partial.remove(*name);
                match tools.plan(&spec.name, &Value::Object(partial)) {
                    Plan::Invalid(message) => assert!(message.contains(name), "{message}"),
                    other => panic!("{} without {name}: {other:?}", spec.name),
                }
            }
            for (name, property) in schema["properties"].as_object().unwrap() {
                assert!(property["description"].is_string(), "{}.{name} is described", spec.name);
                assert_ne!(property["type"], Value::Null, "{}.{name}", spec.name);
            }
        }
        assert!(matches!(
            tools.plan("bash", &serde_json::json!({"command": "ls", "timeout_secs": "soon"})),
            Plan::Invalid(message) if message.starts_with("bash: ")
        ));
        assert_eq!(
            tools.plan("nope", &serde_json::json!({})),
            Plan::Invalid("Unknown tool `nope`.".into())
        );
    }
}
