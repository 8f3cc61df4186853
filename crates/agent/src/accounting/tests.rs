use serde_json::json;

use super::*;
use crate::compact::MIN_CONTEXT_CHAR_LIMIT;
use crate::protocol::WindowSource;

fn fit(window: u64, max_tokens: u64) -> Fit {
    Fit {
        window_tokens: window,
        max_tokens,
        chars_per_token: DEFAULT_CHARS_PER_TOKEN,
        fixed_chars: 2_400,
        fixed_tokens: None,
    }
}

#[test]
fn auto_is_the_window_share_less_the_reply_and_fixed_part() {
    let decision = decide_limit(LimitChoice::Auto, 50_000, &fit(200_000, 8_192));
    assert_eq!(decision.chars, (160_000 - 8_192) * 4 - 2_400);
    assert_eq!(
        decision.note.message().unwrap(),
        "limit auto: 604.8k chars (80% of 200.0k tokens − 8.2k for the reply, × 4.0 chars/token, − 2.4k fixed)"
    );
}

#[test]
fn a_limit_above_the_window_is_clamped_and_one_far_below_gets_a_hint() {
    // llama.cpp at -c 8192 with the default max_tokens: half the window is the reply's.
    let small = fit(8_192, 8_192);
    let clamped = decide_limit(LimitChoice::Configured, 50_000, &small);
    assert_eq!(clamped.chars, 4_096 * 4 - 2_400);
    assert!(matches!(clamped.note, LimitNote::Clamped { configured: 50_000, .. }));
    assert!(
        clamped
            .note
            .message()
            .unwrap()
            .contains("more than the model's window holds")
    );
    let far = decide_limit(LimitChoice::Configured, 50_000, &fit(200_000, 8_192));
    assert_eq!(far.chars, 50_000);
    assert!(far.note.message().unwrap().contains("--limit auto"));
    let fine = decide_limit(LimitChoice::Configured, 300_000, &fit(200_000, 8_192));
    assert_eq!(fine.note, LimitNote::AsConfigured);
}

#[test]
fn a_window_that_cannot_hold_the_fixed_part_says_so_plainly() {
    // 2,400 fixed characters at 4 a token are 600 tokens: with a reply, more than 512.
    for choice in [LimitChoice::Auto, LimitChoice::Configured] {
        let decision = decide_limit(choice, 50_000, &fit(512, 8_192));
        assert_eq!(decision.chars, MIN_CONTEXT_CHAR_LIMIT);
        assert_eq!(
            decision.note,
            LimitNote::WindowTooSmall {
                window_tokens: 512,
                fixed_tokens: 600
            }
        );
        let said = decision.note.message().unwrap();
        assert!(said.contains("window of 512 tokens cannot hold"), "{said}");
        assert!(said.contains("about 600 tokens"), "{said}");
        assert!(said.contains("-c 4096"), "{said}");
    }
    // 600 + a 256-token reply fit in 1,024: a limit is worked out, and said to be cramped.
    assert!(matches!(
        decide_limit(LimitChoice::Auto, 50_000, &fit(1_024, 8_192)).note,
        LimitNote::Cramped { .. }
    ));
}

