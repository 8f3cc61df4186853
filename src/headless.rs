//! `scratchpad -p "request"`: one request without the UI. Assistant text goes to
//! stdout (or, with `--events jsonl`, every agent event as a JSON line); the exit
//! status says whether the turn completed.

use std::io::Write;

use tokio::sync::mpsc::unbounded_channel;

use crate::agent::AskPolicy;
use crate::launch::Launch;
use crate::protocol::{AgentEvent, Op, TurnOutcome};

pub async fn run(launch: Launch, request: String, jsonl: bool, yes: bool) -> std::io::Result<TurnOutcome> {
    let (events_tx, mut events) = unbounded_channel();
    let (ops, ops_rx) = unbounded_channel();
    let ask = if yes { AskPolicy::Approve } else { AskPolicy::Refuse };
    let agent = launch.into_agent(ask, events_tx);
    let task = tokio::spawn(agent.run(ops_rx));
    let _ = ops.send(Op::Submit { text: request });
    let mut outcome = TurnOutcome::Failed;
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    while let Some(event) = events.recv().await {
        let mut out = stdout.lock();
        if jsonl {
            serde_json::to_writer(&mut out, &event)?;
            writeln!(out)?;
        } else {
            match &event {
                AgentEvent::TextDelta { text } => write!(out, "{text}")?,
                AgentEvent::AssistantMessage { .. } => writeln!(out)?,
                AgentEvent::Error { message } => writeln!(stderr.lock(), "error: {message}")?,
                AgentEvent::Compaction { event } => writeln!(stderr.lock(), "[{}]", event.summary_line())?,
                _ => {}
            }
        }
        out.flush()?;
        if let AgentEvent::TurnDone { outcome: done } = event {
            outcome = done;
            let _ = ops.send(Op::Quit);
        }
    }
    let _ = task.await;
    Ok(outcome)
}
