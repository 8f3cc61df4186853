//! Project instructions (AGENTS.md and the global file) through the real binary and
//! the agent: they ride in the system prompt through every compaction, the receipts
//! say so, `/context` counts them as part of the fixed part, and an edit reaches the
//! next request with its marker.

mod common;

use common::{
    MockApi, Workspace, agent_settings, events, prompt_too_long, python_dumps_len, start_agent_in, system_text,
    text_reply, turn, until, without_cache_control,
};
use scratchpad::agent::AskPolicy;
use scratchpad::context_map::Category;
use scratchpad::protocol::{AgentEvent, Op, TurnOutcome};
use serde_json::Value;

const PROJECT: &str = "# Project rules\n\nRun `cargo test --locked` before saying done.\nKeep functions short.\n";
const GLOBAL: &str = "Answer in British English.\n";

/// A workspace with a project file and a global one in the config folder.
fn workspace_with_instructions() -> Workspace {
    let workspace = Workspace::new();
    std::fs::write(workspace.path().join("AGENTS.md"), PROJECT).unwrap();
    std::fs::write(workspace.home.path().join("AGENTS.md"), GLOBAL).unwrap();
    workspace
}

/// The compaction events of a run, with something replaced.
fn compactions(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "compaction" && e["event"]["replaced"].as_u64() > Some(0))
        .map(|e| &e["event"])
        .collect()
}

