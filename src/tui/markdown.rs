//! Markdown as styled, pre-wrapped lines, parsed by `pulldown-cmark`: headings,
//! paragraphs, nested lists (bulleted, numbered, tasks), block quotes, tables, rules,
//! links, emphasis, strong, strikethrough, inline code, and fenced code highlighted by
//! `syntect` in the theme's code roles. Wrapping (`textwrap`'s first-fit over styled
//! words) happens here once per message and width (the chat caches it), so the frame
//! only copies visible lines.

use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};
use textwrap::WordSeparator;
use textwrap::core::{Fragment, Word, break_words};
use unicode_width::UnicodeWidthStr;

use super::theme::{self, CodeRole, code_colour};

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

/// A path as segments that wrap between its components (after each `/`, `_` or `-`),
/// never inside a name, so a wrapped link still reads as a path.
pub fn path_segments(path: &str, style: Style) -> Vec<(String, Style)> {
    path.split_inclusive(['/', '_', '-'])
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

/// One level of list nesting: the next number of an ordered list.
struct List {
    next: Option<u64>,
}

/// A table being collected: rows of cells, each a plain string.
#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    header_rows: usize,
}

struct Renderer {
    width: usize,
    base: Style,
    lines: Vec<Line<'static>>,
    /// The inline text of the block being read.
    segments: Vec<(String, Style)>,
    styles: Vec<Style>,
    lists: Vec<List>,
    /// The bullet of the list item whose first line is still to be written.
    pending_bullet: Option<String>,
    quote_depth: usize,
    code: Option<(String, String)>,
    table: Option<Table>,
    link: Option<String>,
    /// A top-level block ended: the next one starts after a blank line.
    gap: bool,
}

impl Renderer {
    /// Separate a new top-level block from the one before it.
    fn open_block(&mut self) {
        self.flush();
        if self.gap && !self.lines.is_empty() {
            self.lines.push(Line::from(""));
        }
        self.gap = false;
    }

    /// A block ended; at the top level (outside lists and quotes) the next is spaced.
    fn close_block(&mut self) {
        self.flush();
        self.gap = self.lists.is_empty() && self.quote_depth == 0;
    }

    fn style(&self) -> Style {
        *self.styles.last().unwrap_or(&self.base)
    }

    fn push_style(&mut self, change: impl Fn(Style) -> Style) {
        let style = change(self.style());
        self.styles.push(style);
    }

    /// The indentation of the current block: quote bars and list nesting.
    fn indent(&self) -> String {
        let mut indent = "│ ".repeat(self.quote_depth);
        indent.push_str(&"  ".repeat(self.lists.len()));
        indent
    }

