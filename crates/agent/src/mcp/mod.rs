//! MCP servers (Model Context Protocol), through the official Rust SDK, `rmcp`. Each
//! enabled `[mcp_servers.NAME]` is started in the background when scratchpad starts
//! (the first frame never waits for it) as a child process speaking MCP on stdio, in
//! its own process group, killed when scratchpad exits. Its tools reach the model as
//! `mcp__<server>__<tool>` ([`naming`]) with their schemas as the server gives them and
//! their descriptions and the server's instructions capped at [`DESCRIPTION_CAP`]
//! characters, the cut counted. A call waits at most the server's
//! `tool_timeout_secs`; a server that stopped is started again on the next call, once,
//! and then reported as failed. MCP servers run outside the bash sandbox.

pub mod config;
pub mod naming;
pub mod project;
pub mod result;
mod server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

pub use config::McpServerConfig;
use server::Server;

use crate::message::ToolSpec;
use crate::tool_output::ToolOutput;

/// Why a server could not be started, reached or listed: said on its status line and
/// by `/mcp` (never with a secret in it).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum McpError {
    #[error("{table}.{key} names ${{{name}}}, which is not set")]
    UnsetVariable {
        table: &'static str,
        key: String,
        name: String,
    },
    #[error("it ran in this process and cannot be started again")]
    InProcess,
    #[error("headers.{0} is not a header name")]
    HeaderName(String),
    #[error("headers.{0} has a value a header cannot carry")]
    HeaderValue(String),
    #[error("did not complete the MCP handshake at {url}: {reason}")]
    HttpHandshake { url: String, reason: String },
    #[error("cannot start `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    #[error("did not complete the MCP handshake: {reason}")]
    Handshake { reason: String },
    #[error("did not list its tools: {0}")]
    ListTools(String),
    #[error("did not start and list its tools within {0} s (startup_timeout_secs)")]
    StartupTimeout(u64),
}

/// The longest tool description or server instructions the model reads, as Claude
/// Code caps them; the rest is cut and the cut counted.
pub const DESCRIPTION_CAP: usize = 2_048;

/// Lines of a server's standard error kept to show why it failed.
const STDERR_LINES: usize = 20;

/// What a server is doing.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerState {
    Starting,
    Ready,
    /// It stopped during a call; the next call starts it again (once), so its tools
    /// stay offered.
    Stopped(String),
    Failed(String),
    /// Turned off for this session (`/mcp disable`).
    Disabled,
}

/// One tool of a ready server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerTool {
    /// Its name on the server.
    pub name: String,
    /// Its description, capped at [`DESCRIPTION_CAP`] characters.
    pub description: String,
    /// Characters cut from its description.
    pub cut: usize,
    pub input_schema: Value,
}

/// A server as `/mcp`, the status line and `/context` show it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    /// The tools the model gets, by the names the model calls them.
    pub tools: Vec<String>,
    /// The server's instructions as the system prompt carries them, capped.
    pub instructions: Option<String>,
    /// Characters cut from descriptions and instructions.
    pub cut: usize,
    /// The end of the server's standard error.
    pub stderr_tail: Vec<String>,
}

/// An MCP tool as the model sees it and as a call of it is judged.
#[derive(Clone, Debug, PartialEq)]
pub struct McpTool {
    /// `mcp__<server>__<tool>`.
    pub qualified: String,
    pub server: String,
    pub tool: String,
    pub spec: ToolSpec,
    /// Its calls run without asking.
    pub trusted: bool,
    /// Its server's `max_result_chars`.
    pub max_result_chars: usize,
}

/// A connection to a server, as `rmcp` runs it.
pub type Client = RunningService<RoleClient, ()>;

