//! A summary prepared before it is needed. Once the estimate passes
//! `background_at_percent` of the limit, the caller summarises the older part of the
//! history (all but the newest `reactive_keep_messages`, cut where no call is split
//! from its result) in a separate model call while the session goes on. When stage 4
//! fires later, the summary is swapped in without a call, but only if the messages it
//! summarised are still the start of the history: each is fingerprinted when the
//! summary starts, its shape (roles, blocks, ids, texts) apart from its tool results'
//! contents, so a result a recoverable stage has since saved to disk (the text the
//! summary read is kept there) does not void it, while any other change does.

use serde::{Deserialize, Serialize};

use super::estimate::Sizes;
use super::markers::{MessageKind, ResultKind, classify, classify_result, compacted_text};
use super::pairing::{tail_start_backward, tail_start_forward};
use super::{CompactConfig, Summariser, SummaryError, SummaryRequest};
use crate::message::{ContentBlock, Message};

/// One summarised message, as its fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagePrint {
    /// The SHA-256 of the message with its tool results' contents left out.
    pub shape: String,
    /// The SHA-256 of the whole message.
    pub whole: String,
}

/// The start of the history a background summary covers: `messages[..end]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefix {
    /// How many messages from the start it covers.
    pub end: usize,
    /// A print of each of them, to tell whether they are still the start of the history.
    pub prints: Vec<MessagePrint>,
    /// The shape of the first message after them, where the kept messages begin.
    pub after: Option<String>,
}

/// A finished background summary, waiting for the limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadySummary {
    /// The start of the history it summarises.
    pub prefix: Prefix,
    /// The summary, as it goes into the `[Compacted]` message.
    pub summary: String,
    /// The model's text, when the user edited `summary` in review (`/summary`).
    pub model_summary: Option<String>,
    /// The estimate's share of the limit when the summary started.
    pub started_at_percent: usize,
    /// When it started (Unix seconds).
    pub started_unix: u64,
    /// How long the model took.
    pub took_ms: u64,
    /// Prompt tokens the summary request read from and wrote to the provider's cache.
    pub cache_read: Option<u64>,
    /// Prompt tokens the summary request wrote to the provider's cache.
    pub cache_written: Option<u64>,
    /// The server's compaction block, when the server wrote the summary: it goes in
    /// first, as it came back.
    pub server_block: Option<serde_json::Value>,
}

/// Where a background summary should cover up to now, if it should start: the
/// estimate is at or past `background_at_percent` of the limit (0 turns it off), and
/// something older than the kept tail is left to summarise, while the tail itself takes
/// at most half of stage 3's target (a swap must leave room to work, or the next call
/// would be at the limit again).
pub fn prefix_to_summarise(messages: &[Message], sizes: &Sizes, config: &CompactConfig) -> Option<usize> {
    let percent = config.background_at_percent;
    if percent == 0 || sizes.total() * 100 < config.context_char_limit.chars * percent {
        return None;
    }
    let wanted = messages.len().saturating_sub(config.reactive_keep_messages);
    let end = tail_start_backward(messages, wanted, 1).unwrap_or_else(|| tail_start_forward(messages, wanted));
    // A summary of the first request alone saves nothing.
    let worth_it = end >= 2 && end < messages.len();
    // The messages kept after it take at most half of stage 3's target, so the swap
    // leaves room to work.
    (worth_it && sizes.total_with_empty_prefix(end) <= config.micro_target_chars() / 2).then_some(end)
}

/// The estimate's share of the limit, in whole percent.
pub fn percent_of_limit(sizes: &Sizes, config: &CompactConfig) -> usize {
    sizes.total() * 100 / config.context_char_limit.chars.max(1)
}

fn sha256_of(value: &impl Serialize) -> String {
    crate::digest::sha256_hex(&crate::json::to_vec(value).unwrap_or_default())
}

