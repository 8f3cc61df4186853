use super::*;
use crate::message::Role;

fn stage_event(stage: Stage, paths: &[&str]) -> StageEvent {
    StageEvent {
        messages_after: 49,
        chars_after: 41_900,
        paths: paths.iter().map(|p| p.to_string()).collect(),
        saved: paths
            .iter()
            .filter_map(|path| {
                let id = path.strip_prefix(".task_outputs/tool-results/")?.strip_suffix(".txt")?;
                Some(crate::compact::SavedResult {
                    tool_use_id: id.to_string(),
                    path: path.to_string(),
                })
            })
            .collect(),
        replaced: 12,
        ..StageEvent::start(stage, 60, 84_100, String::new())
    }
}

/// A recorded event sequence gives the expected panes.
#[test]
fn a_recorded_turn_builds_chat_tools_and_timeline() {
    let mut state = AppState::default();
    let events = vec![
        AgentEvent::TurnStarted {
            turn: crate::protocol::TurnId(1),
            request: "survey".into(),
        },
        AgentEvent::TextDelta {
            turn: crate::protocol::TurnId(1),
            text: "Look".into(),
        },
        AgentEvent::StreamReset {
            turn: crate::protocol::TurnId(1),
            attempt: 1,
            delay_ms: 1000,
            reason: "overloaded".into(),
        },
        AgentEvent::TextDelta {
            turn: crate::protocol::TurnId(1),
            text: "Let me ".into(),
        },
        AgentEvent::TextDelta {
            turn: crate::protocol::TurnId(1),
            text: "look.".into(),
        },
        AgentEvent::AssistantMessage {
            turn: crate::protocol::TurnId(1),
            message: Message::assistant_text("Let me look."),
        },
        AgentEvent::ToolStarted {
            turn: crate::protocol::TurnId(1),
            id: "toolu_1".into(),
            name: "bash".into(),
            summary: "seq 1 100000".into(),
        },
        AgentEvent::ToolRunning {
            turn: crate::protocol::TurnId(1),
            id: "toolu_1".into(),
        },
        AgentEvent::ToolFinished {
            turn: crate::protocol::TurnId(1),
            id: "toolu_1".into(),
            name: "bash".into(),
            status: ToolStatus::Ok,
            output: "1\n2\n".into(),
        },
        AgentEvent::Compaction {
            event: stage_event(Stage::ToolResultBudget, &[".task_outputs/tool-results/toolu_1.txt"]),
        },
        AgentEvent::Context {
            status: ContextStatus {
                estimate: 41_900,
                limit: 50_000,
                target: 40_000,
                messages: 3,
                snip_max_messages: 50,
                fixed: 2_400,
                tokens: None,
                background: None,
                cache_missed: None,
            },
        },
        AgentEvent::ModelCall {
            point: CallPoint {
                before: Some(60_000),
                estimate: 41_900,
                messages: 3,
                request_chars: Some(44_300),
                input_tokens: Some(10_000),
                stages: vec![Stage::ToolResultBudget],
                ..CallPoint::default()
            },
            usage: Usage {
                input_tokens: 10_000,
                ..Usage::default()
            },
        },
        AgentEvent::TurnDone {
            turn: crate::protocol::TurnId(1),
            outcome: TurnOutcome::Completed,
        },
    ];
    for event in events {
        state.apply(event);
    }
    assert_eq!(state.chat.len(), 5, "{:?}", state.chat);
    assert_eq!(state.chat[0], ChatEntry::User("survey".into()));
    assert!(matches!(&state.chat[1], ChatEntry::Notice(n) if n.starts_with("retrying (attempt 2)")));
    assert_eq!(
        state.chat[2],
        ChatEntry::Assistant {
            text: "Let me look.".into(),
            streaming: false
        }
    );
    assert_eq!(state.chat[3], ChatEntry::Tool(0), "the call where it ran");
    assert!(matches!(&state.chat[4], ChatEntry::Marker(run) if run.events[0].stage == Stage::ToolResultBudget));
    assert_eq!(
        state.tools[0].saved_path.as_deref(),
        Some(".task_outputs/tool-results/toolu_1.txt")
    );
    assert!(matches!(
        state.tools[0].state,
        CallState::Done {
            status: ToolStatus::Ok,
            ..
        }
    ));
    assert_eq!(state.timeline.len(), 1);
    assert_eq!(state.timeline[0].stages, vec![Stage::ToolResultBudget]);
    assert_eq!(state.turn.state(), TurnState::Idle);
}

