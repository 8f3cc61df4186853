//! The last step of every stage that saved tool results: make the saved files durable
//! together, or, if that fails, put every replaced block back as it was, so the history
//! never names a file that might not survive a crash.

use super::estimate::Sizes;
use super::pairing::blocks_mut;
use super::{Context, StageEvent};
use crate::message::{ContentBlock, Message, ToolResultContent};

/// A tool result a stage replaced: where it is and what it held before.
pub(super) struct Replaced {
    pub message: usize,
    pub block: usize,
    pub original: ToolResultContent,
}

/// Flush the stage's files; on failure undo `replaced` (newest first) and report.
pub(super) fn settle(
    messages: &mut [Message],
    sizes: &mut Sizes,
    ctx: &Context<'_>,
    event: &mut StageEvent,
    replaced: Vec<Replaced>,
) {
    let Err(error) = ctx.store.sync() else {
        return;
    };
    for Replaced {
        message,
        block,
        original,
    } in replaced.into_iter().rev()
    {
        if let ContentBlock::ToolResult { content, .. } = &mut blocks_mut(&mut messages[message])[block] {
            let now = sizes.measure(content);
            let restored = sizes.measure(&original);
            *content = original;
            sizes.adjust(message, now, restored);
        }
    }
    event.replaced = 0;
    event.paths.clear();
    event.saved.clear();
    event.errors.push(error.to_string());
}
