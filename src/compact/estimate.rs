//! The context estimate: the length in characters of the history serialised as the
//! JSON array the API receives (non-ASCII written as is, not escaped).
//!
//! [`Sizes`] keeps the length of every message so a stage that replaces one block
//! adjusts the total by that block's difference instead of re-serialising everything.

use std::io;

use serde::Serialize;

use crate::message::Message;

/// Characters of `value` as compact JSON, counted without building the string.
pub fn json_chars<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = CharCounter(0);
    // Writing into the counter cannot fail, and our types always serialise.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The estimate of a whole history.
pub fn estimate_chars(messages: &[Message]) -> usize {
    json_chars(messages)
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
    per_message: Vec<usize>,
    sum: usize,
}

impl Sizes {
    pub fn of(messages: &[Message]) -> Self {
        let per_message: Vec<usize> = messages.iter().map(json_chars).collect();
        let sum = per_message.iter().sum();
        Sizes { per_message, sum }
    }

    /// The estimate: `[` + messages joined by `,` + `]`.
    pub fn total(&self) -> usize {
        2 + self.sum + self.per_message.len().saturating_sub(1)
    }

    pub fn message(&self, index: usize) -> usize {
        self.per_message[index]
    }

    /// A block of message `index` went from `old` to `new` characters of JSON.
    pub fn adjust(&mut self, index: usize, old: usize, new: usize) {
        self.per_message[index] = self.per_message[index] + new - old;
        self.sum = self.sum + new - old;
    }

    /// Mirror `messages.splice(range, replacement)`.
    pub fn splice(&mut self, range: std::ops::Range<usize>, replacement: &[Message]) {
        let removed: usize = self.per_message[range.clone()].iter().sum();
        let added: Vec<usize> = replacement.iter().map(json_chars).collect();
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
        assert_eq!(estimate_chars(&messages), json.chars().count());
        assert_eq!(Sizes::of(&messages).total(), json.chars().count());
        assert_eq!(Sizes::of(&[]).total(), 2);
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
                }],
            ),
            Message::assistant_text("b"),
        ];
        let mut sizes = Sizes::of(&messages);
        let ContentBlock::ToolResult { content, .. } = &mut crate::compact::pairing::blocks_mut(&mut messages[1])[0]
        else {
            unreachable!()
        };
        let old = json_chars(content);
        *content = ToolResultContent::Text("short".into());
        sizes.adjust(1, old, json_chars(content));
        assert_eq!(sizes.total(), estimate_chars(&messages));
        let marker = [Message::user_text("[marker]")];
        messages.splice(1..2, marker.clone());
        sizes.splice(1..2, &marker);
        assert_eq!(sizes.total(), estimate_chars(&messages));
    }
}
