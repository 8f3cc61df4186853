//! A message kept as the JSON text it was read from, until something needs its parts.
//!
//! A long recorded history is mostly messages that no stage opens: `compact` archives
//! the middle of a 10,000-message history to a transcript and keeps 49. Such a message
//! is measured, copied into the transcript and described straight from its text; it
//! is parsed only if something reads its content.
//!
//! The text is kept only when it is exactly what our serialiser would write for the
//! message (see [`keep`]), so a message writes the same bytes, and is counted the
//! same, whether or not it was ever parsed.

use std::ops::Range;
use std::sync::Arc;

use crate::message::Role;

/// One message's span of the text it was read from.
#[derive(Clone, Debug)]
pub(crate) struct RawText {
    source: Arc<Vec<u8>>,
    span: Range<usize>,
    shape: Shape,
}

impl RawText {
    /// `text`, which must lie within `source`, kept as its span there.
    pub(super) fn new(source: &Arc<Vec<u8>>, text: &str, shape: Shape) -> Option<Self> {
        let start = (text.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
        let span = start..start + text.len();
        (span.end <= source.len()).then(|| RawText {
            source: Arc::clone(source),
            span,
            shape,
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        // SAFETY: `new` took exactly these bytes of `source` as a `&str`, so they are
        // UTF-8, and `source` is shared read-only, never changed.
        unsafe { std::str::from_utf8_unchecked(&self.source[self.span.clone()]) }
    }

    pub(crate) fn shape(&self) -> &Shape {
        &self.shape
    }
}

/// What counting needs of a message's compact JSON text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Characters of the text.
    pub(crate) chars: usize,
    /// Commas and colons between elements and members (Python's layout puts a space
    /// after each).
    pub(crate) separators: usize,
    /// Byte ranges of the numbers in the text (Python prints some differently).
    pub(crate) numbers: Vec<Range<usize>>,
    /// Byte ranges of the blocks' `content` values (what tool results hold), which a
    /// one-line description of the message does not read.
    pub(crate) contents: Vec<Range<usize>>,
    /// How deep its objects and arrays nest (the message itself is 1).
    pub(crate) depth: usize,
}

impl Shape {
    /// The numbers' text in `text`, the text this shape was taken of.
    pub(crate) fn numbers<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a str> {
        self.numbers.iter().filter_map(|range| text.get(range.clone()))
    }
}

/// Reused between messages, so that scanning one allocates nothing in the usual case.
#[derive(Default)]
pub(super) struct Scratch {
    /// The key spans of every open object, innermost last.
    keys: Vec<Range<usize>>,
    /// Every open container, innermost last.
    open: Vec<Open>,
}

/// An open object or array, and what it is in a message.
struct Open {
    object: bool,
    /// Where its keys start in [`Scratch::keys`].
    keys: usize,
    part: Part,
    /// Where it starts, when it is a block's `content`.
    content: Option<usize>,
}

#[derive(Clone, Copy, PartialEq)]
enum Part {
    Message,
    /// The message's list of blocks.
    Blocks,
    /// A block, and whether it has a string `type` yet.
    Block {
        typed: bool,
    },
    Other,
}

/// A message whose text can be kept as it is.
pub(super) struct Kept {
    pub role: Role,
    pub shape: Shape,
}

/// Where each element of the JSON array `bytes` is, found without parsing them: `None`
/// when the bytes are not an array of values that end (the caller's parser then says
/// why). Strings are skipped a quote at a time, so this reads a long history at about
/// the speed of memory; what the elements hold is for the caller to check.
pub(super) fn elements(bytes: &[u8]) -> Option<Vec<Range<usize>>> {
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    at = skip_whitespace(bytes, at + 1);
    if bytes.get(at) == Some(&b']') {
        return (skip_whitespace(bytes, at + 1) == bytes.len()).then_some(Vec::new());
    }
    elements_from(bytes, at)
}

/// The elements from `at`, where one starts, to the array's end.
fn elements_from(bytes: &[u8], mut at: usize) -> Option<Vec<Range<usize>>> {
    let mut found = Vec::new();
    loop {
        let end = value_end(bytes, at)?;
        found.push(at..end);
        at = skip_whitespace(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = skip_whitespace(bytes, at + 1),
            Some(b']') => return (skip_whitespace(bytes, at + 1) == bytes.len()).then_some(found),
            _ => return None,
        }
    }
}

fn skip_whitespace(bytes: &[u8], from: usize) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .position(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        .map_or(bytes.len(), |length| from + length)
}

/// One past the end of the value starting at `start`, if it ends.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = start;
    loop {
        match *bytes.get(at)? {
            b'"' => at = quote_after(bytes, at + 1)? + 1,
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                at += 1;
            }
            // The end of a scalar at the top.
            b',' if depth == 0 => return Some(at),
            byte if depth == 0 && matches!(byte, b' ' | b'\n' | b'\r' | b'\t') => return Some(at),
            _ => at += 1,
        }
        if depth == 0 && at > start && matches!(bytes[at - 1], b'"' | b'}' | b']') {
            return Some(at);
        }
    }
}

