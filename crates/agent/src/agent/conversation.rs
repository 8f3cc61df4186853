//! The conversation a session holds: its history, the history's size (per message,
//! as the estimate counts it) and token-like units, the journal, and the stages that
//! changed the history (the log `/undo` works back through). This is the only thing
//! that changes any of them, and each change is journaled and reflected in the sizes
//! in the same call, so they cannot drift apart.
//!
//! A journal that fails to write does not stop the session: the change holds in
//! memory, and the error is returned for the agent to say.

use crate::accounting::units::{history_units, message_units};
use crate::compact::{EstimateMode, Sizes, StageEvent};
use crate::message::Message;
use crate::session::{Journal, Past, Record, SessionError};

/// What writing a change to the journal came to (there may be no journal).
pub(super) type Journaled = Result<(), SessionError>;

pub(super) struct Conversation {
    messages: Vec<Message>,
    /// Per-message sizes of `messages`: the estimate.
    sizes: Sizes,
    /// Token-like units of `messages`: what the token figure follows through a
    /// compaction.
    units: usize,
    journal: Option<Journal>,
    /// The stages that changed the history and can be undone, oldest first.
    stage_log: Vec<StageEvent>,
    mode: EstimateMode,
    /// Counts the changes to `messages`: a count of the request made at one revision
    /// holds until the next.
    revision: u64,
    /// Where the session stands, journaled at the end of each turn for the session list.
    pub(super) tally: crate::session::Tally,
}

impl Conversation {
    pub(super) fn new(messages: Vec<Message>, journal: Option<Journal>, mode: EstimateMode) -> Self {
        Conversation {
            sizes: Sizes::of(&messages, mode),
            units: history_units(&messages),
            messages,
            journal,
            stage_log: Vec::new(),
            mode,
            revision: 0,
            tally: crate::session::Tally::default(),
        }
    }

    pub(super) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Which state of the history this is: any change gives a new one.
    pub(super) fn revision(&self) -> u64 {
        self.revision
    }

    pub(super) fn sizes(&self) -> &Sizes {
        &self.sizes
    }

    /// The estimate of the history, in characters.
    pub(super) fn estimate(&self) -> usize {
        self.sizes.total()
    }

    /// Token-like units of the history (the fixed part not included).
    pub(super) fn units(&self) -> usize {
        self.units
    }

    /// The stages that can be undone, oldest first.
    pub(super) fn stage_log(&self) -> &[StageEvent] {
        &self.stage_log
    }

    pub(super) fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// A message joins the history.
    pub(super) fn append(&mut self, message: Message) -> Journaled {
        self.sizes.push(&message);
        self.units += message_units(&message);
        let journaled = self.write(&Record::Append {
            message: message.clone(),
        });
        self.messages.push(message);
        self.revision += 1;
        journaled
    }

    /// A whole new history in place of this one, journaled as such.
    pub(super) fn replace(&mut self, messages: Vec<Message>) -> Journaled {
        let sizes = Sizes::of(&messages, self.mode);
        self.replace_sized(messages, sizes)
    }

    /// [`Conversation::replace`] with the new history's size table already made.
    pub(super) fn replace_sized(&mut self, messages: Vec<Message>, sizes: Sizes) -> Journaled {
        let journaled = self.write(&Record::Replace {
            messages: messages.clone(),
        });
        self.put(messages, sizes);
        journaled
    }

    /// The history after a run of compaction stages, and what they did: each stage
    /// that changed it gets its id, joins the undo log when it can be undone, and is
    /// journaled after the history it left. The events are given back with their ids.
    pub(super) fn compacted(
        &mut self,
        messages: Vec<Message>,
        sizes: Sizes,
        events: Vec<StageEvent>,
    ) -> (Vec<StageEvent>, Journaled) {
        if events.iter().all(|event| event.replaced == 0) {
            // Nothing the stages did changed a message: nothing to journal or undo, and
            // the history is the same revision (a count of its request still holds).
            self.messages = messages;
            self.sizes = sizes;
            return (events, Ok(()));
        }
        let mut journaled = self.replace_sized(messages, sizes);
        let mut named = Vec::with_capacity(events.len());
        for mut event in events {
            event.id = crate::session::new_stage_id();
            if event.can_be_undone() {
                self.stage_log.push(event.clone());
            }
            journaled = journaled.and(self.write(&Record::Stage {
                event: Box::new(event.clone()),
            }));
            named.push(event);
        }
        (named, journaled.and(self.sync()))
    }

    /// The newest stage undone: `messages` is the history as it was before it.
    pub(super) fn undo_newest(&mut self, messages: Vec<Message>) -> Journaled {
        let Some(event) = self.stage_log.pop() else {
            return Ok(());
        };
        let journaled = self
            .write(&Record::Undo {
                stage: event.stage,
                undid: event.id,
                messages: messages.clone(),
            })
            .and(self.sync());
        let sizes = Sizes::of(&messages, self.mode);
        self.put(messages, sizes);
        journaled
    }

    /// Mend a history that would not be valid to send; the notes say what was mended.
    pub(super) fn repair(&mut self) -> (Vec<String>, Journaled) {
        let mut messages = self.messages.clone();
        let notes = crate::compact::pairing::repair(&mut messages);
        let journaled = self.write(&Record::Repair {
            messages: messages.clone(),
            notes: notes.clone(),
        });
        let sizes = Sizes::of(&messages, self.mode);
        self.put(messages, sizes);
        (notes, journaled)
    }

