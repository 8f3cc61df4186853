//! Reading messages from JSON. The fields of a message and of each block are taken as
//! they arrive, into a list in arrival order, instead of a hashed map per object that
//! is then taken apart: a long history parses at about the speed of its strings. What
//! is kept is what was read: unknown blocks and fields of unusual types stay verbatim
//! (see the module above for what is modelled).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{Content, ContentBlock, Extra, Message, Role, ToolResultContent};

/// Keys read without allocating: the modelled ones and the usual extra.
const KNOWN_KEYS: [&str; 10] = [
    "role",
    "content",
    "type",
    "text",
    "id",
    "name",
    "input",
    "tool_use_id",
    "is_error",
    "cache_control",
];

/// An object's fields in arrival order. A repeated key keeps its first place and takes
/// the last value, as serde_json's map does.
#[derive(Default)]
struct Fields(Vec<(Cow<'static, str>, Value)>);

impl Fields {
    fn insert(&mut self, key: Cow<'static, str>, value: Value) {
        match self.0.iter_mut().find(|(name, _)| *name == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(name, _)| name == key).map(|(_, value)| value)
    }

    fn from_map(map: Map<String, Value>) -> Self {
        Fields(map.into_iter().map(|(key, value)| (Cow::Owned(key), value)).collect())
    }

    fn into_map(self) -> Map<String, Value> {
        self.0
            .into_iter()
            .map(|(key, value)| (key.into_owned(), value))
            .collect()
    }
}

impl Extra {
    /// Split `fields` into the values of `known` keys (in that order; at most
    /// [`MOST_KNOWN`]) and the rest. Only `is_error` may be absent from an object in the
    /// usual layout.
    fn split(fields: Fields, known: &[&str]) -> ([Option<Value>; MOST_KNOWN], Extra) {
        let usual = known
            .iter()
            .filter(|key| **key != "is_error" || fields.get(key).is_some());
        let canonical = fields.0.iter().map(|(key, _)| key.as_ref()).eq(usual.copied());
        let layout = if canonical {
            Vec::new()
        } else {
            fields.0.iter().map(|(key, _)| key.to_string()).collect()
        };
        let mut values = [const { None }; MOST_KNOWN];
        let mut rest = Map::new();
        for (key, value) in fields.0 {
            match known.iter().position(|name| *name == key) {
                Some(at) => values[at] = Some(value),
                None => {
                    rest.insert(key.into_owned(), value);
                }
            }
        }
        (values, Extra { fields: rest, layout })
    }
}

/// The most keys an object models (a tool result's four).
const MOST_KNOWN: usize = 4;

/// A key, borrowed from [`KNOWN_KEYS`] when it is one of them.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'static, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'static, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(match KNOWN_KEYS.iter().find(|known| **known == key) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(key.to_owned()),
        })
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Self::Value, E> {
        Ok(match KNOWN_KEYS.iter().find(|known| **known == key) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(key),
        })
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut fields = Fields::default();
        let mut content = None;
        while let Some(key) = map.next_key_seed(Key)? {
            if key == "content" {
                content = Some(map.next_value_seed(ContentSeed)?);
                // Its place among the fields; the value is kept aside.
                fields.insert(key, Value::Null);
            } else {
                let value = map.next_value()?;
                fields.insert(key, value);
            }
        }
        let (values, extra) = Extra::split(fields, &["role", "content"]);
        let role = values
            .into_iter()
            .next()
            .flatten()
            .ok_or_else(|| A::Error::missing_field("role"))?;
        let content = content.ok_or_else(|| A::Error::missing_field("content"))?;
        let role = match role.as_str() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => {
                return Err(A::Error::custom(format!(
                    "unknown role {}, expected \"user\" or \"assistant\"",
                    crate::json::to_string(&role).unwrap_or_default()
                )));
            }
        };
        Ok(Message::parsed(role, content.map_err(A::Error::custom)?, extra))
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ContentSeed.deserialize(deserializer)?.map_err(D::Error::custom)
    }
}

