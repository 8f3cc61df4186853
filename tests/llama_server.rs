//! Against a real third-party server: llama.cpp's `llama-server` (built from the PyPI
//! llama-cpp-python sdist by `.ci/llama-peer.sh`) serving SmolLM2-135M, over both its
//! Anthropic `/v1/messages` and its OpenAI `/v1/chat/completions` endpoints, with
//! deterministic sampling (`--temp 0 --seed 1`) and the Qwen2.5 chat template from the
//! vendored llama.cpp sources (SmolLM2's own template leaves tool definitions out).
//!
//! Every test here needs that server, so each is `#[ignore]`d with the reason: `.ci/run`
//! runs them with `--ignored` when it could build the peer, and says loudly when it
//! could not. Run by hand without the server, they fail and say what is missing.

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use common::Workspace;
use scratchpad::message::Message;
use scratchpad::provider::anthropic::{AnthropicConfig, AnthropicProvider};
use scratchpad::provider::openai::{OpenAiConfig, OpenAiProvider};
use scratchpad::provider::{ModelRequest, Provider, ProviderError, RetryPolicy};
use scratchpad::tools::{ToolBox, ToolsConfig};
use serde_json::Value;

const NEEDS_PEER: &str = "set SCRATCHPAD_LLAMA_SERVER, SCRATCHPAD_LLAMA_MODEL and SCRATCHPAD_LLAMA_TEMPLATE \
     (.ci/run does when .ci/llama-peer.sh could build llama-server)";

/// One server at a time: the machine has two cores, and a model call under contention
/// can take minutes.
static ONE_SERVER: Mutex<()> = Mutex::new(());

struct Server {
    child: Child,
    url: String,
    _turn: MutexGuard<'static, ()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peer_env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: {NEEDS_PEER}"))
}

/// Start `llama-server` with a `context`-token window, deterministic sampling and the
/// Qwen2.5 template (tools rendered), and wait until it is ready.
fn server(context: u32) -> Server {
    server_at(free_port(), context)
}

/// A port nothing listens on (just now).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// [`server`] on `port`.
fn server_at(port: u16, context: u32) -> Server {
    let (binary, model, template) = (
        peer_env("SCRATCHPAD_LLAMA_SERVER"),
        peer_env("SCRATCHPAD_LLAMA_MODEL"),
        peer_env("SCRATCHPAD_LLAMA_TEMPLATE"),
    );
    let turn = ONE_SERVER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let context = context.to_string();
    let port_text = port.to_string();
    let child = Command::new(binary)
        .args([
            "-m",
            &model,
            "-c",
            &context,
            "--host",
            "127.0.0.1",
            "--port",
            &port_text,
        ])
        .args(["-t", "2", "-np", "1", "--temp", "0", "--seed", "1"])
        .args(["--jinja", "--chat-template-file", &template])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
        _turn: turn,
    };
    let started = Instant::now();
    while !healthy(port) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "llama-server did not become ready"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    server
}

/// `GET /health` answers 200 once the model is loaded.
fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
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
        tools: ToolBox::specs_for(&ToolsConfig::default()),
        messages,
        max_tokens: 24,
        // Anthropic's cache check, as a turn call before the server described itself:
        // llama-server must take it (it ignores what it does not know).
        cache_check: scratchpad::provider::CacheCheck::Start,
        think: false,
    }
}

fn providers(url: &str) -> (AnthropicProvider, OpenAiProvider) {
    let anthropic = AnthropicProvider::new(AnthropicConfig {
        base_url: url.to_string(),
        api_key: "local".into(),
        model: String::new(),
        prompt_caching: true,
        thinking: scratchpad::provider::Thinking::Off,
        retry: retry(),
    })
    .unwrap();
    let openai = OpenAiProvider::new(OpenAiConfig {
        base_url: format!("{url}/v1"),
        api_key: None,
        model: String::new(),
        retry: retry(),
    })
    .unwrap();
    (anthropic, openai)
}