    /// Write the collected inline text as wrapped lines.
    fn flush(&mut self) {
        if self.segments.iter().all(|(text, _)| text.trim().is_empty()) {
            self.segments.clear();
            return;
        }
        let indent = self.indent();
        let first = match self.pending_bullet.take() {
            Some(bullet) => {
                let outer = indent.chars().count().saturating_sub(2);
                let prefix: String = indent.chars().take(outer).collect();
                format!("{prefix}{bullet}")
            }
            None => indent.clone(),
        };
        let hang = " ".repeat(first.width().max(indent.width()));
        let hang = if self.quote_depth > 0 { indent.clone() } else { hang };
        let segments = std::mem::take(&mut self.segments);
        let muted = Style::default().fg(theme::MUTED);
        self.lines
            .extend(wrap(&segments, self.width, Span::styled(first, muted), &hang));
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
        } else if let Some(table) = &mut self.table {
            if let Some(cell) = table.rows.last_mut().and_then(|row| row.last_mut()) {
                cell.push_str(text);
            }
        } else {
            let style = self.style();
            self.segments.push((text.to_string(), style));
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.open_block(),
            Tag::Heading { level, .. } => {
                self.open_block();
                let colour = match level {
                    HeadingLevel::H1 => theme::ARCHIVE,
                    HeadingLevel::H2 => theme::ACCENT,
                    _ => theme::REFERENCE,
                };
                self.push_style(|s| s.fg(colour).add_modifier(Modifier::BOLD));
            }
            Tag::BlockQuote(_) => {
                self.open_block();
                self.quote_depth += 1;
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.open_block();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((language, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.open_block();
                } else {
                    self.flush();
                }
                self.lists.push(List { next: start });
            }
            Tag::Item => {
                self.flush();
                let bullet = match self.lists.last_mut().and_then(|list| list.next.as_mut()) {
                    Some(n) => {
                        let bullet = format!("{n}. ");
                        *n += 1;
                        bullet
                    }
                    None => "• ".to_string(),
                };
                self.pending_bullet = Some(bullet);
            }
            Tag::Table(_) => {
                self.open_block();
                self.table = Some(Table::default());
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(String::new());
                }
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.push_style(|s| s.fg(theme::LINK).add_modifier(Modifier::UNDERLINED));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.close_block(),
            TagEnd::Heading(_) => {
                self.close_block();
                self.styles.pop();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.styles.pop();
                self.close_block();
            }
            TagEnd::CodeBlock => {
                if let Some((language, code)) = self.code.take() {
                    self.code_block(&language, &code);
                }
                self.close_block();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.close_block();
            }
            TagEnd::Item => self.flush(),
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_lines(&table);
                }
                self.close_block();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                // Show where a link goes unless its text already says it.
                if let Some(url) = self.link.take() {
                    let shown = self.segments.last().is_some_and(|(text, _)| text.contains(&url));
                    if !shown {
                        self.segments
                            .push((format!(" ({url})"), Style::default().fg(theme::MUTED)));
                    }
                }
            }
            _ => {}
        }
    }

    fn code_block(&mut self, language: &str, code: &str) {
        let frame = Style::default().fg(theme::INFO).add_modifier(Modifier::DIM);
        let indent = self.indent();
        if !language.is_empty() {
            self.lines
                .push(Line::from(Span::styled(format!("{indent}  ┌ {language}"), frame)));
        }
        let prefix = format!("{indent}  │ ");
        for line in highlight(language, code) {
            self.lines
                .extend(wrap(&line, self.width, Span::styled(prefix.clone(), frame), &prefix));
        }
    }

    fn table_lines(&mut self, table: &Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (at, cell) in row.iter().enumerate() {
                widths[at] = widths[at].max(cell.width());
            }
        }
        // Shrink the widest columns until the row fits: separators take 3 columns each.
        let indent = self.indent();
        let room = self
            .width
            .saturating_sub(indent.width() + 3 * (columns - 1))
            .max(columns);
        while widths.iter().sum::<usize>() > room {
            let Some(widest) = widths.iter_mut().max() else { break };
            if *widest <= 1 {
                break;
            }
            *widest -= 1;
        }
        let muted = Style::default().fg(theme::MUTED);
        for (at, row) in table.rows.iter().enumerate() {
            let header = at < table.header_rows;
            let style = if header {
                self.base.add_modifier(Modifier::BOLD)
            } else {
                self.base
            };
            let mut spans = vec![Span::raw(indent.clone())];
            for (column, width) in widths.iter().enumerate() {
                if column > 0 {
                    spans.push(Span::styled(" │ ", muted));
                }
                let cell = row.get(column).map_or("", String::as_str);
                spans.push(Span::styled(fit(cell, *width), style));
            }
            self.lines.push(Line::from(spans));
            if header && at + 1 == table.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                self.lines
                    .push(Line::from(Span::styled(format!("{indent}{}", rule.join("─┼─")), muted)));
            }
        }
    }
}

/// `text` cut or padded to exactly `width` columns, with `…` where it was cut.
fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return format!("{text}{}", " ".repeat(width - text.width()));
    }
    let mut out = String::new();
    for c in text.chars() {
        if out.width() + unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) + 1 > width {
            break;
        }
        out.push(c);
    }
    out.push('…');
    let pad = width.saturating_sub(out.width());
    out + &" ".repeat(pad)
}

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The kind of code a scope stack describes, innermost scope first.
fn role_of(stack: &ScopeStack) -> CodeRole {
    static ROLES: OnceLock<Vec<(Scope, CodeRole)>> = OnceLock::new();
    let roles = ROLES.get_or_init(|| {
        [
            ("comment", CodeRole::Comment),
            ("string", CodeRole::Text),
            ("constant", CodeRole::Constant),
            ("keyword", CodeRole::Keyword),
            ("storage", CodeRole::Keyword),
            ("entity.name.function", CodeRole::Function),
            ("support.function", CodeRole::Function),
            ("entity.name.type", CodeRole::Type),
            ("support.type", CodeRole::Type),
        ]
        .into_iter()
        .filter_map(|(name, role)| Scope::new(name).ok().map(|scope| (scope, role)))
        .collect()
    });
    for scope in stack.as_slice().iter().rev() {
        if let Some((_, role)) = roles.iter().find(|(prefix, _)| prefix.is_prefix_of(*scope)) {
            return *role;
        }
    }
    CodeRole::Plain
}

/// The lines of `code` as styled segments, highlighted when the language is known.
fn highlight(language: &str, code: &str) -> Vec<Vec<(String, Style)>> {
    let set = syntaxes();
    let syntax: Option<&SyntaxReference> = (!language.is_empty())
        .then(|| set.find_syntax_by_token(language))
        .flatten();
    let plain = Style::default().fg(code_colour(CodeRole::Plain));
    let Some(syntax) = syntax else {
        return code.lines().map(|line| vec![(line.to_string(), plain)]).collect();
    };
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let Ok(ops) = state.parse_line(line, set) else {
            out.push(vec![(line.trim_end_matches('\n').to_string(), plain)]);
            continue;
        };
        let mut segments = Vec::new();
        // Each op applies to the text of its range.
        for (range, op) in syntect::easy::ScopeRangeIterator::new(&ops, line) {
            // A scope the grammar cannot apply leaves the stack as it was.
            let _ = stack.apply(op);
            let piece = line[range].trim_end_matches('\n');
            if !piece.is_empty() {
                let style = Style::default().fg(code_colour(role_of(&stack)));
                segments.push((piece.to_string(), style));
            }
        }
        out.push(segments);
    }
    out
}

