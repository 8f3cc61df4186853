//! `scratchpad simulate FILE`: replay a recorded conversation message by message
//! through `prepare` (before each model call, i.e. after each user message) and report
//! the estimate and the stages that fired at every step, as a table, JSON lines, or an
//! SVG timeline. Files the pipeline writes go to a temporary folder, not the workspace.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::compact::CompactCommandError;
use crate::cli::SimulateArgs;
use crate::compact::markers::{MessageKind, classify};
use crate::compact::{Archive, MemoryArchive};
use crate::compact::{CompactConfig, ExtractiveSummariser, Stage, prepare, short_count};
use crate::message::{Message, Role};
use crate::protocol::CallPoint;
use crate::session::{Record, read_journal};

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

/// Read a JSON array of messages, a transcript (JSONL of messages) or a session
/// journal (JSONL of records; the appended messages are replayed). A last line without
/// its newline counts only if it is whole; one cut short is an error, as is a file with
/// no messages: a replay of part of a recording would report steps that never were.
pub fn load_recording(path: &Path) -> Result<Vec<Message>, CompactCommandError> {
    let text = read_journal(path)?;
    let name = || path.display().to_string();
    if text.starts_with(b'[') {
        return crate::message::parse_history(text.into_bytes())
            .map_err(|source| CompactCommandError::Parse { path: name(), source });
    }
    let mut messages = Vec::new();
    let mut take = |bytes: &[u8]| -> Result<(), serde_json::Error> {
        if let Ok(record) = crate::json::from_slice::<Record>(bytes) {
            if let Record::Append { message } = record {
                messages.push(message);
            }
            return Ok(());
        }
        messages.push(crate::json::from_slice(bytes)?);
        Ok(())
    };
    for (line, bytes) in text.lines() {
        take(bytes).map_err(|source| CompactCommandError::Line {
            path: name(),
            line,
            source,
        })?;
    }
    if let Some(torn) = text.torn().filter(|tail| !tail.iter().all(u8::is_ascii_whitespace)) {
        take(torn).map_err(|source| {
            if crate::json::from_slice::<serde::de::IgnoredAny>(torn).is_ok() {
                // Whole JSON, just not a message: the same error as any other line.
                CompactCommandError::Line {
                    path: name(),
                    line: text.torn_line_number(),
                    source,
                }
            } else {
                CompactCommandError::Torn {
                    path: name(),
                    bytes: torn.len(),
                }
            }
        })?;
    }
    if messages.is_empty() {
        return Err(CompactCommandError::Empty(name()));
    }
    Ok(messages)
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

pub fn run(
    args: &SimulateArgs,
    config: &CompactConfig,
    out: &mut dyn Write,
) -> Result<Vec<SimStep>, CompactCommandError> {
    config.validate().map_err(CompactCommandError::Config)?;
    let recorded = load_recording(&args.file)?;
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
