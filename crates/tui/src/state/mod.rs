//! The app state, built only from agent events (so it can be tested without a
//! terminal), plus what the user is doing with the screen. `cells` are what the chat
//! and the tools pane show; `turn` is where the running turn is and what it asks.

mod cells;
mod reduce;
mod replay;
mod turn;

use std::time::{Duration, Instant};

use crate::compact::markers::{MessageKind, classify};
use crate::compact::{Stage, StageEvent};
use crate::context_map::ContextBreakdown;
use crate::message::{ContentBlock, Message};
use crate::protocol::CompactionRequester;
use crate::protocol::{AgentEvent, BackgroundEvent, CallPoint, ContextStatus, Past, ToolStatus, TurnId, TurnOutcome};
use crate::provider::Usage;
use crate::terminal_text::screen_safe;

pub use cells::{CallState, ChatEntry, Compaction, MarkerRun, OUTPUT_PREVIEW_LINES, OutputPreview, ToolCall};
pub use turn::{PermissionPrompt, Question, ReviewPrompt, SessionInfo, Turn, TurnState};

#[derive(Debug, Default)]
pub struct AppState {
    pub chat: Vec<ChatEntry>,
    /// Bumped whenever `chat[i]` changes, so wrapped lines can be cached.
    pub revisions: Vec<u64>,
    /// The last revision handed out; see [`AppState::push`].
    next_revision: u64,
    pub tools: Vec<ToolCall>,
    pub context: Option<ContextStatus>,
    pub timeline: Vec<CallPoint>,
    /// A summary being written in the background: since when, and the characters of
    /// it streamed so far.
    pub background_summary: Option<(Instant, usize)>,
    pub session: SessionInfo,
    /// Where the turn is and what it asks: the one place that decides it.
    pub turn: Turn,
    /// The newest turn the agent started: streamed text of any other is stale.
    current_turn: Option<TurnId>,
    /// Requests started so far, numbering the tool calls' turns.
    pub turns: usize,
    pub banner: Option<String>,
    pub usage: Option<Usage>,
    pub breakdown: Option<ContextBreakdown>,
    /// Where each file the pipeline wrote came from, for the browser.
    pub written_by: Vec<(String, Stage)>,
    /// The firings that undo can still put back, oldest first, as (chat entry, member
    /// of its marker): the agent's stage log as the chat shows it.
    undoable: Vec<(usize, usize)>,
    /// A request given back to edit (a fork made before it), for the prompt to take.
    pub edit_request: Option<String>,
    /// The pipeline's newest marker, which a next event of its stage joins until the
    /// user does something (see [`AppState::add_marker`]).
    joins_marker: Option<usize>,
    /// Every session this run worked in, oldest first (`/clear` starts another): the
    /// way back to each is said at the end.
    pub sessions: Vec<String>,
}

impl AppState {
    pub fn is_busy(&self) -> bool {
        self.turn.is_busy()
    }

    /// A request was sent (see [`Turn::submitted`]).
    pub fn submitted(&mut self) {
        self.turn.submitted();
    }

    /// Add a chat entry. Its revision is new to the whole session, so a render cache
    /// keyed by (position, revision) never mistakes it for the entry that was there
    /// before (a streamed reply replaced after a retry).
    pub(crate) fn push(&mut self, entry: ChatEntry) {
        self.chat.push(entry);
        let revision = self.new_revision();
        self.revisions.push(revision);
    }

    /// Every compaction the chat shows, oldest first, with whether it was undone: what
    /// `/context` lists.
    pub fn compactions(&self) -> Vec<Compaction> {
        self.chat
            .iter()
            .filter_map(|entry| match entry {
                ChatEntry::Marker(run) => Some(run),
                _ => None,
            })
            .flat_map(|run| {
                run.events
                    .iter()
                    .enumerate()
                    .filter(|(_, event)| event.replaced > 0)
                    .map(|(at, event)| Compaction {
                        stage: event.stage,
                        chars_before: event.chars_before,
                        chars_after: event.chars_after,
                        undone: run.is_undone(at),
                        retention: event.loss.as_ref().and_then(|loss| loss.retention_line()),
                        freed: event.freed.as_ref().map(|freed| freed.chars),
                        turns_since_previous: event.since_previous.as_ref().map(|since| since.turns),
                        calls_since_previous: event.since_previous.as_ref().map(|since| since.model_calls),
                        summary_chars: event.summary.as_ref().map(|summary| summary.chars().count()),
                    })
            })
            .collect()
    }