fn kept_verbatim(event: &Value) -> Vec<String> {
    event["kept_verbatim"]
        .as_array()
        .map(|kept| kept.iter().filter_map(|k| k.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Both files byte for byte in a request's system prompt, each in its own block.
fn assert_carries_both(body: &Value) {
    let system = system_text(body);
    assert!(
        system.contains(&format!("\">\n{PROJECT}</project-instructions")),
        "{system}"
    );
    assert!(
        system.contains(&format!("\">\n{GLOBAL}</project-instructions")),
        "{system}"
    );
    assert!(system.contains("<project-instructions path=\"AGENTS.md\""), "{system}");
}

#[test]
fn the_files_ride_in_the_system_prompt_through_compact_history_and_the_receipt_says_so() {
    let workspace = workspace_with_instructions();
    workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![text_reply("done")]);
    let output = workspace.run(
        &api,
        &[
            "--continue",
            "-p",
            "Do the thing",
            "--limit",
            "3500",
            "--events",
            "jsonl",
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let events = events(&output);
    let started = events
        .iter()
        .find(|e| e["type"] == "instructions")
        .expect("the start says which files");
    let paths: Vec<&str> = started["note"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert!(
        paths[0].ends_with("AGENTS.md") && paths[0].starts_with('/'),
        "the global file first"
    );
    assert_eq!(paths[1], "AGENTS.md");

    let stages = compactions(&events);
    assert_eq!(stages.last().unwrap()["stage"], "compact_history", "{stages:?}");
    let kept = kept_verbatim(stages.last().unwrap());
    assert!(
        kept.contains(&"instruction file AGENTS.md (in the system prompt)".to_string()),
        "{kept:?}"
    );
    assert!(
        kept.contains(&format!("instruction file {} (in the system prompt)", paths[0])),
        "{kept:?}"
    );
    assert!(kept.iter().any(|k| k.starts_with("the current request")), "{kept:?}");

    // The summariser was told the files stay, and the call after the summary still
    // carries both, byte for byte.
    let summary = api
        .requests()
        .into_iter()
        .find(|r| r.is_summary())
        .expect("a summary was asked for");
    assert!(
        system_text(&summary.body).contains("stay in the system prompt verbatim: do not restate them"),
        "{}",
        system_text(&summary.body)
    );
    let turns = api.turn_requests();
    assert_eq!(turns.len(), 1);
    assert!(common::messages_of(&turns[0])[0].text().starts_with("[Compacted]"));
    assert_carries_both(&turns[0].body);
}

#[test]
fn the_files_ride_in_the_system_prompt_through_reactive_compaction() {
    let workspace = workspace_with_instructions();
    workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![prompt_too_long(), text_reply("fits now")]);
    let output = workspace.run(&api, &["--continue", "-p", "Do the thing", "--events", "jsonl"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let events = events(&output);
    let stages = compactions(&events);
    assert_eq!(stages.len(), 1);
    assert_eq!(stages[0]["stage"], "reactive_compact");
    let kept = kept_verbatim(stages[0]);
    assert!(
        kept.contains(&"instruction file AGENTS.md (in the system prompt)".to_string()),
        "{kept:?}"
    );
    assert!(
        kept.contains(&"the current request (among the kept messages)".to_string()),
        "{kept:?}"
    );
    let turns = api.turn_requests();
    assert_eq!(turns.len(), 2);
    for request in &turns {
        assert_carries_both(&request.body);
    }
    assert_eq!(
        system_text(&turns[0].body),
        system_text(&turns[1].body),
        "the retry's system prompt is the refused one's"
    );
}

#[test]
fn no_instructions_reads_none_and_a_file_left_out_is_said() {
    let workspace = workspace_with_instructions();
    let api = MockApi::start_in_thread(vec![text_reply("one")]);
    let output = workspace.run(&api, &["-p", "hi", "--no-instructions"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let system = system_text(&api.turn_requests()[0].body);
    assert!(!system.contains("project-instructions"), "{system}");

    std::fs::write(workspace.path().join("AGENTS.md"), b"bad \xff\n").unwrap();
    let api = MockApi::start_in_thread(vec![text_reply("two")]);
    let output = workspace.run(&api, &["-p", "hi"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("note: AGENTS.md left out: it is not UTF-8 text (an invalid byte at offset 4)"),
        "{stderr}"
    );
    let system = system_text(&api.turn_requests()[0].body);
    assert!(system.contains(GLOBAL) && !system.contains("bad "), "{system}");
}

/// `/context`: the files are their own category, a row each, and with the rest of the
/// fixed part they sum to what the request carried besides the messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_rows_sum_with_the_rest_to_the_requests_fixed_part() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), PROJECT).unwrap();
    let api = MockApi::start(vec![text_reply("hello")]).await;
    let mut agent = start_agent_in(dir, &api, agent_settings(AskPolicy::Refuse));
    let done = turn(&mut agent, "hi").await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    let breakdown = common::breakdown_of(&mut agent).await;
    let total = |category: Category| common::total_of(&breakdown, category);
    assert_eq!(breakdown.instructions.len(), 1);
    let row = &breakdown.instructions[0];
    assert_eq!(
        (row.path.as_str(), row.chars, row.cut),
        ("AGENTS.md", PROJECT.chars().count(), false)
    );
    assert_eq!(total(Category::ProjectInstructions), row.prompt_chars);
    // The fixed part as the wire carried it, counted here: the system text and the
    // tool definitions as Python's json.dumps prints them.
    let sent = &api.turn_requests()[0].body;
    let wire_fixed = system_text(sent).chars().count() + python_dumps_len(&without_cache_control(&sent["tools"]));
    assert_eq!(
        total(Category::SystemAndTools) + total(Category::ProjectInstructions),
        wire_fixed
    );
    assert_eq!(breakdown.fixed, wire_fixed);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// An edit between two requests reaches the second, and a marker says what changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_during_a_session_reaches_the_next_request_with_its_marker() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("AGENTS.md");
    std::fs::write(&file, PROJECT).unwrap();
    let api = MockApi::start(vec![text_reply("one"), text_reply("two")]).await;
    let mut agent = start_agent_in(dir, &api, agent_settings(AskPolicy::Refuse));
    let started = |e: &AgentEvent| matches!(e, AgentEvent::Instructions { .. });
    let AgentEvent::Instructions { note } = until(&mut agent.events, started).await else {
        unreachable!("until returns only what it waited for")
    };
    assert!(note.changes.is_empty());
    assert_eq!(note.headline(), format!("instructions: AGENTS.md ({})", PROJECT.len()));
    assert_eq!(turn(&mut agent, "first").await.outcome, TurnOutcome::Completed);

    let edited = format!("{PROJECT}Never use unwrap on input.\n");
    std::fs::write(&file, &edited).unwrap();
    agent.ops.send(Op::Submit { text: "second".into() }).unwrap();
    let AgentEvent::Instructions { note } = until(&mut agent.events, started).await else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(
        note.changes,
        [format!("AGENTS.md changed ({} → {})", PROJECT.len(), edited.len())]
    );
    assert!(
        note.headline().contains("cached prefix is written again"),
        "{}",
        note.headline()
    );
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let turns = api.turn_requests();
    assert!(system_text(&turns[0].body).contains(PROJECT));
    assert!(!system_text(&turns[0].body).contains("Never use unwrap"));
    assert!(
        system_text(&turns[1].body).contains(&edited),
        "the edit reached the next request"
    );
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// `/instructions`: with no file it says where it looked; a file created since is
/// taken in and said as a change; asked again, the files are listed unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instructions_command_reloads_and_lists_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("AGENTS.md");
    let api = MockApi::start(vec![]).await;
    let mut agent = start_agent_in(dir, &api, agent_settings(AskPolicy::Refuse));
    agent.ops.send(Op::Instructions).unwrap();
    let AgentEvent::Notice { message } = until(&mut agent.events, |e| matches!(e, AgentEvent::Notice { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert!(
        message.starts_with("no project instructions: none of AGENTS.override.md, AGENTS.md, CLAUDE.md"),
        "{message}"
    );
    std::fs::write(&file, PROJECT).unwrap();
    let said = |e: &AgentEvent| matches!(e, AgentEvent::Instructions { .. });
    for expected_changes in [vec![format!("AGENTS.md added ({})", PROJECT.len())], Vec::new()] {
        agent.ops.send(Op::Instructions).unwrap();
        let AgentEvent::Instructions { note } = until(&mut agent.events, said).await else {
            unreachable!("until returns only what it waited for")
        };
        assert_eq!(note.changes, expected_changes);
        assert_eq!(note.files.len(), 1);
        assert_eq!(note.files[0].path, "AGENTS.md");
    }
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// On a server that counts, an instruction file edited to the same length is still a
/// new fixed part: it is counted again before the next request, not taken for the old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_of_the_same_length_is_counted_again_on_a_server_that_counts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("AGENTS.md");
    std::fs::write(&file, PROJECT).unwrap();
    let props = serde_json::json!({"default_generation_settings": {"n_ctx": 32_768}});
    let api = MockApi::start_with_props(vec![text_reply("one"), text_reply("two")], Some(props)).await;
    let mut agent = start_agent_in(dir, &api, agent_settings(AskPolicy::Refuse));
    assert_eq!(turn(&mut agent, "first").await.outcome, TurnOutcome::Completed);
    let edited = PROJECT.replace("short", "small");
    assert_eq!(edited.len(), PROJECT.len());
    std::fs::write(&file, &edited).unwrap();
    assert_eq!(turn(&mut agent, "second").await.outcome, TurnOutcome::Completed);
    let fixed_parts: Vec<String> = api
        .counts()
        .iter()
        .filter(|count| count.counts_the_fixed_part())
        .map(|count| system_text(&count.body))
        .collect();
    assert_eq!(fixed_parts.len(), 2, "counted at the start and after the edit");
    assert!(fixed_parts[1].contains("Keep functions small."), "{}", fixed_parts[1]);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}
