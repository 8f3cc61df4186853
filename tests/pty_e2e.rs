//! The real binary in a real pseudo-terminal: type a request to the offline demo
//! model, cancel it with one Ctrl+C, queue a request during the next turn, wait for a
//! compaction marker on screen, open the archive browser, quit,
//! and check the terminal was restored and the paths were hyperlinks.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

mod common;

/// Between two presses of a double press: well inside the app's window for one
/// (a rewind is Esc twice within a second), and far more than a terminal needs to
/// read them apart.
const KEY_GAP: Duration = Duration::from_millis(100);

struct Pty {
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl Pty {
    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, needle: &str, timeout: Duration) {
        assert!(
            self.shows_within(needle, timeout),
            "timed out waiting for {needle:?}; screen:\n{}",
            self.screen()
        );
    }

    /// Whether `needle` comes on screen within `timeout`.
    fn shows_within(&self, needle: &str, timeout: Duration) -> bool {
        let started = Instant::now();
        while !self.screen().contains(needle) {
            if started.elapsed() >= timeout {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    fn wait_until_gone(&self, needle: &str, timeout: Duration) {
        let started = Instant::now();
        while self.screen().contains(needle) {
            assert!(
                started.elapsed() < timeout,
                "{needle:?} still on screen after {timeout:?}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Press a key (or keys the app reads as one press).
    fn press(&mut self, bytes: &[u8]) {
        self.type_now(bytes);
    }

    /// Type `text` at the prompt and, once the prompt shows it, press Enter: a line
    /// typed and sent, as a user does. It returns once the prompt has let it go.
    fn type_line(&mut self, text: &str) {
        self.type_now(text.as_bytes());
        let started = Instant::now();
        while !self.prompt().contains(text) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the prompt never showed {text:?}; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.type_now(b"\r");
        // Sent (or queued): the prompt is empty again, so what is typed next is not
        // taken for more of the same line.
        while self.prompt().contains(text) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the prompt kept {text:?} after Enter; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the prompt's box shows (its lines joined), empty when it is not on screen.
    fn prompt(&self) -> String {
        let screen = self.screen();
        let lines: Vec<&str> = screen.lines().collect();
        let Some(top) = lines.iter().rposition(|line| line.starts_with("┌ request")) else {
            return String::new();
        };
        lines[top + 1..]
            .iter()
            .take_while(|line| !line.starts_with('└'))
            .map(|line| line.trim_matches(|c: char| c == '│' || c.is_whitespace()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Press each key apart from the next, as a hand does. A terminal that reads two
    /// presses in one go takes them for one (ESC ESC is read as a single Esc), so the
    /// gap is what makes a double press two; it waits for nothing in the app.
    fn press_apart(&mut self, keys: &[&[u8]]) {
        for (at, key) in keys.iter().enumerate() {
            if at > 0 {
                std::thread::sleep(KEY_GAP);
            }
            self.type_now(key);
        }
    }

    fn type_now(&mut self, bytes: &[u8]) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(bytes).unwrap();
        writer.flush().unwrap();
    }

    /// The background colour of the first cell of the first `text` on screen.
    fn background_of(&self, text: &str) -> Option<vt100::Color> {
        let parser = self.parser.lock().unwrap();
        let screen = parser.screen();
        let (_, columns) = screen.size();
        screen.rows(0, columns.get()).enumerate().find_map(|(row, line)| {
            let at = line.find(text)?;
            let column = line[..at].chars().count();
            screen.cell(row as u16, column as u16).map(|cell| cell.bgcolor())
        })
    }
}

/// How the terminal in a test answers the app's question about its colours (OSC 10
/// and 11, then the device attributes that end every such query).
#[derive(Clone, Copy)]
enum Colours {
    /// Like a terminal that does not know these queries: no answer.
    Silent,
    /// Black on white.
    Light,
}

/// Quit as a user does: Ctrl+C until the app offers to quit (a first press may clear
/// the prompt or cancel a turn), then once more.
fn quit_app(pty: &mut Pty) {
    for _ in 0..3 {
        pty.press(b"\x03");
        if pty.shows_within("press Ctrl+C again to quit", Duration::from_secs(2)) {
            break;
        }
    }
    pty.wait_for("press Ctrl+C again to quit", Duration::from_secs(10));
    pty.press(b"\x03");
}

/// The app on the offline demo model in a 120x40 pseudo-terminal: what it draws, the
/// child, and the master end (kept open for as long as the terminal is used).
fn start(
    workspace: &std::path::Path,
    home: &std::path::Path,
    colours: Colours,
) -> (
    Pty,
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn portable_pty::MasterPty + Send>,
) {
    start_with(workspace, home, colours, &[], &[])
}

/// [`start`] talking to `api` (the in-process mock) instead of the demo, with `args`.
fn start_on_mock(
    api: &common::MockApi,
    workspace: &std::path::Path,
    home: &std::path::Path,
    args: &[&str],
) -> (
    Pty,
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn portable_pty::MasterPty + Send>,
) {
    start_with(
        workspace,
        home,
        Colours::Silent,
        &[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &api.url)],
        args,
    )
}

/// [`start`] with more environment (a model API to talk to instead of the demo).
fn start_with(
    workspace: &std::path::Path,
    home: &std::path::Path,
    colours: Colours,
    environment: &[(&str, &str)],
    args: &[&str],
) -> (
    Pty,
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn portable_pty::MasterPty + Send>,
) {
    let pty = native_pty_system();
    let pair = pty
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    common::settle_config(home);
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_scratchpad"));
    command.args(["-C", workspace.to_str().unwrap()]);
    command.args(args);
    command.env("TERM", "xterm-256color");
    command.env("HOME", home);
    command.env("XDG_CONFIG_HOME", home);
    command.env("XDG_DATA_HOME", home.join("data"));
    command.env("SCRATCHPAD_LOG", home.join("log.txt"));
    // A few milliseconds a word: the script still runs in seconds, but a turn lasts
    // long enough for a request typed during it to be queued on any machine.
    command.env("SCRATCHPAD_DEMO_DELAY_MS", "3");
    // Paths become OSC 8 hyperlinks (detection would find no known terminal here).
    command.env("FORCE_HYPERLINK", "1");
    command.env_remove("ANTHROPIC_API_KEY");
    for (key, value) in environment {
        command.env(key, value);
    }
    let child = pair.slave.spawn_command(command).unwrap();
    drop(pair.slave);
    let parser = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(40).unwrap(),
        std::num::NonZeroU16::new(120).unwrap(),
        0,
    )));
    let raw = Arc::new(Mutex::new(Vec::new()));
    let writer = Arc::new(Mutex::new(pair.master.take_writer().unwrap()));
    let mut reader = pair.master.try_clone_reader().unwrap();
    {
        let parser = parser.clone();
        let raw = raw.clone();
        let writer = writer.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                let read = &buffer[..n];
                if let Colours::Light = colours {
                    let asks = |query: &[u8]| read.windows(query.len()).any(|w| w == query);
                    let mut answer = Vec::new();
                    if asks(b"\x1b]10;?") {
                        answer.extend_from_slice(b"\x1b]10;rgb:0000/0000/0000\x1b\\");
                    }
                    if asks(b"\x1b]11;?") {
                        answer.extend_from_slice(b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\");
                    }
                    if asks(b"\x1b[c") {
                        answer.extend_from_slice(b"\x1b[?62;22c");
                    }
                    if !answer.is_empty() {
                        let mut writer = writer.lock().unwrap();
                        let _ = writer.write_all(&answer).and_then(|()| writer.flush());
                    }
                }
                parser.lock().unwrap().process(read);
                raw.lock().unwrap().extend_from_slice(read);
            }
        });
    }
    let pty = Pty { parser, raw, writer };
    (pty, child, pair.master)
}

#[test]
fn the_app_shows_compaction_opens_the_browser_and_restores_the_terminal() {
    let workspace = common::demo_workspace();
    let home = tempfile::tempdir().unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    // Ctrl+C during a turn cancels it and does not quit.
    pty.type_line("survey this workspace");
    pty.wait_for("✓ glob", Duration::from_secs(30));
    pty.press(b"\x03");
    // A Ctrl+C that cancelled a turn does not arm the quit: a second one in haste
    // leaves the app open (it says what quits instead).
    pty.wait_for("Ctrl+C on an empty prompt, twice, quits", Duration::from_secs(10));
    pty.wait_for("turn cancelled", Duration::from_secs(10));
    pty.press(b"\x03");
    pty.wait_for("press Ctrl+C again to quit", Duration::from_secs(10));
    assert!(
        child.try_wait().unwrap().is_none(),
        "Ctrl+C after a cancel does not quit"
    );
    // The hint goes when its window closes, though nothing else moves on screen.
    pty.wait_until_gone("press Ctrl+C again to quit", Duration::from_secs(5));
    pty.type_line("survey this workspace");
    // A request typed while the turn runs is queued, and sent when it ends.
    pty.type_line("and then stop");
    pty.wait_for("queued · sent when the turn ends", Duration::from_secs(10));
    pty.wait_for("› and then stop", Duration::from_secs(120));
    // The demo runs its whole script; its last compaction marker stays on screen.
    pty.wait_for("◆ compact_history", Duration::from_secs(120));
    // The file name does not fit after its folder at this width: it wraps after the
    // folder, whole.
    pty.wait_for("↳ .transcripts/", Duration::from_secs(10));
    pty.wait_for("      transcript_compact_history_", Duration::from_secs(10));
    pty.wait_for("● ready", Duration::from_secs(60));
    pty.press(b"\x14"); // Ctrl+T
    pty.wait_for("transcripts and saved outputs", Duration::from_secs(10));
    pty.press(b"\r");
    pty.wait_for("line 1/", Duration::from_secs(10));
    pty.press(b"\x1b");
    pty.wait_until_gone("line 1/", Duration::from_secs(10));
    pty.press(b"\x1b");
    pty.wait_until_gone("transcripts and saved outputs", Duration::from_secs(10));
    pty.press(b"\x03");
    pty.wait_for("press Ctrl+C again to quit", Duration::from_secs(10));
    pty.press(b"\x03"); // the second Ctrl+C quits
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "the app did not quit");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
    // What the app wrote last (leaving the alternate screen, then the way back)
    // reaches the test as the reader takes it in.
    let left = Instant::now();
    let done = || {
        !pty.parser.lock().unwrap().screen().alternate_screen()
            && String::from_utf8_lossy(&pty.raw.lock().unwrap()).contains("scratchpad --continue")
    };
    while !done() && left.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !pty.parser.lock().unwrap().screen().alternate_screen(),
        "left the alternate screen"
    );
    let raw = String::from_utf8_lossy(&pty.raw.lock().unwrap()).into_owned();
    assert!(raw.contains("\x1b[?1000l"), "mouse capture turned off");
    assert!(raw.contains("\x1b[?2004l"), "bracketed paste turned off");
    assert!(raw.contains("scratchpad --continue"), "the way back is printed on quit");
    let link = format!("\x1b]8;;file://{}/.transcripts/", workspace.path().display());
    assert!(raw.contains(&link), "paths are OSC 8 hyperlinks: {link:?}");
    assert!(workspace.path().join(".transcripts").read_dir().unwrap().count() > 0);
}

/// A burst of typed input far larger than one read of the terminal (a paste without
/// bracketed paste, a text expander): every character arrives, in order, without
/// waiting for another key.
#[test]
fn a_burst_of_typed_input_is_taken_whole_and_in_order() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    // A terminal that does not say its background gets the palette for either: text in
    // the terminal's own colour, the badge a mid blue that reads on black and white.
    assert_eq!(pty.background_of(" scratchpad "), Some(vt100::Color::Idx(31)));
    let burst: String = (0..360).map(|n| format!("w{n:03}/{}", "x".repeat(5))).collect();
    assert!(burst.len() >= 3_600);
    pty.type_now(burst.as_bytes());
    pty.type_now(b"THE-END");
    // No further key: the burst shows on its own, collapsed as the paste it is, and
    // Ctrl+O shows it whole, its end last.
    pty.wait_for("[pasted 3607 chars #1]", Duration::from_secs(15));
    pty.press(b"\x0f");
    pty.wait_for("THE-END", Duration::from_secs(15));
    // In order: what the prompt shows of it (its end, where the box is too small for
    // all of it) is the end of what was typed, character for character.
    let shown: String = pty.prompt().chars().filter(|c| !c.is_whitespace()).collect();
    let typed = format!("{burst}THE-END");
    assert!(shown.len() > 500, "the prompt shows the burst's end: {shown:?}");
    assert!(typed.ends_with(&shown), "shown out of order:\n{shown}");
    quit_app(&mut pty);
    let _ = child.wait();
}

