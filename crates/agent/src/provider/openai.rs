//! OpenAI-compatible chat completions (llama.cpp `llama-server`, Ollama, vLLM): our
//! tool_use / tool_result blocks map to `tool_calls` and `role: tool` messages.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::ApiKey;
use super::error::ProviderError;
use super::retry::RetryPolicy;
use super::{
    DeltaSink, ModelName, ModelRequest, ModelResponse, Provider, STOP_MAX_TOKENS, ServerFacts, StreamEvent, Usage,
    http_client, read_events, send,
};
use crate::compact::markers::CutCall;
use crate::message::{Content, ContentBlock, Message, Role};

#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// Up to and including `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    pub model: String,
    pub retry: RetryPolicy,
}

pub struct OpenAiProvider {
    client: reqwest::Client,
    config: OpenAiConfig,
    model: ModelName,
}

/// The model asked for when none is configured and the server names none.
pub const DEFAULT_MODEL: &str = "local";

impl OpenAiProvider {
    /// `config.model` empty: the model the server names, else [`DEFAULT_MODEL`].
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        Ok(OpenAiProvider {
            client: http_client(config.retry.idle_timeout())?,
            model: ModelName::new(config.model.clone(), DEFAULT_MODEL),
            config,
        })
    }

    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(json!({"role": "system", "content": request.system}));
        }
        for message in request.messages {
            to_openai(message, &mut messages);
        }
        let mut body = json!({
            "model": self.model.get(),
            "messages": messages,
            "max_tokens": request.max_tokens,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name, "description": tool.description, "parameters": tool.input_schema}})
                })
                .collect();
        }
        body
    }

    /// A POST to `path` under the base URL, with the key when there is one.
    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        let url = format!("{}{path}", self.config.base_url.trim_end_matches('/'));
        let post = self.client.post(url).json(body);
        match &self.config.api_key {
            Some(key) => post.bearer_auth(key.expose()),
            None => post,
        }
    }

    async fn attempt(&self, body: &Value, deltas: &DeltaSink) -> Result<ModelResponse, ProviderError> {
        let response = send(self.post("/chat/completions", body)).await?;
        let mut assembler = ChatAssembler::default();
        let done = read_events(response, |event| {
            if event.data.trim() == "[DONE]" {
                return Ok(Some(()));
            }
            assembler.handle(&event.data, deltas).map(|()| None)
        })
        .await?;
        // Some servers close the stream without [DONE] once a finish reason was sent.
        if done.is_some() || assembler.finish_reason.is_some() {
            return assembler.finish();
        }
        Err(ProviderError::StreamCut("the stream ended before [DONE]".into()))
    }
}

fn to_openai(message: &Message, out: &mut Vec<Value>) {
    let role = match message.role() {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let blocks = match &message.content() {
        Content::Text(text) if message.role() == Role::User => return push_user(out, text),
        Content::Text(text) => {
            out.push(json!({"role": role, "content": text}));
            return;
        }
        Content::Blocks(blocks) => blocks,
    };
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text, .. } => texts.push(text.clone()),
            ContentBlock::ToolUse { id, name, input, .. } => calls.push(json!({
                "id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}})),
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } => out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content.full_text()})),
            // Thinking and other Anthropic-only blocks have no counterpart here.
            ContentBlock::Unknown(_) => {}
        }
    }
    if message.role() == Role::Assistant {
        let mut entry = json!({"role": "assistant", "content": texts.join("\n")});
        if !calls.is_empty() {
            entry["tool_calls"] = Value::Array(calls);
        }
        out.push(entry);
    } else if !texts.is_empty() {
        push_user(out, &texts.join("\n"));
    }
}

/// A user entry, joined to the one before it when that is a user entry too: strict
/// chat templates (llama.cpp's among them) refuse two user turns in a row, which the
/// history has where an archive marker or a `[Compacted]` message precedes a request.
fn push_user(out: &mut Vec<Value>, text: &str) {
    if let Some(previous) = out.last_mut()
        && previous["role"] == "user"
        && let Some(Value::String(earlier)) = previous.get_mut("content")
    {
        earlier.push_str("\n\n");
        earlier.push_str(text);
        return;
    }
    out.push(json!({"role": "user", "content": text}));
}

