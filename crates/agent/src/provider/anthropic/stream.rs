//! Assembling one streamed Messages API response from its server-sent events: blocks
//! as they start, grow and stop, the usage as it is reported, and the server's cache
//! diagnosis.

use super::*;

enum BlockBuilder {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// A block type we do not know: kept as it started, deltas ignored.
    Other(Value),
}

/// Builds the response from the event sequence `message_start`, `content_block_*`,
/// `message_delta`, `message_stop`; `ping` and unknown events are skipped.
#[derive(Default)]
pub struct StreamAssembler {
    blocks: BTreeMap<u64, BlockBuilder>,
    usage: Usage,
    stop_reason: Option<String>,
    id: Option<String>,
    cache_diagnosis: Option<CacheDiagnosis>,
}

impl StreamAssembler {
    /// Handle one event; returns the response once `message_stop` arrives.
    pub fn handle(&mut self, event: &SseEvent, deltas: &DeltaSink) -> Result<Option<ModelResponse>, ProviderError> {
        let data: Value = serde_json::from_str(&event.data)
            .map_err(|error| ProviderError::Protocol(format!("event {:?} is not JSON: {error}", event.event)))?;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                if let Some(usage) = data.pointer("/message/usage") {
                    merge_usage(&mut self.usage, usage);
                }
                self.id = data.pointer("/message/id").and_then(Value::as_str).map(str::to_string);
                self.cache_diagnosis = data.pointer("/message/diagnostics").map(cache_diagnosis);
            }
            "content_block_start" => {
                let index = index_of(&data)?;
                let block = data.get("content_block").cloned().unwrap_or(Value::Null);
                let builder = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("").to_string();
                        if !text.is_empty() {
                            let _ = deltas.send(StreamEvent::Text(text.clone()));
                        }
                        BlockBuilder::Text(text)
                    }
                    Some("tool_use") => {
                        let id = string_field(&block, "id")?;
                        let name = string_field(&block, "name")?;
                        let _ = deltas.send(StreamEvent::ToolUseStarted {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        let initial = block.get("input").cloned().unwrap_or_else(|| json!({}));
                        BlockBuilder::ToolUse {
                            id,
                            name,
                            json: String::new(),
                            initial,
                        }
                    }
                    Some("thinking") => BlockBuilder::Thinking {
                        thinking: block.get("thinking").and_then(Value::as_str).unwrap_or("").to_string(),
                        signature: block.get("signature").and_then(Value::as_str).unwrap_or("").to_string(),
                    },
                    _ => BlockBuilder::Other(block),
                };
                self.blocks.insert(index, builder);
            }
            "content_block_delta" => {
                let index = index_of(&data)?;
                let delta = data.get("delta").cloned().unwrap_or(Value::Null);
                let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("").to_string();
                match (self.blocks.get_mut(&index), delta.get("type").and_then(Value::as_str)) {
                    (Some(BlockBuilder::Text(text)), Some("text_delta")) => {
                        let piece = piece("text");
                        text.push_str(&piece);
                        let _ = deltas.send(StreamEvent::Text(piece));
                    }
                    (Some(BlockBuilder::ToolUse { json, .. }), Some("input_json_delta")) => {
                        json.push_str(&piece("partial_json"));
                    }
                    (Some(BlockBuilder::Thinking { thinking, .. }), Some("thinking_delta")) => {
                        let piece = piece("thinking");
                        thinking.push_str(&piece);
                        let _ = deltas.send(StreamEvent::Thinking(piece));
                    }
                    (Some(BlockBuilder::Thinking { signature, .. }), Some("signature_delta")) => {
                        signature.push_str(&piece("signature"));
                    }
                    (None, _) => {
                        return Err(ProviderError::Protocol(format!("delta for unknown block {index}")));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = data.get("usage") {
                    merge_usage(&mut self.usage, usage);
                }
            }
            "message_stop" => return self.finish().map(Some),
            "error" => return Err(ProviderError::from_stream_error(&event.data)),
            // `ping`, `content_block_stop` and event types added after this was written.
            _ => {}
        }
        Ok(None)
    }

    fn finish(&mut self) -> Result<ModelResponse, ProviderError> {
        let mut content = Vec::with_capacity(self.blocks.len());
        let mut cut_off = Vec::new();
        let truncated = self.stop_reason.as_deref() == Some(STOP_MAX_TOKENS);
        for (_, builder) in std::mem::take(&mut self.blocks) {
            content.push(match builder {
                BlockBuilder::Text(text) => ContentBlock::Text {
                    text,
                    extra: Default::default(),
                },
                BlockBuilder::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                } => {
                    let input = if json.trim().is_empty() {
                        initial
                    } else {
                        match crate::json::from_str(&json) {
                            Ok(input) => input,
                            Err(_) if truncated => {
                                cut_off.push(CutCall {
                                    name,
                                    received_chars: json.chars().count(),
                                });
                                continue;
                            }
                            Err(error) => {
                                return Err(ProviderError::Protocol(format!(
                                    "tool input for {name} is not valid JSON: {error}"
                                )));
                            }
                        }
                    };
                    ContentBlock::ToolUse {
                        id,
                        name,
                        input,
                        extra: Default::default(),
                    }
                }
                BlockBuilder::Thinking { thinking, signature } => {
                    ContentBlock::Unknown(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
                }
                BlockBuilder::Other(value) => ContentBlock::Unknown(value),
            });
        }
        Ok(ModelResponse {
            content,
            stop_reason: self.stop_reason.take(),
            usage: self.usage,
            cut_off,
            id: self.id.take(),
            cache_diagnosis: self.cache_diagnosis.take(),
        })
    }
}

/// `diagnostics` of a response: `cache_miss_reason` null while the comparison is
/// pending, else `{type, cache_missed_input_tokens}`.
fn cache_diagnosis(diagnostics: &Value) -> CacheDiagnosis {
    let reason = diagnostics.get("cache_miss_reason").filter(|reason| !reason.is_null());
    CacheDiagnosis {
        reason: reason.map(|reason| {
            reason
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string()
        }),
        missed_input_tokens: reason
            .and_then(|reason| reason.get("cache_missed_input_tokens"))
            .and_then(Value::as_u64),
    }
}

fn index_of(data: &Value) -> Result<u64, ProviderError> {
    data.get("index")
        .and_then(Value::as_u64)
        .ok_or_else(|| ProviderError::Protocol("content block event without index".into()))
}

fn string_field(block: &Value, key: &str) -> Result<String, ProviderError> {
    block
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ProviderError::Protocol(format!("tool_use block without {key}")))
}

pub(super) fn merge_usage(usage: &mut Usage, value: &Value) {
    let field = |key: &str| value.get(key).and_then(Value::as_u64);
    if let Some(n) = field("input_tokens") {
        usage.input_tokens = n;
    }
    if let Some(n) = field("output_tokens") {
        usage.output_tokens = n;
    }
    if let Some(n) = field("cache_read_input_tokens") {
        usage.cache_read_input_tokens = n;
    }
    if let Some(n) = field("cache_creation_input_tokens") {
        usage.cache_creation_input_tokens = n;
    }
    if let Some(n) = value
        .pointer("/output_tokens_details/thinking_tokens")
        .and_then(Value::as_u64)
    {
        usage.thinking_tokens = Some(n);
    }
}
