//! `/mcp trust` in the agent: it records trust in the workspace's `.mcp.json` where a
//! later start reads it, and starts the file's servers at once. Alone in its binary:
//! it points the data folder (`XDG_DATA_HOME`) at a temporary one before any thread
//! that could read the environment starts.

mod common;

use common::*;
use scratchpad::protocol::{AgentEvent, McpAction, Op};

#[test]
fn trusting_a_project_mcp_json_records_it_and_starts_its_servers() {
    let data = tempfile::tempdir().unwrap();
    // SAFETY: the only test of this binary, before its runtime or any thread of ours.
    unsafe { std::env::set_var("XDG_DATA_HOME", data.path()) };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let api = MockApi::start(vec![text_reply("before"), text_reply("after")]).await;
        let dir = tempfile::tempdir().unwrap();
        let fixture = format!("{}/tests/fixtures/mcp_fixture_server.py", env!("CARGO_MANIFEST_DIR"));
        let text = serde_json::json!({"mcpServers": {"proj": {"command": "python3", "args": [fixture]}}});
        std::fs::write(dir.path().join(".mcp.json"), text.to_string()).unwrap();
        let workspace = dir.path().to_path_buf();
        let mut agent = start_agent_in(dir, &api, agent_settings(scratchpad::agent::AskPolicy::Ask));
        turn(&mut agent, "hi").await;
        agent
            .ops
            .send(Op::Mcp {
                action: Some(McpAction::Trust),
            })
            .unwrap();
        let listing = match until(
            &mut agent.events,
            |event| matches!(event, AgentEvent::Notice { message } if message.contains("(/mcp restart NAME")),
        )
        .await
        {
            AgentEvent::Notice { message } => message,
            _ => unreachable!("until returns only a notice"),
        };
        assert!(listing.starts_with("MCP server `proj`: 6 tools"), "{listing}");
        turn(&mut agent, "again").await;
        let requests = api.turn_requests();
        let offered = |at: usize| tool_definitions(&requests[at], "mcp__proj__").len();
        assert_eq!(offered(0), 0, "not before the trust");
        assert_eq!(offered(1), 6, "at once after it");
        let project = scratchpad::mcp::project::read(&workspace).unwrap().unwrap();
        assert!(
            scratchpad::mcp::project::is_trusted(&data.path().join("scratchpad"), &workspace, &project.sha256),
            "recorded where the next start reads it"
        );
    });
}