/// `--limit auto` never settles on the 2,000-char floor where the window could give a
/// turn room, and says so plainly where it cannot.
#[test]
fn an_automatic_limit_leaves_a_turn_room_or_says_the_window_is_too_small() {
    // llama-server at -c 4096: the 80% share less half the window for the reply
    // leaves 1,228 tokens, 4.3k chars: 0.8k once the 3.5k fixed part is set aside,
    // which the floor raises to 2,000.
    let small = Fit {
        window_tokens: 4_096,
        max_tokens: 8_192,
        chars_per_token: 3.5,
        fixed_chars: 3_500,
        fixed_tokens: None,
    };
    let share = ((4_096 * 80 / 100 - 2_048) as f64 * 3.5) as usize - 3_500;
    assert!(share < MIN_CONTEXT_CHAR_LIMIT, "{share}");
    // With the reply kept to a quarter (1,024 tokens) the window holds 7.2k chars:
    // the limit takes the 6,000 a turn needs of them.
    let holds = ((4_096 - 1_024) as f64 * 3.5) as usize - 3_500;
    assert!(holds > MIN_WORKING_CHARS, "{holds}");
    let decision = decide_limit(LimitChoice::Auto, 50_000, &small);
    assert_eq!(decision.chars, MIN_WORKING_CHARS);
    let said = decision.note.message().unwrap();
    assert!(
        said.starts_with("limit auto: 6.0k chars, the least a turn needs"),
        "{said}"
    );
    assert!(said.contains("would leave 2.0k"), "{said}");

    // At -c 2048 even the stretched window holds too little: the limit is what it
    // holds, the note says compaction will run nearly every turn and names the
    // window that would do (4096, the first doubling that holds 6,000 chars).
    let tiny = Fit {
        window_tokens: 2_048,
        ..small
    };
    let stretched = ((2_048 - 512) as f64 * 3.5) as usize - 3_500;
    assert!(stretched < MIN_WORKING_CHARS);
    let decision = decide_limit(LimitChoice::Auto, 50_000, &tiny);
    assert_eq!(
        decision.note,
        LimitNote::Cramped {
            chars: stretched.max(MIN_CONTEXT_CHAR_LIMIT),
            window_tokens: 2_048,
            needs_tokens: Some(4_096)
        }
    );
    let said = decision.note.message().unwrap();
    assert!(said.contains("compaction will run nearly every turn"), "{said}");
    assert!(said.contains("-c 4096"), "{said}");

    // A large window keeps its share.
    assert_eq!(
        fit(200_000, 8_192).auto_limit(),
        AutoLimit::Share((160_000 - 8_192) * 4 - 2_400)
    );
}

#[test]
fn windows_are_found_in_server_answers_and_the_model_table() {
    assert_eq!(
        window_from_props(&json!({"default_generation_settings": {"n_ctx": 8192}})),
        Some(8192)
    );
    assert_eq!(window_from_props(&json!({"n_ctx": 4096})), Some(4096));
    assert_eq!(window_from_props(&json!({"n_ctx": 0})), None);
    let models = json!({"data": [{"id": "a", "max_model_len": 32768}, {"id": "b"}]});
    assert_eq!(window_from_models(&models, "a"), Some(32768));
    assert_eq!(window_from_models(&models, "b"), None);
    assert_eq!(
        window_from_models(&json!({"data": [{"id": "x", "max_model_len": 4096}]}), "other"),
        Some(4096)
    );
    assert_eq!(known_window("claude-sonnet-4-5").map(|w| w.tokens), Some(200_000));
    assert_eq!(known_window("smollm2"), None);
}

#[test]
fn chars_per_token_come_from_one_call_and_re_estimates_are_marked() {
    let figure = measured(1_000, 4_200, 200_000, TokenBasis::Reported);
    assert!((figure.chars_per_token - 4.2).abs() < 1e-9);
    let after = re_estimated(&figure, 2_100);
    assert_eq!(after.tokens, 500);
    assert_eq!(after.basis, TokenBasis::Estimated);
}

/// A history of `estimate` characters whose request units are a quarter of its
/// characters and the fixed part's (the ratio of plain prose).
fn at(estimate: usize) -> Extent {
    Extent {
        estimate,
        units: (1_000 + estimate) / 4,
    }
}

fn ledger(choice: LimitChoice) -> Ledger {
    let window = Window {
        tokens: 10_000,
        source: WindowSource::Configured,
    };
    Ledger::new(window, 1_000, 1_000, choice, 50_000)
}

