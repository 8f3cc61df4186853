//! Thinking (`provider.thinking`): asked for on a turn's calls, its blocks kept and
//! sent back unchanged, counted in the estimate as their own `/context` category, and
//! never read by the summariser.

mod common;

use common::{
    MockApi, agent_settings, breakdown_of, counted_chars, start_agent_thinking, text_reply, thinking_reply, total_of,
    until,
};
use scratchpad::agent::AskPolicy;
use scratchpad::protocol::{AgentEvent, Category, Op};
use scratchpad::provider::Thinking;
use serde_json::json;

const THOUGHT: &str = "The user wants the files listed; the marigold plan is to run ls first.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_blocks_round_trip_count_in_the_estimate_and_stay_out_of_the_summary() {
    let api = MockApi::start(vec![
        thinking_reply(
            THOUGHT,
            "sig-Eq8kAbc==",
            612,
            "Listing.",
            &[("toolu_1", "bash", json!({"command": "echo hi"}))],
        ),
        text_reply(&"Done: the listing shows one file, and nothing else was there. ".repeat(20)),
    ])
    .await;
    let mut agent = start_agent_thinking(&api, agent_settings(AskPolicy::Approve), Thinking::Adaptive);
    agent
        .ops
        .send(Op::Submit {
            text: "list the files".into(),
        })
        .unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let turns = api.turn_requests();
    assert_eq!(turns[0].body["thinking"], json!({"type": "adaptive"}));
    // The second call sends the first reply back with its thinking block first,
    // unchanged, signature and all.
    let assistant = &turns[1].body["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": THOUGHT, "signature": "sig-Eq8kAbc=="})
    );
    assert_eq!(assistant["content"][2]["type"], "tool_use");

    let breakdown = breakdown_of(&mut agent).await;
    assert!(
        total_of(&breakdown, Category::Thinking) > THOUGHT.len(),
        "{:?}",
        breakdown.totals
    );
    assert_eq!(
        counted_chars(&breakdown),
        breakdown.estimate,
        "the categories sum to the estimate"
    );
    assert_eq!(breakdown.thinking_tokens, None, "the last reply did not think");

    // A summary of this history never reads the thinking.
    agent.ops.send(Op::Compact { focus: None }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await;
    let summaries: Vec<_> = api.requests().into_iter().filter(|r| r.is_summary()).collect();
    assert!(!summaries.is_empty(), "a summary was asked for");
    for summary in summaries {
        let sent = summary.body.to_string();
        assert!(!sent.contains("marigold"), "the summariser read the thinking: {sent}");
        assert_eq!(summary.body.get("thinking"), None, "a summary does not think");
    }
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}

/// The last reply's thinking tokens, as the usage reports them, reach `/context`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_replys_thinking_tokens_reach_context() {
    let api = MockApi::start(vec![thinking_reply("Short thought.", "sig", 377, "Hello.", &[])]).await;
    let mut agent = start_agent_thinking(&api, agent_settings(AskPolicy::Refuse), Thinking::Budget(2_048));
    agent.ops.send(Op::Submit { text: "hi".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let turn = &api.turn_requests()[0];
    assert_eq!(
        turn.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2_048})
    );
    assert_eq!(breakdown_of(&mut agent).await.thinking_tokens, Some(377));
    agent.ops.send(Op::Quit).unwrap();
    agent.task.await.unwrap();
}
