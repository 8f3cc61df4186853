//! The full-screen app: one loop selecting over terminal input, agent events, disk
//! work done off this thread, and a tick (only while something animates), redrawing
//! only after a change, so an idle app uses no CPU.

pub mod app;
pub mod browser;
pub mod chat;
pub mod commands;
pub mod context_view;
pub mod disk;
pub mod gauge;
pub mod help;
pub mod hyperlinks;
pub mod input;
pub mod keymap;
pub mod markdown;
pub mod modal;
pub mod state;
pub mod status;
pub mod theme;
pub mod toast;
pub mod tools_pane;
pub mod welcome;

use std::io;
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event, EventStream,
    MouseEventKind,
};
use crossterm::execute;
use futures::StreamExt;
use tokio::sync::mpsc::unbounded_channel;

use crate::agent::AskPolicy;
use crate::launch::Launch;
use crate::protocol::Op;
use app::App;

/// Input events handled between two frames at most, so a flood still gets drawn.
const MAX_EVENTS_PER_FRAME: usize = 100_000;

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
/// Returns the id of the session, for the way back (`scratchpad --continue`).
pub async fn run(launch: Launch) -> io::Result<String> {
    let mouse = launch.config.ui.mouse;
    let launch_theme = launch.config.ui.theme;
    let hyperlinks = hyperlinks::enabled(launch.config.ui.hyperlinks);
    let workspace = launch.workspace.root().to_path_buf();
    let workspace_root = workspace.clone();
    let config = launch.config.compaction.clone();
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
    let mut input = EventStream::new();
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
            event = input.next() => match event {
                Some(Ok(event)) => {
                    let mut changes = handle_input(&mut app, event);
                    // Everything already typed is taken now, in order, before one frame:
                    // the stream wakes once per read of the terminal, and a burst (a paste
                    // without bracketed paste) would otherwise wait for the next key.
                    for _ in 0..MAX_EVENTS_PER_FRAME {
                        if !crossterm::event::poll(Duration::ZERO).unwrap_or(false) {
                            break;
                        }
                        match crossterm::event::read() {
                            Ok(event) => changes |= handle_input(&mut app, event),
                            Err(_) => break,
                        }
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
    result.map(|()| app.state.session.id.clone())
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
