//! One MCP server: started (or reached) on demand, its tools listed, a call run
//! within its timeout, started again once when it stopped, and its last words kept.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use super::{
    Client, DESCRIPTION_CAP, McpError, McpServerConfig, McpTool, STDERR_LINES, ServerState, ServerTool, capped, lock,
    result,
};
use crate::tool_output::ToolOutput;

/// A configured server, its state and its connection.
pub(super) struct Server {
    pub(super) name: String,
    pub(super) config: McpServerConfig,
    pub(super) cwd: PathBuf,
    pub(super) env: Result<Vec<(String, String)>, McpError>,
    pub(super) headers: Result<Vec<(String, String)>, McpError>,
    pub(super) state: Mutex<ServerState>,
    pub(super) tools: Mutex<Vec<ServerTool>>,
    pub(super) instructions: Mutex<Option<(String, usize)>>,
    pub(super) client: tokio::sync::Mutex<Option<Client>>,
    /// The process group of the running server, killed when it is replaced or we exit.
    pub(super) group: Mutex<Option<i32>>,
    pub(super) stderr_tail: Arc<Mutex<VecDeque<String>>>,
    pub(super) restarted: AtomicBool,
    /// The variables of scratchpad's environment commands never see (`hide_env`): a
    /// server does not see them either, but for those its `env` names.
    pub(super) hidden: crate::process::environment::HiddenEnv,
}

impl Server {
    /// A server not started yet, with no variables expanded.
    pub(super) fn new(
        name: &str,
        config: McpServerConfig,
        cwd: PathBuf,
        hidden: crate::process::environment::HiddenEnv,
    ) -> Self {
        Server {
            name: name.to_string(),
            config,
            cwd,
            env: Ok(Vec::new()),
            headers: Ok(Vec::new()),
            state: Mutex::new(ServerState::Starting),
            tools: Mutex::new(Vec::new()),
            instructions: Mutex::new(None),
            client: tokio::sync::Mutex::new(None),
            group: Mutex::new(None),
            stderr_tail: Arc::new(Mutex::new(VecDeque::new())),
            restarted: AtomicBool::new(false),
            hidden,
        }
    }

    /// Start the server and list its tools, within its startup timeout.
    pub(super) async fn connect(&self) {
        *lock(&self.state) = ServerState::Starting;
        let timeout = Duration::from_secs(self.config.startup_timeout_secs);
        let outcome = match tokio::time::timeout(timeout, self.start()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(McpError::StartupTimeout(timeout.as_secs())),
        };
        match outcome {
            Ok(client) => {
                *self.client.lock().await = Some(client);
                *lock(&self.state) = ServerState::Ready;
                tracing::info!(server = %self.name, "MCP server ready");
            }
            Err(reason) => {
                self.stop();
                tracing::warn!(server = %self.name, %reason, "MCP server failed");
                *lock(&self.state) = ServerState::Failed(reason.to_string());
            }
        }
    }

    pub(super) async fn start(&self) -> Result<Client, McpError> {
        let client = match &self.config.url {
            Some(url) => self.reach(url).await?,
            None if self.config.command.is_empty() => {
                return Err(McpError::InProcess);
            }
            None => self.spawn().await?,
        };
        self.list_tools(&client).await?;
        Ok(client)
    }

