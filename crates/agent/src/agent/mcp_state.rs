//! What the agent last took in of the MCP servers: their revision, and the lines it
//! said of them, so a change is announced once and the same lines are not said again.

#[derive(Default)]
pub(super) struct McpState {
    /// The MCP servers' revision last taken in.
    pub(super) revision: u64,
    /// The lines last said of them.
    pub(super) lines: Vec<String>,
}
