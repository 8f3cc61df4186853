//! MCP servers in the agent: a request waits for servers still starting (Esc cancels
//! the wait), and a change of what the servers offer (a server ready, failed or
//! restarted) reaches the next request: their tools and instructions are part of the
//! fixed part, so the gauge, the limit and `/context` follow, and a notice says what
//! each server costs.

use super::*;
use crate::mcp::{DESCRIPTION_CAP, McpHub, McpTool, ServerState, ServerStatus};
use crate::protocol::{McpAction, McpServerRow};

/// Whether the model gets the server's tools and instructions.
fn offered(status: &ServerStatus) -> bool {
    matches!(status.state, ServerState::Ready | ServerState::Stopped(_))
}

/// A server's block of instructions in the system prompt (capped), if it gives any.
fn instructions_block(status: &ServerStatus) -> Option<String> {
    let text = status.instructions.as_ref()?;
    Some(format!(
        "\n\n# Instructions of the MCP server `{}`\n\n{text}",
        status.name
    ))
}

/// The system prompt's blocks of the servers' instructions, after the rest of the
/// prompt; empty with no server that gives any.
pub(super) fn mcp_instructions(hub: &McpHub) -> String {
    hub.statuses()
        .iter()
        .filter(|status| offered(status))
        .filter_map(instructions_block)
        .collect()
}

/// What a server offered now costs every request: its tool definitions (as the
/// estimate counts them in the request's list, each after a separator since ours come
/// first) and its instructions' block.
fn server_row(status: &ServerStatus, tools: &[McpTool], mode: crate::compact::EstimateMode) -> McpServerRow {
    let own: Vec<&McpTool> = tools.iter().filter(|tool| tool.server == status.name).collect();
    let definitions: usize = own.iter().map(|tool| mode.count(&tool.spec) + mode.separator()).sum();
    McpServerRow {
        name: status.name.clone(),
        tools: own.len(),
        chars: definitions + instructions_block(status).map_or(0, |block| block.chars().count()),
    }
}

/// Each offered server's share of the fixed part, for `/context`.
pub(super) fn server_rows(hub: &McpHub, mode: crate::compact::EstimateMode) -> Vec<McpServerRow> {
    let tools = hub.tools();
    hub.statuses()
        .iter()
        .filter(|status| offered(status))
        .map(|status| server_row(status, &tools, mode))
        .collect()
}

/// One line per server: its state and what the model gets from it, with the end of
/// its stderr where it failed or stopped.
fn server_line(status: &ServerStatus, tools: &[McpTool], mode: crate::compact::EstimateMode) -> String {
    state_line(status, tools, mode, last_words(status))
}

/// [`server_line`] with `last_words` after a failure's reason.
fn state_line(
    status: &ServerStatus,
    tools: &[McpTool],
    mode: crate::compact::EstimateMode,
    last_words: String,
) -> String {
    match &status.state {
        ServerState::Starting => format!("MCP server `{}`: starting", status.name),
        ServerState::Disabled => format!("MCP server `{}`: disabled for this session", status.name),
        ServerState::Failed(reason) => format!("MCP server `{}` failed: {reason}{last_words}", status.name),
        ServerState::Stopped(reason) => format!(
            "MCP server `{}` {reason}{last_words}; it is started again on the next call",
            status.name
        ),
        ServerState::Ready => {
            let row = server_row(status, tools, mode);
            let cut = if status.cut > 0 {
                format!(
                    " ({} chars of descriptions and instructions cut at {DESCRIPTION_CAP} each)",
                    status.cut
                )
            } else {
                String::new()
            };
            format!(
                "MCP server `{}`: {} tool{}, {} chars of every request{cut}",
                status.name,
                row.tools,
                if row.tools == 1 { "" } else { "s" },
                row.chars
            )
        }
    }
}

