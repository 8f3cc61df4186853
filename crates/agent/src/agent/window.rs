//! The model's window as the server tells it: asked again while the server has not
//! answered, journaled when it is news, and the limit following it.

use tokio::sync::mpsc::UnboundedReceiver;

use super::Agent;
use crate::protocol::{AgentEvent, Op, Window, WindowSource};
use crate::session::Record;

impl Agent {
    /// A limit decision changed: the pipeline uses the new limit from the next call
    /// (the ledger keeps it; [`Agent::pipeline_config`] reads it there).
    pub(super) fn apply_limit(&mut self, note: Option<String>) {
        if let Some(message) = note {
            self.emit(AgentEvent::Notice { message });
        }
    }

    /// Ask a server that did not answer at the start again: once it does, its window
    /// and model replace the configured ones, said in a notice and in the session
    /// line. One that still does not answer is waited for (its health polled), so what
    /// it says applies to the very request the turn is about to send; `Err` when the
    /// user cancelled the wait.
    pub(super) async fn discover_again(&mut self, ops: &mut UnboundedReceiver<Op>) -> Result<(), super::Interrupted> {
        if !self.server.rediscover {
            return Ok(());
        }
        let mut facts = self.provider.discover().await;
        if let Some(why) = &facts.unreachable {
            self.emit(AgentEvent::StreamReset {
                turn: self.turns.current,
                attempt: 1,
                delay_ms: u64::try_from(crate::provider::retry::HEALTH_POLL.as_millis()).unwrap_or(u64::MAX),
                reason: format!("{why}; waiting for it to answer"),
            });
            let provider = self.provider.clone();
            let inspect = || self.breakdown();
            let up = super::unless_interrupted(ops, &self.events, &inspect, provider.wait_until_up()).await?;
            if up {
                facts = self.provider.discover().await;
            }
        }
        self.learn_facts(facts);
        Ok(())
    }

    /// What a server said about itself once it answered: its model and window.
    fn learn_facts(&mut self, facts: crate::provider::ServerFacts) {
        self.server.rediscover = facts.unreachable.is_some();
        if facts.llama_cpp {
            self.background.when_idle = true;
            self.server.count.set_asks(true);
        }
        if facts.model.is_some() || facts.window.is_some() {
            self.record_served();
        }
        let Some(window) = facts.window else { return };
        self.learn_window(window, "the server answers now");
    }

    /// Journal what the server said it serves, when that is news to the journal.
    pub(super) fn record_served(&mut self) {
        let window = self.ledger.window();
        let window_tokens = matches!(window.source, WindowSource::Server { .. }).then_some(window.tokens);
        let served = (self.provider.model().to_string(), window_tokens);
        if self.server.served_recorded.as_ref() == Some(&served) {
            return;
        }
        self.note(Record::Served {
            model: served.0.clone(),
            window_tokens: served.1,
        });
        self.server.served_recorded = Some(served);
    }

    /// The server told the window (`how`): the limit follows it, and the user is told.
    pub(super) fn learn_window(&mut self, window: Window, how: &str) {
        if window.tokens == self.ledger.window().tokens {
            return;
        }
        let note = self.ledger.set_window(window.clone());
        self.apply_limit(note);
        self.record_served();
        self.emit(AgentEvent::Notice {
            message: format!(
                "{how}: its window is {} tokens ({}), model {}; the limit is now {} chars",
                window.tokens,
                window.source,
                self.provider.model(),
                crate::compact::short_count(self.ledger.limit().chars)
            ),
        });
        self.announce_session();
        self.emit_context();
    }
}