/// Ask until an answer reports the prompt's usage: llama.cpp's Anthropic endpoint
/// leaves out `message_start` (and with it the usage) when the first token is part of
/// a multi-byte character. A unit test in `provider::anthropic` covers that stream.
async fn ask_with_usage(provider: &dyn Provider, messages: &[Message]) -> scratchpad::provider::ModelResponse {
    let mut reported = Vec::new();
    for _ in 0..6 {
        let (sink, _deltas) = tokio::sync::mpsc::unbounded_channel();
        let response = provider
            .complete(&request(messages), &sink)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", provider.kind()));
        if response.usage.prompt_tokens() > 0 {
            return response;
        }
        reported.push(response.usage);
    }
    panic!("{}: no usage reported in {reported:?}", provider.kind())
}

#[tokio::test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
async fn both_endpoints_stream_an_answer_within_max_tokens() {
    let server = server(2048);
    let (anthropic, openai) = providers(&server.url);
    for provider in [&anthropic as &dyn Provider, &openai] {
        let response = ask_with_usage(provider, &[Message::user_text("Say hello.")]).await;
        assert!(
            !response.content.is_empty(),
            "{}: an answer with content",
            provider.kind()
        );
        let stop = response.stop_reason.as_deref().unwrap_or_default();
        assert!(
            ["end_turn", "max_tokens", "tool_use"].contains(&stop),
            "{}: stop reason {stop:?}",
            provider.kind()
        );
        assert!(
            response.usage.output_tokens <= 24,
            "{}: {:?}",
            provider.kind(),
            response.usage
        );
    }
}

/// The window and the model are asked of the server (`/props`), and llama.cpp's
/// Anthropic endpoint counts a request exactly as the same request is then reported.
#[tokio::test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
async fn the_server_names_window_and_model_and_counts_what_it_then_reports() {
    let server = server(2048);
    let (anthropic, openai) = providers(&server.url);
    let model_file = std::path::Path::new(&peer_env("SCRATCHPAD_LLAMA_MODEL"))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    for provider in [&anthropic as &dyn Provider, &openai] {
        let facts = provider.discover().await;
        assert_eq!(facts.window.expect("llama-server states its window").tokens, 2048);
        assert_eq!(facts.renders_tools, Some(true), "the Qwen2.5 template renders tools");
        assert!(
            provider.model().ends_with(&model_file),
            "{}: {}",
            provider.kind(),
            provider.model()
        );
    }
    let messages = [Message::user_text("Say hello in one word.")];
    for provider in [&anthropic as &dyn Provider, &openai] {
        let counted = provider
            .count_tokens(&request(&messages))
            .await
            .expect("count_tokens answers")
            .expect("llama.cpp offers counting");
        let reported = ask_with_usage(provider, &messages).await.usage.prompt_tokens();
        assert_eq!(
            counted,
            reported,
            "{}: counted and reported tokens of the same body",
            provider.kind()
        );
    }
}

#[tokio::test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
async fn a_prompt_over_the_context_is_classified_as_too_long() {
    let server = server(512);
    let (anthropic, openai) = providers(&server.url);
    let long = "the quick brown fox jumps over the lazy dog ".repeat(400);
    for provider in [&anthropic as &dyn Provider, &openai] {
        let (sink, _deltas) = tokio::sync::mpsc::unbounded_channel();
        let messages = [Message::user_text(long.clone())];
        match provider.complete(&request(&messages), &sink).await {
            Err(ProviderError::ContextTooLong { message, overflow }) => {
                assert!(message.contains("context"), "{message}");
                let overflow = overflow.expect("llama.cpp gives the counts");
                assert_eq!(overflow.max_tokens, 512);
                assert!(overflow.prompt_tokens > 512);
            }
            other => panic!("{}: expected ContextTooLong, got {other:?}", provider.kind()),
        }
    }
}

/// What passed through the recording proxy.
#[derive(Clone, Debug)]
struct Exchange {
    path: String,
    body: Value,
    status: u16,
}