/// The message with every tool result's content emptied: what stays the same when a
/// recoverable stage saves a result to disk.
pub(super) fn shape_of(message: &Message) -> Message {
    let mut shape = message.clone();
    if let crate::message::Content::Blocks(blocks) = shape.content_mut() {
        for block in blocks {
            if let ContentBlock::ToolResult { content, .. } = block {
                *content = crate::message::ToolResultContent::Text(String::new());
            }
        }
    }
    shape
}

/// The fingerprints of `messages[..end]`.
pub fn fingerprint(messages: &[Message], end: usize) -> Prefix {
    Prefix {
        end,
        prints: messages[..end.min(messages.len())]
            .iter()
            .map(|message| MessagePrint {
                shape: sha256_of(&shape_of(message)),
                whole: sha256_of(message),
            })
            .collect(),
        after: messages.get(end).map(|message| sha256_of(&shape_of(message))),
    }
}

/// Whether a summary of `prefix` can stand for the start of `messages` now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// The same messages, now `messages[..end]`: `rewritten` tool results among them
    /// were since saved to disk and `archived` of them moved to a transcript by
    /// snip_compact (recoverable stages: the summary read their text, which is kept).
    Stands {
        /// Where they end in the history now.
        end: usize,
        /// How many of their tool results were saved to disk since.
        rewritten: usize,
        /// How many of them snip_compact moved to a transcript since.
        archived: usize,
    },
    /// They changed: why, in words.
    Changed(String),
}

/// Whether a summary of `prefix` can still stand for the start of `messages`, and why
/// not when it cannot.
pub fn standing(prefix: &Prefix, messages: &[Message]) -> Standing {
    let prints = &prefix.prints;
    let (mut print, mut at, mut rewritten, mut archived) = (0, 0, 0, 0);
    while print < prints.len() {
        let Some(message) = messages.get(at) else {
            return Standing::Changed(format!(
                "the history has {} messages now, fewer than those it summarised",
                messages.len()
            ));
        };
        if sha256_of(message) == prints[print].whole {
            (print, at) = (print + 1, at + 1);
            continue;
        }
        if sha256_of(&shape_of(message)) == prints[print].shape {
            // Only its results changed: each must now point to where its text was saved.
            let saved = message
                .block_slice()
                .iter()
                .filter(|block| {
                    matches!(block, ContentBlock::ToolResult { content, .. }
                        if !matches!(classify_result(content), ResultKind::Whole))
                })
                .count();
            if saved == 0 {
                return Standing::Changed(format!("a tool result of message {} changed", print + 1));
            }
            rewritten += saved;
            (print, at) = (print + 1, at + 1);
            continue;
        }
        // snip_compact moved a run of them to a transcript and left its marker (which
        // may hold an earlier marker): they resume after it, or the run ended exactly
        // where the summarised messages did, before the first kept one.
        if matches!(classify(message), MessageKind::ArchiveMarker { .. }) {
            let next = messages.get(at + 1).map(|next| sha256_of(&shape_of(next)));
            let resume = (print..prints.len())
                .find(|&j| Some(&prints[j].shape) == next.as_ref())
                .or_else(|| (next.is_some() && next == prefix.after).then_some(prints.len()));
            if let Some(resume) = resume.filter(|&resume| resume > print) {
                archived += resume - print;
                print = resume;
                at += 1;
                continue;
            }
        }
        return Standing::Changed(format!("message {} of those it summarised changed", print + 1));
    }
    if messages.get(at).is_some_and(Message::has_tool_result) {
        return Standing::Changed("the messages after it start with results of calls it summarised".into());
    }
    Standing::Stands {
        end: at,
        rewritten,
        archived,
    }
}

/// Room a transcript path takes in the `[Compacted]` message, at most: the stage and
/// time make its name, so its length hardly varies.
const TRANSCRIPT_PATH_ROOM: usize = 128;

