//! Whether compaction pays off over a long session: the planted sessions of the
//! retention benchmark replayed message by message, `prepare` before every model call
//! (after each tool result and each request), at a 12,000-char limit (where the
//! retention benchmark's sessions need summaries). Printed per summariser: summaries
//! written, the mean they freed, the median model calls between them, the sizes of the
//! successive summaries and of the `[Compacted]` message (summary, index and frame)
//! from the first to the last, and how many summaries did not hold (the very next
//! model call needed another). With llama-server (`SCRATCHPAD_LLAMA_SERVER`, `_MODEL`,
//! `_TEMPLATE`) the summaries are a model's, asked to fold the one before.

use scratchpad::compact::{
    CompactConfig, ExtractiveSummariser, MemoryArchive, Sizes, Stage, Summariser, prepare_sized,
};
use scratchpad::history::planted::{self, OneLine};
use scratchpad::message::{Message, Role};

const SESSIONS: [(u64, usize); 3] = [(11, 120), (12, 160), (13, 200)];
const LIMIT: usize = 12_000;

#[derive(Default)]
struct Health {
    summaries: usize,
    freed: Vec<i64>,
    calls_between: Vec<usize>,
    summary_chars: Vec<usize>,
    compacted_chars: Vec<usize>,
    not_held: usize,
}

fn replay(messages: &[Message], request: &str, summariser: &mut dyn Summariser, health: &mut Health) {
    let config = CompactConfig {
        context_char_limit: scratchpad::compact::Limit::chars(LIMIT),
        ..CompactConfig::default()
    };
    let archive = MemoryArchive::new();
    let mut history: Vec<Message> = Vec::new();
    let mut calls = 0usize;
    let mut last_summary_call: Option<usize> = None;
    for message in messages {
        history.push(message.clone());
        // A model call follows every user-side message: a request or tool results.
        if message.role() != Role::User {
            continue;
        }
        let sizes = Sizes::of(&history, config.estimate);
        let prepared = prepare_sized(
            std::mem::take(&mut history),
            sizes,
            request,
            &scratchpad::compact::Context::new(&config, &archive),
            summariser,
        );
        history = prepared.messages;
        for event in prepared
            .events
            .iter()
            .filter(|e| e.stage == Stage::CompactHistory && e.replaced > 0)
        {
            health.summaries += 1;
            health.freed.push(event.chars_before as i64 - event.chars_after as i64);
            if let Some(last) = last_summary_call {
                let between = calls - last;
                health.calls_between.push(between);
                if between <= 1 {
                    health.not_held += 1;
                }
            }
            last_summary_call = Some(calls);
            health
                .summary_chars
                .push(event.summary.as_deref().map_or(0, |s| s.chars().count()));
            health
                .compacted_chars
                .push(history.first().map_or(0, |m| m.text().chars().count()));
        }
        calls += 1;
    }
}

fn median(values: &[usize]) -> usize {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}

fn report(name: &str, summariser: &mut dyn Summariser) {
    let mut health = Health::default();
    for (seed, rounds) in SESSIONS {
        let session = planted::session(seed, rounds);
        replay(&session.messages, &session.request, summariser, &mut health);
    }
    let mean = health.freed.iter().sum::<i64>() / (health.freed.len().max(1) as i64);
    let first_last = |values: &[usize]| match (values.first(), values.last()) {
        (Some(first), Some(last)) => format!("{first} → {last}"),
        _ => "-".into(),
    };
    println!(
        "| {name} | {} | {mean} | {} | {} | {} | {} |",
        health.summaries,
        median(&health.calls_between),
        first_last(&health.summary_chars),
        first_last(&health.compacted_chars),
        health.not_held
    );
}

fn main() {
    println!("sessions of {SESSIONS:?} (seed, rounds), replayed at a {LIMIT}-char limit");
    println!(
        "| summariser | summaries | mean freed (chars) | median model calls between | summary chars, first → last | [Compacted] chars, first → last | not held |"
    );
    println!("|---|---|---|---|---|---|---|");
    report("extractive", &mut ExtractiveSummariser);
    report("one fixed line", &mut OneLine);
    match llama::start() {
        Some((_server, mut summariser, _runtime)) => report("llama-server", &mut summariser),
        None => println!("(llama-server: not run; set SCRATCHPAD_LLAMA_SERVER, _MODEL and _TEMPLATE)"),
    }
}

#[path = "llama_peer.rs"]
mod llama;
