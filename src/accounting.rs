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
use serde_json::Value;

use crate::compact::{EstimateMode, MIN_CONTEXT_CHAR_LIMIT, Stage, short_count};
use crate::protocol::{CallPoint, TokenBasis, TokenFigure, Window, WindowSource};

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

/// Below this share of what the window holds a configured limit earns a hint.
const FAR_BELOW_PERCENT: usize = 25;

/// Measured ratios outside this range are a server's odd count, not text: the limit
/// is sized with the nearest bound instead.
const PLAUSIBLE_CHARS_PER_TOKEN: std::ops::RangeInclusive<f64> = 1.0..=8.0;

/// The system prompt and tool definitions, counted as the estimate counts.
pub fn fixed_chars<T: Serialize + ?Sized>(system: &str, tools: &T, mode: EstimateMode) -> usize {
    system.chars().count() + mode.count(tools)
}

/// Context windows of model families, by model id prefix (longest prefix first).
const KNOWN_WINDOWS: &[(&str, u64)] = &[("claude-", 200_000)];

/// The window of a known model.
pub fn known_window(model: &str) -> Option<Window> {
    KNOWN_WINDOWS
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|&(prefix, tokens)| Window {
            tokens,
            source: WindowSource::ModelTable {
                family: format!("{prefix}*"),
            },
        })
}

/// llama.cpp's `GET /props`: the slot context of the running server (`n_ctx`, at the
/// top level in newer builds, under `default_generation_settings` in older ones).
pub fn window_from_props(props: &Value) -> Option<u64> {
    props
        .get("default_generation_settings")
        .and_then(|settings| settings.get("n_ctx"))
        .or_else(|| props.get("n_ctx"))
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
}

/// An OpenAI-compatible `GET /v1/models`: vLLM's `max_model_len` for the model in use
/// (or the only model served).
pub fn window_from_models(models: &Value, model: &str) -> Option<u64> {
    let data = models.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|entry| entry.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    entry.get("max_model_len").and_then(Value::as_u64).filter(|&n| n > 0)
}

/// llama.cpp's `GET /props`: the model it serves (`model_alias`, which is the file's
/// path unless the server was given `--alias`).
pub fn model_from_props(props: &Value) -> Option<String> {
    ["model_alias", "model_path"]
        .iter()
        .find_map(|key| props.get(key).and_then(Value::as_str))
        .filter(|name| !name.is_empty())
        .map(str::to_string)
}

/// llama.cpp's `GET /props`: whether the chat template renders tool definitions.
pub fn tools_from_props(props: &Value) -> Option<bool> {
    props.get("chat_template_caps")?.get("supports_tools")?.as_bool()
}

/// An OpenAI-compatible `GET /v1/models`: the model, when exactly one is served.
pub fn model_from_models(models: &Value) -> Option<String> {
    match models.get("data")?.as_array()?.as_slice() {
        [only] => only.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
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

/// What the limit is compared with: the window, the reply's reserve and the fixed part.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    pub window_tokens: u64,
    pub max_tokens: u64,
    pub chars_per_token: f64,
    pub fixed_chars: usize,
}

impl Fit {
    /// Tokens kept free for the reply: its `max_tokens`, at most half the window.
    pub fn reply_reserve(&self) -> u64 {
        self.max_tokens.min(self.window_tokens / 2)
    }

    fn messages_chars(&self, prompt_tokens: u64) -> usize {
        let chars = (prompt_tokens as f64 * self.chars_per_token) as usize;
        chars.saturating_sub(self.fixed_chars).max(MIN_CONTEXT_CHAR_LIMIT)
    }

    /// The most message characters a request can hold and still leave the reply room.
    pub fn holds_chars(&self) -> usize {
        self.messages_chars(self.window_tokens.saturating_sub(self.reply_reserve()))
    }

    /// The automatic limit: the window's share, less the reply, in characters.
    pub fn auto_chars(&self) -> usize {
        let share = self.window_tokens * AUTO_WINDOW_PERCENT / 100;
        self.messages_chars(share.saturating_sub(self.reply_reserve()))
    }
}

/// How the limit was chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LimitChoice {
    /// `context_char_limit` as configured (the seed's 50,000 by default).
    #[default]
    Configured,
    /// `context_char_limit = "auto"` / `--limit auto`.
    Auto,
}

