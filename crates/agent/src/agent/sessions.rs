//! Moving the agent to another session of the workspace: one resumed from the picker,
//! or a fork of this session (or a relative) at a point, its parent left as it was.
//! The conversation moves; the workspace's files stay as they are.

use super::Agent;
use crate::protocol::{AgentEvent, ForkAt, Past};
use crate::session::{self, Journal, Record, Restored};

impl Agent {
    /// The folder of this workspace's journals: the one this session's journal is in.
    pub(super) fn sessions_folder(&self) -> Option<std::path::PathBuf> {
        self.conversation
            .journal()
            .and_then(|journal| journal.path().parent().map(std::path::Path::to_path_buf))
    }

    fn session_error(&self, message: impl Into<String>) {
        self.emit(AgentEvent::Error {
            message: message.into(),
        });
    }

    /// `/resume`: continue session `id` here; this one stays as it was saved.
    pub(super) fn resume_session(&mut self, id: &str) {
        if self.conversation.journal().is_some_and(|journal| journal.id() == id) {
            self.emit(AgentEvent::Notice {
                message: format!("session {id} is the one open"),
            });
            return;
        }
        let Some(folder) = self.sessions_folder() else {
            return self.session_error("this session keeps no journal, so no other can be opened from it");
        };
        let opened = session::find_in(&folder, Some(id)).and_then(|path| Journal::resume(&path));
        match opened {
            Ok((mut journal, restored)) => {
                if !restored.repairs.is_empty() {
                    let mended = journal
                        .append(&Record::Repair {
                            messages: restored.messages.clone(),
                            notes: restored.repairs.clone(),
                        })
                        .and_then(|()| journal.sync());
                    if let Err(error) = mended {
                        return self.session_error(error.to_string());
                    }
                }
                self.switch_to(journal, restored, None);
            }
            Err(error) => self.session_error(error.to_string()),
        }
    }

    /// A new session from `at` of session `id` (this one when `None`); the agent goes
    /// on in it, with the request the fork was made before given back to edit.
    pub(super) fn fork_session(&mut self, id: Option<&str>, at: &ForkAt) {
        let Some(folder) = self.sessions_folder() else {
            return self.session_error("this session keeps no journal, so it cannot be forked");
        };
        self.sync_journal();
        let parent = match id {
            Some(id) => session::find_in(&folder, Some(id)),
            None => self
                .conversation
                .journal()
                .map(|journal| journal.path().to_path_buf())
                .ok_or_else(|| session::SessionError::NoneFound(folder.clone())),
        };
        let forked = parent
            .map_err(session::ForkError::from)
            .and_then(|parent| session::fork(&parent, at, &self.store, self.settings.compaction.estimate));
        let forked = match forked {
            Ok(forked) => forked,
            Err(error) => return self.session_error(error.to_string()),
        };
        match session::restore(forked.journal.path()) {
            Ok(restored) => self.switch_to(forked.journal, restored, forked.request),
            Err(error) => self.session_error(error.to_string()),
        }
    }

    /// Continue in `journal`, whose history `restored` holds: what this session had
    /// (history, approvals, undo log, measured tokens) gives way to that one's.
    fn switch_to(&mut self, journal: Journal, restored: Restored, request: Option<String>) {
        self.discard_background("another session was opened here");
        self.approvals.clear();
        self.ledger.clear();
        self.compactions.facts.pinned = restored.pins;
        self.conversation
            .start_over(Some(journal), restored.messages, &restored.past);
        self.take_in_past(&restored.past);
        // The journal has not heard what serves the session yet.
        if self.server.served_recorded.take().is_some() {
            self.record_served();
        }
        self.emit(AgentEvent::Replay {
            past: restored.past,
            in_context: self.conversation.messages().len(),
        });
        for message in restored.repairs {
            self.emit(AgentEvent::Notice { message });
        }
        self.announce_session();
        if let Some(text) = request {
            self.emit(AgentEvent::EditRequest { text });
        }
        self.emit_context();
    }

    /// What a session's past tells the agent beside its undo log (which the
    /// conversation takes in): the files its stages kept (read back while they keep
    /// their hashes), the last measured call (the gauge's tokens until the next one)
    /// and where the session stands.
    pub(super) fn take_in_past(&mut self, past: &[Past]) {
        for item in past {
            if let Past::Stage { event } = item {
                self.store.recognise(&event.digests);
            }
        }
        // The newest call goes on naming its response to the server's cache check.
        let newest_call = past.iter().rev().find_map(|item| match item {
            Past::Call { point } => Some(point),
            _ => None,
        });
        self.server.cache_chain =
            super::cache_chain::CacheChain::resumed(newest_call.and_then(|point| point.response_id.clone()));
        if let Some(point) = past.iter().rev().find_map(|item| match item {
            Past::Call { point } if point.input_tokens.is_some() => Some(point),
            _ => None,
        }) {
            self.ledger.restore(point);
            // The count was taken of the history that call sent; what followed it (its
            // answer, results, a compaction or undo) moves it as a compaction would.
            let now = self.extent();
            if point.estimate != now.estimate {
                let measured = crate::accounting::Extent {
                    estimate: point.estimate,
                    units: point.request_units.unwrap_or(now.units),
                };
                self.ledger.changed(measured, now);
            }
        }
        self.conversation.tally = session::Tally::of_past(past);
    }
}