/// What a server that failed or stopped last wrote on its standard error, which
/// usually says why (`fatal: missing GITHUB_TOKEN`) where the connection's end does not.
fn last_words(status: &ServerStatus) -> String {
    status
        .stderr_tail
        .iter()
        .rev()
        .find(|line| !line.trim().is_empty())
        .map(|line| format!(" (its stderr ends: {})", line.trim()))
        .unwrap_or_default()
}

/// `/mcp`'s view of one server: its line, then each tool with what its definition
/// costs, or the end of its standard error when it failed.
fn server_details(status: &ServerStatus, tools: &[McpTool], mode: crate::compact::EstimateMode) -> String {
    // The end of its stderr is listed below whole: not said in the line too.
    let block =
        matches!(status.state, ServerState::Failed(_) | ServerState::Stopped(_)) && !status.stderr_tail.is_empty();
    let mut text = state_line(
        status,
        tools,
        mode,
        if block { String::new() } else { last_words(status) },
    );
    for tool in tools.iter().filter(|tool| tool.server == status.name) {
        text.push_str(&format!("\n  {} · {} chars", tool.qualified, mode.count(&tool.spec)));
    }
    // What the model reads of it: only while it is offered.
    if status.state == ServerState::Ready
        && let Some(block) = instructions_block(status)
    {
        text.push_str(&format!("\n  instructions · {} chars", block.chars().count()));
    }
    if block {
        text.push_str("\n  its stderr ends:");
        for line in &status.stderr_tail {
            text.push_str(&format!("\n    {line}"));
        }
    }
    text
}

