//! A tool call's result as the model reads it: text as text, everything else as one
//! line that says what it was (the wire's tool results here carry text), and the
//! server's `isError` as the result's `is_error`.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::tool_output::ToolOutput;

/// The model's view of `result`.
pub fn to_output(result: &CallToolResult) -> ToolOutput {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(crate::json::to_string(structured).unwrap_or_default());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image: {}, {} bytes of base64 not shown]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {} bytes of base64 not shown]",
            audio.mime_type,
            audio.data.len()
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => format!("[resource {uri}]\n{text}"),
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[resource {uri}: {} bytes of base64 not shown]", blob.len())
            }
            // A kind of resource newer than this client: kept as its JSON.
            other => crate::json::to_string(other).unwrap_or_default(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {}: {}]", link.name, link.uri),
        // A kind of content newer than this client: kept as its JSON.
        other => crate::json::to_string(other).unwrap_or_default(),
    }
}
