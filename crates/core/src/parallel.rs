//! Work over a long history on every core: reading it, counting it, describing what
//! snip_compact archives. One pool of threads, started the first time a history is
//! long enough to share, serves every such split. A thread started and joined for
//! each split cost the mapping of its stack and, at the join, the unmapping of it,
//! which stops the other core to flush its TLB (about 0.3 ms a split); and each
//! split's results were copied once more into one list, where the pool writes each
//! result in its place.

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::json::WORKER_STACK_BYTES;

/// `f` of each of `0..len`, each result in its place. On every core when there are
/// at least `per_thread` items for each of two threads; else on this thread.
pub fn map<R: Send>(len: usize, per_thread: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    map_with(len, per_thread, || (), |(), at| f(at))
}

/// [`map`] where each thread's run of items shares a scratch value, made by `scratch`.
pub fn map_with<S, R: Send>(
    len: usize,
    per_thread: usize,
    scratch: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize) -> R + Sync + Send,
) -> Vec<R> {
    let shared = len >= per_thread.max(1).saturating_mul(2);
    match pool().filter(|pool| shared && pool.current_num_threads() > 1) {
        Some(pool) => pool.install(|| {
            (0..len)
                .into_par_iter()
                .with_min_len(per_thread.max(1))
                .map_init(&scratch, |state, at| f(state, at))
                .collect()
        }),
        None => {
            let mut state = scratch();
            (0..len).map(|at| f(&mut state, at)).collect()
        }
    }
}

/// `a` and `b`, side by side when there is a second core.
pub fn join<A: Send, B: Send>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
    match pool().filter(|pool| pool.current_num_threads() > 1) {
        Some(pool) => pool.install(|| rayon::join(a, b)),
        None => (a(), b()),
    }
}

/// The pool, one thread a core, each with a stack of [`WORKER_STACK_BYTES`]: the
/// values they handle can be deep. `None` when no thread could be started.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|at| format!("scratchpad-part-{at}"))
            .stack_size(WORKER_STACK_BYTES)
            .build()
            .ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_mapped_once_in_its_place() {
        for (len, per_thread) in [(0, 10), (5, 10), (25, 10), (1_001, 1), (7, 0), (20_000, 1_000)] {
            let mapped = map(len, per_thread, |at| at * 2);
            assert_eq!(
                mapped,
                (0..len).map(|at| at * 2).collect::<Vec<_>>(),
                "{len} by {per_thread}"
            );
        }
    }

    #[test]
    fn both_sides_of_a_join_are_done() {
        assert_eq!(join(|| 1, || "two"), (1, "two"));
    }

    /// Each run of items shares its scratch; no item sees another run's.
    #[test]
    fn a_scratch_value_serves_one_run_of_items() {
        let mapped = map_with(10_000, 100, Vec::new, |seen: &mut Vec<usize>, at| {
            seen.push(at);
            seen.windows(2).all(|pair| pair[0] < pair[1])
        });
        assert!(mapped.into_iter().all(|ascending| ascending));
    }

    /// A panic on a thread of the pool is the caller's, as if it ran here.
    #[test]
    fn a_panic_in_a_part_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            map(10_000, 100, |at| {
                assert_ne!(at, 7_777, "item 7777");
                at
            })
        });
        assert!(caught.is_err());
    }
}
