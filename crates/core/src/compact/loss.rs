//! The retention report of a summary: of what the summarised record had *from the user
//! and the tools*, how much the `[Compacted]` message keeps (in the summary, the index
//! or the request), kind by kind, and what it does not — names, paths, URLs and numbers the user
//! wrote, commands that were run, errors, paths and numbers the tools reported — each
//! with the message it first appears in, the user's first. The model's own prose is
//! not a source (its words are its own), and neither is what is on disk: a saved
//! output's preview or reference, a path into the archive. Deterministic: the same
//! history and summary give the same report.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::markers::{MessageKind, ResultKind, classify, classify_result};
use crate::message::{ContentBlock, Message};
use crate::store::ARCHIVE_FOLDERS;
use crate::text::prefix_chars;

/// The most items a report lists; the rest are counted.
pub const REPORT_LIMIT: usize = 40;

/// A kind of fact a summary may leave out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// A file or folder path.
    Path,
    /// A command that was run.
    Command,
    /// A figure with a unit or a line number.
    Number,
    /// An error a tool reported.
    Error,
    /// A web address.
    Url,
    /// A name the user wrote in a request (a function, a flag, a crate).
    Identifier,
}

impl LossKind {
    /// The kind counted, as the retention line names it.
    pub fn plural(self) -> &'static str {
        match self {
            LossKind::Path => "paths",
            LossKind::Command => "commands",
            LossKind::Number => "numbers",
            LossKind::Error => "errors",
            LossKind::Url => "urls",
            LossKind::Identifier => "names",
        }
    }

    /// The kind, as one item of a report names it.
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

impl LossKind {
    /// The order a report lists kinds in, after what the user wrote: what failed,
    /// what was run, then where and how much.
    fn rank(self) -> u8 {
        match self {
            LossKind::Identifier => 0,
            LossKind::Error => 1,
            LossKind::Command => 2,
            LossKind::Path => 3,
            LossKind::Url => 4,
            LossKind::Number => 5,
        }
    }
}

/// One thing the summary left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Missing {
    /// Its kind.
    pub kind: LossKind,
    /// The fact as the record has it.
    pub text: String,
    /// 1-based position of the first message that has it, in the summarised record.
    pub position: usize,
    /// Where that message is: `PATH:LINE` in the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The user wrote it (a request): their constraints come first.
    #[serde(default)]
    pub from_user: bool,
}

/// What a summary left out, at most [`REPORT_LIMIT`] of them, how many in all, and of
/// each kind how many the record had and the `[Compacted]` message keeps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LossReport {
    /// What was left out, at most [`REPORT_LIMIT`] of it.
    pub missing: Vec<Missing>,
    /// How many things were left out in all.
    pub total: usize,
    /// Of each kind: how many the record had and how many are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tally: Vec<Tally>,
}

/// Of one kind: how many the record had, and how many are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// The kind.
    pub kind: LossKind,
    /// How many the summarised record had.
    pub found: usize,
    /// How many of those the summary or the index keeps.
    pub kept: usize,
}

impl LossReport {
    /// (kept, found) of everything counted; `None` where nothing was.
    pub fn retained(&self) -> Option<(usize, usize)> {
        let found: usize = self.tally.iter().map(|tally| tally.found).sum();
        let kept: usize = self.tally.iter().map(|tally| tally.kept).sum();
        (found > 0).then_some((kept, found))
    }

    /// `keeps 18/20: paths 6/6, commands 4/5, errors 3/4`; `None` for a report made
    /// before retention was counted, or of a record with nothing to count.
    pub fn retention_line(&self) -> Option<String> {
        let (kept, found) = self.retained()?;
        let kinds: Vec<String> = self
            .tally
            .iter()
            .map(|tally| format!("{} {}/{}", tally.kind.plural(), tally.kept, tally.found))
            .collect();
        Some(format!("keeps {kept}/{found}: {}", kinds.join(", ")))
    }
}

static URL: LazyLock<Regex> = LazyLock::new(|| pattern(r#"https?://[^\s<>"'`)\]]+"#));
static PATH: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|(?-u:\b)[\w-]+\.(?:rs|toml|md|py|js|ts|tsx|json|ya?ml|txt|c|h|cpp|go|java|sh|lock|cfg|ini|html|css|sql)(?-u:\b)",
    )
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?-u:\b)\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|minutes|KB|MB|GB|kB|KiB|MiB|GiB|%|tokens|chars|lines|files|tests|bytes)(?-u:\b)",
    )
});
static IDENTIFIER: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"`([^`\n]{2,60})`|\b([a-z]+_[a-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+)\b")
});

