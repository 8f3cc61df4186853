use super::*;

fn plain(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

/// The style of the first span holding `text`.
fn style_of(lines: &[Line<'_>], text: &str) -> Style {
    lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .find(|s| s.content.contains(text))
        .unwrap()
        .style
}

#[test]
fn wraps_words_lists_and_code() {
    let text =
        "# Title\nsome words that wrap around\n- item one that wraps\n```rust\nfn main() {}\n```\nuse `x` and **y**";
    let lines = render(text, 16, Style::default());
    assert_eq!(
        plain(&lines),
        vec![
            "Title",
            "",
            "some words that",
            "wrap around",
            "",
            "• item one that",
            "  wraps",
            "",
            "  ┌ rust",
            "  │ fn main() {}",
            "",
            "use x and y",
        ]
    );
    let span = |text: &str| lines[11].spans.iter().find(|s| s.content.trim() == text).unwrap().style;
    assert_eq!(span("x").fg, Some(theme::palette().code));
    assert!(span("y").add_modifier.contains(Modifier::BOLD));
    assert_eq!(span("use").fg, None);
}

#[test]
fn long_words_break_and_wide_characters_count_double() {
    let lines = render(&"x".repeat(25), 10, Style::default());
    assert_eq!(plain(&lines), vec!["xxxxxxxxxx", "xxxxxxxxxx", "xxxxx"]);
    let wide = render("日本語の文字です", 6, Style::default());
    assert!(plain(&wide).iter().all(|l| l.width() <= 6));
}

#[test]
fn nested_and_numbered_lists_tasks_quotes_links_and_emphasis() {
    let text = "1. first\n2. second\n   - inner\n- [x] done\n\n> quoted *words*\n\nsee [the docs](https://example.org/docs) and ~~old~~";
    let lines = render(text, 60, Style::default());
    assert_eq!(
        plain(&lines),
        vec![
            "1. first",
            "2. second",
            "  • inner",
            "",
            "☑ done",
            "",
            "│ quoted words",
            "",
            "see the docs (https://example.org/docs) and old",
        ]
    );
    let find = |text: &str| style_of(&lines, text);
    assert_eq!(find("the docs").fg, Some(theme::palette().link));
    assert!(find("words").add_modifier.contains(Modifier::ITALIC));
    assert!(find("old").add_modifier.contains(Modifier::CROSSED_OUT));
}

#[test]
fn a_path_wraps_between_its_parts() {
    let path = ".transcripts/transcript_compact_history_20261202-120000_4242-17.jsonl";
    let lines = wrap(
        &path_segments(path, Style::default(), 34),
        40,
        Span::raw("  1 ↳ "),
        "      ",
    );
    let shown = plain(&lines);
    assert_eq!(shown.concat().replace(' ', "").replace("1↳", ""), path);
    // The name is wider than a line: it breaks after its own `_` and `-`.
    for line in &shown {
        let last = line.trim_end().chars().last().unwrap();
        assert!(
            line == shown.last().unwrap() || ['/', '_', '-'].contains(&last),
            "{shown:?}"
        );
    }
}

#[test]
fn a_file_name_that_fits_a_line_is_never_split() {
    let path = ".task_outputs/tool-results/toolu_demo_017_0_read_file.txt";
    let lines = wrap(
        &path_segments(path, Style::default(), 50),
        56,
        Span::raw("  1 ↳ "),
        "      ",
    );
    let shown = plain(&lines);
    assert_eq!(
        shown,
        vec![
            "  1 ↳ .task_outputs/tool-results/",
            "      toolu_demo_017_0_read_file.txt"
        ],
        "the break is after a folder, not inside the name"
    );
}

#[test]
fn tables_align_their_columns_and_fit_the_width() {
    let text = "| name | size |\n|---|---|\n| a.rs | 12 |\n| a_very_long_file_name.rs | 3 |";
    let lines = render(text, 24, Style::default());
    let shown = plain(&lines);
    assert_eq!(shown[0], format!("name{}│ size", " ".repeat(14)));
    assert!(shown[1].starts_with("─────") && shown[1].contains("┼"));
    assert!(shown[3].contains('…'), "{shown:?}");
    assert!(lines.iter().all(|l| l.width() <= 24), "{shown:?}");
}

#[test]
fn code_is_highlighted_by_kind() {
    let lines = render(
        "```rust\nfn main() { let s = \"hi\"; } // note\n```",
        80,
        Style::default(),
    );
    let colour = |text: &str| {
        lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .find(|s| s.content.contains(text))
            .map(|s| s.style.fg)
            .unwrap()
    };
    assert_eq!(colour("fn"), Some(code_colour(CodeRole::Keyword)));
    assert_eq!(colour("\"hi\""), Some(code_colour(CodeRole::Text)));
    assert_eq!(colour("// note"), Some(code_colour(CodeRole::Comment)));
    // An unknown language is plain code, not an error.
    let plain_code = render("```nosuchlang\nx = 1\n```", 80, Style::default());
    assert_eq!(plain(&plain_code), vec!["  ┌ nosuchlang", "  │ x = 1"]);
}

/// On a terminal that did not say its background, inline code and links are drawn in
/// its own foreground (links keep their underline): the dark palette's yellow and
/// cyan are unreadable on a light background.
#[test]
fn without_a_known_background_code_and_links_take_the_terminal_colour() {
    let fallback = theme::EITHER;
    let lines = theme::with_palette(fallback, || {
        render(
            "run `cargo test` and read [the docs](https://example.com)",
            80,
            Style::default(),
        )
    });
    let find = |text: &str| style_of(&lines, text);
    assert_eq!(find("cargo test").fg, Some(ratatui::style::Color::Reset));
    assert_eq!(find("the docs").fg, Some(ratatui::style::Color::Reset));
    assert!(find("the docs").add_modifier.contains(Modifier::UNDERLINED));
}
