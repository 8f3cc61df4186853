//! `scratchpad simulate FILE`: replay a recorded conversation message by message
//! through `prepare` (before each model call, i.e. after each user message) and report
//! the estimate and the stages that fired at every step, as a table, JSON lines, or an
//! SVG timeline. Files the pipeline writes go to a temporary folder, not the workspace.

use std::io::Write;

use serde::Serialize;

use super::input::{CommandError, FromJournal, read_messages};
use crate::cli::SimulateArgs;
use crate::compact::markers::{MessageKind, classify};
use crate::compact::{Archive, MemoryArchive};
use crate::compact::{CompactConfig, ExtractiveSummariser, Stage, prepare, short_count};
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
            config,
            store,
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
        config.context_char_limit,
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

pub fn run(args: &SimulateArgs, config: &CompactConfig, out: &mut dyn Write) -> Result<Vec<SimStep>, CommandError> {
    config.validate().map_err(CommandError::Config)?;
    let recorded = read_messages(&args.file, FromJournal::EveryMessage)?;
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
