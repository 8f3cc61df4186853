//! The seed's edge cases, byte for byte: tool results whose fields have unusual types,
//! number text, deep nesting, and the seed's own `<persisted-output>` wording.

use scratchpad::compact::pairing::check_pairing;
use scratchpad::compact::{CompactConfig, ExtractiveSummariser, MemoryArchive, Stage, prepare};
use scratchpad::message::{Message, parse_history};
use serde_json::json;

/// A history as JSON text: a request, then `results` rounds of one call and one result
/// of `chars` characters whose `is_error` is `flag` (verbatim JSON), then an answer
/// when `answered`.
fn rounds_with_flag(results: usize, chars: usize, flag: &str, answered: bool) -> Vec<Message> {
    let mut messages = vec![json!({"role": "user", "content": "read everything"})];
    for n in 0..results {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("toolu_{n}"), "name": "read_file", "input": {"path": format!("f{n}.rs")}}]}));
        let result: serde_json::Value = serde_json::from_str(&format!(
            r#"{{"type":"tool_result","tool_use_id":"toolu_{n}","content":{},"is_error":{flag}}}"#,
            serde_json::to_string(&format!("{n} ").repeat(chars / 2)).unwrap()
        ))
        .unwrap();
        messages.push(json!({"role": "user", "content": [result]}));
    }
    if answered {
        messages.push(json!({"role": "assistant", "content": "read"}));
    }
    parse_history(serde_json::to_string(&messages).unwrap()).unwrap()
}

fn stages(events: &[scratchpad::compact::StageEvent]) -> Vec<Stage> {
    events.iter().filter(|e| e.replaced > 0).map(|e| e.stage).collect()
}

/// `history` through `prepare`: the stages that changed it are `expected`, no call is
/// split from its result, every result keeps its `is_error` text as it was (`flag`),
/// and undoing the stages, newest first, gives back the history as it was, message
/// for message.
fn compacts_and_undoes(history: Vec<Message>, flag: &str, expected: &[Stage]) {
    let archive = MemoryArchive::new();
    let config = CompactConfig::default();
    let prepared = prepare(
        history.clone(),
        "read everything",
        &scratchpad::compact::Context::new(&config, &archive),
        &mut ExtractiveSummariser,
    );
    let fired = stages(&prepared.events);
    assert_eq!(&fired[..expected.len()], expected, "{flag}");
    assert_eq!(check_pairing(&prepared.messages), Ok(()), "{flag}");
    let text = serde_json::to_string(&prepared.messages).unwrap();
    assert!(text.contains(&format!("\"is_error\":{flag}")), "kept verbatim: {flag}");
    let mut messages = prepared.messages;
    for event in prepared.events.iter().rev().filter(|event| event.can_be_undone()) {
        messages = scratchpad::compact::undo::undo(&messages, event, &archive, config.estimate)
            .unwrap_or_else(|error| panic!("{flag}: undo {}: {error}", event.stage));
    }
    assert_eq!(messages, history, "{flag}: undone, the history is as it was");
    let undone = serde_json::to_string(&messages).unwrap();
    assert_eq!(
        undone,
        serde_json::to_string(&history).unwrap(),
        "{flag}: byte for byte"
    );
}

#[test]
fn results_with_a_null_or_string_is_error_are_snipped_cleared_persisted_and_undone() {
    for flag in ["null", "\"true\""] {
        // Snip: 53 messages, never a call split from its result.
        let history = rounds_with_flag(26, 40, flag, false);
        assert_eq!(history.len(), 53);
        compacts_and_undoes(history, flag, &[Stage::SnipCompact]);

        // Micro: six seen results of 15,000 chars are cleared recoverably, not summarised.
        compacts_and_undoes(rounds_with_flag(6, 15_000, flag, true), flag, &[Stage::MicroCompact]);

        // Stage 1: the newest batch over 200,000 chars.
        let mut batch = rounds_with_flag(1, 10, flag, false);
        let mut calls = Vec::new();
        let mut results = Vec::new();
        for n in 0..5 {
            calls.push(
                json!({"type": "tool_use", "id": format!("big_{n}"), "name": "bash", "input": {"command": "cat"}}),
            );
            results.push(
                serde_json::from_str::<serde_json::Value>(&format!(
                    r#"{{"type":"tool_result","tool_use_id":"big_{n}","content":"{}","is_error":{flag}}}"#,
                    "x".repeat(45_000)
                ))
                .unwrap(),
            );
        }
        let tail = json!([{"role": "assistant", "content": calls}, {"role": "user", "content": results}]);
        batch.extend(parse_history(tail.to_string()).unwrap());
        compacts_and_undoes(batch, flag, &[Stage::ToolResultBudget]);
    }
}

