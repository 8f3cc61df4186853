//! When the API refuses a prompt as too long (our character estimate undercounted its
//! tokenizer): first the recoverable stages shrink the history to the size the server
//! will take, and only if that is not enough is the history summarised, all but the
//! newest messages, before the caller retries once. The kept tail never starts with
//! results whose calls were summarised away, and the history never grows: if nothing
//! made it smaller, it is left exactly as it was and the caller reports the refusal.

use super::compact_history::{Summarise, summarise_prefix};
use super::estimate::Sizes;
use super::micro_compact::{fit_tool_results, micro_compact};
use super::pairing::{tail_start_backward, tail_start_forward};
use super::{CompactConfig, Context, Stage, StageEvent, Summariser, short_count, timed};
use crate::message::Message;

/// Why the prompt is too long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TooLong {
    /// The server refused it.
    Refused,
    /// The server counted it before it was sent: more `tokens` than its `window`
    /// holds with a reply, so it was not sent.
    Counted {
        /// The tokens the server counted.
        tokens: u64,
        /// The tokens its window holds.
        window: u64,
    },
}

/// What a reactive compaction aims at, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aim {
    /// The estimate the server would take, from the size it reported converted with
    /// the measured characters per token; `None` when it did not say (then half the
    /// current estimate).
    pub target: Option<usize>,
    /// Why the prompt was too long.
    pub cause: TooLong,
}

impl Aim {
    /// After a refusal, at `target` where the server said how much it takes.
    pub fn refused(target: Option<usize>) -> Self {
        Aim {
            target,
            cause: TooLong::Refused,
        }
    }
}

/// The events say what happened; when none replaced anything, or one carries an error
/// about growth, the history is unchanged.
pub fn reactive_compact(
    messages: &mut Vec<Message>,
    active_request: &str,
    aim: Aim,
    ctx: &Context<'_>,
    summariser: &mut dyn Summariser,
) -> Vec<StageEvent> {
    let config = ctx.config;
    let mut sizes = Sizes::of(messages, config.estimate);
    let before = sizes.total();
    let goal = aim.target.unwrap_or(before / 2).min(before.saturating_sub(1));
    // The recoverable stages aim straight at the goal.
    let aimed = CompactConfig {
        context_char_limit: crate::compact::Limit::chars(goal),
        micro_target_percent: 100,
        ..config.clone()
    };
    let ctx = ctx.with_config(&aimed);
    let original = messages.clone();
    let why = match aim.cause {
        TooLong::Refused => "the API refused the prompt as too long".to_string(),
        TooLong::Counted { tokens, window } => format!(
            "the server counted {tokens} tokens, more than its {window}-token window holds with a reply, so it was not sent"
        ),
    };
    let trigger = format!("{why}; aiming at {} chars", short_count(goal));
    let mut events = Vec::new();
    events.extend(timed(|| micro_compact(messages, &mut sizes, &ctx)));
    events.extend(timed(|| fit_tool_results(messages, &mut sizes, &ctx)));
    for event in &mut events {
        event.trigger.clone_from(&trigger);
    }
    if sizes.total() > goal {
        let wanted = messages.len().saturating_sub(config.reactive_keep_messages).max(1);
        let end = tail_start_backward(messages, wanted, 1).unwrap_or_else(|| tail_start_forward(messages, wanted));
        let end = fitted_tail_start(messages, &sizes, end, goal / 2);
        events.extend(timed(|| {
            [summarise_prefix(
                messages,
                &mut sizes,
                Summarise {
                    stage: Stage::ReactiveCompact,
                    end: end.min(messages.len()),
                    active_request,
                    focus: None,
                    trigger: trigger.clone(),
                    within: goal,
                },
                &ctx,
                summariser,
            )]
        }));
    }
    if sizes.total() >= before {
        *messages = original;
        let mut refused = StageEvent::start(Stage::ReactiveCompact, messages.len(), before, trigger);
        refused.errors.push(format!(
            "nothing could make the history smaller than its {before} characters; it is kept as it was"
        ));
        refused.stop(messages.len(), before);
        return vec![refused];
    }
    events
}

