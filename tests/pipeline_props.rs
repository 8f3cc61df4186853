//! Property tests: the invariants of `prepare` on random histories.

use std::collections::HashMap;
use std::path::Path;

use proptest::prelude::*;
use scratchpad::compact::compact_history::compact_history;
use scratchpad::compact::index::Index;
use scratchpad::compact::markers::{parse_archive_marker, parse_cleared_reference, parse_persisted_output};
use scratchpad::compact::micro_compact::{fit_tool_results, micro_compact};
use scratchpad::compact::pairing::check_pairing;
use scratchpad::compact::record::recall;
use scratchpad::compact::render;
use scratchpad::compact::snip_compact::snip_compact;
use scratchpad::compact::tool_result_budget::tool_result_budget;
use scratchpad::compact::undo::undo;
use scratchpad::compact::{
    CompactConfig, Context, EstimateMode, ExtractiveSummariser, MemoryArchive, Sizes, Stage, StageEvent,
    estimate_chars, prepare,
};
use scratchpad::message::{Content, ContentBlock, Message, Role, ToolResultContent};
use scratchpad::store::Store;
use serde_json::{Value, json};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zé✓🦀 \n\"\\\\]{0,40}",
        1 => ("[a-z✓🦀\n]{1,8}", 200usize..6_000).prop_map(|(unit, len)| unit.repeat(len / unit.chars().count().max(1))),
    ]
}

#[derive(Clone, Debug)]
enum Turn {
    Chat(String, String),
    Tools {
        note: Option<String>,
        results: Vec<(String, bool)>,
        user_text: Option<String>,
    },
    Marker,
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        2 => (text(), text()).prop_map(|(a, u)| Turn::Chat(a, u)),
        4 => (
            proptest::option::of(text()),
            proptest::collection::vec((text(), proptest::bool::weighted(0.1)), 1..5),
            proptest::option::weighted(0.2, text()),
        )
            .prop_map(|(note, results, user_text)| Turn::Tools { note, results, user_text }),
        1 => Just(Turn::Marker),
    ]
}

fn history() -> impl Strategy<Value = Vec<Message>> {
    (
        text(),
        proptest::collection::vec(turn(), 0..40),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(first, turns, open_call)| {
            let mut messages = vec![Message::user_text(format!("task: {first}"))];
            let mut next_id = 0;
            for turn in turns {
                match turn {
                    Turn::Chat(assistant, user) => {
                        messages.push(Message::assistant_text(assistant));
                        messages.push(Message::user_text(user));
                    }
                    Turn::Marker => {
                        messages.push(Message::assistant_text("ok"));
                        messages.push(Message::user_text(
                            "[12 messages archived at .transcripts/transcript_old.jsonl]",
                        ));
                    }
                    Turn::Tools {
                        note,
                        results,
                        user_text,
                    } => {
                        let mut calls = Vec::new();
                        let mut answers = Vec::new();
                        if let Some(note) = note {
                            calls.push(ContentBlock::Text {
                                text: note,
                                extra: Default::default(),
                            });
                        }
                        for (output, failed) in results {
                            let id = format!("toolu_{next_id:04}");
                            next_id += 1;
                            calls.push(ContentBlock::ToolUse {
                                id: id.clone(),
                                name: "bash".into(),
                                input: serde_json::json!({"command": format!("cat file{next_id}")}),
                                extra: Default::default(),
                            });
                            answers.push(ContentBlock::ToolResult {
                                tool_use_id: id,
                                content: ToolResultContent::Text(output),
                                is_error: failed.then_some(true),
                                extra: Default::default(),
                            });
                        }
                        if let Some(user_text) = user_text {
                            answers.push(ContentBlock::Text {
                                text: user_text,
                                extra: Default::default(),
                            });
                        }
                        messages.push(Message::blocks(Role::Assistant, calls));
                        messages.push(Message::blocks(Role::User, answers));
                    }
                }
            }
            if open_call {
                messages.push(Message::blocks(
                    Role::Assistant,
                    vec![ContentBlock::ToolUse {
                        id: "toolu_open".into(),
                        name: "glob".into(),
                        input: serde_json::json!({"pattern": "**/*.rs"}),
                        extra: Default::default(),
                    }],
                ));
            }
            messages
        })
}