#[test]
fn the_ledger_measures_each_call_and_re_estimates_after_compaction() {
    let mut ledger = ledger(LimitChoice::Configured);
    // 10k tokens − 1k reply at 4 chars/token − 1k fixed: 35k chars fit, so 50k is clamped.
    assert_eq!(ledger.limit().chars, 35_000);
    let (point, note) = ledger.called(at(9_000), 3, 2_500);
    assert_eq!(point.request_chars, Some(10_000));
    assert_eq!(point.predicted_tokens, None, "nothing measured before the first call");
    assert_eq!(point.before(), 9_000);
    assert!(note.is_none(), "still clamped, nothing new to say");
    let figure = ledger.tokens().unwrap().clone();
    assert_eq!((figure.tokens, figure.basis), (2_500, TokenBasis::Reported));
    assert!((figure.chars_per_token - 4.0).abs() < 1e-9);
    ledger.compacted(at(9_000), at(3_000), [Stage::CompactHistory]);
    let figure = ledger.tokens().unwrap();
    assert_eq!((figure.tokens, &figure.basis), (1_000, &TokenBasis::Estimated));
    let (point, _) = ledger.called(at(3_100), 2, 1_000);
    assert_eq!(
        point.predicted_tokens,
        Some(1_025),
        "4k chars at the 4 chars/token left"
    );
    assert_eq!((point.before(), point.estimate), (9_000, 3_100));
    assert_eq!(point.stages, vec![Stage::CompactHistory]);
    assert_eq!(ledger.tokens().unwrap().basis, TokenBasis::Reported);
    let (point, _) = ledger.called(at(3_200), 4, 0);
    assert_eq!((point.before, point.stages.len(), point.input_tokens), (None, 0, None));
}

#[test]
fn a_compaction_costs_the_cached_prefix_the_next_call_writes_again() {
    let mut ledger = ledger(LimitChoice::Configured);
    let (mut first, _) = ledger.called(at(9_000), 3, 2_500);
    ledger.cache(&mut first, 0, 2_000);
    assert_eq!((first.cache_read, first.cache_rewritten), (Some(0), None));
    let (mut second, _) = ledger.called(at(9_500), 5, 2_600);
    ledger.cache(&mut second, 2_000, 500);
    assert_eq!(second.cache_rewritten, None, "no compaction in between");
    ledger.compacted(at(9_500), at(3_000), [Stage::MicroCompact]);
    let (mut third, _) = ledger.called(at(3_100), 5, 800);
    ledger.cache(&mut third, 300, 500);
    assert_eq!(third.cache_rewritten, Some(2_500 - 300));
    let (mut uncached, _) = ledger.called(at(3_200), 6, 800);
    ledger.cache(&mut uncached, 0, 0);
    assert_eq!(uncached.cache_read, None, "a provider without caching");
}

#[test]
fn an_automatic_limit_follows_the_measured_ratio_and_the_found_window() {
    let mut ledger = ledger(LimitChoice::Auto);
    assert_eq!(ledger.limit().chars, (8_000 - 1_000) * 4 - 1_000);
    ledger.called(at(5_000), 2, 2_000);
    assert_eq!(ledger.limit().chars, (8_000 - 1_000) * 3 - 1_000);
    let note = ledger.set_window(Window {
        tokens: 20_000,
        source: WindowSource::Server {
            endpoint: "/props".into(),
        },
    });
    assert!(note.is_none(), "still automatic");
    assert_eq!(ledger.limit().chars, (16_000 - 1_000) * 3 - 1_000);
    assert_eq!(ledger.tokens().unwrap().window_tokens, 20_000);
}

#[test]
fn the_reply_gets_what_the_window_leaves_after_the_prompt() {
    let small = |max_tokens| {
        Ledger::new(
            Window {
                tokens: 2_048,
                source: WindowSource::Configured,
            },
            1_000,
            max_tokens,
            LimitChoice::Configured,
            2_000,
        )
    };
    let mut tight = small(8_192);
    // (1k fixed + 3k) / 4 chars per token = 1,000 tokens, plus a twentieth.
    assert_eq!(tight.reply_tokens(at(3_000)), 2_048 - 1_050);
    // Measured at 2 chars per token the same prompt takes twice the tokens.
    tight.called(at(3_000), 1, 2_000);
    assert_eq!(tight.reply_tokens(at(3_000)), u32::try_from(MIN_REPLY_TOKENS).unwrap());
    assert_eq!(small(100).reply_tokens(at(10)), 100, "a smaller setting stands");
    assert_eq!(ledger(LimitChoice::Configured).reply_tokens(at(1_000)), 1_000);
}

