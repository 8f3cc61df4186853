//! An in-process stand-in for the Anthropic Messages API on 127.0.0.1: it records every
//! request and answers from a script, streaming real SSE (in chunks, with delays, or
//! cut mid-stream). Summary requests (system prompt of the compaction summariser) are
//! answered automatically so scripts only list the agent's own turns.
#![allow(dead_code)] // each test binary uses part of this

use std::collections::VecDeque;
use std::convert::Infallible;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use scratchpad::message::{ContentBlock, Message};
use serde_json::{Value, json};

#[derive(Clone, Debug)]
pub enum Reply {
    /// A 200 SSE body, sent in `chunk`-byte pieces `delay_ms` apart.
    Sse { body: String, chunk: usize, delay_ms: u64 },
    /// An HTTP error with a JSON body.
    Error {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A 200 SSE body cut after `bytes` bytes (the connection is dropped).
    Cut { body: String, bytes: usize },
    /// The first `bytes` bytes of a 200 SSE body, then silence with the connection
    /// held open (a server that hangs mid-stream; `bytes: 0` hangs after the headers).
    Stall { body: String, bytes: usize },
    /// A 200 SSE body held after the headers until the test opens `gate`: a reply
    /// that is still being written for as long as the test needs, and no longer.
    Held { body: String, gate: Gate },
}

/// What holds a [`Reply::Held`] until the test opens it (once open, it stays open).
#[derive(Clone, Debug)]
pub struct Gate(tokio::sync::watch::Receiver<bool>);

/// The test's side of a [`Gate`].
pub struct GateOpener(tokio::sync::watch::Sender<bool>);

impl GateOpener {
    pub fn open(&self) {
        let _ = self.0.send(true);
    }
}

/// A closed gate and what opens it.
pub fn gate() -> (GateOpener, Gate) {
    let (opener, gate) = tokio::sync::watch::channel(false);
    (GateOpener(opener), Gate(gate))
}

impl Reply {
    pub fn sse(body: String) -> Self {
        Reply::Sse {
            body,
            chunk: usize::MAX,
            delay_ms: 0,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    /// A summary request: the summariser's own system prompt, or the conversation
    /// followed by the request for its summary (what a caching provider is sent).
    pub fn is_summary(&self) -> bool {
        system_text(&self.body).starts_with("You are summarising")
            || self.asks_after_conversation()
            || self.asks_the_server_to_compact()
    }

    /// A count of the fixed part alone: a request of no messages.
    pub fn counts_the_fixed_part(&self) -> bool {
        self.is_count() && self.body["messages"].as_array().is_some_and(Vec::is_empty)
    }

    /// A count, not a model call: a counting endpoint's or `/tokenize`'s.
    pub fn is_count(&self) -> bool {
        self.path.ends_with("count_tokens") || self.path.ends_with("input_tokens") || self.path == "/tokenize"
    }

    /// A request for the server's own compaction (a top-level `compaction`).
    pub fn asks_the_server_to_compact(&self) -> bool {
        self.body.get("compaction").is_some()
    }

    /// A summary asked for at the end of the conversation itself.
    pub fn asks_after_conversation(&self) -> bool {
        last_text(&self.body).starts_with("Stop working on the task. Everything above this message is the conversation")
    }
}

/// The text of the last block of the last message.
fn last_text(body: &Value) -> String {
    let last = &body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null)["content"];
    match last {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.last().and_then(|b| b["text"].as_str()).unwrap_or("").to_string(),
        _ => String::new(),
    }
}

/// The prompt cache as Anthropic keeps it, for a mock that reports cache usage: each
/// request with breakpoints writes the prefix up to its last one, and reads the longest
/// prefix written before that ends within the 20 blocks before it.
#[derive(Default)]
struct PromptCache {
    written: std::collections::HashMap<String, u64>,
}

/// Blocks the lookback of a breakpoint reaches.
const CACHE_LOOKBACK_BLOCKS: usize = 20;

impl PromptCache {
    /// (read, written, total) prompt tokens of `body`, by [`mock_tokens`].
    fn usage(&mut self, body: &Value) -> (u64, u64, u64) {
        let strip = |value: &Value| {
            let mut value = value.clone();
            if let Some(object) = value.as_object_mut() {
                object.remove("cache_control");
            }
            if let Some(items) = value.as_array_mut() {
                for item in items {
                    if let Some(object) = item.as_object_mut() {
                        object.remove("cache_control");
                    }
                }
            }
            value
        };
        let mut blocks: Vec<Value> = vec![
            json!({"system": strip(&body["system"])}),
            json!({"tools": strip(&body["tools"])}),
        ];
        for message in body["messages"].as_array().into_iter().flatten() {
            let role = &message["role"];
            match &message["content"] {
                Value::Array(parts) => {
                    blocks.extend(parts.iter().map(|part| json!({"role": role, "block": strip(part)})));
                }
                text => blocks.push(json!({"role": role, "block": {"type": "text", "text": text}})),
            }
        }
        let tokens = |n: usize| mock_tokens(&json!({"messages": blocks[..n].to_vec()}));
        let key = |n: usize| serde_json::to_string(&blocks[..n]).unwrap();
        let total = tokens(blocks.len());
        let read = (blocks.len().saturating_sub(CACHE_LOOKBACK_BLOCKS)..=blocks.len())
            .rev()
            .find_map(|n| self.written.get(&key(n)).copied())
            .unwrap_or(0);
        self.written.insert(key(blocks.len()), total);
        (read, total - read, total)
    }
}

/// The system prompt a request carried, as one text (blocks joined).
pub fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// Anthropic's cache diagnostics as the server keeps them: a fingerprint of each
/// request that asked (`diagnostics`), by the id of its response; a later request
/// naming that id is told where it first diverged.
#[derive(Default)]
struct CacheDiagnostics {
    fingerprints: std::collections::HashMap<String, Fingerprint>,
    answered: usize,
    /// `diagnostics` objects to answer with instead, in order (a pending `null`, say).
    scripted: VecDeque<Value>,
}

#[derive(Clone)]
struct Fingerprint {
    model: Value,
    system: Value,
    tools: Value,
    messages: Vec<Value>,
}

impl CacheDiagnostics {
    /// The id of the response to `body`, and the `diagnostics` it carries (`None`:
    /// the request did not ask, or nothing diverged).
    fn answer(&mut self, body: &Value) -> (String, Option<Value>) {
        self.answered += 1;
        let id = format!("msg_mock_{}", self.answered);
        let Some(asked) = body.get("diagnostics") else {
            return (id, None);
        };
        let block_of = |message: &Value| {
            let mut message = without_cache_control(message);
            if let Some(text) = message["content"].as_str().map(str::to_string) {
                message["content"] = json!([{"type": "text", "text": text}]);
            }
            message
        };
        let print = Fingerprint {
            model: body["model"].clone(),
            system: without_cache_control(&body["system"]),
            tools: without_cache_control(&body["tools"]),
            messages: body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(block_of)
                .collect(),
        };
        let before = asked["previous_message_id"]
            .as_str()
            .map(|previous| self.fingerprints.get(previous).cloned());
        self.fingerprints.insert(id.clone(), print.clone());
        if let Some(scripted) = self.scripted.pop_front() {
            return (id, Some(scripted));
        }
        let Some(before) = before else {
            return (id, None);
        };
        let Some(before) = before else {
            return (
                id,
                Some(json!({"cache_miss_reason": {"type": "previous_message_not_found"}})),
            );
        };
        let changed = |kind: &str, from: usize| {
            let rest = json!({"messages": print.messages[from.min(print.messages.len())..].to_vec()});
            json!({"cache_miss_reason": {"type": kind, "cache_missed_input_tokens": mock_tokens(&rest)}})
        };
        let diverged = if before.model != print.model {
            Some(changed("model_changed", 0))
        } else if before.system != print.system {
            Some(changed("system_changed", 0))
        } else if before.tools != print.tools {
            Some(changed("tools_changed", 0))
        } else {
            (0..before.messages.len())
                .find(|&at| print.messages.get(at) != Some(&before.messages[at]))
                .map(|at| changed("messages_changed", at))
        };
        (id, diverged)
    }
}

#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// What `GET /props` answers, as llama.cpp's server does; 404 when `None`.
    props: Option<Value>,
    /// `GET /props` answers 503 (llama-server loading its model) while set.
    loading: bool,
    /// `GET /health` polls answered "loading".
    polled_loading: usize,
    /// Counting endpoints answer 500 while set.
    counts_fail: bool,
    /// Replies to summary requests, in order; once used up, a fixed summary.
    summary_replies: VecDeque<Reply>,
    /// A window in tokens, by [`mock_tokens`]: a turn request over it is refused as
    /// llama.cpp refuses it, with the count and the window.
    window: Option<u64>,
    /// Report the prompt cache's use as Anthropic does, instead of fixed figures.
    cache: Option<PromptCache>,
    /// Answer cache diagnostics as Anthropic does.
    diagnostics: Option<CacheDiagnostics>,
    /// What `GET /v1/models/{id}` answers (Anthropic's Models API); 404 when `None`.
    model_info: Option<Value>,
    /// The server's compaction, as Anthropic's: the blocks it wrote (to check the ones
    /// sent back), and scripted answers to the next requests to compact.
    compaction: ServerCompaction,
}

#[derive(Default)]
struct ServerCompaction {
    written: Vec<Value>,
    scripted: VecDeque<Reply>,
}

/// The beta the server's compaction needs, on the request that asks for it and on
/// every request whose history starts with its block.
const COMPACTION_BETA: &str = "compact-2026-09-04";

fn compaction_error(status: u16, code: &str, message: &str) -> Reply {
    error_reply(
        status,
        json!({"type": "error", "error": {"type": code, "message": message}}),
    )
}

/// The server's compaction refusing with `code`, as the API does.
pub fn compaction_reply_error(status: u16, code: &str) -> Reply {
    compaction_error(status, code, &format!("mock: {code}"))
}

impl ServerCompaction {
    /// What the server says of a request's compaction blocks: `None` when they are in
    /// order (only first, each one it wrote, unchanged, with the beta).
    fn check(&self, body: &Value, beta: &str) -> Option<Reply> {
        let messages = body["messages"].as_array()?;
        for (at, message) in messages.iter().enumerate() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] != "compaction" {
                    continue;
                }
                if at != 0 {
                    return Some(compaction_error(
                        400,
                        "compaction_block_misplaced",
                        "a compaction block must come first",
                    ));
                }
                if !beta.split(',').any(|b| b == COMPACTION_BETA) {
                    return Some(compaction_error(
                        400,
                        "invalid_request_error",
                        "compaction blocks need the compact beta",
                    ));
                }
                if !self.written.contains(&without_cache_control(block)) {
                    return Some(compaction_error(
                        400,
                        "compaction_signature_invalid",
                        "the block was not written by this server as it is",
                    ));
                }
            }
        }
        None
    }

    /// The answer to a request to compact: scripted, else a block of its own.
    fn answer(&mut self, body: &Value) -> Reply {
        if let Some(reply) = self.scripted.pop_front() {
            return reply;
        }
        let count = body["messages"].as_array().map_or(0, Vec::len);
        let block = json!({
            "type": "compaction",
            "content": format!("Server summary of {count} messages: the scripted task, worked through."),
            "signature": format!("sig-compaction-{}", self.written.len() + 1),
        });
        self.written.push(block.clone());
        Reply::sse(sse_compaction(&block))
    }
}