    /// Reach a server over streamable HTTP, with its headers (a bearer
    /// `Authorization` as the transport's own).
    pub(super) async fn reach(&self, url: &str) -> Result<Client, McpError> {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
        let mut custom = std::collections::HashMap::new();
        for (name, value) in self.headers.clone()? {
            if name.eq_ignore_ascii_case("authorization")
                && let Some(token) = value.strip_prefix("Bearer ")
            {
                config = config.auth_header(token.to_string());
                continue;
            }
            let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| McpError::HeaderName(name.clone()))?;
            // The value is never quoted back: it may hold a secret.
            let value =
                reqwest::header::HeaderValue::from_str(&value).map_err(|_| McpError::HeaderValue(name.clone()))?;
            custom.insert(header, value);
        }
        let transport = StreamableHttpClientTransport::from_config(config.custom_headers(custom));
        ().serve(transport).await.map_err(|error| McpError::HttpHandshake {
            url: url.to_string(),
            reason: error.to_string(),
        })
    }

    /// Start the server as a child process in its own group, its stderr kept.
    pub(super) async fn spawn(&self) -> Result<Client, McpError> {
        let env = self.env.clone()?;
        let mut command = tokio::process::Command::new(&self.config.command);
        for (key, _) in std::env::vars_os() {
            if self.hidden.hides(&key.to_string_lossy()) {
                command.env_remove(key);
            }
        }
        command
            .args(&self.config.args)
            .envs(env)
            .current_dir(&self.cwd)
            .process_group(0)
            .kill_on_drop(true);
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|error| McpError::Spawn {
                command: self.config.command.clone(),
                reason: error.to_string(),
            })?;
        if let Some(pid) = transport.id().and_then(|pid| i32::try_from(pid).ok()) {
            crate::process::children::keep_child(pid);
            *lock(&self.group) = Some(pid);
        }
        if let Some(stderr) = stderr {
            let tail = Arc::clone(&self.stderr_tail);
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut tail = lock(&tail);
                    if tail.len() == STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        ().serve(transport).await.map_err(|error| McpError::Handshake {
            reason: plain_handshake(&error),
        })
    }

    /// Its tools and instructions, as the model will get them.
    pub(super) async fn list_tools(&self, client: &Client) -> Result<(), McpError> {
        let listed = client
            .list_all_tools()
            .await
            .map_err(|error| McpError::ListTools(error.to_string()))?;
        *lock(&self.tools) = listed
            .into_iter()
            .map(|tool| {
                let (description, cut) = capped(tool.description.as_deref().unwrap_or(""), DESCRIPTION_CAP);
                ServerTool {
                    name: tool.name.to_string(),
                    description,
                    cut,
                    input_schema: Value::Object((*tool.input_schema).clone()),
                }
            })
            .collect();
        *lock(&self.instructions) = client
            .peer_info()
            .and_then(|info| info.instructions.clone())
            .filter(|text| !text.trim().is_empty())
            .map(|text| capped(&text, DESCRIPTION_CAP));
        Ok(())
    }

    /// Kill the server's process group.
    pub(super) fn stop(&self) {
        if let Some(pgid) = lock(&self.group).take() {
            crate::process::children::release_child(pgid);
            // SAFETY: killpg only sends a signal; a stale group id fails harmlessly.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    pub(super) async fn call(&self, tool: &McpTool, arguments: Value) -> ToolOutput {
        let arguments = match arguments {
            Value::Object(fields) => Some(fields),
            Value::Null => None,
            other => {
                return ToolOutput::error(format!(
                    "{}: the input must be an object, got {}",
                    tool.qualified,
                    crate::json::to_string(&other).unwrap_or_default()
                ));
            }
        };
        if *lock(&self.state) == ServerState::Disabled {
            return ToolOutput::error(format!(
                "{}: the MCP server `{}` was disabled for this session",
                tool.qualified, self.name
            ));
        }
        let stopped = self
            .client
            .lock()
            .await
            .as_ref()
            .is_none_or(|client| client.is_closed());
        if stopped {
            if self.restarted.swap(true, Ordering::Relaxed) {
                let reason = match &*lock(&self.state) {
                    ServerState::Failed(reason) | ServerState::Stopped(reason) => reason.clone(),
                    _ => "it stopped".to_string(),
                };
                return ToolOutput::error(format!(
                    "{}: the MCP server `{}` is not running ({reason}); it was restarted once already. \
                     /mcp shows it.",
                    tool.qualified, self.name
                ));
            }
            self.stop();
            self.connect().await;
            if let ServerState::Failed(reason) = &*lock(&self.state) {
                return ToolOutput::error(format!(
                    "{}: the MCP server `{}` stopped and did not start again: {reason}",
                    tool.qualified, self.name
                ));
            }
        }
        let mut params = CallToolRequestParams::new(tool.tool.clone());
        params.arguments = arguments;
        let timeout = Duration::from_secs(self.config.tool_timeout_secs);
        let mut running = self.client.lock().await;
        let Some(client) = running.as_ref() else {
            return ToolOutput::error(format!(
                "{}: the MCP server `{}` is not running",
                tool.qualified, self.name
            ));
        };
        match tokio::time::timeout(timeout, client.call_tool(params)).await {
            Ok(Ok(result)) => result::to_output(&result),
            Ok(Err(error)) => {
                let closed = matches!(
                    error,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) || client.is_closed();
                if closed {
                    *running = None;
                    // Its stderr, which says why, is shown with the state.
                    let reason = "stopped during a call (the connection closed)".to_string();
                    // Started again on the next call, once.
                    *lock(&self.state) = if self.restarted.load(Ordering::Relaxed) {
                        ServerState::Failed(reason)
                    } else {
                        ServerState::Stopped(reason)
                    };
                }
                ToolOutput::error(format!(
                    "{}: the MCP server `{}` failed: {error}{}",
                    tool.qualified,
                    self.name,
                    match (closed, self.restarted.load(Ordering::Relaxed)) {
                        (true, false) => "; it stopped, and is started again on the next call",
                        (true, true) => "; it stopped again after its restart, and stays stopped (/mcp shows it)",
                        (false, _) => "",
                    }
                ))
            }
            Err(_) => ToolOutput::error(format!(
                "{}: no answer within {} s (tool_timeout_secs of `{}`)",
                tool.qualified,
                timeout.as_secs(),
                self.name
            )),
        }
    }
}

/// Why a handshake failed, in the user's words: the SDK's own (`expect initialized
/// response, but received: Some(…)`) name its internals, not what the server did.
fn plain_handshake(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as Failed;
    match error {
        // Which of the two a server that exits at once gives is a race.
        Failed::ConnectionClosed(_) | Failed::TransportError { .. } => {
            "it exited or closed the connection before answering".into()
        }
        Failed::JsonRpcError(data) => format!("it answered with an error: {}", data.message),
        Failed::NoCompatibleProtocolVersion { .. } => "it speaks no MCP protocol version scratchpad knows".into(),
        Failed::Cancelled => "the start was cancelled".into(),
        Failed::LegacyFallbackFailed { fallback, .. } => plain_handshake(fallback),
        Failed::ExpectedInitResponse(_)
        | Failed::ExpectedInitResult(_)
        | Failed::ConflictInitResponseId(..)
        | Failed::UncorrelatedErrorResponse { .. } => "it answered something other than the handshake".into(),
        other => crate::text::one_line(&other.to_string(), 120),
    }
}
