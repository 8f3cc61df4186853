//! The conversation model, shaped exactly like the Anthropic Messages wire format.
//!
//! A history serialises byte-for-byte to what it was read from, so the compaction
//! estimate measures the real request and a journal or transcript round trip loses
//! nothing. Fields we do not model (`cache_control` on a block, `id` or `stop_reason`
//! on a message) stay with their block or message, in their original position, and a
//! block carrying them is still a known block: a `tool_result` with `cache_control` is
//! paired, cleared and persisted like any other. Block types we do not know (images,
//! thinking, server tools, whatever the API adds next) are kept verbatim as JSON.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::sync::OnceLock;

mod lazy;
mod read;
mod sketch;
mod tool_spec;

pub(crate) use lazy::raw::RawText;
pub use sketch::{Sketch, SketchBlock, SketchContent};
pub use tool_spec::ToolSpec;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, or the tool results sent back for the model.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation. Its fields are reached through methods: a
/// message changes only through [`Message::content_mut`].
#[derive(Clone)]
pub struct Message {
    role: Role,
    body: Body,
}

/// A message's content and unmodelled fields, or the text they are still in.
#[derive(Clone)]
enum Body {
    Parsed(Parts),
    /// Read from `text`, which is exactly how it serialises; parsed on first use.
    Raw {
        text: RawText,
        parts: OnceLock<Parts>,
    },
}

impl Body {
    /// The parts, parsing a body still in its text first (the text, which would no
    /// longer be the message once they change, is let go).
    fn parsed(&mut self) -> &mut Parts {
        loop {
            match self {
                Body::Parsed(parts) => return parts,
                Body::Raw { text, parts } => {
                    let parsed = parts.take().unwrap_or_else(|| lazy::parts_of(text));
                    *self = Body::Parsed(parsed);
                }
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Parts {
    content: Content,
    extra: Extra,
}

/// `content` is either a bare string or a list of blocks; both are legal on the wire.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// A bare string.
    Text(String),
    /// A list of blocks.
    Blocks(Vec<ContentBlock>),
}

/// One block of a message's content.
#[derive(Clone, Debug, PartialEq)]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Its unmodelled fields, kept as sent.
        extra: Extra,
    },
    /// A tool call.
    ToolUse {
        /// The call's id, which its result names.
        id: String,
        /// The tool called.
        name: String,
        /// The call's input, as the model wrote it.
        input: Value,
        /// Its unmodelled fields, kept as sent.
        extra: Extra,
    },
    /// A tool's result.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// What the tool gave back.
        content: ToolResultContent,
        /// `Some(true)` when the tool failed; absent otherwise, as the API writes it.
        is_error: Option<bool>,
        /// Its unmodelled fields, kept as sent.
        extra: Extra,
    },
    /// A block type we do not model, kept as sent.
    Unknown(Value),
}

/// A tool result's `content`: a string or a list of blocks (text, images).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// A bare string.
    Text(String),
    /// A list of blocks (text, images).
    Blocks(Vec<ContentBlock>),
}

/// The fields of an object that our types do not model, plus the order in which all
/// of its fields arrived, so that it serialises back exactly as it was read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra {
    /// Unmodelled fields, in arrival order.
    fields: Map<String, Value>,
    /// Every key as it arrived, modelled ones included; empty when the object held
    /// exactly its modelled fields in their usual order.
    layout: Vec<String>,
}

