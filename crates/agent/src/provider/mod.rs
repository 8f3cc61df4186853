//! Everything scratchpad says to a model goes through [`Provider`]: stream one
//! response, reporting deltas as they arrive, and return it only once it is complete
//! (a cut stream never yields half a message).

pub mod anthropic;
mod api_key;
pub mod demo;
pub mod error;
pub mod openai;
pub mod retry;
mod server;
pub mod sse;
mod summariser;
pub use server::ServerFacts;
use server::{
    ModelName, PROBE_TIMEOUT, ServerAt, counted_input_tokens, http_client, probe_server, read_events, send, tokenized,
    wait_for_server,
};
use summariser::SUMMARY_REMINDER;
pub use summariser::{CachedSummary, ModelSummary, ProviderSummariser, SummaryProgress};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use crate::compact::markers::CutCall;
use crate::compact::{Summariser, SummariserChoice, Summary, SummaryError, SummaryRequest};
use crate::message::{ContentBlock, Message};

pub use crate::message::ToolSpec;
pub use crate::protocol::Usage;
pub use api_key::ApiKey;
pub use error::ProviderError;
pub use retry::RetryPolicy;
use sse::{SseDecoder, SseEvent};

/// One request to the model. It borrows the history: a call copies nothing of it.
#[derive(Clone, Debug, Default)]
pub struct ModelRequest<'m> {
    pub system: String,
    pub tools: Vec<ToolSpec>,
    pub messages: &'m [Message],
    pub max_tokens: u32,
    /// Whether to ask the server why its prompt cache missed (where it can say).
    pub cache_check: CacheCheck,
    /// A turn's own call, where the model may think first (`provider.thinking`); a
    /// summary or a count never asks for thinking.
    pub think: bool,
}

/// A history for the server to compact: the ordinary request of the messages, with
/// the session's system prompt and tools, and our summary instructions.
pub struct ServerCompaction<'a> {
    pub system: String,
    pub tools: Vec<ToolSpec>,
    pub messages: &'a [Message],
    pub instructions: String,
    pub max_tokens: u32,
}

/// `provider.thinking`: whether a turn's calls let the model think first, and how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Thinking {
    #[default]
    Off,
    /// The model decides how much to think (Anthropic's adaptive thinking).
    Adaptive,
    /// Up to this many tokens of thinking, on top of the reply's own `max_tokens`.
    Budget(u32),
}

/// The smallest thinking budget Anthropic's API takes.
pub const MIN_THINKING_BUDGET: u32 = 1_024;

impl Serialize for Thinking {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Thinking::Off => serializer.serialize_str("off"),
            Thinking::Adaptive => serializer.serialize_str("adaptive"),
            Thinking::Budget(tokens) => serializer.serialize_u32(*tokens),
        }
    }
}

impl<'de> Deserialize<'de> for Thinking {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Word(String),
            Tokens(u64),
        }
        match Written::deserialize(deserializer)? {
            Written::Word(word) if word == "off" => Ok(Thinking::Off),
            Written::Word(word) if word == "adaptive" => Ok(Thinking::Adaptive),
            Written::Tokens(tokens) => u32::try_from(tokens)
                .ok()
                .filter(|&tokens| tokens >= MIN_THINKING_BUDGET)
                .map(Thinking::Budget)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "thinking = {tokens}: a budget is at least {MIN_THINKING_BUDGET} tokens"
                    ))
                }),
            Written::Word(word) => Err(serde::de::Error::custom(format!(
                "thinking = \"{word}\": it is \"off\", \"adaptive\" or a budget in tokens (at least {MIN_THINKING_BUDGET})"
            ))),
        }
    }
}

/// Asking the server why its prompt cache could not reuse an earlier request's prefix
/// (Anthropic's cache diagnostics): only for the turn's own calls, whose prefix is
/// meant to carry over; a summary request or a count has another prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CacheCheck {
    #[default]
    Off,
    /// The first call of a chain: nothing to compare with yet.
    Start,
    /// Compare with the request that got the response with this id.
    After(String),
}

/// What the server said about its prompt cache: a reason, or `None` while its
/// comparison was still pending. No diagnosis at all means no divergence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheDiagnosis {
    pub reason: Option<String>,
    pub missed_input_tokens: Option<u64>,
}

