//! A message kept as its text, sketched without parsing it into its parts:
//! snip_compact describes every message it archives, and parsing each (every field a
//! `Value`, every block's unmodelled fields split off) was a quarter of the CPU of
//! compacting a long history. Its text is read with its blocks' contents cut to `""`,
//! so a long tool result is not even skipped; which kind each block is, is decided
//! where reading a message decides it ([`super::super::read`]).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::raw::RawText;
use crate::message::read::{self, BlockKind};
use crate::message::sketch::{SketchBlock, SketchContent};

/// Deepest nesting read here; a deeper message is parsed (its input would be read
/// with a stack that grows).
const DEEPEST: usize = crate::json::SHALLOW_DEPTH;

/// The content of a message kept as `text`, read from a copy of it in `room` with
/// every block's `content` cut to `""`; `None` when it nests deeper than that reads.
pub(in crate::message) fn of_text<'a>(text: &RawText, room: &'a mut String) -> Option<SketchContent<'a>> {
    if text.shape().depth > DEEPEST {
        return None;
    }
    super::without_contents(text, room);
    let mut deserializer = serde_json::Deserializer::from_str(room.as_str());
    let content = deserializer.deserialize_map(MessageSketch).ok()?;
    deserializer.end().ok().map(|()| content)
}

/// A string, borrowed from the text unless it had escapes; or any other value,
/// skipped.
enum Field<'de> {
    Text(Cow<'de, str>),
    Other,
}

impl<'de> Field<'de> {
    fn text(self) -> Option<Cow<'de, str>> {
        match self {
            Field::Text(text) => Some(text),
            Field::Other => None,
        }
    }
}

struct FieldSeed;

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Field<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed {
    type Value = Field<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Field::Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Field::Text(Cow::Owned(text.to_owned())))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Field::Text(Cow::Owned(text)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Field::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Field::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Field::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Field::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Field::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Field::Other)
    }

    /// Also how serde_json hands over a number kept as its text.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Field::Other)
    }
}

/// A message object: its `content`, every other field skipped.
struct MessageSketch;

impl<'de> Visitor<'de> for MessageSketch {
    type Value = SketchContent<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut content = None;
        while let Some(key) = map.next_key_seed(FieldSeed)? {
            match key.text().as_deref() {
                Some("content") => content = Some(map.next_value_seed(ContentSketch)?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        content.ok_or_else(|| de::Error::missing_field("content"))
    }
}

/// A message's content: a string, or a list of blocks.
struct ContentSketch;

impl<'de> DeserializeSeed<'de> for ContentSketch {
    type Value = SketchContent<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentSketch {
    type Value = SketchContent<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a string or a list of content blocks")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(SketchContent::Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(SketchContent::Text(Cow::Owned(text.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1));
        while let Some(block) = seq.next_element_seed(BlockSketch)? {
            blocks.push(block);
        }
        Ok(SketchContent::Blocks(blocks))
    }
}

/// One block, of the kind reading a message would make of it.
struct BlockSketch;

impl<'de> DeserializeSeed<'de> for BlockSketch {
    type Value = SketchBlock<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BlockSketch {
    type Value = SketchBlock<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind = None;
        let mut text = None;
        let mut id = None;
        let mut name = None;
        let mut tool_use_id = None;
        let mut input: Option<&'de RawValue> = None;
        while let Some(key) = map.next_key_seed(FieldSeed)? {
            let slot = match key.text().as_deref() {
                Some("type") => &mut kind,
                Some("text") => &mut text,
                Some("id") => &mut id,
                Some("name") => &mut name,
                Some("tool_use_id") => &mut tool_use_id,
                Some("input") => {
                    input = Some(map.next_value()?);
                    continue;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value_seed(FieldSeed)?);
        }
        let kind = kind.and_then(Field::text);
        // The fields a kind may need, by name; any other is not among them.
        let field = |key: &str| match key {
            "text" => Some(&text),
            "id" => Some(&id),
            "name" => Some(&name),
            "tool_use_id" => Some(&tool_use_id),
            _ => None,
        };
        let decided = read::block_kind(
            kind.as_deref(),
            |key| matches!(field(key), Some(Some(Field::Text(_)))),
            |key| (key == "input" && input.is_some()) || matches!(field(key), Some(Some(_))),
        );
        let string = |field: Option<Field<'de>>| field.and_then(Field::text).unwrap_or_default();
        Ok(match decided {
            Some(BlockKind::Text) => SketchBlock::Text(string(text)),
            Some(BlockKind::ToolUse) => {
                let input = input.map_or(Ok(Value::Null), |input| {
                    crate::json::from_str_of_depth(input.get(), DEEPEST)
                });
                SketchBlock::ToolUse {
                    name: string(name),
                    input: Cow::Owned(input.map_err(de::Error::custom)?),
                }
            }
            Some(BlockKind::ToolResult) => SketchBlock::ToolResult {
                tool_use_id: string(tool_use_id),
            },
            None => SketchBlock::Other,
        })
    }
}
