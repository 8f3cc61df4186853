//! The offline demo model: a deterministic script that surveys the current workspace
//! with real tool calls (glob, read_file on real files, bash), producing enough output
//! to make every stage of `prepare` and the `compact` tool fire within half a minute
//! (not `reactive_compact`: only a server's refusal triggers that), and summarising
//! extractively. It is what `cargo run --release` talks to when no API key is set;
//! the UI labels it as such.

use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;

use super::error::ProviderError;
use super::{DeltaSink, ModelRequest, ModelResponse, Provider, StreamEvent, Usage};
use crate::compact::markers::{MessageKind, classify};
use crate::compact::{ExtractiveSummariser, Summariser, SummaryRequest};
use crate::message::{ContentBlock, Message};
use crate::protocol::TokenBasis;

pub const DEMO_MODEL: &str = "offline-demo";

/// Files read one by one; with fewer real files, generated listings fill the rounds
/// so the history still grows past the snip limit.
const READ_ROUNDS: usize = 28;

const TEXT_EXTENSIONS: &[&str] = &[
    "rs", "toml", "md", "txt", "py", "js", "ts", "json", "yaml", "yml", "sh", "c", "h", "go", "java", "css", "html",
    "lock",
];

pub struct DemoProvider {
    delay: Duration,
    state: Mutex<DemoState>,
}

#[derive(Default)]
struct DemoState {
    step: usize,
    files: Vec<String>,
}

enum Action {
    Glob,
    Heavy,
    Read(usize),
    Fit,
    Compact,
    Report,
    Done,
}

