//! The summary prepared in the background as the agent keeps it: where it is (idle,
//! running, ready, failed), what became of it since the last call (for that call's
//! timeline point), whether it runs only while no turn does, and the `/summary`
//! review of it waiting for an answer.

use super::background::Background;

#[derive(Default)]
pub(super) struct BackgroundState {
    /// Where the background summary is.
    pub(super) job: Background,
    /// Since the last call: the percent it started at, and whether it became ready.
    pub(super) marks: (Option<usize>, bool),
    /// The server's requests share one cache (llama.cpp): a background summary runs
    /// only while no turn does, and gives way to a turn's request, so the two never
    /// compete for it.
    pub(super) when_idle: bool,
    /// The `/summary` review waiting for its answer, by request id.
    pub(super) reviewing: Option<u64>,
}
