//! The index a `[Compacted]` message carries after the summary: what the summarised
//! record holds that a model's summary most often drops (what the user asked and ruled
//! out, errors, files changed, written and read, commands and how they ended, measured
//! figures), each with the line of the record it is on. scratchpad builds it from the
//! record itself, so it is the same whatever the model writes. It is bounded (the
//! least valuable entries are cut first, and the cut is said) and carried forward: a
//! later summary of a history that starts with this one merges it into its own.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::loss::{error_lines, is_error_line, is_measured_line};
use super::markers::{MessageKind, classify};
use super::record::Pointer;
use crate::message::{ContentBlock, Message};
use crate::text::{one_line, prefix_chars};

/// The index's first line. The summary is the model's text and comes before it, so
/// the last line like this in a `[Compacted]` message is ours.
pub const INDEX_HEADING: &str = "Index kept by scratchpad from the record (each entry's message: `recall` PATH:LINE):";
const GROUP_PREFIX: &str = "In ";
/// Longest quote of one entry.
const QUOTE_CHARS: usize = 200;

/// What an entry records, in the order the index lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum EntryKind {
    /// A request the user wrote.
    Asked,
    /// A sentence of a request that rules something in or out.
    Constraint,
    /// A tool call that failed, or a failed command's diagnostic.
    Error,
    /// A file edited.
    Changed,
    /// A file written whole.
    Wrote,
    /// A command, and how it ended.
    Ran,
    /// A figure a tool measured.
    Measured,
    /// A file or a listing read.
    Read,
}

impl EntryKind {
    /// How the entry starts in the index (`asked`, `ran`, …).
    pub fn label(self) -> &'static str {
        self.into()
    }

    /// What is cut last: the user's words and what failed (cut only where nothing
    /// else is left), then what changed, what ran, what was measured. Reads are folded
    /// into one line a record before anything is cut, and that line goes first.
    fn value(self) -> u8 {
        match self {
            EntryKind::Asked | EntryKind::Constraint => 7,
            EntryKind::Error => 6,
            EntryKind::Changed | EntryKind::Wrote => 5,
            EntryKind::Ran => 4,
            EntryKind::Measured => 2,
            EntryKind::Read => 1,
        }
    }
}

/// One line of the index: what happened, in a few words, and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What kind of thing happened.
    pub kind: EntryKind,
    /// What it was, in a few words.
    pub text: String,
    /// Where the whole of it is in the record.
    pub at: Pointer,
}

/// The entries, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Index {
    /// The entries, oldest first.
    pub entries: Vec<Entry>,
}

/// A sentence that rules something in or out.
static CONSTRAINT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(do not|don't|never|must|always|avoid|should not|shouldn't|instead of|only|keep|make sure)\b")
        .unwrap_or_else(|error| panic!("constraint pattern: {error}"))
});

impl Index {
    /// The index of `record`, written to `record_path` one message a line; an index
    /// the record's first message (an earlier summary) carries comes first.
    pub fn build(record: &[Message], record_path: &str) -> Index {
        let mut index = super::markers::summary_at(record)
            .and_then(|at| Index::parse(&record[at].text()))
            .unwrap_or_default();
        for (at, message) in record.iter().enumerate() {
            let at = Pointer {
                path: record_path.to_string(),
                line: at + 1,
            };
            match classify(message) {
                MessageKind::UserPrompt(prompt) => index.note_request(&prompt, &at),
                MessageKind::Assistant => {
                    for block in message.block_slice() {
                        if let ContentBlock::ToolUse { id, name, input, .. } = block {
                            index.note_call(name, input, outcome(&record[at.line..], id), &at);
                        }
                    }
                }
                MessageKind::ToolResults => {
                    for line in error_lines(message) {
                        index.note(EntryKind::Error, &line, &at);
                    }
                    for block in message.block_slice() {
                        if let ContentBlock::ToolResult { content, .. } = block {
                            for line in content.full_text().lines() {
                                if is_measured_line(line) && !is_error_line(line) {
                                    index.note(EntryKind::Measured, line.trim(), &at);
                                }
                            }
                        }
                    }
                }
                MessageKind::CompactedSummary { .. } | MessageKind::ArchiveMarker { .. } | MessageKind::CutOffNote => {}
            }
        }
        index.newest_only();
        index
    }

