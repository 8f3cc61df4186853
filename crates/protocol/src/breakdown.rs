//! What the context holds, by category: the data behind the `/context` view.

use serde::{Deserialize, Serialize};

use super::InstructionRow;

/// What the context holds, by category: the data behind the `/context` view (made by
/// `context_map::breakdown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    SystemAndTools,
    /// The project's instruction files, in the system prompt.
    ProjectInstructions,
    /// The MCP servers' tool definitions and instructions.
    McpServers,
    UserText,
    AssistantText,
    ToolUseInput,
    ToolResult,
    PersistedPreview,
    ClearedReference,
    ArchiveMarker,
    CompactionSummary,
    /// The model's thinking blocks (sent back as the API requires).
    Thinking,
    Other,
    /// The JSON around the blocks (roles, brackets, separators), counted by the estimate.
    Framing,
    Free,
}

impl Category {
    pub const ALL: [Category; 15] = [
        Category::SystemAndTools,
        Category::ProjectInstructions,
        Category::McpServers,
        Category::UserText,
        Category::AssistantText,
        Category::ToolUseInput,
        Category::ToolResult,
        Category::PersistedPreview,
        Category::ClearedReference,
        Category::ArchiveMarker,
        Category::CompactionSummary,
        Category::Thinking,
        Category::Other,
        Category::Framing,
        Category::Free,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Category::SystemAndTools => "system prompt + tools",
            Category::ProjectInstructions => "project instructions",
            Category::McpServers => "MCP servers",
            Category::UserText => "user text",
            Category::AssistantText => "assistant text",
            Category::ToolUseInput => "tool_use inputs",
            Category::ToolResult => "tool results (whole)",
            Category::PersistedPreview => "tool results (persisted preview)",
            Category::ClearedReference => "tool results (cleared reference)",
            Category::ArchiveMarker => "archive markers",
            Category::CompactionSummary => "compaction summaries",
            Category::Thinking => "thinking",
            Category::Other => "other blocks",
            Category::Framing => "message framing (JSON)",
            Category::Free => "free to the limit",
        }
    }
}

/// One block of the context, for the lists of `/context`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub category: Category,
    pub chars: usize,
    /// 1-based message number, 0 for the system prompt and tools.
    pub message: usize,
    pub role: String,
    pub preview: String,
    /// Where the full text is, when this block was shortened.
    pub saved_path: Option<String>,
    /// The block's text (capped) for showing it.
    pub text: String,
    /// For a tool result: its call, to restore, pin or drop it from `/context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Pinned: stage 3 leaves it whole.
    #[serde(default)]
    pub pinned: bool,
}

/// What the context holds, counted exactly as the gauge counts: the message
/// categories sum to the estimate, which the limit applies to; the system prompt and
/// tools are the fixed part beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContextBreakdown {
    pub limit: usize,
    /// The seed's estimate of the messages: the gauge's figure.
    pub estimate: usize,
    /// The system prompt and tools: the gauge's `+N fixed`.
    pub fixed: usize,
    /// Characters per category, in `Category::ALL` order (free space last).
    pub totals: Vec<(Category, usize)>,
    pub largest: Vec<Item>,
    /// Every tool result, in history order, whatever its state: what `/context`
    /// lists to restore, pin or drop.
    #[serde(default)]
    pub tool_results: Vec<Item>,
    /// The pinned tool results, described (`read_file src/a.rs (result)`).
    #[serde(default)]
    pub pinned: Vec<String>,
    /// The project's instruction files, each its share of the fixed part: a row each
    /// under their category.
    #[serde(default)]
    pub instructions: Vec<InstructionRow>,
    /// Each ready MCP server's share of the fixed part: a row each under their
    /// category.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerRow>,
    /// The tokens the last reply spent thinking, where the server reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_tokens: Option<u64>,
    /// Each category's tokens as the server counted them, where it counts (for the
    /// history as it is now); without them `/context` divides by the last ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<CountedTokens>,
    /// Where the server does not count: each category's tokens weighed by its own
    /// content (its units at the measured request's tokens per unit), so restoring a
    /// result of digits does not change what the prose is said to take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weighed: Option<CountedTokens>,
}

/// A request's tokens as the server counted them, by category. The message
/// categories are their text alone; message framing is what the chat template adds
/// around them; the fixed part is a request of the system prompt and tools alone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CountedTokens {
    /// The whole request.
    pub total: u64,
    /// The system prompt and tools (and the instruction files and MCP servers in them).
    pub fixed: u64,
    pub categories: Vec<(Category, u64)>,
}

impl CountedTokens {
    pub fn of(&self, category: Category) -> Option<u64> {
        self.categories
            .iter()
            .find(|(counted, _)| *counted == category)
            .map(|(_, tokens)| *tokens)
    }

    /// The messages' tokens: the request less its fixed part.
    pub fn messages(&self) -> u64 {
        self.total.saturating_sub(self.fixed)
    }
}

/// One MCP server's share of the fixed part: its tool definitions and its
/// instructions' block in the system prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct McpServerRow {
    pub name: String,
    pub tools: usize,
    pub chars: usize,
}

impl Category {
    /// Whether the limit counts this category (the fixed part and free space are not).
    pub fn counts_against_limit(self) -> bool {
        !matches!(
            self,
            Category::SystemAndTools | Category::ProjectInstructions | Category::McpServers | Category::Free
        )
    }

    /// Whether it is part of the fixed part: the system prompt, the instruction files
    /// and the tools, sent with every request and outside the limit.
    pub fn is_fixed(self) -> bool {
        matches!(
            self,
            Category::SystemAndTools | Category::ProjectInstructions | Category::McpServers
        )
    }
}
