//! No wait at the limit: a summary prepared in the background is swapped in by stage 4
//! with no model call; one still being written is waited for rather than asked twice;
//! with the background off, stage 4 asks the model at the limit. Both ways the same
//! stages fire at the same calls.

mod common;

use std::time::Duration;

use common::{MockApi, Reply, Running, agent_settings, messages_of, sse_text, start_agent, text_reply, until};
use scratchpad::agent::AskPolicy;
use scratchpad::compact::Stage;
use scratchpad::compact::markers::{MessageKind, classify};
use scratchpad::protocol::{AgentEvent, BackgroundEvent, Op};

/// What one scripted session did.
#[derive(Debug, Default)]
struct Outcome {
    /// Each turn's compaction stages, in order.
    stages: Vec<Vec<Stage>>,
    background: Vec<BackgroundEvent>,
    /// Stage 4's cost to the turn: its own time (a model call when it summarised) plus
    /// the wait for a background summary.
    waited: Duration,
    swaps: usize,
    summary_requests: usize,
    history_roles: Vec<&'static str>,
}

/// A summary reply that takes about `millis` to stream.
fn slow_summary(millis: u64) -> Reply {
    let body = sse_text("Goal: write the report. Done: every earlier request was answered in full.");
    let chunks = 10u64;
    Reply::Sse {
        chunk: body.len().div_ceil(chunks as usize),
        body,
        delay_ms: millis / chunks,
    }
}

async fn run_turn(agent: &mut Running, request: String, outcome: &mut Outcome) {
    agent.ops.send(Op::Submit { text: request }).unwrap();
    let mut stages = Vec::new();
    loop {
        let event = until(&mut agent.events, |event| {
            matches!(
                event,
                AgentEvent::Compaction { .. } | AgentEvent::Background { .. } | AgentEvent::TurnDone { .. }
            )
        })
        .await;
        match event {
            AgentEvent::Compaction { event } => {
                if event.stage == Stage::CompactHistory {
                    outcome.waited += Duration::from_millis(event.took_ms);
                    if let Some(swapped) = &event.swapped {
                        outcome.waited += Duration::from_millis(swapped.waited_ms);
                        outcome.swaps += 1;
                    }
                }
                stages.push(event.stage);
            }
            AgentEvent::Background { event } => outcome.background.push(event),
            _ => break,
        }
    }
    outcome.stages.push(stages);
}

/// `turns` turns of about 800 characters each against a 12k limit (crossed twice in 40
/// turns), the background at `percent` (0: off), each summary reply taking
/// `summary_ms`, and `pause_ms` between turns (the user reading).
async fn session(percent: usize, summary_ms: u64, pause_ms: u64, turns: usize) -> Outcome {
    let replies = (0..turns)
        .map(|turn| text_reply(&format!("Answer {turn}: {}", "the report grows. ".repeat(24))))
        .collect();
    let api = MockApi::start(replies).await;
    api.script_summaries((0..turns).map(|_| slow_summary(summary_ms)).collect());
    let mut settings = agent_settings(AskPolicy::Approve);
    settings.compaction.context_char_limit = 12_000;
    settings.compaction.background_at_percent = percent;
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    for turn in 0..turns {
        let request = format!("Request {turn}: {}", "add a section on the findings. ".repeat(8));
        run_turn(&mut agent, request, &mut outcome).await;
        tokio::time::sleep(Duration::from_millis(pause_ms)).await;
    }
    outcome.summary_requests = api.requests().iter().filter(|request| request.is_summary()).count();
    let last = api.turn_requests().last().cloned().expect("a call was made");
    outcome.history_roles = messages_of(&last)
        .iter()
        .map(|message| match classify(message) {
            MessageKind::CompactedSummary { .. } => "compacted",
            MessageKind::UserPrompt(_) => "user",
            _ => "assistant",
        })
        .collect();
    let _ = agent.ops.send(Op::Quit);
    outcome
}

/// With a summary ready before the limit: stage 4 swaps it in each time with no call
/// and no wait. Both ways the first crossing is at the same turn and only stage 4
/// fires; the swap keeps the newest messages verbatim, so later crossings come sooner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_summary_is_swapped_in_with_no_wait_and_the_stages_are_the_same() {
    let on = session(70, 200, 100, 40).await;
    let off = session(0, 200, 0, 40).await;
    let crossings = |outcome: &Outcome| -> Vec<usize> {
        let turns = outcome.stages.iter().enumerate();
        turns
            .filter(|(_, stages)| !stages.is_empty())
            .map(|(turn, _)| turn)
            .collect()
    };
    let only_stage_four = |outcome: &Outcome| outcome.stages.concat().iter().all(|s| *s == Stage::CompactHistory);
    assert!(
        only_stage_four(&on) && only_stage_four(&off),
        "{:?} / {:?}",
        on.stages,
        off.stages
    );
    assert_eq!(
        crossings(&off).len(),
        2,
        "the limit is crossed twice in 40 turns without it"
    );
    assert_eq!(
        crossings(&on)[0],
        crossings(&off)[0],
        "the first crossing is at the same turn"
    );
    assert_eq!(on.swaps, crossings(&on).len(), "every crossing swapped: {on:#?}");
    assert_eq!(off.swaps, 0);
    assert!(
        on.waited < Duration::from_millis(100),
        "stage 4 took {:?} of the turns with the summary ready",
        on.waited
    );
    assert!(
        off.waited >= Duration::from_millis(2 * 150),
        "the model was asked at the limit: {:?}",
        off.waited
    );
    assert_eq!(
        on.summary_requests, on.swaps,
        "one summary each time, written in the background"
    );
    assert!(
        on.background
            .iter()
            .any(|e| matches!(e, BackgroundEvent::Started { percent, .. } if *percent >= 70))
    );
    assert!(on.background.iter().any(|e| matches!(e, BackgroundEvent::Ready { .. })));
    assert_eq!(on.history_roles.first(), Some(&"compacted"));
    assert_eq!(off.history_roles.first(), Some(&"compacted"));
}