/// The configured servers and their state, shared by the tools and the screen.
pub struct McpHub {
    /// Those of `config.toml`, then those of a trusted `.mcp.json`.
    servers: std::sync::RwLock<Vec<Arc<Server>>>,
    /// Bumped on every change of what the model gets: the agent takes in the new tool
    /// list (and its cost) before the next call.
    revision: Arc<tokio::sync::watch::Sender<u64>>,
    /// What every server's environment leaves out, as commands' does.
    hidden: crate::process::environment::HiddenEnv,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field(
                "servers",
                &self.servers().iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `text` cut to `cap` characters, and how many were cut.
fn capped(text: &str, cap: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= cap {
        (text.to_string(), 0)
    } else {
        (text.chars().take(cap).collect(), total - cap)
    }
}

impl McpHub {
    /// No servers.
    pub fn empty() -> Arc<Self> {
        Self::hiding(crate::process::environment::HiddenEnv::ours_only())
    }

    /// A hub with no server yet whose servers never see the variables `hidden` hides.
    fn hiding(hidden: crate::process::environment::HiddenEnv) -> Arc<Self> {
        Arc::new(McpHub {
            servers: std::sync::RwLock::new(Vec::new()),
            revision: Arc::new(tokio::sync::watch::Sender::new(0)),
            hidden,
        })
    }

    /// Start every enabled server of `configs` in the background (on the current
    /// runtime). `lookup` gives the user's variables for `${NAME}` in `env`; `hidden`
    /// says which of scratchpad's variables they never see (as commands do not).
    pub fn start(
        configs: &BTreeMap<String, McpServerConfig>,
        workspace: &Path,
        lookup: impl Fn(&str) -> Option<String>,
        hidden: crate::process::environment::HiddenEnv,
    ) -> Arc<Self> {
        let hub = Self::hiding(hidden);
        hub.add(configs, workspace, lookup);
        hub
    }

    /// Start these servers too (a `.mcp.json` just trusted); a name already taken
    /// keeps its server. The names left out.
    pub fn add(
        &self,
        configs: &BTreeMap<String, McpServerConfig>,
        workspace: &Path,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        let mut servers = self.servers.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut taken = Vec::new();
        for (name, config) in configs.iter().filter(|(_, config)| config.enabled) {
            if servers.iter().any(|server| server.name == *name) {
                taken.push(name.clone());
                continue;
            }
            let cwd = config
                .cwd
                .as_ref()
                .map_or_else(|| workspace.to_path_buf(), |cwd| workspace.join(cwd));
            let mut server = Server::new(name, config.clone(), cwd, self.hidden.clone());
            server.env = config.expanded_env(&lookup);
            server.headers = config.expanded_headers(&lookup);
            let server = Arc::new(server);
            servers.push(Arc::clone(&server));
            let revision = Arc::clone(&self.revision);
            tokio::spawn(async move {
                server.connect().await;
                revision.send_modify(|revision| *revision += 1);
            });
        }
        self.revision.send_modify(|revision| *revision += 1);
        taken
    }

    /// A server already connected by the caller (one running in this process, over
    /// any transport): its tools are listed and offered like a started one's. It
    /// cannot be started again, so once it stops it is reported failed.
    #[cfg(test)]
    pub async fn attach(&self, name: &str, config: McpServerConfig, client: Client) {
        let server = Server::new(name, config, PathBuf::new(), self.hidden.clone());
        // Nothing to start again.
        server.restarted.store(true, Ordering::Relaxed);
        let server = Arc::new(server);
        self.servers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(Arc::clone(&server));
        *lock(&server.state) = match server.list_tools(&client).await {
            Ok(()) => {
                *server.client.lock().await = Some(client);
                ServerState::Ready
            }
            Err(reason) => ServerState::Failed(reason.to_string()),
        };
        self.revision.send_modify(|revision| *revision += 1);
    }

    fn servers(&self) -> Vec<Arc<Server>> {
        self.servers
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Changes with every change of the servers' state or tools.
    pub fn revision(&self) -> u64 {
        *self.revision.borrow()
    }

    /// Wakes on every change of the revision.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revision.subscribe()
    }

    /// The servers still starting and those that failed (or stopped), by name: what
    /// the status line shows.
    pub fn trouble(&self) -> (Vec<String>, Vec<String>) {
        let mut starting = Vec::new();
        let mut failed = Vec::new();
        for server in self.servers() {
            match &*lock(&server.state) {
                ServerState::Starting => starting.push(server.name.clone()),
                ServerState::Failed(_) | ServerState::Stopped(_) => failed.push(server.name.clone()),
                ServerState::Ready | ServerState::Disabled => {}
            }
        }
        (starting, failed)
    }

    /// Until no server is starting (each is bounded by its own startup timeout).
    pub async fn wait_started(&self) {
        while self.starting() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether any server is still starting.
    /// Every server's code in the workspace (see [`McpServerConfig::code_files`]):
    /// those started and those a project's `.mcp.json` names, trusted yet or not.
    /// `root` is the workspace's real path.
    pub fn code_in(&self, root: &Path) -> Vec<(String, PathBuf)> {
        let started: Vec<(String, McpServerConfig)> = self
            .servers()
            .iter()
            .map(|server| (server.name.clone(), server.config.clone()))
            .collect();
        let project = project::read(root).ok().flatten().map(|project| project.servers);
        let mut code: Vec<(String, PathBuf)> = started
            .into_iter()
            .chain(project.into_iter().flatten())
            .flat_map(|(name, config)| {
                config
                    .code_files(root)
                    .into_iter()
                    .map(move |path| (name.clone(), path))
            })
            .collect();
        code.sort_by(|a, b| a.1.cmp(&b.1));
        code.dedup_by(|a, b| a.1 == b.1);
        code
    }

    pub fn starting(&self) -> bool {
        self.servers()
            .iter()
            .any(|server| *lock(&server.state) == ServerState::Starting)
    }

    /// Every offered tool of every ready server, named as the model calls them.
    pub fn tools(&self) -> Vec<McpTool> {
        let mut offered: Vec<(Arc<Server>, ServerTool)> = Vec::new();
        for server in &self.servers() {
            if !matches!(*lock(&server.state), ServerState::Ready | ServerState::Stopped(_)) {
                continue;
            }
            for tool in lock(&server.tools).iter() {
                if server.config.offers(&tool.name) {
                    offered.push((Arc::clone(server), tool.clone()));
                }
            }
        }
        let pairs: Vec<(String, String)> = offered
            .iter()
            .map(|(server, tool)| (server.name.clone(), tool.name.clone()))
            .collect();
        naming::assign(&pairs)
            .into_iter()
            .zip(offered)
            .map(|(qualified, (server, tool))| McpTool {
                spec: ToolSpec {
                    name: qualified.clone(),
                    description: tool.description.clone(),
                    input_schema: tool.input_schema.clone(),
                },
                qualified,
                trusted: server.config.trusts(&tool.name),
                max_result_chars: server.config.max_result_chars,
                server: server.name.clone(),
                tool: tool.name,
            })
            .collect()
    }

    /// The tool the model calls `qualified`.
    pub fn tool(&self, qualified: &str) -> Option<McpTool> {
        self.tools().into_iter().find(|tool| tool.qualified == qualified)
    }

    /// Every server's state, tools and instructions.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let tools = self.tools();
        self.servers()
            .iter()
            .map(|server| {
                let instructions = lock(&server.instructions).clone();
                let description_cut: usize = lock(&server.tools)
                    .iter()
                    .filter(|tool| server.config.offers(&tool.name))
                    .map(|tool| tool.cut)
                    .sum();
                ServerStatus {
                    name: server.name.clone(),
                    state: lock(&server.state).clone(),
                    tools: tools
                        .iter()
                        .filter(|tool| tool.server == server.name)
                        .map(|tool| tool.qualified.clone())
                        .collect(),
                    cut: description_cut + instructions.as_ref().map_or(0, |(_, cut)| *cut),
                    instructions: instructions.map(|(text, _)| text),
                    stderr_tail: lock(&server.stderr_tail).iter().cloned().collect(),
                }
            })
            .collect()
    }

    /// Stop server `name` and start it again (`/mcp restart`): its one restart after
    /// a failure is given back. `false` when there is no such server.
    pub async fn restart(&self, name: &str) -> bool {
        let Some(server) = self.servers().into_iter().find(|server| server.name == name) else {
            return false;
        };
        *server.client.lock().await = None;
        server.stop();
        server.restarted.store(false, Ordering::Relaxed);
        server.connect().await;
        self.revision.send_modify(|revision| *revision += 1);
        true
    }

    /// Stop server `name` for this session (`/mcp disable`): its tools leave the next
    /// request. `false` when there is no such server.
    pub async fn disable(&self, name: &str) -> bool {
        let Some(server) = self.servers().into_iter().find(|server| server.name == name) else {
            return false;
        };
        *server.client.lock().await = None;
        server.stop();
        *lock(&server.state) = ServerState::Disabled;
        self.revision.send_modify(|revision| *revision += 1);
        true
    }

    /// Call `tool` with `arguments`; every failure is a result the model reads.
    pub async fn call(&self, tool: &McpTool, arguments: Value) -> ToolOutput {
        let Some(server) = self.servers().into_iter().find(|server| server.name == tool.server) else {
            return ToolOutput::error(format!("{}: no MCP server `{}`", tool.qualified, tool.server));
        };
        let before = lock(&server.state).clone();
        let output = server.call(tool, arguments).await;
        // A call may stop the server or start it again.
        if *lock(&server.state) != before {
            self.revision.send_modify(|revision| *revision += 1);
        }
        output
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        for server in &self.servers() {
            server.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::ServiceExt;

    use super::*;

    /// The fixture server of `tests/fixtures`, a real process speaking MCP on stdio.
    fn fixture(name: &str, adjust: impl FnOnce(&mut McpServerConfig)) -> BTreeMap<String, McpServerConfig> {
        let mut config = McpServerConfig {
            command: "python3".into(),
            args: vec![format!(
                "{}/../../tests/fixtures/mcp_fixture_server.py",
                env!("CARGO_MANIFEST_DIR")
            )],
            startup_timeout_secs: 20,
            ..Default::default()
        };
        adjust(&mut config);
        BTreeMap::from([(name.to_string(), config)])
    }

    async fn started(configs: &BTreeMap<String, McpServerConfig>) -> Arc<McpHub> {
        let hub = McpHub::start(
            configs,
            Path::new(env!("CARGO_MANIFEST_DIR")),
            |name| (name == "FIXTURE_SECRET").then(|| "from the user".to_string()),
            crate::process::environment::HiddenEnv::ours_only(),
        );
        hub.wait_started().await;
        hub
    }

    fn call_of(hub: &McpHub, qualified: &str) -> McpTool {
        hub.tool(qualified)
            .unwrap_or_else(|| panic!("no tool {qualified}: {:?}", hub.statuses()))
    }

    #[tokio::test]
    async fn tools_arrive_named_and_capped_and_a_call_gives_its_result() {
        let hub = started(&fixture("fx", |config| {
            config.disabled_tools = vec!["fail".into()];
            config.trusted_tools = vec!["echo".into()];
            config
                .env
                .insert("MCP_FIXTURE_INSTRUCTIONS".into(), "Use ${FIXTURE_SECRET}. ".repeat(200));
        }))
        .await;
        let statuses = hub.statuses();
        assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
        let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.qualified).collect();
        assert_eq!(
            names,
            [
                "mcp__fx__echo",
                "mcp__fx__big",
                "mcp__fx__hang",
                "mcp__fx__die",
                "mcp__fx__get_item_x"
            ]
        );
        let lookup = call_of(&hub, "mcp__fx__get_item_x");
        assert_eq!(lookup.tool, "get.item/x", "called by its own name on the server");
        assert_eq!(lookup.spec.description.chars().count(), DESCRIPTION_CAP);
        assert_eq!(
            lookup.spec.input_schema["properties"]["id"]["minimum"].to_string(),
            "1.5",
            "the schema passes through as given"
        );
        assert!(call_of(&hub, "mcp__fx__echo").trusted && !lookup.trusted);
        let instructions = statuses[0].instructions.clone().unwrap();
        assert!(instructions.starts_with("Use from the user. "), "{instructions}");
        assert_eq!(instructions.chars().count(), DESCRIPTION_CAP);
        assert!(statuses[0].cut > 0);

        let echo = hub
            .call(&call_of(&hub, "mcp__fx__echo"), serde_json::json!({"text": "hi ✓"}))
            .await;
        assert_eq!(echo, ToolOutput::ok("echo: hi ✓"));
        let wrong = hub.call(&call_of(&hub, "mcp__fx__echo"), serde_json::json!([1])).await;
        assert!(wrong.is_error && wrong.text.contains("must be an object"), "{wrong:?}");
    }

    #[tokio::test]
    async fn an_error_result_is_an_error_and_a_hanging_call_is_bounded() {
        let hub = started(&fixture("fx", |config| config.tool_timeout_secs = 1)).await;
        let failed = hub.call(&call_of(&hub, "mcp__fx__fail"), serde_json::json!({})).await;
        assert_eq!(failed, ToolOutput::error("the fixture failed on purpose"));
        let hung = hub.call(&call_of(&hub, "mcp__fx__hang"), serde_json::json!({})).await;
        assert!(hung.is_error && hung.text.contains("no answer within 1 s"), "{hung:?}");
    }

    #[tokio::test]
    async fn a_server_that_dies_is_started_again_once_then_reported() {
        let hub = started(&fixture("fx", |_| {})).await;
        let die = call_of(&hub, "mcp__fx__die");
        let echo = call_of(&hub, "mcp__fx__echo");
        let died = hub.call(&die, serde_json::json!({})).await;
        assert!(
            died.is_error && died.text.contains("started again on the next call"),
            "{died:?}"
        );
        assert!(matches!(hub.statuses()[0].state, ServerState::Stopped(_)));
        assert!(
            hub.tool("mcp__fx__echo").is_some(),
            "its tools stay offered until the restart"
        );
        let again = hub.call(&echo, serde_json::json!({"text": "back"})).await;
        assert_eq!(again, ToolOutput::ok("echo: back"), "restarted for the next call");
        assert_eq!(hub.tools().len(), 6, "a stopped server's tools stay offered");
        let died = hub.call(&die, serde_json::json!({})).await;
        assert!(died.is_error && died.text.contains("stays stopped"), "{died:?}");
        assert!(hub.tools().is_empty(), "a failed server offers nothing");
        let refused = hub.call(&echo, serde_json::json!({"text": "x"})).await;
        assert!(
            refused.is_error && refused.text.contains("restarted once already"),
            "{refused:?}"
        );
        assert!(matches!(hub.statuses()[0].state, ServerState::Failed(_)));
        assert!(
            hub.statuses()[0]
                .stderr_tail
                .iter()
                .any(|line| line.contains("dying on purpose"))
        );
    }

    /// The fixture's tools over streamable HTTP on loopback: reached with the
    /// configured header (its value from the user's variable), called like any other.
    #[tokio::test]
    async fn a_streamable_http_server_is_reached_with_its_headers() {
        use std::io::BufRead;
        let mut server = std::process::Command::new("python3")
            .arg(format!(
                "{}/../../tests/fixtures/mcp_fixture_http.py",
                env!("CARGO_MANIFEST_DIR")
            ))
            .env("MCP_FIXTURE_TOKEN", "from the user")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        std::io::BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        let url = format!("http://127.0.0.1:{}/mcp", port.trim());
        let reach = |token: &str| {
            let token = token.to_string();
            fixture("web", |config| {
                config.command.clear();
                config.args.clear();
                config.url = Some(url.clone());
                config.headers.insert("X-Fixture-Token".into(), token);
            })
        };
        let hub = started(&reach("${FIXTURE_SECRET}")).await;
        let echo = hub
            .call(
                &call_of(&hub, "mcp__web__echo"),
                serde_json::json!({"text": "over http"}),
            )
            .await;
        assert_eq!(echo, ToolOutput::ok("echo: over http"));
        let refused = started(&reach("wrong")).await;
        let ServerState::Failed(reason) = &refused.statuses()[0].state else {
            panic!("{:?}", refused.statuses());
        };
        assert!(
            reason.contains("did not complete the MCP handshake at http://127.0.0.1:"),
            "{reason}"
        );
        assert!(!reason.contains("wrong"), "a header's value is never quoted: {reason}");
        server.kill().unwrap();
        server.wait().unwrap();
    }

    /// A server in this process, over `tokio::io::duplex`: the fast way to give the hub
    /// tools of any name and behaviour.
    mod in_process {
        use super::*;
        use rmcp::ServerHandler;
        use rmcp::model::{
            CallToolResponse, CallToolResult, ContentBlock, ErrorData, ListToolsResult, PaginatedRequestParams,
            ServerCapabilities, ServerConfig, Tool,
        };
        use rmcp::service::{RequestContext, RoleServer};

        struct Toolbox {
            tools: Vec<Tool>,
        }

        impl ServerHandler for Toolbox {
            fn get_info(&self) -> ServerConfig {
                ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions("In process.")
            }

            async fn list_tools(
                &self,
                _request: Option<PaginatedRequestParams>,
                _context: RequestContext<RoleServer>,
            ) -> Result<ListToolsResult, ErrorData> {
                Ok(ListToolsResult::with_all_items(self.tools.clone()))
            }

            async fn call_tool(
                &self,
                request: rmcp::model::CallToolRequestParams,
                _context: RequestContext<RoleServer>,
            ) -> Result<CallToolResponse, ErrorData> {
                if request.name == "hang" {
                    std::future::pending::<()>().await;
                }
                let text = format!("{} ran with {:?}", request.name, request.arguments);
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
            }
        }

        fn tool(name: &str) -> Tool {
            Tool::new(
                name.to_string(),
                "A tool.",
                serde_json::Map::from_iter([("type".to_string(), Value::from("object"))]),
            )
        }

        /// `names` served in this process, attached to `hub` as server `server`.
        async fn attach(hub: &McpHub, server: &str, names: &[&str], config: McpServerConfig) {
            let (server_io, client_io) = tokio::io::duplex(64 * 1024);
            let toolbox = Toolbox {
                tools: names.iter().map(|name| tool(name)).collect(),
            };
            tokio::spawn(async move {
                if let Ok(running) = toolbox.serve(server_io).await {
                    let _ = running.waiting().await;
                }
            });
            let client = ().serve(client_io).await.expect("handshake in process");
            hub.attach(server, config, client).await;
        }

        #[tokio::test]
        async fn names_outside_the_set_and_collisions_are_named_apart_in_order() {
            let hub = McpHub::empty();
            attach(
                &hub,
                "one",
                &["get.item", "get_item", "ünï/code", &"t".repeat(80)],
                McpServerConfig::default(),
            )
            .await;
            attach(&hub, "two", &["get_item"], McpServerConfig::default()).await;
            let names: Vec<String> = hub.tools().into_iter().map(|tool| tool.qualified).collect();
            assert_eq!(
                names[..3],
                ["mcp__one__get_item", "mcp__one__get_item_2", "mcp__one___n__code"]
            );
            assert_eq!(names[3].len(), naming::MAX_NAME);
            assert_eq!(
                names[4], "mcp__two__get_item",
                "another server's tool keeps its own name"
            );
            let second = call_of(&hub, "mcp__one__get_item_2");
            assert_eq!(second.tool, "get_item", "each name calls its own tool");
            let ran = hub.call(&second, serde_json::json!({"n": 1})).await;
            assert!(ran.text.starts_with("get_item ran with Some("), "{ran:?}");
            assert_eq!(hub.statuses()[0].instructions.as_deref(), Some("In process."));
        }

        #[tokio::test]
        async fn a_call_that_never_answers_is_bounded_and_the_server_is_not_started_again() {
            let hub = McpHub::empty();
            let config = McpServerConfig {
                tool_timeout_secs: 1,
                ..McpServerConfig::default()
            };
            attach(&hub, "slow", &["hang"], config).await;
            let hang = call_of(&hub, "mcp__slow__hang");
            let timed_out = hub.call(&hang, serde_json::json!({})).await;
            assert!(
                timed_out.is_error && timed_out.text.contains("no answer within 1 s"),
                "{timed_out:?}"
            );
            assert!(hub.restart("slow").await);
            let ServerState::Failed(reason) = &hub.statuses()[0].state else {
                panic!("{:?}", hub.statuses());
            };
            assert_eq!(reason, "it ran in this process and cannot be started again");
        }
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_says_why_and_offers_nothing() {
        let hub = started(&fixture("gone", |config| {
            config.command = "/nonexistent/mcp-server".into();
        }))
        .await;
        let ServerState::Failed(reason) = &hub.statuses()[0].state else {
            panic!("{:?}", hub.statuses());
        };
        assert!(reason.contains("cannot start `/nonexistent/mcp-server`"), "{reason}");
        assert!(hub.tools().is_empty());

        let hub = started(&fixture("malformed", |config| {
            config.env.insert("MCP_FIXTURE_BAD_SCHEMA".into(), "1".into());
        }))
        .await;
        let ServerState::Failed(reason) = &hub.statuses()[0].state else {
            panic!("{:?}", hub.statuses());
        };
        assert!(reason.starts_with("did not list its tools: "), "{reason}");
        assert!(hub.tools().is_empty(), "a list it cannot read offers nothing");

        let hub = started(&fixture("unset", |config| {
            config.env.insert("TOKEN".into(), "${NOT_SET_ANYWHERE}".into());
        }))
        .await;
        let ServerState::Failed(reason) = &hub.statuses()[0].state else {
            panic!("{:?}", hub.statuses());
        };
        assert_eq!(reason, "env.TOKEN names ${NOT_SET_ANYWHERE}, which is not set");
    }
}
