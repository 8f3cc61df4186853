//! The Anthropic Messages API: one streaming POST to `/v1/messages`, decoded from
//! server-sent events into a complete response.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::ApiKey;
use super::error::ProviderError;
use super::retry::RetryPolicy;
use super::sse::SseEvent;
use super::{
    CacheCheck, CacheDiagnosis, DeltaSink, ModelName, ModelRequest, ModelResponse, Provider, STOP_MAX_TOKENS,
    ServerCompaction, ServerFacts, StreamEvent, Thinking, Usage, http_client, read_events, send,
};
use crate::compact::markers::{CutCall, is_server_compaction_block};
use crate::message::ContentBlock;
use crate::protocol::{Window, WindowSource};
mod stream;
pub use stream::StreamAssembler;

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model asked for when none is configured and the server names none.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
pub const API_VERSION: &str = "2023-06-01";
/// The beta that asks the server why its prompt cache missed (harmless where the
/// feature is generally available).
pub const CACHE_DIAGNOSIS_BETA: &str = "cache-diagnosis-2026-04-07";
/// The beta of the server's compaction: sent with a request to compact and with every
/// request whose history starts with the block it wrote.
pub const COMPACTION_BETA: &str = "compact-2026-09-04";
/// The most characters of instructions the server's compaction takes.
pub const COMPACTION_INSTRUCTIONS_CHARS: usize = 16_384;

#[derive(Clone, Debug)]
pub struct AnthropicConfig {
    pub base_url: String,
    pub api_key: ApiKey,
    pub model: String,
    pub prompt_caching: bool,
    /// Whether a turn's calls let the model think first.
    pub thinking: Thinking,
    pub retry: RetryPolicy,
}

pub struct AnthropicProvider {
    client: reqwest::Client,
    config: AnthropicConfig,
    model: ModelName,
    /// Cleared once the server describes itself as another one (llama.cpp), whose
    /// Messages API has none of Anthropic's own features (cache diagnostics, the
    /// server's compaction).
    anthropic_features: std::sync::atomic::AtomicBool,
    /// Cleared when the Models API says the model has no context management.
    server_compaction: std::sync::atomic::AtomicBool,
}

impl AnthropicProvider {
    /// `config.model` empty: the model the server names, else [`DEFAULT_MODEL`].
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        Ok(AnthropicProvider {
            client: http_client(config.retry.idle_timeout())?,
            model: ModelName::new(config.model.clone(), DEFAULT_MODEL),
            config,
            anthropic_features: std::sync::atomic::AtomicBool::new(true),
            server_compaction: std::sync::atomic::AtomicBool::new(true),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.base_url.trim_end_matches('/'))
    }