#[derive(Default)]
struct CallBuilder {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
pub struct ChatAssembler {
    text: String,
    calls: BTreeMap<u64, CallBuilder>,
    finish_reason: Option<String>,
    usage: Usage,
}

impl ChatAssembler {
    pub fn handle(&mut self, data: &str, deltas: &DeltaSink) -> Result<(), ProviderError> {
        let value: Value = serde_json::from_str(data)
            .map_err(|error| ProviderError::Protocol(format!("chunk is not JSON: {error}")))?;
        if value.get("error").is_some() {
            return Err(ProviderError::from_stream_error(data));
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            let field = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage.input_tokens = field("prompt_tokens");
            self.usage.output_tokens = field("completion_tokens");
        }
        let Some(choice) = value.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            self.text.push_str(text);
            let _ = deltas.send(StreamEvent::Text(text.to_string()));
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let builder = self.calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                builder.id = id.to_string();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                builder.name.push_str(name);
                let _ = deltas.send(StreamEvent::ToolUseStarted {
                    id: builder.id.clone(),
                    name: builder.name.clone(),
                });
            }
            if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str) {
                builder.arguments.push_str(arguments);
            }
        }
        Ok(())
    }

    pub fn finish(&mut self) -> Result<ModelResponse, ProviderError> {
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::Text {
                text: std::mem::take(&mut self.text),
                extra: Default::default(),
            });
        }
        let truncated = self.finish_reason.as_deref() == Some("length");
        let mut cut_off = Vec::new();
        for (index, call) in std::mem::take(&mut self.calls) {
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                match crate::json::from_str(&call.arguments) {
                    Ok(input) => input,
                    Err(_) if truncated => {
                        cut_off.push(CutCall {
                            received_chars: call.arguments.chars().count(),
                            name: call.name,
                        });
                        continue;
                    }
                    Err(error) => {
                        return Err(ProviderError::Protocol(format!(
                            "arguments of {} are not valid JSON: {error}",
                            call.name
                        )));
                    }
                }
            };
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            content.push(ContentBlock::ToolUse {
                id,
                name: call.name,
                input,
                extra: Default::default(),
            });
        }
        let has_calls = content.iter().any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = match self.finish_reason.take().as_deref() {
            Some("length") => STOP_MAX_TOKENS,
            _ if has_calls => "tool_use",
            _ => "end_turn",
        };
        Ok(ModelResponse {
            content,
            stop_reason: Some(stop_reason.to_string()),
            usage: self.usage,
            cut_off,
            id: None,
            cache_diagnosis: None,
        })
    }
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        self.model.get()
    }

    fn wait_until_up(&self) -> BoxFuture<'_, bool> {
        Box::pin(super::wait_for_server(
            &self.client,
            &self.config.base_url,
            self.config.retry.startup_wait(),
        ))
    }

    fn discover(&self) -> BoxFuture<'_, ServerFacts> {
        Box::pin(async move {
            let facts = super::probe_server(
                &self.client,
                &self.config.base_url,
                self.model.get(),
                |request| match &self.config.api_key {
                    Some(key) => request.bearer_auth(key.expose()),
                    None => request,
                },
            )
            .await;
            self.model.learn(&facts);
            facts
        })
    }

    fn tokenize<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<Option<u64>, ProviderError>> {
        Box::pin(super::tokenized(
            &self.client,
            &self.config.base_url,
            text,
            |request| match &self.config.api_key {
                Some(key) => request.bearer_auth(key.expose()),
                None => request,
            },
        ))
    }

    /// llama.cpp's `POST /v1/chat/completions/input_tokens` counts the request as its
    /// template renders it; a server without that endpoint offers no count.
    fn count_tokens<'a>(&'a self, request: &'a ModelRequest<'a>) -> BoxFuture<'a, Result<Option<u64>, ProviderError>> {
        Box::pin(async move {
            let mut body = self.request_body(request);
            if let Value::Object(map) = &mut body {
                for key in ["stream", "stream_options", "max_tokens"] {
                    map.remove(key);
                }
            }
            let response = match send(self.post("/chat/completions/input_tokens", &body)).await {
                Ok(response) => response,
                Err(error) if error.offers_nothing_here() => return Ok(None),
                Err(error) => return Err(error),
            };
            super::counted_input_tokens(response).await
        })
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest<'a>,
        deltas: &'a DeltaSink,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let body = self.request_body(request);
            let server = super::ServerAt {
                client: &self.client,
                base_url: &self.config.base_url,
            };
            self.config
                .retry
                .run(deltas, || self.attempt(&body, deltas), &server)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolResultContent;

    /// A provider for a local server that is never called: for building requests.
    fn local_provider() -> OpenAiProvider {
        OpenAiProvider::new(OpenAiConfig {
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key: None,
            model: "local".into(),
            retry: RetryPolicy::default(),
        })
        .unwrap()
    }

    #[test]
    fn a_server_without_a_counting_endpoint_offers_no_count_and_other_errors_stay_errors() {
        let answered = |status: u16| ProviderError::from_http(status, None, "{\"error\":{\"message\":\"x\"}}");
        for status in [404, 405, 501] {
            assert!(answered(status).offers_nothing_here(), "{status}");
        }
        for status in [400, 401, 429, 500, 503] {
            assert!(!answered(status).offers_nothing_here(), "{status}");
        }
        assert!(!ProviderError::Network("refused".into()).offers_nothing_here());
    }

    #[test]
    fn maps_tool_calls_and_results_both_ways() {
        let provider = local_provider();
        let request = ModelRequest {
            system: "sys".into(),
            tools: vec![],
            messages: &[
                Message::user_text("go"),
                Message::blocks(
                    Role::Assistant,
                    vec![
                        ContentBlock::Text {
                            text: "looking".into(),
                            extra: Default::default(),
                        },
                        ContentBlock::ToolUse {
                            id: "c1".into(),
                            name: "glob".into(),
                            input: json!({"pattern": "*"}),
                            extra: Default::default(),
                        },
                    ],
                ),
                Message::blocks(
                    Role::User,
                    vec![ContentBlock::ToolResult {
                        tool_use_id: "c1".into(),
                        content: ToolResultContent::Text("a.rs".into()),
                        is_error: None,
                        extra: Default::default(),
                    }],
                ),
            ],
            max_tokens: 10,
            cache_check: crate::provider::CacheCheck::Off,
            think: false,
        };
        let body = provider.request_body(&request);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": "looking", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "glob", "arguments": "{\"pattern\":\"*\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "a.rs"}
            ])
        );

        let (sink, _events) = tokio::sync::mpsc::unbounded_channel();
        let mut assembler = ChatAssembler::default();
        for chunk in [
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"bash","arguments":"{\"comm"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#,
        ] {
            assembler.handle(chunk, &sink).unwrap();
        }
        let response = assembler.finish().unwrap();
        assert_eq!(response.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(response.usage.input_tokens, 12);
        assert_eq!(
            response.content,
            vec![
                ContentBlock::Text {
                    text: "Hi".into(),
                    extra: Default::default()
                },
                ContentBlock::ToolUse {
                    id: "x".into(),
                    name: "bash".into(),
                    input: json!({"command": "ls"}),
                    extra: Default::default(),
                }
            ]
        );
    }

    #[test]
    fn consecutive_user_messages_go_as_one_user_turn() {
        let provider = local_provider();
        let request = ModelRequest {
            system: String::new(),
            tools: vec![],
            messages: &[
                Message::user_text("[Compacted] the summary"),
                Message::user_text("fix the parser"),
                Message::assistant_text("done"),
                Message::blocks(Role::User, vec![ContentBlock::text("and the lexer")]),
            ],
            max_tokens: 10,
            cache_check: crate::provider::CacheCheck::Off,
            think: false,
        };
        let body = provider.request_body(&request);
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            body["messages"][0]["content"],
            "[Compacted] the summary\n\nfix the parser"
        );
    }
}
