//! The agent's running account of its calls: what each measured, the ratio of
//! characters to tokens it gives, and the limit that follows.

use super::*;

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