#[derive(Clone)]
struct Proxy {
    upstream: String,
    client: reqwest::Client,
    log: Arc<Mutex<Vec<Exchange>>>,
}

/// A loopback proxy in front of the server that records every request it forwards
/// and the status of the answer, streaming the answer through untouched.
fn start_proxy(upstream: &str) -> (String, Arc<Mutex<Vec<Exchange>>>) {
    let proxy = Proxy {
        upstream: upstream.to_string(),
        client: reqwest::Client::new(),
        log: Arc::default(),
    };
    let log = proxy.log.clone();
    let url = common::on_own_runtime(move || async move {
        let app = axum::Router::new().fallback(forward).with_state(proxy);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        url
    });
    (url, log)
}

async fn forward(State(proxy): State<Proxy>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let mut request = proxy
        .client
        .request(method, format!("{}{path}", proxy.upstream))
        .body(body.clone());
    for name in ["content-type", "x-api-key", "authorization", "anthropic-version"] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value);
        }
    }
    let response = request.send().await.expect("llama-server answers");
    let status = response.status();
    proxy.log.lock().unwrap().push(Exchange {
        path: uri.path().to_string(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        status: status.as_u16(),
    });
    let mut answer = Response::builder().status(status.as_u16());
    if let Some(kind) = response.headers().get("content-type") {
        answer = answer.header("content-type", kind);
    }
    answer.body(Body::from_stream(response.bytes_stream())).unwrap()
}

