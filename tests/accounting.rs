//! One honest number (issue 12) against the mock API: tokens and characters from the
//! same request, the gauge and `/context` agreeing, estimates marked after compaction,
//! the window found from llama.cpp's `/props`, the clamp and the automatic limit.

mod common;

use common::{
    MockApi, Running, agent_settings, messages_of, python_dumps_len, start_agent, text_reply, until,
    without_cache_control,
};
use scratchpad::accounting::{Fit, fixed_chars};
use scratchpad::agent::AskPolicy;
use scratchpad::compact::{EstimateMode, Stage, estimate_chars};
use scratchpad::protocol::{AgentEvent, CallPoint, ContextStatus, Op, TokenBasis, TokenFigure, Window, WindowSource};
use scratchpad::tools::{ToolBox, ToolsConfig};
use serde_json::json;

/// The mock reports 1200 input + 300 cache-read tokens for every call.
const REPORTED: u64 = 1_500;

fn fixed() -> usize {
    fixed_chars("test", &ToolBox::specs_for(&ToolsConfig::default()), EstimateMode::Seed)
}

async fn next_context(agent: &mut Running) -> ContextStatus {
    match until(&mut agent.events, |e| matches!(e, AgentEvent::Context { .. })).await {
        AgentEvent::Context { status } => status,
        _ => unreachable!("until returns only what it waited for"),
    }
}

async fn next_call(agent: &mut Running) -> CallPoint {
    match until(&mut agent.events, |e| matches!(e, AgentEvent::ModelCall { .. })).await {
        AgentEvent::ModelCall { point, .. } => point,
        _ => unreachable!("until returns only what it waited for"),
    }
}

/// The newest gauge status once the turn is done.
async fn status_after_turn(agent: &mut Running) -> ContextStatus {
    let mut status = None;
    loop {
        match until(&mut agent.events, |e| {
            matches!(e, AgentEvent::Context { .. } | AgentEvent::TurnDone { .. })
        })
        .await
        {
            AgentEvent::Context { status: newer } => status = Some(newer),
            _ => return status.expect("a status during the turn"),
        }
    }
}

fn tokens(status: &ContextStatus) -> &TokenFigure {
    status.tokens.as_ref().expect("a token figure")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_characters_come_from_the_same_call_and_every_view_agrees() {
    let long_answer = "A long first answer. ".repeat(300);
    let api = MockApi::start(vec![text_reply(&long_answer), text_reply("Second answer.")]).await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Refuse)).await;
    agent.ops.send(Op::Submit { text: "hello".into() }).unwrap();
    let point = next_call(&mut agent).await;
    // The characters of the request as sent: the fixed part and the messages.
    let sent = &api.turn_requests()[0];
    // The fixed part as the wire carried it, counted independently: the system text
    // and the tool definitions as Python's json.dumps prints them.
    let system: String = match &sent.body["system"] {
        serde_json::Value::String(text) => text.clone(),
        blocks => blocks
            .as_array()
            .expect("the system prompt as text or as blocks")
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect(),
    };
    let wire_fixed = system.chars().count() + python_dumps_len(&without_cache_control(&sent.body["tools"]));
    assert_eq!(fixed(), wire_fixed, "the fixed part is what the wire carries");
    let sent_chars = wire_fixed + estimate_chars(&messages_of(sent));
    assert_eq!(point.request_chars, Some(sent_chars));
    assert_eq!(point.input_tokens, Some(REPORTED));
    let measured = next_context(&mut agent).await;
    let figure = tokens(&measured);
    assert_eq!((figure.tokens, &figure.basis), (REPORTED, &TokenBasis::Reported));
    assert_eq!(figure.request_chars, sent_chars);
    assert!((figure.chars_per_token - sent_chars as f64 / REPORTED as f64).abs() < 1e-9);
    assert_eq!(measured.fixed, fixed());

    // After the turn the gauge and /context count the same characters.
    let status = status_after_turn(&mut agent).await;
    let map = common::breakdown_of(&mut agent).await;
    assert_eq!(
        (map.estimate, map.fixed, map.limit),
        (status.estimate, status.fixed, status.limit)
    );
    assert_eq!(common::counted_chars(&map), status.estimate);

    // /context's refresh: the provider counts the history exactly.
    agent.ops.send(Op::CountTokens).unwrap();
    let counted = next_context(&mut agent).await;
    let exact = tokens(&counted);
    assert_eq!(exact.basis, TokenBasis::Counted);
    assert_eq!(exact.request_chars, counted.fixed + counted.estimate);
    let count_request = api
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("count_tokens"))
        .unwrap();
    assert_eq!(
        exact.tokens,
        count_request.body.to_string().len() as u64 / 4,
        "the mock's count"
    );

    // /compact: the figure is re-estimated by content from the exact count, and marked.
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    until(
        &mut agent.events,
        |e| matches!(e, AgentEvent::Compaction { event } if event.stage == Stage::CompactHistory),
    )
    .await;
    let compacted = next_context(&mut agent).await;
    let estimate = tokens(&compacted);
    assert_eq!(estimate.basis, TokenBasis::Estimated);
    // The exact count, less what the compaction took away; its ratio is the figure's.
    assert!(estimate.tokens < exact.tokens, "{estimate:?} after {exact:?}");
    assert_eq!(estimate.request_chars, compacted.fixed + compacted.estimate);
    let ratio = estimate.request_chars as f64 / estimate.tokens as f64;
    assert!((estimate.chars_per_token - ratio).abs() < 1e-9);
    assert!(compacted.estimate < status.estimate);

    // The next call reports again, and its point shows the drop.
    agent.ops.send(Op::Submit { text: "again".into() }).unwrap();
    let point = next_call(&mut agent).await;
    assert_eq!(point.before(), status.estimate, "the estimate before the compaction");
    assert_eq!(point.stages, vec![Stage::CompactHistory]);
    assert_eq!(tokens(&next_context(&mut agent).await).basis, TokenBasis::Reported);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

