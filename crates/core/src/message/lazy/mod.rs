//! The lazy reader, for `scratchpad compact` and `simulate` on long histories (10k to
//! 200k messages): a message whose text is exactly how it serialises is kept as that
//! text ([`raw`]) and parsed only when something needs its parts; until then it is
//! counted, written to a transcript and sketched from its text. The live agent never
//! builds such a message: its histories come from the model and the journal, and are
//! parsed. Everything that knows a message can be kept as text is here, or names it:
//! [`super::Message::raw`] has three readers outside (the estimate's count, the
//! transcript writer, message equality).

pub(super) mod raw;
mod sketch;

use std::ops::Range;
use std::sync::Arc;

use super::{Body, Message, Parts};
use raw::RawText;

pub(super) use sketch::of_text;

/// A JSON array of messages. Each message whose text is exactly how it serialises, and
/// has what parsing requires, has its syntax checked and is kept as that text; any
/// other is parsed. A long history is read on every core.
pub(super) fn read_history(json: Vec<u8>) -> Result<Vec<Message>, serde_json::Error> {
    let Some(spans) = raw::elements(&json) else {
        return crate::json::from_slice(&json);
    };
    let source = Arc::new(json);
    let unread = std::sync::atomic::AtomicBool::new(false);
    let read = crate::parallel::map_with(
        spans.len(),
        MESSAGES_PER_THREAD,
        raw::Scratch::default,
        |scratch, at| {
            read_one(&source, &spans[at], scratch).unwrap_or_else(|| {
                unread.store(true, std::sync::atomic::Ordering::Relaxed);
                // A stand-in, never seen: the whole list is dropped below. Results that
                // need no unwrapping from an `Option` are not moved once more.
                Message::user_text(String::new())
            })
        },
    );
    if unread.into_inner() {
        // Read whole, so that the error says where in the whole text.
        return crate::json::from_slice(&source);
    }
    Ok(read)
}

/// Fewer messages than this a thread are read on one.
const MESSAGES_PER_THREAD: usize = 1_000;

/// The message at `span` of `source`; `None` when it is not valid, for the caller to
/// find out why.
fn read_one(source: &Arc<Vec<u8>>, span: &Range<usize>, scratch: &mut raw::Scratch) -> Option<Message> {
    // Checked a vector at a time: a history is mostly ASCII with a few wider
    // characters, which the standard check takes a character at a time.
    let text = simdutf8::basic::from_utf8(source.get(span.clone())?).ok()?;
    match raw::keep(text, scratch) {
        Some(kept) => Some(Message::unparsed(kept.role, RawText::new(source, text, kept.shape)?)),
        None => crate::json::from_str(text).ok(),
    }
}

/// The parts of a message kept as text.
pub(super) fn parts_of(text: &RawText) -> Parts {
    read_checked(text.as_str(), text.shape().depth)
}

/// The text of a message kept as `text` with every block's `content` cut to `""`,
/// into `short`: what a description reads (see [`super::sketch`]).
pub(super) fn without_contents(text: &RawText, short: &mut String) {
    let whole = text.as_str();
    short.clear();
    let mut from = 0;
    for content in &text.shape().contents {
        short.push_str(whole.get(from..content.start).unwrap_or_default());
        short.push_str("\"\"");
        from = content.end;
    }
    short.push_str(whole.get(from..).unwrap_or_default());
}

/// The parts of a message that [`raw::keep`] checked, nesting `depth` deep. Should
/// the scan and serde_json ever disagree about a text (a bug), it is read again
/// whole, at any depth; and should that fail too, its text becomes its content, so
/// nothing of it is lost. Either is logged.
fn read_checked(text: &str, depth: usize) -> Parts {
    let parts_of = |read: serde_json::Result<Message>| match read.map(|message| message.body) {
        Ok(Body::Parsed(parts)) => Ok(parts),
        Ok(Body::Raw { .. }) => Err("it read as text again".to_string()),
        Err(error) => Err(error.to_string()),
    };
    let disagreement = match parts_of(crate::json::from_str_of_depth::<Message>(text, depth)) {
        Ok(parts) => return parts,
        Err(disagreement) => disagreement,
    };
    tracing::error!(chars = text.len(), depth, %disagreement, "a message kept as text does not read as its scan said; reading it whole");
    parts_of(crate::json::from_str::<Message>(text)).unwrap_or_else(|error| {
        tracing::error!(%error, "a message kept as text does not read at all; its text is kept as its content");
        Parts {
            content: super::Content::Text(text.to_string()),
            extra: super::Extra::default(),
        }
    })
}

#[cfg(test)]
mod tests {
    /// A scan that got the depth wrong (a text deeper than it said) is read again
    /// whole instead of failing; a text that is no message at all keeps its text.
    #[test]
    fn a_text_the_scan_misjudged_is_read_whole_or_kept_as_text() {
        let depth = 200;
        let text = format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t","content":"{}"}}],"deep":{}1{}}}"#,
            "x",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let parts = super::read_checked(&text, 1);
        assert!(
            matches!(parts.content, crate::message::Content::Blocks(_)),
            "read whole"
        );
        let parts = super::read_checked("{\"role\":\"nobody\"}", 1);
        assert_eq!(
            parts.content,
            crate::message::Content::Text("{\"role\":\"nobody\"}".into())
        );
    }
}