/// The limit in force and what to tell the user about it.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitDecision {
    pub chars: usize,
    pub note: LimitNote,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LimitNote {
    /// The configured limit fits the window comfortably.
    AsConfigured,
    /// Derived from the window: the label says how.
    Auto(String),
    /// The configured limit was above what the window holds.
    Clamped { configured: usize, label: String },
    /// The configured limit uses little of the window.
    FarBelow { configured: usize, holds: usize },
}

impl LimitNote {
    /// The line for the user, if there is something to say.
    pub fn message(&self) -> Option<String> {
        match self {
            LimitNote::AsConfigured => None,
            LimitNote::Auto(label) => Some(format!("limit auto: {label}")),
            LimitNote::Clamped { configured, label } => Some(format!(
                "context_char_limit {} is more than the model's window holds; using {label}",
                short_count(*configured)
            )),
            LimitNote::FarBelow { configured, holds } => Some(format!(
                "context_char_limit {} uses under {FAR_BELOW_PERCENT}% of the model's window (about {} chars); --limit auto sizes it to the window",
                short_count(*configured),
                short_count(*holds)
            )),
        }
    }
}

/// The limit for `configured` chars under `choice`, given what the window holds.
pub fn decide_limit(choice: LimitChoice, configured: usize, fit: &Fit) -> LimitDecision {
    let describe = |chars: usize, percent: u64| {
        format!(
            "{} chars ({percent}% of {} tokens − {} for the reply, × {:.1} chars/token, − {} fixed)",
            short_count(chars),
            short_count(fit.window_tokens as usize),
            short_count(fit.reply_reserve() as usize),
            fit.chars_per_token,
            short_count(fit.fixed_chars)
        )
    };
    let holds = fit.holds_chars();
    match choice {
        LimitChoice::Auto => {
            let chars = fit.auto_chars();
            LimitDecision {
                chars,
                note: LimitNote::Auto(describe(chars, AUTO_WINDOW_PERCENT)),
            }
        }
        LimitChoice::Configured if configured > holds => LimitDecision {
            chars: holds,
            note: LimitNote::Clamped {
                configured,
                label: describe(holds, 100),
            },
        },
        LimitChoice::Configured if configured < holds * FAR_BELOW_PERCENT / 100 => LimitDecision {
            chars: configured,
            note: LimitNote::FarBelow { configured, holds },
        },
        LimitChoice::Configured => LimitDecision {
            chars: configured,
            note: LimitNote::AsConfigured,
        },
    }
}

/// The agent's running account: the window, the fixed part, the last measured call,
/// the limit in force, and what happened since the last call for its timeline point.
#[derive(Clone, Debug)]
pub struct Ledger {
    window: Window,
    fixed: usize,
    max_tokens: u64,
    choice: LimitChoice,
    configured: usize,
    limit: LimitDecision,
    tokens: Option<TokenFigure>,
    basis: TokenBasis,
    /// The estimate before the first compaction since the last call.
    before: Option<usize>,
    stages: Vec<Stage>,
    /// The prompt tokens the previous call left in the provider's cache.
    cached: Option<u64>,
}

impl Ledger {
    pub fn new(window: Window, fixed: usize, max_tokens: u64, choice: LimitChoice, configured: usize) -> Self {
        let mut ledger = Ledger {
            window,
            fixed,
            max_tokens,
            choice,
            configured,
            limit: LimitDecision {
                chars: configured,
                note: LimitNote::AsConfigured,
            },
            tokens: None,
            basis: TokenBasis::Reported,
            before: None,
            stages: Vec::new(),
            cached: None,
        };
        ledger.limit = decide_limit(choice, configured, &ledger.fit());
        ledger
    }

    /// Where the provider's counts come from (the demo's are its own rule).
    pub fn with_basis(mut self, basis: TokenBasis) -> Self {
        self.basis = basis;
        self
    }

