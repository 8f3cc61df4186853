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
            EstimateMode::Compact => crate::json::to_writer(&mut counter, value),
            EstimateMode::Seed => crate::json::to_writer_with(&mut counter, SeedFormatter, value),
        };
        counter.0
    }

    /// Characters of `message` in this mode: from the shape measured when it was read,
    /// when it is still the text it was read from, else by serialising it.
    pub fn count_message(self, message: &Message) -> usize {
        let Some(raw) = message.raw() else {
            return self.count(message);
        };
        let shape = raw.shape();
        match self {
            EstimateMode::Compact => shape.chars,
            EstimateMode::Seed => {
                // Each number as Python prints it instead of as it is written.
                shape
                    .numbers(raw.as_str())
                    .fold(shape.chars + shape.separators, |chars, number| {
                        chars + python_number(number).len() - number.len()
                    })
            }
        }
    }

    /// Characters between two elements of an array.
    pub fn separator(self) -> usize {
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

    /// A number as Python prints it after `json.load`: the history keeps the text it
    /// arrived with (`1e-7`), the seed counts `1e-07`.
    fn write_number_str<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: &str) -> io::Result<()> {
        writer.write_all(python_number(value).as_bytes())
    }
}

/// How Python's `json.dumps(json.loads(text))` prints the JSON number `text`: an
/// integer as its value (any size; `-0` is `0`), anything with a fraction or an
/// exponent as `repr(float)`: the shortest digits that round-trip, positional for
/// decimal exponents from -4 to 15 (with `.0` when integral), else scientific with a
/// signed exponent of at least two digits; out of range, `Infinity`.
pub fn python_number(text: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if !text.contains(['.', 'e', 'E']) {
        let digits = text.trim_start_matches('-');
        return if digits.bytes().all(|b| b == b'0') && text.starts_with('-') {
            Cow::Borrowed("0")
        } else {
            Cow::Borrowed(text)
        };
    }
    let Ok(value) = text.parse::<f64>() else {
        return Cow::Borrowed(text);
    };
    if value.is_infinite() {
        return Cow::Borrowed(if value < 0.0 { "-Infinity" } else { "Infinity" });
    }
    // `{:e}` gives the shortest round-trip digits: `1.5e-7`, `-1e16`, `0e0`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let whole = exponent as usize + 1;
            if digits.len() <= whole {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', whole - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        ));
    }
    Cow::Owned(out)
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

/// Fewer messages than this a thread are counted on one: starting a thread costs
/// about as much as counting a few hundred ordinary messages.
const MESSAGES_PER_THREAD: usize = 1_000;

/// The count of every message. Counting a parsed message costs as much as
/// serialising it, so a long history (a resume, a restored transcript) is counted on
/// every core.
fn count_each(messages: &[Message], mode: EstimateMode) -> Vec<usize> {
    crate::parallel::map(messages.len(), MESSAGES_PER_THREAD, |at| {
        mode.count_message(&messages[at])
    })
}

impl Sizes {
    /// The size of each of `messages`, counted as `mode` says.
    pub fn of(messages: &[Message], mode: EstimateMode) -> Self {
        let per_message = count_each(messages, mode);
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
        let chars = self.mode.count_message(message);
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
        let added: Vec<usize> = replacement.iter().map(|m| self.mode.count_message(m)).collect();
        self.sum = self.sum - removed + added.iter().sum::<usize>();
        self.per_message.splice(range, added);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ContentBlock, Role, ToolResultContent};

    /// `json.dumps(json.loads(text))` for each text, as Python 3.11 printed them.
    #[test]
    fn numbers_are_counted_as_python_prints_them() {
        let python = [
            ("1e-7", "1e-07"),
            ("1E-7", "1e-07"),
            ("0.1", "0.1"),
            ("1.0", "1.0"),
            ("1e16", "1e+16"),
            ("1e15", "1000000000000000.0"),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            ("-0", "0"),
            ("-0.0", "-0.0"),
            ("0", "0"),
            ("1e400", "Infinity"),
            ("-1e400", "-Infinity"),
            ("0.0001", "0.0001"),
            ("0.00001", "1e-05"),
            ("1.5e300", "1.5e+300"),
            ("2.5E+3", "2500.0"),
            ("100", "100"),
            ("1e2", "100.0"),
            ("123.456", "123.456"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("12345678901234567.0", "1.2345678901234568e+16"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("-12.5e-3", "-0.0125"),
        ];
        for (text, printed) in python {
            assert_eq!(python_number(text), printed, "{text}");
        }
    }

    /// Number text is kept byte for byte through a round trip, and the seed's count
    /// is of Python's printing of it.
    #[test]
    fn number_text_is_kept_and_counted_as_the_seed_counts_it() {
        let json = r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"id":123456789012345678901234567890,"eps":1e-7,"n":1.50}}]}]"#;
        let messages: Vec<Message> = serde_json::from_str(json).unwrap();
        assert_eq!(serde_json::to_string(&messages).unwrap(), json);
        let seed = r#"[{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {"id": 123456789012345678901234567890, "eps": 1e-07, "n": 1.5}}]}]"#;
        assert_eq!(estimate_chars(&messages), seed.chars().count());
    }

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

    /// A history long enough to be counted on several threads: every message's count
    /// in its place, as one thread counts it.
    #[test]
    fn a_long_history_counted_in_parts_has_each_count_in_its_place() {
        let history: Vec<Message> = (0..MESSAGES_PER_THREAD * 3 + 7)
            .map(|n| Message::user_text("é".repeat(n % 97)))
            .collect();
        let sizes = Sizes::of(&history, EstimateMode::Seed);
        for (at, message) in history.iter().enumerate() {
            assert_eq!(sizes.of_message(at), EstimateMode::Seed.count(message), "message {at}");
        }
        assert_eq!(sizes.total(), estimate_chars(&history));
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