async fn session_started(agent: &mut Running) -> (Window, Option<String>) {
    match until(&mut agent.events, |e| matches!(e, AgentEvent::SessionStarted { .. })).await {
        AgentEvent::SessionStarted { window, limit_note, .. } => (window, limit_note),
        _ => unreachable!("until returns only what it waited for"),
    }
}

fn llama_props(n_ctx: u64) -> Option<serde_json::Value> {
    Some(json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}))
}

fn fit(window: u64) -> Fit {
    Fit {
        window_tokens: window,
        max_tokens: 100,
        chars_per_token: 4.0,
        fixed_chars: fixed(),
        fixed_tokens: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_found_at_props_clamps_a_limit_it_cannot_hold() {
    let api = MockApi::start_with_props(vec![], llama_props(8_192)).await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Refuse)).await;
    let (window, note) = session_started(&mut agent).await;
    assert_eq!(
        window,
        Window {
            tokens: 8_192,
            source: WindowSource::Server {
                endpoint: "/props".into()
            }
        }
    );
    let note = note.expect("the clamp is explained");
    assert!(note.contains("50.0k is more than the model's window holds"), "{note}");
    let status = next_context(&mut agent).await;
    // 8,192 tokens less the reply's 100, at 4 characters a token, less the fixed part.
    assert_eq!(status.limit, (8_192 - 100) * 4 - fixed());
    assert_eq!(status.limit, fit(8_192).holds_chars());
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// Anthropic's Models API states the model's window: it is used, and named as where
/// the figure came from; a server that does not answer it leaves the configured one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_api_states_the_window_of_the_model_in_use() {
    let api = MockApi::start(vec![]).await;
    api.state_model_info(json!({"type": "model", "max_input_tokens": 1_000_000, "max_tokens": 128_000}));
    let mut settings = agent_settings(AskPolicy::Refuse);
    settings.compaction.context_char_limit.auto = true;
    let mut agent = start_agent(&api, settings).await;
    let (window, _) = session_started(&mut agent).await;
    assert_eq!(
        window,
        Window {
            tokens: 1_000_000,
            source: WindowSource::Server {
                endpoint: "/v1/models/m".into()
            }
        }
    );
    assert_eq!(next_context(&mut agent).await.limit, fit(1_000_000).auto_chars());
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();

    let silent = MockApi::start(vec![]).await;
    let mut agent = start_agent(&silent, agent_settings(AskPolicy::Refuse)).await;
    let (window, _) = session_started(&mut agent).await;
    assert_eq!(window.source, WindowSource::Configured);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_automatic_limit_is_the_share_of_the_found_window() {
    let api = MockApi::start_with_props(vec![], llama_props(32_768)).await;
    let mut settings = agent_settings(AskPolicy::Refuse);
    settings.compaction.context_char_limit.auto = true;
    let mut agent = start_agent(&api, settings).await;
    let (_, note) = session_started(&mut agent).await;
    let expected = fit(32_768).auto_chars();
    assert_eq!(expected, (32_768 * 80 / 100 - 100) * 4 - fixed());
    let note = note.expect("the automatic limit says how it was sized");
    assert!(
        note.starts_with("limit auto: ") && note.contains("80% of 32.8k tokens"),
        "{note}"
    );
    assert_eq!(next_context(&mut agent).await.limit, expected);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// `-c 512`: the system prompt and tools alone do not fit. The start says so plainly,
/// with what to do, instead of a limit worked out from a negative number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_smaller_than_the_fixed_part_is_said_at_start() {
    let api = MockApi::start_with_props(vec![], llama_props(512)).await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Refuse)).await;
    let (window, note) = session_started(&mut agent).await;
    assert_eq!(window.tokens, 512);
    let note = note.expect("the start explains the window");
    // The fixed part counted independently of the app, at the default 4 chars a token.
    let fixed_tokens = fixed().div_ceil(4);
    assert!(
        fixed_tokens + 256 > 512,
        "the scenario needs a fixed part over the window"
    );
    assert!(
        note.contains(&format!(
            "window of 512 tokens cannot hold scratchpad's system prompt and tool definitions (about {fixed_tokens} tokens)"
        )),
        "{note}"
    );
    assert!(note.contains("-c 4096 or more"), "{note}");
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// `t` in `/context` over the OpenAI wire: llama.cpp's counting endpoint
/// (`/v1/chat/completions/input_tokens`) is asked with the request as it would be sent,
/// without streaming or `max_tokens`, and its count becomes the figure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exact_count_over_the_openai_wire_asks_llama_cpps_counting_endpoint() {
    let api = MockApi::start(vec![common::openai_reply("Hello there.", &[])]).await;
    let mut agent = common::start_openai_agent(&api, agent_settings(AskPolicy::Refuse)).await;
    agent.ops.send(Op::Submit { text: "hello".into() }).unwrap();
    status_after_turn(&mut agent).await;
    agent.ops.send(Op::CountTokens).unwrap();
    let counted = next_context(&mut agent).await;
    let exact = tokens(&counted);
    assert_eq!(exact.basis, TokenBasis::Counted);
    let count_request = api
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/chat/completions/input_tokens")
        .expect("the counting endpoint was asked");
    for absent in ["stream", "stream_options", "max_tokens"] {
        assert!(count_request.body.get(absent).is_none(), "{absent} is not sent");
    }
    let roles: Vec<&str> = count_request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant"],
        "the history as it would be sent"
    );
    assert!(count_request.body["tools"].as_array().is_some_and(|t| !t.is_empty()));
    assert_eq!(
        exact.tokens,
        count_request.body.to_string().len() as u64 / 4,
        "the mock's count"
    );
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// Issue 45: a llama-server counts each request before it goes. Every call is
/// predicted at the server's own count of what it sent: after tool results of digits
/// joined (which a ratio of characters per token gets wrong) and after a compaction
/// took some away. The fixed part is counted once, as a request of no messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_counts_predicts_every_call_at_its_own_count() {
    let ids = ["toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5"];
    let mut replies: Vec<_> = ids
        .iter()
        .map(|id| common::tool_reply("Counting.", &[common::bash_call(id, "seq 1 900")]))
        .collect();
    replies.push(text_reply("Done."));
    let api = MockApi::start_with_props(replies, llama_props(32_768)).await;
    let mut settings = agent_settings(AskPolicy::Approve);
    settings.compaction.context_char_limit.chars = 10_000;
    let mut agent = start_agent(&api, settings).await;
    agent
        .ops
        .send(scratchpad::protocol::Op::Submit { text: "count".into() })
        .unwrap();
    let mut points = Vec::new();
    while points.len() < ids.len() + 1 {
        points.push(next_call(&mut agent).await);
    }
    let sent = api.turn_requests();
    assert_eq!(sent.len(), points.len());
    for (point, request) in points.iter().zip(&sent) {
        assert_eq!(
            point.predicted_tokens,
            Some(common::mock_tokens(&request.body)),
            "{point:?}"
        );
    }
    assert!(
        points.iter().any(|point| point.stages.contains(&Stage::MicroCompact)),
        "a compaction ran between two calls: {points:?}"
    );
    let fixed_part = api
        .counts()
        .iter()
        .filter(|count| count.counts_the_fixed_part())
        .count();
    assert_eq!(fixed_part, 1, "the fixed part is counted once");
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// A count that fails leaves the figure estimated, said once however many calls it
/// fails for (and asked once for each request), and said again when the server
/// counts once more; the turn goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_count_falls_back_to_the_estimate_and_says_so_once() {
    let replies = vec![
        common::tool_reply("Listing.", &[common::bash_call("toolu_1", "seq 1 50")]),
        text_reply("Done."),
        text_reply("Again."),
    ];
    let api = MockApi::start_with_props(replies, llama_props(32_768)).await;
    api.fail_counts(true);
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Approve)).await;
    let failed = common::turn(&mut agent, "list").await;
    assert_eq!(failed.outcome, scratchpad::protocol::TurnOutcome::Completed);
    let said: Vec<_> = failed
        .notices
        .iter()
        .filter(|notice| notice.starts_with("the server's token count failed ("))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", failed.notices);
    assert_eq!(
        api.counts().len(),
        api.turn_requests().len(),
        "a request whose count failed is not asked about again before it is sent"
    );
    assert!(
        said[0].ends_with("the token figure is estimated until it counts again"),
        "{}",
        said[0]
    );
    api.fail_counts(false);
    let again = common::turn(&mut agent, "again").await;
    assert!(
        again
            .notices
            .contains(&"the server counts again: the token figure is its own count".to_string()),
        "{:?}",
        again.notices
    );
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// `/context` on a server that counts: each message category is its text tokenized
/// alone, the fixed part its own count, and the chat template's share (message framing)
/// what the whole request's count leaves; the column says it was counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_gives_each_category_the_servers_count() {
    let replies = vec![
        common::tool_reply("Listing.", &[common::bash_call("toolu_1", "seq 1 300")]),
        text_reply("Done listing."),
    ];
    let api = MockApi::start_with_props(replies, llama_props(32_768)).await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Approve)).await;
    assert_eq!(
        common::turn(&mut agent, "list").await.outcome,
        scratchpad::protocol::TurnOutcome::Completed
    );
    // Opening `/context` counts: the gauge takes the count (and the limit that
    // follows it) before the breakdown comes, so the two agree.
    agent.ops.send(Op::Inspect).unwrap();
    let status = next_context(&mut agent).await;
    let breakdown = common::breakdown_of(&mut agent).await;
    assert_eq!(breakdown.limit, status.limit);
    let counted = breakdown.counted.expect("the server counted each category");
    assert_eq!(tokens(&status).basis, TokenBasis::Counted);
    assert_eq!(tokens(&status).tokens, counted.total);
    use scratchpad::protocol::Category;
    let tokens_of = |text: &str| common::mock_tokens(&json!({ "messages": [text] }));
    let tokenized = |path: &str| {
        api.counts()
            .into_iter()
            .filter(|count| count.path == path)
            .map(|count| count.body["content"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    let results = tokenized("/tokenize")
        .into_iter()
        .find(|text| text.contains("\n300"))
        .expect("the tool results were tokenized");
    assert_eq!(counted.of(Category::ToolResult), Some(tokens_of(&results)));
    let in_text: u64 = counted
        .categories
        .iter()
        .filter(|(category, _)| !category.is_fixed() && *category != Category::Framing)
        .map(|(_, tokens)| tokens)
        .sum();
    assert_eq!(
        counted.of(Category::Framing),
        Some(counted.total - counted.fixed - in_text)
    );
    let fixed_rows: u64 = counted
        .categories
        .iter()
        .filter(|(category, _)| category.is_fixed())
        .map(|(_, tokens)| tokens)
        .sum();
    assert_eq!(fixed_rows, counted.fixed);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// Where the server does not count, `/context` weighs each category by its own
/// content: a result of digits takes more tokens a character than the prose around
/// it (one ratio for all made restoring one digit-heavy result double what the
/// system prompt and the answers were said to take).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_weighs_each_category_by_its_own_content() {
    use scratchpad::protocol::Category;
    let prose = "The parser reads the tokens the lexer hands it and builds the tree. ".repeat(30);
    let api = MockApi::start(vec![
        common::tool_reply("Counting.", &[common::bash_call("t1", "seq 1 1500")]),
        text_reply(&prose),
    ])
    .await;
    let mut agent = start_agent(&api, agent_settings(AskPolicy::Approve)).await;
    common::turn(&mut agent, "count to 1500").await;
    let map = common::breakdown_of(&mut agent).await;
    assert!(map.counted.is_none(), "this server does not count");
    let weighed = map.weighed.clone().expect("weighed after a measured call");
    let per_char = |category: Category| {
        weighed.of(category).expect("weighed") as f64 / common::total_of(&map, category).max(1) as f64
    };
    assert!(
        per_char(Category::ToolResult) > 2.0 * per_char(Category::AssistantText),
        "digits {} a char, prose {} a char",
        per_char(Category::ToolResult),
        per_char(Category::AssistantText)
    );
    let fixed_parts: u64 = weighed
        .categories
        .iter()
        .filter(|(category, _)| category.is_fixed())
        .map(|(_, tokens)| tokens)
        .sum();
    assert!(fixed_parts.abs_diff(weighed.fixed) <= 2, "{weighed:?}");
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}
