//! Text from the model or a tool, made safe to show on a terminal: escape sequences
//! (`ESC ]52` clipboard writes, `ESC [2J` clears, window titles) and other control
//! characters are removed whole, newlines and tabs kept. Used by everything that
//! prints such text: the app and `-p`.

use std::borrow::Cow;

/// `text` without escape sequences and control characters (newline and tab stay).
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    let clean = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if text.chars().all(clean) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: a string up to BEL or ESC \.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                // Any other escape is two characters long.
                _ => {}
            },
            // The 8-bit CSI and OSC introducers.
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            c if clean(c) => out.push(c),
            _ => {}
        }
    }
    Cow::Owned(out)
}

/// Text for a cell grid the app draws itself: [`terminal_safe`], and an emoji joined
/// with U+200D (👨‍👩‍👧) shown as its parts. Terminals disagree on how wide a joined
/// sequence is (one glyph of 2 columns, or each part of 2), and a grid that counted
/// it differently from the terminal leaves stale cells beside it; the parts are as
/// wide everywhere. Print mode keeps the text as it is.
pub fn screen_safe(text: &str) -> Cow<'_, str> {
    const JOINER: char = '\u{200d}';
    match terminal_safe(text) {
        safe if !safe.contains(JOINER) => safe,
        safe => Cow::Owned(safe.chars().filter(|&c| c != JOINER).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_emoji_are_shown_as_parts_of_a_width_every_terminal_agrees_on() {
        use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
        let family = "a 👨\u{200d}👩\u{200d}👧 b";
        let shown = screen_safe(family);
        assert_eq!(shown, "a 👨👩👧 b");
        // The grid's width (per grapheme) is the sum of its characters' widths, as a
        // terminal without joined glyphs draws them.
        let per_char: usize = shown.chars().map(|c| c.width().unwrap_or(0)).sum();
        assert_eq!(shown.width(), per_char);
        assert!(matches!(screen_safe("plain ✓"), Cow::Borrowed(_)));
        assert_eq!(screen_safe("x\u{1b}[2Jy"), "xy");
        assert_eq!(terminal_safe(family), family, "print mode keeps the joiner");
    }

    #[test]
    fn sequences_are_removed_whole_and_plain_text_is_kept() {
        assert!(matches!(terminal_safe("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(terminal_safe("a\u{1b}]52;c;aGVsbG8=\u{7}b"), "ab");
        assert_eq!(terminal_safe("x\u{1b}[2Jy\u{1b}[1;31mred\u{1b}[0m"), "xyred");
        assert_eq!(terminal_safe("\u{1b}]0;evil title\u{1b}\\after"), "after");
        assert_eq!(
            terminal_safe("bell\u{7} cr\r del\u{7f} c1\u{9b}31m!"),
            "bell cr del c1!"
        );
        assert_eq!(terminal_safe("ünï ✓ 🦀"), "ünï ✓ 🦀");
    }
}