/// A tool input with number text no machine number keeps: a 30-digit integer, a float
/// with a trailing zero, a float whose text Python prints otherwise.
const NUMBERS: &str = r#"{"id": 123456789012345678901234567890, "ratio": 1.50, "eps": 1e-7}"#;

fn history_with_numbers() -> String {
    format!(
        r#"[{{"role":"user","content":"go"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"bash","input":{}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"ok"}}]}},{{"role":"assistant","content":"done"}}]"#,
        NUMBERS.replace(": ", ":").replace(", ", ",")
    )
}

#[test]
fn number_text_survives_parse_journal_and_transcript_byte_for_byte() {
    use scratchpad::session::{Record, restore};
    let text = history_with_numbers();
    let messages = parse_history(text.as_str()).unwrap();
    assert_eq!(serde_json::to_string(&messages).unwrap(), text);

    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("numbers.jsonl");
    let lines: String = messages
        .iter()
        .map(|message| {
            serde_json::to_string(&Record::Append {
                message: message.clone(),
            })
            .unwrap()
                + "\n"
        })
        .collect();
    assert!(lines.contains("123456789012345678901234567890") && lines.contains("1.50") && lines.contains("1e-7"));
    std::fs::write(&journal, lines).unwrap();
    let restored = restore(&journal).unwrap();
    assert!(restored.repairs.is_empty(), "{:?}", restored.repairs);
    assert_eq!(serde_json::to_string(&restored.messages).unwrap(), text);

    let archive = MemoryArchive::new();
    let kept = scratchpad::compact::Archive::write_transcript(&archive, "snip_compact", &messages).unwrap();
    let saved = scratchpad::compact::Archive::read_saved(&archive, &kept.path).unwrap();
    let back: Vec<Message> = saved
        .text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
}

/// The seed counts `1e-07` where the history holds `1e-7`: a history the seed counts
/// at 50,001 is over the limit, and micro fires, as in the seed.
#[test]
fn a_history_over_the_limit_only_as_python_prints_its_numbers_is_compacted() {
    let floats = vec!["1e-7"; 300].join(", ");
    let build = |padding: usize| -> Vec<Message> {
        let mut messages = vec![json!({"role": "user", "content": "measure"})];
        for n in 0..5 {
            messages.push(
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{n}"),
                "name": "bash", "input": {"command": "measure"}}]}),
            );
            messages.push(
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{n}"),
                "content": "r".repeat(9_000)}]}),
            );
        }
        let mut text = serde_json::to_string(&messages).unwrap();
        text.pop();
        text.push_str(&format!(
            r#",{{"role":"assistant","content":[{{"type":"tool_use","id":"tf","name":"bash","input":{{"command":"{}","floats":[{}]}}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"tf","content":"ok"}}]}}]"#,
            "p".repeat(padding),
            floats
        ));
        parse_history(text.as_str()).unwrap()
    };
    let at = |padding| scratchpad::compact::estimate_chars(&build(padding));
    let padding = 50_001 - at(0);
    let history = build(padding);
    assert_eq!(scratchpad::compact::estimate_chars(&history), 50_001);
    let verbatim = serde_json::to_string(&history).unwrap();
    assert!(verbatim.contains("1e-7,1e-7"), "the history keeps its own number text");
    let prepared = prepare(
        history,
        "measure",
        &scratchpad::compact::Context::new(&CompactConfig::default(), &MemoryArchive::new()),
        &mut ExtractiveSummariser,
    );
    assert_eq!(stages(&prepared.events), [Stage::MicroCompact]);
}

mod common;

