//! The children scratchpad keeps track of: those that live on purpose (MCP servers)
//! and the orphans a command leaves, which are adopted and swept when it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static ADOPTS_ORPHANS: AtomicBool = AtomicBool::new(false);

/// Make this process the reaper of its orphaned descendants, so a command's `setsid`
/// daemons become our children and are swept when the command ends. For the binary
/// only: in a process that runs other children (a test harness) the sweep would kill
/// them too.
pub fn adopt_orphans() {
    // SAFETY: a prctl that sets a flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0 {
        ADOPTS_ORPHANS.store(true, Ordering::Relaxed);
    }
}

/// Children that live on purpose beside the commands (MCP servers): never swept.
static KEPT_CHILDREN: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// `pid` is a child of ours that lives on purpose: the sweep after a command leaves it.
pub fn keep_child(pid: i32) {
    KEPT_CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
}

/// `pid` is no longer kept (it was stopped).
pub fn release_child(pid: i32) {
    KEPT_CHILDREN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|kept| *kept != pid);
}

/// Kill and reap every child of ours but the kept ones: once a command ended, any
/// other child left is an orphan it started (commands run one at a time). Repeats
/// while killing one exposes more. Nothing is waited for singly: a command's reaper
/// (init of its PID namespace) exits only once the orphans of its namespace that
/// were handed to us are reaped, so every child is killed and then collected as it
/// can be.
pub fn sweep_orphans() {
    if !ADOPTS_ORPHANS.load(Ordering::Relaxed) {
        return;
    }
    const GIVE_UP_AFTER: Duration = Duration::from_secs(5);
    let started = Instant::now();
    while started.elapsed() < GIVE_UP_AFTER {
        let kept = KEPT_CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut orphans = children_of(std::process::id());
        orphans.retain(|pid| !kept.contains(pid));
        if orphans.is_empty() {
            return;
        }
        for pid in &orphans {
            // SAFETY: signalling and reaping a child of this process by its pid;
            // WNOHANG, so a child still dying is collected on a later round.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
                libc::waitpid(*pid, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Pids whose parent is `parent`, from `/proc/*/stat`.
fn children_of(parent: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}