impl<'de> Deserialize<'de> for ToolResultContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match text_or_blocks(Value::deserialize(deserializer)?).map_err(D::Error::custom)? {
                Content::Text(text) => ToolResultContent::Text(text),
                Content::Blocks(blocks) => ToolResultContent::Blocks(blocks),
            },
        )
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BlockSeed.deserialize(deserializer)?.map_err(D::Error::custom)
    }
}

/// A message's `content`: a string or a list of blocks. What is well-formed JSON but
/// not content is an `Err` with the reason, read to its end, so the caller decides
/// which error to give first.
struct ContentSeed;

impl<'de> DeserializeSeed<'de> for ContentSeed {
    type Value = Result<Content, String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn neither(value: &Value) -> String {
    format!(
        "content is neither a string nor a list of blocks: {}",
        crate::json::to_string(value).unwrap_or_default()
    )
}

impl<'de> Visitor<'de> for ContentSeed {
    type Value = Result<Content, String>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a string or a list of content blocks")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Ok(Content::Text(text.to_owned())))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Ok(Content::Text(text)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut error = None;
        while let Some(block) = seq.next_element_seed(BlockSeed)? {
            match block {
                Ok(block) if error.is_none() => blocks.push(block),
                Err(reason) if error.is_none() => error = Some(reason),
                _ => {}
            }
        }
        Ok(error.map_or(Ok(Content::Blocks(blocks)), Err))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        // Also how serde_json hands over a number kept as its text.
        let value = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Err(neither(&value)))
    }

    fn visit_bool<E: de::Error>(self, flag: bool) -> Result<Self::Value, E> {
        Ok(Err(neither(&Value::Bool(flag))))
    }

    fn visit_i64<E: de::Error>(self, number: i64) -> Result<Self::Value, E> {
        Ok(Err(neither(&Value::from(number))))
    }

    fn visit_u64<E: de::Error>(self, number: u64) -> Result<Self::Value, E> {
        Ok(Err(neither(&Value::from(number))))
    }

    fn visit_f64<E: de::Error>(self, number: f64) -> Result<Self::Value, E> {
        Ok(Err(neither(&Value::from(number))))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(neither(&Value::Null)))
    }
}

/// One block of a content list; like [`ContentSeed`], what is JSON but not a block is
/// an `Err` with the reason.
struct BlockSeed;

impl<'de> DeserializeSeed<'de> for BlockSeed {
    type Value = Result<ContentBlock, String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

const NOT_AN_OBJECT: &str = "content block is not an object";

impl<'de> Visitor<'de> for BlockSeed {
    type Value = Result<ContentBlock, String>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key_seed(Key)? {
            let value = map.next_value()?;
            fields.insert(key, value);
        }
        // serde_json's own form of a number kept as text is a map with one odd key.
        if let [(key, Value::String(_))] = fields.0.as_slice()
            && key.starts_with("$serde_json::private::")
        {
            return Ok(Err(NOT_AN_OBJECT.into()));
        }
        Ok(block_from_fields(fields))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Err(NOT_AN_OBJECT.into()))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err(NOT_AN_OBJECT.into()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(NOT_AN_OBJECT.into()))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err(NOT_AN_OBJECT.into()))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err(NOT_AN_OBJECT.into()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err(NOT_AN_OBJECT.into()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Err(NOT_AN_OBJECT.into()))
    }
}

/// A tool result's content as the API accepts it: a string, or blocks (objects with a
/// string `type`).
fn is_result_content(value: &Value) -> bool {
    match value {
        Value::String(_) => true,
        Value::Array(items) => items.iter().all(|item| item.get("type").is_some_and(Value::is_string)),
        _ => false,
    }
}

/// The kinds of block we model.
#[derive(Clone, Copy)]
pub(super) enum BlockKind {
    Text,
    ToolUse,
    ToolResult,
}

