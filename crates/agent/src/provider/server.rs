//! The HTTP side every provider shares: the client, what a server states about itself
//! and the probes that ask it, the wait for a server that is not up yet, and sending a
//! request and reading its streamed events.

use super::*;

/// The HTTP client for model APIs: a connect timeout and an idle timeout (the longest
/// wait for the headers or for the next bytes of the body) but no overall one, since a
/// streamed response may take minutes.
pub(crate) fn http_client(idle: std::time::Duration) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(30))
        .read_timeout(idle)
        .build()
        .map_err(|error| ProviderError::Network(error.to_string()))
}

/// What a server states about itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerFacts {
    pub window: Option<crate::protocol::Window>,
    /// The model it serves, when it names exactly one.
    pub model: Option<String>,
    /// Whether its chat template renders tool definitions (llama.cpp's
    /// `chat_template_caps.supports_tools`); `None` when it does not say.
    pub renders_tools: Option<bool>,
    /// Why the server did not answer at all (nothing listens, or it is still loading
    /// its model), said as a request error says it: worth asking again before the
    /// next request.
    pub unreachable: Option<String>,
    /// It is llama.cpp's server (it answers `/props`). Its requests share one cache
    /// (its slots, all in the `-c` it was started with), so a second request at once
    /// competes with the first for it; and it counts a request's tokens itself, in
    /// milliseconds and beside a running request, so it is worth asking before every
    /// call.
    pub llama_cpp: bool,
}

/// A provider's model id: the configured one, else the one the server says it serves,
/// else the provider's default. Learnt once, so it can be read as `&str` after.
pub(crate) struct ModelName {
    configured: String,
    served: std::sync::OnceLock<String>,
    default: &'static str,
}

impl ModelName {
    pub(crate) fn new(configured: String, default: &'static str) -> Self {
        ModelName {
            configured,
            served: std::sync::OnceLock::new(),
            default,
        }
    }

    pub(crate) fn get(&self) -> &str {
        if !self.configured.is_empty() {
            return &self.configured;
        }
        self.served.get().map_or(self.default, String::as_str)
    }

    /// The server named its model: used unless one was configured.
    pub(crate) fn learn(&self, facts: &ServerFacts) {
        if let Some(model) = &facts.model {
            let _ = self.served.set(model.clone());
        }
    }
}

/// Ask a server about itself: llama.cpp's `GET /props` at the server's root, then an
/// OpenAI-compatible `GET /v1/models` (vLLM's `max_model_len`, the one model served)
/// for what `/props` left out. `base_url` may end in `/v1`; `authorise` adds the
/// provider's credentials. Each probe has a short timeout: a server without these
/// endpoints costs at most a few seconds.
pub(crate) async fn probe_server(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    authorise: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> ServerFacts {
    use crate::protocol::{Window, WindowSource};
    let root = server_root(base_url);
    let unreachable = std::sync::Mutex::new(None::<String>);
    let get = |path: &str| {
        let request = authorise(client.get(format!("{root}{path}")).timeout(PROBE_TIMEOUT));
        let unreachable = &unreachable;
        let say = move |why: String| {
            if let Ok(mut said) = unreachable.lock() {
                said.get_or_insert(why);
            }
        };
        async move {
            let response = match request.send().await {
                Ok(response) => response,
                Err(error) => {
                    say(ProviderError::from_request(&error).to_string());
                    return None;
                }
            };
            // llama-server answers 503 while it loads its model.
            if response.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE {
                say(format!("{root} answers 503 (still loading its model?)"));
            }
            if !response.status().is_success() {
                return None;
            }
            response.json::<Value>().await.ok()
        }
    };
    let window = |tokens, endpoint: &str| Window {
        tokens,
        source: WindowSource::Server {
            endpoint: endpoint.into(),
        },
    };
    let mut facts = ServerFacts::default();
    if let Some(props) = get("/props").await {
        facts.window = crate::accounting::window_from_props(&props).map(|tokens| window(tokens, "/props"));
        facts.model = crate::accounting::model_from_props(&props);
        facts.renders_tools = crate::accounting::tools_from_props(&props);
        facts.llama_cpp = true;
    }
    if (facts.window.is_none() || facts.model.is_none())
        && let Some(models) = get("/v1/models").await
    {
        if facts.window.is_none() {
            facts.window =
                crate::accounting::window_from_models(&models, model).map(|tokens| window(tokens, "/v1/models"));
        }
        if facts.model.is_none() {
            facts.model = crate::accounting::model_from_models(&models);
        }
    }
    facts.unreachable = unreachable
        .into_inner()
        .ok()
        .flatten()
        .filter(|_| facts.window.is_none());
    facts
}

/// The server's root, where llama.cpp's own endpoints are (`/props`, `/health`,
/// `/slots`, `/tokenize`): `base_url` without a trailing `/v1`.
fn server_root(base_url: &str) -> &str {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed)
}

