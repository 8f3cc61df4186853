//! The whole screen: layout, focus, overlays and key/mouse handling. State comes from
//! agent events; what the user does goes back to the agent as `Op`s. What a key or a
//! click does is in `keys`; how the screen is laid out and drawn, in `render`.

mod keys;
mod prompt_commands;
mod reach;
mod render;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use tokio::sync::mpsc::UnboundedSender;

use super::browser::{Browser, Viewer};
use super::chat::MarkerFocus;
use super::chat::{ChatContent, ChatView};
use super::commands::SlashCommand;
use super::context_view::{ContextView, Thresholds};
use super::disk::{Disk, DiskJob, Loaded};
use super::help::HelpView;
use super::hyperlinks::Hyperlink;
use super::input::{InputAction, InputBox, PromptState};
use super::keymap::{self, Action, View};
use super::picker::Picker;
use super::state::{AppState, ChatEntry, Question};
use super::toast::{TOAST_FOR, Toast};
use super::tree::TreeView;
use super::view::{Effect, OverlayView, Shown};
use super::{gauge, modal, status, tools_pane};
use crate::compact::CompactConfig;
use crate::protocol::{AgentEvent, McpAction, Op, PermissionAnswer};

/// How soon a second Ctrl+C must follow the first to quit.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

/// How soon a second Esc on an empty prompt must follow the first to open the tree.
const REWIND_WINDOW: Duration = Duration::from_millis(800);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Input,
    Chat,
    Tools,
}

pub enum Overlay {
    None,
    /// The help, scrolled (small terminals).
    Help(HelpView),
    Browser(Box<Browser>),
    Context(ContextView),
    /// The session picker (`/resume`).
    Picker(Picker),
    /// The session tree (`/tree`, Esc Esc on an empty prompt).
    Tree(TreeView),
    /// What `/compact` would do (`/compact --preview`), to apply or not.
    Preview(super::review::PreviewView),
}

impl Overlay {
    /// The open view, to draw and to take keys: adding a view is its file, its variant
    /// above and its line here.
    fn view_mut(&mut self) -> Option<&mut dyn OverlayView> {
        match self {
            Overlay::None => None,
            Overlay::Help(view) => Some(view),
            Overlay::Browser(browser) => Some(browser.as_mut()),
            Overlay::Context(view) => Some(view),
            Overlay::Picker(picker) => Some(picker),
            Overlay::Tree(tree) => Some(tree),
            Overlay::Preview(preview) => Some(preview),
        }
    }

    /// Its name, as the user opened it.
    fn name(&mut self) -> &'static str {
        self.view_mut().map_or("the chat", |view| view.name())
    }

    /// Whether typed letters are its own text, not commands that prose could set off.
    fn takes_typing(&mut self) -> bool {
        self.view_mut().is_some_and(|view| view.takes_typing())
    }
}

/// A permission question the user is denying with words for the model.
struct Denying {
    request_id: u64,
    /// What the prompt held before, given back once the reason is sent or dropped.
    draft: String,
}

pub struct App {
    pub state: AppState,
    pub input: InputBox,
    chat: ChatView,
    pub focus: Focus,
    pub overlay: Overlay,
    pub selected_entry: Option<usize>,
    /// The marker shown with its receipt (→ on a selected marker).
    pub expanded_entry: Option<usize>,
    pub selected_tool: Option<usize>,
    tick: usize,
    pub quit: bool,
    /// When Ctrl+C was last pressed (a second press soon after quits).
    last_interrupt: Option<Instant>,
    /// A permission question being denied with words for the model, typed in the
    /// prompt.
    denying: Option<Denying>,
    /// The request just sent and how it looked with its paste collapsed, for the chat
    /// to show it so once the turn starts.
    pasted_request: Option<(String, String)>,
    /// A fork asked for on a marker that was not on screen: that entry, until a second
    /// `f` confirms it (or another key moves on).
    fork_asked: Option<usize>,
    /// When Esc was last pressed on an empty prompt (a second soon after rewinds).
    last_escape: Option<Instant>,
    /// The prompt's text is to be sent when the running turn ends.
    queued: bool,
    /// Whether the last frame had room for the tool pane.
    tools_visible: bool,
    /// The view under the open one (`/context` under a file it opened, any view
    /// under the help), which comes back when the open one closes.
    under: Option<Overlay>,
    ops: UnboundedSender<Op>,
    workspace: PathBuf,
    config: CompactConfig,
    /// Where listing and reading files runs (never on the UI thread in the app).
    disk: Disk,
    /// Short feedback over the open view, gone on its own.
    pub toast: Option<Toast>,
    /// The editor of the summary in review, made when the review is first shown.
    review_editor: Option<super::review::ReviewEditor>,
    /// The open view the user has moved in (an arrow, Tab, a page key): only then
    /// are its letters its commands; before, typing goes to the prompt.
    in_hand: Option<std::mem::Discriminant<Overlay>>,
    /// The first-run tour's notes (on the offline demo only).
    tour: super::tour::Tour,
}