/// The closing quote of the string whose text starts at `from`: the next quote not
/// escaped by an odd run of backslashes.
fn quote_after(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    loop {
        let quote = at + memchr::memchr(b'"', bytes.get(at..)?)?;
        let backslashes = bytes[at..quote].iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(quote);
        }
        at = quote + 1;
    }
}

/// What the scanner expects next.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// A value: after `:`, after `,` in an array, or at the start.
    Value,
    /// A value or `]`: just after `[`.
    ValueOrEnd,
    /// A key: after `,` in an object.
    Key,
    /// A key or `}`: just after `{`.
    KeyOrEnd,
    /// `:` after a key.
    Colon,
    /// `,` or the end of the container, after a value.
    More,
}

/// The role and shape of the message whose text is `text`, when it can be kept as its
/// text. It can when:
/// - it is one valid JSON value (as serde_json reads it);
/// - it is exactly what serde_json writes for what it holds: no whitespace, strings
///   escaped as serde_json escapes them (`\"`, `\\`, `\n`, `\t`, `\r`, `\b`, `\f`,
///   `\u00XX` below 0x20, nothing else), no key repeated within an object and none of
///   serde_json's private keys;
/// - and it has what parsing it requires: a `role` of `"user"` or `"assistant"`, and
///   a `content` that is a string or a list of objects each with a string `type`.
///
/// Such a message parses whenever it is needed. Any other is parsed at once, which
/// says what is wrong with it, if anything.
pub(super) fn keep(text: &str, scratch: &mut Scratch) -> Option<Kept> {
    scratch.keys.clear();
    scratch.open.clear();
    let bytes = text.as_bytes();
    let mut shape = Shape::default();
    let mut found = Found::default();
    let mut expect = Expect::Value;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        let key = matches!(expect, Expect::Key | Expect::KeyOrEnd);
        let value = matches!(expect, Expect::Value | Expect::ValueOrEnd);
        let token = at;
        // What a value beginning here is in the message.
        let (part, mut content) = if value {
            let open = scratch.open.last_mut();
            let key = match &open {
                Some(open) if open.object => scratch.keys.last().map(|key| &bytes[key.clone()]),
                _ => None,
            };
            value_part(open, key, &bytes[at..], &mut found)?
        } else {
            (Part::Other, false)
        };
        match byte {
            b'"' if key || value => {
                let end = string_end(bytes, at)?;
                if key {
                    let first = scratch.open.last().map_or(0, |open| open.keys);
                    let name = &bytes[at..end];
                    if name.starts_with(b"\"$serde_json")
                        || scratch.keys[first..].iter().any(|other| &bytes[other.clone()] == name)
                    {
                        return None;
                    }
                    scratch.keys.push(at..end);
                    expect = Expect::Colon;
                } else {
                    expect = Expect::More;
                }
                at = end;
            }
            b'{' | b'[' if value => {
                scratch.open.push(Open {
                    object: byte == b'{',
                    keys: scratch.keys.len(),
                    part,
                    content: content.then_some(token),
                });
                shape.depth = shape.depth.max(scratch.open.len());
                content = false;
                expect = if byte == b'{' {
                    Expect::KeyOrEnd
                } else {
                    Expect::ValueOrEnd
                };
                at += 1;
            }
            b'}' | b']' => {
                let open = scratch.open.pop()?;
                let fits = if open.object {
                    byte == b'}' && matches!(expect, Expect::KeyOrEnd | Expect::More)
                } else {
                    byte == b']' && matches!(expect, Expect::ValueOrEnd | Expect::More)
                };
                if !fits || open.part == (Part::Block { typed: false }) {
                    return None;
                }
                scratch.keys.truncate(open.keys);
                expect = Expect::More;
                at += 1;
                if let Some(start) = open.content {
                    shape.contents.push(start..at);
                }
            }
            b',' if expect == Expect::More => {
                expect = match scratch.open.last()? {
                    Open { object: true, .. } => Expect::Key,
                    Open { object: false, .. } => Expect::Value,
                };
                shape.separators += 1;
                at += 1;
            }
            b':' if expect == Expect::Colon => {
                expect = Expect::Value;
                shape.separators += 1;
                at += 1;
            }
            b'-' | b'0'..=b'9' if value => {
                let end = number_end(bytes, at)?;
                shape.numbers.push(at..end);
                expect = Expect::More;
                at = end;
            }
            b't' | b'f' | b'n' if value => {
                let literal: &[u8] = match byte {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if !bytes[at..].starts_with(literal) {
                    return None;
                }
                expect = Expect::More;
                at += literal.len();
            }
            // Whitespace (serde_json writes none), or not JSON.
            _ => return None,
        }
        if content {
            shape.contents.push(token..at);
        }
        if scratch.open.is_empty() {
            // One value, and nothing after it.
            let role = found.role.filter(|_| found.has_content && at == bytes.len())?;
            // Escapes are written as they are counted, and outside strings there is
            // nothing but ASCII: the text's characters are its count. A control
            // character is in a string (whitespace was refused), where JSON forbids it.
            let (chars, lowest) = chars_and_lowest(bytes);
            if lowest < 0x20 {
                return None;
            }
            shape.chars = chars;
            return Some(Kept { role, shape });
        }
    }
    None
}

