//! Cut points that never separate an assistant `tool_use` from the user
//! `tool_result` that answers it: the API rejects a result whose call is missing from
//! the message right before it.

use crate::message::{Content, ContentBlock, Message, Role};

/// The blocks of a message, turning string content into a block list only when it
/// must change.
pub fn blocks_mut(message: &mut Message) -> &mut Vec<ContentBlock> {
    let content = message.content_mut();
    if let Content::Text(text) = content {
        let text = std::mem::take(text);
        *content = Content::Blocks(vec![ContentBlock::Text {
            text,
            extra: Default::default(),
        }]);
    }
    match content {
        Content::Blocks(blocks) => blocks,
        Content::Text(_) => unreachable!("converted above"),
    }
}

/// The largest `end <= wanted` such that `messages[..end]` does not end with an
/// assistant message whose tool calls are answered after the cut. Never below 1.
pub fn head_end(messages: &[Message], wanted: usize) -> usize {
    let mut end = wanted.min(messages.len());
    while end > 1 && messages[end - 1].has_tool_use() {
        end -= 1;
    }
    end
}

/// The smallest `start >= wanted` such that `messages[start..]` does not begin with
/// tool results whose calls are before the cut.
pub fn tail_start_forward(messages: &[Message], wanted: usize) -> usize {
    let mut start = wanted;
    while start < messages.len() && messages[start].has_tool_result() {
        start += 1;
    }
    start
}

/// The largest `start <= wanted` (and at least `floor`) that does not begin with tool
/// results, so the kept tail grows to include the calls instead of losing results.
pub fn tail_start_backward(messages: &[Message], wanted: usize, floor: usize) -> Option<usize> {
    (floor..=wanted.min(messages.len()))
        .rev()
        .find(|&start| start == messages.len() || !messages[start].has_tool_result())
}

/// A pairing problem in a history, for tests and for checking loaded sessions.
#[derive(Debug, PartialEq, Eq)]
pub enum PairingError {
    /// The history starts with neither the user's message nor the server's compaction.
    FirstNotUser,
    /// A tool result with no call before it.
    OrphanResult {
        /// 0-based index of its message.
        message: usize,
        /// The call it names.
        tool_use_id: String,
    },
    /// A tool call no result answers.
    UnansweredCall {
        /// 0-based index of its message.
        message: usize,
        /// The call's id.
        tool_use_id: String,
    },
    /// A second call with an id an earlier call has: the API wants ids unique.
    RepeatedId {
        /// 0-based index of the second call's message.
        message: usize,
        /// The id both calls have.
        tool_use_id: String,
    },
}

