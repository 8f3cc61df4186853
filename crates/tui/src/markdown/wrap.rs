//! Wrapping styled text: `textwrap`'s first-fit over words that keep their style.

use super::*;

/// A word of one style, as `textwrap` places it.
#[derive(Debug)]
struct StyledWord<'a> {
    word: Word<'a>,
    style: Style,
}

impl Fragment for StyledWord<'_> {
    fn width(&self) -> f64 {
        self.word.width()
    }

    fn whitespace_width(&self) -> f64 {
        self.word.whitespace_width()
    }

    fn penalty_width(&self) -> f64 {
        self.word.penalty_width()
    }
}

/// Wrap styled segments into lines of at most `width` columns; the first line starts
/// with `first_prefix`, continuation lines with `indent`. Words longer than a line
/// are broken; wide characters count double.
pub fn wrap(
    segments: &[(String, Style)],
    width: usize,
    first_prefix: Span<'static>,
    indent: &str,
) -> Vec<Line<'static>> {
    let width = width.max(4);
    let first_width = width.saturating_sub(first_prefix.content.width()).max(1);
    let rest_width = width.saturating_sub(indent.width()).max(1);
    let mut words: Vec<StyledWord<'_>> = Vec::new();
    for (text, style) in segments {
        // Line breaks inside a segment are the caller's; here they are spaces.
        let found = WordSeparator::AsciiSpace.find_words(text);
        let broken = break_words(found, first_width.min(rest_width));
        words.extend(broken.into_iter().map(|word| StyledWord { word, style: *style }));
    }
    let lines = textwrap::wrap_algorithms::wrap_first_fit(&words, &[first_width as f64, rest_width as f64]);
    let mut out: Vec<Line<'static>> = Vec::with_capacity(lines.len().max(1));
    for (at, line) in lines.iter().enumerate() {
        let prefix = if at == 0 {
            first_prefix.clone()
        } else {
            Span::raw(indent.to_string())
        };
        let mut spans = vec![prefix];
        for (n, piece) in line.iter().enumerate() {
            let last = n + 1 == line.len();
            let mut text = piece.word.word.replace('\n', " ");
            if !last {
                text.push_str(piece.word.whitespace);
            }
            push_merged(&mut spans, text, piece.style);
        }
        out.push(Line::from(spans));
    }
    if out.is_empty() {
        out.push(Line::from(first_prefix));
    }
    out
}

/// A path as segments that wrap only after a `/`, so a folder or file name stays
/// whole on its line. A name wider than `room` (the columns of a continuation line)
/// cannot stay whole: it breaks after its own `_` or `-`, and only a piece wider
/// still is cut where the line ends.
pub fn path_segments(path: &str, style: Style, room: usize) -> Vec<(String, Style)> {
    path.split_inclusive('/')
        .flat_map(|part| {
            if part.width() <= room {
                vec![part]
            } else {
                part.split_inclusive(['_', '-']).collect()
            }
        })
        .map(|piece| (piece.to_string(), style))
        .collect()
}

/// Append `text` in `style`, joining it to the previous span when the style matches.
fn push_merged(spans: &mut Vec<Span<'static>>, text: String, style: Style) {
    // The first span is the line's prefix, never joined.
    let joinable = spans.len() > 1;
    match spans.last_mut() {
        Some(last) if joinable && last.style == style => last.content.to_mut().push_str(&text),
        _ => spans.push(Span::styled(text, style)),
    }
}
