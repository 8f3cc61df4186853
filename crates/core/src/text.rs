//! Plain-text helpers every layer uses to show a text in little room: the first
//! characters of a text, a text on one line.

/// The first `limit` characters of `text`.
pub fn prefix_chars(text: &str, limit: usize) -> &str {
    // A character takes at least a byte, so a text of at most `limit` bytes is whole
    // and an ASCII start is cut at its byte, without counting characters one by one
    // (a long history's receipt cuts thousands of lines).
    if text.len() <= limit {
        return text;
    }
    if text.as_bytes()[..limit].is_ascii() {
        return &text[..limit];
    }
    match text.char_indices().nth(limit) {
        Some((byte, _)) => &text[..byte],
        None => text,
    }
}

/// `text` on one line: every run of whitespace (newlines included) becomes one space.
pub fn flatten_whitespace(text: &str) -> String {
    if text.is_ascii() && is_flat_ascii(text.as_bytes()) {
        // Most lines a receipt describes are flat already: copied whole, not a word at
        // a time (a long history's receipt flattens tens of thousands).
        return text.to_string();
    }
    let mut flat = String::with_capacity(text.len());
    let mut add = |word: &str| {
        if !flat.is_empty() {
            flat.push(' ');
        }
        flat.push_str(word);
    };
    if text.is_ascii() {
        // Split a byte at a time on what `char::is_whitespace` is in ASCII: decoding
        // each character took most of describing a message.
        let mut word = None;
        for (at, byte) in text.bytes().enumerate() {
            match (matches!(byte, b' ' | b'\t'..=b'\r'), word) {
                (true, Some(start)) => {
                    add(&text[start..at]);
                    word = None;
                }
                (false, None) => word = Some(at),
                _ => {}
            }
        }
        if let Some(start) = word {
            add(&text[start..]);
        }
    } else {
        text.split_whitespace().for_each(add);
    }
    flat
}

/// Whether ASCII `bytes` has no whitespace but single spaces between words. Checked
/// without stopping early, which lets the compiler check many bytes at a time.
fn is_flat_ascii(bytes: &[u8]) -> bool {
    let other_space = bytes
        .iter()
        .fold(false, |found, &byte| found | matches!(byte, b'\t'..=b'\r'));
    let double_space = bytes
        .windows(2)
        .fold(false, |found, pair| found | (pair[0] == b' ' && pair[1] == b' '));
    !other_space && !double_space && bytes.first() != Some(&b' ') && bytes.last() != Some(&b' ')
}

/// `text` flattened to one line, its first `keep` characters followed by `…` when it
/// is longer than that.
pub fn one_line(text: &str, keep: usize) -> String {
    let flat = flatten_whitespace(text);
    if flat.len() > keep && flat.chars().count() > keep {
        format!("{}…", prefix_chars(&flat, keep))
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The short cuts for ASCII give what the definitions by characters give.
        #[test]
        fn flattening_and_cutting_are_by_characters(
            text in "[a \t\n\u{0b}\u{0c}\r\u{1c}\u{1f}é✓\u{a0}\u{2028}\u{3000}]{0,40}",
            limit in 0usize..45,
        ) {
            let words: Vec<&str> = text.split_whitespace().collect();
            prop_assert_eq!(flatten_whitespace(&text), words.join(" "));
            let ascii: String = text.chars().filter(char::is_ascii).collect();
            let words: Vec<&str> = ascii.split_whitespace().collect();
            prop_assert_eq!(flatten_whitespace(&ascii), words.join(" "));
            for text in [&text, &ascii] {
                let by_chars: String = text.chars().take(limit).collect();
                prop_assert_eq!(prefix_chars(text, limit), by_chars.as_str());
                let flat = flatten_whitespace(text);
                let cut = flat.chars().count() > limit;
                prop_assert_eq!(one_line(text, limit).ends_with('…') && !flat.ends_with('…'), cut);
            }
        }
    }

    #[test]
    fn one_line_flattens_and_marks_what_it_cut() {
        assert_eq!(one_line("cargo  test\n --quiet", 20), "cargo test --quiet");
        assert_eq!(one_line("éèê ab", 3), "éèê…");
        assert_eq!(one_line("abc", 3), "abc");
    }

    #[test]
    fn prefix_respects_characters() {
        assert_eq!(prefix_chars("ééé", 2), "éé");
        assert_eq!(prefix_chars("ab", 5), "ab");
    }
}