impl DemoProvider {
    /// `delay` between streamed words (SCRATCHPAD_DEMO_DELAY_MS overrides it).
    pub fn new(delay: Duration) -> Self {
        let delay = std::env::var("SCRATCHPAD_DEMO_DELAY_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(delay, Duration::from_millis);
        DemoProvider {
            delay,
            state: Mutex::new(DemoState::default()),
        }
    }

    fn action(step: usize) -> Action {
        match step {
            0 => Action::Glob,
            1 => Action::Heavy,
            n if n < 2 + READ_ROUNDS => Action::Read(n - 2),
            n if n == 2 + READ_ROUNDS => Action::Fit,
            n if n == 3 + READ_ROUNDS => Action::Compact,
            n if n == 4 + READ_ROUNDS => Action::Report,
            _ => Action::Done,
        }
    }

    fn respond(&self, request: &ModelRequest<'_>) -> (String, Vec<ContentBlock>) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let last = request.messages.last();
        if last.is_some_and(|m| matches!(classify(m), MessageKind::UserPrompt(_))) {
            state.step = 0;
        }
        let previous = last.map(last_result_text).unwrap_or_default();
        let step = state.step;
        state.step += 1;
        let calls_made = std::cell::Cell::new(0);
        let call = |name: &str, input: serde_json::Value| {
            let n = calls_made.get();
            calls_made.set(n + 1);
            ContentBlock::ToolUse {
                id: format!("toolu_demo_{step:03}_{n}_{name}"),
                name: name.to_string(),
                input,
                extra: Default::default(),
            }
        };
        match Self::action(step) {
            Action::Glob => (
                "I am the offline demo model (no API key is set), so I follow a fixed script: \
                 survey this workspace with real tool calls and show each compaction stage as the context fills. \
                 First, the file list."
                    .to_string(),
                vec![call("glob", json!({"pattern": "**/*"}))],
            ),
            Action::Heavy => {
                state.files = text_files(&previous);
                (
                    format!(
                        "The workspace has {} text files I can read. Next, two large generated listings in one batch: \
                         together they exceed the 200,000-character tool batch budget, so tool_result_budget will \
                         save the larger one to disk and keep a preview.",
                        state.files.len()
                    ),
                    vec![
                        call("bash", json!({"command": "seq -w 1 30000"})),
                        call("bash", json!({"command": "seq -w 30001 45000"})),
                    ],
                )
            }
            Action::Read(round) => {
                let note = describe(&previous);
                let input = match state.files.get(round) {
                    Some(path) => call("read_file", json!({"path": path})),
                    None => call(
                        "bash",
                        json!({"command": format!("seq -w {} {}", round * 1000, round * 1000 + 600)}),
                    ),
                };
                (
                    format!("{note} Reading the next item ({} of {READ_ROUNDS}).", round + 1),
                    vec![input],
                )
            }
            Action::Fit => (
                format!(
                    "{} Now three medium listings at once. Each stays under the per-result threshold, but together \
                     they push the context over its limit while still unseen, so fit_tool_results will shorten them.",
                    describe(&previous)
                ),
                vec![
                    call("bash", json!({"command": "seq -w 1 4000"})),
                    call("bash", json!({"command": "seq -w 4001 8000"})),
                    call("bash", json!({"command": "seq -w 8001 12000"})),
                ],
            ),
            Action::Compact => (
                "The survey is done. I will call the compact tool so the history is summarised into one \
                 [Compacted] message before I write the report."
                    .to_string(),
                vec![call("compact", json!({}))],
            ),
            Action::Report => {
                let files = state.files.len().min(READ_ROUNDS);
                (
                    format!(
                        "## Survey complete\n\nI listed the workspace, read {files} files and ran generated listings. \
                         Along the way the compaction stages fired as the context grew (all but `reactive_compact`, \
                         which only a server's refusal of a too-long prompt triggers); the markers in the chat link to \
                         what was saved:\n\n\
                         - `.task_outputs/tool-results/` holds full tool outputs that were shortened\n\
                         - `.transcripts/` holds each archived or summarised history\n\n\
                         This was the offline demo model. Set `ANTHROPIC_API_KEY` (or use `--provider openai \
                         --base-url http://127.0.0.1:8080/v1` with a local llama.cpp server) to work with a real model."
                    ),
                    Vec::new(),
                )
            }
            Action::Done => (
                "The offline demo script has finished. Send a new request to run it again, or configure a real \
                 model (see the README)."
                    .to_string(),
                Vec::new(),
            ),
        }
    }
}

/// The text of the newest tool result, if the message carries any.
fn last_result_text(message: &Message) -> String {
    message
        .block_slice()
        .iter()
        .rev()
        .find_map(|block| match block {
            ContentBlock::ToolResult { content, .. } => Some(content.full_text()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Readable files from a glob listing, skipping our own archive folders.
fn text_files(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter(|line| !line.starts_with('.') && !line.starts_with("target/") && !line.starts_with("... "))
        .filter(|line| {
            std::path::Path::new(line)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| TEXT_EXTENSIONS.contains(&e))
        })
        .map(str::to_string)
        .collect()
}

fn describe(output: &str) -> String {
    let lines = output.lines().count();
    let first = output.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let first: String = first.chars().take(80).collect();
    format!(
        "That output has {} and {}; it begins with {}.",
        crate::compact::counted(lines, "line", "lines"),
        crate::compact::counted(output.chars().count(), "character", "characters"),
        code_span(&first)
    )
}

/// `text` as a CommonMark code span: fenced by one backtick more than its longest run
/// of backticks, and padded with a space where it starts or ends with one, so a line
/// of markdown or shell quoted by the demo cannot end the span early.
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// The demo's token rule, stated so its figures are honest: one token per
/// [`DEMO_CHARS_PER_TOKEN`] characters (rounded up) of what it received, the system
/// prompt, tool definitions and messages as sent.
pub const DEMO_CHARS_PER_TOKEN: usize = 4;

fn demo_count(chars: usize) -> u64 {
    chars.div_ceil(DEMO_CHARS_PER_TOKEN) as u64
}

/// Characters of the request as the wire would carry it: the system prompt, then the
/// tools and the messages as compact JSON.
fn request_chars(request: &ModelRequest<'_>) -> usize {
    use crate::compact::estimate::json_chars;
    request.system.chars().count() + json_chars(&request.tools) + json_chars(&request.messages)
}

/// The demo's provider kind, as sessions and the status line name it.
pub const DEMO_KIND: &str = "demo";

/// Whether a session's provider `kind` is the offline demo model.
pub fn is_demo(kind: &str) -> bool {
    kind == DEMO_KIND
}

impl Provider for DemoProvider {
    fn kind(&self) -> &'static str {
        DEMO_KIND
    }

    fn model(&self) -> &str {
        DEMO_MODEL
    }

    fn token_basis(&self) -> TokenBasis {
        TokenBasis::DemoCount
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest<'a>,
        deltas: &'a DeltaSink,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let (text, calls) = self.respond(request);
            for (at, word) in text.split_inclusive(' ').enumerate() {
                if at > 0 && !self.delay.is_zero() {
                    tokio::time::sleep(self.delay).await;
                }
                let _ = deltas.send(StreamEvent::Text(word.to_string()));
            }
            for call in &calls {
                if let ContentBlock::ToolUse { id, name, .. } = call {
                    let _ = deltas.send(StreamEvent::ToolUseStarted {
                        id: id.clone(),
                        name: name.clone(),
                    });
                }
            }
            let stop_reason = if calls.is_empty() { "end_turn" } else { "tool_use" };
            let mut content = vec![ContentBlock::Text {
                text: text.clone(),
                extra: Default::default(),
            }];
            content.extend(calls);
            Ok(ModelResponse {
                content,
                stop_reason: Some(stop_reason.to_string()),
                usage: Usage {
                    input_tokens: demo_count(request_chars(request)),
                    output_tokens: demo_count(text.chars().count()),
                    ..Usage::default()
                },
                cut_off: Vec::new(),
                id: None,
                cache_diagnosis: None,
            })
        })
    }

    fn summarise<'a>(
        &'a self,
        request: &'a SummaryRequest<'a>,
        _max_tokens: u32,
        _deltas: &'a super::DeltaSink,
    ) -> BoxFuture<'a, Result<super::ModelSummary, ProviderError>> {
        Box::pin(async move {
            ExtractiveSummariser
                .summarise(request)
                .map(|text| super::ModelSummary { text, cut: false })
                .map_err(|error| ProviderError::Protocol(error.to_string()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What CommonMark reads from `markdown`: the code spans and the plain text.
    fn read(markdown: &str) -> (Vec<String>, String) {
        use pulldown_cmark::{Event, Parser};
        let mut code = Vec::new();
        let mut plain = String::new();
        for event in Parser::new(markdown) {
            match event {
                Event::Code(text) => code.push(text.to_string()),
                Event::Text(text) => plain.push_str(&text),
                _ => {}
            }
        }
        (code, plain)
    }

    #[test]
    fn a_quoted_line_with_backticks_stays_one_code_span() {
        for line in ["Use `cargo test` here", "```rust", "`", "a `` b", "plain"] {
            let said = describe(&format!("{line}\nmore\n"));
            let (code, plain) = read(&said);
            assert_eq!(code, vec![line.to_string()], "{said}");
            assert!(plain.starts_with("That output has 2 lines"), "{said}");
            assert!(
                plain.ends_with("; it begins with ."),
                "the words around it are whole: {said}"
            );
        }
    }

    #[tokio::test]
    async fn the_script_starts_with_glob_and_restarts_on_a_new_prompt() {
        let demo = DemoProvider::new(Duration::ZERO);
        let (sink, _events) = tokio::sync::mpsc::unbounded_channel();
        let request = ModelRequest {
            messages: &[Message::user_text("survey")],
            ..ModelRequest::default()
        };
        let first = demo.complete(&request, &sink).await.unwrap();
        assert!(matches!(&first.content[1], ContentBlock::ToolUse { name, .. } if name == "glob"));
        assert!(first.text().contains("offline demo model"));
        let again = demo.complete(&request, &sink).await.unwrap();
        assert_eq!(again.content, first.content);
    }

    /// The demo counts the request it received (system prompt, tools and messages),
    /// by its stated rule, rather than deriving a figure from our own estimate.
    #[tokio::test]
    async fn usage_is_the_stated_rule_applied_to_the_whole_request() {
        let demo = DemoProvider::new(Duration::ZERO);
        let (sink, _events) = tokio::sync::mpsc::unbounded_channel();
        let request = ModelRequest {
            system: "s".repeat(400),
            tools: crate::tools::ToolBox::specs_for(&crate::tools::ToolsConfig::default()),
            messages: &[Message::user_text("survey")],
            max_tokens: 100,
            cache_check: crate::provider::CacheCheck::Off,
            think: false,
        };
        let tools = serde_json::to_string(&request.tools).unwrap().chars().count();
        let messages = serde_json::to_string(&request.messages).unwrap().chars().count();
        let response = demo.complete(&request, &sink).await.unwrap();
        assert_eq!(
            response.usage.input_tokens,
            (400 + tools + messages).div_ceil(DEMO_CHARS_PER_TOKEN) as u64
        );
        assert_eq!(demo.token_basis(), TokenBasis::DemoCount);
    }

    #[test]
    fn picks_readable_files_from_a_listing() {
        let listing = "Cargo.toml\nsrc/main.rs\nimage.png\n.transcripts/x.jsonl\ntarget/debug/a.rs\n... 3 more";
        assert_eq!(text_files(listing), vec!["Cargo.toml", "src/main.rs"]);
    }
}
