//! The file access read_file, write_file and edit_file share. Paths arrive resolved and
//! judged by the plan and are opened through [`Workspace::open`], which judges them
//! again at open time and takes regular files only. These run on a blocking thread.

use std::io::Read;
use std::path::Path;

use super::ToolOutput;
use super::workspace::{Stamp, Workspace};

/// Files larger than this are not read whole; the model is told to use offset/limit
/// through bash tools instead.
const MAX_READ_BYTES: u64 = 20 * 1024 * 1024;

pub(super) fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

/// The whole file, at most [`MAX_READ_BYTES`], and what it was when read.
pub(super) fn read_capped(workspace: &Workspace, path: &Path, shown: &str) -> Result<(Vec<u8>, Stamp), ToolOutput> {
    let cannot = |error: &dyn std::fmt::Display| ToolOutput::error(format!("Cannot read {shown}: {error}"));
    let file = workspace.open(path).map_err(|error| cannot(&error))?;
    let mut bytes = Vec::new();
    (&file)
        .take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| cannot(&error))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(ToolOutput::error(format!(
            "{shown} is larger than {MAX_READ_BYTES} bytes, too large to read whole; use bash (head, sed -n) for parts"
        )));
    }
    let stamp = Stamp::of(&file, &bytes).map_err(|error| cannot(&error))?;
    Ok((bytes, stamp))
}

/// Replace the file whole (never half-written); with `expected`, only if it is still
/// as it was read. The model then knows the file as written.
pub(super) fn write_whole(
    workspace: &Workspace,
    path: &Path,
    shown: &str,
    content: &str,
    expected: Option<Stamp>,
) -> Result<(), ToolOutput> {
    let stamp = workspace
        .replace(path, content.as_bytes(), expected)
        .map_err(|error| ToolOutput::error(format!("Cannot write {shown}: {error}")))?;
    workspace.saw(path, stamp);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::edit_file::run as edit;
    use crate::tools::read_file::run as read;
    use crate::tools::workspace::Workspace;
    use crate::tools::write_file::run as write;

    #[test]
    fn read_with_limits_binary_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let dir_path = ws.root().to_path_buf();
        let file = dir_path.join("a.txt");
        std::fs::write(&file, "1\n2\n3\n4\n5\n").unwrap();
        assert_eq!(
            read(&ws, &file, "a.txt", 1, 2),
            ToolOutput::ok("1\n2\n... (3 more lines)")
        );
        assert_eq!(read(&ws, &file, "a.txt", 4, 10), ToolOutput::ok("4\n5\n"));
        let bin = dir_path.join("b.bin");
        std::fs::write(&bin, [0u8, 1, 2, 3]).unwrap();
        assert_eq!(
            read(&ws, &bin, "b.bin", 1, 10).text,
            "b.bin is a binary file (4 bytes); not shown"
        );
        assert!(read(&ws, &dir_path.join("none"), "none", 1, 10).is_error);
        assert!(read(&ws, &dir_path, ".", 1, 10).text.contains("directory"));
    }

    #[test]
    fn write_creates_parents_and_edit_replaces_once() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let file = ws.root().join("deep/er/f.rs");
        assert!(!write(&ws, &file, "f.rs", "fn a() {}\nfn a() {}\n").is_error);
        let twice = edit(&ws, &file, "f.rs", "fn a()", "fn b()");
        assert!(twice.is_error && twice.text.contains("occurs 2 times"));
        let missing = edit(&ws, &file, "f.rs", "fn z()", "x");
        assert!(missing.is_error && missing.text.contains("not found"));
        assert!(!edit(&ws, &file, "f.rs", "fn a() {}\nfn a", "fn a() {}\nfn b").is_error);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "fn a() {}\nfn b() {}\n");
    }
}
