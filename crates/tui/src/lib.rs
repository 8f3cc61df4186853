#![warn(unreachable_pub)]
//! The full-screen app: one loop selecting over terminal input, agent events, disk
//! work done off this thread, and a tick (only while something animates), redrawing
//! only after a change, so an idle app uses no CPU.

// The lower layers under the names this crate's modules use for them.
use scratchpad_agent::{accounting, agent, config, context_map, provider, signals, tools};
use scratchpad_core::{compact, json, message, places, store, terminal_text, text, time};
use scratchpad_protocol as protocol;
use scratchpad_session as session;

pub mod timeline;

pub mod app;
pub mod browser;
pub mod chat;
pub mod commands;
pub mod context_table;
pub mod context_timeline;
pub mod context_view;
pub mod disk;
pub mod finder;
pub mod gauge;
pub mod help;
pub mod hyperlinks;
pub mod input;
pub mod keymap;
pub mod markdown;
pub mod marker;
pub mod modal;
pub mod paste;
pub mod picker;
pub mod review;
pub mod state;
pub mod status;
pub mod theme;
pub mod toast;
pub mod tools_pane;
pub mod tour;
pub mod tree;
pub mod view;
pub mod welcome;

use std::io;
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event, MouseEventKind,
};
use crossterm::execute;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::agent::AskPolicy;
use crate::protocol::Op;
use app::App;
use scratchpad_agent::start::Launch;

/// Input events handled between two frames at most, so a flood still gets drawn.
const MAX_EVENTS_PER_FRAME: usize = 100_000;

/// Terminal input, read on a thread of its own as fast as it comes, each event with
/// the time it was read (how a paste is told from typing). crossterm's own stream
/// yields one event per wake-up, and its `poll(0)` never sees events it has already
/// parsed (its tty source skips its loop at a zero timeout), so input past one read
/// waited for the next frame. The thread sleeps in the terminal's poll until input
/// comes, so an idle app is woken by nothing; [`stop_reading`] ends it.
fn read_terminal(reading: Arc<AtomicBool>) -> UnboundedReceiver<io::Result<(Instant, Event)>> {
    let (events, received) = unbounded_channel();
    std::thread::spawn(move || {
        while reading.load(Ordering::Relaxed) {
            let read = match crossterm::event::poll(INPUT_WAIT) {
                Ok(false) => continue,
                Ok(true) => crossterm::event::read().map(|event| (Instant::now(), event)),
                Err(error) => Err(error),
            };
            if !reading.load(Ordering::Relaxed) {
                break;
            }
            let failed = read.is_err();
            if events.send(read).is_err() || failed {
                break;
            }
        }
    });
    received
}

/// The longest single wait for input: crossterm hands poll(2) its timeout as a C int
/// of milliseconds, which a day fits.
const INPUT_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// End [`read_terminal`]'s thread. crossterm's poll also watches a pipe that its
/// SIGWINCH handler writes to, so raising that signal ends the wait at once; the
/// thread then sees `reading` false and stops without taking another key.
fn stop_reading(reading: &AtomicBool) {
    reading.store(false, Ordering::Relaxed);
    // SAFETY: raise only delivers a signal to this process, whose one handler for
    // SIGWINCH (crossterm's) writes a byte to its pipe.
    unsafe {
        libc::raise(libc::SIGWINCH);
    }
}

/// Hand one input event to the app; whether the screen changes (pointer motion alone
/// does not).
fn handle_input(app: &mut App, event: Event) -> bool {
    let changes = !matches!(&event, Event::Mouse(m) if m.kind == MouseEventKind::Moved);
    app.handle_event(event);
    changes
}

fn enable_extras(mouse: bool) -> io::Result<()> {
    execute!(io::stdout(), EnableBracketedPaste)?;
    if mouse {
        execute!(io::stdout(), EnableMouseCapture)?;
    }
    Ok(())
}

fn disable_extras() {
    let _ = execute!(io::stdout(), DisableMouseCapture, DisableBracketedPaste);
}