/// Every tool call answered by the very next message (OpenAI: the run of `tool`
/// messages after it), nothing answered that was not called: checked on the wire body,
/// independently of scratchpad's own check.
fn check_wire_pairing(exchange: &Exchange) -> Result<(), String> {
    let messages = exchange.body["messages"].as_array().ok_or("a body without messages")?;
    let openai = exchange.path.ends_with("/chat/completions");
    let blocks_of = |message: &Value, kind: &str, key: &str| -> Vec<String> {
        message["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|block| block["type"] == kind)
                    .filter_map(|block| block[key].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut pending: Option<(usize, Vec<String>)> = None;
    let mut index = 0;
    while index < messages.len() {
        let message = &messages[index];
        let role = message["role"].as_str().unwrap_or_default();
        let mut next = index + 1;
        let (calls, mut results) = if openai {
            let calls = message["tool_calls"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .filter_map(|c| c["id"].as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            // A run of `tool` messages is one answer.
            let mut results = Vec::new();
            let mut end = index;
            while end < messages.len() && messages[end]["role"] == "tool" {
                results.extend(messages[end]["tool_call_id"].as_str().map(str::to_string));
                end += 1;
            }
            next = next.max(end);
            (calls, results)
        } else if role == "assistant" {
            (blocks_of(message, "tool_use", "id"), Vec::new())
        } else {
            (Vec::new(), blocks_of(message, "tool_result", "tool_use_id"))
        };
        match pending.take() {
            Some((at, mut expected)) => {
                expected.sort();
                results.sort();
                if expected != results {
                    return Err(format!(
                        "the calls {expected:?} of message {at} are answered by {results:?} in message {index}"
                    ));
                }
            }
            None if !results.is_empty() => {
                return Err(format!("message {index} answers {results:?}, which nothing called"));
            }
            None => {}
        }
        if !calls.is_empty() {
            pending = Some((index, calls));
        }
        index = next;
    }
    match pending {
        Some((at, calls)) => Err(format!("the calls {calls:?} of message {at} are never answered")),
        None => Ok(()),
    }
}

/// Spaced digits are a token per character to SmolLM2's tokenizer (prose is about
/// three characters a token): a request of `chars` characters that fits under the
/// character limit yet overflows the window next to the system prompt and tools.
fn digits_request(chars: usize) -> String {
    let digits: Vec<String> = (0..chars / 2).map(|i| ((i * 7 + 3) % 10).to_string()).collect();
    format!("Remember these digits: {}", digits.join(" "))
}

/// The gauge after a turn: the estimate and the limit of its last status.
fn last_status(events: &[Value]) -> (u64, u64) {
    let status = events
        .iter()
        .rev()
        .find(|e| e["type"] == "context")
        .map(|e| &e["status"])
        .expect("a gauge status");
    (status["estimate"].as_u64().unwrap(), status["limit"].as_u64().unwrap())
}

const TOOL_CALL_REQUEST: &str =
    "Repeat after me: <tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"main.rs\"}}\n</tool_call>";

fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn completed(output: &Output, turn: &str) -> Vec<Value> {
    let events = events(output);
    assert!(
        output.status.success(),
        "{turn}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let outcomes: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn_done")
        .map(|e| &e["outcome"])
        .collect();
    assert_eq!(outcomes, ["completed"], "{turn}");
    events
}

/// The real binary, headless, over three turns of one session at `-c context`: a tool
/// call parsed and run, a pasted run of spaced digits the window cannot take, then
/// "hi". The server counts the paste before it goes, so it is compacted first (by the
/// pipeline where the count brought the limit down, else as after a refusal, said as
/// counted) and never sent to be refused; what goes fits, sized by content, not by
/// the average the prose around it gave. Every request the server received is valid.
fn three_turns_through_a_small_window(provider: &[&str], context: u32, max_tokens: Option<u32>) {
    let server = server(context);
    let (proxy_url, log) = start_proxy(&server.url);
    let workspace = Workspace::new();
    if let Some(max_tokens) = max_tokens {
        let config = format!("[provider]\nmax_tokens = {max_tokens}\n");
        std::fs::write(workspace.home.path().join("config.toml"), config).unwrap();
    }
    std::fs::write(workspace.path().join("main.rs"), "fn main() { println!(\"hi\"); }\n").unwrap();
    let base_url = if provider.contains(&"openai") {
        format!("{proxy_url}/v1")
    } else {
        proxy_url.clone()
    };
    let run = |args: &[&str]| -> Output {
        let mut all = provider.to_vec();
        all.extend(["--base-url", &base_url, "--yes", "--events", "jsonl"]);
        all.extend(args);
        let binary = Command::new(env!("CARGO_BIN_EXE_scratchpad"));
        workspace
            .command_at(binary, &base_url, &all)
            .output()
            .expect("run the binary")
    };

    let first = completed(&run(&["-p", TOOL_CALL_REQUEST]), "the tool call turn");
    let ran: Vec<&Value> = first
        .iter()
        .filter(|e| e["type"] == "tool_finished" && e["status"] == "ok")
        .collect();
    assert!(
        ran.iter().any(|e| e["name"] == "read_file"),
        "a tool call was parsed and run: {first:?}"
    );

    // Just under the limit in characters, so that nothing compacts before the call.
    let (estimate, limit) = last_status(&first);
    let digits = digits_request(usize::try_from(limit - estimate).unwrap() - 100);
    let second = completed(&run(&["--continue", "-p", &digits]), "the overflowing turn");
    let first_call = second
        .iter()
        .position(|e| e["type"] == "model_call")
        .unwrap_or_else(|| panic!("the turn was answered: {second:?}"));
    let compacted: Vec<&Value> = second[..first_call]
        .iter()
        .filter(|e| e["type"] == "compaction" && e["event"]["replaced"].as_u64() > Some(0))
        .map(|e| &e["event"])
        .collect();
    assert!(!compacted.is_empty(), "compacted before it was sent: {second:?}");
    for event in &compacted {
        assert!(
            event["chars_after"].as_u64() < event["chars_before"].as_u64(),
            "the prompt shrank: {event}"
        );
        assert_eq!(event["errors"].as_array().map_or(0, Vec::len), 0, "{event}");
        if event["stage"] == "reactive_compact" {
            let trigger = event["trigger"].as_str().unwrap_or_default();
            assert!(
                trigger.starts_with("the server counted "),
                "caught by the count: {trigger}"
            );
        }
    }
    // (llama.cpp's Anthropic endpoint leaves a reply's usage out now and then.)
    let call = &second[first_call]["point"];
    if call["input_tokens"].is_u64() {
        assert_eq!(
            call["predicted_tokens"], call["input_tokens"],
            "sent as counted: {call}"
        );
    }

    completed(&run(&["--continue", "-p", "hi"]), "hi after the overflow");

    let exchanges = log.lock().unwrap().clone();
    let calls: Vec<&Exchange> = exchanges
        .iter()
        .filter(|e| e.path.ends_with("/v1/messages") || e.path.ends_with("/chat/completions"))
        .collect();
    assert!(calls.last().is_some_and(|e| e.status == 200));
    for exchange in &calls {
        if let Err(problem) = check_wire_pairing(exchange) {
            panic!("an invalid request reached the server: {problem}\n{}", exchange.body);
        }
        let max_tokens = exchange.body["max_tokens"].as_u64().unwrap_or(0);
        assert!(
            max_tokens < u64::from(context),
            "max_tokens {max_tokens} fits the window"
        );
    }
}

#[test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
fn the_real_binary_works_through_a_small_window_over_the_anthropic_api() {
    three_turns_through_a_small_window(&["--provider", "anthropic"], 2048, None);
}

#[test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
fn the_real_binary_works_through_a_small_window_over_the_openai_api() {
    three_turns_through_a_small_window(&["--provider", "openai"], 2048, None);
}

/// At `-c 4096` with short replies the limit is about 10k characters: a paste of
/// spaced digits that fills it after a file read packs about twice the tokens per
/// character of prose. The server's count brings the limit down to what the window
/// holds of such text, so the pipeline summarises (cutting the pasted request itself)
/// before anything is sent, and the request that goes is answered (it used to be sent,
/// refused, and retried).
#[test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
fn a_digit_paste_that_would_overflow_a_4096_window_is_compacted_before_it_is_sent() {
    three_turns_through_a_small_window(&["--provider", "openai"], 4096, Some(64));
}

/// At `-c 512` the system prompt and tools alone overflow the window: the start says
/// so plainly, with what to do (it used to show a 2.0k limit worked out from a
/// negative number, then fail every request talking of "35 characters").
#[test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
fn a_window_too_small_for_the_fixed_part_is_said_at_start() {
    let server = server(512);
    let workspace = Workspace::new();
    let args = [
        "--provider",
        "anthropic",
        "--base-url",
        &server.url,
        "--events",
        "jsonl",
        "-p",
        "hi",
    ];
    let output = workspace
        .command_at(Command::new(env!("CARGO_BIN_EXE_scratchpad")), &server.url, &args)
        .output()
        .expect("run the binary");
    let started = events(&output)
        .into_iter()
        .find(|e| e["type"] == "session_started")
        .expect("the session started");
    let note = started["limit_note"].as_str().unwrap_or_default().to_string();
    assert!(
        note.contains("window of 512 tokens cannot hold scratchpad's system prompt and tool definitions"),
        "{started}"
    );
    assert!(note.contains("-c 4096 or more"), "{note}");
}

/// `chars` characters of prose, about four characters a token.
fn prose_request(seed: usize, chars: usize) -> String {
    let sentence = format!("Note {seed}: the parser keeps every token of the input it reads and drops none. ");
    format!("Read this and say ok. {}", sentence.repeat(chars / sentence.len()))
}

/// How far each call's predicted tokens were from what the server then reported:
/// the mean and the largest error, as shares of the reported count.
fn prediction_errors(calls: &[(u64, u64)]) -> (f64, f64) {
    let errors: Vec<f64> = calls
        .iter()
        .map(|&(predicted, reported)| (predicted as f64 - reported as f64).abs() / reported as f64)
        .collect();
    let mean = errors.iter().sum::<f64>() / errors.len().max(1) as f64;
    (mean, errors.iter().copied().fold(0.0, f64::max))
}

/// The gauge's token figure against the server's own count, call by call, over a
/// session whose compactions take away text of other kinds than what stays: a file
/// of digits read, then pasted requests of spaced digits (a token a character) and of
/// prose (about four) in turn, snipped away as the session grows. The server counts
/// each request before it goes, so every prediction is within 5% of what it then
/// reported, and their mean within 2% (issue 45; chars per token missed by 31%).
fn token_figure_through_compactions(wire: &str) {
    let server = server(8192);
    let base_url = if wire == "openai" {
        format!("{}/v1", server.url)
    } else {
        server.url.clone()
    };
    let workspace = Workspace::new();
    std::fs::write(workspace.path().join("main.rs"), digits_request(2_400)).unwrap();
    // Short replies: the figure is about prompts, and a 135M model's long ones would
    // only add minutes.
    std::fs::write(
        workspace.home.path().join("config.toml"),
        "[provider]\nmax_tokens = 64\n",
    )
    .unwrap();
    let run = |args: &[&str]| -> Output {
        let mut all = vec![
            "--provider",
            wire,
            "--base-url",
            &base_url,
            "--yes",
            "--events",
            "jsonl",
            "--max-messages",
            "7",
        ];
        all.extend(args);
        workspace
            .command_at(Command::new(env!("CARGO_BIN_EXE_scratchpad")), &base_url, &all)
            .output()
            .expect("run the binary")
    };
    let mut requests = vec![TOOL_CALL_REQUEST.to_string()];
    // Of growing sizes, so that no two contexts after a snip are alike.
    requests.extend((0..10).map(|i| {
        let chars = 700 + 90 * i;
        if i % 2 == 0 {
            digits_request(chars)
        } else {
            prose_request(i, chars)
        }
    }));
    let mut calls: Vec<(u64, u64)> = Vec::new();
    let mut compactions = 0;
    let mut counted_statuses = 0;
    for (turn, request) in requests.iter().enumerate() {
        let mut args = vec!["-p", request.as_str()];
        if turn > 0 {
            args.insert(0, "--continue");
        }
        let events = completed(&run(&args), &format!("turn {turn}"));
        compactions += events
            .iter()
            .filter(|e| e["type"] == "compaction" && e["event"]["replaced"].as_u64() > Some(0))
            .count();
        counted_statuses += events
            .iter()
            .filter(|e| e["type"] == "context" && e["status"]["tokens"]["basis"] == "counted")
            .count();
        for call in events.iter().filter(|e| e["type"] == "model_call") {
            let point = &call["point"];
            eprintln!("turn {turn}: {point}");
            if let (Some(predicted), Some(reported)) =
                (point["predicted_tokens"].as_u64(), point["input_tokens"].as_u64())
            {
                calls.push((predicted, reported));
            }
        }
    }
    assert!(compactions >= 2, "the session compacted at least twice: {compactions}");
    assert!(calls.len() >= 10, "at least ten predicted calls: {calls:?}");
    assert!(
        counted_statuses >= calls.len(),
        "the gauge said the figure was the server's count"
    );
    let (mean, max) = prediction_errors(&calls);
    eprintln!(
        "{wire}: token figure against the server over {} calls: mean error {:.1}%, max {:.1}%",
        calls.len(),
        mean * 100.0,
        max * 100.0
    );
    assert!(
        max <= 0.05,
        "every prediction within 5%: max {:.1}% in {calls:?}",
        max * 100.0
    );
    assert!(mean <= 0.02, "the mean within 2%: {:.1}% in {calls:?}", mean * 100.0);
}

#[test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
fn the_token_figure_is_the_servers_count_through_compactions_over_the_anthropic_api() {
    token_figure_through_compactions("anthropic");
}

#[test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
fn the_token_figure_is_the_servers_count_through_compactions_over_the_openai_api() {
    token_figure_through_compactions("openai");
}

/// A session started before the server: the agent begins with the configured window
/// and the provider's default model, the server comes up, and by the second turn the
/// window and model are the server's (it used to keep `local` and 200k for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs llama-server; see NEEDS_PEER"]
async fn a_server_started_after_scratchpad_gives_its_window_and_model_by_the_second_turn() {
    use scratchpad::agent::{AgentSettings, AskPolicy};
    use scratchpad::protocol::{AgentEvent, TurnOutcome};
    let port = free_port();
    let settings = AgentSettings {
        max_tokens: 32,
        ..common::agent_settings(AskPolicy::Refuse)
    };
    let mut agent = common::start_openai_agent_at(&format!("http://127.0.0.1:{port}/v1"), "", settings);
    let started = |event: &AgentEvent| matches!(event, AgentEvent::SessionStarted { .. });
    let AgentEvent::SessionStarted { window, model, .. } = common::until(&mut agent.events, started).await else {
        unreachable!("until returns only what it waited for")
    };
    assert_ne!(window.tokens, 2048, "nothing answered yet");
    assert_eq!(model, "local", "the provider's default until a server names one");

    let server = tokio::task::block_in_place(|| server_at(port, 2048));
    let model_file = std::path::Path::new(&peer_env("SCRATCHPAD_LLAMA_MODEL"))
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mut notices = Vec::new();
    for request in ["Say hi.", "Say hi again."] {
        let done = common::turn(&mut agent, request).await;
        assert_eq!(done.outcome, TurnOutcome::Completed, "{:?}", done.errors);
        notices.extend(done.notices);
    }
    let learned = notices
        .iter()
        .find(|n| n.starts_with("the server answers now: its window is 2048 tokens (from the server's /props)"))
        .unwrap_or_else(|| panic!("the window was learned once the server answered: {notices:?}"));
    assert!(
        learned.contains(&format!("{model_file}; the limit is now")),
        "{learned}"
    );
    agent.ops.send(scratchpad::protocol::Op::Quit).unwrap();
    agent.task.await.unwrap();
    drop(server);
}

/// A server that comes up while the first turn waits for it (a late start), in `-p`:
/// the wait is said, its health is polled past `max_attempts`, and once it answers its
/// window applies to that very request, said (it used to be given up on after the few
/// seconds that `max_attempts` take, then learnt one turn late).
#[test]
#[ignore = "needs llama-server; see NEEDS_PEER"]
fn a_request_waits_for_a_server_that_comes_up_meanwhile() {
    let workspace = Workspace::new();
    std::fs::write(
        workspace.home.path().join("config.toml"),
        "[provider]\nmax_tokens = 32\n[provider.retry]\nmax_attempts = 3\nbase_delay_ms = 100\nmax_delay_ms = 400\nstartup_wait_secs = 120\n",
    )
    .unwrap();
    let port = free_port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let mut child = workspace
        .command_at(
            Command::new(env!("CARGO_BIN_EXE_scratchpad")),
            &base_url,
            &["--provider", "openai", "--base-url", &base_url, "-p", "Say hi."],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // What it says, read as it says it.
    let said = Arc::new(Mutex::new(String::new()));
    let reader = {
        let said = said.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut said = said.lock().unwrap();
                said.push_str(&line);
                said.push('\n');
            }
        })
    };
    // Once the wait has begun, the server stays down for longer than three attempts
    // 100–400 ms apart would take: that lateness is the scenario, not a wait for it.
    let started = Instant::now();
    while !said.lock().unwrap().contains("waiting for it to answer") {
        assert!(started.elapsed() < Duration::from_secs(20), "the wait was never said");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1_500));
    let server = server_at(port, 2048);
    let output = child.wait_with_output().unwrap();
    drop(server);
    reader.join().unwrap();
    let stderr = said.lock().unwrap().clone();
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "connection refused at 127.0.0.1:{port} (is the server running?); waiting for it to answer"
        )),
        "the wait is said, naming the server: {stderr}"
    );
    assert!(
        stderr.contains("the server answers now: its window is 2048 tokens"),
        "its window applies to the turn that waited: {stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).trim().is_empty(), "answered");
}