/// The modelled form of a block and the keys it models, or `None` when a field it
/// needs is missing or of the wrong type (then it is kept verbatim as unknown). Every
/// `tool_result` with a string `tool_use_id` is a tool result, as in the seed: an
/// optional field of an unusual type (`"is_error": null`, a `content` that is neither a
/// string nor blocks) is not modelled and stays verbatim among the extras.
fn known_block(fields: &Fields) -> Option<(BlockKind, &'static [&'static str])> {
    let kind = block_kind(
        fields.get("type").and_then(Value::as_str),
        |key| fields.get(key).is_some_and(Value::is_string),
        |key| fields.get(key).is_some(),
    )?;
    match kind {
        BlockKind::Text => Some((BlockKind::Text, &["type", "text"])),
        BlockKind::ToolUse => Some((BlockKind::ToolUse, &["type", "id", "name", "input"])),
        BlockKind::ToolResult => {
            let content = fields.get("content").is_none_or(is_result_content);
            let is_error = fields.get("is_error").is_none_or(Value::is_boolean);
            let keys: &[&str] = match (content, is_error) {
                (true, true) => &["type", "tool_use_id", "content", "is_error"],
                (true, false) => &["type", "tool_use_id", "content"],
                (false, true) => &["type", "tool_use_id", "is_error"],
                (false, false) => &["type", "tool_use_id"],
            };
            Some((BlockKind::ToolResult, keys))
        }
    }
}

/// The kind of a block of type `kind` (its `type`, when a string), by the fields that
/// kind needs: `is_string(key)` when the block has a string `key`, `has(key)` when it
/// has `key` at all. `None` for a block we do not model.
pub(super) fn block_kind(
    kind: Option<&str>,
    is_string: impl Fn(&str) -> bool,
    has: impl Fn(&str) -> bool,
) -> Option<BlockKind> {
    match kind? {
        "text" if is_string("text") => Some(BlockKind::Text),
        "tool_use" if is_string("id") && is_string("name") && has("input") => Some(BlockKind::ToolUse),
        "tool_result" if is_string("tool_use_id") => Some(BlockKind::ToolResult),
        _ => None,
    }
}

fn take_string(value: Option<Value>) -> String {
    match value {
        Some(Value::String(text)) => text,
        _ => String::new(),
    }
}

/// A block from its fields.
fn block_from_fields(fields: Fields) -> Result<ContentBlock, String> {
    if !fields.get("type").is_some_and(Value::is_string) {
        return Err("content block without a string \"type\"".into());
    }
    let Some((kind, known)) = known_block(&fields) else {
        return Ok(ContentBlock::Unknown(Value::Object(fields.into_map())));
    };
    let (mut values, extra) = Extra::split(fields, known);
    let mut take = |key: &str| {
        let at = known.iter().position(|name| *name == key)?;
        values[at].take()
    };
    Ok(match kind {
        BlockKind::Text => ContentBlock::Text {
            text: take_string(take("text")),
            extra,
        },
        BlockKind::ToolUse => ContentBlock::ToolUse {
            id: take_string(take("id")),
            name: take_string(take("name")),
            input: take("input").unwrap_or(Value::Null),
            extra,
        },
        BlockKind::ToolResult => ContentBlock::ToolResult {
            tool_use_id: take_string(take("tool_use_id")),
            content: match take("content") {
                Some(content) => match text_or_blocks(content)? {
                    Content::Text(text) => ToolResultContent::Text(text),
                    Content::Blocks(blocks) => ToolResultContent::Blocks(blocks),
                },
                None => ToolResultContent::Text(String::new()),
            },
            is_error: take("is_error").and_then(|flag| flag.as_bool()),
            extra,
        },
    })
}