#[test]
fn a_user_compaction_outside_a_turn_ends_idle() {
    let mut state = AppState::default();
    state.apply(AgentEvent::CompactionRequested {
        by: crate::protocol::CompactionRequester::User,
        focus: None,
    });
    assert_eq!(state.turn.state(), TurnState::Compacting);
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::CompactHistory, &[".transcripts/t.jsonl"]),
    });
    assert_eq!(state.turn.state(), TurnState::Idle);
}

#[test]
fn a_reply_replaced_after_a_retry_gets_a_revision_never_seen_at_its_place() {
    let mut state = AppState::default();
    state.apply(AgentEvent::TurnStarted {
        turn: crate::protocol::TurnId(1),
        request: "go".into(),
    });
    state.apply(AgentEvent::TextDelta {
        turn: crate::protocol::TurnId(1),
        text: "HALF".into(),
    });
    let (at, stale) = (state.chat.len() - 1, state.revisions[state.chat.len() - 1]);
    state.apply(AgentEvent::StreamReset {
        turn: crate::protocol::TurnId(1),
        attempt: 1,
        delay_ms: 1_000,
        reason: "overloaded".into(),
    });
    assert!(matches!(&state.chat[at], ChatEntry::Notice(n) if n.starts_with("retrying")));
    assert_ne!(
        state.revisions[at], stale,
        "the render cache must not reuse the partial text"
    );
    state.apply(AgentEvent::TextDelta {
        turn: crate::protocol::TurnId(1),
        text: "clean\u{1b}]52;c;aGk=\u{7} text\u{1b}[2J".into(),
    });
    assert!(matches!(state.chat.last(), Some(ChatEntry::Assistant { text, .. }) if text == "clean text"));
}

#[test]
fn a_retry_shows_as_retrying_until_text_flows_and_a_compaction_clears_a_stale_banner() {
    let mut state = AppState::default();
    state.apply(AgentEvent::TurnStarted {
        turn: crate::protocol::TurnId(1),
        request: "go".into(),
    });
    state.apply(AgentEvent::StreamReset {
        turn: crate::protocol::TurnId(1),
        attempt: 1,
        delay_ms: 1_100,
        reason: "overloaded".into(),
    });
    let label = crate::status::turn_label(&state.turn.state());
    assert!(
        label.starts_with("retrying in 1.") && label.ends_with("(attempt 2): overloaded"),
        "{label}"
    );
    state.apply(AgentEvent::TextDelta {
        turn: crate::protocol::TurnId(1),
        text: "ok".into(),
    });
    assert_eq!(state.turn.state(), TurnState::Thinking);
    state.apply(AgentEvent::Error {
        message: "the prompt is too long".into(),
    });
    assert!(state.banner.is_some());
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::CompactHistory, &[".transcripts/t.jsonl"]),
    });
    assert_eq!(state.banner, None, "the banner went stale once the history shrank");
}

#[test]
fn firings_of_one_stage_in_one_turn_fold_into_one_marker() {
    let mut state = AppState::default();
    state.apply(AgentEvent::TurnStarted {
        turn: crate::protocol::TurnId(1),
        request: "survey".into(),
    });
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::SnipCompact, &[".transcripts/a.jsonl"]),
    });
    state.apply(AgentEvent::AssistantMessage {
        turn: crate::protocol::TurnId(1),
        message: Message::assistant_text("reading on"),
    });
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::SnipCompact, &[".transcripts/b.jsonl"]),
    });
    let markers: Vec<usize> = state
        .chat
        .iter()
        .filter_map(|entry| match entry {
            ChatEntry::Marker(run) => Some(run.events.len()),
            _ => None,
        })
        .collect();
    assert_eq!(markers, vec![2], "one marker, two firings");
    assert_eq!(
        state.chat[1].paths(),
        [".transcripts/a.jsonl".to_string(), ".transcripts/b.jsonl".to_string()],
        "links go to every firing's files"
    );
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::MicroCompact, &[]),
    });
    state.apply(AgentEvent::TurnStarted {
        turn: crate::protocol::TurnId(1),
        request: "next".into(),
    });
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::MicroCompact, &[]),
    });
    let count = state
        .chat
        .iter()
        .filter(|entry| matches!(entry, ChatEntry::Marker(_)))
        .count();
    assert_eq!(count, 3, "a new request starts new markers");
}