    /// The exact JSON body sent for `request`.
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        let caching = self.config.prompt_caching;
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(self.model.get()));
        body.insert("max_tokens".into(), json!(request.max_tokens));
        match self.config.thinking {
            _ if !request.think => {}
            Thinking::Off => {}
            Thinking::Adaptive => {
                body.insert("thinking".into(), json!({"type": "adaptive"}));
            }
            // Thinking is output: the budget comes on top of the reply's own room.
            Thinking::Budget(budget) => {
                body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
                body.insert("max_tokens".into(), json!(request.max_tokens.saturating_add(budget)));
            }
        }
        if !request.system.is_empty() {
            let system = if caching {
                json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}])
            } else {
                json!(request.system)
            };
            body.insert("system".into(), system);
        }
        if !request.tools.is_empty() {
            let mut tools = serde_json::to_value(&request.tools).unwrap_or_else(|_| json!([]));
            if caching && let Some(Value::Object(last)) = tools.as_array_mut().and_then(|t| t.last_mut()) {
                last.insert("cache_control".into(), json!({"type": "ephemeral"}));
            }
            body.insert("tools".into(), tools);
        }
        let mut messages = serde_json::to_value(request.messages).unwrap_or_else(|_| json!([]));
        if caching && let Some(last) = messages.as_array_mut().and_then(|m| m.last_mut()) {
            mark_cache_breakpoint(last);
        }
        body.insert("messages".into(), messages);
        body.insert("stream".into(), json!(true));
        let previous = match &request.cache_check {
            CacheCheck::Off => None,
            CacheCheck::Start => Some(Value::Null),
            CacheCheck::After(id) => Some(json!(id)),
        };
        if let Some(previous) = previous.filter(|_| self.anthropic_features.load(std::sync::atomic::Ordering::Relaxed))
        {
            body.insert("diagnostics".into(), json!({"previous_message_id": previous}));
        }
        Value::Object(body)
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        let request = self
            .client
            .post(self.url(path))
            .header("x-api-key", self.config.api_key.expose())
            .header("anthropic-version", API_VERSION);
        let betas = betas_of(body);
        let request = if betas.is_empty() {
            request
        } else {
            request.header("anthropic-beta", betas.join(","))
        };
        request.json(body)
    }

    /// The server, as the retries ask about it.
    fn server(&self) -> super::ServerAt<'_> {
        super::ServerAt {
            client: &self.client,
            base_url: &self.config.base_url,
        }
    }

    /// `GET /v1/models/{model}`: the model's input window as the Models API states it.
    async fn stated_window(&self) -> Option<Window> {
        let mut url = reqwest::Url::parse(&self.url("/v1/models")).ok()?;
        url.path_segments_mut().ok()?.push(self.model.get());
        let endpoint = url.path().to_string();
        let response = self
            .client
            .get(url)
            .header("x-api-key", self.config.api_key.expose())
            .header("anthropic-version", API_VERSION)
            .timeout(super::PROBE_TIMEOUT)
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let info: Value = response.json().await.ok()?;
        // A model the Models API says manages no context has no compaction either.
        if info.pointer("/capabilities/context_management/supported") == Some(&Value::Bool(false)) {
            self.server_compaction
                .store(false, std::sync::atomic::Ordering::Relaxed);
        }
        let tokens = info.get("max_input_tokens")?.as_u64().filter(|&tokens| tokens > 0)?;
        Some(Window {
            tokens,
            source: WindowSource::Server { endpoint },
        })
    }

    async fn attempt(&self, body: &Value, deltas: &DeltaSink) -> Result<ModelResponse, ProviderError> {
        let response = send(self.post("/v1/messages", body)).await?;
        let mut assembler = StreamAssembler::default();
        read_events(response, |event| assembler.handle(&event, deltas))
            .await?
            .ok_or_else(|| ProviderError::StreamCut("the stream ended before message_stop".into()))
    }
}

/// The betas a request body uses, for its `anthropic-beta` header.
fn betas_of(body: &Value) -> Vec<&'static str> {
    let mut betas = Vec::new();
    if body.get("diagnostics").is_some() {
        betas.push(CACHE_DIAGNOSIS_BETA);
    }
    let starts_with_compaction = body
        .pointer("/messages/0/content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().any(is_server_compaction_block));
    if body.get("compaction").is_some() || starts_with_compaction {
        betas.push(COMPACTION_BETA);
    }
    betas
}

