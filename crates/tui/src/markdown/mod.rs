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

mod highlight;
mod wrap;

use highlight::highlight;
pub use wrap::{path_segments, wrap};

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
        let muted = Style::default().fg(theme::palette().muted);
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
                    HeadingLevel::H1 => theme::palette().archive,
                    HeadingLevel::H2 => theme::palette().accent,
                    _ => theme::palette().reference,
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
                self.push_style(|s| s.fg(theme::palette().link).add_modifier(Modifier::UNDERLINED));
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
                            .push((format!(" ({url})"), Style::default().fg(theme::palette().muted)));
                    }
                }
            }
            _ => {}
        }
    }

    fn code_block(&mut self, language: &str, code: &str) {
        let frame = Style::default().fg(theme::palette().muted);
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
        let muted = Style::default().fg(theme::palette().muted);
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
                    let style = renderer.style().fg(theme::palette().code);
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
                    Style::default().fg(theme::palette().muted),
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
mod tests;
