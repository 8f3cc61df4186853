//! Small windows and cut-off replies (issue 15) against the mock API: a tool call cut
//! off by `max_tokens`, `max_tokens` capped to what the window leaves, a summary
//! request refused and then shrunk or replaced, and a session that can always send
//! "hi" again after a refused request.

mod common;

use common::{
    MockApi, Reply, Running, agent_settings, llama_too_long, messages_of, mock_tokens, openai_cut_off_reply,
    openai_reply, sse_cut_off_reply, sse_text, start_agent, start_openai_agent, text_reply, turn, until,
};
use scratchpad::agent::{AgentSettings, AskPolicy};
use scratchpad::compact::pairing::check_pairing;
use scratchpad::message::{ContentBlock, Role};
use scratchpad::protocol::{AgentEvent, Op, TurnOutcome};
use serde_json::{Value, json};

/// llama.cpp's `/props` for a server started with `-c 2048`.
fn props_2048() -> Option<Value> {
    Some(json!({"default_generation_settings": {"n_ctx": 2048}}))
}

fn settings_for_a_small_window() -> AgentSettings {
    AgentSettings {
        max_tokens: 8_192,
        ..agent_settings(AskPolicy::Approve)
    }
}

const COMPLETE_CALLS: [(&str, &str); 2] = [("toolu_1", "echo one"), ("toolu_2", "echo two")];
const CUT: (&str, &str, &str) = ("toolu_3", "write_file", r#"{"path": "big.txt", "content": "aaaa"#);

fn complete_calls() -> Vec<(&'static str, &'static str, Value)> {
    COMPLETE_CALLS
        .iter()
        .map(|&(id, command)| (id, "bash", json!({ "command": command })))
        .collect()
}

#[tokio::test]
async fn a_call_cut_off_by_max_tokens_keeps_the_complete_calls_and_asks_to_retry_smaller() {
    let api = MockApi::start(vec![
        sse_cut_off_reply("Writing it.", &complete_calls(), CUT),
        text_reply("I will write it in parts."),
    ])
    .await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Approve)).await;
    let done = turn(&mut agent, "write big.txt").await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    assert!(
        done.notices
            .iter()
            .any(|n| n.contains("max_tokens") && n.contains("write_file")),
        "{:?}",
        done.notices
    );
    let turns = api.turn_requests();
    assert_eq!(turns.len(), 2, "the model was asked again");
    let sent = messages_of(&turns[1]);
    assert_eq!(check_pairing(&sent), Ok(()));
    let calls: Vec<&str> = sent[1]
        .block_slice()
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        ["toolu_1", "toolu_2"],
        "the complete calls stay, the cut one is dropped"
    );
    let answer = sent[2].block_slice();
    assert_eq!(answer.len(), 3, "two results and the note: {answer:?}");
    assert!(
        answer[..2]
            .iter()
            .all(|block| matches!(block, ContentBlock::ToolResult { .. })),
        "{answer:?}"
    );
    let note = sent[2].text();
    assert!(note.starts_with("[Cut off]"), "{note}");
    assert!(note.contains("write_file") && note.contains("smaller"), "{note}");
    assert_eq!(
        scratchpad::compact::newest_request(&sent),
        "write big.txt",
        "the note is not taken for the request"
    );
}

#[tokio::test]
async fn over_the_openai_wire_a_length_stop_inside_a_call_is_handled_the_same_way() {
    let api = MockApi::start(vec![
        openai_cut_off_reply("Writing it.", &complete_calls(), CUT),
        openai_reply("I will write it in parts.", &[]),
    ])
    .await;
    let mut agent = start_openai_agent(&api, agent_settings(AskPolicy::Approve)).await;
    let done = turn(&mut agent, "write big.txt").await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    let turns = api.turn_requests();
    assert_eq!(turns.len(), 2);
    let messages = turns[1].body["messages"].as_array().unwrap().clone();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    let ids: Vec<&str> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["toolu_1", "toolu_2"]);
    let answered: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(answered, ["toolu_1", "toolu_2"]);
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(last["content"].to_string().contains("[Cut off]"), "{last}");
}

#[tokio::test]
async fn a_response_that_is_only_a_cut_off_call_is_answered_with_the_note() {
    let api = MockApi::start(vec![sse_cut_off_reply("", &[], CUT), text_reply("Smaller then.")]).await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Approve)).await;
    let done = turn(&mut agent, "write big.txt").await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    let sent = messages_of(&api.turn_requests()[1]);
    assert_eq!(check_pairing(&sent), Ok(()));
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[2].role(), Role::User);
    assert!(sent[2].text().starts_with("[Cut off]"));
}

