//! The turn-state machine, driven as a user drives it: the app on a real agent (an
//! in-process server on loopback), every question and review with each answer and
//! with Esc and Ctrl+C, while a turn runs and between turns. Each ends with the app
//! ready, no tool call started after a cancel, and the next request runs.

mod common;

use common::{Driven, MockApi, agent_settings, bash_call, start_agent, text_reply, tool_reply};
use crossterm::event::{KeyCode, KeyModifiers};
use scratchpad::agent::AskPolicy;
use scratchpad::protocol::{AgentEvent, TurnOutcome};
use scratchpad::tui::state::TurnState;

/// Prose long enough, repeated, for a summary to be worth writing.
const LONG: &str = "The lexer reads the source and hands the parser its tokens, one at a time. ";

/// How a question is met: one of its answers, or one of the two cancels.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Press {
    Key(char),
    Ctrl(char),
    Esc,
    CtrlC,
}

impl Press {
    fn press(self, driven: &mut Driven) {
        match self {
            Press::Key(c) => driven.key(KeyCode::Char(c), KeyModifiers::NONE),
            Press::Ctrl(c) => driven.key(KeyCode::Char(c), KeyModifiers::CONTROL),
            Press::Esc => driven.key(KeyCode::Esc, KeyModifiers::NONE),
            Press::CtrlC => driven.key(KeyCode::Char('c'), KeyModifiers::CONTROL),
        }
    }

    fn cancels(self) -> bool {
        matches!(self, Press::Esc | Press::CtrlC)
    }
}

/// After a cancel the status says so at once, and the turn ends cancelled with no
/// tool call run after it; after an answer that goes on, the turn completes.
async fn ends_as_pressed(driven: &mut Driven, press: Press, mark: usize) {
    if press.cancels() {
        assert_eq!(
            driven.app.state.turn.state(),
            TurnState::Cancelling,
            "{press:?}: the status follows the cancel at once"
        );
    }
    driven.until_ready(mark).await;
    assert_eq!(driven.app.state.turn.state(), TurnState::Idle, "{press:?}");
    if press.cancels() {
        assert_eq!(driven.last_outcome(), Some(TurnOutcome::Cancelled), "{press:?}");
        assert_eq!(
            driven.calls_run_after(mark),
            0,
            "{press:?}: a tool call ran after the cancel"
        );
    } else {
        assert_eq!(driven.last_outcome(), Some(TurnOutcome::Completed), "{press:?}");
    }
}

/// The next request runs and completes (a history still over the limit is summarised
/// and reviewed again, answered "not now").
async fn next_request_runs(driven: &mut Driven) {
    let mark = driven.seen.len();
    driven.send("and now this");
    loop {
        driven
            .until("the turn's end or a question", |app| {
                !app.state.is_busy() || app.state.turn.question().is_some()
            })
            .await;
        if driven.app.state.turn.review().is_none() {
            break;
        }
        driven.until_asked().await;
        Press::Ctrl('r').press(driven);
    }
    driven.until_ready(mark).await;
    assert!(
        driven.seen[mark..].iter().any(|event| matches!(
            event,
            AgentEvent::TurnDone {
                outcome: TurnOutcome::Completed,
                ..
            }
        )),
        "the next request ran"
    );
}

/// A permission question in a turn: allowed, denied, Esc and Ctrl+C.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_to_a_permission_question_ends_ready() {
    for press in [Press::Key('y'), Press::Key('n'), Press::Esc, Press::CtrlC] {
        // A cancelled turn reads no more of the script: the next request gets the rest.
        let script = if press.cancels() {
            vec![
                tool_reply("Deleting.", &[bash_call("t1", "rm -f gone.txt")]),
                text_reply("next done"),
            ]
        } else {
            vec![
                tool_reply("Deleting.", &[bash_call("t1", "rm -f gone.txt")]),
                tool_reply("Again.", &[bash_call("t2", "rm -f also-gone.txt")]),
                text_reply("done"),
                text_reply("next done"),
            ]
        };
        let api = MockApi::start(script).await;
        let mut driven = Driven::new(start_agent(&api, agent_settings(AskPolicy::Ask)).await);
        driven.send("make a file");
        driven.until_asked().await;
        assert!(driven.app.state.turn.permission().is_some());
        assert_eq!(driven.app.state.turn.state(), TurnState::Asking);
        let mark = driven.seen.len();
        press.press(&mut driven);
        if !press.cancels() {
            // The second call asks too: answered the same way.
            driven.until_asked().await;
            press.press(&mut driven);
        }
        ends_as_pressed(&mut driven, press, mark).await;
        next_request_runs(&mut driven).await;
    }
}