/// A paste the terminal does not bracket (8 KB in one write, its newlines as the CRs
/// a terminal sends) is text, not a request per line: it shows collapsed and nothing
/// is sent; the Enter pressed after it sends the whole text, within a second.
#[test]
fn an_unbracketed_paste_is_text_and_enter_sends_it_whole() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    let lines: Vec<String> = (1..=100)
        .map(|n| format!("pasted line {n:03} {}", "y".repeat(64)))
        .collect();
    let pasted = lines.join("\r");
    assert!(pasted.len() >= 8_000, "{}", pasted.len());
    pty.type_now(pasted.as_bytes());
    pty.wait_for("[pasted 100 lines #1]", Duration::from_secs(10));
    let sessions = scratchpad::session::sessions_dir_under(&home.path().join("data/scratchpad"), workspace.path());
    let requests = || -> Vec<String> {
        let Ok(journal) = scratchpad::session::find_in(&sessions, None) else {
            return Vec::new();
        };
        scratchpad::session::restore(&journal)
            .map(|restored| {
                restored
                    .past
                    .iter()
                    .filter_map(|item| match item {
                        scratchpad::protocol::Past::Message { message }
                            if message.role() == scratchpad::message::Role::User =>
                        {
                            Some(message.text())
                        }
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    // The frame that shows the paste collapsed would show a turn that any line of it
    // started: the app is still ready, and nothing reached the journal.
    assert!(
        pty.screen().contains("● ready"),
        "a paste starts no turn:\n{}",
        pty.screen()
    );
    assert_eq!(requests(), Vec::<String>::new(), "a paste sends nothing");
    pty.type_now(b"\r");
    let pressed = Instant::now();
    let expected = lines.join("\n");
    while !requests().contains(&expected) {
        assert!(
            pressed.elapsed() < Duration::from_secs(1),
            "the whole text was not sent within a second: {:?}",
            requests().iter().map(|r| r.len()).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(requests()[0], expected, "one request, the whole paste");
    quit_app(&mut pty);
    let _ = child.wait();
}

/// A terminal that says it is black on white gets the light palette.
#[test]
fn a_light_terminal_is_asked_and_drawn_in_the_light_palette() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Light);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    assert_eq!(
        pty.background_of(" scratchpad "),
        Some(vt100::Color::Idx(25)),
        "the status badge in the light palette's accent"
    );
    quit_app(&mut pty);
    let _ = child.wait();
}

/// The terminal closed under the app (its window shut): SIGHUP arrives and every
/// write to the terminal fails. The app ends its session and exits cleanly instead of
/// panicking (or aborting) over a report it can no longer print.
#[test]
fn closing_the_terminal_under_the_app_ends_it_cleanly() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills two descriptors we then own.
    let opened = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), &size) };
    assert_eq!(opened, 0, "openpty");
    // SAFETY: fcntl on the two descriptors just opened. openpty does not mark them
    // close-on-exec: a child holding the master would keep the terminal from hanging up.
    unsafe {
        libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // SAFETY: both descriptors were just opened and are owned here only.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let slave_fd = slave.as_raw_fd();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_scratchpad"));
    command
        .args(["-C", workspace.path().to_str().unwrap()])
        .env("TERM", "xterm-256color")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .env("SCRATCHPAD_LOG", home.path().join("log.txt"))
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    // SAFETY: between fork and exec only async-signal-safe calls: a new session with
    // the pseudo-terminal as its controlling terminal, as a terminal emulator does.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(slave_fd, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    // The command keeps its copies of the terminal's slave end: closed here, so the
    // terminal hangs up once the master closes.
    drop(command);
    drop(slave);
    let mut screen = vt100::Parser::new(
        std::num::NonZeroU16::new(40).unwrap(),
        std::num::NonZeroU16::new(120).unwrap(),
        0,
    );
    let mut terminal = std::fs::File::from(master);
    let started = Instant::now();
    let mut buffer = [0u8; 8192];
    while !screen.screen().contents().contains("offline demo model") {
        assert!(started.elapsed() < Duration::from_secs(20), "the app never drew");
        let n = terminal.read(&mut buffer).unwrap();
        screen.process(&buffer[..n]);
    }
    terminal.write_all(b"half a request").unwrap();
    // The hangup comes once the app has the text: it is in the prompt on screen.
    while !screen.screen().contents().contains("half a request") {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the typed text never showed"
        );
        let n = terminal.read(&mut buffer).unwrap();
        screen.process(&buffer[..n]);
    }
    drop(terminal);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("the app outlived its terminal");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

/// MCP servers start behind the first frame: one that never finishes its handshake
/// and one that cannot start show in the status line while the app is already in use,
/// `/mcp` says what each is doing, and quitting leaves no server behind.
#[test]
fn mcp_servers_start_behind_the_first_frame_and_show_in_the_status_line() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("scratchpad")).unwrap();
    // The workspace's path on the slow server's command line tells it from others.
    let marker = workspace.path().display().to_string();
    std::fs::write(
        home.path().join("scratchpad/config.toml"),
        format!(
            "[mcp_servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep 60\", {marker:?}]\nstartup_timeout_secs = 90\n\
             [mcp_servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n"
        ),
    )
    .unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    // At 120 columns beside the demo's labels, counted rather than named.
    pty.wait_for("MCP: 1 starting, 1 failed", Duration::from_secs(20));
    pty.type_line("/mcp");
    pty.wait_for("MCP server `slow`: starting", Duration::from_secs(10));
    pty.wait_for(
        "MCP server `gone` failed: cannot start `/nonexistent/mcp-server`",
        Duration::from_secs(10),
    );
    quit_app(&mut pty);
    let _ = child.wait();
    let started = Instant::now();
    while still_running(&marker) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the server outlived the app"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a process's command line mentions `text`.
