//! Snapshots of every visible widget and of the whole screen, through ratatui's
//! `TestBackend`, at 120x40 and 60x15. Colours are not in the text snapshots, so the
//! gauge zones are checked cell by cell.

use std::time::{Duration, SystemTime};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use scratchpad::compact::{CompactConfig, Stage, StageEvent};
use scratchpad::context_map::breakdown;
use scratchpad::message::{ContentBlock, Message, Role, ToolResultContent};
use scratchpad::protocol::{
    AgentEvent, CallPoint, ContextStatus, McpAction, Op, PermissionAnswer, TokenBasis, TokenFigure, ToolStatus,
    TurnOutcome, Window, WindowSource,
};
use scratchpad::provider::Usage;
use scratchpad::tui::app::App;
use scratchpad::tui::gauge::{Zone, tick_colour, zone_colour};

struct Screen {
    app: App,
    dir: tempfile::TempDir,
    _ops: tokio::sync::mpsc::UnboundedReceiver<scratchpad::protocol::Op>,
}

/// The start of the session every screen here shows: Claude, a 200k window, and
/// `read_only` when it is a read-only view.
fn session_started(read_only: Option<String>) -> AgentEvent {
    AgentEvent::SessionStarted {
        session_id: "20261202-120000-1".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        workspace: "/home/dev/project".into(),
        sandbox: "workspace-write".into(),
        sandbox_layers: Vec::new(),
        window: Window {
            tokens: 200_000,
            source: WindowSource::ModelTable {
                family: "claude-*".into(),
            },
        },
        limit_note: None,
        limit_warning: false,
        read_only,
    }
}

fn screen() -> Screen {
    let dir = tempfile::tempdir().unwrap();
    let (ops, ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut app = App::new(ops, dir.path().to_path_buf(), CompactConfig::default());
    app.apply(session_started(None));
    app.apply(context(12_300, 7));
    Screen { app, dir, _ops: ops_rx }
}

fn context(estimate: usize, messages: usize) -> AgentEvent {
    AgentEvent::Context {
        status: ContextStatus {
            estimate,
            limit: 50_000,
            target: 40_000,
            messages,
            snip_max_messages: 50,
            fixed: 2_400,
            tokens: None,
            background: None,
            cache_missed: None,
        },
    }
}

fn draw(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| app.render(frame)).unwrap();
    terminal
}

/// Every glyph of the app as it stands, drawn in each palette, is readable: text at
/// 4.5:1 against what is under it (WCAG AA), rules and bars at 3:1. What is under a
/// cell with no background of its own is the terminal's, somewhere in the range the
/// palette is made for; the terminal's own foreground is readable by definition.
fn assert_readable_in_both_themes(app: &mut App, width: u16, height: u16, view: &str) {
    use ratatui::style::Modifier;
    use scratchpad::tui::theme::{DARK, EITHER, LIGHT, contrast, rgb, with_palette};
    // A silent terminal's palette too: its markers, warnings and headings read on
    // black and on white (they vanished on white), held to 4:1 on both.
    for palette in [DARK, LIGHT, EITHER] {
        let terminal = with_palette(palette, || draw(app, width, height));
        let buffer = terminal.backend().buffer();
        let mut unreadable = Vec::new();
        for y in 0..height {
            for x in 0..width {
                let cell = &buffer[(x, y)];
                let symbol = cell.symbol();
                if symbol.trim().is_empty() {
                    continue;
                }
                assert!(
                    !cell.modifier.contains(Modifier::DIM),
                    "{view} ({}): ({x},{y}) {symbol:?} is dimmed, which no contrast can be promised for",
                    palette.name
                );
                // Reversed or not, the same two colours meet.
                let (fg, bg) = (cell.fg, cell.bg);
                let is_rule = symbol.chars().all(|c| ('\u{2500}'..='\u{259f}').contains(&c));
                let needed = match (is_rule, palette == EITHER) {
                    (true, _) => 3.0,
                    (false, true) => 4.0,
                    (false, false) => 4.5,
                };
                // The terminal's foreground over its own background, or a colour over
                // the terminal's foreground: the terminal's choice either way.
                let Some(front) = (if fg == Color::Reset { None } else { Some(fg) }) else {
                    continue;
                };
                let front = rgb(front).unwrap_or_else(|| {
                    panic!(
                        "{view} ({}): ({x},{y}) {symbol:?} has the terminal-defined colour {front:?}",
                        palette.name
                    )
                });
                let behind: Vec<(u8, u8, u8)> = match bg {
                    Color::Reset => palette.backgrounds.to_vec(),
                    colour => vec![rgb(colour).unwrap_or_else(|| {
                        panic!(
                            "{view} ({}): ({x},{y}) has the terminal-defined background {colour:?}",
                            palette.name
                        )
                    })],
                };
                let worst = behind
                    .iter()
                    .map(|&back| contrast(front, back))
                    .fold(f64::INFINITY, f64::min);
                if worst < needed {
                    unreadable.push(format!("({x},{y}) {symbol:?} {worst:.2}:1"));
                }
            }
        }
        assert!(
            unreadable.is_empty(),
            "{view} ({}): {} glyphs under their contrast, first {:?}",
            palette.name,
            unreadable.len(),
            &unreadable[..unreadable.len().min(8)]
        );
    }
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Type `text` key by key.
fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.handle_key(key(KeyCode::Char(c)));
    }
}

fn stage(stage: Stage, replaced: usize, before: usize, after: usize, paths: &[&str]) -> AgentEvent {
    AgentEvent::Compaction {
        event: StageEvent {
            messages_after: 49,
            chars_after: after,
            paths: paths.iter().map(|p| p.to_string()).collect(),
            replaced,
            ..StageEvent::start(stage, 60, before, String::new())
        },
    }
}

fn conversation(app: &mut App) {
    app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "Find why the parser drops the last token and fix it".into(),
    });
    app.apply(AgentEvent::TextDelta {
        turn: scratchpad::protocol::TurnId(1),
        text: "## Plan\n\n- read `src/parser.rs`\n- run the **tests**\n\n```rust\nfn parse() {}\n```\nLooking now."
            .into(),
    });
    app.apply(AgentEvent::AssistantMessage {
        turn: scratchpad::protocol::TurnId(1),
        message: Message::assistant_text(
            "## Plan\n\n- read `src/parser.rs`\n- run the **tests**\n\n```rust\nfn parse() {}\n```\nLooking now.",
        ),
    });
    app.apply(AgentEvent::ToolStarted {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_01".into(),
        name: "read_file".into(),
        summary: "src/parser.rs".into(),
    });
    app.apply(AgentEvent::ToolRunning {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_01".into(),
    });
    app.apply(AgentEvent::ToolFinished {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_01".into(),
        name: "read_file".into(),
        status: ToolStatus::Ok,
        output: "pub fn parse(input: &str) -> Vec<Token> {\n    let mut tokens = Vec::new();\n}\n".into(),
    });
    app.apply(AgentEvent::ToolStarted {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_02".into(),
        name: "bash".into(),
        summary: "rm -rf build".into(),
    });
    app.apply(AgentEvent::ToolFinished {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_02".into(),
        name: "bash".into(),
        status: ToolStatus::Refused,
        output: "Refused: the user did not allow this.".into(),
    });
}

#[test]
fn empty_start() {
    let mut s = screen();
    insta::assert_snapshot!("empty_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "empty start");
    insta::assert_snapshot!("empty_80x24", draw(&mut s.app, 80, 24).backend());
    insta::assert_snapshot!("empty_60x15", draw(&mut s.app, 60, 15).backend());
}

#[test]
fn streaming_markdown() {
    let mut s = screen();
    conversation(&mut s.app);
    s.app.apply(AgentEvent::TextDelta {
        turn: scratchpad::protocol::TurnId(1),
        text: "The loop stops one token early because".into(),
    });
    insta::assert_snapshot!("streaming_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "streamed markdown");
    insta::assert_snapshot!("streaming_80x24", draw(&mut s.app, 80, 24).backend());
    insta::assert_snapshot!("streaming_60x15", draw(&mut s.app, 60, 15).backend());
}

#[test]
fn tool_running() {
    let mut s = screen();
    conversation(&mut s.app);
    s.app.apply(AgentEvent::ToolStarted {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_03".into(),
        name: "bash".into(),
        summary: "cargo test --workspace".into(),
    });
    s.app.apply(AgentEvent::ToolRunning {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_03".into(),
    });
    insta::assert_snapshot!("tool_running_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "a running tool");
    insta::assert_snapshot!("tool_running_80x24", draw(&mut s.app, 80, 24).backend());
}

#[test]
fn every_kind_of_compaction_marker() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "long task".into(),
    });
    s.app.apply(stage(
        Stage::ToolResultBudget,
        1,
        317_100,
        109_600,
        &[".task_outputs/tool-results/toolu_a.txt"],
    ));
    s.app.apply(stage(
        Stage::SnipCompact,
        37,
        84_100,
        41_900,
        &[".transcripts/transcript_snip_compact_1.jsonl"],
    ));
    s.app.apply(stage(
        Stage::MicroCompact,
        2,
        63_100,
        34_400,
        &[
            ".task_outputs/tool-results/toolu_b.txt",
            ".task_outputs/tool-results/toolu_c.txt",
        ],
    ));
    s.app.apply(stage(
        Stage::FitToolResults,
        1,
        51_000,
        31_000,
        &[".task_outputs/tool-results/toolu_d.txt"],
    ));
    s.app.apply(AgentEvent::CompactionRequested {
        by: scratchpad::protocol::CompactionRequester::Model,
        focus: Some("the parser".into()),
    });
    s.app.apply(stage(
        Stage::CompactHistory,
        52,
        33_800,
        1_100,
        &[".transcripts/transcript_compact_history_2.jsonl"],
    ));
    s.app.apply(stage(
        Stage::ReactiveCompact,
        8,
        48_000,
        9_000,
        &[".transcripts/transcript_reactive_compact_3.jsonl"],
    ));
    s.app.apply(AgentEvent::Compaction {
        event: StageEvent {
            errors: vec!["cannot write .transcripts/x: No space left on device (os error 28)".into()],
            ..StageEvent::start(Stage::SnipCompact, 51, 40_000, String::new())
        },
    });
    insta::assert_snapshot!("markers_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "compaction markers");
    insta::assert_snapshot!("markers_80x24", draw(&mut s.app, 80, 24).backend());
    // Selecting a marker highlights it; Enter opens its file in the browser.
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Up));
    insta::assert_snapshot!("marker_selected_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "a selected marker");
}

/// Cells of the 110-cell bar filled at `estimate` of a 50,000 limit.
fn expected_fill(estimate: usize) -> usize {
    ((estimate.min(50_000) as f64 / 50_000.0) * 110.0).round() as usize
}

fn gauge_cells(terminal: &Terminal<TestBackend>, row: u16) -> Vec<(String, Option<Color>)> {
    let buffer = terminal.backend().buffer();
    (0..buffer.area.width)
        .map(|x| {
            let cell = &buffer[(x, row)];
            (cell.symbol().to_string(), Some(cell.fg))
        })
        .collect()
}

#[test]
fn the_gauge_in_each_zone() {
    // Calm: measured by the last call; warm: re-estimated after a compaction; over:
    // the demo's own count.
    for (estimate, zone, name, basis) in [
        (12_300, Zone::Calm, "calm", TokenBasis::Reported),
        (45_000, Zone::Warm, "warm", TokenBasis::Estimated),
        (61_000, Zone::Over, "over", TokenBasis::DemoCount),
    ] {
        let mut s = screen();
        s.app.apply(AgentEvent::Context {
            status: ContextStatus {
                estimate,
                limit: 50_000,
                target: 40_000,
                messages: 51,
                snip_max_messages: 50,
                fixed: 2_400,
                tokens: Some(TokenFigure {
                    tokens: (estimate as u64 + 2_400) * 10 / 42,
                    window_tokens: 200_000,
                    request_chars: estimate + 2_400,
                    chars_per_token: 4.2,
                    basis,
                }),
                background: None,
                cache_missed: None,
            },
        });
        let terminal = draw(&mut s.app, 120, 40);
        insta::assert_snapshot!(format!("gauge_{name}_120x40"), terminal.backend());
        assert_readable_in_both_themes(&mut s.app, 120, 40, &format!("the gauge {name}"));
        // The bar is on the first gauge row: filled cells in the zone colour, the
        // ticks at 80% and 100% in the tick colour.
        let row = 40 - 3 - 2;
        let cells = gauge_cells(&terminal, row);
        let bar: Vec<&(String, Option<Color>)> = cells.iter().skip(9).take(110).collect();
        assert_eq!(bar[0].1, Some(zone_colour(zone)), "{name}: first cell");
        let ticks: Vec<usize> = bar
            .iter()
            .enumerate()
            .filter(|(_, c)| c.0 == "┃")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(ticks, vec![88, 109], "{name}: ticks at 80% and at the end");
        assert!(
            ticks
                .iter()
                .all(|&t| bar[t].1 == Some(tick_colour(t < expected_fill(estimate)))),
            "{name}: ticks over the fill in the colour for a filled cell"
        );
        let filled = bar.iter().filter(|c| c.0 == "█").count();
        let expected = expected_fill(estimate);
        let expected_filled = expected - ticks.iter().filter(|&&t| t < expected).count();
        assert_eq!(filled, expected_filled, "{name}: filled cells");
        let narrow = draw(&mut s.app, 60, 15);
        insta::assert_snapshot!(format!("gauge_{name}_60x15"), narrow.backend());
    }
}