/// A stream answering a request to compact: the block whole in `content_block_start`,
/// `stop_reason: compaction`, the cost in `usage.iterations`.
pub fn sse_compaction(block: &Value) -> String {
    let mut out = event(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_mock","type":"message","role":"assistant","content":[],
            "model":"mock","stop_reason":null,"usage":{"input_tokens":0,"output_tokens":0}}}),
    );
    out += &event(
        "content_block_start",
        json!({"type":"content_block_start","index":0,"content_block":block}),
    );
    out += &event("content_block_stop", json!({"type":"content_block_stop","index":0}));
    out += &event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":"compaction"},
            "usage":{"output_tokens":0,"iterations":[{"input_tokens":5000,"output_tokens":400}]}}),
    );
    out += &event("message_stop", json!({"type":"message_stop"}));
    out
}

#[derive(Clone)]
pub struct MockApi {
    pub url: String,
    script: Arc<Mutex<Script>>,
}

impl MockApi {
    /// Start on the current tokio runtime.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::start_with_props(replies, None).await
    }

    /// Start a mock that also answers llama.cpp's `GET /props` with `props`.
    pub async fn start_with_props(replies: Vec<Reply>, props: Option<Value>) -> Self {
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            props,
            ..Script::default()
        }));
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .route("/v1/chat/completions/input_tokens", post(input_tokens))
            .route("/tokenize", post(tokenize))
            .route("/v1/chat/completions", post(chat_completions))
            .route("/props", axum::routing::get(llama_props))
            .route("/health", axum::routing::get(llama_health))
            .route("/v1/models/{id}", axum::routing::get(model_info))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        MockApi { url, script }
    }

    /// From now on, report cache reads and writes as Anthropic's prompt cache would.
    pub fn emulate_prompt_cache(&self) {
        self.script.lock().unwrap().cache = Some(PromptCache::default());
    }

    /// Answer the next requests to compact with `replies` (an error code, an empty
    /// block) before the server's own blocks.
    pub fn script_compactions(&self, replies: Vec<Reply>) {
        self.script.lock().unwrap().compaction.scripted.extend(replies);
    }

    /// Answer Anthropic's Models API (`GET /v1/models/{id}`) with `info` for the
    /// model asked about.
    pub fn state_model_info(&self, info: Value) {
        self.script.lock().unwrap().model_info = Some(info);
    }

    /// From now on, answer cache diagnostics as Anthropic does: a request with
    /// `diagnostics` (and the beta header) gets a response id and, when it names an
    /// earlier one, where it first diverged.
    pub fn emulate_cache_diagnostics(&self) {
        self.script.lock().unwrap().diagnostics = Some(CacheDiagnostics::default());
    }

    /// Answer the next requests that ask for cache diagnostics with these
    /// `diagnostics` objects instead of comparing (a pending `{"cache_miss_reason":
    /// null}`, say).
    pub fn script_cache_diagnostics(&self, answers: Vec<Value>) {
        let mut script = self.script.lock().unwrap();
        script
            .diagnostics
            .get_or_insert_with(CacheDiagnostics::default)
            .scripted
            .extend(answers);
    }

    /// Answer counting requests with a server error while `failing`.
    pub fn fail_counts(&self, failing: bool) {
        self.script.lock().unwrap().counts_fail = failing;
    }

    /// Answer `GET /props` with 503, as llama-server does while it loads its model,
    /// until told otherwise.
    /// How many `GET /health` polls were answered "loading".
    pub fn polled_loading(&self) -> usize {
        self.script.lock().unwrap().polled_loading
    }

    pub fn set_loading(&self, loading: bool) {
        self.script.lock().unwrap().loading = loading;
    }

    /// Start a mock with a window of `window` tokens, counted by [`mock_tokens`], on a
    /// runtime of its own thread: turn requests over it are refused as llama.cpp does.
    pub fn start_with_window_in_thread(replies: Vec<Reply>, window: u64) -> Self {
        let api = Self::start_in_thread(replies);
        api.script.lock().unwrap().window = Some(window);
        api
    }

    /// A llama-server of `n_ctx` tokens on a runtime of its own thread: `/props` states
    /// the window, and a turn request over it is refused as llama.cpp refuses it.
    pub fn start_llama_in_thread(replies: Vec<Reply>, n_ctx: u64) -> Self {
        let props = json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1});
        let api = on_own_runtime(move || MockApi::start_with_props(replies, Some(props)));
        api.script.lock().unwrap().window = Some(n_ctx);
        api
    }

    /// Start on a runtime of its own thread, for tests that drive the binary.
    pub fn start_in_thread(replies: Vec<Reply>) -> Self {
        on_own_runtime(move || MockApi::start(replies))
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.script.lock().unwrap().requests.clone()
    }

    /// The agent's own model calls, without summary requests or counts.
    pub fn turn_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_summary() && !r.is_count())
            .collect()
    }

    /// The counts asked of the server (counting endpoints and `/tokenize`).
    pub fn counts(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(Recorded::is_count).collect()
    }

    /// Answer the next summary requests with `replies` (refusals, say) before the
    /// fixed summary.
    pub fn script_summaries(&self, replies: Vec<Reply>) {
        self.script.lock().unwrap().summary_replies.extend(replies);
    }

    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap().replies.len()
    }
}

