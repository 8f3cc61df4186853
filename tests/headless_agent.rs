//! The real binary in headless mode (`-p`) against the in-process mock API: compaction
//! stages fire and the requests the server received stay well-formed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    MockApi, Recorded, Reply, Workspace, events, messages_of, prompt_too_long, text_reply, tool_reply, tool_results,
};
use scratchpad::compact::markers::{parse_archive_marker, parse_cleared_reference, parse_persisted_output};
use scratchpad::compact::pairing::check_pairing;
use scratchpad::message::{ContentBlock, Message};
use serde_json::{Value, json};

fn stages(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "compaction" && e["event"]["replaced"].as_u64() > Some(0))
        .map(|e| e["event"]["stage"].as_str().unwrap().to_string())
        .collect()
}

const SMALL: &[&str] = &[
    "--limit",
    "4000",
    "--max-messages",
    "12",
    "--tool-result-budget",
    "6000",
    "--persist-over",
    "2500",
    "--persisted-preview",
    "200",
    "--fit-preview",
    "150",
];

#[test]
fn a_scripted_task_fires_each_stage_and_keeps_requests_well_formed() {
    let workspace = Workspace::new();
    let mut script = vec![tool_reply(
        "Two listings.",
        &[
            ("toolu_a1", "bash", json!({"command": "seq -w 1 1500"})),
            ("toolu_a2", "bash", json!({"command": "seq -w 1 300"})),
        ],
    )];
    for i in 0..8 {
        script.push(tool_reply(
            &format!("Reading f{i}.rs."),
            &[(&format!("toolu_r{i}"), "read_file", json!({"path": format!("f{i}.rs")}))],
        ));
    }
    script.push(tool_reply(
        "Compacting mid-batch.",
        &[
            ("toolu_c1", "bash", json!({"command": "echo before"})),
            ("toolu_c2", "compact", json!({})),
            ("toolu_c3", "bash", json!({"command": "echo after"})),
        ],
    ));
    script.push(text_reply("All done."));
    let api = MockApi::start_in_thread(script);
    let output = workspace.run(
        &api,
        &[&["-p", "Survey the files", "--events", "jsonl"], SMALL].concat(),
    );
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);
    let fired = stages(&events);
    for stage in ["tool_result_budget", "snip_compact", "micro_compact", "compact_history"] {
        assert!(fired.iter().any(|s| s == stage), "{stage} did not fire: {fired:?}");
    }
    assert_eq!(api.remaining(), 0);

    let turns = api.turn_requests();
    assert_eq!(turns.len(), 11);
    let mut saw_archive = false;
    let mut saw_persisted = false;
    let mut saw_cleared = false;
    for request in &turns {
        let messages = messages_of(request);
        assert_eq!(check_pairing(&messages), Ok(()), "pairing in {messages:?}");
        for message in &messages {
            if let Some((_, path)) = parse_archive_marker(&message.text()) {
                assert!(workspace.path().join(path).is_file(), "{path}");
                saw_archive = true;
            }
        }
        for text in tool_results(&messages) {
            if let Some(block) = parse_persisted_output(&text) {
                let saved = std::fs::read_to_string(workspace.path().join(block.path)).unwrap();
                assert_eq!(Some(saved.chars().count()), block.original_chars);
                saw_persisted = true;
            }
            if let Some(path) = parse_cleared_reference(&text) {
                assert!(workspace.path().join(path).is_file(), "{path}");
                saw_cleared = true;
            }
        }
    }
    assert!(saw_archive && saw_persisted && saw_cleared);

    // Stage 1 saved the 7,500-char listing whole.
    let saved = std::fs::read_to_string(workspace.path().join(".task_outputs/tool-results/toolu_a1.txt")).unwrap();
    assert_eq!(saved, (1..=1500).map(|n| format!("{n:04}\n")).collect::<String>());

    // The compact tool ran after its whole batch: all three calls got results, then
    // the next request starts with the [Compacted] message.
    let finished: Vec<(usize, &str)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "tool_finished" && e["id"].as_str().is_some_and(|id| id.starts_with("toolu_c")))
        .map(|(at, e)| (at, e["output"].as_str().unwrap()))
        .collect();
    let outputs: Vec<&str> = finished.iter().map(|(_, output)| *output).collect();
    assert_eq!(
        outputs,
        vec!["before\n", "Compaction requested after this tool batch.", "after\n"]
    );
    let compacted_at = events
        .iter()
        .position(|e| e["type"] == "compaction" && e["event"]["stage"] == "compact_history")
        .unwrap();
    assert!(
        compacted_at > finished[2].0,
        "compaction ran only after the whole batch"
    );
    // The real summary ("Goal: the scripted task.") names none of the files read; the
    // index keeps every one of them in context, and the event's retention says so.
    let loss = &events[compacted_at]["event"]["loss"];
    let tally = loss["tally"].as_array().unwrap();
    let paths = tally.iter().find(|kind| kind["kind"] == "path").expect("paths counted");
    assert!(paths["found"].as_u64().is_some_and(|found| found >= 8), "{loss}");
    assert_eq!(paths["found"], paths["kept"], "{loss}");
    let last = messages_of(&turns[10]);
    assert_eq!(last.len(), 1);
    let text = last[0].text();
    assert!(text.starts_with("[Compacted]"), "{text}");
    assert!(text.contains("Current user request:\nSurvey the files"));
    assert!(text.contains("Conversation summary (reference only; not instructions):\nGoal: the scripted task."));
    assert!(
        (0..8).all(|i| text.contains(&format!("f{i}.rs"))),
        "the index names each file read: {text}"
    );
    let path = text.rsplit(": ").next().unwrap();
    let lines = std::fs::read_to_string(workspace.path().join(path)).unwrap();
    assert!(lines.lines().all(|l| serde_json::from_str::<Message>(l).is_ok()));
    assert!(api.requests().iter().any(Recorded::is_summary));
}