/// Tell the screen which servers are starting or failed whenever that changes, for
/// as long as the hub lives (it holds no reference that would keep it alive).
pub(super) fn watch_servers(hub: &Arc<McpHub>, events: UnboundedSender<AgentEvent>) {
    let mut changes = hub.changes();
    let hub = Arc::downgrade(hub);
    tokio::spawn(async move {
        let mut shown = (Vec::new(), Vec::new());
        loop {
            let Some(trouble) = hub.upgrade().map(|hub| hub.trouble()) else {
                return;
            };
            if trouble != shown {
                let _ = events.send(AgentEvent::McpServers {
                    starting: trouble.0.clone(),
                    failed: trouble.1.clone(),
                });
                shown = trouble;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    });
}

impl Agent {
    /// `/mcp`: list the servers, after restarting or disabling one.
    pub(super) async fn mcp_command(&mut self, action: Option<McpAction>) {
        let hub = Arc::clone(self.tools.mcp());
        if action == Some(McpAction::Trust) {
            if let Some(line) = self.trust_project(&hub).await {
                self.emit(AgentEvent::Notice { message: line });
                return;
            }
        } else if let Some(action) = action {
            let (name, done) = match &action {
                McpAction::Restart(name) => (name, hub.restart(name).await),
                McpAction::Disable(name) => (name, hub.disable(name).await),
                McpAction::Trust => unreachable!("handled above"),
            };
            if !done {
                self.emit(AgentEvent::Notice {
                    message: format!("there is no MCP server `{name}` (see /mcp)"),
                });
                return;
            }
            self.mcp.revision = hub.revision();
            self.take_in_tools();
            // What was done and what changed: that server alone, not every server
            // again (the result was buried under the whole list).
            let offered = hub.tools();
            let Some(status) = hub.statuses().into_iter().find(|status| &status.name == name) else {
                return;
            };
            let outcome = match (&action, &status.state) {
                (McpAction::Disable(_), _) => {
                    format!("disabled `{name}` for this session: its tools are no longer offered")
                }
                (_, ServerState::Ready) => format!("restarted `{name}`: it is ready"),
                (_, ServerState::Failed(_)) => format!("restarting `{name}` did not work"),
                (_, ServerState::Starting) => format!("restarted `{name}`: it is still starting"),
                (_, ServerState::Stopped(_)) => format!("restarted `{name}`, and it stopped"),
                (_, ServerState::Disabled) => format!("`{name}` is disabled for this session"),
            };
            let details = server_details(&status, &offered, self.settings.compaction.estimate);
            self.emit(AgentEvent::Notice {
                message: format!("{outcome}\n{details}"),
            });
            return;
        }
        self.mcp.revision = hub.revision();
        self.take_in_tools();
        let statuses = hub.statuses();
        let offered = hub.tools();
        let message = if statuses.is_empty() {
            "no MCP servers: add [mcp_servers.NAME] with its command to config.toml".to_string()
        } else {
            let mode = self.settings.compaction.estimate;
            let servers: Vec<String> = statuses
                .iter()
                .map(|status| server_details(status, &offered, mode))
                .collect();
            format!(
                "{}\n(/mcp restart NAME · /mcp disable NAME; MCP servers run outside the sandbox)",
                servers.join("\n")
            )
        };
        self.emit(AgentEvent::Notice { message });
    }

    /// `/mcp trust`: record trust in this version of the workspace's `.mcp.json` and
    /// start its servers (waiting for them to start). A line when there is nothing to
    /// trust or it cannot be recorded.
    async fn trust_project(&mut self, hub: &McpHub) -> Option<String> {
        use crate::mcp::project;
        let root = self.tools.workspace().root().to_path_buf();
        let project = match project::read(&root) {
            Ok(Some(project)) if !project.servers.is_empty() => project,
            Ok(_) => {
                return Some(format!(
                    "there is no {} with servers in the workspace",
                    project::PROJECT_FILE
                ));
            }
            Err(line) => return Some(line),
        };
        let Some(data) = scratchpad_core::places::data_dir() else {
            return Some("no data folder to record the trust in (set XDG_DATA_HOME or HOME)".into());
        };
        if let Err(error) = project::trust(&data, &root, &project.sha256) {
            return Some(format!("cannot record the trust: {error}"));
        }
        for message in project.start_in(hub, &root) {
            self.emit(AgentEvent::Notice { message });
        }
        hub.wait_started().await;
        None
    }

    /// Before a model call: wait for servers still starting, then take in any change
    /// of their tools. `Err` when the user cancelled the wait.
    pub(super) async fn refresh_mcp(&mut self, ops: &mut UnboundedReceiver<Op>) -> Result<(), Interrupted> {
        let hub = Arc::clone(self.tools.mcp());
        if hub.starting() {
            let starting: Vec<String> = hub
                .statuses()
                .into_iter()
                .filter(|status| status.state == ServerState::Starting)
                .map(|status| format!("`{}`", status.name))
                .collect();
            self.emit(AgentEvent::Notice {
                message: format!("waiting for MCP servers to start: {}", starting.join(", ")),
            });
            let inspect = || self.breakdown();
            unless_interrupted(ops, &self.events, &inspect, hub.wait_started()).await?;
        }
        self.take_in_mcp_change();
        Ok(())
    }

    /// The servers changed since their tools were last taken in: take them in now.
    pub(super) fn take_in_mcp_change(&mut self) {
        let revision = self.tools.mcp().revision();
        if revision != self.mcp.revision {
            self.mcp.revision = revision;
            self.take_in_tools();
        }
    }

    /// The tool list or the servers' instructions may have changed: the fixed part
    /// follows, and a change is said, per server.
    fn take_in_tools(&mut self) {
        let system = self.system_prompt_now();
        let mode = self.settings.compaction.estimate;
        let offered = self.tools.mcp().tools();
        let lines: Vec<String> = self
            .tools
            .mcp()
            .statuses()
            .iter()
            .map(|status| server_line(status, &offered, mode))
            .collect();
        // A server's lines give its tools' cost, so equal lines and prompt mean an
        // equal fixed part.
        if lines == self.mcp.lines && system == self.prompt.system() {
            return;
        }
        // Only what changed is said: a server that failed again is not said again, nor
        // are the others.
        for message in lines.iter().filter(|line| !self.mcp.lines.contains(line)) {
            self.emit(AgentEvent::Notice {
                message: message.clone(),
            });
        }
        self.mcp.lines = lines;
        self.take_in_system(system);
    }
}