    fn note_request(&mut self, prompt: &str, at: &Pointer) {
        let flat = crate::text::flatten_whitespace(prompt);
        if flat.is_empty() {
            return;
        }
        self.note(EntryKind::Asked, &flat, at);
        if flat.chars().count() > QUOTE_CHARS {
            for sentence in sentences(&flat) {
                if CONSTRAINT.is_match(sentence) {
                    self.note(EntryKind::Constraint, sentence.trim(), at);
                }
            }
        }
    }

    /// A call by what its input says: a `command` is run; a `path` is changed by a
    /// tool whose name says edit, written by one that says write or create, and read
    /// by any other. Tools are named by whoever offers them, so only their words count.
    fn note_call(&mut self, name: &str, input: &Value, outcome: Option<Outcome>, at: &Pointer) {
        if let Some(command) = input.get("command").and_then(Value::as_str) {
            let command = one_line(command.lines().next().unwrap_or(""), 160);
            let ended = match outcome {
                Some(Outcome::Failed(Some(code))) => format!(" · failed, exit code {code}"),
                Some(Outcome::Failed(None)) => " · failed".to_string(),
                Some(Outcome::Ok) => " · ok".to_string(),
                None => String::new(),
            };
            self.note(EntryKind::Ran, &format!("{command}{ended}"), at);
            return;
        }
        let Some(path) = ["path", "file_path"]
            .iter()
            .find_map(|key| input.get(key).and_then(Value::as_str))
        else {
            return;
        };
        let name = name.to_lowercase();
        let kind = if name.contains("edit") {
            EntryKind::Changed
        } else if name.contains("write") || name.contains("create") {
            EntryKind::Wrote
        } else {
            EntryKind::Read
        };
        self.note(kind, path, at);
    }

    /// One entry; an equal one noted before gives way to it, in [`Index::newest_only`]
    /// (the newer place is where it last happened).
    fn note(&mut self, kind: EntryKind, text: &str, at: &Pointer) {
        let text = one_line(text, QUOTE_CHARS);
        if text.chars().count() < 2 {
            return;
        }
        self.entries.push(Entry {
            kind,
            text,
            at: at.clone(),
        });
    }

    /// Of equal entries, the newest alone, in the order of the ones kept: a record
    /// notes thousands, so this is one pass rather than a search at each. A command
    /// run again is one entry: the newest run, with how often it ran (`cargo test ·
    /// failed, exit code 101 · 3 runs`).
    fn newest_only(&mut self) {
        let mut seen = std::collections::HashSet::new();
        let mut runs: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        let mut kept: Vec<Entry> = std::mem::take(&mut self.entries)
            .into_iter()
            .rev()
            .filter(|entry| {
                if entry.kind != EntryKind::Ran {
                    return seen.insert((entry.kind, entry.text.clone()));
                }
                let run = Run::of(&entry.text);
                let first = !runs.contains_key(run.command);
                *runs.entry(run.command.to_string()).or_default() += run.times;
                first
            })
            .collect();
        kept.reverse();
        for entry in kept.iter_mut().filter(|entry| entry.kind == EntryKind::Ran) {
            let run = Run::of(&entry.text);
            let times = runs.get(run.command).copied().unwrap_or(1);
            entry.text = run.with_times(times);
        }
        self.entries = kept;
    }