pub fn render(text: &str, width: usize, base: Style) -> Vec<Line<'static>> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer {
        width: width.max(4),
        base,
        lines: Vec::new(),
        segments: Vec::new(),
        styles: vec![base],
        lists: Vec::new(),
        pending_bullet: None,
        quote_depth: 0,
        code: None,
        table: None,
        link: None,
        gap: false,
    };
    for event in Parser::new_ext(text, options) {
        match event {
            Event::Start(tag) => renderer.start(tag),
            Event::End(tag) => renderer.end(tag),
            Event::Text(text) => renderer.text(&text),
            Event::Code(code) => {
                if renderer.table.is_some() {
                    renderer.text(&code);
                } else {
                    let style = renderer.style().fg(theme::ATTENTION);
                    renderer.segments.push((code.to_string(), style));
                }
            }
            Event::SoftBreak => renderer.text(" "),
            Event::HardBreak => renderer.flush(),
            Event::Rule => {
                renderer.open_block();
                let width = renderer.width;
                renderer.lines.push(Line::from(Span::styled(
                    "─".repeat(width),
                    Style::default().fg(theme::MUTED),
                )));
                renderer.close_block();
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "☑ " } else { "☐ " };
                renderer.pending_bullet = Some(mark.to_string());
            }
            Event::Html(html) | Event::InlineHtml(html) => renderer.text(&html),
            _ => {}
        }
    }
    renderer.flush();
    if renderer.lines.is_empty() {
        renderer.lines.push(Line::from(""));
    }
    renderer.lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
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
                "",
                "some words that",
                "wrap around",
                "",
                "• item one that",
                "  wraps",
                "",
                "  ┌ rust",
                "  │ fn main() {}",
                "",
                "use x and y",
            ]
        );
        let span = |text: &str| lines[11].spans.iter().find(|s| s.content.trim() == text).unwrap().style;
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

    #[test]
    fn nested_and_numbered_lists_tasks_quotes_links_and_emphasis() {
        let text = "1. first\n2. second\n   - inner\n- [x] done\n\n> quoted *words*\n\nsee [the docs](https://example.org/docs) and ~~old~~";
        let lines = render(text, 60, Style::default());
        assert_eq!(
            plain(&lines),
            vec![
                "1. first",
                "2. second",
                "  • inner",
                "",
                "☑ done",
                "",
                "│ quoted words",
                "",
                "see the docs (https://example.org/docs) and old",
            ]
        );
        let find = |text: &str| {
            lines
                .iter()
                .flat_map(|l| l.spans.iter())
                .find(|s| s.content.contains(text))
                .unwrap()
                .style
        };
        assert_eq!(find("the docs").fg, Some(theme::LINK));
        assert!(find("words").add_modifier.contains(Modifier::ITALIC));
        assert!(find("old").add_modifier.contains(Modifier::CROSSED_OUT));
    }

    #[test]
    fn a_path_wraps_between_its_parts() {
        let path = ".transcripts/transcript_compact_history_20261202-120000_4242-17.jsonl";
        let lines = wrap(
            &path_segments(path, Style::default()),
            40,
            Span::raw("  1 ↳ "),
            "      ",
        );
        let shown = plain(&lines);
        assert_eq!(shown.concat().replace(' ', "").replace("1↳", ""), path);
        for line in &shown {
            let last = line.trim_end().chars().last().unwrap();
            assert!(
                line == shown.last().unwrap() || ['/', '_', '-'].contains(&last),
                "{shown:?}"
            );
        }
    }

    #[test]
    fn tables_align_their_columns_and_fit_the_width() {
        let text = "| name | size |\n|---|---|\n| a.rs | 12 |\n| a_very_long_file_name.rs | 3 |";
        let lines = render(text, 24, Style::default());
        let shown = plain(&lines);
        assert_eq!(shown[0], format!("name{}│ size", " ".repeat(14)));
        assert!(shown[1].starts_with("─────") && shown[1].contains("┼"));
        assert!(shown[3].contains('…'), "{shown:?}");
        assert!(lines.iter().all(|l| l.width() <= 24), "{shown:?}");
    }

    #[test]
    fn code_is_highlighted_by_kind() {
        let lines = render(
            "```rust\nfn main() { let s = \"hi\"; } // note\n```",
            80,
            Style::default(),
        );
        let colour = |text: &str| {
            lines
                .iter()
                .flat_map(|l| l.spans.iter())
                .find(|s| s.content.contains(text))
                .map(|s| s.style.fg)
                .unwrap()
        };
        assert_eq!(colour("fn"), Some(code_colour(CodeRole::Keyword)));
        assert_eq!(colour("\"hi\""), Some(code_colour(CodeRole::Text)));
        assert_eq!(colour("// note"), Some(code_colour(CodeRole::Comment)));
        // An unknown language is plain code, not an error.
        let plain_code = render("```nosuchlang\nx = 1\n```", 80, Style::default());
        assert_eq!(plain(&plain_code), vec!["  ┌ nosuchlang", "  │ x = 1"]);
    }
}