/// A `content` value already read: a string, or a list of blocks.
fn text_or_blocks(value: Value) -> Result<Content, String> {
    match value {
        Value::String(text) => Ok(Content::Text(text)),
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(object) => block_from_fields(Fields::from_map(object)),
                _ => Err(NOT_AN_OBJECT.into()),
            })
            .collect::<Result<_, _>>()
            .map(Content::Blocks),
        other => Err(neither(&other)),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use serde_json::Value;

    use proptest::test_runner::TestCaseError;

    use crate::message::{Content, ContentBlock, Message};

    /// A value a field may hold: the usual types and the unusual ones.
    fn field_value() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z✓\"\\\\\n]{0,6}".prop_map(|text| serde_json::to_string(&text).unwrap()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            Just("1e-7".to_string()),
            Just("123456789012345678901234567890".to_string()),
            Just("{\"k\":[1,2.50]}".to_string()),
            Just("[{\"type\":\"text\",\"text\":\"x\"}]".to_string()),
            Just("[1]".to_string()),
        ]
    }

    /// A block object as text: a type (known or not), some of the fields a block may
    /// have, with any value, in any order, a key now and then repeated.
    fn block() -> impl Strategy<Value = String> {
        let kind = prop_oneof![
            Just("\"text\""),
            Just("\"tool_use\""),
            Just("\"tool_result\""),
            Just("\"image\""),
            Just("7")
        ];
        let keys = prop::sample::subsequence(
            vec![
                "text",
                "id",
                "name",
                "input",
                "tool_use_id",
                "content",
                "is_error",
                "cache_control",
            ],
            0..8,
        );
        (
            kind,
            keys,
            prop::collection::vec(field_value(), 8),
            any::<prop::sample::Index>(),
            any::<bool>(),
        )
            .prop_map(|(kind, keys, values, place, repeat)| {
                let mut fields: Vec<String> = keys
                    .iter()
                    .zip(&values)
                    .map(|(key, value)| format!("\"{key}\":{value}"))
                    .collect();
                fields.insert(place.index(fields.len() + 1), format!("\"type\":{kind}"));
                if repeat && let Some(first) = keys.first() {
                    fields.push(format!("\"{first}\":\"again\""));
                }
                format!("{{{}}}", fields.join(","))
            })
    }

    fn message() -> impl Strategy<Value = String> {
        let content = prop_oneof![
            field_value(),
            prop::collection::vec(block(), 0..4).prop_map(|blocks| format!("[{}]", blocks.join(","))),
        ];
        (content, any::<bool>(), any::<bool>()).prop_map(|(content, reversed, extra)| {
            let mut fields = vec!["\"role\":\"user\"".to_string(), format!("\"content\":{content}")];
            if reversed {
                fields.reverse();
            }
            if extra {
                fields.insert(1, "\"id\":\"msg_1\"".to_string());
            }
            format!("{{{}}}", fields.join(","))
        })
    }

    proptest! {
        /// Whatever a message holds, reading it and writing it again gives what
        /// serde_json's own map keeps of the text (each key in its first place with
        /// its last value, numbers as written); or both refuse it.
        #[test]
        fn a_message_is_written_back_as_json_keeps_it(text in message()) {
            let oracle: Value = crate::json::from_str(&text).unwrap();
            match crate::json::from_str::<Message>(&text) {
                Ok(message) => prop_assert_eq!(
                    crate::json::to_string(&message).unwrap(),
                    crate::json::to_string(&oracle).unwrap()
                ),
                Err(error) => {
                    // Refused only for what the wire format does not allow.
                    let content = &oracle["content"];
                    let well_formed = content.is_string()
                        || content.as_array().is_some_and(|blocks| {
                            blocks.iter().all(|block| block.get("type").is_some_and(Value::is_string))
                        });
                    prop_assert!(!well_formed, "{text} refused: {error}");
                }
            }
        }
    }

    /// A message's text as it may arrive: as serde_json writes it, or laid out,
    /// escaped or cut in ways it does not write, or broken.
    fn message_text() -> impl Strategy<Value = String> {
        let damage = prop_oneof![
            4 => Just(None),
            1 => (any::<prop::sample::Index>(), prop::sample::select(vec![
                " ", "\n", ",", ":", "\"", "\\", "\\u00e9", "\\/", "\\u0001", "\\u001F", "\u{1}", "{", "}", "[", "]",
                "0", "-", ".", "e", "01", "tru", "null", "\"type\":1,", ":-0", ":1E+5", ":2.50e-3", ":[1e5]",
            ]))
                .prop_map(Some),
            1 => any::<prop::sample::Index>().prop_map(|at| Some((at, ""))),
        ];
        (message(), damage).prop_map(|(text, damage)| match damage {
            None => text,
            Some((at, "")) => {
                let mut text = text;
                let cut = at.index(text.len());
                if text.is_char_boundary(cut) && text.is_char_boundary(cut + 1) {
                    text.remove(cut);
                }
                text
            }
            Some((at, piece)) => {
                let mut text = text;
                let mut place = at.index(text.len() + 1);
                while !text.is_char_boundary(place) {
                    place -= 1;
                }
                text.insert_str(place, piece);
                text
            }
        })
    }

    /// Reading a history keeps messages in their text where it can; whatever it keeps
    /// reads, writes and counts exactly as parsing it at once would, and what it
    /// refuses is refused with the same error.
    fn same_as_parsed_at_once(text: &str) -> Result<(), TestCaseError> {
        use crate::compact::EstimateMode;
        let eager = crate::json::from_str::<Vec<Message>>(text);
        let lazy = crate::message::parse_history(text);
        match (eager, lazy) {
            (Ok(eager), Ok(lazy)) => {
                prop_assert_eq!(lazy.len(), eager.len());
                for (kept, parsed) in lazy.iter().zip(&eager) {
                    let written = crate::json::to_string(parsed).unwrap();
                    if let Some(raw) = kept.raw() {
                        prop_assert_eq!(raw.as_str(), written.as_str(), "kept text is the message's JSON");
                    }
                    for mode in [EstimateMode::Seed, EstimateMode::Compact] {
                        prop_assert_eq!(mode.count_message(kept), mode.count(parsed), "{:?}", mode);
                    }
                    prop_assert_eq!(kept.role(), parsed.role());
                    // Sketched before anything reads its content, so from its text.
                    let describe = crate::compact::receipt::InputDescriber::default();
                    let (mut room, mut parsed_room) = (String::new(), String::new());
                    let (sketch, parsed_sketch) = (kept.sketch(&mut room), parsed.sketch(&mut parsed_room));
                    prop_assert_eq!(&sketch, &parsed_sketch, "its sketch reads what it holds");
                    prop_assert_eq!(
                        crate::compact::receipt::describe_message(&sketch, describe),
                        crate::compact::receipt::describe_message(&parsed_sketch, describe)
                    );
                    prop_assert_eq!(kept.content(), parsed.content());
                    prop_assert_eq!(crate::json::to_string(kept).unwrap(), written);
                }
            }
            (Err(eager), Err(lazy)) => prop_assert_eq!(eager.to_string(), lazy.to_string()),
            (eager, lazy) => prop_assert!(false, "{text}: at once {eager:?}, kept {lazy:?}"),
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn a_history_kept_as_text_is_the_history_parsed(
            messages in prop::collection::vec(message_text(), 0..6),
            spaced in any::<bool>(),
        ) {
            let separator = if spaced { " ,\n " } else { "," };
            same_as_parsed_at_once(&format!("[{}]", messages.join(separator)))?;
        }
    }

    /// Enough messages to be read on several threads, kept and parsed ones mixed, a
    /// bad one last: the error is the one a whole parse gives.
    #[test]
    fn a_long_history_is_read_in_parts_in_order() {
        let messages: Vec<String> = (0..2_500)
            .map(|n| match n % 3 {
                0 => format!(r#"{{"role":"user","content":"request {n}"}}"#),
                1 => format!(r#"{{"role": "assistant", "content": "spaced {n}"}}"#),
                _ => format!(
                    r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{n}","content":"é\n"}}]}}"#
                ),
            })
            .collect();
        let text = format!("[{}]", messages.join(","));
        same_as_parsed_at_once(&text).unwrap();
        let read = crate::message::parse_history(text.as_str()).unwrap();
        assert_eq!(read.iter().filter(|message| message.raw().is_some()).count(), 1_667);
        assert_eq!(read[1_000].text(), "spaced 1000");
        let bad = format!("[{},{{\"role\":\"system\",\"content\":\"x\"}}]", messages.join(","));
        same_as_parsed_at_once(&bad).unwrap();
    }

    /// Kept messages of every depth around the one read without growing the stack,
    /// and far past it, read as parsing them at once does.
    #[test]
    fn kept_messages_read_alike_at_any_depth() {
        std::thread::Builder::new()
            .stack_size(crate::json::WORKER_STACK_BYTES)
            .spawn(|| {
                for depth in [0, 60, 61, 62, 63, 64, 300] {
                    let input = format!(r#"{{"deep":{}1.50{}}}"#, "[".repeat(depth), "]".repeat(depth));
                    let text = format!(
                        r#"[{{"role":"assistant","content":[{{"type":"tool_use","id":"t","name":"bash","input":{input}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":[{{"type":"text","text":"{depth}"}}]}}]}}]"#
                    );
                    let read = crate::message::parse_history(text.as_str()).unwrap();
                    assert!(read.iter().all(|message| message.raw().is_some()), "{depth}: kept");
                    assert_eq!(read[0].raw().map(|raw| raw.shape().depth), Some(depth + 4), "the input nests 4 levels in");
                    same_as_parsed_at_once(&text).unwrap();
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// A byte that is not UTF-8 inside a message refuses the history with the error a
    /// whole parse gives.
    #[test]
    fn a_history_that_is_not_utf8_says_where() {
        let mut bytes = br#"[{"role":"user","content":"caf"#.to_vec();
        bytes.push(0xE9);
        bytes.extend_from_slice(br#""}]"#);
        let lazy = crate::message::parse_history(bytes.clone()).unwrap_err();
        let eager = crate::json::from_slice::<Vec<Message>>(&bytes).unwrap_err();
        assert_eq!(lazy.to_string(), eager.to_string());
        assert!(lazy.to_string().contains("invalid unicode"), "{lazy}");
    }

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_its_last_value() {
        let message: Message = crate::json::from_str(
            r#"{"content":"a","role":"user","content":[{"type":"text","text":"x","type":"text","text":"y"}]}"#,
        )
        .unwrap();
        assert_eq!(
            crate::json::to_string(&message).unwrap(),
            r#"{"content":[{"type":"text","text":"y"}],"role":"user"}"#
        );
        assert!(matches!(message.block_slice(), [ContentBlock::Text { text, .. }] if text == "y"));
    }

    #[test]
    fn what_is_not_a_message_says_why() {
        let error = |text: &str| crate::json::from_str::<Message>(text).unwrap_err().to_string();
        assert!(error(r#""hi""#).contains("expected a message object"));
        assert!(error(r#"{"role":"user","content":[1]}"#).contains("content block is not an object"));
        assert!(error(r#"{"role":"user","content":[{"text":"x"}]}"#).contains("without a string \"type\""));
        assert!(
            error(r#"{"role":"user","content":{"a":1.50}}"#)
                .contains(r#"neither a string nor a list of blocks: {"a":1.50}"#)
        );
        assert!(error(r#"{"role":"user","content":7}"#).contains("neither a string nor a list of blocks: 7"));
        assert!(error(r#"{"role":"system","content":[1]}"#).contains("unknown role \"system\""));
        assert!(error(r#"{"content":"x"}"#).contains("missing field `role`"));
        assert!(error(r#"{"role":"user"}"#).contains("missing field `content`"));
        let read: Message = crate::json::from_str(r#"{"role":"user","content":[]}"#).unwrap();
        assert_eq!(read.content(), &Content::Blocks(Vec::new()));
    }
}
