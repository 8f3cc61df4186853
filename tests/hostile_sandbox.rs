//! Ways out of the sandbox, each tried by a scripted model through the real binary,
//! approved with `--yes` (so the permission checks are out of the way and only the
//! sandbox stands): typing into the user's terminal, device nodes, `.git`, UNIX sockets
//! under `/tmp`, signals to processes outside. Every layer is live on these machines;
//! a kernel without one fails here rather than passing quietly.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{
    MockApi, Workspace, bash_call, messages_of, processes_running, results_of, text_reply, tool_reply, tool_results,
};
use scratchpad::tools::sandbox::{Sandbox, SandboxConfig, SandboxState};
use serde_json::{Value, json};

fn assert_every_layer(workspace: &Workspace) {
    let sandbox = Sandbox::new(SandboxConfig::default(), workspace.path());
    assert!(
        matches!(sandbox.state(), SandboxState::Enforced { .. }),
        "these tests need every sandbox layer: {:?}",
        sandbox.state().details()
    );
}

/// The binary in a pseudo-terminal of its own (its controlling terminal), as a user
/// runs it; returns what the model got back and everything the terminal showed.
fn results_in_a_terminal(workspace: &Workspace, calls: &[(&str, &str, Value)]) -> (Vec<String>, String) {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let api = MockApi::start_in_thread(vec![tool_reply("Trying.", calls), text_reply("Done.")]);
    let std_command = workspace.command(&api, &["-p", "Go", "--yes"]);
    let mut command = CommandBuilder::new(std_command.get_program());
    command.args(std_command.get_args());
    for (key, value) in std_command.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        }
    }
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut child = pair.slave.spawn_command(command).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    // Everything the terminal showed, read until the binary and everything it started
    // closed it.
    let reading = std::thread::spawn(move || {
        let mut shown = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buffer) {
            if n == 0 {
                break;
            }
            shown.extend_from_slice(&buffer[..n]);
        }
        shown
    });
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(60), "the binary hung");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(pair.master);
    let shown = reading.join().unwrap();
    let turns = api.turn_requests();
    let results = tool_results(&messages_of(&turns[1]));
    let shown = String::from_utf8_lossy(&shown).into_owned();
    (results, shown)
}

#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn a_command_cannot_type_into_the_users_terminal() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    let script = r#"
import fcntl, os, termios
for path in ["/dev/tty", "/proc/%d/fd/0" % os.getppid()]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
        for byte in b"echo PWNED\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))
        print("INJECTED through", path)
    except OSError as error:
        print("refused", path, error.errno)
"#;
    std::fs::write(workspace.path().join("inject.py"), script).unwrap();
    let (results, shown) = results_in_a_terminal(&workspace, &[bash_call("t1", "python3 inject.py")]);
    assert!(!results[0].contains("INJECTED"), "{}", results[0]);
    assert!(results[0].contains("refused /dev/tty"), "{}", results[0]);
    assert!(!shown.contains("PWNED"), "the terminal received typed input: {shown}");
}

#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn device_nodes_cannot_be_made_and_outside_processes_cannot_be_signalled() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    let mut outsider = Command::new("sleep").arg("30").spawn().unwrap();
    let results = results_of(
        &workspace,
        &[
            bash_call("m1", "mknod disk b 8 0 && echo made-block"),
            bash_call("m2", "mknod tty c 4 1 && echo made-char"),
            bash_call("m3", "mkfifo fifo && echo made-fifo"),
            bash_call("k1", format!("kill -TERM {} && echo signalled", outsider.id())),
        ],
        &["--yes"],
    );
    assert!(!results[0].contains("made-block"), "{}", results[0]);
    assert!(!results[1].contains("made-char"), "{}", results[1]);
    assert!(!workspace.path().join("disk").exists() && !workspace.path().join("tty").exists());
    assert!(results[2].contains("made-fifo"), "FIFOs stay allowed: {}", results[2]);
    assert!(!results[3].contains("signalled"), "{}", results[3]);
    assert!(
        outsider.try_wait().unwrap().is_none(),
        "the process outside was signalled"
    );
    outsider.kill().unwrap();
    let _ = outsider.wait();
}

