//! Stage 3, only above the context limit. First `micro_compact`: old tool results the
//! model has already seen become a one-line reference to their saved full text, oldest
//! first, until the estimate reaches the target share of the limit. Then, if still
//! over, `fit_tool_results`: the largest results of all (seen or not, ranked by the
//! length of their text as the seed ranks them) keep a short preview and a path, down
//! to the same target.

use super::Archive;
use super::durable::{Replaced, settle};
use super::estimate::Sizes;
use super::markers::{Saved, cleared_reference, ensure_saved, is_cleared, parse_persisted_output, persisted_output};
use super::pairing::blocks_mut;
use super::receipt::{Shrunk, describe_result, was_before};
use super::{Context, Stage, StageEvent, short_count};
use crate::message::{ContentBlock, Message, Role, ToolResultContent};
use crate::text::prefix_chars;

/// (message index, block index) of every tool result in `messages[..end]`, oldest first.
fn tool_result_positions(messages: &[Message], end: usize) -> Vec<(usize, usize)> {
    messages[..end]
        .iter()
        .enumerate()
        .flat_map(|(at, message)| {
            message
                .block_slice()
                .iter()
                .enumerate()
                .filter(|(_, block)| matches!(block, ContentBlock::ToolResult { .. }))
                .map(move |(block, _)| (at, block))
        })
        .collect()
}

fn tool_result(messages: &[Message], (at, block): (usize, usize)) -> Option<(&str, &ToolResultContent)> {
    match &messages[at].block_slice()[block] {
        ContentBlock::ToolResult {
            tool_use_id, content, ..
        } => Some((tool_use_id.as_str(), content)),
        _ => None,
    }
}

fn tool_result_mut(messages: &mut [Message], (at, block): (usize, usize)) -> Option<(&str, &mut ToolResultContent)> {
    match &mut blocks_mut(&mut messages[at])[block] {
        ContentBlock::ToolResult {
            tool_use_id, content, ..
        } => Some((tool_use_id.as_str(), content)),
        _ => None,
    }
}

/// Stage 3 of `prepare` (the seed's micro_compact): over the limit, the seen tool
/// results before the three newest that are longer than 120 characters become a
/// reference to their saved full text, oldest first, until the estimate is at or under
/// the target.
pub fn micro_compact(messages: &mut [Message], sizes: &mut Sizes, ctx: &Context<'_>) -> Option<StageEvent> {
    let config = ctx.config;
    if sizes.total() <= config.context_char_limit.chars {
        return None;
    }
    let target = config.micro_target_chars();
    let trigger = over_limit(sizes.total(), config.context_char_limit.chars, target);
    let mut event = StageEvent::start(Stage::MicroCompact, messages.len(), sizes.total(), trigger);
    // Seen: answered by an assistant message after them.
    let seen_end = messages.iter().rposition(|m| m.role() == Role::Assistant).unwrap_or(0);
    let seen = tool_result_positions(messages, seen_end);
    let old = &seen[..seen.len().saturating_sub(config.micro_keep_recent)];
    let mut replaced = Vec::new();
    for &position in old {
        if sizes.total() <= target {
            break;
        }
        let Some((id, content)) = tool_result(messages, position) else {
            continue;
        };
        if is_cleared(content) || content.char_len() <= config.micro_min_chars || ctx.facts.pinned.contains(id) {
            continue;
        }
        let what = describe_result(messages, position.0, id, ctx.facts.describe_input);
        replaced.extend(clear(messages, sizes, ctx, position, what, &mut event));
    }
    settle(messages, sizes, ctx, &mut event, replaced);
    event.finish(messages.len(), sizes.total())
}

/// One tool result being replaced: where it is, what it was, and its size before and
/// after (measured by the caller, which needed them already).
struct Swap {
    position: (usize, usize),
    what: String,
    sizes: (usize, usize),
}

impl Swap {
    /// Put `replacement` in place, keep the size table in step and note the item on the
    /// receipt; what to put back if the stage cannot be made durable.
    fn apply(
        self,
        content: &mut ToolResultContent,
        replacement: ToolResultContent,
        id: &str,
        saved: Saved,
        sizes: &mut Sizes,
        event: &mut StageEvent,
    ) -> Replaced {
        let (before, after) = self.sizes;
        let was = was_before(content);
        let original = std::mem::replace(content, replacement);
        sizes.adjust(self.position.0, before, after);
        let receipt = Shrunk {
            message: self.position.0,
            what: self.what,
            before,
            after,
            was,
        };
        event.replaced += 1;
        event.saved(receipt, id, saved);
        Replaced {
            message: self.position.0,
            block: self.position.1,
            original,
        }
    }
}

