//! `[mcp_servers.NAME]` in `config.toml`: how to start or reach a server and how far
//! to trust it, in the shape the Codex CLI uses: a `command` serving MCP on stdio, or
//! the `url` of one serving it over streamable HTTP.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::McpError;
use crate::setting::InvalidSetting;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program that serves MCP on its standard input and output.
    pub command: String,
    /// Or the address of a server speaking MCP's streamable HTTP.
    pub url: Option<String>,
    /// Headers sent to `url`; a value may name the user's variables (`${TOKEN}`).
    pub headers: BTreeMap<String, String>,
    pub args: Vec<String>,
    /// Variables set for the server; a value may name the user's own (`${GITHUB_TOKEN}`).
    pub env: BTreeMap<String, String>,
    /// Where the server runs; the workspace when unset.
    pub cwd: Option<PathBuf>,
    pub enabled: bool,
    /// Longest wait for the server to start and list its tools.
    pub startup_timeout_secs: u64,
    /// Longest wait for one call.
    pub tool_timeout_secs: u64,
    /// Only these tools (by the server's names); all when unset.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools never reach the model.
    pub disabled_tools: Vec<String>,
    /// Its calls run without asking.
    pub trusted: bool,
    /// These tools' calls run without asking.
    pub trusted_tools: Vec<String>,
    /// A longer result is saved whole to `.task_outputs/tool-results/` and the model
    /// gets its first this many characters with the path.
    pub max_result_chars: usize,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        McpServerConfig {
            command: String::new(),
            url: None,
            headers: BTreeMap::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            enabled: true,
            startup_timeout_secs: 30,
            tool_timeout_secs: 120,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            trusted: false,
            trusted_tools: Vec::new(),
            max_result_chars: DEFAULT_MAX_RESULT_CHARS,
        }
    }
}

/// The numbers of a server's settings and their ranges, for the config check.
pub const TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=3_600;

/// A result's longest text kept in the context, as a command's output is kept
/// (`tools.output_cap_bytes`).
pub const DEFAULT_MAX_RESULT_CHARS: usize = 1_000_000;

/// The range of `max_result_chars`: a preview of at least a few lines.
pub const MAX_RESULT_RANGE: std::ops::RangeInclusive<u64> = 200..=10_000_000;

impl McpServerConfig {
    /// The workspace files this server's command line names (the script a
    /// `python3 srv.py` runs, a program inside the workspace), as real paths: its code,
    /// which runs outside the sandbox, so the model may not change it unasked and
    /// trust in a project's `.mcp.json` covers it. `root` is the workspace's real path.
    pub fn code_files(&self, root: &Path) -> Vec<PathBuf> {
        let folder = self
            .cwd
            .as_ref()
            .map_or_else(|| root.to_path_buf(), |cwd| root.join(cwd));
        std::iter::once(&self.command)
            .chain(&self.args)
            .filter(|word| !word.is_empty())
            .filter_map(|word| folder.join(word).canonicalize().ok())
            .filter(|path| path.starts_with(root) && path.is_file())
            .collect()
    }