/// What the scan has found of the message so far: its role, and whether it has a
/// `content` that is a string or a list.
#[derive(Default)]
struct Found {
    role: Option<Role>,
    has_content: bool,
}

/// What the value at the start of `value` is in the message, given the container it
/// is in (`open`, none for the message itself) and its `key` there: its part, and
/// whether it is a block's content. `None` when the message cannot be kept: a block
/// that is not an object, or a `type` that is not a string. A role or a content found
/// is noted in `found`.
#[inline]
fn value_part(open: Option<&mut Open>, key: Option<&[u8]>, value: &[u8], found: &mut Found) -> Option<(Part, bool)> {
    let Some(open) = open else {
        return Some((Part::Message, false));
    };
    let first = value.first().copied();
    match (open.part, key) {
        (Part::Message, Some(b"\"role\"")) => {
            found.role = if value.starts_with(b"\"user\"") {
                Some(Role::User)
            } else if value.starts_with(b"\"assistant\"") {
                Some(Role::Assistant)
            } else {
                None
            };
        }
        (Part::Message, Some(b"\"content\"")) => {
            found.has_content = matches!(first, Some(b'"' | b'['));
            return Some((Part::Blocks, false));
        }
        (Part::Blocks, _) => {
            if first != Some(b'{') {
                return None;
            }
            return Some((Part::Block { typed: false }, false));
        }
        (Part::Block { .. }, Some(b"\"content\"")) => return Some((Part::Other, true)),
        (Part::Block { .. }, Some(b"\"type\"")) => {
            if first != Some(b'"') {
                return None;
            }
            open.part = Part::Block { typed: true };
        }
        _ => {}
    }
    Some((Part::Other, false))
}

