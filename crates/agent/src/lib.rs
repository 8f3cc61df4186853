#![warn(unreachable_pub)]
//! The agent: the conversation and its turns, the providers that answer it, the
//! accounting of its window, the tools (with their processes and sandbox), MCP
//! servers, the project's instructions and the configuration. A UI talks to it only
//! through `scratchpad-protocol`.

// The lower layers under the names this crate's modules use for them.
use scratchpad_core::{compact, digest, json, message, setting, store, terminal_text, text, time};
use scratchpad_protocol as protocol;
use scratchpad_session as session;

pub mod accounting;
pub mod agent;
pub mod config;
pub mod context_map;
pub mod instructions;
pub mod mcp;
pub mod process;
pub mod provider;
pub mod signals;
pub mod start;
pub mod tool_output;
pub mod tools;
