//! The README documents exactly the keys and slash commands the app knows: both are
//! checked against the tables the app itself reads.

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