    /// Whether the model gets the server's tool `tool`.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|enabled| enabled.iter().any(|name| name == tool))
            && !self.disabled_tools.iter().any(|name| name == tool)
    }

    /// Whether a call of `tool` runs without asking.
    pub fn trusts(&self, tool: &str) -> bool {
        self.trusted || self.trusted_tools.iter().any(|name| name == tool)
    }

    /// What is wrong with the settings of server `name`, with the key to point at.
    pub fn check(&self, name: &str) -> Result<(), InvalidSetting> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(InvalidSetting::new(
                "mcp_servers",
                format!("mcp_servers.{name:?}: a server's name takes letters, digits, `_` and `-` only"),
            ));
        }
        match (self.command.trim().is_empty(), &self.url) {
            (true, None) => {
                return Err(InvalidSetting::new(
                    "command",
                    format!(
                        "mcp_servers.{name}: neither a `command` serving MCP on stdio nor the `url` of a \
                         streamable HTTP server"
                    ),
                ));
            }
            (false, Some(_)) => {
                return Err(InvalidSetting::new(
                    "url",
                    format!("mcp_servers.{name}: both a `command` and a `url`; a server is one or the other"),
                ));
            }
            (true, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                return Err(InvalidSetting::new(
                    "url",
                    format!("mcp_servers.{name}.url must be http:// or https://, got {url:?}"),
                ));
            }
            _ => {}
        }
        for (key, value, range) in [
            ("startup_timeout_secs", self.startup_timeout_secs, TIMEOUT_RANGE),
            ("tool_timeout_secs", self.tool_timeout_secs, TIMEOUT_RANGE),
            ("max_result_chars", self.max_result_chars as u64, MAX_RESULT_RANGE),
        ] {
            if !range.contains(&value) {
                return Err(InvalidSetting::new(
                    key,
                    format!(
                        "mcp_servers.{name}.{key} must be between {} and {}, got {value}",
                        range.start(),
                        range.end()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The server's environment values with `${NAME}` replaced by the user's variable
    /// `lookup` gives (an unknown one is an error naming it, never an empty value).
    pub fn expanded_env(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, McpError> {
        expanded("env", &self.env, lookup)
    }

    /// The headers for `url`, expanded as [`Self::expanded_env`] expands `env`.
    pub fn expanded_headers(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>, McpError> {
        expanded("headers", &self.headers, lookup)
    }
}

/// The values of `table` (`table_name` in errors) with `${NAME}` replaced.
fn expanded(
    table_name: &'static str,
    table: &BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, McpError> {
    table
        .iter()
        .map(|(key, value)| {
            let value = expand(value, &lookup).map_err(|UnsetName(name)| McpError::UnsetVariable {
                table: table_name,
                key: key.clone(),
                name,
            })?;
            Ok((key.clone(), value))
        })
        .collect()
}

/// The name of a variable a value names that is not set.
struct UnsetName(String);

/// `text` with each `${NAME}` replaced; the first unset one is the error.
fn expand(text: &str, lookup: &impl Fn(&str) -> Option<String>) -> Result<String, UnsetName> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        out.push_str(&lookup(name).ok_or_else(|| UnsetName(name.to_string()))?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_expanded_and_an_unset_one_is_named() {
        let mut config = McpServerConfig::default();
        config.env.insert("TOKEN".into(), "Bearer ${GH}".into());
        config.env.insert("PLAIN".into(), "x ${ unfinished".into());
        let lookup = |name: &str| (name == "GH").then(|| "s3cret".to_string());
        assert_eq!(
            config.expanded_env(lookup).unwrap(),
            vec![
                ("PLAIN".to_string(), "x ${ unfinished".to_string()),
                ("TOKEN".to_string(), "Bearer s3cret".to_string())
            ]
        );
        config.env.insert("OTHER".into(), "${MISSING}".into());
        assert_eq!(
            config.expanded_env(lookup).unwrap_err().to_string(),
            "env.OTHER names ${MISSING}, which is not set"
        );
    }

    #[test]
    fn tools_are_offered_and_trusted_as_configured() {
        let mut config = McpServerConfig {
            command: "srv".into(),
            ..Default::default()
        };
        assert!(config.offers("echo") && !config.trusts("echo"));
        config.enabled_tools = Some(vec!["echo".into(), "add".into()]);
        config.disabled_tools = vec!["add".into()];
        config.trusted_tools = vec!["echo".into()];
        assert!(config.offers("echo") && !config.offers("add") && !config.offers("other"));
        assert!(config.trusts("echo") && !config.trusts("add"));
        assert!(config.check("ok-name_1").is_ok());
        assert_eq!(config.check("bad name").unwrap_err().key, "mcp_servers");
        config.tool_timeout_secs = 0;
        assert_eq!(config.check("s").unwrap_err().key, "tool_timeout_secs");
        config.command.clear();
        assert_eq!(config.check("s").unwrap_err().key, "command");
    }
}
