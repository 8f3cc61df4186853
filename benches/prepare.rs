//! `prepare` on long synthetic histories (1k, 10k, 50k messages, ~2 KB each, many
//! old tool results over the limit), and on a wide one (49 messages, 32 results per
//! tool batch, about 8 M chars, where micro_compact saves hundreds of files at once):
//! time per call from criterion, and the peak heap used by one call, measured by a
//! counting allocator and printed beside it. Durable writes on disk unless
//! BENCH_NO_FSYNC is set.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use scratchpad::compact::{CompactConfig, ExtractiveSummariser, Sizes, estimate_chars, prepare_sized};
use scratchpad::history::{Call, History};
use scratchpad::message::Message;
use scratchpad::store::Store;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A user request, then rounds of an assistant call and a ~4 KB tool result, with a
/// short text exchange every fifth round: about 2 KB a message on average.
fn synthetic_history(messages: usize) -> Vec<Message> {
    let mut history = History::new().request("Refactor the storage layer and keep the tests green.");
    let mut count = 1;
    let mut round = 0;
    while count < messages {
        history = if round % 5 == 4 {
            history
                .answer(format!("Progress note {round}: ").repeat(8))
                .request("continue")
        } else {
            history.round(Call::new(
                "read_file",
                serde_json::json!({"path": format!("src/module_{round}.rs")}),
                format!("fn item_{round}() {{ /* line of source ✓ */ }}\n").repeat(90),
            ))
        };
        count += 2;
        round += 1;
    }
    let mut history = history.build();
    history.truncate(messages);
    history
}

/// A request, then 24 rounds of 32 parallel calls and their ~10 KB results: 49
/// messages of about 8 M characters.
fn wide_history() -> Vec<Message> {
    let mut history = History::new().request("Read every module and summarise the API.");
    for round in 0..24 {
        let calls = (0..32)
            .map(|call| {
                let name = format!("module_{round:02}_{call:02}");
                Call::new(
                    "read_file",
                    serde_json::json!({"path": format!("src/{name}.rs")}),
                    format!("// {name}: a line of source text ✓\n").repeat(260),
                )
            })
            .collect();
        history = history.batch(calls);
    }
    history.build()
}

/// A store in a folder of its own under `root`: every iteration writes its files anew
/// (an identical saved file would be reused) into folders that, as in a session, were
/// never emptied. BENCH_NO_FSYNC=1 measures the pipeline without the disk flush
/// (not a setting a session can use; it shows how much of the time is the disk).
fn fresh_store(root: &std::path::Path) -> Store {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = root.join(NEXT.fetch_add(1, Ordering::Relaxed).to_string());
    if std::env::var_os("BENCH_NO_FSYNC").is_some() {
        Store::new(dir).without_fsync()
    } else {
        Store::new(dir)
    }
}

fn bench_prepare(c: &mut Criterion) {
    // Inside the build folder, on the disk of the project, as a session's files are
    // inside its workspace. (On these machines the shared /tmp is a much slower place
    // to create files: about 0.5 ms each against 0.03 ms.)
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let config = CompactConfig::default();
    let mut group = c.benchmark_group("prepare");
    group.sample_size(10);
    let shapes = [
        ("1000_messages", synthetic_history(1_000)),
        ("10000_messages", synthetic_history(10_000)),
        ("50000_messages", synthetic_history(50_000)),
        ("49_messages_32_results_per_batch", wide_history()),
    ];
    let store_of_previous = std::cell::Cell::new(None::<std::path::PathBuf>);
    for (name, history) in shapes {
        let chars = estimate_chars(&history);

        let baseline = CURRENT.load(Ordering::Relaxed);
        let input = history.clone();
        let with_input = CURRENT.load(Ordering::Relaxed);
        PEAK.store(with_input, Ordering::Relaxed);
        // The agent keeps the size table of its history; prepare only updates it.
        let sizes = Sizes::of(&history, config.estimate);
        let started = std::time::Instant::now();
        let prepared = prepare_sized(
            input,
            sizes.clone(),
            "Refactor",
            &scratchpad::compact::Context::new(&config, &fresh_store(dir.path())),
            &mut ExtractiveSummariser,
        );
        let first_call = started.elapsed();
        let peak = PEAK.load(Ordering::Relaxed) - baseline;
        let history_bytes = with_input - baseline;
        println!(
            "prepare/{name}: history {} messages, {:.1} MB ({chars} chars); first call {first_call:.1?}; peak heap during prepare {:.1} MB = {:.2}x the history; {} events, {} messages after",
            history.len(),
            history_bytes as f64 / 1e6,
            peak as f64 / 1e6,
            peak as f64 / history_bytes as f64,
            prepared.events.len(),
            prepared.messages.len(),
        );
        drop(prepared);

        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    // Whole-history transcripts of earlier iterations (up to 100 MB each)
                    // would pile up in the page cache; a session writes one per snip.
                    let _ = std::fs::remove_dir_all(store_of_previous.replace(None).unwrap_or_default());
                    let store = fresh_store(dir.path());
                    store_of_previous.set(Some(store.transcripts_dir()));
                    (history.clone(), sizes.clone(), store)
                },
                |(input, sizes, store)| {
                    prepare_sized(
                        input,
                        sizes,
                        "Refactor",
                        &scratchpad::compact::Context::new(&config, &store),
                        &mut ExtractiveSummariser,
                    )
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

/// What `prepare` adds to each model call of a long session once nothing needs
/// compacting: a 10,000-message history under every threshold, its size table kept
/// by the agent. The goal is at most 1 ms a call.
fn bench_prepare_idle(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let history = synthetic_history(10_000);
    let config = CompactConfig {
        context_char_limit: scratchpad::compact::Limit::chars(estimate_chars(&history) * 2),
        snip_max_messages: 20_000,
        ..CompactConfig::default()
    };
    let sizes = Sizes::of(&history, config.estimate);
    let store = Store::new(dir.path());
    c.bench_function("prepare/10000_messages_nothing_to_do", |b| {
        b.iter_batched(
            || (history.clone(), sizes.clone()),
            |(input, sizes)| {
                let prepared = prepare_sized(
                    input,
                    sizes,
                    "Refactor",
                    &scratchpad::compact::Context::new(&config, &store),
                    &mut ExtractiveSummariser,
                );
                assert!(prepared.events.is_empty());
                prepared
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, bench_prepare, bench_prepare_idle);
criterion_main!(benches);
