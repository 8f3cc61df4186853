#![warn(unreachable_pub)]
//! scratchpad: a terminal coding agent that keeps its context bounded and visible.
//! This crate is the binary's edge: the command line, starting a session, the
//! headless run and the one-shot commands. The layers below are their own crates;
//! they are re-exported here under the names the tests and benchmarks use.

pub use scratchpad_agent::{
    accounting, agent, config, context_map, instructions, mcp, process, provider, tool_output, tools,
};
#[cfg(feature = "test-support")]
pub use scratchpad_core::history;
pub use scratchpad_core::{compact, digest, json, message, parallel, setting, store, text};
pub use scratchpad_protocol as protocol;
pub use scratchpad_session as session;
pub use scratchpad_tui as tui;

// Used by the modules here but not re-exported.
use scratchpad_agent::signals;
use scratchpad_core::terminal_text;
use scratchpad_tui::timeline;

pub mod cli;
pub mod commands;
pub mod headless;
pub mod launch;
pub mod logging;
