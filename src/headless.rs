//! `scratchpad -p "request"`: one request without the UI. Each finished assistant
//! message goes to stdout, stripped of terminal escape sequences (or, with `--events jsonl`, every agent event as a JSON line); the exit
//! status says whether the turn completed. Ctrl+C (SIGINT), SIGTERM and SIGHUP cancel
//! the turn.

use std::io::Write;

use tokio::sync::mpsc::unbounded_channel;

use crate::agent::AskPolicy;
use crate::launch::Launch;
use crate::protocol::{AgentEvent, Op, ToolStatus, TurnOutcome};
use crate::terminal_text::terminal_safe;

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
    // Ctrl+C cancels the turn like Esc in the app: the running command's process group
    // is killed and every call still gets its result before we exit.
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    let terminated = crate::signals::termination();
    tokio::pin!(terminated);
    let mut interrupted = false;
    let mut reader_gone = false;
    // Streamed text waits here until its message is complete: a retried stream then
    // never leaves half a message on stdout.
    let mut pending = String::new();
    loop {
        let event = tokio::select! {
            event = events.recv() => match event {
                Some(event) => event,
                None => break,
            },
            _ = &mut interrupt, if !interrupted => {
                interrupted = true;
                let _ = ops.send(Op::Cancel);
                continue;
            }
            // SIGTERM or SIGHUP: the same, and the turn's end then ends the run.
            _ = &mut terminated, if !interrupted => {
                interrupted = true;
                let _ = ops.send(Op::Cancel);
                continue;
            }
        };
        if !reader_gone {
            match show(&event, jsonl, &mut pending, &stdout, &stderr) {
                Ok(()) => {}
                // The reader went away (`scratchpad -p … | head`): nobody is left to show
                // the turn to, so it stops, as Ctrl+C stops it, and that is a quiet end.
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                    reader_gone = true;
                    let _ = ops.send(Op::Cancel);
                }
                Err(error) => return Err(error),
            }
        }
        if let AgentEvent::TurnDone { outcome: done, .. } = event {
            outcome = if reader_gone { TurnOutcome::Completed } else { done };
            let _ = ops.send(Op::Quit);
        }
    }
    let _ = task.await;
    Ok(outcome)
}

/// One event as `-p` shows it: assistant messages on stdout, what happened on stderr;
/// or every event as a JSON line.
fn show(
    event: &AgentEvent,
    jsonl: bool,
    pending: &mut String,
    stdout: &std::io::Stdout,
    stderr: &std::io::Stderr,
) -> std::io::Result<()> {
    let mut out = stdout.lock();
    if jsonl {
        crate::json::to_writer(&mut out, event)?;
        writeln!(out)?;
    } else {
        match event {
            AgentEvent::TextDelta { text, .. } => pending.push_str(text),
            AgentEvent::StreamReset {
                attempt,
                delay_ms,
                reason,
                ..
            } => {
                // Said at once, each time: a server that does not answer is not silence.
                pending.clear();
                writeln!(
                    stderr.lock(),
                    "note: {} (attempt {attempt} failed; retrying in {:.1} s)",
                    terminal_safe(reason),
                    *delay_ms as f64 / 1000.0
                )?;
            }
            AgentEvent::AssistantMessage { .. } => {
                writeln!(out, "{}", terminal_safe(&std::mem::take(pending)))?;
            }
            AgentEvent::Error { message } => writeln!(stderr.lock(), "error: {}", terminal_safe(message))?,
            AgentEvent::SessionStarted {
                limit_note: Some(note),
                limit_warning: true,
                ..
            } => writeln!(stderr.lock(), "warning: {}", terminal_safe(note))?,
            AgentEvent::Notice { message } => writeln!(stderr.lock(), "note: {}", terminal_safe(message))?,
            AgentEvent::Background { event } => writeln!(stderr.lock(), "note: {}", terminal_safe(&event.line()))?,
            AgentEvent::Compaction { event } => writeln!(stderr.lock(), "[{}]", event.report_line())?,
            // A pending comparison says nothing yet; the next call's answer will.
            AgentEvent::Cache { report } if report.missed() => writeln!(stderr.lock(), "note: {}", report.line())?,
            AgentEvent::Instructions { note } => {
                let mut stderr = stderr.lock();
                if !note.files.is_empty() || !note.changes.is_empty() {
                    writeln!(stderr, "note: {}", terminal_safe(&note.headline()))?;
                }
                for problem in &note.problems {
                    writeln!(stderr, "note: {}", terminal_safe(problem))?;
                }
            }
            AgentEvent::ToolFinished {
                name,
                status: ToolStatus::Refused,
                output,
                ..
            } => writeln!(stderr.lock(), "{name}: {}", terminal_safe(output))?,
            AgentEvent::TurnDone {
                outcome: TurnOutcome::Cancelled,
                ..
            } => writeln!(stderr.lock(), "cancelled")?,
            _ => {}
        }
    }
    out.flush()?;
    Ok(())
}
