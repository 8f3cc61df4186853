//! Logs go to a file (the TUI owns the terminal): `SCRATCHPAD_LOG` or the platform data
//! dir. The filter comes from `RUST_LOG` (default `info`). Nothing logs the API key.

use std::path::PathBuf;

use tracing_subscriber::EnvFilter;

/// Keep it alive while the program runs: dropping it flushes the log.
pub struct LogGuard {
    pub path: PathBuf,
    _writer: tracing_appender::non_blocking::WorkerGuard,
}

pub fn init() -> std::io::Result<LogGuard> {
    let path = std::env::var_os("SCRATCHPAD_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(crate::config::default_log_path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    // Written on a thread of its own: a slow disk never stalls the UI or the agent.
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(writer)
        .try_init();
    Ok(LogGuard { path, _writer: guard })
}
