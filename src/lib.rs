#![warn(unreachable_pub)]
//! scratchpad: a terminal coding agent that keeps its context bounded and visible.

pub mod accounting;
pub mod agent;
pub mod cli;
pub mod commands;
pub mod compact;
mod config;
pub mod context_map;
pub mod digest;
pub mod headless;
/// Conversations built for tests and benchmarks: not in the shipped library.
#[cfg(any(test, feature = "test-support"))]
pub mod history;
pub mod instructions;
pub mod json;
pub mod launch;
pub mod logging;
pub mod mcp;
pub mod message;
pub mod parallel;
pub mod process;
pub mod protocol;
pub mod provider;
pub mod session;
pub mod setting;
mod signals;
pub mod store;
mod terminal_text;
pub mod text;
mod time;
mod timeline;
pub mod tool_output;
pub mod tools;
pub mod tui;