/// Save the result at `position` whole and leave a reference to it, with its item on
/// the receipt; what to put back if the stage cannot be made durable.
fn clear(
    messages: &mut [Message],
    sizes: &mut Sizes,
    ctx: &Context<'_>,
    position: (usize, usize),
    what: String,
    event: &mut StageEvent,
) -> Option<Replaced> {
    let (id, content) = tool_result_mut(messages, position)?;
    match ensure_saved(ctx.store, id, content) {
        Ok(saved) => {
            let replacement = ToolResultContent::Text(cleared_reference(&saved.kept.path));
            let sizes_now = (sizes.measure(content), sizes.measure(&replacement));
            let swap = Swap {
                position,
                what,
                sizes: sizes_now,
            };
            Some(swap.apply(content, replacement, id, saved, sizes, event))
        }
        Err(error) => {
            event.errors.push(error.to_string());
            None
        }
    }
}

/// `d` in `/context`: the result of `tool_use_id` goes to the archive now, as
/// micro_compact would clear it, with a receipt. `None` when there is no such result
/// or it is already a reference.
pub fn drop_result(
    messages: &mut [Message],
    sizes: &mut Sizes,
    ctx: &Context<'_>,
    tool_use_id: &str,
) -> Option<StageEvent> {
    let position = tool_result_positions(messages, messages.len())
        .into_iter()
        .find(|&position| tool_result(messages, position).is_some_and(|(id, _)| id == tool_use_id))?;
    let (id, content) = tool_result(messages, position)?;
    if is_cleared(content) {
        return None;
    }
    let what = describe_result(messages, position.0, id, ctx.facts.describe_input);
    let trigger = "dropped by the user from /context".to_string();
    let mut event = StageEvent::start(Stage::MicroCompact, messages.len(), sizes.total(), trigger);
    event.by_user = true;
    let replaced = clear(messages, sizes, ctx, position, what, &mut event)
        .into_iter()
        .collect();
    settle(messages, sizes, ctx, &mut event, replaced);
    event.finish(messages.len(), sizes.total())
}

/// `r` in `/context`: the result of `tool_use_id`, shortened by a stage, back in full
/// from its saved file. The new text, or why not.
pub fn restore_result(
    messages: &mut [Message],
    sizes: &mut Sizes,
    store: &dyn Archive,
    tool_use_id: &str,
) -> Result<usize, String> {
    let position = tool_result_positions(messages, messages.len())
        .into_iter()
        .find(|&position| tool_result(messages, position).is_some_and(|(id, _)| id == tool_use_id))
        .ok_or_else(|| format!("no tool result {tool_use_id} in the history"))?;
    let (_, content) = tool_result_mut(messages, position).ok_or("not a tool result")?;
    let path = match super::markers::classify_result(content) {
        super::markers::ResultKind::Persisted(block) => block.path.to_string(),
        super::markers::ResultKind::Cleared { path } => path.to_string(),
        super::markers::ResultKind::Whole => return Err("it is already whole".into()),
    };
    let text = store.read_saved(&path).map_err(|why| why.to_string())?.text;
    let before = sizes.measure(content);
    *content = ToolResultContent::Text(text);
    let after = sizes.measure(content);
    sizes.adjust(position.0, before, after);
    Ok(after)
}

/// Why stage 3 runs: the estimate against the limit, and the target it clears down to.
fn over_limit(estimate: usize, limit: usize, target: usize) -> String {
    format!(
        "estimate {} over the {} limit; clearing down to {}",
        short_count(estimate),
        short_count(limit),
        short_count(target)
    )
}