fn fixed_time(path: &std::path::Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn browser_list_and_viewer_with_search() {
    let mut s = screen();
    let transcripts = s.dir.path().join(".transcripts");
    let outputs = s.dir.path().join(".task_outputs/tool-results");
    std::fs::create_dir_all(&transcripts).unwrap();
    std::fs::create_dir_all(&outputs).unwrap();
    let history = [
        Message::user_text("Find the bug in the parser"),
        Message::blocks(
            Role::Assistant,
            vec![
                ContentBlock::Text {
                    text: "Reading it.".into(),
                    extra: Default::default(),
                },
                ContentBlock::ToolUse {
                    id: "toolu_01".into(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": "src/parser.rs"}),
                    extra: Default::default(),
                },
            ],
        ),
        Message::blocks(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "toolu_01".into(),
                content: ToolResultContent::Text("fn parse() {\n    // the bug is here\n}".into()),
                is_error: None,
                extra: Default::default(),
            }],
        ),
    ];
    let jsonl: String = history
        .iter()
        .map(|m| serde_json::to_string(m).unwrap() + "\n")
        .collect();
    let transcript = transcripts.join("transcript_snip_compact_1.jsonl");
    std::fs::write(&transcript, jsonl).unwrap();
    fixed_time(&transcript, 1_796_220_000);
    let output = outputs.join("toolu_01.txt");
    let long_line = "a long line of build output that goes on and on ".repeat(3);
    std::fs::write(&output, format!("line one\n{long_line}\nline three\n")).unwrap();
    fixed_time(&output, 1_796_210_000);

    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    insta::assert_snapshot!("browser_list_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "the archive browser");
    insta::assert_snapshot!("browser_list_80x24", draw(&mut s.app, 80, 24).backend());
    insta::assert_snapshot!("browser_list_60x15", draw(&mut s.app, 60, 15).backend());
    s.app.handle_key(key(KeyCode::Enter));
    insta::assert_snapshot!("viewer_120x40", draw(&mut s.app, 120, 40).backend());
    insta::assert_snapshot!("viewer_80x24", draw(&mut s.app, 80, 24).backend());
    type_text(&mut s.app, "/bug");
    s.app.handle_key(key(KeyCode::Enter));
    insta::assert_snapshot!("viewer_search_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "the viewer with a search");
    // Only the matches are marked, not the lines that hold them.
    let terminal = draw(&mut s.app, 120, 40);
    let buffer = terminal.backend().buffer();
    let marked = scratchpad::tui::theme::palette().match_background;
    let mut marked_runs = Vec::new();
    for y in 0..40 {
        let run: String = (0..120)
            .map(|x| &buffer[(x, y)])
            .filter(|cell| cell.bg == marked)
            .map(|cell| cell.symbol().to_string())
            .collect();
        if !run.is_empty() {
            marked_runs.push(run.to_lowercase());
        }
    }
    assert!(!marked_runs.is_empty(), "the search marks its matches");
    assert!(
        marked_runs.iter().all(|run| run.split("bug").all(str::is_empty)),
        "marked cells are the matches only: {marked_runs:?}"
    );
    let scroll = |app: &App| match &app.overlay {
        scratchpad::tui::app::Overlay::Browser(browser) => browser.viewer.as_ref().map(|viewer| viewer.scroll),
        _ => None,
    };
    let first_match = scroll(&s.app).expect("the viewer is open");
    assert!(first_match > 0, "the search moved the view");
    s.app.handle_key(key(KeyCode::Char('n')));
    s.app.handle_key(key(KeyCode::Char('n')));
    // b goes back to where the search started, however many steps since.
    s.app.handle_key(key(KeyCode::Char('b')));
    assert_eq!(scroll(&s.app), Some(0));
    s.app.handle_key(key(KeyCode::Esc));
    // The saved output: long lines wrap in the viewer.
    s.app.handle_key(key(KeyCode::Down));
    s.app.handle_key(key(KeyCode::Enter));
    insta::assert_snapshot!("viewer_wrapped_60x15", draw(&mut s.app, 60, 15).backend());
    s.app.handle_key(key(KeyCode::Esc));
    s.app.handle_key(key(KeyCode::Esc));
    assert!(matches!(s.app.overlay, scratchpad::tui::app::Overlay::None));
}

#[test]
fn permission_modal() {
    let mut s = screen();
    conversation(&mut s.app);
    s.app.apply(AgentEvent::PermissionRequest {
        turn: scratchpad::protocol::TurnId(1),
        request_id: 7,
        tool: "bash".into(),
        question: "`rm -rf build` deletes files. Run it?".into(),
        subject: "rm -rf build".into(),
        always: None,
    });
    insta::assert_snapshot!("modal_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "the permission question");
    insta::assert_snapshot!("modal_80x24", draw(&mut s.app, 80, 24).backend());
    insta::assert_snapshot!("modal_60x15", draw(&mut s.app, 60, 15).backend());
    s.app.apply(AgentEvent::PermissionRequest {
        turn: scratchpad::protocol::TurnId(1),
        request_id: 8,
        tool: "bash".into(),
        question: "The command matches the ask pattern `cargo`. Run it?".into(),
        subject: "cargo test --workspace".into(),
        always: Some("bash: \"cargo test …\"".into()),
    });
    insta::assert_snapshot!("modal_always_120x40", draw(&mut s.app, 120, 40).backend());
}

#[test]
fn the_modal_ignores_keys_typed_before_and_just_after_it_appeared() {
    let mut s = screen();
    s.app.apply(AgentEvent::PermissionRequest {
        turn: scratchpad::protocol::TurnId(1),
        request_id: 3,
        tool: "read_file".into(),
        question: "read_file wants `/etc/shadow`, which is outside the workspace. Allow?".into(),
        subject: "/etc/shadow".into(),
        always: Some("read_file: /etc/shadow".into()),
    });
    // Typed while the agent worked, before the modal was ever drawn.
    s.app.handle_key(key(KeyCode::Char('a')));
    assert!(
        s.app.state.turn.permission().is_some(),
        "a key before the modal was drawn is ignored"
    );
    draw(&mut s.app, 120, 40);
    s.app.handle_key(key(KeyCode::Char('y')));
    assert!(
        s.app.state.turn.permission().is_some(),
        "a key right after it appeared is ignored"
    );
    std::thread::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE);
    s.app.handle_key(key(KeyCode::Char('n')));
    assert!(s.app.state.turn.permission().is_none(), "a deliberate answer is taken");
    match s._ops.try_recv() {
        Ok(Op::Permission { request_id: 3, answer }) => assert_eq!(answer, PermissionAnswer::Deny),
        other => panic!("expected the deny answer, got {other:?}"),
    }
}

#[test]
fn help_overlay() {
    let mut s = screen();
    s.app.handle_key(key(KeyCode::Char('?')));
    insta::assert_snapshot!("help_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "help");
    insta::assert_snapshot!("help_80x24", draw(&mut s.app, 80, 24).backend());
    insta::assert_snapshot!("help_60x15", draw(&mut s.app, 60, 15).backend());
    // A small terminal scrolls the help to show the commands.
    for _ in 0..12 {
        s.app.handle_key(key(KeyCode::Down));
    }
    insta::assert_snapshot!("help_scrolled_60x15", draw(&mut s.app, 60, 15).backend());
    let offset = |app: &App| match &app.overlay {
        scratchpad::tui::app::Overlay::Help(view) => view.offset(),
        _ => panic!("the help is open"),
    };
    // 15 rows: the box is the screen, 13 lines inside it.
    s.app.handle_key(key(KeyCode::PageDown));
    assert_eq!(offset(&s.app), 12 + 13, "PgDn moves a page");
    s.app.handle_key(key(KeyCode::PageUp));
    assert_eq!(offset(&s.app), 12);
    for (code, at_top) in [
        (KeyCode::End, false),
        (KeyCode::Home, true),
        (KeyCode::Char('G'), false),
        (KeyCode::Char('g'), true),
    ] {
        s.app.handle_key(key(code));
        let shown = text_of(&draw(&mut s.app, 60, 15));
        if at_top {
            assert_eq!(offset(&s.app), 0, "{code:?}");
        } else {
            assert!(offset(&s.app) > 25, "{code:?}: {}", offset(&s.app));
            // The help's last row is on screen.
            let (_, rows) = scratchpad::tui::keymap::VIEWS.last().expect("views");
            let last = rows.last().expect("rows").what;
            assert!(shown.contains(last), "{code:?}: {last:?} in {shown}");
        }
    }
}

#[test]
fn slash_command_popup() {
    let mut s = screen();
    type_text(&mut s.app, "/co");
    insta::assert_snapshot!("slash_popup_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "the slash popup");
    insta::assert_snapshot!("slash_popup_80x24", draw(&mut s.app, 80, 24).backend());
    // At 120 columns every row is whole; at 60 one cut says so.
    s.app.handle_key(key(KeyCode::Backspace));
    s.app.handle_key(key(KeyCode::Backspace));
    assert_eq!(s.app.input.text(), "/");
    let wide = text_of(&draw(&mut s.app, 120, 40));
    for command in scratchpad::tui::commands::SlashCommand::all() {
        let row = wide
            .lines()
            .find(|line| line.contains(&format!("│{} ", command.name())))
            .unwrap_or_else(|| panic!("{command:?} listed: {wide}"));
        assert!(!row.contains('…'), "{command:?} whole: {row}");
    }
    insta::assert_snapshot!("slash_popup_all_60x30", draw(&mut s.app, 60, 30).backend());
}

/// The `/` finder lists the actions with their keys and what each would do now: with
/// a marker selected, `/fork` names the compaction it forks before, and `/summarise`
/// (no request selected) says why it cannot run instead of vanishing.
#[test]
fn the_finder_says_what_each_action_would_do_now() {
    let mut s = set_up(Setup::Marker);
    s.app.handle_key(key(KeyCode::Tab));
    type_text(&mut s.app, "/");
    let wide = text_of(&draw(&mut s.app, 120, 40));
    assert!(wide.contains("f in the chat"), "{wide}");
    assert!(
        wide.contains("fork before: micro_compact · 3 old tool results"),
        "{wide}"
    );
    assert!(wide.contains("✗ select a request in the chat first"), "{wide}");
    insta::assert_snapshot!("finder_all_120x40", draw(&mut s.app, 120, 40).backend());
    insta::assert_snapshot!("finder_all_80x24", draw(&mut s.app, 80, 24).backend());
    type_text(&mut s.app, "fork");
    insta::assert_snapshot!("finder_fork_80x24", draw(&mut s.app, 80, 24).backend());
    for _ in 0.."fork".len() {
        s.app.handle_key(key(KeyCode::Backspace));
    }
    type_text(&mut s.app, "summarise");
    insta::assert_snapshot!("finder_summarise_120x40", draw(&mut s.app, 120, 40).backend());
}

/// The tour's note at the first marker, over the top of the chat, and the next one
/// at the first summary; Ctrl+D dismisses it, and the app asks the disk to keep that.
#[test]
fn the_tour_notes_at_the_first_marker_and_the_first_summary() {
    use scratchpad::tui::disk::Loaded;
    let mut s = screen();
    // The demo (a session of another provider has no tour).
    s.app.data_in(s.dir.path().join("data"));
    s.app.loaded(Loaded::Tour(Ok(Vec::new())));
    s.app.apply(stage(
        Stage::MicroCompact,
        3,
        60_000,
        40_000,
        &[".transcripts/stage-x.jsonl"],
    ));
    let text = text_of(&draw(&mut s.app, 120, 40));
    assert!(text.contains("tour 1 of 3"), "{text}");
    insta::assert_snapshot!("tour_first_marker_120x40", draw(&mut s.app, 120, 40).backend());
    insta::assert_snapshot!("tour_first_marker_80x24", draw(&mut s.app, 80, 24).backend());
    s.app.handle_key(ctrl('d'));
    assert!(!text_of(&draw(&mut s.app, 120, 40)).contains("tour 1 of 3"));
    let kept = std::fs::read_to_string(s.dir.path().join("data/tour.json")).unwrap();
    assert_eq!(kept, r#"["first_marker"]"#);
    s.app.apply(stage(
        Stage::CompactHistory,
        30,
        60_000,
        9_000,
        &[".transcripts/transcript_compact_history_1.jsonl"],
    ));
    insta::assert_snapshot!("tour_first_summary_80x24", draw(&mut s.app, 80, 24).backend());
}

/// A marker grown by its receipt past the middle of the chat: the tour's note still
/// leaves the marker's first line, the one it is about, in sight.
#[test]
fn the_tour_note_leaves_the_markers_first_line_in_sight() {
    use scratchpad::tui::disk::Loaded;
    let mut s = screen();
    s.app.data_in(s.dir.path().join("data"));
    s.app.loaded(Loaded::Tour(Ok(Vec::new())));
    let AgentEvent::Compaction { mut event } =
        stage(Stage::MicroCompact, 12, 60_000, 40_000, &[".transcripts/stage-x.jsonl"])
    else {
        unreachable!("stage builds a compaction event")
    };
    event.items = (1..=12)
        .map(|position| scratchpad::compact::ReceiptItem {
            position,
            role: scratchpad::message::Role::User,
            what: format!("read_file src/module_{position}.rs (result)"),
            chars_before: 4_000,
            chars_after: 70,
            saved: None,
            tool_use_id: None,
            was: None,
        })
        .collect();
    s.app.apply(AgentEvent::Compaction { event });
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Right));
    let shown = text_of(&draw(&mut s.app, 80, 24));
    assert!(shown.contains("tour 1 of 3"), "{shown}");
    assert!(shown.contains("◆ micro_compact"), "{shown}");
}

/// F1 over /context opens the help on /context's keys, and Esc goes back to
/// /context, not to the chat.
#[test]
fn f1_over_a_view_shows_its_keys_first_and_returns_to_it() {
    let mut s = set_up(Setup::Context);
    s.app.handle_key(key(KeyCode::F(1)));
    assert_eq!(overlay_name(&s.app), "help");
    let shown = text_of(&draw(&mut s.app, 80, 24));
    assert!(shown.contains("here, in /context"), "{shown}");
    insta::assert_snapshot!("help_over_context_80x24", draw(&mut s.app, 80, 24).backend());
    s.app.handle_key(key(KeyCode::Esc));
    assert_eq!(overlay_name(&s.app), "context");
}

/// `/compact --preview` opens the review step before a summary exists: what would
/// leave the context and each stage's receipt; Ctrl+S compacts now with the focus,
/// Esc closes with nothing sent.
#[test]
fn the_preview_is_the_review_step_before_a_summary() {
    use scratchpad::protocol::Op;
    let mut s = screen();
    type_text(&mut s.app, "/compact --preview the parser");
    s.app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::Preview {
            focus: Some("the parser".into())
        })
    );
    assert_eq!(overlay_name(&s.app), "preview");
    let AgentEvent::Compaction { mut event } = stage(Stage::CompactHistory, 12, 61_000, 0, &[]) else {
        unreachable!("stage builds a compaction event")
    };
    event.items = (1..=12)
        .map(|position| scratchpad::compact::ReceiptItem {
            position,
            role: scratchpad::message::Role::User,
            what: format!("request: step {position}"),
            chars_before: 4_000,
            chars_after: 0,
            saved: None,
            tool_use_id: None,
            was: None,
        })
        .collect();
    s.app.apply(AgentEvent::Preview { events: vec![event] });
    let shown = text_of(&draw(&mut s.app, 80, 24));
    assert!(
        shown.contains("What leaves the context: 12 messages (48.0k chars)"),
        "{shown}"
    );
    insta::assert_snapshot!("preview_review_80x24", draw(&mut s.app, 80, 24).backend());
    insta::assert_snapshot!("preview_review_120x40", draw(&mut s.app, 120, 40).backend());
    s.app.handle_key(ctrl('s'));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::Compact {
            focus: Some("the parser".into())
        })
    );
    assert_eq!(overlay_name(&s.app), "none");
    type_text(&mut s.app, "/compact --preview");
    s.app.handle_key(key(KeyCode::Enter));
    s.app.handle_key(key(KeyCode::Esc));
    assert_eq!(overlay_name(&s.app), "none");
    let sent: Vec<Op> = std::iter::from_fn(|| s._ops.try_recv().ok()).collect();
    assert_eq!(sent, vec![Op::Preview { focus: None }], "Esc sends nothing");
}

#[test]
fn context_view_and_timeline() {
    let mut s = screen();
    let messages = vec![
        Message::user_text("Refactor the storage layer"),
        Message::user_text("[12 messages archived at .transcripts/transcript_snip_compact_1.jsonl]"),
        Message::blocks(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "toolu_01".into(),
                name: "read_file".into(),
                input: serde_json::json!({"path": "src/store.rs"}),
                extra: Default::default(),
            }],
        ),
        Message::blocks(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: "toolu_01".into(),
                content: ToolResultContent::Text("x".repeat(18_000)),
                is_error: None,
                extra: Default::default(),
            }],
        ),
    ];
    for (estimate, stages) in [
        (8_000, vec![]),
        (31_000, vec![]),
        (52_000, vec![Stage::MicroCompact]),
        (38_000, vec![]),
        (55_000, vec![Stage::FitToolResults]),
        (21_000, vec![]),
    ] {
        s.app.apply(context(estimate, 10));
        let before = (!stages.is_empty()).then_some(estimate + 10_000);
        for &stage_name in &stages {
            s.app.apply(stage(stage_name, 1, estimate + 10_000, estimate, &[]));
        }
        // A compaction before a call costs that call part of the prompt cache.
        let cache_rewritten = (!stages.is_empty()).then_some(3_000);
        s.app.apply(AgentEvent::ModelCall {
            point: CallPoint {
                before,
                estimate,
                messages: 10,
                request_chars: Some(estimate + 2_400),
                input_tokens: Some((estimate / 4) as u64),
                stages,
                cache_read: Some(1_000),
                cache_rewritten,
                ..CallPoint::default()
            },
            usage: Usage {
                input_tokens: (estimate / 4) as u64,
                ..Usage::default()
            },
        });
    }
    s.app.apply(AgentEvent::Context {
        status: ContextStatus {
            estimate: 21_000,
            limit: 50_000,
            target: 40_000,
            messages: 10,
            snip_max_messages: 50,
            fixed: 2_400,
            tokens: Some(TokenFigure {
                tokens: 5_595,
                window_tokens: 200_000,
                request_chars: 23_400,
                chars_per_token: 23_400.0 / 5_595.0,
                basis: TokenBasis::Reported,
            }),
            background: None,
            cache_missed: None,
        },
    });
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Completed,
    });
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            "You are scratchpad.",
            &[],
            &[],
            &[],
            &messages,
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    insta::assert_snapshot!("context_120x40", draw(&mut s.app, 120, 40).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "/context");
    insta::assert_snapshot!("context_80x24", draw(&mut s.app, 80, 24).backend());
    insta::assert_snapshot!("context_60x15", draw(&mut s.app, 60, 15).backend());
    // Enter on the largest item (the tool result) shows its text.
    s.app.handle_key(key(KeyCode::Enter));
    assert!(matches!(s.app.overlay, scratchpad::tui::app::Overlay::Browser(_)));
}

/// `/context` lists every tool result, filtered by state, and a key that cannot act
/// on the selection says so over the view rather than in the chat behind it.
#[test]
fn context_lists_tool_results_by_state_and_answers_over_the_view() {
    use scratchpad::compact::markers::cleared_reference;
    use scratchpad::protocol::Op;
    let mut s = screen();
    let result = |id: &str, text: String| {
        Message::blocks(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content: ToolResultContent::Text(text),
                is_error: None,
                extra: Default::default(),
            }],
        )
    };
    let call = |id: &str| {
        Message::blocks(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "bash".into(),
                input: serde_json::json!({"command": "seq 1 100"}),
                extra: Default::default(),
            }],
        )
    };
    let mut messages = vec![Message::user_text("count things and say how many. ".repeat(100))];
    for at in 0..14 {
        let id = format!("toolu_{at:02}");
        messages.push(call(&id));
        messages.push(if at % 3 == 0 {
            result(&id, cleared_reference(&format!(".task_outputs/tool-results/{id}.txt")))
        } else {
            result(&id, format!("line {at}\n").repeat(400 + at))
        });
    }
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            "You are scratchpad.",
            &[],
            &[],
            &[],
            &messages,
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::Inspect),
        "opening asks for the breakdown"
    );
    let listed = |s: &mut Screen| text_of(&draw(&mut s.app, 120, 40));
    assert!(listed(&mut s).contains("largest items · f: every tool result"));
    // The largest ten leave cleared results out, all but at most one.
    let largest = listed(&mut s);
    let cleared_ids = ["toolu_00", "toolu_03", "toolu_06", "toolu_09", "toolu_12"];
    let shown = cleared_ids
        .iter()
        .filter(|id| largest.contains(&format!("{id}.txt")))
        .count();
    assert!(shown <= 1, "{largest}");

    s.app.handle_key(key(KeyCode::Up));
    s.app.handle_key(key(KeyCode::Char('f')));
    let every = listed(&mut s);
    assert!(
        every.contains("every tool result (14) · f: tool results: whole"),
        "{every}"
    );
    for cleared in cleared_ids {
        assert!(every.contains(&format!("{cleared}.txt")), "{cleared} listed: {every}");
    }
    s.app.handle_key(key(KeyCode::Char('f')));
    assert!(listed(&mut s).contains("tool results: whole (9)"));
    s.app.handle_key(key(KeyCode::Char('f')));
    assert!(listed(&mut s).contains("tool results: persisted (0)"));
    // Nothing to act on: said where the eye is.
    s.app.handle_key(key(KeyCode::Char('d')));
    assert!(s._ops.try_recv().is_err(), "nothing sent");
    assert!(listed(&mut s).contains("nothing selected: the list of tool results: persisted is empty"));
    s.app.handle_key(key(KeyCode::Char('f')));
    let cleared = listed(&mut s);
    assert!(cleared.contains("tool results: cleared (5)"), "{cleared}");
    insta::assert_snapshot!("context_cleared_results_120x40", draw(&mut s.app, 120, 40).backend());
    // r on the selected cleared result asks for exactly that one back.
    s.app.handle_key(key(KeyCode::Down));
    s.app.handle_key(key(KeyCode::Char('r')));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::Restore {
            tool_use_id: "toolu_03".into()
        })
    );
    // The agent's answer arrives while the view is open: shown over it.
    s.app.apply(AgentEvent::Notice {
        message: "put back in full: bash seq 1 100 (result) (400 chars)".into(),
    });
    assert!(listed(&mut s).contains("put back in full: bash seq 1 100"));

    // On the largest list, p on an item that is no tool result says why not.
    for _ in 0..2 {
        s.app.handle_key(key(KeyCode::Char('f')));
    }
    assert_eq!(s.app.toast.as_ref().map(|t| t.text.contains("put back")), Some(true));
    let largest = listed(&mut s);
    assert!(largest.contains("largest items · f"), "{largest}");
    let breakdown_now = breakdown(
        "You are scratchpad.",
        &[],
        &[],
        &[],
        &messages,
        &CompactConfig::default(),
        &scratchpad::compact::SessionFacts::NONE,
    );
    let first_other = breakdown_now
        .largest
        .iter()
        .position(|item| item.tool_use_id.is_none())
        .expect("the long request is among the largest");
    for _ in 0..first_other {
        s.app.handle_key(key(KeyCode::Down));
    }
    s.app.handle_key(key(KeyCode::Char('p')));
    assert!(s._ops.try_recv().is_err(), "nothing sent");
    let told = s.app.toast.as_ref().map(|t| t.text.clone()).unwrap_or_default();
    assert!(told.starts_with("this acts on tool results, and this is"), "{told}");
    assert!(listed(&mut s).contains("this acts on tool results"));
}

#[test]
fn a_click_on_any_row_of_a_wrapped_link_opens_it() {
    use crossterm::event::{Event, MouseButton, MouseEvent, MouseEventKind};
    let mut s = screen();
    let path = ".transcripts/transcript_compact_history_20261202-120000_4242-17.jsonl";
    std::fs::create_dir_all(s.dir.path().join(".transcripts")).unwrap();
    std::fs::write(s.dir.path().join(path), "{\"role\":\"user\",\"content\":\"saved\"}\n").unwrap();
    s.app.apply(stage(Stage::CompactHistory, 9, 60_000, 2_000, &[path]));
    let terminal = draw(&mut s.app, 60, 15);
    let buffer = terminal.backend().buffer();
    let rows: Vec<u16> = (0..15)
        .filter(|&y| {
            let line: String = (0..60).map(|x| buffer[(x, y)].symbol().to_string()).collect();
            line.contains("↳") || line.contains("-17.jsonl") || line.contains("17.jsonl")
        })
        .collect();
    assert!(rows.len() >= 2, "the path wraps onto a second row: {rows:?}");
    let last = *rows.last().unwrap();
    s.app.handle_event(Event::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 10,
        row: last,
        modifiers: KeyModifiers::NONE,
    }));
    let scratchpad::tui::app::Overlay::Browser(browser) = &s.app.overlay else {
        panic!("the click opened the browser");
    };
    assert_eq!(browser.viewer.as_ref().map(|v| v.title.as_str()), Some(path));
}

