//! The Anthropic client against the in-process mock API: the exact request, the
//! shared SSE fixtures at every chunking, and the retry rules.

mod common;

use std::time::{Duration, Instant};

use common::{MockApi, Reply, error_reply, fixture, text_reply};
use scratchpad::message::{ContentBlock, Message};
use scratchpad::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use scratchpad::provider::{ModelRequest, Provider, ProviderError, RetryPolicy, StreamEvent, ToolSpec};
use serde_json::json;

fn provider(api: &MockApi, caching: bool) -> AnthropicProvider {
    AnthropicProvider::new(AnthropicConfig {
        base_url: api.url.clone(),
        api_key: "sk-test-key".into(),
        model: "claude-test".into(),
        prompt_caching: caching,
        thinking: scratchpad::provider::Thinking::Off,
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay_ms: 10,
            max_delay_ms: 50,
            ..RetryPolicy::default()
        },
    })
    .unwrap()
}

/// The one-message history every request here sends.
static README_REQUEST: std::sync::LazyLock<Vec<Message>> =
    std::sync::LazyLock::new(|| vec![Message::user_text("Read the README")]);

fn request() -> ModelRequest<'static> {
    ModelRequest {
        system: "You are a test.".into(),
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            input_schema: json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        }],
        messages: &README_REQUEST,
        max_tokens: 1024,
        cache_check: scratchpad::provider::CacheCheck::Off,
        think: false,
    }
}

async fn complete(
    provider: &AnthropicProvider,
) -> (
    Result<scratchpad::provider::ModelResponse, ProviderError>,
    Vec<StreamEvent>,
) {
    let (sink, mut events) = tokio::sync::mpsc::unbounded_channel();
    let result = provider.complete(&request(), &sink).await;
    drop(sink);
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        seen.push(event);
    }
    (result, seen)
}

#[tokio::test]
async fn sends_the_exact_request_and_parses_the_tool_use_fixture() {
    let api = MockApi::start(vec![Reply::sse(fixture("anthropic-sse-tool-use.txt"))]).await;
    let (result, events) = complete(&provider(&api, true)).await;
    let response = result.unwrap();
    assert_eq!(response.text(), "Let me read the README first.");
    assert_eq!(
        response.content[1],
        ContentBlock::ToolUse {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "read_file".into(),
            input: json!({"path":"README.md","limit":200}),
            extra: Default::default(),
        }
    );
    assert_eq!(response.usage.input_tokens, 472);
    assert!(events.contains(&StreamEvent::ToolUseStarted {
        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
        name: "read_file".into()
    }));
    let requests = api.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.headers["x-api-key"], "sk-test-key");
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "system": [{"type":"text","text":"You are a test.","cache_control":{"type":"ephemeral"}}],
            "tools": [{"name":"read_file","description":"Read a file",
                "input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},
                "cache_control":{"type":"ephemeral"}}],
            "messages": [{"role":"user","content":[{"type":"text","text":"Read the README","cache_control":{"type":"ephemeral"}}]}],
            "stream": true
        })
    );
}

#[tokio::test]
async fn caching_off_sends_no_breakpoints() {
    let api = MockApi::start(vec![Reply::sse(fixture("anthropic-sse-basic.txt"))]).await;
    let (result, _) = complete(&provider(&api, false)).await;
    assert_eq!(result.unwrap().text(), "Hello! How can I help with your code today?");
    let body = &api.requests()[0].body;
    assert!(!body.to_string().contains("cache_control"));
    assert_eq!(body["system"], json!("You are a test."));
}

#[tokio::test]
async fn one_byte_at_a_time_and_random_splits_parse_identically() {
    let whole = {
        let api = MockApi::start(vec![Reply::sse(fixture("anthropic-sse-tool-use.txt"))]).await;
        complete(&provider(&api, true)).await.0.unwrap()
    };
    for chunk in [1, 5, 13, 97] {
        let api = MockApi::start(vec![Reply::Sse {
            body: fixture("anthropic-sse-tool-use.txt"),
            chunk,
            delay_ms: if chunk == 1 { 0 } else { 1 },
        }])
        .await;
        assert_eq!(complete(&provider(&api, true)).await.0.unwrap(), whole, "chunk {chunk}");
    }
}

