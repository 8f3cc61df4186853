//! `bash`: a command in its own process group, inside the sandbox, with our secrets
//! taken out of its environment. A timeout or cancel kills everything it started,
//! `setsid` daemons included (the process adopts orphans and sweeps them), and the
//! output gathered until then is kept. Output is merged, capped in memory and decoded
//! lossily.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;

use super::permissions::{self, Verdict, judge_command};
use super::sandbox::{GitState, Sandbox, SandboxError, SetAside, own_session};
use super::{HiddenEnv, Job, Plan, Tool, ToolBox, ToolOutput, ToolsConfig};

/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 600;

pub(crate) struct Bash;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct BashInput {
    /// The command line.
    command: String,
    /// Timeout in seconds.
    timeout_secs: Option<u64>,
}

impl Tool for Bash {
    const NAME: &'static str = "bash";
    const SUMMARY_FIELD: &'static str = "command";
    type Input = BashInput;

    fn description(config: &ToolsConfig) -> String {
        format!(
            "Run a shell command in the workspace (bash -c). stdout and stderr are merged. \
             Default timeout {} s, at most {MAX_TIMEOUT_SECS} s.",
            config.bash_timeout_secs
        )
    }

    fn plan(input: BashInput, tools: &ToolBox) -> Plan {
        let secs = input
            .timeout_secs
            .unwrap_or(tools.config.bash_timeout_secs)
            .clamp(1, MAX_TIMEOUT_SECS);
        let verdict = judge_command(&input.command, &tools.config.permissions, tools.workspace.root());
        let unsandboxed = tools.sandbox().asks_for_commands();
        let read_only = permissions::is_read_only(&input.command);
        let git_writable = permissions::writes_git(&input.command);
        let job = Job::Bash {
            command: input.command,
            timeout: Duration::from_secs(secs),
            git_writable,
        };
        match verdict {
            Verdict::Allow if unsandboxed && !read_only => Plan::Ask {
                question: format!(
                    "The sandbox here is incomplete ({}) and this command is not known to be read-only. Run it?",
                    tools.sandbox().label()
                ),
                destructive: false,
                job,
            },
            Verdict::Allow if git_writable => Plan::Ask {
                question: "The command writes the repository's .git (its history, hooks and config), which \
                           commands may not change unasked. Run it with .git writable?"
                    .into(),
                destructive: false,
                job,
            },
            Verdict::Allow => Plan::Run(job),
            Verdict::Ask { question, destructive } => Plan::Ask {
                question,
                destructive,
                job,
            },
            Verdict::Deny(reason) => Plan::Refused(format!("Refused: {reason}.")),
        }
    }
}

/// How long output may still arrive after the command itself exited (from background
/// children that inherited it) before we stop waiting.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Kills the whole process group when dropped: on timeout, on cancel (the future is
/// dropped) and after a normal exit (stray background children).
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            // SAFETY: killpg only sends a signal; a stale group id fails harmlessly.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        crate::process::children::sweep_orphans();
    }
}

/// Where and how commands run.
#[derive(Clone, Debug)]
pub struct Shell {
    pub cwd: PathBuf,
    /// Bytes of output kept in memory.
    pub cap: usize,
    /// Environment variables the command never sees (keys, tokens, agent sockets).
    pub hide_env: HiddenEnv,
    pub sandbox: Sandbox,
}

impl Shell {
    /// The variables of our environment that `hide_env` matches.
    fn hidden_variables(&self) -> Vec<OsString> {
        std::env::vars_os()
            .map(|(key, _)| key)
            .filter(|key| self.hide_env.hides(&key.to_string_lossy()))
            .collect()
    }

    /// Run `command` with `server_code` (the MCP servers' files) read-only. With
    /// `git_writable` (approved by the user) the workspace's git state is writable and
    /// a repository it makes stays; otherwise git state is read-only, a `.git` the
    /// command made is set aside when it ends, and the output says so.
    pub async fn run(
        &self,
        command: &str,
        timeout: Duration,
        git_writable: bool,
        server_code: &[PathBuf],
    ) -> ToolOutput {
        if git_writable || !self.sandbox.confines() {
            return self.run_confined(command, timeout, server_code).await;
        }
        let workspace = self.cwd.clone();
        let git_before = match tokio::task::spawn_blocking(move || GitState::of(&workspace)).await {
            Ok(state) => state,
            Err(error) => {
                return ToolOutput::error(format!("Not run: cannot read the workspace's git state ({error})"));
            }
        };
        let read_only: Vec<PathBuf> = git_before
            .protected()
            .into_iter()
            .chain(server_code.iter().cloned())
            .collect();
        let mut output = self.run_confined(command, timeout, &read_only).await;
        let workspace = self.cwd.clone();
        let set_aside = tokio::task::spawn_blocking(move || git_before.set_aside_new(&workspace))
            .await
            .unwrap_or_else(|error| vec![Err(SandboxError::GitStateUnread(error.to_string()))]);
        if !set_aside.is_empty() {
            output.text.push_str(&self.set_aside_note(&set_aside));
        }
        output
    }

