#![warn(unreachable_pub)]
//! The two channels between the UI (or headless driver) and the agent task: `Op`s in
//! (`ops`), `AgentEvent`s out (`events`), with what the gauge shows (`context`) and
//! what `/context` lists (`breakdown`). Everything the screen shows is built from
//! these events. The types a journal also holds are the file format's, owned by
//! [`crate::session::record`] and re-exported here.

// The lower layers under the names this crate's modules use for them.
use scratchpad_core::{compact, message};
use scratchpad_session as session;

mod breakdown;
mod context;
mod events;
mod ops;

pub use crate::session::record::{
    BackgroundEvent, CacheReport, CallPoint, CompactionRequester, ForkAt, ForkPoint, InstructionRow, InstructionsNote,
    Origin, Past, PrefixChange, ToolStatus, TurnOutcome,
};
pub use breakdown::{Category, ContextBreakdown, CountedTokens, Item, McpServerRow};
pub use context::{BackgroundStatus, ContextStatus, TokenBasis, TokenFigure, Window, WindowSource};
pub use events::{AgentEvent, TurnId, Usage};
pub use ops::{McpAction, Op, PermissionAnswer, ReviewAnswer};