    /// The index as the `[Compacted]` message carries it, as much as `fits`. Folded
    /// before anything is cut: the files read become one line a record (how many,
    /// the lines they are on, their folders). Then cut, least valuable first and the
    /// oldest of them first: that line, measured figures, commands, edits; the user's
    /// words and failures last. The cut is said. Always at least the heading when it
    /// fits, so that the last heading in the message is ours.
    pub fn render(&self, fits: impl Fn(&str) -> bool) -> Rendered {
        let all: Vec<&Entry> = self.entries.iter().collect();
        let text = layout(&all, &[], false);
        if fits(&text) {
            return Rendered { text, cut: 0 };
        }
        let text = layout(&all, &[], true);
        if fits(&text) {
            return Rendered { text, cut: 0 };
        }
        // Reads gone (the folded line with them), then the rest least valuable first;
        // how many to cut is found by halving (a record can hold thousands).
        let reads: Vec<usize> = (0..self.entries.len())
            .filter(|&at| self.entries[at].kind == EntryKind::Read)
            .collect();
        let mut by_value: Vec<usize> = (0..self.entries.len())
            .filter(|&at| self.entries[at].kind != EntryKind::Read)
            .collect();
        by_value.sort_by_key(|&at| (self.entries[at].kind.value(), self.entries[at].at.line));
        let with_cut = |count: usize| {
            let cut: std::collections::HashSet<usize> = reads.iter().chain(&by_value[..count]).copied().collect();
            let kept: Vec<&Entry> = (0..self.entries.len())
                .filter(|at| !cut.contains(at))
                .map(|at| &self.entries[at])
                .collect();
            let kinds: Vec<EntryKind> = reads
                .iter()
                .chain(&by_value[..count])
                .map(|&at| self.entries[at].kind)
                .collect();
            layout(&kept, &kinds, false)
        };
        let (mut low, mut high) = (0, by_value.len());
        if !fits(&with_cut(high)) {
            return Rendered {
                text: String::new(),
                cut: self.entries.len(),
            };
        }
        while low < high {
            let middle = (low + high) / 2;
            if fits(&with_cut(middle)) {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        Rendered {
            text: with_cut(high),
            cut: reads.len() + high,
        }
    }

    /// The index a `[Compacted]` message's text carries, if any.
    pub fn parse(text: &str) -> Option<Index> {
        let start = text.rfind(INDEX_HEADING)?;
        let mut index = Index::default();
        let mut path = None;
        for line in text[start + INDEX_HEADING.len()..].lines() {
            if let Some(group) = line.strip_prefix(GROUP_PREFIX).and_then(|rest| rest.strip_suffix(':')) {
                path = Some(group.to_string());
                continue;
            }
            let (Some(path), Some(entry)) = (&path, line.strip_prefix("- ")) else {
                continue;
            };
            let Some((kind, rest)) = entry.split_once(" (line ") else {
                continue;
            };
            let Some((line, text)) = rest.split_once("): ") else {
                continue;
            };
            let (Ok(kind), Ok(line)) = (kind.parse::<EntryKind>(), line.parse::<usize>()) else {
                continue;
            };
            index.entries.push(Entry {
                kind,
                text: text.to_string(),
                at: Pointer {
                    path: path.clone(),
                    line,
                },
            });
        }
        Some(index)
    }
}

/// The sentences of `text`: each ends at `.`, `!`, `?` or `;` before a space (so a
/// path's dot does not end one).
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut bounds: Vec<&str> = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next_is_space = chars.peek().is_none_or(|(_, next)| next.is_whitespace());
        if matches!(c, '.' | '!' | '?' | ';') && next_is_space {
            bounds.push(&text[start..at + c.len_utf8()]);
            start = at + c.len_utf8();
        }
    }
    if start < text.len() {
        bounds.push(&text[start..]);
    }
    bounds.into_iter()
}

/// The index as text: grouped by record (in the order they first appear), each
/// group's entries by kind, then by line.
/// The index of `kept` grouped by record, with `cut` said at the end; with
/// `fold_reads`, the files read of each record are one line (how many, the lines of
/// the record they are on, their folders), which [`Index::parse`] leaves out.
fn layout(kept: &[&Entry], cut: &[EntryKind], fold_reads: bool) -> String {
    let mut text = INDEX_HEADING.to_string();
    let mut paths: Vec<&str> = Vec::new();
    for entry in kept {
        if !paths.contains(&entry.at.path.as_str()) {
            paths.push(&entry.at.path);
        }
    }
    for path in paths {
        text.push_str(&format!("\n{GROUP_PREFIX}{path}:"));
        let mut group: Vec<&&Entry> = kept.iter().filter(|entry| entry.at.path == path).collect();
        group.sort_by_key(|entry| (entry.kind, entry.at.line));
        let (reads, others): (Vec<&&Entry>, Vec<&&Entry>) = group
            .into_iter()
            .partition(|entry| fold_reads && entry.kind == EntryKind::Read);
        for entry in others {
            text.push_str(&format!(
                "\n- {} (line {}): {}",
                entry.kind.label(),
                entry.at.line,
                entry.text
            ));
        }
        if let Some(folded) = folded_reads(&reads) {
            text.push_str(&folded);
        }
    }
    if kept.is_empty() && cut.is_empty() {
        text.push_str("\n(nothing to index)");
    }
    if !cut.is_empty() {
        let mut counts: Vec<(EntryKind, usize)> = Vec::new();
        for kind in cut {
            match counts.iter_mut().find(|(seen, _)| seen == kind) {
                Some((_, n)) => *n += 1,
                None => counts.push((*kind, 1)),
            }
        }
        let said: Vec<String> = counts.iter().map(|(kind, n)| format!("{n} {}", kind.label())).collect();
        text.push_str(&format!("\n[cut to fit: {}; each is in its record]", said.join(", ")));
    }
    text
}