/// Word boundaries in these patterns are ASCII ones (`(?-u:\b)`): a Unicode boundary
/// keeps the regex engine off its fast path, and a record can hold megabytes.
fn pattern(source: &str) -> Regex {
    // The patterns are fixed above; a typo in one is a bug caught by the unit tests.
    Regex::new(source).unwrap_or_else(|error| panic!("loss report pattern {source}: {error}"))
}

/// What `summarised` (the record at `record`, one message a line) had from the user
/// and the tools, and which of it `kept` (the `[Compacted]` message) does not hold.
pub fn report(summarised: &[Message], kept: &str, record: &str) -> LossReport {
    let mut found: Vec<Missing> = Vec::new();
    // What was found, by kind and text: a record holds thousands of them.
    let mut seen: std::collections::HashSet<(LossKind, String)> = std::collections::HashSet::new();
    let mut note = |kind: LossKind, text: &str, position: usize, from_user: bool| {
        let text = text.trim().trim_end_matches(['.', ',', ':', ';']);
        if text.chars().count() < 2 || !seen.insert((kind, text.to_string())) {
            return;
        }
        found.push(Missing {
            kind,
            text: text.to_string(),
            position,
            at: (!record.is_empty()).then(|| format!("{record}:{position}")),
            from_user,
        });
    };
    for (at, message) in summarised.iter().enumerate() {
        let position = at + 1;
        let (texts, from_user) = match classify(message) {
            MessageKind::UserPrompt(prompt) => {
                for names in IDENTIFIER.captures_iter(&prompt) {
                    if let Some(name) = names.get(1).or_else(|| names.get(2)) {
                        note(LossKind::Identifier, name.as_str(), position, true);
                    }
                }
                (vec![prompt], true)
            }
            // Earlier summaries and archive markers were accounted for when written.
            MessageKind::CompactedSummary { .. } | MessageKind::ArchiveMarker { .. } => continue,
            _ => (tool_texts(message), false),
        };
        for text in &texts {
            for url in URL.find_iter(text) {
                note(LossKind::Url, url.as_str(), position, from_user);
            }
            let without_urls = URL.replace_all(text, " ");
            for path in PATH
                .find_iter(&without_urls)
                .filter(|path| plausible_path(path.as_str()))
            {
                note(LossKind::Path, path.as_str(), position, from_user);
            }
            for number in NUMBER.find_iter(text) {
                note(LossKind::Number, number.as_str(), position, from_user);
            }
        }
        for line in error_lines(message) {
            note(LossKind::Error, prefix_chars(&line, 120), position, from_user);
        }
        for block in message.block_slice() {
            if let ContentBlock::ToolUse { input, .. } = block
                && let Some(Value::String(command)) = input.get("command")
            {
                note(
                    LossKind::Command,
                    prefix_chars(command.lines().next().unwrap_or(""), 120),
                    position,
                    false,
                );
            }
        }
    }
    let squeezed = squeeze(kept);
    let mut tally: Vec<Tally> = Vec::new();
    for kind in [
        LossKind::Path,
        LossKind::Command,
        LossKind::Error,
        LossKind::Number,
        LossKind::Url,
        LossKind::Identifier,
    ] {
        let of_kind: Vec<&Missing> = found.iter().filter(|item| item.kind == kind).collect();
        if !of_kind.is_empty() {
            tally.push(Tally {
                kind,
                found: of_kind.len(),
                kept: of_kind
                    .iter()
                    .filter(|item| squeezed.contains(&squeeze(&item.text)))
                    .count(),
            });
        }
    }
    let mut missing: Vec<Missing> = found
        .into_iter()
        .filter(|item| !squeezed.contains(&squeeze(&item.text)))
        .collect();
    // Stable: within a kind, in the order the history had them.
    missing.sort_by_key(|item| (!item.from_user, item.kind.rank()));
    LossReport {
        total: missing.len(),
        missing: missing.into_iter().take(REPORT_LIMIT).collect(),
        tally,
    }
}

/// Whether a match of [`PATH`] names a file or folder: not a path into the archive
/// (on disk, so not lost), not `I/O`, `TCP/IP` or `and/or`, not a date.
fn plausible_path(path: &str) -> bool {
    let relative = path.trim_start_matches("./");
    if ARCHIVE_FOLDERS
        .iter()
        .any(|folder| relative.starts_with(&format!("{folder}/")))
    {
        return false;
    }
    const WORD_PAIRS: [&str; 5] = ["and/or", "either/or", "w/o", "n/a", "i/o"];
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != "." && *part != "..")
        .collect();
    let lettered = parts.iter().all(|part| part.chars().any(char::is_alphabetic));
    let lowercase = parts.iter().any(|part| part.chars().any(char::is_lowercase));
    lettered && lowercase && !WORD_PAIRS.contains(&path.to_lowercase().as_str())
}