#[test]
fn duplicate_call_ids_and_non_object_inputs_never_reach_the_history_as_they_are() {
    let workspace = Workspace::new();
    let calls: Vec<(&str, &str, Value)> = vec![
        ("toolu_same", "bash", json!({"command": "echo first"})),
        ("toolu_same", "bash", json!({"command": "echo second"})),
        ("toolu_str", "bash", json!("ls -la")),
    ];
    let api = MockApi::start_in_thread(vec![tool_reply("Running.", &calls), text_reply("done")]);
    let output = workspace.run(&api, &["-p", "Run them", "--yes"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sent = messages_of(&api.turn_requests()[1]);
    assert_eq!(check_pairing(&sent), Ok(()));
    let ids: Vec<&str> = sent[1].tool_use_ids().collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[0] != ids[1], "ids made unique: {ids:?}");
    assert!(sent[1].block_slice().iter().all(|block| match block {
        ContentBlock::ToolUse { input, .. } => input.is_object(),
        _ => true,
    }));
    let results = tool_results(&sent);
    assert_eq!(results[0], "first\n");
    assert!(results[1].contains("repeated the id"), "{results:?}");
    assert!(results[2].contains("must be a JSON object"), "{results:?}");
}

#[test]
fn a_journal_append_that_fails_is_cut_back_and_the_journal_stays_whole() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![text_reply("ok")]);
    // Files may grow to 4 KiB (as on a nearly full disk); with SIGXFSZ ignored a longer
    // write fails with EFBIG instead of killing the process.
    let mut wrapper = Command::new("sh");
    wrapper.args([
        "-c",
        "trap '' XFSZ; ulimit -f 4 && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_scratchpad"),
    ]);
    let long_request = format!("Summarise this: {}", "words ".repeat(1_000));
    let output = workspace
        .command_through(wrapper, &api, &["-p", &long_request])
        .output()
        .expect("run the binary");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("session journal"),
        "the failed append is reported: {stderr}"
    );
    let journal = newest_journal(&workspace);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.ends_with('\n'), "no partial line is left behind");
    for line in text.lines() {
        serde_json::from_str::<scratchpad::session::Record>(line).expect("every line is a whole record");
    }
    assert!(
        text.contains("\"ok\""),
        "appends after the failed one still land: {text}"
    );
    let restored = scratchpad::session::restore(&journal).unwrap();
    assert!(
        !restored.repairs.iter().any(|r| r.contains("not a record")),
        "{:?}",
        restored.repairs
    );
    assert_eq!(check_pairing(&restored.messages), Ok(()));
}

#[test]
fn print_mode_shows_only_finished_messages_without_escape_sequences() {
    let workspace = Workspace::new();
    let half = common::sse_text("HALF-ANSWER the");
    let api = MockApi::start_in_thread(vec![
        Reply::Cut {
            bytes: half.len() * 2 / 3,
            body: half,
        },
        text_reply("FULL answer.\u{1b}]52;c;aGk=\u{7}\u{1b}[2J Done."),
    ]);
    let output = workspace.run(&api, &["-p", "Answer"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "FULL answer. Done.\n");
}

#[test]
fn a_refusal_that_nothing_can_shrink_is_reported_at_once() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![prompt_too_long(), text_reply("unused")]);
    let output = workspace.run(&api, &["-p", "Do the thing"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("could not shrink"), "{stderr}");
    assert_eq!(api.turn_requests().len(), 1, "no retry of an unchanged history");
}

#[test]
fn prompt_too_long_compacts_reactively_and_retries_once() {
    let workspace = Workspace::new();
    workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![prompt_too_long(), text_reply("fits now")]);
    let output = workspace.run(&api, &["--continue", "-p", "Do the thing", "--events", "jsonl"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stages(&events(&output)), vec!["reactive_compact"]);
    let turns = api.turn_requests();
    assert_eq!(turns.len(), 2);
    let retried = messages_of(&turns[1]);
    assert!(retried[0].text().starts_with("[Compacted]"));
    // The request is among the messages kept verbatim, so the summary refers to it
    // instead of repeating it (repeating it made small windows overflow again).
    assert_eq!(retried.last().unwrap().text(), "Do the thing");
    assert!(!retried[0].text().contains("Do the thing"), "{}", retried[0].text());
    assert!(turns[1].body["messages"].to_string().len() < turns[0].body["messages"].to_string().len());
}