#[test]
fn scrolled_up_the_view_stays_put_while_the_stream_grows() {
    let mut s = screen();
    for i in 0..30 {
        s.app.apply(AgentEvent::TurnStarted {
            turn: scratchpad::protocol::TurnId(1),
            request: format!("request {i}"),
        });
        s.app.apply(AgentEvent::TurnDone {
            turn: scratchpad::protocol::TurnId(1),
            outcome: TurnOutcome::Completed,
        });
    }
    draw(&mut s.app, 120, 40);
    s.app.handle_key(key(KeyCode::PageUp));
    let before = draw(&mut s.app, 120, 40).backend().to_string();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "more".into(),
    });
    s.app.apply(AgentEvent::TextDelta {
        turn: scratchpad::protocol::TurnId(1),
        text: "line\n".repeat(10),
    });
    let after = draw(&mut s.app, 120, 40).backend().to_string();
    let chat_rows = |screen: &str| {
        screen
            .lines()
            .skip(2)
            .take(20)
            .map(|l| l.chars().take(70).collect::<String>())
            .collect::<Vec<_>>()
    };
    assert_eq!(chat_rows(&before), chat_rows(&after));
    // End follows the stream again.
    s.app.handle_key(key(KeyCode::End));
    let following = draw(&mut s.app, 120, 40).backend().to_string();
    assert!(following.contains("line▍"), "{following}");
}

#[test]
fn small_terminal_screens() {
    let mut s = screen();
    conversation(&mut s.app);
    s.app.apply(AgentEvent::ToolStarted {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_03".into(),
        name: "bash".into(),
        summary: "cargo test --workspace".into(),
    });
    s.app.apply(AgentEvent::ToolRunning {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_03".into(),
    });
    insta::assert_snapshot!("tool_running_60x15", draw(&mut s.app, 60, 15).backend());
    s.app.apply(stage(
        Stage::SnipCompact,
        37,
        84_100,
        41_900,
        &[".transcripts/transcript_snip_compact_1.jsonl"],
    ));
    insta::assert_snapshot!("marker_60x15", draw(&mut s.app, 60, 15).backend());
    insta::assert_snapshot!("too_small_19x6", draw(&mut s.app, 19, 6).backend());
    insta::assert_snapshot!("too_small_40x4", draw(&mut s.app, 40, 4).backend());
    // The smallest size that draws the app draws it.
    assert!(!text_of(&draw(&mut s.app, 20, 5)).contains("too small"));
}

#[test]
fn a_multi_line_request_keeps_its_lines() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "line one\nline two\n    fn indented() {}".into(),
    });
    insta::assert_snapshot!("multi_line_request_80x24", draw(&mut s.app, 80, 24).backend());
    let screen = format!("{:?}", draw(&mut s.app, 80, 24).backend());
    assert!(screen.contains("› line one"), "{screen}");
    assert!(screen.contains("  line two"), "{screen}");
}

#[test]
fn a_request_typed_during_a_turn_is_queued_and_sent_when_it_ends() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "first".into(),
    });
    type_text(&mut s.app, "second request");
    s.app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        s.app.input.text(),
        "second request\n",
        "the text stays, editable, and what is typed next starts a line of its own"
    );
    insta::assert_snapshot!("queued_80x24", draw(&mut s.app, 80, 24).backend());
    assert_readable_in_both_themes(&mut s.app, 80, 24, "a queued request");
    assert!(s._ops.try_recv().is_err(), "nothing is sent while the turn runs");
    // A second request queued behind it does not run into the first.
    type_text(&mut s.app, "and a third");
    s.app.handle_key(key(KeyCode::Enter));
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Completed,
    });
    match s._ops.try_recv() {
        Ok(Op::Submit { text }) => assert_eq!(text, "second request\nand a third"),
        other => panic!("expected the queued requests, got {other:?}"),
    }
    assert!(s.app.input.text().is_empty());
}

/// Esc with a request queued stops the turn and nothing more: the queued text stays
/// in the prompt, unsent (it used to be sent as soon as the cancelled turn ended).
#[test]
fn esc_with_a_queued_request_stops_the_turn_and_keeps_the_text() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "first".into(),
    });
    type_text(&mut s.app, "second request");
    s.app.handle_key(key(KeyCode::Enter));
    s.app.handle_key(key(KeyCode::Esc));
    assert_eq!(s._ops.try_recv().ok(), Some(Op::Cancel));
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Cancelled,
    });
    assert!(s._ops.try_recv().is_err(), "the queued request is not sent");
    assert_eq!(s.app.input.text(), "second request", "it stays in the prompt");
}

#[test]
fn an_unknown_command_keeps_its_text_and_says_why() {
    let mut s = screen();
    type_text(&mut s.app, "/foo bar");
    s.app.handle_key(key(KeyCode::Enter));
    assert_eq!(s.app.input.text(), "/foo bar");
    assert_eq!(s.app.state.banner, None, "a hint is not an error");
    assert_eq!(
        s.app.toast.as_ref().map(|toast| toast.text.as_str()),
        Some("unknown command /foo; /help lists them")
    );
    let terminal = draw(&mut s.app, 80, 24);
    assert!(
        text_of(&terminal).contains("unknown command /foo; /help lists them"),
        "shown over the chat"
    );
}

fn text_of(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height)
        .map(|y| {
            (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn repeated_firings_fold_into_one_marker_that_expands() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "survey this workspace".into(),
    });
    for (n, text) in ["reading the first files", "reading more files", "and more"]
        .iter()
        .enumerate()
    {
        s.app.apply(stage(
            Stage::SnipCompact,
            3,
            51_000 - n * 1_000,
            47_000 - n * 1_000,
            &[".transcripts/transcript_snip_compact_20261202-120000_0000001-0001.jsonl"],
        ));
        s.app.apply(AgentEvent::AssistantMessage {
            turn: scratchpad::protocol::TurnId(1),
            message: Message::assistant_text(*text),
        });
    }
    insta::assert_snapshot!("folded_marker_80x24", draw(&mut s.app, 80, 24).backend());
    s.app.handle_key(key(KeyCode::Tab));
    insta::assert_snapshot!("folded_marker_expanded_80x24", draw(&mut s.app, 80, 24).backend());
}

#[test]
fn letters_typed_in_the_chat_go_to_the_prompt_and_a_hidden_tool_pane_is_skipped() {
    let mut s = screen();
    conversation(&mut s.app);
    draw(&mut s.app, 80, 24);
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Char('h')));
    s.app.handle_key(key(KeyCode::Char('i')));
    assert_eq!(s.app.input.text(), "hi", "the letters reached the prompt");
    // At 80 columns the tool pane is hidden: Tab goes prompt → chat → prompt.
    s.app.handle_key(key(KeyCode::Tab));
    assert_eq!(s.app.focus, scratchpad::tui::app::Focus::Chat);
    s.app.handle_key(key(KeyCode::Tab));
    assert_eq!(
        s.app.focus,
        scratchpad::tui::app::Focus::Input,
        "the hidden tool pane is skipped"
    );
    s.app.handle_key(key(KeyCode::Char('!')));
    assert_eq!(s.app.input.text(), "hi!");
    insta::assert_snapshot!("prompt_focused_80x24", draw(&mut s.app, 80, 24).backend());
}

/// Typing and Enter never go to different places: text that arrives as a paste (a
/// burst of keys, a bracketed paste) while a marker in the chat is selected moves the
/// focus to the prompt with it, and Enter sends it instead of opening the marker.
#[test]
fn text_pasted_with_the_chat_focused_is_sent_by_enter() {
    let mut s = screen();
    conversation(&mut s.app);
    s.app
        .apply(stage(Stage::SnipCompact, 37, 84_100, 41_900, &[".transcripts/t.jsonl"]));
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Completed,
    });
    draw(&mut s.app, 120, 40);
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Up));
    assert_eq!(s.app.focus, scratchpad::tui::app::Focus::Chat);
    while s._ops.try_recv().is_ok() {}
    s.app.handle_event(crossterm::event::Event::Paste("/undo".into()));
    assert_eq!(s.app.focus, scratchpad::tui::app::Focus::Input);
    s.app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::Undo { stage_id: None }),
        "Enter ran /undo"
    );
    let shown = text_of(&draw(&mut s.app, 120, 40));
    assert!(!shown.contains("line 1/"), "no viewer was opened: {shown}");
}

/// Only a Ctrl+C that did nothing else arms the quit: one that cleared the prompt or
/// cancelled the turn is followed by one that does not end the session.
#[test]
fn ctrl_c_that_clears_or_cancels_does_not_arm_the_quit() {
    let ctrl_c = || KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut s = screen();
    type_text(&mut s.app, "half a thought");
    s.app.handle_key(ctrl_c());
    assert!(s.app.input.is_empty(), "the first press cleared the prompt");
    s.app.handle_key(ctrl_c());
    assert!(!s.app.quit, "the press after clearing does not quit");
    s.app.handle_key(ctrl_c());
    assert!(s.app.quit, "two on an empty prompt quit");

    let mut s = screen();
    conversation(&mut s.app);
    s.app.handle_key(ctrl_c());
    assert_eq!(s._ops.try_recv().ok(), Some(Op::Cancel));
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Cancelled,
    });
    s.app.handle_key(ctrl_c());
    assert!(!s.app.quit, "the press after a cancel does not quit");
}

#[test]
fn the_browser_list_follows_files_written_during_a_turn() {
    let mut s = screen();
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    let before = draw(&mut s.app, 120, 40).backend().to_string();
    let dir = s.dir.path().join(".transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("transcript_snip_compact_20261202-130000_0000001-0002.jsonl"),
        "{}\n",
    )
    .unwrap();
    s.app.apply(stage(
        Stage::SnipCompact,
        3,
        51_000,
        47_000,
        &[".transcripts/transcript_snip_compact_20261202-130000_0000001-0002.jsonl"],
    ));
    let after = draw(&mut s.app, 120, 40).backend().to_string();
    assert!(!before.contains("130000"), "{before}");
    assert!(after.contains("130000"), "the new transcript is listed live: {after}");
}

#[test]
fn a_selected_marker_is_scrolled_into_view() {
    let mut s = screen();
    let path = ".transcripts/transcript_snip_compact_1.jsonl";
    s.app.apply(stage(Stage::SnipCompact, 3, 51_000, 47_000, &[path]));
    for n in 0..30 {
        s.app.apply(AgentEvent::Notice {
            message: format!("later line {n}"),
        });
    }
    let shows_marker = |terminal: &Terminal<TestBackend>| terminal.backend().to_string().contains("snip_compact");
    assert!(
        !shows_marker(&draw(&mut s.app, 80, 24)),
        "the marker starts above the view"
    );
    // Tab to the chat selects the newest marker, and the chat scrolls to it.
    s.app.handle_key(key(KeyCode::Tab));
    let terminal = draw(&mut s.app, 80, 24);
    assert!(shows_marker(&terminal), "{}", terminal.backend());
    insta::assert_snapshot!("selected_marker_in_view_80x24", terminal.backend());
}

/// `f` on a selected marker scrolled out of sight names the stage and forks only on a
/// second `f`; End goes back to the newest and clears the selection.
#[test]
fn f_on_a_marker_out_of_sight_asks_and_end_clears_the_selection() {
    let mut s = screen();
    let mut older = stage(Stage::SnipCompact, 3, 51_000, 47_000, &[".transcripts/a.jsonl"]);
    if let AgentEvent::Compaction { event } = &mut older {
        event.id = "stage-a".into();
    }
    s.app.apply(older);
    for n in 0..30 {
        s.app.apply(AgentEvent::Notice {
            message: format!("later line {n}"),
        });
    }
    s.app.handle_key(key(KeyCode::Tab));
    draw(&mut s.app, 80, 24);
    // Scrolled away from the selected marker: it is out of sight.
    s.app.handle_key(key(KeyCode::PageDown));
    s.app.handle_key(key(KeyCode::PageDown));
    let far = text_of(&draw(&mut s.app, 80, 24));
    assert!(!far.contains("◆ snip_compact"), "{far}");
    while s._ops.try_recv().is_ok() {}
    s.app.handle_key(key(KeyCode::Char('f')));
    assert!(s._ops.try_recv().is_err(), "no fork yet");
    let asked = text_of(&draw(&mut s.app, 80, 24));
    assert!(asked.contains("f again forks before: snip_compact"), "{asked}");
    s.app.handle_key(key(KeyCode::Char('f')));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::Fork {
            session: None,
            at: scratchpad::protocol::ForkAt::Stage("stage-a".into()),
        })
    );
    s.app.handle_key(key(KeyCode::End));
    s.app.handle_key(key(KeyCode::Char('f')));
    assert!(s._ops.try_recv().is_err(), "nothing selected after End");
}

#[test]
fn closing_a_viewer_returns_to_where_it_was_opened() {
    use scratchpad::tui::app::Overlay;
    let mut s = screen();
    let path = ".transcripts/transcript_snip_compact_1.jsonl";
    std::fs::create_dir_all(s.dir.path().join(".transcripts")).unwrap();
    std::fs::write(s.dir.path().join(path), "{\"role\":\"user\",\"content\":\"saved\"}\n").unwrap();
    s.app.apply(stage(Stage::SnipCompact, 3, 51_000, 47_000, &[path]));
    // From a chat marker: Esc goes back to the chat, not to the browser's list.
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Enter));
    assert!(matches!(&s.app.overlay, Overlay::Browser(b) if b.viewer.is_some()));
    s.app.handle_key(key(KeyCode::Esc));
    assert!(matches!(s.app.overlay, Overlay::None));
    // From /context: Esc goes back to /context with its selection.
    let messages = vec![Message::user_text("x".repeat(500)), Message::assistant_text("ok")];
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            "sys",
            &[],
            &[],
            &[],
            &messages,
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    s.app.handle_key(key(KeyCode::Down));
    s.app.handle_key(key(KeyCode::Enter));
    assert!(matches!(&s.app.overlay, Overlay::Browser(b) if b.viewer.is_some()));
    s.app.handle_key(key(KeyCode::Esc));
    assert!(matches!(&s.app.overlay, Overlay::Context(view) if view.selected == 1));
    // From the browser's own list: Esc goes back to the list.
    s.app.handle_key(key(KeyCode::Esc));
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    s.app.handle_key(key(KeyCode::Enter));
    s.app.handle_key(key(KeyCode::Esc));
    assert!(matches!(&s.app.overlay, Overlay::Browser(b) if b.viewer.is_none()));
}

#[test]
fn the_tool_pane_follows_new_calls_and_separates_requests() {
    let mut s = screen();
    conversation(&mut s.app);
    // A call selected earlier does not pin the pane once focus has moved on.
    s.app.selected_tool = Some(0);
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Completed,
    });
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "now run the tests".into(),
    });
    for n in 0..30 {
        s.app.apply(AgentEvent::ToolStarted {
            turn: scratchpad::protocol::TurnId(1),
            id: format!("toolu_1{n:02}"),
            name: "bash".into(),
            summary: format!("cargo test case_{n}"),
        });
        s.app.apply(AgentEvent::ToolRunning {
            turn: scratchpad::protocol::TurnId(1),
            id: format!("toolu_1{n:02}"),
        });
    }
    let terminal = draw(&mut s.app, 120, 40);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("case_29"), "the newest call is in view: {screen}");
    insta::assert_snapshot!("tool_pane_follows_120x40", terminal.backend());
    let mut two = screen_with_two_requests();
    let screen = draw(&mut two.app, 120, 40).backend().to_string();
    assert!(screen.contains("── request 2 "), "{screen}");
}

fn screen_with_two_requests() -> Screen {
    let mut s = screen();
    conversation(&mut s.app);
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Completed,
    });
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "again".into(),
    });
    s.app.apply(AgentEvent::ToolStarted {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_9".into(),
        name: "glob".into(),
        summary: "**/*.rs".into(),
    });
    s.app.apply(AgentEvent::ToolRunning {
        turn: scratchpad::protocol::TurnId(1),
        id: "toolu_9".into(),
    });
    s
}

/// The hyperlinks written over a frame cover exactly the cells that show their path.
#[test]
fn hyperlinks_lie_over_the_paths_they_name() {
    let mut s = screen();
    let path = ".transcripts/transcript_compact_history_20261202-120000_4242-17.jsonl";
    std::fs::create_dir_all(s.dir.path().join(".transcripts")).unwrap();
    std::fs::write(s.dir.path().join(path), "{}\n").unwrap();
    s.app.apply(stage(Stage::CompactHistory, 9, 60_000, 2_000, &[path]));
    let check = |terminal: &Terminal<TestBackend>, links: &[scratchpad::tui::hyperlinks::Hyperlink]| {
        assert!(!links.is_empty());
        let buffer = terminal.backend().buffer();
        let mut joined = String::new();
        for link in links {
            let shown: String = (0..link.text.chars().count() as u16)
                .map(|dx| buffer[(link.x + dx, link.row)].symbol().to_string())
                .collect();
            assert_eq!(shown, link.text, "{link:?}");
            joined.push_str(&link.text);
        }
        joined
    };
    // In the chat, a wrapped path is linked on each of its rows.
    let terminal = draw(&mut s.app, 60, 15);
    let links = s.app.hyperlinks().to_vec();
    assert!(links.len() >= 2, "{links:?}");
    assert_eq!(check(&terminal, &links), path);
    assert!(links.iter().all(|l| l.path == path));
    // In the browser's list.
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    let terminal = draw(&mut s.app, 120, 40);
    let links = s.app.hyperlinks().to_vec();
    assert_eq!(links.len(), 1);
    assert_eq!(check(&terminal, &links), path);
}

