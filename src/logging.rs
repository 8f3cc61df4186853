//! Logs go to a file (the TUI owns the terminal): `SCRATCHPAD_LOG` or the platform data
//! dir. The filter comes from `RUST_LOG` (default `info`). Nothing logs the API key.

use std::path::PathBuf;

use tracing_subscriber::EnvFilter;

pub struct LogGuard {
    pub path: PathBuf,
}

pub fn init() -> std::io::Result<LogGuard> {
    let path = std::env::var_os("SCRATCHPAD_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(crate::config::default_log_path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file))
        .try_init();
    Ok(LogGuard { path })
}
