//! Anthropic's cache diagnostics: every turn call names the previous response, the
//! server's reason for a miss is shown with what scratchpad itself changed, in the
//! app's events and in `-p`.

mod common;

use common::{MockApi, Workspace, agent_settings, events, start_agent, text_reply, tool_reply, until};
use scratchpad::agent::AskPolicy;
use scratchpad::protocol::{AgentEvent, CacheReport, Op, PrefixChange};
use serde_json::{Value, json};

fn previous_of(body: &Value) -> Option<&Value> {
    body.get("diagnostics")
        .map(|diagnostics| &diagnostics["previous_message_id"])
}

async fn next_report(agent: &mut common::Running) -> CacheReport {
    let AgentEvent::Cache { report } = until(&mut agent.events, |e| matches!(e, AgentEvent::Cache { .. })).await else {
        unreachable!("until returns only what it waited for")
    };
    report
}

/// The first call opts in with `null`, each later one names the response before it
/// and carries the beta header; a compaction between two calls is named as ours,
/// with the stage that made it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_names_the_previous_response_and_a_miss_we_caused_is_named_as_ours() {
    let long = "A long answer about the lexer and its tokens. ".repeat(40);
    let api = MockApi::start(vec![text_reply(&long), text_reply(&long), text_reply("Third answer.")]).await;
    api.emulate_cache_diagnostics();
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Refuse)).await;
    for request in ["first question", "second question"] {
        agent.ops.send(Op::Submit { text: request.into() }).unwrap();
        until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    }
    let turns = api.turn_requests();
    assert_eq!(
        previous_of(&turns[0].body),
        Some(&Value::Null),
        "the first call opts in"
    );
    assert_eq!(previous_of(&turns[1].body), Some(&json!("msg_mock_1")));
    for turn in &turns {
        let beta = turn.headers.get("anthropic-beta").and_then(|v| v.to_str().ok());
        assert_eq!(beta, Some("cache-diagnosis-2026-04-07"));
    }

    // /compact replaces the history: the next call's prefix diverges at message 1.
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    let AgentEvent::Compaction { event } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    agent
        .ops
        .send(Op::Submit {
            text: "third question".into(),
        })
        .unwrap();
    let report = next_report(&mut agent).await;
    assert_eq!(report.reason.as_deref(), Some("messages_changed"));
    assert!(
        report.missed_input_tokens.is_some_and(|tokens| tokens > 0),
        "{report:?}"
    );
    assert_eq!(report.ours, Some(vec![PrefixChange::Message { position: 1 }]));
    assert_eq!(report.stages, vec![event.id.clone()]);
    let AgentEvent::Context { status } = until(&mut agent.events, |e| matches!(e, AgentEvent::Context { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(status.cache_missed.as_ref(), Some(&report), "the gauge has it");
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    // The summary request is not part of the chain: it asks nothing.
    assert!(
        api.requests()
            .iter()
            .filter(|r| r.is_summary())
            .all(|r| previous_of(&r.body).is_none())
    );
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// A changed instruction file changes the system prompt: the server's
/// `system_changed` is ours too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_instruction_file_is_named_as_our_change_of_the_system_prompt() {
    let api = MockApi::start(vec![text_reply("One."), text_reply("Two.")]).await;
    api.emulate_cache_diagnostics();
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Refuse)).await;
    agent.ops.send(Op::Submit { text: "one".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    std::fs::write(agent.dir.path().join("AGENTS.md"), "Always answer in one word.\n").unwrap();
    agent.ops.send(Op::Submit { text: "two".into() }).unwrap();
    let report = next_report(&mut agent).await;
    assert_eq!(report.reason.as_deref(), Some("system_changed"));
    assert_eq!(report.ours, Some(vec![PrefixChange::System]));
    assert!(report.stages.is_empty());
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// `-p`: a pending comparison says nothing; a miss is one line on stderr; the
/// events carry both as `cache` events.
#[test]
fn headless_says_a_miss_on_stderr_and_the_events_carry_every_report() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![
        tool_reply("Listing.", &[("toolu_1", "bash", json!({"command": "echo hi"}))]),
        text_reply("Done."),
    ]);
    api.script_cache_diagnostics(vec![
        json!({"cache_miss_reason": null}),
        json!({"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 4300}}),
    ]);
    let output = workspace.run(&api, &["-p", "list the files", "--yes"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("note: cache missed: the tools changed, 4.3k tokens · scratchpad changed nothing in it"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("pending"),
        "a pending comparison is not said: {stderr}"
    );

    let api2 = MockApi::start_in_thread(vec![
        tool_reply("Listing.", &[("toolu_2", "bash", json!({"command": "echo hi"}))]),
        text_reply("Done."),
    ]);
    api2.script_cache_diagnostics(vec![
        json!({"cache_miss_reason": null}),
        json!({"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 4300}}),
    ]);
    let output = workspace.run(&api2, &["-p", "list the files", "--yes", "--events", "jsonl"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let reports: Vec<Value> = events(&output)
        .into_iter()
        .filter(|event| event["type"] == "cache")
        .map(|event| event["report"].clone())
        .collect();
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert_eq!(reports[0]["reason"], Value::Null, "pending");
    assert_eq!(reports[1]["reason"], "tools_changed");
    assert_eq!(reports[1]["missed_input_tokens"], 4300);
}

/// A resumed session goes on from the response its journal names; the server no
/// longer knowing it is said plainly, and the chain goes on from the new response.
#[test]
fn a_resumed_session_names_its_last_response_and_a_forgotten_one_is_said_plainly() {
    let workspace = Workspace::new();
    let first = MockApi::start_in_thread(vec![text_reply("Hello.")]);
    first.emulate_cache_diagnostics();
    let output = workspace.run(&first, &["-p", "say hello"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    // Another server (as after a restart): it never saw msg_mock_1.
    let second = MockApi::start_in_thread(vec![text_reply("Again."), text_reply("And again.")]);
    second.emulate_cache_diagnostics();
    let output = workspace.run(&second, &["--continue", "-p", "say it again"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let turns = second.turn_requests();
    assert_eq!(
        previous_of(&turns[0].body),
        Some(&json!("msg_mock_1")),
        "the journal's id"
    );
    assert_eq!(
        stderr
            .matches("cache not compared: the server no longer has the previous request to compare with")
            .count(),
        1,
        "{stderr}"
    );
    let output = workspace.run(&second, &["--continue", "-p", "once more"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let turns = second.turn_requests();
    assert_eq!(
        previous_of(&turns[1].body),
        Some(&json!("msg_mock_1")),
        "the new chain's id"
    );
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("cache"),
        "compared, nothing diverged"
    );
}

/// A server that describes itself as llama.cpp (`/props`) is not sent Anthropic's
/// diagnostics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llama_cpp_server_is_not_asked_for_cache_diagnostics() {
    let props = json!({"default_generation_settings": {"n_ctx": 8192}, "model_path": "/models/m.gguf"});
    let api = MockApi::start_with_props(vec![text_reply("Hi.")], Some(props)).await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Refuse)).await;
    agent.ops.send(Op::Submit { text: "hi".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let turn = &api.turn_requests()[0];
    assert_eq!(previous_of(&turn.body), None);
    assert!(turn.headers.get("anthropic-beta").is_none());
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}
