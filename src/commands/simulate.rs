//! `scratchpad simulate [FILE]`: the dry run of a compaction policy, writing nothing
//! and asking no model. By default it replays a recorded conversation message by
//! message through `prepare` (before each model call, i.e. after each user message)
//! and reports the estimate and the stages that fired at every step, as a table, JSON
//! lines, or an SVG timeline; what the pipeline writes stays in memory. With `--now` it
//! runs the pipeline once on the history as it stands and prints the receipts
//! (`compact --dry-run` is this, under its old name).

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::input::{CommandError, FromJournal, read_messages};
use crate::cli::SimulateArgs;
use crate::compact::markers::{MessageKind, classify};
use crate::compact::preview::{Preview, preview};
use crate::compact::{Archive, MemoryArchive};
use crate::compact::{CompactConfig, ExtractiveSummariser, Stage, StageEvent, prepare, short_count};
use crate::message::{Message, Role};
use crate::protocol::CallPoint;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimStep {
    pub step: usize,
    /// 1-based position of the recorded message after which `prepare` ran.
    pub message: usize,
    pub before: usize,
    pub after: usize,
    pub messages_after: usize,
    pub stages: Vec<(Stage, usize)>,
}

pub fn simulate(recorded: &[Message], config: &CompactConfig, store: &dyn Archive) -> Vec<SimStep> {
    let facts = crate::tools::session_facts();
    let mut history: Vec<Message> = Vec::new();
    let mut steps = Vec::new();
    let mut request = String::new();
    for (at, message) in recorded.iter().enumerate() {
        if let MessageKind::UserPrompt(text) = classify(message) {
            request = text;
        }
        history.push(message.clone());
        if message.role() != Role::User {
            continue;
        }
        let before = config.estimate.count(&history);
        let prepared = prepare(
            std::mem::take(&mut history),
            &request,
            &crate::compact::Context {
                config,
                store,
                facts: &facts,
            },
            &mut ExtractiveSummariser,
        );
        history = prepared.messages;
        steps.push(SimStep {
            step: steps.len() + 1,
            message: at + 1,
            before,
            after: prepared.sizes.total(),
            messages_after: history.len(),
            stages: prepared
                .events
                .iter()
                .filter(|e| e.replaced > 0)
                .map(|e| (e.stage, e.replaced))
                .collect(),
        });
    }
    steps
}

pub fn table(steps: &[SimStep], config: &CompactConfig) -> String {
    let mut out = format!(
        "limit {} chars, target {} chars, snip above {} messages\n{:>4}  {:>5}  {:>8}  {:>8}  {:>5}  stages\n",
        config.context_char_limit.chars,
        config.micro_target_chars(),
        config.snip_max_messages,
        "step",
        "msg",
        "before",
        "after",
        "msgs"
    );
    for step in steps {
        let stages = if step.stages.is_empty() {
            "-".to_string()
        } else {
            step.stages
                .iter()
                .map(|(stage, n)| format!("{stage}({n})"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        out.push_str(&format!(
            "{:>4}  {:>5}  {:>8}  {:>8}  {:>5}  {stages}\n",
            step.step,
            step.message,
            short_count(step.before),
            short_count(step.after),
            step.messages_after
        ));
    }
    out
}

/// `simulate --now`: the receipts of what compaction would do to the history in
/// `input` as it stands (a journal's as resuming it would give), one JSON line each on
/// `stdout`; nothing is written and no model is asked. Nothing to do is said on
/// `stderr`, where it cannot be taken for a receipt.
pub fn now(
    input: &Path,
    request: Option<&str>,
    config: &CompactConfig,
    workspace: &Path,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Vec<StageEvent>, CommandError> {
    config.validate().map_err(CommandError::Config)?;
    let messages = read_messages(input, FromJournal::History)?;
    let request = request.map_or_else(|| crate::compact::newest_request(&messages), str::to_string);
    let events = preview(
        &messages,
        &request,
        config,
        &crate::tools::session_facts(),
        workspace,
        &Preview::Prepare,
    );
    let mut out = std::io::BufWriter::new(stdout);
    for event in &events {
        super::compact::write_event(&mut out, event)?;
    }
    out.flush()?;
    if events.is_empty() {
        writeln!(
            stderr,
            "no stage would fire: {} of {} chars, {} of {} messages",
            short_count(crate::compact::estimate_chars(&messages)),
            short_count(config.context_char_limit.chars),
            messages.len(),
            config.snip_max_messages
        )?;
    }
    Ok(events)
}

/// The replay of the recording in `file`: its steps, printed as `args` asks.
pub fn run(
    args: &SimulateArgs,
    file: &Path,
    config: &CompactConfig,
    out: &mut dyn Write,
) -> Result<Vec<SimStep>, CommandError> {
    config.validate().map_err(CommandError::Config)?;
    let recorded = read_messages(file, FromJournal::EveryMessage)?;
    // Kept in memory: a simulation writes nothing.
    let store = MemoryArchive::new();
    let steps = simulate(&recorded, config, &store);
    if args.json {
        for step in &steps {
            serde_json::to_writer(&mut *out, step).map_err(std::io::Error::from)?;
            writeln!(out)?;
        }
    } else {
        out.write_all(table(&steps, config).as_bytes())?;
    }
    if let Some(plot) = &args.plot {
        let points: Vec<CallPoint> = steps
            .iter()
            .map(|s| CallPoint {
                before: Some(s.before),
                estimate: s.after,
                messages: s.messages_after,
                stages: s.stages.iter().map(|(stage, _)| *stage).collect(),
                ..CallPoint::default()
            })
            .collect();
        let svg = crate::timeline::svg(&points, config).map_err(std::io::Error::other)?;
        std::fs::write(plot, svg)?;
    }
    Ok(steps)
}
