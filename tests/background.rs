//! No wait at the limit: a summary prepared in the background is swapped in by stage 4
//! with no model call; one still being written is waited for rather than asked twice;
//! with the background off, stage 4 asks the model at the limit. Both ways the same
//! stages fire at the same calls.

mod common;

use std::time::Duration;

use common::{MockApi, Reply, Running, messages_of, sse_text, start_agent, text_reply, until};
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
    /// What each swap's receipt said of it.
    swapped: Vec<scratchpad::compact::Swapped>,
    summary_requests: usize,
    history_roles: Vec<&'static str>,
}

async fn run_turn(agent: &mut Running, request: String, outcome: &mut Outcome) {
    run_turn_watching(agent, request, outcome, |_| {}).await;
}

/// [`run_turn`], showing `watch` each of the turn's events as it comes.
async fn run_turn_watching(
    agent: &mut Running,
    request: String,
    outcome: &mut Outcome,
    mut watch: impl FnMut(&AgentEvent),
) {
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
        watch(&event);
        if !note_turn_event(event, outcome, &mut stages) {
            break;
        }
    }
    outcome.stages.push(stages);
}

/// Note one of a turn's events in `outcome` and the turn's `stages`; false at the
/// turn's end.
fn note_turn_event(event: AgentEvent, outcome: &mut Outcome, stages: &mut Vec<Stage>) -> bool {
    match event {
        AgentEvent::Compaction { event } => {
            if event.stage == Stage::CompactHistory {
                outcome.waited += Duration::from_millis(event.took_ms);
                if let Some(swapped) = &event.swapped {
                    outcome.waited += Duration::from_millis(swapped.waited_ms);
                    outcome.swaps += 1;
                    outcome.swapped.push((**swapped).clone());
                }
            }
            stages.push(event.stage);
            true
        }
        AgentEvent::Background { event } => {
            outcome.background.push(event);
            true
        }
        _ => false,
    }
}

/// When the newest background event is a summary starting, wait for what becomes of
/// it (ready, failed or set aside): the next turn then finds it settled, by event, not
/// by a pause that a slow machine outlasts.
async fn settle_background(agent: &mut Running, outcome: &mut Outcome) {
    if matches!(outcome.background.last(), Some(BackgroundEvent::Started { .. })) {
        let event = until(&mut agent.events, |event| {
            matches!(
                event,
                AgentEvent::Background {
                    event: BackgroundEvent::Ready { .. }
                        | BackgroundEvent::Failed { .. }
                        | BackgroundEvent::Discarded { .. }
                }
            )
        })
        .await;
        if let AgentEvent::Background { event } = event {
            outcome.background.push(event);
        }
    }
}

/// How the user paces a session of [`session`], and what the summaries do meanwhile.
enum Pace {
    /// Turn after turn, each summary reply taking `summary_ms`.
    Rush { summary_ms: u64 },
    /// Between turns the user reads until a summary being written is ready (each
    /// reply takes `summary_ms`): the next turn finds it settled, by event.
    Read { summary_ms: u64 },
    /// Turn after turn, every summary held until the turn waits for it at the limit,
    /// then `hold_ms` more, so the wait is there to measure.
    HeldUntilWaited { hold_ms: u64 },
}