/// A complete assistant response.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelResponse {
    /// The complete blocks: a tool call cut off by `max_tokens` is not among them.
    pub content: Vec<ContentBlock>,
    pub stop_reason: Option<String>,
    pub usage: Usage,
    /// Tool calls `max_tokens` cut off before their input was complete.
    pub cut_off: Vec<CutCall>,
    /// The response's id, where the server gives one.
    pub id: Option<String>,
    pub cache_diagnosis: Option<CacheDiagnosis>,
}

/// The stop reason of a response that reached its `max_tokens` (OpenAI's `length` is
/// reported as this too).
pub const STOP_MAX_TOKENS: &str = "max_tokens";

impl ModelResponse {
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// What arrives while a response streams, for live display.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    Text(String),
    Thinking(String),
    ToolUseStarted {
        id: String,
        name: String,
    },
    /// The attempt failed and will be retried: drop whatever streamed so far.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
}

pub type DeltaSink = UnboundedSender<StreamEvent>;

pub trait Provider: Send + Sync {
    /// `anthropic`, `openai` or `demo`.
    fn kind(&self) -> &'static str;
    fn model(&self) -> &str;

    /// Stream one response (with retries where the error allows them).
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest<'a>,
        deltas: &'a DeltaSink,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>>;

    /// What the server states about itself (its window, the model it serves, whether
    /// its template renders tools), asked once at the start. A provider whose model was
    /// not configured names the served one from then on.
    fn discover(&self) -> BoxFuture<'_, ServerFacts> {
        Box::pin(async { ServerFacts::default() })
    }

    /// The exact prompt tokens of `request`, where the provider offers a counting
    /// endpoint; `None` when it does not.
    fn count_tokens<'a>(&'a self, request: &'a ModelRequest<'a>) -> BoxFuture<'a, Result<Option<u64>, ProviderError>> {
        let _ = request;
        Box::pin(async { Ok(None) })
    }

    /// The tokens of `text` alone, without a chat template, where the server
    /// tokenizes on request (llama.cpp's `/tokenize`); `None` when it does not.
    fn tokenize<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<Option<u64>, ProviderError>> {
        let _ = text;
        Box::pin(async { Ok(None) })
    }

    /// Where this provider's prompt token counts come from.
    fn token_basis(&self) -> crate::protocol::TokenBasis {
        crate::protocol::TokenBasis::Reported
    }

    /// Whether the provider caches prompt prefixes, so that a summary asked for after
    /// the conversation itself (the prefix of the last calls) reads it from the cache.
    fn caches_prompt_prefix(&self) -> bool {
        false
    }

    /// Wait for a server that did not answer until it does (its health polled), for as
    /// long as the provider waits for one starting; whether it answered.
    fn wait_until_up(&self) -> BoxFuture<'_, bool> {
        Box::pin(async { true })
    }

    /// Whether the server compacts a history itself (Anthropic's compaction on demand).
    fn compacts_on_server(&self) -> bool {
        false
    }

    /// The server's own compaction of `request.messages`: the block it answers with,
    /// to be kept byte for byte first in the history. Only called where
    /// [`Provider::compacts_on_server`].
    fn compact_on_server<'a>(
        &'a self,
        request: &'a ServerCompaction<'a>,
    ) -> BoxFuture<'a, Result<Value, ProviderError>> {
        let _ = request;
        Box::pin(async {
            Err(ProviderError::Compaction {
                code: "unsupported".into(),
                message: "this provider has no server-side compaction".into(),
            })
        })
    }

    /// The lossy summary for compaction, at most `max_tokens` long. By default the
    /// model is asked, with the summary instructions as system prompt and no tools.
    /// Its text streams to `deltas` as it is written.
    fn summarise<'a>(
        &'a self,
        request: &'a SummaryRequest<'a>,
        max_tokens: u32,
        deltas: &'a DeltaSink,
    ) -> BoxFuture<'a, Result<ModelSummary, ProviderError>> {
        Box::pin(async move {
            let messages = [Message::user_text(format!(
                "{SUMMARY_REMINDER}\n\n<history>\n{}\n</history>",
                request.history_text
            ))];
            let model_request = ModelRequest {
                system: request.instructions.clone(),
                tools: Vec::new(),
                messages: &messages,
                max_tokens,
                cache_check: CacheCheck::Off,
                think: false,
            };
            let response = self.complete(&model_request, deltas).await?;
            Ok(ModelSummary {
                text: response.text(),
                cut: response.stop_reason.as_deref() == Some(STOP_MAX_TOKENS),
            })
        })
    }
}
