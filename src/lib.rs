//! scratchpad: a terminal coding agent that keeps its context bounded and visible.

pub mod accounting;
pub mod agent;
pub mod cli;
pub mod commands;
pub mod compact;
pub mod config;
pub mod context_map;
pub mod headless;
pub mod launch;
pub mod logging;
pub mod message;
pub mod protocol;
pub mod provider;
pub mod session;
pub mod store;
pub mod terminal_text;
pub mod time;
pub mod timeline;
pub mod tools;
pub mod tui;