/// `turns` turns of about 800 characters each against a 12k limit (crossed twice in 40
/// turns), the background at `percent` (0: off), paced as `pace` says.
async fn session(percent: usize, pace: Pace, turns: usize) -> Outcome {
    let api = MockApi::start(common::report_answers(turns)).await;
    let (opener, gate) = common::gate();
    api.script_summaries(
        (0..turns)
            .map(|_| match pace {
                Pace::Rush { summary_ms } | Pace::Read { summary_ms } => common::slow_summary(summary_ms),
                Pace::HeldUntilWaited { .. } => common::held_summary(&gate),
            })
            .collect(),
    );
    let mut settings = common::report_settings(AskPolicy::Approve);
    settings.compaction.background_at_percent = percent;
    // The crossings these tests count are planned for summaries without an index.
    settings.compaction.index_percent = 0;
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    let mut opener = Some(opener);
    for turn in 0..turns {
        let request = common::report_request(turn);
        match pace {
            Pace::HeldUntilWaited { hold_ms } => {
                let waiting = |event: &AgentEvent| {
                    if let AgentEvent::Background {
                        event: BackgroundEvent::Waiting { .. },
                    } = event
                        && let Some(opener) = opener.take()
                    {
                        // The hold makes the wait long enough to measure; the summary
                        // could not have been ready sooner, whatever the machine's speed.
                        tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(hold_ms)).await;
                            opener.open();
                        });
                    }
                };
                run_turn_watching(&mut agent, request, &mut outcome, waiting).await;
            }
            Pace::Rush { .. } => run_turn(&mut agent, request, &mut outcome).await,
            Pace::Read { .. } => {
                run_turn(&mut agent, request, &mut outcome).await;
                settle_background(&mut agent, &mut outcome).await;
            }
        }
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
    let on = session(70, Pace::Read { summary_ms: 200 }, 40).await;
    let off = session(0, Pace::Rush { summary_ms: 200 }, 40).await;
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
    let outcome = session(70, Pace::HeldUntilWaited { hold_ms: 150 }, 18).await;
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
/// conversation is ever swapped into the new one, even once the new one reaches the
/// limit itself. Each summary says which it is, so the one the new conversation gets
/// can be told from those asked for before the clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_sets_a_running_summary_aside() {
    let api = MockApi::start(common::report_answers(40)).await;
    // The first, asked for in the old conversation, is still being written at the
    // clear; the rest come at once.
    let numbered = |n: usize, millis: u64| {
        let body = common::sse_text(&format!("Goal: write the report. Summary number {n}."));
        Reply::Sse {
            chunk: body.len().div_ceil(8),
            body,
            delay_ms: millis / 8,
        }
    };
    api.script_summaries((0..8).map(|n| numbered(n, if n == 0 { 2_000 } else { 50 })).collect());
    let settings = common::report_settings(AskPolicy::Approve);
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    let mut turn = 0;
    while !outcome
        .background
        .iter()
        .any(|e| matches!(e, BackgroundEvent::Started { .. }))
    {
        run_turn(&mut agent, common::report_request(turn), &mut outcome).await;
        turn += 1;
        assert!(turn < 16, "a summary started in the background: {outcome:#?}");
    }
    agent.ops.send(Op::Clear).unwrap();
    let event = until(&mut agent.events, |e| matches!(e, AgentEvent::Background { .. })).await;
    assert!(
        matches!(&event, AgentEvent::Background { event: BackgroundEvent::Discarded { reason } } if reason.contains("/clear")),
        "{event:?}"
    );
    // The new conversation, until it reaches the limit and stage 4 fires.
    let mut after = Outcome::default();
    let mut new_turn = 0;
    while !after
        .stages
        .iter()
        .flatten()
        .any(|stage| *stage == Stage::CompactHistory)
    {
        run_turn(&mut agent, common::report_request(100 + new_turn), &mut after).await;
        new_turn += 1;
        assert!(new_turn < 24, "the new conversation reached the limit: {after:#?}");
    }
    let last = api.turn_requests().last().cloned().unwrap();
    let sent = messages_of(&last);
    let summary = sent
        .iter()
        .find(|m| matches!(classify(m), MessageKind::CompactedSummary { .. }))
        .map(|m| m.text())
        .expect("the new conversation was summarised");
    // The mock answers its n-th summary request with summary number n: the one the
    // new conversation holds was asked for with the new conversation only.
    let number: usize = summary
        .split("Summary number ")
        .nth(1)
        .and_then(|rest| rest.split('.').next()?.parse().ok())
        .expect("a numbered summary");
    let requests = api.requests();
    let asked = requests
        .iter()
        .filter(|request| request.is_summary())
        .nth(number)
        .expect("the request that summary answered");
    let asked_text = asked.body.to_string();
    assert!(
        !asked_text.contains("Request 0:") && asked_text.contains("Request 100:"),
        "summary {number} was made of the old conversation: {summary}"
    );
    assert!(
        sent.iter().all(|m| !m.text().contains("Request 0:")),
        "nothing of the old conversation's requests was sent"
    );
}