#[test]
fn a_marker_shows_its_summary_and_expands_into_its_receipt() {
    use scratchpad::compact::ReceiptItem;
    use scratchpad::message::Role;
    let mut s = screen();
    let transcript = ".transcripts/transcript_compact_history_7.jsonl";
    let AgentEvent::Compaction { mut event } = stage(Stage::CompactHistory, 3, 52_000, 1_900, &[transcript]) else {
        unreachable!("stage builds a compaction event")
    };
    event.archived = Some(transcript.into());
    event.trigger = "estimate 52.0k still over the 50.0k limit after the recoverable stages".into();
    event.took_ms = 840;
    event.summary = Some(
        "Goal: fix the parser.\nDecisions: keep the lexer.\nFiles: src/parser.rs, src/lexer.rs\nCommands: cargo test (2 failed)\nRemaining: the last token"
            .into(),
    );
    event.items = vec![
        ReceiptItem {
            position: 1,
            role: Role::User,
            what: "request: fix the parser".into(),
            chars_before: 120,
            chars_after: 0,
            saved: Some(transcript.into()),
            tool_use_id: None,
            was: None,
        },
        ReceiptItem {
            position: 2,
            role: Role::Assistant,
            what: "calls read_file src/parser.rs".into(),
            chars_before: 310,
            chars_after: 0,
            saved: Some(transcript.into()),
            tool_use_id: None,
            was: None,
        },
        ReceiptItem {
            position: 3,
            role: Role::User,
            what: "tool results for toolu_01".into(),
            chars_before: 51_500,
            chars_after: 0,
            saved: Some(transcript.into()),
            tool_use_id: None,
            was: None,
        },
    ];
    event.loss = Some(scratchpad::compact::loss::LossReport {
        missing: vec![scratchpad::compact::loss::Missing {
            kind: scratchpad::compact::loss::LossKind::Command,
            text: "cargo test --lib lexer".into(),
            position: 2,
            at: Some(format!("{transcript}:2")),
            from_user: false,
        }],
        total: 1,
        tally: vec![
            scratchpad::compact::loss::Tally {
                kind: scratchpad::compact::loss::LossKind::Path,
                found: 6,
                kept: 6,
            },
            scratchpad::compact::loss::Tally {
                kind: scratchpad::compact::loss::LossKind::Command,
                found: 5,
                kept: 4,
            },
        ],
    });
    s.app.apply(AgentEvent::Compaction { event });
    // The next call says what the compaction cost in cache.
    s.app.apply(AgentEvent::ModelCall {
        point: CallPoint {
            before: Some(52_000),
            estimate: 1_900,
            messages: 1,
            request_chars: Some(4_300),
            input_tokens: Some(1_100),
            stages: vec![Stage::CompactHistory],
            cache_read: Some(600),
            cache_rewritten: Some(12_400),
            ..CallPoint::default()
        },
        usage: Usage::default(),
    });
    let collapsed = draw(&mut s.app, 80, 24).backend().to_string();
    assert!(
        collapsed.contains("! not in the summary or the index (1) · → lists them"),
        "{collapsed}"
    );
    assert!(collapsed.contains("│ Goal: fix the parser."), "{collapsed}");
    assert!(collapsed.contains("2 more lines"), "{collapsed}");
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Right));
    let terminal = draw(&mut s.app, 80, 24);
    let expanded = terminal.backend().to_string();
    assert!(expanded.contains("Remaining: the last token"), "{expanded}");
    assert!(expanded.contains("why: estimate 52.0k still over"), "{expanded}");
    assert!(
        expanded.contains("#2 assistant · calls read_file src/parser.rs · 310 chars"),
        "{expanded}"
    );
    assert!(expanded.contains("- command · cargo test --lib lexer ·"), "{expanded}");
    assert!(
        expanded.contains("cache: the next call wrote 12.4k cached prompt tokens again"),
        "{expanded}"
    );
    insta::assert_snapshot!("marker_receipt_80x24", terminal.backend());
    assert_readable_in_both_themes(&mut s.app, 80, 24, "an open receipt");
    s.app.handle_key(key(KeyCode::Left));
    assert!(!draw(&mut s.app, 80, 24).backend().to_string().contains("why:"));
}

#[test]
fn a_preview_lists_what_compact_would_do() {
    let mut s = screen();
    let AgentEvent::Compaction { mut event } = stage(Stage::CompactHistory, 2, 12_300, 900, &[]) else {
        unreachable!("stage builds a compaction event")
    };
    event.trigger = "asked for by the user (a preview)".into();
    event.items = vec![scratchpad::compact::ReceiptItem {
        position: 1,
        role: scratchpad::message::Role::User,
        what: "request: explain the parser".into(),
        chars_before: 12_000,
        chars_after: 0,
        saved: None,
        tool_use_id: None,
        was: None,
    }];
    s.app.apply(AgentEvent::Preview { events: vec![event] });
    let terminal = draw(&mut s.app, 80, 24);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("preview of /compact · nothing was written"), "{screen}");
    assert!(
        screen.contains("#1 user · request: explain the parser · 12.0k chars"),
        "{screen}"
    );
    insta::assert_snapshot!("preview_80x24", terminal.backend());
    assert_readable_in_both_themes(&mut s.app, 80, 24, "a compaction preview");
}

/// A summary that names none of what the history mentions.
struct Forgetful;

impl scratchpad::compact::Summariser for Forgetful {
    fn summarise(
        &mut self,
        _request: &scratchpad::compact::SummaryRequest<'_>,
    ) -> Result<String, scratchpad::compact::SummaryError> {
        Ok("Goal: fix the parser.".into())
    }
}

/// A request, a test run that failed, and the answer that names the file.
fn failing_lexer_test() -> Vec<Message> {
    scratchpad::history::History::new()
        .request("fix the parser")
        .round(
            scratchpad::history::Call::new(
                "bash",
                serde_json::json!({"command": "cargo test --lib lexer"}),
                "test lexer::tokens ... FAILED at src/lexer.rs:42\n[exit code 101]",
            )
            .failed(),
        )
        .answer("The lexer test fails in src/lexer.rs.")
        .build()
}

/// The loss report of a real compaction (not one made by hand) reaches its marker.
#[test]
fn a_real_compactions_loss_report_is_on_its_marker() {
    let mut s = screen();
    let mut history = failing_lexer_test();
    let archive = scratchpad::compact::MemoryArchive::new();
    // Without an index, the one-line summary keeps none of the path, the command and
    // the error; with it (the default) all three stay in context.
    // The history is tiny: the floor a summary must be able to free is off here.
    let with_index = CompactConfig {
        summary_floor_chars: 0,
        ..CompactConfig::default()
    };
    let without_index = CompactConfig {
        index_percent: 0,
        ..with_index.clone()
    };
    let mut bare = history.clone();
    let event = scratchpad::compact::force_compact(
        &mut bare,
        scratchpad::compact::Asked::by("the user (/compact)", "fix the parser"),
        &scratchpad::compact::Context::new(&without_index, &archive),
        &mut Forgetful,
    );
    let loss = event.loss.clone().expect("the stage reports what the summary left out");
    assert!(
        loss.missing.iter().any(|missing| missing.text.contains("lexer.rs")),
        "{loss:?}"
    );
    assert_eq!(
        loss.retention_line().as_deref(),
        Some("keeps 0/3: paths 0/1, commands 0/1, errors 0/1")
    );
    s.app.apply(AgentEvent::Compaction { event });
    let screen = draw(&mut s.app, 120, 40).backend().to_string();
    assert!(
        screen.contains(&format!("! not in the summary or the index ({})", loss.total)),
        "{screen}"
    );
    assert!(
        screen.contains("! keeps 0/3: paths 0/1, commands 0/1, errors 0/1"),
        "{screen}"
    );

    let event = scratchpad::compact::force_compact(
        &mut history,
        scratchpad::compact::Asked::by("the user (/compact)", "fix the parser"),
        &scratchpad::compact::Context::new(&with_index, &archive),
        &mut Forgetful,
    );
    let loss = event.loss.clone().expect("a retention report");
    assert_eq!(loss.total, 0, "{loss:?}");
    s.app.apply(AgentEvent::Compaction { event });
    let screen = draw(&mut s.app, 120, 40).backend().to_string();
    assert!(
        screen.contains("✓ keeps 3/3: paths 1/1, commands 1/1, errors 1/1"),
        "{screen}"
    );
    assert!(
        history[0]
            .text()
            .contains("- ran (line 2): cargo test --lib lexer · failed, exit code 101"),
        "{}",
        history[0].text()
    );
}

/// Two compactions, the newer undone: its marker says so, `u` on it sends nothing
/// (it used to undo the older one), and `u` on the older one undoes that one by id.
/// Resumed, the session shows the same.
#[test]
fn an_undone_marker_says_so_and_u_on_it_undoes_nothing_else() {
    let mut s = screen();
    let fired = |id: &str, stage_kind: Stage, before: usize, after: usize| {
        let transcript = format!(".transcripts/{id}.jsonl");
        let AgentEvent::Compaction { mut event } = stage(stage_kind, 3, before, after, &[&transcript]) else {
            unreachable!("stage builds a compaction event")
        };
        event.id = id.to_string();
        event
    };
    let older = fired("stage-a", Stage::MicroCompact, 60_000, 40_000);
    let newer = fired("stage-b", Stage::CompactHistory, 45_000, 9_000);
    s.app.apply(AgentEvent::Compaction { event: older.clone() });
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "go on".into(),
    });
    s.app.apply(AgentEvent::Compaction { event: newer.clone() });
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Completed,
    });
    s.app.apply(AgentEvent::Undone {
        stage: Stage::CompactHistory,
        undid: "stage-b".into(),
        chars_before: 9_000,
        chars_after: 45_000,
    });
    let terminal = draw(&mut s.app, 120, 40);
    let screen_text = format!("{:?}", terminal.backend());
    assert!(
        screen_text.contains("compact_history") && screen_text.contains("(undone)"),
        "{screen_text}"
    );
    // The undone marker is dim with a hollow mark; the one in force is not.
    let buffer = terminal.backend().buffer();
    let mark_of = |mark: &str| {
        (0..buffer.area.height)
            .flat_map(|y| (0..buffer.area.width).map(move |x| (x, y)))
            .find(|&(x, y)| buffer[(x, y)].symbol() == mark)
            .map(|(x, y)| buffer[(x, y)].fg)
    };
    let muted = scratchpad::tui::theme::palette().muted;
    assert_eq!(mark_of("◇"), Some(muted), "the undone marker is dim");
    assert_ne!(mark_of("◆"), Some(muted), "the marker in force is not");
    // Tab to the chat selects the newest marker (the undone one); press u.
    s.app.handle_key(key(KeyCode::Tab));
    let selected_text = format!("{:?}", draw(&mut s.app, 120, 40).backend());
    assert!(
        selected_text.contains("receipt"),
        "a marker is selected: {selected_text}"
    );
    s.app.handle_key(key(KeyCode::Char('u')));
    assert!(s._ops.try_recv().is_err(), "nothing is sent for an undone marker");
    let said = format!("{:?}", draw(&mut s.app, 120, 40).backend());
    assert!(said.contains("undone already"), "{said}");
    // Up passes the request between them (u on a request is a letter for the
    // prompt), then selects the older marker.
    s.app.handle_key(key(KeyCode::Up));
    s.app.handle_key(key(KeyCode::Char('u')));
    assert!(s._ops.try_recv().is_err(), "u on a request undoes nothing");
    assert_eq!(s.app.input.text(), "u", "it went to the prompt");
    s.app.handle_key(key(KeyCode::Backspace));
    s.app.handle_key(key(KeyCode::Tab)); // back to the chat, the request still selected
    s.app.handle_key(key(KeyCode::Up));
    s.app.handle_key(key(KeyCode::Char('u')));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::Undo {
            stage_id: Some("stage-a".into())
        })
    );

    // Resumed: the same markers, the newer marked undone.
    let mut resumed = screen();
    resumed.app.apply(AgentEvent::Replay {
        past: vec![
            scratchpad::protocol::Past::Stage { event: Box::new(older) },
            scratchpad::protocol::Past::Stage { event: Box::new(newer) },
            scratchpad::protocol::Past::Undo {
                stage: Stage::CompactHistory,
                undid: "stage-b".into(),
            },
        ],
        in_context: 0,
    });
    let resumed_text = format!("{:?}", draw(&mut resumed.app, 120, 40).backend());
    assert_eq!(resumed_text.matches("(undone)").count(), 1, "{resumed_text}");
    // /context lists both, the undone one said to be so.
    for app in [&mut s.app, &mut resumed.app] {
        app.handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
        app.apply(AgentEvent::Breakdown {
            breakdown: breakdown(
                "You are scratchpad.",
                &[],
                &[],
                &[],
                &[Message::user_text("go on")],
                &CompactConfig::default(),
                &scratchpad::compact::SessionFacts::NONE,
            ),
        });
        let context = text_of(&draw(app, 120, 40));
        let newest = context.find("◇ #2 compact_history 45.0k → 9.0k (undone)");
        let older = context.find("◆ #1 micro_compact 60.0k → 40.0k");
        assert!(
            newest.is_some() && older.is_some() && newest < older,
            "newest first, the undone one said to be so: {context}"
        );
    }
}

/// A folded marker gives the net change of its own firings and links every file.
#[test]
fn a_folded_marker_reports_its_own_net_change_and_every_file() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "survey".into(),
    });
    s.app.apply(stage(
        Stage::SnipCompact,
        4,
        50_100,
        42_000,
        &[".transcripts/one.jsonl"],
    ));
    // The context grew in between; the second firing took less out.
    s.app.apply(stage(
        Stage::SnipCompact,
        4,
        57_000,
        53_900,
        &[".transcripts/two.jsonl"],
    ));
    let text = format!("{:?}", draw(&mut s.app, 120, 40).backend());
    assert!(text.contains("snip_compact ×2 · 11.2k chars out"), "{text}");
    assert!(!text.contains("50.1k → 53.9k"), "{text}");
    assert!(text.contains("one.jsonl") && text.contains("two.jsonl"), "{text}");
}

/// The first screen welcomes a newcomer in words; the demo says what it is and gets no
/// hint to raise its limit (its small limit is the point), while a real model does.
#[test]
fn the_first_screen_welcomes_and_the_demo_gets_no_limit_hint() {
    let started = |provider: &str| AgentEvent::SessionStarted {
        session_id: "20261202-120000-1".into(),
        provider: provider.into(),
        model: "m".into(),
        workspace: "/home/dev/project".into(),
        sandbox: "workspace-write".into(),
        sandbox_layers: Vec::new(),
        window: Window {
            tokens: 200_000,
            source: WindowSource::Configured,
        },
        limit_note: Some("Compaction starts at 50.0k characters, under a quarter of what this model can hold".into()),
        limit_warning: false,
        read_only: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let (ops, _ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut demo = App::new(ops.clone(), dir.path().to_path_buf(), CompactConfig::default());
    demo.apply(started("demo"));
    assert!(demo.state.chat.is_empty(), "no limit hint in the demo");
    let shown = text_of(&draw(&mut demo, 200, 40));
    assert!(shown.contains("scratchpad is a coding agent that shows its own context window."));
    assert!(shown.contains("This is the offline demo model"), "{shown}");
    assert!(shown.contains("Ctrl+X what the context holds"), "{shown}");
    assert!(!shown.contains("under a quarter"), "{shown}");
    insta::assert_snapshot!("welcome_demo_100x30", draw(&mut demo, 100, 30).backend());

    let mut real = App::new(ops, dir.path().to_path_buf(), CompactConfig::default());
    real.apply(started("anthropic"));
    let shown = text_of(&draw(&mut real, 200, 40));
    assert!(shown.contains("under a quarter"), "a real model gets the hint: {shown}");
    assert!(!shown.contains("offline demo model"), "{shown}");
}

/// The row the first line containing `needle` is drawn on.
fn row_of(terminal: &Terminal<TestBackend>, needle: &str) -> Option<usize> {
    text_of(terminal).lines().position(|line| line.contains(needle))
}

/// Opening or closing a receipt keeps its marker where the eye is: following the
/// bottom, the header stays on screen as its receipt opens below it, and a second
/// marker's receipt does not throw the view far away.
#[test]
fn opening_a_receipt_keeps_its_marker_in_view() {
    use scratchpad::compact::ReceiptItem;
    let mut s = screen();
    let marker = |name: &str, items: usize| {
        let transcript = format!(".transcripts/transcript_{name}.jsonl");
        let AgentEvent::Compaction { mut event } = stage(Stage::MicroCompact, items, 60_000, 40_000, &[&transcript])
        else {
            unreachable!("stage builds a compaction event")
        };
        event.id = name.to_string();
        event.items = (0..items)
            .map(|at| ReceiptItem {
                position: at + 1,
                role: Role::User,
                what: format!("{name} result {at}"),
                chars_before: 5_000,
                chars_after: 60,
                saved: Some(format!(".task_outputs/tool-results/{name}_{at}.txt")),
                tool_use_id: None,
                was: None,
            })
            .collect();
        AgentEvent::Compaction { event }
    };
    for turn in 0..12 {
        s.app.apply(AgentEvent::TurnStarted {
            turn: scratchpad::protocol::TurnId(turn),
            request: format!("request {turn}"),
        });
        if turn == 4 {
            s.app.apply(marker("first", 60));
        }
        if turn == 10 {
            s.app.apply(marker("second", 60));
        }
        s.app.apply(AgentEvent::TurnDone {
            turn: scratchpad::protocol::TurnId(turn),
            outcome: TurnOutcome::Completed,
        });
    }
    s.app.handle_key(key(KeyCode::Tab)); // selects the newest marker, "second"
    let before = draw(&mut s.app, 120, 40);
    let header = "◆ micro_compact";
    let row = row_of(&before, header).expect("the selected marker is on screen");
    s.app.handle_key(key(KeyCode::Right));
    let opened = draw(&mut s.app, 120, 40);
    let opened_row = row_of(&opened, header);
    assert!(
        opened_row.is_some_and(|at| at <= row),
        "the header stays in view as its receipt opens: {row} then {opened_row:?}\n{}",
        text_of(&opened)
    );
    assert!(text_of(&opened).contains("second result 0"), "the receipt shows");
    s.app.handle_key(key(KeyCode::Left));
    let closed = draw(&mut s.app, 120, 40);
    assert!(row_of(&closed, header).is_some(), "closed, the header is still in view");

    // Up past the requests between to the older marker, open it: its header is on
    // screen, not far away.
    let first = s
        .app
        .state
        .chat
        .iter()
        .position(|entry| matches!(entry, scratchpad::tui::state::ChatEntry::Marker(_)));
    while s.app.selected_entry != first {
        s.app.handle_key(key(KeyCode::Up));
        draw(&mut s.app, 120, 40);
    }
    let selected = draw(&mut s.app, 120, 40);
    let first_row = row_of(&selected, "first result").or_else(|| row_of(&selected, header));
    assert!(first_row.is_some(), "{}", text_of(&selected));
    s.app.handle_key(key(KeyCode::Right));
    let opened = text_of(&draw(&mut s.app, 120, 40));
    assert!(
        opened.contains("first result 0"),
        "its receipt starts on screen: {opened}"
    );
    assert!(opened.contains(header), "with its header: {opened}");
}

/// One 350k call does not squash the 50k limit into the bottom row: the chart stops at
/// 1.6 times the limit, says so on its axis and in its title, the limit and target
/// lines fall on rows of their own, and the legend has a row of its own.
#[test]
fn a_spike_in_the_timeline_is_clipped_and_said() {
    use scratchpad::tui::context_timeline::render_timeline;
    use scratchpad::tui::context_view::Thresholds;
    let call = |before: usize, estimate: usize| CallPoint {
        before: Some(before),
        estimate,
        messages: 9,
        ..CallPoint::default()
    };
    let timeline = vec![
        call(12_000, 12_000),
        call(30_000, 30_000),
        call(350_000, 36_000),
        call(44_000, 44_000),
        call(52_000, 38_000),
    ];
    for height in [14_u16, 8] {
        let mut terminal = Terminal::new(TestBackend::new(100, height)).unwrap();
        terminal
            .draw(|frame| {
                render_timeline(
                    frame,
                    frame.area(),
                    &timeline,
                    Thresholds {
                        limit: 50_000,
                        target: 40_000,
                    },
                )
            })
            .unwrap();
        let shown = text_of(&terminal);
        assert!(shown.contains("1 call above 80.0k drawn at the top"), "{shown}");
        assert!(shown.contains("≥80.0k"), "{shown}");
        let rows: Vec<&str> = shown.lines().collect();
        let legend = rows[usize::from(height) - 1];
        assert!(
            legend.contains("limit 50.0k") && legend.contains("stage fired"),
            "{shown}"
        );
        // Each line has a row where its colour holds most of the width.
        let buffer = terminal.backend().buffer();
        let row_of_colour = |colour| {
            (0..height)
                .max_by_key(|&y| (10..100).filter(|&x| buffer[(x, y)].fg == colour).count())
                .filter(|&y| (10..100).filter(|&x| buffer[(x, y)].fg == colour).count() > 30)
        };
        let palette = scratchpad::tui::theme::palette();
        let limit = row_of_colour(palette.failure).unwrap_or_else(|| panic!("a limit row\n{shown}"));
        let target = row_of_colour(palette.attention).unwrap_or_else(|| panic!("a target row\n{shown}"));
        assert!(limit < target, "the limit above the target: {limit} {target}\n{shown}");
        // The x axis is two rows over the legend: the limit is well above it.
        assert!(limit + 4 <= height - 2, "{limit}\n{shown}");
        if height == 14 {
            insta::assert_snapshot!("timeline_spike_100x14", terminal.backend());
        }
    }
}

/// Below the width where the tool pane fits, each call is one line in the chat where
/// it ran: Tab reaches them, Up/Down select them, Right shows the output, and Up, Up,
/// Enter never re-sends an earlier request.
#[test]
fn in_a_narrow_terminal_tool_calls_are_lines_in_the_chat() {
    use scratchpad::protocol::Op;
    let mut s = screen();
    conversation(&mut s.app);
    s.app.apply(AgentEvent::TurnDone {
        turn: scratchpad::protocol::TurnId(1),
        outcome: TurnOutcome::Completed,
    });
    let wide = text_of(&draw(&mut s.app, 120, 40));
    assert_eq!(
        wide.matches("read_file src/parser.rs").count(),
        1,
        "the pane has it, the chat not: {wide}"
    );
    let narrow = text_of(&draw(&mut s.app, 80, 24));
    assert!(narrow.contains("✓ read_file src/parser.rs <1s"), "{narrow}");
    assert!(
        narrow.contains("⊘ bash rm -rf build  "),
        "a refused call never ran: no time: {narrow}"
    );
    while s._ops.try_recv().is_ok() {}
    // Tab to the chat selects the newest call; Up selects the one before; Enter
    // shows its output (nothing saved to open) and sends nothing.
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Up));
    s.app.handle_key(key(KeyCode::Enter));
    assert!(s._ops.try_recv().is_err(), "nothing was sent");
    let terminal = draw(&mut s.app, 80, 24);
    let expanded = text_of(&terminal);
    assert!(
        expanded.contains("│ pub fn parse(input: &str) -> Vec<Token> {"),
        "{expanded}"
    );
    insta::assert_snapshot!("inline_tool_expanded_80x24", terminal.backend());
    s.app.handle_key(key(KeyCode::Left));
    let collapsed = text_of(&draw(&mut s.app, 80, 24));
    assert!(!collapsed.contains("│ pub fn parse("), "{collapsed}");
    assert_eq!(s.app.focus, scratchpad::tui::app::Focus::Chat);
    // Tab goes back to the prompt: the hidden pane is no stop.
    s.app.handle_key(key(KeyCode::Tab));
    assert_eq!(s.app.focus, scratchpad::tui::app::Focus::Input);
    assert!(
        !matches!(s._ops.try_recv(), Ok(Op::Submit { .. })),
        "no request was re-sent"
    );
}

