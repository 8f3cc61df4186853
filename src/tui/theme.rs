//! The app's colours: a small vocabulary of roles, described in `styles.md` beside this
//! file. Widgets name a role, never a colour; a test keeps it that way.

use ratatui::style::Color;

/// Primary text and names that must stand out.
pub const TEXT: Color = Color::White;
/// Secondary text: hints, times, sizes, inactive borders.
pub const MUTED: Color = Color::DarkGray;
/// Labels and text of middling importance.
pub const SOFT: Color = Color::Gray;
/// Titles, headings and the focused element.
pub const ACCENT: Color = Color::LightBlue;
/// What needs the eye now: keys to press, a busy state, the warm gauge zone.
pub const ATTENTION: Color = Color::Yellow;
/// Done and well.
pub const SUCCESS: Color = Color::Green;
/// A lighter success, e.g. the provider name.
pub const SUCCESS_BRIGHT: Color = Color::LightGreen;
/// Failed or over the limit.
pub const FAILURE: Color = Color::Red;
/// Errors and refusals that are not fatal; raw tool output in the context map.
pub const FAILURE_SOFT: Color = Color::LightRed;
/// Clickable paths and links.
pub const LINK: Color = Color::LightCyan;
/// Neutral information: tool calls, code.
pub const INFO: Color = Color::Cyan;
/// Compaction: markers in the chat, summaries in the context map.
pub const COMPACTION: Color = Color::LightMagenta;
/// Archive markers and second-level headings.
pub const ARCHIVE: Color = Color::Magenta;
/// References to saved text; deeper headings.
pub const REFERENCE: Color = Color::Blue;
/// Text on a coloured background.
pub const ON_COLOUR: Color = Color::Black;
/// The background of a search match.
pub const MATCH_BACKGROUND: Color = Color::Rgb(60, 60, 0);

/// What a piece of highlighted code is, for its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeRole {
    Plain,
    Keyword,
    Text,
    Comment,
    Constant,
    Function,
    Type,
}

/// The colour of each kind of code, from the roles above.
pub fn code_colour(role: CodeRole) -> Color {
    match role {
        CodeRole::Plain => INFO,
        CodeRole::Keyword => ARCHIVE,
        CodeRole::Text => SUCCESS,
        CodeRole::Comment => MUTED,
        CodeRole::Constant => ATTENTION,
        CodeRole::Function => ACCENT,
        CodeRole::Type => SUCCESS_BRIGHT,
    }
}

#[cfg(test)]
mod tests {
    /// Widgets use the roles above; only this file names colours.
    #[test]
    fn no_widget_names_a_raw_colour() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|name| name == "theme.rs") || path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (at, line) in text.lines().enumerate() {
                assert!(
                    !line.contains("Color::"),
                    "{}:{}: use a role from tui/theme.rs instead of a colour: {line}",
                    path.display(),
                    at + 1
                );
            }
        }
    }
}
