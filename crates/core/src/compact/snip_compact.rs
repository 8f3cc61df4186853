//! Stage 2: a history over the message limit keeps its first messages (the task as
//! first stated) and its newest ones; the middle goes to a transcript on disk and one
//! marker message names it. The cut never separates a tool call from its result.

use super::estimate::Sizes;
use super::markers::archive_marker;
use super::pairing::{head_end, tail_start_forward};
use super::{Context, Stage, StageEvent, receipt};
use crate::message::Message;

/// Stage 2 of `prepare` (the seed's snip_compact): over 50 messages, the whole history
/// goes to a transcript, and the first 3 and the newest 46 stay with one archive marker
/// between them; a tool call is never parted from its result.
pub fn snip_compact(messages: &mut Vec<Message>, sizes: &mut Sizes, ctx: &Context<'_>) -> Option<StageEvent> {
    let config = ctx.config;
    if messages.len() <= config.snip_max_messages {
        return None;
    }
    let head = head_end(messages, config.snip_keep_head);
    let start = tail_start_forward(messages, (messages.len() - config.snip_keep_tail()).max(head));
    if start <= head {
        return None;
    }
    let trigger = format!(
        "{} messages, over the {} limit",
        messages.len(),
        config.snip_max_messages
    );
    let mut event = StageEvent::start(Stage::SnipCompact, messages.len(), sizes.total(), trigger);
    let written = ctx.store.write_transcript(Stage::SnipCompact.name(), messages);
    let mut items = receipt::left(messages, sizes, head..start, ctx.facts.describe_input);
    match written {
        Ok(transcript) => {
            let archived = start - head;
            receipt::saved_in(&mut items, &transcript.path);
            event.items = items;
            let marker = Message::user_text(archive_marker(archived, &transcript.path));
            sizes.splice(head..start, std::slice::from_ref(&marker));
            replace_middle(messages, head..start, marker);
            event.replaced = archived;
            event.archived(transcript);
        }
        Err(error) => event.errors.push(error.to_string()),
    }
    event.finish(messages.len(), sizes.total())
}

/// Put `marker` in place of `messages[middle]`, and give back what was there, in any
/// order. Only the kept messages around it move: the middle of a long history
/// (thousands of messages) stays where it is, in the list given back.
fn replace_middle(messages: &mut Vec<Message>, middle: std::ops::Range<usize>, marker: Message) -> Vec<Message> {
    if middle.len() < middle.start {
        // Too short to fill the places of the messages before it.
        return messages.splice(middle, [marker]).collect();
    }
    let tail: Vec<Message> = messages.drain(middle.end..).collect();
    let mut kept = Vec::with_capacity(middle.start + 1 + tail.len());
    for at in 0..middle.start {
        // The last of the middle takes its place; the places before it are taken.
        kept.push(messages.swap_remove(at));
    }
    kept.push(marker);
    kept.extend(tail);
    std::mem::replace(messages, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::parse_archive_marker;
    use crate::compact::pairing::check_pairing;
    use crate::message::{ContentBlock, Role, ToolResultContent};
    use crate::store::Store;

    fn chat(n: usize) -> Vec<Message> {
        crate::history::History::new().chat(n).build()
    }

    fn run(history: &mut Vec<Message>, dir: &std::path::Path) -> Option<StageEvent> {
        crate::compact::run_stage(history, &Store::new(dir), snip_compact)
    }

    #[test]
    fn at_fifty_messages_nothing_happens() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = chat(50);
        assert!(run(&mut history, dir.path()).is_none());
        assert_eq!(history.len(), 50);
    }

    #[test]
    fn at_fifty_one_the_middle_is_archived_whole() {
        let dir = tempfile::tempdir().unwrap();
        let original = chat(51);
        let mut history = original.clone();
        let event = run(&mut history, dir.path()).expect("fires");
        assert_eq!(history.len(), 50);
        assert_eq!(history[..3], original[..3]);
        assert_eq!(history[4..], original[5..]);
        let (count, path) = parse_archive_marker(match &history[3].content() {
            crate::message::Content::Text(text) => text,
            _ => unreachable!(),
        })
        .expect("marker");
        assert_eq!(count, 2);
        assert_eq!(event.replaced, 2);
        assert_eq!(event.paths, vec![path.to_string()]);
        let lines: Vec<Message> = std::fs::read_to_string(dir.path().join(path))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines, original);
        assert!(run(&mut history, dir.path()).is_none(), "idempotent");
    }

    #[test]
    fn never_splits_a_call_from_its_result() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = vec![Message::user_text("go")];
        for i in 0..30 {
            history.push(Message::blocks(
                Role::Assistant,
                vec![ContentBlock::ToolUse {
                    id: format!("t{i}"),
                    name: "bash".into(),
                    input: serde_json::json!({}),
                    extra: Default::default(),
                }],
            ));
            history.push(Message::blocks(
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_use_id: format!("t{i}"),
                    content: ToolResultContent::Text("ok".into()),
                    is_error: None,
                    extra: Default::default(),
                }],
            ));
        }
        run(&mut history, dir.path()).expect("fires");
        assert!(history.len() <= 50);
        assert_eq!(check_pairing(&history), Ok(()));
        assert!(run(&mut history, dir.path()).is_none());
    }

    #[test]
    fn the_middle_is_replaced_and_given_back_whole() {
        for (len, middle) in [
            (10, 3..7),
            (10, 0..10),
            (10, 0..4),
            (10, 6..10),
            (10, 5..5),
            (1, 0..1),
            (60, 3..14),
        ] {
            let history = chat(len);
            let mut messages = history.clone();
            let marker = Message::user_text("[marker]");
            let mut removed = replace_middle(&mut messages, middle.clone(), marker.clone());
            let mut expected = history[..middle.start].to_vec();
            expected.push(marker);
            expected.extend_from_slice(&history[middle.end..]);
            assert_eq!(messages, expected, "{len} {middle:?}");
            let text = |message: &Message| crate::json::to_string(message).unwrap();
            removed.sort_by_key(text);
            let mut middle_messages = history[middle].to_vec();
            middle_messages.sort_by_key(text);
            assert_eq!(removed, middle_messages);
        }
    }

    #[test]
    fn a_failed_transcript_write_archives_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".transcripts"), "in the way").unwrap();
        let original = chat(60);
        let mut history = original.clone();
        let event = run(&mut history, dir.path()).expect("reports");
        assert_eq!(event.errors.len(), 1);
        assert_eq!(history, original);
    }
}