/// The situations the key table's cases start from.
#[derive(Clone, Copy, Debug)]
enum Setup {
    Idle,
    /// A turn is running.
    Busy,
    /// A compaction (id `stage-x`) fired: its marker is the newest undoable one.
    Marker,
    /// `/context` is open on a history with one cleared tool result, `toolu_c`.
    Context,
    /// The permission question, request 7, with an "always" offer, shown a while ago.
    Permission,
    /// A summary in review in a turn, request 9, shown a while ago.
    Review,
    /// An error banner is up.
    Banner,
    /// Two finished turns, "read the parser" (with one `read_file` call) and "now
    /// fix it".
    Requests,
}

fn set_up(setup: Setup) -> Screen {
    use scratchpad::compact::markers::cleared_reference;
    let mut s = screen();
    match setup {
        Setup::Idle => {}
        Setup::Busy => s.app.apply(AgentEvent::TurnStarted {
            turn: scratchpad::protocol::TurnId(1),
            request: "work".into(),
        }),
        Setup::Marker => {
            let AgentEvent::Compaction { mut event } =
                stage(Stage::MicroCompact, 3, 60_000, 40_000, &[".transcripts/stage-x.jsonl"])
            else {
                unreachable!("stage builds a compaction event")
            };
            event.id = "stage-x".into();
            s.app.apply(AgentEvent::Compaction { event });
        }
        Setup::Context => {
            let messages = vec![
                Message::user_text("go"),
                Message::blocks(
                    Role::Assistant,
                    vec![ContentBlock::ToolUse {
                        id: "toolu_c".into(),
                        name: "bash".into(),
                        input: serde_json::json!({"command": "seq 1 100"}),
                        extra: Default::default(),
                    }],
                ),
                Message::blocks(
                    Role::User,
                    vec![ContentBlock::ToolResult {
                        tool_use_id: "toolu_c".into(),
                        content: ToolResultContent::Text(cleared_reference(".task_outputs/tool-results/toolu_c.txt")),
                        is_error: None,
                        extra: Default::default(),
                    }],
                ),
            ];
            s.app
                .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
            s.app.apply(AgentEvent::Breakdown {
                breakdown: breakdown(
                    "You are scratchpad.",
                    &[],
                    &[],
                    &[],
                    &messages,
                    &CompactConfig::default(),
                    &scratchpad::compact::SessionFacts::NONE,
                ),
            });
        }
        Setup::Permission => {
            s.app.apply(AgentEvent::PermissionRequest {
                turn: scratchpad::protocol::TurnId(1),
                request_id: 7,
                tool: "bash".into(),
                question: "Run it?".into(),
                subject: "cargo test".into(),
                always: Some("bash: cargo test".into()),
            });
            draw(&mut s.app, 120, 40);
            std::thread::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE);
        }
        Setup::Review => {
            s.app.apply(AgentEvent::SummaryReview {
                request_id: 9,
                leaves: "12 messages (60.0k chars), kept in .transcripts/transcript_compact_history_3.jsonl".into(),
                summary: "Goal: fix the parser.".into(),
                index: String::new(),
                covers: 12,
                retention: None,
                if_not_applied: "Not now: the history stays as it was.".into(),
                in_turn: true,
            });
            draw(&mut s.app, 120, 40);
            std::thread::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE);
        }
        Setup::Banner => s.app.apply(AgentEvent::Error {
            message: "the server said no".into(),
        }),
        Setup::Requests => {
            use scratchpad::protocol::{TurnId, TurnOutcome};
            for (turn, request) in [(1, "read the parser"), (2, "now fix it")] {
                s.app.apply(AgentEvent::TurnStarted {
                    turn: TurnId(turn),
                    request: request.into(),
                });
                if turn == 1 {
                    s.app.apply(AgentEvent::ToolStarted {
                        turn: TurnId(1),
                        id: "toolu_r".into(),
                        name: "read_file".into(),
                        summary: "src/parser.rs".into(),
                    });
                    s.app.apply(AgentEvent::ToolFinished {
                        turn: TurnId(1),
                        id: "toolu_r".into(),
                        name: "read_file".into(),
                        status: ToolStatus::Ok,
                        output: "fn parse() {}".into(),
                    });
                }
                s.app.apply(AgentEvent::TurnDone {
                    turn: TurnId(turn),
                    outcome: TurnOutcome::Completed,
                });
            }
        }
    }
    draw(&mut s.app, 120, 40);
    while s._ops.try_recv().is_ok() {}
    s
}