fn git_init(dir: &Path) {
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn git_hooks_and_config_cannot_be_planted_unasked() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    git_init(workspace.path());
    let config_before = std::fs::read(workspace.path().join(".git/config")).unwrap();
    let results = results_of(
        &workspace,
        &[
            bash_call(
                "g1",
                "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit && echo planted",
            ),
            bash_call(
                "g2",
                "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config && echo planted",
            ),
            (
                "g3",
                "write_file",
                json!({"path": ".git/hooks/post-checkout", "content": "x"}),
            ),
            bash_call("g4", "git config core.hooksPath hooks"),
        ],
        &[],
    );
    assert!(!results[0].contains("planted"), "{}", results[0]);
    assert!(results[0].contains("Read-only file system"), "{}", results[0]);
    assert!(!results[1].contains("planted"), "{}", results[1]);
    assert!(!workspace.path().join(".git/hooks/pre-commit").exists());
    assert!(!workspace.path().join(".git/hooks/post-checkout").exists());
    assert!(
        results[2].starts_with("Refused"),
        "write_file into .git is asked: {}",
        results[2]
    );
    assert!(
        results[3].starts_with("Refused") && results[3].contains(".git"),
        "a git write is a question naming .git: {}",
        results[3]
    );
    assert_eq!(
        std::fs::read(workspace.path().join(".git/config")).unwrap(),
        config_before
    );
    // Approved, a git command that writes the repository works.
    let approved = results_of(
        &workspace,
        &[bash_call("g5", "git config user.name Approved && echo set")],
        &["--yes"],
    );
    assert!(approved[0].contains("set"), "{}", approved[0]);
    let config = std::fs::read_to_string(workspace.path().join(".git/config")).unwrap();
    assert!(config.contains("Approved"), "{config}");
}

#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn unix_sockets_under_tmp_are_out_of_reach() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    let outside = tempfile::Builder::new().prefix("agent-").tempdir_in("/tmp").unwrap();
    let socket = outside.path().join("agent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        socket.display()
    );
    let abstract_name = format!("scratchpad-test-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let address = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&address).unwrap()
    };
    abstract_listener.set_nonblocking(true).unwrap();
    let connect_abstract = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0{abstract_name}'); print('connected')\""
    );
    // A name of its own, so that a file left by any earlier run cannot decide the result.
    let private_file = format!("/tmp/scratchpad-private-tmp-{}", std::process::id());
    let _ = std::fs::remove_file(&private_file);
    let results = results_of(
        &workspace,
        &[
            bash_call("u1", connect),
            bash_call("u2", connect_abstract),
            bash_call("u3", format!("echo ok > {private_file} && cat {private_file}")),
        ],
        &["--yes"],
    );
    assert!(!results[0].contains("connected"), "{}", results[0]);
    assert!(!results[1].contains("connected"), "{}", results[1]);
    assert!(
        listener.accept().is_err() && abstract_listener.accept().is_err(),
        "nothing connected"
    );
    assert_eq!(results[2], "ok\n", "the private /tmp is writable");
    assert!(
        !Path::new(&private_file).exists(),
        "the command's /tmp is not the host's"
    );
}