    /// What the model is told about git state its command made.
    fn set_aside_note(&self, set_aside: &[Result<SetAside, SandboxError>]) -> String {
        let shown = |path: &std::path::Path| path.strip_prefix(&self.cwd).unwrap_or(path).display().to_string();
        let moves: Vec<String> = set_aside
            .iter()
            .map(|outcome| match outcome {
                Ok(SetAside { made, now }) => format!("`{}` is now `{}`", shown(made), shown(now)),
                Err(error) => error.to_string(),
            })
            .collect();
        format!(
            "\n[scratchpad set aside git state this command made unasked ({}). Git would run the hooks and \
             config in it, outside the sandbox, when the user next uses git. A git command that makes a \
             repository (`git init`, `git clone`) is asked first.]",
            moves.join("; ")
        )
    }

    /// Run `command` confined (where the sandbox confines), with `read_only` so.
    async fn run_confined(&self, command: &str, timeout: Duration, read_only: &[PathBuf]) -> ToolOutput {
        let confinement = match self.sandbox.for_command(read_only) {
            Ok(confinement) => confinement,
            Err(error) => return ToolOutput::error(format!("Not run: {error}")),
        };
        let mut process = Command::new("bash");
        process
            .arg("-c")
            .arg(format!("exec 2>&1\n{command}"))
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        for key in self.hidden_variables() {
            process.env_remove(key);
        }
        for (key, value) in self.hide_env.passed() {
            process.env(key, value);
        }
        let sandboxed = confinement.is_some();
        match confinement {
            Some(confinement) => {
                let setup = confinement.into_pre_exec();
                // SAFETY: the closure only makes system calls on memory prepared before
                // the fork (no allocation, no locks), as required between fork and exec.
                unsafe {
                    process.pre_exec(setup);
                }
            }
            // Its own session even unsandboxed: the group the guard kills, and no
            // controlling terminal to type into.
            None => {
                // SAFETY: getpid cannot fail.
                let parent = unsafe { libc::getpid() };
                // SAFETY: the closure only makes system calls, as required between
                // fork and exec.
                unsafe {
                    process.pre_exec(move || own_session(parent));
                }
            }
        }
        let mut child = match process.spawn() {
            Ok(child) => child,
            Err(error) if sandboxed => {
                return ToolOutput::error(format!("Not run: bash could not start in its sandbox ({error})."));
            }
            Err(error) => return ToolOutput::error(format!("could not start bash: {error}")),
        };
        let _guard = GroupGuard(child.id().map(|pid| pid as i32));
        let Some(mut stdout) = child.stdout.take() else {
            return ToolOutput::error("could not capture the command's output");
        };
        let deadline = Instant::now() + timeout;
        let mut kept = Vec::new();
        let mut dropped = 0usize;
        let mut buffer = vec![0u8; 64 * 1024];
        let mut status = None;
        let mut ending = Ending::Finished;
        loop {
            let until = match &status {
                Some((_, exited_at)) => deadline.min(*exited_at + EXIT_GRACE),
                None => deadline,
            };
            tokio::select! {
                read = stdout.read(&mut buffer) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let room = self.cap.saturating_sub(kept.len());
                        kept.extend_from_slice(&buffer[..n.min(room)]);
                        dropped += n.saturating_sub(room);
                    }
                },
                exit = child.wait(), if status.is_none() => status = Some((exit, Instant::now())),
                _ = tokio::time::sleep_until(until) => {
                    ending = if status.is_some() && until < deadline { Ending::OutputHeld } else { Ending::TimedOut };
                    break;
                }
            }
        }
        if status.is_none() && ending == Ending::Finished {
            match tokio::time::timeout_at(deadline, child.wait()).await {
                Ok(exit) => status = Some((exit, Instant::now())),
                Err(_) => ending = Ending::TimedOut,
            }
        }
        let mut text = String::from_utf8_lossy(&kept).into_owned();
        if dropped > 0 {
            text.push_str(&format!("\n[... {dropped} more bytes of output dropped]"));
        }
        if ending == Ending::TimedOut {
            let shown = if text.trim().is_empty() {
                String::new()
            } else {
                format!("{text}\n")
            };
            return ToolOutput::error(format!(
                "{shown}[Timed out after {} s; the command and its children were killed.]",
                timeout.as_secs()
            ));
        }
        if ending == Ending::OutputHeld {
            text.push_str("\n[a background process kept the output open; it was stopped]");
        }
        if text.trim().is_empty() {
            text = "(no output)".to_string();
        }
        match status.and_then(|(exit, _)| exit.ok()).map(|s| s.code()) {
            Some(Some(0)) => ToolOutput::ok(text),
            Some(Some(code)) => ToolOutput::error(format!("{text}\n[exit code {code}]")),
            _ => ToolOutput::error(format!("{text}\n[killed by a signal]")),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Finished,
    TimedOut,
    /// The command exited but a background child kept its output open.
    OutputHeld,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::sandbox::{SandboxConfig, SandboxMode, SandboxState};
    use std::path::Path;

    fn shell(cwd: &Path, mode: SandboxMode) -> Shell {
        let config = ToolsConfig {
            hide_env: vec!["SCRATCHPAD_TEST_SECRET*".into()],
            ..ToolsConfig::default()
        };
        Shell {
            cwd: cwd.to_path_buf(),
            cap: 1_000,
            hide_env: config.hidden_env_matcher().unwrap(),
            sandbox: Sandbox::new(
                SandboxConfig {
                    mode,
                    ..SandboxConfig::default()
                },
                cwd,
            ),
        }
    }

    async fn sh(command: &str) -> ToolOutput {
        shell(&std::env::temp_dir(), SandboxMode::Off)
            .run(command, Duration::from_secs(10), false, &[])
            .await
    }

    #[tokio::test]
    async fn output_exit_codes_and_empty_output() {
        assert_eq!(sh("echo out; echo err >&2").await, ToolOutput::ok("out\nerr\n"));
        assert_eq!(sh("true").await, ToolOutput::ok("(no output)"));
        let failed = sh("echo no; exit 3").await;
        assert!(failed.is_error && failed.text.ends_with("[exit code 3]"));
    }

    #[tokio::test]
    async fn output_is_capped_and_non_utf8_replaced() {
        let big = sh("head -c 5000 /dev/zero | tr '\\0' a").await;
        assert!(big.text.starts_with(&"a".repeat(1_000)));
        assert!(big.text.contains("[... 4000 more bytes of output dropped]"));
        let binary = sh("printf 'a\\xffb'").await;
        assert_eq!(binary.text, "a\u{fffd}b");
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let started = std::time::Instant::now();
        let out = shell(dir.path(), SandboxMode::Off)
            .run(
                &format!("echo before; {command}"),
                Duration::from_millis(300),
                false,
                &[],
            )
            .await;
        assert!(out.is_error && out.text.contains("Timed out"));
        assert!(
            out.text.starts_with("before\n"),
            "output before the timeout is kept: {}",
            out.text
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert!(!marker.exists(), "the background child was killed too");
    }

    #[tokio::test]
    async fn a_background_child_holding_the_output_does_not_turn_into_a_timeout() {
        let started = std::time::Instant::now();
        let out = shell(&std::env::temp_dir(), SandboxMode::Off)
            .run("echo done; sleep 30 &", Duration::from_secs(20), false, &[])
            .await;
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert!(out.text.starts_with("done\n"), "{}", out.text);
        assert!(out.text.contains("kept the output open"), "{}", out.text);
    }

    #[tokio::test]
    async fn hidden_variables_never_reach_the_command() {
        // SAFETY: this test binary reads no such variable anywhere else.
        unsafe { std::env::set_var("SCRATCHPAD_TEST_SECRET_KEY", "sk-hidden-123") };
        let out = sh("env | grep -e SCRATCHPAD_TEST -e '^PATH='").await;
        assert!(!out.text.contains("sk-hidden-123"), "{}", out.text);
        assert!(out.text.contains("PATH="), "the rest of the environment is kept");
    }

    #[tokio::test]
    #[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
    async fn with_network_off_the_sandbox_refuses_tcp_connections() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let workspace = tempfile::tempdir().unwrap();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let mut offline = shell(workspace.path(), SandboxMode::WorkspaceWrite);
        offline.sandbox = Sandbox::new(
            SandboxConfig {
                network: false,
                ..SandboxConfig::default()
            },
            workspace.path(),
        );
        assert!(
            matches!(offline.sandbox.state(), SandboxState::Enforced { .. }),
            "this test needs every sandbox layer: {:?}",
            offline.sandbox.state().details()
        );
        let online = shell(workspace.path(), SandboxMode::WorkspaceWrite);
        assert_eq!(
            online.run(&connect, Duration::from_secs(10), false, &[]).await,
            ToolOutput::ok("connected\n")
        );
        let refused = offline.run(&connect, Duration::from_secs(10), false, &[]).await;
        assert!(
            refused.is_error && !refused.text.contains("connected"),
            "{}",
            refused.text
        );
    }
}