    /// A tool call joins the tool list, and the chat at this point.
    fn add_tool(&mut self, call: ToolCall) {
        self.tools.push(call);
        self.push(ChatEntry::Tool(self.tools.len() - 1));
    }

    /// The tool call with this id changed: its chat entry is drawn again.
    fn touch_tool(&mut self, id: &str) {
        let Some(index) = self.tools.iter().rposition(|call| call.id == id) else {
            return;
        };
        if let Some(at) = self.chat.iter().rposition(|entry| *entry == ChatEntry::Tool(index)) {
            self.revisions[at] = self.new_revision();
        }
    }

    /// The newest request, `full`, was typed with a paste collapsed: show it as it was
    /// typed (`shown`), whole on demand.
    pub fn collapse_newest_request(&mut self, full: &str, shown: String) {
        if let Some(entry) = self.chat.last_mut()
            && matches!(entry, ChatEntry::User(text) if text == full)
        {
            *entry = ChatEntry::Pasted {
                shown,
                full: full.to_string(),
            };
            self.touch_last();
        }
    }

    fn touch_last(&mut self) {
        let revision = self.new_revision();
        if let Some(last) = self.revisions.last_mut() {
            *last = revision;
        }
    }

    /// Show a stage event: folded into the pipeline's newest marker when it is of the
    /// same stage and nothing the user did came between (a request, an undo, a
    /// compaction asked for, an action between turns), and neither failed; else a new
    /// marker. What the user did by hand is a marker of its own: the chat reads in
    /// order.
    fn add_marker(&mut self, event: StageEvent) {
        let undoable = event.can_be_undone();
        if let Some(at) = self.joins_marker.take()
            && !event.by_user
            && let Some(ChatEntry::Marker(run)) = self.chat.get_mut(at)
            && run
                .newest()
                .is_some_and(|last| last.stage == event.stage && !last.failed())
            && !event.failed()
        {
            self.joins_marker = Some(at);
            run.events.push(event);
            let member = run.events.len() - 1;
            if undoable {
                self.undoable.push((at, member));
            }
            let revision = self.new_revision();
            self.revisions[at] = revision;
            return;
        }
        let by_user = event.by_user;
        self.push(ChatEntry::Marker(MarkerRun::new(event)));
        if undoable {
            self.undoable.push((self.chat.len() - 1, 0));
        }
        self.joins_marker = (!by_user).then_some(self.chat.len() - 1);
    }

    /// The newest firing still in force was undone: its marker says so.
    fn mark_undone(&mut self) {
        let Some((at, member)) = self.undoable.pop() else {
            return;
        };
        if let Some(ChatEntry::Marker(run)) = self.chat.get_mut(at) {
            run.undone.insert(member);
            let revision = self.new_revision();
            self.revisions[at] = revision;
        }
    }

    /// The newest firing still in force, with the chat entry of its marker: what `u`
    /// may undo.
    pub fn newest_undoable(&self) -> Option<(usize, &StageEvent)> {
        let &(at, member) = self.undoable.last()?;
        match self.chat.get(at) {
            Some(ChatEntry::Marker(run)) => run.events.get(member).map(|event| (at, event)),
            _ => None,
        }
    }

    fn new_revision(&mut self) -> u64 {
        self.next_revision += 1;
        self.next_revision
    }

    /// Whether something is animating (spinner, elapsed time, a summary's counter in
    /// the background) and needs ticks.
    pub fn animating(&self) -> bool {
        self.tools.iter().any(|t| matches!(t.state, CallState::Running { .. }))
            || self.is_busy()
            || self.background_summary.is_some()
    }
    /// The chat's note for a turn that did not complete, live and resumed alike.
    fn note_turn_end(&mut self, outcome: TurnOutcome) {
        match outcome {
            TurnOutcome::Completed => {}
            TurnOutcome::Cancelled => self.push(ChatEntry::Notice("turn cancelled".into())),
            TurnOutcome::Failed => self.push(ChatEntry::Notice("turn failed".into())),
        }
    }

