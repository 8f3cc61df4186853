//! The signals that end scratchpad from outside: SIGTERM (a kill, a shutdown) and
//! SIGHUP (the terminal closed). Either ends the running turn as Ctrl+C does, so the
//! command's process group is killed and every call's result is journaled, and then
//! scratchpad exits.

use tokio::signal::unix::{SignalKind, signal};

/// Resolves when SIGTERM or SIGHUP arrives (never, if they cannot be watched).
pub async fn termination() {
    let (Ok(mut terminate), Ok(mut hangup)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup())) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = hangup.recv() => {}
    }
}