/// One case of the key table: what it is, where it starts, the keys pressed, the ops
/// they must send and what must show after.
type KeyCase = (&'static str, Setup, Vec<KeyEvent>, Vec<scratchpad::protocol::Op>, Shown);

/// What the app is showing, for the cases that change it rather than send an op.
#[derive(Debug, PartialEq)]
enum Shown {
    Unchanged,
    Tree,
    Preview,
    Context,
    Browser,
    Help,
    NoOverlay,
    Quitting,
    NoBanner,
    NoticeContaining(&'static str),
}

/// A letter, as typed.
fn plain(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

/// Ctrl and a letter.
fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// `text` typed at the prompt, then Enter.
fn typed(text: &str) -> Vec<KeyEvent> {
    let mut keys: Vec<KeyEvent> = text.chars().map(|c| key(KeyCode::Char(c))).collect();
    keys.push(key(KeyCode::Enter));
    keys
}

/// The op that restores the result of call `id`.
fn restore(id: &str) -> scratchpad::protocol::Op {
    scratchpad::protocol::Op::Restore { tool_use_id: id.into() }
}

/// Each slash command, and a request typed at the prompt.
fn slash_command_cases() -> Vec<KeyCase> {
    use scratchpad::protocol::Op;
    vec![
        (
            "/compact",
            Setup::Idle,
            typed("/compact"),
            vec![Op::Compact { focus: None }],
            Shown::Unchanged,
        ),
        (
            "/compact FOCUS",
            Setup::Idle,
            typed("/compact the parser"),
            vec![Op::Compact {
                focus: Some("the parser".into()),
            }],
            Shown::Unchanged,
        ),
        (
            "/compact --preview",
            Setup::Idle,
            typed("/compact --preview"),
            vec![Op::Preview { focus: None }],
            Shown::Preview,
        ),
        (
            "/compact --preview FOCUS",
            Setup::Idle,
            typed("/compact --preview tests"),
            vec![Op::Preview {
                focus: Some("tests".into()),
            }],
            Shown::Preview,
        ),
        (
            "/undo",
            Setup::Marker,
            typed("/undo"),
            vec![Op::Undo { stage_id: None }],
            Shown::Unchanged,
        ),
        (
            "/clear",
            Setup::Idle,
            typed("/clear"),
            vec![Op::Clear],
            Shown::Unchanged,
        ),
        (
            "/permissions",
            Setup::Idle,
            typed("/permissions"),
            vec![Op::Permissions { revoke: None }],
            Shown::Unchanged,
        ),
        (
            "/permissions revoke N",
            Setup::Idle,
            typed("/permissions revoke 2"),
            vec![Op::Permissions { revoke: Some(2) }],
            Shown::Unchanged,
        ),
        (
            "/mcp",
            Setup::Idle,
            typed("/mcp"),
            vec![Op::Mcp { action: None }],
            Shown::Unchanged,
        ),
        (
            "/mcp restart NAME",
            Setup::Idle,
            typed("/mcp restart github"),
            vec![Op::Mcp {
                action: Some(McpAction::Restart("github".into())),
            }],
            Shown::Unchanged,
        ),
        (
            "/mcp trust",
            Setup::Idle,
            typed("/mcp trust"),
            vec![Op::Mcp {
                action: Some(McpAction::Trust),
            }],
            Shown::Unchanged,
        ),
        (
            "/mcp disable NAME",
            Setup::Idle,
            typed("/mcp disable github"),
            vec![Op::Mcp {
                action: Some(McpAction::Disable("github".into())),
            }],
            Shown::Unchanged,
        ),
        (
            "/model",
            Setup::Idle,
            typed("/model"),
            vec![],
            Shown::NoticeContaining("claude-sonnet-4-5"),
        ),
        (
            "/context",
            Setup::Idle,
            typed("/context"),
            vec![Op::Inspect],
            Shown::Context,
        ),
        ("/archive", Setup::Idle, typed("/archive"), vec![], Shown::Browser),
        ("/help", Setup::Idle, typed("/help"), vec![], Shown::Help),
        ("/quit", Setup::Idle, typed("/quit"), vec![Op::Quit], Shown::Quitting),
        (
            "a request",
            Setup::Idle,
            typed("fix it"),
            vec![Op::Submit { text: "fix it".into() }],
            Shown::Unchanged,
        ),
    ]
}

/// The commands that are a key in one view too (`/fork` is `f` in the chat): what
/// each does from the prompt, and what it does when it cannot run.
fn action_command_cases() -> Vec<KeyCase> {
    use scratchpad::protocol::Op;
    vec![
        (
            "/undo with nothing to undo",
            Setup::Idle,
            typed("/undo"),
            vec![],
            Shown::Unchanged,
        ),
        (
            "Tab (the newest marker), /fork",
            Setup::Marker,
            [vec![key(KeyCode::Tab)], typed("/fork")].concat(),
            vec![Op::Fork {
                session: None,
                at: scratchpad::protocol::ForkAt::Stage("stage-x".into()),
            }],
            Shown::Unchanged,
        ),
        (
            "/fork with no marker selected",
            Setup::Marker,
            typed("/fork"),
            vec![],
            Shown::Unchanged,
        ),
        (
            "Tab (the newest request), /summarise",
            Setup::Requests,
            [vec![key(KeyCode::Tab)], typed("/summarise")].concat(),
            vec![Op::SummariseUpTo {
                request: "now fix it".into(),
                later_same: 0,
            }],
            Shown::Unchanged,
        ),
        (
            "/summarise with no request selected",
            Setup::Requests,
            typed("/summarise"),
            vec![],
            Shown::Unchanged,
        ),
        (
            "/count",
            Setup::Idle,
            typed("/count"),
            vec![Op::Inspect, Op::CountTokens],
            Shown::Context,
        ),
        (
            "/pin",
            Setup::Requests,
            typed("/pin"),
            vec![Op::Inspect],
            Shown::Context,
        ),
        (
            "/restore with no tool result",
            Setup::Idle,
            typed("/restore"),
            vec![],
            Shown::Unchanged,
        ),
        (
            "/drop",
            Setup::Requests,
            typed("/drop"),
            vec![Op::Inspect],
            Shown::Context,
        ),
    ]
}

/// The keys of the whole screen and of the chat.
fn screen_key_cases() -> Vec<KeyCase> {
    use scratchpad::protocol::Op;
    vec![
        (
            "Ctrl+X",
            Setup::Idle,
            vec![ctrl('x')],
            vec![Op::Inspect],
            Shown::Context,
        ),
        ("Ctrl+T", Setup::Idle, vec![ctrl('t')], vec![], Shown::Browser),
        ("F1", Setup::Idle, vec![key(KeyCode::F(1))], vec![], Shown::Help),
        (
            "? on an empty prompt",
            Setup::Idle,
            vec![plain('?')],
            vec![],
            Shown::Help,
        ),
        ("Ctrl+D", Setup::Banner, vec![ctrl('d')], vec![], Shown::NoBanner),
        (
            "Esc in a turn",
            Setup::Busy,
            vec![key(KeyCode::Esc)],
            vec![Op::Cancel],
            Shown::Unchanged,
        ),
        (
            "Ctrl+C in a turn",
            Setup::Busy,
            vec![ctrl('c')],
            vec![Op::Cancel],
            Shown::Unchanged,
        ),
        (
            "Ctrl+C twice",
            Setup::Idle,
            vec![ctrl('c'), ctrl('c')],
            vec![Op::Quit],
            Shown::Quitting,
        ),
        (
            "u on the newest marker",
            Setup::Marker,
            vec![key(KeyCode::Tab), plain('u')],
            vec![Op::Undo {
                stage_id: Some("stage-x".into()),
            }],
            Shown::Unchanged,
        ),
    ]
}

/// The keys of `/context`.
fn context_key_cases() -> Vec<KeyCase> {
    use scratchpad::protocol::Op;
    vec![
        (
            "↑, t in /context",
            Setup::Context,
            vec![key(KeyCode::Up), plain('t')],
            vec![Op::CountTokens],
            Shown::Context,
        ),
        (
            "↑, f, r in /context",
            Setup::Context,
            vec![key(KeyCode::Up), plain('f'), plain('r')],
            vec![restore("toolu_c")],
            Shown::Context,
        ),
        (
            "↑, f, p in /context",
            Setup::Context,
            vec![key(KeyCode::Up), plain('f'), plain('p')],
            vec![Op::Pin {
                tool_use_id: "toolu_c".into(),
                pinned: true,
            }],
            Shown::Context,
        ),
        (
            "↑, f, d in /context",
            Setup::Context,
            vec![key(KeyCode::Up), plain('f'), plain('d')],
            vec![Op::Drop {
                tool_use_id: "toolu_c".into(),
            }],
            Shown::Context,
        ),
        (
            "Esc in /context",
            Setup::Context,
            vec![key(KeyCode::Esc)],
            vec![],
            Shown::NoOverlay,
        ),
        (
            "q in /context",
            Setup::Context,
            vec![plain('q')],
            vec![],
            Shown::NoOverlay,
        ),
    ]
}

/// The keys of the questions, the summarise question and the session tree.
fn question_key_cases() -> Vec<KeyCase> {
    use scratchpad::protocol::Op;
    vec![
        (
            "y in the question",
            Setup::Permission,
            vec![plain('y')],
            vec![Op::Permission {
                request_id: 7,
                answer: PermissionAnswer::AllowOnce,
            }],
            Shown::Unchanged,
        ),
        (
            "Enter in the question",
            Setup::Permission,
            vec![key(KeyCode::Enter)],
            vec![Op::Permission {
                request_id: 7,
                answer: PermissionAnswer::AllowOnce,
            }],
            Shown::Unchanged,
        ),
        (
            "n in the question",
            Setup::Permission,
            vec![plain('n')],
            vec![Op::Permission {
                request_id: 7,
                answer: PermissionAnswer::Deny,
            }],
            Shown::Unchanged,
        ),
        (
            "a in the question",
            Setup::Permission,
            vec![plain('a')],
            vec![Op::Permission {
                request_id: 7,
                answer: PermissionAnswer::AlwaysForSession,
            }],
            Shown::Unchanged,
        ),
        (
            "p in the question",
            Setup::Permission,
            vec![plain('p')],
            vec![Op::Permission {
                request_id: 7,
                answer: PermissionAnswer::AlwaysForProject,
            }],
            Shown::Unchanged,
        ),
        (
            "Esc in the question",
            Setup::Permission,
            vec![key(KeyCode::Esc)],
            vec![Op::Cancel],
            Shown::Unchanged,
        ),
        (
            "Ctrl+S in a review",
            Setup::Review,
            vec![ctrl('s')],
            vec![Op::Review {
                request_id: 9,
                answer: scratchpad::protocol::ReviewAnswer::Apply,
            }],
            Shown::Unchanged,
        ),
        (
            "Ctrl+R in a review",
            Setup::Review,
            vec![ctrl('r')],
            vec![Op::Review {
                request_id: 9,
                answer: scratchpad::protocol::ReviewAnswer::Reject,
            }],
            Shown::Unchanged,
        ),
        (
            "Esc in a review",
            Setup::Review,
            vec![key(KeyCode::Esc)],
            vec![Op::Cancel],
            Shown::Unchanged,
        ),
        (
            "f on a selected marker",
            Setup::Marker,
            vec![key(KeyCode::Tab), plain('f')],
            vec![Op::Fork {
                session: None,
                at: scratchpad::protocol::ForkAt::Stage("stage-x".into()),
            }],
            Shown::Unchanged,
        ),
        (
            "Esc Esc on an empty prompt",
            Setup::Idle,
            vec![key(KeyCode::Esc), key(KeyCode::Esc)],
            vec![],
            Shown::Tree,
        ),
        (
            "Esc during a turn is no rewind",
            Setup::Busy,
            vec![key(KeyCode::Esc), key(KeyCode::Esc)],
            vec![Op::Cancel, Op::Cancel],
            Shown::NoOverlay,
        ),
        (
            "Esc in the session tree",
            Setup::Idle,
            vec![key(KeyCode::Esc), key(KeyCode::Esc), key(KeyCode::Esc)],
            vec![],
            Shown::NoOverlay,
        ),
    ]
}

/// Each binding and slash command does what the book and the help say, checked
/// against expectations written here, not read from the key table: a swapped binding
/// fails. Each case starts in a situation, presses keys (or types a command and
/// Enter), and names the ops sent, in order, and what the screen shows after.
#[test]
fn every_binding_and_command_does_what_it_documents() {
    let cases = [
        slash_command_cases(),
        action_command_cases(),
        screen_key_cases(),
        context_key_cases(),
        question_key_cases(),
    ]
    .into_iter()
    .flatten();
    let mut failures = Vec::new();
    for (what, setup, keys, sends, shown) in cases {
        let mut s = set_up(setup);
        let overlay_before = overlay_name(&s.app);
        for key in keys {
            s.app.handle_key(key);
        }
        let mut sent = Vec::new();
        while let Ok(op) = s._ops.try_recv() {
            sent.push(op);
        }
        if sent != sends {
            failures.push(format!("{what}: sent {sent:?}, documented {sends:?}"));
        }
        let holds = match &shown {
            Shown::Unchanged => overlay_name(&s.app) == overlay_before && !s.app.quit,
            Shown::Context => overlay_name(&s.app) == "context",
            Shown::Browser => overlay_name(&s.app) == "browser",
            Shown::Help => overlay_name(&s.app) == "help",
            Shown::Tree => overlay_name(&s.app) == "tree",
            Shown::Preview => overlay_name(&s.app) == "preview",
            Shown::NoOverlay => overlay_name(&s.app) == "none",
            Shown::Quitting => s.app.quit,
            Shown::NoBanner => s.app.state.banner.is_none(),
            Shown::NoticeContaining(text) => matches!(
                s.app.state.chat.last(),
                Some(scratchpad::tui::state::ChatEntry::Notice(notice)) if notice.contains(text)
            ),
        };
        if !holds {
            failures.push(format!(
                "{what}: expected {shown:?}, the overlay is {}",
                overlay_name(&s.app)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn overlay_name(app: &App) -> &'static str {
    match app.overlay {
        scratchpad::tui::app::Overlay::None => "none",
        scratchpad::tui::app::Overlay::Help(_) => "help",
        scratchpad::tui::app::Overlay::Browser(_) => "browser",
        scratchpad::tui::app::Overlay::Context(_) => "context",
        scratchpad::tui::app::Overlay::Picker(_) => "picker",
        scratchpad::tui::app::Overlay::Tree(_) => "tree",
        scratchpad::tui::app::Overlay::Preview(_) => "preview",
    }
}

/// The project's instruction files: the start's line with a link per file, a change
/// as a marker that learns its cache cost from the next call, and `/context`'s rows.
#[test]
fn instruction_files_at_the_start_when_they_change_and_in_context() {
    use scratchpad::protocol::{InstructionRow, InstructionsNote};
    let mut s = screen();
    let rows = vec![
        InstructionRow {
            path: "../AGENTS.md".into(),
            chars: 2_100,
            prompt_chars: 2_190,
            cut: false,
        },
        InstructionRow {
            path: "AGENTS.md".into(),
            chars: 32_000,
            prompt_chars: 32_140,
            cut: true,
        },
    ];
    s.app.apply(AgentEvent::Instructions {
        note: InstructionsNote {
            files: rows.clone(),
            problems: vec![
                "AGENTS.md cut to its first 32000 of 40000 bytes: the instruction files may hold 32768 in all \
                 (instructions.max_bytes)"
                    .into(),
            ],
            ..InstructionsNote::default()
        },
    });
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "go on".into(),
    });
    s.app.apply(AgentEvent::Instructions {
        note: InstructionsNote {
            files: rows.clone(),
            changes: vec!["../AGENTS.md changed (1.9k → 2.1k)".into()],
            ..InstructionsNote::default()
        },
    });
    // The next call rewrote the cache: the change's marker says what it cost.
    s.app.apply(AgentEvent::ModelCall {
        point: CallPoint {
            estimate: 12_300,
            messages: 7,
            cache_read: Some(0),
            cache_rewritten: Some(9_800),
            ..CallPoint::default()
        },
        usage: Usage::default(),
    });
    let terminal = draw(&mut s.app, 100, 24);
    let screen_text = terminal.backend().to_string();
    assert!(
        screen_text.contains("cache: the next call wrote 9.8k cached prompt tokens again"),
        "{screen_text}"
    );
    insta::assert_snapshot!("instructions_in_chat_100x24", terminal.backend());
    assert_readable_in_both_themes(&mut s.app, 100, 24, "instruction files in the chat");

    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    let system = "You are scratchpad.".to_string() + &"i".repeat(34_330);
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            &system,
            &rows,
            &[],
            &[],
            &[Message::user_text("go on")],
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    let terminal = draw(&mut s.app, 120, 40);
    let context = terminal.backend().to_string();
    assert!(context.contains("project instructions"), "{context}");
    assert!(context.contains("AGENTS.md (cut)"), "{context}");
    insta::assert_snapshot!("instructions_in_context_120x40", terminal.backend());
}

/// MCP servers: the line said of each in the chat, and `/context`'s row per server
/// under the fixed part.
#[test]
fn mcp_servers_in_the_chat_and_in_context() {
    use scratchpad::protocol::McpServerRow;
    let mut s = screen();
    for message in [
        "MCP server `github`: 12 tools, 9120 chars of every request",
        "MCP server `db` failed: cannot start `pg-mcp`: No such file or directory (os error 2)",
    ] {
        s.app.apply(AgentEvent::Notice {
            message: message.into(),
        });
    }
    s.app.apply(AgentEvent::McpServers {
        starting: vec!["tracker".into()],
        failed: vec!["db".into()],
    });
    let terminal = draw(&mut s.app, 120, 24);
    assert!(
        terminal
            .backend()
            .to_string()
            .contains("MCP: starting tracker; db failed (/mcp)"),
        "the status line names them"
    );
    insta::assert_snapshot!("mcp_in_chat_120x24", terminal.backend());
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    let system = "You are scratchpad.".to_string() + &"i".repeat(14_000);
    let servers = vec![McpServerRow {
        name: "github".into(),
        tools: 12,
        chars: 9_120,
    }];
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            &system,
            &[],
            &servers,
            &[],
            &[Message::user_text("go on")],
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    let terminal = draw(&mut s.app, 120, 40);
    let context = terminal.backend().to_string();
    assert!(context.contains("MCP servers"), "{context}");
    assert!(context.contains("github (12 tools)"), "{context}");
    insta::assert_snapshot!("mcp_in_context_120x40", terminal.backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "MCP servers in /context");
    // At 80x24 the messages and the free room show, whatever the fixed part's details
    // (it showed only the fixed part).
    // With an instruction file and a conversation of every kind of message too.
    let instructions = vec![scratchpad::protocol::InstructionRow {
        path: "AGENTS.md".into(),
        chars: 2_000,
        prompt_chars: 2_090,
        cut: false,
    }];
    let conversation = vec![
        Message::user_text("read the parser"),
        Message::blocks(
            Role::Assistant,
            vec![
                ContentBlock::text("Reading."),
                ContentBlock::tool_use("t1", "read_file", serde_json::json!({"path": "src/parser.rs"})),
            ],
        ),
        Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result("t1", "fn parse() {}\n".repeat(200), false)],
        ),
        Message::assistant_text("It parses."),
    ];
    for n in 0..6 {
        s.app.apply(stage(Stage::SnipCompact, 3, 50_000 + n, 49_000, &[]));
    }
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            &system,
            &instructions,
            &servers,
            &[],
            &conversation,
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    let small = text_of(&draw(&mut s.app, 80, 24));
    assert!(small.contains("free to the limit"), "{small}");
    assert!(small.contains("messages: the estimate"), "{small}");
}

/// A journal written by hand at `dir/<id>.jsonl`, last used at `used` (Unix seconds).
fn journal(dir: &std::path::Path, id: &str, records: &[scratchpad::session::Record], used: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{id}.jsonl"));
    let text: String = records
        .iter()
        .map(|record| format!("{}\n", serde_json::to_string(record).unwrap()))
        .collect();
    std::fs::write(&path, text).unwrap();
    fixed_time(&path, used);
}

fn meta(parent: Option<scratchpad::protocol::Origin>) -> scratchpad::session::Record {
    scratchpad::session::Record::Meta {
        version: 1,
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        created_unix: 1_796_000_000,
        parent,
    }
}

fn append(message: Message) -> scratchpad::session::Record {
    scratchpad::session::Record::Append { message }
}

/// Thirty sessions of a workspace: requests about different parts of a project, some
/// compacted, one forked.
fn thirty_sessions(dir: &std::path::Path) {
    use scratchpad::protocol::{ForkPoint, Origin};
    use scratchpad::session::{Record, Tally};
    let topics = [
        "fix the flaky parser test",
        "add a --json flag to the sessions command",
        "refactor the storage layer and keep the tests green",
        "why does the gauge jump after a compaction?",
        "write the release notes for 0.4",
        "port the sandbox to Landlock ABI 7",
    ];
    for n in 0..30u64 {
        let id = format!("20261201-{:06}-1", 100_000 + n);
        let topic = topics[n as usize % topics.len()];
        let parent = (n == 29).then(|| Origin {
            session: "20261201-100003-1".into(),
            at: ForkPoint::Message { position: 3 },
        });
        journal(
            dir,
            &id,
            &[
                meta(parent),
                append(Message::user_text(format!("{topic} (session {n})"))),
                append(Message::assistant_text("Looking at it now.")),
                Record::Tally(Tally {
                    turns: 1 + n as usize % 7,
                    compactions: n as usize % 3,
                    messages: 2 + n as usize,
                    estimate: 1_200 * (n as usize + 1),
                    last_request: format!("and now {topic}, step {n}"),
                    last_answer: format!("Done: {topic}. The tests pass; two files changed."),
                }),
            ],
            1_796_000_000 + n * 600,
        );
    }
}

#[test]
fn the_session_picker_at_two_sizes_and_filtered() {
    for (width, height) in [(120, 40), (80, 24)] {
        let mut s = screen();
        let sessions = s.dir.path().join("sessions");
        thirty_sessions(&sessions);
        s.app.sessions_in(sessions);
        type_text(&mut s.app, "/resume");
        s.app.handle_key(key(KeyCode::Enter));
        let terminal = draw(&mut s.app, width, height);
        let text = text_of(&terminal);
        assert!(text.contains("sessions · 30 of 30"), "{text}");
        insta::assert_snapshot!(format!("session_picker_{width}x{height}"), terminal.backend());
        assert_readable_in_both_themes(&mut s.app, width, height, "session picker");
        type_text(&mut s.app, "landlock");
        s.app.handle_key(key(KeyCode::Down));
        let terminal = draw(&mut s.app, width, height);
        let text = text_of(&terminal);
        assert!(text.contains("sessions · 5 of 30"), "{text}");
        insta::assert_snapshot!(format!("session_picker_filtered_{width}x{height}"), terminal.backend());
    }
}

#[test]
fn enter_in_the_picker_resumes_the_selected_session() {
    let mut s = screen();
    let sessions = s.dir.path().join("sessions");
    thirty_sessions(&sessions);
    s.app.sessions_in(sessions);
    s.app.open_picker();
    type_text(&mut s.app, "release notes");
    s.app.handle_key(key(KeyCode::Down));
    s.app.handle_key(key(KeyCode::Enter));
    let mut ops = Vec::new();
    while let Ok(op) = s._ops.try_recv() {
        ops.push(op);
    }
    assert_eq!(
        ops,
        vec![Op::Resume {
            session: "20261201-100022-1".into()
        }],
        "the second newest of the sessions about the release notes"
    );
}

/// A session with three compactions and a fork, as `/tree` draws it.
fn session_with_a_fork(dir: &std::path::Path) {
    use scratchpad::protocol::{ForkPoint, Origin};
    use scratchpad::session::Record;
    let stage = |id: &str, stage: Stage, before: usize, after: usize| Record::Stage {
        event: Box::new(StageEvent {
            id: id.into(),
            messages_after: 4,
            chars_after: after,
            replaced: 3,
            ..StageEvent::start(stage, 9, before, String::new())
        }),
    };
    journal(
        dir,
        "20261202-120000-1",
        &[
            meta(None),
            append(Message::user_text("map the storage layer")),
            append(Message::assistant_text("It has three parts.")),
            stage("s-snip", Stage::SnipCompact, 61_000, 22_000),
            append(Message::user_text("split the writer from the reader")),
            append(Message::assistant_text("Split.")),
            stage("s-micro", Stage::MicroCompact, 52_000, 39_000),
            append(Message::user_text("now make the tests pass")),
            append(Message::assistant_text("They pass.")),
            stage("s-summary", Stage::CompactHistory, 51_000, 4_200),
            append(Message::user_text("write the changelog")),
        ],
        1_796_200_000,
    );
    journal(
        dir,
        "20261202-130000-1",
        &[
            meta(Some(Origin {
                session: "20261202-120000-1".into(),
                at: ForkPoint::Message { position: 3 },
            })),
            append(Message::user_text("map the storage layer")),
            append(Message::assistant_text("It has three parts.")),
            append(Message::user_text("split the writer from the reader, keeping one file")),
        ],
        1_796_210_000,
    );
}

#[test]
fn the_session_tree_with_a_fork_and_three_compactions() {
    let mut s = screen();
    let sessions = s.dir.path().join("sessions");
    session_with_a_fork(&sessions);
    s.app.sessions_in(sessions);
    type_text(&mut s.app, "/tree");
    s.app.handle_key(key(KeyCode::Enter));
    let terminal = draw(&mut s.app, 120, 40);
    // The fork's own nodes sit deeper than the parent's nodes around it, so the
    // parent's later requests read as the parent's.
    let shown = text_of(&terminal);
    let indent_of = |needle: &str| {
        let line = shown
            .lines()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {shown}"));
        let text = line.trim_start_matches(['│', '›', ' ']);
        line.chars().count() - text.chars().count()
    };
    let parent_node = indent_of("◆ snip_compact 61.0k");
    let fork = indent_of("⑂ 20261202-130000-1");
    let parent_later = indent_of("3 › split the writer from the reader   ");
    let fork_node = indent_of("3 › split the writer from the reader, keeping one file");
    assert!(
        fork + 2 >= parent_node && fork_node > parent_later,
        "the fork no wider than the parent's nodes, its own deeper than the parent's later ones: {shown}"
    );
    insta::assert_snapshot!("session_tree_120x40", terminal.backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "session tree");
    // Label the fork, fold it, and fork the open session before its last request.
    for code in [KeyCode::Down, KeyCode::Down, KeyCode::Down, KeyCode::Char('l')] {
        s.app.handle_key(key(code));
    }
    type_text(&mut s.app, "one file");
    s.app.handle_key(key(KeyCode::Enter));
    s.app.handle_key(key(KeyCode::Char(' ')));
    let terminal = draw(&mut s.app, 80, 24);
    insta::assert_snapshot!("session_tree_labelled_and_folded_80x24", terminal.backend());
    for _ in 0..5 {
        s.app.handle_key(key(KeyCode::Down));
    }
    s.app.handle_key(key(KeyCode::Enter));
    let mut ops = Vec::new();
    while let Ok(op) = s._ops.try_recv() {
        ops.push(op);
    }
    assert_eq!(
        ops,
        vec![Op::Fork {
            session: None,
            at: scratchpad::protocol::ForkAt::Message(7)
        }]
    );
}

/// A summary prepared in the background: its quiet lines in the chat, the gauge's mark
/// where it started and its state (summarising, then ready), and the marker of the
/// stage 4 that swapped it in.
#[test]
fn a_background_summary_on_the_gauge_and_in_the_chat() {
    use scratchpad::protocol::{BackgroundEvent, BackgroundStatus};
    let mut s = screen();
    let status = |estimate: usize, background: Option<BackgroundStatus>| AgentEvent::Context {
        status: ContextStatus {
            estimate,
            limit: 50_000,
            target: 40_000,
            messages: 31,
            snip_max_messages: 50,
            fixed: 2_400,
            tokens: None,
            background,
            cache_missed: None,
        },
    };
    s.app.apply(AgentEvent::Background {
        event: BackgroundEvent::Started {
            percent: 71,
            messages: 26,
        },
    });
    s.app.apply(status(
        35_600,
        Some(BackgroundStatus {
            started_at_percent: 71,
            ready: false,
        }),
    ));
    let terminal = draw(&mut s.app, 120, 40);
    insta::assert_snapshot!("background_summarising_120x40", terminal.backend());
    s.app.apply(AgentEvent::Background {
        event: BackgroundEvent::Ready { took_ms: 41_300 },
    });
    s.app.apply(status(
        44_100,
        Some(BackgroundStatus {
            started_at_percent: 71,
            ready: true,
        }),
    ));
    let terminal = draw(&mut s.app, 120, 40);
    assert!(text_of(&terminal).contains("summary ready (from 71%; /summary reviews it)"));
    assert_readable_in_both_themes(&mut s.app, 120, 40, "background summary");
    let AgentEvent::Compaction { mut event } =
        stage(Stage::CompactHistory, 26, 51_200, 9_800, &[".transcripts/t.jsonl"])
    else {
        unreachable!("stage builds a compaction event")
    };
    event.swapped = Some(Box::new(scratchpad::compact::Swapped {
        prepared_at_percent: 71,
        age_secs: 130,
        summary_ms: 41_300,
        waited_ms: 0,
        results_rewritten: 2,
        archived_since: 0,
        cache_read: Some(38_000),
        cache_written: Some(900),
    }));
    s.app.apply(AgentEvent::Compaction { event });
    s.app.apply(status(9_800, None));
    let terminal = draw(&mut s.app, 120, 40);
    let text = text_of(&terminal);
    assert!(
        text.contains("swapped in a summary prepared at 71% (2 min ago), wait 0.0 s"),
        "{text}"
    );
    insta::assert_snapshot!("background_swapped_120x40", terminal.backend());
}

/// A read-only view says so where "ready" would be, its prompt says nothing typed is
/// sent, and Enter keeps the text instead of sending it into a refusal.
#[test]
fn a_read_only_view_says_so_and_keeps_what_was_typed() {
    let mut s = screen();
    s.app.apply(session_started(Some(
        "a read-only view of session 20261202-120000-1".into(),
    )));
    let empty = text_of(&draw(&mut s.app, 120, 40));
    assert!(!empty.contains("Enter sends"), "{empty}");
    assert!(empty.contains("nothing is sent"), "{empty}");
    type_text(&mut s.app, "what changed?");
    s.app.handle_key(key(KeyCode::Enter));
    assert!(s._ops.try_recv().is_err(), "nothing sent");
    assert_eq!(s.app.input.text(), "what changed?");
    let terminal = draw(&mut s.app, 120, 40);
    let shown = text_of(&terminal);
    assert!(shown.contains("◉ read-only"), "{shown}");
    assert!(!shown.contains("● ready"), "{shown}");
    insta::assert_snapshot!("read_only_view_120x40", terminal.backend());
}

/// Notices are lines, not one paragraph: `/mcp`'s list keeps a server a line and its
/// tools under it, and the picker's preview keeps the answer's heading apart from the
/// paragraph under it.
#[test]
fn mcp_list_and_picker_preview_keep_their_lines() {
    use scratchpad::session::{Record, Tally};
    let mut s = screen();
    s.app.apply(AgentEvent::Notice {
        message: [
            "MCP server `everything`: 13 tools, 9.1k chars of every request",
            "  mcp__everything__echo · 412 chars",
            "  mcp__everything__add · 530 chars",
            "MCP server `broken` failed: connection closed (its stderr ends: fatal: missing GITHUB_TOKEN)",
            "  its stderr ends:",
            "    fatal: missing GITHUB_TOKEN",
            "(/mcp restart NAME · /mcp disable NAME; MCP servers run outside the sandbox)",
        ]
        .join("\n"),
    });
    for (width, height) in [(120, 40), (80, 24)] {
        let shown = text_of(&draw(&mut s.app, width, height));
        assert!(
            shown
                .lines()
                .any(|line| line.contains("· MCP server `everything`: 13 tools")),
            "{shown}"
        );
        assert!(
            shown
                .lines()
                .any(|line| line.contains("  mcp__everything__echo · 412 chars")),
            "a tool a line: {shown}"
        );
        insta::assert_snapshot!(
            format!("mcp_list_{width}x{height}"),
            draw(&mut s.app, width, height).backend()
        );
    }
    let sessions = s.dir.path().join("sessions");
    journal(
        &sessions,
        "20261201-100000-1",
        &[
            meta(None),
            append(Message::user_text("survey this workspace")),
            Record::Tally(Tally {
                turns: 1,
                compactions: 2,
                messages: 14,
                estimate: 21_000,
                last_request: "survey this workspace".into(),
                last_answer: "## Survey complete\nI listed the workspace and read 3 files.".into(),
            }),
        ],
        1_796_000_000,
    );
    s.app.sessions_in(sessions);
    s.app.open_picker();
    let terminal = draw(&mut s.app, 120, 40);
    let shown = text_of(&terminal);
    assert!(!shown.contains("Survey completeI"), "{shown}");
    assert!(
        shown.contains("│Survey complete  ") && !shown.contains("## Survey"),
        "the heading has its own line, drawn as the chat draws it, not its marks: {shown}"
    );
    insta::assert_snapshot!("picker_preview_lines_120x40", terminal.backend());
    // A request that was a large paste shows collapsed, as the chat shows it.
    let pasted: String = (1..=30).map(|n| format!("line {n} of the log\n")).collect();
    journal(
        &s.dir.path().join("sessions"),
        "20261202-100000-1",
        &[
            meta(None),
            append(Message::user_text(pasted.clone())),
            Record::Tally(Tally {
                turns: 1,
                compactions: 0,
                messages: 2,
                estimate: 900,
                last_request: pasted,
                last_answer: "Read it.".into(),
            }),
        ],
        1_796_100_000,
    );
    s.app.handle_key(key(KeyCode::Esc));
    s.app.open_picker();
    let shown = text_of(&draw(&mut s.app, 120, 40));
    assert!(shown.contains("› line 1 of the log [pasted 30 lines]"), "{shown}");
    assert!(!shown.contains("line 30 of the log"), "{shown}");
}

/// The gauge with everything to say (tokens, a background summary) at 60, 80 and 120
/// columns: the bar keeps at least 20 cells, and the text gives up whole fields, the
/// least useful first, never a word cut in two.
#[test]
fn the_gauge_gives_up_whole_fields_and_keeps_its_bar() {
    let mut s = screen();
    s.app.apply(AgentEvent::Context {
        status: ContextStatus {
            estimate: 36_400,
            limit: 50_000,
            target: 40_000,
            messages: 48,
            snip_max_messages: 50,
            fixed: 17_700,
            tokens: Some(TokenFigure {
                tokens: 13_520,
                window_tokens: 200_000,
                request_chars: 54_100,
                chars_per_token: 4.0,
                basis: TokenBasis::Reported,
            }),
            background: Some(scratchpad::protocol::BackgroundStatus {
                started_at_percent: 71,
                ready: false,
            }),
            cache_missed: None,
        },
    });
    let endings = ["%)", "fixed", "msgs", "since 71%", "chars/token"];
    for (width, height) in [(60, 15), (80, 24), (120, 40)] {
        let terminal = draw(&mut s.app, width, height);
        let shown = text_of(&terminal);
        let gauge_lines: Vec<&str> = shown
            .lines()
            .filter(|line| line.contains("░") || line.contains("chars ("))
            .collect();
        let cells = gauge_lines[0].chars().filter(|c| "█░┃╎".contains(*c)).count();
        assert!(cells >= 20, "{width} columns: a bar of {cells} cells: {gauge_lines:?}");
        let text = gauge_lines.last().unwrap().trim_end();
        assert!(
            endings.iter().any(|ending| text.ends_with(ending)),
            "{width} columns: the text ends mid-field: {text:?}"
        );
        assert!(text.contains("36.4k / 50.0k chars (72%)"), "{text}");
        insta::assert_snapshot!(format!("gauge_full_{width}x{height}"), terminal.backend());
    }
}

/// Prose typed while a view is open goes to the prompt, not to the view's commands
/// (a request typed over /context used to restore with `r`, archive with `d` and
/// open a viewer with Enter): the view closes at the first letter, says so, and the
/// request is sent as typed. Once the user has moved in the view, its letters act.
#[test]
fn prose_typed_over_a_view_goes_to_the_prompt() {
    let messages = vec![
        Message::user_text("x".repeat(500)),
        Message::blocks(
            Role::Assistant,
            vec![ContentBlock::tool_use(
                "toolu_a",
                "bash",
                serde_json::json!({"command": "ls"}),
            )],
        ),
        Message::blocks(
            Role::User,
            vec![ContentBlock::tool_result("toolu_a", "y".repeat(300), false)],
        ),
    ];
    type Open = fn(&mut App);
    let opens: [(&str, Open); 3] = [
        ("/context", |app| {
            app.handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL))
        }),
        ("/tree", |app| {
            app.handle_key(key(KeyCode::Esc));
            app.handle_key(key(KeyCode::Esc));
        }),
        ("the help", |app| app.handle_key(key(KeyCode::F(1)))),
    ];
    for (view, open) in opens {
        let mut s = screen();
        open(&mut s.app);
        s.app.apply(AgentEvent::Breakdown {
            breakdown: breakdown(
                "sys",
                &[],
                &[],
                &[],
                &messages,
                &CompactConfig::default(),
                &scratchpad::compact::SessionFacts::NONE,
            ),
        });
        while s._ops.try_recv().is_ok() {}
        type_text(&mut s.app, "read the drop-down code");
        let screen = text_of(&draw(&mut s.app, 120, 40));
        assert_eq!(overlay_name(&s.app), "none", "{view}: {screen}");
        assert!(
            screen.contains("closed: what you type goes to the prompt"),
            "{view}: {screen}"
        );
        assert_eq!(s.app.input.text(), "read the drop-down code", "{view}");
        s.app.handle_key(key(KeyCode::Enter));
        let sent: Vec<Op> = std::iter::from_fn(|| s._ops.try_recv().ok()).collect();
        assert_eq!(
            sent,
            vec![Op::Submit {
                text: "read the drop-down code".into()
            }],
            "{view}: nothing but the request"
        );
    }
}

/// What `/context` said goes with it: after Esc the main screen shows no toast about
/// a view that is closed.
#[test]
fn a_context_toast_goes_with_the_view() {
    let mut s = screen();
    let messages = vec![Message::user_text("x".repeat(500)), Message::assistant_text("ok")];
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            "sys",
            &[],
            &[],
            &[],
            &messages,
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    s.app.handle_key(key(KeyCode::Down));
    s.app.handle_key(key(KeyCode::Char('r')));
    let open = text_of(&draw(&mut s.app, 120, 40));
    assert!(open.contains("this acts on tool results"), "{open}");
    s.app.handle_key(key(KeyCode::Esc));
    let closed = text_of(&draw(&mut s.app, 120, 40));
    assert!(!closed.contains("this acts on tool results"), "{closed}");
}

/// A receipt item's saved path that does not fit after its description gets a line
/// of its own: it is never cut in two where a line would hold it whole.
#[test]
fn a_receipt_path_is_never_cut_where_a_line_holds_it() {
    let mut s = screen();
    let path = ".task_outputs/tool-results/toolu_01ABCDEFGH_0_read_file.txt";
    let AgentEvent::Compaction { mut event } = stage(Stage::MicroCompact, 1, 60_000, 40_000, &[path]) else {
        unreachable!("stage builds a compaction event")
    };
    event.items = vec![scratchpad::compact::ReceiptItem {
        position: 12,
        role: Role::User,
        what: "read_file src/storage/writer.rs (result)".into(),
        chars_before: 31_000,
        chars_after: 80,
        saved: Some(path.into()),
        tool_use_id: Some("toolu_01ABCDEFGH_0".into()),
        was: None,
    }];
    s.app.apply(AgentEvent::Compaction { event });
    draw(&mut s.app, 80, 24);
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Right));
    let shown = text_of(&draw(&mut s.app, 80, 24));
    assert!(
        shown.contains("#12 user · read_file src/storage/writer.rs (result)"),
        "{shown}"
    );
    assert!(
        shown.lines().any(|line| line.contains(&format!("│      ↳ {path}"))),
        "the path whole on a line of its own: {shown}"
    );
}