/// Whether the `[Compacted]` message with `summary` in full, followed by the messages
/// after the prefix, fits stage 3's target: a swap must leave the history under the
/// limit without cutting the summary it waited for, with room to work before the
/// next compaction.
pub fn swap_fits(sizes: &Sizes, end: usize, request: &str, summary: &str, config: &CompactConfig) -> bool {
    let placeholder = "x".repeat(TRANSCRIPT_PATH_ROOM);
    let compacted = Message::user_text(compacted_text(Some(request), summary, "", &placeholder, end));
    sizes.total_with_empty_prefix(end) + sizes.measure(&compacted) <= config.micro_target_chars()
}

/// A summariser that hands back a summary made earlier (with the server's block when
/// the server wrote it).
pub struct Prepared(pub crate::compact::Summary);

impl Summariser for Prepared {
    fn summarise(&mut self, _request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        Ok(self.0.text.clone())
    }

    fn summarise_for_history(
        &mut self,
        _request: &SummaryRequest<'_>,
    ) -> Result<crate::compact::Summary, SummaryError> {
        Ok(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::markers::cleared_reference;
    use crate::history::History;

    fn config(percent: usize) -> CompactConfig {
        CompactConfig {
            context_char_limit: crate::compact::Limit::chars(4_000),
            background_at_percent: percent,
            ..CompactConfig::default()
        }
    }

    fn rounds(n: usize) -> Vec<Message> {
        History::new()
            .request("task")
            .rounds(n, "bash", &serde_json::json!({"command": "ls"}), |i| {
                format!("output {i} ").repeat(20)
            })
            .build()
    }

    #[test]
    fn it_starts_at_the_threshold_and_never_splits_a_pair() {
        let history = rounds(12);
        let sizes = Sizes::of(&history, crate::compact::EstimateMode::Seed);
        assert!(percent_of_limit(&sizes, &config(70)) >= 70, "{}", sizes.total());
        assert_eq!(prefix_to_summarise(&history, &sizes, &config(0)), None, "0 is off");
        let end = prefix_to_summarise(&history, &sizes, &config(70)).expect("past the threshold");
        assert!(!history[end].has_tool_result(), "the tail starts with no orphan result");
        assert!(history.len() - end >= 5);
        let far = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(1_000_000),
            ..config(70)
        };
        assert_eq!(prefix_to_summarise(&history, &sizes, &far), None, "below the threshold");
    }

    /// Counts its calls: a swap must make none.
    struct Counting(usize);

    impl Summariser for Counting {
        fn summarise(&mut self, _request: &SummaryRequest<'_>) -> Result<String, SummaryError> {
            self.0 += 1;
            Ok("a summary written at the limit".into())
        }
    }

    fn ready_for(history: &[Message], end: usize) -> ReadySummary {
        ReadySummary {
            prefix: fingerprint(history, end),
            summary: "Goal: the task. Done: rounds 1 to 9 listed the files.".into(),
            model_summary: None,
            started_at_percent: 71,
            started_unix: crate::time::unix_now() - 120,
            took_ms: 5_000,
            cache_read: None,
            cache_written: None,
            server_block: None,
        }
    }

    /// Stage 4 at the limit with the summary `ready`, on `history`.
    fn stage_four(
        history: &mut Vec<Message>,
        ready: &ReadySummary,
        limit: usize,
        summariser: &mut Counting,
    ) -> crate::compact::StageEvent {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::new(dir.path());
        let config = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(limit),
            ..config(70)
        };
        let ctx = crate::compact::Context::new(&config, &store);
        let mut sizes = Sizes::of(history, config.estimate);
        let event = crate::compact::compact_history::compact_history(
            history,
            &mut sizes,
            "task",
            &ctx,
            summariser,
            Some(ready),
        )
        .expect("over the limit");
        assert_eq!(sizes.total(), crate::compact::estimate_chars(history));
        assert!(sizes.total() <= limit, "{} over {limit}", sizes.total());
        crate::compact::pairing::check_pairing(history).expect("pairs kept");
        event
    }

