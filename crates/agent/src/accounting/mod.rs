//! One accounting of what a request costs, read by the trigger, the gauge, `/context`,
//! the timeline and the limit, so that they cannot disagree.
//!
//! - The *estimate* is the seed's count of the messages; the limit applies to it alone.
//! - The *fixed part* is what every request carries besides the messages: the system
//!   prompt and the tool definitions, counted the way the estimate counts.
//! - A model call's *request characters* are the fixed part plus the estimate it was
//!   sent with; divided by the tokens that same call reported they give the characters
//!   per token, which turns a window in tokens into characters.

use serde::Serialize;

use crate::compact::{EstimateMode, Stage};
use crate::protocol::{CallPoint, TokenBasis, TokenFigure, Window};

/// Characters per token assumed until a call has measured it.
pub const DEFAULT_CHARS_PER_TOKEN: f64 = 4.0;

/// The share of the window an automatic limit fills.
pub const AUTO_WINDOW_PERCENT: u64 = 80;

/// The smallest `max_tokens` a reply is given, however full the window.
pub const MIN_REPLY_TOKENS: u64 = 256;

/// The longest summary asked of a model.
pub const SUMMARY_MAX_TOKENS: u64 = 4_096;

/// The least history text a summary request carries.
const MIN_SUMMARY_INPUT_CHARS: usize = 500;

/// What a summary request may take of the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SummaryBudget {
    /// Characters of history text (before `summary_input_chars` caps it further).
    pub input_chars: usize,
    /// The summary's `max_tokens`.
    pub max_tokens: u32,
}

/// Measured ratios outside this range are a server's odd count, not text: the limit
/// is sized with the nearest bound instead.
const PLAUSIBLE_CHARS_PER_TOKEN: std::ops::RangeInclusive<f64> = 1.0..=8.0;

/// The system prompt and tool definitions, counted as the estimate counts.
pub fn fixed_chars<T: Serialize + ?Sized>(system: &str, tools: &T, mode: EstimateMode) -> usize {
    system.chars().count() + mode.count(tools)
}

mod ledger;
mod limit;
pub mod units;
mod window;

pub use ledger::Ledger;
pub use limit::{AutoLimit, Fit, LimitChoice, LimitDecision, LimitNote, MIN_WORKING_CHARS, decide_limit};
pub use window::{
    known_window, model_from_models, model_from_props, tools_from_props, window_from_models, window_from_props,
};

/// The history's size both ways the accounting weighs it: its estimate in characters
/// and the token-like units of the whole request (fixed part included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub estimate: usize,
    pub units: usize,
}

/// Where a reply that the server stopped for length ended. A server stops a reply at
/// its `max_tokens`, or sooner where the prompt and the reply fill the window; the
/// two need different fixes, so the notice names the one that happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyEnd {
    MaxTokens { max_tokens: u32 },
    WindowFull { prompt: u64, reply: u64, window: u64 },
}

impl std::fmt::Display for ReplyEnd {
    /// What the reply reached: `its max_tokens limit (512 tokens)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplyEnd::MaxTokens { max_tokens } => write!(f, "its max_tokens limit ({max_tokens} tokens)"),
            // The sum is said as it is: "filled" read wrong where a few tokens were left.
            ReplyEnd::WindowFull { prompt, reply, window } => write!(
                f,
                "the end of the model's window ({prompt} prompt + {reply} reply = {} of its {window} tokens)",
                prompt + reply
            ),
        }
    }
}

/// The token figure for a call that reported `tokens` for `request_chars` characters.
pub fn measured(tokens: u64, request_chars: usize, window: u64, basis: TokenBasis) -> TokenFigure {
    TokenFigure {
        tokens,
        window_tokens: window,
        chars_per_token: request_chars as f64 / tokens.max(1) as f64,
        request_chars,
        basis,
    }
}

/// The figure re-estimated for a request of `request_chars` from a measured ratio.
pub fn re_estimated(last: &TokenFigure, request_chars: usize) -> TokenFigure {
    TokenFigure {
        tokens: (request_chars as f64 / last.chars_per_token.max(0.1)).round() as u64,
        request_chars,
        basis: TokenBasis::Estimated,
        ..last.clone()
    }
}

#[cfg(test)]
mod tests;