/// `compaction.background_swap = "when_idle"`: a turn ends past the threshold, the summary becomes
/// ready while the user reads, and it is swapped in then, with no request pending, so
/// the next request starts small.
/// The report session's turns until one starts a background summary (within 16).
async fn turns_until_a_summary_starts(agent: &mut Running, outcome: &mut Outcome) {
    let mut turn = 0;
    while !outcome
        .background
        .iter()
        .any(|e| matches!(e, BackgroundEvent::Started { .. }))
    {
        let request = common::report_request(turn);
        run_turn(agent, request, outcome).await;
        turn += 1;
        assert!(turn < 16, "the threshold was reached");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_idle_the_ready_summary_is_swapped_in_before_the_next_request() {
    let api = MockApi::start(common::report_answers(16)).await;
    api.script_summaries(vec![common::slow_summary(300)]);
    let mut settings = common::report_settings(AskPolicy::Approve);
    settings.compaction.background_swap = scratchpad::compact::BackgroundSwap::WhenIdle;
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    turns_until_a_summary_starts(&mut agent, &mut outcome).await;
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

/// With no idle swap, a summary that finishes while the user reads is said ready the
/// moment it is (no op wakes the agent), and its time is the call's own, not the wait
/// until somebody looked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_finished_while_idle_is_said_ready_at_once_with_its_own_time() {
    let api = MockApi::start(common::report_answers(16)).await;
    api.script_summaries(vec![common::slow_summary(300)]);
    let settings = common::report_settings(AskPolicy::Approve);
    assert_eq!(
        settings.compaction.background_swap,
        scratchpad::compact::BackgroundSwap::AtLimit
    );
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    turns_until_a_summary_starts(&mut agent, &mut outcome).await;
    if outcome
        .background
        .iter()
        .any(|e| matches!(e, BackgroundEvent::Ready { .. }))
    {
        panic!("the summary was ready before the turn ended: {:?}", outcome.background);
    }
    let idle_since = std::time::Instant::now();
    // No op is sent: only the summary's end can wake the agent.
    let ready = until(&mut agent.events, |e| matches!(e, AgentEvent::Background { .. })).await;
    let AgentEvent::Background {
        event: BackgroundEvent::Ready { took_ms },
    } = ready
    else {
        panic!("expected the summary ready, got {ready:?}")
    };
    assert!(
        idle_since.elapsed() < Duration::from_secs(5),
        "said when it finished, not at the next request"
    );
    assert!(
        (250..3_000).contains(&took_ms),
        "a 300 ms summary took {took_ms} ms by its own clock"
    );
    let status = until(&mut agent.events, |e| matches!(e, AgentEvent::Context { .. })).await;
    let AgentEvent::Context { status } = status else {
        unreachable!("waited for the context")
    };
    assert!(
        status.background.is_some_and(|background| background.ready),
        "the gauge marks it ready"
    );
}

/// What the race test does next, with a pause before it.
#[derive(Clone, Debug)]
enum Act {
    Turn,
    Undo,
    /// `/compact` with no focus.
    Compact,
    Clear,
    /// Fork this session before its message at this share of its messages (percent).
    Fork(usize),
    /// Another process tries to take the session over.
    Lock,
}

fn act() -> impl proptest::strategy::Strategy<Value = (Act, u64)> {
    use proptest::prelude::*;
    let act = prop_oneof![
        8 => Just(Act::Turn),
        2 => Just(Act::Undo),
        1 => Just(Act::Compact),
        1 => Just(Act::Clear),
        1 => (1usize..100).prop_map(Act::Fork),
        1 => Just(Act::Lock),
    ];
    (act, 0u64..60)
}

/// Turns at the end of each race: enough to cross the limit from an empty history, so
/// whatever summary survived the races is swapped in (or waited for) and checked.
const CLOSING_TURNS: usize = 14;

/// The journal in `dir` whose lock a process holds now.
fn locked_session(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .find(|path| scratchpad::session::lock_holder(path).is_some())
}

/// Every message of `replaced` a user typed, as the summariser's text renders it.
fn prompts(messages: &[scratchpad::message::Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|message| match classify(message) {
            MessageKind::UserPrompt(text) => Some(text),
            _ => None,
        })
        .collect()
}

/// User input, undo, /compact, /clear, forks and a second process taking the lock arrive at
/// random moments while background summaries run (each taking a random time). Every
/// journal stays consistent (it restores with nothing to mend), a second process never
/// gets the lock, and every swap put in a summary of exactly the messages it replaced:
/// each summary reply names the request it answered, whose history text must hold
/// every request the swap replaced.
#[test]
fn races_with_a_running_background_summary_never_swap_a_stale_one() {
    use proptest::prelude::*;
    let config = ProptestConfig {
        cases: 6,
        ..ProptestConfig::default()
    };
    proptest!(config, |(
        acts in proptest::collection::vec(act(), 10..30),
        summary_ms in proptest::collection::vec(0u64..400, 40),
    )| {
        let runtime = scratchpad::launch::runtime().unwrap();
        let swaps = runtime.block_on(race(acts, summary_ms));
        prop_assert!(swaps > 0, "the closing turns crossed the limit and swapped");
    });
}

/// One race; how many swaps it checked.
async fn race(mut acts: Vec<(Act, u64)>, summary_ms: Vec<u64>) -> usize {
    acts.extend(std::iter::repeat_n((Act::Turn, 0), CLOSING_TURNS));
    let api = MockApi::start(common::report_answers(acts.len())).await;
    let summaries: Vec<Reply> = summary_ms
        .iter()
        .enumerate()
        .map(|(k, millis)| {
            let body = sse_text(&format!("SUMMARY-{k}: the work so far."));
            Reply::Sse {
                chunk: body.len().div_ceil(4),
                body,
                delay_ms: millis / 4,
            }
        })
        .collect();
    api.script_summaries(summaries);
    let mut settings = common::report_settings(AskPolicy::Approve);
    settings.compaction.context_char_limit.chars = 9_000;
    let (mut agent, first) = common::start_agent_journaled(&api, settings);
    let sessions = first.parent().unwrap().to_path_buf();
    let mut outcome = Outcome::default();
    for (turn, (act, pause)) in acts.iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(*pause)).await;
        // The session the agent writes now: the one whose lock is held.
        let current = locked_session(&sessions).unwrap_or_else(|| first.clone());
        match act {
            Act::Turn => {
                let request = common::report_request(turn);
                run_turn(&mut agent, request, &mut outcome).await;
            }
            Act::Undo => agent.ops.send(Op::Undo { stage_id: None }).unwrap(),
            Act::Compact => agent.ops.send(Op::Compact { focus: None }).unwrap(),
            Act::Clear => {
                agent.ops.send(Op::Clear).unwrap();
                until(&mut agent.events, |e| matches!(e, AgentEvent::SessionStarted { .. })).await;
            }
            Act::Fork(share) => {
                let shown = scratchpad::session::restore(&current).map_or(0, |restored| {
                    restored
                        .past
                        .iter()
                        .filter(|p| matches!(p, scratchpad::protocol::Past::Message { .. }))
                        .count()
                });
                if shown > 0 {
                    let at = (shown * share / 100).max(1);
                    agent
                        .ops
                        .send(Op::Fork {
                            session: None,
                            at: scratchpad::protocol::ForkAt::Message(at),
                        })
                        .unwrap();
                    // A fork before a tool result is refused with an error; otherwise
                    // the agent goes on in the new session. Either way the agent has
                    // handled it once it answers the next op.
                    agent.ops.send(Op::Inspect).unwrap();
                    until(&mut agent.events, |e| matches!(e, AgentEvent::Breakdown { .. })).await;
                }
            }
            Act::Lock => {
                let taken = scratchpad::session::Journal::resume(&current);
                assert!(
                    matches!(taken, Err(scratchpad::session::SessionError::Locked { .. })),
                    "a second writer got the session: {taken:?}"
                );
            }
        }
    }
    agent.ops.send(Op::Quit).unwrap();
    tokio::time::timeout(Duration::from_secs(20), &mut agent.task)
        .await
        .expect("the agent stops")
        .expect("the agent did not panic");

    let summary_requests: Vec<String> = api
        .requests()
        .iter()
        .filter(|request| request.is_summary())
        .map(|request| request.body.to_string())
        .collect();
    let store = scratchpad::store::Store::new(agent.dir.path());
    let mut swaps = 0;
    for entry in std::fs::read_dir(&sessions).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let restored = scratchpad::session::restore(&path).unwrap();
        assert!(
            restored.repairs.is_empty(),
            "{}: {:?}\n{}",
            path.display(),
            restored.repairs,
            std::fs::read_to_string(&path)
                .unwrap_or_default()
                .lines()
                .take(4)
                .collect::<Vec<_>>()
                .join("\n")
        );
        for item in &restored.past {
            let scratchpad::protocol::Past::Stage { event } = item else {
                continue;
            };
            if event.swapped.is_none() {
                continue;
            }
            store.recognise(&event.digests);
            let transcript = event.archived.as_deref().expect("a swap keeps a transcript");
            let text = scratchpad::compact::Archive::read_saved(&store, transcript).expect("its transcript is whole");
            let before: Vec<scratchpad::message::Message> = text
                .text
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect();
            let summary = event.summary.as_deref().unwrap_or_default();
            let k: usize = summary
                .strip_prefix("SUMMARY-")
                .and_then(|rest| rest.split(':').next())
                .and_then(|k| k.parse().ok())
                .expect("a summary the mock wrote");
            swaps += 1;
            let asked = &summary_requests[k];
            for prompt in prompts(&before[..event.replaced]) {
                let head: String = prompt.chars().take(40).collect();
                assert!(
                    asked.contains(&head),
                    "swap in {} used summary {k}, which was not written from {head:?}",
                    path.display()
                );
            }
        }
    }
    swaps
}

