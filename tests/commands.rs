//! The headless subcommands on a recorded fixture history: `compact` (one pass,
//! events on stderr) and `simulate` (the per-step stage table, JSON lines, SVG plot).

mod common;

use std::process::Command;

use scratchpad::compact::{CompactConfig, ExtractiveSummariser, StageEvent, prepare};
use scratchpad::message::Message;
use scratchpad::store::Store;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/recorded-history.json");
const SMALL: &[&str] = &[
    "--limit",
    "6000",
    "--max-messages",
    "20",
    "--tool-result-budget",
    "5000",
    "--persist-over",
    "2000",
    "--persisted-preview",
    "200",
    "--fit-preview",
    "100",
];

fn scratchpad(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_scratchpad"))
        .args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", cwd)
        .env("HOME", cwd)
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap()
}

/// A recording cut short or not made of messages is refused in one line with a
/// non-zero exit: a replay of part of it would report steps that never were. A last
/// line that is whole but lacks its newline is read.
#[test]
fn simulate_refuses_a_torn_or_foreign_recording_and_says_so() {
    use scratchpad::message::Message;
    use scratchpad::session::Record;
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for message in [Message::user_text("first"), Message::assistant_text("second")] {
        text.push_str(&serde_json::to_string(&Record::Append { message }).unwrap());
        text.push('\n');
    }
    let whole_without_newline = format!(
        "{}{}",
        text,
        serde_json::to_string(&Message::user_text("third")).unwrap()
    );
    let torn = format!("{text}{{\"type\":\"append\",\"message\":{{\"role\":\"us");
    let cases = [
        ("torn.jsonl", torn.as_str(), Some("ends in a line cut short (38 bytes")),
        (
            "number.json",
            "42",
            Some("line 1: neither a journal record nor a message"),
        ),
        (
            "object.json",
            "{\"a\": 1}\n",
            Some("line 1: neither a journal record nor a message"),
        ),
        ("empty.json", "", Some("holds no messages")),
        ("blank.jsonl", "\n\n", Some("holds no messages")),
        ("whole.jsonl", whole_without_newline.as_str(), None),
    ];
    for (name, content, refusal) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let output = scratchpad(&["simulate", path.to_str().unwrap()], dir.path());
        let stderr = String::from_utf8_lossy(&output.stderr);
        match refusal {
            Some(expected) => {
                assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
                assert!(stderr.contains(expected), "{name}: {stderr}");
                assert_eq!(stderr.lines().count(), 1, "{name}: one plain line: {stderr}");
            }
            None => {
                assert!(output.status.success(), "{name}: {stderr}");
                let table = String::from_utf8_lossy(&output.stdout);
                assert!(
                    table.lines().any(|line| line.trim_start().starts_with("2 ")),
                    "{name}: {table}"
                );
            }
        }
    }
}

#[test]
fn simulate_prints_the_per_step_stage_table() {
    let dir = tempfile::tempdir().unwrap();
    let output = scratchpad(&[&["simulate", FIXTURE], SMALL].concat(), dir.path());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    insta::assert_snapshot!("simulate_table", String::from_utf8(output.stdout).unwrap());
    assert!(
        !dir.path().join(".transcripts").exists(),
        "simulate keeps its files in memory"
    );
}

#[test]
fn simulate_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("timeline.svg");
    let output = scratchpad(
        &[
            &["simulate", FIXTURE, "--json", "--plot", plot.to_str().unwrap()],
            SMALL,
        ]
        .concat(),
        dir.path(),
    );
    assert!(output.status.success());
    let steps: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(steps.len(), 22, "one step per user message");
    assert!(
        steps
            .iter()
            .all(|s| s["after"].as_u64().unwrap() <= 6000 || s["stages"].as_array().unwrap().is_empty())
    );
    let svg = std::fs::read_to_string(plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("<polyline") && svg.contains("limit 6000"));
    assert!(svg.contains("<circle"), "stage marks");
}