    pub fn window(&self) -> &Window {
        &self.window
    }

    pub fn fixed(&self) -> usize {
        self.fixed
    }

    pub fn limit(&self) -> &LimitDecision {
        &self.limit
    }

    pub fn tokens(&self) -> Option<&TokenFigure> {
        self.tokens.as_ref()
    }

    /// The measured characters per token, or the default until a call measured them.
    pub fn chars_per_token(&self) -> f64 {
        self.tokens
            .as_ref()
            .map_or(DEFAULT_CHARS_PER_TOKEN, |figure| figure.chars_per_token)
    }

    fn fit(&self) -> Fit {
        let ratio = self.chars_per_token();
        Fit {
            window_tokens: self.window.tokens,
            max_tokens: self.max_tokens,
            chars_per_token: ratio.clamp(*PLAUSIBLE_CHARS_PER_TOKEN.start(), *PLAUSIBLE_CHARS_PER_TOKEN.end()),
            fixed_chars: self.fixed,
        }
    }

    /// Decide the limit again (the window or the ratio changed). Returns what to tell
    /// the user when the kind of decision changed (not each time an automatic limit
    /// moves with the ratio).
    fn redecide(&mut self) -> Option<String> {
        let decision = decide_limit(self.choice, self.configured, &self.fit());
        let changed_kind = std::mem::discriminant(&decision.note) != std::mem::discriminant(&self.limit.note);
        self.limit = decision;
        changed_kind.then(|| self.limit.note.message()).flatten()
    }

    /// The server (or the model table) said how large the window is.
    pub fn set_window(&mut self, window: Window) -> Option<String> {
        self.window = window;
        if let Some(figure) = &mut self.tokens {
            figure.window_tokens = self.window.tokens;
        }
        self.redecide()
    }

    /// Request characters for a history of `estimate`.
    pub fn request_chars(&self, estimate: usize) -> usize {
        self.fixed + estimate
    }

    /// A compaction took the history from `before` to `after` with `stages`: the
    /// token figure is re-estimated from the measured ratio.
    pub fn compacted(&mut self, before: usize, after: usize, stages: impl IntoIterator<Item = Stage>) {
        self.before.get_or_insert(before);
        self.stages.extend(stages);
        if let Some(figure) = &self.tokens {
            self.tokens = Some(re_estimated(figure, self.request_chars(after)));
        }
    }

    /// The history changed outside a compaction (an undo): the token figure is
    /// re-estimated for it.
    pub fn changed(&mut self, estimate: usize) {
        if let Some(figure) = &self.tokens {
            self.tokens = Some(re_estimated(figure, self.request_chars(estimate)));
        }
    }

    /// A call was sent with `estimate` over `messages` messages and reported
    /// `prompt_tokens` (0: not reported). Returns its timeline point and what to tell
    /// the user about the limit, if the measurement changed it in kind.
    pub fn called(&mut self, estimate: usize, messages: usize, prompt_tokens: u64) -> (CallPoint, Option<String>) {
        let request_chars = self.request_chars(estimate);
        let point = CallPoint {
            before: self.before.take(),
            estimate,
            messages,
            request_chars: Some(request_chars),
            input_tokens: (prompt_tokens > 0).then_some(prompt_tokens),
            stages: std::mem::take(&mut self.stages),
            ..CallPoint::default()
        };
        let note = (prompt_tokens > 0).then(|| {
            self.tokens = Some(measured(
                prompt_tokens,
                request_chars,
                self.window.tokens,
                self.basis.clone(),
            ));
            self.redecide()
        });
        (point, note.flatten())
    }

    /// What the call of `point` reported about the provider's prompt cache: after
    /// compaction, how much of what the previous call cached had to be written again.
    /// Providers that report no caching leave the point as it is.
    pub fn cache(&mut self, point: &mut CallPoint, read: u64, written: u64) {
        if read == 0 && written == 0 {
            return;
        }
        point.cache_read = Some(read);
        if !point.stages.is_empty()
            && let Some(cached) = self.cached
        {
            point.cache_rewritten = Some(cached.saturating_sub(read));
        }
        self.cached = Some(read + written);
    }