impl Extra {
    /// An unmodelled field, such as `cache_control`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// Whether the object held exactly its modelled fields, in their usual order.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.layout.is_empty()
    }

    /// A modelled key that the object did not have when it was read.
    fn omits(&self, key: &str) -> bool {
        !self.layout.is_empty() && !self.layout.iter().any(|k| k == key)
    }

    /// Write `known` (modelled key, value if present) and the extras in arrival order;
    /// modelled fields set since then follow, then extras added since then.
    fn serialize<S: Serializer>(&self, serializer: S, known: &[(&str, Option<Field<'_>>)]) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if self.layout.is_empty() {
            for (key, value) in known {
                if let Some(value) = value {
                    map.serialize_entry(key, value)?;
                }
            }
            for (key, value) in &self.fields {
                map.serialize_entry(key, value)?;
            }
            return map.end();
        }
        for key in &self.layout {
            match known.iter().find(|(name, _)| name == key) {
                Some((_, Some(value))) => map.serialize_entry(key, value)?,
                // Unset, or kept verbatim among the extras (a field of an unusual type).
                _ => {
                    if let Some(value) = self.fields.get(key) {
                        map.serialize_entry(key, value)?;
                    }
                }
            }
        }
        for (key, value) in known {
            if let Some(value) = value
                && self.omits(key)
            {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in &self.fields {
            if !self.layout.contains(key) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// One modelled field's value, borrowed for serialisation.
enum Field<'a> {
    Str(&'a str),
    Json(&'a Value),
    Bool(bool),
    Role(Role),
    Content(&'a Content),
    Result(&'a ToolResultContent),
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Str(text) => serializer.serialize_str(text),
            Field::Json(value) => value.serialize(serializer),
            Field::Bool(flag) => serializer.serialize_bool(*flag),
            Field::Role(role) => role.serialize(serializer),
            Field::Content(content) => content.serialize(serializer),
            Field::Result(content) => content.serialize(serializer),
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text { text, extra } => extra.serialize(
                serializer,
                &[("type", Some(Field::Str("text"))), ("text", Some(Field::Str(text)))],
            ),
            ContentBlock::ToolUse { id, name, input, extra } => extra.serialize(
                serializer,
                &[
                    ("type", Some(Field::Str("tool_use"))),
                    ("id", Some(Field::Str(id))),
                    ("name", Some(Field::Str(name))),
                    ("input", Some(Field::Json(input))),
                ],
            ),
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                extra,
            } => {
                // A result read without `content` (or with one of an unusual type, kept
                // among the extras) stays so until it gets some.
                let absent = (extra.omits("content") || extra.get("content").is_some()) && content.as_str() == Some("");
                extra.serialize(
                    serializer,
                    &[
                        ("type", Some(Field::Str("tool_result"))),
                        ("tool_use_id", Some(Field::Str(tool_use_id))),
                        ("content", (!absent).then_some(Field::Result(content))),
                        ("is_error", is_error.map(Field::Bool)),
                    ],
                )
            }
            ContentBlock::Unknown(value) => value.serialize(serializer),
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let parts = self.parts();
        parts.extra.serialize(
            serializer,
            &[
                ("role", Some(Field::Role(self.role))),
                ("content", Some(Field::Content(&parts.content))),
            ],
        )
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        if let (Some(one), Some(two)) = (self.raw(), other.raw())
            && one.as_str() == two.as_str()
        {
            return true;
        }
        self.role == other.role && self.parts() == other.parts()
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = self.parts();
        f.debug_struct("Message")
            .field("role", &self.role)
            .field("content", &parts.content)
            .field("extra", &parts.extra)
            .finish()
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            extra: Extra::default(),
        }
    }

    /// A tool call.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ContentBlock::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            extra: Extra::default(),
        }
    }

    /// A tool result of `content`, an error where `is_error`.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        ContentBlock::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: ToolResultContent::Text(content.into()),
            is_error: is_error.then_some(true),
            extra: Extra::default(),
        }
    }
}

impl ToolResultContent {
    /// [`Self::full_text`] without a copy when the content is plain text.
    pub fn text_cow(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ToolResultContent::Text(text) => std::borrow::Cow::Borrowed(text),
            ToolResultContent::Blocks(_) => std::borrow::Cow::Owned(self.full_text()),
        }
    }

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
                        ContentBlock::Text { text, .. } => texts.push(text.as_str()),
                        _ => return crate::json::to_string(blocks).unwrap_or_default(),
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

    /// The text, when the result is a bare string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ToolResultContent::Text(text) => Some(text),
            ToolResultContent::Blocks(_) => None,
        }
    }
}