/// Run `start` on a runtime of its own thread, which then keeps serving whatever it
/// spawned (a mock or a proxy) while the test drives a binary synchronously.
pub fn on_own_runtime<T, F>(start: impl FnOnce() -> F + Send + 'static) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T>,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_stack_size(scratchpad::json::WORKER_STACK_BYTES)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            tx.send(start().await).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().expect("started on its own runtime")
}

async fn messages(State(script): State<Arc<Mutex<Script>>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = scratchpad::json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = Recorded {
        path: "/v1/messages".into(),
        headers,
        body,
    };
    let summary = recorded.is_summary();
    let tokens = mock_tokens(&recorded.body);
    let beta = recorded
        .headers
        .get("anthropic-beta")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_string();
    if recorded.body.get("diagnostics").is_some() && !beta.split(',').any(|b| b == "cache-diagnosis-2026-04-07") {
        return respond(error_reply(
            400,
            json!({"type":"error","error":{"type":"invalid_request_error","message":"diagnostics: requires the cache-diagnosis beta"}}),
        ));
    }
    if recorded.asks_the_server_to_compact() && !beta.split(',').any(|b| b == COMPACTION_BETA) {
        return respond(compaction_error(
            400,
            "invalid_request_error",
            "compaction needs the compact beta",
        ));
    }
    let (reply, cached, diagnosed) = {
        let mut script = script.lock().unwrap();
        if let Some(refused) = script.compaction.check(&recorded.body, &beta) {
            script.requests.push(recorded);
            return respond(refused);
        }
        if recorded.asks_the_server_to_compact() {
            let reply = script.compaction.answer(&recorded.body);
            script.requests.push(recorded);
            return respond(reply);
        }
        let cached = script.cache.as_mut().map(|cache| cache.usage(&recorded.body));
        let diagnosed = script
            .diagnostics
            .as_mut()
            .map(|diagnostics| diagnostics.answer(&recorded.body));
        script.requests.push(recorded);
        if let Some(window) = script.window.filter(|&window| !summary && tokens > window) {
            return respond(llama_too_long(tokens, window));
        }
        let reply = if summary {
            Some(
                script
                    .summary_replies
                    .pop_front()
                    .unwrap_or_else(|| Reply::sse(sse_text("Goal: the scripted task. Summary from the mock API."))),
            )
        } else {
            script.replies.pop_front()
        };
        (reply, cached, diagnosed)
    };
    // The response's own id, and the diagnostics where the request asked.
    let reply = match (reply, diagnosed) {
        (Some(Reply::Sse { body, chunk, delay_ms }), Some((id, diagnostics))) => {
            let diagnostics = diagnostics
                .map(|diagnostics| format!(r#","diagnostics":{diagnostics}"#))
                .unwrap_or_default();
            Some(Reply::Sse {
                body: body.replacen(r#""id":"msg_mock""#, &format!(r#""id":"{id}"{diagnostics}"#), 1),
                chunk,
                delay_ms,
            })
        }
        (reply, _) => reply,
    };
    // The cache's use in place of the fixed figures every scripted reply carries.
    let reply = match (reply, cached) {
        (Some(Reply::Sse { body, chunk, delay_ms }), Some((read, written, _))) => Some(Reply::Sse {
            body: body.replace(
                SCRIPTED_USAGE,
                &format!(
                    r#""usage":{{"input_tokens":0,"cache_creation_input_tokens":{written},"cache_read_input_tokens":{read},"output_tokens":1}}"#
                ),
            ),
            chunk,
            delay_ms,
        }),
        (reply, _) => reply,
    };
    match reply {
        Some(reply) => respond(reply),
        None => respond(Reply::Error {
            status: 500,
            headers: vec![],
            body: json!({"type":"error","error":{"type":"api_error","message":"mock: no scripted reply left"}})
                .to_string(),
        }),
    }
}

/// The OpenAI-compatible endpoint shares the script: replies made with
/// [`openai_reply`] speak its wire format.
async fn chat_completions(State(script): State<Arc<Mutex<Script>>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = scratchpad::json::from_slice(&body).unwrap_or(Value::Null);
    let reply = {
        let mut script = script.lock().unwrap();
        script.requests.push(Recorded {
            path: "/v1/chat/completions".into(),
            headers,
            body,
        });
        script.replies.pop_front()
    };
    respond(reply.unwrap_or(Reply::Error {
        status: 500,
        headers: vec![],
        body: json!({"error":{"message":"mock: no scripted reply left"}}).to_string(),
    }))
}

/// A streamed chat completion in the OpenAI wire format: text deltas, tool calls with
/// their arguments in two pieces, the finish reason, usage, `[DONE]`.
pub fn openai_response_body(text: &str, calls: &[(&str, &str, Value)]) -> String {
    openai_body(text, calls, None)
}

/// A chat completion that stopped at its length limit (`finish_reason: length`) in
/// the middle of a last call (`id`, `name`, the arguments that arrived).
pub fn openai_cut_off_reply(text: &str, calls: &[(&str, &str, Value)], cut: (&str, &str, &str)) -> Reply {
    Reply::sse(openai_body(text, calls, Some(cut)))
}

fn openai_body(text: &str, calls: &[(&str, &str, Value)], cut: Option<(&str, &str, &str)>) -> String {
    let chunk = |value: Value| format!("data: {value}\n\n");
    let mut out = String::new();
    for piece in text.split_inclusive(' ') {
        out += &chunk(json!({"choices":[{"index":0,"delta":{"content":piece}}]}));
    }
    for (index, (id, name, input)) in calls.iter().enumerate() {
        let arguments = input.to_string();
        let middle = arguments.len() / 2;
        out += &chunk(json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":index,"id":id,"type":"function","function":{"name":name,"arguments":&arguments[..middle]}}]}}]}));
        out += &chunk(json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":index,"function":{"arguments":&arguments[middle..]}}]}}]}));
    }
    if let Some((id, name, partial)) = cut {
        out += &chunk(json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":calls.len(),"id":id,"type":"function","function":{"name":name,"arguments":partial}}]}}]}));
    }
    let finish = match (cut, calls.is_empty()) {
        (Some(_), _) => "length",
        (None, true) => "stop",
        (None, false) => "tool_calls",
    };
    out += &chunk(json!({"choices":[{"index":0,"delta":{},"finish_reason":finish}]}));
    out += &chunk(json!({"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":12,"total_tokens":912}}));
    out + "data: [DONE]\n\n"
}

pub fn openai_reply(text: &str, calls: &[(&str, &str, Value)]) -> Reply {
    Reply::sse(openai_response_body(text, calls))
}

async fn model_info(
    State(script): State<Arc<Mutex<Script>>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let info = script.lock().unwrap().model_info.clone();
    match info {
        Some(mut info) => {
            info["id"] = json!(id);
            axum::response::IntoResponse::into_response(axum::Json(info))
        }
        None => axum::response::IntoResponse::into_response(StatusCode::NOT_FOUND),
    }
}

/// llama-server's `/health`: 503 while it loads its model, else 200.
async fn llama_health(State(script): State<Arc<Mutex<Script>>>) -> Response {
    let loading = {
        let mut script = script.lock().unwrap();
        script.polled_loading += usize::from(script.loading);
        script.loading
    };
    let (status, body) = if loading {
        (503, r#"{"error":{"code":503,"message":"Loading model"}}"#)
    } else {
        (200, r#"{"status":"ok"}"#)
    };
    Response::builder().status(status).body(Body::from(body)).unwrap()
}

async fn llama_props(State(script): State<Arc<Mutex<Script>>>) -> Response {
    let script = script.lock().unwrap();
    if script.loading {
        return Response::builder()
            .status(503)
            .body(Body::from(r#"{"error":{"code":503,"message":"Loading model"}}"#))
            .unwrap();
    }
    match script.props.clone() {
        Some(props) => Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(props.to_string()))
            .unwrap(),
        None => Response::builder().status(404).body(Body::empty()).unwrap(),
    }
}

async fn count_tokens(State(script): State<Arc<Mutex<Script>>>, headers: HeaderMap, body: Bytes) -> Response {
    counted(&script, "/v1/messages/count_tokens", headers, &body, json!({}))
}

/// llama.cpp's `/tokenize` (a llama-server mock only): the tokens of `content` by
/// [`mock_tokens`], recorded.
async fn tokenize(State(script): State<Arc<Mutex<Script>>>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = scratchpad::json::from_slice(&body).unwrap_or(Value::Null);
    let mut script = script.lock().unwrap();
    if script.props.is_none() {
        return Response::builder().status(404).body(Body::empty()).unwrap();
    }
    let tokens = mock_tokens(&json!({"messages": [body["content"].clone()]}));
    script.requests.push(Recorded {
        path: "/tokenize".into(),
        headers,
        body,
    });
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(json!({"tokens": vec![0; tokens as usize]}).to_string()))
        .unwrap()
}

/// llama.cpp's OpenAI-shaped counting endpoint.
async fn input_tokens(State(script): State<Arc<Mutex<Script>>>, headers: HeaderMap, body: Bytes) -> Response {
    let object = json!({"object": "response.input_tokens"});
    counted(&script, "/v1/chat/completions/input_tokens", headers, &body, object)
}

/// Record a counting request and answer `input_tokens`, with `extra` fields: as a
/// llama-server mock (one that answers `/props`) by [`mock_tokens`], as its turn
/// requests are measured, else the body's length over 4.
fn counted(script: &Mutex<Script>, path: &str, headers: HeaderMap, body: &[u8], mut extra: Value) -> Response {
    let body: Value = scratchpad::json::from_slice(body).unwrap_or(Value::Null);
    let mut script = script.lock().unwrap();
    extra["input_tokens"] = if script.props.is_some() {
        json!(mock_tokens(&body))
    } else {
        json!(body.to_string().len() / 4)
    };
    script.requests.push(Recorded {
        path: path.into(),
        headers,
        body,
    });
    if script.counts_fail {
        return respond(error_reply(500, json!({"error": {"message": "the counter broke"}})));
    }
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(extra.to_string()))
        .unwrap()
}

fn respond(reply: Reply) -> Response {
    match reply {
        Reply::Error { status, headers, body } => {
            let mut response = Response::builder().status(StatusCode::from_u16(status).unwrap());
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap()
        }
        Reply::Sse { body, chunk, delay_ms } => {
            let pieces: Vec<Bytes> = body
                .into_bytes()
                .chunks(chunk.max(1))
                .map(Bytes::copy_from_slice)
                .collect();
            let stream = futures::stream::unfold((pieces.into_iter(), true), move |(mut rest, first)| async move {
                let next = rest.next()?;
                if !first && delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                }
                Some((Ok::<_, Infallible>(next), (rest, false)))
            });
            sse_response(Body::from_stream(stream))
        }
        Reply::Cut { body, bytes } => {
            let head = Bytes::copy_from_slice(&body.as_bytes()[..bytes.min(body.len())]);
            // Let the head reach the client before the connection dies.
            let cut = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "cut by the mock",
                ))
            };
            let stream = futures::stream::once(async { Ok(head) }).chain(futures::stream::once(cut));
            sse_response(Body::from_stream(stream))
        }
        Reply::Stall { body, bytes } => stall(body, bytes),
        Reply::Held { body, gate } => {
            let Gate(mut gate) = gate;
            let held = async move {
                // A dropped opener lets the reply go: nothing is left to wait for.
                let _ = gate.wait_for(|open| *open).await;
                Ok::<_, Infallible>(Bytes::from(body))
            };
            sse_response(Body::from_stream(futures::stream::once(held)))
        }
    }
}

fn stall(body: String, bytes: usize) -> Response {
    let head = Bytes::copy_from_slice(&body.as_bytes()[..bytes.min(body.len())]);
    let stream = futures::stream::once(async { Ok::<_, Infallible>(head) }).chain(futures::stream::pending());
    sse_response(Body::from_stream(stream))
}

fn sse_response(body: Body) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap()
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A complete streamed response in the real event order: text, then tool calls.
pub fn sse_response_body(text: &str, calls: &[(&str, &str, Value)]) -> String {
    sse_body(text, calls, None)
}

/// A response that reached `max_tokens` in the middle of a last call (`id`, `name`,
/// the input JSON that arrived), after complete `calls`.
pub fn sse_cut_off_reply(text: &str, calls: &[(&str, &str, Value)], cut: (&str, &str, &str)) -> Reply {
    Reply::sse(sse_body(text, calls, Some(cut)))
}

/// The usage every scripted reply reports, as it appears in its body.
const SCRIPTED_USAGE: &str =
    r#""usage":{"input_tokens":1200,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"output_tokens":1}"#;

fn sse_body(text: &str, calls: &[(&str, &str, Value)], cut: Option<(&str, &str, &str)>) -> String {
    let mut out = event(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_mock","type":"message","role":"assistant","content":[],
            "model":"mock","stop_reason":null,"stop_sequence":null,
            "usage":{"input_tokens":1200,"cache_creation_input_tokens":0,"cache_read_input_tokens":300,"output_tokens":1}}}),
    );
    debug_assert!(out.contains(SCRIPTED_USAGE));
    let mut index = 0;
    if !text.is_empty() {
        out += &event(
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        );
        out += &event("ping", json!({"type":"ping"}));
        for piece in text.split_inclusive(' ') {
            out += &event(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":piece}}),
            );
        }
        out += &event("content_block_stop", json!({"type":"content_block_stop","index":0}));
        index = 1;
    }
    for (id, name, input) in calls {
        out += &event(
            "content_block_start",
            json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
        );
        let json = input.to_string();
        let middle = json.len() / 2;
        let middle = (0..=middle).rev().find(|&i| json.is_char_boundary(i)).unwrap_or(0);
        for part in [&json[..middle], &json[middle..]] {
            out += &event(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":part}}),
            );
        }
        out += &event("content_block_stop", json!({"type":"content_block_stop","index":index}));
        index += 1;
    }
    if let Some((id, name, partial)) = cut {
        out += &event(
            "content_block_start",
            json!({"type":"content_block_start","index":index,"content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
        );
        out += &event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":index,"delta":{"type":"input_json_delta","partial_json":partial}}),
        );
        out += &event("content_block_stop", json!({"type":"content_block_stop","index":index}));
    }
    let stop = match (cut, calls.is_empty()) {
        (Some(_), _) => "max_tokens",
        (None, true) => "end_turn",
        (None, false) => "tool_use",
    };
    out += &event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},"usage":{"output_tokens":42}}),
    );
    out += &event("message_stop", json!({"type":"message_stop"}));
    out
}

