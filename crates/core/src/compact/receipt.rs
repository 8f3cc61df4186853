//! Receipts: each stage lists what it took out of the context or shrank, one line per
//! message or tool result, with its size before and after and where its full text is
//! now. A property test checks a receipt against the difference of the histories.

use super::ReceiptItem;
use super::estimate::Sizes;
use super::markers::{MessageKind, classify_sketch};
use crate::message::{ContentBlock, Message, Role, Sketch, SketchBlock, SketchContent};
use crate::text::{flatten_whitespace, one_line, prefix_chars};

/// How a receipt names a tool call's input in one line. The tools know which field
/// says what a call is about; the core does not, so whoever owns the tools hands one
/// in ([`SessionFacts::describe_input`](super::SessionFacts)).
#[derive(Clone, Copy)]
pub struct InputDescriber(pub fn(&str, &serde_json::Value) -> String);

impl InputDescriber {
    /// Names a call by the first text field of its input (no tool knowledge).
    pub const FIRST_TEXT_FIELD: InputDescriber = InputDescriber(first_text_field);

    /// What a call of tool `name` with `input` is about, in one line.
    pub fn describe(self, name: &str, input: &serde_json::Value) -> String {
        (self.0)(name, input)
    }
}

impl Default for InputDescriber {
    fn default() -> Self {
        InputDescriber::FIRST_TEXT_FIELD
    }
}

impl std::fmt::Debug for InputDescriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InputDescriber")
    }
}

