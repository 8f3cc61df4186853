//! The agent's running account of its calls: what each measured, the ratio of
//! characters to tokens it gives, and the limit that follows.

use super::*;

/// The agent's running account: the window, the fixed part, the last measured call,
/// the limit in force, and what happened since the last call for its timeline point.
#[derive(Clone, Debug)]
pub struct Ledger {
    window: Window,
    fixed: usize,
    /// The fixed part's tokens as the server counted them (for `fixed` chars): the
    /// limit sets them aside as they are.
    fixed_tokens: Option<u64>,
    max_tokens: u64,
    choice: LimitChoice,
    configured: usize,
    limit: LimitDecision,
    tokens: Option<TokenFigure>,
    /// Token-like units of the request `tokens` is for, when known: what a compaction
    /// scales the figure by.
    units: Option<usize>,
    /// Tokens per unit of what changes between two measured requests (the fixed
    /// part's JSON weighs differently and stays out of it), learned from them.
    tokens_per_unit: f64,
    /// The last measured request: its tokens and units, to learn from the next.
    measured_at: Option<(u64, usize)>,
    basis: TokenBasis,
    /// The estimate before the first compaction since the last call.
    before: Option<usize>,
    stages: Vec<Stage>,
    /// The prompt tokens the previous call left in the provider's cache.
    cached: Option<u64>,
    /// The fixed part changed since the last call (an instruction file was edited):
    /// the next call rewrites the cache as after a compaction.
    prefix_changed: bool,
    /// The tokens the last reply spent thinking, where the server reported them.
    thinking_tokens: Option<u64>,
}

/// A change of fewer units between two measured requests says too little about the
/// rate (a template's few tokens, a short reply).
const LEARN_FROM_UNITS: usize = 200;

/// Fewer message tokens than this give a ratio of a greeting, not of the history.
const MESSAGES_RATIO_FROM_TOKENS: u64 = 64;

/// Tokens per unit outside this range are a server's odd count, not text.
const PLAUSIBLE_TOKENS_PER_UNIT: std::ops::RangeInclusive<f64> = 0.3..=3.0;

