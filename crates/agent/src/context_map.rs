//! What the context holds, by category: the data behind the /context view.

use crate::accounting::fixed_chars;
use crate::compact::CompactConfig;
use crate::compact::markers::{MessageKind, ResultKind, classify, classify_result};
use crate::compact::receipt::describe_result;
use crate::compact::render::{piece, role_name};
use crate::message::ToolSpec;
use crate::message::{Content, ContentBlock, Message};
use crate::protocol::{InstructionRow, McpServerRow};
use crate::text::prefix_chars;

pub use crate::protocol::{Category, ContextBreakdown, Item};

const SHOWN_TEXT: usize = 20_000;

pub fn breakdown(
    system: &str,
    instructions: &[InstructionRow],
    mcp_servers: &[McpServerRow],
    tools: &[ToolSpec],
    messages: &[Message],
    config: &CompactConfig,
    facts: &crate::compact::SessionFacts,
) -> ContextBreakdown {
    let mode = config.estimate;
    let fixed = fixed_chars(system, tools, mode);
    let instructions_chars: usize = instructions.iter().map(|row| row.prompt_chars).sum();
    let mcp_chars: usize = mcp_servers.iter().map(|row| row.chars).sum();
    let mut items = vec![Item {
        category: Category::SystemAndTools,
        chars: fixed.saturating_sub(instructions_chars + mcp_chars),
        message: 0,
        role: "system".into(),
        preview: one_line(system),
        saved_path: None,
        text: prefix_chars(system, SHOWN_TEXT).to_string(),
        tool_use_id: None,
        pinned: false,
    }];
    items.extend(instructions.iter().map(|row| Item {
        category: Category::ProjectInstructions,
        chars: row.prompt_chars,
        message: 0,
        role: "system".into(),
        preview: "instruction file, in the system prompt".into(),
        saved_path: Some(row.path.clone()),
        text: String::new(),
        tool_use_id: None,
        pinned: false,
    }));
    items.extend(mcp_servers.iter().map(|row| Item {
        category: Category::McpServers,
        chars: row.chars,
        message: 0,
        role: "system".into(),
        preview: format!("MCP server `{}`: {} tools and its instructions", row.name, row.tools),
        saved_path: None,
        text: String::new(),
        tool_use_id: None,
        pinned: false,
    }));
    let mut pinned = Vec::new();
    walk_messages(messages, config, |at, block| {
        let role = role_name(messages[at].role());
        let Block {
            category,
            chars,
            text,
            saved_path,
            tool_use_id: id,
        } = block;
        // A tool result is told by its call (`bash cargo test (result)`): the text of a
        // cleared one is only its reference.
        let preview = match (id, category) {
            (Some(id), Category::ToolResult) => format!(
                "{} · {}",
                describe_result(messages, at, id, facts.describe_input),
                one_line(&text)
            ),
            (Some(id), _) => describe_result(messages, at, id, facts.describe_input),
            (None, _) => one_line(&text),
        };
        if let Some(id) = id
            && facts.pinned.contains(id)
        {
            pinned.push(describe_result(messages, at, id, facts.describe_input));
        }
        items.push(Item {
            category,
            chars,
            message: at + 1,
            role: role.into(),
            preview,
            saved_path,
            text: prefix_chars(&text, SHOWN_TEXT).to_string(),
            tool_use_id: id.map(str::to_string),
            pinned: id.is_some_and(|id| facts.pinned.contains(id)),
        });
    });
    let mut totals: Vec<(Category, usize)> = Category::ALL.iter().map(|&c| (c, 0)).collect();
    let mut add = |category: Category, chars: usize| {
        if let Some(entry) = totals.iter_mut().find(|(c, _)| *c == category) {
            entry.1 += chars;
        }
    };
    for item in &items {
        add(item.category, item.chars);
    }
    let estimate = mode.count(messages);
    let blocks: usize = items
        .iter()
        .filter(|item| item.category.counts_against_limit())
        .map(|item| item.chars)
        .sum();
    add(Category::Framing, estimate.saturating_sub(blocks));
    let limit = config.context_char_limit.chars;
    add(Category::Free, limit.saturating_sub(estimate));
    let tool_results = items
        .iter()
        .filter(|item| item.tool_use_id.is_some())
        .cloned()
        .collect();
    items.sort_by(|a, b| b.chars.cmp(&a.chars).then(a.message.cmp(&b.message)));
    items.truncate(10);
    ContextBreakdown {
        limit,
        estimate,
        fixed,
        totals,
        largest: items,
        tool_results,
        pinned,
        instructions: instructions.to_vec(),
        mcp_servers: mcp_servers.to_vec(),
        thinking_tokens: None,
        counted: None,
        weighed: None,
    }
}

