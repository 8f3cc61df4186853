//! Markdown as styled, pre-wrapped lines: headings, lists, code blocks, inline code and
//! bold. Wrapping happens here once per message and width (the chat caches it), so
//! the frame only copies visible lines.

use super::theme;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// Wrap styled segments into lines of at most `width` columns; continuation lines
/// start with `indent`.
pub fn wrap(
    segments: &[(String, Style)],
    width: usize,
    first_prefix: Span<'static>,
    indent: &str,
) -> Vec<Line<'static>> {
    let width = width.max(4);
    let mut lines = Vec::new();
    let mut current: Vec<Span<'static>> = vec![first_prefix.clone()];
    let mut used = first_prefix.content.width();
    let indent_width = indent.width();
    let mut push_line = |current: &mut Vec<Span<'static>>, used: &mut usize| {
        lines.push(Line::from(std::mem::take(current)));
        current.push(Span::raw(indent.to_string()));
        *used = indent_width;
    };
    for (text, style) in segments {
        for word in split_keep_spaces(text) {
            let w = word.width();
            if used + w > width && used > indent_width.max(first_prefix.content.width()) {
                if word.trim().is_empty() {
                    continue;
                }
                push_line(&mut current, &mut used);
            }
            if w > width.saturating_sub(used) {
                // A word longer than the line: break it by characters.
                let mut piece = String::new();
                for c in word.chars() {
                    let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                    if used + piece.width() + cw > width && !piece.is_empty() {
                        current.push(Span::styled(std::mem::take(&mut piece), *style));
                        push_line(&mut current, &mut used);
                    }
                    piece.push(c);
                }
                used += piece.width();
                current.push(Span::styled(piece, *style));
            } else {
                used += w;
                current.push(Span::styled(word.to_string(), *style));
            }
        }
    }
    lines.push(Line::from(current));
    lines
}

fn split_keep_spaces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (at, c) in text.char_indices() {
        let space = c == ' ';
        match in_space {
            Some(previous) if previous != space => {
                out.push(&text[start..at]);
                start = at;
            }
            _ => {}
        }
        in_space = Some(space);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Inline `code` and **bold** spans of one line.
fn inline(text: &str, base: Style) -> Vec<(String, Style)> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let code = rest.find('`');
        let bold = rest.find("**");
        match (code, bold) {
            (Some(c), b) if b.is_none_or(|b| c < b) => {
                if let Some(end) = rest[c + 1..].find('`') {
                    out.push((rest[..c].to_string(), base));
                    out.push((rest[c + 1..c + 1 + end].to_string(), base.fg(theme::ATTENTION)));
                    rest = &rest[c + 2 + end..];
                    continue;
                }
                out.push((rest.to_string(), base));
                break;
            }
            (_, Some(b)) => {
                if let Some(end) = rest[b + 2..].find("**") {
                    out.push((rest[..b].to_string(), base));
                    out.push((rest[b + 2..b + 2 + end].to_string(), base.add_modifier(Modifier::BOLD)));
                    rest = &rest[b + 4 + end..];
                    continue;
                }
                out.push((rest.to_string(), base));
                break;
            }
            _ => {
                out.push((rest.to_string(), base));
                break;
            }
        }
    }
    out.retain(|(text, _)| !text.is_empty());
    out
}

pub fn render(text: &str, width: usize, base: Style) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut in_code = false;
    let code_style = Style::default().fg(theme::INFO);
    for raw in text.lines() {
        let trimmed = raw.trim_start();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            let label = trimmed.trim_start_matches('`');
            if in_code && !label.is_empty() {
                lines.push(Line::from(Span::styled(
                    format!("  ┌ {label}"),
                    code_style.add_modifier(Modifier::DIM),
                )));
            }
            continue;
        }
        if in_code {
            lines.extend(wrap(
                &[(raw.to_string(), code_style)],
                width,
                Span::styled("  │ ", code_style.add_modifier(Modifier::DIM)),
                "  │ ",
            ));
            continue;
        }
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            let colour = match hashes {
                1 => theme::ARCHIVE,
                2 => theme::ACCENT,
                _ => theme::REFERENCE,
            };
            let style = base.fg(colour).add_modifier(Modifier::BOLD);
            lines.extend(wrap(&inline(trimmed[hashes..].trim(), style), width, Span::raw(""), ""));
            continue;
        }
        let indent = raw.len() - trimmed.len();
        let pad = " ".repeat(indent.min(8));
        if let Some(item) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .or_else(|| trimmed.strip_prefix("+ "))
        {
            let bullet = format!("{pad}• ");
            let hang = " ".repeat(bullet.width());
            lines.extend(wrap(&inline(item, base), width, Span::raw(bullet), &hang));
            continue;
        }
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && trimmed[digits..].starts_with(". ") {
            let number = format!("{pad}{} ", &trimmed[..digits + 1]);
            let hang = " ".repeat(number.width());
            lines.extend(wrap(
                &inline(&trimmed[digits + 2..], base),
                width,
                Span::raw(number),
                &hang,
            ));
            continue;
        }
        lines.extend(wrap(&inline(raw, base), width, Span::raw(""), ""));
    }
    if lines.is_empty() {
        lines.push(Line::from(""));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_words_lists_and_code() {
        let text = "# Title\nsome words that wrap around\n- item one that wraps\n```rust\nfn main() {}\n```\nuse `x` and **y**";
        let lines = render(text, 16, Style::default());
        assert_eq!(
            plain(&lines),
            vec![
                "Title",
                "some words that ",
                "wrap around",
                "• item one that ",
                "  wraps",
                "  ┌ rust",
                "  │ fn main() {}",
                "use x and y",
            ]
        );
        let span = |text: &str| lines[7].spans.iter().find(|s| s.content == text).unwrap().style;
        assert_eq!(span("x").fg, Some(theme::ATTENTION));
        assert!(span("y").add_modifier.contains(Modifier::BOLD));
        assert_eq!(span("use").fg, None);
    }

    #[test]
    fn long_words_break_and_wide_characters_count_double() {
        let lines = render(&"x".repeat(25), 10, Style::default());
        assert_eq!(plain(&lines), vec!["xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"]);
        let wide = render("日本語の文字です", 6, Style::default());
        assert!(plain(&wide).iter().all(|l| l.width() <= 6));
    }
}