#[test]
fn a_resumed_session_shows_its_messages_markers_tools_and_timeline() {
    let mut state = AppState::default();
    let call = Message::blocks(
        Role::Assistant,
        vec![ContentBlock::tool_use(
            "toolu_1",
            "read_file",
            serde_json::json!({"path": "a.rs"}),
        )],
    );
    let result = Message::blocks(
        Role::User,
        vec![ContentBlock::tool_result("toolu_1", "fn a() {}", false)],
    );
    state.apply(AgentEvent::Replay {
        past: vec![
            Past::Message {
                message: Message::user_text("read a.rs"),
            },
            Past::Message { message: call },
            Past::Message { message: result },
            Past::Stage {
                event: Box::new(stage_event(
                    Stage::MicroCompact,
                    &[".task_outputs/tool-results/toolu_1.txt"],
                )),
            },
            Past::Call {
                point: CallPoint {
                    before: Some(1_400),
                    estimate: 900,
                    messages: 4,
                    input_tokens: Some(300),
                    stages: vec![Stage::MicroCompact],
                    ..CallPoint::default()
                },
            },
            Past::Message {
                message: Message::assistant_text("It defines a."),
            },
            Past::TurnEnded {
                outcome: TurnOutcome::Cancelled,
            },
            Past::CompactionRequested {
                by: CompactionRequester::User,
                focus: Some("the parser".into()),
            },
            Past::Preview {
                events: vec![stage_event(Stage::CompactHistory, &[])],
            },
        ],
        in_context: 2,
    });
    assert!(matches!(&state.chat[0], ChatEntry::User(text) if text == "read a.rs"));
    assert_eq!(state.chat[1], ChatEntry::Tool(0));
    assert!(matches!(&state.chat[2], ChatEntry::Marker(run) if run.events[0].stage == Stage::MicroCompact));
    assert!(matches!(&state.chat[3], ChatEntry::Assistant { text, .. } if text == "It defines a."));
    assert!(matches!(&state.chat[4], ChatEntry::Notice(n) if n == "turn cancelled"));
    assert!(
        matches!(&state.chat[5], ChatEntry::Notice(n) if n == "compaction requested by the user (focus: the parser)")
    );
    assert!(matches!(&state.chat[6], ChatEntry::Preview(events) if events[0].stage == Stage::CompactHistory));
    assert!(
        matches!(state.chat.last(), Some(ChatEntry::Notice(n)) if n == "resumed a session of 4 messages, 2 in context")
    );
    assert_eq!(state.tools.len(), 1);
    assert_eq!(state.tools[0].output.head, ["fn a() {}"]);
    assert_eq!(
        state.tools[0].saved_path.as_deref(),
        Some(".task_outputs/tool-results/toolu_1.txt")
    );
    assert_eq!(state.timeline.len(), 1);
    assert_eq!(state.timeline[0].stages, vec![Stage::MicroCompact]);
    assert_eq!(state.timeline[0].input_tokens, Some(300));
}

#[test]
fn history_restores_prompts_markers_and_tools() {
    let mut state = AppState::default();
    let messages = vec![
        Message::user_text("task"),
        Message::user_text("[5 messages archived at .transcripts/t.jsonl]"),
        Message::blocks(
            Role::Assistant,
            vec![ContentBlock::ToolUse {
                id: "a".into(),
                name: "glob".into(),
                input: serde_json::json!({"pattern": "*"}),
                extra: Default::default(),
            }],
        ),
    ];
    state.apply(AgentEvent::History { messages });
    assert_eq!(state.chat[0], ChatEntry::User("task".into()));
    assert!(matches!(&state.chat[1], ChatEntry::Notice(n) if n.contains("archived at .transcripts/t.jsonl")));
    assert_eq!(state.tools[0].summary, "*");
}

