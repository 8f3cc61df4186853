//! The archive and the user's files against a hostile model and a second writer:
//! the store folders read-only to commands and file tools, a store folder swapped for
//! a link, two instances on one session, an edit of a file someone changed since it
//! was read, and an edit on a full disk.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{MockApi, Workspace, bash_call, prompt_too_long, results_of, text_reply, tool_reply};
use serde_json::json;

#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn the_archive_is_read_only_to_commands_and_file_tools() {
    let workspace = Workspace::sandboxed();
    let saved = workspace.path().join(".task_outputs/tool-results");
    std::fs::create_dir_all(&saved).unwrap();
    std::fs::write(saved.join("toolu_old.txt"), "the original output").unwrap();
    std::fs::create_dir_all(workspace.path().join(".transcripts")).unwrap();
    let transcript = workspace.path().join(".transcripts/transcript_snip_compact_1.jsonl");
    std::fs::write(&transcript, "{\"role\":\"user\",\"content\":\"hi\"}\n").unwrap();
    // The journal folder exists before the run, as it does once any session ran.
    let journals = workspace.sessions_dir();
    std::fs::create_dir_all(&journals).unwrap();
    let planted = journals.join("20990101-000000-1.jsonl");
    let results = results_of(
        &workspace,
        &[
            bash_call(
                "a0",
                format!("echo '{{\"type\":\"append\"}}' > {}; echo done", planted.display()),
            ),
            bash_call(
                "a1",
                "echo forged > .task_outputs/tool-results/toolu_old.txt; echo done",
            ),
            bash_call("a2", ": > .transcripts/transcript_snip_compact_1.jsonl; echo done"),
            bash_call(
                "a3",
                "echo '{}' > .transcripts/planted.jsonl; rm -rf .transcripts; echo done",
            ),
            (
                "a4",
                "write_file",
                json!({"path": ".task_outputs/tool-results/toolu_old.txt", "content": "forged"}),
            ),
            (
                "a5",
                "edit_file",
                json!({"path": ".transcripts/transcript_snip_compact_1.jsonl", "old_text": "hi", "new_text": "rm -rf ~"}),
            ),
        ],
        &["--yes"],
    );
    // Read-only, refused, or (the test's data folder lies under /tmp) not even there.
    assert!(
        [
            "Read-only file system",
            "Permission denied",
            "No such file or directory"
        ]
        .iter()
        .any(|why| results[0].contains(why)),
        "{}",
        results[0]
    );
    assert!(!planted.exists(), "no journal can be planted");
    for result in &results[1..4] {
        assert!(result.contains("Read-only file system"), "{result}");
    }
    assert!(results[4].starts_with("Refused: `.task_outputs/`"), "{}", results[4]);
    assert!(results[5].starts_with("Refused: `.transcripts/`"), "{}", results[5]);
    assert_eq!(
        std::fs::read_to_string(saved.join("toolu_old.txt")).unwrap(),
        "the original output"
    );
    assert_eq!(
        std::fs::read_to_string(&transcript).unwrap(),
        "{\"role\":\"user\",\"content\":\"hi\"}\n"
    );
    assert!(!workspace.path().join(".transcripts/planted.jsonl").exists());
    assert!(
        !journals.starts_with(workspace.path()),
        "journals live outside the workspace"
    );
    assert!(workspace.newest_journal().is_some());
}