impl App {
    /// The editor of the summary in review, made for it when first asked for; `None`
    /// when no summary waits.
    fn review_editor(&mut self) -> Option<&mut super::review::ReviewEditor> {
        let prompt = self.state.turn.review()?;
        if self
            .review_editor
            .as_ref()
            .is_none_or(|editor| editor.request_id != prompt.request_id)
        {
            self.review_editor = Some(super::review::ReviewEditor::new(prompt));
        }
        self.review_editor.as_mut()
    }

    pub fn new(ops: UnboundedSender<Op>, workspace: PathBuf, config: CompactConfig) -> Self {
        App {
            state: AppState::default(),
            input: InputBox::default(),
            chat: ChatView::default(),
            focus: Focus::Input,
            overlay: Overlay::None,
            selected_entry: None,
            expanded_entry: None,
            selected_tool: None,
            tick: 0,
            quit: false,
            last_interrupt: None,
            fork_asked: None,
            denying: None,
            pasted_request: None,
            last_escape: None,
            queued: false,
            tools_visible: true,
            under: None,
            ops,
            disk: Disk::inline(workspace.clone()),
            workspace,
            config,
            toast: None,
            review_editor: None,
            in_hand: None,
            tour: super::tour::Tour::default(),
        }
    }

    /// Read files on blocking threads; their results arrive through `results`, to be
    /// handed to [`App::loaded`].
    pub fn load_in_background(&mut self, results: UnboundedSender<Loaded>) {
        self.disk = Disk::background(self.workspace.clone(), results);
    }

    /// Disk work came back: the view that asked shows it (if still open).
    pub fn loaded(&mut self, loaded: Loaded) {
        match (&mut self.overlay, loaded) {
            (Overlay::Browser(browser), Loaded::Listing(entries)) => browser.listed(entries),
            (Overlay::Browser(browser), Loaded::Opened { path, lines }) => browser.opened(path, lines),
            (Overlay::Picker(picker), Loaded::Sessions(sessions)) => picker.listed(sessions),
            (Overlay::Tree(tree), Loaded::Family { branches, labels }) => tree.loaded(branches, labels),
            (Overlay::Tree(tree), Loaded::Labels(Ok(labels))) => tree.labels_saved(labels),
            (_, Loaded::Labels(Err(error))) => self.tell(format!("the label was not kept: {error}")),
            (_, Loaded::Tour(Ok(dismissed))) => self.tour.loaded(dismissed),
            (_, Loaded::Tour(Err(error))) => self.tell(format!("the tour's notes: {error}")),
            // `/label` from the prompt: no tree to show it in.
            (_, Loaded::Labels(Ok(_))) => self.tell("label kept: /tree shows it"),
            _ => {} // closed meanwhile
        }
    }

    /// Show the session picker and ask for the list.
    pub fn open_picker(&mut self) {
        let current = Some(self.state.session.id.clone()).filter(|id| !id.is_empty());
        self.overlay = Overlay::Picker(Picker::new(current));
        self.request(DiskJob::Sessions);
    }

    /// Show the session tree and ask for the family of the open session; Esc Esc
    /// opens it on the newest request.
    fn open_tree(&mut self, on_newest_request: bool) {
        let session = self.state.session.id.clone();
        if session.is_empty() {
            self.tell("this session keeps no journal, so it has no tree");
            return;
        }
        self.overlay = Overlay::Tree(TreeView::new(session.clone(), on_newest_request));
        self.request(DiskJob::Family { session });
    }

    /// Look for the workspace's sessions in `dir` instead of the data folder (tests).
    #[cfg(any(test, feature = "test-support"))]
    pub fn sessions_in(&mut self, dir: PathBuf) {
        let disk = std::mem::replace(&mut self.disk, Disk::inline(self.workspace.clone()));
        self.disk = disk.with_sessions_dir(dir);
    }

