//! The boundary around `bash` on Linux: a Landlock ruleset, built in this process and
//! applied in the child between fork and exec, so the command and everything it starts
//! may read anywhere but write only inside the workspace, the temporary folder and the
//! folders the configuration adds (build caches), and, with `network = false`, open no
//! TCP connection. The permission checks in [`super::permissions`] are a guard in front
//! of it; this is the wall.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes confined to the workspace, the temporary folder and `writable`.
    #[default]
    WorkspaceWrite,
    /// No sandbox: commands run with the user's full rights.
    Off,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
    /// Whether commands may open TCP connections (Landlock ABI 4 and later).
    pub network: bool,
    /// More folders commands may write to; `~/` means the home folder. Missing ones
    /// are skipped.
    pub writable: Vec<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            mode: SandboxMode::WorkspaceWrite,
            network: true,
            writable: ["~/.cache", "~/.cargo/registry", "~/.cargo/git", "~/.npm"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// What the sandbox does on this machine, for the status line and for the permission
/// checks (without a sandbox every command not known to be read-only is a question).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxState {
    Enforced,
    Off,
    /// Asked for, but the kernel cannot do it; the reason says why.
    Unavailable(String),
}

impl SandboxState {
    /// A short label: `sandbox: workspace-write`, `sandbox: off`, `sandbox: unavailable`.
    pub fn label(&self) -> &'static str {
        match self {
            SandboxState::Enforced => "sandbox: workspace-write",
            SandboxState::Off => "sandbox: off",
            SandboxState::Unavailable(_) => "sandbox: unavailable",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    workspace: PathBuf,
    state: SandboxState,
}

impl Sandbox {
    /// Check once what the kernel supports.
    pub fn new(config: SandboxConfig, workspace: &Path) -> Self {
        let mut sandbox = Sandbox {
            config,
            workspace: workspace.to_path_buf(),
            state: SandboxState::Off,
        };
        sandbox.state = match sandbox.config.mode {
            SandboxMode::Off => SandboxState::Off,
            SandboxMode::WorkspaceWrite => match sandbox.ruleset() {
                Ok(Some(_)) => SandboxState::Enforced,
                Ok(None) => SandboxState::Unavailable("the kernel does not support Landlock".into()),
                Err(error) => SandboxState::Unavailable(error),
            },
        };
        sandbox
    }

    pub fn state(&self) -> &SandboxState {
        &self.state
    }

    /// The ruleset for one command, to be applied with [`apply_in_child`]; `None` when
    /// the sandbox is off or the kernel cannot enforce it.
    pub fn ruleset_for_command(&self) -> Result<Option<OwnedFd>, String> {
        match self.state {
            SandboxState::Enforced => self.ruleset(),
            SandboxState::Off | SandboxState::Unavailable(_) => Ok(None),
        }
    }

    /// Whether commands may write to `path` (it lies under a writable folder), by the
    /// rules this sandbox would apply.
    pub fn allows_writes_to(&self, path: &Path) -> bool {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let path = canonical(path);
        self.writable().iter().any(|root| path.starts_with(canonical(root)))
    }

    fn writable(&self) -> Vec<PathBuf> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut paths = vec![self.workspace.clone(), std::env::temp_dir()];
        for device in [
            "/dev/null",
            "/dev/zero",
            "/dev/full",
            "/dev/tty",
            "/dev/pts",
            "/dev/shm",
        ] {
            paths.push(PathBuf::from(device));
        }
        for entry in &self.config.writable {
            match (entry.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => paths.push(home.join(rest)),
                (Some(_), None) => {}
                (None, _) => paths.push(PathBuf::from(entry)),
            }
        }
        paths
    }

    fn ruleset(&self) -> Result<Option<OwnedFd>, String> {
        use landlock::{ABI, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, path_beneath_rules};
        let abi = ABI::V6;
        let describe = |error: landlock::RulesetError| format!("cannot build the Landlock ruleset: {error}");
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_write(abi))
            .map_err(describe)?;
        if !self.config.network {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(describe)?;
        }
        let created = ruleset
            .create()
            .map_err(describe)?
            .add_rules(path_beneath_rules(self.writable(), AccessFs::from_write(abi)))
            .map_err(describe)?;
        Ok(created.into())
    }
}

/// Restrict the calling process with `ruleset`: for a child between fork and exec.
/// Only system calls, no allocation, as that context requires.
pub fn apply_in_child(ruleset: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: plain system calls on a descriptor that stays open for their duration.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