#[test]
fn text_streamed_outside_its_turn_is_not_shown() {
    let mut state = AppState::default();
    let delta = |turn, text: &str| AgentEvent::TextDelta {
        turn: TurnId(turn),
        text: text.into(),
    };
    for event in [
        AgentEvent::TurnStarted {
            turn: TurnId(1),
            request: "first".into(),
        },
        delta(1, "one"),
        AgentEvent::TurnDone {
            turn: TurnId(1),
            outcome: TurnOutcome::Cancelled,
        },
        delta(1, " late"),
        AgentEvent::TurnStarted {
            turn: TurnId(2),
            request: "second".into(),
        },
        delta(1, "stale"),
        delta(2, "two"),
    ] {
        state.apply(event);
    }
    let texts: Vec<&str> = state
        .chat
        .iter()
        .filter_map(|entry| match entry {
            ChatEntry::Assistant { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["one", "two"]);
}

/// `/clear` starts the conversation afresh: the old calls leave the timeline and
/// their markers can no longer be undone.
#[test]
fn a_cleared_conversation_has_an_empty_timeline_and_nothing_to_undo() {
    let mut state = AppState::default();
    let mut event = stage_event(Stage::SnipCompact, &[".transcripts/a.jsonl"]);
    event.id = "s1".into();
    state.apply(AgentEvent::Compaction { event });
    state.apply(AgentEvent::ModelCall {
        point: CallPoint {
            estimate: 40_000,
            ..CallPoint::default()
        },
        usage: Default::default(),
    });
    assert_eq!(state.timeline.len(), 1);
    assert!(state.newest_undoable().is_some());
    state.apply(AgentEvent::TurnStarted {
        turn: crate::protocol::TurnId(1),
        request: "go".into(),
    });
    assert_eq!(state.turns, 1);
    state.apply(AgentEvent::History { messages: Vec::new() });
    assert!(state.timeline.is_empty(), "{:?}", state.timeline);
    assert!(state.newest_undoable().is_none());
    assert_eq!(state.turns, 0, "the tool pane counts requests from 1 again");
}

/// A joined emoji streamed in two pieces (the joiner at a piece's edge) reaches the
/// chat as its parts, whose width every terminal agrees on.
#[test]
fn a_joined_emoji_streamed_in_pieces_is_shown_as_its_parts() {
    let mut state = AppState::default();
    let turn = crate::protocol::TurnId(1);
    state.apply(AgentEvent::TurnStarted {
        turn,
        request: "family".into(),
    });
    for piece in ["hi 👨\u{200d}", "👩\u{200d}👧 there"] {
        state.apply(AgentEvent::TextDelta {
            turn,
            text: piece.into(),
        });
    }
    let Some(ChatEntry::Assistant { text, .. }) = state.chat.last() else {
        panic!("the answer is in the chat: {:?}", state.chat);
    };
    assert_eq!(text, "hi 👨👩👧 there");
}

/// While a refusal is answered (the reactive stage may ask a model for a summary) the
/// status says compacting, not thinking; the stage's marker ends that.
#[test]
fn a_reactive_compaction_shows_as_compacting_until_its_marker() {
    let mut state = AppState::default();
    state.apply(AgentEvent::TurnStarted {
        turn: crate::protocol::TurnId(1),
        request: "go".into(),
    });
    state.apply(AgentEvent::Compacting);
    assert_eq!(state.turn.state(), TurnState::Compacting);
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::ReactiveCompact, &[".transcripts/t.jsonl"]),
    });
    assert_eq!(state.turn.state(), TurnState::Thinking);
}

/// After a question is answered the status says what the turn does next, and a call's
/// time starts when it runs, not when it was asked about.
#[test]
fn an_answered_question_stops_waiting_and_a_call_is_timed_from_its_start() {
    let mut state = AppState::default();
    let turn = crate::protocol::TurnId(1);
    state.apply(AgentEvent::TurnStarted {
        turn,
        request: "clean".into(),
    });
    state.apply(AgentEvent::ToolStarted {
        turn,
        id: "t1".into(),
        name: "bash".into(),
        summary: "rm -rf build".into(),
    });
    state.apply(AgentEvent::PermissionRequest {
        turn,
        request_id: 7,
        tool: "bash".into(),
        question: "Run rm -rf build?".into(),
        subject: "rm -rf build".into(),
        always: None,
    });
    assert_eq!(state.turn.state(), TurnState::Asking);
    assert_eq!(state.tools[0].state, CallState::Pending, "asked about, not running");
    state.apply(AgentEvent::Answered { request_id: 6 });
    assert_eq!(state.turn.state(), TurnState::Asking, "another question's answer");
    state.apply(AgentEvent::Answered { request_id: 7 });
    assert_eq!(
        state.turn.state(),
        TurnState::RunningTool("bash".into()),
        "back to what the turn was doing"
    );
    assert!(state.turn.permission().is_none());
    state.apply(AgentEvent::ToolRunning { turn, id: "t1".into() });
    assert_eq!(state.turn.state(), TurnState::RunningTool("bash".into()));
    assert!(matches!(state.tools[0].state, CallState::Running { since } if since.elapsed() < Duration::from_secs(1)));
    state.apply(AgentEvent::SummaryReview {
        request_id: 8,
        leaves: "30 messages (60.0k chars), kept in .transcripts/t.jsonl".into(),
        summary: "The work so far.".into(),
        index: String::new(),
        covers: 30,
        retention: None,
        if_not_applied: "Not now: the history stays as it was.".into(),
        in_turn: true,
    });
    assert_ne!(state.turn.state(), TurnState::RunningTool("bash".into()), "in review");
    state.apply(AgentEvent::Answered { request_id: 8 });
    assert_eq!(state.turn.state(), TurnState::RunningTool("bash".into()));
    assert!(state.turn.review().is_none());
}

