//! What a one-line description reads of a message: its role, its text, the tools it
//! calls and with what input, the calls its results answer. Borrowed from the message.
//! A message still kept as its text is sketched from that text, without parsing it
//! (see `lazy`).

use std::borrow::Cow;

use serde_json::Value;

use super::{Body, Content, ContentBlock, Message, Role};

/// A message as a description reads it.
#[derive(Debug, PartialEq)]
pub struct Sketch<'a> {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: SketchContent<'a>,
}

/// A sketched message's content.
#[derive(Debug, PartialEq)]
pub enum SketchContent<'a> {
    /// A bare string.
    Text(Cow<'a, str>),
    /// A list of blocks.
    Blocks(Vec<SketchBlock<'a>>),
}

/// One block, as much of it as a description needs.
#[derive(Debug, PartialEq)]
pub enum SketchBlock<'a> {
    /// Text.
    Text(Cow<'a, str>),
    /// A tool call: the tool and its input.
    ToolUse {
        /// The tool called.
        name: Cow<'a, str>,
        /// Its input.
        input: Cow<'a, Value>,
    },
    /// A tool result: the call it answers.
    ToolResult {
        /// The call's id.
        tool_use_id: Cow<'a, str>,
    },
    /// A block we do not model.
    Other,
}

impl<'a> Sketch<'a> {
    /// The sketch of `message`. One still in its text is read from a copy of that text
    /// in `room` (reused from message to message, so that reading allocates little).
    pub fn of(message: &'a Message, room: &'a mut String) -> Sketch<'a> {
        let content = match &message.body {
            Body::Raw { text, parts } if parts.get().is_none() => super::lazy::of_text(text, room),
            _ => None,
        };
        // Deep, or (never, for a text that was checked when it was read) not readable
        // here: from its parts, parsed now.
        let content = content.unwrap_or_else(|| of_content(message.content()));
        Sketch {
            role: message.role,
            content,
        }
    }

    /// Its blocks (none for a bare string).
    pub fn blocks(&self) -> &[SketchBlock<'a>] {
        match &self.content {
            SketchContent::Blocks(blocks) => blocks,
            SketchContent::Text(_) => &[],
        }
    }

    /// As [`Message::has_tool_result`].
    pub fn has_tool_result(&self) -> bool {
        self.blocks()
            .iter()
            .any(|block| matches!(block, SketchBlock::ToolResult { .. }))
    }

    /// As [`Message::text`]: all plain text (string content or text blocks), joined.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.content {
            SketchContent::Text(text) => Cow::Borrowed(text),
            SketchContent::Blocks(blocks) => Cow::Owned(
                blocks
                    .iter()
                    .filter_map(|block| match block {
                        SketchBlock::Text(text) => Some(&**text),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }
    }
}

fn of_content(content: &Content) -> SketchContent<'_> {
    match content {
        Content::Text(text) => SketchContent::Text(Cow::Borrowed(text)),
        Content::Blocks(blocks) => SketchContent::Blocks(
            blocks
                .iter()
                .map(|block| match block {
                    ContentBlock::Text { text, .. } => SketchBlock::Text(Cow::Borrowed(text)),
                    ContentBlock::ToolUse { name, input, .. } => SketchBlock::ToolUse {
                        name: Cow::Borrowed(name),
                        input: Cow::Borrowed(input),
                    },
                    ContentBlock::ToolResult { tool_use_id, .. } => SketchBlock::ToolResult {
                        tool_use_id: Cow::Borrowed(tool_use_id),
                    },
                    ContentBlock::Unknown(_) => SketchBlock::Other,
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kept messages of every kind the sketch tells apart, one nested past what it reads
    /// itself: each sketched from its text is the sketch of its parts.
    #[test]
    fn a_kept_message_is_sketched_as_its_parts() {
        let deep = format!("{}\"x\"{}", "[".repeat(100), "]".repeat(100));
        let texts = [
            r#"{"role":"user","content":"fix the \"parser\"\nplease"}"#.to_string(),
            r#"{"role":"assistant","content":[{"type":"text","text":"looking"},{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"src/\u00e9.rs"}},{"type":"image","source":{}}]}"#
                .replace("\\u00e9", "é"),
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a long output","is_error":null}]}"#
                .to_string(),
            format!(r#"{{"role":"assistant","content":[{{"type":"tool_use","id":"t2","name":"bash","input":{deep}}}]}}"#),
        ];
        let history = crate::message::parse_history(format!("[{}]", texts.join(","))).unwrap();
        let parsed: Vec<Message> = texts.iter().map(|text| crate::json::from_str(text).unwrap()).collect();
        for (kept, parsed) in history.iter().zip(&parsed) {
            assert!(kept.raw().is_some(), "{kept:?} is kept as its text");
            let (mut room, mut parsed_room) = (String::new(), String::new());
            assert_eq!(kept.sketch(&mut room), parsed.sketch(&mut parsed_room));
        }
        let mut room = String::new();
        let sketch = history[1].sketch(&mut room);
        assert!(matches!(
            &sketch.blocks()[1],
            SketchBlock::ToolUse {
                name: Cow::Borrowed("read_file"),
                ..
            }
        ));
        assert_eq!(sketch.blocks()[2], SketchBlock::Other);
        let mut room = String::new();
        let sketch = history[0].sketch(&mut room);
        assert_eq!(sketch.text(), "fix the \"parser\"\nplease");
        let mut room = String::new();
        assert!(history[2].sketch(&mut room).has_tool_result());
        assert!(!room.contains("a long output"), "a result's content is not read");
    }
}