/// With `compaction.review_summaries`: the one review step in a turn, with no question
/// before it, each answer and both cancels. After the cancel the scripted tool call is
/// never run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_to_the_review_in_a_turn_ends_ready() {
    for press in [Press::Ctrl('s'), Press::Ctrl('r'), Press::Esc, Press::CtrlC] {
        let api = MockApi::start(vec![
            tool_reply("Listing.", &[bash_call("t1", "ls")]),
            text_reply("done"),
            text_reply("next done"),
            text_reply("more"),
        ])
        .await;
        let mut settings = agent_settings(AskPolicy::Ask);
        settings.compaction.review_summaries = true;
        settings.compaction.context_char_limit.chars = 2_000;
        let mut driven = Driven::new(start_agent(&api, settings).await);
        driven.app.input.set_text(&"a".repeat(2_500));
        driven.key(KeyCode::Enter, KeyModifiers::NONE);
        driven.until_asked().await;
        let review = driven.app.state.turn.review().cloned().expect("the review, first");
        assert!(review.leaves.contains("), kept in .transcripts/"), "{}", review.leaves);
        assert_eq!(driven.app.state.turn.state(), TurnState::Reviewing);
        let screen = driven.draw();
        assert!(screen.contains("What leaves the context:"), "{screen}");
        let mark = driven.seen.len();
        press.press(&mut driven);
        // "Not now" sends the long request over the limit: the next model call is
        // summarised and reviewed again, answered "not now" until the turn ends.
        while !press.cancels() {
            driven
                .until("the turn's end or a question", |app| {
                    !app.state.is_busy() || app.state.turn.review().is_some()
                })
                .await;
            if driven.app.state.turn.review().is_none() {
                break;
            }
            driven.until_asked().await;
            Press::Ctrl('r').press(&mut driven);
        }
        ends_as_pressed(&mut driven, press, mark).await;
        assert!(
            driven
                .seen
                .iter()
                .filter(|e| matches!(e, AgentEvent::SummaryReview { .. }))
                .count()
                <= 4,
            "{press:?}: reviewed again and again"
        );
        next_request_runs(&mut driven).await;
    }
}

/// `/compact` between turns with `compaction.review_summaries`: the summary is reviewed
/// (the user asked, so there is no question first), and every answer, Esc and Ctrl+C
/// included, ends ready with words that fit being idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_between_turns_ends_ready_whatever_the_answer() {
    for press in [Press::Ctrl('s'), Press::Ctrl('r'), Press::Esc, Press::CtrlC] {
        let api = MockApi::start(vec![text_reply(&LONG.repeat(40)), text_reply("next done")]).await;
        let mut settings = agent_settings(AskPolicy::Ask);
        settings.compaction.review_summaries = true;
        let mut driven = Driven::new(start_agent(&api, settings).await);
        let mark = driven.seen.len();
        driven.send("hello there");
        driven.until_ready(mark).await;
        let mark = driven.seen.len();
        driven.send("/compact");
        driven.until_asked().await;
        let review = driven.app.state.turn.review().cloned().expect("a review");
        assert!(!review.in_turn);
        let screen = driven.draw();
        assert!(screen.contains("Esc closes it, nothing changes"), "{screen}");
        assert!(!screen.contains("goes over the limit"), "{screen}");
        press.press(&mut driven);
        driven.until_ready(mark).await;
        assert_eq!(driven.app.state.turn.state(), TurnState::Idle, "{press:?}");
        let applied = driven.seen[mark..]
            .iter()
            .any(|event| matches!(event, AgentEvent::Compaction { event } if event.replaced > 0));
        assert_eq!(applied, press == Press::Ctrl('s'), "{press:?}");
        next_request_runs(&mut driven).await;
    }
}

/// The model's `compact` tool passes the same review step as stage 4, with no
/// question before its summary is written; Esc in the review ends the turn there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compact_tool_s_summary_is_reviewed_before_it_goes_in() {
    for press in [Press::Ctrl('s'), Press::Esc] {
        let api = MockApi::start(vec![
            text_reply(&LONG.repeat(40)),
            tool_reply("Compacting.", &[("k1", "compact", serde_json::json!({}))]),
            tool_reply("Listing.", &[bash_call("t1", "ls")]),
            text_reply("done"),
            text_reply("next done"),
        ])
        .await;
        let mut settings = agent_settings(AskPolicy::Ask);
        settings.compaction.review_summaries = true;
        let mut driven = Driven::new(start_agent(&api, settings).await);
        let mark = driven.seen.len();
        driven.send("tell me about the lexer");
        driven.until_ready(mark).await;
        driven.send("tidy up");
        driven.until_asked().await;
        assert!(driven.app.state.turn.review().is_some(), "reviewed, not asked first");
        assert!(
            api.requests().iter().any(common::Recorded::is_summary),
            "the summary was written for the review"
        );
        let mark = driven.seen.len();
        press.press(&mut driven);
        ends_as_pressed(&mut driven, press, mark).await;
        next_request_runs(&mut driven).await;
    }
}

/// A read-only view: a request is not sent (the prompt keeps it and says why), and an
/// action the agent refuses (`/compact`) ends ready too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_view_stays_ready_whatever_is_asked() {
    let api = MockApi::start(vec![text_reply("never sent")]).await;
    let agent = common::start_agent_read_only(&api, agent_settings(AskPolicy::Ask), "a read-only view of a session");
    let mut driven = Driven::new(agent);
    driven
        .until("the session", |app| app.state.session.read_only.is_some())
        .await;
    driven.send("hello");
    assert_eq!(driven.app.state.turn.state(), TurnState::Idle, "nothing was sent");
    assert_eq!(driven.app.input.text(), "hello", "the prompt keeps it");
    driven.app.input.set_text("");
    driven.send("/compact");
    let refused = driven
        .until_said(|event| matches!(event, AgentEvent::Error { .. }))
        .await;
    driven.until_ready(refused).await;
    assert_eq!(driven.app.state.turn.state(), TurnState::Idle);
    for press in [Press::Esc, Press::CtrlC] {
        press.press(&mut driven);
        assert_eq!(driven.app.state.turn.state(), TurnState::Idle, "{press:?}");
    }
    assert!(api.turn_requests().is_empty(), "no model call");
}