#[tokio::test]
async fn max_tokens_is_capped_to_what_the_window_leaves_after_the_prompt() {
    let api = MockApi::start_with_props(vec![text_reply("hello"), text_reply("hello again")], props_2048()).await;
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    assert_eq!(turn(&mut agent, "hi").await.outcome, TurnOutcome::Completed);
    assert_eq!(turn(&mut agent, "and again").await.outcome, TurnOutcome::Completed);
    for request in api.turn_requests() {
        let max_tokens = request.body["max_tokens"].as_u64().unwrap();
        // The server counted the request before it went: the reply gets what its
        // count leaves, less the twentieth kept in reserve.
        let prompt = mock_tokens(&request.body);
        assert!(max_tokens >= 256, "{max_tokens}");
        assert_eq!(max_tokens, 2_048 - prompt - prompt / 20, "a {prompt}-token prompt");
    }
    // Without `/props` the configured 200k window leaves the setting as it is.
    let without_window = MockApi::start(vec![text_reply("hello")]).await;
    let mut roomy = start_agent(&without_window, settings_for_a_small_window()).await;
    assert_eq!(turn(&mut roomy, "hi").await.outcome, TurnOutcome::Completed);
    assert_eq!(without_window.turn_requests()[0].body["max_tokens"], 8_192);
}

/// llama-server stops a reply where prompt and reply fill the window, and reports it
/// as a length stop like `max_tokens`: the notice names the full window (1,500 prompt
/// tokens and a 530-token reply of the far more it was allowed), not `max_tokens`.
#[tokio::test]
async fn a_reply_stopped_by_a_full_window_is_not_blamed_on_max_tokens() {
    let stopped = sse_text("The answer is")
        .replace("\"stop_reason\":\"end_turn\"", "\"stop_reason\":\"max_tokens\"")
        .replace("\"output_tokens\":42", "\"output_tokens\":530");
    let api = MockApi::start_with_props(vec![Reply::sse(stopped)], props_2048()).await;
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    let done = turn(&mut agent, "hi").await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    assert!(
        done.notices.iter().any(|n| n
            == "the reply stopped at the end of the model's window (1500 prompt + 530 reply = 2030 of its 2048 tokens)"),
        "{:?}",
        done.notices
    );
    assert!(
        !done.notices.iter().any(|n| n.contains("max_tokens")),
        "{:?}",
        done.notices
    );
}

/// A server still loading its model at the start (503 from `/props`) left the
/// session on the configured 200k window and model forever, and then one turn late.
/// A turn waits for it (its health polled) before its first request; once it answers,
/// its window and model apply to that very request, and are said.
#[tokio::test]
async fn a_server_loading_at_the_start_gives_its_window_to_the_request_that_waited() {
    let api = MockApi::start_with_props(vec![text_reply("hello")], props_2048()).await;
    api.set_loading(true);
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    let loaded = api.clone();
    // The server finishes loading once the turn has polled its health while it loaded.
    tokio::spawn(async move {
        while loaded.polled_loading() < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        loaded.set_loading(false);
    });
    let first = turn(&mut agent, "hi").await;
    assert_eq!(first.outcome, TurnOutcome::Completed, "{:?}", first.errors);
    assert!(
        first
            .notices
            .iter()
            .any(|n| n.starts_with("the server answers now: its window is 2048 tokens (from the server's /props)")),
        "{:?}",
        first.notices
    );
    let max_tokens = api.turn_requests()[0].body["max_tokens"].as_u64().unwrap();
    assert!(
        max_tokens < 2_048,
        "the reply of that very request is capped to the found window: {max_tokens}"
    );
}

/// A refusal that states the window (llama.cpp's `n_ctx`) is believed: a server that
/// gave no window at the start has one from then on, and the user is told.
#[tokio::test]
async fn a_refusal_that_states_the_window_sets_it() {
    let api = MockApi::start(vec![llama_too_long(3_000, 2_048), text_reply("done")]).await;
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    let request = format!("the long task: {}", "word ".repeat(300));
    let done = turn(&mut agent, &request).await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    assert!(
        done.notices.iter().any(|n| n.starts_with(
            "the server's refusal stated the window: its window is 2048 tokens (from the server's refusal)"
        )),
        "{:?}",
        done.notices
    );
    let retry = api.turn_requests()[1].body["max_tokens"].as_u64().unwrap();
    assert!(retry < 2_048, "the retry's reply fits the stated window: {retry}");
}

