//! A resumed session holds exactly the history the live one had: every record the
//! live session journaled is replayed, however much it reads like another.

mod common;

use std::time::Duration;

use common::{MockApi, Running, agent_settings, text_reply, tool_reply, until};
use scratchpad::agent::AskPolicy;
use scratchpad::message::Message;
use scratchpad::protocol::{AgentEvent, Op};
use serde_json::json;

#[derive(Clone, Copy, Debug)]
enum Act {
    /// The same request each time; the reply it meets depends on the script's place.
    Turn,
    /// A turn cancelled as soon as it starts.
    Cancel,
    Undo,
    Compact,
    /// Quit and continue the journal in a new agent, as `--continue` does.
    Resume,
}

fn act() -> impl proptest::strategy::Strategy<Value = Act> {
    use proptest::prelude::*;
    prop_oneof![
        6 => Just(Act::Turn),
        1 => Just(Act::Cancel),
        2 => Just(Act::Undo),
        1 => Just(Act::Compact),
        2 => Just(Act::Resume),
    ]
}

/// Replies that repeat byte for byte: a call with the same id and input, its result,
/// and the same answer, over and over (the offline demo's runs, or a provider that
/// reuses call ids).
fn same_replies(count: usize) -> Vec<common::Reply> {
    (0..count)
        .flat_map(|_| {
            [
                tool_reply(
                    "Looking.",
                    &[("toolu_same", "bash", json!({"command": "echo the same output"}))],
                ),
                text_reply("Surveyed: the same answer."),
            ]
        })
        .collect()
}

fn settings() -> scratchpad::agent::AgentSettings {
    let mut settings = agent_settings(AskPolicy::Approve);
    // Small enough that the stages fire within a few turns.
    settings.compaction.context_char_limit = 3_000;
    settings
}

/// Wait until the agent has handled every op sent before this one.
async fn settle(agent: &mut Running) {
    agent.ops.send(Op::Inspect).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::Breakdown { .. })).await;
}

async fn quit(agent: Running) -> (Vec<Message>, tempfile::TempDir) {
    let Running { ops, task, dir, .. } = agent;
    ops.send(Op::Quit).unwrap();
    let history = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the agent stops")
        .expect("the agent did not panic");
    (history, dir)
}

/// The history a journal replays to, checked to need no mending.
fn replayed(path: &std::path::Path) -> Vec<Message> {
    let restored = scratchpad::session::restore(path).unwrap();
    assert!(restored.repairs.is_empty(), "replay mended: {:?}", restored.repairs);
    restored.messages
}

async fn session(acts: Vec<Act>) {
    let api = MockApi::start(same_replies(2 * acts.len() + 4)).await;
    let (mut agent, mut path) = common::start_agent_journaled(&api, settings());
    for act in acts {
        match act {
            Act::Turn => {
                common::turn(&mut agent, "survey this workspace").await;
            }
            Act::Cancel => {
                agent
                    .ops
                    .send(Op::Submit {
                        text: "survey this workspace".into(),
                    })
                    .unwrap();
                agent.ops.send(Op::Cancel).unwrap();
                until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
            }
            Act::Undo => {
                agent.ops.send(Op::Undo { stage_id: None }).unwrap();
                settle(&mut agent).await;
            }
            Act::Compact => {
                agent.ops.send(Op::Compact { focus: None }).unwrap();
                settle(&mut agent).await;
            }
            Act::Resume => {
                let (live, dir) = quit(agent).await;
                if !path.exists() {
                    // A session nobody used leaves no journal: `--continue` begins anew.
                    assert!(live.is_empty(), "a session with a history kept its journal");
                    let journal =
                        scratchpad::session::Journal::create(path.parent().unwrap(), "anthropic", "m").unwrap();
                    path = journal.path().to_path_buf();
                    agent = common::start_agent_resumed(&api, settings(), dir, journal, Vec::new());
                    continue;
                }
                let (journal, restored) = scratchpad::session::Journal::resume(&path).unwrap();
                assert!(restored.repairs.is_empty(), "replay mended: {:?}", restored.repairs);
                assert_eq!(restored.messages, live, "the resumed history is the live one");
                agent = common::start_agent_resumed(&api, settings(), dir, journal, restored.messages);
            }
        }
    }
    let (live, _dir) = quit(agent).await;
    if path.exists() {
        assert_eq!(replayed(&path), live, "the replayed history is the live one");
    } else {
        assert!(live.is_empty(), "a session with a history kept its journal");
    }
}

/// For any sequence of identical turns, cancels, undos, compactions and resumes, the
/// replayed history equals the live one message for message, with nothing to mend.
#[test]
fn the_replayed_history_is_the_live_one() {
    use proptest::prelude::*;
    let config = ProptestConfig {
        cases: 8,
        ..ProptestConfig::default()
    };
    proptest!(config, |(acts in proptest::collection::vec(act(), 1..14))| {
        let runtime = scratchpad::json::runtime().unwrap();
        runtime.block_on(session(acts));
    });
}

/// The case the issue names: one request asked twice writes records that read alike,
/// and a third start with `--continue` still holds every message of both runs.
#[test]
fn two_identical_runs_resume_whole() {
    let runtime = scratchpad::json::runtime().unwrap();
    runtime.block_on(session(vec![Act::Turn, Act::Resume, Act::Turn, Act::Resume]));
}

/// The reproduction, with the real binary and the offline demo: the same
/// request twice, then a third start with `--continue`. Nothing is skipped, and the
/// third run starts from every message the second one ended with.
#[test]
fn the_demo_asked_twice_then_continued_skips_nothing() {
    let workspace = common::demo_workspace();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_scratchpad"))
            .args(["-C", workspace.path().to_str().unwrap(), "--provider", "demo"])
            .args(args)
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("SCRATCHPAD_LOG", home.path().join("log.txt"))
            .env("SCRATCHPAD_DEMO_DELAY_MS", "0")
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        output
    };
    let last_estimate = |output: &std::process::Output| -> (u64, u64) {
        let events = common::events(output);
        let status = events
            .iter()
            .rev()
            .find(|e| e["type"] == "context")
            .expect("a context status");
        (
            status["status"]["messages"].as_u64().unwrap(),
            status["status"]["estimate"].as_u64().unwrap(),
        )
    };
    run(&["-p", "survey this workspace"]);
    let second = run(&["--continue", "-p", "survey this workspace", "--events", "jsonl"]);
    let ended_with = last_estimate(&second);
    let third = run(&["--continue", "-p", "hi", "--events", "jsonl"]);
    let stderr = String::from_utf8_lossy(&third.stderr);
    assert!(!stderr.contains("skipped"), "{stderr}");
    let events = common::events(&third);
    let started = events
        .iter()
        .find(|e| e["type"] == "context")
        .expect("a context status at the start");
    assert_eq!(
        (
            started["status"]["messages"].as_u64().unwrap(),
            started["status"]["estimate"].as_u64().unwrap()
        ),
        ended_with,
        "the resumed history is the one the second run ended with"
    );
}