    /// Another conversation in place of this one: a resumed or forked session's (its
    /// `past` gives the undo log), or a new empty one. The journal given replaces this
    /// one, which is left; with none, this journal goes on.
    pub(super) fn start_over(&mut self, journal: Option<Journal>, messages: Vec<Message>, past: &[Past]) {
        if let Some(journal) = journal
            && let Some(left) = self.journal.replace(journal)
        {
            left.leave();
        }
        let sizes = Sizes::of(&messages, self.mode);
        self.put(messages, sizes);
        self.stage_log.clear();
        self.take_in_stages(past);
    }

    /// The stages of a session's past that undo can act on.
    pub(super) fn take_in_stages(&mut self, past: &[Past]) {
        for item in past {
            match item {
                Past::Stage { event } if event.can_be_undone() => self.stage_log.push((**event).clone()),
                Past::Undo { .. } => {
                    self.stage_log.pop();
                }
                _ => {}
            }
        }
    }

    /// A record that leaves the history as it is: a note the chat showed, a pin, a
    /// model call, a tally, what serves the session.
    pub(super) fn note(&mut self, record: Record) -> Journaled {
        debug_assert!(
            matches!(
                record,
                Record::Shown { .. } | Record::Pin { .. } | Record::Call(_) | Record::Tally(_) | Record::Served { .. }
            ),
            "a record that changes the history goes through its own method"
        );
        self.write(&record)
    }

    /// Everything journaled so far on disk.
    pub(super) fn sync(&mut self) -> Journaled {
        self.journal.as_mut().map_or(Ok(()), Journal::sync)
    }

    /// The session ends: its journal is let go (one nobody sent a request in leaves
    /// nothing behind), and the history given back.
    pub(super) fn end(mut self) -> (Vec<Message>, Journaled) {
        let synced = self.sync();
        if let Some(journal) = self.journal.take() {
            journal.leave();
        }
        (self.messages, synced)
    }

    fn write(&mut self, record: &Record) -> Journaled {
        self.journal.as_mut().map_or(Ok(()), |journal| journal.append(record))
    }

    fn put(&mut self, messages: Vec<Message>, sizes: Sizes) {
        self.units = history_units(&messages);
        self.messages = messages;
        self.sizes = sizes;
        self.revision += 1;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::compact::{Stage, StageEvent};

    #[derive(Clone, Debug)]
    enum Change {
        Append(bool, usize),
        Replace(usize),
        Compact(bool),
        Undo,
        Repair,
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            4 => (any::<bool>(), 0usize..300).prop_map(|(user, length)| Change::Append(user, length)),
            1 => (0usize..4).prop_map(Change::Replace),
            2 => any::<bool>().prop_map(Change::Compact),
            1 => Just(Change::Undo),
            1 => Just(Change::Repair),
        ]
    }

    fn event(changed: bool) -> StageEvent {
        let mut event = StageEvent::start(Stage::CompactHistory, 3, 100, String::new());
        event.replaced = usize::from(changed);
        event
    }

    proptest! {
        /// Whatever changes the conversation goes through, its sizes and units are
        /// those of its history, its undo log holds the live compactions, and its
        /// journal replays to the same history.
        #[test]
        fn sizes_units_undo_log_and_journal_follow_every_change(changes in proptest::collection::vec(change(), 1..30)) {
            let dir = tempfile::tempdir().unwrap();
            let journal = Journal::create(dir.path(), "demo", "offline-demo").unwrap();
            let path = journal.path().to_path_buf();
            let mode = EstimateMode::default();
            let mut conversation = Conversation::new(Vec::new(), Some(journal), mode);
            // The history before each live compaction, newest last: what undo restores.
            let mut before_compactions: Vec<Vec<Message>> = Vec::new();
            for change in changes {
                match change {
                    Change::Append(user, length) => {
                        let text = "x".repeat(length);
                        let message = if user { Message::user_text(text) } else { Message::assistant_text(text) };
                        conversation.append(message).unwrap();
                    }
                    Change::Replace(dropped) => {
                        let kept = conversation.messages().iter().skip(dropped).cloned().collect();
                        conversation.replace(kept).unwrap();
                    }
                    Change::Compact(changed) => {
                        // A stage that changed nothing gives the history back as it was.
                        let before = conversation.messages().to_vec();
                        let after = if changed {
                            vec![Message::user_text("[Compacted] the story so far")]
                        } else {
                            before.clone()
                        };
                        let sizes = Sizes::of(&after, mode);
                        let (events, journaled) = conversation.compacted(after, sizes, vec![event(changed)]);
                        journaled.unwrap();
                        prop_assert_eq!(events.len(), 1);
                        prop_assert_eq!(!events[0].id.is_empty(), changed, "ids only for what is journaled");
                        if changed {
                            before_compactions.push(before);
                        }
                    }
                    Change::Undo => {
                        if let Some(before) = before_compactions.pop() {
                            conversation.undo_newest(before).unwrap();
                        }
                    }
                    Change::Repair => {
                        conversation.repair().1.unwrap();
                    }
                }
                prop_assert_eq!(conversation.sizes(), &Sizes::of(conversation.messages(), mode));
                prop_assert_eq!(conversation.units(), history_units(conversation.messages()));
                prop_assert_eq!(conversation.stage_log().len(), before_compactions.len());
                // Replayed as written, before resume mends anything.
                let text = crate::session::read_journal(&path).unwrap();
                let mut replay = crate::session::Replay::new(&text);
                for (number, line) in text.lines() {
                    replay.feed(number, line);
                }
                prop_assert_eq!(replay.messages(), conversation.messages());
            }
        }
    }
}
