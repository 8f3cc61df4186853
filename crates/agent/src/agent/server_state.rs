//! What the agent keeps of the server it talks to: whether it must be asked again
//! (it did not answer at the start), whether and what it counts, what the journal
//! last said serves the session, and the previous call for its cache diagnostics.

use super::cache_chain::CacheChain;
use super::token_count::ServerCount;

#[derive(Default)]
pub(super) struct ServerState {
    /// The server did not answer at the start (down, or loading its model): it is
    /// asked again before each request until it does.
    pub(super) rediscover: bool,
    /// Whether the server counts each request (and what it counted last).
    pub(super) count: ServerCount,
    /// What the journal last said serves the session (model, window tokens), so a
    /// `served` line is written only when discovery learns something new.
    pub(super) served_recorded: Option<(String, Option<u64>)>,
    /// The previous call for the server's cache diagnostics, and what it sent.
    pub(super) cache_chain: CacheChain,
}
