//! A session ready to start, as the binary resolved it from the command line, the
//! config file and the environment, made into an agent: its settings, its tools and
//! the MCP servers it may start.

use std::path::Path;
use std::sync::Arc;

use crate::agent::{Agent, AgentSettings, AskPolicy, SYSTEM_PROMPT};
use crate::config::Config;
use crate::message::Message;
use crate::protocol::AgentEvent;
use crate::provider::Provider;
use crate::session::Journal;
use crate::tools::ToolBox;
use crate::tools::workspace::Workspace;

/// What an agent starts from.
pub struct Launch {
    pub config: Config,
    pub provider: Arc<dyn Provider>,
    pub workspace: Workspace,
    /// `None` for a read-only view: nothing is journaled.
    pub journal: Option<Journal>,
    /// A read-only view's line for the user: which session, and why read-only.
    pub read_only: Option<String>,
    pub history: Vec<Message>,
    /// What happened in the earlier runs of a resumed session, in order.
    pub past: Vec<crate::protocol::Past>,
    /// The tool results a resumed session had pinned.
    pub pins: std::collections::BTreeSet<String>,
    /// What restoring the session had to skip or mend, shown once it starts.
    pub notices: Vec<String>,
    /// Open the session picker first (`--resume` without an id, in the app).
    pub pick_session: bool,
}

impl Launch {
    pub fn into_agent(self, ask: AskPolicy, events: tokio::sync::mpsc::UnboundedSender<AgentEvent>) -> Agent {
        let settings = AgentSettings {
            compaction: self.config.compaction.clone(),
            system_prompt: SYSTEM_PROMPT.to_string(),
            instructions: self.config.instructions.clone(),
            max_tokens: self.config.provider.max_tokens,
            max_steps: 200,
            ask,
            configured_window_tokens: self.config.provider.context_window_tokens,
            data_dir: scratchpad_core::places::data_dir(),
            read_only: self.read_only,
        };
        let mut tools = ToolBox::new(self.workspace, self.config.tools.clone());
        let mut notices = self.notices;
        if self.config.provider.thinking != crate::provider::Thinking::Off && self.provider.kind() != "anthropic" {
            notices.push(format!(
                "provider.thinking is set, but the {} provider has no thinking setting: its calls are sent without one",
                self.provider.kind()
            ));
        }
        // A read-only view runs nothing, so it starts no server.
        if settings.read_only.is_none() {
            let root = tools.workspace().root().to_path_buf();
            // Validated with the config: a bad pattern cannot get here.
            let hidden = self
                .config
                .tools
                .hidden_env_matcher()
                .unwrap_or_else(|_| crate::tools::HiddenEnv::ours_only());
            let hub = crate::mcp::McpHub::start(&self.config.mcp_servers, &root, crate::tools::user_variable, hidden);
            notices.extend(project_servers(&hub, &root));
            tools = tools.with_mcp(hub);
        }
        let agent = Agent::new(self.provider, settings, tools, self.journal, self.history, events);
        agent.with_notices(notices).with_past(self.past).with_pins(self.pins)
    }
}

/// A trusted `.mcp.json`'s servers joined to `hub`; the lines to say of the file (left
/// out servers, a name `config.toml` has already, or that it waits to be trusted).
fn project_servers(hub: &crate::mcp::McpHub, workspace: &Path) -> Vec<String> {
    use crate::mcp::project;
    let project = match project::read(workspace) {
        Ok(Some(project)) => project,
        Ok(None) => return Vec::new(),
        Err(line) => return vec![line],
    };
    let mut lines = project.problems.clone();
    if project.servers.is_empty() {
        return lines;
    }
    let trusted =
        scratchpad_core::places::data_dir().is_some_and(|data| project::is_trusted(&data, workspace, &project.sha256));
    if trusted {
        lines.extend(project.start_in(hub, workspace));
    } else {
        lines.push(project::untrusted_line(&project));
    }
    lines
}
