//! When the API refuses a prompt as too long (our character estimate undercounted its
//! tokenizer): save the transcript, summarise all but the newest messages and let the
//! caller retry once. The kept tail never starts with results whose calls were
//! summarised away.

use super::compact_history::{Summarise, summarise_prefix};
use super::estimate::Sizes;
use super::pairing::{tail_start_backward, tail_start_forward};
use super::{CompactConfig, Context, Stage, StageEvent, Summariser};
use crate::message::Message;
use crate::store::Store;

/// Returns the event; when it carries errors or replaced nothing, the history is
/// unchanged and the caller should surface the original API error.
pub fn reactive_compact(
    messages: &mut Vec<Message>,
    active_request: &str,
    config: &CompactConfig,
    store: &Store,
    summariser: &mut dyn Summariser,
) -> StageEvent {
    let mut sizes = Sizes::of(messages, config.estimate);
    let wanted = messages.len().saturating_sub(config.reactive_keep_messages).max(1);
    let end = tail_start_backward(messages, wanted, 1).unwrap_or_else(|| tail_start_forward(messages, wanted));
    let ctx = Context { config, store };
    summarise_prefix(
        messages,
        &mut sizes,
        Summarise {
            stage: Stage::ReactiveCompact,
            end: end.min(messages.len()),
            active_request,
            focus: None,
        },
        &ctx,
        summariser,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::ExtractiveSummariser;
    use crate::compact::pairing::check_pairing;
    use crate::message::{ContentBlock, Role, ToolResultContent};

    fn tool_rounds(n: usize) -> Vec<Message> {
        let mut history = vec![Message::user_text("task")];
        for i in 0..n {
            history.push(Message::blocks(
                Role::Assistant,
                vec![ContentBlock::ToolUse {
                    id: format!("t{i}"),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "ls"}),
                    extra: Default::default(),
                }],
            ));
            history.push(Message::blocks(
                Role::User,
                vec![ContentBlock::ToolResult {
                    tool_use_id: format!("t{i}"),
                    content: ToolResultContent::Text("out".into()),
                    is_error: None,
                    extra: Default::default(),
                }],
            ));
        }
        history
    }

    #[test]
    fn keeps_the_newest_five_without_splitting_a_pair() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let original = tool_rounds(6);
        let mut history = original.clone();
        let event = reactive_compact(
            &mut history,
            "task",
            &CompactConfig::default(),
            &store,
            &mut ExtractiveSummariser,
        );
        assert!(event.errors.is_empty());
        // 13 messages; the newest five would start with a result, so six are kept.
        assert_eq!(history.len(), 7);
        assert_eq!(history[1..], original[7..]);
        assert!(history[0].text().starts_with("[Compacted]"));
        assert_eq!(check_pairing(&history), Ok(()));
        assert_eq!(event.replaced, 7);
        assert!(store.trusted_path(&event.paths[0]).is_some());
    }

    #[test]
    fn a_short_history_is_summarised_down_to_its_last_message() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let mut history = vec![
            Message::user_text("x".repeat(10_000)),
            Message::assistant_text("a"),
            Message::user_text("b"),
        ];
        let event = reactive_compact(
            &mut history,
            "b",
            &CompactConfig::default(),
            &store,
            &mut ExtractiveSummariser,
        );
        assert_eq!(event.replaced, 1);
        assert_eq!(history.len(), 3);
    }
}