pub(crate) const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// The `input_tokens` of a token-counting endpoint's answer (Anthropic's
/// `count_tokens`, llama.cpp's OpenAI-shaped `input_tokens`).
pub(crate) async fn counted_input_tokens(response: reqwest::Response) -> Result<Option<u64>, ProviderError> {
    let text = response
        .text()
        .await
        .map_err(|error| ProviderError::Network(error.to_string()))?;
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|value| value.get("input_tokens").and_then(serde_json::Value::as_u64))
        .map(Some)
        .ok_or_else(|| ProviderError::Protocol(format!("the token count answered {text}")))
}

/// llama.cpp's `POST /tokenize` at the server's root (`base_url` may end in `/v1`):
/// how many tokens `text` alone is. A server without it offers no count (`None`).
pub(crate) async fn tokenized(
    client: &reqwest::Client,
    base_url: &str,
    text: &str,
    authorise: impl Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> Result<Option<u64>, ProviderError> {
    let root = server_root(base_url);
    let request = authorise(
        client
            .post(format!("{root}/tokenize"))
            .json(&serde_json::json!({"content": text})),
    );
    let response = match send(request).await {
        Ok(response) => response,
        Err(error) if error.offers_nothing_here() => return Ok(None),
        Err(error) => return Err(error),
    };
    let text = response
        .text()
        .await
        .map_err(|error| ProviderError::Network(error.to_string()))?;
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|value| {
            value
                .get("tokens")
                .and_then(Value::as_array)
                .map(|tokens| tokens.len() as u64)
        })
        .map(Some)
        .ok_or_else(|| ProviderError::Protocol(format!("/tokenize answered {}", crate::text::prefix_chars(&text, 200))))
}

/// Poll [`server_answers`] every [`retry::HEALTH_POLL`] until it does or `wait` has
/// passed; whether it answered.
pub(crate) async fn wait_for_server(client: &reqwest::Client, base_url: &str, wait: std::time::Duration) -> bool {
    let started = tokio::time::Instant::now();
    loop {
        if server_answers(client, base_url).await {
            return true;
        }
        if started.elapsed() + retry::HEALTH_POLL >= wait {
            return false;
        }
        tokio::time::sleep(retry::HEALTH_POLL).await;
    }
}

/// The server at `base_url` as the retries ask about it: whether it answers, whether
/// a request runs on it.
pub(crate) struct ServerAt<'a> {
    pub client: &'a reqwest::Client,
    pub base_url: &'a str,
}

impl retry::ServerProbe for ServerAt<'_> {
    fn answers(&self) -> impl std::future::Future<Output = bool> + Send {
        server_answers(self.client, self.base_url)
    }

    fn idle(&self) -> impl std::future::Future<Output = Option<bool>> + Send {
        server_idle(self.client, self.base_url)
    }
}

/// Whether no request runs on the server now, for a retry after a collision:
/// llama.cpp's `GET /slots`, every slot not processing. `None` where the server does
/// not say (no such endpoint, or it is turned off).
pub(crate) async fn server_idle(client: &reqwest::Client, base_url: &str) -> Option<bool> {
    let root = server_root(base_url);
    let response = client
        .get(format!("{root}/slots"))
        .timeout(PROBE_TIMEOUT)
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let slots: Value = response.json().await.ok()?;
    let busy = slots
        .as_array()?
        .iter()
        .any(|slot| slot.get("is_processing").and_then(Value::as_bool) == Some(true));
    Some(!busy)
}

/// Whether the server answers now, for a wait on one that was not up: any answer of
/// its `/health` but llama-server's 503 (its model still loading) says it does.
pub(crate) async fn server_answers(client: &reqwest::Client, base_url: &str) -> bool {
    let root = server_root(base_url);
    match client.get(format!("{root}/health")).timeout(PROBE_TIMEOUT).send().await {
        Ok(response) => response.status() != reqwest::StatusCode::SERVICE_UNAVAILABLE,
        Err(_) => false,
    }
}

/// Send a request; an error status becomes a classified [`ProviderError`] (with the
/// server's `retry-after`), a success is returned for streaming.
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Result<reqwest::Response, ProviderError> {
    let response = request
        .send()
        .await
        .map_err(|error| ProviderError::from_request(&error))?;
    if response.status().is_success() {
        return Ok(response);
    }
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.unwrap_or_default();
    Err(ProviderError::from_http(status, retry_after.as_deref(), &text))
}

/// Decode the response body as server-sent events, handing each to `handle` until it
/// returns a result. `Ok(None)` means the stream ended first.
pub(crate) async fn read_events<T>(
    response: reqwest::Response,
    mut handle: impl FnMut(SseEvent) -> Result<Option<T>, ProviderError>,
) -> Result<Option<T>, ProviderError> {
    use futures::StreamExt;
    let mut stream = response.bytes_stream();
    let mut decoder = SseDecoder::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| ProviderError::StreamCut(error.to_string()))?;
        for event in decoder
            .feed(&chunk)
            .map_err(|error| ProviderError::Protocol(error.to_string()))?
        {
            if let Some(done) = handle(event)? {
                return Ok(Some(done));
            }
        }
    }
    match decoder
        .finish()
        .map_err(|error| ProviderError::Protocol(error.to_string()))?
    {
        Some(event) => handle(event),
        None => Ok(None),
    }
}
