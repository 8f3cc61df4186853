//! scratchpad's own folders and small files, made safely: never through a link the
//! model planted, private to the user, written whole and then renamed into place.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::OWN_FOLDERS;

/// Create `workspace/relative` (private); when that starts a folder of
/// [`OWN_FOLDERS`] that has no `.gitignore` yet, give it one of `*`, so a git checkout
/// never shows our journals and archives as untracked files.
pub fn create_own_folder(workspace: &Path, relative: &str) -> io::Result<PathBuf> {
    let dir = workspace.join(relative);
    refuse_links(workspace, relative)?;
    create_private_dir(&dir)?;
    if let Some(top) = Path::new(relative).components().next()
        && OWN_FOLDERS
            .iter()
            .any(|own| Path::new(own) == Path::new(top.as_os_str()))
    {
        let ignore = workspace.join(top.as_os_str()).join(".gitignore");
        match OpenOptions::new().write(true).create_new(true).open(&ignore) {
            Ok(mut file) => file.write_all(b"*\n")?,
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Ok(dir)
}

/// Our folders are never followed through a link: one swapped in (by a command, before
/// the sandbox made them read-only) would make us write elsewhere.
pub(super) fn refuse_links(workspace: &Path, relative: &str) -> io::Result<()> {
    let mut path = workspace.to_path_buf();
    for part in Path::new(relative).components() {
        path.push(part);
        match fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(io::Error::other(format!(
                    "{} is a link, not scratchpad's folder; nothing is written through it (move it away)",
                    path.strip_prefix(workspace).unwrap_or(&path).display()
                )));
            }
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Keep `value` as JSON at `path`, whole or not at all: written aside in the same
/// folder (made private when it is new), flushed, then renamed into place. For the
/// small records scratchpad keeps beside its data (labels, trust, approvals).
pub fn write_json_whole(path: &Path, value: &impl serde::Serialize) -> io::Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    create_private_dir(folder)?;
    let text = crate::json::to_vec(value).map_err(io::Error::other)?;
    let mut temp = tempfile::Builder::new().prefix(".new-").tempfile_in(folder)?;
    temp.write_all(&text)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// Create `dir` (and its parents) readable by its owner only.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// A tool_use id made safe as a file name: anything but ASCII letters, digits, `-`
/// and `_` becomes `_`, and the length is bounded.
pub fn safe_file_stem(id: &str) -> String {
    let mut stem: String = id
        .chars()
        .take(96)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() {
        stem.push_str("unnamed");
    }
    stem
}
