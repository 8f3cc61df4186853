//! The layering the README states, checked on the source: which module may name which.
//! Every path a file names is found, in `use` trees (grouped ones expanded, so
//! `use crate::{message, tools::X}` names `tools`) and written out in the code, and
//! its first segment after `crate::` (or `scratchpad::`) is held against the rule of
//! the module the file is in.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A module of ours and what it may not name (or, with `Only`, all it may name).
enum Rule {
    Never(&'static [&'static str]),
    Only(&'static [&'static str]),
}

/// (the files, relative to `src/`: a folder or a file; the rule; why).
const RULES: &[(&str, Rule, &str)] = &[
    (
        "compact",
        Rule::Never(&[
            "tools", "provider", "agent", "tui", "session", "mcp", "commands", "headless", "launch", "protocol",
            "config",
        ]),
        "the compaction core is synchronous, UI-free and reasoned about alone; its I/O is behind the Archive trait",
    ),
    (
        "protocol",
        Rule::Only(&["message", "compact", "session::record"]),
        "the channels between the UI and the agent name only the message model, the stage events and the journal's format",
    ),
    (
        "session/record.rs",
        Rule::Only(&["message", "compact"]),
        "the journal's format depends on nothing the screen or the agent decides",
    ),
    (
        "message",
        Rule::Never(&[
            "tools", "provider", "agent", "tui", "session", "mcp", "protocol", "commands",
        ]),
        "the message model is a leaf every layer uses",
    ),
    (
        "mcp",
        Rule::Never(&["tools", "agent", "tui", "commands", "headless"]),
        "tools offer MCP servers' tools; MCP never reaches back into the tools",
    ),
    (
        "agent",
        Rule::Never(&["tui", "commands", "headless", "launch"]),
        "the agent talks to a UI only through the protocol, and runs no CLI command",
    ),
    (
        "config.rs",
        Rule::Never(&["tui", "agent", "commands"]),
        "the configuration's types are its own",
    ),
    (
        "process",
        Rule::Only(&["setting"]),
        "the processes' registry and environment name only the leaf that says a setting is invalid",
    ),
    ("setting.rs", Rule::Only(&[]), "an invalid setting is a leaf"),
    ("text.rs", Rule::Only(&[]), "plain-text helpers are a leaf"),
    ("tool_output.rs", Rule::Only(&[]), "what a tool gives back is a leaf"),
];

fn rust_files(place: &Path) -> Vec<PathBuf> {
    if place.is_file() {
        return vec![place.to_path_buf()];
    }
    let mut files = Vec::new();
    let mut folders = vec![place.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// `text` without comments and string literals' contents, and without the unit tests
/// at its end (tests may name anything).
fn code_of(text: &str) -> String {
    let text = &text[..text.find("#[cfg(test)]").unwrap_or(text.len())];
    let mut code = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        code.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                code.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                code.push('"');
            }
            _ => code.push(c),
        }
    }
    code
}

/// Every path a `use` tree names, grouped ones expanded: `a::{b, c::{d, e}}` is
/// `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| expand(part).into_iter().map(move |path| format!("{prefix}{path}")))
        .collect()
}

/// The paths of ours a file names: `crate::…` and `scratchpad::…`, in `use` trees
/// and in the code, from their first segment on.
fn named_paths(code: &str) -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let boundary = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let after = &rest[at + 4..];
        let Some(end) = after.find(';') else { break };
        if boundary {
            for path in expand(&after[..end]) {
                paths.insert(path);
            }
        }
        rest = &after[end..];
    }
    for root in ["crate::", "scratchpad::"] {
        for (at, _) in code.match_indices(root) {
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            paths.insert(path);
        }
    }
    paths
        .into_iter()
        .filter_map(|path| {
            let path = path.strip_prefix("pub").map_or(path.as_str(), str::trim_start);
            path.strip_prefix("crate::")
                .or_else(|| path.strip_prefix("scratchpad::"))
                .filter(|rest| !rest.is_empty())
                .map(str::to_string)
        })
        .collect()
}

fn allowed(rule: &Rule, named: &str, own: &str) -> bool {
    let top = named.split("::").next().unwrap_or_default();
    if top == own.trim_end_matches(".rs").split('/').next().unwrap_or_default() {
        return true;
    }
    match rule {
        Rule::Never(forbidden) => !forbidden.contains(&top),
        Rule::Only(permitted) => permitted
            .iter()
            .any(|permitted| named == *permitted || named.starts_with(&format!("{permitted}::"))),
    }
}

#[test]
fn every_module_names_only_what_its_layer_may() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut breaches = Vec::new();
    for (place, rule, why) in RULES {
        let files = rust_files(&src.join(place));
        assert!(!files.is_empty(), "{place} has no files");
        for file in files {
            let code = code_of(&std::fs::read_to_string(&file).unwrap());
            for named in named_paths(&code) {
                if !allowed(rule, &named, place) {
                    breaches.push(format!(
                        "{} names crate::{named}: {why}",
                        file.strip_prefix(&src).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(breaches.is_empty(), "layering broken:\n{}", breaches.join("\n"));
}

/// The check finds what it is for: a grouped `use`, a path in the code, and nothing
/// in a comment or a string.
#[test]
fn grouped_uses_and_paths_in_code_are_found() {
    let code = code_of(
        "use crate::{message::Message, tools::{bash, Job}};\n\
         // crate::tui::App in a comment\n\
         let s = \"crate::agent::x\";\n\
         fn f() { crate::provider::demo::run(); }\n",
    );
    let named = named_paths(&code);
    let tops: BTreeSet<&str> = named.iter().filter_map(|path| path.split("::").next()).collect();
    assert_eq!(tops, BTreeSet::from(["message", "provider", "tools"]), "{named:?}");
    let rule = Rule::Never(&["tools"]);
    assert!(!allowed(&rule, "tools::bash", "compact"));
    assert!(allowed(&rule, "message::Message", "compact"));
    assert!(allowed(
        &Rule::Only(&["session::record"]),
        "session::record::Past",
        "protocol"
    ));
    assert!(!allowed(
        &Rule::Only(&["session::record"]),
        "session::Journal",
        "protocol"
    ));
}