    /// The provider counted the history as it is (`estimate`) exactly.
    pub fn counted(&mut self, tokens: u64, estimate: usize) -> Option<String> {
        let request_chars = self.request_chars(estimate);
        self.tokens = Some(measured(tokens, request_chars, self.window.tokens, TokenBasis::Counted));
        self.redecide()
    }

    /// The newest measured call of a resumed session.
    pub fn restore(&mut self, point: &CallPoint) {
        if let Some(tokens) = point.input_tokens {
            let request_chars = point.request_chars.unwrap_or(self.request_chars(point.estimate));
            self.tokens = Some(measured(tokens, request_chars, self.window.tokens, self.basis.clone()));
            self.redecide();
        }
    }

    /// The reply's `max_tokens` for a request whose messages estimate `estimate`: as
    /// configured, but no more than the window leaves after the prompt (its tokens
    /// from the measured ratio, a twentieth more in reserve), and at least
    /// [`MIN_REPLY_TOKENS`] (unless configured lower).
    pub fn reply_tokens(&self, estimate: usize) -> u32 {
        let prompt = (self.request_chars(estimate) as f64 / self.fit().chars_per_token).ceil() as u64;
        let left = self.window.tokens.saturating_sub(prompt + prompt / 20);
        let tokens = self.max_tokens.min(left.max(MIN_REPLY_TOKENS));
        u32::try_from(tokens).unwrap_or(u32::MAX)
    }

    /// The summariser's own request sized to the window: its reply a quarter of the
    /// window (at most [`SUMMARY_MAX_TOKENS`]), its history text what the automatic
    /// share of the window leaves after that reply and `instructions_chars`.
    pub fn summary_budget(&self, instructions_chars: usize) -> SummaryBudget {
        let max_tokens = (self.window.tokens / 4).clamp(MIN_REPLY_TOKENS, SUMMARY_MAX_TOKENS);
        let share = self.window.tokens * AUTO_WINDOW_PERCENT / 100;
        let input_tokens = share.saturating_sub(max_tokens);
        let input_chars = (input_tokens as f64 * self.fit().chars_per_token) as usize;
        SummaryBudget {
            input_chars: input_chars
                .saturating_sub(instructions_chars)
                .max(MIN_SUMMARY_INPUT_CHARS),
            max_tokens: u32::try_from(max_tokens).unwrap_or(u32::MAX),
        }
    }

