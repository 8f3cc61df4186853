//! The whole screen: layout, focus, overlays and key/mouse handling. State comes from
//! agent events; what the user does goes back to the agent as `Op`s.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use tokio::sync::mpsc::UnboundedSender;

use super::browser::{Browser, BrowserAction, Viewer};
use super::chat::ChatView;
use super::chat::MarkerFocus;
use super::commands::SlashCommand;
use super::context_view::{ContextAction, ContextView, Thresholds};
use super::disk::{Disk, DiskJob, Loaded};
use super::hyperlinks::Hyperlink;
use super::input::{InputAction, InputBox, PromptState};
use super::keymap::{self, Action, View};
use super::state::{AppState, ChatEntry};
use super::{gauge, help, modal, status, tools_pane};
use crate::compact::CompactConfig;
use crate::protocol::{AgentEvent, Op, PermissionAnswer};

/// How soon a second Ctrl+C must follow the first to quit.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Input,
    Chat,
    Tools,
}

pub enum Overlay {
    None,
    /// The help, scrolled down by this many lines (small terminals).
    Help(u16),
    Browser(Box<Browser>),
    Context(ContextView),
}

pub struct App {
    pub state: AppState,
    pub input: InputBox,
    chat: ChatView,
    pub focus: Focus,
    pub overlay: Overlay,
    pub selected_marker: Option<usize>,
    /// The marker shown with its receipt (→ on a selected marker).
    pub expanded_marker: Option<usize>,
    pub selected_tool: Option<usize>,
    tick: usize,
    pub quit: bool,
    /// When Ctrl+C was last pressed (a second press soon after quits).
    last_interrupt: Option<Instant>,
    /// The prompt's text is to be sent when the running turn ends.
    queued: bool,
    /// Whether the last frame had room for the tool pane.
    tools_visible: bool,
    /// The `/context` view a file was opened from, to return to when it closes.
    context_return: Option<ContextView>,
    ops: UnboundedSender<Op>,
    workspace: PathBuf,
    config: CompactConfig,
    /// Where listing and reading files runs (never on the UI thread in the app).
    disk: Disk,
}

impl App {
    pub fn new(ops: UnboundedSender<Op>, workspace: PathBuf, config: CompactConfig) -> Self {
        App {
            state: AppState::default(),
            input: InputBox::default(),
            chat: ChatView::default(),
            focus: Focus::Input,
            overlay: Overlay::None,
            selected_marker: None,
            expanded_marker: None,
            selected_tool: None,
            tick: 0,
            quit: false,
            last_interrupt: None,
            queued: false,
            tools_visible: true,
            context_return: None,
            ops,
            disk: Disk::inline(workspace.clone()),
            workspace,
            config,
        }
    }

    /// Read files on blocking threads; their results arrive through `results`, to be
    /// handed to [`App::loaded`].
    pub fn load_in_background(&mut self, results: UnboundedSender<Loaded>) {
        self.disk = Disk::background(self.workspace.clone(), results);
    }

    /// Disk work came back: the browser shows it.
    pub fn loaded(&mut self, loaded: Loaded) {
        let Overlay::Browser(browser) = &mut self.overlay else {
            return; // closed meanwhile
        };
        match loaded {
            Loaded::Listing(entries) => browser.listed(entries),
            Loaded::Opened { path, lines } => browser.opened(path, lines),
        }
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
        self.state.apply(event);
        if wrote_files && matches!(self.overlay, Overlay::Browser(_)) {
            // The list follows the turn: files written meanwhile appear at once.
            self.request(DiskJob::List {
                written_by: self.state.written_by.clone(),
            });
        }
        if self.queued && !self.state.is_busy() {
            self.queued = false;
            let text = self.input.text();
            self.input.clear();
            if !text.trim().is_empty() {
                self.submit(text);
            }
        }
    }

    pub fn on_tick(&mut self) {
        self.tick = self.tick.wrapping_add(1);
    }

    fn send(&mut self, op: Op) {
        if self.ops.send(op).is_err() {
            self.state.banner = Some("the agent task has stopped; restart scratchpad".into());
        }
    }

    /// A notice from the app itself (not the agent), shown in the chat.
    fn note(&mut self, text: String) {
        self.state.push(ChatEntry::Notice(text));
    }