#[test]
fn compact_writes_the_result_to_stdout_and_events_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let output = scratchpad(
        &[&["compact", "--input", FIXTURE, "--summary-stub"], SMALL].concat(),
        dir.path(),
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result: Vec<Message> = serde_json::from_slice(&output.stdout).unwrap();
    let events: Vec<StageEvent> = String::from_utf8(output.stderr)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!events.is_empty());
    assert_eq!(
        scratchpad::compact::estimate_chars(&result),
        events.last().unwrap().chars_after
    );
    for path in events.iter().flat_map(|e| &e.paths) {
        assert!(dir.path().join(path).is_file(), "{path}");
    }
    // Bad input is a clear error, not a panic.
    std::fs::write(dir.path().join("bad.json"), "[{\"role\":\"robot\"}]").unwrap();
    let bad = scratchpad(&["compact", "--input", "bad.json", "--summary-stub"], dir.path());
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bad.json is not a JSON array of messages"));
    let bad_limit = scratchpad(&["compact", "--input", FIXTURE, "--limit", "5"], dir.path());
    assert!(String::from_utf8_lossy(&bad_limit.stderr).contains("context_char_limit must be at least 2000"));
}

#[test]
fn a_second_prepare_changes_nothing_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let history: Vec<Message> = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    let config = CompactConfig {
        context_char_limit: scratchpad::compact::Limit::chars(6_000),
        snip_max_messages: 20,
        tool_result_budget_chars: 5_000,
        persist_result_over_chars: 2_000,
        persisted_preview_chars: 200,
        fit_preview_chars: 100,
        ..CompactConfig::default()
    };
    // End on the user message before the last answer so a model call would follow.
    let input = history[..history.len() - 1].to_vec();
    let first = prepare(
        input,
        "Fix the failing test",
        &scratchpad::compact::Context::new(&config, &store),
        &mut ExtractiveSummariser,
    );
    assert!(!first.events.is_empty());
    let count = || walk(dir.path());
    let files = count();
    let second = prepare(
        first.messages.clone(),
        "Fix the failing test",
        &scratchpad::compact::Context::new(&config, &store),
        &mut ExtractiveSummariser,
    );
    assert_eq!(second.messages, first.messages);
    assert!(second.events.is_empty());
    assert_eq!(count(), files);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.path().is_dir() {
            out.extend(walk(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out.sort();
    out
}

#[test]
fn an_error_is_one_plain_line() {
    let dir = tempfile::tempdir().unwrap();
    let output = scratchpad(&["compact", "--input", "missing.json"], dir.path());
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("scratchpad: cannot read missing.json: "), "{stderr}");
    assert!(!stderr.contains("Location") && !stderr.contains('\u{1b}'), "{stderr}");
}

/// `simulate --now` prints the receipts `compact` would produce and writes nothing;
/// `compact --dry-run`, its old name, prints the same and says it is the old name.
#[test]
fn simulate_now_prints_the_same_receipts_as_compact_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let preview = scratchpad(&[&["simulate", FIXTURE, "--now"], SMALL].concat(), dir.path());
    assert!(preview.status.success(), "{}", String::from_utf8_lossy(&preview.stderr));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was written");
    let previewed: Vec<StageEvent> = String::from_utf8(preview.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!previewed.is_empty());
    let old_name = scratchpad(
        &[&["compact", "--input", FIXTURE, "--dry-run"], SMALL].concat(),
        dir.path(),
    );
    assert!(old_name.status.success());
    let receipts = |stdout: &[u8]| -> Vec<(String, Vec<usize>)> {
        String::from_utf8_lossy(stdout)
            .lines()
            .map(|line| serde_json::from_str::<StageEvent>(line).unwrap())
            .map(|event| {
                (
                    event.stage.to_string(),
                    event.items.iter().map(|item| item.position).collect(),
                )
            })
            .collect()
    };
    assert_eq!(
        receipts(&old_name.stdout),
        receipts(&preview.stdout),
        "the same receipts"
    );
    let said = String::from_utf8_lossy(&old_name.stderr);
    assert!(
        said.starts_with("note: `compact --dry-run` is now `simulate --now`"),
        "{said}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was written");
    let real = scratchpad(
        &[&["compact", "--input", FIXTURE, "--summary-stub"], SMALL].concat(),
        dir.path(),
    );
    let done: Vec<StageEvent> = String::from_utf8(real.stderr)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The same stages, and the same items for the recoverable ones; the summary stage
    // lists the same messages (its size after depends on the summary not written).
    let stages = |events: &[StageEvent]| events.iter().map(|e| e.stage).collect::<Vec<_>>();
    assert_eq!(stages(&previewed), stages(&done));
    for (preview, real) in previewed.iter().zip(&done) {
        let positions = |e: &StageEvent| e.items.iter().map(|i| (i.position, i.chars_before)).collect::<Vec<_>>();
        assert_eq!(positions(preview), positions(real), "{}", preview.stage);
    }
    // Where no stage would fire, stdout stays empty and stderr says so (it printed
    // nothing at all, with rc 0).
    let small = dir.path().join("small.json");
    std::fs::write(
        &small,
        r#"[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]"#,
    )
    .unwrap();
    let quiet = scratchpad(&["simulate", "small.json", "--now"], dir.path());
    assert!(quiet.status.success());
    assert!(quiet.stdout.is_empty());
    let said = String::from_utf8_lossy(&quiet.stderr);
    assert!(said.starts_with("no stage would fire: "), "{said}");
    assert!(said.contains("of 50.0k chars"), "{said}");
}

