//! The wait at the limit, with and without the background summary: a scripted 40-turn
//! session against the in-process mock API, whose summary replies take 5 s, crossing
//! the limit twice. The user reads for 1.5 s between turns (time a summary written in
//! the background uses). Printed: the wall time the turns spent in stage 4 (its own
//! time, a model call when it summarises, plus any wait for a background summary),
//! both ways in one run. One run of each, not a criterion sample: each takes a minute.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::{MockApi, start_agent, until};
use scratchpad::agent::AskPolicy;
use scratchpad::compact::Stage;
use scratchpad::protocol::{AgentEvent, Op};

const TURNS: usize = 40;
const SUMMARY_MS: u64 = 5_000;
const READING_MS: u64 = 1_500;

/// (time the turns spent in stage 4, stage 4 firings, of which swaps, whole run)
async fn session(background_at_percent: usize) -> (Duration, usize, usize, Duration) {
    let api = MockApi::start(common::report_answers(TURNS)).await;
    api.script_summaries((0..TURNS).map(|_| common::slow_summary(SUMMARY_MS)).collect());
    let mut settings = common::report_settings(AskPolicy::Approve);
    settings.compaction.background_at_percent = background_at_percent;
    let mut agent = start_agent(&api, settings).await;
    let started = Instant::now();
    let (mut waited, mut fired, mut swaps) = (Duration::ZERO, 0, 0);
    for turn in 0..TURNS {
        let request = common::report_request(turn);
        agent.ops.send(Op::Submit { text: request }).unwrap();
        loop {
            match until(&mut agent.events, |e| {
                matches!(e, AgentEvent::Compaction { .. } | AgentEvent::TurnDone { .. })
            })
            .await
            {
                AgentEvent::Compaction { event } if event.stage == Stage::CompactHistory => {
                    fired += 1;
                    waited += Duration::from_millis(event.took_ms);
                    if let Some(swapped) = &event.swapped {
                        swaps += 1;
                        waited += Duration::from_millis(swapped.waited_ms);
                    }
                }
                AgentEvent::TurnDone { .. } => break,
                _ => {}
            }
        }
        if background_at_percent > 0 {
            tokio::time::sleep(Duration::from_millis(READING_MS)).await;
        }
    }
    let _ = agent.ops.send(Op::Quit);
    (waited, fired, swaps, started.elapsed())
}

fn main() {
    let runtime = scratchpad::launch::runtime().expect("runtime");
    // `cargo bench` passes `--bench`; a plain `cargo test --benches` passes nothing and
    // must not spend two minutes here.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("background_wait: run with `cargo bench --bench background`");
        return;
    }
    for (name, percent) in [("background on (70%)", 70), ("background off", 0)] {
        let (waited, fired, swaps, whole) = runtime.block_on(session(percent));
        println!(
            "background_wait/{name}: {TURNS} turns, stage 4 fired {fired} times ({swaps} swapped): \
             the turns waited {:.2} s on compaction (run {:.1} s)",
            waited.as_secs_f64(),
            whole.as_secs_f64()
        );
    }
}