/// Issue 45: six turns on each wire through llama-server at `-c 4096` with `--limit
/// auto` and short replies, each a paste of prose, the history growing past where a
/// background summary starts. One starts between turns and the next turn's request
/// goes at once: on a server whose requests share one cache the summary gives way
/// (they used to collide, the server cut both streams, and the turn failed after
/// 137 s). Every turn completes, and each call's prediction is the server's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs llama-server; see NEEDS_PEER"]
async fn six_turns_beside_background_summaries_complete_on_both_wires() {
    use scratchpad::agent::{AgentSettings, AskPolicy};
    use scratchpad::protocol::{AgentEvent, BackgroundEvent, Op, TurnOutcome};
    let server = tokio::task::block_in_place(|| server(4096));
    let (anthropic, openai) = providers(&server.url);
    let wires: [Arc<dyn Provider>; 2] = [Arc::new(anthropic), Arc::new(openai)];
    for provider in wires {
        let wire = provider.kind();
        let mut settings = AgentSettings {
            max_tokens: 64,
            ..common::agent_settings(AskPolicy::Approve)
        };
        settings.compaction.context_char_limit.auto = true;
        // From half the limit (about 9k chars here), while the newest five messages
        // still leave a swap room: the summary starts after the fourth turn or so.
        settings.compaction.background_at_percent = 50;
        let mut agent = common::start_with(provider, settings);
        let mut calls: Vec<(u64, u64)> = Vec::new();
        let mut started = 0;
        for turn in 0..6 {
            agent
                .ops
                .send(Op::Submit {
                    text: prose_request(turn, 900),
                })
                .unwrap();
            loop {
                // A summary by a 135M model on two cores takes a while; a turn that
                // hangs still fails here.
                let event = tokio::time::timeout(Duration::from_secs(600), agent.events.recv())
                    .await
                    .unwrap_or_else(|_| panic!("{wire}: turn {turn} said nothing for ten minutes"))
                    .expect("the agent runs");
                match event {
                    AgentEvent::ModelCall { point, .. } => {
                        if let (Some(predicted), Some(reported)) = (point.predicted_tokens, point.input_tokens) {
                            calls.push((predicted, reported));
                        }
                    }
                    AgentEvent::Background { event } => {
                        eprintln!("{wire}: turn {turn}: {}", event.line());
                        started += usize::from(matches!(event, BackgroundEvent::Started { .. }));
                    }
                    AgentEvent::Notice { message } => eprintln!("{wire}: turn {turn}: {message}"),
                    AgentEvent::StreamReset { reason, .. } => eprintln!("{wire}: turn {turn}: retry: {reason}"),
                    AgentEvent::TurnDone { outcome, .. } => {
                        assert_eq!(outcome, TurnOutcome::Completed, "{wire}: turn {turn}");
                        break;
                    }
                    _ => {}
                }
            }
        }
        assert!(started >= 1, "{wire}: a background summary started between turns");
        let (mean, max) = prediction_errors(&calls);
        eprintln!(
            "{wire}: six turns, {} calls, {started} background summaries started; prediction error mean {:.1}%, max {:.1}%",
            calls.len(),
            mean * 100.0,
            max * 100.0
        );
        // llama.cpp's Anthropic endpoint leaves a reply's usage out now and then (see
        // `ask_with_usage`): most calls, not all, are measured.
        assert!(calls.len() >= 4, "{wire}: {calls:?}");
        assert!(max <= 0.05, "{wire}: every prediction within 5%: {calls:?}");
        assert!(mean <= 0.02, "{wire}: the mean within 2%: {calls:?}");
        agent.ops.send(Op::Quit).unwrap();
        agent.task.await.unwrap();
    }
}