    /// `u` on a selected marker: undo it, if it is the newest (compactions come undone
    /// newest first).
    fn undo_selected(&mut self, markers: &[usize]) {
        if self.state.is_busy() {
            self.state.banner = Some("a turn is running: undo when it ends".into());
        } else if self.selected_marker.is_some() && self.selected_marker == markers.last().copied() {
            self.send(Op::Undo);
        } else {
            self.note("only the newest compaction can be undone: undo the later ones first (/undo)".into());
        }
    }

    /// Where the last frame drew paths, for OSC 8 hyperlinks over them.
    pub fn hyperlinks(&self) -> &[Hyperlink] {
        // A modal or the command popup on top hides what is under it: no links through.
        if self.state.permission.is_some() || self.state.lossy.is_some() || !self.input.completions().is_empty() {
            return &[];
        }
        match &self.overlay {
            Overlay::None => &self.chat.hyperlinks,
            Overlay::Browser(browser) => &browser.hyperlinks,
            Overlay::Help(_) | Overlay::Context(_) => &[],
        }
    }

    /// Keep the `/context` view to come back to from what it opens.
    fn leave_context(&mut self) {
        if let Overlay::Context(view) = std::mem::replace(&mut self.overlay, Overlay::None) {
            self.context_return = Some(view);
        }
    }

    pub fn open_path(&mut self, path: &str) {
        self.context_return = None;
        self.browse(Browser::open_on(path));
    }

    fn open_context(&mut self) {
        self.state.breakdown = None;
        self.send(Op::Inspect);
        self.overlay = Overlay::Context(ContextView::default());
    }

