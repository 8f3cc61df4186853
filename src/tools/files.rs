//! read_file, write_file, edit_file. Paths arrive resolved and judged by the plan.

use std::path::Path;

use super::ToolOutput;

/// Files larger than this are not read whole; the model is told to use offset/limit
/// through bash tools instead.
const MAX_READ_BYTES: u64 = 20 * 1024 * 1024;

fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

pub async fn read(path: &Path, shown: &str, offset: usize, limit: usize) -> ToolOutput {
    let metadata = match tokio::fs::metadata(path).await {
        Ok(metadata) => metadata,
        Err(error) => return ToolOutput::error(format!("Cannot read {shown}: {error}")),
    };
    if metadata.is_dir() {
        return ToolOutput::error(format!("{shown} is a directory; use glob to list it"));
    }
    if metadata.len() > MAX_READ_BYTES {
        return ToolOutput::error(format!(
            "{shown} is {} bytes, too large to read whole; use bash (head, sed -n) for parts",
            metadata.len()
        ));
    }
    let bytes = match tokio::fs::read(path).await {
        Ok(bytes) => bytes,
        Err(error) => return ToolOutput::error(format!("Cannot read {shown}: {error}")),
    };
    if looks_binary(&bytes) {
        return ToolOutput::ok(format!("{shown} is a binary file ({} bytes); not shown", bytes.len()));
    }
    let text = String::from_utf8_lossy(&bytes);
    if text.is_empty() {
        return ToolOutput::ok(format!("{shown} is empty"));
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = (offset - 1).min(lines.len());
    let end = start.saturating_add(limit).min(lines.len());
    let mut out: String = lines[start..end].concat();
    if end < lines.len() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("... ({} more lines)", lines.len() - end));
    }
    ToolOutput::ok(out)
}

pub async fn write(path: &Path, shown: &str, content: &str) -> ToolOutput {
    if let Some(parent) = path.parent()
        && let Err(error) = tokio::fs::create_dir_all(parent).await
    {
        return ToolOutput::error(format!("Cannot create the folders for {shown}: {error}"));
    }
    match tokio::fs::write(path, content).await {
        Ok(()) => ToolOutput::ok(format!("Wrote {} bytes to {shown}", content.len())),
        Err(error) => ToolOutput::error(format!("Cannot write {shown}: {error}")),
    }
}

pub async fn edit(path: &Path, shown: &str, old: &str, new: &str) -> ToolOutput {
    if old.is_empty() {
        return ToolOutput::error("old_text is empty; use write_file to create a file");
    }
    let bytes = match tokio::fs::read(path).await {
        Ok(bytes) => bytes,
        Err(error) => return ToolOutput::error(format!("Cannot read {shown}: {error}")),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!("{shown} is not UTF-8 text; edit_file will not change it"));
    };
    match text.matches(old).count() {
        0 => ToolOutput::error(format!(
            "old_text was not found in {shown}; read the file and copy the text exactly"
        )),
        1 => {
            let updated = text.replacen(old, new, 1);
            match tokio::fs::write(path, &updated).await {
                Ok(()) => ToolOutput::ok(format!("Edited {shown}: replaced 1 occurrence")),
                Err(error) => ToolOutput::error(format!("Cannot write {shown}: {error}")),
            }
        }
        n => ToolOutput::error(format!(
            "old_text occurs {n} times in {shown}; include more surrounding text so it is unique"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn read_with_limits_binary_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "1\n2\n3\n4\n5\n").unwrap();
        assert_eq!(
            read(&file, "a.txt", 1, 2).await,
            ToolOutput::ok("1\n2\n... (3 more lines)")
        );
        assert_eq!(read(&file, "a.txt", 4, 10).await, ToolOutput::ok("4\n5\n"));
        let bin = dir.path().join("b.bin");
        std::fs::write(&bin, [0u8, 1, 2, 3]).unwrap();
        assert_eq!(
            read(&bin, "b.bin", 1, 10).await.text,
            "b.bin is a binary file (4 bytes); not shown"
        );
        assert!(read(&dir.path().join("none"), "none", 1, 10).await.is_error);
        assert!(read(dir.path(), ".", 1, 10).await.text.contains("directory"));
    }

    #[tokio::test]
    async fn write_creates_parents_and_edit_replaces_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deep/er/f.rs");
        assert!(!write(&file, "f.rs", "fn a() {}\nfn a() {}\n").await.is_error);
        let twice = edit(&file, "f.rs", "fn a()", "fn b()").await;
        assert!(twice.is_error && twice.text.contains("occurs 2 times"));
        let missing = edit(&file, "f.rs", "fn z()", "x").await;
        assert!(missing.is_error && missing.text.contains("not found"));
        assert!(!edit(&file, "f.rs", "fn a() {}\nfn a", "fn a() {}\nfn b").await.is_error);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn a() {}\nfn b() {}\n");
    }
}
