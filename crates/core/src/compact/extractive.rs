//! A summariser that needs no model: it extracts the goal, the user's requests, the
//! files and commands the tools touched and the last assistant note. Used by the
//! offline demo model and by `scratchpad compact --summary-stub`; deterministic.

use serde_json::Value;

use super::markers::{MessageKind, classify};
use super::{Summariser, SummaryError, SummaryRequest};
use crate::message::{ContentBlock, Role};
use crate::text::one_line;

/// A summariser that asks no model: it lists what the history says (requests, files,
/// commands, errors) in the summary's sections. The demo and `--summary-stub` use it.
pub struct ExtractiveSummariser;

const LIST_LIMIT: usize = 10;

impl Summariser for ExtractiveSummariser {
    fn summarise(&mut self, request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        let messages = request.messages;
        // Only what the user typed: not archive markers or earlier summaries.
        let prompts: Vec<String> = messages
            .iter()
            .filter_map(|m| match classify(m) {
                MessageKind::UserPrompt(text) => Some(text),
                // A record that starts with an earlier summary carries its request on.
                MessageKind::CompactedSummary { request } => request,
                _ => None,
            })
            .map(|text| one_line(&text, 200))
            .filter(|text| !text.is_empty())
            .collect();
        let mut files: Vec<String> = Vec::new();
        let mut patterns: Vec<String> = Vec::new();
        let mut commands: Vec<String> = Vec::new();
        let mut calls = 0;
        let mut errors = 0;
        for block in messages.iter().flat_map(|m| m.block_slice()) {
            match block {
                ContentBlock::ToolUse { input, .. } => {
                    calls += 1;
                    for key in ["path", "file_path"] {
                        if let Some(Value::String(path)) = input.get(key)
                            && !files.contains(path)
                        {
                            files.push(path.clone());
                        }
                    }
                    // A glob pattern names no file: it is what was searched for.
                    if let Some(Value::String(pattern)) = input.get("pattern")
                        && !patterns.contains(pattern)
                    {
                        patterns.push(pattern.clone());
                    }
                    if let Some(Value::String(command)) = input.get("command") {
                        commands.push(one_line(command, 120));
                    }
                }
                ContentBlock::ToolResult {
                    is_error: Some(true), ..
                } => errors += 1,
                _ => {}
            }
        }
        let last_note = messages
            .iter()
            .rev()
            .filter(|m| m.role() == Role::Assistant)
            .map(|m| one_line(&m.text(), 500))
            .find(|text| !text.is_empty());

        let mut out = String::from("Extractive summary (made offline; no model was asked).\n");
        if let Some(focus) = request.focus {
            out.push_str(&format!("Focus asked for: {}\n", one_line(focus, 300)));
        }
        out.push_str(&format!(
            "Goal: {}\n",
            prompts.first().map_or("(no user request found)", String::as_str)
        ));
        push_list(&mut out, "User requests", &prompts);
        push_list(&mut out, "Files touched", &files);
        push_list(&mut out, "Patterns searched", &patterns);
        push_list(&mut out, "Commands run", &commands);
        out.push_str(&format!("Tool calls: {calls}, of which failed: {errors}\n"));
        if let Some(note) = last_note {
            out.push_str(&format!("Last assistant note: {note}\n"));
        }
        out.push_str(&format!("Messages summarised: {}", messages.len()));
        Ok(out)
    }
}

fn push_list(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let shown = &items[items.len().saturating_sub(LIST_LIMIT)..];
    let hidden = items.len() - shown.len();
    out.push_str(&format!("{title} ({}):\n", items.len()));
    if hidden > 0 {
        out.push_str(&format!("- ... {hidden} earlier\n"));
    }
    for item in shown {
        out.push_str(&format!("- {item}\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, ToolResultContent};

    /// The extractive summary of `messages`, with `focus`.
    fn summarise(messages: &[Message], focus: Option<&str>) -> String {
        let request = SummaryRequest {
            instructions: String::new(),
            history_text: String::new(),
            messages,
            span: messages,
            room_chars: None,
            left_out: &[],
            focus,
        };
        ExtractiveSummariser
            .summarise(&request)
            .unwrap_or_else(|error| panic!("the extractive summary cannot fail: {error}"))
    }

    /// A record that starts with an earlier summary keeps that summary's request as
    /// the goal, instead of finding none.
    #[test]
    fn the_goal_of_an_earlier_summary_is_carried_on() {
        let messages = vec![
            Message::user_text(crate::compact::markers::compacted_text(
                Some("fix the lexer"),
                "s",
                "",
                ".transcripts/t.jsonl",
                3,
            )),
            Message::assistant_text("reading on"),
        ];
        let summary = summarise(&messages, None);
        assert!(summary.contains("Goal: fix the lexer"), "{summary}");
    }

    #[test]
    fn extracts_goal_files_commands_and_errors() {
        let messages = vec![
            Message::user_text("Refactor   the\nparser"),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::Text {
                        text: "Reading it.".into(),
                        extra: Default::default(),
                    },
                    ContentBlock::ToolUse {
                        id: "a".into(),
                        name: "read_file".into(),
                        input: serde_json::json!({"path": "src/parser.rs"}),
                        extra: Default::default(),
                    },
                    ContentBlock::ToolUse {
                        id: "b".into(),
                        name: "bash".into(),
                        input: serde_json::json!({"command": "cargo test"}),
                        extra: Default::default(),
                    },
                ],
            ),
            Message::blocks(
                Role::User,
                vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "a".into(),
                        content: ToolResultContent::Text("fn parse()".into()),
                        is_error: None,
                        extra: Default::default(),
                    },
                    ContentBlock::ToolResult {
                        tool_use_id: "b".into(),
                        content: ToolResultContent::Text("failed".into()),
                        is_error: Some(true),
                        extra: Default::default(),
                    },
                ],
            ),
        ];
        let summary = summarise(&messages, None);
        assert_eq!(
            summary,
            "Extractive summary (made offline; no model was asked).\nGoal: Refactor the parser\n\
             User requests (1):\n- Refactor the parser\nFiles touched (1):\n- src/parser.rs\n\
             Commands run (1):\n- cargo test\nTool calls: 2, of which failed: 1\n\
             Last assistant note: Reading it.\nMessages summarised: 3"
        );
    }

    #[test]
    fn a_glob_is_a_pattern_markers_are_not_requests_and_the_focus_is_kept() {
        let messages = vec![
            Message::user_text("[12 messages archived at .transcripts/t.jsonl]"),
            Message::user_text("[Compacted] an earlier summary"),
            Message::user_text("find the tests"),
            Message::blocks(
                Role::Assistant,
                vec![ContentBlock::tool_use(
                    "g",
                    "glob",
                    serde_json::json!({"pattern": "**/*_test.rs"}),
                )],
            ),
            Message::blocks(Role::User, vec![ContentBlock::tool_result("g", "a_test.rs", false)]),
        ];
        let summary = summarise(&messages, Some("the lexer tests"));
        assert!(summary.contains("Focus asked for: the lexer tests"), "{summary}");
        assert!(summary.contains("User requests (1):\n- find the tests"), "{summary}");
        assert!(summary.contains("Patterns searched (1):\n- **/*_test.rs"), "{summary}");
        assert!(!summary.contains("Files touched"), "{summary}");
    }
}