/// The characters of UTF-8 `bytes` (every byte but a continuation byte starts one),
/// and its lowest byte. Counted a byte-sized tally at a time, which the compiler
/// turns into vector instructions: most of reading a long history is this loop.
fn chars_and_lowest(bytes: &[u8]) -> (usize, u8) {
    let mut chars = 0;
    let mut lowest = u8::MAX;
    for chunk in bytes.chunks(u8::MAX as usize) {
        let mut starts = 0u8;
        let mut low = u8::MAX;
        for &byte in chunk {
            starts += u8::from((byte as i8) >= -0x40);
            low = low.min(byte);
        }
        chars += usize::from(starts);
        lowest = lowest.min(low);
    }
    (chars, lowest)
}

/// The end of the number starting at `start`, if it is one as serde_json writes
/// numbers: `-?(0|[1-9][0-9]*)(\.[0-9]+)?(e[+-][0-9]+)?`.
fn number_end(bytes: &[u8], start: usize) -> Option<usize> {
    let digits = |from: usize| {
        bytes[from.min(bytes.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut at = start + usize::from(bytes[start] == b'-');
    match bytes.get(at)? {
        b'0' => at += 1,
        b'1'..=b'9' => at += digits(at),
        _ => return None,
    }
    if bytes.get(at) == Some(&b'.') {
        let fraction = digits(at + 1);
        if fraction == 0 {
            return None;
        }
        at += 1 + fraction;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        // serde_json writes an exponent as `e` and a sign (`1E7` as `1e+7`).
        if bytes[at] == b'E' || !matches!(bytes.get(at + 1), Some(b'+' | b'-')) {
            return None;
        }
        at += 2;
        let exponent = digits(at);
        if exponent == 0 {
            return None;
        }
        at += exponent;
    }
    Some(at)
}

/// The end (one past the closing quote) of the string opening at `start`, when every
/// escape in it is one serde_json writes.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        let stop = at + memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes[stop] == b'"' {
            return Some(stop + 1);
        }
        at = match bytes.get(stop + 1)? {
            b'"' | b'\\' | b'n' | b't' | b'r' | b'b' | b'f' => stop + 2,
            // Only a control character without a short escape, in lower case.
            b'u' => match bytes.get(stop + 2..stop + 6)? {
                [b'0', b'0', b'0', b'0'..=b'7' | b'b' | b'e' | b'f']
                | [b'0', b'0', b'1', b'0'..=b'9' | b'a'..=b'f'] => stop + 6,
                _ => return None,
            },
            _ => return None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(text: &str) -> Option<Kept> {
        keep(text, &mut Scratch::default())
    }

    /// A message around `input`, a tool call's input.
    fn call(input: &str) -> String {
        format!(r#"{{"role":"assistant","content":[{{"type":"tool_use","id":"t","name":"n","input":{input}}}]}}"#)
    }

    #[test]
    fn an_array_is_split_into_its_elements() {
        let text = " [ {\"a\":\"]\\\"\\\\\"} ,[1, 2],\"x\"\n, 7 ]\n";
        let found = elements(text.as_bytes()).expect("an array");
        let spans: Vec<&str> = found.iter().map(|span| &text[span.clone()]).collect();
        assert_eq!(spans, [r#"{"a":"]\"\\"}"#, "[1, 2]", r#""x""#, "7"]);
        assert_eq!(elements(b" [ ] ").map(|found| found.len()), Some(0));
        for broken in ["", "{}", "[", "[{},", "[{} {}]", "[{}]x", r#"["a]"#, "[}", "[{]]]"] {
            assert!(elements(broken.as_bytes()).is_none(), "{broken}");
        }
    }

    #[test]
    fn compact_text_is_measured() {
        let text = call(r#"{"a":[1,-2.5e-7,true,null],"b":"é✓\n\u001f\"","c":{"a":false}}"#);
        let found = kept(&text).expect("as serde_json writes it").shape;
        assert_eq!(found.chars, text.chars().count());
        assert_eq!(found.separators, text.matches([',', ':']).count());
        assert_eq!(found.numbers(&text).collect::<Vec<_>>(), ["1", "-2.5e-7"]);
    }

    #[test]
    fn text_serde_json_would_write_otherwise_is_not_kept() {
        for input in [
            r#"{"a": 1}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u00e9"}"#,
            r#"{"a":"\u000a"}"#,
            r#"{"a":"\u001F"}"#,
            r#"{"a":"\ud83e\udd80"}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"$serde_json::private::Number":"1"}"#,
        ] {
            assert!(kept(&call(input)).is_none(), "{input}");
        }
        assert!(kept(&format!("{} ", call("{}"))).is_none(), "trailing whitespace");
        // The same key in two objects is no repeat.
        assert!(kept(&call(r#"{"a":{"a":1},"b":[{"a":1}]}"#)).is_some());
    }

    #[test]
    fn what_is_not_json_is_not_kept() {
        for input in [
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "1e+",
            "+1",
            "tru",
            "nul",
            "falsey",
            "[1,]",
            "[,1]",
            "{,}",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a":1,}"#,
            r#"{"a"::1}"#,
            "[1:2]",
            r#"{"a":1]"#,
            "[1}",
            "\"a\u{1}\"",
            r#""\x""#,
            r#""\u12""#,
            "[1 2]",
        ] {
            assert!(kept(&call(input)).is_none(), "{input}");
        }
        // JSON, but serde_json writes these two `1e+5`.
        for input in ["1E+5", "1e5"] {
            assert!(kept(&call(input)).is_none(), "{input}");
        }
        for input in ["0", "-0.5e+10", "1e-5", "[]", "{}", "[[],{}]", r#""""#, "true", "null"] {
            assert!(kept(&call(input)).is_some(), "{input}");
        }
    }

    #[test]
    fn a_message_is_kept_only_with_what_parsing_it_requires() {
        let kept_call = kept(r#"{"role":"assistant","content":[{"type":"text","text":"hi"}],"id":1}"#).expect("kept");
        assert_eq!(kept_call.role, Role::Assistant);
        assert_eq!(kept_call.shape.numbers.len(), 1);
        for text in [
            r#"{"role":"system","content":"x"}"#,
            r#"{"role":"user"}"#,
            r#"{"content":"x"}"#,
            r#"{"role":"user","content":7}"#,
            r#"{"role":"user","content":{"type":"text"}}"#,
            r#"{"role":"user","content":[1]}"#,
            r#"{"role":"user","content":[{"text":"no type"}]}"#,
            r#"{"role":"user","content":[{"type":7}]}"#,
            r#"["role","user"]"#,
            r#""user""#,
            r#"{"role":"user","content":[{"input":{"type":"x"}}]}"#,
        ] {
            assert!(kept(text).is_none(), "{text}");
        }
        assert!(kept(r#"{"role":"user","content":[{"type":"x","content":[{"k":1}]}]}"#).is_some());
    }

    #[test]
    fn how_deep_a_message_nests_is_measured() {
        let depth = |text: &str| kept(text).unwrap_or_else(|| panic!("{text} is kept")).shape.depth;
        assert_eq!(depth(r#"{"role":"user","content":"x"}"#), 1);
        assert_eq!(depth(r#"{"role":"user","content":"x","meta":[]}"#), 2);
        assert_eq!(
            depth(
                r#"{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{"a":[[]]}}],"x":{}}"#
            ),
            6
        );
    }

    /// Where each block's `content` is, for an outline that leaves it out; a nested
    /// block's is inside its parent's.
    #[test]
    fn blocks_contents_are_found() {
        let text = r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x\ny"},{"type":"tool_result","content":[{"type":"text","content":7}],"tool_use_id":"b"},{"type":"odd","content":null}]}"#;
        let shape = kept(text).expect("kept").shape;
        let contents: Vec<&str> = shape.contents.iter().map(|range| &text[range.clone()]).collect();
        assert_eq!(contents, [r#""x\ny""#, r#"[{"type":"text","content":7}]"#, "null"]);
    }
}
