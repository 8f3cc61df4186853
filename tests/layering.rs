//! What the crate graph cannot say about the layering, checked on the source. The
//! crates are the layers (core, session, protocol, agent, tui, the binary) and the
//! compiler keeps them: a crate names only the crates below it. Two things remain for
//! this test: what a crate may depend on from outside (the core stays free of an async
//! runtime, a UI and the network), and which module inside a crate may name which.
//! Every path a file names is found, in `use` trees (grouped ones expanded, so
//! `use crate::{message, tools::X}` names `tools`) and written out in the code, and
//! its first segment after `crate::` (or a crate of ours) is held against the rule of
//! the module the file is in.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A module of ours and what it may not name (or, with `Only`, all it may name).
enum Rule {
    Never(&'static [&'static str]),
    Only(&'static [&'static str]),
}

/// (the files, relative to the workspace: a folder or a file; the rule; why).
const RULES: &[(&str, Rule, &str)] = &[
    (
        "crates/protocol/src",
        Rule::Only(&["message", "compact", "session::record"]),
        "the channels between the UI and the agent name only the message model, the stage events and the journal's format",
    ),
    (
        "crates/session/src/record.rs",
        Rule::Only(&["message", "compact"]),
        "the journal's format depends on nothing the screen or the agent decides",
    ),
    (
        "crates/agent/src/mcp",
        Rule::Never(&["tools", "agent", "provider"]),
        "tools offer MCP servers' tools; MCP never reaches back into the tools, nor into the providers (a tool's spec is a leaf in the message model)",
    ),
    (
        "crates/agent/src/tools",
        Rule::Never(&["provider", "agent"]),
        "the tools run calls; they name a tool's spec from the message model, never a provider or the agent",
    ),
    (
        "crates/core/src/message/tool_spec.rs",
        Rule::Only(&[]),
        "a tool as the model sees it is a leaf",
    ),
    (
        "crates/agent/src/config.rs",
        Rule::Never(&["agent"]),
        "the configuration's types are its own",
    ),
    (
        "crates/agent/src/process",
        Rule::Only(&["setting"]),
        "the processes' registry and environment name only the leaf that says a setting is invalid",
    ),
    (
        "crates/core/src/setting.rs",
        Rule::Only(&[]),
        "an invalid setting is a leaf",
    ),
    (
        "crates/core/src/text.rs",
        Rule::Only(&[]),
        "plain-text helpers are a leaf",
    ),
    (
        "crates/core/src/places.rs",
        Rule::Only(&[]),
        "where scratchpad keeps its files is a leaf",
    ),
    (
        "crates/agent/src/tool_output.rs",
        Rule::Only(&[]),
        "what a tool gives back is a leaf",
    ),
];

/// Our crates by the name a path gives them, and the module name each stands for
/// in a crate above it (`scratchpad_session::record` is `session::record`).
const OUR_CRATES: &[(&str, &str)] = &[
    ("crate::", ""),
    ("scratchpad::", ""),
    ("scratchpad_core::", ""),
    ("scratchpad_session::", "session::"),
    ("scratchpad_protocol::", "protocol::"),
    ("scratchpad_agent::", ""),
    ("scratchpad_tui::", "tui::"),
];

/// Each crate and the crates from outside it must not depend on, with why.
const FORBIDDEN_DEPENDENCIES: &[(&str, &[&str], &str)] = &[
    (
        "crates/core",
        &["tokio", "ratatui", "crossterm", "reqwest", "rmcp", "futures"],
        "the core is synchronous and free of any UI or network: the pipeline is reasoned about alone",
    ),
    (
        "crates/session",
        &["tokio", "ratatui", "crossterm", "reqwest", "rmcp", "futures"],
        "the journal is a file format and its one writer, with no runtime or UI",
    ),
    (
        "crates/protocol",
        &["tokio", "ratatui", "crossterm", "reqwest", "rmcp", "futures"],
        "the channels carry plain data; what runs them is the agent's and the UI's",
    ),
    (
        "crates/agent",
        &["ratatui", "crossterm"],
        "the agent talks to a UI only through the protocol",
    ),
];

