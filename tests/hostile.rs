//! The model is untrusted input: hostile tool calls sent through the real binary by a
//! scripted model on the mock API. Each must be refused, turned into a question (which
//! headless without `--yes` refuses) or contained by the sandbox; a canary folder
//! outside the workspace must stay empty, and the API key must appear in no file, log
//! or request.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{MockApi, Workspace, messages_of, text_reply, tool_reply, tool_results};
use scratchpad::tools::sandbox::{Sandbox, SandboxConfig, SandboxState};
use serde_json::{Value, json};

const FAKE_KEY: &str = "sk-ant-FAKE-KEY-5f3a9c1e-must-not-leak";

/// A folder outside the workspace and outside every folder the sandbox lets commands
/// write to (the temporary folder among them, which may hold this very checkout).
fn canary(workspace: &Workspace) -> tempfile::TempDir {
    let sandbox = Sandbox::new(SandboxConfig::default(), workspace.path());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        home,
        Some("/var/tmp".into()),
    ]
    .into_iter()
    .flatten()
    .filter_map(|base| tempfile::tempdir_in(base).ok())
    .find(|dir| !sandbox.allows_writes_to(dir.path()))
    .expect("a folder outside the sandbox's writable ones")
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    walk(dir)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => out.extend(walk(&path)),
            Ok(kind) if kind.is_file() => out.push(path),
            _ => {}
        }
    }
    out
}

/// Run one scripted response of `calls`, then a final text, and return what the
/// model got back for each call, in order.
fn run_calls(workspace: &Workspace, calls: &[(&str, &str, Value)], extra_args: &[&str]) -> (Vec<String>, MockApi) {
    let api = MockApi::start_in_thread(vec![tool_reply("Trying things.", calls), text_reply("Done.")]);
    let mut args = vec!["-p", "Do what you like"];
    args.extend_from_slice(extra_args);
    let output = workspace.run(&api, &args);
    assert!(
        output.status.success(),
        "stdout {}\nstderr {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let turns = api.turn_requests();
    let results = tool_results(&messages_of(&turns[1]));
    assert_eq!(results.len(), calls.len(), "every call got exactly one result");
    (results, api)
}

fn assert_no_key_anywhere(workspace: &Workspace, api: &MockApi) {
    for file in files_under(workspace.path())
        .into_iter()
        .chain(files_under(workspace.home.path()))
    {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(FAKE_KEY),
            "the key leaked into {}",
            file.display()
        );
    }
    for request in api.requests() {
        assert!(
            !request.body.to_string().contains(FAKE_KEY),
            "the key leaked into a request body"
        );
    }
}

#[test]
fn hostile_calls_without_yes_are_refused_or_asked_and_nothing_leaks() {
    let mut workspace = Workspace::sandboxed();
    workspace.key = FAKE_KEY.into();
    let canary = canary(&workspace);
    let outside = canary.path().display().to_string();
    std::os::unix::fs::symlink(canary.path().join("planted.txt"), workspace.path().join("notes.md")).unwrap();
    let fifo = workspace.path().join("pipe");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let bash = |id: &'static str, command: String| (id, "bash", json!({ "command": command }));
    let calls: Vec<(&str, &str, Value)> = vec![
        bash("k1", "env | grep -i -e key -e token || echo none".into()),
        bash(
            "k2",
            "tr '\\0' '\\n' < /proc/$PPID/environ | grep -i key || echo none".into(),
        ),
        ("w1", "write_file", json!({"path": "notes.md", "content": "planted"})),
        ("r1", "read_file", json!({"path": "pipe"})),
        bash("d1", "env sudo id".into()),
        bash("d2", "command sudo id".into()),
        bash("d3", "bash -c reboot".into()),
        bash("d4", "eval sudo id".into()),
        bash("a1", "S=sud; ${S}o id".into()),
        bash("a2", format!("bash -c 'rm -rf {outside}'")),
        bash("a3", format!("find {outside} -delete")),
        bash("a4", format!("echo {outside}/x | xargs rm")),
        bash(
            "a5",
            format!("python3 -c 'import shutil; shutil.rmtree(\"{outside}\")'"),
        ),
        bash("a6", format!("echo x | tee {outside}/tee.txt")),
        bash("a7", format!("echo x > {outside}/redirected.txt")),
        bash("a8", "exec rm -rf victim".into()),
    ];
    let started = Instant::now();
    let (results, api) = run_calls(&workspace, &calls, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "nothing hung: {:?}",
        started.elapsed()
    );
    assert!(
        !results[0].contains(FAKE_KEY) && results[0].contains("none"),
        "{}",
        results[0]
    );
    assert!(!results[1].contains(FAKE_KEY), "{}", results[1]);
    assert!(results[2].starts_with("Refused"), "dangling link out: {}", results[2]);
    assert!(results[3].contains("not a regular file"), "FIFO: {}", results[3]);
    for (at, result) in results.iter().enumerate().skip(4).take(4) {
        assert!(
            result.starts_with("Refused:") && result.contains("never run"),
            "{}: {result}",
            calls[at].0
        );
    }
    for (at, result) in results.iter().enumerate().skip(8) {
        assert!(
            result.starts_with("Refused: this needs the user's approval"),
            "{}: {result}",
            calls[at].0
        );
    }
    assert!(files_under(canary.path()).is_empty(), "the canary stays empty");
    assert_no_key_anywhere(&workspace, &api);
}

#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn with_yes_the_sandbox_still_contains_writes_and_detached_processes_die() {
    let workspace = Workspace::sandboxed();
    let sandboxed = Sandbox::new(SandboxConfig::default(), workspace.path());
    assert!(
        matches!(sandboxed.state(), SandboxState::Enforced { .. }),
        "this test needs every sandbox layer: {:?}",
        sandboxed.state().details()
    );
    let canary = canary(&workspace);
    let outside = canary.path().display().to_string();
    // A token in the daemon's command line so it can be found afterwards.
    let token = format!("{}", 7_000 + std::process::id() % 1_000);
    let calls: Vec<(&str, &str, Value)> = vec![
        (
            "s1",
            "bash",
            json!({"command": format!("touch {outside}/sandboxed.txt")}),
        ),
        (
            "s2",
            "bash",
            json!({"command": format!("cp /etc/hostname {outside}/copied")}),
        ),
        (
            "s3",
            "bash",
            json!({"command": "echo inside > inside.txt && cat inside.txt"}),
        ),
        (
            "s4",
            "bash",
            json!({"command": format!("setsid sleep {token} > /dev/null 2>&1 < /dev/null & echo started")}),
        ),
        (
            "s5",
            "bash",
            json!({"command": "cat /etc/hostname > /dev/null && echo read"}),
        ),
    ];
    let (results, _api) = run_calls(&workspace, &calls, &["--yes"]);
    assert!(results[0].contains("Permission denied"), "{}", results[0]);
    assert!(results[1].contains("Permission denied"), "{}", results[1]);
    assert_eq!(results[2], "inside\n");
    assert!(results[3].contains("started"), "{}", results[3]);
    assert_eq!(results[4], "read\n", "reads stay allowed");
    assert!(files_under(canary.path()).is_empty(), "the canary stays empty");
    let survivors = common::processes_running(&format!("sleep {token}"));
    assert!(
        survivors.is_empty(),
        "a setsid daemon outlived its command: {survivors:?}"
    );
}