/// `compact` without `--input`, and `simulate` without a file, read the workspace's
/// newest session; with none there, they say in one line what to pass instead of
/// printing a usage error.
#[test]
fn without_a_history_given_the_newest_session_is_read_or_what_to_pass_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    common::settle_config(dir.path());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_scratchpad"))
            .args(args)
            .current_dir(dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .env("XDG_DATA_HOME", &data)
            .env("HOME", dir.path())
            .env("SCRATCHPAD_DEMO_DELAY_MS", "0")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap()
    };
    for command in [&["compact", "--summary-stub"][..], &["simulate", "--now"]] {
        let none = run(command);
        assert!(!none.status.success());
        let said = String::from_utf8_lossy(&none.stderr);
        assert!(
            said.contains("no history given") && said.contains("`simulate FILE`"),
            "{said}"
        );
        assert_eq!(said.trim().lines().count(), 1, "{said}");
    }
    std::fs::write(dir.path().join("notes.md"), "# Notes\n".repeat(400)).unwrap();
    assert!(
        run(&["--provider", "demo", "-p", "survey this workspace"])
            .status
            .success()
    );
    let dry = run(&["--limit", "5000", "simulate", "--now"]);
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    let first: serde_json::Value = serde_json::from_slice(dry.stdout.split(|&b| b == b'\n').next().unwrap())
        .expect("a receipt of the newest session's history");
    assert!(first["stage"].is_string(), "{first}");
}

/// `compact --keep-from N`: everything before message N is summarised whatever the
/// limit, N and what follows are kept as they were; a point between a call and its
/// result is refused with the nearest points that are not.
#[test]
fn compact_keep_from_summarises_up_to_the_chosen_message() {
    let dir = tempfile::tempdir().unwrap();
    let original: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    let output = scratchpad(
        &["compact", "--input", FIXTURE, "--summary-stub", "--keep-from", "40"],
        dir.path(),
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let kept: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(kept.len(), 1 + original.len() - 39);
    assert!(kept[0]["content"].as_str().unwrap().starts_with("[Compacted]"));
    assert_eq!(kept[1..], original[39..], "message 40 on, as they were");
    let event: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&output.stderr).lines().next().unwrap()).unwrap();
    assert_eq!(event["stage"], "compact_history");
    assert_eq!(event["replaced"], 39);
    assert!(
        event["trigger"]
            .as_str()
            .unwrap()
            .contains("summarise up to message 40"),
        "{event}"
    );

    let refused = scratchpad(
        &["compact", "--input", FIXTURE, "--summary-stub", "--keep-from", "3"],
        dir.path(),
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "keeping from message 3 would split tool results from their calls; the nearest points that do not: 2 or 4"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one plain line: {stderr}");
}