fn still_running(text: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).any(|entry| {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline).contains(text)
    })
}

/// The text of each message the newest model call sent.
fn last_call_texts(api: &common::MockApi) -> Vec<String> {
    let requests = api.turn_requests();
    common::messages_of(requests.last().expect("a model call"))
        .iter()
        .map(|message| message.text())
        .collect()
}

/// A session on the mock with two exchanges done ("first question", "second
/// question"), its next answer "The answer on the branch.".
fn two_exchanges(
    workspace: &std::path::Path,
    home: &std::path::Path,
) -> (
    common::MockApi,
    Pty,
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn portable_pty::MasterPty + Send>,
) {
    let api = common::MockApi::start_in_thread(vec![
        common::text_reply("The first answer."),
        common::text_reply("The second answer."),
        common::text_reply("The answer on the branch."),
    ]);
    let (mut pty, child, master) = start_on_mock(&api, workspace, home, &[]);
    pty.wait_for("● ready", Duration::from_secs(20));
    for (request, answer) in [
        ("first question", "The first answer."),
        ("second question", "The second answer."),
    ] {
        pty.type_line(request);
        pty.wait_for(answer, Duration::from_secs(20));
        pty.wait_for("● ready", Duration::from_secs(20));
    }
    (api, pty, child, master)
}