/// A reply that thinks first, as Anthropic streams it: a thinking block (its text in
/// deltas, then its signature), then `text` and `calls`; the usage reports
/// `thinking_tokens` of the output as spent thinking.
pub fn thinking_reply(
    thinking: &str,
    signature: &str,
    thinking_tokens: u64,
    text: &str,
    calls: &[(&str, &str, Value)],
) -> Reply {
    // The reply's own blocks move one place on (the highest first, so none is moved
    // twice); its usage says what was thinking.
    let rest = (0..=calls.len())
        .rev()
        .fold(sse_body(text, calls, None), |body, at| {
            body.replace(&format!(r#""index":{at}"#), &format!(r#""index":{}"#, at + 1))
        })
        .replace(
            r#""usage":{"output_tokens":42}"#,
            &format!(
                r#""usage":{{"output_tokens":42,"output_tokens_details":{{"thinking_tokens":{thinking_tokens}}}}}"#
            ),
        );
    let (start, blocks) = rest.split_at(rest.find("event: content_block_start").unwrap_or(rest.len()));
    let mut out = start.to_string();
    out += &event(
        "content_block_start",
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
    );
    for piece in thinking.split_inclusive(' ') {
        out += &event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":piece}}),
        );
    }
    out += &event(
        "content_block_delta",
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":signature}}),
    );
    out += &event("content_block_stop", json!({"type":"content_block_stop","index":0}));
    out += blocks;
    Reply::sse(out)
}

pub fn sse_text(text: &str) -> String {
    sse_response_body(text, &[])
}

pub fn text_reply(text: &str) -> Reply {
    Reply::sse(sse_text(text))
}

/// `steps` replies whose own text nearly fills a 4,000-char limit, each with a call
/// (`echo ok`): every step needs a summary, and none holds for the next step.
pub fn replies_that_fill_the_context(steps: usize) -> Vec<Reply> {
    let filler = "The parser keeps the cursor one step ahead of the token it pushes. ".repeat(40);
    (0..steps)
        .map(|n| {
            let id = format!("toolu_{n:02}");
            tool_reply(
                &format!("{filler} Step {n}."),
                &[(id.as_str(), "bash", serde_json::json!({"command": "echo ok"}))],
            )
        })
        .collect()
}

pub fn tool_reply(text: &str, calls: &[(&str, &str, Value)]) -> Reply {
    Reply::sse(sse_response_body(text, calls))
}

pub fn error_reply(status: u16, body: Value) -> Reply {
    Reply::Error {
        status,
        headers: vec![],
        body: body.to_string(),
    }
}

/// The mock's tokenizer, unlike scratchpad's units and like a real one in what
/// matters here (SmolLM2's, the real peer's): a word is one token however long, each
/// digit and each symbol one, and so is a space before a digit or a symbol. It counts
/// the system prompt, the tools and the messages of a request body.
pub fn mock_tokens(body: &Value) -> u64 {
    fn strings(value: &Value, out: &mut u64) {
        match value {
            Value::String(text) => {
                let mut in_word = false;
                let mut after_space = false;
                for c in text.chars() {
                    if c.is_alphabetic() {
                        if !in_word {
                            *out += 1;
                        }
                        in_word = true;
                    } else {
                        in_word = false;
                        if !c.is_whitespace() {
                            *out += 1 + u64::from(after_space);
                        }
                    }
                    after_space = c == ' ';
                }
            }
            Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
            Value::Object(fields) => fields.values().for_each(|field| strings(field, out)),
            _ => {}
        }
    }
    let mut tokens = 0;
    for part in ["system", "tools", "messages"] {
        strings(&body[part], &mut tokens);
    }
    tokens
}

/// llama.cpp's refusal of a prompt over its window, with the counts it gives.
pub fn llama_too_long(prompt_tokens: u64, window: u64) -> Reply {
    error_reply(
        400,
        json!({"error":{"code":400,"type":"exceed_context_size_error","n_prompt_tokens":prompt_tokens,"n_ctx":window,
            "message":format!("request ({prompt_tokens} tokens) exceeds the available context size ({window} tokens), try increasing it")}}),
    )
}

pub fn prompt_too_long() -> Reply {
    error_reply(
        400,
        json!({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 219898 tokens > 200000 maximum"}}),
    )
}

/// A workspace for the offline demo's survey: six notes files to read.
pub fn demo_workspace() -> tempfile::TempDir {
    let workspace = tempfile::tempdir().unwrap();
    for i in 0..6 {
        std::fs::write(
            workspace.path().join(format!("notes{i}.md")),
            format!("# Notes {i}\n").repeat(200),
        )
        .unwrap();
    }
    workspace
}

/// The scripted report session of the background-summary tests and benchmark: answers
/// of about 450 characters, requests of about 270, a 12k limit (crossed about every 15
/// turns when summarised in the foreground).
pub fn report_answers(turns: usize) -> Vec<Reply> {
    (0..turns)
        .map(|turn| text_reply(&format!("Answer {turn}: {}", "the report grows. ".repeat(24))))
        .collect()
}

/// A summary reply of the report session that takes about `millis` to stream.
pub fn slow_summary(millis: u64) -> Reply {
    let body = sse_text("Goal: write the report. Done: every earlier request was answered in full.");
    let chunks = 10u64;
    Reply::Sse {
        chunk: body.len().div_ceil(chunks as usize),
        body,
        delay_ms: millis / chunks,
    }
}

/// [`slow_summary`]'s reply, held until `gate` opens.
pub fn held_summary(gate: &Gate) -> Reply {
    Reply::Held {
        body: sse_text("Goal: write the report. Done: every earlier request was answered in full."),
        gate: gate.clone(),
    }
}

/// The request of turn `turn` of the report session.
pub fn report_request(turn: usize) -> String {
    format!("Request {turn}: {}", "add a section on the findings. ".repeat(8))
}

/// Settings of the report session: the 12k limit, asking as `ask` says.
pub fn report_settings(ask: scratchpad::agent::AskPolicy) -> scratchpad::agent::AgentSettings {
    let mut settings = agent_settings(ask);
    settings.compaction.context_char_limit.chars = 12_000;
    settings
}

/// The real binary on the offline demo model in `workspace`, its data and config in
/// `home`, with `args`; the run must succeed.
pub fn demo_run(workspace: &Path, home: &Path, args: &[&str]) -> Output {
    settle_config(home);
    let output = Command::new(env!("CARGO_BIN_EXE_scratchpad"))
        .args(["-C", workspace.to_str().unwrap(), "--provider", "demo"])
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("SCRATCHPAD_LOG", home.join("log.txt"))
        .env("SCRATCHPAD_DEMO_DELAY_MS", "0")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// The configuration every test of the agent runs with: the sandbox off, so that it
/// behaves the same on every kernel (where a layer is missing, commands would be
/// questions). The sandbox's own tests use [`Workspace::sandboxed`]; those that need
/// every layer are ignored by default ("needs every sandbox layer"): `.ci/run` runs
/// them, where every layer is there.
pub const TEST_CONFIG: &str = "[tools.sandbox]\nmode = \"off\"\n";

/// [`TEST_CONFIG`] for a tool box made in the test's process.
pub fn tools_config() -> scratchpad::tools::ToolsConfig {
    let mut config = scratchpad::tools::ToolsConfig::default();
    config.sandbox.mode = scratchpad::tools::sandbox::SandboxMode::Off;
    config
}

/// Give a run with `XDG_CONFIG_HOME=home` [`TEST_CONFIG`], unless the test wrote a
/// configuration there itself.
pub fn settle_config(home: &Path) {
    let path = home.join("scratchpad/config.toml");
    if !path.exists() {
        std::fs::create_dir_all(home.join("scratchpad")).unwrap();
        std::fs::write(path, TEST_CONFIG).unwrap();
    }
}

/// A workspace and a home folder for one run of the real binary against the mock API.
pub struct Workspace {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
    /// The API key the binary gets (tests of secrecy use a unique one).
    pub key: String,
}

impl Workspace {
    /// With [`TEST_CONFIG`]: the sandbox off.
    pub fn new() -> Self {
        let workspace = Workspace::sandboxed();
        let path = workspace.home.path().join("config.toml");
        let mut config = std::fs::read_to_string(&path).unwrap();
        config.push_str(TEST_CONFIG);
        std::fs::write(path, config).unwrap();
        workspace
    }

    /// With the sandbox as a user has it by default: for the sandbox's own tests.
    pub fn sandboxed() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..8 {
            let body: String = (0..40)
                .map(|line| format!("// file {i} line {line}: some source text\n"))
                .collect();
            std::fs::write(dir.path().join(format!("f{i}.rs")), body).unwrap();
        }
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[provider.retry]\nmax_attempts = 3\nbase_delay_ms = 10\nmax_delay_ms = 20\nstartup_wait_secs = 1\n",
        )
        .unwrap();
        Workspace {
            dir,
            home,
            key: "sk-test".into(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn command(&self, api: &MockApi, args: &[&str]) -> Command {
        self.command_through(Command::new(env!("CARGO_BIN_EXE_scratchpad")), api, args)
    }

    /// The binary's arguments and environment on `command`, which may be a wrapper
    /// that then runs the binary.
    pub fn command_through(&self, command: Command, api: &MockApi, args: &[&str]) -> Command {
        self.command_at(command, &api.url, args)
    }

    /// The binary's arguments and environment on `command`, talking to `base_url`.
    pub fn command_at(&self, mut command: Command, base_url: &str, args: &[&str]) -> Command {
        command
            .args(["-C", self.path().to_str().unwrap()])
            .args(["--config", self.home.path().join("config.toml").to_str().unwrap()])
            .args(args)
            .env("ANTHROPIC_API_KEY", &self.key)
            .env("ANTHROPIC_BASE_URL", base_url)
            .env("SCRATCHPAD_LOG", self.home.path().join("log.txt"))
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path())
            .env("XDG_DATA_HOME", self.home.path().join("data"))
            .env_remove("MODEL_ID")
            .stdin(Stdio::null());
        command
    }

    /// Where the binary keeps this workspace's session journals.
    pub fn sessions_dir(&self) -> std::path::PathBuf {
        scratchpad::session::sessions_dir_under(&self.home.path().join("data/scratchpad"), self.path())
    }

    /// The newest session journal of this workspace.
    pub fn newest_journal(&self) -> Option<std::path::PathBuf> {
        scratchpad::session::find_in(&self.sessions_dir(), None).ok()
    }

    pub fn run(&self, api: &MockApi, args: &[&str]) -> Output {
        self.command(api, args).output().expect("run the binary")
    }

    /// An earlier session (`20260101-000000-1`) of `turns` question-and-answer turns of
    /// about `chars` characters each, for `--continue`; its journal's path.
    pub fn earlier_session(&self, turns: usize, chars: usize) -> std::path::PathBuf {
        use scratchpad::session::Record;
        let dir = self.sessions_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let mut history = scratchpad::history::History::new();
        for turn in 0..turns {
            history = history
                .request(format!("question {turn}: {}", "q".repeat(chars)))
                .answer(format!("answer {turn}: {}", "a".repeat(chars)));
        }
        let mut text = String::new();
        for message in history.build() {
            text.push_str(&serde_json::to_string(&Record::Append { message }).unwrap());
            text.push('\n');
        }
        let path = dir.join("20260101-000000-1.jsonl");
        std::fs::write(&path, text).unwrap();
        path
    }
}

pub fn messages_of(request: &Recorded) -> Vec<Message> {
    let mut body = request.body["messages"].clone();
    // The cache breakpoint is ours, added at send time; strip it to read the history.
    if let Some(last) = body.as_array_mut().and_then(|m| m.last_mut())
        && let Some(blocks) = last["content"].as_array_mut()
    {
        for block in blocks {
            if let Some(map) = block.as_object_mut() {
                map.remove("cache_control");
            }
        }
    }
    serde_json::from_value(body).expect("request messages parse")
}

pub fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON event a line"))
        .collect()
}

pub fn tool_results(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| m.block_slice())
        .filter_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(content.full_text()),
            _ => None,
        })
        .collect()
}

