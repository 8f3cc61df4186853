//! Cut points that never separate an assistant `tool_use` from the user
//! `tool_result` that answers it: the API rejects a result whose call is missing from
//! the message right before it.

use crate::message::{Content, ContentBlock, Message, Role};

/// The blocks of a message, turning string content into a block list only when it
/// must change.
pub fn blocks_mut(message: &mut Message) -> &mut Vec<ContentBlock> {
    if let Content::Text(text) = &mut message.content {
        let text = std::mem::take(text);
        message.content = Content::Blocks(vec![ContentBlock::Text { text }]);
    }
    match &mut message.content {
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
    FirstNotUser,
    OrphanResult { message: usize, tool_use_id: String },
    UnansweredCall { message: usize, tool_use_id: String },
}

/// Every tool_result answers a tool_use in the message right before it, every
/// tool_use except in the final message is answered in the next one, and the
/// history starts with a user message.
pub fn check_pairing(messages: &[Message]) -> Result<(), PairingError> {
    if messages.first().is_some_and(|m| m.role != Role::User) {
        return Err(PairingError::FirstNotUser);
    }
    for (index, message) in messages.iter().enumerate() {
        for id in message.tool_result_ids() {
            let answered = index > 0
                && messages[index - 1].role == Role::Assistant
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
}