/// With Anthropic prompt caching, the background summary is asked for after the
/// conversation itself: its request repeats the cached prefix of the last calls and
/// ends with the instruction, so it reads the prefix from the cache (the mock keeps the
/// cache as Anthropic does) instead of writing a new one, and the swap's receipt says
/// what it read and wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_request_reads_the_cached_prefix() {
    let api = MockApi::start(common::report_answers(40)).await;
    api.emulate_prompt_cache();
    api.script_summaries(
        (0..4)
            .map(|_| text_reply("Goal: the report. Done: the sections so far."))
            .collect(),
    );
    let settings = common::report_settings(AskPolicy::Approve);
    let mut agent = common::start_agent_caching(&api, settings);
    let mut outcome = Outcome::default();
    for turn in 0..30 {
        run_turn(&mut agent, common::report_request(turn), &mut outcome).await;
        if !outcome.swapped.is_empty() {
            break;
        }
        settle_background(&mut agent, &mut outcome).await;
    }
    let swapped = outcome
        .swapped
        .first()
        .expect("the limit was reached and the summary swapped in");
    let requests = api.requests();
    let asked = requests
        .iter()
        .find(|request| request.asks_after_conversation())
        .expect("the summary was asked for after the conversation");
    // What the mock received: the summary request is the conversation's last call as
    // it was sent (its system prompt and tools, its oldest messages), with the
    // instruction after.
    let at = requests
        .iter()
        .position(|request| std::ptr::eq(request, asked))
        .unwrap();
    let conversation = requests[..at]
        .iter()
        .rev()
        .find(|request| !request.is_summary())
        .expect("a call of the conversation before it");
    assert_eq!(
        asked.body["system"], conversation.body["system"],
        "the same system prompt"
    );
    assert_eq!(asked.body["tools"], conversation.body["tools"], "the same tools");
    let sent = conversation.body["messages"].as_array().unwrap();
    let summarised = asked.body["messages"].as_array().unwrap();
    // It covers the oldest messages: all but its last (which carries the
    // instruction) are the conversation's first, as they were sent.
    let covered = summarised.len() - 1;
    assert!(covered >= 1 && covered <= sent.len(), "{covered} of {}", sent.len());
    assert_eq!(
        &summarised[..covered],
        &sent[..covered],
        "the conversation's messages, as they were sent"
    );
    // The prefix: everything the request holds but the instruction at its end.
    let mut prefix = asked.body.clone();
    let messages = prefix["messages"].as_array_mut().unwrap();
    let last = messages.last_mut().unwrap();
    let blocks = last["content"].as_array_mut().unwrap();
    blocks.pop();
    if blocks.is_empty() {
        messages.pop();
    }
    let prefix_tokens = common::mock_tokens(&prefix);
    let read = swapped.cache_read.expect("the receipt has the cache read");
    assert!(
        read * 10 >= prefix_tokens * 9,
        "read {read} of a {prefix_tokens}-token prefix from the cache"
    );
    assert!(swapped.describe().contains("cached tokens"), "{}", swapped.describe());
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.is_summary() && !r.asks_after_conversation())
            .count(),
        0,
        "no summary was asked for plainly"
    );
}

