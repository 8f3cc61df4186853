//! Headless subcommands that work on recorded histories.

pub mod compact;
pub mod input;
pub mod sessions;
pub mod simulate;
pub mod undo;