/// The agent task running in process against a mock API.
pub struct Running {
    pub ops: tokio::sync::mpsc::UnboundedSender<scratchpad::protocol::Op>,
    pub events: tokio::sync::mpsc::UnboundedReceiver<scratchpad::protocol::AgentEvent>,
    pub task: tokio::task::JoinHandle<Vec<Message>>,
    pub dir: tempfile::TempDir,
}

/// `/context`'s breakdown, as the agent answers it now.
pub async fn breakdown_of(agent: &mut Running) -> scratchpad::protocol::ContextBreakdown {
    use scratchpad::protocol::{AgentEvent, Op};
    agent.ops.send(Op::Inspect).unwrap();
    match until(&mut agent.events, |e| matches!(e, AgentEvent::Breakdown { .. })).await {
        AgentEvent::Breakdown { breakdown } => breakdown,
        _ => unreachable!("until returns only what it waited for"),
    }
}

/// The characters `breakdown` gives `category`.
pub fn total_of(breakdown: &scratchpad::protocol::ContextBreakdown, category: scratchpad::protocol::Category) -> usize {
    breakdown
        .totals
        .iter()
        .find(|(c, _)| *c == category)
        .map_or(0, |(_, chars)| *chars)
}

/// The characters of `breakdown`'s message categories: what the limit applies to.
pub fn counted_chars(breakdown: &scratchpad::protocol::ContextBreakdown) -> usize {
    breakdown
        .totals
        .iter()
        .filter(|(category, _)| category.counts_against_limit())
        .map(|(_, chars)| chars)
        .sum()
}