    /// The chat's note for a compaction asked for, with its focus.
    fn note_compaction_request(&mut self, by: CompactionRequester, focus: Option<&str>) {
        let focus = focus
            .map(|f| format!(" (focus: {})", screen_safe(f)))
            .unwrap_or_default();
        self.push(ChatEntry::Notice(format!("compaction requested by the {by}{focus}")));
    }

    /// A call after a compaction reported what it cost in cache: the newest marker's
    /// receipt says so. A miss the server named goes on the marker of the stage that
    /// changed the prefix, or on the instruction files that changed the system prompt.
    fn note_cache_cost(&mut self, point: &CallPoint) {
        if let Some(report) = point.cache.as_ref().filter(|report| report.missed()) {
            self.note_cache_miss(report);
        }
        let Some(rewritten) = point.cache_rewritten else {
            return;
        };
        // A changed instruction file rewrites the cached prefix as a compaction does.
        let Some(at) = self
            .chat
            .iter()
            .rposition(|entry| matches!(entry, ChatEntry::Marker(_) | ChatEntry::Instructions(_)))
        else {
            return;
        };
        let noted = match &mut self.chat[at] {
            ChatEntry::Marker(run) => run.events.last_mut().map(|newest| &mut newest.cache_rewritten),
            ChatEntry::Instructions(note) => Some(&mut note.cache_rewritten),
            _ => None,
        };
        if let Some(noted) = noted {
            *noted = Some(rewritten);
            let revision = self.new_revision();
            self.revisions[at] = revision;
        }
    }

    fn note_cache_miss(&mut self, report: &crate::protocol::CacheReport) {
        let changed_system = report
            .ours
            .as_ref()
            .is_some_and(|ours| ours.contains(&crate::protocol::PrefixChange::System));
        let at = self.chat.iter().rposition(|entry| match entry {
            ChatEntry::Marker(run) => run.events.iter().any(|event| report.stages.contains(&event.id)),
            ChatEntry::Instructions(note) => changed_system && !note.changes.is_empty(),
            _ => false,
        });
        // Nothing of ours on screen caused it: a line of its own where it happened,
        // before the answer that call is still streaming.
        let Some(at) = at else {
            let before_answer = match self.chat.last() {
                Some(ChatEntry::Assistant { streaming: true, .. }) => self.chat.len() - 1,
                _ => self.chat.len(),
            };
            self.chat.insert(before_answer, ChatEntry::Notice(report.line()));
            self.revisions.insert(before_answer, 0);
            // Every entry from there on is at a new place: drawn afresh.
            for place in before_answer..self.revisions.len() {
                self.revisions[place] = self.new_revision();
            }
            return;
        };
        match &mut self.chat[at] {
            ChatEntry::Marker(run) => run.cache_miss = Some(report.clone()),
            ChatEntry::Instructions(note) => note.cache_miss = Some(report.clone()),
            _ => return,
        }
        let revision = self.new_revision();
        self.revisions[at] = revision;
    }

    /// Which stage wrote each file, and where each tool call's full output now is.
    fn note_files(&mut self, event: &StageEvent) {
        for path in &event.paths {
            self.written_by.push((path.clone(), event.stage));
        }
        for saved in &event.saved {
            if let Some(call) = self.tools.iter_mut().rev().find(|call| call.id == saved.tool_use_id) {
                call.saved_path = Some(saved.path.clone());
            }
            self.touch_tool(&saved.tool_use_id);
        }
    }
}

impl AppState {
    /// A background summary moved on: the chat says it quietly (the gauge follows the
    /// context status).
    fn note_background(&mut self, event: &BackgroundEvent) {
        if !matches!(event, BackgroundEvent::Started { .. }) {
            self.background_summary = None;
        }
        self.push(ChatEntry::Notice(event.line()));
    }
}

/// The first marker of a branch: where it came from.
pub fn branch_line(origin: &crate::protocol::Origin) -> String {
    format!("⑂ a branch of {origin}")
}

#[cfg(test)]
mod tests;
