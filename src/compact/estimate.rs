//! The context estimate: the length in characters of the history serialised as JSON.
//!
//! By default it is the seed's count, `len(json.dumps(messages, default=str,
//! ensure_ascii=False))`: Python's default separators `", "` and `": "`, non-ASCII
//! written as is. `compaction.estimate = "compact"` counts the compact JSON the API
//! actually receives instead (about 1% less).
//!
//! [`Sizes`] keeps the length of every message so a stage that replaces one block
//! adjusts the total by that block's difference instead of re-serialising everything.

use std::io;

use serde::{Deserialize, Serialize};

use crate::message::Message;

/// How characters are counted; one place decides it for the trigger, the gauge and
/// every stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateMode {
    /// `json.dumps(..., ensure_ascii=False)`: `", "` and `": "` separators.
    #[default]
    Seed,
    /// Compact JSON (`","` and `":"`), as sent on the wire.
    Compact,
}

impl EstimateMode {
    /// Characters of `value` serialised in this mode, counted without building the string.
    pub fn count<T: Serialize + ?Sized>(self, value: &T) -> usize {
        let mut counter = CharCounter(0);
        // Writing into the counter cannot fail, and our types always serialise.
        let _ = match self {
            EstimateMode::Compact => value.serialize(&mut serde_json::Serializer::new(&mut counter)),
            EstimateMode::Seed => {
                value.serialize(&mut serde_json::Serializer::with_formatter(&mut counter, SeedFormatter))
            }
        };
        counter.0
    }

    /// Characters between two elements of an array.
    fn separator(self) -> usize {
        match self {
            EstimateMode::Seed => 2,
            EstimateMode::Compact => 1,
        }
    }
}

/// Python's `json.dumps` layout: compact except for a space after `,` and `:`.
struct SeedFormatter;

impl serde_json::ser::Formatter for SeedFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// Characters of `value` as compact JSON (sizes of wire payloads, not the trigger).
pub fn json_chars<T: Serialize + ?Sized>(value: &T) -> usize {
    EstimateMode::Compact.count(value)
}

/// The seed's estimate of a whole history: `len(json.dumps(messages, ensure_ascii=False))`.
pub fn estimate_chars(messages: &[Message]) -> usize {
    EstimateMode::Seed.count(messages)
}

struct CharCounter(usize);

impl io::Write for CharCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // serde_json writes valid UTF-8: count every byte that starts a character.
        self.0 += buf.iter().filter(|&&b| (b as i8) >= -0x40).count();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Per-message JSON lengths and their array total, kept in step with the history.
#[derive(Clone, Debug, PartialEq)]
pub struct Sizes {
    mode: EstimateMode,
    per_message: Vec<usize>,
    sum: usize,
}

impl Sizes {
    pub fn of(messages: &[Message], mode: EstimateMode) -> Self {
        let per_message: Vec<usize> = messages.iter().map(|m| mode.count(m)).collect();
        let sum = per_message.iter().sum();
        Sizes { mode, per_message, sum }
    }

    /// Characters of message `index` as the estimate counts it.
    pub fn of_message(&self, index: usize) -> usize {
        self.per_message.get(index).copied().unwrap_or(0)
    }

    /// Characters of any part of a message, counted the way this table counts.
    pub fn measure<T: Serialize + ?Sized>(&self, value: &T) -> usize {
        self.mode.count(value)
    }

    /// The estimate: `[` + messages joined by the separator + `]`.
    pub fn total(&self) -> usize {
        2 + self.sum + self.per_message.len().saturating_sub(1) * self.mode.separator()
    }

    /// The total if `messages[..end]` were replaced by one message of no characters:
    /// what is left of the limit is that message's budget.
    pub fn total_with_empty_prefix(&self, end: usize) -> usize {
        let kept = &self.per_message[end.min(self.per_message.len())..];
        2 + kept.iter().sum::<usize>() + kept.len() * self.mode.separator()
    }

    /// A message joined the end of the history.
    pub fn push(&mut self, message: &Message) {
        let chars = self.mode.count(message);
        self.per_message.push(chars);
        self.sum += chars;
    }

    /// A block of message `index` went from `old` to `new` characters of JSON.
    pub fn adjust(&mut self, index: usize, old: usize, new: usize) {
        self.per_message[index] = self.per_message[index] + new - old;
        self.sum = self.sum + new - old;
    }

    /// Mirror `messages.splice(range, replacement)`.
    pub fn splice(&mut self, range: std::ops::Range<usize>, replacement: &[Message]) {
        let removed: usize = self.per_message[range.clone()].iter().sum();
        let added: Vec<usize> = replacement.iter().map(|m| self.mode.count(m)).collect();
        self.sum = self.sum - removed + added.iter().sum::<usize>();
        self.per_message.splice(range, added);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ContentBlock, Role, ToolResultContent};

    #[test]
    fn counts_characters_not_bytes_and_matches_serde() {
        let messages = vec![
            Message::user_text("héllo ✓ 🦀 \"quoted\"\n"),
            Message::assistant_text("ok"),
        ];
        let json = serde_json::to_string(&messages).unwrap();
        assert!(json.contains('🦀'), "non-ASCII is not escaped");
        assert_eq!(json_chars(&messages), json.chars().count());
        assert_eq!(
            Sizes::of(&messages, EstimateMode::Compact).total(),
            json.chars().count()
        );
        assert_eq!(Sizes::of(&[], EstimateMode::Seed).total(), 2);
    }

    #[test]
    fn seed_mode_counts_what_python_json_dumps_counts() {
        // The figure printed by: len(json.dumps(m, default=str, ensure_ascii=False))
        // for this history in CPython 3.11.
        let history: Vec<Message> = serde_json::from_str(
            r#"[{"role":"user","content":"héllo ✓ 🦀 \"q\"\n\t\u0001\u2028"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls","n":[1,2],"ok":true,"none":null}}]}]"#,
        )
        .unwrap();
        assert_eq!(estimate_chars(&history), 212);
        assert_eq!(EstimateMode::Seed.count(&history), 212);
        // Compact JSON drops one character per structural comma and colon.
        assert_eq!(json_chars(&history), 212 - 10 - 12);
        let mut sizes = Sizes::of(&history[..1], EstimateMode::Seed);
        sizes.push(&history[1]);
        assert_eq!(sizes.total(), 212);
    }

    #[test]
    fn adjust_and_splice_track_the_real_total() {
        let mut messages = vec![
            Message::user_text("a"),
            Message::blocks(
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_use_id: "t".into(),
                    content: ToolResultContent::Text("x".repeat(500)),
                    is_error: None,
                    extra: Default::default(),
                }],
            ),
            Message::assistant_text("b"),
        ];
        let mut sizes = Sizes::of(&messages, EstimateMode::Seed);
        let ContentBlock::ToolResult { content, .. } = &mut crate::compact::pairing::blocks_mut(&mut messages[1])[0]
        else {
            unreachable!()
        };
        let old = EstimateMode::Seed.count(content);
        *content = ToolResultContent::Text("short".into());
        sizes.adjust(1, old, sizes.measure(content));
        assert_eq!(sizes.total(), estimate_chars(&messages));
        let marker = [Message::user_text("[marker]")];
        messages.splice(1..2, marker.clone());
        sizes.splice(1..2, &marker);
        assert_eq!(sizes.total(), estimate_chars(&messages));
    }
}