/// The whole text each message category holds, all of it: what the server tokenizes
/// for the counted column of `/context`.
pub fn category_texts(messages: &[Message], config: &CompactConfig) -> Vec<(Category, String)> {
    let mut texts: Vec<(Category, String)> = Vec::new();
    walk_messages(messages, config, |_, block| {
        match texts.iter_mut().find(|(category, _)| *category == block.category) {
            Some((_, text)) => {
                text.push('\n');
                text.push_str(&block.text);
            }
            None => texts.push((block.category, block.text)),
        }
    });
    texts
}

/// One block of a message as `/context` sorts it.
struct Block<'a> {
    category: Category,
    /// As the estimate counts the block.
    chars: usize,
    text: String,
    saved_path: Option<String>,
    tool_use_id: Option<&'a str>,
}

/// Each block of each message, with the index of its message, sorted into its
/// category.
fn walk_messages<'a>(messages: &'a [Message], config: &CompactConfig, mut visit: impl FnMut(usize, Block<'a>)) {
    let mode = config.estimate;
    for (at, message) in messages.iter().enumerate() {
        let kind = classify(message);
        let mut push = |category: Category, chars: usize, text: String, saved_path, id| {
            visit(
                at,
                Block {
                    category,
                    chars,
                    text,
                    saved_path,
                    tool_use_id: id,
                },
            )
        };
        match message.content() {
            Content::Text(text) => push(
                text_category(&kind),
                mode.count(&message.content()),
                text.clone(),
                None,
                None,
            ),
            Content::Blocks(blocks) => {
                for block in blocks {
                    let chars = mode.count(block);
                    let text = piece(block).text().into_owned();
                    match block {
                        ContentBlock::Text { .. } => push(text_category(&kind), chars, text, None, None),
                        ContentBlock::ToolUse { .. } => push(Category::ToolUseInput, chars, text, None, None),
                        ContentBlock::ToolResult {
                            tool_use_id, content, ..
                        } => {
                            let id = Some(tool_use_id.as_str());
                            match classify_result(content) {
                                ResultKind::Persisted(block) => push(
                                    Category::PersistedPreview,
                                    chars,
                                    text,
                                    Some(block.path.to_string()),
                                    id,
                                ),
                                ResultKind::Cleared { path } => {
                                    push(Category::ClearedReference, chars, text, Some(path.to_string()), id)
                                }
                                ResultKind::Whole => push(Category::ToolResult, chars, text, None, id),
                            }
                        }
                        ContentBlock::Unknown(value) if crate::compact::markers::is_server_compaction_block(value) => {
                            let summary = crate::compact::markers::server_summary_text(value);
                            let shown = format!("[server's summary] {summary}");
                            push(Category::CompactionSummary, chars, shown, None, None)
                        }
                        ContentBlock::Unknown(value) => match value.get("type").and_then(serde_json::Value::as_str) {
                            Some("thinking") => {
                                let thought = value.get("thinking").and_then(serde_json::Value::as_str);
                                let shown = format!("[thinking] {}", thought.unwrap_or(""));
                                push(Category::Thinking, chars, shown, None, None)
                            }
                            Some("redacted_thinking") => {
                                push(Category::Thinking, chars, "[redacted thinking]".to_string(), None, None)
                            }
                            _ => push(Category::Other, chars, value.to_string(), None, None),
                        },
                    }
                }
            }
        }
    }
}