#[test]
fn a_store_folder_swapped_for_a_link_stops_commands_and_is_never_written_through() {
    let workspace = Workspace::sandboxed();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), workspace.path().join(".transcripts")).unwrap();
    let results = results_of(&workspace, &[bash_call("l1", "echo ran")], &["--yes"]);
    assert!(
        results[0].starts_with("Not run:") && results[0].contains(".transcripts"),
        "{}",
        results[0]
    );
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn a_second_instance_on_an_open_session_is_refused_naming_the_holder() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![
        // The first instance holds the session until the test is done with it (at
        // most 30 s, should the test fail first).
        tool_reply(
            "Waiting.",
            &[bash_call(
                "w1",
                "for _ in $(seq 600); do [ -e release ] && break; sleep 0.05; done; echo released",
            )],
        ),
        text_reply("First done."),
        text_reply("Later done."),
    ]);
    let mut first = workspace
        .command(&api, &["-p", "wait"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while api.turn_requests().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the first instance never called"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = workspace.run(&api, &["--continue", "-p", "me too"]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(
        stderr.contains("is open in another scratchpad") && stderr.contains(&format!("pid {}", first.id())),
        "{stderr}"
    );
    // The way offered: a read-only view, which takes no lock and writes nothing.
    let offered = stderr
        .split("scratchpad --resume ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the refusal offers a read-only view")
        .to_string();
    let journal = workspace.newest_journal().unwrap();
    let before = std::fs::read(&journal).unwrap();
    let view = workspace.run(&api, &["--resume", &offered, "--read-only", "-p", "sneak this in"]);
    let said = String::from_utf8_lossy(&view.stderr);
    assert!(!view.status.success());
    assert!(
        said.contains("read-only view of session") && said.contains(&format!("open in pid {}", first.id())),
        "{said}"
    );
    assert!(
        !api.turn_requests()
            .iter()
            .any(|r| r.body.to_string().contains("sneak this in")),
        "nothing was sent"
    );
    std::fs::write(workspace.dir.path().join("release"), "").unwrap();
    assert!(first.wait().unwrap().success());
    let after = std::fs::read(&journal).unwrap();
    assert!(after.starts_with(&before), "the view wrote nothing into the session");
    assert!(!String::from_utf8_lossy(&after).contains("sneak this in"));
    // Once the first has ended, the session can be continued.
    let third = workspace.run(&api, &["--continue", "-p", "now"]);
    assert!(third.status.success(), "{}", String::from_utf8_lossy(&third.stderr));
}

#[test]
fn an_edit_of_a_file_changed_since_it_was_read_is_refused_and_their_lines_stay() {
    let workspace = Workspace::sandboxed();
    let results = results_of(
        &workspace,
        &[
            ("r1", "read_file", json!({"path": "f0.rs"})),
            bash_call("b1", "echo '// appended by someone else' >> f0.rs"),
            (
                "e1",
                "edit_file",
                json!({"path": "f0.rs", "old_text": "file 0 line 0:", "new_text": "file zero line 0:"}),
            ),
        ],
        &["--yes"],
    );
    assert!(results[2].contains("changed since you last read it"), "{}", results[2]);
    let text = std::fs::read_to_string(workspace.path().join("f0.rs")).unwrap();
    assert!(text.ends_with("// appended by someone else\n") && text.contains("file 0 line 0:"));
}

/// A tmpfs of 256 KiB mounted for one test and unmounted after, even on a panic.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(status.success(), "could not mount a small tmpfs");
        SmallDisk(dir)
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0.path()).status();
    }
}

/// Set in the copy of this test binary that runs in a namespace of its own.
const IN_OWN_NAMESPACE: &str = "SCRATCHPAD_TEST_IN_OWN_NAMESPACE";

