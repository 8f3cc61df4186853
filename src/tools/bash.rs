//! `bash`: a command in its own process group, so a timeout or cancel kills everything
//! it started. Output is merged, capped in memory and decoded lossily.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::ToolOutput;

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
    }
}

pub async fn run(command: &str, cwd: &Path, timeout: Duration, cap: usize) -> ToolOutput {
    let mut child = match Command::new("bash")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(error) => return ToolOutput::error(format!("could not start bash: {error}")),
    };
    let _guard = GroupGuard(child.id().map(|pid| pid as i32));
    let Some(mut stdout) = child.stdout.take() else {
        return ToolOutput::error("could not capture the command's output");
    };
    let collect = async {
        let mut kept = Vec::new();
        let mut dropped = 0usize;
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match stdout.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&buffer[..n.min(room)]);
                    dropped += n.saturating_sub(room);
                }
            }
        }
        let status = child.wait().await;
        (kept, dropped, status)
    };
    match tokio::time::timeout(timeout, collect).await {
        Ok((kept, dropped, status)) => {
            let mut text = String::from_utf8_lossy(&kept).into_owned();
            if dropped > 0 {
                text.push_str(&format!("\n[... {dropped} more bytes of output dropped]"));
            }
            let code = status.ok().and_then(|s| s.code());
            if text.trim().is_empty() {
                text = "(no output)".to_string();
            }
            match code {
                Some(0) => ToolOutput::ok(text),
                Some(code) => ToolOutput::error(format!("{text}\n[exit code {code}]")),
                None => ToolOutput::error(format!("{text}\n[killed by a signal]")),
            }
        }
        Err(_) => ToolOutput::error(format!(
            "Timed out after {} s; the command and its children were killed.",
            timeout.as_secs()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sh(command: &str) -> ToolOutput {
        let dir = std::env::temp_dir();
        run(command, &dir, Duration::from_secs(10), 1_000).await
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
        let out = run(&command, dir.path(), Duration::from_millis(300), 1_000).await;
        assert!(out.is_error && out.text.contains("Timed out"));
        assert!(started.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert!(!marker.exists(), "the background child was killed too");
    }
}