/// The limit arrives while the summary is still being written: the turn waits for that
/// summary (said on screen) and swaps it in; no second summary call is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_limit_the_turn_waits_for_the_running_summary_instead_of_asking_again() {
    let outcome = session(70, 1_500, 0, 18).await;
    assert!(
        outcome
            .background
            .iter()
            .any(|e| matches!(e, BackgroundEvent::Waiting { .. })),
        "{outcome:#?}"
    );
    assert_eq!(outcome.swaps, 1, "{outcome:#?}");
    let fourth_stages = outcome
        .stages
        .concat()
        .iter()
        .filter(|s| **s == Stage::CompactHistory)
        .count();
    assert_eq!(fourth_stages, 1, "{outcome:#?}");
    assert_eq!(
        outcome.summary_requests, 1,
        "the running summary was not asked for twice"
    );
    assert!(
        outcome.waited >= Duration::from_millis(100),
        "the wait is counted: {:?}",
        outcome.waited
    );
}

/// `/clear` while a summary is being written sets it aside: nothing of the old
/// conversation is ever swapped into the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_sets_a_running_summary_aside() {
    let replies = (0..16)
        .map(|turn| text_reply(&format!("Answer {turn}: {}", "the report grows. ".repeat(24))))
        .collect();
    let api = MockApi::start(replies).await;
    api.script_summaries((0..4).map(|_| slow_summary(2_000)).collect());
    let mut settings = agent_settings(AskPolicy::Approve);
    settings.compaction.context_char_limit = 12_000;
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    for turn in 0..13 {
        let request = format!("Request {turn}: {}", "add a section on the findings. ".repeat(8));
        run_turn(&mut agent, request, &mut outcome).await;
    }
    assert!(
        outcome
            .background
            .iter()
            .any(|e| matches!(e, BackgroundEvent::Started { .. })),
        "{outcome:#?}"
    );
    agent.ops.send(Op::Clear).unwrap();
    let event = until(&mut agent.events, |e| matches!(e, AgentEvent::Background { .. })).await;
    assert!(
        matches!(&event, AgentEvent::Background { event: BackgroundEvent::Discarded { reason } } if reason.contains("/clear")),
        "{event:?}"
    );
    let mut after = Outcome::default();
    for turn in 0..3 {
        run_turn(&mut agent, format!("New {turn}: short"), &mut after).await;
    }
    assert_eq!(after.swaps, 0);
    let last = api.turn_requests().last().cloned().unwrap();
    assert!(
        messages_of(&last)
            .iter()
            .all(|m| !matches!(classify(m), MessageKind::CompactedSummary { .. })),
        "nothing of the old conversation came back"
    );
}

/// `compaction.compact_when_idle`: a turn ends past the threshold, the summary becomes
/// ready while the user reads, and it is swapped in then, with no request pending, so
/// the next request starts small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_idle_the_ready_summary_is_swapped_in_before_the_next_request() {
    let replies = (0..16)
        .map(|turn| text_reply(&format!("Answer {turn}: {}", "the report grows. ".repeat(24))))
        .collect();
    let api = MockApi::start(replies).await;
    api.script_summaries(vec![slow_summary(300)]);
    let mut settings = agent_settings(AskPolicy::Approve);
    settings.compaction.context_char_limit = 12_000;
    settings.compaction.compact_when_idle = true;
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    let mut turn = 0;
    while !outcome
        .background
        .iter()
        .any(|e| matches!(e, BackgroundEvent::Started { .. }))
    {
        let request = format!("Request {turn}: {}", "add a section on the findings. ".repeat(8));
        run_turn(&mut agent, request, &mut outcome).await;
        turn += 1;
        assert!(turn < 16, "the threshold was reached");
    }
    let calls_before = api.turn_requests().len();
    let event = until(&mut agent.events, |e| matches!(e, AgentEvent::Compaction { .. })).await;
    let AgentEvent::Compaction { event } = event else {
        unreachable!("waited for a compaction")
    };
    assert_eq!(event.stage, Stage::CompactHistory);
    assert!(event.swapped.is_some(), "{event:?}");
    assert!(event.trigger.contains("idle"), "{}", event.trigger);
    assert_eq!(
        api.turn_requests().len(),
        calls_before,
        "swapped with no request pending"
    );
    run_turn(&mut agent, "and the conclusion?".into(), &mut outcome).await;
    let sent = messages_of(api.turn_requests().last().unwrap());
    assert!(matches!(classify(&sent[0]), MessageKind::CompactedSummary { .. }));
    assert!(
        sent.len() <= 8,
        "the next request starts small: {} messages",
        sent.len()
    );
}
