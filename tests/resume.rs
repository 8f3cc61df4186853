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
    settings.compaction.context_char_limit.chars = 3_000;
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
                    agent = common::start_agent_resumed(&api, settings(), dir, journal, Default::default());
                    continue;
                }
                let (journal, restored) = scratchpad::session::Journal::resume(&path).unwrap();
                assert!(restored.repairs.is_empty(), "replay mended: {:?}", restored.repairs);
                assert_eq!(restored.messages, live, "the resumed history is the live one");
                agent = common::start_agent_resumed(&api, settings(), dir, journal, restored);
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
        let runtime = scratchpad::launch::runtime().unwrap();
        runtime.block_on(session(acts));
    });
}

/// The case the issue names: one request asked twice writes records that read alike,
/// and a third start with `--continue` still holds every message of both runs.
#[test]
fn two_identical_runs_resume_whole() {
    let runtime = scratchpad::launch::runtime().unwrap();
    runtime.block_on(session(vec![Act::Turn, Act::Resume, Act::Turn, Act::Resume]));
}

/// The reproduction, with the real binary and the offline demo: the same
/// request twice, then a third start with `--continue`. Nothing is skipped, and the
/// third run starts from every message the second one ended with.
#[test]
fn the_demo_asked_twice_then_continued_skips_nothing() {
    let workspace = common::demo_workspace();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| common::demo_run(workspace.path(), home.path(), args);
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

/// After a resume, the token figure is for the history as it is now, not the count
/// of the last call, taken when the history may have been a fraction of its size (an
/// undo after that call put a long history back).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resumed_token_figure_is_for_the_history_now() {
    use scratchpad::session::Record;
    let api = MockApi::start(Vec::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut journal = scratchpad::session::Journal::create(&sessions, "anthropic", "m").unwrap();
    let small = vec![Message::user_text("go"), Message::assistant_text("ok")];
    for message in &small {
        journal
            .append(&Record::Append {
                message: message.clone(),
            })
            .unwrap();
    }
    journal
        .append(&Record::Call(scratchpad::protocol::CallPoint {
            estimate: 60,
            messages: 1,
            request_chars: Some(2_060),
            input_tokens: Some(500),
            ..Default::default()
        }))
        .unwrap();
    let long: Vec<Message> = (0..40)
        .flat_map(|i| {
            [
                Message::user_text(format!("request {i}: {}", "words of prose ".repeat(60))),
                Message::assistant_text(format!("answer {i}: {}", "more words here ".repeat(60))),
            ]
        })
        .collect();
    journal.append(&Record::Replace { messages: long.clone() }).unwrap();
    let path = journal.path().to_path_buf();
    drop(journal);
    let (journal, restored) = scratchpad::session::Journal::resume(&path).unwrap();
    let mut agent = common::start_agent_resumed(&api, settings(), dir, journal, restored);
    let AgentEvent::Context { status } = until(&mut agent.events, |e| matches!(e, AgentEvent::Context { .. })).await
    else {
        unreachable!("waited for the context")
    };
    let figure = status.tokens.expect("a token figure from the journal");
    assert_eq!(figure.basis, scratchpad::protocol::TokenBasis::Estimated);
    assert!(
        figure.tokens > 5_000,
        "{} tokens shown for {} chars: the count of a 60-char history",
        figure.tokens,
        status.estimate
    );
    let _ = quit(agent).await;
}

/// The session list reads a session's size from its journal's tail: after `/compact`
/// and after an undo between turns, it is the size the session has now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listed_size_follows_a_compaction_and_an_undo_between_turns() {
    let api = MockApi::start(same_replies(4)).await;
    let (mut agent, path) = common::start_agent_journaled(&api, settings());
    common::turn(&mut agent, "survey this workspace").await;
    common::turn(&mut agent, "survey this workspace").await;
    let listed = |path: &std::path::Path| {
        let summary = scratchpad::session::list(path.parent().unwrap())
            .into_iter()
            .find(|summary| summary.path == path)
            .expect("the session is listed");
        let tally = summary.tally.expect("a tally");
        (tally.messages, tally.estimate)
    };
    let now = |status: &scratchpad::protocol::ContextStatus| (status.messages, status.estimate);
    let after_turns = listed(&path);
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    let AgentEvent::Context { status } = until(
        &mut agent.events,
        |e| matches!(e, AgentEvent::Context { status } if status.messages < after_turns.0),
    )
    .await
    else {
        unreachable!("waited for the context")
    };
    settle(&mut agent).await;
    assert_eq!(listed(&path), now(&status), "after /compact");
    agent.ops.send(Op::Undo { stage_id: None }).unwrap();
    let AgentEvent::Context { status } = until(
        &mut agent.events,
        |e| matches!(e, AgentEvent::Context { status } if status.messages == after_turns.0),
    )
    .await
    else {
        unreachable!("waited for the context")
    };
    settle(&mut agent).await;
    assert_eq!(listed(&path), now(&status), "after the undo");
    let _ = quit(agent).await;
}

/// Resume shows calls as they were: a refused call stays refused (it became a
/// failure: a result says only that it was an error) and a call keeps its time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_shows_calls_as_they_ended() {
    use scratchpad::protocol::{PermissionAnswer, ToolStatus};
    use scratchpad::tui::state::{AppState, CallState};
    let api = MockApi::start(vec![
        tool_reply(
            "Cleaning, then listing.",
            &[
                ("t1", "bash", json!({"command": "rm -rf build"})),
                ("t2", "bash", json!({"command": "sleep 0.3; ls"})),
            ],
        ),
        text_reply("Done."),
    ])
    .await;
    let (mut agent, path) = common::start_agent_journaled(&api, agent_settings(AskPolicy::Ask));
    agent
        .ops
        .send(Op::Submit {
            text: "clean up".into(),
        })
        .unwrap();
    common::answer_permission(&mut agent, PermissionAnswer::Deny).await;
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let (_, _dir) = quit(agent).await;
    let restored = scratchpad::session::restore(&path).unwrap();
    let mut state = AppState::default();
    state.apply(AgentEvent::Replay {
        in_context: restored.messages.len(),
        past: restored.past,
    });
    let ended: Vec<(ToolStatus, Duration)> = state
        .tools
        .iter()
        .map(|call| match call.state {
            CallState::Done { status, took } => (status, took),
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert_eq!(ended[0].0, ToolStatus::Refused, "{ended:?}");
    assert_eq!(ended[1].0, ToolStatus::Ok, "{ended:?}");
    assert!(ended[1].1 >= Duration::from_millis(250), "its time: {ended:?}");
}