impl PartialEq for InputDescriber {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

/// Without the tools' knowledge: the first text field of the input (tools put what a
/// call is about first), else the input as JSON; one line of at most 120 characters.
pub fn first_text_field(_name: &str, input: &serde_json::Value) -> String {
    let text = input
        .as_object()
        .and_then(|fields| fields.values().find_map(serde_json::Value::as_str))
        .map_or_else(|| input.to_string(), str::to_string);
    prefix_chars(&flatten_whitespace(&text), 120).to_string()
}

/// Fewer messages than this a thread are described on one.
const DESCRIBED_PER_THREAD: usize = 1_000;

/// The longest description of an item.
const WHAT_CHARS: usize = 80;

/// A tool result a stage is shrinking.
pub struct Shrunk {
    /// 0-based index of its message.
    pub message: usize,
    /// What the result was (its call, in a few words).
    pub what: String,
    /// Its characters before.
    pub before: usize,
    /// Its characters after.
    pub after: usize,
    /// Its text before, when that was a preview block rather than the whole output.
    pub was: Option<String>,
}

impl Shrunk {
    /// The receipt's line for it; `saved` is where its full text went.
    pub fn item(self, tool_use_id: &str, saved: Option<String>) -> ReceiptItem {
        ReceiptItem {
            position: self.message + 1,
            role: Role::User,
            what: self.what,
            chars_before: self.before,
            chars_after: self.after,
            saved,
            tool_use_id: Some(tool_use_id.to_string()),
            was: self.was,
        }
    }
}

/// What undo needs of a result's text before a stage shrank it: nothing when it was
/// the whole output (the saved file has it), the text itself when it was a preview.
pub fn was_before(content: &crate::message::ToolResultContent) -> Option<String> {
    match super::markers::classify_result(content) {
        super::markers::ResultKind::Whole => None,
        _ => Some(content.full_text()),
    }
}

/// `read_file src/a.rs (result)`: the call a result answers, found in the messages
/// before `at`, or the bare id when the call is not there.
pub fn describe_result(messages: &[Message], at: usize, tool_use_id: &str, describe: InputDescriber) -> String {
    let call = messages[..at.min(messages.len())].iter().rev().find_map(|message| {
        message.block_slice().iter().find_map(|block| match block {
            ContentBlock::ToolUse { id, name, input, .. } if id == tool_use_id => {
                Some(format!("{name} {}", describe.describe(name, input)))
            }
            _ => None,
        })
    });
    let what = call.unwrap_or_else(|| format!("tool call {tool_use_id}"));
    format!("{} (result)", one_line(&what, WHAT_CHARS - 1))
}

/// One line for a whole message: what kind it is and how it starts.
pub fn describe_message(message: &Sketch<'_>, describe: InputDescriber) -> String {
    // Only the start of a long text matters: it is cut to one short line anyway.
    let start = |text: &str| prefix_chars(text, 2 * WHAT_CHARS).to_string();
    let what = match classify_sketch(message) {
        MessageKind::UserPrompt(text) => format!("request: {}", start(&text)),
        MessageKind::ArchiveMarker { count, path } => format!("archive marker: {count} messages at {path}"),
        MessageKind::CompactedSummary { .. } => "earlier summary".to_string(),
        MessageKind::CutOffNote => "note: calls cut off by max_tokens".to_string(),
        MessageKind::ToolResults => {
            let ids: Vec<&str> = message
                .blocks()
                .iter()
                .filter_map(|block| match block {
                    SketchBlock::ToolResult { tool_use_id } => Some(&**tool_use_id),
                    _ => None,
                })
                .collect();
            format!("tool results for {}", ids.join(", "))
        }
        MessageKind::Assistant => {
            let calls: Vec<String> = message
                .blocks()
                .iter()
                .filter_map(|block| match block {
                    SketchBlock::ToolUse { name, input } => Some(format!("{name} {}", describe.describe(name, input))),
                    _ => None,
                })
                .collect();
            let text = message
                .blocks()
                .iter()
                .find_map(|block| match block {
                    SketchBlock::Text(text) if !text.trim().is_empty() => Some(start(text)),
                    _ => None,
                })
                .or_else(|| match &message.content {
                    SketchContent::Text(text) => Some(start(text)),
                    SketchContent::Blocks(_) => None,
                })
                .unwrap_or_default();
            match (text.trim().is_empty(), calls.is_empty()) {
                (false, true) => format!("answer: {text}"),
                (true, false) => format!("calls {}", calls.join("; ")),
                _ => format!("answer: {text}; calls {}", calls.join("; ")),
            }
        }
    };
    one_line(&what, WHAT_CHARS - 1)
}

/// Every message of `messages[range]` as an item that left the context; where its
/// full text is goes in with [`saved_in`] once the transcript is written.
pub fn left(
    messages: &[Message],
    sizes: &Sizes,
    range: std::ops::Range<usize>,
    describe: InputDescriber,
) -> Vec<ReceiptItem> {
    // A long history's archived middle is described on every core, each message from
    // its sketch: one still in its text is not parsed into its parts.
    crate::parallel::map_with(range.len(), DESCRIBED_PER_THREAD, String::new, |room, offset| {
        let at = range.start + offset;
        ReceiptItem {
            position: at + 1,
            role: messages[at].role(),
            what: describe_message(&messages[at].sketch(room), describe),
            chars_before: sizes.of_message(at),
            chars_after: 0,
            saved: None,
            tool_use_id: None,
            was: None,
        }
    })
}

/// The items' full text is in the transcript `path`.
pub fn saved_in(items: &mut [ReceiptItem], path: &str) {
    for item in items {
        item.saved = Some(path.to_string());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compact::EstimateMode;

    #[test]
    fn items_say_what_left_in_one_line() {
        let messages = vec![
            Message::user_text("fix the\nparser"),
            Message::blocks(
                Role::Assistant,
                vec![ContentBlock::tool_use("t1", "read_file", json!({"path": "src/a.rs"}))],
            ),
            Message::blocks(
                Role::User,
                vec![ContentBlock::tool_result("t1", "x".repeat(300), false)],
            ),
        ];
        let describe = InputDescriber::default();
        assert_eq!(
            describe_result(&messages, 2, "t1", describe),
            "read_file src/a.rs (result)"
        );
        assert_eq!(
            describe_result(&messages, 2, "gone", describe),
            "tool call gone (result)"
        );
        let sizes = Sizes::of(&messages, EstimateMode::Seed);
        let mut items = left(&messages, &sizes, 0..3, describe);
        assert!(items.iter().all(|item| item.saved.is_none()));
        saved_in(&mut items, ".transcripts/t.jsonl");
        assert!(
            items
                .iter()
                .all(|item| item.saved.as_deref() == Some(".transcripts/t.jsonl"))
        );
        assert_eq!(items[0].what, "request: fix the parser");
        assert_eq!(items[1].what, "calls read_file src/a.rs");
        assert_eq!(items[2].what, "tool results for t1");
        assert_eq!(items[2].position, 3);
        assert_eq!(items[2].chars_before, EstimateMode::Seed.count(&messages[2]));
        let long = Message::assistant_text("y".repeat(200));
        assert!(describe_message(&long.sketch(&mut String::new()), describe).ends_with('…'));
        let told = InputDescriber(|_, _| "what the tools say".into());
        assert_eq!(
            describe_result(&messages, 2, "t1", told),
            "read_file what the tools say (result)",
            "the describer handed in decides"
        );
    }
}