#[test]
fn the_summary_request_is_sized_to_the_window() {
    let at = |tokens| {
        Ledger::new(
            Window {
                tokens,
                source: WindowSource::Configured,
            },
            1_000,
            8_192,
            LimitChoice::Configured,
            50_000,
        )
    };
    let small = at(2_048).summary_budget(1_000);
    // A quarter of the window is 512 tokens; a third of the (clamped) limit, 3,096
    // chars at 4 a token, is less.
    assert_eq!(small.max_tokens, 258);
    assert_eq!(small.input_chars, (1_638 - 258) * 4 - 1_000);
    let large = at(200_000).summary_budget(1_000);
    assert_eq!(large.max_tokens, 4_096);
    assert!(
        large.input_chars > 80_000,
        "the configured cap decides for large windows"
    );
    assert_eq!(at(512).summary_budget(5_000).input_chars, MIN_SUMMARY_INPUT_CHARS);
}

#[test]
fn a_server_names_its_model_and_says_whether_its_template_renders_tools() {
    let props = json!({"model_alias": "/m/SmolLM2.gguf", "model_path": "/m/SmolLM2.gguf",
        "chat_template_caps": {"supports_tools": false}});
    assert_eq!(model_from_props(&props).as_deref(), Some("/m/SmolLM2.gguf"));
    assert_eq!(tools_from_props(&props), Some(false));
    assert_eq!(tools_from_props(&json!({})), None);
    assert_eq!(model_from_props(&json!({"model_alias": ""})), None);
    let one = json!({"data": [{"id": "qwen"}]});
    assert_eq!(model_from_models(&one).as_deref(), Some("qwen"));
    let two = json!({"data": [{"id": "a"}, {"id": "b"}]});
    assert_eq!(model_from_models(&two), None, "which one is in use is not said");
}

/// After a compaction took away text of another kind than what stays, the figure
/// follows the content, not the ratio the whole request was measured at: a history
/// of digits (a token a character) and prose (four characters a token) measured
/// together, then the prose summarised away.
#[test]
fn after_a_compaction_the_figure_follows_what_is_left_in_the_context() {
    let mut ledger = ledger(LimitChoice::Configured);
    // 1k fixed (250 units) + 4k of digits (4,000 units, 4,000 tokens) + 8k of prose
    // (2,000 units, 2,000 tokens): 13k chars, 6,250 units, measured at 6,250 tokens.
    let before = Extent {
        estimate: 12_000,
        units: 6_250,
    };
    ledger.called(before, 5, 6_250);
    let after = Extent {
        estimate: 4_400,
        units: 4_350,
    };
    ledger.compacted(before, after, [Stage::CompactHistory]);
    let figure = ledger.tokens().unwrap();
    assert_eq!(
        figure.tokens, 4_350,
        "the digits' tokens are left, not 5.4k chars at 2.08 a token"
    );
    assert!((figure.chars_per_token - 5_400.0 / 4_350.0).abs() < 1e-9);
    assert_eq!(ledger.predicted(after), Some(4_350));
    // A refusal is a measurement: the server said what the history takes.
    ledger.refused(after, 5_000);
    assert_eq!(
        (ledger.tokens().unwrap().tokens, ledger.predicted(after)),
        (5_000, Some(5_000))
    );
}

