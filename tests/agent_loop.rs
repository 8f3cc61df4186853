//! The agent task in process: cancellation, permissions and path confinement.

mod common;

use std::time::Duration;

use common::{MockApi, Running, agent_settings, messages_of, start_agent, text_reply, tool_reply, until};
use scratchpad::agent::AskPolicy;
use scratchpad::message::ContentBlock;
use scratchpad::protocol::{AgentEvent, Op, PermissionAnswer, ReviewAnswer, ToolStatus, TurnOutcome};
use scratchpad::tools::workspace::Workspace;
use scratchpad::tools::{Plan, ToolBox, ToolsConfig};
use serde_json::json;

async fn start(api: &MockApi, ask: AskPolicy) -> Running {
    start_agent(api, agent_settings(ask)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_kills_a_long_bash_and_every_call_still_gets_a_result() {
    let api = MockApi::start(vec![tool_reply(
        "Sleeping.",
        &[
            ("t1", "bash", json!({"command": "sleep 30"})),
            ("t2", "bash", json!({"command": "echo never"})),
        ],
    )])
    .await;
    let mut agent = start(&api, AskPolicy::Ask).await;
    agent.ops.send(Op::Submit { text: "go".into() }).unwrap();
    until(
        &mut agent.events,
        |e| matches!(e, AgentEvent::ToolStarted { id, .. } if id == "t1"),
    )
    .await;
    let started = std::time::Instant::now();
    agent.ops.send(Op::Cancel).unwrap();
    let done = until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    assert_eq!(
        done,
        AgentEvent::TurnDone {
            turn: scratchpad::protocol::TurnId(1),
            outcome: TurnOutcome::Cancelled
        }
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    agent.ops.send(Op::Quit).unwrap();
    let history = agent.task.await.unwrap();
    let results: Vec<(String, String)> = history
        .iter()
        .flat_map(|m| m.block_slice())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } => Some((tool_use_id.clone(), content.full_text())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].1.contains("Cancelled by the user while running"));
    assert!(results[1].1.contains("Cancelled by the user before it ran"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_command_asks_and_the_answer_is_obeyed() {
    let api = MockApi::start(vec![
        tool_reply("Deleting.", &[("t1", "bash", json!({"command": "rm -f victim.txt"}))]),
        tool_reply("Again.", &[("t2", "bash", json!({"command": "rm -f victim.txt"}))]),
        text_reply("done"),
    ])
    .await;
    let mut agent = start(&api, AskPolicy::Ask).await;
    let victim = agent.dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    agent.ops.send(Op::Submit { text: "clean".into() }).unwrap();
    let refused = answer_next_question(&mut agent, PermissionAnswer::Deny).await;
    assert!(matches!(
        refused,
        AgentEvent::ToolFinished {
            status: ToolStatus::Refused,
            ..
        }
    ));
    assert_eq!(
        std::fs::read_to_string(&victim).ok().as_deref(),
        Some("keep me"),
        "denied: the file is untouched"
    );
    let allowed = answer_next_question(&mut agent, PermissionAnswer::AllowOnce).await;
    assert!(
        matches!(
            allowed,
            AgentEvent::ToolFinished {
                status: ToolStatus::Ok,
                ..
            }
        ),
        "{allowed:?}"
    );
    assert!(!victim.exists(), "allowed: the command ran and the file is gone");
    until(&mut agent.events, |e| {
        matches!(
            e,
            AgentEvent::TurnDone {
                outcome: TurnOutcome::Completed,
                ..
            }
        )
    })
    .await;
}

/// Wait for the agent's next permission question, answer it, and return how the call
/// it was about finished.
async fn answer_next_question(agent: &mut Running, answer: PermissionAnswer) -> AgentEvent {
    let AgentEvent::PermissionRequest { request_id, .. } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::PermissionRequest { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    agent.ops.send(Op::Permission { request_id, answer }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::ToolFinished { .. })).await
}

/// Every way out of the workspace we know of is a question (file tools) or refused.
#[test]
fn path_escapes_never_run_unasked() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out_dir")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("host_link")).unwrap();
        std::os::unix::fs::symlink("sub/../../", dir.path().join("sneaky")).unwrap();
    }
    let tools = ToolBox::new(Workspace::new(dir.path()).unwrap(), ToolsConfig::default());
    let outside_file = outside.path().join("x.txt");
    let attempts = [
        ("read_file", json!({"path": ".."})),
        ("read_file", json!({"path": "../x"})),
        ("read_file", json!({"path": "../../etc/passwd"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("read_file", json!({"path": "sub/../../x"})),
        ("read_file", json!({"path": "./sub/./../../x"})),
        ("read_file", json!({"path": outside_file})),
        ("read_file", json!({"path": "out_dir/x.txt"})),
        ("read_file", json!({"path": "host_link"})),
        ("read_file", json!({"path": "sneaky/etc"})),
        ("write_file", json!({"path": "out_dir/new/file.txt", "content": "x"})),
        (
            "edit_file",
            json!({"path": "/tmp/../etc/hosts", "old_text": "a", "new_text": "b"}),
        ),
    ];
    for (tool, input) in &attempts {
        assert!(matches!(tools.plan(tool, input), Plan::Ask { .. }), "{tool} {input}");
    }
    for (tool, input) in [
        ("read_file", json!({"path": ""})),
        ("read_file", json!({"path": "a\u{0}b"})),
        ("bash", json!({"command": "sudo cat /etc/shadow"})),
    ] {
        let plan = tools.plan(tool, &input);
        assert!(
            matches!(plan, Plan::Refused(_) | Plan::Invalid(_)),
            "{tool} {input}: {plan:?}"
        );
    }
    // glob runs without a question (it only lists names) and refuses, when it runs,
    // any pattern that leaves the workspace.
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for pattern in ["../**", "/etc/*", "sub/../../*"] {
        let Plan::Run(job) = tools.plan("glob", &json!({ "pattern": pattern })) else {
            panic!("glob {pattern} is planned to run");
        };
        let output = runtime.block_on(tools.run(job));
        assert!(output.is_error, "{pattern}: {}", output.text);
        assert!(
            output.text.starts_with("glob: patterns must stay inside the workspace"),
            "{pattern}: {}",
            output.text
        );
    }
    // Inside paths run without a question, even through harmless `..`.
    for path in ["sub/../f.txt", "sub/new.txt", "./f.txt"] {
        assert!(
            matches!(tools.plan("read_file", &json!({"path": path})), Plan::Run(_)),
            "{path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_approves_the_exact_path_only_until_clear_and_is_never_offered_for_deletion() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("notes.txt");
    std::fs::write(&secret, "outside notes").unwrap();
    let read = json!({"path": secret});
    let api = MockApi::start(vec![
        tool_reply("Reading.", &[("t1", "read_file", read.clone())]),
        tool_reply("Again.", &[("t2", "read_file", read.clone())]),
        tool_reply("Deleting.", &[("t3", "bash", json!({"command": "rm -f gone.txt"}))]),
        text_reply("done"),
        tool_reply("After clear.", &[("t4", "read_file", read.clone())]),
        text_reply("done again"),
    ])
    .await;
    let mut agent = start(&api, AskPolicy::Ask).await;
    agent.ops.send(Op::Submit { text: "read it".into() }).unwrap();
    let AgentEvent::PermissionRequest { request_id, always, .. } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::PermissionRequest { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(
        always.as_deref(),
        Some(format!("read_file: {}", secret.display()).as_str())
    );
    agent
        .ops
        .send(Op::Permission {
            request_id,
            answer: PermissionAnswer::AlwaysForSession,
        })
        .unwrap();
    // The second read of the same path runs without a question.
    let second = until(&mut agent.events, |e| {
        matches!(e, AgentEvent::PermissionRequest { .. })
            || matches!(e, AgentEvent::ToolFinished { id, .. } if id == "t2")
    })
    .await;
    assert!(
        matches!(
            second,
            AgentEvent::ToolFinished {
                status: ToolStatus::Ok,
                ..
            }
        ),
        "{second:?}"
    );
    // Deleting asks, without "always".
    let AgentEvent::PermissionRequest { request_id, always, .. } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::PermissionRequest { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(always, None, "destructive commands are never approved for the session");
    agent
        .ops
        .send(Op::Permission {
            request_id,
            answer: PermissionAnswer::Deny,
        })
        .unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    agent.ops.send(Op::Clear).unwrap();
    agent
        .ops
        .send(Op::Submit {
            text: "read it again".into(),
        })
        .unwrap();
    let after_clear = answer_next_question(&mut agent, PermissionAnswer::Deny).await;
    assert!(
        matches!(
            after_clear,
            AgentEvent::ToolFinished {
                status: ToolStatus::Refused,
                ..
            }
        ),
        "after /clear the same read asks again: {after_clear:?}"
    );
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_breakdown_is_answered_while_a_turn_runs() {
    let api = MockApi::start(vec![
        tool_reply("Sleeping.", &[("t1", "bash", json!({"command": "sleep 2"}))]),
        text_reply("done"),
    ])
    .await;
    let mut agent = start(&api, AskPolicy::Ask).await;
    agent.ops.send(Op::Submit { text: "go".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::ToolStarted { .. })).await;
    agent.ops.send(Op::Inspect).unwrap();
    let answer = until(&mut agent.events, |e| {
        matches!(
            e,
            AgentEvent::Breakdown { .. } | AgentEvent::TurnDone { .. } | AgentEvent::Error { .. }
        )
    })
    .await;
    assert!(matches!(answer, AgentEvent::Breakdown { .. }), "{answer:?}");
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
}

/// `/undo` after `/compact`: the history is the one before it, and the gauge says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_puts_back_the_history_from_before_a_compaction() {
    let long = "A long answer. ".repeat(300);
    let api = MockApi::start(vec![text_reply(&long)]).await;
    let mut agent = start(&api, AskPolicy::Refuse).await;
    agent.ops.send(Op::Submit { text: "explain".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await;
    agent.ops.send(Op::Undo { stage_id: None }).unwrap();
    let AgentEvent::Undone {
        chars_before,
        chars_after,
        ..
    } = until(&mut agent.events, |e| matches!(e, AgentEvent::Undone { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert!(chars_after > chars_before, "{chars_before} → {chars_after}");
    let AgentEvent::Context { status } = until(&mut agent.events, |e| matches!(e, AgentEvent::Context { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(status.estimate, chars_after);
    // Nothing older to undo.
    agent.ops.send(Op::Undo { stage_id: None }).unwrap();
    let notice = until(&mut agent.events, |e| matches!(e, AgentEvent::Notice { .. })).await;
    assert!(matches!(notice, AgentEvent::Notice { message } if message.starts_with("nothing to undo")));
    agent.ops.send(Op::Quit).unwrap();
    let history = agent.task.await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].text(), "explain");
    assert_eq!(history[1].text(), long);
}

/// `u` on a marker names its stage: asked again for a stage undone already, the
/// agent says so and leaves the older stage alone (it used to undo that one instead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undoing_a_stage_by_id_never_undoes_another() {
    let long = "A long answer. ".repeat(300);
    let api = MockApi::start(vec![text_reply(&long), text_reply(&long)]).await;
    let mut agent = start(&api, AskPolicy::Refuse).await;
    let mut compaction_ids = Vec::new();
    for request in ["explain", "explain more"] {
        agent.ops.send(Op::Submit { text: request.into() }).unwrap();
        until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
        agent.ops.send(Op::Compact { focus: None }).unwrap();
        let AgentEvent::Compaction { event } = until(
            &mut agent.events,
            |e| matches!(e, AgentEvent::Compaction { event } if event.replaced > 0),
        )
        .await
        else {
            unreachable!("until returns only what it waited for")
        };
        assert!(!event.id.is_empty(), "a stage has an id");
        compaction_ids.push(event.id);
    }
    let [older, newer] = [compaction_ids[0].clone(), compaction_ids[1].clone()];
    agent
        .ops
        .send(Op::Undo {
            stage_id: Some(newer.clone()),
        })
        .unwrap();
    let undone = until(&mut agent.events, |e| matches!(e, AgentEvent::Undone { .. })).await;
    assert!(
        matches!(&undone, AgentEvent::Undone { undid, .. } if *undid == newer),
        "{undone:?}"
    );
    // The same marker again: refused, and nothing else is undone.
    agent.ops.send(Op::Undo { stage_id: Some(newer) }).unwrap();
    agent.ops.send(Op::Inspect).unwrap();
    let answer = until(&mut agent.events, |e| {
        matches!(
            e,
            AgentEvent::Notice { .. } | AgentEvent::Undone { .. } | AgentEvent::Breakdown { .. }
        )
    })
    .await;
    assert!(
        matches!(&answer, AgentEvent::Notice { message } if message.contains("undone already")),
        "{answer:?}"
    );
    let after = until(&mut agent.events, |e| {
        matches!(e, AgentEvent::Undone { .. } | AgentEvent::Breakdown { .. })
    })
    .await;
    assert!(
        matches!(after, AgentEvent::Breakdown { .. }),
        "nothing else was undone: {after:?}"
    );
    // The older one, now the newest in force, can be.
    agent
        .ops
        .send(Op::Undo {
            stage_id: Some(older.clone()),
        })
        .unwrap();
    let undone = until(&mut agent.events, |e| matches!(e, AgentEvent::Undone { .. })).await;
    assert!(
        matches!(&undone, AgentEvent::Undone { undid, .. } if *undid == older),
        "{undone:?}"
    );
    agent.ops.send(Op::Quit).unwrap();
    let history = agent.task.await.unwrap();
    assert_eq!(history.len(), 4, "both turns whole again");
}

/// `/compact --preview`: the receipt of what `/compact` would do; nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_shows_what_compact_would_do_and_writes_nothing() {
    // An answer long enough that summarising it would free more than the floor.
    let api = MockApi::start(vec![text_reply(&"An answer in many words. ".repeat(60))]).await;
    let mut agent = start(&api, AskPolicy::Refuse).await;
    agent.ops.send(Op::Submit { text: "explain".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    agent.ops.send(Op::Preview { focus: None }).unwrap();
    let AgentEvent::Preview { events } = until(&mut agent.events, |e| matches!(e, AgentEvent::Preview { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].items.len(), 2, "both messages would be summarised");
    assert!(events[0].summary.is_none());
    assert!(!agent.dir.path().join(".transcripts").exists(), "nothing was written");
    assert_eq!(
        api.requests().iter().filter(|r| r.is_summary()).count(),
        0,
        "no model was asked"
    );
    agent.ops.send(Op::Quit).unwrap();
    assert_eq!(agent.task.await.unwrap().len(), 2, "the history is unchanged");
}

/// `compaction.review_summaries`: an automatic summary is written with no question
/// first and waits in the one review step, saying what leaves; edited, the edit goes
/// in and the event keeps the model's own text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_summaries_shows_what_leaves_and_takes_an_edit() {
    let api = MockApi::start(vec![text_reply("first")]).await;
    let mut settings = agent_settings(AskPolicy::Ask);
    settings.compaction.review_summaries = true;
    settings.compaction.context_char_limit.chars = 2_000;
    let mut agent = start_agent(&api, settings).await;
    agent
        .ops
        .send(Op::Submit {
            text: "a".repeat(2_500),
        })
        .unwrap();
    let AgentEvent::SummaryReview {
        request_id,
        leaves,
        summary,
        covers,
        ..
    } = until(&mut agent.events, |e| matches!(e, AgentEvent::SummaryReview { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert!(covers > 0);
    assert!(leaves.starts_with("1 message ("), "{leaves}");
    assert!(leaves.contains(".transcripts/"), "{leaves}");
    assert!(
        api.turn_requests().is_empty(),
        "the model reads nothing before the review is answered"
    );
    agent
        .ops
        .send(Op::Review {
            request_id,
            answer: ReviewAnswer::Edited {
                summary: "Goal: the user's own words. Keep going.".into(),
            },
        })
        .unwrap();
    let AgentEvent::Compaction { event } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(event.stage, scratchpad::compact::Stage::CompactHistory);
    assert_eq!(
        event.summary.as_deref(),
        Some("Goal: the user's own words. Keep going.")
    );
    assert_eq!(
        event.summary_note.as_ref().and_then(|note| note.model_summary.clone()),
        Some(summary)
    );
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let sent = messages_of(&api.turn_requests()[0])[0].text();
    assert!(sent.starts_with("[Compacted]"));
    assert!(sent.contains("Goal: the user's own words. Keep going."), "{sent}");
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// A summary in review that the user does not apply: the history stays as it was and
/// the call goes over the limit, said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_rejected_in_review_leaves_the_history_as_it_was() {
    let api = MockApi::start(vec![text_reply("first")]).await;
    let mut settings = agent_settings(AskPolicy::Ask);
    settings.compaction.review_summaries = true;
    settings.compaction.context_char_limit.chars = 2_000;
    let mut agent = start_agent(&api, settings).await;
    agent
        .ops
        .send(Op::Submit {
            text: "a".repeat(2_500),
        })
        .unwrap();
    let AgentEvent::SummaryReview { request_id, .. } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::SummaryReview { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    agent
        .ops
        .send(Op::Review {
            request_id,
            answer: ReviewAnswer::Reject,
        })
        .unwrap();
    let notice = until(&mut agent.events, |e| {
        matches!(e, AgentEvent::Notice { .. } | AgentEvent::Compaction { .. })
    })
    .await;
    assert!(
        matches!(&notice, AgentEvent::Notice { message } if message.starts_with("the summary was not applied")),
        "{notice:?}"
    );
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    assert!(messages_of(&api.turn_requests()[0])[0].text().starts_with("aaa"));
    agent.ops.send(Op::Quit).unwrap();
    assert_eq!(agent.task.await.unwrap().len(), 2, "the request and the answer");
}

/// From `/context`: pin a result (listed as pinned), drop it to the archive with a
/// receipt, and put it back in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_pins_drops_and_restores_a_tool_result() {
    let api = MockApi::start(vec![
        tool_reply("Reading.", &[("t1", "bash", json!({"command": "seq 1 2000"}))]),
        text_reply("Read."),
    ])
    .await;
    let mut agent = start(&api, AskPolicy::Approve).await;
    agent.ops.send(Op::Submit { text: "count".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let breakdown = |e: &AgentEvent| matches!(e, AgentEvent::Breakdown { .. });
    agent
        .ops
        .send(Op::Pin {
            tool_use_id: "t1".into(),
            pinned: true,
        })
        .unwrap();
    let AgentEvent::Breakdown { breakdown: map } = until(&mut agent.events, breakdown).await else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(map.pinned, vec!["bash seq 1 2000 (result)".to_string()]);
    assert!(
        map.largest
            .iter()
            .any(|item| item.tool_use_id.as_deref() == Some("t1") && item.pinned)
    );

    agent
        .ops
        .send(Op::Drop {
            tool_use_id: "t1".into(),
        })
        .unwrap();
    let AgentEvent::Compaction { event } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(event.trigger, "dropped by the user from /context");
    assert_eq!(event.items.len(), 1);
    let AgentEvent::Breakdown { breakdown: map } = until(&mut agent.events, breakdown).await else {
        unreachable!("until returns only what it waited for")
    };
    assert!(map.pinned.is_empty(), "a dropped result is no longer pinned");
    // The output as `seq` printed it, computed here rather than taken from the agent.
    let output = (1..=2000).map(|n| format!("{n}\n")).collect::<String>();
    let t1 = |map: &scratchpad::context_map::ContextBreakdown| {
        let listed: Vec<_> = map
            .tool_results
            .iter()
            .filter(|item| item.tool_use_id.as_deref() == Some("t1"))
            .cloned()
            .collect();
        assert_eq!(listed.len(), 1, "every tool result is listed once: {listed:?}");
        listed[0].clone()
    };
    let dropped = t1(&map);
    assert_eq!(dropped.category, scratchpad::context_map::Category::ClearedReference);
    let saved = dropped.saved_path.clone().expect("a dropped result names its file");
    assert_eq!(
        dropped.text,
        format!("[Earlier tool result saved at {saved}]"),
        "the history holds only the reference"
    );
    assert_eq!(
        std::fs::read_to_string(agent.dir.path().join(&saved)).unwrap(),
        output,
        "the archive holds the output byte for byte"
    );

    agent
        .ops
        .send(Op::Restore {
            tool_use_id: "t1".into(),
        })
        .unwrap();
    let AgentEvent::Breakdown { breakdown: map } = until(&mut agent.events, breakdown).await else {
        unreachable!("until returns only what it waited for")
    };
    let restored = t1(&map);
    assert_eq!(restored.category, scratchpad::context_map::Category::ToolResult);
    assert_eq!(restored.text, output);
    agent.ops.send(Op::Quit).unwrap();
    let history = agent.task.await.unwrap();
    let results: Vec<String> = history
        .iter()
        .flat_map(|m| m.block_slice())
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } if tool_use_id == "t1" => Some(content.full_text()),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec![output], "back in full, byte for byte, once");
}

/// The same agent over the OpenAI wire format: a tool call streamed in pieces, run,
/// and its result sent back as a `tool` message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_turn_over_the_openai_wire_format() {
    use common::{openai_reply, start_openai_agent};
    let api = MockApi::start(vec![
        openai_reply("Checking.", &[("call_1", "bash", json!({"command": "echo hi"}))]),
        openai_reply("It says hi.", &[]),
    ])
    .await;
    let mut agent = start_openai_agent(&api, agent_settings(AskPolicy::Approve)).await;
    agent.ops.send(Op::Submit { text: "run it".into() }).unwrap();
    let done = until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    assert_eq!(
        done,
        AgentEvent::TurnDone {
            turn: scratchpad::protocol::TurnId(1),
            outcome: TurnOutcome::Completed
        }
    );
    let requests = api.requests();
    assert!(requests.iter().all(|r| r.path == "/v1/chat/completions"));
    let second = &requests[1].body["messages"];
    let tool = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the result goes back as a tool message");
    assert_eq!(tool["tool_call_id"], "call_1");
    assert_eq!(tool["content"], "hi\n");
    agent.ops.send(Op::Quit).unwrap();
    let history = agent.task.await.unwrap();
    assert_eq!(history.last().unwrap().text(), "It says hi.");
}

/// A call denied with words: the model reads them in the call's result, and the
/// status line stops waiting the moment the answer arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_with_words_reaches_the_model() {
    let api = MockApi::start(vec![
        tool_reply("Deleting.", &[("t1", "bash", json!({"command": "rm -rf build"}))]),
        text_reply("I will use cargo clean."),
    ])
    .await;
    let mut agent = start(&api, AskPolicy::Ask).await;
    agent
        .ops
        .send(Op::Submit {
            text: "clean up".into(),
        })
        .unwrap();
    let request_id = common::answer_permission(
        &mut agent,
        PermissionAnswer::DenyBecause("use cargo clean instead".into()),
    )
    .await;
    let answered = until(&mut agent.events, |e| matches!(e, AgentEvent::Answered { .. })).await;
    assert_eq!(answered, AgentEvent::Answered { request_id });
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let sent = messages_of(api.requests().last().unwrap());
    let results = common::tool_results(&sent);
    assert!(
        results.iter().any(|r| r.contains("and said: use cargo clean instead")),
        "{results:?}"
    );
}

/// From `/tree`: summarise everything before a chosen request and keep it and what
/// follows verbatim; the next call reads the summary, then that request as it was. A
/// request no longer in the history is refused, saying what to do instead. The chat
/// names a request as the screen shows it (a joined emoji as its parts), and that
/// finds it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summarising_up_to_a_chosen_request_keeps_it_and_what_follows() {
    let long = "A long answer about the lexer and its tokens. ".repeat(40);
    let api = MockApi::start(vec![
        text_reply(&long),
        text_reply(&long),
        text_reply(&long),
        text_reply("after the summary"),
    ])
    .await;
    let mut agent = start(&api, AskPolicy::Refuse).await;
    let second = "second question 👨\u{200d}👩\u{200d}👧";
    for request in ["first question", second, "third question"] {
        agent.ops.send(Op::Submit { text: request.into() }).unwrap();
        until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    }
    agent
        .ops
        .send(Op::SummariseUpTo {
            request: "second question 👨👩👧".into(),
            later_same: 0,
        })
        .unwrap();
    let AgentEvent::Compaction { event } =
        until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert_eq!(event.replaced, 2, "the first request and its answer");
    assert!(event.trigger.contains("summarise up to message 3"), "{}", event.trigger);
    agent.ops.send(Op::Submit { text: "go on".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let sent = messages_of(api.turn_requests().last().unwrap());
    assert!(sent[0].text().starts_with("[Compacted]"));
    assert_eq!(sent[1].text(), second);
    assert_eq!(sent[2].text(), long);

    agent
        .ops
        .send(Op::SummariseUpTo {
            request: "first question".into(),
            later_same: 0,
        })
        .unwrap();
    let error = until(&mut agent.events, |e| matches!(e, AgentEvent::Error { .. })).await;
    assert!(
        matches!(&error, AgentEvent::Error { message } if message.contains("fork before it instead")),
        "{error:?}"
    );
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// The loop guard in the app: the turn whose summaries do not hold ends with why, and
/// the session stays usable: the next request runs (and tries compacting again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_loop_guard_stops_a_turn_the_next_request_runs() {
    let mut replies = common::replies_that_fill_the_context(8);
    replies.push(text_reply("A short answer."));
    let api = MockApi::start(replies).await;
    let mut settings = agent_settings(AskPolicy::Approve);
    settings.compaction.context_char_limit.chars = 4_000;
    settings.compaction.background_at_percent = 0;
    let mut agent = start_agent(&api, settings).await;
    agent
        .ops
        .send(Op::Submit {
            text: "keep going".into(),
        })
        .unwrap();
    let error = until(&mut agent.events, |e| matches!(e, AgentEvent::Error { .. })).await;
    assert!(
        matches!(&error, AgentEvent::Error { message } if message.starts_with("compaction stopped: 3 summaries in a row")),
        "{error:?}"
    );
    let done = until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    assert!(
        matches!(
            done,
            AgentEvent::TurnDone {
                outcome: TurnOutcome::Failed,
                ..
            }
        ),
        "{done:?}"
    );
    let calls = api.turn_requests().len();
    agent
        .ops
        .send(Op::Submit {
            text: "what now?".into(),
        })
        .unwrap();
    let done = until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    assert!(api.turn_requests().len() > calls, "the next request was sent");
    assert!(matches!(done, AgentEvent::TurnDone { .. }));
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// A summary call is said as it starts and as it streams, before its stage's marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_call_says_how_far_it_is() {
    let long = "A long answer about the lexer and its tokens. ".repeat(40);
    let api = MockApi::start(vec![text_reply(&long), text_reply(&long)]).await;
    let mut agent = start(&api, AskPolicy::Refuse).await;
    for request in ["first question", "second question"] {
        agent.ops.send(Op::Submit { text: request.into() }).unwrap();
        until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    }
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    let mut said = Vec::new();
    while let AgentEvent::Summarising { background, chars } = until(&mut agent.events, |e| {
        matches!(e, AgentEvent::Summarising { .. } | AgentEvent::Compaction { .. })
    })
    .await
    {
        said.push((background, chars));
    }
    let summary = "Goal: the scripted task. Summary from the mock API.".chars().count();
    assert_eq!(said.first(), Some(&(false, 0)), "said as it starts: {said:?}");
    assert_eq!(said.last(), Some(&(false, summary)), "and the whole of it: {said:?}");
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// A compaction between turns is not said to be "in this turn", and `/clear` starts
/// the count afresh: the first compaction of the new conversation has none before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_since_the_last_compaction_is_said_between_turns_and_starts_again_after_clear() {
    let long = "The lexer reads the source and hands the parser its tokens, one at a time. ".repeat(40);
    let api = MockApi::start(vec![text_reply(&long), text_reply(&long), text_reply(&long)]).await;
    let mut agent = start(&api, AskPolicy::Approve).await;
    common::turn(&mut agent, "tell me about the lexer").await;
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    let first = compacted(&mut agent).await;
    assert!(first.replaced > 0, "{:?}", first.errors);
    common::turn(&mut agent, "and the parser").await;
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    let second = compacted(&mut agent).await;
    let since = second.since_previous.expect("the first came before");
    assert!(since.between_turns);
    assert!(!since.describe().contains("in this turn"), "{}", since.describe());
    agent.ops.send(Op::Clear).unwrap();
    common::turn(&mut agent, "a new start").await;
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    let third = compacted(&mut agent).await;
    assert!(third.replaced > 0, "{:?}", third.errors);
    assert!(third.since_previous.is_none(), "{:?}", third.since_previous);
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// The next compaction the agent reports.
async fn compacted(agent: &mut Running) -> scratchpad::compact::StageEvent {
    match until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await {
        AgentEvent::Compaction { event } => event,
        _ => unreachable!("until returns only what it waited for"),
    }
}