/// The offline demo shows it within its run, headless: `--events jsonl` reports the
/// background summary starting and ready, and the compaction that swapped it in.
#[test]
fn the_offline_demo_prepares_a_summary_in_the_background_and_swaps_it_in() {
    let workspace = common::demo_workspace();
    let home = tempfile::tempdir().unwrap();
    let output = common::demo_run(
        workspace.path(),
        home.path(),
        &["-p", "survey this workspace", "--events", "jsonl"],
    );
    let events = common::events(&output);
    let started = events
        .iter()
        .find(|e| e["type"] == "session_started")
        .expect("the session's start");
    let sandbox = started["sandbox"].as_str().unwrap_or_default();
    assert!(
        !sandbox.is_empty() && !sandbox.starts_with("sandbox:"),
        "the event says the mode, not the status line's label: {sandbox:?}"
    );
    let background: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "background")
        .filter_map(|e| e["event"]["state"].as_str())
        .collect();
    assert!(
        background.contains(&"started") && background.contains(&"ready"),
        "{background:?}"
    );
    let swap = events
        .iter()
        .find(|e| e["type"] == "compaction" && !e["event"]["swapped"].is_null())
        .expect("a compaction swapped the prepared summary in");
    assert_eq!(swap["event"]["stage"], "compact_history");
    assert_eq!(swap["event"]["swapped"]["waited_ms"], 0);
}

