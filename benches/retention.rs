//! Retention: what compaction keeps of eleven kinds of planted fact. Six seeded
//! sessions (30 to 120 rounds of read_file, bash and edit_file) go through the real
//! `prepare` at the largest limit where stage 4 fires, with (a) the extractive
//! summariser, (b) a summariser that answers one fixed line, so only what scratchpad
//! keeps itself counts, and (c) llama-server when `SCRATCHPAD_LLAMA_SERVER`,
//! `SCRATCHPAD_LLAMA_MODEL` and `SCRATCHPAD_LLAMA_TEMPLATE` are set (as `.ci/run` sets
//! them). Printed per kind: reached the summary request, in context after compaction,
//! one read away (in context or in a file the context names), lost. The "before" row
//! is what the seed's summary input (the history as the recoverable stages left it,
//! its first quarter and its end) would have carried.

use scratchpad::compact::{
    CompactConfig, ExtractiveSummariser, MemoryArchive, Sizes, Summariser, prepare_recoverable, render,
};
use scratchpad::history::planted::{self, FactKind, Measured, Planted};
use scratchpad::text::prefix_chars;

/// Summary input for an 8192-token window with 512 tokens of reply, at the 3 chars a
/// token that llama's tokenizer gives this text at worst.
const LLAMA_INPUT_CHARS: usize = 20_000;

const SESSIONS: [(u64, usize); 6] = [(1, 30), (2, 45), (3, 60), (4, 80), (5, 100), (6, 120)];

fn sessions() -> Vec<(Planted, CompactConfig)> {
    SESSIONS
        .iter()
        .filter_map(|&(seed, rounds)| {
            let session = planted::session(seed, rounds);
            let config = planted::limit_where_stage_four_fires(&session, &CompactConfig::default())?;
            Some((session, config))
        })
        .collect()
}

/// The seed's summary input: the history after the recoverable stages, as text,
/// its first quarter and its end within `summary_input_chars`.
fn seeds_input(session: &Planted, config: &CompactConfig) -> String {
    let archive = MemoryArchive::new();
    let sizes = Sizes::of(&session.messages, config.estimate);
    let thinned = prepare_recoverable(
        session.messages.clone(),
        sizes,
        &scratchpad::compact::Context::new(config, &archive),
    )
    .messages;
    let text = render::to_text(&thinned);
    let total = text.chars().count();
    let cap = config.summary_input_chars;
    if total <= cap {
        return text;
    }
    let head = cap / 4;
    let tail = cap - head;
    let tail_text: String = text.chars().skip(total - tail).collect();
    format!("{}{tail_text}", prefix_chars(&text, head))
}

fn table(name: &str, measured: &[Measured], before: Option<&[(FactKind, bool)]>) {
    println!("\n{name}\n{}", planted::table(measured));
    if let Some(before) = before {
        let reached = before.iter().filter(|(_, reached)| *reached).count();
        println!(
            "the seed's summary input would have carried {reached}/{} ({}%)",
            before.len(),
            reached * 100 / before.len().max(1)
        );
    }
    let limits: Vec<String> = measured.iter().map(|m| m.limit.to_string()).collect();
    println!("limits where stage 4 fires: {}", limits.join(", "));
}

/// (b) at every limit where stage 4 fires, not only the largest: the planted paths,
/// commands and errors (what the index keeps) in context after a one-line summary.
fn every_limit() {
    println!("\n(b) at every limit where stage 4 fires: paths, commands and errors in context");
    for limit in planted::STAGE_FOUR_LIMITS {
        let (mut kept, mut all, mut sessions) = (0, 0, 0);
        for &(seed, rounds) in &SESSIONS {
            let session = planted::session(seed, rounds);
            let config = CompactConfig {
                context_char_limit: scratchpad::compact::Limit::chars(limit),
                ..CompactConfig::default()
            };
            let measured = planted::measure(&session, &config, &mut planted::OneLine);
            if !measured.stages.contains(&scratchpad::compact::Stage::CompactHistory) {
                continue;
            }
            sessions += 1;
            for (_, standing) in measured.standings.iter().filter(|(fact, _)| fact.kind.indexed()) {
                all += 1;
                kept += usize::from(standing.in_context);
            }
        }
        if sessions > 0 {
            println!(
                "{limit:>6} chars: {kept}/{all} ({}%) over {sessions} sessions",
                kept * 100 / all.max(1)
            );
        }
    }
}

fn main() {
    let sessions = sessions();
    let before: Vec<(FactKind, bool)> = sessions
        .iter()
        .flat_map(|(session, config)| {
            let input = seeds_input(session, config);
            session
                .facts
                .iter()
                .map(move |fact| (fact.kind, input.contains(&fact.needle)))
                .collect::<Vec<_>>()
        })
        .collect();
    let run = |summariser: &mut dyn Summariser, input_cap: Option<usize>| -> Vec<Measured> {
        sessions
            .iter()
            .map(|(session, config)| {
                let mut config = config.clone();
                config.summary_input_chars = input_cap.unwrap_or(config.summary_input_chars);
                planted::measure(session, &config, summariser)
            })
            .collect()
    };
    table(
        "(a) extractive summariser",
        &run(&mut ExtractiveSummariser, None),
        Some(&before),
    );
    table("(b) a fixed one-line summary", &run(&mut planted::OneLine, None), None);
    every_limit();
    match llama::start() {
        Some((server, mut summariser, _runtime)) => {
            // The summary input sized to the 8192-token window (as the agent sizes it
            // to a model's), so that what reached the request is what the model read.
            table("(c) llama-server", &run(&mut summariser, Some(LLAMA_INPUT_CHARS)), None);
            drop(server);
        }
        None => println!("\n(c) llama-server: not run (set SCRATCHPAD_LLAMA_SERVER, _MODEL and _TEMPLATE)"),
    }
}

#[path = "llama_peer.rs"]
mod llama;