/// Run the app until the user quits. The terminal is restored on every exit path,
/// panics included (`ratatui::init` hooks the panic; we add the mouse and paste modes).
/// Returns the ids of the sessions it worked in, oldest first (`/clear` starts
/// another), for the way back to each (`scratchpad --continue`).
pub async fn run(launch: Launch) -> io::Result<Vec<String>> {
    let mouse = launch.config.ui.mouse;
    let launch_theme = launch.config.ui.theme;
    let hyperlinks = hyperlinks::enabled(launch.config.ui.hyperlinks);
    let workspace = launch.workspace.root().to_path_buf();
    let workspace_root = workspace.clone();
    let config = launch.config.compaction.clone();
    let pick_session = launch.pick_session;
    let (events_tx, mut events) = unbounded_channel();
    let (ops, ops_rx) = unbounded_channel();
    let agent = launch.into_agent(AskPolicy::Ask, events_tx);
    let agent_task = tokio::spawn(agent.run(ops_rx));

    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        disable_extras();
        previous_hook(info);
    }));
    // Before the app takes the screen and reads the keyboard: the terminal answers on
    // its input.
    theme::choose(theme::detect(launch_theme));
    let mut terminal = ratatui::init();
    enable_extras(mouse)?;
    let mut app = App::new(ops.clone(), workspace, config);
    let (loaded_tx, mut loaded) = unbounded_channel();
    app.load_in_background(loaded_tx);
    if pick_session {
        app.open_picker();
    }
    let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut input = read_terminal(reading.clone());
    let mut bursts = paste::BurstDetector::default();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut redraw = true;
    let terminated = crate::signals::termination();
    tokio::pin!(terminated);
    let result = loop {
        if redraw {
            if let Err(error) = terminal.draw(|frame| app.render(frame)) {
                break Err(error);
            }
            if hyperlinks {
                let _ = hyperlinks::write_over(&mut io::stdout(), app.hyperlinks(), &workspace_root);
            }
        }
        if app.quit {
            break Ok(());
        }
        redraw = tokio::select! {
            event = input.recv() => match event {
                Some(Ok(first)) => {
                    // Everything already read is taken now, in order, before one frame.
                    let mut batch = vec![first];
                    while batch.len() < MAX_EVENTS_PER_FRAME {
                        match input.try_recv() {
                            Ok(Ok(event)) => batch.push(event),
                            Ok(Err(error)) => {
                                tracing::warn!(%error, "reading the terminal");
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    let mut changes = false;
                    for event in bursts.take(batch, app.takes_paste()) {
                        changes |= handle_input(&mut app, event);
                    }
                    changes
                }
                Some(Err(error)) => break Err(error),
                None => break Ok(()),
            },
            event = events.recv() => match event {
                Some(event) => {
                    app.apply(event);
                    while let Ok(more) = events.try_recv() {
                        app.apply(more);
                    }
                    true
                }
                None => break Ok(()),
            },
            Some(done) = loaded.recv() => {
                app.loaded(done);
                true
            }
            // Keys held to tell typing from a paste, handed on once that is known.
            _ = tokio::time::sleep_until(bursts.deadline().map_or_else(tokio::time::Instant::now, Into::into)),
                if bursts.deadline().is_some() =>
            {
                let mut changes = false;
                for event in bursts.due(Instant::now()) {
                    changes |= handle_input(&mut app, event);
                }
                changes
            }
            _ = tick.tick(), if app.animating() => {
                app.on_tick();
                true
            }
            // SIGTERM or SIGHUP (the terminal closed): end the turn as Ctrl+C does,
            // then quit; the agent journals every result before it stops.
            _ = &mut terminated => {
                let _ = ops.send(Op::Cancel);
                break Ok(());
            }
        };
    };
    stop_reading(&reading);
    let _ = ops.send(Op::Quit);
    disable_extras();
    // The terminal may be gone (its window closed). ratatui's restore and the
    // terminal's drop report a failure on stderr, and printing to a closed stderr
    // panics, so the failure is left unreported: there is no terminal to tell.
    if terminal.show_cursor().is_ok() {
        drop(terminal);
    } else {
        std::mem::forget(terminal);
    }
    let _ = ratatui::try_restore();
    let _ = tokio::time::timeout(Duration::from_secs(5), agent_task).await;
    result.map(|()| app.state.sessions.clone())
}

/// `text` in at most `width` terminal columns, its end replaced by `…` when cut.
pub(crate) fn ellipsized(text: &str, width: usize) -> String {
    use unicode_truncate::UnicodeTruncateStr;
    use unicode_width::UnicodeWidthStr;
    if text.width() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let (kept, _) = text.unicode_truncate(width - 1);
    format!("{kept}…")
}