/// `compaction.review_summaries`: the ready summary is reviewed before the swap, as
/// any summary is; applied, it is swapped in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_summaries_reviews_before_the_swap() {
    let api = MockApi::start(common::report_answers(30)).await;
    api.script_summaries(vec![common::slow_summary(100)]);
    let mut settings = common::report_settings(AskPolicy::Ask);
    settings.compaction.review_summaries = true;
    let mut agent = start_agent(&api, settings).await;
    let mut started = false;
    for turn in 0..30 {
        let request = common::report_request(turn);
        agent.ops.send(Op::Submit { text: request }).unwrap();
        let mut reviewed = false;
        loop {
            match until(&mut agent.events, |e| {
                matches!(
                    e,
                    AgentEvent::SummaryReview { .. }
                        | AgentEvent::Compaction { .. }
                        | AgentEvent::TurnDone { .. }
                        | AgentEvent::Background { .. }
                )
            })
            .await
            {
                AgentEvent::Background { event } => {
                    if matches!(event, BackgroundEvent::Started { .. }) {
                        started = true;
                    } else if matches!(event, BackgroundEvent::Ready { .. }) {
                        started = false;
                    }
                }
                AgentEvent::SummaryReview { request_id, .. } => {
                    reviewed = true;
                    agent
                        .ops
                        .send(Op::Review {
                            request_id,
                            answer: scratchpad::protocol::ReviewAnswer::Apply,
                        })
                        .unwrap();
                }
                AgentEvent::Compaction { event } if event.stage == Stage::CompactHistory => {
                    assert!(reviewed, "reviewed before the swap");
                    assert!(event.swapped.is_some(), "{}", event.summary_line());
                    return;
                }
                AgentEvent::TurnDone { .. } => break,
                _ => {}
            }
        }
        // A summary started during the turn is ready before the next one asks.
        if started {
            until(&mut agent.events, |e| {
                matches!(
                    e,
                    AgentEvent::Background {
                        event: BackgroundEvent::Ready { .. }
                    }
                )
            })
            .await;
            started = false;
        }
    }
    panic!("the limit was never reached");
}

/// A background summary costs a call over the whole prefix with a real model: the demo
/// starts one only when it is likely to be swapped in. Over three runs of one session
/// (each after the first continuing it), summaries started stay at most twice the
/// swaps plus one, with at least one swap.
#[test]
fn the_demo_starts_a_summary_only_when_it_is_likely_used() {
    let workspace = common::demo_workspace();
    let home = tempfile::tempdir().unwrap();
    let (mut started, mut swapped) = (0, 0);
    for run in 0..3 {
        let args = ["--continue", "-p", "survey this workspace", "--events", "jsonl"];
        // The first run begins the session; the others continue it.
        let args = if run == 0 { &args[1..] } else { &args[..] };
        let output = common::demo_run(workspace.path(), home.path(), args);
        let events = common::events(&output);
        started += events
            .iter()
            .filter(|e| e["type"] == "background" && e["event"]["state"] == "started")
            .count();
        swapped += events
            .iter()
            .filter(|e| e["type"] == "compaction" && !e["event"]["swapped"].is_null())
            .count();
    }
    assert!(swapped >= 1, "no swap in three runs");
    assert!(
        started <= 2 * swapped + 1,
        "{started} summaries started for {swapped} swapped in"
    );
}

