//! The two channels between the UI (or headless driver) and the agent task: `Op`s in
//! (`ops`), `AgentEvent`s out (`events`), with what the gauge shows (`context`) and
//! what `/context` lists (`breakdown`). Everything the screen shows is built from
//! these events. The types a journal also holds are the file format's, owned by
//! [`crate::session::record`] and re-exported here.

mod breakdown;
mod context;
mod events;
mod ops;

pub use crate::session::record::{
    BackgroundEvent, CacheReport, CallPoint, CompactionRequester, ForkPoint, InstructionRow, InstructionsNote, Origin,
    Past, PrefixChange, ToolStatus, TurnOutcome,
};
pub use breakdown::{Category, ContextBreakdown, CountedTokens, Item, McpServerRow};
pub use context::{BackgroundStatus, ContextStatus, TokenBasis, TokenFigure, Window, WindowSource};
pub use events::{AgentEvent, TurnId, Usage};
pub use ops::{ForkAt, McpAction, Op, PermissionAnswer, ReviewAnswer};

#[cfg(test)]
mod tests {
    /// The protocol is a leaf: besides the message model, the stage events and the
    /// journal's format it names nothing else of ours, so UIs and the agent depend on
    /// it, not on each other.
    #[test]
    fn the_protocol_names_only_messages_stage_events_and_the_journal_format() {
        let files = [
            ("mod.rs", include_str!("mod.rs")),
            ("ops.rs", include_str!("ops.rs")),
            ("events.rs", include_str!("events.rs")),
            ("context.rs", include_str!("context.rs")),
            ("breakdown.rs", include_str!("breakdown.rs")),
        ];
        let allowed = ["crate::message", "crate::compact", "crate::session::record"];
        for (name, source) in files {
            let code = &source[..source.find("#[cfg(test)]").unwrap_or(source.len())];
            for (at, line) in code.lines().enumerate() {
                for mention in line.match_indices("crate::").map(|(i, _)| &line[i..]) {
                    assert!(
                        allowed.iter().any(|leaf| mention.starts_with(leaf)),
                        "protocol/{name}:{}: {line}",
                        at + 1
                    );
                }
            }
        }
    }
}
