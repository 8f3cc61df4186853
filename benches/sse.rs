//! The SSE decoder on one very long event: a 50 MB `data:` line arriving in 16 KB
//! chunks, as a huge tool input or text block would. A decoder that rescans its
//! buffered line on every chunk is quadratic here (the report that led to this took
//! 73–81 s); ours scans each byte once.

use criterion::{Criterion, criterion_group, criterion_main};
use scratchpad::provider::sse::SseDecoder;

fn long_line(c: &mut Criterion) {
    let body = format!("event: content_block_delta\ndata: {}\n\n", "x".repeat(50 * 1024 * 1024));
    let mut group = c.benchmark_group("sse");
    group.sample_size(10);
    group.bench_function("one_50MB_line_in_16KB_chunks", |b| {
        b.iter(|| {
            let mut decoder = SseDecoder::new();
            let mut events = 0;
            for chunk in body.as_bytes().chunks(16 * 1024) {
                events += decoder.feed(chunk).expect("valid UTF-8").len();
            }
            assert_eq!(events, 1);
        });
    });
    group.finish();
}

criterion_group!(benches, long_line);
criterion_main!(benches);