/// The summariser's history text of a recorded summary request.
fn summary_input(request: &common::Recorded) -> String {
    messages_of(request)[0].text()
}

#[tokio::test]
async fn a_refused_summary_request_is_sent_again_shrunk_to_what_the_server_takes() {
    let api = MockApi::start_with_props(vec![text_reply("done")], props_2048()).await;
    api.script_summaries(vec![llama_too_long(3_000, 2_048), text_reply("Goal: the long task.")]);
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    // Over the 2,000-char limit a 2k window allows: stage 4 summarises before the call.
    let request = format!("the long task: {}", "word ".repeat(1_500));
    let done = turn(&mut agent, &request).await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    let summaries: Vec<_> = api
        .requests()
        .into_iter()
        .filter(common::Recorded::is_summary)
        .collect();
    assert_eq!(summaries.len(), 2);
    let (first, second) = (summary_input(&summaries[0]), summary_input(&summaries[1]));
    assert!(
        second.len() < first.len() * 2 / 3,
        "{} then {} chars",
        first.len(),
        second.len()
    );
    assert!(
        summaries[0].body["max_tokens"].as_u64().unwrap() <= 512,
        "a quarter of the window"
    );
    assert!(
        done.notices.iter().any(|n| n.contains("sent again with")),
        "{:?}",
        done.notices
    );
    let sent = messages_of(&api.turn_requests()[0]);
    assert!(sent[0].text().contains("Goal: the long task."), "{}", sent[0].text());
}

/// A summary its own `max_tokens` cut off was used silently (49 of 57 at -c 2048).
/// Now the request says how long the summary may be, and a cut one is trimmed to its
/// last full sentence, with a notice.
#[tokio::test]
async fn a_summary_cut_off_by_its_max_tokens_is_trimmed_to_a_sentence_and_said() {
    let api = MockApi::start_with_props(vec![text_reply("done")], props_2048()).await;
    let cut = sse_text("Goal: the long task, with its tests kept green. Files: src/a.rs, src/b")
        .replace("\"stop_reason\":\"end_turn\"", "\"stop_reason\":\"max_tokens\"");
    api.script_summaries(vec![Reply::sse(cut)]);
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    let request = format!("the long task: {}", "word ".repeat(1_500));
    let done = turn(&mut agent, &request).await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    assert!(
        done.notices
            .iter()
            .any(|n| n.starts_with("the summary reached its max_tokens limit") && n.contains("last full sentence")),
        "{:?}",
        done.notices
    );
    let summary_request = api
        .requests()
        .into_iter()
        .find(common::Recorded::is_summary)
        .expect("a summary was asked for");
    let max_tokens = summary_request.body["max_tokens"].as_u64().unwrap();
    assert!(
        summary_request.body["system"]
            .to_string()
            .contains(&format!("Keep the summary under {} words.", max_tokens * 3 / 4)),
        "{}",
        summary_request.body["system"]
    );
    let sent = messages_of(&api.turn_requests()[0]);
    let compacted = sent[0].text();
    assert!(
        compacted.contains("Goal: the long task, with its tests kept green."),
        "{compacted}"
    );
    assert!(
        !compacted.contains("src/b"),
        "the unfinished sentence is dropped: {compacted}"
    );
}

#[tokio::test]
async fn a_summary_refused_twice_is_replaced_by_the_extractive_one_and_hi_still_works() {
    let api = MockApi::start_with_props(vec![text_reply("done"), text_reply("hello")], props_2048()).await;
    api.script_summaries(vec![llama_too_long(3_000, 2_048), llama_too_long(2_100, 2_048)]);
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    let request = format!("the long task: {}", "word ".repeat(1_500));
    let done = turn(&mut agent, &request).await;
    assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
    assert!(
        done.notices.iter().any(|n| n.contains("extractive summary")),
        "{:?}",
        done.notices
    );
    let sent = messages_of(&api.turn_requests()[0]);
    assert!(sent[0].text().starts_with("[Compacted]"));
    let hi = turn(&mut agent, "hi").await;
    assert_eq!(hi.outcome, TurnOutcome::Completed, "{:?}", hi.errors);
}