    /// `/clear`: a new conversation has measured nothing yet.
    pub fn clear(&mut self) {
        self.tokens = None;
        self.before = None;
        self.stages.clear();
        self.cached = None;
        self.redecide();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fit(window: u64, max_tokens: u64) -> Fit {
        Fit {
            window_tokens: window,
            max_tokens,
            chars_per_token: DEFAULT_CHARS_PER_TOKEN,
            fixed_chars: 2_400,
        }
    }

    #[test]
    fn auto_is_the_window_share_less_the_reply_and_fixed_part() {
        let decision = decide_limit(LimitChoice::Auto, 50_000, &fit(200_000, 8_192));
        assert_eq!(decision.chars, (160_000 - 8_192) * 4 - 2_400);
        assert_eq!(
            decision.note.message().unwrap(),
            "limit auto: 604.8k chars (80% of 200.0k tokens − 8.2k for the reply, × 4.0 chars/token, − 2.4k fixed)"
        );
    }

    #[test]
    fn a_limit_above_the_window_is_clamped_and_one_far_below_gets_a_hint() {
        // llama.cpp at -c 8192 with the default max_tokens: half the window is the reply's.
        let small = fit(8_192, 8_192);
        let clamped = decide_limit(LimitChoice::Configured, 50_000, &small);
        assert_eq!(clamped.chars, 4_096 * 4 - 2_400);
        assert!(matches!(clamped.note, LimitNote::Clamped { configured: 50_000, .. }));
        assert!(
            clamped
                .note
                .message()
                .unwrap()
                .contains("more than the model's window holds")
        );
        let far = decide_limit(LimitChoice::Configured, 50_000, &fit(200_000, 8_192));
        assert_eq!(far.chars, 50_000);
        assert!(far.note.message().unwrap().contains("--limit auto"));
        let fine = decide_limit(LimitChoice::Configured, 300_000, &fit(200_000, 8_192));
        assert_eq!(fine.note, LimitNote::AsConfigured);
    }

    #[test]
    fn a_tiny_window_still_leaves_the_configured_minimum() {
        assert_eq!(
            decide_limit(LimitChoice::Auto, 50_000, &fit(512, 8_192)).chars,
            MIN_CONTEXT_CHAR_LIMIT
        );
    }

    #[test]
    fn windows_are_found_in_server_answers_and_the_model_table() {
        assert_eq!(
            window_from_props(&json!({"default_generation_settings": {"n_ctx": 8192}})),
            Some(8192)
        );
        assert_eq!(window_from_props(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(window_from_props(&json!({"n_ctx": 0})), None);
        let models = json!({"data": [{"id": "a", "max_model_len": 32768}, {"id": "b"}]});
        assert_eq!(window_from_models(&models, "a"), Some(32768));
        assert_eq!(window_from_models(&models, "b"), None);
        assert_eq!(
            window_from_models(&json!({"data": [{"id": "x", "max_model_len": 4096}]}), "other"),
            Some(4096)
        );
        assert_eq!(known_window("claude-sonnet-4-5").map(|w| w.tokens), Some(200_000));
        assert_eq!(known_window("smollm2"), None);
    }

    #[test]
    fn chars_per_token_come_from_one_call_and_re_estimates_are_marked() {
        let figure = measured(1_000, 4_200, 200_000, TokenBasis::Reported);
        assert!((figure.chars_per_token - 4.2).abs() < 1e-9);
        let after = re_estimated(&figure, 2_100);
        assert_eq!(after.tokens, 500);
        assert_eq!(after.basis, TokenBasis::Estimated);
    }

    fn ledger(choice: LimitChoice) -> Ledger {
        let window = Window {
            tokens: 10_000,
            source: WindowSource::Configured,
        };
        Ledger::new(window, 1_000, 1_000, choice, 50_000)
    }

    #[test]
    fn the_ledger_measures_each_call_and_re_estimates_after_compaction() {
        let mut ledger = ledger(LimitChoice::Configured);
        // 10k tokens − 1k reply at 4 chars/token − 1k fixed: 35k chars fit, so 50k is clamped.
        assert_eq!(ledger.limit().chars, 35_000);
        let (point, note) = ledger.called(9_000, 3, 2_500);
        assert_eq!(point.request_chars, Some(10_000));
        assert_eq!(point.before(), 9_000);
        assert!(note.is_none(), "still clamped, nothing new to say");
        let figure = ledger.tokens().unwrap().clone();
        assert_eq!((figure.tokens, figure.basis), (2_500, TokenBasis::Reported));
        assert!((figure.chars_per_token - 4.0).abs() < 1e-9);
        ledger.compacted(9_000, 3_000, [Stage::CompactHistory]);
        let figure = ledger.tokens().unwrap();
        assert_eq!((figure.tokens, &figure.basis), (1_000, &TokenBasis::Estimated));
        let (point, _) = ledger.called(3_100, 2, 1_000);
        assert_eq!((point.before(), point.estimate), (9_000, 3_100));
        assert_eq!(point.stages, vec![Stage::CompactHistory]);
        assert_eq!(ledger.tokens().unwrap().basis, TokenBasis::Reported);
        let (point, _) = ledger.called(3_200, 4, 0);
        assert_eq!((point.before, point.stages.len(), point.input_tokens), (None, 0, None));
    }

    #[test]
    fn a_compaction_costs_the_cached_prefix_the_next_call_writes_again() {
        let mut ledger = ledger(LimitChoice::Configured);
        let (mut first, _) = ledger.called(9_000, 3, 2_500);
        ledger.cache(&mut first, 0, 2_000);
        assert_eq!((first.cache_read, first.cache_rewritten), (Some(0), None));
        let (mut second, _) = ledger.called(9_500, 5, 2_600);
        ledger.cache(&mut second, 2_000, 500);
        assert_eq!(second.cache_rewritten, None, "no compaction in between");
        ledger.compacted(9_500, 3_000, [Stage::MicroCompact]);
        let (mut third, _) = ledger.called(3_100, 5, 800);
        ledger.cache(&mut third, 300, 500);
        assert_eq!(third.cache_rewritten, Some(2_500 - 300));
        let (mut uncached, _) = ledger.called(3_200, 6, 800);
        ledger.cache(&mut uncached, 0, 0);
        assert_eq!(uncached.cache_read, None, "a provider without caching");
    }

    #[test]
    fn an_automatic_limit_follows_the_measured_ratio_and_the_found_window() {
        let mut ledger = ledger(LimitChoice::Auto);
        assert_eq!(ledger.limit().chars, (8_000 - 1_000) * 4 - 1_000);
        ledger.called(5_000, 2, 2_000);
        assert_eq!(ledger.limit().chars, (8_000 - 1_000) * 3 - 1_000);
        let note = ledger.set_window(Window {
            tokens: 20_000,
            source: WindowSource::Server {
                endpoint: "/props".into(),
            },
        });
        assert!(note.is_none(), "still automatic");
        assert_eq!(ledger.limit().chars, (16_000 - 1_000) * 3 - 1_000);
        assert_eq!(ledger.tokens().unwrap().window_tokens, 20_000);
    }

    #[test]
    fn the_reply_gets_what_the_window_leaves_after_the_prompt() {
        let small = |max_tokens| {
            Ledger::new(
                Window {
                    tokens: 2_048,
                    source: WindowSource::Configured,
                },
                1_000,
                max_tokens,
                LimitChoice::Configured,
                2_000,
            )
        };
        let mut tight = small(8_192);
        // (1k fixed + 3k) / 4 chars per token = 1,000 tokens, plus a twentieth.
        assert_eq!(tight.reply_tokens(3_000), 2_048 - 1_050);
        // Measured at 2 chars per token the same prompt takes twice the tokens.
        tight.called(3_000, 1, 2_000);
        assert_eq!(tight.reply_tokens(3_000), u32::try_from(MIN_REPLY_TOKENS).unwrap());
        assert_eq!(small(100).reply_tokens(10), 100, "a smaller setting stands");
        assert_eq!(ledger(LimitChoice::Configured).reply_tokens(1_000), 1_000);
    }

    #[test]
    fn the_summary_request_is_sized_to_the_window() {
        let at = |tokens| {
            Ledger::new(
                Window {
                    tokens,
                    source: WindowSource::Configured,
                },
                1_000,
                8_192,
                LimitChoice::Configured,
                50_000,
            )
        };
        let small = at(2_048).summary_budget(1_000);
        assert_eq!(small.max_tokens, 512);
        assert_eq!(small.input_chars, (1_638 - 512) * 4 - 1_000);
        let large = at(200_000).summary_budget(1_000);
        assert_eq!(large.max_tokens, 4_096);
        assert!(
            large.input_chars > 80_000,
            "the configured cap decides for large windows"
        );
        assert_eq!(at(512).summary_budget(5_000).input_chars, MIN_SUMMARY_INPUT_CHARS);
    }

    #[test]
    fn a_server_names_its_model_and_says_whether_its_template_renders_tools() {
        let props = json!({"model_alias": "/m/SmolLM2.gguf", "model_path": "/m/SmolLM2.gguf",
            "chat_template_caps": {"supports_tools": false}});
        assert_eq!(model_from_props(&props).as_deref(), Some("/m/SmolLM2.gguf"));
        assert_eq!(tools_from_props(&props), Some(false));
        assert_eq!(tools_from_props(&json!({})), None);
        assert_eq!(model_from_props(&json!({"model_alias": ""})), None);
        let one = json!({"data": [{"id": "qwen"}]});
        assert_eq!(model_from_models(&one).as_deref(), Some("qwen"));
        let two = json!({"data": [{"id": "a"}, {"id": "b"}]});
        assert_eq!(model_from_models(&two), None, "which one is in use is not said");
    }
}