/// Put a `cache_control` breakpoint on the last block of a message, so the whole
/// prefix up to it is cached for the next call.
fn mark_cache_breakpoint(message: &mut Value) {
    let Some(content) = message.get_mut("content") else {
        return;
    };
    if let Value::String(text) = content {
        *content = json!([{"type": "text", "text": text}]);
    }
    if let Some(Value::Object(block)) = content.as_array_mut().and_then(|blocks| blocks.last_mut()) {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

impl Provider for AnthropicProvider {
    fn kind(&self) -> &'static str {
        "anthropic"
    }

    fn caches_prompt_prefix(&self) -> bool {
        self.config.prompt_caching
    }

    fn model(&self) -> &str {
        self.model.get()
    }

    /// The Models API states the model's window (`max_input_tokens`); where it does
    /// not answer, Anthropic's own API is left to the model table, and a compatible
    /// server elsewhere (llama.cpp) is asked what it serves.
    fn discover(&self) -> BoxFuture<'_, ServerFacts> {
        Box::pin(async move {
            let stated = self.stated_window().await;
            let anthropic = self.config.base_url.trim_end_matches('/') == DEFAULT_BASE_URL.trim_end_matches('/');
            if anthropic || stated.is_some() {
                return ServerFacts {
                    window: stated,
                    ..ServerFacts::default()
                };
            }
            let facts = super::probe_server(&self.client, &self.config.base_url, self.model.get(), |request| {
                request.header("x-api-key", self.config.api_key.expose())
            })
            .await;
            self.model.learn(&facts);
            if facts.window.is_some() || facts.model.is_some() || facts.renders_tools.is_some() {
                self.anthropic_features
                    .store(false, std::sync::atomic::Ordering::Relaxed);
            }
            facts
        })
    }

    fn tokenize<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<Option<u64>, ProviderError>> {
        Box::pin(super::tokenized(&self.client, &self.config.base_url, text, |request| {
            request.header("x-api-key", self.config.api_key.expose())
        }))
    }

    /// `/v1/messages/count_tokens` (Anthropic's API and llama.cpp's): the exact prompt
    /// size of the history as it is.
    fn count_tokens<'a>(&'a self, request: &'a ModelRequest<'a>) -> BoxFuture<'a, Result<Option<u64>, ProviderError>> {
        Box::pin(async move {
            let mut body = self.request_body(request);
            if let Value::Object(map) = &mut body {
                map.remove("stream");
                map.remove("max_tokens");
                map.remove("diagnostics");
            }
            let response = send(self.post("/v1/messages/count_tokens", &body)).await?;
            super::counted_input_tokens(response).await
        })
    }

    fn wait_until_up(&self) -> BoxFuture<'_, bool> {
        Box::pin(super::wait_for_server(
            &self.client,
            &self.config.base_url,
            self.config.retry.startup_wait(),
        ))
    }

    fn compacts_on_server(&self) -> bool {
        self.anthropic_features.load(std::sync::atomic::Ordering::Relaxed)
            && self.server_compaction.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The ordinary request of the messages plus `compaction`: the answer is one
    /// assistant message holding the block (streamed whole, `stop_reason: compaction`).
    fn compact_on_server<'a>(
        &'a self,
        request: &'a ServerCompaction<'a>,
    ) -> BoxFuture<'a, Result<Value, ProviderError>> {
        Box::pin(async move {
            let mut body = self.request_body(&ModelRequest {
                system: request.system.clone(),
                tools: request.tools.clone(),
                messages: request.messages,
                max_tokens: request.max_tokens,
                cache_check: CacheCheck::Off,
                think: false,
            });
            let instructions = crate::text::prefix_chars(&request.instructions, COMPACTION_INSTRUCTIONS_CHARS);
            if let Value::Object(map) = &mut body {
                map.insert(
                    "compaction".into(),
                    json!({"type": "summarize", "instructions": instructions}),
                );
            }
            let (sink, _ignored) = tokio::sync::mpsc::unbounded_channel();
            let response = self
                .config
                .retry
                .run(&sink, || self.attempt(&body, &sink), &self.server())
                .await?;
            let block = response.content.into_iter().find_map(|block| match block {
                ContentBlock::Unknown(value) if is_server_compaction_block(&value) => Some(value),
                _ => None,
            });
            let stop = response.stop_reason.unwrap_or_else(|| "none".into());
            match block {
                Some(block)
                    if block
                        .get("content")
                        .and_then(Value::as_str)
                        .is_some_and(|content| !content.trim().is_empty()) =>
                {
                    Ok(block)
                }
                Some(_) => Err(ProviderError::Compaction {
                    code: "empty".into(),
                    message: format!("the server's compaction block came back without a summary (stop_reason: {stop})"),
                }),
                None => Err(ProviderError::Compaction {
                    code: "no_block".into(),
                    message: format!("the answer held no compaction block (stop_reason: {stop})"),
                }),
            }
        })
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest<'a>,
        deltas: &'a DeltaSink,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let body = self.request_body(request);
            self.config
                .retry
                .run(deltas, || self.attempt(&body, deltas), &self.server())
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::sse::SseDecoder;

    fn assemble(stream: &[u8], chunk: usize) -> Result<(ModelResponse, Vec<StreamEvent>), ProviderError> {
        let (sink, mut events) = tokio::sync::mpsc::unbounded_channel();
        let mut decoder = SseDecoder::new();
        let mut assembler = StreamAssembler::default();
        for piece in stream.chunks(chunk.max(1)) {
            for event in decoder.feed(piece).unwrap() {
                if let Some(done) = assembler.handle(&event, &sink)? {
                    drop(sink);
                    let mut seen = Vec::new();
                    while let Ok(event) = events.try_recv() {
                        seen.push(event);
                    }
                    return Ok((done, seen));
                }
            }
        }
        Err(ProviderError::StreamCut("no message_stop".into()))
    }

    #[test]
    fn text_fixture() {
        let stream = include_bytes!("../../../../tests/fixtures/anthropic-sse-basic.txt");
        let (response, deltas) = assemble(stream, usize::MAX).unwrap();
        assert_eq!(response.text(), "Hello! How can I help with your code today?");
        assert_eq!(response.stop_reason.as_deref(), Some("end_turn"));
        assert_eq!(response.usage.input_tokens, 25);
        assert_eq!(response.usage.output_tokens, 15);
        assert_eq!(deltas.len(), 3);
    }

    #[test]
    fn tool_use_fixture_assembles_partial_json() {
        let stream = include_bytes!("../../../../tests/fixtures/anthropic-sse-tool-use.txt");
        let (response, _) = assemble(stream, usize::MAX).unwrap();
        assert_eq!(response.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            response.content[1],
            ContentBlock::ToolUse {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "read_file".into(),
                input: json!({"path": "README.md", "limit": 200}),
                extra: Default::default(),
            }
        );
    }

    #[test]
    fn every_chunk_size_parses_identically() {
        for fixture in [
            &include_bytes!("../../../../tests/fixtures/anthropic-sse-basic.txt")[..],
            &include_bytes!("../../../../tests/fixtures/anthropic-sse-tool-use.txt")[..],
        ] {
            let whole = assemble(fixture, usize::MAX).unwrap();
            for chunk in [1, 2, 3, 7, 64, 333] {
                assert_eq!(assemble(fixture, chunk).unwrap(), whole, "chunk {chunk}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn random_splits_parse_identically(cuts in proptest::collection::vec(1usize..200, 1..60)) {
            let fixture = &include_bytes!("../../../../tests/fixtures/anthropic-sse-tool-use.txt")[..];
            let whole = assemble(fixture, usize::MAX).unwrap();
            let (sink, _events) = tokio::sync::mpsc::unbounded_channel();
            let mut decoder = SseDecoder::new();
            let mut assembler = StreamAssembler::default();
            let mut rest = fixture;
            let mut done = None;
            for cut in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (piece, tail) = rest.split_at((*cut).min(rest.len()));
                rest = tail;
                for event in decoder.feed(piece).unwrap() {
                    if let Some(response) = assembler.handle(&event, &sink).unwrap() {
                        done = Some(response);
                    }
                }
            }
            proptest::prop_assert_eq!(done, Some(whole.0));
        }
    }

    #[test]
    fn unknown_events_and_blocks_are_kept_or_skipped_and_errors_classified() {
        let stream = "event: brand_new\ndata: {\"type\":\"brand_new\"}\n\n\
            data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\"}}\n\n\
            data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"mystery_delta\"}}\n\n\
            data: {\"type\":\"message_stop\"}\n\n";
        let (response, _) = assemble(stream.as_bytes(), usize::MAX).unwrap();
        assert_eq!(
            response.content,
            vec![ContentBlock::Unknown(json!({"type":"server_tool_use","id":"s"}))]
        );
        let error = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        assert!(matches!(
            assemble(error.as_bytes(), 5),
            Err(ProviderError::Overloaded { .. })
        ));
        let bad = "data: {not json\n\n";
        assert!(matches!(assemble(bad.as_bytes(), 5), Err(ProviderError::Protocol(_))));
    }

    /// llama.cpp's `/v1/messages` leaves out `message_start` when the first token is part
    /// of a multi-byte character (seen with SmolLM2 answering with an emoji). The text must
    /// still assemble; the prompt's tokens are then unknown (0 means "not reported").
    #[test]
    fn a_stream_without_message_start_still_assembles_with_unreported_input() {
        let stream = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
            event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\u{1F44F} hi\"}}\n\n\
            event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
            event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":24}}\n\n\
            event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        let (response, _) = assemble(stream.as_bytes(), 3).unwrap();
        assert_eq!(response.text(), "\u{1F44F} hi");
        assert_eq!(response.stop_reason.as_deref(), Some("max_tokens"));
        assert_eq!(response.usage.output_tokens, 24);
        assert_eq!(response.usage.prompt_tokens(), 0);
    }

    /// `diagnostics` on `message_start`: a reason with its tokens, a pending `null`,
    /// or none at all (no divergence); the response's id with it.
    #[test]
    fn cache_diagnostics_are_read_from_message_start() {
        let stream = |diagnostics: &str| {
            format!(
                "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_7\",\"usage\":{{\"input_tokens\":5}}{diagnostics}}}}}\n\n\
                 event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}}}}\n\n\
                 event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
            )
        };
        let missed =
            stream(r#","diagnostics":{"cache_miss_reason":{"type":"tools_changed","cache_missed_input_tokens":4300}}"#);
        let (response, _) = assemble(missed.as_bytes(), 7).unwrap();
        assert_eq!(response.id.as_deref(), Some("msg_7"));
        assert_eq!(
            response.cache_diagnosis,
            Some(CacheDiagnosis {
                reason: Some("tools_changed".into()),
                missed_input_tokens: Some(4300),
            })
        );
        let pending = stream(r#","diagnostics":{"cache_miss_reason":null}"#);
        let (response, _) = assemble(pending.as_bytes(), 7).unwrap();
        assert_eq!(
            response.cache_diagnosis,
            Some(CacheDiagnosis {
                reason: None,
                missed_input_tokens: None,
            })
        );
        let (response, _) = assemble(stream("").as_bytes(), 7).unwrap();
        assert_eq!(response.cache_diagnosis, None);
    }

    /// A provider of model `claude-test` at an address nothing answers.
    fn test_config(prompt_caching: bool, thinking: Thinking) -> AnthropicConfig {
        AnthropicConfig {
            base_url: "http://127.0.0.1:1".into(),
            api_key: "sk-secret".into(),
            model: "claude-test".into(),
            prompt_caching,
            thinking,
            retry: RetryPolicy::default(),
        }
    }

    /// A turn call asks with the previous response's id (`null` first) and the beta
    /// header; a request that does not ask carries neither.
    #[test]
    fn a_request_that_checks_the_cache_names_the_previous_response_and_the_beta() {
        let provider = AnthropicProvider::new(test_config(true, Thinking::Off)).unwrap();
        let messages = [crate::message::Message::user_text("hi")];
        let body_with = |cache_check: CacheCheck| {
            provider.request_body(&ModelRequest {
                messages: &messages,
                max_tokens: 10,
                cache_check,
                ..ModelRequest::default()
            })
        };
        let off = body_with(CacheCheck::Off);
        assert_eq!(off.get("diagnostics"), None);
        assert!(betas_of(&off).is_empty());
        let start = body_with(CacheCheck::Start);
        assert_eq!(start["diagnostics"], json!({"previous_message_id": null}));
        assert_eq!(betas_of(&start), vec![CACHE_DIAGNOSIS_BETA]);
        let after = body_with(CacheCheck::After("msg_1".into()));
        assert_eq!(after["diagnostics"], json!({"previous_message_id": "msg_1"}));
    }

    /// A turn's call asks for thinking as configured (a budget on top of the reply's
    /// room); a call that is not a turn's never does. The usage's thinking tokens are
    /// read where the server reports them.
    #[test]
    fn thinking_is_asked_for_on_a_turns_calls_as_configured() {
        let provider = |thinking: Thinking| AnthropicProvider::new(test_config(false, thinking)).unwrap();
        let messages = [crate::message::Message::user_text("hi")];
        let request = |think: bool| ModelRequest {
            messages: &messages,
            max_tokens: 4_000,
            think,
            ..ModelRequest::default()
        };
        let adaptive = provider(Thinking::Adaptive).request_body(&request(true));
        assert_eq!(adaptive["thinking"], json!({"type": "adaptive"}));
        assert_eq!(adaptive["max_tokens"], 4_000);
        let budget = provider(Thinking::Budget(2_048)).request_body(&request(true));
        assert_eq!(budget["thinking"], json!({"type": "enabled", "budget_tokens": 2_048}));
        assert_eq!(
            budget["max_tokens"], 6_048,
            "the budget comes on top of the reply's room"
        );
        let summary = provider(Thinking::Adaptive).request_body(&request(false));
        assert_eq!(summary.get("thinking"), None);
        assert_eq!(
            provider(Thinking::Off).request_body(&request(true)).get("thinking"),
            None
        );

        let mut usage = Usage::default();
        super::stream::merge_usage(
            &mut usage,
            &json!({"output_tokens": 900, "output_tokens_details": {"thinking_tokens": 700}}),
        );
        assert_eq!((usage.output_tokens, usage.thinking_tokens), (900, Some(700)));
    }

    #[test]
    fn request_body_has_cache_breakpoints_and_can_drop_them() {
        let mut config = test_config(true, Thinking::Off);
        let request = ModelRequest {
            system: "sys".into(),
            tools: vec![super::super::ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                input_schema: json!({"type": "object"}),
            }],
            messages: &[crate::message::Message::user_text("hi")],
            max_tokens: 100,
            cache_check: CacheCheck::Off,
            think: false,
        };
        let body = AnthropicProvider::new(config.clone()).unwrap().request_body(&request);
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 100,
                "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": "bash", "description": "run", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}],
                "stream": true
            })
        );
        config.prompt_caching = false;
        let body = AnthropicProvider::new(config.clone()).unwrap().request_body(&request);
        assert_eq!(body["system"], json!("sys"));
        assert_eq!(body["messages"][0]["content"], json!("hi"));
        assert!(!format!("{config:?}").contains("sk-secret"));
    }
}
