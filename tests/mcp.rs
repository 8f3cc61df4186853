//! MCP servers through the real binary: the fixture server of `tests/fixtures` (a real
//! process speaking MCP on stdio) configured in `config.toml`, a turn driven by the
//! mock model.

mod common;

use common::*;
use serde_json::{Value, json};

fn fixture_server() -> String {
    format!("{}/tests/fixtures/mcp_fixture_server.py", env!("CARGO_MANIFEST_DIR"))
}

/// `[mcp_servers.fx]` running the fixture server, with `extra` settings.
/// The fixture server, as `fx`, for an agent started in process.
fn fixture_servers() -> std::collections::BTreeMap<String, scratchpad::mcp::McpServerConfig> {
    std::collections::BTreeMap::from([(
        "fx".to_string(),
        scratchpad::mcp::McpServerConfig {
            command: "python3".into(),
            args: vec![fixture_server()],
            ..Default::default()
        },
    )])
}

fn configure_fixture(workspace: &Workspace, extra: &str) {
    let path = workspace.home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    // The workspace's path on its command line tells this test's server from others.
    config.push_str(&format!(
        "\n[mcp_servers.fx]\ncommand = \"python3\"\nargs = [{:?}, {:?}]\n{extra}\n",
        fixture_server(),
        workspace.path().display().to_string()
    ));
    std::fs::write(path, config).unwrap();
}

fn tool_named<'a>(request: &'a Recorded, name: &str) -> Option<&'a Value> {
    request.body["tools"]
        .as_array()?
        .iter()
        .find(|tool| tool["name"] == name)
}