/// `/summary`: a summary ready in the background is shown for review before it goes
/// in; the user's edit is what the swap at the limit puts in, and the event keeps the
/// model's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_summary_edited_in_review_is_the_one_swapped_in() {
    let api = MockApi::start(common::report_answers(30)).await;
    api.script_summaries(vec![common::slow_summary(100)]);
    let settings = common::report_settings(AskPolicy::Approve);
    let mut agent = start_agent(&api, settings).await;
    agent.ops.send(Op::ReviewReady).unwrap();
    let notice = until(&mut agent.events, |e| matches!(e, AgentEvent::Notice { .. })).await;
    assert!(
        matches!(&notice, AgentEvent::Notice { message } if message.starts_with("no summary is prepared")),
        "{notice:?}"
    );
    let mut outcome = Outcome::default();
    turns_until_a_summary_starts(&mut agent, &mut outcome).await;
    settle_background(&mut agent, &mut outcome).await;
    assert!(
        matches!(outcome.background.last(), Some(BackgroundEvent::Ready { .. })),
        "{:?}",
        outcome.background
    );
    agent.ops.send(Op::ReviewReady).unwrap();
    let AgentEvent::SummaryReview {
        request_id,
        summary,
        index,
        covers,
        ..
    } = until(&mut agent.events, |e| matches!(e, AgentEvent::SummaryReview { .. })).await
    else {
        unreachable!("until returns only what it waited for")
    };
    assert!(covers > 0 && !summary.is_empty());
    assert!(index.starts_with(scratchpad::compact::index::INDEX_HEADING), "{index}");
    let edited = format!("{summary}\nThe user adds: keep the report format.");
    agent
        .ops
        .send(Op::Review {
            request_id,
            answer: scratchpad::protocol::ReviewAnswer::Edited {
                summary: edited.clone(),
            },
        })
        .unwrap();
    for turn in 100..130 {
        agent
            .ops
            .send(Op::Submit {
                text: common::report_request(turn),
            })
            .unwrap();
        loop {
            match until(&mut agent.events, |e| {
                matches!(e, AgentEvent::Compaction { .. } | AgentEvent::TurnDone { .. })
            })
            .await
            {
                AgentEvent::Compaction { event } if event.stage == Stage::CompactHistory => {
                    assert!(event.swapped.is_some(), "{}", event.summary_line());
                    assert_eq!(event.summary.as_deref(), Some(edited.as_str()));
                    assert_eq!(
                        event.summary_note.as_ref().and_then(|note| note.model_summary.clone()),
                        Some(summary)
                    );
                    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
                    let sent = messages_of(api.turn_requests().last().unwrap());
                    assert!(sent[0].text().contains("The user adds: keep the report format."));
                    return;
                }
                AgentEvent::TurnDone { .. } => break,
                _ => {}
            }
        }
    }
    panic!("the limit was never reached");
}

/// With the server as summariser, the summary prepared in the background is the
/// server's compaction, and the swap puts its block first, as it came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_server_as_summariser_the_background_summary_is_its_block() {
    let turns = 40;
    let api = MockApi::start(common::report_answers(turns)).await;
    let mut settings = common::report_settings(AskPolicy::Approve);
    settings.compaction.background_at_percent = 70;
    settings.compaction.index_percent = 0;
    settings.compaction.summariser = scratchpad::compact::SummariserChoice::Server;
    let mut agent = start_agent(&api, settings).await;
    let mut outcome = Outcome::default();
    for turn in 0..turns {
        run_turn(&mut agent, common::report_request(turn), &mut outcome).await;
        settle_background(&mut agent, &mut outcome).await;
        if outcome.swaps > 0 {
            break;
        }
    }
    assert_eq!(outcome.swaps, 1, "{:?}", outcome.background);
    assert!(
        api.requests().iter().any(|r| r.asks_the_server_to_compact()),
        "the server was asked"
    );
    assert!(
        !api.requests()
            .iter()
            .any(|r| r.is_summary() && !r.asks_the_server_to_compact()),
        "the model was not"
    );
    agent.ops.send(Op::Submit { text: "go on".into() }).unwrap();
    until(&mut agent.events, |e| matches!(e, AgentEvent::TurnDone { .. })).await;
    let last = api.turn_requests().last().cloned().unwrap();
    assert_eq!(last.body["messages"][0]["content"][0]["type"], "compaction");
    assert_eq!(last.body["messages"][0]["content"][0]["signature"], "sig-compaction-1");
    let _ = agent.ops.send(Op::Quit);
}