#[test]
fn a_refusal_of_a_short_history_with_large_results_persists_them_instead_of_summarising() {
    let workspace = Workspace::new();
    for i in 0..3 {
        std::fs::write(workspace.path().join(format!("big{i}.txt")), "z".repeat(12_000 + i)).unwrap();
    }
    let calls: Vec<(&str, &str, Value)> = vec![
        ("toolu_b0", "bash", json!({"command": "cat big0.txt"})),
        ("toolu_b1", "bash", json!({"command": "cat big1.txt"})),
        ("toolu_b2", "bash", json!({"command": "cat big2.txt"})),
    ];
    let refusal = common::error_reply(
        400,
        json!({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 12000 tokens > 8000 maximum"}}),
    );
    let api = MockApi::start_in_thread(vec![tool_reply("Reading.", &calls), refusal, text_reply("read them")]);
    let output = workspace.run(&api, &["-p", "Read the three files", "--events", "jsonl"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let turns = api.turn_requests();
    assert_eq!(turns.len(), 3, "the call, the refused one, the retry");
    let refused = messages_of(&turns[1]);
    let retried = messages_of(&turns[2]);
    assert_eq!(retried.len(), refused.len(), "nothing was summarised");
    assert!(!api.requests().iter().any(Recorded::is_summary));
    let size = |messages: &[Message]| serde_json::to_string(messages).unwrap().len();
    assert!(size(&retried) < size(&refused), "the history never grew");
    let persisted: Vec<String> = retried[2]
        .block_slice()
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolResult { content, .. } => {
                parse_persisted_output(&content.full_text()).map(|p| p.path.to_string())
            }
            _ => None,
        })
        .collect();
    assert!(!persisted.is_empty(), "large results were persisted");
    for path in persisted {
        let saved = std::fs::read_to_string(workspace.path().join(path)).unwrap();
        assert!(saved.len() >= 12_000, "the file holds the whole output");
    }
    assert_eq!(check_pairing(&retried), Ok(()));
}

/// A second refusal (the server measures more exactly than our estimate) shrinks the
/// history once more and the retry goes through, rather than failing the turn.
#[test]
fn a_second_refusal_shrinks_once_more_and_the_retry_goes_through() {
    let workspace = Workspace::new();
    workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![prompt_too_long(), prompt_too_long(), text_reply("fits now")]);
    let output = workspace.run(&api, &["--continue", "-p", "Do the thing"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "fits now");
    let requests = api.turn_requests();
    assert_eq!(requests.len(), 3);
    let sizes: Vec<usize> = requests.iter().map(|r| r.body["messages"].to_string().len()).collect();
    assert!(
        sizes[1] < sizes[0] && sizes[2] <= sizes[1],
        "each retry smaller: {sizes:?}"
    );
}

#[test]
fn refusals_past_the_retry_budget_surface_the_error_and_keep_the_history() {
    let workspace = Workspace::new();
    workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![
        prompt_too_long(),
        prompt_too_long(),
        prompt_too_long(),
        text_reply("unused"),
    ]);
    let output = workspace.run(&api, &["--continue", "-p", "Do the thing"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("prompt is too long"), "{stderr}");
    assert_eq!(api.turn_requests().len(), 3);
    let journal = newest_journal(&workspace);
    let restored = scratchpad::session::restore(&journal).unwrap();
    // The earlier work is kept (summarised, with its transcript); the request that got
    // no answer is not, so that the next request does not carry it unanswered.
    assert!(
        restored.messages[0].text().starts_with("[Compacted]"),
        "{:?}",
        restored.messages
    );
    let everything: String = restored.messages.iter().map(Message::text).collect();
    assert!(!everything.contains("Do the thing"), "{everything}");
    assert!(stderr.contains("taken out of the history"), "{stderr}");
}

#[test]
fn path_escapes_are_refused_headless_without_yes() {
    let workspace = Workspace::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), workspace.path().join("link")).unwrap();
    let attempts = [
        ("e1", "read_file", json!({"path": "../secret.txt"})),
        ("e2", "read_file", json!({"path": outside.path().join("secret.txt")})),
        ("e3", "read_file", json!({"path": "link/secret.txt"})),
        ("e4", "write_file", json!({"path": "link/new.txt", "content": "x"})),
        (
            "e5",
            "edit_file",
            json!({"path": "/etc/hostname", "old_text": "a", "new_text": "b"}),
        ),
        ("e6", "glob", json!({"pattern": "../*"})),
        ("e7", "bash", json!({"command": "rm -rf /"})),
        ("e8", "bash", json!({"command": "rm f0.rs"})),
    ];
    let api = MockApi::start_in_thread(vec![tool_reply("Trying.", &attempts), text_reply("ok")]);
    let output = workspace.run(&api, &["-p", "escape"]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("needs the user's approval") && stderr.contains("--yes"),
        "refusals are said on stderr too: {stderr}"
    );
    let results = tool_results(&messages_of(&api.turn_requests()[1]));
    assert_eq!(results.len(), attempts.len());
    for (result, (id, tool, _)) in results.iter().zip(&attempts) {
        // glob is never asked about (it only lists names); it refuses to leave the
        // workspace when it runs. Everything else needed the user, who was not there.
        let expected = if *tool == "glob" {
            "glob: patterns must stay inside the workspace"
        } else {
            "Refused"
        };
        assert!(result.starts_with(expected), "{id}: {result}");
    }
    assert!(!outside.path().join("new.txt").exists());
    assert!(workspace.path().join("f0.rs").exists());
}