#[test]
fn an_mcp_tool_reaches_the_model_and_its_call_runs_with_yes() {
    let workspace = Workspace::new();
    configure_fixture(&workspace, "env = { MCP_FIXTURE_INSTRUCTIONS = \"Call echo first.\" }");
    let api = MockApi::start_in_thread(vec![
        tool_reply("Echoing.", &[("toolu_1", "mcp__fx__echo", json!({"text": "hi ✓"}))]),
        text_reply("done"),
    ]);
    let output = workspace.run(&api, &["-p", "Use the echo tool", "--yes"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let requests = api.turn_requests();
    let echo = tool_named(&requests[0], "mcp__fx__echo").expect("the first request offers the MCP tool");
    assert_eq!(
        echo["input_schema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        "the schema as the server gives it"
    );
    assert!(tool_named(&requests[0], "mcp__fx__get_item_x").is_some());
    assert!(
        system_text(&requests[0].body).contains("# Instructions of the MCP server `fx`\n\nCall echo first."),
        "the server's instructions are in the system prompt"
    );
    assert_eq!(tool_results(&messages_of(&requests[1])), ["echo: hi ✓"]);
    assert!(stderr.contains("MCP server `fx`: 6 tools,"), "{stderr}");
    let tag = workspace.path().display().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !processes_mentioning(&tag).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the server outlived scratchpad");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The sweep that kills what a command left behind spares the MCP servers: a server
/// answers with the same process id before and after a command whose orphan the
/// sweep killed (started again, it would answer with another).
#[test]
fn the_sweep_after_a_command_spares_the_mcp_servers() {
    let workspace = Workspace::new();
    configure_fixture(&workspace, "");
    let pid_call = |id: &'static str| (id, "mcp__fx__echo", json!({"text": "pid"}));
    let api = MockApi::start_in_thread(vec![
        tool_reply("Asking.", &[pid_call("toolu_p1")]),
        tool_reply(
            "Running.",
            &[bash_call(
                "toolu_b1",
                "setsid sleep 30 > /dev/null 2>&1 < /dev/null & echo started",
            )],
        ),
        tool_reply("Asking again.", &[pid_call("toolu_p2")]),
        text_reply("done"),
    ]);
    let output = workspace.run(&api, &["-p", "Ask the server twice", "--yes"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = api.turn_requests();
    let answers: Vec<String> = [1, 3]
        .into_iter()
        .map(|at| {
            tool_results(&messages_of(&requests[at]))
                .last()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert!(
        answers[0].starts_with("echo: ") && answers[0].len() > "echo: ".len(),
        "{answers:?}"
    );
    assert!(
        tool_results(&messages_of(&requests[2]))
            .last()
            .is_some_and(|result| result.contains("started")),
        "the command ran"
    );
    assert_eq!(answers[0], answers[1], "the same server answered both times");
}

/// A daemon an MCP server left running (in a session of its own, out of the server's
/// process group) does not outlive scratchpad: handed to it as an orphan once the
/// server stops, it is swept at exit.
#[test]
fn a_daemon_an_mcp_server_left_does_not_outlive_scratchpad() {
    let workspace = Workspace::new();
    configure_fixture(&workspace, "");
    let token = 30_000 + std::process::id() % 10_000;
    let daemon = format!("sleep {token}");
    let api = MockApi::start_in_thread(vec![
        tool_reply(
            "Starting.",
            &[("toolu_o1", "mcp__fx__echo", json!({"text": format!("orphan {token}")}))],
        ),
        text_reply("done"),
    ]);
    let output = workspace.run(&api, &["-p", "Leave a daemon", "--yes"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut left = processes_running(&daemon);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = processes_running(&daemon);
    }
    for pid in &left {
        // SAFETY: signalling a process this test caused.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "the server's daemon outlived scratchpad: {left:?}");
}

/// Processes whose command line mentions `text`.
fn processes_mentioning(text: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(text)
        })
        .collect()
}

#[test]
fn without_yes_an_untrusted_mcp_call_is_refused_in_a_line_and_a_trusted_one_runs() {
    let workspace = Workspace::new();
    configure_fixture(&workspace, "trusted_tools = [\"get.item/x\"]");
    let api = MockApi::start_in_thread(vec![
        tool_reply(
            "Two calls.",
            &[
                ("toolu_1", "mcp__fx__echo", json!({"text": "hi"})),
                ("toolu_2", "mcp__fx__get_item_x", json!({"id": 2})),
            ],
        ),
        text_reply("done"),
    ]);
    let output = workspace.run(&api, &["-p", "Look it up"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let results = tool_results(&messages_of(&api.turn_requests()[1]));
    assert!(
        results[0].contains("--yes"),
        "the refusal says how to allow it: {results:?}"
    );
    assert_eq!(results[1], "item 2", "a trusted tool runs without asking");
    assert!(
        stderr
            .lines()
            .any(|line| line.contains("mcp__fx__echo") && line.contains("--yes")),
        "one line says what was refused: {stderr}"
    );
}

/// An MCP result is a tool result to every stage: one over the batch budget is saved
/// whole by stage 1, its receipt names the MCP tool, and the next request carries the
/// preview block with the path.
#[test]
fn a_huge_mcp_result_is_persisted_by_stage_one_with_a_receipt() {
    let workspace = Workspace::new();
    configure_fixture(&workspace, "trusted = true");
    let api = MockApi::start_in_thread(vec![
        tool_reply("Big.", &[("toolu_big", "mcp__fx__big", json!({"chars": 250_000}))]),
        text_reply("done"),
    ]);
    let output = workspace.run(&api, &["-p", "Fetch it", "--events", "jsonl"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let events = events(&output);
    let budget = events
        .iter()
        .find(|event| event["type"] == "compaction" && event["event"]["stage"] == "tool_result_budget")
        .expect("stage 1 fired");
    assert_eq!(
        budget["event"]["items"][0]["what"], "mcp__fx__big {\"chars\":250000} (result)",
        "the receipt names the MCP tool"
    );
    let result = tool_results(&messages_of(&api.turn_requests()[1])).remove(0);
    let block = scratchpad::compact::markers::parse_persisted_output(&result).expect("a preview block");
    let saved = std::fs::read_to_string(workspace.path().join(block.path)).unwrap();
    assert_eq!(saved, "x".repeat(250_000), "saved whole");
}

/// The real third-party server `@modelcontextprotocol/server-everything` (installed
/// from npm by `.ci/run`, which names its launcher in `SCRATCHPAD_MCP_EVERYTHING`):
/// its tools arrive prefixed, a call's result is in the next request, the line said
/// of the server counts its schemas and instructions, and a server killed mid-session
/// gives the model a clear error, then is started again for the next call.
#[test]
#[ignore = "needs @modelcontextprotocol/server-everything from npm: .ci/run installs it and runs this with --ignored"]
fn the_reference_everything_server_runs_dies_and_is_started_again() {
    let launcher = std::env::var("SCRATCHPAD_MCP_EVERYTHING")
        .expect("SCRATCHPAD_MCP_EVERYTHING names the installed mcp-server-everything (see .ci/run)");
    let workspace = Workspace::new();
    let path = workspace.home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(&format!(
        "\n[mcp_servers.everything]\ncommand = {launcher:?}\nargs = [\"stdio\"]\ntrusted = true\n"
    ));
    std::fs::write(&path, config).unwrap();
    let echo = |id: &str, message: &str| ("toolu_".to_string() + id, json!({"message": message}));
    let call = |id: &str, message: &str| {
        let (id, input) = echo(id, message);
        tool_reply("Echo.", &[(id.as_str(), "mcp__everything__echo", input)])
    };
    let slow = match call("2", "after the kill") {
        Reply::Sse { body, .. } => Reply::Sse {
            chunk: body.len() / 2 + 1,
            delay_ms: 2_000,
            body,
        },
        other => other,
    };
    // The third echo is over stage 1's batch budget: it is saved whole with a preview.
    let big = format!("again {}", "x".repeat(250_000));
    let api = MockApi::start_in_thread(vec![call("1", "first"), slow, call("3", &big), text_reply("done")]);
    let child = workspace
        .command(&api, &["-p", "Echo three times", "--limit", "600000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the second request is in, the server has answered the first call: kill it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while api.requests().len() < 2 {
        assert!(std::time::Instant::now() < deadline, "the second request never came");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let server = server_pids(child.id(), "mcp-server-everything");
    assert_eq!(server.len(), 1, "one server process, a child of scratchpad");
    // SAFETY: signalling the server process the test found.
    unsafe {
        libc::kill(server[0], libc::SIGKILL);
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");

    let requests = api.turn_requests();
    let first = &requests[0];
    let specs = tool_definitions(first, "mcp__everything__");
    let tools: Vec<&str> = specs.iter().filter_map(|tool| tool["name"].as_str()).collect();
    assert!(
        tools.contains(&"mcp__everything__echo") && tools.contains(&"mcp__everything__get-sum"),
        "{tools:?}"
    );
    let system = system_text(&first.body);
    let header = "\n\n# Instructions of the MCP server `everything`\n\n";
    let instructions = system
        .split(header)
        .nth(1)
        .expect("the server's instructions are in the system prompt");
    // Its definitions as they sit in the request's list (each after a separator), and
    // its block of the system prompt.
    let counted =
        python_dumps_len(&Value::Array(specs.clone())) + header.chars().count() + instructions.chars().count();
    assert!(
        stderr.contains(&format!(
            "MCP server `everything`: {} tools, {counted} chars",
            tools.len()
        )),
        "the line counts the schemas and the instructions ({counted}): {stderr}"
    );
    let results: Vec<String> = tool_results(&messages_of(&requests[3]));
    assert!(results[0].contains("first"), "{results:?}");
    assert!(
        results[1].contains("stopped") && results[1].contains("started again on the next call"),
        "the model is told the server died: {results:?}"
    );
    let block = scratchpad::compact::markers::parse_persisted_output(&results[2])
        .unwrap_or_else(|| panic!("stage 1 saved the big result: {}", &results[2][..200]));
    let saved = std::fs::read_to_string(workspace.path().join(block.path)).unwrap();
    assert_eq!(
        saved,
        format!("Echo: {big}"),
        "started again for the next call, and saved whole"
    );
}

/// Children of `parent` whose command line mentions `name`.
fn server_pids(parent: u32, name: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains(name)
        })
        .collect()
}

fn mcp_tool_names(request: &Recorded) -> Vec<String> {
    tool_definitions(request, "mcp__")
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_string))
        .collect()
}

/// The `/mcp` command's notice after `action`.
async fn mcp_command(agent: &mut Running, action: Option<scratchpad::protocol::McpAction>) -> String {
    use scratchpad::protocol::AgentEvent;
    agent.ops.send(scratchpad::protocol::Op::Mcp { action }).unwrap();
    // What it said last before the agent was ready again.
    let mut said = None;
    loop {
        match until(&mut agent.events, |event| {
            matches!(event, AgentEvent::Notice { .. } | AgentEvent::Ready)
        })
        .await
        {
            AgentEvent::Notice { message } => said = Some(message),
            // A ready before it said anything is an earlier op's.
            _ => {
                if let Some(said) = said {
                    return said;
                }
            }
        }
    }
}

/// `/mcp` lists each server with what its tools cost, disables one (its tools leave the
/// next request, and the fixed part with them) and starts it again.
#[tokio::test]
async fn mcp_lists_disables_and_restarts_a_server_and_the_requests_follow() {
    let api = MockApi::start(vec![text_reply("one"), text_reply("two"), text_reply("three")]).await;
    let servers = fixture_servers();
    let mut agent = start_agent_with_mcp(&api, agent_settings(scratchpad::agent::AskPolicy::Ask), &servers);
    let first = turn(&mut agent, "hi").await;
    assert!(
        first
            .notices
            .iter()
            .any(|notice| notice.starts_with("MCP server `fx`: 6 tools")),
        "{:?}",
        first.notices
    );
    let breakdown = common::breakdown_of(&mut agent).await;
    let sent_definitions = tool_definitions(&api.turn_requests()[0], "mcp__");
    assert_eq!(breakdown.mcp_servers.len(), 1);
    assert_eq!(
        breakdown.mcp_servers[0].chars,
        python_dumps_len(&Value::Array(sent_definitions)),
        "/context's row is the server's definitions as the request carried them"
    );
    let fixed_rows: usize = breakdown
        .totals
        .iter()
        .filter(|(category, _)| category.is_fixed())
        .map(|(_, chars)| chars)
        .sum();
    assert_eq!(fixed_rows, breakdown.fixed, "the fixed part's rows sum to it");
    let listing = mcp_command(&mut agent, None).await;
    assert!(listing.contains("\n  mcp__fx__echo · "), "{listing}");
    assert!(listing.contains("MCP servers run outside the sandbox"), "{listing}");

    // An action says what it did and what changed, not every server again.
    let disabled = mcp_command(&mut agent, Some(scratchpad::protocol::McpAction::Disable("fx".into()))).await;
    assert_eq!(
        disabled,
        "disabled `fx` for this session: its tools are no longer offered\nMCP server `fx`: disabled for this session",
        "no instructions' size for a server that is not offered"
    );
    turn(&mut agent, "again").await;
    let restarted = mcp_command(&mut agent, Some(scratchpad::protocol::McpAction::Restart("fx".into()))).await;
    assert!(
        restarted.starts_with("restarted `fx`: it is ready\nMCP server `fx`: 6 tools"),
        "{restarted}"
    );
    assert!(
        !restarted.contains("outside the sandbox"),
        "not the whole list again: {restarted}"
    );
    turn(&mut agent, "third").await;
    let unknown = mcp_command(
        &mut agent,
        Some(scratchpad::protocol::McpAction::Restart("nope".into())),
    )
    .await;
    assert_eq!(unknown, "there is no MCP server `nope` (see /mcp)");

    let requests = api.turn_requests();
    assert_eq!(mcp_tool_names(&requests[0]).len(), 6);
    assert!(
        mcp_tool_names(&requests[1]).is_empty(),
        "a disabled server's tools leave"
    );
    assert_eq!(mcp_tool_names(&requests[2]).len(), 6, "and come back with it");
}

/// A result over the server's `max_result_chars` is saved whole; the model gets its
/// start and the path, never a silent cut.
#[test]
fn a_result_over_max_result_chars_is_saved_whole_with_its_start() {
    let workspace = Workspace::new();
    configure_fixture(&workspace, "trusted = true\nmax_result_chars = 500");
    let api = MockApi::start_in_thread(vec![
        tool_reply("Big.", &[("toolu_cap", "mcp__fx__big", json!({"chars": 5_000}))]),
        text_reply("done"),
    ]);
    let output = workspace.run(&api, &["-p", "Fetch it"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = tool_results(&messages_of(&api.turn_requests()[1])).remove(0);
    let block = scratchpad::compact::markers::parse_persisted_output(&result).expect("a preview block");
    assert_eq!(block.preview, "x".repeat(500));
    assert_eq!(block.original_chars, Some(5_000));
    let saved = std::fs::read_to_string(workspace.path().join(block.path)).unwrap();
    assert_eq!(saved, "x".repeat(5_000), "saved whole");
}

/// A project's `.mcp.json` starts nothing until this version of it is trusted; once
/// trusted its servers' tools are offered; an edit of the file asks again.
#[test]
fn a_project_mcp_json_starts_only_once_trusted_and_again_after_an_edit() {
    let workspace = Workspace::new();
    let write_project = |extra_arg: &str| {
        let text = json!({"mcpServers": {"proj": {"type": "stdio", "command": "python3",
            "args": [fixture_server(), extra_arg]}}});
        std::fs::write(workspace.path().join(".mcp.json"), text.to_string()).unwrap();
    };
    write_project("first");
    let run = |workspace: &Workspace| {
        let api = MockApi::start_in_thread(vec![text_reply("ok")]);
        let output = workspace.run(&api, &["-p", "hi"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        (
            mcp_tool_names(&api.turn_requests()[0]),
            String::from_utf8_lossy(&output.stderr).to_string(),
        )
    };
    let (tools, stderr) = run(&workspace);
    assert!(tools.is_empty(), "nothing started unasked: {tools:?}");
    assert!(
        stderr.contains("names MCP servers `proj` (python3); none is started until you trust")
            && stderr.contains("/mcp trust"),
        "{stderr}"
    );
    let data = workspace.home.path().join("data/scratchpad");
    let project = scratchpad::mcp::project::read(workspace.path()).unwrap().unwrap();
    scratchpad::mcp::project::trust(&data, workspace.path(), &project.sha256).unwrap();
    let (tools, _) = run(&workspace);
    assert_eq!(tools.len(), 6, "trusted: its tools are offered");
    assert!(tools.contains(&"mcp__proj__echo".to_string()));
    write_project("edited");
    let (tools, stderr) = run(&workspace);
    assert!(tools.is_empty() && stderr.contains("/mcp trust"), "an edit asks again");
}

/// The screen is told which servers failed (for its status line) as soon as they do,
/// without waiting for a request.
#[tokio::test]
async fn a_failed_server_is_told_to_the_screen_without_a_request() {
    let api = MockApi::start(vec![]).await;
    let servers = std::collections::BTreeMap::from([(
        "gone".to_string(),
        scratchpad::mcp::McpServerConfig {
            command: "/nonexistent/mcp-server".into(),
            ..Default::default()
        },
    )]);
    let mut agent = start_agent_with_mcp(&api, agent_settings(scratchpad::agent::AskPolicy::Ask), &servers);
    let told = until(
        &mut agent.events,
        |event| matches!(event, scratchpad::protocol::AgentEvent::McpServers { failed, .. } if !failed.is_empty()),
    )
    .await;
    assert_eq!(
        told,
        scratchpad::protocol::AgentEvent::McpServers {
            starting: Vec::new(),
            failed: vec!["gone".into()],
        }
    );
}

/// When a server becomes ready, the fixed part, the limit and the notices follow at
/// once, with no request sent: the gauge never shows the cost of a session without
/// its servers while they are up.
#[tokio::test]
async fn a_ready_server_is_counted_in_the_fixed_part_without_a_request() {
    use scratchpad::protocol::AgentEvent;
    let api = MockApi::start(vec![]).await;
    let servers = fixture_servers();
    let mut agent = start_agent_with_mcp(&api, agent_settings(scratchpad::agent::AskPolicy::Ask), &servers);
    let AgentEvent::Context { status: first } =
        until(&mut agent.events, |event| matches!(event, AgentEvent::Context { .. })).await
    else {
        unreachable!("waited for the context")
    };
    let said = until(
        &mut agent.events,
        |event| matches!(event, AgentEvent::Notice { message } if message.starts_with("MCP server `fx`: 6 tools")),
    )
    .await;
    let AgentEvent::Context { status: after } =
        until(&mut agent.events, |event| matches!(event, AgentEvent::Context { .. })).await
    else {
        unreachable!("waited for the context")
    };
    assert!(
        after.fixed > first.fixed + 500,
        "the fixed part grew by the server's tools: {} → {} ({said:?})",
        first.fixed,
        after.fixed
    );
    assert!(api.requests().is_empty(), "no request was sent");
}

/// A server that fails is said with the last line of its standard error, which says
/// why (`fatal: missing GITHUB_TOKEN`), not only that the connection closed.
#[tokio::test]
async fn a_failed_server_is_said_with_the_end_of_its_stderr() {
    use scratchpad::protocol::AgentEvent;
    let api = MockApi::start(vec![]).await;
    let servers = std::collections::BTreeMap::from([(
        "broken".to_string(),
        scratchpad::mcp::McpServerConfig {
            command: "sh".into(),
            args: vec!["-c".into(), "echo 'fatal: missing GITHUB_TOKEN' >&2; exit 1".into()],
            ..Default::default()
        },
    )]);
    let mut agent = start_agent_with_mcp(&api, agent_settings(scratchpad::agent::AskPolicy::Ask), &servers);
    let said = until(
        &mut agent.events,
        |event| matches!(event, AgentEvent::Notice { message } if message.starts_with("MCP server `broken` failed")),
    )
    .await;
    let AgentEvent::Notice { message } = said else {
        unreachable!("waited for a notice")
    };
    assert!(message.contains("fatal: missing GITHUB_TOKEN"), "{message}");
    // One plain line: the stderr once, and no SDK internals (it said `connection
    // closed: initialize response` and the stderr twice).
    assert_eq!(message.matches("fatal: missing GITHUB_TOKEN").count(), 1, "{message}");
    assert!(
        !message.contains("initialize response") && !message.contains("Some("),
        "{message}"
    );
    assert!(
        message.contains("it exited or closed the connection before answering"),
        "{message}"
    );
}

/// A variable the user hides from commands with their own `hide_env` pattern is
/// hidden from MCP servers too, but for one a server's `env` names on purpose.
#[test]
fn a_custom_hidden_variable_reaches_no_server_that_does_not_name_it() {
    let workspace = Workspace::new();
    let path = workspace.home.path().join("config.toml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(concat!(
        "\n[tools]\nhide_env = [\"*KEY*\", \"*SECRET*\", \"*TOKEN*\", \"*PASS*\", \"CORP_*\"]\n",
        "\n[mcp_servers.leak]\ncommand = \"sh\"\n",
        "args = [\"-c\", \"echo seen:${CORP_VAULT_PASS:-none}:${CORP_NAMED:-none} >&2; exit 1\"]\n",
        "env = { CORP_NAMED = \"${CORP_NAMED}\" }\n",
    ));
    std::fs::write(&path, config).unwrap();
    let api = MockApi::start_in_thread(vec![text_reply("hello")]);
    let output = workspace
        .command(&api, &["-p", "hi"])
        .env("CORP_VAULT_PASS", "vault-secret-7")
        .env("CORP_NAMED", "named-on-purpose")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("seen:"), "the server's last words are said: {stderr}");
    assert!(
        !stderr.contains("vault-secret-7"),
        "a hidden variable reached the server: {stderr}"
    );
    assert!(stderr.contains("seen:none:named-on-purpose"), "{stderr}");
}
