//! The session picker's first paint on 1,000 sessions of 10 MB each: listing them
//! (each journal's head and tail) and drawing the picker, as `/resume` does. Goal:
//! under 100 ms. Each journal is a real head and tail around a hole of the size of a
//! long session's middle, which the listing must never read (were it read, this would
//! be 10 GB of reading).

use std::io::{Seek, SeekFrom, Write};

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use scratchpad::compact::CompactConfig;
use scratchpad::message::Message;
use scratchpad::protocol::{ForkPoint, Origin};
use scratchpad::session::{Record, Tally};
use scratchpad::tui::app::App;

const SESSIONS: usize = 1_000;
const JOURNAL_BYTES: u64 = 10 << 20;

fn line(record: &Record) -> Vec<u8> {
    let mut text = serde_json::to_vec(record).expect("serialise");
    text.push(b'\n');
    text
}

fn write_sessions(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("sessions folder");
    for n in 0..SESSIONS {
        let parent = (n % 10 == 9).then(|| Origin {
            session: format!("20261201-{:06}-1", n - 1),
            at: ForkPoint::Message { position: 5 },
        });
        let mut head = line(&Record::Meta {
            version: 1,
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            created_unix: 1_796_000_000,
            parent,
        });
        head.extend(line(&Record::Append {
            message: Message::user_text(format!("refactor module {n} and keep the tests green")),
        }));
        head.extend(line(&Record::Append {
            message: Message::assistant_text("Reading the module first. ".repeat(40)),
        }));
        let mut tail = line(&Record::Append {
            message: Message::assistant_text("The tests pass now; here is what changed. ".repeat(80)),
        });
        tail.extend(line(&Record::Tally(Tally {
            turns: 40 + n % 30,
            compactions: n % 6,
            messages: 49,
            estimate: 41_000 + n,
            last_request: "and the docs?".into(),
            last_answer: "Updated the README and the changelog.".into(),
        })));
        let path = dir.join(format!("20261201-{n:06}-1.jsonl"));
        let mut file = std::fs::File::create(&path).expect("journal");
        file.write_all(&head).expect("head");
        // The middle is a hole: never read by a listing that reads only both ends.
        file.seek(SeekFrom::Start(JOURNAL_BYTES - tail.len() as u64))
            .expect("seek");
        file.write_all(&tail).expect("tail");
    }
}

fn bench_picker(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let sessions = dir.path().join("sessions");
    write_sessions(&sessions);
    let (ops, _ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut app = App::new(ops, dir.path().to_path_buf(), CompactConfig::default());
    app.sessions_in(sessions);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    c.bench_function("picker_first_paint_1000_sessions_of_10MB", |b| {
        b.iter(|| {
            app.open_picker();
            terminal.draw(|frame| app.render(frame)).expect("draw");
        })
    });
}

criterion_group!(benches, bench_picker);
criterion_main!(benches);