    /// Keep the data folder's files (the tour's) in `dir` (tests).
    #[cfg(any(test, feature = "test-support"))]
    pub fn data_in(&mut self, dir: PathBuf) {
        let disk = std::mem::replace(&mut self.disk, Disk::inline(self.workspace.clone()));
        self.disk = disk.with_data_dir(dir);
    }

    fn request(&mut self, job: DiskJob) {
        self.disk.request(job);
        for done in self.disk.take_done() {
            self.loaded(done);
        }
    }

    /// Show the browser and ask for its list (and the file it opens on).
    fn browse(&mut self, browser: Browser) {
        let opening = browser.opening().map(str::to_string);
        self.overlay = Overlay::Browser(Box::new(browser));
        self.request(DiskJob::List {
            written_by: self.state.written_by.clone(),
        });
        if let Some(path) = opening {
            self.request(DiskJob::Open { path });
        }
    }

    pub fn apply(&mut self, event: AgentEvent) {
        let wrote_files = matches!(&event, AgentEvent::Compaction { event } if !event.paths.is_empty());
        let started = matches!(event, AgentEvent::TurnStarted { .. });
        // The preview asked for shows what it found.
        if let (Overlay::Preview(view), AgentEvent::Preview { events }) = (&mut self.overlay, &event) {
            view.previewed(events.clone());
        }
        let demo =
            matches!(&event, AgentEvent::SessionStarted { provider, .. } if crate::provider::demo::is_demo(provider));
        if let Some(stop) = super::tour::TourStop::reached_by(&event) {
            self.tour.reached(stop);
        }
        let shown = self.state.chat.len();
        self.state.apply(event);
        if demo {
            self.request(DiskJob::Tour { dismiss: None });
        }
        // A note the chat took (a notice, an undo) where it cannot be seen: the chat
        // is behind a view, or scrolled back from where the note lands. Said over it.
        if !matches!(self.overlay, Overlay::None) || self.chat.scroll_up > 0 {
            let noted = self.state.chat[shown.min(self.state.chat.len())..]
                .iter()
                .rev()
                .find_map(|entry| match entry {
                    ChatEntry::Notice(text) => Some(text.clone()),
                    _ => None,
                });
            if let Some(text) = noted {
                self.tell(text);
            }
        }
        if started && let Some((full, shown)) = self.pasted_request.take() {
            self.state.collapse_newest_request(&full, shown);
        }
        // The question went away (the turn ended): no reason is wanted any more.
        if self.state.turn.permission().is_none() {
            self.stop_denying();
        }
        if let Some(text) = self.state.edit_request.take() {
            self.input.set_text(&text);
            self.focus = Focus::Input;
        }
        if wrote_files && matches!(self.overlay, Overlay::Browser(_)) {
            // The list follows the turn: files written meanwhile appear at once.
            self.request(DiskJob::List {
                written_by: self.state.written_by.clone(),
            });
        }
        if self.queued && !self.state.is_busy() {
            self.queued = false;
            let text = self.input.text().trim_end().to_string();
            self.input.clear();
            if !text.trim().is_empty() {
                self.submit(text);
            }
        }
    }

    /// Leave the typing of a reason for a denial, the prompt given back what it held
    /// before; the question's id, when one was being denied.
    fn stop_denying(&mut self) -> Option<u64> {
        let denying = self.denying.take()?;
        self.input.set_text(&denying.draft);
        Some(denying.request_id)
    }

    /// Stop the turn, or close a review between turns (Esc, Ctrl+C, or the cancel key
    /// of a question): the one cancel every route takes. A request queued
    /// for after it stays in the prompt, unsent: stopping means stop, not "go on
    /// with the next one".
    fn cancel(&mut self) {
        if std::mem::take(&mut self.queued) {
            let text = self.input.text().trim_end().to_string();
            self.input.set_text(&text);
        }
        // A turn that started is busy until it is done: one test says both.
        let busy = self.state.is_busy();
        self.stop_denying();
        self.review_editor = None;
        if self.state.turn.cancel() {
            self.send(Op::Cancel);
            if busy {
                self.tell("cancelling the turn · Ctrl+C on an empty prompt, twice, quits");
            }
        }
    }

    pub fn on_tick(&mut self) {
        self.tick = self.tick.wrapping_add(1);
        if self.toast.as_ref().is_some_and(|toast| toast.expired(Instant::now())) {
            self.toast = None;
        }
    }

    /// Whether the screen changes with time: something runs, or a toast is to go.
    pub fn animating(&self) -> bool {
        self.state.animating() || self.toast.is_some()
    }