/// The files read of one record as one line: `- read (lines 3–118): 33 files in
/// src/, tests/`.
fn folded_reads(reads: &[&&Entry]) -> Option<String> {
    let first = reads.iter().map(|entry| entry.at.line).min()?;
    let last = reads.iter().map(|entry| entry.at.line).max()?;
    let mut folders: Vec<&str> = Vec::new();
    for entry in reads {
        let folder = entry.text.rsplit_once('/').map_or(".", |(folder, _)| folder);
        if !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    let shown: Vec<String> = folders.iter().take(4).map(|folder| format!("{folder}/")).collect();
    let more = if folders.len() > 4 { ", …" } else { "" };
    Some(format!(
        "\n- read (lines {first}–{last}): {} in {}{more}",
        super::counted(reads.len(), "file", "files"),
        shown.join(", ")
    ))
}

/// A command entry's parts: `cargo test · failed, exit code 101 · 3 runs` (the
/// command first, as the record has it, so its pointer still says what it says).
struct Run<'a> {
    command: &'a str,
    times: usize,
    ended: Option<&'a str>,
}

impl<'a> Run<'a> {
    fn of(text: &'a str) -> Self {
        let counted = text
            .strip_suffix(" runs")
            .and_then(|rest| rest.rsplit_once(" · "))
            .and_then(|(body, times)| Some((body, times.parse::<usize>().ok()?)));
        let (body, times) = counted.unwrap_or((text, 1));
        let (command, ended) = match body.split_once(" · ") {
            Some((command, ended)) => (command, Some(ended)),
            None => (body, None),
        };
        Run { command, times, ended }
    }

    fn with_times(&self, times: usize) -> String {
        let times = if times > 1 {
            format!(" · {times} runs")
        } else {
            String::new()
        };
        match self.ended {
            Some(ended) => format!("{} · {ended}{times}", self.command),
            None => format!("{}{times}", self.command),
        }
    }
}

/// The index as text and how many entries it had to leave out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// The index's lines.
    pub text: String,
    /// How many entries did not fit.
    pub cut: usize,
}

enum Outcome {
    Ok,
    /// Failed, with the exit code when the result says one.
    Failed(Option<i64>),
}

