//! The loss report of a summary: what the summarised messages mention that the summary
//! does not — file paths, commands that were run, numbers with units, error lines,
//! URLs and identifiers the user named — each with the message it first appears in.
//! Deterministic: the same history and summary give the same report.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::markers::{MessageKind, classify, prefix_chars};
use crate::message::{ContentBlock, Message};

/// The most items a report lists; the rest are counted.
pub const REPORT_LIMIT: usize = 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    Path,
    Command,
    Number,
    Error,
    Url,
    Identifier,
}

impl LossKind {
    pub fn label(self) -> &'static str {
        match self {
            LossKind::Path => "path",
            LossKind::Command => "command",
            LossKind::Number => "number",
            LossKind::Error => "error",
            LossKind::Url => "url",
            LossKind::Identifier => "name",
        }
    }
}

/// One thing the summary left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Missing {
    pub kind: LossKind,
    pub text: String,
    /// 1-based position of the first message that has it, in the summarised span.
    pub position: usize,
}

/// What a summary left out, at most [`REPORT_LIMIT`] of them, and how many in all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LossReport {
    pub missing: Vec<Missing>,
    pub total: usize,
}

static URL: LazyLock<Regex> = LazyLock::new(|| pattern(r#"https?://[^\s<>"'`)\]]+"#));
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:rs|toml|md|py|js|ts|tsx|json|ya?ml|txt|c|h|cpp|go|java|sh|lock|cfg|ini|html|css|sql)\b",
    )
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|minutes|KB|MB|GB|kB|KiB|MiB|GiB|%|tokens|chars|lines|files|tests|bytes)\b",
    )
});
static IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"`([^`\n]{2,60})`|\b([a-z]+_[a-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+)\b")
});

fn pattern(source: &str) -> Regex {
    // The patterns are fixed above; a typo in one is a bug caught by the unit tests.
    Regex::new(source).unwrap_or_else(|error| panic!("loss report pattern {source}: {error}"))
}

/// What `summarised` mentions and `summary` does not.
pub fn report(summarised: &[Message], summary: &str) -> LossReport {
    let mut found: Vec<Missing> = Vec::new();
    let mut note = |kind: LossKind, text: &str, position: usize| {
        let text = text.trim().trim_end_matches(['.', ',', ':', ';']);
        if text.chars().count() < 2 || found.iter().any(|m| m.kind == kind && m.text == text) {
            return;
        }
        found.push(Missing {
            kind,
            text: text.to_string(),
            position,
        });
    };
    for (at, message) in summarised.iter().enumerate() {
        let position = at + 1;
        let user_prompt = match classify(message) {
            MessageKind::UserPrompt(text) => Some(text),
            // Earlier summaries and archive markers were accounted for when written.
            MessageKind::CompactedSummary { .. } | MessageKind::ArchiveMarker { .. } => continue,
            _ => None,
        };
        if let Some(prompt) = &user_prompt {
            for names in IDENTIFIER.captures_iter(prompt) {
                if let Some(name) = names.get(1).or_else(|| names.get(2)) {
                    note(LossKind::Identifier, name.as_str(), position);
                }
            }
        }
        for text in texts(message) {
            for url in URL.find_iter(&text) {
                note(LossKind::Url, url.as_str(), position);
            }
            let without_urls = URL.replace_all(&text, " ");
            for path in PATH.find_iter(&without_urls) {
                note(LossKind::Path, path.as_str(), position);
            }
            for number in NUMBER.find_iter(&text) {
                note(LossKind::Number, number.as_str(), position);
            }
            for line in text.lines().filter(|line| is_error_line(line)) {
                note(LossKind::Error, prefix_chars(line.trim(), 120), position);
            }
        }
        for block in message.block_slice() {
            if let ContentBlock::ToolUse { input, .. } = block
                && let Some(Value::String(command)) = input.get("command")
            {
                note(
                    LossKind::Command,
                    prefix_chars(command.lines().next().unwrap_or(""), 120),
                    position,
                );
            }
        }
    }
    let squeezed = squeeze(summary);
    let missing: Vec<Missing> = found
        .into_iter()
        .filter(|item| !squeezed.contains(&squeeze(&item.text)))
        .collect();
    LossReport {
        total: missing.len(),
        missing: missing.into_iter().take(REPORT_LIMIT).collect(),
    }
}

/// Whitespace removed, so `12 ms` in the history matches `12ms` in the summary and a
/// command matches across a line break.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn is_error_line(line: &str) -> bool {
    let line = line.trim_start();
    ["error", "Error", "ERROR", "panicked", "FAILED", "fatal:"]
        .iter()
        .any(|word| line.starts_with(word) || line.contains(&format!(" {word}")))
}

/// The text a message carries: its own text, tool inputs and tool results.
fn texts(message: &Message) -> Vec<String> {
    let mut out = vec![message.text()];
    for block in message.block_slice() {
        match block {
            ContentBlock::ToolUse {
                input: Value::Object(fields),
                ..
            } => out.extend(fields.values().filter_map(Value::as_str).map(str::to_string)),
            ContentBlock::ToolResult { content, .. } => out.push(content.full_text()),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::Role;

    fn history() -> Vec<Message> {
        vec![
            Message::user_text("Fix `parse_tokens` in the lexer, see https://example.org/issue/7"),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::tool_use("a", "read_file", json!({"path": "src/lexer.rs"})),
                    ContentBlock::tool_use("b", "bash", json!({"command": "cargo test --lib lexer"})),
                ],
            ),
            Message::blocks(
                Role::User,
                vec![
                    ContentBlock::tool_result("a", "fn parse_tokens() {}", false),
                    ContentBlock::tool_result(
                        "b",
                        "running 12 tests\nerror[E0308]: mismatched types\ntest result: FAILED. finished in 3.5 s",
                        true,
                    ),
                ],
            ),
        ]
    }

    fn texts_of(report: &LossReport, kind: LossKind) -> Vec<&str> {
        report
            .missing
            .iter()
            .filter(|m| m.kind == kind)
            .map(|m| m.text.as_str())
            .collect()
    }

    #[test]
    fn finds_what_the_summary_left_out() {
        let report = report(&history(), "Goal: fix the lexer.");
        assert_eq!(texts_of(&report, LossKind::Path), vec!["src/lexer.rs"]);
        assert_eq!(texts_of(&report, LossKind::Command), vec!["cargo test --lib lexer"]);
        assert_eq!(texts_of(&report, LossKind::Url), vec!["https://example.org/issue/7"]);
        assert_eq!(texts_of(&report, LossKind::Identifier), vec!["parse_tokens"]);
        assert_eq!(texts_of(&report, LossKind::Number), vec!["12 tests", "3.5 s"]);
        assert!(texts_of(&report, LossKind::Error).contains(&"error[E0308]: mismatched types"));
        let url = report.missing.iter().find(|m| m.kind == LossKind::Url).unwrap();
        assert_eq!(url.position, 1);
        let command = report.missing.iter().find(|m| m.kind == LossKind::Command).unwrap();
        assert_eq!(command.position, 2);
        assert_eq!(report.total, report.missing.len());
    }

    #[test]
    fn nothing_is_reported_that_the_summary_contains() {
        let summary = "Goal: fix parse_tokens (https://example.org/issue/7) in src/lexer.rs.\n\
            Ran `cargo test --lib lexer`: 12 tests, 3.5s, FAILED with error[E0308]: mismatched types.\n\
            test result: FAILED. finished in 3.5 s";
        let report = report(&history(), summary);
        assert_eq!(report.missing, Vec::new(), "{:?}", report.missing);
        assert_eq!(report.total, 0);
    }
}
