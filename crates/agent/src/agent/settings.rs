//! How an agent is set up: its settings as the binary (or a test) gives them, what it
//! does when a tool needs the user's permission, and scratchpad's own system prompt.

use super::*;

/// What to do when a tool needs the user's permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskPolicy {
    /// Ask through a `PermissionRequest` event and wait for the answer.
    Ask,
    /// Headless with `--yes`.
    Approve,
    /// Headless without `--yes`.
    Refuse,
}

#[derive(Clone, Debug)]
pub struct AgentSettings {
    pub compaction: CompactConfig,
    /// scratchpad's own system prompt; the project's instruction files follow it.
    pub system_prompt: String,
    pub instructions: crate::instructions::InstructionsConfig,
    pub max_tokens: u32,
    /// Model calls one request may take before the agent stops it.
    pub max_steps: usize,
    pub ask: AskPolicy,
    /// The window when neither the server nor the table of known models says.
    pub configured_window_tokens: u64,
    /// Where what outlives a session is kept, outside the workspace (the project's
    /// approvals); `None` keeps nothing.
    pub data_dir: Option<std::path::PathBuf>,
    /// A read-only view of a session (open elsewhere, perhaps): why, for the user.
    /// Nothing is sent, run or changed.
    pub read_only: Option<String>,
}

pub const SYSTEM_PROMPT: &str = include_str!("../../assets/system_prompt.md");
