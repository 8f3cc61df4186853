//! Waiting on work the user may interrupt: a cancel or a quit ends the wait, and any
//! other op that arrives meanwhile is answered as busy.

use super::*;

pub(super) enum Interrupted {
    Cancel,
    Quit,
}

/// Await `work` unless the user cancels or quits first; other ops that arrive meanwhile
/// are answered as "busy".
pub(super) async fn unless_interrupted<T>(
    ops: &mut UnboundedReceiver<Op>,
    events: &UnboundedSender<AgentEvent>,
    inspect: &(dyn Fn() -> AgentEvent + Sync),
    work: impl Future<Output = T>,
) -> Result<T, Interrupted> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            out = &mut work => return Ok(out),
            op = ops.recv() => match op {
                None | Some(Op::Quit) => return Err(Interrupted::Quit),
                Some(Op::Cancel) => return Err(Interrupted::Cancel),
                Some(Op::Permission { .. }) => {}
                // The breakdown only reads: it is answered while the turn runs.
                Some(Op::Inspect) => {
                    let _ = events.send(inspect());
                }
                Some(_) => {
                    let _ = events.send(AgentEvent::Error {
                        message: "A turn is running: wait for it to finish or press Esc to cancel it.".into(),
                    });
                }
            },
        }
    }
}
