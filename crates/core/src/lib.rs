#![warn(unreachable_pub)]
#![warn(missing_docs)]
//! scratchpad's core: the message model, the compaction stages and `prepare`, the
//! seed's estimate, and the archive behind its trait. Synchronous and free of any UI,
//! network or async runtime, so the pipeline can be reasoned about and tested alone.

pub mod compact;
pub mod digest;
/// Conversations built for tests and benchmarks: not in the shipped library.
#[cfg(any(test, feature = "test-support"))]
pub mod history;
pub mod json;
pub mod message;
pub mod parallel;
pub mod places;
pub mod setting;
pub mod store;
pub mod terminal_text;
pub mod text;
pub mod time;
