//! `compaction.summariser = "server"`: the server compacts the history itself; its
//! block goes first in the history byte for byte, with the beta header on every request
//! that carries it; undo and resume round-trip it; where the server cannot, the model
//! writes the summary and a notice says why.

mod common;

use common::{
    MockApi, Running, agent_settings, compaction_reply_error, start_agent, start_agent_journaled, text_reply, until,
};
use scratchpad::agent::AskPolicy;
use scratchpad::compact::SummariserChoice;
use scratchpad::protocol::{AgentEvent, Op};
use serde_json::{Value, json};

const LONG: &str = "A long answer about the lexer, its tokens and the parser that reads them. ";

fn server_settings() -> scratchpad::agent::AgentSettings {
    let mut settings = agent_settings(AskPolicy::Refuse);
    settings.compaction.summariser = SummariserChoice::Server;
    settings
}

fn beta_of(request: &common::Recorded) -> String {
    request
        .headers
        .get("anthropic-beta")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// Two long answers (a history worth summarising), then `after`.
fn two_long_answers_then(after: &[&str]) -> Vec<common::Reply> {
    let long = LONG.repeat(20);
    [long.as_str(), long.as_str()]
        .iter()
        .chain(after)
        .map(|text| text_reply(text))
        .collect()
}

/// The two questions [`two_long_answers_then`] answers.
async fn two_questions(agent: &mut Running) {
    ask(agent, "first question").await;
    ask(agent, "second question").await;
}

async fn ask(agent: &mut Running, text: &str) {
    agent.ops.send(Op::Submit { text: text.into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
}

async fn compact(agent: &mut Running) -> scratchpad::compact::StageEvent {
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    let AgentEvent::Compaction { event } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    event
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_block_goes_first_byte_for_byte_and_undo_puts_the_history_back() {
    let api = MockApi::start(two_long_answers_then(&["After the summary.", "After the undo."])).await;
    let mut agent = start_agent(&api, server_settings()).await;
    two_questions(&mut agent).await;

    let event = compact(&mut agent).await;
    assert!(event.errors.is_empty(), "{:?}", event.errors);
    let asked = api
        .requests()
        .into_iter()
        .find(|r| r.asks_the_server_to_compact())
        .expect("the server was asked to compact");
    assert_eq!(asked.body["compaction"]["type"], "summarize");
    let instructions = asked.body["compaction"]["instructions"].as_str().unwrap();
    assert!(
        instructions.starts_with("You are summarising"),
        "our instructions: {instructions}"
    );
    assert!(beta_of(&asked).contains("compact-2026-09-04"));
    let turn = &api.turn_requests()[1];
    assert_eq!(asked.body["system"], turn.body["system"], "the same system prompt");
    assert_eq!(asked.body["tools"], turn.body["tools"], "the same tools");
    let before: Vec<Value> = asked.body["messages"].as_array().unwrap().clone();
    assert_eq!(before.len(), 4, "the history as it is");
    assert_eq!(
        event.summary.as_deref(),
        Some("Server summary of 4 messages: the scripted task, worked through.")
    );

    ask(&mut agent, "third question").await;
    let after = api.turn_requests()[2].clone();
    assert_eq!(
        after.body["messages"][0],
        json!({"role": "assistant", "content": [{
            "type": "compaction",
            "content": "Server summary of 4 messages: the scripted task, worked through.",
            "signature": "sig-compaction-1"
        }]}),
        "the block first, as the server wrote it"
    );
    let compacted = after.body["messages"][1]["content"].to_string();
    assert!(compacted.contains("[Compacted]"), "{compacted}");
    assert!(
        compacted.contains("the summary is the server's compaction block"),
        "{compacted}"
    );
    assert!(
        beta_of(&after).contains("compact-2026-09-04"),
        "the header with the block"
    );

    // Undo: the transcript's messages come back and the block goes.
    agent
        .ops
        .send(Op::Undo {
            stage_id: Some(event.id.clone()),
        })
        .unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::Undone { .. })).await;
    ask(&mut agent, "fourth question").await;
    let undone = api.turn_requests()[3].clone();
    let sent = undone.body["messages"].as_array().unwrap();
    assert_eq!(sent[..4], before[..4], "the history before the compaction");
    assert!(!beta_of(&undone).contains("compact-2026-09-04"), "no block, no header");
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// A resumed session sends the block as it was written, signature included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_sends_the_block_as_the_server_wrote_it() {
    let api = MockApi::start(two_long_answers_then(&["Resumed."])).await;
    let (mut agent, path) = start_agent_journaled(&api, server_settings());
    two_questions(&mut agent).await;
    compact(&mut agent).await;
    let Running { ops, task, .. } = agent;
    ops.send(Op::Quit).unwrap();
    let live = task.await.unwrap();

    let (journal, restored) = scratchpad::session::Journal::resume(&path).unwrap();
    assert!(restored.repairs.is_empty(), "{:?}", restored.repairs);
    assert_eq!(restored.messages, live, "the journal replays the block");
    let dir = tempfile::tempdir().unwrap();
    let mut resumed = common::start_agent_resumed(&api, server_settings(), dir, journal, restored);
    ask(&mut resumed, "go on").await;
    let turn = api.turn_requests().last().unwrap().clone();
    assert_eq!(turn.body["messages"][0]["content"][0]["signature"], "sig-compaction-1");
    assert_eq!(
        turn.body["messages"][0]["content"][0]["content"],
        "Server summary of 4 messages: the scripted task, worked through."
    );
    resumed.ops.send(Op::Quit).unwrap();
    resumed.task.await.unwrap();
}

/// `compaction_unavailable` twice: the model writes the summary, and a notice names
/// why; each other failure is named by its code (or, for an empty block, its
/// `stop_reason`), and the model writes the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_the_servers_compaction_fails_the_model_writes_the_summary_and_says_why() {
    let cases: [(Vec<common::Reply>, &str); 3] = [
        (
            vec![
                compaction_reply_error(503, "compaction_unavailable"),
                compaction_reply_error(503, "compaction_unavailable"),
            ],
            "compaction_unavailable",
        ),
        (
            vec![compaction_reply_error(400, "compaction_nothing_to_summarize")],
            "compaction_nothing_to_summarize",
        ),
        (
            vec![common::Reply::sse(common::sse_compaction(
                &json!({"type": "compaction", "content": "", "signature": "sig-empty"}),
            ))],
            "without a summary (stop_reason: compaction)",
        ),
    ];
    for (replies, said) in cases {
        let api = MockApi::start(two_long_answers_then(&[])).await;
        api.script_compactions(replies);
        let mut agent = start_agent(&api, server_settings()).await;
        two_questions(&mut agent).await;
        agent.ops.send(Op::Compact { focus: None }).unwrap();
        let notice = until(
            &mut agent.events,
            |e| matches!(e, AgentEvent::Notice { message } if message.contains("the model wrote the summary instead")),
        )
        .await;
        assert!(
            matches!(&notice, AgentEvent::Notice { message } if message.contains(said)),
            "{notice:?}"
        );
        let AgentEvent::Compaction { event } =
            until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await
        else {
            unreachable!("until returns only what it waited for")
        };
        assert!(event.errors.is_empty(), "{:?}", event.errors);
        assert_eq!(
            event.summary.as_deref(),
            Some("Goal: the scripted task. Summary from the mock API."),
            "the model's summary"
        );
        let model_asked = api
            .requests()
            .iter()
            .any(|r| r.is_summary() && !r.asks_the_server_to_compact());
        assert!(model_asked, "the model was asked");
        agent.ops.send(Op::Quit).unwrap();
        let history = agent.task.await.unwrap();
        assert!(
            scratchpad::compact::markers::server_compaction(&history[0]).is_none(),
            "no block went in"
        );
    }
}

/// A server that describes itself as llama.cpp, or a model the Models API says
/// manages no context, has no compaction of its own: said at the start, and the model
/// writes the summaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_compaction_is_said_at_the_start() {
    let props = json!({"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1});
    let llama = MockApi::start_with_props(vec![], Some(props)).await;
    let without = MockApi::start(vec![]).await;
    without.state_model_info(
        json!({"max_input_tokens": 200_000, "capabilities": {"context_management": {"supported": false}}}),
    );
    for api in [llama, without] {
        let mut agent = start_agent(&api, server_settings()).await;
        let notice = until(&mut agent.events, |e| matches!(e, AgentEvent::Notice { .. })).await;
        assert!(
            matches!(&notice, AgentEvent::Notice { message } if message.contains("has no compaction of its own, so the model writes the summaries")),
            "{notice:?}"
        );
        agent.ops.send(Op::Quit).unwrap();
        agent.task.await.unwrap();
    }
}

/// A fork from after the compaction starts with the block as the server wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_after_the_compaction_carries_the_block() {
    let api = MockApi::start(two_long_answers_then(&["After the summary.", "In the fork."])).await;
    let (mut agent, path) = start_agent_journaled(&api, server_settings());
    two_questions(&mut agent).await;
    compact(&mut agent).await;
    ask(&mut agent, "third question").await;
    let past = scratchpad::session::restore(&path).unwrap().past;
    let shown: Vec<String> = past
        .iter()
        .filter_map(|item| match item {
            scratchpad::protocol::Past::Message { message } => Some(message.text()),
            _ => None,
        })
        .collect();
    let third = shown.iter().position(|text| text == "third question").expect("shown") + 1;
    agent
        .ops
        .send(Op::Fork {
            session: None,
            at: scratchpad::protocol::ForkAt::Message(third),
        })
        .unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::EditRequest { .. })).await;
    ask(&mut agent, "go on in the fork").await;
    let turn = api.turn_requests().last().unwrap().clone();
    assert_eq!(turn.body["messages"][0]["content"][0]["signature"], "sig-compaction-1");
    assert!(beta_of(&turn).contains("compact-2026-09-04"));
    assert_eq!(
        turn.body["messages"].as_array().unwrap().len(),
        3,
        "block, [Compacted], the request"
    );
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// `scratchpad compact` honours `compaction.summariser` as the agent does: with
/// "server" it asks the server for its compaction, with "model" the model writes the
/// summary.
#[test]
fn the_compact_command_asks_whom_compaction_summariser_names() {
    let history = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recorded-history.json");
    for (choice, server_asked) in [("server", true), ("model", false)] {
        let api = MockApi::start_in_thread(Vec::new());
        let workspace = common::Workspace::new();
        let config = workspace.home.path().join("config.toml");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!("[compaction]\nsummariser = \"{choice}\"\n"));
        std::fs::write(&config, text).unwrap();
        let output = workspace.run(&api, &["compact", "--input", history, "--keep-from", "40"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let requests = api.requests();
        assert!(
            requests.iter().any(common::Recorded::is_summary),
            "a summary was asked for"
        );
        assert_eq!(
            requests.iter().any(common::Recorded::asks_the_server_to_compact),
            server_asked,
            "summariser = {choice}"
        );
    }
}