/// Settings for an in-process agent: the default thresholds, a short system prompt and
/// a 200k-token configured window.
pub fn agent_settings(ask: scratchpad::agent::AskPolicy) -> scratchpad::agent::AgentSettings {
    scratchpad::agent::AgentSettings {
        compaction: scratchpad::compact::CompactConfig::default(),
        system_prompt: "test".into(),
        instructions: scratchpad::instructions::InstructionsConfig::default(),
        max_tokens: 100,
        max_steps: 10,
        ask,
        configured_window_tokens: 200_000,
        data_dir: None,
        read_only: None,
    }
}

/// Start an agent with `settings` talking to `api` through the Anthropic provider, in
/// a fresh workspace.
pub async fn start_agent(api: &MockApi, settings: scratchpad::agent::AgentSettings) -> Running {
    start_agent_with_model(api, settings, "m").await
}

/// [`start_agent`] with `model` configured (empty: the one the server names).
pub async fn start_agent_with_model(api: &MockApi, settings: scratchpad::agent::AgentSettings, model: &str) -> Running {
    start_with(anthropic_provider(api, model), settings)
}

/// The Anthropic provider talking to `api`, with `model` configured.
fn anthropic_provider(api: &MockApi, model: &str) -> Arc<dyn scratchpad::provider::Provider> {
    anthropic_provider_caching(api, model, false, scratchpad::provider::Thinking::Off)
}

fn anthropic_provider_caching(
    api: &MockApi,
    model: &str,
    prompt_caching: bool,
    thinking: scratchpad::provider::Thinking,
) -> Arc<dyn scratchpad::provider::Provider> {
    use scratchpad::provider::anthropic::{AnthropicConfig, AnthropicProvider};
    let provider = AnthropicProvider::new(AnthropicConfig {
        base_url: api.url.clone(),
        api_key: "k".into(),
        model: model.into(),
        prompt_caching,
        thinking,
        retry: scratchpad::provider::RetryPolicy::default(),
    })
    .unwrap();
    Arc::new(provider)
}

/// [`start_agent`] with Anthropic prompt caching on (its breakpoints in every request).
pub fn start_agent_caching(api: &MockApi, settings: scratchpad::agent::AgentSettings) -> Running {
    start_in(
        tempfile::tempdir().unwrap(),
        anthropic_provider_caching(api, "m", true, scratchpad::provider::Thinking::Off),
        settings,
    )
}