    /// Whether pasted text goes to the prompt now: no view or question is on top.
    pub fn takes_paste(&self) -> bool {
        matches!(self.overlay, Overlay::None) && (self.state.turn.permission().is_none() || self.denying.is_some())
    }

    /// Feedback from the app, shown over the open view for a few seconds.
    fn tell(&mut self, text: impl Into<String>) {
        self.tell_for(text, TOAST_FOR);
    }

    fn tell_for(&mut self, text: impl Into<String>, lasting: Duration) {
        self.toast = Some(Toast::new(text, lasting));
    }

    fn send(&mut self, op: Op) {
        if self.ops.send(op).is_err() {
            self.state.banner = Some("the agent task has stopped; restart scratchpad".into());
        }
    }

    /// A notice from the app itself (not the agent) that belongs to the conversation,
    /// shown in the chat.
    fn note(&mut self, text: String) {
        self.state.push(ChatEntry::Notice(text));
    }

    /// `u` on a selected marker: undo its newest firing, if that is the newest still in
    /// force (compactions come undone newest first). The agent checks the stage id too.
    fn undo_selected(&mut self) {
        let Some(selected) = self.selected_entry else {
            return;
        };
        let newest = self
            .state
            .newest_undoable()
            .map(|(at, event)| (at, event.id.clone(), event.stage));
        let already_undone = matches!(self.state.chat.get(selected), Some(ChatEntry::Marker(run)) if run.all_undone());
        if self.state.is_busy() {
            self.tell("a turn is running: undo when it ends");
        } else if already_undone {
            self.tell("this compaction was undone already");
        } else {
            match newest {
                Some((at, stage_id, _)) if at == selected => self.send(Op::Undo {
                    stage_id: Some(stage_id),
                }),
                Some((_, _, stage)) => self.tell(format!(
                    "only the newest compaction can be undone: undo {stage} first (/undo)"
                )),
                None => self.tell("nothing to undo: no compaction in force changed this conversation"),
            }
        }
    }

    /// `s` on a selected request: summarise everything before it, and keep it and what
    /// follows verbatim.
    fn summarise_up_to_selected(&mut self) {
        if self.state.is_busy() {
            self.tell("a turn is running: summarise when it ends");
            return;
        }
        match self.summarise_target() {
            Ok((request, later_same)) => self.send(Op::SummariseUpTo { request, later_same }),
            Err(why) => self.tell(why),
        }
    }

    /// `f` on a selected marker: a new session from the history as it was before the
    /// marker's first firing, rebuilt by the agent from what that stage archived.
    fn fork_before_selected(&mut self) {
        let asked = self.fork_asked.take();
        if self.state.is_busy() {
            self.tell("a turn is running: fork when it ends");
            return;
        }
        let (at, first, stage) = match self.fork_target() {
            Ok(target) => target,
            Err(why) => return self.tell(why),
        };
        // A marker scrolled out of sight may not be the one the user thinks is
        // selected: name it and fork on a second `f`.
        let in_sight = self.chat.marker_rows.iter().any(|&(_, entry)| entry == at);
        if !in_sight && asked != Some(at) {
            self.fork_asked = Some(at);
            self.tell(format!("f again forks before: {stage} (End clears the selection)"));
            return;
        }
        self.send(Op::Fork {
            session: None,
            at: crate::protocol::ForkAt::Stage(first),
        });
    }

    /// Where the last frame drew paths, for OSC 8 hyperlinks over them.
    pub fn hyperlinks(&self) -> &[Hyperlink] {
        // A modal or the command popup on top hides what is under it: no links through.
        if self.state.turn.permission().is_some()
            || self.state.turn.review().is_some()
            || !self.input.completions().is_empty()
        {
            return &[];
        }
        match &self.overlay {
            Overlay::None => &self.chat.hyperlinks,
            Overlay::Browser(browser) => &browser.hyperlinks,
            Overlay::Help(_) | Overlay::Context(_) | Overlay::Picker(_) | Overlay::Tree(_) | Overlay::Preview(_) => &[],
        }
    }

    /// Keep the `/context` view to come back to from what it opens.
    fn leave_context(&mut self) {
        if let Overlay::Context(view) = std::mem::replace(&mut self.overlay, Overlay::None) {
            self.under = Some(Overlay::Context(view));
        }
    }

    pub fn open_path(&mut self, path: &str) {
        self.under = None;
        self.browse(Browser::open_on(path));
    }

    fn open_context(&mut self) {
        self.state.breakdown = None;
        self.send(Op::Inspect);
        self.overlay = Overlay::Context(ContextView::default());
    }
}
