//! Where the agent is in its turns: the running (or last) turn, whether one runs now,
//! whether the user quit, the model calls of this run, and the id the next question
//! to the user takes. A turn's events carry its id; what happens while none runs is
//! between turns (`/compact`, an undo).

use crate::protocol::TurnId;

pub(super) struct TurnState {
    /// The running (or last) turn: its events carry it.
    pub(super) current: TurnId,
    /// A turn runs now (else what happens is between turns).
    pub(super) running: bool,
    /// The user quit: the agent stops serving ops.
    pub(super) quit: bool,
    /// Model calls made in this run of the session.
    pub(super) model_calls: usize,
    /// The id of the next question put to the user (permission, summarise, review),
    /// so an answer is matched to its question.
    next_request_id: u64,
}

impl Default for TurnState {
    fn default() -> Self {
        TurnState {
            current: TurnId::default(),
            running: false,
            quit: false,
            model_calls: 0,
            next_request_id: 1,
        }
    }
}

impl TurnState {
    /// A fresh id for a question to the user.
    pub(super) fn next_question(&mut self) -> u64 {
        let id = self.next_request_id;
        self.next_request_id += 1;
        id
    }
}
