//! A content-aware stand-in for a tokenizer, to weigh parts of a request against each
//! other. Characters per token vary with content: prose packs four or more characters
//! into a token, while digits, punctuation and non-Latin text take one each. A single
//! characters-per-token ratio measured on a whole request is wrong for a part of it
//! whose content differs (a pasted run of spaced digits kept after the prose around it
//! was summarised). Counting *units* (a token-like piece each) and scaling them by the
//! tokens per unit the server measured follows the content instead.

use crate::message::{ContentBlock, Message, ToolResultContent};

/// Letters a unit holds in a run of them (a word of up to four letters is one unit).
const LETTERS_PER_UNIT: usize = 4;

/// Token-like units of `text`: a run of letters one per `LETTERS_PER_UNIT` (rounded
/// up), each digit, each punctuation mark or symbol, each character outside ASCII, and
/// each line break or run of two or more spaces. A single space joins the word after
/// it, not a digit or a mark: tokenizers that split digits one by one (Llama 3,
/// SmolLM2) keep the space between them a token of its own.
pub fn text_units(text: &str) -> usize {
    let mut units = 0;
    let mut letters: usize = 0;
    let mut spaces = 0;
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            units += usize::from(spaces > 1);
            spaces = 0;
            letters += 1;
            continue;
        }
        units += letters.div_ceil(LETTERS_PER_UNIT);
        letters = 0;
        if c == ' ' {
            spaces += 1;
            continue;
        }
        // Spaces before a digit or a mark, or a run of them before anything.
        if spaces > 1 || (spaces > 0 && !c.is_whitespace()) {
            units += 1;
        }
        spaces = 0;
        if !c.is_whitespace() || c == '\n' {
            units += 1;
        }
    }
    units + letters.div_ceil(LETTERS_PER_UNIT) + usize::from(spaces > 1)
}

/// Units of what a message carries to the model: its wrapping, its text, each call's
/// name and input, each result's text.
pub fn message_units(message: &Message) -> usize {
    MESSAGE_UNITS
        + match &message.content() {
            crate::message::Content::Text(text) => text_units(text),
            crate::message::Content::Blocks(blocks) => blocks.iter().map(block_units).sum(),
        }
}

/// What a chat template wraps each message in (`<|im_start|>user\n` … `<|im_end|>`):
/// a few tokens a message, which a compaction of many short messages takes away.
const MESSAGE_UNITS: usize = 4;

fn block_units(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text, .. } => text_units(text),
        ContentBlock::ToolUse { name, input, .. } => text_units(name) + text_units(&input.to_string()),
        ContentBlock::ToolResult { content, .. } => match content {
            ToolResultContent::Text(text) => text_units(text),
            other => text_units(&other.full_text()),
        },
        ContentBlock::Unknown(value) => text_units(&value.to_string()),
    }
}

/// Units of a history.
pub fn history_units(messages: &[Message]) -> usize {
    messages.iter().map(message_units).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_packs_more_characters_into_a_unit_than_digits_do() {
        assert_eq!(text_units("word"), 1);
        assert_eq!(text_units("words"), 2);
        assert_eq!(text_units("the quick fox"), 4, "quick is five letters: two units");
        assert_eq!(text_units("1 2 3 4"), 7, "each digit, and each space before one");
        assert_eq!(text_units("a b"), 2, "a single space joins the next word");
        assert_eq!(text_units("a,b."), 4);
        assert_eq!(text_units("line\nnext"), 3);
        assert_eq!(text_units("x    y"), 3, "a run of spaces is a unit");
        assert_eq!(text_units("ünï"), 3);
        let prose = "The parser drops the last token when the input ends without a newline. ".repeat(20);
        let digits = "4 8 15 16 23 42 ".repeat(60);
        let per_unit = |text: &str| text.chars().count() as f64 / text_units(text) as f64;
        assert!(
            per_unit(&prose) > 2.0 * per_unit(&digits),
            "{} vs {}",
            per_unit(&prose),
            per_unit(&digits)
        );
    }
}
