//! Errors from a model API, classified so the agent knows what to do: compact and
//! retry, wait and retry, or stop with a clear message.

use std::time::Duration;

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProviderError {
    #[error("the prompt is too long for the model: {message}")]
    ContextTooLong {
        message: String,
        /// The prompt's size and the most the server takes, in tokens, when it said.
        overflow: Option<TokenOverflow>,
    },
    #[error("rate limited (HTTP 429): {message}")]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("the API is overloaded: {message}")]
    Overloaded { message: String },
    #[error("server error (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    #[error(
        "authentication failed (HTTP {status}): {message}. Check ANTHROPIC_API_KEY (or the key for your provider)."
    )]
    Auth { status: u16, message: String },
    #[error("the API rejected the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    #[error("network error: {0}")]
    Network(String),
    /// Nothing listens at the server's address (it is down, or restarting).
    #[error("{0}")]
    NotUp(String),
    #[error("the response stream was cut: {0}")]
    StreamCut(String),
    /// llama.cpp's slots share one cache (its `-c`): a request running beside this
    /// one took the room this one needed, and the server stopped it.
    #[error(
        "a collision: another request on the server filled the cache its slots share, and the server stopped this one ({message})"
    )]
    Collision { message: String },
    #[error("malformed response from the API: {0}")]
    Protocol(String),
    /// The server's compaction refused or failed, by its code (`compaction_unavailable`,
    /// `compaction_nothing_to_summarize`, `compaction_block_misplaced`,
    /// `compaction_signature_invalid`).
    #[error("the server's compaction failed ({code}): {message}")]
    Compaction { code: String, message: String },
}

impl ProviderError {
    /// A request that never got an answer, said plainly: a refused connection names
    /// the address and asks whether the server runs, a timeout says how long it waited.
    pub fn from_request(error: &reqwest::Error) -> Self {
        let at = error
            .url()
            .and_then(|url| Some(format!("{}:{}", url.host_str()?, url.port_or_known_default()?)))
            .unwrap_or_else(|| "the server".into());
        let refused = std::iter::successors(Some(error as &dyn std::error::Error), |error| error.source())
            .filter_map(|error| error.downcast_ref::<std::io::Error>())
            .any(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
        if refused {
            ProviderError::NotUp(format!("connection refused at {at} (is the server running?)"))
        } else if error.is_timeout() {
            ProviderError::Network(format!(
                "no answer from {at} in time (is it overloaded, or still loading?)"
            ))
        } else if error.is_connect() {
            ProviderError::Network(format!("cannot connect to {at}: {error}"))
        } else {
            ProviderError::Network(error.to_string())
        }
    }

    /// Errors that another attempt may cure.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. }
                | ProviderError::Overloaded { .. }
                | ProviderError::Server { .. }
                | ProviderError::Network(_)
                | ProviderError::NotUp(_)
                | ProviderError::StreamCut(_)
                | ProviderError::Collision { .. }
        )
    }

    /// The server is not up yet: nothing listens (down, or restarting), or it says it
    /// is unavailable (llama-server's 503 while it loads its model). Worth waiting for
    /// longer than other failures are retried.
    pub fn server_not_up(&self) -> bool {
        matches!(
            self,
            ProviderError::NotUp(_) | ProviderError::Server { status: 503, .. }
        )
    }

    /// Another request took the server's shared cache: retrying is of use only once
    /// that request is done.
    pub fn is_collision(&self) -> bool {
        matches!(self, ProviderError::Collision { .. })
    }

    /// The answer of a server without the endpoint asked (a token count on vLLM,
    /// Ollama or an older llama.cpp): not found, not allowed, or not implemented.
    pub fn offers_nothing_here(&self) -> bool {
        matches!(
            self,
            ProviderError::BadRequest { status: 404 | 405, .. } | ProviderError::Server { status: 501, .. }
        )
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Classify an HTTP error response from its status, `retry-after` header and body.
    pub fn from_http(status: u16, retry_after: Option<&str>, body: &str) -> Self {
        let (kind, message) = error_fields(body);
        let message = message.unwrap_or_else(|| shorten(body));
        if is_context_overflow(kind.as_deref(), &message) {
            let overflow = TokenOverflow::from_body(body).or_else(|| TokenOverflow::from_message(&message));
            return ProviderError::ContextTooLong { message, overflow };
        }
        if let Some(code) = kind.filter(|kind| kind.starts_with(COMPACTION_ERROR)) {
            return ProviderError::Compaction { code, message };
        }
        if is_shared_cache_full(&message) {
            return ProviderError::Collision { message };
        }
        match status {
            429 => ProviderError::RateLimited {
                retry_after: retry_after.and_then(parse_retry_after),
                message,
            },
            529 => ProviderError::Overloaded { message },
            401 | 403 => ProviderError::Auth { status, message },
            500..=599 => ProviderError::Server { status, message },
            _ => ProviderError::BadRequest { status, message },
        }
    }

    /// Classify an `error` event that arrives inside a 200 stream.
    pub fn from_stream_error(data: &str) -> Self {
        let (kind, message) = error_fields(data);
        let message = message.unwrap_or_else(|| shorten(data));
        if is_context_overflow(kind.as_deref(), &message) {
            let overflow = TokenOverflow::from_body(data).or_else(|| TokenOverflow::from_message(&message));
            return ProviderError::ContextTooLong { message, overflow };
        }
        if let Some(code) = kind.as_deref().filter(|kind| kind.starts_with(COMPACTION_ERROR)) {
            return ProviderError::Compaction {
                code: code.to_string(),
                message,
            };
        }
        if is_shared_cache_full(&message) {
            return ProviderError::Collision { message };
        }
        match kind.as_deref() {
            Some("overloaded_error") => ProviderError::Overloaded { message },
            Some("rate_limit_error") => ProviderError::RateLimited {
                retry_after: None,
                message,
            },
            Some("authentication_error" | "permission_error") => ProviderError::Auth { status: 401, message },
            Some("invalid_request_error") => ProviderError::BadRequest { status: 400, message },
            _ => ProviderError::Server { status: 500, message },
        }
    }
}