/// Thresholds scaled down so random histories of a few hundred KB cross all of them.
fn small_config() -> CompactConfig {
    CompactConfig {
        tool_result_budget_chars: 9_000,
        persist_result_over_chars: 3_000,
        persisted_preview_chars: 300,
        snip_max_messages: 20,
        snip_keep_head: 3,
        context_char_limit: scratchpad::compact::Limit::chars(12_000),
        micro_target_percent: 80,
        micro_keep_recent: 3,
        micro_min_chars: 120,
        fit_preview_chars: 150,
        reactive_keep_messages: 5,
        summary_input_chars: 4_000,
        ..CompactConfig::default()
    }
}

/// Each tool result's text as the input had it, by tool_use id.
fn originals(messages: &[Message]) -> HashMap<String, String> {
    original_contents(messages)
        .into_iter()
        .map(|(id, content)| (id, content.full_text()))
        .collect()
}

/// Each tool result's content as the input had it, by tool_use id.
fn original_contents(messages: &[Message]) -> HashMap<String, scratchpad::message::ToolResultContent> {
    messages
        .iter()
        .flat_map(|m| m.block_slice())
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id, content, ..
            } => Some((tool_use_id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

fn count_files(dir: &Path) -> usize {
    [".transcripts", ".task_outputs/tool-results"]
        .iter()
        .map(|sub| std::fs::read_dir(dir.join(sub)).map_or(0, |entries| entries.count()))
        .sum()
}

fn check(input: Vec<Message>, config: &CompactConfig) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let before = originals(&input);
    let prepared = prepare(
        input.clone(),
        "the active request",
        &scratchpad::compact::Context::new(config, &store),
        &mut ExtractiveSummariser,
    );
    let out = &prepared.messages;

    prop_assert_eq!(check_pairing(out), Ok(()));
    prop_assert_eq!(out.first().map(|m| m.role()), Some(Role::User));
    prop_assert_eq!(prepared.estimate(), estimate_chars(out));
    // The limit holds after every prepare, whichever stages it took.
    prop_assert!(
        prepared.estimate() <= config.context_char_limit.chars,
        "{} > limit {}",
        prepared.estimate(),
        config.context_char_limit.chars
    );
    for event in &prepared.events {
        prop_assert!(event.errors.is_empty(), "{:?}", event.errors);
        for path in &event.paths {
            prop_assert!(
                store.trusted_path(path).is_some(),
                "written path {path} exists in the store"
            );
        }
    }

    // Every shortened result names a file holding its original text, byte for byte;
    // every other result is untouched.
    for block in out.iter().flat_map(|m| m.block_slice()) {
        if let ContentBlock::ToolResult {
            tool_use_id, content, ..
        } = block
        {
            let text = content.full_text();
            let original = &before[tool_use_id];
            let path = parse_persisted_output(&text)
                .map(|p| p.path.to_string())
                .or_else(|| parse_cleared_reference(&text).map(str::to_string));
            match path {
                Some(path) => {
                    let saved = std::fs::read(dir.path().join(&path)).unwrap();
                    prop_assert_eq!(saved, original.as_bytes().to_vec());
                }
                None => prop_assert_eq!(&text, original),
            }
        }
    }
    // The first transcript is the whole input, message for message: only results a
    // stage before it shortened differ, and each names a file holding its original.
    if let Some(path) = prepared.events.iter().find_map(|e| e.archived.as_ref()) {
        let lines = std::fs::read_to_string(dir.path().join(path)).unwrap();
        let mut archived: Vec<Message> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let contents = original_contents(&input);
        for message in archived.iter_mut().filter(|message| message.has_tool_result()) {
            for block in scratchpad::compact::pairing::blocks_mut(message) {
                if let ContentBlock::ToolResult {
                    tool_use_id, content, ..
                } = block
                    && content.full_text() != before[tool_use_id.as_str()]
                {
                    let text = content.full_text();
                    let saved = parse_persisted_output(&text)
                        .map(|p| p.path.to_string())
                        .or_else(|| parse_cleared_reference(&text).map(str::to_string));
                    prop_assert!(saved.is_some(), "a changed result in the transcript names its file");
                    *content = contents[tool_use_id.as_str()].clone();
                }
            }
        }
        let differ = archived.iter().zip(&input).position(|(a, b)| a != b);
        prop_assert!(
            archived.len() == input.len() && differ.is_none(),
            "the transcript is the input: {} messages against {}, first differing at {:?}",
            archived.len(),
            input.len(),
            differ
        );
    }
    // Every archive marker left names a transcript that parses back.
    for message in out {
        if let Content::Text(text) = &message.content()
            && let Some((count, path)) = parse_archive_marker(text)
            && store.trusted_path(path).is_some()
        {
            let lines = std::fs::read_to_string(dir.path().join(path)).unwrap();
            let archived: Vec<Message> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            prop_assert!(archived.len() >= count + out.len() - 1);
        }
    }

    // A summary was written from the whole record: every message the stages before it
    // moved out is back in it, each result whole, and nothing was left out. Its index
    // points at the messages that hold what each entry says.
    for event in prepared
        .events
        .iter()
        .filter(|e| e.stage == Stage::CompactHistory && e.replaced > 0)
    {
        // Only files the input named from elsewhere (none of ours) are left out.
        let ours: Vec<&String> = prepared.events.iter().flat_map(|e| e.paths.iter()).collect();
        let note = event.summary_note.as_ref().expect("a summary names its record");
        for line in &note.left_out {
            prop_assert!(!ours.iter().any(|path| line.starts_with(path.as_str())), "{}", line);
        }
        let lines = std::fs::read_to_string(dir.path().join(&note.path)).unwrap();
        let recorded: Vec<Message> = lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .take(input.len())
            .collect();
        prop_assert_eq!(
            whole_results(&recorded),
            whole_results(&input),
            "the record is the input"
        );
        check_index(&out[0], &store)?;
    }

    // Idempotent: a second pass changes nothing and writes nothing.
    let files = count_files(dir.path());
    let again = prepare(
        out.clone(),
        "the active request",
        &scratchpad::compact::Context::new(config, &store),
        &mut ExtractiveSummariser,
    );
    prop_assert_eq!(&again.messages, out);
    prop_assert!(again.events.is_empty(), "{:?}", again.events);
    prop_assert_eq!(count_files(dir.path()), files);
    Ok(())
}

/// `messages` with every result's content as its text, the form the record restores a
/// result to from its saved file.
fn whole_results(messages: &[Message]) -> Vec<Message> {
    let mut messages = messages.to_vec();
    for message in messages.iter_mut().filter(|message| message.has_tool_result()) {
        for block in scratchpad::compact::pairing::blocks_mut(message) {
            if let ContentBlock::ToolResult { content, .. } = block {
                *content = ToolResultContent::Text(content.full_text());
            }
        }
    }
    messages
}

/// Every entry of the index a `[Compacted]` message carries resolves, through
/// `recall`, to a message that says what the entry says.
fn check_index(compacted: &Message, store: &Store) -> Result<(), TestCaseError> {
    let Some(index) = Index::parse(&compacted.text()) else {
        return Ok(());
    };
    for entry in &index.entries {
        let found = recall(store, &entry.at, 1).map_err(|e| TestCaseError::fail(format!("{}: {e}", entry.at)))?;
        prop_assert_eq!(found.len(), 1);
        let said = scratchpad::text::flatten_whitespace(&render::to_text(&[found[0].1.clone()]));
        let core = entry.text.split(" · ").next().unwrap_or_default().trim_end_matches('…');
        prop_assert!(
            said.contains(core),
            "{} ({:?}) is not in {}: {}",
            core,
            entry.kind,
            entry.at,
            said
        );
    }
    Ok(())
}

/// Put fields we do not model on the picked messages and blocks, as clients do:
/// `cache_control` first or last on blocks, `id` and `stop_reason` on messages.
fn decorate(messages: &[Message], picks: &[bool]) -> String {
    fn put(object: &mut serde_json::Map<String, Value>, key: &str, value: Value, first: bool) {
        if first {
            let rest = std::mem::take(object);
            object.insert(key.to_string(), value);
            object.extend(rest);
        } else {
            object.insert(key.to_string(), value);
        }
    }
    let mut value = serde_json::to_value(messages).unwrap();
    let mut n = 0;
    let mut pick = || {
        n += 1;
        (picks[n % picks.len()], n % 2 == 0)
    };
    for message in value.as_array_mut().unwrap() {
        let object = message.as_object_mut().unwrap();
        if let (true, first) = pick() {
            put(object, "id", json!("msg_01"), first);
            put(object, "stop_reason", json!("tool_use"), !first);
        }
        if let Some(Value::Array(blocks)) = object.get_mut("content") {
            for block in blocks {
                if let (true, first) = pick() {
                    put(
                        block.as_object_mut().unwrap(),
                        "cache_control",
                        json!({"type": "ephemeral"}),
                        first,
                    );
                }
            }
        }
    }
    serde_json::to_string(&value).unwrap()
}

/// The receipt of a stage that went from `before` to `after` is exactly their
/// difference: for stages that shrink tool results, each changed result (its message
/// and sizes); for stages that replace messages, each message between the unchanged
/// head and tail.
fn check_receipt(before: &[Message], after: &[Message], event: &StageEvent) -> Result<(), TestCaseError> {
    let seed = EstimateMode::Seed;
    let mut listed: Vec<(usize, usize, usize)> = event
        .items
        .iter()
        .map(|item| (item.position, item.chars_before, item.chars_after))
        .collect();
    listed.sort_unstable();
    let mut differing = Vec::new();
    if before.len() == after.len() {
        for (at, (old, new)) in before.iter().zip(after).enumerate() {
            for (a, b) in old.block_slice().iter().zip(new.block_slice()) {
                if let (ContentBlock::ToolResult { content: was, .. }, ContentBlock::ToolResult { content: now, .. }) =
                    (a, b)
                    && was != now
                {
                    differing.push((at + 1, seed.count(was), seed.count(now)));
                }
            }
        }
    } else {
        let head = before.iter().zip(after).take_while(|(a, b)| a == b).count();
        let tail = before
            .iter()
            .rev()
            .zip(after.iter().rev())
            .take(before.len().min(after.len()) - head)
            .take_while(|(a, b)| a == b)
            .count();
        for (at, message) in before.iter().enumerate().take(before.len() - tail).skip(head) {
            differing.push((at + 1, seed.count(message), 0));
        }
    }
    differing.sort_unstable();
    prop_assert_eq!(listed, differing, "{}", event.stage);
    prop_assert!(!event.trigger.is_empty(), "{} says why it ran", event.stage);
    Ok(())
}

/// Run the stages one by one as `prepare` does, checking each receipt.
fn check_receipts(input: Vec<Message>, config: &CompactConfig) -> Result<(), TestCaseError> {
    // The core's only I/O is its archive: in memory here, nothing touches the disk.
    let store = MemoryArchive::new();
    let ctx = Context::new(config, &store);
    let mut messages = input;
    let mut sizes = Sizes::of(&messages, config.estimate);
    type StageRun = fn(&mut Vec<Message>, &mut Sizes, &Context<'_>) -> Option<StageEvent>;
    let stages: [StageRun; 5] = [
        |m, s, c| tool_result_budget(m, s, c),
        |m, s, c| snip_compact(m, s, c),
        |m, s, c| micro_compact(m, s, c),
        |m, s, c| fit_tool_results(m, s, c),
        |m, s, c| compact_history(m, s, "the active request", c, &mut ExtractiveSummariser, None),
    ];
    for run in stages {
        let before = messages.clone();
        if let Some(event) = run(&mut messages, &mut sizes, &ctx) {
            check_receipt(&before, &messages, &event)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn extra_fields_on_any_block_or_message_round_trip_byte_for_byte(
        input in history(),
        picks in proptest::collection::vec(proptest::bool::weighted(0.4), 1..16),
    ) {
        let json = decorate(&input, &picks);
        let parsed: Vec<Message> = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(serde_json::to_string(&parsed).unwrap(), json);
        // Decorated results and calls are still results and calls.
        prop_assert_eq!(originals(&parsed).len(), originals(&input).len());
    }

    #[test]
    fn prepare_keeps_pairing_with_cache_control_on_calls_and_results(
        input in history(),
        picks in proptest::collection::vec(proptest::bool::weighted(0.5), 1..16),
    ) {
        let decorated: Vec<Message> = serde_json::from_str(&decorate(&input, &picks)).unwrap();
        check(decorated, &small_config())?;
    }

    #[test]
    fn undoing_every_stage_gives_back_the_input_byte_for_byte(input in history()) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let config = small_config();
        let prepared = prepare(input.clone(), "the active request", &scratchpad::compact::Context::new(&config, &store), &mut ExtractiveSummariser);
        let mut now = prepared.messages;
        for event in prepared.events.iter().rev().filter(|e| e.replaced > 0) {
            now = undo(&now, event, &store, config.estimate).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        prop_assert_eq!(serde_json::to_string(&now).unwrap(), serde_json::to_string(&input).unwrap());
    }

    #[test]
    fn each_receipt_lists_exactly_what_its_stage_changed(input in history()) {
        check_receipts(input, &small_config())?;
    }

    #[test]
    fn prepare_keeps_every_invariant_with_small_thresholds(input in history()) {
        check(input, &small_config())?;
    }

    #[test]
    fn prepare_keeps_every_invariant_with_defaults(input in history()) {
        check(input, &CompactConfig::default())?;
    }

    /// `--keep-from`: everything before the point is summarised, the point and what
    /// follows are kept byte for byte, pairs stay whole, the estimate and the receipt
    /// are right and undo gives the history back; a point that would split a call
    /// from its result is refused with the nearest points that would not.
    #[test]
    fn summarising_up_to_a_point_keeps_the_tail_byte_for_byte(input in history(), pick in 0.0f64..1.0) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let config = small_config();
        prop_assume!(input.len() >= 3);
        let keep_from = 2 + ((input.len() - 2) as f64 * pick) as usize;
        let mut history = input.clone();
        let asked = scratchpad::compact::Asked::by("the test", "r");
        match scratchpad::compact::compact_history::summarise_up_to(&mut history, keep_from, asked, &scratchpad::compact::Context::new(&config, &store), &mut ExtractiveSummariser) {
            Ok(event) => {
                let tail = &input[keep_from - 1..];
                prop_assert_eq!(history.len(), 1 + tail.len());
                prop_assert_eq!(serde_json::to_string(&history[1..]).unwrap(), serde_json::to_string(tail).unwrap());
                prop_assert_eq!(check_pairing(&history), Ok(()));
                prop_assert_eq!(event.replaced, keep_from - 1);
                prop_assert_eq!(event.chars_after, estimate_chars(&history));
                prop_assert_eq!(event.chars_before, estimate_chars(&input));
                let positions: Vec<usize> = event.items.iter().map(|item| item.position).collect();
                prop_assert_eq!(positions, (1..keep_from).collect::<Vec<_>>());
                let undone = undo(&history, &event, &store, config.estimate).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(serde_json::to_string(&undone).unwrap(), serde_json::to_string(&input).unwrap());
            }
            Err(scratchpad::compact::compact_history::KeepFromError::SplitsAPair { nearest, .. }) => {
                prop_assert_eq!(&history, &input, "nothing changed");
                prop_assert!(input[keep_from - 1].has_tool_result());
                for point in &nearest {
                    prop_assert!(!input[point - 1].has_tool_result(), "{} is a valid point", point);
                }
                let between = |a: usize, b: usize| (a.min(b) + 1..a.max(b)).any(|p| p >= 2 && !input[p - 1].has_tool_result());
                for point in &nearest {
                    prop_assert!(!between(*point, keep_from), "no valid point nearer than {}", point);
                }
            }
            Err(other) => return Err(TestCaseError::fail(other.to_string())),
        }
    }

    /// A second summary of a history that starts with a summary carries the first
    /// index forward: every entry of the merged index still resolves.
    #[test]
    fn merged_indexes_keep_every_pointer_valid(input in history(), more in history()) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let config = small_config();
        let asked = scratchpad::compact::Asked::by("the test", "r");
        let mut history = input;
        let first = scratchpad::compact::force_compact(&mut history, asked, &scratchpad::compact::Context::new(&config, &store), &mut ExtractiveSummariser);
        prop_assume!(first.replaced > 0);
        let before = Index::parse(&history[0].text()).unwrap_or_default();
        // The later turns, their call ids distinct from the first ones.
        let later: Vec<Message> =
            serde_json::from_str(&serde_json::to_string(&more).unwrap().replace("\"toolu_", "\"later_")).unwrap();
        history.push(Message::assistant_text("ok"));
        history.extend(later);
        let second = scratchpad::compact::force_compact(&mut history, asked, &scratchpad::compact::Context::new(&config, &store), &mut ExtractiveSummariser);
        // A second summary that could free too little is rightly not written: then
        // there is no merged index to check.
        prop_assume!(!second.errors.iter().any(|error| error.contains("summary_floor_chars")));
        prop_assert!(second.replaced > 0, "{:?}", second.errors);
        check_index(&history[0], &store)?;
        let text = history[0].text();
        let merged = Index::parse(&text).unwrap_or_default();
        // Files read may be folded into one line of their record rather than listed.
        let folded = before.entries.iter().any(|b| {
            b.kind == scratchpad::compact::index::EntryKind::Read
                && text.contains(&format!("In {}:", b.at.path))
                && text.contains("- read (lines ")
        });
        // An entry is carried forward at its pointer, or as the newer entry of the same
        // kind and text (a command run again is one entry, the newest, with a count).
        let command = |text: &str| text.split(" · ").next().unwrap_or(text).to_string();
        let old_kept = before
            .entries
            .iter()
            .filter(|b| {
                merged
                    .entries
                    .iter()
                    .any(|e| e.at == b.at || (e.kind == b.kind && command(&e.text) == command(&b.text)))
            })
            .count()
            + usize::from(folded);
        prop_assert!(old_kept > 0 || before.entries.is_empty() || second.summary_note.as_ref().is_some_and(|note| note.index_cut > 0), "the first index was carried forward");
    }
}

/// The properties above mean something only if the generator reaches every stage.
#[test]
fn the_generator_makes_every_stage_fire() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let config = small_config();
    let mut fired = std::collections::HashSet::new();
    for _ in 0..200 {
        let input = history().new_tree(&mut runner).unwrap().current();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let prepared = prepare(
            input,
            "r",
            &scratchpad::compact::Context::new(&config, &store),
            &mut ExtractiveSummariser,
        );
        fired.extend(prepared.events.iter().filter(|e| e.replaced > 0).map(|e| e.stage));
    }
    for stage in [
        Stage::ToolResultBudget,
        Stage::SnipCompact,
        Stage::MicroCompact,
        Stage::FitToolResults,
        Stage::CompactHistory,
    ] {
        assert!(fired.contains(&stage), "{stage} never fired: {fired:?}");
    }
}
