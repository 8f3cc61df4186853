//! Rendering cost: one frame of the whole screen with a 10,000-message chat (warm
//! cache: only visible lines are copied), and keystroke-to-frame while a stream is
//! arriving (a text delta and a key, then a frame), and the archive browser over
//! 120,000 files.

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use scratchpad::compact::{CompactConfig, Stage, StageEvent};
use scratchpad::message::Message;
use scratchpad::protocol::{AgentEvent, ContextStatus};
use scratchpad::tui::app::App;

fn busy_app(messages: usize) -> (App, tokio::sync::mpsc::UnboundedReceiver<scratchpad::protocol::Op>) {
    let (ops, ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut app = App::new(ops, std::env::temp_dir(), CompactConfig::default());
    for i in 0..messages {
        match i % 3 {
            0 => app.apply(AgentEvent::TurnStarted { turn: scratchpad::protocol::TurnId(1),
                request: format!("request {i}: please look at module {i} and explain what it does"),
            }),
            1 => app.apply(AgentEvent::AssistantMessage { turn: scratchpad::protocol::TurnId(1),
                message: Message::assistant_text(format!(
                    "## Module {i}\n\nIt parses **input** and returns `tokens`.\n- first point about it\n- second point\n\n```rust\nfn item_{i}() {{}}\n```"
                )),
            }),
            _ => app.apply(AgentEvent::Compaction {
                event: StageEvent {
                    chars_after: 39_000,
                    paths: vec![format!(".task_outputs/tool-results/toolu_{i}.txt")],
                    replaced: 1,
                    ..StageEvent::start(Stage::MicroCompact, 50, 61_000, String::new())
                },
            }),
        }
    }
    app.apply(AgentEvent::Context {
        status: ContextStatus {
            estimate: 39_000,
            limit: 50_000,
            target: 40_000,
            messages: 49,
            snip_max_messages: 50,
            fixed: 2_500,
            tokens: None,
            background: None,
            cache_missed: None,
        },
    });
    (app, ops_rx)
}

fn bench_render(c: &mut Criterion) {
    let (mut app, _ops) = busy_app(10_000);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
    terminal.draw(|frame| app.render(frame)).expect("first frame");
    c.bench_function("frame_10k_messages_120x40", |b| {
        b.iter(|| terminal.draw(|frame| app.render(frame)).expect("frame").area)
    });
    app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "stream please".into(),
    });
    let mut n = 0u64;
    c.bench_function("keystroke_to_frame_while_streaming", |b| {
        b.iter(|| {
            n += 1;
            // Responses of a realistic length: finish one every 400 deltas (2 KB).
            if n.is_multiple_of(400) {
                app.apply(AgentEvent::AssistantMessage {
                    turn: scratchpad::protocol::TurnId(1),
                    message: Message::assistant_text("word ".repeat(400)),
                });
            }
            app.apply(AgentEvent::TextDelta {
                turn: scratchpad::protocol::TurnId(1),
                text: "word ".into(),
            });
            let key = if n.is_multiple_of(2) {
                KeyCode::Char('x')
            } else {
                KeyCode::Backspace
            };
            app.handle_key(KeyEvent::new(key, KeyModifiers::NONE));
            terminal.draw(|frame| app.render(frame)).expect("frame").area
        })
    });
}

/// The archive browser over 120,000 files: a key press and the frame after it
/// (only the rows that fit are built).
fn bench_browser(c: &mut Criterion) {
    use scratchpad::tui::browser::{Browser, FileEntry};
    let mut browser = Browser::new();
    browser.listed(
        (0..120_000)
            .map(|n| FileEntry {
                path: format!(".task_outputs/tool-results/toolu_{n:06}.txt"),
                size: 4_000,
                modified: 1_800_000_000,
                origin: "micro_compact".into(),
            })
            .collect(),
    );
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("test backend");
    c.bench_function("browser_120k_files_key_and_frame_120x40", |b| {
        b.iter(|| {
            browser.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
            terminal
                .draw(|frame| browser.render(frame, frame.area()))
                .expect("frame")
                .area
        })
    });
}

criterion_group!(benches, bench_render, bench_browser);
criterion_main!(benches);
