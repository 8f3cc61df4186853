//! A tool as the model sees it: a leaf type, so that the tools, MCP and the providers
//! all name it without depending on one another.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// What the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON schema of its input.
    pub input_schema: Value,
}