    pub fn handle_event(&mut self, event: Event) {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.handle_key(key),
            Event::Paste(text) if matches!(self.overlay, Overlay::None) && self.state.permission.is_none() => {
                self.input.paste(&text);
            }
            Event::Mouse(mouse) => match mouse.kind {
                MouseEventKind::ScrollUp => self.scroll(-3),
                MouseEventKind::ScrollDown => self.scroll(3),
                MouseEventKind::Down(MouseButton::Left) if matches!(self.overlay, Overlay::None) => {
                    if let Some((_, path)) = self.chat.links.iter().find(|(row, _)| *row == mouse.row).cloned() {
                        self.open_path(&path);
                    } else if let Some(&(_, entry)) = self.chat.marker_rows.iter().find(|(row, _)| *row == mouse.row) {
                        self.focus = Focus::Chat;
                        self.selected_marker = Some(entry);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn scroll(&mut self, delta: isize) {
        match &mut self.overlay {
            Overlay::Browser(browser) => {
                if let Some(viewer) = &mut browser.viewer {
                    viewer.scroll_by(delta);
                }
            }
            Overlay::None => self.chat.scroll(-delta),
            _ => {}
        }
    }

    fn marker_entries(&self) -> Vec<usize> {
        self.state
            .chat
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.paths().is_empty())
            .map(|(at, _)| at)
            .collect()
    }

    pub fn handle_key(&mut self, key: KeyEvent) {
        let screen = keymap::action(View::Screen, &key);
        if screen == Some(Action::Interrupt) {
            self.interrupt();
            return;
        }
        // The summarise question waits under an open view (x opens /context).
        if matches!(self.overlay, Overlay::None)
            && let Some(prompt) = self.state.lossy.clone()
        {
            let deliberate = modal::deliberate(prompt.shown_at);
            let answer = match keymap::action(View::Summarise, &key) {
                Some(Action::CancelTurn) => {
                    self.send(Op::Cancel);
                    self.state.lossy = None;
                    None
                }
                _ if !deliberate => None,
                Some(Action::CompactNow) => Some(true),
                Some(Action::NotNow) => Some(false),
                Some(Action::OpenContext) => {
                    self.open_context();
                    None
                }
                _ => None,
            };
            if let Some(compact_now) = answer {
                self.send(Op::Lossy {
                    request_id: prompt.request_id,
                    compact_now,
                });
                self.state.lossy = None;
            }
            return;
        }
        if let Some(prompt) = self.state.permission.clone() {
            let deliberate = modal::deliberate(prompt.shown_at);
            let answer = match keymap::action(View::Permission, &key) {
                Some(Action::CancelTurn) => {
                    self.send(Op::Cancel);
                    self.state.permission = None;
                    None
                }
                _ if !deliberate => None,
                Some(Action::AllowOnce) => Some(PermissionAnswer::AllowOnce),
                Some(Action::Deny) => Some(PermissionAnswer::Deny),
                Some(Action::AlwaysAllow) if prompt.always.is_some() => Some(PermissionAnswer::AlwaysForSession),
                _ => None,
            };
            if let Some(answer) = answer {
                self.send(Op::Permission {
                    request_id: prompt.request_id,
                    answer,
                });
                self.state.permission = None;
            }
            return;
        }
        match &mut self.overlay {
            Overlay::Help(offset) => {
                match keymap::action(View::Help, &key) {
                    Some(Action::Close) => self.overlay = Overlay::None,
                    Some(Action::Next) => *offset = (*offset + 1).min(help::line_count()),
                    Some(Action::Previous) => *offset = offset.saturating_sub(1),
                    _ => {}
                }
                return;
            }
            Overlay::Browser(browser) => {
                match browser.handle_key(key) {
                    BrowserAction::Stay => {}
                    // Back where the file was opened from: /context, or the chat.
                    BrowserAction::Close => {
                        self.overlay = self.context_return.take().map_or(Overlay::None, Overlay::Context);
                    }
                    BrowserAction::Open(path) => self.request(DiskJob::Open { path }),
                }
                return;
            }
            Overlay::Context(view) => {
                let action = view.handle_key(key, self.state.breakdown.as_ref());
                match action {
                    ContextAction::Stay => {}
                    ContextAction::Close => self.overlay = Overlay::None,
                    ContextAction::CountTokens => self.send(Op::CountTokens),
                    ContextAction::Restore(tool_use_id) => self.send(Op::Restore { tool_use_id }),
                    ContextAction::Pin { tool_use_id, pinned } => self.send(Op::Pin { tool_use_id, pinned }),
                    ContextAction::Drop(tool_use_id) => self.send(Op::Drop { tool_use_id }),
                    ContextAction::OpenPath(path) => {
                        self.leave_context();
                        self.browse(Browser::open_on(&path));
                    }
                    ContextAction::ShowText { title, text } => {
                        self.leave_context();
                        let lines = text
                            .lines()
                            .map(|l| (l.to_string(), ratatui::style::Style::default()))
                            .collect();
                        let mut browser = Browser::new();
                        browser.viewer = Some(Viewer::from_lines(title, lines));
                        browser.opened_on_file = true;
                        self.browse(browser);
                    }
                }
                return;
            }
            Overlay::None => {}
        }
        match screen {
            Some(Action::OpenBrowser) => {
                self.context_return = None;
                self.browse(Browser::new());
                return;
            }
            Some(Action::OpenContext) => {
                self.open_context();
                return;
            }
            Some(Action::DismissBanner) => {
                self.state.banner = None;
                return;
            }
            Some(Action::Help) => {
                self.overlay = Overlay::Help(0);
                return;
            }
            Some(Action::CancelOrBack) => {
                if self.state.is_busy() {
                    self.send(Op::Cancel);
                } else {
                    self.focus = Focus::Input;
                }
                return;
            }
            Some(Action::ScrollUp) => return self.chat.scroll(self.chat.page() as isize),
            Some(Action::ScrollDown) => return self.chat.scroll(-(self.chat.page() as isize)),
            Some(Action::Follow) if self.focus != Focus::Input || self.input.is_empty() => return self.chat.follow(),
            Some(Action::CompleteOrCycleFocus) if self.input.completions().is_empty() => {
                // A hidden tool pane (narrow terminal) is not a stop.
                self.focus = match self.focus {
                    Focus::Input => Focus::Chat,
                    Focus::Chat if self.tools_visible => Focus::Tools,
                    Focus::Chat | Focus::Tools => Focus::Input,
                };
                if self.focus == Focus::Chat && self.selected_marker.is_none() {
                    self.selected_marker = self.marker_entries().last().copied();
                }
                return;
            }
            _ => {}
        }
        let chat_action = keymap::action(View::Chat, &key);
        let undo_key = self.focus == Focus::Chat && self.selected_marker.is_some() && chat_action == Some(Action::Undo);
        let typing = matches!(key.code, KeyCode::Char(c) if !c.is_ascii_digit())
            && !undo_key
            && !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if typing && self.focus != Focus::Input {
            // Letters are for the prompt, wherever the focus was.
            self.focus = Focus::Input;
        }
        match self.focus {
            Focus::Chat => self.chat_key(key),
            Focus::Tools => self.tools_key(key),
            Focus::Input => {
                if keymap::action(View::Prompt, &key) == Some(Action::Help) && self.input.is_empty() {
                    self.overlay = Overlay::Help(0);
                    return;
                }
                if let InputAction::Submit(text) = self.input.handle_key(key) {
                    self.submit(text);
                }
            }
        }
    }

    fn chat_key(&mut self, key: KeyEvent) {
        let markers = self.marker_entries();
        let position = self.selected_marker.and_then(|m| markers.iter().position(|&e| e == m));
        match keymap::action(View::Chat, &key) {
            Some(Action::Undo) => self.undo_selected(&markers),
            Some(Action::ShowReceipt) => self.expanded_marker = self.selected_marker,
            Some(Action::HideReceipt) => self.expanded_marker = None,
            Some(Action::Previous) => {
                self.selected_marker = match position {
                    Some(p) => markers.get(p.saturating_sub(1)).copied(),
                    None => markers.last().copied(),
                }
            }
            Some(Action::Next) => {
                self.selected_marker = match position {
                    Some(p) => markers.get((p + 1).min(markers.len().saturating_sub(1))).copied(),
                    None => markers.last().copied(),
                }
            }
            Some(Action::Open(nth)) => {
                let path = self
                    .selected_marker
                    .and_then(|m| self.state.chat.get(m))
                    .and_then(|entry| entry.paths().get(usize::from(nth)).cloned());
                if let Some(path) = path {
                    self.open_path(&path);
                }
            }
            _ => {}
        }
    }

    fn tools_key(&mut self, key: KeyEvent) {
        let count = self.state.tools.len();
        match keymap::action(View::Tools, &key) {
            Some(Action::Previous) => {
                self.selected_tool = Some(
                    self.selected_tool
                        .map_or(count.saturating_sub(1), |s| s.saturating_sub(1)),
                );
            }
            Some(Action::Next) => {
                self.selected_tool = Some(
                    self.selected_tool
                        .map_or(count.saturating_sub(1), |s| (s + 1).min(count.saturating_sub(1))),
                );
            }
            Some(Action::Open(_)) => {
                if let Some(path) = self
                    .selected_tool
                    .and_then(|s| self.state.tools.get(s))
                    .and_then(|call| call.saved_path.clone())
                {
                    self.open_path(&path);
                } else if self.selected_tool.is_some() {
                    self.selected_tool = None;
                } else {
                    self.selected_tool = count.checked_sub(1);
                }
            }
            _ => {}
        }
    }

    fn submit(&mut self, text: String) {
        match SlashCommand::parse(&text) {
            Some(Ok((command, rest))) => {
                if self.state.is_busy() && !command.while_busy() {
                    self.state.banner = Some(format!("wait for the turn to finish before {}", command.name()));
                } else {
                    self.run_command(command, rest);
                }
                return;
            }
            Some(Err(name)) => {
                self.state.banner = Some(format!("unknown command /{name}; /help lists them"));
                // The text stays, to be corrected.
                self.input.set_text(&text);
                return;
            }
            None => {}
        }
        if self.state.is_busy() {
            // Queued, not lost: it stays in the prompt, editable, until the turn ends.
            self.input.set_text(&text);
            self.queued = true;
            return;
        }
        self.chat.follow();
        self.send(Op::Submit { text });
        self.state.submitted();
    }

    /// Ctrl+C: the first press cancels the running turn (or clears the prompt); a
    /// second within [`QUIT_WINDOW`] quits.
    fn interrupt(&mut self) {
        let now = Instant::now();
        if self
            .last_interrupt
            .is_some_and(|at| now.duration_since(at) < QUIT_WINDOW)
        {
            self.send(Op::Quit);
            self.quit = true;
            return;
        }
        self.last_interrupt = Some(now);
        if self.state.is_busy() {
            self.send(Op::Cancel);
            self.state.permission = None;
        } else if !self.input.is_empty() {
            self.input.clear();
        }
        self.state.banner = Some("press Ctrl+C again to quit".into());
    }

    fn run_command(&mut self, command: SlashCommand, rest: &str) {
        match command {
            SlashCommand::Compact => match rest.strip_prefix("--preview").map(str::trim) {
                Some(focus) => self.send(Op::Preview {
                    focus: (!focus.is_empty()).then(|| focus.to_string()),
                }),
                None => self.send(Op::Compact {
                    focus: (!rest.is_empty()).then(|| rest.to_string()),
                }),
            },
            SlashCommand::Context => self.open_context(),
            SlashCommand::Transcripts => {
                self.context_return = None;
                self.browse(Browser::new());
            }
            SlashCommand::Clear => self.send(Op::Clear),
            SlashCommand::Undo => self.send(Op::Undo),
            SlashCommand::Permissions => match rest.strip_prefix("revoke").map(str::trim) {
                None if rest.is_empty() => self.send(Op::Permissions { revoke: None }),
                Some(number) if number.parse::<usize>().is_ok() => self.send(Op::Permissions {
                    revoke: number.parse().ok(),
                }),
                _ => self.state.banner = Some(format!("usage: {} {}", command.name(), command.arguments())),
            },
            SlashCommand::Model => {
                let info = &self.state.session;
                let mut text = format!("provider {} · model {}", info.provider, info.model);
                if let Some(window) = &info.window {
                    text.push_str(&format!(
                        " · window {} tokens ({})",
                        crate::compact::short_count(window.tokens as usize),
                        window.source
                    ));
                }
                if let Some(status) = &self.state.context {
                    let how = info.limit_note.as_deref().unwrap_or("as configured");
                    text.push_str(&format!(
                        " · limit {} chars · {how}",
                        crate::compact::short_count(status.limit)
                    ));
                }
                text.push_str(&format!(" · {}", info.sandbox));
                if !info.sandbox_layers.is_empty() {
                    text.push_str(&format!(" ({})", info.sandbox_layers.join("; ")));
                }
                self.note(text);
            }
            SlashCommand::Help => self.overlay = Overlay::Help(0),
            SlashCommand::Quit => {
                self.send(Op::Quit);
                self.quit = true;
            }
        }
    }

    pub fn render(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let narrow = area.width < 90 || area.height < 24;
        let gauge_height = if narrow { 1 } else { 2 };
        let banner_height = u16::from(self.state.banner.is_some());
        let input_height = self.input.height().min(area.height.saturating_sub(6).max(3));
        let [status_area, main, gauge_area, banner_area, input_area] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(gauge_height),
            Constraint::Length(banner_height),
            Constraint::Length(input_height),
        ])
        .areas(area);
        status::render(frame, status_area, &self.state.session, &self.state.turn, self.tick);
        self.tools_visible = area.width >= 90;
        if !self.tools_visible && self.focus == Focus::Tools {
            self.focus = Focus::Input;
        }
        let (chat_area, tools_area) = if self.tools_visible {
            let [chat, tools] =
                Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(main);
            (chat, Some(tools))
        } else {
            (main, None)
        };
        let selected_marker = if self.focus == Focus::Chat {
            self.selected_marker
        } else {
            None
        };
        self.chat.render(
            frame,
            chat_area,
            &self.state.chat,
            &self.state.revisions,
            MarkerFocus {
                selected: selected_marker,
                expanded: self.expanded_marker,
            },
            self.focus == Focus::Chat,
        );
        if let Some(tools_area) = tools_area {
            tools_pane::render(
                frame,
                tools_area,
                &self.state.tools,
                self.selected_tool,
                self.focus == Focus::Tools,
                self.tick,
            );
        }
        gauge::render(frame, gauge_area, self.state.context.as_ref());
        if let Some(banner) = &self.state.banner {
            status::render_banner(frame, banner_area, banner);
        }
        let prompt = if self.queued {
            PromptState::Queued
        } else if self.state.is_busy() {
            PromptState::Busy
        } else {
            PromptState::Ready
        };
        self.input.render(frame, input_area, prompt, self.focus == Focus::Input);
        let overlay_area = Rect {
            y: main.y,
            height: main.height + gauge_height,
            ..main
        };
        let tokens = self.state.context.as_ref().and_then(|c| c.tokens.as_ref());
        let thresholds = match &self.state.context {
            Some(status) => Thresholds {
                limit: status.limit,
                target: status.target,
            },
            None => Thresholds {
                limit: self.config.context_char_limit,
                target: self.config.micro_target_chars(),
            },
        };
        match &mut self.overlay {
            Overlay::None => {}
            Overlay::Help(offset) => help::render(frame, area, offset),
            Overlay::Browser(browser) => browser.render(frame, overlay_area),
            Overlay::Context(view) => view.render(
                frame,
                overlay_area,
                self.state.breakdown.as_ref(),
                &self.state.timeline,
                thresholds,
                tokens,
            ),
        }
        if let Some(prompt) = &mut self.state.permission {
            prompt.shown_at.get_or_insert_with(std::time::Instant::now);
            modal::render(frame, area, prompt);
        }
        if matches!(self.overlay, Overlay::None)
            && let Some(prompt) = &mut self.state.lossy
        {
            prompt.shown_at.get_or_insert_with(std::time::Instant::now);
            modal::render_lossy(frame, area, prompt);
        }
    }
}