/// Esc Esc on an empty prompt opens the session tree on the newest request; Enter forks
/// just before it with the request back in the prompt; edited and sent, the branch
/// goes on from the history before it, and the parent keeps its journal unchanged.
#[test]
fn esc_esc_forks_before_a_request_which_comes_back_to_edit() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (api, mut pty, mut child, _master) = two_exchanges(workspace.path(), home.path());
    let sessions = scratchpad::session::sessions_dir_under(&home.path().join("data/scratchpad"), workspace.path());
    let parent = scratchpad::session::find_in(&sessions, None).unwrap();
    let parent_before = std::fs::read(&parent).unwrap();
    pty.press_apart(&[b"\x1b", b"\x1b"]);
    pty.wait_for("session tree", Duration::from_secs(10));
    pty.wait_for("3 › second question", Duration::from_secs(10));
    pty.press(b"\r");
    pty.wait_for("⑂ a branch of session", Duration::from_secs(10));
    pty.wait_for("before message 3", Duration::from_secs(10));
    pty.wait_for("│second question", Duration::from_secs(10));
    pty.type_line(", in one sentence");
    pty.wait_for("The answer on the branch.", Duration::from_secs(20));
    assert_eq!(
        last_call_texts(&api),
        [
            "first question",
            "The first answer.",
            "second question, in one sentence"
        ],
        "the branch starts from the history before the request"
    );
    quit_app(&mut pty);
    let _ = child.wait();
    assert_eq!(
        std::fs::read(&parent).unwrap(),
        parent_before,
        "the parent was not written"
    );
    let listed = scratchpad::session::list(&sessions);
    assert_eq!(listed.len(), 2, "the parent and its branch");
}