impl Ledger {
    pub fn new(window: Window, fixed: usize, max_tokens: u64, choice: LimitChoice, configured: usize) -> Self {
        let mut ledger = Ledger {
            window,
            fixed,
            fixed_tokens: None,
            max_tokens,
            choice,
            configured,
            limit: LimitDecision {
                chars: configured,
                note: LimitNote::AsConfigured,
            },
            tokens: None,
            units: None,
            tokens_per_unit: 1.0,
            measured_at: None,
            basis: TokenBasis::Reported,
            before: None,
            stages: Vec::new(),
            cached: None,
            prefix_changed: false,
            thinking_tokens: None,
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

    /// Tokens per content unit of the request the figure is of: what weighs a part of
    /// the request by its own content (`/context`'s column), where a call measured it.
    pub fn tokens_per_unit(&self) -> Option<f64> {
        let figure = self.tokens.as_ref()?;
        let units = self.units.filter(|units| *units > 0)?;
        Some(figure.tokens as f64 / units as f64)
    }

    /// The fixed part's tokens as the server counted them, when it did.
    pub fn fixed_tokens(&self) -> Option<u64> {
        self.fixed_tokens
    }

    fn fit(&self) -> Fit {
        // With the fixed part counted, the messages' own ratio converts the room they
        // have; a history of a few tokens says too little about it, and the whole
        // request's ratio does instead.
        let messages_ratio = self
            .fixed_tokens
            .zip(self.tokens.as_ref())
            .and_then(|(fixed_tokens, figure)| {
                let tokens = figure.tokens.saturating_sub(fixed_tokens);
                let chars = figure.request_chars.saturating_sub(self.fixed);
                (tokens >= MESSAGES_RATIO_FROM_TOKENS).then(|| chars as f64 / tokens as f64)
            });
        let ratio = messages_ratio.unwrap_or_else(|| self.chars_per_token());
        Fit {
            window_tokens: self.window.tokens,
            max_tokens: self.max_tokens,
            chars_per_token: ratio.clamp(*PLAUSIBLE_CHARS_PER_TOKEN.start(), *PLAUSIBLE_CHARS_PER_TOKEN.end()),
            fixed_chars: self.fixed,
            fixed_tokens: self.fixed_tokens,
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
    /// token figure follows what is left in the context (see `Ledger::rescale`).
    pub fn compacted(&mut self, before: Extent, after: Extent, stages: impl IntoIterator<Item = Stage>) {
        self.before.get_or_insert(before.estimate);
        self.stages.extend(stages);
        self.rescale(before, after);
    }

    /// The history changed outside a compaction (an undo, a request taken back): the
    /// token figure follows it as after a compaction.
    pub fn changed(&mut self, before: Extent, after: Extent) {
        self.rescale(before, after);
    }

    /// The fixed part became `fixed` characters (an instruction file changed): the
    /// token figure follows its units as after a compaction, the limit is decided
    /// again, and the next call's cache cost is reported as a compaction's is.
    pub fn fixed_changed(&mut self, fixed: usize, before: Extent, after: Extent) -> Option<String> {
        self.fixed = fixed;
        self.fixed_tokens = None;
        self.prefix_changed = true;
        self.rescale(before, after);
        self.redecide()
    }

    fn rescale(&mut self, before: Extent, after: Extent) {
        if let Some(tokens) = self.predicted(after).or_else(|| self.predicted_by_chars(before, after)) {
            let request_chars = self.request_chars(after.estimate);
            if let Some(figure) = &mut self.tokens {
                *figure = TokenFigure {
                    tokens: tokens.max(1),
                    request_chars,
                    chars_per_token: request_chars as f64 / tokens.max(1) as f64,
                    basis: TokenBasis::Estimated,
                    window_tokens: figure.window_tokens,
                };
                self.units = Some(after.units);
            }
        }
    }

    /// The tokens a request of the history at `now` is expected to take. One
    /// characters-per-token ratio is right for text like the text it was measured on
    /// and wrong for text of another kind (digits pack a token a character, prose
    /// four): the last reported count is moved by the content units added since, each
    /// at the learned tokens per unit; a request that shrank is the measured
    /// one scaled to the units left, so what remains weighs as its content does.
    /// Without the units of the measured request (a journal from before they were
    /// kept), by characters.
    pub fn predicted(&self, now: Extent) -> Option<u64> {
        let figure = self.tokens.as_ref()?;
        Some(match self.units {
            // Grown: what was added, at the tokens per unit learned from additions.
            Some(units) if now.units >= units => {
                let added = (now.units - units) as f64 * self.tokens_per_unit;
                (figure.tokens as f64 + added).round().max(1.0) as u64
            }
            // Shrunk (a compaction, an undo): the request that is left, weighed by its
            // own content at the measured request's tokens per unit. Taking what was
            // removed away from the count at a learned rate could leave almost nothing
            // (≈286 tokens for 20k chars after /compact).
            Some(units) => (figure.tokens as f64 * now.units as f64 / units.max(1) as f64)
                .round()
                .max(1.0) as u64,
            None => re_estimated(figure, self.request_chars(now.estimate)).tokens,
        })
    }

    /// [`Ledger::predicted`] by characters alone, scaled by the units that are left
    /// when both ends of the change are known.
    fn predicted_by_chars(&self, before: Extent, after: Extent) -> Option<u64> {
        let figure = self.tokens.as_ref()?;
        let before_tokens = re_estimated(figure, self.request_chars(before.estimate)).tokens as f64;
        Some((before_tokens * after.units as f64 / before.units.max(1) as f64).round() as u64)
    }

    /// A call was sent with the history at `sent` over `messages` messages and
    /// reported `prompt_tokens` (0: not reported). Returns its timeline point, with
    /// the tokens the gauge predicted for it, and what to tell the user about the
    /// limit, if the measurement changed it in kind.
    pub fn called(&mut self, sent: Extent, messages: usize, prompt_tokens: u64) -> (CallPoint, Option<String>) {
        let request_chars = self.request_chars(sent.estimate);
        let point = CallPoint {
            before: self.before.take(),
            estimate: sent.estimate,
            messages,
            request_chars: Some(request_chars),
            request_units: Some(sent.units),
            input_tokens: (prompt_tokens > 0).then_some(prompt_tokens),
            predicted_tokens: self.predicted(sent),
            stages: std::mem::take(&mut self.stages),
            ..CallPoint::default()
        };
        let note = (prompt_tokens > 0).then(|| self.measure(prompt_tokens, sent, self.basis.clone()));
        (point, note.flatten())
    }

    /// The server refused the history at `sent` as too long and said it takes
    /// `prompt_tokens`: a measurement like a call's, so the re-estimate after the
    /// reactive compaction starts from the size the server just reported.
    pub fn refused(&mut self, sent: Extent, prompt_tokens: u64) -> Option<String> {
        self.measure(prompt_tokens, sent, self.basis.clone())
    }

    fn measure(&mut self, tokens: u64, sent: Extent, basis: TokenBasis) -> Option<String> {
        if let Some((last_tokens, last_units)) = self.measured_at {
            let units = sent.units as f64 - last_units as f64;
            let rate = (tokens as f64 - last_tokens as f64) / units;
            if units.abs() >= LEARN_FROM_UNITS as f64 && PLAUSIBLE_TOKENS_PER_UNIT.contains(&rate) {
                self.tokens_per_unit = rate;
            }
        }
        self.measured_at = Some((tokens, sent.units));
        let request_chars = self.request_chars(sent.estimate);
        self.tokens = Some(measured(tokens, request_chars, self.window.tokens, basis));
        self.units = Some(sent.units);
        self.redecide()
    }

    /// What the call of `point` reported about the provider's prompt cache: after
    /// compaction, how much of what the previous call cached had to be written again.
    /// Providers that report no caching leave the point as it is.
    pub fn cache(&mut self, point: &mut CallPoint, read: u64, written: u64) {
        if read == 0 && written == 0 {
            return;
        }
        point.cache_read = Some(read);
        let prefix_changed = std::mem::take(&mut self.prefix_changed);
        if (!point.stages.is_empty() || prefix_changed)
            && let Some(cached) = self.cached
        {
            point.cache_rewritten = Some(cached.saturating_sub(read));
        }
        self.cached = Some(read + written);
    }

    /// What the last reply spent thinking, as its usage reports it.
    pub fn thought(&mut self, tokens: Option<u64>) {
        self.thinking_tokens = tokens;
    }

    pub fn thinking_tokens(&self) -> Option<u64> {
        self.thinking_tokens
    }

    /// The provider counted the history as it is (`estimate`) exactly.
    pub fn counted(&mut self, tokens: u64, sent: Extent) -> Option<String> {
        self.measure(tokens, sent, TokenBasis::Counted)
    }

    /// The server counted the fixed part (a request of it alone) at `tokens`.
    pub fn fixed_counted(&mut self, tokens: u64) -> Option<String> {
        self.fixed_tokens = Some(tokens);
        self.redecide()
    }

    /// The newest measured call of a resumed session.
    pub fn restore(&mut self, point: &CallPoint) {
        if let Some(tokens) = point.input_tokens {
            let request_chars = point.request_chars.unwrap_or(self.request_chars(point.estimate));
            self.tokens = Some(measured(tokens, request_chars, self.window.tokens, self.basis.clone()));
            self.units = point.request_units;
            self.measured_at = point.request_units.map(|units| (tokens, units));
            self.redecide();
        }
    }

    /// The reply's `max_tokens` for a request of the history at `now`: as
    /// configured, but no more than the window leaves after the prompt (its tokens as
    /// the gauge predicts them from the last reported count, a twentieth more in
    /// reserve), and at least
    /// [`MIN_REPLY_TOKENS`] (unless configured lower).
    pub fn reply_tokens(&self, now: Extent) -> u32 {
        let prompt = self
            .predicted(now)
            .unwrap_or_else(|| (self.request_chars(now.estimate) as f64 / self.fit().chars_per_token).ceil() as u64);
        let left = self.window.tokens.saturating_sub(prompt + prompt / 20);
        let tokens = self.max_tokens.min(left.max(MIN_REPLY_TOKENS));
        u32::try_from(tokens).unwrap_or(u32::MAX)
    }

    /// Where a reply given `max_tokens` ended when the server stopped it for length:
    /// with prompt and reply at the window (within the few tokens a template adds),
    /// it was the window that was full.
    pub fn reply_end(&self, usage: &crate::protocol::Usage, max_tokens: u32) -> ReplyEnd {
        let prompt = usage.prompt_tokens();
        let reply = usage.output_tokens;
        let window = self.window.tokens;
        if prompt > 0 && (prompt + reply) * 100 >= window * 98 {
            ReplyEnd::WindowFull { prompt, reply, window }
        } else {
            ReplyEnd::MaxTokens { max_tokens }
        }
    }

    /// The summariser's own request sized to the window: its reply a quarter of the
    /// window and a third of the limit (at least [`MIN_REPLY_TOKENS`], at most
    /// [`SUMMARY_MAX_TOKENS`]), its history text what the automatic
    /// share of the window leaves after that reply and `instructions_chars`.
    pub fn summary_budget(&self, instructions_chars: usize) -> SummaryBudget {
        // At most a third of the limit too: a summary that fills the limit makes the
        // next turn compact again (at -c 2048 a quarter of the window was 75–99% of it).
        let limit_tokens = (self.limit.chars as f64 / self.fit().chars_per_token) as u64;
        let max_tokens = (self.window.tokens / 4)
            .min(limit_tokens / 3)
            .clamp(MIN_REPLY_TOKENS, SUMMARY_MAX_TOKENS);
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
        self.units = None;
        self.measured_at = None;
        self.before = None;
        self.stages.clear();
        self.cached = None;
        self.redecide();
    }
}
