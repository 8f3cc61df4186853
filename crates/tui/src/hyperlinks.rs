//! Paths on screen as OSC 8 hyperlinks (`file://` URLs), for terminals that open them
//! on click, besides the app's own click handling.
//!
//! Ratatui's buffer holds plain cells (a cell with an escape sequence would break its
//! width accounting), so the links are written after each frame, over the same
//! characters in the same style: the screen looks the same, and the terminal knows
//! where each path leads. Whether the terminal supports them is detected by
//! `supports-hyperlinks` (`FORCE_HYPERLINK=1` forces them); `ui.hyperlinks = false`
//! turns them off.

use std::io::{self, Write};
use std::path::Path;

use crossterm::cursor::MoveTo;
use crossterm::queue;
use crossterm::style::{PrintStyledContent, StyledContent};
use ratatui::backend::IntoCrossterm;
use ratatui::style::Style;

use crate::terminal_text::screen_safe;

/// A run of cells that shows (part of) a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hyperlink {
    pub row: u16,
    pub x: u16,
    /// The characters shown there, exactly as drawn.
    pub text: String,
    pub style: Style,
    /// The path, relative to the workspace.
    pub path: String,
}

/// Whether to write hyperlinks to this terminal.
pub fn enabled(configured: bool) -> bool {
    configured && supports_hyperlinks::on(supports_hyperlinks::Stream::Stdout)
}

/// `file://` URL of a workspace path; every byte outside the unreserved set and `/` is
/// percent-encoded, so no control character can reach the terminal through it.
pub fn file_url(workspace: &Path, path: &str) -> String {
    let absolute = workspace.join(path);
    let mut url = String::from("file://");
    for byte in absolute.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            url.push(char::from(byte));
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}

/// `text` as an OSC 8 hyperlink to `url`.
pub fn osc8(url: &str, text: &str) -> String {
    format!("\x1b]8;;{url}\x1b\\{}\x1b]8;;\x1b\\", screen_safe(text))
}

/// Write `links` over the frame just drawn, then leave the cursor where it was hidden.
pub fn write_over(out: &mut impl Write, links: &[Hyperlink], workspace: &Path) -> io::Result<()> {
    for link in links {
        let url = file_url(workspace, &link.path);
        queue!(
            out,
            MoveTo(link.x, link.row),
            PrintStyledContent(StyledContent::new(link.style.into_crossterm(), osc8(&url, &link.text)))
        )?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_percent_encoded_and_links_framed() {
        let url = file_url(Path::new("/home/dev/my project"), ".transcripts/a b\x1b.jsonl");
        assert_eq!(url, "file:///home/dev/my%20project/.transcripts/a%20b%1B.jsonl");
        assert_eq!(osc8("file:///x", "x.txt"), "\x1b]8;;file:///x\x1b\\x.txt\x1b]8;;\x1b\\");
    }

    #[test]
    fn the_links_are_written_where_they_are_drawn() {
        let mut out = Vec::new();
        let links = [Hyperlink {
            row: 3,
            x: 7,
            text: ".transcripts/t.jsonl".into(),
            style: Style::default(),
            path: ".transcripts/t.jsonl".into(),
        }];
        write_over(&mut out, &links, Path::new("/w")).unwrap();
        let written = String::from_utf8(out).unwrap();
        assert!(
            written.starts_with("\x1b[4;8H"),
            "move to row 3, column 7 (1-based 4;8): {written:?}"
        );
        assert!(written.contains("\x1b]8;;file:///w/.transcripts/t.jsonl\x1b\\.transcripts/t.jsonl\x1b]8;;\x1b\\"));
    }
}