/// After a compaction the figure is the request that is left, weighed by its own
/// content, never the last count less what was removed at the rate learned from the
/// last addition (a dense paste taught 3 tokens a unit; /compact then took 3,000
/// units away and the gauge read a handful of tokens for thousands of characters).
#[test]
fn after_a_compaction_the_figure_is_what_is_left_not_a_subtraction() {
    let mut ledger = ledger(LimitChoice::Configured);
    let first = Extent {
        estimate: 7_000,
        units: 2_000,
    };
    ledger.called(first, 3, 2_000);
    let grown = Extent {
        estimate: 11_000,
        units: 4_000,
    };
    ledger.called(grown, 5, 8_000);
    assert_eq!(ledger.predicted(grown), Some(8_000));
    let after = Extent {
        estimate: 2_500,
        units: 1_000,
    };
    ledger.compacted(grown, after, [Stage::CompactHistory]);
    let figure = ledger.tokens().unwrap();
    assert_eq!(figure.tokens, 2_000, "a quarter of the units, a quarter of the tokens");
    assert!(
        figure.chars_per_token > 1.0 && figure.chars_per_token < 4.0,
        "{}",
        figure.chars_per_token
    );
}

/// A reply the server stopped for length is blamed on what stopped it: llama-server
/// at -c 2048 gave 1,995 prompt tokens a 53-token reply of the 512 asked for.
#[test]
fn a_reply_cut_by_a_full_window_is_not_blamed_on_max_tokens() {
    let small = Ledger::new(
        Window {
            tokens: 2_048,
            source: WindowSource::Configured,
        },
        1_000,
        512,
        LimitChoice::Configured,
        2_000,
    );
    let usage = |input_tokens, output_tokens| crate::protocol::Usage {
        input_tokens,
        output_tokens,
        ..Default::default()
    };
    let full = small.reply_end(&usage(1_995, 53), 512);
    assert_eq!(
        full,
        ReplyEnd::WindowFull {
            prompt: 1_995,
            reply: 53,
            window: 2_048
        }
    );
    assert_eq!(
        full.to_string(),
        "the end of the model's window (1995 prompt + 53 reply = 2048 of its 2048 tokens)"
    );
    // Said as it adds up: 1771 + 256 left 21 of the window.
    assert_eq!(
        small.reply_end(&usage(1_771, 256), 512).to_string(),
        "the end of the model's window (1771 prompt + 256 reply = 2027 of its 2048 tokens)"
    );
    let limit = small.reply_end(&usage(900, 400), 512);
    assert_eq!(limit.to_string(), "its max_tokens limit (512 tokens)");
    assert_eq!(
        small.reply_end(&usage(0, 0), 512),
        ReplyEnd::MaxTokens { max_tokens: 512 }
    );
}

/// The server counted the fixed part (tool definitions' JSON packs three characters a
/// token, the messages' prose four): the automatic limit sets aside its counted tokens
/// and converts the rest at the messages' own ratio, where the whole request's blended
/// ratio gave the messages less room than the window has for them.
#[test]
fn a_counted_fixed_part_is_set_aside_as_counted_and_the_messages_convert_at_their_own_ratio() {
    let window = Window {
        tokens: 8_192,
        source: WindowSource::Configured,
    };
    let mut ledger = Ledger::new(window, 6_000, 1_000, LimitChoice::Auto, 50_000);
    let sent = Extent {
        estimate: 8_000,
        units: 4_000,
    };
    ledger.counted(4_000, sent);
    let share = 8_192 * AUTO_WINDOW_PERCENT / 100 - 1_000;
    assert_eq!(ledger.limit().chars, (share as f64 * 3.5) as usize - 6_000, "blended");
    ledger.fixed_counted(2_000);
    assert_eq!(ledger.limit().chars, ((share - 2_000) * 4) as usize);
    let said = ledger.limit().note.message().unwrap();
    assert!(
        said.contains("− 2.0k the server counted for the system prompt and tools, × 4.0 chars/token"),
        "{said}"
    );
    // A history of a few tokens says nothing of the messages' ratio: the request's.
    ledger.counted(
        2_010,
        Extent {
            estimate: 60,
            units: 2_010,
        },
    );
    let blended = 6_060.0 / 2_010.0;
    assert_eq!(ledger.limit().chars, ((share - 2_000) as f64 * blended) as usize);
    // A changed fixed part is counted again before it is trusted.
    ledger.fixed_changed(6_500, sent, sent);
    assert_eq!(ledger.fixed_tokens(), None);
}
