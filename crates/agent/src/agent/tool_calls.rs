//! A model response's tool calls, checked before they enter the history: some
//! servers reuse ids, leave them out, or send an input that is not an object.

use std::collections::HashSet;

use crate::message::{ContentBlock, Message};

/// One tool call of a model response, checked: ids unique within the response, input
/// an object. A call that failed the check is answered with `problem` instead of run.
pub(super) struct ToolCall {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) input: serde_json::Value,
    pub(super) problem: Option<String>,
}

/// Check the calls of a response before it enters the history. A call repeating
/// the id of a call earlier in the history (some servers number calls afresh in every
/// response) or having none is renamed and run: the id only pairs a call with its
/// result. A duplicate
/// id within the response is renamed too (the API rejects two results for one id) but
/// not run, as is a non-object input (wrapped in an object, which the API requires),
/// each with a problem the model reads.
pub(super) fn checked_calls(content: &mut [ContentBlock], history: &[Message]) -> Vec<ToolCall> {
    let mut taken: HashSet<String> = history
        .iter()
        .flat_map(|message| message.tool_use_ids().map(str::to_string))
        .collect();
    let mut in_response: HashSet<String> = HashSet::new();
    let mut calls = Vec::new();
    for block in content {
        let ContentBlock::ToolUse { id, name, input, .. } = block else {
            continue;
        };
        let mut problems = Vec::new();
        let original = id.clone();
        if !id.is_empty() && in_response.contains(id.as_str()) {
            problems.push(format!(
                "this call repeated the id {original:?} of another call in the same response, so it was not run; \
                 give every call its own id"
            ));
        }
        if id.is_empty() || taken.contains(id.as_str()) {
            let base = if original.is_empty() { "call" } else { original.as_str() };
            *id = (2..)
                .map(|n| format!("{base}_dup{n}"))
                .find(|candidate| !taken.contains(candidate))
                .unwrap_or_default();
            tracing::warn!(original, renamed = %id, "a tool call reused an id; renamed");
        }
        if !input.is_object() {
            let original = std::mem::take(input);
            problems.push(format!(
                "the input of this call must be a JSON object, got {original}; it was not run"
            ));
            *input = serde_json::json!({ "invalid_input": original });
        }
        taken.insert(id.clone());
        in_response.insert(original);
        calls.push(ToolCall {
            id: id.clone(),
            name: name.clone(),
            input: input.clone(),
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
        });
    }
    calls
}