/// [`start_agent`] with `provider.thinking` set.
pub fn start_agent_thinking(
    api: &MockApi,
    settings: scratchpad::agent::AgentSettings,
    thinking: scratchpad::provider::Thinking,
) -> Running {
    start_in(
        tempfile::tempdir().unwrap(),
        anthropic_provider_caching(api, "m", false, thinking),
        settings,
    )
}

/// Start an agent with `settings` talking to `api` through the OpenAI-compatible
/// provider (`/v1/chat/completions`), in a fresh workspace.
pub async fn start_openai_agent(api: &MockApi, settings: scratchpad::agent::AgentSettings) -> Running {
    start_openai_agent_at(&format!("{}/v1", api.url), "local", settings)
}

/// [`start_openai_agent`] at `base_url` (up to `/v1`) with `model` configured (empty:
/// the one the server names).
pub fn start_openai_agent_at(base_url: &str, model: &str, settings: scratchpad::agent::AgentSettings) -> Running {
    use scratchpad::provider::openai::{OpenAiConfig, OpenAiProvider};
    let provider = OpenAiProvider::new(OpenAiConfig {
        base_url: base_url.into(),
        api_key: None,
        model: model.into(),
        retry: scratchpad::provider::RetryPolicy::default(),
    })
    .unwrap();
    start_with(Arc::new(provider), settings)
}

/// What a turn said, up to its end.
pub struct Turn {
    pub outcome: scratchpad::protocol::TurnOutcome,
    pub notices: Vec<String>,
    pub errors: Vec<String>,
    /// The compaction stages that ran in it, in order.
    pub compactions: Vec<scratchpad::compact::StageEvent>,
}

pub async fn turn(agent: &mut Running, request: &str) -> Turn {
    agent
        .ops
        .send(scratchpad::protocol::Op::Submit { text: request.into() })
        .unwrap();
    let mut notices = Vec::new();
    let mut errors = Vec::new();
    let mut compactions = Vec::new();
    loop {
        match until(&mut agent.events, |e| {
            matches!(
                e,
                scratchpad::protocol::AgentEvent::Notice { .. }
                    | scratchpad::protocol::AgentEvent::Error { .. }
                    | scratchpad::protocol::AgentEvent::Compaction { .. }
                    | scratchpad::protocol::AgentEvent::TurnDone { .. }
            )
        })
        .await
        {
            scratchpad::protocol::AgentEvent::Notice { message } => notices.push(message),
            scratchpad::protocol::AgentEvent::Error { message } => errors.push(message),
            scratchpad::protocol::AgentEvent::Compaction { event } => compactions.push(event),
            scratchpad::protocol::AgentEvent::TurnDone { outcome, .. } => {
                return Turn {
                    outcome,
                    notices,
                    errors,
                    compactions,
                };
            }
            _ => unreachable!("until returns only what it waited for"),
        }
    }
}

/// Start an agent with `settings` talking through `provider` (one at a real peer's
/// address), in a fresh workspace.
pub fn start_with(
    provider: Arc<dyn scratchpad::provider::Provider>,
    settings: scratchpad::agent::AgentSettings,
) -> Running {
    start_in(tempfile::tempdir().unwrap(), provider, settings)
}

/// [`start_agent`] as a read-only view of a session (`reason` says which): nothing
/// is sent, run or changed.
pub fn start_agent_read_only(api: &MockApi, mut settings: scratchpad::agent::AgentSettings, reason: &str) -> Running {
    settings.read_only = Some(reason.to_string());
    run_agent(tempfile::tempdir().unwrap(), |tools, events| {
        scratchpad::agent::Agent::new(anthropic_provider(api, "m"), settings, tools, None, Vec::new(), events)
    })
}

/// The agent `build` makes of a tool box in `dir` and the sender of its events,
/// running on this runtime.
fn run_agent(
    dir: tempfile::TempDir,
    build: impl FnOnce(
        scratchpad::tools::ToolBox,
        tokio::sync::mpsc::UnboundedSender<scratchpad::protocol::AgentEvent>,
    ) -> scratchpad::agent::Agent,
) -> Running {
    let tools = scratchpad::tools::ToolBox::new(
        scratchpad::tools::workspace::Workspace::new(dir.path()).unwrap(),
        tools_config(),
    );
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (ops, ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(build(tools, events_tx).run(ops_rx));
    Running { ops, events, task, dir }
}

/// [`start_agent`] in `dir`, a workspace the test prepared (files the agent reads at
/// its start).
pub fn start_agent_in(dir: tempfile::TempDir, api: &MockApi, settings: scratchpad::agent::AgentSettings) -> Running {
    start_in(dir, anthropic_provider(api, "m"), settings)
}

fn start_in(
    dir: tempfile::TempDir,
    provider: Arc<dyn scratchpad::provider::Provider>,
    settings: scratchpad::agent::AgentSettings,
) -> Running {
    start_in_with_mcp(dir, provider, settings, &std::collections::BTreeMap::new())
}

/// [`start_agent`] with these MCP servers (started on this runtime).
pub fn start_agent_with_mcp(
    api: &MockApi,
    settings: scratchpad::agent::AgentSettings,
    servers: &std::collections::BTreeMap<String, scratchpad::mcp::McpServerConfig>,
) -> Running {
    start_in_with_mcp(
        tempfile::tempdir().unwrap(),
        anthropic_provider(api, "m"),
        settings,
        servers,
    )
}

/// [`start_agent`] with a session journal in `<workspace>/sessions`, as the app keeps
/// one: returns the agent and the journal's path.
pub fn start_agent_journaled(
    api: &MockApi,
    settings: scratchpad::agent::AgentSettings,
) -> (Running, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let journal = scratchpad::session::Journal::create(&dir.path().join("sessions"), "anthropic", "m").unwrap();
    let path = journal.path().to_path_buf();
    let running = start_agent_resumed(api, settings, dir, journal, Default::default());
    (running, path)
}

/// An agent continuing `journal` (what replaying it gave: `restored`) in `dir`, the
/// workspace its earlier run used, as `--continue` starts one.
pub fn start_agent_resumed(
    api: &MockApi,
    settings: scratchpad::agent::AgentSettings,
    dir: tempfile::TempDir,
    journal: scratchpad::session::Journal,
    restored: scratchpad::session::Restored,
) -> Running {
    run_agent(dir, |tools, events| {
        scratchpad::agent::Agent::new(
            anthropic_provider(api, "m"),
            settings,
            tools,
            Some(journal),
            restored.messages,
            events,
        )
        .with_past(restored.past)
    })
}

fn start_in_with_mcp(
    dir: tempfile::TempDir,
    provider: Arc<dyn scratchpad::provider::Provider>,
    settings: scratchpad::agent::AgentSettings,
    servers: &std::collections::BTreeMap<String, scratchpad::mcp::McpServerConfig>,
) -> Running {
    let mut tools = scratchpad::tools::ToolBox::new(
        scratchpad::tools::workspace::Workspace::new(dir.path()).unwrap(),
        tools_config(),
    );
    if !servers.is_empty() {
        let hidden = scratchpad::tools::ToolsConfig::default().hidden_env_matcher().unwrap();
        let hub = scratchpad::mcp::McpHub::start(servers, dir.path(), |_| None, hidden);
        tools = tools.with_mcp(hub);
    }
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (ops, ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let agent = scratchpad::agent::Agent::new(provider, settings, tools, None, Vec::new(), events_tx);
    let task = tokio::spawn(agent.run(ops_rx));
    Running { ops, events, task, dir }
}

/// The tool definitions `request` carried whose names start with `prefix`, without
/// the wire's cache breakpoint (which is not the tool's).
pub fn tool_definitions(request: &Recorded, prefix: &str) -> Vec<Value> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|tool| tool["name"].as_str().is_some_and(|name| name.starts_with(prefix)))
        .map(|tool| {
            let mut tool = tool.clone();
            if let Some(fields) = tool.as_object_mut() {
                fields.remove("cache_control");
            }
            tool
        })
        .collect()
}