    #[test]
    fn at_the_limit_a_standing_summary_is_swapped_in_with_no_call() {
        let original = rounds(12);
        let end = 19;
        let ready = ready_for(&original, end);
        let mut history = original.clone();
        let mut summariser = Counting(0);
        let event = stage_four(&mut history, &ready, 4_000, &mut summariser);
        assert_eq!(summariser.0, 0, "no model call at the limit");
        assert_eq!(history[1..], original[end..], "the messages after the prefix, verbatim");
        assert!(history[0].text().starts_with("[Compacted]") && history[0].text().contains("rounds 1 to 9"));
        let swapped = event.swapped.clone().expect("swapped");
        assert_eq!((swapped.prepared_at_percent, swapped.results_rewritten), (71, 0));
        assert!(
            event
                .summary_line()
                .contains("swapped in a summary prepared at 71% (2 min ago), wait 0.0 s"),
            "{}",
            event.summary_line()
        );
        assert_eq!(event.replaced, end);
        assert!(
            event.archived.is_some(),
            "the whole history is in a transcript, as for any stage 4"
        );
    }

    /// A swap is undone as any stage 4 is: from its transcript, checked against its
    /// receipt.
    #[test]
    fn a_swap_is_undone_from_its_transcript() {
        let original = rounds(12);
        let ready = ready_for(&original, 19);
        let mut history = original.clone();
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::new(dir.path());
        let config = CompactConfig {
            context_char_limit: crate::compact::Limit::chars(4_000),
            ..config(70)
        };
        let ctx = crate::compact::Context::new(&config, &store);
        let mut sizes = Sizes::of(&history, config.estimate);
        let event = crate::compact::compact_history::compact_history(
            &mut history,
            &mut sizes,
            "task",
            &ctx,
            &mut Counting(0),
            Some(&ready),
        )
        .expect("over the limit");
        assert!(event.swapped.is_some());
        let undone = crate::compact::undo::undo(&history, &event, &store, config.estimate).unwrap();
        assert_eq!(undone, original);
    }

    #[test]
    fn a_summary_of_results_saved_since_is_still_swapped_in_and_says_so() {
        let original = rounds(12);
        let ready = ready_for(&original, 19);
        let mut history = original.clone();
        for block in crate::compact::pairing::blocks_mut(&mut history[2]) {
            if let ContentBlock::ToolResult { content, .. } = block {
                *content = crate::message::ToolResultContent::Text(cleared_reference(
                    ".task_outputs/tool-results/toolu_1.txt",
                ));
            }
        }
        let mut summariser = Counting(0);
        let event = stage_four(&mut history, &ready, 4_000, &mut summariser);
        assert_eq!(summariser.0, 0);
        assert_eq!(event.swapped.as_ref().map(|s| s.results_rewritten), Some(1));
        assert!(event.summary_line().contains("still valid"), "{}", event.summary_line());
    }

    #[test]
    fn a_summary_whose_messages_changed_or_leave_no_room_is_set_aside() {
        let original = rounds(12);
        let ready = ready_for(&original, 19);
        let mut changed = original.clone();
        changed[0] = Message::user_text("a different task");
        let mut summariser = Counting(0);
        let event = stage_four(&mut changed, &ready, 4_000, &mut summariser);
        assert_eq!(summariser.0, 1, "summarised as usual");
        assert_eq!(event.swapped, None);
        let why = event.background_discarded.clone().unwrap_or_default();
        assert!(why.contains("message 1 of those it summarised changed"), "{why}");
        assert!(
            event.summary_line().contains("was not used"),
            "{}",
            event.summary_line()
        );

        // The newest messages alone fill most of the limit: no room for the summary.
        let mut full = original.clone();
        let ready = ReadySummary {
            summary: "x".repeat(3_000),
            ..ready_for(&original, 19)
        };
        let mut summariser = Counting(0);
        let event = stage_four(&mut full, &ready, 4_000, &mut summariser);
        assert_eq!(summariser.0, 1);
        assert!(
            event
                .background_discarded
                .unwrap_or_default()
                .contains("too little room")
        );
    }