/// Actions found from `/` at the prompt: `/summarise` on the selected request
/// summarises what came before it, and `/fork` on the marker that left forks before
/// it; the branch's next call carries the history as it was before the summary.
#[test]
fn slash_summarise_then_slash_fork_before_that_summary() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (api, mut pty, mut child, _master) = two_exchanges(workspace.path(), home.path());
    // Tab selects the newest request; what is typed next goes to the prompt, and the
    // finder says what `/summarise` would do with that selection.
    pty.press_apart(&[b"\t", b"/summarise"]);
    pty.wait_for("summarise everything before “second question”", Duration::from_secs(10));
    pty.press(b"\r");
    pty.wait_for("◆ compact_history", Duration::from_secs(20));
    pty.wait_for("● ready", Duration::from_secs(20));
    // End lets the selection go; Tab then selects the newest marker, the summary's.
    pty.press_apart(&[b"\x1b[F", b"\t", b"/fork"]);
    pty.wait_for("fork before: compact_history", Duration::from_secs(10));
    pty.press(b"\r");
    pty.wait_for("⑂ a branch of session", Duration::from_secs(10));
    pty.type_line("go on");
    pty.wait_for("The answer on the branch.", Duration::from_secs(20));
    assert_eq!(
        last_call_texts(&api),
        [
            "first question",
            "The first answer.",
            "second question",
            "The second answer.",
            "go on"
        ],
        "the branch starts from the history before the summary"
    );
    quit_app(&mut pty);
    let _ = child.wait();
}

