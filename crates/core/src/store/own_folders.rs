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

/// The most a small record file may hold; a bigger one is not ours and is left unread.
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// The small record at `path` that [`write_json_whole`] keeps: `Ok(None)` when there is
/// none. A link, a FIFO or another special file, a file over 1 MiB, or one that does
/// not hold such JSON is an error that says so: never followed, waited on or trusted.
pub fn read_json_whole<T: serde::de::DeserializeOwned>(path: &Path) -> io::Result<Option<T>> {
    use std::io::Read;
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let not_ours = |why: &str| io::Error::other(format!("{} {why}; it is left unread", path.display()));
    let file = match options.open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => return Err(not_ours("is a link")),
        Err(error) => return Err(error),
    };
    if !file.metadata()?.is_file() {
        return Err(not_ours("is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Err(not_ours("is over 1 MiB"));
    }
    crate::json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| not_ours(&format!("does not hold what scratchpad keeps there ({error})")))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A small record reads back as written; a missing one is none; a link, a FIFO,
    /// an oversized file and one of other JSON are each an error, and the FIFO is not
    /// waited on.
    #[test]
    fn a_small_record_is_read_only_from_a_regular_file_of_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        assert_eq!(read_json_whole::<Vec<String>>(&path).unwrap(), None);
        write_json_whole(&path, &vec!["kept".to_string()]).unwrap();
        assert_eq!(
            read_json_whole::<Vec<String>>(&path).unwrap(),
            Some(vec!["kept".into()])
        );

        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let error = read_json_whole::<Vec<String>>(&link).unwrap_err().to_string();
        assert!(error.contains("is a link"), "{error}");

        let fifo = dir.path().join("fifo.json");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = read_json_whole::<Vec<String>>(&fifo).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");

        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b' '; (MAX_RECORD_BYTES + 1) as usize]).unwrap();
        let error = read_json_whole::<Vec<String>>(&big).unwrap_err().to_string();
        assert!(error.contains("over 1 MiB"), "{error}");

        std::fs::write(&path, b"{\"not\": \"a list\"}").unwrap();
        let error = read_json_whole::<Vec<String>>(&path).unwrap_err().to_string();
        assert!(error.contains("does not hold what scratchpad keeps there"), "{error}");
    }
}
