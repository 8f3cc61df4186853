//! Where scratchpad keeps its own files outside a workspace: the platform's data
//! folder (the log, the session journals, trust and approvals) and the key a
//! workspace is known by there. A leaf, so every layer can ask.

use std::path::{Path, PathBuf};

/// The key a workspace's records kept outside it (MCP trust, approvals) are found
/// under: its real path.
pub fn workspace_key(workspace: &Path) -> String {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .display()
        .to_string()
}

/// The platform's data folder for scratchpad (`~/.local/share/scratchpad`): the log
/// and the session journals.
pub fn data_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "scratchpad").map(|dirs| dirs.data_dir().to_path_buf())
}