/// A miss no marker of ours explains (the tool list changed) is a line of its own; a
/// comparison still pending says nothing.
#[test]
fn a_cache_miss_without_a_stage_is_a_notice_and_a_pending_one_is_silent() {
    use crate::protocol::{CacheReport, PrefixChange};
    let mut state = AppState::default();
    let call = |cache: CacheReport| AgentEvent::ModelCall {
        point: CallPoint {
            cache: Some(cache),
            ..CallPoint::default()
        },
        usage: Usage::default(),
    };
    state.apply(call(CacheReport::default()));
    assert!(state.chat.is_empty(), "pending: {:?}", state.chat);
    state.apply(call(CacheReport {
        reason: Some("tools_changed".into()),
        missed_input_tokens: Some(4_300),
        ours: Some(vec![PrefixChange::Tools]),
        stages: Vec::new(),
    }));
    assert_eq!(
        state.chat,
        vec![ChatEntry::Notice(
            "cache missed: the tools changed, 4.3k tokens · scratchpad changed the tool list".into()
        )]
    );
}

/// The call's report arrives while its answer streams: the line goes before the
/// answer, which goes on streaming into its own entry.
#[test]
fn a_cache_miss_line_goes_before_the_answer_still_streaming() {
    let mut state = AppState::default();
    let turn = crate::protocol::TurnId(1);
    state.apply(AgentEvent::TurnStarted {
        turn,
        request: "second".into(),
    });
    state.apply(AgentEvent::TextDelta {
        turn,
        text: "Answer 2.".into(),
    });
    state.apply(AgentEvent::ModelCall {
        point: CallPoint {
            cache: Some(crate::protocol::CacheReport {
                reason: Some("tools_changed".into()),
                ours: Some(Vec::new()),
                ..Default::default()
            }),
            ..CallPoint::default()
        },
        usage: Usage::default(),
    });
    state.apply(AgentEvent::AssistantMessage {
        turn,
        message: Message::assistant_text("Answer 2."),
    });
    assert!(matches!(&state.chat[1], ChatEntry::Notice(text) if text.starts_with("cache missed")));
    assert_eq!(
        state.chat[2],
        ChatEntry::Assistant {
            text: "Answer 2.".into(),
            streaming: false
        }
    );
    assert_eq!(state.chat.len(), 3, "{:?}", state.chat);
    assert_eq!(state.revisions.len(), state.chat.len());
}

/// A summary call for the turn is said as such while it streams, and the turn goes
/// back to thinking when the stage that asked for it ends; a background one is kept
/// apart, for the gauge, until it is ready.
#[test]
fn a_summary_being_written_is_said_with_its_progress_until_its_stage_ends() {
    let mut state = AppState::default();
    let turn = crate::protocol::TurnId(1);
    state.apply(AgentEvent::TurnStarted {
        turn,
        request: "go on".into(),
    });
    state.apply(AgentEvent::Summarising {
        background: false,
        chars: 0,
    });
    assert!(matches!(state.turn.state(), TurnState::Summarising { chars: 0, .. }));
    state.apply(AgentEvent::Summarising {
        background: false,
        chars: 1_360,
    });
    let label = crate::status::turn_label(&state.turn.state());
    assert!(label.starts_with("summarising (0 s, ≈340 tokens so far)"), "{label}");
    state.apply(AgentEvent::Compaction {
        event: stage_event(Stage::CompactHistory, &[".transcripts/t.jsonl"]),
    });
    assert_eq!(state.turn.state(), TurnState::Thinking);

    state.apply(AgentEvent::Summarising {
        background: true,
        chars: 400,
    });
    assert_eq!(
        state.turn.state(),
        TurnState::Thinking,
        "a background summary leaves the turn as it is"
    );
    assert!(matches!(state.background_summary, Some((_, 400))));
    state.apply(AgentEvent::Background {
        event: BackgroundEvent::Ready { took_ms: 900 },
    });
    assert_eq!(state.background_summary, None);
}