/// Stage 3's second half: still over the target, the largest tool results are saved
/// whole and shortened to a 1,000-character preview, largest first, down to the target.
pub fn fit_tool_results(messages: &mut [Message], sizes: &mut Sizes, ctx: &Context<'_>) -> Option<StageEvent> {
    let config = ctx.config;
    if sizes.total() <= config.context_char_limit.chars {
        return None;
    }
    let target = config.micro_target_chars();
    let trigger = over_limit(sizes.total(), config.context_char_limit.chars, target);
    let mut event = StageEvent::start(Stage::FitToolResults, messages.len(), sizes.total(), trigger);
    let mut candidates: Vec<((usize, usize), usize)> = tool_result_positions(messages, messages.len())
        .into_iter()
        .filter_map(|position| {
            let (_, content) = tool_result_mut(messages, position)?;
            Some((position, content.char_len()))
        })
        .collect();
    candidates.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut replaced = Vec::new();
    for (position, _) in candidates {
        if sizes.total() <= target {
            break;
        }
        let Some((id, content)) = tool_result(messages, position) else {
            continue;
        };
        let before = sizes.measure(content);
        if is_cleared(content) || ctx.facts.pinned.contains(id) {
            continue;
        }
        let full = content.full_text();
        let (original_chars, preview) = match parse_persisted_output(&full) {
            Some(block) => (
                block.original_chars.unwrap_or(full.chars().count()),
                prefix_chars(block.preview, config.fit_preview_chars),
            ),
            None => (full.chars().count(), prefix_chars(&full, config.fit_preview_chars)),
        };
        // Only worth it when the block gets shorter; the path's length is a fair bound.
        let frame = persisted_output("", original_chars, preview);
        if sizes.measure(&frame) + 200 >= before {
            continue;
        }
        let preview = preview.to_string();
        let what = describe_result(messages, position.0, id, ctx.facts.describe_input);
        let Some((id, content)) = tool_result_mut(messages, position) else {
            continue;
        };
        match ensure_saved(ctx.store, id, content) {
            Ok(saved) => {
                let replacement = ToolResultContent::Text(persisted_output(&saved.kept.path, saved.chars, &preview));
                let after = sizes.measure(&replacement);
                if after < before {
                    let swap = Swap {
                        position,
                        what,
                        sizes: (before, after),
                    };
                    replaced.push(swap.apply(content, replacement, id, saved, sizes, &mut event));
                }
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
    use crate::compact::CompactConfig;
    use crate::compact::estimate::estimate_chars;
    use crate::compact::markers::parse_cleared_reference;
    use crate::history::{Call, History};
    use crate::store::Store;

    /// A user prompt, then `n` call/result rounds with results of `size` chars, then
    /// optionally a final assistant text (making every result seen).
    fn rounds(sizes_of_results: &[usize], all_seen: bool) -> Vec<Message> {
        let mut history = History::new().request("go");
        for (i, &n) in sizes_of_results.iter().enumerate() {
            history = history.round(Call::new(
                "read_file",
                serde_json::json!({"path": format!("f{i}")}),
                "x".repeat(n),
            ));
        }
        if all_seen {
            history = history.answer("seen").request("next");
        }
        history.build()
    }

    fn result(history: &[Message], i: usize) -> String {
        match &history[2 + 2 * i].block_slice()[0] {
            ContentBlock::ToolResult { content, .. } => content.full_text(),
            _ => unreachable!(),
        }
    }

    fn run(
        stage: fn(&mut [Message], &mut Sizes, &Context<'_>) -> Option<StageEvent>,
        history: &mut [Message],
        dir: &std::path::Path,
    ) -> Option<StageEvent> {
        run_in(stage, history, &Store::new(dir))
    }

    /// [`run`] with a store that already holds files (and their receipts).
    fn run_in(
        stage: fn(&mut [Message], &mut Sizes, &Context<'_>) -> Option<StageEvent>,
        history: &mut [Message],
        store: &Store,
    ) -> Option<StageEvent> {
        crate::compact::run_stage(history, store, stage)
    }

    /// Pad the first result so the whole history is exactly `total` chars.
    fn with_total(mut history: Vec<Message>, total: usize) -> Vec<Message> {
        let now = estimate_chars(&history);
        let extra = total - now;
        let (_, content) = tool_result_mut(&mut history, (2, 0)).unwrap();
        let text = content.full_text() + &"y".repeat(extra);
        *content = ToolResultContent::Text(text);
        assert_eq!(estimate_chars(&history), total);
        history
    }

    #[test]
    fn at_the_limit_nothing_happens_and_one_over_it_fires() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = with_total(rounds(&[10_000, 10_000, 10_000, 10_000, 5_000], true), 50_000);
        assert!(run(micro_compact, &mut history, dir.path()).is_none());
        let mut history = with_total(rounds(&[10_000, 10_000, 10_000, 10_000, 5_000], true), 50_001);
        let event = run(micro_compact, &mut history, dir.path()).expect("fires");
        assert_eq!(event.replaced, 1, "one old result brings it under 40,000");
        let path = parse_cleared_reference(&result(&history, 0))
            .expect("cleared")
            .to_string();
        let saved = std::fs::read_to_string(dir.path().join(&path)).unwrap();
        assert_eq!(
            saved.chars().count(),
            10_000 + (50_001 - estimate_chars(&rounds(&[10_000, 10_000, 10_000, 10_000, 5_000], true)))
        );
        assert!(event.chars_after <= 40_000);
    }

    #[test]
    fn keeps_the_three_newest_seen_and_all_unseen_results() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = rounds(&[20_000; 6], false);
        run(micro_compact, &mut history, dir.path()).expect("fires");
        // The last result is unseen; of the five seen, the newest three stay.
        for i in 0..2 {
            assert!(parse_cleared_reference(&result(&history, i)).is_some(), "result {i}");
        }
        for i in 2..6 {
            assert_eq!(result(&history, i).len(), 20_000, "result {i}");
        }
    }

    #[test]
    fn results_at_the_floor_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut sizes = vec![120; 10];
        sizes.extend([20_000; 3]);
        let mut history = rounds(&sizes, true);
        history[0] = Message::user_text("z".repeat(40_000));
        assert!(run(micro_compact, &mut history, dir.path()).is_none());
        let mut sizes = vec![121; 10];
        sizes.extend([20_000; 3]);
        let mut history = rounds(&sizes, true);
        history[0] = Message::user_text("z".repeat(40_000));
        assert_eq!(run(micro_compact, &mut history, dir.path()).unwrap().replaced, 10);
    }

    #[test]
    fn a_persisted_result_is_cleared_with_its_existing_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let path = store.save_tool_result("t0", &"x".repeat(90_000)).unwrap().path;
        let mut history = rounds(&[10, 20_000, 20_000, 20_000], true);
        let (_, content) = tool_result_mut(&mut history, (2, 0)).unwrap();
        *content = ToolResultContent::Text(persisted_output(&path, 90_000, &"x".repeat(2_000)));
        let mut unvouched = history.clone();
        let event = run_in(micro_compact, &mut history, &store).expect("fires");
        assert_eq!(parse_cleared_reference(&result(&history, 0)), Some(path.as_str()));
        let files = std::fs::read_dir(store.tool_results_dir())
            .unwrap()
            .filter(|entry| entry.as_ref().unwrap().file_name() != ".gitignore")
            .count();
        assert_eq!(files, 1, "the existing file was reused");
        assert!(
            !event.paths.contains(&path),
            "a reused file is not credited to micro_compact"
        );
        assert!(
            event
                .saved
                .iter()
                .any(|saved| saved.tool_use_id == "t0" && saved.path == path),
            "but the event says where t0's text is: {:?}",
            event.saved
        );
        assert_eq!(event.digests.get(&path), store.recorded_digest(&path).as_ref());

        // A store with no receipt for the file (a later session): the block's own
        // preview and length vouch for it, so it is reused and recorded from then on.
        let fresh = Store::new(dir.path());
        let event = run_in(micro_compact, &mut unvouched, &fresh).expect("fires");
        assert_eq!(parse_cleared_reference(&result(&unvouched, 0)), Some(path.as_str()));
        assert!(!event.paths.contains(&path));
        assert_eq!(fresh.recorded_digest(&path), store.recorded_digest(&path));
    }

    #[test]
    fn fit_shortens_the_largest_results_including_unseen_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = rounds(&[5_000, 60_000], false);
        let event = run(fit_tool_results, &mut history, dir.path()).expect("fires");
        assert_eq!(event.replaced, 1);
        assert_eq!(result(&history, 0).len(), 5_000);
        let block = result(&history, 1);
        let parsed = parse_persisted_output(&block).unwrap();
        assert_eq!(parsed.preview.chars().count(), 1_000);
        assert_eq!(parsed.original_chars, Some(60_000));
        assert_eq!(
            std::fs::read_to_string(dir.path().join(parsed.path)).unwrap(),
            "x".repeat(60_000)
        );
        assert!(run(fit_tool_results, &mut history, dir.path()).is_none());
    }

    #[test]
    fn fit_at_the_limit_does_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = with_total(rounds(&[5_000], false), 50_000);
        assert!(run(fit_tool_results, &mut history, dir.path()).is_none());
    }

    #[test]
    fn the_seed_estimate_fires_where_compact_json_is_exactly_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = rounds(&[10_000, 10_000, 10_000, 10_000, 5_000], true);
        let compact_now = crate::compact::estimate::json_chars(&history);
        let (_, content) = tool_result_mut(&mut history, (2, 0)).unwrap();
        *content = ToolResultContent::Text("x".repeat(10_000 + 50_000 - compact_now));
        assert_eq!(crate::compact::estimate::json_chars(&history), 50_000);
        assert!(estimate_chars(&history) > 50_000, "the seed counts \", \" and \": \"");
        let store = Store::new(dir.path());
        let compact = CompactConfig {
            estimate: crate::compact::EstimateMode::Compact,
            ..CompactConfig::default()
        };
        let ctx = Context::new(&compact, &store);
        let mut sizes = Sizes::of(&history, compact.estimate);
        assert!(
            micro_compact(&mut history, &mut sizes, &ctx).is_none(),
            "compact counting: at the limit"
        );
        assert!(
            run(micro_compact, &mut history, dir.path()).is_some(),
            "seed counting: over it"
        );
    }

    #[test]
    fn fit_goes_down_to_the_target_as_the_seed_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = rounds(&[21_000, 20_000, 19_000], false);
        let event = run(fit_tool_results, &mut history, dir.path()).expect("fires");
        assert_eq!(event.replaced, 2, "one preview leaves it above 40,000");
        assert!(event.chars_after <= 40_000, "{}", event.chars_after);
        assert_eq!(result(&history, 2).len(), 19_000);
    }

    #[test]
    fn fit_ranks_results_by_the_length_of_their_text() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = rounds(&[1, 1], false);
        history[0] = Message::user_text("p".repeat(20_000));
        // 15,000 newlines are 30,000 characters of JSON but 15,000 of text.
        *tool_result_mut(&mut history, (2, 0)).unwrap().1 = ToolResultContent::Text("\n".repeat(15_000));
        *tool_result_mut(&mut history, (4, 0)).unwrap().1 = ToolResultContent::Text("a".repeat(20_000));
        let event = run(fit_tool_results, &mut history, dir.path()).expect("fires");
        assert!(
            event.paths[0].contains("t1"),
            "the longer text goes first: {:?}",
            event.paths
        );
    }

    #[test]
    fn pinned_results_stay_whole_and_a_dropped_or_restored_one_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let config = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(5_000),
            micro_keep_recent: 0,
            ..CompactConfig::default()
        };
        let mut facts = crate::compact::SessionFacts::default();
        facts.pinned.insert("t0".into());
        let ctx = Context {
            config: &config,
            store: &store,
            facts: &facts,
        };
        let mut history = rounds(&[3_000, 3_000, 3_000], true);
        let original = history.clone();
        let mut sizes = Sizes::of(&history, config.estimate);
        micro_compact(&mut history, &mut sizes, &ctx).unwrap();
        fit_tool_results(&mut history, &mut sizes, &ctx);
        assert_eq!(result(&history, 0), "x".repeat(3_000), "the pinned result is whole");
        assert!(parse_cleared_reference(&result(&history, 1)).is_some());

        // d: the pinned one goes to the archive when the user says so, with a receipt.
        let dropped = drop_result(&mut history, &mut sizes, &ctx, "t0").unwrap();
        assert_eq!(dropped.items.len(), 1);
        assert_eq!(dropped.trigger, "dropped by the user from /context");
        assert!(parse_cleared_reference(&result(&history, 0)).is_some());
        assert!(
            drop_result(&mut history, &mut sizes, &ctx, "t0").is_none(),
            "already a reference"
        );
        // r refuses a saved file changed since it was kept, by name, and changes nothing.
        let t1_path = parse_cleared_reference(&result(&history, 1)).unwrap().to_string();
        let t1_file = dir.path().join(&t1_path);
        let kept = std::fs::read(&t1_file).unwrap();
        std::fs::write(&t1_file, "y".repeat(kept.len())).unwrap();
        let before = history.clone();
        let refused = restore_result(&mut history, &mut sizes, &store, "t1").unwrap_err();
        assert!(
            refused.contains(&t1_path) && refused.contains("digest differs"),
            "{refused}"
        );
        assert_eq!(history, before);
        std::fs::write(&t1_file, &kept).unwrap();

        // r: back in full, exactly.
        restore_result(&mut history, &mut sizes, &store, "t0").unwrap();
        restore_result(&mut history, &mut sizes, &store, "t1").unwrap();
        assert_eq!(result(&history, 0), result(&original, 0));
        assert_eq!(result(&history, 1), result(&original, 1));
        assert!(
            restore_result(&mut history, &mut sizes, &store, "t0").is_err(),
            "already whole"
        );
        assert_eq!(sizes.total(), estimate_chars(&history));
    }
}
