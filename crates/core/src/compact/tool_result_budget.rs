//! Stage 1: the newest tool batch may not exceed its budget. While it does, its
//! largest results over the per-result threshold are saved whole and replaced by a
//! `<persisted-output>` block with the path and a preview. As in the seed, only the
//! newest message is looked at, and only when it is that batch.

use super::durable::{Replaced, settle};
use super::estimate::Sizes;
use super::markers::{ResultKind, classify_result, ensure_saved, persisted_output};
use super::pairing::blocks_mut;
use super::receipt::{Shrunk, describe_result};
use super::{Context, Stage, StageEvent, short_count};
use crate::message::{ContentBlock, Message, Role, ToolResultContent};
use crate::text::prefix_chars;

/// Stage 1 of `prepare` (the seed's tool_result_budget): when the newest batch of tool
/// results is over 200,000 characters, its results over 30,000, largest first, are saved
/// whole to disk and replaced by a `<persisted-output>` block with a 2,000-character
/// preview, until the batch fits.
pub fn tool_result_budget(messages: &mut [Message], sizes: &mut Sizes, ctx: &Context<'_>) -> Option<StageEvent> {
    let config = ctx.config;
    let index = messages.len().checked_sub(1)?;
    if messages[index].role() != Role::User || !messages[index].has_tool_result() {
        return None;
    }
    let estimate = sizes.total();
    let (earlier, newest) = messages.split_at_mut(index);
    let blocks = blocks_mut(&mut newest[0]);
    let mut lengths: Vec<(usize, usize)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(at, block)| match block {
            ContentBlock::ToolResult { content, .. } => Some((at, content.char_len())),
            _ => None,
        })
        .collect();
    let mut total: usize = lengths.iter().map(|&(_, len)| len).sum();
    if total <= config.tool_result_budget_chars {
        return None;
    }
    let trigger = format!(
        "the newest tool results hold {} chars, over the {} budget",
        short_count(total),
        short_count(config.tool_result_budget_chars)
    );
    let mut event = StageEvent::start(Stage::ToolResultBudget, index + 1, estimate, trigger);
    let mut replaced = Vec::new();
    // Largest first; equal sizes keep their order so the outcome is deterministic.
    lengths.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (at, len) in lengths {
        if total <= config.tool_result_budget_chars || len <= config.persist_result_over_chars {
            break;
        }
        let ContentBlock::ToolResult {
            tool_use_id, content, ..
        } = &mut blocks[at]
        else {
            continue;
        };
        if classify_result(content) != ResultKind::Whole {
            continue;
        }
        match ensure_saved(ctx.store, tool_use_id, content) {
            Ok(saved) => {
                let full = content.full_text();
                let block = persisted_output(
                    &saved.kept.path,
                    len,
                    prefix_chars(&full, config.persisted_preview_chars),
                );
                let old = sizes.measure(content);
                let new_len = block.chars().count();
                let original = std::mem::replace(content, ToolResultContent::Text(block));
                let now = sizes.measure(content);
                sizes.adjust(index, old, now);
                let receipt = Shrunk {
                    message: index,
                    what: describe_result(earlier, index, tool_use_id, ctx.facts.describe_input),
                    before: old,
                    after: now,
                    // Only whole outputs are persisted here: the saved file has the text.
                    was: None,
                };
                replaced.push(Replaced {
                    message: index,
                    block: at,
                    original,
                });
                total = total - len + new_len;
                event.replaced += 1;
                event.saved(receipt, tool_use_id, saved);
            }
            Err(error) => event.errors.push(error.to_string()),
        }
    }
    settle(messages, sizes, ctx, &mut event, replaced);
    event.finish(messages.len(), sizes.total())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::parse_persisted_output;
    use crate::history::{Call, History};
    use crate::store::Store;

    fn batch(sizes: &[usize]) -> Vec<Message> {
        let calls = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                Call::new(
                    "bash",
                    serde_json::json!({}),
                    char::from(b'a' + i as u8).to_string().repeat(n),
                )
            })
            .collect();
        History::new().request("go").batch(calls).build()
    }

    fn run(history: &mut [Message], dir: &std::path::Path) -> Option<StageEvent> {
        crate::compact::run_stage(history, &Store::new(dir), tool_result_budget)
    }

    fn result_text(history: &[Message], at: usize) -> String {
        match &history[2].block_slice()[at] {
            ContentBlock::ToolResult { content, .. } => content.full_text(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn at_the_budget_nothing_happens() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = batch(&[100_000, 100_000]);
        let before = history.clone();
        assert!(run(&mut history, dir.path()).is_none());
        assert_eq!(history, before);
    }

    #[test]
    fn just_over_the_budget_the_largest_is_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = batch(&[100_000, 100_001]);
        let event = run(&mut history, dir.path()).expect("fires");
        assert_eq!(event.replaced, 1);
        assert_eq!(result_text(&history, 0), "a".repeat(100_000));
        let block = result_text(&history, 1);
        let parsed = parse_persisted_output(&block).expect("persisted block");
        assert_eq!(parsed.preview, "b".repeat(2_000));
        let saved = std::fs::read_to_string(dir.path().join(parsed.path)).unwrap();
        assert_eq!(saved, "b".repeat(100_001));
        assert_eq!(event.paths, vec![parsed.path.to_string()]);
    }

    #[test]
    fn results_at_the_per_result_threshold_are_never_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = batch(&[30_000; 7]);
        assert!(run(&mut history, dir.path()).is_none());
        let mut history = batch(&[30_001, 30_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
        let event = run(&mut history, dir.path()).expect("fires");
        assert_eq!(event.replaced, 1);
    }

    #[test]
    fn only_the_newest_batch_counts_and_a_second_run_is_a_no_op() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = batch(&[150_000, 150_000]);
        history.push(Message::assistant_text("done"));
        history.push(Message::user_text("next"));
        assert!(run(&mut history, dir.path()).is_none());
        let mut history = batch(&[150_000, 150_000]);
        assert_eq!(run(&mut history, dir.path()).unwrap().replaced, 1);
        let after = history.clone();
        assert!(run(&mut history, dir.path()).is_none());
        assert_eq!(history, after);
    }

    #[test]
    fn a_batch_followed_by_an_assistant_message_is_no_longer_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = batch(&[150_000, 150_000]);
        history.push(Message::assistant_text("seen them"));
        let before = history.clone();
        assert!(
            run(&mut history, dir.path()).is_none(),
            "the seed looks at messages[-1] only"
        );
        assert_eq!(history, before);
    }

    #[test]
    fn a_write_failure_leaves_the_block_whole_and_reports() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".task_outputs"), "not a folder").unwrap();
        let mut history = batch(&[250_000]);
        let before = history.clone();
        let event = run(&mut history, dir.path()).expect("reports");
        assert_eq!(event.replaced, 0);
        assert_eq!(event.errors.len(), 1);
        assert_eq!(history, before);
    }
}
