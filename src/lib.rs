//! scratchpad: a terminal coding agent that keeps its context bounded and visible.

pub mod cli;
pub mod commands;
pub mod compact;
pub mod message;
pub mod provider;
pub mod store;