/// The first-run tour on the demo: a note at the first marker, Ctrl+D dismisses it
/// for good (kept in the data folder), and the next run shows only the notes not yet
/// dismissed, the summary's among them.
#[test]
fn the_tour_shows_each_note_until_it_is_dismissed_for_good() {
    let workspace = common::demo_workspace();
    let home = tempfile::tempdir().unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    pty.type_line("survey this workspace");
    pty.wait_for("tour 1 of 3", Duration::from_secs(120));
    pty.wait_for("That marker is a compaction", Duration::from_secs(10));
    pty.press(b"\x04"); // Ctrl+D
    pty.wait_until_gone("tour 1 of 3", Duration::from_secs(10));
    pty.wait_for("● ready", Duration::from_secs(120));
    quit_app(&mut pty);
    let _ = child.wait();
    let kept = std::fs::read_to_string(home.path().join("data/scratchpad/tour.json")).unwrap();
    assert!(kept.contains("first_marker"), "{kept}");

    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    pty.type_line("survey this workspace");
    pty.wait_for("tour 2 of 3", Duration::from_secs(120));
    assert!(!pty.screen().contains("tour 1 of 3"), "{}", pty.screen());
    quit_app(&mut pty);
    let _ = child.wait();
}

/// `scratchpad --resume` without an id opens on the picker: typing filters it, Enter
/// continues the session picked, and the next request carries that session's history.
#[test]
fn resume_without_an_id_picks_a_session_from_the_list() {
    use scratchpad::session::Record;
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let sessions = scratchpad::session::sessions_dir_under(&home.path().join("data/scratchpad"), workspace.path());
    std::fs::create_dir_all(&sessions).unwrap();
    for (id, request, answer) in [
        ("20261201-090000-1", "tune the parser", "The parser is tuned."),
        ("20261201-100000-1", "write the changelog", "The changelog is written."),
    ] {
        let text: String = [
            scratchpad::message::Message::user_text(request),
            scratchpad::message::Message::assistant_text(answer),
        ]
        .into_iter()
        .map(|message| format!("{}\n", serde_json::to_string(&Record::Append { message }).unwrap()))
        .collect();
        std::fs::write(sessions.join(format!("{id}.jsonl")), text).unwrap();
    }
    let api = common::MockApi::start_in_thread(vec![common::text_reply("Continuing the parser work.")]);
    let (mut pty, mut child, _master) = start_on_mock(&api, workspace.path(), home.path(), &["--resume"]);
    pty.wait_for("sessions · 2 of 2", Duration::from_secs(20));
    pty.press(b"parser");
    pty.wait_for("sessions · 1 of 2", Duration::from_secs(10));
    pty.press(b"\r");
    pty.wait_for("The parser is tuned.", Duration::from_secs(10));
    pty.type_line("go on");
    pty.wait_for("Continuing the parser work.", Duration::from_secs(20));
    let sent = common::messages_of(api.turn_requests().last().unwrap());
    let texts: Vec<String> = sent.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["tune the parser", "The parser is tuned.", "go on"]);
    quit_app(&mut pty);
    let _ = child.wait();
    let listed = scratchpad::session::list(&sessions);
    assert_eq!(
        listed.len(),
        2,
        "the session opened for the picker, never used, left nothing behind"
    );
}

