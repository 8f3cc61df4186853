//! What the context holds now and the figures behind the gauge: the limit, the
//! window and where each token figure comes from.

use serde::{Deserialize, Serialize};

/// What the context holds now, for the gauge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextStatus {
    /// The seed's estimate of the messages: what the limit applies to.
    pub estimate: usize,
    pub limit: usize,
    pub target: usize,
    pub messages: usize,
    pub snip_max_messages: usize,
    /// The system prompt and tool definitions, sent with every request and outside
    /// the limit.
    pub fixed: usize,
    /// Tokens of the last call, or re-estimated from its ratio after a compaction.
    pub tokens: Option<TokenFigure>,
    /// A summary being prepared in the background for stage 4.
    #[serde(default)]
    pub background: Option<BackgroundStatus>,
    /// The last call's prompt cache missed, as the server said why (cleared by a call
    /// where it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_missed: Option<super::CacheReport>,
}

/// A background summary as the gauge marks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundStatus {
    /// The estimate's share of the limit when it started.
    pub started_at_percent: usize,
    pub ready: bool,
}

/// The model's context window and where that figure came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub tokens: u64,
    pub source: WindowSource,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum WindowSource {
    /// The server said so, e.g. llama.cpp's `/props`.
    Server { endpoint: String },
    /// The table of known models.
    ModelTable { family: String },
    /// `provider.context_window_tokens`.
    Configured,
}

impl std::fmt::Display for WindowSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowSource::Server { endpoint } => write!(f, "from the server's {endpoint}"),
            WindowSource::ModelTable { family } => write!(f, "known for {family}"),
            WindowSource::Configured => write!(f, "from provider.context_window_tokens"),
        }
    }
}

/// Where a token figure comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenBasis {
    /// Reported by the API for the last call.
    Reported,
    /// The offline demo's count: a stated rule applied to the request it received.
    DemoCount,
    /// Re-estimated from the last measured ratio after the history changed by
    /// compaction; replaced when the next call reports.
    Estimated,
    /// Counted exactly by the provider's counting endpoint for the history as it is.
    Counted,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenFigure {
    pub tokens: u64,
    pub window_tokens: u64,
    /// Characters of the request `tokens` is for (fixed part + estimate).
    pub request_chars: usize,
    /// `request_chars / tokens`: measured by a call, or re-estimated by content after
    /// a compaction, so that it applies to what the context holds.
    pub chars_per_token: f64,
    pub basis: TokenBasis,
}