#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn the_agents_sockets_and_credentials_are_not_handed_to_commands() {
    let workspace = Workspace::sandboxed();
    let api = MockApi::start_in_thread(vec![
        tool_reply("Looking.", &[bash_call("e1", "env | sort")]),
        text_reply("Done."),
    ]);
    let mut command = workspace.command(&api, &["-p", "Go"]);
    for (name, value) in [
        ("AWS_SECRET_ACCESS_KEY", "aws-secret-1"),
        ("GITHUB_TOKEN", "ghp-secret-2"),
        ("HF_TOKEN", "hf-secret-3"),
        ("DATABASE_URL", "postgres://u:secret-4@db/x"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
        ("TMUX", "/tmp/tmux-0/default,1,0"),
        ("MY_PASSWORD", "secret-5"),
        ("SCRATCHPAD_VISIBLE", "visible-6"),
    ] {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let env = &tool_results(&messages_of(&api.turn_requests()[1]))[0];
    for secret in [
        "secret-1", "secret-2", "secret-3", "secret-4", "ssh-x", "tmux-0", "secret-5",
    ] {
        assert!(!env.contains(secret), "{secret} reached the command:\n{env}");
    }
    assert!(env.contains("visible-6"), "{env}");
}

/// The sandbox's namespaces for an ordinary user did not cost scratchpad its own
/// guard: another process of the same user cannot read its memory or environment
/// (where the API key is). Root reads any process's, so this runs as an ordinary user
/// (`.ci/run` does).
#[test]
#[ignore = "needs an ordinary user: root may read any process's memory; .ci/run runs it as one"]
fn scratchpad_stays_unreadable_to_the_users_other_processes() {
    // SAFETY: getuid cannot fail.
    assert_ne!(unsafe { libc::getuid() }, 0, "run this as an ordinary user");
    let workspace = Workspace::sandboxed();
    // A reply that never comes: the run waits, alive, for as long as the test looks.
    let api = MockApi::start_in_thread(vec![common::Reply::Stall {
        body: common::sse_text("never"),
        bytes: 0,
    }]);
    let mut child = workspace
        .command(&api, &["-p", "Go"])
        .env("ANTHROPIC_API_KEY", "sk-ant-kept-from-other-processes")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while api.requests().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the run never called the model"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id();
    for file in ["environ", "mem", "maps"] {
        let read = std::fs::read(format!("/proc/{pid}/{file}"));
        assert!(
            matches!(&read, Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied),
            "/proc/{pid}/{file} was readable: {:?}",
            read.map(|bytes| bytes.len())
        );
    }
    child.kill().unwrap();
    let _ = child.wait();
}

/// A password typed in another workspace is not for this one's commands: scratchpad's
/// data folder (every workspace's journals, the trust records, the log) is out of
/// their sight, not only read-only. The folder is outside `/tmp` here, as
/// `~/.local/share` is, so the private `/tmp` is not what hides it.
#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn other_workspaces_conversations_are_out_of_sight() {
    let workspace = Workspace::sandboxed();
    let data = tempfile::tempdir_in("/var/tmp").expect("a folder outside /tmp");
    let other = data.path().join("scratchpad/sessions/elsewhere-0123456789ab");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("20261201-100000-1.jsonl"),
        "{\"type\":\"append\",\"message\":{\"role\":\"user\",\"content\":\"the password is SECRET-FROM-A\"}}\n",
    )
    .unwrap();
    let folder = data.path().join("scratchpad");
    let calls = [bash_call(
        "b1",
        format!("grep -r SECRET-FROM {0}; ls -a {0}; echo listed", folder.display()),
    )];
    let api = MockApi::start_in_thread(vec![tool_reply("Looking.", &calls), text_reply("Done.")]);
    let output = workspace
        .command(&api, &["-p", "Go", "--yes"])
        .env("XDG_DATA_HOME", data.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = &tool_results(&messages_of(&api.turn_requests()[1]))[0];
    assert!(result.contains("listed"), "the command ran: {result}");
    assert!(
        !result.contains("SECRET-FROM-A"),
        "another workspace's words reached a command: {result}"
    );
    assert!(
        !result.contains("sessions"),
        "the data folder's contents were listed: {result}"
    );
    assert!(
        std::fs::read_to_string(other.join("20261201-100000-1.jsonl"))
            .unwrap()
            .contains("SECRET-FROM-A"),
        "hidden from commands, kept on disk"
    );
}