/// Whitespace removed, so `12 ms` in the history matches `12ms` in the summary and a
/// command matches across a line break.
fn squeeze(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A line that reports a measured figure (`finished in 3.5 s`, `12 tests`).
pub(crate) fn is_measured_line(line: &str) -> bool {
    NUMBER.is_match(line)
}

/// The lines of `message` that are errors: those that say so in a result that
/// failed (a failed command's output, a build's or a test's diagnostics, a tool's
/// error). A file read or a search that merely contains the word is no error.
pub(crate) fn error_lines(message: &Message) -> impl Iterator<Item = String> + '_ {
    message.block_slice().iter().flat_map(|block| {
        let failed = match block {
            ContentBlock::ToolResult {
                content,
                is_error: Some(true),
                ..
            } => content.full_text(),
            _ => String::new(),
        };
        failed
            .lines()
            .filter(|line| is_error_line(line))
            .map(|line| line.trim().to_string())
            .collect::<Vec<_>>()
    })
}

/// A line that reports an error or a failure.
pub(crate) fn is_error_line(line: &str) -> bool {
    let line = line.trim_start();
    ["error", "Error", "ERROR", "panicked", "FAILED", "fatal:"]
        .iter()
        .any(|word| line.starts_with(word) || line.contains(&format!(" {word}")))
}

/// The text the tools gave and were given in a message: string inputs of its calls
/// and its results, except results whose full text is on disk (a persisted preview, a
/// cleared reference). The model's prose is not among them.
fn tool_texts(message: &Message) -> Vec<String> {
    let mut out = Vec::new();
    for block in message.block_slice() {
        match block {
            ContentBlock::ToolUse {
                input: Value::Object(fields),
                ..
            } => out.extend(fields.values().filter_map(Value::as_str).map(str::to_string)),
            ContentBlock::ToolResult { content, .. } if matches!(classify_result(content), ResultKind::Whole) => {
                out.push(content.full_text())
            }
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
        let report = report(&history(), "Goal: fix the lexer.", "");
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
        let report = report(&history(), summary, "");
        assert_eq!(report.missing, Vec::new(), "{:?}", report.missing);
        assert_eq!(report.total, 0);
    }

    /// The report's sources are the user and the tools: the model's own prose, what
    /// is on disk (saved outputs, references to them, archive paths) and words that
    /// only look like paths are not losses. The user's constraints come first.
    #[test]
    fn the_report_leaves_out_chatter_what_is_on_disk_and_false_paths() {
        use crate::compact::markers::{cleared_reference, persisted_output};
        let saved = ".task_outputs/tool-results/toolu_9.txt";
        let summarised = vec![
            Message::user_text("Keep `max_retries` at 3 and never touch config/prod.toml"),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::text("That output has 27 lines; the I/O and/or TCP/IP layer is in src/chatter.rs."),
                    ContentBlock::tool_use("a", "bash", json!({"command": "cargo build"})),
                    ContentBlock::tool_use("b", "read_file", json!({"path": "src/net.rs"})),
                    ContentBlock::tool_use("c", "read_file", json!({"path": "src/big.rs"})),
                    ContentBlock::tool_use("d", "read_file", json!({"path": "src/old.rs"})),
                ],
            ),
            Message::blocks(
                Role::User,
                vec![
                    ContentBlock::tool_result("a", "error: linker failed after 12 s on 12/05/2026", true),
                    ContentBlock::tool_result("b", "see src/net/tls.rs for the I/O path", false),
                    ContentBlock::tool_result("c", persisted_output(saved, 40_000, "fn big() in src/hidden.rs"), false),
                    ContentBlock::tool_result("d", cleared_reference(".task_outputs/tool-results/toolu_d.txt"), false),
                ],
            ),
        ];
        let found = report(&summarised, "Goal: build.", "");
        let listed: Vec<(LossKind, &str, bool)> = found
            .missing
            .iter()
            .map(|m| (m.kind, m.text.as_str(), m.from_user))
            .collect();
        assert_eq!(
            listed,
            vec![
                (LossKind::Identifier, "max_retries", true),
                (LossKind::Path, "config/prod.toml", true),
                (LossKind::Error, "error: linker failed after 12 s on 12/05/2026", false),
                (LossKind::Command, "cargo build", false),
                (LossKind::Path, "src/net.rs", false),
                (LossKind::Path, "src/big.rs", false),
                (LossKind::Path, "src/old.rs", false),
                (LossKind::Path, "src/net/tls.rs", false),
                (LossKind::Number, "12 s", false),
            ]
        );
    }
}