/// On a server whose requests share one cache (llama.cpp, said by `/props`), a
/// summary written in the background never runs while a turn's request does: it
/// starts only once a turn is done, and one still running when the next turn's
/// request goes gives way (set aside, said why) instead of overflowing that cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_server_with_one_cache_a_background_summary_never_runs_with_a_turns_request() {
    let turns = 14;
    let props = serde_json::json!({"default_generation_settings": {"n_ctx": 32768}, "total_slots": 1});
    let api = MockApi::start_with_props(common::report_answers(turns), Some(props)).await;
    api.script_summaries((0..turns).map(|_| common::slow_summary(2_000)).collect());
    let mut settings = common::report_settings(AskPolicy::Approve);
    settings.compaction.background_at_percent = 50;
    settings.compaction.index_percent = 0;
    let mut agent = start_agent(&api, settings).await;
    let (mut running, mut started, mut gave_way) = (false, 0, 0);
    for turn in 0..turns {
        agent
            .ops
            .send(Op::Submit {
                text: common::report_request(turn),
            })
            .unwrap();
        loop {
            match until(&mut agent.events, |_| true).await {
                AgentEvent::Background { event } => match event {
                    BackgroundEvent::Started { .. } => {
                        running = true;
                        started += 1;
                    }
                    BackgroundEvent::Discarded { reason } => {
                        running = false;
                        gave_way += usize::from(reason.contains("share the server's one cache"));
                    }
                    _ => running = false,
                },
                AgentEvent::ModelCall { .. } => {
                    assert!(
                        !running,
                        "a background summary ran with the turn's request (turn {turn})"
                    );
                }
                AgentEvent::TurnDone { .. } => break,
                _ => {}
            }
        }
    }
    assert!(started > 0, "a background summary started between turns");
    assert!(gave_way > 0, "one gave way to a turn's request");
    let _ = agent.ops.send(Op::Quit);
}

/// `/summary` between turns, in the app: the review says what not applying does
/// between turns, and every answer, Esc and Ctrl+C included, ends ready (it used to
/// stay "thinking" for good); Esc leaves the summary ready, and the next request runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_review_between_turns_ends_ready_whatever_the_answer() {
    use crossterm::event::{KeyCode, KeyModifiers};
    let presses = [
        (KeyCode::Esc, KeyModifiers::NONE),
        (KeyCode::Char('c'), KeyModifiers::CONTROL),
        (KeyCode::Char('s'), KeyModifiers::CONTROL),
        (KeyCode::Char('r'), KeyModifiers::CONTROL),
    ];
    let api = MockApi::start(common::report_answers(40)).await;
    api.script_summaries((0..4).map(|_| common::slow_summary(50)).collect());
    let mut agent = start_agent(&api, common::report_settings(AskPolicy::Approve)).await;
    let mut outcome = Outcome::default();
    turns_until_a_summary_starts(&mut agent, &mut outcome).await;
    settle_background(&mut agent, &mut outcome).await;
    let mut driven = common::Driven::new(agent);
    for (code, modifiers) in presses {
        let mark = driven.seen.len();
        driven.send("/summary");
        driven.until_asked().await;
        let review = driven.app.state.turn.review().cloned().expect("the review");
        assert!(!review.in_turn);
        let screen = driven.draw();
        assert!(screen.contains("Esc closes it, nothing changes"), "{screen}");
        assert!(!screen.contains("this call goes over the limit"), "{screen}");
        driven.key(code, modifiers);
        let answered = driven
            .until_said(
                |event| matches!(event, AgentEvent::Answered { request_id } if *request_id == review.request_id),
            )
            .await;
        driven.until_ready(answered).await;
        assert_eq!(
            driven.app.state.turn.state(),
            scratchpad::tui::state::TurnState::Idle,
            "{code:?}"
        );
        let set_aside = driven.seen[mark..].iter().any(|event| {
            matches!(
                event,
                AgentEvent::Background {
                    event: BackgroundEvent::Discarded { .. }
                }
            )
        });
        assert_eq!(set_aside, code == KeyCode::Char('r'), "{code:?}");
        if code == KeyCode::Char('r') {
            // Set aside until the history grows: nothing to review for now.
            break;
        }
    }
    let mark = driven.seen.len();
    driven.send(&common::report_request(90));
    driven.until_ready(mark).await;
    assert_eq!(
        driven.last_outcome(),
        Some(scratchpad::protocol::TurnOutcome::Completed)
    );
}
