//! Previews: what compaction would do now, without writing anything or asking a model.
//! The recoverable stages run exactly as they would (reading the workspace, writing
//! nothing); the summary stage shows which messages it would summarise and their size.

use super::{
    Asked, CompactConfig, Context, SessionFacts, StageEvent, Summariser, SummaryError, SummaryRequest, force_compact,
    prepare,
};
use crate::message::Message;
use crate::store::Store;

/// What a preview stands in for the summary: no model is asked.
pub const NOT_WRITTEN: &str = "(a preview: no summary is written)";

struct NoSummary;

impl Summariser for NoSummary {
    fn summarise(&mut self, _request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        Ok(NOT_WRITTEN.to_string())
    }
}

/// Which compaction to preview.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Preview {
    /// The automatic pipeline before the next model call.
    Prepare,
    /// `/compact [focus]`.
    Compact {
        /// What the summary is to dwell on.
        focus: Option<String>,
    },
}

/// The events (receipts) the compaction would produce on `messages` now.
pub fn preview(
    messages: &[Message],
    active_request: &str,
    config: &CompactConfig,
    facts: &SessionFacts,
    workspace: &std::path::Path,
    what: &Preview,
) -> Vec<StageEvent> {
    let store = Store::new(workspace).dry_run();
    let ctx = Context {
        config,
        store: &store,
        facts,
    };
    let mut events = match what {
        Preview::Prepare => prepare(messages.to_vec(), active_request, &ctx, &mut NoSummary).events,
        Preview::Compact { focus } => {
            let mut copy = messages.to_vec();
            let asked = Asked {
                focus: focus.as_deref(),
                ..Asked::by("the user (a preview)", active_request)
            };
            vec![force_compact(&mut copy, asked, &ctx, &mut NoSummary)]
        }
    };
    for event in &mut events {
        // Nothing was summarised: no summary to show or to check.
        event.summary = None;
        event.loss = None;
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::Stage;
    use crate::message::{ContentBlock, Role};

    #[test]
    fn a_preview_runs_every_stage_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut messages = vec![Message::user_text("go")];
        for i in 0..30 {
            messages.push(Message::blocks(
                Role::Assistant,
                vec![ContentBlock::tool_use(
                    format!("t{i}"),
                    "bash",
                    serde_json::json!({"command": "ls"}),
                )],
            ));
            messages.push(Message::blocks(
                Role::User,
                vec![ContentBlock::tool_result(format!("t{i}"), "x".repeat(4_000), false)],
            ));
        }
        let config = CompactConfig::default();
        let events = preview(
            &messages,
            "go",
            &config,
            &SessionFacts::NONE,
            dir.path(),
            &Preview::Prepare,
        );
        let stages: Vec<Stage> = events.iter().map(|e| e.stage).collect();
        assert!(stages.contains(&Stage::SnipCompact), "{stages:?}");
        assert!(events.iter().all(|e| e.errors.is_empty()));
        assert!(events.iter().any(|e| !e.items.is_empty()));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was written");
        let compact = preview(
            &messages,
            "go",
            &config,
            &SessionFacts::NONE,
            dir.path(),
            &Preview::Compact { focus: None },
        );
        assert_eq!(compact[0].stage, Stage::CompactHistory);
        assert_eq!(
            compact[0].items.len(),
            messages.len(),
            "every message would be summarised"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was written");
    }
}