/// A tool input nested `depth` levels: `{"command": "echo deep", "deep": [[...[1.50]...]]}`.
fn deep_input(depth: usize) -> serde_json::Value {
    let text = format!(
        r#"{{"command":"echo deep","deep":{}1.50{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    scratchpad::json::from_str(&text).unwrap()
}

/// Deep values recurse when cloned or dropped: the test runs where the binary runs its
/// work, on a stack of the size the binary gives its threads.
fn on_big_stack(test: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(scratchpad::json::WORKER_STACK_BYTES)
        .spawn(test)
        .unwrap()
        .join()
        .unwrap();
}

const DEPTH: usize = 10_000;

#[test]
fn ten_thousand_levels_of_tool_input_compact_resume_and_stream_back() {
    on_big_stack(|| {
        use common::{MockApi, Workspace, messages_of, text_reply, tool_reply};
        use scratchpad::session::Record;
        let deep = deep_input(DEPTH);
        let brackets = "[".repeat(DEPTH);

        // A model response carrying it: run, journaled, and sent back whole.
        let workspace = Workspace::new();
        let api = MockApi::start_in_thread(vec![
            tool_reply("Deep.", &[("toolu_deep", "bash", deep.clone())]),
            text_reply("done"),
        ]);
        let output = workspace.run(&api, &["-p", "go deep", "--yes"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let sent = scratchpad::json::to_string(&api.turn_requests()[1].body).unwrap();
        assert!(sent.contains(&format!("{brackets}1.50")), "sent back whole");
        assert_eq!(common::tool_results(&messages_of(&api.turn_requests()[1])), ["deep\n"]);

        // Resumed from its journal.
        let api = MockApi::start_in_thread(vec![text_reply("again")]);
        let output = workspace.run(&api, &["--continue", "-p", "next"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let sent = scratchpad::json::to_string(&api.turn_requests()[0].body).unwrap();
        assert!(sent.contains(&format!("{brackets}1.50")), "resumed whole");
        let journal = std::fs::read_to_string(workspace.newest_journal().unwrap()).unwrap();
        let records: Vec<Record> = journal
            .lines()
            .map(|line| scratchpad::json::from_str(line).unwrap())
            .collect();
        assert!(records.len() > 3);

        // `scratchpad compact` on a recorded history holding it.
        let history = format!(
            r#"[{{"role":"user","content":"go"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"bash","input":{}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"deep"}}]}}]"#,
            scratchpad::json::to_string(&deep).unwrap()
        );
        let input = workspace.path().join("deep.json");
        std::fs::write(&input, &history).unwrap();
        let output = workspace
            .command(&api, &["compact", "--input", input.to_str().unwrap(), "--summary-stub"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let printed = String::from_utf8(output.stdout).unwrap();
        assert!(
            printed.trim_end() == history,
            "nothing fired, so the history comes out byte for byte"
        );
    });
}

/// A result the seed itself persisted (its `Full output:` / `Preview:` wording, an
/// absolute path): cleared with a reference to that original, not saved again as the
/// block it is, so the full text stays one hop away.
#[test]
fn the_seeds_own_persisted_output_block_is_recognised() {
    use scratchpad::store::Store;
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join(".task_outputs/tool-results");
    std::fs::create_dir_all(&outputs).unwrap();
    let original: String = (0..4_000).map(|n| format!("line {n:04}\n")).collect();
    let file = outputs.join("seed_call.txt");
    std::fs::write(&file, &original).unwrap();
    let preview: String = original.chars().take(2_000).collect();
    let block = format!(
        "<persisted-output>\nFull output: {}\nPreview:\n{preview}\n</persisted-output>",
        file.display()
    );
    let mut messages = vec![json!({"role": "user", "content": "read the log"})];
    let mut results = vec![("seed_call", block.clone())];
    for n in 0..4 {
        results.push((["r0", "r1", "r2", "r3"][n], "y".repeat(12_000)));
    }
    for (id, content) in &results {
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "bash", "input": {"command": "cat"}}]}));
        messages
            .push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": content}]}));
    }
    messages.push(json!({"role": "assistant", "content": "read"}));
    let history = parse_history(serde_json::to_string(&messages).unwrap()).unwrap();
    let store = Store::new(dir.path());
    let prepared = prepare(
        history,
        "read the log",
        &scratchpad::compact::Context::new(&CompactConfig::default(), &store),
        &mut ExtractiveSummariser,
    );
    let micro = prepared
        .events
        .iter()
        .find(|event| event.stage == Stage::MicroCompact)
        .expect("micro fired");
    let saved = micro
        .saved
        .iter()
        .find(|saved| saved.tool_use_id == "seed_call")
        .expect("the seed's block was cleared");
    assert_eq!(
        saved.path, ".task_outputs/tool-results/seed_call.txt",
        "the original itself"
    );
    assert!(!micro.paths.contains(&saved.path), "reused, not written");
    assert_eq!(
        micro.digests.get(&saved.path),
        Some(&scratchpad::digest::of(original.as_bytes())),
        "and from now on recorded with its hash"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    let undone = scratchpad::compact::undo::undo(&prepared.messages, micro, &store, Default::default()).unwrap();
    let text = serde_json::to_string(&undone).unwrap();
    assert!(
        text.contains("Full output: "),
        "undo puts the seed's block back as it was"
    );
}