/// Every tool_result answers a tool_use in the message right before it, every
/// tool_use except in the final message is answered in the next one, no two calls
/// share an id, and the history starts with a user message (or with the server's
/// compaction block, which the API wants first).
pub fn check_pairing(messages: &[Message]) -> Result<(), PairingError> {
    if messages.first().is_some_and(starts_wrongly) {
        return Err(PairingError::FirstNotUser);
    }
    let mut ids = std::collections::HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        if let Some(id) = message.tool_use_ids().find(|id| !ids.insert(*id)) {
            return Err(PairingError::RepeatedId {
                message: index,
                tool_use_id: id.to_string(),
            });
        }
        for id in message.tool_result_ids() {
            let answered = index > 0
                && messages[index - 1].role() == Role::Assistant
                && messages[index - 1].tool_use_ids().any(|call| call == id);
            if !answered {
                return Err(PairingError::OrphanResult {
                    message: index,
                    tool_use_id: id.to_string(),
                });
            }
        }
        if index + 1 < messages.len() {
            let next = &messages[index + 1];
            for id in message.tool_use_ids() {
                if !next.tool_result_ids().any(|result| result == id) {
                    return Err(PairingError::UnansweredCall {
                        message: index,
                        tool_use_id: id.to_string(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Give every call repeating an earlier call's id a new one, and the results in the
/// message after it the same new id (a result answers the call right before it).
pub(crate) fn rename_repeated_ids(messages: &mut [Message]) -> Vec<String> {
    let mut taken: std::collections::HashSet<String> = messages
        .iter()
        .flat_map(|message| message.tool_use_ids().map(str::to_string))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut notes = Vec::new();
    for index in 0..messages.len() {
        if messages[index].role() != Role::Assistant || !messages[index].has_tool_use() {
            continue;
        }
        let mut renamed: Vec<(String, String)> = Vec::new();
        for block in blocks_mut(&mut messages[index]) {
            let ContentBlock::ToolUse { id, .. } = block else {
                continue;
            };
            if seen.insert(id.clone()) {
                continue;
            }
            let new = (2..)
                .map(|n| format!("{id}_dup{n}"))
                .find(|candidate| !taken.contains(candidate))
                .unwrap_or_default();
            taken.insert(new.clone());
            seen.insert(new.clone());
            renamed.push((std::mem::replace(id, new.clone()), new));
        }
        if renamed.is_empty() {
            continue;
        }
        if let Some(next) = messages
            .get_mut(index + 1)
            .filter(|next| next.role() == Role::User && next.has_tool_result())
        {
            for block in blocks_mut(next) {
                if let ContentBlock::ToolResult { tool_use_id, .. } = block
                    && let Some(at) = renamed.iter().position(|(old, _)| old == tool_use_id)
                {
                    *tool_use_id = renamed.remove(at).1;
                }
            }
        }
        notes.push(format!(
            "message {}: a tool call repeated the id of an earlier call and was given its own",
            index + 1
        ));
    }
    notes
}

/// The text a synthetic result carries for a call that never got one.
/// A first message that is neither the user's nor the server's compaction block.
fn starts_wrongly(first: &Message) -> bool {
    first.role() != Role::User && super::markers::server_compaction(first).is_none()
}

/// The result a call gets when scratchpad stopped while it ran (a kill, a crash).
pub const INTERRUPTED_RESULT: &str = "interrupted: scratchpad stopped before this tool finished";

/// Make any history valid to send, losing nothing: the first message becomes a user
/// message, every call gets a result (a synthetic error where it had none, the final
/// message's calls included: nothing will run them any more), and a result whose call
/// is not right before it becomes plain text in the same message, and a call
/// repeating an earlier call's id is renamed, with its result.
/// Returns one note per change; no notes means the history was already valid.
pub fn repair(messages: &mut Vec<Message>) -> Vec<String> {
    let mut notes = rename_repeated_ids(messages);
    if messages.first().is_some_and(starts_wrongly) {
        messages.insert(
            0,
            Message::user_text("[The start of this conversation was lost; it continues from here.]"),
        );
        notes.push("the history began with an assistant message; a user message was put before it".into());
    }
    let mut index = 0;
    while index < messages.len() {
        if messages[index].role() == Role::User {
            let calls: Vec<String> = match index.checked_sub(1) {
                Some(previous) if messages[previous].role() == Role::Assistant => {
                    messages[previous].tool_use_ids().map(str::to_string).collect()
                }
                _ => Vec::new(),
            };
            notes.extend(demote_orphans(&mut messages[index], index, &calls));
        }
        if messages[index].role() == Role::Assistant && messages[index].has_tool_use() {
            let calls: Vec<String> = messages[index].tool_use_ids().map(str::to_string).collect();
            let next = index + 1;
            if next == messages.len() || messages[next].role() == Role::Assistant {
                messages.insert(next, Message::blocks(Role::User, Vec::new()));
            }
            let answered: Vec<String> = messages[next].tool_result_ids().map(str::to_string).collect();
            let missing: Vec<ContentBlock> = calls
                .iter()
                .filter(|id| !answered.contains(id))
                .map(|id| ContentBlock::tool_result(id.clone(), INTERRUPTED_RESULT, true))
                .collect();
            if !missing.is_empty() {
                notes.push(format!(
                    "message {}: {} tool call(s) without a result got an \"interrupted\" result",
                    index + 1,
                    missing.len()
                ));
                let blocks = blocks_mut(&mut messages[next]);
                let results = blocks
                    .iter()
                    .take_while(|b| matches!(b, ContentBlock::ToolResult { .. }))
                    .count();
                blocks.splice(results..results, missing);
            }
        }
        index += 1;
    }
    notes
}

/// Results in a user message that do not answer a call of the message before it (or
/// answer one twice) become text blocks after the real results, which the API wants first.
fn demote_orphans(message: &mut Message, index: usize, calls: &[String]) -> Option<String> {
    let is_orphan = |id: &str, seen: &[String]| !calls.iter().any(|c| c == id) || seen.iter().any(|s| s == id);
    let mut seen = Vec::new();
    let mut orphans = 0;
    for id in message.tool_result_ids() {
        if is_orphan(id, &seen) {
            orphans += 1;
        } else {
            seen.push(id.to_string());
        }
    }
    if orphans == 0 {
        return None;
    }
    let mut seen = Vec::new();
    let (mut results, mut rest) = (Vec::new(), Vec::new());
    for block in std::mem::take(blocks_mut(message)) {
        match block {
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } if is_orphan(&tool_use_id, &seen) => rest.push(ContentBlock::text(format!(
                "[A tool result for call {tool_use_id}, which is not in the history:]\n{}",
                content.full_text()
            ))),
            ContentBlock::ToolResult { ref tool_use_id, .. } => {
                seen.push(tool_use_id.clone());
                results.push(block);
            }
            other => rest.push(other),
        }
    }
    results.extend(rest);
    *blocks_mut(message) = results;
    Some(format!(
        "message {}: {orphans} tool result(s) without a matching call were kept as text",
        index + 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolResultContent;

    fn call(id: &str) -> Message {
        Message::blocks(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: id.into(),
                name: "bash".into(),
                input: serde_json::json!({}),
                extra: Default::default(),
            }],
        )
    }

    fn result(id: &str) -> Message {
        Message::blocks(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content: ToolResultContent::Text("ok".into()),
                is_error: None,
                extra: Default::default(),
            }],
        )
    }

    #[test]
    fn cuts_move_around_pairs() {
        let history = vec![Message::user_text("go"), call("a"), result("a"), call("b"), result("b")];
        assert_eq!(head_end(&history, 2), 1);
        assert_eq!(head_end(&history, 3), 3);
        assert_eq!(head_end(&history, 4), 3);
        assert_eq!(tail_start_forward(&history, 2), 3);
        assert_eq!(tail_start_forward(&history, 4), 5);
        assert_eq!(tail_start_backward(&history, 4, 1), Some(3));
        assert_eq!(tail_start_backward(&history, 2, 2), None);
        assert_eq!(check_pairing(&history), Ok(()));
    }

    #[test]
    fn a_repeated_call_id_is_named_and_renamed_with_its_result() {
        let mut history = vec![
            Message::user_text("go"),
            call("a"),
            result("a"),
            call("a"),
            result("a"),
            Message::user_text("next"),
        ];
        assert_eq!(
            check_pairing(&history),
            Err(PairingError::RepeatedId {
                message: 3,
                tool_use_id: "a".into()
            })
        );
        let notes = repair(&mut history);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(check_pairing(&history), Ok(()));
        assert_eq!(history[3].tool_use_ids().collect::<Vec<_>>(), ["a_dup2"]);
        assert_eq!(history[4].tool_result_ids().collect::<Vec<_>>(), ["a_dup2"]);
        assert_eq!(history[5], Message::user_text("next"), "other messages are untouched");
        assert!(repair(&mut history).is_empty(), "mended once");
    }

    #[test]
    fn pairing_problems_are_named() {
        assert_eq!(check_pairing(&[call("a")]), Err(PairingError::FirstNotUser));
        assert!(matches!(
            check_pairing(&[Message::user_text("x"), result("a")]),
            Err(PairingError::OrphanResult { message: 1, .. })
        ));
        assert!(matches!(
            check_pairing(&[Message::user_text("x"), call("a"), Message::user_text("y")]),
            Err(PairingError::UnansweredCall { message: 1, .. })
        ));
        assert_eq!(check_pairing(&[Message::user_text("x"), call("a")]), Ok(()));
    }

    #[test]
    fn repair_answers_calls_demotes_orphans_and_fixes_the_start() {
        let mut history = vec![
            call("lost"),
            Message::user_text("next prompt"),
            call("a"),
            Message::blocks(
                Role::User,
                vec![
                    ContentBlock::text("note"),
                    ContentBlock::tool_result("zzz", "stray", false),
                ],
            ),
            call("b"),
            call("c"),
        ];
        let notes = repair(&mut history);
        assert_eq!(check_pairing(&history), Ok(()), "{history:?}");
        assert_eq!(notes.len(), 6, "{notes:?}");
        assert_eq!(history[0].role(), Role::User);
        // The prompt keeps its text after the synthetic result.
        assert_eq!(history[2].tool_result_ids().collect::<Vec<_>>(), ["lost"]);
        assert!(history[2].text().contains("next prompt"));
        // The orphan's text survives, after the real (synthetic) result.
        assert!(matches!(history[4].block_slice()[0], ContentBlock::ToolResult { .. }));
        assert!(history[4].text().contains("stray"));
        // Two calls in a row: a results message is put between them.
        assert_eq!(history[6].tool_result_ids().collect::<Vec<_>>(), ["b"]);
        assert_eq!(
            history[8].tool_result_ids().collect::<Vec<_>>(),
            ["c"],
            "the final call is answered"
        );
        let again = repair(&mut history);
        assert!(again.is_empty(), "a repaired history needs no more repair: {again:?}");
    }
}