/// The next event `wanted` accepts, skipping others (20 s at most).
pub async fn until(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<scratchpad::protocol::AgentEvent>,
    wanted: impl Fn(&scratchpad::protocol::AgentEvent) -> bool,
) -> scratchpad::protocol::AgentEvent {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let event = events.recv().await.expect("agent alive");
            if wanted(&event) {
                return event;
            }
        }
    })
    .await
    .expect("event in time")
}

/// Wait for the agent's permission question and give it `answer`; the question's id.
pub async fn answer_permission(agent: &mut Running, answer: scratchpad::protocol::PermissionAnswer) -> u64 {
    use scratchpad::protocol::{AgentEvent, Op};
    let AgentEvent::PermissionRequest { request_id, .. } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::PermissionRequest { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    agent.ops.send(Op::Permission { request_id, answer }).unwrap();
    request_id
}

/// A scripted `bash` call.
pub fn bash_call(id: &'static str, command: impl Into<String>) -> (&'static str, &'static str, Value) {
    (id, "bash", serde_json::json!({ "command": command.into() }))
}

/// What the model got back for `calls` (one scripted response, then a final text),
/// run headless with `extra` arguments; the run must succeed.
pub fn results_of(workspace: &Workspace, calls: &[(&str, &str, Value)], extra: &[&str]) -> Vec<String> {
    let api = MockApi::start_in_thread(vec![tool_reply("Trying.", calls), text_reply("Done.")]);
    let mut args = vec!["-p", "Go"];
    args.extend_from_slice(extra);
    let output = workspace.run(&api, &args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let results = tool_results(&messages_of(&api.turn_requests()[1]));
    assert_eq!(results.len(), calls.len(), "every call got exactly one result");
    results
}

/// The length of `json.dumps(value, ensure_ascii=False)` as Python counts it (code
/// points, `", "` and `": "` separators), computed here and not by scratchpad's own
/// estimate, so a test can check that estimate against an independent figure.
pub fn python_dumps_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => number.to_string().chars().count(),
        Value::String(text) => {
            2 + text
                .chars()
                .map(|c| match c {
                    '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
                    c if (c as u32) < 0x20 => 6,
                    _ => 1,
                })
                .sum::<usize>()
        }
        Value::Array(items) => {
            2 + items.iter().map(python_dumps_len).sum::<usize>() + 2 * items.len().saturating_sub(1)
        }
        Value::Object(fields) => {
            2 + fields
                .iter()
                .map(|(key, value)| python_dumps_len(&Value::String(key.clone())) + 2 + python_dumps_len(value))
                .sum::<usize>()
                + 2 * fields.len().saturating_sub(1)
        }
    }
}

/// `value` without the `cache_control` markers the Anthropic wire adds (they are not
/// part of what the estimate counts).
pub fn without_cache_control(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), without_cache_control(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

/// The pids of processes whose command line is exactly `command`.
pub fn processes_running(command: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            (String::from_utf8_lossy(&cmdline).replace('\0', " ").trim() == command).then_some(pid)
        })
        .collect()
}

/// The app on a real agent, as the terminal's loop joins them: what the agent says
/// goes to the app's state, what the app sends goes straight to the agent, and every
/// step is drawn (a question is answerable only once drawn and read).
pub struct Driven {
    pub app: scratchpad::tui::app::App,
    pub agent: Running,
    /// Every event the agent sent, in order.
    pub seen: Vec<scratchpad::protocol::AgentEvent>,
    terminal: ratatui::Terminal<ratatui::backend::TestBackend>,
}

impl Driven {
    pub fn new(agent: Running) -> Self {
        let app = scratchpad::tui::app::App::new(
            agent.ops.clone(),
            agent.dir.path().to_path_buf(),
            scratchpad::compact::CompactConfig::default(),
        );
        Driven {
            app,
            agent,
            seen: Vec::new(),
            terminal: ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap(),
        }
    }

    pub fn draw(&mut self) -> String {
        let app = &mut self.app;
        self.terminal.draw(|frame| app.render(frame)).unwrap();
        self.terminal.backend().to_string()
    }

    pub fn key(&mut self, code: crossterm::event::KeyCode, modifiers: crossterm::event::KeyModifiers) {
        self.app.handle_key(crossterm::event::KeyEvent::new(code, modifiers));
        self.draw();
    }

    /// Type `text` at the prompt and press Enter.
    pub fn send(&mut self, text: &str) {
        use crossterm::event::{KeyCode, KeyModifiers};
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
        self.key(KeyCode::Enter, KeyModifiers::NONE);
    }

    /// Take the agent's events into the app until `done` holds (20 s at most).
    pub async fn until(&mut self, what: &str, done: impl Fn(&scratchpad::tui::app::App) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            self.draw();
            if done(&self.app) {
                return;
            }
            match tokio::time::timeout_at(deadline, self.agent.events.recv()).await {
                Ok(Some(event)) => {
                    self.seen.push(event.clone());
                    self.app.apply(event);
                }
                Ok(None) => panic!("the agent stopped while waiting for {what}"),
                Err(_) => panic!(
                    "no {what} in 20 s; the status says {:?}; the agent said {}",
                    self.app.state.turn.state(),
                    self.seen
                        .iter()
                        .map(|event| scratchpad::text::prefix_chars(&format!("{event:?}"), 160).to_string())
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            }
        }
    }

    /// Take the agent's events into the app until one `said` accepts arrives (20 s at
    /// most); where it is in [`Driven::seen`].
    pub async fn until_said(&mut self, said: impl Fn(&scratchpad::protocol::AgentEvent) -> bool) -> usize {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(20), self.agent.events.recv())
                .await
                .expect("the event in time")
                .expect("agent alive");
            self.seen.push(event.clone());
            self.app.apply(event);
            self.draw();
            if said(self.seen.last().expect("just pushed")) {
                return self.seen.len() - 1;
            }
        }
    }

    /// Until the question on screen has been there long enough to be answered.
    pub async fn until_asked(&mut self) {
        self.until("a question", |app| app.state.turn.question().is_some())
            .await;
        self.draw();
        tokio::time::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE).await;
    }

    /// Until the app is ready, and the agent said, after event `since`, that the turn
    /// ended or it is ready.
    pub async fn until_ready(&mut self, since: usize) {
        let said = |seen: &[scratchpad::protocol::AgentEvent]| {
            seen.iter().any(|event| {
                matches!(
                    event,
                    scratchpad::protocol::AgentEvent::TurnDone { .. } | scratchpad::protocol::AgentEvent::Ready
                )
            })
        };
        loop {
            self.until("ready", |app| {
                !app.state.is_busy() && app.state.turn.question().is_none()
            })
            .await;
            if said(&self.seen[since.min(self.seen.len())..]) {
                return;
            }
            let event = tokio::time::timeout(Duration::from_secs(20), self.agent.events.recv())
                .await
                .expect("the agent says it is done")
                .expect("agent alive");
            self.seen.push(event.clone());
            self.app.apply(event);
        }
    }

    /// The outcome of the newest turn the agent ended.
    pub fn last_outcome(&self) -> Option<scratchpad::protocol::TurnOutcome> {
        self.seen.iter().rev().find_map(|event| match event {
            scratchpad::protocol::AgentEvent::TurnDone { outcome, .. } => Some(*outcome),
            _ => None,
        })
    }

    /// The tool calls the agent started running after event `from`.
    pub fn calls_run_after(&self, from: usize) -> usize {
        self.seen[from..]
            .iter()
            .filter(|event| matches!(event, scratchpad::protocol::AgentEvent::ToolRunning { .. }))
            .count()
    }
}