/// The ssh-agent and tmux sockets a user keeps outside `/tmp` and the runtime folder
/// (`ssh-agent -a ~/.ssh/agent.sock`, `tmux -S ~/x/tmux.sock`) are covered too: their
/// variables are taken out of scratchpad's own environment at start, and the cover is
/// read from where they are kept, not from the environment that no longer has them.
#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn agent_and_tmux_sockets_outside_tmp_are_out_of_reach() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    let home = tempfile::tempdir_in("/var/tmp").expect("a folder outside /tmp");
    let listen = |name: &str| {
        let path = home.path().join(name);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        (path, listener)
    };
    let (agent, agent_listener) = listen("agent.sock");
    let (tmux, tmux_listener) = listen("tmux.sock");
    let connect = |path: &Path| {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
            path.display()
        )
    };
    let calls = [bash_call("s1", connect(&agent)), bash_call("s2", connect(&tmux))];
    let api = MockApi::start_in_thread(vec![tool_reply("Trying.", &calls), text_reply("Done.")]);
    let output = workspace
        .command(&api, &["-p", "Go", "--yes"])
        .env("SSH_AUTH_SOCK", &agent)
        .env("TMUX", format!("{},1234,0", tmux.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let results = tool_results(&messages_of(&api.turn_requests()[1]));
    assert!(!results[0].contains("connected"), "the ssh agent: {}", results[0]);
    assert!(!results[1].contains("connected"), "tmux: {}", results[1]);
    assert!(
        agent_listener.accept().is_err() && tmux_listener.accept().is_err(),
        "nothing connected"
    );
}

/// A daemon's socket anywhere outside the workspace and `/tmp` (`/run/podman`,
/// `/var/lib/…`, a home folder) is out of reach, though no variable names it and
/// Landlock cannot stop the connection: every pathname socket bound when a command
/// starts is covered.
#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn a_daemon_socket_elsewhere_is_out_of_reach() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    let place = tempfile::tempdir_in("/var/tmp").expect("a folder outside /tmp");
    let socket = place.path().join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mine = workspace.path().join("mine.sock");
    let own = std::os::unix::net::UnixListener::bind(&mine).unwrap();
    own.set_nonblocking(true).unwrap();
    let connect = |path: &Path| {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
            path.display()
        )
    };
    let results = results_of(
        &workspace,
        &[bash_call("d1", connect(&socket)), bash_call("d2", connect(&mine))],
        &["--yes"],
    );
    assert!(!results[0].contains("connected"), "the daemon's socket: {}", results[0]);
    assert!(listener.accept().is_err(), "nothing connected to the daemon");
    assert!(
        results[1].contains("connected"),
        "the workspace's own socket stays usable: {}",
        results[1]
    );
}

