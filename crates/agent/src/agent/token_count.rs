//! The server's own count of each request, where it counts locally (llama.cpp).
//!
//! A figure of characters per token measured on one call is wrong for the next where
//! the content differs (a large tool result, a summary in place of the history). A
//! server that counts in milliseconds, beside a running request, is asked instead:
//! before the pipeline decides (so the limit converts the window at the ratio of the
//! history as it is) and again before the call when a stage changed the history (so
//! the reply's `max_tokens` and the gauge have the exact size of what is sent). The
//! fixed part is counted once, and again only when it changes.
//!
//! Where a count fails or takes too long, the figure is estimated as before, and the
//! user is told once, until the server counts again.

use std::time::Duration;

use super::Agent;
use crate::protocol::{AgentEvent, Category, CountedTokens};
use crate::provider::{ModelRequest, ProviderError};

/// How long a count may take before the call goes with the estimate. llama.cpp counts
/// a window of thousands of tokens in tens of milliseconds, even while it generates.
const COUNT_WAIT: Duration = Duration::from_secs(2);

/// What the agent knows of the server's counting.
#[derive(Debug, Default)]
pub(super) struct ServerCount {
    /// The server counts locally: it is asked before every call.
    asks: bool,
    /// The request last asked about (counted, or the count failed): the history's
    /// revision and the fixed part's chars. The same request is not asked twice.
    counted_at: Option<(u64, usize)>,
    /// The last count failed and the figure is estimated: said once, until a count
    /// succeeds again.
    failing: bool,
    /// `/context`'s counted column, for the request it was counted at.
    categories: Option<((u64, usize), CountedTokens)>,
}

impl ServerCount {
    /// Whether the server is asked before every call.
    pub(super) fn set_asks(&mut self, asks: bool) {
        self.asks = asks;
    }
}

/// Why a count gave nothing.
enum NoCount {
    /// The server has no counting endpoint: asking again is no use.
    NotOffered,
    Failed(ProviderError),
    TooSlow,
}

impl std::fmt::Display for NoCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoCount::NotOffered => write!(f, "the server offers no token count"),
            NoCount::Failed(error) => write!(f, "{error}"),
            NoCount::TooSlow => write!(f, "it took over {} s", COUNT_WAIT.as_secs()),
        }
    }
}

impl Agent {
    /// Which request a count is for: the history's revision and the fixed part.
    fn count_key(&self) -> (u64, usize) {
        (self.conversation.revision(), self.ledger.fixed())
    }

    async fn ask_count(&self, request: &ModelRequest<'_>) -> Result<u64, NoCount> {
        match tokio::time::timeout(COUNT_WAIT, self.provider.count_tokens(request)).await {
            Ok(Ok(Some(tokens))) => Ok(tokens),
            Ok(Ok(None)) => Err(NoCount::NotOffered),
            Ok(Err(error)) => Err(NoCount::Failed(error)),
            Err(_) => Err(NoCount::TooSlow),
        }
    }

    /// The server counts the request the history makes now (and the fixed part, when
    /// it has not yet): the figure the limit, the reply's `max_tokens` and the gauge
    /// use. Asked only of a server that counts locally, once per state of the history.
    pub(super) async fn count_request(&mut self) {
        if !self.server.count.asks || self.server.count.counted_at == Some(self.count_key()) {
            return;
        }
        match self.count_now().await {
            Ok(_) => {
                if std::mem::take(&mut self.server.count.failing) {
                    self.emit(AgentEvent::Notice {
                        message: "the server counts again: the token figure is its own count".into(),
                    });
                }
                self.emit_context();
            }
            Err(why) => self.count_failed(why),
        }
    }

    /// The request the history makes now, counted (the fixed part first, where it has
    /// not been): the ledger takes the count, and the limit follows it. A failed count
    /// is not asked again for the same request: a server slow to count costs a step
    /// its wait once, not before and after the pipeline.
    async fn count_now(&mut self) -> Result<u64, NoCount> {
        self.server.count.counted_at = Some(self.count_key());
        self.count_fixed_part().await?;
        let tokens = self.ask_count(&self.model_request()).await?;
        let note = self.ledger.counted(tokens, self.extent());
        self.apply_limit(note);
        Ok(tokens)
    }