/// A marker never groups across an undo or something the user did: two `/compact`s
/// with an undo between are two markers in order (the second used to join the first,
/// "×2 (1 of 2 undone)" above the undo line); a result dropped by hand is a marker of
/// its own that says so.
#[test]
fn markers_never_group_across_an_undo_or_a_users_action() {
    let mut state = AppState::default();
    let requested = || AgentEvent::CompactionRequested {
        by: crate::protocol::CompactionRequester::User,
        focus: None,
    };
    let compacted = || {
        let mut event = stage_event(Stage::CompactHistory, &[".transcripts/t.jsonl"]);
        event.replaced = 4;
        AgentEvent::Compaction { event }
    };
    state.apply(requested());
    state.apply(compacted());
    state.apply(AgentEvent::Ready);
    state.apply(AgentEvent::Undone {
        stage: Stage::CompactHistory,
        undid: "s1".into(),
        chars_before: 900,
        chars_after: 4_000,
    });
    state.apply(AgentEvent::Ready);
    state.apply(requested());
    state.apply(compacted());
    let markers: Vec<usize> = state
        .chat
        .iter()
        .enumerate()
        .filter(|(_, entry)| matches!(entry, ChatEntry::Marker(_)))
        .map(|(at, _)| at)
        .collect();
    assert_eq!(markers.len(), 2, "{:?}", state.chat);
    let undo_line = state
        .chat
        .iter()
        .position(|entry| matches!(entry, ChatEntry::Notice(text) if text.starts_with("↶ undid")))
        .expect("the undo line");
    assert!(
        markers[0] < undo_line && undo_line < markers[1],
        "in order: {:?}",
        state.chat
    );

    let mut micro = stage_event(Stage::MicroCompact, &[".task_outputs/a.txt"]);
    micro.replaced = 1;
    state.apply(AgentEvent::Compaction { event: micro.clone() });
    let mut dropped = micro;
    dropped.by_user = true;
    state.apply(AgentEvent::Compaction { event: dropped.clone() });
    let ChatEntry::Marker(run) = state.chat.last().expect("a marker") else {
        panic!("the drop is a marker of its own: {:?}", state.chat.last());
    };
    assert_eq!(run.events.len(), 1);
    assert!(
        dropped.summary_line().contains("dropped by you from /context"),
        "{}",
        dropped.summary_line()
    );
}

/// A summary written in the background between turns keeps the screen ticking, so
/// its counter on the gauge moves (it stayed at "0 s"); it does not make the app busy.
#[test]
fn a_background_summary_ticks_without_making_the_app_busy() {
    let mut state = AppState::default();
    assert!(!state.animating());
    state.apply(AgentEvent::Summarising {
        background: true,
        chars: 0,
    });
    assert!(state.animating());
    assert!(!state.is_busy());
    state.apply(AgentEvent::Background {
        event: BackgroundEvent::Ready { took_ms: 900 },
    });
    assert!(!state.animating());
}

/// A fork just made is not "resumed": its chat ends saying it starts from what it
/// took; a fork worked in and opened again is resumed.
#[test]
fn a_new_fork_is_not_said_to_be_resumed() {
    let origin = crate::protocol::Origin {
        session: "20261201-100000-1".into(),
        at: crate::protocol::ForkPoint::Message { position: 3 },
    };
    let message = |text: &str| Past::Message {
        message: Message::user_text(text),
    };
    let mut state = AppState::default();
    state.apply(AgentEvent::Replay {
        past: vec![Past::Forked { origin: origin.clone() }, message("go on")],
        in_context: 1,
    });
    let last = |state: &AppState| match state.chat.last() {
        Some(ChatEntry::Notice(text)) => text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(last(&state), "a fork that starts from 1 message, 1 in context");
    let mut state = AppState::default();
    state.apply(AgentEvent::Replay {
        past: vec![
            Past::Forked { origin },
            message("go on"),
            Past::Call {
                point: crate::protocol::CallPoint::default(),
            },
        ],
        in_context: 1,
    });
    assert!(last(&state).starts_with("resumed a session of"), "{}", last(&state));
}
