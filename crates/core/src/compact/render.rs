//! One renderer of messages as text: the pieces of a message in order, which the
//! summariser's input, the transcript viewer and `/context` all read, each styling them
//! its own way.

use std::borrow::Cow;

use serde_json::Value;

use crate::message::{Content, ContentBlock, Message, Role};

/// One piece of a message, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece<'m> {
    /// Text, as it is.
    Text(&'m str),
    /// A tool call.
    Call {
        /// The call's id.
        id: &'m str,
        /// The tool.
        name: &'m str,
        /// Its input.
        input: &'m Value,
    },
    /// A tool result.
    Result {
        /// The call it answers.
        id: &'m str,
        /// Its text.
        text: Cow<'m, str>,
        /// The tool reported an error.
        error: bool,
    },
    /// A block we do not model, by its type.
    Unknown(&'m str),
}

/// How a role is named in plain text (`user`, `assistant`).
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// The pieces of `message`, in order.
pub fn pieces(message: &Message) -> Vec<Piece<'_>> {
    match &message.content() {
        Content::Text(text) => vec![Piece::Text(text)],
        Content::Blocks(blocks) => blocks.iter().map(piece).collect(),
    }
}

/// One block as a piece.
pub fn piece(block: &ContentBlock) -> Piece<'_> {
    match block {
        ContentBlock::Text { text, .. } => Piece::Text(text),
        ContentBlock::ToolUse { id, name, input, .. } => Piece::Call { id, name, input },
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
            ..
        } => Piece::Result {
            id: tool_use_id,
            text: content.text_cow(),
            error: *is_error == Some(true),
        },
        // The server's summary is text the model reads: a later summary reads it too.
        ContentBlock::Unknown(value) if super::markers::is_server_compaction_block(value) => {
            Piece::Text(super::markers::server_summary_text(value))
        }
        ContentBlock::Unknown(value) => Piece::Unknown(value.get("type").and_then(Value::as_str).unwrap_or("unknown")),
    }
}

impl Piece<'_> {
    /// The piece's text on its own: a call as its name and input, a block we do not
    /// model as its type.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Piece::Text(text) => Cow::Borrowed(text),
            Piece::Call { name, input, .. } => Cow::Owned(format!("{name} {input}")),
            Piece::Result { text, .. } => Cow::Borrowed(text),
            Piece::Unknown(kind) => Cow::Owned(format!("[{kind} block]")),
        }
    }
}

/// The history as plain text, as the summariser reads it: a role header per message,
/// then each piece on its own line.
pub fn to_text(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        out.push_str(&role_name(message.role()).to_uppercase());
        out.push_str(":\n");
        for piece in pieces(message) {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Call { name, input, .. } => out.push_str(&format!("[tool call {name}] {input}")),
                Piece::Result { text, error, .. } => {
                    out.push_str(if error { "[tool error] " } else { "[tool result] " });
                    out.push_str(&text);
                }
                Piece::Unknown(kind) => out.push_str(&format!("[{kind} block]")),
            }
            if matches!(message.content(), Content::Blocks(_)) {
                out.push('\n');
            }
        }
        out.push_str("\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pieces_keep_the_order_and_the_text_reads_as_before() {
        let messages = vec![
            Message::user_text("go"),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::text("ok"),
                    ContentBlock::tool_use("t1", "bash", json!({"command": "ls"})),
                ],
            ),
            Message::blocks(Role::User, vec![ContentBlock::tool_result("t1", "a.rs", true)]),
        ];
        assert_eq!(
            pieces(&messages[1]),
            vec![
                Piece::Text("ok"),
                Piece::Call {
                    id: "t1",
                    name: "bash",
                    input: &json!({"command": "ls"})
                }
            ]
        );
        assert_eq!(
            to_text(&messages),
            "USER:\ngo\n\nASSISTANT:\nok\n[tool call bash] {\"command\":\"ls\"}\n\n\nUSER:\n[tool error] a.rs\n\n\n"
        );
    }
}