    /// The fixed part (a request of the system prompt and tools alone), counted once
    /// for each state of it.
    async fn count_fixed_part(&mut self) -> Result<(), NoCount> {
        if self.ledger.fixed_tokens().is_some() {
            return Ok(());
        }
        let mut request = self.model_request();
        request.messages = &[];
        let tokens = self.ask_count(&request).await?;
        let note = self.ledger.fixed_counted(tokens);
        self.apply_limit(note);
        Ok(())
    }

    fn count_failed(&mut self, why: NoCount) {
        tracing::warn!(%why, "the server's token count gave nothing");
        if matches!(why, NoCount::NotOffered) {
            self.server.count.asks = false;
            self.emit(AgentEvent::Notice {
                message: "the server offers no token count after all; the token figure is estimated from each call's reported tokens".into(),
            });
            return;
        }
        if !std::mem::replace(&mut self.server.count.failing, true) {
            self.emit(AgentEvent::Notice {
                message: format!(
                    "the server's token count failed ({why}); the token figure is estimated until it counts again"
                ),
            });
        }
    }

    /// `/context`'s counted column: the whole request, the fixed part, and each
    /// message category's text tokenized alone; the chat template's share is what is
    /// left (message framing). Kept for the state of the history it was counted at.
    pub(super) async fn count_categories(&mut self) -> Result<(), String> {
        let key = self.count_key();
        if self.server.count.categories.as_ref().is_some_and(|(at, _)| *at == key) {
            return Ok(());
        }
        let total = self.count_now().await.map_err(|why| why.to_string())?;
        let fixed = self.ledger.fixed_tokens().unwrap_or_default();
        let mut categories = Vec::new();
        let texts = crate::context_map::category_texts(self.conversation.messages(), &self.settings.compaction);
        for (category, text) in texts {
            let tokens = match tokio::time::timeout(COUNT_WAIT, self.provider.tokenize(&text)).await {
                Ok(Ok(Some(tokens))) => tokens,
                Ok(Ok(None)) => return Err("the server does not tokenize text alone".into()),
                Ok(Err(error)) => return Err(error.to_string()),
                Err(_) => return Err(NoCount::TooSlow.to_string()),
            };
            categories.push((category, tokens));
        }
        let in_text: u64 = categories.iter().map(|(_, tokens)| tokens).sum();
        categories.push((Category::Framing, total.saturating_sub(fixed + in_text)));
        categories.extend(self.fixed_rows(fixed));
        self.server.count.categories = Some((
            key,
            CountedTokens {
                total,
                fixed,
                categories,
            },
        ));
        Ok(())
    }

    /// The fixed part's rows: the instruction files and MCP servers each their share
    /// of the fixed part's tokens (counted or weighed) by characters (they are parts
    /// of one system prompt and tool list), scratchpad's own prompt and tools the rest.
    pub(super) fn fixed_rows(&self, fixed: u64) -> Vec<(Category, u64)> {
        let chars = self.ledger.fixed().max(1) as f64;
        let share = |part: usize| (fixed as f64 * part as f64 / chars).round() as u64;
        let instructions = share(
            self.instructions_note(Vec::new())
                .files
                .iter()
                .map(|row| row.prompt_chars)
                .sum(),
        );
        let mcp = share(
            super::mcp::server_rows(self.tools.mcp(), self.settings.compaction.estimate)
                .iter()
                .map(|row| row.chars)
                .sum(),
        );
        vec![
            (Category::SystemAndTools, fixed.saturating_sub(instructions + mcp)),
            (Category::ProjectInstructions, instructions),
            (Category::McpServers, mcp),
        ]
    }

    /// The counted column for the history as it is, when it was counted at this state.
    pub(super) fn counted_categories(&self) -> Option<CountedTokens> {
        self.server
            .count
            .categories
            .as_ref()
            .filter(|(at, _)| *at == self.count_key())
            .map(|(_, counted)| counted.clone())
    }

    /// Whether the server counts locally (for `/context` to count as it opens).
    pub(super) fn server_counts(&self) -> bool {
        self.server.count.asks
    }
}
