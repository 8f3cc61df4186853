//! The README documents exactly the keys and slash commands the app knows: both are
//! checked against the tables the app itself reads. The README and ARCHITECTURE.md
//! name only files of ours that exist.

use scratchpad::tui::commands::SlashCommand;
use scratchpad::tui::keymap::{SCREEN, VIEWS};

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The rows of the markdown table that follows `heading`.
fn table_after(text: &str, heading: &str) -> Vec<(String, String)> {
    let start = text.find(heading).unwrap_or_else(|| panic!("README has no {heading}"));
    text[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            (cells[0].to_string(), cells.get(1).unwrap_or(&"").to_string())
        })
        .collect()
}

#[test]
fn the_readme_key_table_is_the_apps_key_table() {
    let documented = table_after(&readme(), "### Keys");
    let known: Vec<(String, String)> = SCREEN
        .iter()
        .map(|row| (row.keys.to_string(), row.what.to_string()))
        .collect();
    assert_eq!(documented, known);
}

#[test]
fn the_readme_lists_every_slash_command_and_no_other() {
    let documented: Vec<String> = table_after(&readme(), "### Slash commands")
        .into_iter()
        .map(|(command, _)| {
            command
                .trim_matches('`')
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let known: Vec<String> = SlashCommand::all().map(|c| c.name().to_string()).collect();
    assert_eq!(documented, known);
}

#[test]
fn the_readme_lists_each_views_keys_as_the_help_does() {
    for (view, rows) in VIEWS {
        let documented = table_after(&readme(), &format!("#### {view}"));
        let known: Vec<(String, String)> = rows
            .iter()
            .map(|row| (row.keys.to_string(), row.what.to_string()))
            .collect();
        assert_eq!(documented, known, "{view}");
    }
}

/// The comma-separated list after `label` in the README's status line bullet, up to
/// its full stop, with parenthesised remarks left out.
fn status_line_list(label: &str) -> Vec<String> {
    let text = readme();
    let start = text
        .find("- **status line** —")
        .expect("README describes the status line");
    let bullet: String = text[start..]
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let after = &bullet[bullet.find(label).unwrap_or_else(|| panic!("no {label:?}")) + label.len()..];
    let list = &after[..after.find('.').expect("the list ends with a full stop")];
    let mut plain = String::new();
    let mut depth = 0;
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split(',')
        .map(|item| item.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_readme_gives_the_status_lines_order_and_what_gives_way_as_the_code_does() {
    use scratchpad::tui::status::{GIVE_WAY, STATUS_ORDER};
    let names = |items: &[scratchpad::tui::status::StatusItem]| -> Vec<String> {
        items.iter().map(|item| item.name().to_string()).collect()
    };
    assert_eq!(status_line_list("left to right:"), names(&STATUS_ORDER));
    assert_eq!(status_line_list("give way in turn:"), names(&GIVE_WAY));
}

/// The files of ours a document names in backticks: paths under the workspace's own
/// folders, and the files at its root.
fn named_files(text: &str) -> Vec<String> {
    let roots = ["crates/", "src/", "tests/", "benches/", ".ci/"];
    let root_files = [
        "Cargo.toml",
        "clippy.toml",
        "config.example.toml",
        "README.md",
        "ARCHITECTURE.md",
    ];
    // Fenced blocks (a screenshot, commands) are not prose: their backticks would
    // throw the pairing of the others off.
    let mut fenced = false;
    let prose: String = text
        .lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect::<Vec<_>>()
        .join("\n");
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| !quoted.contains(char::is_whitespace))
        .filter(|quoted| roots.iter().any(|root| quoted.starts_with(root)) || root_files.contains(quoted))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_docs_name_only_files_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for document in ["README.md", "ARCHITECTURE.md"] {
        let text = std::fs::read_to_string(root.join(document)).unwrap();
        let named = named_files(&text);
        assert!(!named.is_empty(), "{document} names no file");
        let missing: Vec<&String> = named.iter().filter(|path| !root.join(path).exists()).collect();
        assert!(
            missing.is_empty(),
            "{document} names files that do not exist: {missing:?}"
        );
    }
}

#[test]
fn a_named_file_is_a_path_in_backticks() {
    let named = named_files(
        "see `crates/core/src/lib.rs` and `clippy.toml`, not `cargo test` or `src/a b`\n```sh\nls `src/x`\n```\nand `src/lib.rs`",
    );
    assert_eq!(named, ["crates/core/src/lib.rs", "clippy.toml", "src/lib.rs"]);
}

#[test]
fn the_readme_points_to_the_architecture() {
    assert!(readme().contains("[ARCHITECTURE.md](ARCHITECTURE.md)"));
}