/// How the codes of the server's compaction errors begin.
const COMPACTION_ERROR: &str = "compaction_";

/// The server's compaction is down for now: worth one more try before the model
/// writes the summary instead.
pub const COMPACTION_UNAVAILABLE: &str = "compaction_unavailable";

/// What a server said about a prompt it refused as too long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenOverflow {
    pub prompt_tokens: u64,
    pub max_tokens: u64,
}

impl TokenOverflow {
    /// llama.cpp's fields: `{"error":{"n_prompt_tokens":4133,"n_ctx":2048,…}}`.
    fn from_body(body: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(body).ok()?;
        let error = value.get("error").unwrap_or(&value);
        Some(TokenOverflow {
            prompt_tokens: error.get("n_prompt_tokens")?.as_u64()?,
            max_tokens: error.get("n_ctx")?.as_u64()?,
        })
        .filter(|o| o.max_tokens > 0)
    }

    /// The numbers in the messages of Anthropic (`prompt is too long: 219898 tokens >
    /// 200000 maximum`), llama.cpp (`request (4133 tokens) exceeds the available context
    /// size (2048 tokens)`) and OpenAI (`maximum context length is 8192 tokens. However,
    /// your messages resulted in 9000 tokens`).
    fn from_message(message: &str) -> Option<Self> {
        let numbers: Vec<u64> = message
            .split(|c: char| !c.is_ascii_digit())
            .filter(|part| !part.is_empty())
            .filter_map(|part| part.parse().ok())
            .collect();
        let (prompt_tokens, max_tokens) = match numbers.as_slice() {
            [a, b, ..] if message.contains("maximum context length") => (*b, *a),
            [a, b, ..] => (*a, *b),
            _ => return None,
        };
        (max_tokens > 0 && prompt_tokens > max_tokens).then_some(TokenOverflow {
            prompt_tokens,
            max_tokens,
        })
    }
}

/// (type or code, message) from the error bodies of Anthropic, OpenAI and llama.cpp.
fn error_fields(body: &str) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return (None, None);
    };
    let error = value.get("error").unwrap_or(&value);
    let message = error.get("message").and_then(Value::as_str).map(str::to_string);
    let code = error.get("code").and_then(Value::as_str);
    let kind = error.get("type").and_then(Value::as_str);
    let kind = match (code, kind) {
        (Some("context_length_exceeded"), _) => Some("context_length_exceeded"),
        (_, Some(kind)) => Some(kind),
        (Some(code), None) => Some(code),
        (None, None) => None,
    };
    (kind.map(str::to_string), message)
}

fn is_context_overflow(kind: Option<&str>, message: &str) -> bool {
    matches!(kind, Some("exceed_context_size_error" | "context_length_exceeded"))
        || message.contains("prompt is too long")
        || message.contains("exceeds the available context size")
        || message.contains("maximum context length")
}