/// Every compaction of a long session is in `/context`, newest first, a page at a
/// time: PgDn and PgUp scroll the list, and the heading says which are shown.
#[test]
fn the_compactions_in_context_scroll_newest_first() {
    let mut s = screen();
    for n in 0..12 {
        let AgentEvent::Compaction { mut event } = stage(Stage::SnipCompact, 3, 51_000 + n, 47_000, &[]) else {
            unreachable!("stage builds a compaction event")
        };
        event.id = format!("stage-{n}");
        s.app.apply(AgentEvent::Compaction { event });
    }
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            "sys",
            &[],
            &[],
            &[],
            &[Message::user_text("go")],
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    let first = text_of(&draw(&mut s.app, 120, 40));
    assert!(
        first.contains("compactions, newest first · 1–5 of 12 · PgUp/PgDn"),
        "{first}"
    );
    assert!(first.contains("#12 snip_compact 51.0k"), "{first}");
    assert!(!first.contains("#7 snip_compact"), "{first}");
    s.app.handle_key(key(KeyCode::PageDown));
    s.app.handle_key(key(KeyCode::PageDown));
    s.app.handle_key(key(KeyCode::PageDown));
    let last = text_of(&draw(&mut s.app, 120, 40));
    assert!(
        last.contains("8–12 of 12"),
        "scrolled to the oldest, no further: {last}"
    );
    assert!(last.contains("#1 snip_compact 51.0k"), "{last}");
    s.app.handle_key(key(KeyCode::PageUp));
    assert!(text_of(&draw(&mut s.app, 120, 40)).contains("3–7 of 12"));
}

/// `e` in a permission question denies with words for the model, typed in the
/// prompt (what was being typed there waits and comes back); Esc goes back to the
/// question. The question names the command once.
#[test]
fn a_call_is_denied_with_words_for_the_model() {
    let mut s = screen();
    type_text(&mut s.app, "a draft");
    s.app.apply(AgentEvent::PermissionRequest {
        turn: scratchpad::protocol::TurnId(1),
        request_id: 9,
        tool: "bash".into(),
        question: "`rm -rf build` deletes files. Run it?".into(),
        subject: "rm -rf build".into(),
        always: None,
    });
    let asked = text_of(&draw(&mut s.app, 120, 40));
    assert_eq!(asked.matches("rm -rf build").count(), 1, "the command once: {asked}");
    assert!(asked.contains("deny, say why"), "{asked}");
    std::thread::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE);
    s.app.handle_key(key(KeyCode::Char('e')));
    let typing = text_of(&draw(&mut s.app, 120, 40));
    assert!(typing.contains("why not? · Enter denies with these words"), "{typing}");
    assert!(!typing.contains("Run it?"), "the question waits behind: {typing}");
    s.app.handle_key(key(KeyCode::Esc));
    assert!(
        text_of(&draw(&mut s.app, 120, 40)).contains("Run it?"),
        "Esc: back to the question"
    );
    assert_eq!(s.app.input.text(), "a draft");
    std::thread::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE);
    s.app.handle_key(key(KeyCode::Char('e')));
    type_text(&mut s.app, "use cargo clean instead");
    s.app.handle_key(key(KeyCode::Enter));
    match s._ops.try_recv() {
        Ok(Op::Permission { request_id: 9, answer }) => {
            assert_eq!(answer, PermissionAnswer::DenyBecause("use cargo clean instead".into()))
        }
        other => panic!("expected the denial with words, got {other:?}"),
    }
    assert!(s.app.state.turn.permission().is_none());
    assert_eq!(s.app.input.text(), "a draft", "the draft comes back");
    insta::assert_snapshot!("modal_120x40_after_denial", draw(&mut s.app, 120, 40).backend());
}

/// A request typed with a large paste collapsed stays collapsed in the chat, as it
/// was typed; selected, → shows the paste whole and ← folds it again.
#[test]
fn a_collapsed_paste_stays_collapsed_in_the_chat() {
    let mut s = screen();
    let pasted: String = (1..=58).map(|n| format!("log line {n}\n")).collect();
    s.app.handle_event(crossterm::event::Event::Paste(pasted.clone()));
    type_text(&mut s.app, " why?");
    s.app.handle_key(key(KeyCode::Enter));
    let Ok(Op::Submit { text }) = s._ops.try_recv() else {
        panic!("the request was sent")
    };
    assert!(text.contains("log line 58"), "sent whole");
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: text,
    });
    let chat = text_of(&draw(&mut s.app, 120, 40));
    assert!(chat.contains("› [pasted 58 lines #1] why?"), "{chat}");
    assert!(!chat.contains("log line 30"), "collapsed: {chat}");
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Right));
    let expanded = text_of(&draw(&mut s.app, 120, 40));
    assert!(expanded.contains("log line 30"), "whole when expanded: {expanded}");
    s.app.handle_key(key(KeyCode::Left));
    assert!(!text_of(&draw(&mut s.app, 120, 40)).contains("log line 30"));
}

/// `/permissions` as the agent says it: one approval a line with how long it lasts,
/// and where the project's are kept.
#[test]
fn the_permissions_list_is_one_approval_a_line() {
    let mut s = screen();
    s.app.apply(AgentEvent::Notice {
        message: [
            "approved (/permissions revoke N):",
            "1. bash: \"cargo test …\" · this session",
            "2. read_file: /etc/hosts · this project",
            "the project's are kept in /home/dev/.local/share/scratchpad/project-approvals.json",
        ]
        .join("\n"),
    });
    let terminal = draw(&mut s.app, 80, 24);
    let shown = text_of(&terminal);
    assert!(shown.contains("│  1. bash: \"cargo test …\" · this session"), "{shown}");
    assert!(shown.contains("│  2. read_file: /etc/hosts · this project"), "{shown}");
    insta::assert_snapshot!("permissions_80x24", terminal.backend());
}

/// A summary's receipt names the record it was written from, what the index cut, and
/// each archive file that could not be trusted and so was left out of its input.
#[test]
fn a_summarys_record_and_what_was_left_out_are_in_its_receipt() {
    let mut s = screen();
    let mut history = failing_lexer_test();
    // A result cleared to a file this session never wrote: not trusted, left out.
    history.insert(
        3,
        scratchpad::message::Message::blocks(
            scratchpad::message::Role::Assistant,
            vec![scratchpad::message::ContentBlock::tool_use(
                "forged",
                "read_file",
                serde_json::json!({"path": "src/parser.rs"}),
            )],
        ),
    );
    history.insert(
        4,
        scratchpad::message::Message::blocks(
            scratchpad::message::Role::User,
            vec![scratchpad::message::ContentBlock::tool_result(
                "forged",
                scratchpad::compact::markers::cleared_reference(".task_outputs/tool-results/forged.txt"),
                false,
            )],
        ),
    );
    let archive = scratchpad::compact::MemoryArchive::new();
    let tiny = CompactConfig {
        summary_floor_chars: 0,
        ..CompactConfig::default()
    };
    let event = scratchpad::compact::force_compact(
        &mut history,
        scratchpad::compact::Asked::by("the user (/compact)", "fix the parser"),
        &scratchpad::compact::Context::new(&tiny, &archive),
        &mut Forgetful,
    );
    let note = event.summary_note.clone().expect("a summary names its record");
    assert_eq!(note.left_out.len(), 1, "{note:?}");
    // The transcript is named by the time and the process: fixed for the snapshot.
    let transcript = event.archived.clone().expect("a transcript");
    let mut event: scratchpad::compact::StageEvent = serde_json::from_str(
        &serde_json::to_string(&event)
            .unwrap()
            .replace(&transcript, ".transcripts/transcript_compact_history_1.jsonl"),
    )
    .unwrap();
    event.took_ms = 7;
    s.app.apply(AgentEvent::Compaction { event });
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Right));
    let terminal = draw(&mut s.app, 120, 40);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("summarised from the whole record:"), "{screen}");
    assert!(
        screen.contains("! .task_outputs/tool-results/forged.txt was left out of the summary"),
        "{screen}"
    );
    insta::assert_snapshot!("summary_record_receipt_120x40", terminal.backend());
}

/// `compaction.review_summaries`: a written summary waits for review, with the index and
/// what the two keep. Typed keys edit it (none count before the modal was read), and
/// Ctrl+S sends the edit; untouched, it goes in as the model wrote it.
#[test]
fn a_summary_in_review_is_edited_and_applied() {
    let mut s = screen();
    let review = || {
        AgentEvent::SummaryReview {
        request_id: 9,
        leaves: "12 messages (48.2k chars), kept in .transcripts/transcript_compact_history_1.jsonl; the summary and its index take 1.4k chars in their place".into(),
        summary: "Goal: fix the parser.\nDecisions: keep the lexer.".into(),
        index: format!(
            "{}\nIn .transcripts/transcript_record_1.jsonl:\n- asked (line 1): fix the parser\n- error (line 3): error[E0308]: mismatched types\n- changed (line 4): src/parser.rs\n- ran (line 2): cargo test --lib lexer · failed, exit code 101",
            scratchpad::compact::index::INDEX_HEADING
        ),
        covers: 12,
        retention: Some("keeps 5/6: paths 2/2, commands 1/2, errors 2/2".into()),
        if_not_applied: "Not now: the history stays as it was and this call goes over the limit.".into(),
        in_turn: true,
    }
    };
    s.app.apply(review());
    insta::assert_snapshot!("summary_review_120x40", draw(&mut s.app, 120, 40).backend());
    insta::assert_snapshot!("summary_review_80x24", draw(&mut s.app, 80, 24).backend());
    assert_readable_in_both_themes(&mut s.app, 120, 40, "a summary in review");
    // Typed at once: not an edit of a summary nobody has read yet.
    s.app.handle_key(key(KeyCode::Char('x')));
    std::thread::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE);
    for c in " Keep MAX".chars() {
        s.app.handle_key(key(KeyCode::Char(c)));
    }
    // A paste goes where typing goes, not to the prompt under the review.
    s.app.handle_event(crossterm::event::Event::Paste(" at 3.".into()));
    assert!(s.app.input.text().is_empty());
    let screen = draw(&mut s.app, 120, 40).backend().to_string();
    assert!(screen.contains("review the summary · edited"), "{screen}");
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    let answer = std::iter::from_fn(|| s._ops.try_recv().ok()).find(|op| matches!(op, Op::Review { .. }));
    assert_eq!(
        answer,
        Some(Op::Review {
            request_id: 9,
            answer: scratchpad::protocol::ReviewAnswer::Edited {
                summary: "Goal: fix the parser.\nDecisions: keep the lexer. Keep MAX at 3.".into()
            }
        })
    );
    assert!(
        !draw(&mut s.app, 120, 40)
            .backend()
            .to_string()
            .contains("review the summary")
    );
    // Untouched, Ctrl+S applies the model's text; Ctrl+R does not apply it.
    s.app.apply(review());
    draw(&mut s.app, 120, 40);
    std::thread::sleep(scratchpad::tui::modal::TYPE_AHEAD_GRACE);
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL));
    let answer = std::iter::from_fn(|| s._ops.try_recv().ok()).find(|op| matches!(op, Op::Review { .. }));
    assert_eq!(
        answer,
        Some(Op::Review {
            request_id: 9,
            answer: scratchpad::protocol::ReviewAnswer::Reject
        })
    );
    // A long index shows how much of it is not in the pane, at 80 columns too.
    let entries: String = (1..=20)
        .map(|n| format!("\n- read (line {n}): src/module_{n}.rs"))
        .collect();
    s.app.apply(AgentEvent::SummaryReview {
        request_id: 8,
        leaves: "40 messages (90.1k chars), kept in .transcripts/transcript_compact_history_2.jsonl".into(),
        summary: "Goal: read every module.".into(),
        index: format!(
            "{}\nIn .transcripts/transcript_record_2.jsonl:{entries}",
            scratchpad::compact::index::INDEX_HEADING
        ),
        covers: 40,
        retention: None,
        if_not_applied: "Not now: the history stays as it was.".into(),
        in_turn: true,
    });
    let long = draw(&mut s.app, 80, 24).backend().to_string();
    assert!(long.contains("… 13 more lines of index"), "{long}");
}