/// A session nobody sent a request in leaves no journal behind, and the app does not
/// offer to continue it.
#[test]
fn a_session_quit_unused_leaves_nothing_to_continue() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    let sessions = scratchpad::session::sessions_dir_under(&home.path().join("data/scratchpad"), workspace.path());
    assert!(
        scratchpad::session::find_in(&sessions, None).is_ok(),
        "the session has its journal while it is open"
    );
    quit_app(&mut pty);
    // Once the process has ended, its lock is gone with it.
    let _ = child.wait();
    assert!(
        scratchpad::session::find_in(&sessions, None).is_err(),
        "no journal is left of an unused session"
    );
    let raw = String::from_utf8_lossy(&pty.raw.lock().unwrap()).into_owned();
    assert!(!raw.contains("to pick it up again"), "nothing to continue is offered");
}

/// Every time the process's threads went to sleep by choice: each wake-up of any of
/// them (a timer, a poll's timeout, an event) ends in one such switch.
fn voluntary_switches(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("status")).ok())
        .filter_map(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|count| count.trim().parse::<u64>().ok())
        })
        .sum()
}

/// Idle means idle: with nothing typed and nothing running, no thread of the app wakes
/// (no input poll on a timer, no tick), so it costs no CPU while a user reads.
#[test]
fn an_idle_app_wakes_for_nothing() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (mut pty, mut child, _master) = start(workspace.path(), home.path(), Colours::Silent);
    pty.wait_for("offline demo model", Duration::from_secs(20));
    let pid = child.process_id().expect("the app's pid");
    // Settle: the first frame, the welcome and the start-up work are done.
    std::thread::sleep(Duration::from_millis(500));
    let before = voluntary_switches(pid);
    std::thread::sleep(Duration::from_secs(3));
    let woken = voluntary_switches(pid) - before;
    assert!(
        woken <= 3,
        "{woken} wake-ups in 3 idle seconds (a 100 ms poll alone makes 30)"
    );
    quit_app(&mut pty);
    let _ = child.wait();
}

/// `/clear` starts a new session; one quit unused after it leaves nothing, and the
/// way back to the session worked in before it is still said at the end (it named
/// none).
#[test]
fn after_clear_the_way_back_names_the_session_worked_in() {
    let workspace = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let api = common::MockApi::start_in_thread(vec![common::text_reply("Hello back.")]);
    let (mut pty, mut child, _master) = start_on_mock(&api, workspace.path(), home.path(), &[]);
    pty.wait_for("ready", Duration::from_secs(20));
    pty.type_line("hello");
    pty.wait_for("Hello back.", Duration::from_secs(20));
    pty.type_line("/clear");
    pty.wait_until_gone("Hello back.", Duration::from_secs(10));
    quit_app(&mut pty);
    let _ = child.wait();
    // The last lines reach the test as the reader takes them in.
    let ended = Instant::now();
    while !String::from_utf8_lossy(&pty.raw.lock().unwrap()).contains("to pick it up again") {
        if ended.elapsed() > Duration::from_secs(5) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let raw = String::from_utf8_lossy(&pty.raw.lock().unwrap()).into_owned();
    assert!(
        raw.contains("to pick it up again: scratchpad --continue"),
        "the way back to the session worked in: {}",
        raw.chars()
            .rev()
            .take(400)
            .collect::<String>()
            .chars()
            .rev()
            .collect::<String>()
    );
}