impl Message {
    /// A user message of plain text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::parsed(Role::User, Content::Text(text.into()), Extra::default())
    }

    /// An assistant message of plain text.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Message::parsed(Role::Assistant, Content::Text(text.into()), Extra::default())
    }

    /// A message of `blocks`.
    pub fn blocks(role: Role, blocks: Vec<ContentBlock>) -> Self {
        Message::parsed(role, Content::Blocks(blocks), Extra::default())
    }

    fn parsed(role: Role, content: Content, extra: Extra) -> Self {
        Message::parsed_parts(role, Parts { content, extra })
    }

    /// A message still in the text it was read from, which was checked then (see
    /// `read::read_history`).
    fn unparsed(role: Role, text: RawText) -> Self {
        Message {
            role,
            body: Body::Raw {
                text,
                parts: OnceLock::new(),
            },
        }
    }

    fn parts(&self) -> &Parts {
        match &self.body {
            Body::Parsed(parts) => parts,
            Body::Raw { text, parts } => parts.get_or_init(|| lazy::parts_of(text)),
        }
    }

    /// Who wrote it.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Its content, to read.
    pub fn content(&self) -> &Content {
        &self.parts().content
    }

    /// The content to change. A message still in its text is parsed, and the text,
    /// which would no longer be the message, is let go.
    pub fn content_mut(&mut self) -> &mut Content {
        &mut self.body.parsed().content
    }

    /// The message's JSON as it was read, with its shape, when it is still exactly
    /// that: the same bytes as serialising it would give, without the work. Only the
    /// lazy reader makes such a message (see `lazy`); read by the estimate's count,
    /// the transcript writer and message equality.
    pub(crate) fn raw(&self) -> Option<&RawText> {
        match &self.body {
            Body::Raw { text, .. } => Some(text),
            Body::Parsed(_) => None,
        }
    }

    /// What a one-line description reads of the message (see [`Sketch::of`]).
    pub fn sketch<'a>(&'a self, room: &'a mut String) -> Sketch<'a> {
        Sketch::of(self, room)
    }

    fn parsed_parts(role: Role, parts: Parts) -> Self {
        Message {
            role,
            body: Body::Parsed(parts),
        }
    }

    /// Its blocks (none for a bare string).
    pub fn block_slice(&self) -> &[ContentBlock] {
        match self.content() {
            Content::Blocks(blocks) => blocks,
            Content::Text(_) => &[],
        }
    }

    /// The ids of the tool calls it makes.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.block_slice().iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// The calls its tool results answer.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.block_slice().iter().filter_map(|block| match block {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
    }

    /// Whether it calls a tool.
    pub fn has_tool_use(&self) -> bool {
        self.tool_use_ids().next().is_some()
    }

    /// Whether it carries a tool result.
    pub fn has_tool_result(&self) -> bool {
        self.tool_result_ids().next().is_some()
    }

    /// All plain text of the message (string content or text blocks), joined.
    pub fn text(&self) -> String {
        match self.content() {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// Parse a JSON array of messages, with the position of a bad element in the error.
/// Messages are kept in their text until something reads them (see `message::raw`).
pub fn parse_history(json: impl Into<Vec<u8>>) -> Result<Vec<Message>, serde_json::Error> {
    lazy::read_history(json.into())
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
    fn unknown_blocks_are_kept_verbatim_and_extra_fields_keep_a_block_known() {
        let json = r#"[{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"abc"},{"type":"text","text":"t","cache_control":{"type":"ephemeral"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA="}}]}]"#;
        let messages: Vec<Message> = serde_json::from_str(json).unwrap();
        assert!(matches!(messages[0].block_slice()[0], ContentBlock::Unknown(_)));
        let ContentBlock::Text { text, extra } = &messages[0].block_slice()[1] else {
            panic!("a text block with cache_control is still text");
        };
        assert_eq!(text, "t");
        assert_eq!(
            extra.get("cache_control"),
            Some(&serde_json::json!({"type": "ephemeral"}))
        );
        round_trip(json);
    }

    #[test]
    fn extra_fields_keep_their_place_on_every_block_and_message() {
        round_trip(
            r#"[{"id":"msg_1","role":"assistant","content":[{"cache_control":{"type":"ephemeral"},"type":"tool_use","id":"t1","name":"bash","input":{}}],"stop_reason":"tool_use"}]"#,
        );
        round_trip(
            r#"[{"role":"user","content":[{"type":"tool_result","cache_control":{"type":"ephemeral"},"tool_use_id":"t1","content":"x","is_error":false}]}]"#,
        );
        round_trip(r#"[{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result"}]}]"#);
        round_trip(r#"[{"content":"reordered","role":"user"}]"#);
        let messages: Vec<Message> = serde_json::from_str(
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"old","cache_control":{"type":"ephemeral"}}]}]"#,
        )
        .unwrap();
        assert!(messages[0].has_tool_result(), "a result with cache_control is a result");
        let mut edited = messages.clone();
        if let Content::Blocks(blocks) = edited[0].content_mut()
            && let ContentBlock::ToolResult { content, is_error, .. } = &mut blocks[0]
        {
            *content = ToolResultContent::Text("new".into());
            *is_error = Some(true);
        }
        assert_eq!(
            serde_json::to_string(&edited).unwrap(),
            r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"new","cache_control":{"type":"ephemeral"},"is_error":true}]}]"#
        );
    }

    #[test]
    fn known_types_with_wrong_field_types_stay_unknown() {
        let json = r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":7,"content":"x"},{"type":"text","text":["a"]},{"type":"tool_use","id":"t","name":"n"}]}]"#;
        let messages: Vec<Message> = serde_json::from_str(json).unwrap();
        assert!(
            messages[0]
                .block_slice()
                .iter()
                .all(|b| matches!(b, ContentBlock::Unknown(_)))
        );
        round_trip(json);
    }

    /// Every `tool_result` is a tool result, as in the seed: an `is_error` or `content`
    /// of an unusual type stays verbatim, in its place, and the block still pairs.
    #[test]
    fn a_tool_result_with_fields_of_unusual_types_is_still_a_tool_result() {
        let json = r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x","is_error":null},{"type":"tool_result","tool_use_id":"b","is_error":"true","content":"y"},{"type":"tool_result","tool_use_id":"c","content":{"odd":1}},{"type":"tool_result","tool_use_id":"d","content":"z","is_error":false}]}]"#;
        let messages: Vec<Message> = serde_json::from_str(json).unwrap();
        assert_eq!(messages[0].tool_result_ids().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        let blocks = messages[0].block_slice();
        assert!(
            matches!(&blocks[0], ContentBlock::ToolResult { content, is_error: None, .. } if content.as_str() == Some("x"))
        );
        assert!(matches!(
            &blocks[3],
            ContentBlock::ToolResult {
                is_error: Some(false),
                ..
            }
        ));
        round_trip(json);
        // A stage that replaces the content keeps the unusual flag as it was.
        let mut cleared = messages.clone();
        if let ContentBlock::ToolResult { content, .. } = &mut crate::compact::pairing::blocks_mut(&mut cleared[0])[1] {
            *content = ToolResultContent::Text("[cleared]".into());
        }
        assert_eq!(
            serde_json::to_string(&cleared[0].block_slice()[1]).unwrap(),
            r#"{"type":"tool_result","tool_use_id":"b","is_error":"true","content":"[cleared]"}"#
        );
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
        let text = ToolResultContent::Blocks(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(text.full_text(), "a\nb");
        let image = ToolResultContent::Blocks(vec![ContentBlock::Unknown(
            serde_json::json!({"type":"image","source":{}}),
        )]);
        assert_eq!(image.full_text(), r#"[{"type":"image","source":{}}]"#);
    }
}