#[tokio::test]
async fn after_a_request_the_window_cannot_take_the_session_can_still_send_hi() {
    // Refused past the retry budget (a refusal, and one more after each reactive round).
    let replies: Vec<Reply> = vec![
        llama_too_long(2_400, 2_048),
        llama_too_long(2_100, 2_048),
        llama_too_long(2_060, 2_048),
        text_reply("hello"),
    ];
    let api = MockApi::start_with_props(replies, props_2048()).await;
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    // Under the limit in characters, but far more tokens than characters.
    let digits = "7 ".repeat(700);
    let failed = turn(&mut agent, &digits).await;
    assert_eq!(failed.outcome, TurnOutcome::Failed);
    let hi = turn(&mut agent, "hi").await;
    assert_eq!(hi.outcome, TurnOutcome::Completed, "{:?}", hi.errors);
    let turns = api.turn_requests();
    let sent = messages_of(turns.last().unwrap());
    assert_eq!(check_pairing(&sent), Ok(()));
    assert_eq!(sent.last().unwrap().text(), "hi");
    let size = |request: &common::Recorded| request.body["messages"].to_string().len();
    assert!(size(turns.last().unwrap()) < size(&turns[0]));
    assert!(
        sent.iter().all(|m| m.role() != Role::User || m.text().len() < 1_000),
        "the refused request is not carried whole: {sent:?}"
    );
}

/// A request the server counts as more than its window holds with a reply is not sent
/// to be refused (issue 45: the count was there, and the request went anyway): it is
/// shrunk as after a refusal, its marker says why, and what is sent fits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_counted_over_the_window_is_shrunk_before_it_is_sent() {
    let api = MockApi::start_llama_in_thread(vec![text_reply("Noted.")], 2_048);
    let mut agent = start_agent(&api, settings_for_a_small_window()).await;
    // Under the limit in characters, but a token a character to the server.
    let digits = "7 ".repeat(800);
    let done = turn(&mut agent, &digits).await;
    assert_eq!(done.outcome, TurnOutcome::Completed);
    let reactive = done
        .compactions
        .iter()
        .find(|event| event.stage == scratchpad::compact::Stage::ReactiveCompact)
        .expect("shrunk as after a refusal");
    assert!(
        reactive.trigger.starts_with("the server counted ")
            && reactive
                .trigger
                .contains("more than its 2048-token window holds with a reply, so it was not sent"),
        "{}",
        reactive.trigger
    );
    let turns = api.turn_requests();
    assert_eq!(turns.len(), 1, "one request, and it fit");
    assert!(mock_tokens(&turns[0].body) + 256 <= 2_048);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// What the agent said when the session started, and the notices right after.
async fn session_start(agent: &mut Running) -> (String, Vec<String>) {
    let model = match until(&mut agent.events, |e| matches!(e, AgentEvent::SessionStarted { .. })).await {
        AgentEvent::SessionStarted { model, .. } => model,
        _ => unreachable!("until returns only what it waited for"),
    };
    let mut notices = Vec::new();
    // The first gauge status follows the start notices.
    loop {
        match until(&mut agent.events, |e| {
            matches!(e, AgentEvent::Notice { .. } | AgentEvent::Context { .. })
        })
        .await
        {
            AgentEvent::Notice { message } => notices.push(message),
            _ => return (model, notices),
        }
    }
}

#[tokio::test]
async fn a_local_server_names_its_model_and_says_when_its_template_drops_tools() {
    let props = json!({
        "default_generation_settings": {"n_ctx": 2048},
        "model_alias": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "chat_template_caps": {"supports_tools": false},
    });
    let api = MockApi::start_with_props(vec![text_reply("hello")], Some(props.clone())).await;
    let mut agent = common::start_agent_with_model(&api, settings_for_a_small_window(), "").await;
    let (model, notices) = session_start(&mut agent).await;
    assert_eq!(model, "/models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        notices
            .iter()
            .any(|n| n.contains("does not render tools") && n.contains("--chat-template-file")),
        "{notices:?}"
    );
    assert_eq!(turn(&mut agent, "hi").await.outcome, TurnOutcome::Completed);
    assert_eq!(
        api.turn_requests()[0].body["model"],
        "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "the served model is the one asked for"
    );

    // A configured model stands; a template that renders tools earns no notice.
    let props = json!({
        "default_generation_settings": {"n_ctx": 2048},
        "model_alias": "served",
        "chat_template_caps": {"supports_tools": true},
    });
    let api = MockApi::start_with_props(vec![], Some(props)).await;
    let mut agent = common::start_agent_with_model(&api, settings_for_a_small_window(), "chosen").await;
    let (model, notices) = session_start(&mut agent).await;
    assert_eq!(model, "chosen");
    assert!(notices.iter().all(|n| !n.contains("render tools")), "{notices:?}");
}