/// Whether compaction pays off: each marker says what it freed and how soon the one
/// before it was, and `/context` sums it up in a health line (count, mean freed,
/// median turns apart, the summaries' sizes and their trend).
#[test]
fn compaction_health_on_the_markers_and_in_context() {
    let mut s = screen();
    let summary_of = |chars: usize| Some("Goal: keep going.\n".repeat(chars / 18));
    for (at, (before, after, turns, summary)) in [
        (40_000, 28_000, None, None),
        (51_000, 11_000, Some(4), summary_of(1_200)),
        (30_000, 25_000, Some(3), None),
        (50_200, 13_500, Some(2), summary_of(1_900)),
    ]
    .into_iter()
    .enumerate()
    {
        let stage_kind = if summary.is_some() {
            Stage::CompactHistory
        } else {
            Stage::MicroCompact
        };
        let AgentEvent::Compaction { mut event } = stage(stage_kind, 3, before, after, &[]) else {
            unreachable!("stage builds a compaction event")
        };
        event.id = format!("stage-{at}");
        if at == 3 {
            // The newest summary folded the one before it, and grew past a fifth of an
            // 8,000-char limit.
            event.summary_note = Some(Box::new(scratchpad::compact::SummaryNote {
                path: ".transcripts/transcript_record_3.jsonl".into(),
                previous_summary_chars: Some(1_188),
                summary_percent_of_limit: 23,
                ..Default::default()
            }));
        }
        event.summary = summary;
        event.freed = Some(Box::new(scratchpad::compact::Freed {
            chars: i64::try_from(before - after).unwrap(),
            tokens: i64::try_from((before - after) / 4).unwrap(),
        }));
        event.since_previous = turns.map(|turns| {
            Box::new(scratchpad::compact::SincePrevious {
                turns,
                model_calls: turns * 3,
                secs: 60,
                estimate_after_previous: 12_000,
                between_turns: false,
            })
        });
        s.app.apply(AgentEvent::Compaction { event });
        s.app.apply(AgentEvent::Notice {
            message: format!("turn {at} went on"),
        });
    }
    let chat = draw(&mut s.app, 120, 40).backend().to_string();
    assert!(chat.contains("freed 12.0k"), "{chat}");
    assert!(chat.contains("36.7k; the last one was 2 turns ago"), "{chat}");
    assert!(
        chat.contains("summary 1.2k → 1.9k chars (grew); it takes 23% of the limit"),
        "{chat}"
    );
    insta::assert_snapshot!("compaction_health_markers_120x40", draw(&mut s.app, 120, 40).backend());
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            "sys",
            &[],
            &[],
            &[],
            &[Message::user_text("x".repeat(500))],
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    let terminal = draw(&mut s.app, 120, 40);
    let view = terminal.backend().to_string();
    assert!(
        view.contains(
            "health: 4 compactions · mean freed 23.4k · median 3 turns (9 model calls) apart · summaries 1.2k → 1.9k (growing)"
        ),
        "{view}"
    );
    insta::assert_snapshot!("context_health_120x40", terminal.backend());
}

#[test]
fn s_on_a_request_selected_in_the_chat_summarises_up_to_it() {
    use scratchpad::protocol::Op;
    let mut s = screen();
    for (turn, request) in [
        "open the project",
        "read the parser",
        "run the tests",
        "read the parser",
    ]
    .iter()
    .enumerate()
    {
        s.app.apply(AgentEvent::TurnStarted {
            turn: scratchpad::protocol::TurnId(turn as u64 + 1),
            request: request.to_string(),
        });
        s.app.apply(AgentEvent::AssistantMessage {
            turn: scratchpad::protocol::TurnId(turn as u64 + 1),
            message: Message::assistant_text(format!("done: {request}")),
        });
        s.app.apply(AgentEvent::TurnDone {
            turn: scratchpad::protocol::TurnId(turn as u64 + 1),
            outcome: TurnOutcome::Completed,
        });
    }
    // With no marker, Tab selects the newest request; Up the one before it.
    s.app.handle_key(key(KeyCode::Tab));
    s.app.handle_key(key(KeyCode::Up));
    insta::assert_snapshot!("request_selected_80x24", draw(&mut s.app, 80, 24).backend());
    s.app.handle_key(key(KeyCode::Char('s')));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::SummariseUpTo {
            request: "run the tests".into(),
            later_same: 0,
        })
    );
    assert!(s.app.input.is_empty(), "s acted on the request, not the prompt");
    // The first of two requests with the same text: one later has it too.
    s.app.handle_key(key(KeyCode::Up));
    s.app.handle_key(key(KeyCode::Char('s')));
    assert_eq!(
        s._ops.try_recv().ok(),
        Some(Op::SummariseUpTo {
            request: "read the parser".into(),
            later_same: 1,
        })
    );
    // The request that opens the chat has nothing before it: `s` is not offered on
    // it, and pressed, it says why and sends nothing.
    s.app.handle_key(key(KeyCode::Up));
    let offered = text_of(&draw(&mut s.app, 80, 24));
    assert!(offered.contains("nothing before it to summarise"), "{offered}");
    assert!(!offered.contains("s: summarise all before this"), "{offered}");
    s.app.handle_key(key(KeyCode::Char('s')));
    assert!(s._ops.try_recv().is_err(), "nothing is sent for the first request");
    let said = text_of(&draw(&mut s.app, 80, 24));
    assert!(said.contains("this is the first request"), "{said}");
    // While a turn runs it says so and sends nothing.
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(4),
        request: "go on".into(),
    });
    s.app.handle_key(key(KeyCode::Char('s')));
    assert!(s._ops.try_recv().is_err(), "nothing is sent during a turn");
    let said = text_of(&draw(&mut s.app, 80, 24));
    assert!(said.contains("summarise when it ends"), "{said}");
}

/// The server said why the prompt cache missed after a compaction: the gauge says it
/// for the turn, the compaction's marker says it was the next call's cost, and
/// `/context` keeps a line of it.
#[test]
fn a_cache_miss_after_a_compaction_is_on_the_gauge_the_marker_and_in_context() {
    use scratchpad::protocol::{CacheReport, PrefixChange};
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "go on with the parser".into(),
    });
    let AgentEvent::Compaction { mut event } = stage(
        Stage::MicroCompact,
        3,
        52_000,
        38_000,
        &[".task_outputs/tool-results/toolu_1.txt"],
    ) else {
        unreachable!("stage builds a compaction event")
    };
    event.id = "stage-7".into();
    s.app.apply(AgentEvent::Compaction { event });
    let report = CacheReport {
        reason: Some("messages_changed".into()),
        missed_input_tokens: Some(12_400),
        ours: Some(vec![PrefixChange::Message { position: 4 }]),
        stages: vec!["stage-7".into()],
    };
    s.app.apply(AgentEvent::ModelCall {
        point: CallPoint {
            estimate: 38_000,
            messages: 9,
            cache: Some(report.clone()),
            ..CallPoint::default()
        },
        usage: Usage::default(),
    });
    let AgentEvent::Context { mut status } = context(38_000, 9) else {
        unreachable!("context builds a context event")
    };
    status.cache_missed = Some(report);
    s.app.apply(AgentEvent::Context { status });
    for (width, height) in [(120, 40), (80, 24)] {
        let terminal = draw(&mut s.app, width, height);
        let text = text_of(&terminal);
        assert!(
            text.contains("$ the next call's cache missed: the messages changed, 12.4k tokens"),
            "{text}"
        );
        insta::assert_snapshot!(format!("cache_miss_{width}x{height}"), terminal.backend());
    }
    let wide = text_of(&draw(&mut s.app, 120, 40));
    assert!(
        wide.contains("cache missed: the messages changed, 12.4k tokens (scratchpad's change)"),
        "the gauge says it: {wide}"
    );

    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    s.app.apply(AgentEvent::Breakdown {
        breakdown: breakdown(
            "You are scratchpad.",
            &[],
            &[],
            &[],
            &[Message::user_text("go on with the parser")],
            &CompactConfig::default(),
            &scratchpad::compact::SessionFacts::NONE,
        ),
    });
    let terminal = draw(&mut s.app, 120, 40);
    let context = text_of(&terminal);
    assert!(
        context.contains("cache: 1 of 1 call not reused · newest, call 1: the messages changed, 12.4k tokens · scratchpad changed message 4"),
        "{context}"
    );
    insta::assert_snapshot!("cache_miss_in_context_120x40", terminal.backend());
}

/// Thinking blocks are their own `/context` category, with the tokens the last reply
/// spent thinking.
#[test]
fn thinking_is_its_own_category_in_context() {
    let mut s = screen();
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    let messages = [
        Message::user_text("list the files"),
        Message::blocks(
            Role::Assistant,
            vec![
                ContentBlock::Unknown(serde_json::json!({
                    "type": "thinking",
                    "thinking": "The user wants the files listed. ".repeat(40),
                    "signature": "sig-Eq8kAbc=="
                })),
                ContentBlock::text("Listing them now."),
            ],
        ),
    ];
    let mut map = breakdown(
        "You are scratchpad.",
        &[],
        &[],
        &[],
        &messages,
        &CompactConfig::default(),
        &scratchpad::compact::SessionFacts::NONE,
    );
    map.thinking_tokens = Some(612);
    s.app.apply(AgentEvent::Breakdown { breakdown: map });
    let terminal = draw(&mut s.app, 120, 40);
    let text = text_of(&terminal);
    assert!(text.contains("thinking (last reply: 612 tokens)"), "{text}");
    insta::assert_snapshot!("thinking_in_context_120x40", terminal.backend());
}

/// A summary the server wrote says so on its marker.
#[test]
fn a_summary_the_server_wrote_says_so_on_its_marker() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "go on with the parser".into(),
    });
    let AgentEvent::Compaction { mut event } = stage(
        Stage::CompactHistory,
        12,
        52_000,
        6_000,
        &[".transcripts/transcript_compact_history_20261206-091500_0000001-0001.jsonl"],
    ) else {
        unreachable!("stage builds a compaction event")
    };
    event.summary = Some("The parser drops its last token; the fix is in src/parser.rs and its tests pass.".into());
    event.summary_note = Some(Box::new(scratchpad::compact::SummaryNote {
        path: ".transcripts/transcript_compact_history_20261206-091500_0000001-0001.jsonl".into(),
        by_server: true,
        ..Default::default()
    }));
    s.app.apply(AgentEvent::Compaction { event });
    let terminal = draw(&mut s.app, 80, 24);
    let text = text_of(&terminal);
    assert!(text.contains("written by the server"), "{text}");
    insta::assert_snapshot!("server_summary_marker_80x24", terminal.backend());
}

/// A summary being written says so on the status line (for the turn) and on the gauge
/// (in the background), with how far it is.
#[test]
fn a_summary_being_written_is_on_the_status_line_and_the_gauge() {
    let mut s = screen();
    s.app.apply(AgentEvent::TurnStarted {
        turn: scratchpad::protocol::TurnId(1),
        request: "go on with the parser".into(),
    });
    s.app.apply(AgentEvent::Summarising {
        background: false,
        chars: 1_360,
    });
    let terminal = draw(&mut s.app, 80, 24);
    let text = text_of(&terminal);
    assert!(text.contains("summarising (0 s, ≈340 tokens so far)"), "{text}");
    insta::assert_snapshot!("summarising_80x24", terminal.backend());

    let AgentEvent::Context { mut status } = context(36_000, 30) else {
        unreachable!("context builds a context event")
    };
    status.background = Some(scratchpad::protocol::BackgroundStatus {
        started_at_percent: 71,
        ready: false,
    });
    s.app.apply(AgentEvent::Context { status });
    s.app.apply(AgentEvent::Summarising {
        background: true,
        chars: 800,
    });
    let text = text_of(&draw(&mut s.app, 120, 40));
    assert!(
        text.contains("summarising since 71% (0 s, ≈200 tokens so far)"),
        "{text}"
    );
}

/// Where the server counted each category, `/context`'s column says `counted` and
/// gives its figures (message framing what the template adds), and the gauge says the
/// figure is the server's count.
#[test]
fn the_servers_count_in_context_and_on_the_gauge() {
    use scratchpad::protocol::{Category, CountedTokens, TokenBasis, TokenFigure};
    let mut s = screen();
    let AgentEvent::Context { mut status } = context(9_400, 3) else {
        unreachable!("context builds a status")
    };
    status.tokens = Some(TokenFigure {
        tokens: 3_605,
        window_tokens: 4_096,
        request_chars: 11_800,
        chars_per_token: 11_800.0 / 3_605.0,
        basis: TokenBasis::Counted,
    });
    s.app.apply(AgentEvent::Context { status });
    let gauge = text_of(&draw(&mut s.app, 120, 40));
    assert!(gauge.contains("3.6k of 4.1k tokens (server's count)"), "{gauge}");
    s.app
        .handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
    let messages = [
        Message::user_text("Read this and say ok. ".repeat(60)),
        Message::assistant_text("ok"),
        Message::user_text("4 8 15 16 23 42 ".repeat(300)),
    ];
    let mut map = breakdown(
        "You are scratchpad.",
        &[],
        &[],
        &[],
        &messages,
        &CompactConfig::default(),
        &scratchpad::compact::SessionFacts::NONE,
    );
    map.counted = Some(CountedTokens {
        total: 3_605,
        fixed: 1_146,
        categories: vec![
            (Category::UserText, 2_391),
            (Category::AssistantText, 1),
            (Category::Framing, 67),
            (Category::SystemAndTools, 1_146),
            (Category::ProjectInstructions, 0),
            (Category::McpServers, 0),
        ],
    });
    s.app.apply(AgentEvent::Breakdown { breakdown: map });
    let terminal = draw(&mut s.app, 120, 40);
    let text = text_of(&terminal);
    assert!(text.contains("counted"), "{text}");
    assert!(text.contains("2.4k"), "the user text's count: {text}");
    assert!(text.contains("3.6k"), "the request's count: {text}");
    insta::assert_snapshot!("servers_count_in_context_120x40", terminal.backend());
}

/// The retention line's mark and colour follow its figure: a summary that kept 57
/// of 361 is a red `!`, not a green tick; one that kept nearly all is `✓`.
#[test]
fn the_retention_mark_follows_the_figure() {
    use scratchpad::compact::loss::{LossKind, LossReport, Tally};
    for (kept, found, mark, colour) in [
        (57, 361, "!", scratchpad::tui::theme::palette().failure),
        (350, 361, "✓", scratchpad::tui::theme::palette().success),
    ] {
        let mut s = screen();
        let AgentEvent::Compaction { mut event } = stage(Stage::CompactHistory, 30, 40_000, 9_000, &[]) else {
            unreachable!("stage gives a compaction")
        };
        event.loss = Some(LossReport {
            missing: Vec::new(),
            total: found - kept,
            tally: vec![Tally {
                kind: LossKind::Path,
                found,
                kept,
            }],
        });
        s.app.apply(AgentEvent::Compaction { event });
        let terminal = draw(&mut s.app, 120, 40);
        let buffer = terminal.backend().buffer();
        let line = format!("{mark} keeps {kept}/{found}");
        let row = (0..40)
            .find(|&y| {
                let text: String = (0..120).map(|x| buffer[(x, y)].symbol()).collect();
                text.contains(&line)
            })
            .unwrap_or_else(|| panic!("{line} on screen: {}", text_of(&terminal)));
        let x = (0..120).find(|&x| buffer[(x, row)].symbol() == mark).expect("the mark");
        assert_eq!(buffer[(x, row)].fg, colour, "{line}");
    }
}

/// `/model` lists one item a line, as `/mcp` does (it was one long paragraph).
#[test]
fn model_lists_one_item_a_line() {
    let mut s = screen();
    type_text(&mut s.app, "/model");
    s.app.handle_key(key(KeyCode::Enter));
    let Some(scratchpad::tui::state::ChatEntry::Notice(notice)) = s.app.state.chat.last() else {
        panic!("a notice: {:?}", s.app.state.chat.last());
    };
    let lines: Vec<&str> = notice.lines().collect();
    assert!(
        lines[0].starts_with("provider anthropic · model claude-sonnet-4-5"),
        "{notice}"
    );
    assert!(
        lines.iter().any(|line| line.starts_with("window 200.0k tokens")),
        "{notice}"
    );
    assert!(
        lines.iter().any(|line| line.starts_with("limit 50.0k chars")),
        "{notice}"
    );
    assert!(
        lines.iter().any(|line| line.starts_with("sandbox: workspace-write")),
        "{notice}"
    );
    let screen = text_of(&draw(&mut s.app, 80, 24));
    assert!(screen.contains("│  limit 50.0k chars"), "a line of its own: {screen}");
}

/// A note that lands where the chat is not shown (scrolled back) is said over it:
/// after scrolling, `/undo`'s line landed off-screen, unseen.
#[test]
fn a_note_below_a_scrolled_chat_is_said_over_it() {
    let mut s = screen();
    for n in 0..60 {
        s.app.apply(AgentEvent::Notice {
            message: format!("line {n}"),
        });
    }
    draw(&mut s.app, 80, 24);
    s.app.handle_key(key(KeyCode::PageUp));
    draw(&mut s.app, 80, 24);
    s.app.apply(AgentEvent::Undone {
        stage: Stage::MicroCompact,
        undid: "s1".into(),
        chars_before: 900,
        chars_after: 4_000,
    });
    let screen = text_of(&draw(&mut s.app, 80, 24));
    assert!(screen.contains("↶ undid micro_compact"), "{screen}");
}