/// Mounting a tmpfs needs root, or a user and mount namespace of one's own, where an
/// ordinary user may mount one: not root, the test runs again in such a namespace
/// (`unshare`), and passes only if that run passed it.
#[test]
#[ignore = "needs root or unprivileged user namespaces (it mounts a small tmpfs); .ci/run runs it"]
fn an_edit_on_a_full_disk_leaves_the_file_byte_for_byte() {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && std::env::var_os(IN_OWN_NAMESPACE).is_none() {
        let name = "an_edit_on_a_full_disk_leaves_the_file_byte_for_byte";
        let output = std::process::Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount"])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", name, "--include-ignored", "--test-threads", "1"])
            .env(IN_OWN_NAMESPACE, "1")
            .output()
            .expect("run unshare");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "in a namespace of its own: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let disk = SmallDisk::mount();
    let file = disk.0.path().join("big.rs");
    let original: String = (0..2_000)
        .map(|line| format!("// line {line:05} of the file\n"))
        .collect();
    std::fs::write(&file, &original).unwrap();
    // Fill the rest of the disk.
    let filler = disk.0.path().join("filler");
    let mut chunk = vec![b'x'; 4096];
    {
        use std::io::Write;
        let mut out = std::fs::File::create(&filler).unwrap();
        while out.write_all(&chunk).is_ok() {}
        chunk.clear();
    }
    let workspace = scratchpad::tools::workspace::Workspace::new(disk.0.path()).unwrap();
    let tools = scratchpad::tools::ToolBox::new(workspace, scratchpad::tools::ToolsConfig::default());
    let grown = "// line 01000 of the file, now much longer".repeat(200);
    let plan = tools.plan(
        "edit_file",
        &json!({"path": "big.rs", "old_text": "// line 01000 of the file", "new_text": grown}),
    );
    let scratchpad::tools::Plan::Run(job) = plan else {
        panic!("{plan:?}")
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let output = runtime.block_on(tools.run(job));
    assert!(output.is_error, "{}", output.text);
    assert!(output.text.contains("No space left"), "{}", output.text);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "not one line lost");
    let leftovers: Vec<_> = std::fs::read_dir(disk.0.path())
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The one file of `folder` (relative to the workspace) whose name starts with `prefix`.
fn only_file(workspace: &Workspace, folder: &str, prefix: &str) -> std::path::PathBuf {
    let mut files: Vec<_> = std::fs::read_dir(workspace.path().join(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.remove(0)
}

/// The same length, one character changed: a size check alone would take it.
fn forge_same_size(path: &std::path::Path, from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let original = std::fs::read(path).unwrap();
    let text = String::from_utf8(original.clone()).unwrap();
    assert!(text.contains(from), "{text:.200}");
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    original
}

#[test]
fn undo_refuses_a_forged_transcript_by_name_and_changes_nothing() {
    let workspace = Workspace::sandboxed();
    let journal = workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![prompt_too_long(), text_reply("fits now")]);
    let output = workspace.run(&api, &["--continue", "-p", "Do the thing"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let transcript = only_file(&workspace, ".transcripts", "transcript_reactive_compact_");
    let original = forge_same_size(&transcript, "question 3", "question 9");
    let before = std::fs::read(&journal).unwrap();

    let refused = workspace.run(&api, &["undo"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    let name = transcript.file_name().unwrap().to_string_lossy();
    assert!(stderr.contains(&*name) && stderr.contains("digest differs"), "{stderr}");
    assert_eq!(std::fs::read(&journal).unwrap(), before, "nothing was journaled");

    std::fs::write(&transcript, original).unwrap();
    let undone = workspace.run(&api, &["undo"]);
    assert!(undone.status.success(), "{}", String::from_utf8_lossy(&undone.stderr));
}

#[test]
fn undo_refuses_a_forged_saved_output_by_name_and_changes_nothing() {
    use scratchpad::message::{ContentBlock, Message, Role};
    use scratchpad::session::Record;
    let workspace = Workspace::sandboxed();
    let mut records = vec![Record::Append {
        message: Message::user_text("read it"),
    }];
    for id in ["toolu_a", "toolu_b"] {
        records.push(Record::Append {
            message: Message::blocks(
                Role::Assistant,
                vec![ContentBlock::tool_use(id, "read_file", json!({"path": "f0.rs"}))],
            ),
        });
        records.push(Record::Append {
            message: Message::blocks(
                Role::User,
                vec![ContentBlock::tool_result(id, format!("{id} ").repeat(300), false)],
            ),
        });
    }
    records.push(Record::Append {
        message: Message::assistant_text("read"),
    });
    let dir = workspace.sessions_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let journal = dir.join("20260101-000000-1.jsonl");
    let text: String = records
        .iter()
        .map(|record| serde_json::to_string(record).unwrap() + "\n")
        .collect();
    std::fs::write(&journal, text).unwrap();
    let api = MockApi::start_in_thread(vec![text_reply("ok")]);
    let output = workspace.run(
        &api,
        &["--continue", "-p", "next", "--limit", "3000", "--keep-recent", "0"],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let saved = only_file(&workspace, ".task_outputs/tool-results", "toolu_a");
    let original = forge_same_size(&saved, "toolu_a", "toolu_z");
    let before = std::fs::read(&journal).unwrap();

    let refused = workspace.run(&api, &["undo"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains(".task_outputs/tool-results/toolu_a") && stderr.contains("digest differs"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&journal).unwrap(), before, "nothing was journaled");

    std::fs::write(&saved, original).unwrap();
    let undone = workspace.run(&api, &["undo"]);
    assert!(undone.status.success(), "{}", String::from_utf8_lossy(&undone.stderr));
}

/// `scratchpad undo` on a session open elsewhere is refused, naming the holder, and
/// changes nothing; once it is free, two undos in turn undo both stages, newest
/// first, and the journal replays to the history as it was before either.
#[test]
fn an_undo_on_an_open_session_is_refused_and_undos_in_turn_restore_what_was() {
    let workspace = Workspace::new();
    let journal = workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![
        prompt_too_long(),
        text_reply("fits now"),
        prompt_too_long(),
        text_reply("fits again"),
    ]);
    for request in ["First", "Second"] {
        let output = workspace.run(&api, &["--continue", "-p", request]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let after_first = messages_sent(&api, 1);
    let original = scratchpad::session::restore(&journal).unwrap();
    let stages = |restored: &scratchpad::session::Restored| -> Vec<String> {
        restored
            .past
            .iter()
            .filter_map(|item| match item {
                scratchpad::protocol::Past::Stage { event } => Some(event.id.clone()),
                _ => None,
            })
            .collect()
    };
    let ids = stages(&original);
    assert_eq!(ids.len(), 2, "two stages, each with its own id: {ids:?}");
    assert!(ids.iter().all(|id| !id.is_empty()) && ids[0] != ids[1]);

    // This process holds the session, as another scratchpad would.
    let (held, _) = scratchpad::session::Journal::resume(&journal).unwrap();
    let before = std::fs::read(&journal).unwrap();
    let refused = workspace.run(&api, &["undo"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("is open in another scratchpad") && stderr.contains(&format!("pid {}", std::process::id())),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&journal).unwrap(), before, "nothing was written");
    drop(held);

    let undone = workspace.run(&api, &["undo"]);
    assert!(undone.status.success(), "{}", String::from_utf8_lossy(&undone.stderr));
    let once = scratchpad::session::restore(&journal).unwrap();
    assert!(once.repairs.is_empty(), "{:?}", once.repairs);
    let expected: Vec<String> = after_first.iter().map(|m| m.text()).collect();
    let texts: Vec<String> = once.messages.iter().map(|m| m.text()).collect();
    assert_eq!(
        &texts[..expected.len()],
        &expected[..],
        "the history the second stage saw"
    );

    let undone = workspace.run(&api, &["undo"]);
    assert!(undone.status.success(), "{}", String::from_utf8_lossy(&undone.stderr));
    let twice = scratchpad::session::restore(&journal).unwrap();
    assert!(twice.repairs.is_empty(), "{:?}", twice.repairs);
    let texts: Vec<String> = twice.messages.iter().map(|m| m.text()).collect();
    assert!(
        texts[0].starts_with("question 0"),
        "both stages undone: the original history"
    );
    assert_eq!(texts.len(), 12 + 4, "the 12 earlier messages and both turns");
}

/// The history of the `n`th turn request (0-based) the model got.
fn messages_sent(api: &MockApi, n: usize) -> Vec<scratchpad::message::Message> {
    common::messages_of(&api.turn_requests()[n])
}

/// The folder an earlier version kept journals in, where a workspace still has one,
/// is read-only to commands and refused to file tools: nothing can be planted there
/// for a later start to take for the user's.
#[test]
#[ignore = "needs every sandbox layer (unprivileged user namespaces, Landlock, seccomp); .ci/run runs it"]
fn an_earlier_versions_journal_folder_cannot_be_planted_in() {
    let workspace = Workspace::sandboxed();
    let legacy = workspace.path().join(".scratchpad/sessions");
    std::fs::create_dir_all(&legacy).unwrap();
    std::fs::write(legacy.join("20260101-000000-1.jsonl"), "{}\n").unwrap();
    // Something of the user's beside the journals keeps the folder after the move.
    std::fs::write(workspace.path().join(".scratchpad/notes.txt"), "mine\n").unwrap();
    let results = results_of(
        &workspace,
        &[
            bash_call(
                "p1",
                "mkdir -p .scratchpad/sessions && echo '{\"type\":\"append\"}' > .scratchpad/sessions/29991231-235959-1.jsonl; echo done",
            ),
            (
                "p2",
                "write_file",
                json!({"path": ".scratchpad/sessions/29991231-235959-2.jsonl", "content": "{}"}),
            ),
        ],
        &["--yes"],
    );
    assert!(results[0].contains("Read-only file system"), "{}", results[0]);
    assert!(results[1].starts_with("Refused: `.scratchpad/`"), "{}", results[1]);
    for planted in ["29991231-235959-1.jsonl", "29991231-235959-2.jsonl"] {
        assert!(!legacy.join(planted).exists(), "{planted} was planted");
    }
}