/// The layers in order: each crate may depend only on crates before it.
const LAYERS: &[(&str, &str)] = &[
    ("scratchpad-core", "crates/core"),
    ("scratchpad-session", "crates/session"),
    ("scratchpad-protocol", "crates/protocol"),
    ("scratchpad-agent", "crates/agent"),
    ("scratchpad-tui", "crates/tui"),
    ("scratchpad", "."),
];

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The names under a manifest's `[dependencies]` (not its dev-dependencies).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
        } else if in_dependencies && let Some((name, _)) = line.split_once('=') {
            names.push(name.trim().to_string());
        }
    }
    names
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it_and_what_its_layer_may_use() {
    let mut breaches = Vec::new();
    for (at, (name, dir)) in LAYERS.iter().enumerate() {
        let manifest = std::fs::read_to_string(workspace().join(dir).join("Cargo.toml")).unwrap();
        let used = dependencies(&manifest);
        assert!(!used.is_empty(), "{dir}/Cargo.toml lists no dependencies");
        for dependency in &used {
            if let Some(position) = LAYERS.iter().position(|(layer, _)| layer == dependency)
                && position >= at
            {
                breaches.push(format!("{name} depends on {dependency}, a layer above it or itself"));
            }
        }
        for (crate_dir, forbidden, why) in FORBIDDEN_DEPENDENCIES {
            if crate_dir == dir {
                for dependency in used.iter().filter(|used| forbidden.contains(&used.as_str())) {
                    breaches.push(format!("{name} depends on {dependency}: {why}"));
                }
            }
        }
    }
    assert!(breaches.is_empty(), "layering broken:\n{}", breaches.join("\n"));
}

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

/// The paths of ours a file names: `crate::…` and our crates' (`scratchpad_session::…`), in `use` trees
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
    for (root, _) in OUR_CRATES {
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
            OUR_CRATES.iter().find_map(|(root, module)| {
                path.strip_prefix(root)
                    .filter(|rest| !rest.is_empty())
                    .map(|rest| format!("{module}{rest}"))
            })
        })
        .collect()
}

fn allowed(rule: &Rule, named: &str, own: &str) -> bool {
    let top = named.split("::").next().unwrap_or_default();
    let module = own.split_once("/src/").map_or("", |(_, module)| module);
    if top == module.trim_end_matches(".rs").split('/').next().unwrap_or_default() {
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
    let root = workspace();
    let mut breaches = Vec::new();
    for (place, rule, why) in RULES {
        let files = rust_files(&root.join(place));
        assert!(!files.is_empty(), "{place} has no files");
        for file in files {
            let code = code_of(&std::fs::read_to_string(&file).unwrap());
            for named in named_paths(&code) {
                if !allowed(rule, &named, place) {
                    breaches.push(format!(
                        "{} names crate::{named}: {why}",
                        file.strip_prefix(root).unwrap().display()
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
    assert!(!allowed(&rule, "tools::bash", "crates/agent/src/mcp"));
    assert!(allowed(&rule, "message::Message", "crates/agent/src/mcp"));
    assert!(allowed(&rule, "mcp::server", "crates/agent/src/mcp"));
    assert!(allowed(
        &Rule::Only(&["session::record"]),
        "session::record::Past",
        "crates/protocol/src"
    ));
    assert!(!allowed(
        &Rule::Only(&["session::record"]),
        "session::Journal",
        "crates/protocol/src"
    ));
    let ours = named_paths("use scratchpad_session::record::Past; fn f() { scratchpad_core::text::cut(); }");
    assert_eq!(
        ours,
        BTreeSet::from(["session::record::Past".to_string(), "text::cut".to_string()])
    );
}

/// The longest a source file may be before its tests: past it, a file holds more than
/// one concern and is split.
const MOST_LINES: usize = 600;

/// A source file's lines before its tests (an inline `#[cfg(test)]` module, or none).
fn lines_before_tests(text: &str) -> usize {
    text.lines()
        .take_while(|line| !line.starts_with("#[cfg(test)]"))
        .count()
}

#[test]
fn no_source_file_is_over_600_lines_before_its_tests() {
    let root = workspace();
    let mut long = Vec::new();
    for place in ["src", "crates"] {
        for file in rust_files(&root.join(place)) {
            // A module of tests is tests, wherever it lives.
            if file.file_name().is_some_and(|name| name == "tests.rs") {
                continue;
            }
            let lines = lines_before_tests(&std::fs::read_to_string(&file).unwrap());
            if lines > MOST_LINES {
                long.push(format!("{}: {lines} lines", file.strip_prefix(root).unwrap().display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MOST_LINES} lines before their tests:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_line_count_stops_at_the_tests() {
    assert_eq!(lines_before_tests("a\nb\n#[cfg(test)]\nmod tests {\n}\n"), 2);
    assert_eq!(lines_before_tests("a\nb\n"), 2);
}