#[tokio::test]
async fn overloaded_then_success_is_retried() {
    let api = MockApi::start(vec![
        error_reply(
            529,
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        ),
        text_reply("recovered"),
    ])
    .await;
    let (result, events) = complete(&provider(&api, true)).await;
    assert_eq!(result.unwrap().text(), "recovered");
    assert!(matches!(events[0], StreamEvent::Retrying { attempt: 1, .. }));
    assert_eq!(api.requests().len(), 2);
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after() {
    let api = MockApi::start(vec![
        Reply::Error {
            status: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: json!({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}).to_string(),
        },
        text_reply("after the wait"),
    ])
    .await;
    let started = Instant::now();
    let (result, _) = complete(&provider(&api, true)).await;
    assert_eq!(result.unwrap().text(), "after the wait");
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
}

#[tokio::test]
async fn auth_failure_is_not_retried() {
    let api = MockApi::start(vec![
        error_reply(
            401,
            json!({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}),
        ),
        text_reply("never reached"),
    ])
    .await;
    let (result, _) = complete(&provider(&api, true)).await;
    let error = result.unwrap_err();
    assert!(matches!(error, ProviderError::Auth { status: 401, .. }));
    assert!(error.to_string().contains("ANTHROPIC_API_KEY"));
    assert!(!error.to_string().contains("sk-test-key"));
    assert_eq!(api.requests().len(), 1);
}

#[tokio::test]
async fn prompt_too_long_is_classified_and_not_retried() {
    let api = MockApi::start(vec![common::prompt_too_long()]).await;
    let (result, _) = complete(&provider(&api, true)).await;
    assert!(matches!(result.unwrap_err(), ProviderError::ContextTooLong { .. }));
    assert_eq!(api.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_mid_response_is_retried_and_nothing_partial_is_kept() {
    let body = fixture("anthropic-sse-basic.txt");
    let cut_at = body.find("with your code").unwrap();
    let api = MockApi::start(vec![
        Reply::Cut {
            body: body.clone(),
            bytes: cut_at,
        },
        Reply::sse(fixture("anthropic-sse-basic.txt")),
    ])
    .await;
    let (result, events) = complete(&provider(&api, true)).await;
    assert_eq!(result.unwrap().text(), "Hello! How can I help with your code today?");
    let retry_at = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Retrying { .. }))
        .expect("a retry");
    assert!(retry_at > 0, "partial text streamed before the cut: {events:?}");
    assert_eq!(api.requests().len(), 2);
}

#[tokio::test]
async fn a_mid_stream_error_event_is_retried_when_overloaded() {
    let error = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n\
        event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let api = MockApi::start(vec![Reply::sse(error.into()), text_reply("second try")]).await;
    let (result, _) = complete(&provider(&api, true)).await;
    assert_eq!(result.unwrap().text(), "second try");
}

#[tokio::test]
async fn attempts_are_bounded() {
    let overloaded = || {
        error_reply(
            529,
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        )
    };
    let api = MockApi::start(vec![overloaded(), overloaded(), overloaded(), text_reply("too late")]).await;
    let (result, _) = complete(&provider(&api, true)).await;
    assert!(matches!(result.unwrap_err(), ProviderError::Overloaded { .. }));
    assert_eq!(api.requests().len(), 3);
}

#[tokio::test]
async fn count_tokens_calls_its_endpoint_without_stream() {
    let api = MockApi::start(vec![]).await;
    let tokens = provider(&api, false).count_tokens(&request()).await.unwrap();
    assert!(tokens.is_some_and(|tokens| tokens > 0));
    let sent = &api.requests()[0];
    assert_eq!(sent.path, "/v1/messages/count_tokens");
    assert!(sent.body.get("stream").is_none());
}

#[tokio::test]
async fn a_closed_port_is_a_server_that_is_not_up() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let provider = AnthropicProvider::new(AnthropicConfig {
        base_url: url,
        api_key: "k".into(),
        model: "m".into(),
        prompt_caching: false,
        thinking: scratchpad::provider::Thinking::Off,
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay_ms: 1,
            max_delay_ms: 1,
            startup_wait_secs: 0,
            ..RetryPolicy::default()
        },
    })
    .unwrap();
    let (sink, _events) = tokio::sync::mpsc::unbounded_channel();
    let error = provider.complete(&request(), &sink).await.unwrap_err();
    assert!(error.server_not_up(), "{error:?}");
    assert!(
        error.to_string().starts_with("connection refused at 127.0.0.1:"),
        "{error}"
    );
}

#[tokio::test]
async fn a_server_that_goes_silent_times_out_and_is_retried() {
    let body = common::sse_text("Recovered after a stall.");
    let api = MockApi::start(vec![
        Reply::Stall {
            body: body.clone(),
            bytes: 0,
        },
        Reply::Stall {
            body: body.clone(),
            bytes: body.len() / 2,
        },
        text_reply("Recovered after a stall."),
    ])
    .await;
    let provider = AnthropicProvider::new(AnthropicConfig {
        base_url: api.url.clone(),
        api_key: "sk-test-key".into(),
        model: "claude-test".into(),
        prompt_caching: false,
        thinking: scratchpad::provider::Thinking::Off,
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay_ms: 10,
            max_delay_ms: 50,
            idle_timeout_secs: 1,
            startup_wait_secs: 0,
        },
    })
    .unwrap();
    let (sink, mut deltas) = tokio::sync::mpsc::unbounded_channel();
    let started = Instant::now();
    let response = provider.complete(&request(), &sink).await.unwrap();
    assert_eq!(response.text(), "Recovered after a stall.");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    drop(sink);
    let mut retries = 0;
    while let Some(event) = deltas.recv().await {
        retries += usize::from(matches!(event, StreamEvent::Retrying { .. }));
    }
    assert_eq!(retries, 2, "both stalls were retried");
}