/// How call `id` ended: its result among the messages after the call.
fn outcome(after: &[Message], id: &str) -> Option<Outcome> {
    after.iter().take(3).find_map(|message| {
        message.block_slice().iter().find_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } if tool_use_id == id => Some(if *is_error == Some(true) {
                let text = content.full_text();
                let code = text
                    .rsplit_once("[exit code ")
                    .and_then(|(_, rest)| prefix_chars(rest, 12).split(']').next()?.parse().ok());
                Outcome::Failed(code)
            } else {
                Outcome::Ok
            }),
            _ => None,
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compact::markers::compacted_text;
    use crate::message::Role;

    fn record() -> Vec<Message> {
        vec![
            Message::user_text(format!(
                "Make the lexer stream its tokens. {} Do not touch config/prod.toml. Keep MAX_DEPTH at 64.",
                "Some background. ".repeat(12)
            )),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::tool_use("a", "read_file", json!({"path": "src/lexer.rs"})),
                    ContentBlock::tool_use("b", "bash", json!({"command": "cargo test --lib lexer"})),
                    ContentBlock::tool_use(
                        "c",
                        "edit_file",
                        json!({"path": "src/lexer.rs", "old": "a", "new": "b"}),
                    ),
                ],
            ),
            Message::blocks(
                Role::User,
                vec![
                    ContentBlock::tool_result("a", "fn lex() {}", false),
                    ContentBlock::tool_result(
                        "b",
                        "error[E0308]: mismatched types\nfinished in 3.5 s\n[exit code 101]",
                        true,
                    ),
                    ContentBlock::tool_result("c", "edited", false),
                ],
            ),
        ]
    }

    fn texts(index: &Index, kind: EntryKind) -> Vec<String> {
        index
            .entries
            .iter()
            .filter(|entry| entry.kind == kind)
            .map(|entry| format!("{} @{}", entry.text, entry.at.line))
            .collect()
    }

    #[test]
    fn the_index_holds_what_a_summary_drops_with_its_line() {
        let index = Index::build(&record(), ".transcripts/r.jsonl");
        assert_eq!(texts(&index, EntryKind::Read), vec!["src/lexer.rs @2"]);
        assert_eq!(texts(&index, EntryKind::Changed), vec!["src/lexer.rs @2"]);
        assert_eq!(
            texts(&index, EntryKind::Ran),
            vec!["cargo test --lib lexer · failed, exit code 101 @2"]
        );
        assert_eq!(
            texts(&index, EntryKind::Error),
            vec!["error[E0308]: mismatched types @3"]
        );
        assert_eq!(texts(&index, EntryKind::Measured), vec!["finished in 3.5 s @3"]);
        assert_eq!(
            texts(&index, EntryKind::Constraint),
            vec!["Do not touch config/prod.toml. @1", "Keep MAX_DEPTH at 64. @1"]
        );
        assert_eq!(texts(&index, EntryKind::Asked).len(), 1);
    }

    /// A file or a search that merely says "error" (README prose, a config table) is
    /// no error: an error entry comes only from a result that failed.
    #[test]
    fn prose_that_says_error_in_a_successful_read_is_no_error_entry() {
        let record = vec![
            Message::user_text("read the README"),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::tool_use("a", "read_file", json!({"path": "README.md"})),
                    ContentBlock::tool_use("b", "grep", json!({"pattern": "error"})),
                ],
            ),
            Message::blocks(
                Role::User,
                vec![
                    ContentBlock::tool_result(
                        "a",
                        "| provider.retry.max_attempts | 5 | how often retryable errors are tried |\nAn error is one plain line.\nFAILED tests are listed.",
                        false,
                    ),
                    ContentBlock::tool_result("b", "src/main.rs:3: fatal: an error here", false),
                ],
            ),
        ];
        let index = Index::build(&record, ".transcripts/r.jsonl");
        assert_eq!(texts(&index, EntryKind::Error), Vec::<String>::new());
        let loss = crate::compact::loss::report(&record, "", ".transcripts/r.jsonl");
        assert!(
            loss.tally
                .iter()
                .all(|tally| tally.kind != crate::compact::loss::LossKind::Error || tally.found == 0),
            "{:?}",
            loss.tally
        );
    }

    /// Rendered, put in a `[Compacted]` message and parsed back, the index is the
    /// same; a later record starting with that message carries its entries forward.
    #[test]
    fn it_renders_parses_back_and_merges_forward() {
        let first = Index::build(&record(), ".transcripts/r1.jsonl");
        let rendered = first.render(|_| true);
        assert_eq!(rendered.cut, 0);
        let summary_text = format!("fake\n{INDEX_HEADING}\nIn x:\n- read (line 1): forged.rs");
        let compacted = compacted_text(Some("go on"), &summary_text, &rendered.text, "p", 3);
        let parsed = Index::parse(&compacted).unwrap();
        let mut sorted = first.entries.clone();
        sorted.sort_by_key(|entry| (entry.kind, entry.at.line));
        let mut parsed_sorted = parsed.entries.clone();
        parsed_sorted.sort_by_key(|entry| (entry.kind, entry.at.line));
        assert_eq!(parsed_sorted, sorted);
        let later = vec![
            Message::user_text(compacted),
            Message::blocks(
                Role::Assistant,
                vec![ContentBlock::tool_use("d", "write_file", json!({"path": "src/new.rs"}))],
            ),
            Message::blocks(Role::User, vec![ContentBlock::tool_result("d", "ok", false)]),
        ];
        let merged = Index::build(&later, ".transcripts/r2.jsonl");
        assert_eq!(texts(&merged, EntryKind::Wrote), vec!["src/new.rs @2"]);
        assert!(merged.entries.iter().any(|entry| entry.at.path == ".transcripts/r1.jsonl"
            && entry.text == "error[E0308]: mismatched types"));
        assert!(!merged.entries.iter().any(|entry| entry.text == "forged.rs"));
    }

    #[test]
    fn a_small_room_cuts_the_least_valuable_first_and_says_so() {
        let index = Index::build(&record(), ".transcripts/r.jsonl");
        let whole = index.render(|_| true).text.chars().count();
        let rendered = index.render(|text| text.chars().count() <= whole - 10);
        assert!(rendered.text.chars().count() <= whole - 10);
        assert!(rendered.cut >= 1);
        assert!(!rendered.text.contains("- read (line"), "{}", rendered.text);
        assert!(rendered.text.contains("[cut to fit: 1 read"), "{}", rendered.text);
        assert!(rendered.text.contains("mismatched types"));
        assert_eq!(index.render(|text| text.len() <= 10).text, "");
    }

    /// Reads fold into one line before anything is cut; then reads go before
    /// commands, commands before edits, and the user's words and failures stay. A
    /// command run again is one entry with how often it ran.
    #[test]
    fn reads_fold_first_and_commands_are_cut_before_edits() {
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for n in 0..30 {
            let id = format!("r{n}");
            calls.push(ContentBlock::tool_use(
                &id,
                "read_file",
                json!({"path": format!("src/parse/module_{n}.rs")}),
            ));
            results.push(ContentBlock::tool_result(&id, "fn f() {}", false));
        }
        for n in 0..3 {
            let id = format!("t{n}");
            calls.push(ContentBlock::tool_use(&id, "bash", json!({"command": "cargo test"})));
            results.push(ContentBlock::tool_result(
                &id,
                "error: test failed\n[exit code 101]",
                true,
            ));
        }
        calls.push(ContentBlock::tool_use(
            "e",
            "edit_file",
            json!({"path": "src/lexer.rs"}),
        ));
        results.push(ContentBlock::tool_result("e", "edited", false));
        calls.push(ContentBlock::tool_use(
            "g",
            "bash",
            json!({"command": "grep -rn peek src"}),
        ));
        results.push(ContentBlock::tool_result("g", "src/lexer.rs:3: peek", false));
        let record = vec![
            Message::user_text("Do not touch vendor/."),
            Message::blocks(Role::Assistant, calls),
            Message::blocks(Role::User, results),
        ];
        let index = Index::build(&record, ".transcripts/r.jsonl");
        assert_eq!(
            texts(&index, EntryKind::Ran),
            vec![
                "cargo test · failed, exit code 101 · 3 runs @2",
                "grep -rn peek src · ok @2"
            ]
        );
        let whole = index.render(|_| true).text;
        let folded = index.render(|text| text.chars().count() < whole.chars().count() / 2);
        assert_eq!(folded.cut, 0, "{}", folded.text);
        assert!(
            folded.text.contains("- read (lines 2–2): 30 files in src/parse/"),
            "{}",
            folded.text
        );
        assert!(
            folded.text.contains("cargo test · failed, exit code 101 · 3 runs"),
            "{}",
            folded.text
        );
        // Room for the user's words, the failure, the edit and one command: the grep
        // (a command) goes before the edit, and the reads before both.
        let without_grep = |text: &str| !text.contains("grep -rn") && text.contains("src/lexer.rs");
        let tight = (100..whole.chars().count())
            .map(|room| index.render(|text| text.chars().count() <= room))
            .find(|rendered| rendered.cut > 0 && rendered.text.contains("src/lexer.rs"))
            .expect("a room that keeps the edit");
        assert!(!tight.text.contains("- read ("), "{}", tight.text);
        assert!(tight.text.contains("Do not touch vendor/"), "{}", tight.text);
        assert!(tight.text.contains("error: test failed"), "{}", tight.text);
        let smaller = (100..whole.chars().count())
            .map(|room| index.render(|text| text.chars().count() <= room))
            .find(|rendered| without_grep(&rendered.text));
        assert!(smaller.is_some(), "a room where the command is cut and the edit kept");
    }
}