    /// snip_compact moves the middle of a long history to a transcript after the
    /// summary started: the messages it summarised are all still there (on disk or in
    /// the history), so it stands, for the prefix as it is now.
    #[test]
    fn a_prefix_stands_when_snip_archived_part_of_it_since() {
        let original = rounds(30);
        let end = 55;
        assert!(!original[end].has_tool_result());
        let prefix = fingerprint(&original, end);
        let mut history = original.clone();
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::new(dir.path());
        let config = CompactConfig::default();
        let ctx = crate::compact::Context::new(&config, &store);
        let mut sizes = Sizes::of(&history, config.estimate);
        let snipped = crate::compact::snip_compact::snip_compact(&mut history, &mut sizes, &ctx).expect("over 50");
        let archived = snipped.replaced;
        assert!(archived > 0);
        assert_eq!(
            standing(&prefix, &history),
            Standing::Stands {
                end: end - archived + 1,
                rewritten: 0,
                archived
            }
        );
        // A second snip archives the first one's marker with more of them.
        let more = History::new()
            .request("more")
            .rounds(2, "bash", &serde_json::json!({"command": "pwd"}), |_| "/work".into())
            .build();
        for message in more {
            sizes.push(&message);
            history.push(message);
        }
        let again = crate::compact::snip_compact::snip_compact(&mut history, &mut sizes, &ctx).expect("over 50");
        assert!(again.replaced > 0);
        match standing(&prefix, &history) {
            Standing::Stands {
                archived: now, end: at, ..
            } => {
                assert!(now > archived, "{now} archived by both snips");
                assert_eq!(history.len() - at, original.len() - end + 5, "the kept messages follow");
            }
            changed => panic!("{changed:?}"),
        }
        // A snip that also took messages it did not summarise: it no longer stands.
        let late = fingerprint(&original, 9);
        assert!(matches!(standing(&late, &history), Standing::Changed(_)));
    }

    #[test]
    fn a_prefix_stands_through_saved_results_and_falls_with_any_other_change() {
        let history = rounds(6);
        let prefix = fingerprint(&history, 7);
        assert!(
            matches!(standing(&fingerprint(&history, 6), &history), Standing::Changed(why) if why.contains("start with results"))
        );
        let unchanged = Standing::Stands {
            end: 7,
            rewritten: 0,
            archived: 0,
        };
        assert_eq!(standing(&prefix, &history), unchanged);

        let mut cleared = history.clone();
        for block in crate::compact::pairing::blocks_mut(&mut cleared[2]) {
            if let ContentBlock::ToolResult { content, .. } = block {
                *content =
                    crate::message::ToolResultContent::Text(cleared_reference(".task_outputs/tool-results/x.txt"));
            }
        }
        assert_eq!(
            standing(&prefix, &cleared),
            Standing::Stands {
                end: 7,
                rewritten: 1,
                archived: 0
            }
        );

        let mut edited = history.clone();
        for block in crate::compact::pairing::blocks_mut(&mut edited[2]) {
            if let ContentBlock::ToolResult { content, .. } = block {
                *content = crate::message::ToolResultContent::Text("something else".into());
            }
        }
        assert!(
            matches!(standing(&prefix, &edited), Standing::Changed(why) if why.contains("tool result of message 3"))
        );

        let mut reworded = history.clone();
        reworded[0] = Message::user_text("another task");
        assert!(matches!(standing(&prefix, &reworded), Standing::Changed(why) if why.contains("message 1")));

        assert!(matches!(standing(&prefix, &history[..3]), Standing::Changed(why) if why.contains("fewer")));
    }
}