/// The category of a message's text, by what the message is.
fn text_category(kind: &MessageKind) -> Category {
    match kind {
        MessageKind::CompactedSummary { .. } => Category::CompactionSummary,
        MessageKind::ArchiveMarker { .. } => Category::ArchiveMarker,
        MessageKind::UserPrompt(_) | MessageKind::ToolResults | MessageKind::CutOffNote => Category::UserText,
        MessageKind::Assistant => Category::AssistantText,
    }
}

fn one_line(text: &str) -> String {
    let flat = crate::text::flatten_whitespace(text);
    prefix_chars(&flat, 80).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::{archive_marker, cleared_reference, persisted_output};
    use crate::message::{Role, ToolResultContent};

    #[test]
    fn categorises_every_kind_of_block() {
        let result = |id: &str, text: String| ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: ToolResultContent::Text(text),
            is_error: None,
            extra: Default::default(),
        };
        let messages = vec![
            Message::user_text("[Compacted] summary"),
            Message::user_text(archive_marker(3, ".transcripts/a.jsonl")),
            Message::user_text("please"),
            Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::Unknown(serde_json::json!({
                        "type": "thinking", "thinking": "list first", "signature": "sig"
                    })),
                    ContentBlock::Text {
                        text: "ok".into(),
                        extra: Default::default(),
                    },
                    ContentBlock::ToolUse {
                        id: "a".into(),
                        name: "bash".into(),
                        input: serde_json::json!({"command": "ls"}),
                        extra: Default::default(),
                    },
                ],
            ),
            Message::blocks(
                Role::User,
                vec![
                    result("a", "x".repeat(500)),
                    result("b", persisted_output("p.txt", 9000, "abc")),
                    result("c", cleared_reference("q.txt")),
                ],
            ),
        ];
        let config = CompactConfig::default();
        let rows = [InstructionRow {
            path: "AGENTS.md".into(),
            chars: 2,
            prompt_chars: 4,
            cut: false,
        }];
        let servers = [McpServerRow {
            name: "fx".into(),
            tools: 1,
            chars: 3,
        }];
        let map = breakdown(
            "sys\n<a>",
            &rows,
            &servers,
            &[],
            &messages,
            &config,
            &crate::compact::SessionFacts::NONE,
        );
        let total = |c: Category| map.totals.iter().find(|(k, _)| *k == c).unwrap().1;
        for category in Category::ALL {
            if category != Category::Other {
                assert!(total(category) > 0, "{category:?}");
            }
        }
        let counted: usize = map
            .totals
            .iter()
            .filter(|(c, _)| c.counts_against_limit())
            .map(|(_, n)| n)
            .sum();
        assert_eq!(
            counted,
            crate::compact::estimate::estimate_chars(&messages),
            "the gauge's estimate"
        );
        assert_eq!(counted, map.estimate);
        assert_eq!(total(Category::ProjectInstructions), 4);
        assert_eq!(total(Category::McpServers), 3);
        assert_eq!(
            total(Category::SystemAndTools) + total(Category::ProjectInstructions) + total(Category::McpServers),
            map.fixed
        );
        assert_eq!(
            map.fixed,
            "sys\n<a>".len() + "[]".len(),
            "the text and an empty tool list"
        );
        assert_eq!(map.estimate + total(Category::Free), 50_000);
        assert_eq!(map.largest[0].category, Category::ToolResult);
        assert_eq!(map.largest[0].message, 5);
        let cleared = map
            .largest
            .iter()
            .find(|i| i.category == Category::ClearedReference)
            .unwrap();
        assert_eq!(cleared.saved_path.as_deref(), Some("q.txt"));
    }
}