/// llama.cpp's words when its cache has no room left for the next token of a request
/// it already accepted (a request too long for the window is refused before it starts,
/// as too long): the room went to another request in a slot beside it.
fn is_shared_cache_full(message: &str) -> bool {
    message.contains("Context size has been exceeded")
}

/// `retry-after` in seconds (the API sends whole or fractional seconds).
fn parse_retry_after(value: &str) -> Option<Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|secs| secs.is_finite() && *secs >= 0.0)
        .map(|secs| Duration::from_secs_f64(secs.min(300.0)))
}

fn shorten(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return "(empty body)".to_string();
    }
    crate::text::prefix_chars(body, 300).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's compaction errors keep their code, over HTTP and in a stream.
    #[test]
    fn compaction_errors_are_named_by_their_code() {
        for code in [
            "compaction_unavailable",
            "compaction_nothing_to_summarize",
            "compaction_block_misplaced",
            "compaction_signature_invalid",
        ] {
            let body = format!(r#"{{"type":"error","error":{{"type":"{code}","message":"no"}}}}"#);
            let expected = ProviderError::Compaction {
                code: code.into(),
                message: "no".into(),
            };
            assert_eq!(ProviderError::from_http(400, None, &body), expected);
            assert_eq!(ProviderError::from_stream_error(&body), expected);
            assert!(!expected.is_retryable(), "the summariser decides, not the retry loop");
        }
    }

    /// llama.cpp stops a request whose room in its shared cache another request took,
    /// in the stream or before it: a collision, named as such and retried, where it
    /// used to read as a server error like any other.
    #[test]
    fn a_full_shared_cache_is_a_collision() {
        let body = r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#;
        for error in [
            ProviderError::from_stream_error(body),
            ProviderError::from_http(500, None, body),
        ] {
            assert!(error.is_collision() && error.is_retryable(), "{error:?}");
            assert!(error.to_string().starts_with("a collision: "), "{error}");
        }
        let too_long = r#"{"error":{"code":400,"message":"request (5422 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error"}}"#;
        assert!(!ProviderError::from_http(400, None, too_long).is_collision());
    }

    /// Every line of the shared fixture, classified.
    #[test]
    fn classifies_the_shared_error_fixtures() {
        let fixture = include_str!("../../../../tests/fixtures/anthropic-errors.jsonl");
        let classified: Vec<ProviderError> = fixture
            .lines()
            .map(|line| {
                let value: Value = serde_json::from_str(line).unwrap();
                let status = value["http_status"].as_u64().unwrap() as u16;
                if let Some(sse) = value.get("sse_event").and_then(Value::as_str) {
                    let data = sse.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                    return ProviderError::from_stream_error(data);
                }
                let retry_after = value["headers"].get("retry-after").and_then(Value::as_str);
                ProviderError::from_http(status, retry_after, &value["body"].to_string())
            })
            .collect();
        assert!(matches!(
            &classified[0],
            ProviderError::ContextTooLong { message, overflow: Some(TokenOverflow { prompt_tokens: 219_898, max_tokens: 200_000 }) }
                if message.contains("219898 tokens")
        ));
        assert!(matches!(
            &classified[1],
            ProviderError::ContextTooLong { message, overflow: Some(TokenOverflow { prompt_tokens: 4133, max_tokens: 2048 }) }
                if message.contains("4133 tokens")
        ));
        assert_eq!(classified[2].retry_after(), Some(Duration::from_secs(2)));
        assert!(classified[2].is_retryable());
        assert!(matches!(classified[3], ProviderError::Overloaded { .. }));
        assert!(matches!(classified[4], ProviderError::Auth { status: 401, .. }));
        assert!(!classified[4].is_retryable());
        assert!(matches!(classified[5], ProviderError::Overloaded { .. }));
    }

    #[test]
    fn openai_and_unparseable_bodies() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            ProviderError::from_http(400, None, openai),
            ProviderError::ContextTooLong { overflow: None, .. }
        ));
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9100 tokens. Please reduce the length of the messages.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            ProviderError::from_http(400, None, openai),
            ProviderError::ContextTooLong {
                overflow: Some(TokenOverflow {
                    prompt_tokens: 9100,
                    max_tokens: 8192
                }),
                ..
            }
        ));
        let html = ProviderError::from_http(502, None, "<html>bad gateway</html>");
        assert_eq!(
            html,
            ProviderError::Server {
                status: 502,
                message: "<html>bad gateway</html>".into()
            }
        );
        assert!(matches!(
            ProviderError::from_http(400, None, ""),
            ProviderError::BadRequest { .. }
        ));
        assert_eq!(parse_retry_after("soon"), None);
    }
}