/// scratchpad killed outright (SIGKILL, no chance to clean up) takes every process a
/// command started with it: a `setsid` daemon and a plain background child, not only
/// the command itself.
#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn a_commands_children_die_with_scratchpad_killed_outright() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    let token = 20_000 + std::process::id() % 10_000;
    let (daemon, background) = (format!("sleep {token}"), format!("sleep {}", token + 1));
    let quiet = ">/dev/null 2>&1 </dev/null";
    let api = MockApi::start_in_thread(vec![
        tool_reply(
            "Starting.",
            &[bash_call(
                "k1",
                format!("setsid {daemon} {quiet} & {background} {quiet} & sleep 60"),
            )],
        ),
        text_reply("Done."),
    ]);
    let mut scratchpad = workspace
        .command(&api, &["-p", "Go", "--yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while processes_running(&daemon).is_empty() || processes_running(&background).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(30), "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    scratchpad.kill().unwrap();
    scratchpad.wait().unwrap();
    let killed = Instant::now();
    let mut survivors = Vec::new();
    while killed.elapsed() < Duration::from_secs(5) {
        survivors = [&daemon, &background]
            .into_iter()
            .filter(|command| !processes_running(command).is_empty())
            .cloned()
            .collect();
        if survivors.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in processes_running(&daemon)
        .into_iter()
        .chain(processes_running(&background))
    {
        // SAFETY: signalling a process this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(survivors.is_empty(), "outlived scratchpad: {survivors:?}");
}

/// A command may not make git state unasked anywhere in the workspace: a new `.git`
/// folder (at the top, where there was none, or deeper), a `.git` file pointing
/// elsewhere, or a change inside a nested repository's `.git`. What it made is set
/// aside under another name (nothing is lost) and the model is told; a file tool's
/// write there is a question; an approved git command makes a repository.
#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn a_new_git_anywhere_in_the_workspace_is_set_aside_or_asked() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    assert!(!workspace.path().join(".git").exists());
    let nested = workspace.path().join("nested");
    std::fs::create_dir(&nested).unwrap();
    git_init(&nested);
    let nested_config = std::fs::read(nested.join(".git/config")).unwrap();
    let plant = "printf '[core]\\n\\tfsmonitor = touch pwned\\n'";
    let results = results_of(
        &workspace,
        &[
            bash_call(
                "n1",
                format!("mkdir -p .git/objects .git/refs && {plant} > .git/config && echo made"),
            ),
            bash_call(
                "n2",
                "mkdir -p vendor/lib && printf 'gitdir: ../../elsewhere\\n' > vendor/lib/.git",
            ),
            bash_call("n3", format!("{plant} >> nested/.git/config && echo planted")),
            (
                "n4",
                "write_file",
                json!({"path": "deep/er/.git/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}),
            ),
        ],
        &[],
    );
    let top = workspace.path().join(".git");
    assert!(!top.exists(), "the new .git is gone from its place");
    assert!(
        results[0].contains("`.git`") && results[0].contains(".git.refused"),
        "the model is told what was set aside and where: {}",
        results[0]
    );
    assert!(
        std::fs::read_to_string(workspace.path().join(".git.refused/config"))
            .unwrap()
            .contains("fsmonitor"),
        "nothing is lost"
    );
    assert!(!workspace.path().join("vendor/lib/.git").exists(), "{}", results[1]);
    assert!(results[1].contains("vendor/lib/.git"), "{}", results[1]);
    assert!(!results[2].contains("planted"), "{}", results[2]);
    assert!(results[2].contains("Read-only file system"), "{}", results[2]);
    assert_eq!(std::fs::read(nested.join(".git/config")).unwrap(), nested_config);
    assert!(
        results[3].starts_with("Refused") && results[3].contains(".git"),
        "a file tool's write into a new .git is a question: {}",
        results[3]
    );
    assert!(!workspace.path().join("deep/er/.git").exists());
    // Approved, git makes a repository, and it stays.
    let approved = results_of(
        &workspace,
        &[bash_call("n5", "git init -q made && echo ok")],
        &["--yes"],
    );
    assert!(approved[0].contains("ok"), "{}", approved[0]);
    assert!(workspace.path().join("made/.git/config").is_file());
}

/// The code an MCP server runs (a workspace file its command line names, in
/// `config.toml` or `.mcp.json`) runs outside the sandbox when scratchpad starts: a
/// command finds it read-only, and a file tool's write is a question that says whose
/// code it is.
#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn an_mcp_servers_code_cannot_be_rewritten_unasked() {
    let workspace = Workspace::sandboxed();
    assert_every_layer(&workspace);
    let code = "import sys\nprint('serving')\n";
    std::fs::create_dir(workspace.path().join("tools")).unwrap();
    std::fs::write(workspace.path().join("tools/srv.py"), code).unwrap();
    std::fs::write(
        workspace.path().join(".mcp.json"),
        json!({"mcpServers": {"helper": {"command": "python3", "args": ["tools/srv.py"]}}}).to_string(),
    )
    .unwrap();
    let results = results_of(
        &workspace,
        &[
            bash_call(
                "m1",
                "echo 'import os; os.system(\"touch pwned\")' >> tools/srv.py && echo rewritten",
            ),
            (
                "m2",
                "write_file",
                json!({"path": "tools/srv.py", "content": "import os\n"}),
            ),
            bash_call("m3", "rm -f tools/srv.py && echo removed"),
            bash_call(
                "m4",
                "mv tools moved && mkdir tools && echo 'import os' > tools/srv.py && echo swapped",
            ),
        ],
        &[],
    );
    assert!(!results[0].contains("rewritten"), "{}", results[0]);
    assert!(results[0].contains("Read-only file system"), "{}", results[0]);
    assert!(
        results[1].starts_with("Refused") && results[1].contains("MCP server `helper`"),
        "{}",
        results[1]
    );
    assert!(!results[2].contains("removed"), "{}", results[2]);
    assert!(
        !results[3].contains("swapped"),
        "its folder cannot be moved away: {}",
        results[3]
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("tools/srv.py")).unwrap(),
        code
    );
}