/// Where the kept tail starts once it takes at most `budget` characters, so that the
/// summary has room under the goal: the newest messages are dropped from it one pair
/// at a time (a small window keeps fewer than `reactive_keep_messages`). When even the
/// newest message is too large, nothing is kept verbatim and it is summarised too.
fn fitted_tail_start(messages: &[Message], sizes: &Sizes, mut start: usize, budget: usize) -> usize {
    let tail = |start: usize| (start..messages.len()).map(|i| sizes.of_message(i)).sum::<usize>();
    while start < messages.len() && tail(start) > budget {
        start = tail_start_forward(messages, start + 1);
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::ExtractiveSummariser;
    use crate::compact::markers::{MessageKind, classify};
    use crate::compact::pairing::check_pairing;
    use crate::history::History;
    use crate::message::{ContentBlock, Role};
    use crate::store::Store;

    /// A long opening request, then `n` small tool rounds: the tail is small next to
    /// the goal, so the count of kept messages decides.
    fn tool_rounds(n: usize) -> Vec<Message> {
        History::new()
            .request(format!("task {}", "background ".repeat(200)))
            .rounds(n, "bash", &serde_json::json!({"command": "ls"}), |_| "out".into())
            .build()
    }

    #[test]
    fn keeps_the_newest_five_without_splitting_a_pair() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let original = tool_rounds(6);
        let mut history = original.clone();
        let events = reactive_compact(
            &mut history,
            "task",
            Aim::refused(None),
            &crate::compact::Context::new(&CompactConfig::default(), &store),
            &mut ExtractiveSummariser,
        );
        let [event] = events.as_slice() else {
            panic!("one summary: {events:?}")
        };
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
    fn a_short_history_that_would_only_grow_is_kept_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let original = vec![Message::user_text("b")];
        let mut history = original.clone();
        let events = reactive_compact(
            &mut history,
            "b",
            Aim::refused(None),
            &crate::compact::Context::new(&CompactConfig::default(), &store),
            &mut ExtractiveSummariser,
        );
        assert_eq!(history, original);
        assert!(
            events.iter().all(|e| e.replaced == 0 && !e.errors.is_empty()),
            "{events:?}"
        );
    }

    #[test]
    fn large_results_of_a_short_history_are_persisted_without_a_summary() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        // Three messages: the request, three calls, three large results (unseen).
        let calls = (0..3)
            .map(|i| ContentBlock::tool_use(format!("t{i}"), "read_file", serde_json::json!({"path": "big"})))
            .collect();
        let results = (0..3)
            .map(|i| ContentBlock::tool_result(format!("t{i}"), "z".repeat(11_000 + i), false))
            .collect();
        let mut history = vec![
            Message::user_text("read the three files"),
            Message::blocks(Role::Assistant, calls),
            Message::blocks(Role::User, results),
        ];
        let before = crate::compact::estimate_chars(&history);
        let events = reactive_compact(
            &mut history,
            "read the three files",
            Aim::refused(Some(20_000)),
            &crate::compact::Context::new(&CompactConfig::default(), &store),
            &mut ExtractiveSummariser,
        );
        let after = crate::compact::estimate_chars(&history);
        assert!(after <= 20_000 && after < before, "{before} -> {after}");
        assert!(events.iter().all(|e| e.stage != Stage::ReactiveCompact), "{events:?}");
        assert_eq!(history.len(), 3, "nothing was summarised");
        assert_eq!(check_pairing(&history), Ok(()));
        assert!(
            events
                .iter()
                .any(|e| e.stage == Stage::FitToolResults && e.replaced >= 1)
        );
    }

    /// Three turns of about 2.5k characters: the history of a small window.
    fn three_long_turns() -> (Vec<Message>, String) {
        let current = format!("now the third: {}", "c".repeat(2_500));
        let history = vec![
            Message::user_text(format!("first: {}", "a".repeat(2_500))),
            Message::assistant_text("done with the first"),
            Message::user_text(format!("second: {}", "b".repeat(2_500))),
            Message::assistant_text("done with the second"),
            Message::user_text(current.clone()),
        ];
        (history, current)
    }

    fn occurrences(history: &[Message], text: &str) -> usize {
        history.iter().map(|message| message.text().matches(text).count()).sum()
    }

    /// The three long turns compacted reactively towards `target`, which the history
    /// then meets: the history after, and the current request.
    fn three_long_turns_compacted(target: usize) -> (Vec<Message>, String) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let (mut history, current) = three_long_turns();
        let before = crate::compact::estimate_chars(&history);
        let events = reactive_compact(
            &mut history,
            &current,
            Aim::refused(Some(target)),
            &crate::compact::Context::new(&CompactConfig::default(), &store),
            &mut ExtractiveSummariser,
        );
        let after = crate::compact::estimate_chars(&history);
        assert!(after <= target && after < before, "{before} -> {after}: {events:?}");
        (history, current)
    }

    #[test]
    fn the_request_kept_verbatim_is_not_repeated_in_the_summary() {
        let (history, current) = three_long_turns_compacted(6_000);
        assert_eq!(occurrences(&history, &current), 1, "{history:#?}");
        assert_eq!(history.last().unwrap().text(), current);
        assert_eq!(
            classify(&history[0]),
            MessageKind::CompactedSummary { request: None },
            "the summary refers to the kept request"
        );
        assert_eq!(crate::compact::newest_request(&history), current);
    }

    #[test]
    fn a_small_window_keeps_fewer_messages_so_the_prompt_shrinks_to_the_goal() {
        let (history, _) = three_long_turns_compacted(3_000);
        assert_eq!(history.len(), 1, "even the request was too large to keep whole");
        assert!(occurrences(&history, "ccccc") > 0, "the request survives, cut to fit");
        assert_eq!(check_pairing(&history), Ok(()));
    }
}
