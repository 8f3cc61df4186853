//! The book documents exactly the keys, slash commands and config keys the app knows:
//! each is checked against what the app itself reads. The README stays a ten-minute
//! read, every page of the book exists, and no document names a file or links a page
//! that does not exist.

use scratchpad::tui::commands::SlashCommand;
use scratchpad::tui::keymap::{SCREEN, VIEWS};

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// A page of the book (`docs/src/`).
fn book(page: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/src")
        .join(page);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The rows of the markdown table that follows `heading` in `text`.
fn table_after(text: &str, heading: &str) -> Vec<(String, String)> {
    let start = text.find(heading).unwrap_or_else(|| panic!("no {heading}"));
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
fn the_books_key_table_is_the_apps_key_table() {
    let documented = table_after(&book("screen.md"), "## Keys");
    let known: Vec<(String, String)> = SCREEN
        .iter()
        .map(|row| (row.keys.to_string(), row.what.to_string()))
        .collect();
    assert_eq!(documented, known);
}

#[test]
fn the_book_lists_every_slash_command_and_no_other() {
    let documented: Vec<String> = table_after(&book("screen.md"), "## Slash commands")
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
fn the_book_lists_each_views_keys_as_the_help_does() {
    for (view, rows) in VIEWS {
        let documented = table_after(&book("screen.md"), &format!("### {view}"));
        let known: Vec<(String, String)> = rows
            .iter()
            .map(|row| (row.keys.to_string(), row.what.to_string()))
            .collect();
        assert_eq!(documented, known, "{view}");
    }
}

/// The comma-separated list after `label` in the book's status line bullet, up to
/// its full stop, with parenthesised remarks left out.
fn status_line_list(label: &str) -> Vec<String> {
    let text = book("screen.md");
    let start = text
        .find("- **status line** —")
        .expect("the book describes the status line");
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
fn the_book_gives_the_status_lines_order_and_what_gives_way_as_the_code_does() {
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

/// The README, ARCHITECTURE.md and every page of the book, by their paths in the
/// workspace.
fn documents() -> Vec<String> {
    let mut documents = vec!["README.md".to_string(), "ARCHITECTURE.md".to_string()];
    let pages = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src");
    let mut book: Vec<String> = std::fs::read_dir(pages)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/src/{name}"))
        .collect();
    book.sort();
    documents.extend(book);
    documents
}

#[test]
fn the_docs_name_only_files_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for document in documents() {
        let text = std::fs::read_to_string(root.join(&document)).unwrap();
        let missing: Vec<String> = named_files(&text)
            .into_iter()
            .filter(|path| !root.join(path).exists())
            .collect();
        assert!(
            missing.is_empty(),
            "{document} names files that do not exist: {missing:?}"
        );
    }
}

/// The targets of a document's markdown links to files (not web pages or anchors),
/// without their anchors.
fn linked_files(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')')?];
            let target = target.split('#').next().unwrap_or_default();
            (!target.is_empty() && !target.contains("://")).then(|| target.to_string())
        })
        .collect()
}

#[test]
fn every_link_between_the_docs_leads_to_a_file() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(root.join(&document)).unwrap();
        let folder = root.join(&document).parent().unwrap().to_path_buf();
        for target in linked_files(&text) {
            if !folder.join(&target).exists() {
                broken.push(format!("{document} → {target}"));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
}

#[test]
fn every_page_the_summary_lists_exists_and_every_page_is_listed() {
    let summary = book("SUMMARY.md");
    let listed = linked_files(&summary);
    assert!(listed.len() >= 10, "{listed:?}");
    for page in &listed {
        book(page);
    }
    for document in documents().iter().filter_map(|d| d.strip_prefix("docs/src/")) {
        assert!(
            document == "SUMMARY.md" || listed.iter().any(|page| page == document),
            "{document} is not in SUMMARY.md"
        );
    }
}

#[test]
fn the_readme_is_a_ten_minute_read() {
    let words = readme().split_whitespace().count();
    assert!(
        words <= 2_500,
        "the README has {words} words; the rest belongs in the book"
    );
}

/// Every key of the configuration, dotted (`compaction.context_char_limit`), from what
/// the defaults serialise to.
fn config_keys() -> Vec<String> {
    fn walk(prefix: &str, value: &serde_json::Value, keys: &mut Vec<String>) {
        if let serde_json::Value::Object(fields) = value {
            for (name, field) in fields {
                let key = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                match field {
                    // A table of settings; an empty one (`mcp_servers`, named by the
                    // user) is a key of its own.
                    serde_json::Value::Object(inner) if !inner.is_empty() => walk(&key, field, keys),
                    _ => keys.push(key),
                }
            }
        }
    }
    let mut keys = Vec::new();
    walk(
        "",
        &serde_json::to_value(scratchpad::config::Config::default()).unwrap(),
        &mut keys,
    );
    keys
}

#[test]
fn the_book_documents_every_config_key() {
    let page = book("configuration.md");
    let keys = config_keys();
    assert!(keys.len() > 20, "{keys:?}");
    // A key is named whole (`compaction.context_char_limit`), or as the start of its
    // entries (`mcp_servers.NAME`).
    let missing: Vec<&String> = keys
        .iter()
        .filter(|key| !page.contains(&format!("`{key}`")) && !page.contains(&format!("`{key}.")))
        .collect();
    assert!(missing.is_empty(), "configuration.md leaves out {missing:?}");
}

#[test]
fn a_named_file_is_a_path_in_backticks() {
    let named = named_files(
        "see `crates/core/src/lib.rs` and `clippy.toml`, not `cargo test` or `src/a b`\n```sh\nls `src/x`\n```\nand `src/lib.rs`",
    );
    assert_eq!(named, ["crates/core/src/lib.rs", "clippy.toml", "src/lib.rs"]);
}

#[test]
fn the_readme_points_to_the_architecture_and_the_book() {
    let readme = readme();
    assert!(readme.contains("[ARCHITECTURE.md](ARCHITECTURE.md)"));
    assert!(readme.contains("(docs/src/SUMMARY.md)"));
}

#[test]
fn the_example_config_shows_at_most_30_keys() {
    let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.toml")).unwrap();
    // A key line, set or shown commented out: `name = value` or `# name = value`.
    let keys = example
        .lines()
        .map(|line| line.trim_start_matches('#').trim_start())
        .filter(|line| {
            line.split_once(" = ")
                .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        })
        .count();
    assert!(
        keys <= 30,
        "config.example.toml shows {keys} keys; the rest belong in the book"
    );
    assert!(keys >= 20, "{keys}");
}
