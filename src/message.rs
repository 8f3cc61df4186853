//! The conversation model, shaped exactly like the Anthropic Messages wire format.
//!
//! A history serialises byte-for-byte to what the API receives, so the compaction
//! estimate (characters of that JSON) measures the real request. Block types we do
//! not know (images, thinking, server tools, whatever the API adds next) are kept
//! verbatim as JSON so a round trip never drops them.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Content,
}

/// `content` is either a bare string or a list of blocks; both are legal on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: ToolResultContent,
        is_error: Option<bool>,
    },
    /// Any block we do not model (or a known type with extra fields), kept as sent.
    Unknown(Value),
}

/// A tool result's `content`: a string or a list of blocks (text, images).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

/// The known block shapes, strict, so anything with extra fields falls back to
/// `Unknown` and survives untouched.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum KnownBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default = "empty_result")]
        content: ToolResultContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
}

fn empty_result() -> ToolResultContent {
    ToolResultContent::Text(String::new())
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum KnownBlockRef<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a ToolResultContent,
        #[serde(skip_serializing_if = "Option::is_none")]
        is_error: &'a Option<bool>,
    },
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = match self {
            ContentBlock::Text { text } => KnownBlockRef::Text { text },
            ContentBlock::ToolUse { id, name, input } => KnownBlockRef::ToolUse { id, name, input },
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => KnownBlockRef::ToolResult {
                tool_use_id,
                content,
                is_error,
            },
            ContentBlock::Unknown(value) => return value.serialize(serializer),
        };
        known.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if !value.get("type").is_some_and(Value::is_string) {
            return Err(D::Error::custom("content block without a string \"type\""));
        }
        Ok(match KnownBlock::deserialize(&value) {
            Ok(KnownBlock::Text { text }) => ContentBlock::Text { text },
            Ok(KnownBlock::ToolUse { id, name, input }) => ContentBlock::ToolUse { id, name, input },
            Ok(KnownBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            }) => ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            },
            Err(_) => ContentBlock::Unknown(value),
        })
    }
}

impl ToolResultContent {
    /// The result as text: the string itself, or its text blocks joined by newlines.
    /// Results holding non-text blocks (images) are rendered as their JSON so that
    /// saving them to disk keeps everything.
    pub fn full_text(&self) -> String {
        match self {
            ToolResultContent::Text(text) => text.clone(),
            ToolResultContent::Blocks(blocks) => {
                let mut texts = Vec::with_capacity(blocks.len());
                for block in blocks {
                    match block {
                        ContentBlock::Text { text } => texts.push(text.as_str()),
                        _ => return serde_json::to_string(blocks).unwrap_or_default(),
                    }
                }
                texts.join("\n")
            }
        }
    }

    /// Length in characters of `full_text` without building it for the common case.
    pub fn char_len(&self) -> usize {
        match self {
            ToolResultContent::Text(text) => text.chars().count(),
            ToolResultContent::Blocks(_) => self.full_text().chars().count(),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            ToolResultContent::Text(text) => Some(text),
            ToolResultContent::Blocks(_) => None,
        }
    }
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: Content::Text(text.into()),
        }
    }

    pub fn assistant_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: Content::Text(text.into()),
        }
    }

    pub fn blocks(role: Role, blocks: Vec<ContentBlock>) -> Self {
        Message {
            role,
            content: Content::Blocks(blocks),
        }
    }

    pub fn block_slice(&self) -> &[ContentBlock] {
        match &self.content {
            Content::Blocks(blocks) => blocks,
            Content::Text(_) => &[],
        }
    }

    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.block_slice().iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.block_slice().iter().filter_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
    }

    pub fn has_tool_use(&self) -> bool {
        self.tool_use_ids().next().is_some()
    }

    pub fn has_tool_result(&self) -> bool {
        self.tool_result_ids().next().is_some()
    }

    /// All plain text of the message (string content or text blocks), joined.
    pub fn text(&self) -> String {
        match &self.content {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// A user message is a "real" prompt when it carries text and no tool results;
/// tool results also travel with role user.
pub fn is_user_prompt(message: &Message) -> bool {
    message.role == Role::User && !message.has_tool_result()
}

/// Parse a JSON array of messages, with the position of a bad element in the error.
pub fn parse_history(json: &str) -> Result<Vec<Message>, serde_json::Error> {
    serde_json::from_str(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(json: &str) {
        let messages: Vec<Message> = serde_json::from_str(json).expect("parse");
        assert_eq!(serde_json::to_string(&messages).expect("serialise"), json);
    }

    #[test]
    fn wire_format_round_trips_byte_for_byte() {
        round_trip(r#"[{"role":"user","content":"hi ünïcode ✓"}]"#);
        round_trip(
            r#"[{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls","timeout":5}}]}]"#,
        );
        round_trip(
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb","is_error":true}]}]"#,
        );
        round_trip(
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}]}]}]"#,
        );
    }

    #[test]
    fn unknown_blocks_and_extra_fields_are_kept_verbatim() {
        let json = r#"[{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"abc"},{"type":"text","text":"t","cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA="}}]}]"#;
        let messages: Vec<Message> = serde_json::from_str(json).unwrap();
        assert!(matches!(messages[0].block_slice()[0], ContentBlock::Unknown(_)));
        assert!(matches!(messages[0].block_slice()[1], ContentBlock::Unknown(_)));
        round_trip(json);
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        assert!(parse_history(r#"[{"role":"user"}]"#).is_err());
        assert!(parse_history(r#"[{"role":"system","content":"x"}]"#).is_err());
        assert!(parse_history(r#"[{"role":"user","content":[{"text":"no type"}]}]"#).is_err());
        assert!(parse_history("[{").is_err());
    }

    #[test]
    fn tool_result_text_joins_text_blocks_and_keeps_images_as_json() {
        let text = ToolResultContent::Blocks(vec![
            ContentBlock::Text { text: "a".into() },
            ContentBlock::Text { text: "b".into() },
        ]);
        assert_eq!(text.full_text(), "a\nb");
        let image = ToolResultContent::Blocks(vec![ContentBlock::Unknown(
            serde_json::json!({"type":"image","source":{}}),
        )]);
        assert_eq!(image.full_text(), r#"[{"type":"image","source":{}}]"#);
    }
}
