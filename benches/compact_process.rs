//! `scratchpad compact` as a whole process on generated histories of 10k, 50k and
//! 200k messages (about 0.9 KB each), against two figures measured in the same run:
//! - the floor: one serde_json parse of the input and one serialisation of it, in
//!   this process, on warm memory (the goal is at most 1.3x the floor);
//! - scratchpad's own floor: the same with its own message types, every message
//!   parsed at once, as it read a history before messages were kept as their text;
//! - the reference's floor: a Python process that does only `json.load` and
//!   `json.dumps` of the input, which the seed's pipeline cannot beat, since it loads
//!   the history and writes all of it to a transcript (the goal is 5x faster).
//!
//! It also prints the process's peak memory against the input's size (the goal: no
//! more than 3.3x, lower where what no stage reads stays as its text).
//!
//! Set BENCH_LARGE=1 to include the 200k history (190 MB).

use std::io::Write;
use std::process::Command;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use scratchpad::message::Message;
use serde_json::{Value, json};

/// The shape of a long agent session: a request, then rounds of a call and a ~2 KB
/// result, with a short exchange every fifth round.
fn history_text(messages: usize) -> String {
    let mut out = Vec::with_capacity(messages);
    out.push(json!({"role": "user", "content": "Refactor the storage layer and keep the tests green."}));
    let mut round = 0;
    while out.len() < messages {
        if round % 5 == 4 {
            out.push(json!({"role": "assistant", "content": format!("Progress note {round}: ").repeat(8)}));
            out.push(json!({"role": "user", "content": "continue"}));
        } else {
            let id = format!("toolu_{round:07}");
            out.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": "read_file", "input": {"path": format!("src/module_{round}.rs")}}]}));
            out.push(
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
                "content": format!("fn item_{round}() {{ /* line of source ✓ */ }}\n").repeat(45)}]}),
            );
        }
        round += 1;
    }
    out.truncate(messages);
    serde_json::to_string(&out).expect("serialise")
}

/// What any Python run of the seed does at least: load the history and write it out
/// whole, as its transcript does.
const PYTHON_FLOOR: &str = "import json, sys\n\
data = json.load(open(sys.argv[1], encoding='utf-8'))\n\
open(sys.argv[2], 'w', encoding='utf-8').write(json.dumps(data, ensure_ascii=False))\n";

fn python_available() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

fn bench_compact_process(c: &mut Criterion) {
    let binary = env!("CARGO_BIN_EXE_scratchpad");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let mut sizes = vec![10_000, 50_000];
    if std::env::var_os("BENCH_LARGE").is_some() {
        sizes.push(200_000);
    }
    let mut group = c.benchmark_group("compact_process");
    group.sample_size(10);
    for messages in sizes {
        let text = history_text(messages);
        let input = dir.path().join(format!("history_{messages}.json"));
        std::fs::File::create(&input)
            .and_then(|mut file| file.write_all(text.as_bytes()))
            .expect("write the history");
        println!("compact_process/{messages}: {:.1} MB of JSON", text.len() as f64 / 1e6);
        group.bench_function(format!("floor_parse_and_serialise_{messages}"), |b| {
            b.iter(|| {
                let value: Value = serde_json::from_str(&text).expect("parse");
                serde_json::to_vec(&value).expect("serialise").len()
            })
        });
        group.bench_function(format!("own_floor_messages_parse_and_serialise_{messages}"), |b| {
            b.iter(|| {
                let history: Vec<Message> = scratchpad::json::from_str(&text).expect("parse");
                scratchpad::json::to_vec(&history).expect("serialise").len()
            })
        });
        if python_available() {
            let copy = dir.path().join(format!("python_copy_{messages}.json"));
            group.bench_function(format!("reference_floor_python_{messages}"), |b| {
                b.iter(|| {
                    let output = Command::new("python3")
                        .args(["-c", PYTHON_FLOOR])
                        .arg(&input)
                        .arg(&copy)
                        .output()
                        .expect("run python3");
                    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
                })
            });
        } else {
            println!("compact_process/{messages}: no python3 here, so no reference figure");
        }
        let workspace = dir.path().join(format!("workspace_{messages}"));
        let fresh_workspace = || {
            let _ = std::fs::remove_dir_all(&workspace);
            std::fs::create_dir_all(&workspace).expect("workspace");
        };
        let compact = || {
            let mut command = Command::new(binary);
            command
                .args(["compact", "--summary-stub", "--input"])
                .arg(&input)
                .arg("-C")
                .arg(&workspace)
                .env("XDG_CONFIG_HOME", dir.path())
                .env_remove("ANTHROPIC_API_KEY");
            command
        };
        fresh_workspace();
        match peak_memory_bytes(&compact()) {
            Some(peak) => println!(
                "compact_process/{messages}: peak memory {:.1} MB, {:.2}x the input",
                peak as f64 / 1e6,
                peak as f64 / text.len() as f64
            ),
            None => println!("compact_process/{messages}: no python3 here, so no peak memory figure"),
        }
        // Clearing the last run's workspace (a transcript as large as the input) is not
        // part of the run.
        group.bench_function(format!("scratchpad_compact_{messages}"), |b| {
            b.iter_batched(
                fresh_workspace,
                |()| {
                    let output = compact().output().expect("run scratchpad");
                    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
                    output.stdout.len()
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

/// Runs the command it is given and prints the peak resident memory of it and what
/// it started. A small process of its own: a child forked from this one would count
/// this benchmark's memory (the floor's parsed histories) as its own until it execs.
const PEAK_MEMORY: &str = "import resource, subprocess, sys\n\
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if done.returncode == 0 else -1)\n";

/// The peak resident memory of a run of `command`, in bytes; `None` without python3.
fn peak_memory_bytes(command: &Command) -> Option<u64> {
    if !python_available() {
        return None;
    }
    let output = Command::new("python3")
        .args(["-c", PEAK_MEMORY])
        .arg(command.get_program())
        .args(command.get_args())
        .envs(command.get_envs().filter_map(|(key, value)| Some((key, value?))))
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("run python3");
    let kilobytes: i64 = String::from_utf8_lossy(&output.stdout).trim().parse().expect("a size");
    assert!(
        kilobytes > 0,
        "scratchpad failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Linux reports kilobytes.
    Some(kilobytes.unsigned_abs() * 1024)
}

criterion_group!(benches, bench_compact_process);
criterion_main!(benches);