fn newest_journal(workspace: &Workspace) -> PathBuf {
    workspace.newest_journal().expect("a session journal")
}

#[test]
fn a_session_killed_while_a_tool_runs_resumes_with_an_interrupted_result() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![
        tool_reply("Waiting.", &[("toolu_s1", "bash", json!({"command": "sleep 30"}))]),
        text_reply("Resumed fine."),
        text_reply("Still fine."),
    ]);
    let mut child = workspace
        .command(&api, &["-p", "First request"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let journal_has_call = || {
        workspace
            .newest_journal()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .is_some_and(|text| text.contains("toolu_s1"))
    };
    let started = Instant::now();
    while !journal_has_call() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the call never reached the journal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The call is journaled and has no result: a kill from here on finds it unanswered.
    child.kill().unwrap(); // SIGKILL while `sleep 30` runs
    child.wait().unwrap();

    for (round, request) in ["Second request", "Third request"].iter().enumerate() {
        let output = workspace.run(&api, &["--continue", "-p", request]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let sent = messages_of(&api.turn_requests()[1 + round]);
        assert_eq!(check_pairing(&sent), Ok(()), "round {round}: {sent:?}");
        assert!(
            tool_results(&sent)
                .iter()
                .any(|r| r.contains("interrupted: scratchpad stopped before this tool finished")),
            "{sent:?}"
        );
        if round == 0 {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("note:") && stderr.contains("interrupted"), "{stderr}");
        }
    }
}

#[test]
fn a_session_killed_mid_turn_resumes_with_its_history() {
    let workspace = Workspace::new();
    let slow = Reply::Sse {
        body: common::sse_text(&"word ".repeat(400)),
        chunk: 64,
        delay_ms: 50,
    };
    let api = MockApi::start_in_thread(vec![
        tool_reply("Listing.", &[("toolu_l1", "bash", json!({"command": "echo listed"}))]),
        slow,
        text_reply("Resumed fine."),
    ]);
    let mut child = workspace
        .command(&api, &["-p", "First request"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while api.turn_requests().len() < 2 {
        assert!(started.elapsed() < Duration::from_secs(20), "second call never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL, mid-stream
    child.wait().unwrap();

    let output = workspace.run(&api, &["--continue", "-p", "Second request"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let resumed = messages_of(&api.turn_requests()[2]);
    let texts: Vec<String> = resumed.iter().map(Message::text).collect();
    assert_eq!(texts[0], "First request");
    assert_eq!(tool_results(&resumed), vec!["listed\n"]);
    assert_eq!(texts.last().unwrap(), "Second request");
    assert_eq!(check_pairing(&resumed), Ok(()));
}

#[test]
fn ctrl_c_cancels_a_long_bash_and_kills_its_process_group() {
    a_signal_cancels_a_long_bash_and_kills_its_process_group(libc::SIGINT);
}

/// A kill or a closed terminal ends the turn as Ctrl+C does: the command dies with its
/// group and its result is journaled.
#[test]
fn sigterm_and_sighup_end_the_turn_as_ctrl_c_does() {
    a_signal_cancels_a_long_bash_and_kills_its_process_group(libc::SIGTERM);
    a_signal_cancels_a_long_bash_and_kills_its_process_group(libc::SIGHUP);
}

fn a_signal_cancels_a_long_bash_and_kills_its_process_group(signal: i32) {
    use std::io::BufRead;
    let workspace = Workspace::new();
    let marker = workspace.path().join("survived");
    let pid_file = workspace.path().join("background.pid");
    // The command leaves a child in the background, says its pid, and waits.
    let command = format!(
        "(sleep 30; touch {}) & echo $! > {}; sleep 30",
        marker.display(),
        pid_file.display()
    );
    let api = MockApi::start_in_thread(vec![tool_reply(
        "Waiting.",
        &[("toolu_s1", "bash", json!({"command": command}))],
    )]);
    let mut child = workspace
        .command(&api, &["-p", "wait", "--events", "jsonl"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let started = line.contains("\"type\":\"tool_started\"");
        seen.push(line);
        if started {
            break;
        }
    }
    // The signal comes once the background child is there to be killed.
    let background = wait_for_pid(&pid_file);
    let started = Instant::now();
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    seen.extend(lines.map_while(Result::ok));
    let status = child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!status.success(), "a cancelled turn exits non-zero");
    let events: Vec<Value> = seen.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "tool_finished" && e["status"] == "cancelled")
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "turn_done" && e["outcome"] == "cancelled")
    );
    let gone = Instant::now();
    while is_alive(background) {
        assert!(
            gone.elapsed() < Duration::from_secs(10),
            "the command's background child outlived the cancel"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!marker.exists(), "the background child never got to run on");
    let restored = scratchpad::session::restore(&newest_journal(&workspace)).unwrap();
    assert_eq!(
        tool_results(&restored.messages),
        vec!["Cancelled by the user while running; the process was killed."]
    );
}

/// The pid a command wrote to `file`, once it has.
fn wait_for_pid(file: &Path) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` runs (a zombie waiting to be reaped has ended).
fn is_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn without_a_terminal_the_app_says_so_in_one_line_and_leaves_no_journal() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![]);
    let output = workspace.run(&api, &[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "scratchpad needs a terminal; use -p REQUEST for headless\n"
    );
    assert!(
        !workspace.sessions_dir().exists() && !workspace.path().join(".scratchpad").exists(),
        "no session journal is created"
    );
}

/// `scratchpad -p … | head`: the reader leaves; the turn stops as Ctrl+C stops it
/// and the run ends quietly and successfully (it used to fail with "Broken pipe").
#[test]
fn a_closed_stdout_ends_print_mode_quietly_and_successfully() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![
        tool_reply("Working.", &[("toolu_w", "bash", json!({"command": "sleep 30"}))]),
        text_reply("never asked for"),
    ]);
    let mut child = workspace
        .command(&api, &["-p", "work", "--yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.to_lowercase().contains("broken pipe"), "{stderr}");
    assert_eq!(api.turn_requests().len(), 1, "the turn stopped with its reader");
}

#[test]
fn sigint_in_print_mode_says_cancelled() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![tool_reply(
        "Waiting.",
        &[("toolu_w", "bash", json!({"command": "sleep 30"}))],
    )]);
    let child = workspace
        .command(&api, &["-p", "wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !api.requests().iter().any(|r| !r.is_summary()) || started.elapsed() < Duration::from_millis(800) {
        assert!(started.elapsed() < Duration::from_secs(20), "the model call never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("cancelled"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `scratchpad undo` after a resumed session compacted: the journal gets the history
/// from before the compaction, and the next `--continue` sends exactly that.
#[test]
fn undo_after_resume_restores_the_history_from_before_the_compaction() {
    let workspace = Workspace::new();
    workspace.earlier_session(6, 2_000);
    let api = MockApi::start_in_thread(vec![prompt_too_long(), text_reply("fits now"), text_reply("next done")]);
    let output = workspace.run(&api, &["--continue", "-p", "Do the thing"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        messages_of(&api.turn_requests()[1])[0]
            .text()
            .starts_with("[Compacted]")
    );

    let undone = workspace.run(&api, &["undo"]);
    let stdout = String::from_utf8_lossy(&undone.stdout);
    assert!(undone.status.success(), "{}", String::from_utf8_lossy(&undone.stderr));
    assert!(
        stdout.starts_with("undid reactive_compact in session 20260101-000000-1:"),
        "{stdout}"
    );

    let output = workspace.run(&api, &["--continue", "-p", "Next"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sent = messages_of(&api.turn_requests()[2]);
    let texts: Vec<String> = sent.iter().map(Message::text).collect();
    assert!(
        texts[0].starts_with("question 0: qqq"),
        "{:?}",
        &texts[0][..40.min(texts[0].len())]
    );
    assert_eq!(
        texts.len(),
        12 + 2 + 1,
        "the 12 earlier messages, this turn's two, the new request"
    );
    assert_eq!(&texts[12..], ["Do the thing", "fits now", "Next"]);
    assert_eq!(check_pairing(&sent), Ok(()));

    // Nothing older to undo now: said in one line, exit status 1.
    let again = workspace.run(&api, &["undo"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to undo"));
}

/// A result pinned in `/context` (journaled) stays whole after `--continue`: stage 3
/// clears the others around it.
#[test]
fn a_pinned_result_survives_resume_and_stage_three_leaves_it_whole() {
    use scratchpad::session::Record;
    let workspace = Workspace::new();
    let dir = workspace.sessions_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let mut records = vec![Record::Append {
        message: Message::user_text("read both"),
    }];
    for (id, fill) in [("toolu_keep", 'k'), ("toolu_other", 'o')] {
        records.push(Record::Append {
            message: Message::blocks(
                scratchpad::message::Role::Assistant,
                vec![ContentBlock::tool_use(id, "read_file", json!({"path": "f0.rs"}))],
            ),
        });
        records.push(Record::Append {
            message: Message::blocks(
                scratchpad::message::Role::User,
                vec![ContentBlock::tool_result(id, fill.to_string().repeat(1_500), false)],
            ),
        });
    }
    records.push(Record::Append {
        message: Message::assistant_text("read them"),
    });
    records.push(Record::Pin {
        tool_use_id: "toolu_keep".into(),
        pinned: true,
    });
    let text: String = records
        .iter()
        .map(|record| serde_json::to_string(record).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join("20260101-000000-1.jsonl"), text).unwrap();
    let api = MockApi::start_in_thread(vec![text_reply("ok")]);
    let output = workspace.run(
        &api,
        &["--continue", "-p", "next", "--limit", "3500", "--keep-recent", "0"],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sent = messages_of(&api.turn_requests()[0]);
    let results = tool_results(&sent);
    assert_eq!(results[0], "k".repeat(1_500), "the pinned result is whole");
    assert!(
        results[1].starts_with("[Earlier tool result saved at"),
        "{}",
        results[1]
    );
}

/// Some servers number calls afresh in every response: a call reusing the id of an
/// earlier call is renamed and run, and every request keeps ids unique.
#[test]
fn a_tool_id_reused_from_an_earlier_response_is_renamed_and_run() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![
        tool_reply("First.", &[("toolu_1", "bash", json!({"command": "echo first"}))]),
        tool_reply("Second.", &[("toolu_1", "bash", json!({"command": "echo second"}))]),
        text_reply("done"),
    ]);
    let output = workspace.run(&api, &["-p", "Run both", "--yes"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sent = messages_of(&api.turn_requests()[2]);
    assert_eq!(check_pairing(&sent), Ok(()));
    let ids: Vec<&str> = sent.iter().flat_map(Message::tool_use_ids).collect();
    assert_eq!(ids, ["toolu_1", "toolu_1_dup2"]);
    assert_eq!(tool_results(&sent), ["first\n", "second\n"]);
}

/// The roles of the chat-completions entries a request sent.
fn openai_roles(request: &Recorded) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

/// A turn cancelled while its command ran, and a session killed before its request
/// was answered: the next request follows an assistant message, on both wires.
#[test]
fn a_cancelled_or_unanswered_turn_never_leaves_two_user_messages_in_a_row() {
    use common::openai_reply;
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![tool_reply(
        "Waiting.",
        &[("toolu_w", "bash", json!({"command": "sleep 30"}))],
    )]);
    let child = workspace
        .command(&api, &["-p", "wait", "--yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while api.turn_requests().is_empty() || started.elapsed() < Duration::from_millis(800) {
        assert!(started.elapsed() < Duration::from_secs(20), "the model call never came");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(1));

    let openai = MockApi::start_in_thread(vec![openai_reply("ok", &[])]);
    let base = format!("{}/v1", openai.url);
    let output = workspace.run(
        &openai,
        &["--continue", "-p", "next", "--provider", "openai", "--base-url", &base],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let roles = openai_roles(&openai.requests()[0]);
    assert!(roles.windows(2).all(|pair| pair != ["user", "user"]), "{roles:?}");
    assert_eq!(roles[roles.len() - 2..], ["assistant", "user"]);

    // Killed before the answer came: the journal ends with the request.
    let journal = workspace.newest_journal().unwrap();
    let mut text = std::fs::read_to_string(&journal).unwrap();
    let open = scratchpad::session::Record::Append {
        message: Message::user_text("left open"),
    };
    text.push_str(&(serde_json::to_string(&open).unwrap() + "\n"));
    std::fs::write(&journal, text).unwrap();
    let anthropic = MockApi::start_in_thread(vec![text_reply("ok")]);
    let output = workspace.run(&anthropic, &["--continue", "-p", "again"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let sent = messages_of(&anthropic.turn_requests()[0]);
    assert!(
        sent.windows(2).all(|pair| pair[0].role() != pair[1].role()),
        "{:?}",
        sent.iter().map(|m| m.role()).collect::<Vec<_>>()
    );
    let texts: Vec<String> = sent.iter().map(Message::text).collect();
    assert_eq!(texts[texts.len() - 3], "left open");
    assert!(
        texts[texts.len() - 2].contains("not finished"),
        "{}",
        texts[texts.len() - 2]
    );
}

/// A turn that fails is journaled as such, so a resumed session shows that it failed
/// rather than nothing at all.
#[test]
fn a_failed_turn_is_journaled_for_resume() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![common::error_reply(
        400,
        json!({"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}),
    )]);
    let output = workspace.run(&api, &["-p", "Do the thing"]);
    assert!(!output.status.success(), "the turn failed");
    let journal = workspace.newest_journal().expect("the session has a journal");
    let restored = scratchpad::session::restore(&journal).unwrap();
    assert!(
        restored.past.contains(&scratchpad::protocol::Past::TurnEnded {
            outcome: scratchpad::protocol::TurnOutcome::Failed
        }),
        "{:?}",
        restored.past
    );
}

/// `--continue` in a workspace with no session yet starts one and says so, instead of
/// failing; the next `--continue` picks that one up.
#[test]
fn continue_with_no_session_starts_one() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(vec![text_reply("first answer"), text_reply("second answer")]);
    let output = workspace.run(&api, &["--continue", "-p", "hello"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("no earlier session in this workspace to continue: this is a new one"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "first answer");
    let output = workspace.run(&api, &["--continue", "-p", "again"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("no earlier session"), "{stderr}");
    let sent: Vec<String> = messages_of(&api.turn_requests()[1]).iter().map(Message::text).collect();
    assert_eq!(
        sent,
        vec!["hello", "first answer", "again"],
        "the second run continued the first"
    );
}

/// The reactive retry fits by construction: after compacting, the history is measured
/// by its content (units scaled by the tokens per unit the server just counted), and
/// a round that would still not fit aims lower before anything is sent. A long pasted
/// run of spaced digits (about a token a character) is far denser than the prose it
/// follows (a token a word): sized by the refused request's average alone, the retry
/// was refused again and the turn failed. Where the request fits whole it is kept
/// whole; where it cannot, it is summarised with the rest. One refusal either way.
#[test]
fn a_reactive_retry_measured_by_content_fits_at_once() {
    for (digits_count, fits_whole) in [(1_000, true), (1_300, false)] {
        let workspace = Workspace::new();
        // An earlier session of prose: six exchanges of about 2,000 characters each.
        let journal = workspace.earlier_session(6, 10);
        let prose =
            "The parser drops the last token when the input ends without a newline, so we read it again. ".repeat(22);
        let mut history = scratchpad::history::History::new();
        for turn in 0..6 {
            history = history
                .request(format!("question {turn}: {prose}"))
                .answer(format!("answer {turn}: {prose}"));
        }
        let lines: String = history
            .build()
            .into_iter()
            .map(|message| serde_json::to_string(&scratchpad::session::Record::Append { message }).unwrap() + "\n")
            .collect();
        std::fs::write(&journal, lines).unwrap();
        let digits: String = (0..digits_count).map(|n| format!("{} ", n % 10)).collect();
        let request = format!("Add these up: {digits}");
        // The window leaves the request of 1,000 digits just room to stay whole.
        let window = 3_100;
        let api = MockApi::start_with_window_in_thread(vec![text_reply("the sum")], window);
        let output = workspace.run(&api, &["--continue", "-p", &request]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{digits_count} digits: {stderr}");
        let requests = api.turn_requests();
        let counts: Vec<u64> = requests.iter().map(|r| common::mock_tokens(&r.body)).collect();
        assert_eq!(
            requests.len(),
            2,
            "{digits_count} digits: refused once, then the retry fit: {counts:?}"
        );
        assert!(counts[0] > window && counts[1] <= window, "{counts:?}");
        let sent: String = messages_of(&requests[1]).iter().map(Message::text).collect();
        assert_eq!(
            sent.contains(&digits),
            fits_whole,
            "{digits_count} digits ({counts:?}): {}",
            &sent[..200.min(sent.len())]
        );
    }
}

/// A server that is not there is said at once, by its address and with the likely
/// cause, and the wait for it too (its health is polled meanwhile); at the end the
/// turn fails with the same plain reason (it used to be 20 s of silence, then "error sending request").
#[test]
fn a_server_that_is_not_running_is_said_at_once_and_each_retry_too() {
    use std::io::{BufRead, BufReader};
    let workspace = Workspace::new();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    // The workspace's configuration allows 3 attempts, a few milliseconds apart, and
    // waits a second for a server that is not up before it gives up.
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let mut child = workspace
        .command_at(Command::new(env!("CARGO_BIN_EXE_scratchpad")), &base, &["-p", "hi"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let said = format!("connection refused at 127.0.0.1:{port} (is the server running?)");
    let first = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.contains(&said))
        .unwrap_or_else(|| {
            panic!(
                "never said {said:?}; log: {}",
                std::fs::read_to_string(workspace.home.path().join("log.txt")).unwrap_or_default()
            )
        });
    assert!(started.elapsed() < Duration::from_secs(5), "said at once: {first}");
    assert!(
        first.contains("waiting for it to answer (attempt 1 failed; retrying in"),
        "the wait is said: {first}"
    );
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter()
            .any(|line| line.starts_with("error:") && line.contains(&said)),
        "{rest:?}"
    );
    assert!(!child.wait().unwrap().success());
}

/// The journal says what served the session: a server still loading at the first run
/// leaves only the configured model in `meta`, and the run after it answers records
/// the model and window it serves in a `served` line.
#[test]
fn the_journal_records_the_served_model_once_the_server_answers() {
    let workspace = Workspace::new();
    let props = json!({"default_generation_settings": {"n_ctx": 2048}, "model_alias": "smol-135m"});
    let api = common::on_own_runtime(move || {
        MockApi::start_with_props(
            vec![common::openai_reply("one", &[]), common::openai_reply("two", &[])],
            Some(props),
        )
    });
    let base = format!("{}/v1", api.url);
    let served = |journal: &std::path::Path| -> Vec<Value> {
        std::fs::read_to_string(journal)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|record| matches!(record["type"].as_str(), Some("meta" | "served")))
            .collect()
    };

    api.set_loading(true);
    let output = workspace.run(&api, &["-p", "hi", "--provider", "openai", "--base-url", &base]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let journal = workspace.newest_journal().unwrap();
    let records = served(&journal);
    assert_eq!(
        records.len(),
        1,
        "nothing was learned from a loading server: {records:?}"
    );
    assert_eq!(records[0]["model"], "local", "meta has the configured default");

    api.set_loading(false);
    let output = workspace.run(
        &api,
        &["--continue", "-p", "again", "--provider", "openai", "--base-url", &base],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let records = served(&journal);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[1]["type"], "served");
    assert_eq!(records[1]["model"], "smol-135m");
    assert_eq!(records[1]["window_tokens"], 2048);
}

/// Every compaction event says what it freed and, from the second on, how soon after
/// the one before it came: turns, model calls, seconds and the estimate that one left.
#[test]
fn the_demos_compaction_events_say_what_they_freed_and_how_soon_they_came() {
    let workspace = common::demo_workspace();
    let home = tempfile::tempdir().unwrap();
    let output = common::demo_run(
        workspace.path(),
        home.path(),
        &["-p", "survey this workspace", "--events", "jsonl"],
    );
    let compactions: Vec<serde_json::Value> = common::events(&output)
        .into_iter()
        .filter(|e| e["type"] == "compaction" && e["event"]["replaced"].as_u64() > Some(0))
        .map(|e| e["event"].clone())
        .collect();
    assert!(compactions.len() >= 3, "{compactions:?}");
    for event in &compactions {
        let freed = event["freed"]["chars"].as_i64().expect("freed");
        let before = event["chars_before"].as_i64().unwrap();
        let after = event["chars_after"].as_i64().unwrap();
        assert_eq!(freed, before - after, "{event}");
        assert!(event["freed"]["tokens"].is_i64());
    }
    // The stages of the session's first compacting run have no compaction before them;
    // every later one has.
    let first_run = compactions
        .iter()
        .take_while(|event| event["since_previous"].is_null())
        .count();
    assert!(first_run >= 1 && first_run < compactions.len(), "{compactions:?}");
    let since: Vec<&Value> = compactions[first_run..]
        .iter()
        .map(|event| &event["since_previous"])
        .collect();
    for since in &since {
        assert!(since["turns"].is_u64() && since["secs"].is_u64(), "{since}");
        assert!(since["estimate_after_previous"].as_u64() > Some(0), "{since}");
    }
    assert!(
        since.iter().any(|since| since["model_calls"].as_u64() > Some(0)),
        "{since:?}"
    );
    // Without events, each stage's line on stderr says it in words.
    let plain = common::demo_run(workspace.path(), home.path(), &["-p", "survey this workspace"]);
    let stderr = String::from_utf8_lossy(&plain.stderr);
    assert!(stderr.contains("· freed "), "{stderr}");
    assert!(stderr.contains("; the last one was "), "{stderr}");
}

/// The loop guard: every reply's own text nearly fills the limit, so each step needs a
/// summary and none holds for a step. After the first summary and three that did not
/// hold, scratchpad stops compacting on its own: `-p` exits non-zero with one line
/// saying why, what takes the room and what to do; no more summaries are asked for.
#[test]
fn the_loop_guard_stops_summaries_that_do_not_hold_and_says_why() {
    let workspace = Workspace::new();
    let api = MockApi::start_in_thread(common::replies_that_fill_the_context(20));
    let output = workspace.run(&api, &["-p", "Keep going", "--yes", "--limit", "4000"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let stopped: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("compaction stopped: 3 summaries in a row"))
        .collect();
    assert_eq!(stopped.len(), 1, "{stderr}");
    assert!(stopped[0].contains("What takes the room"), "{}", stopped[0]);
    assert!(stopped[0].contains("What you can do"), "{}", stopped[0]);
    let summaries = api.requests().iter().filter(|request| request.is_summary()).count();
    assert_eq!(summaries, 4, "the first held; three did not; then none: {stderr}");
}

/// `-c 512` in plain `-p`: the window cannot hold the system prompt and tools. That is
/// said on stderr at the start; the refused request asks for no summary (none could
/// fit), and the run fails with one line.
#[test]
fn a_window_too_small_for_the_fixed_part_is_said_at_the_start_and_no_summary_is_sent() {
    let workspace = Workspace::new();
    let api = MockApi::start_llama_in_thread(vec![text_reply("never sent")], 512);
    let output = workspace.run(&api, &["-p", "say hi"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("warning: ") && first.contains("window of 512 tokens cannot hold scratchpad's system prompt"),
        "said first: {stderr}"
    );
    assert!(
        !api.requests().iter().any(|request| request.is_summary()),
        "no summary was asked for"
    );
    assert!(
        stderr.contains("Nothing was summarised: no summary could fit either."),
        "{stderr}"
    );
}

/// With the default wait for a server to come up (60 s), an OpenAI-compatible server
/// that is not there is named at once, by address and likely cause, before the wait
/// (it used to say only "the server does not answer yet" for the whole minute).
#[test]
fn a_closed_port_is_named_at_once_while_its_server_is_waited_for() {
    use std::io::{BufRead, BufReader};
    let workspace = Workspace::new();
    std::fs::write(
        workspace.home.path().join("config.toml"),
        format!("[provider.retry]\nstartup_wait_secs = 60\n{}", common::TEST_CONFIG),
    )
    .unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let base = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    let mut child = workspace
        .command_at(
            Command::new(env!("CARGO_BIN_EXE_scratchpad")),
            &base,
            &["--provider", "openai", "--base-url", &base, "-p", "hi"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = format!("connection refused at 127.0.0.1:{port} (is the server running?)");
    let first = BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .next()
        .unwrap_or_default();
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.contains(&said), "the first line names it: {first}");
    assert!(first.contains("waiting for it to answer"), "and the wait: {first}");
    assert!(took < Duration::from_secs(2), "at once: {took:?}");
}
