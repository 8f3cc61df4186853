//! The compaction core is pure and UI-free: nothing under `src/compact/` names the
//! tools, the providers, the agent or the TUI, so it can be reasoned about (and
//! reused) alone.

#[test]
fn the_compaction_core_imports_nothing_from_tools_provider_agent_or_tui() {
    let core = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compact");
    let mut files = Vec::new();
    let mut folders = vec![core];
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
    assert!(files.len() > 10, "found the core: {files:?}");
    let mut reaches = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            for layer in ["tools", "provider", "agent", "tui"] {
                if line.contains(&format!("crate::{layer}")) || line.contains(&format!("scratchpad::{layer}")) {
                    reaches.push(format!("{}:{}: {}", file.display(), number + 1, line.trim()));
                }
            }
        }
    }
    assert!(reaches.is_empty(), "the core reaches out:\n{}", reaches.join("\n"));
}
