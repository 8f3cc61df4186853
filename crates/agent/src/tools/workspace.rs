//! Confinement of file tools to the workspace. A path is inside when, after resolving
//! `..` and every symlink of its existing part (a dangling link by its target), it lies
//! under the workspace's real path; anything else needs the user's permission.
//!
//! That judgement is made when the call is planned; [`Workspace::open`] makes it again
//! when the file is opened, in the kernel (`openat2` with `RESOLVE_BENEATH`), so a link
//! swapped in between cannot lead a write outside. Only regular files are opened: a
//! FIFO, a device or a socket is refused instead of hanging the agent.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    Inside(PathBuf),
    Outside(PathBuf),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path contains a NUL byte")]
    Nul,
}

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// Each file as the model last saw it (read or wrote it), so an edit of a file
    /// someone changed since is refused instead of overwriting their lines.
    seen: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<PathBuf, Stamp>>>,
}

/// What a file was when it was read: size, modification time and content hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    hash: [u8; 32],
}

impl Stamp {
    pub fn of(file: &File, bytes: &[u8]) -> io::Result<Self> {
        let metadata = file.metadata()?;
        Ok(Stamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            hash: crate::digest::sha256(bytes),
        })
    }
}

impl Workspace {
    /// `root` is canonicalised once, so comparisons see through a symlinked checkout.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Workspace {
            root: root.canonicalize()?,
            seen: Default::default(),
        })
    }

    /// Remember `path` as the model now knows it.
    pub fn saw(&self, path: &Path, stamp: Stamp) {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(path.to_path_buf(), stamp);
    }

    /// `path` as the model last knew it, if it read or wrote it.
    pub fn last_seen(&self, path: &Path) -> Option<Stamp> {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(path)
            .copied()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn resolve(&self, path: &str) -> Result<Resolved, PathError> {
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if path.contains('\0') {
            return Err(PathError::Nul);
        }
        let joined = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            self.root.join(path)
        };
        let real = real_path(&lexical_normal(&joined));
        Ok(if real.starts_with(&self.root) {
            Resolved::Inside(real)
        } else {
            Resolved::Outside(real)
        })
    }

    /// A path for display: relative to the workspace when inside it.
    pub fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.display().to_string())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("it leads outside the workspace through a link; refused")]
    Escapes,
    #[error("it changed since it was read (someone else wrote it); read it again, then edit")]
    Changed,
    #[error("it is not a regular file but a {0}; only regular files are read or written")]
    NotRegular(&'static str),
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl Workspace {
    /// Open `path` for reading, as judged by [`Workspace::resolve`]: an inside path is
    /// resolved beneath the workspace by the kernel; an outside one (the user allowed
    /// it) is opened without following a link in its last part. Writes go through
    /// [`Workspace::replace`].
    pub fn open(&self, path: &Path) -> Result<File, OpenError> {
        let file = match path.strip_prefix(&self.root) {
            Ok(relative) => self.open_beneath(relative)?,
            Err(_) => {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
                    .open(path)
                    .map_err(open_error)?
            }
        };
        let kind = file.metadata()?.file_type();
        if !kind.is_file() {
            use std::os::unix::fs::FileTypeExt;
            let name = if kind.is_dir() {
                "directory"
            } else if kind.is_fifo() {
                "FIFO"
            } else if kind.is_socket() {
                "socket"
            } else if kind.is_char_device() || kind.is_block_device() {
                "device"
            } else {
                "special file"
            };
            return Err(OpenError::NotRegular(name));
        }
        Ok(file)
    }

    /// Replace `path` whole with `content`, never half: the text goes to a temporary
    /// file in the same folder, is flushed, and is renamed over the original (whose
    /// mode is kept). A full disk leaves the original as it was. With `expected`, the
    /// file must still be as it was read (checked just before the rename).
    pub fn replace(&self, path: &Path, content: &[u8], expected: Option<Stamp>) -> Result<Stamp, OpenError> {
        use std::os::unix::ffi::OsStrExt;
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(OpenError::NotRegular("directory"));
        };
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let folder = match parent.strip_prefix(&self.root) {
            Ok(relative) => {
                let root = File::open(&self.root)?;
                if relative.as_os_str().is_empty() {
                    File::from(openat2_beneath(&root, Path::new("."), flags, 0)?)
                } else {
                    make_folders_beneath(&root, relative)?;
                    File::from(openat2_beneath(&root, relative, flags, 0)?)
                }
            }
            Err(_) => File::open(parent)?,
        };
        let c_name = std::ffi::CString::new(name.as_bytes()).map_err(io::Error::other)?;
        // The original, if any: a regular file (never a link) whose mode we keep.
        // SAFETY: a zeroed stat is valid; fstatat fills it.
        let mut original: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor, NUL-terminated name, a pointer to `original`.
        let exists = unsafe {
            libc::fstatat(
                folder.as_raw_fd(),
                c_name.as_ptr(),
                &mut original,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        } == 0;
        if exists && original.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(OpenError::NotRegular("special file or link"));
        }
        let temp_name = format!(
            ".{}.scratchpad-{}-{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let c_temp = std::ffi::CString::new(temp_name).map_err(io::Error::other)?;
        // SAFETY: valid descriptor and NUL-terminated name.
        let fd = unsafe {
            libc::openat(
                folder.as_raw_fd(),
                c_temp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error().into());
        }
        // SAFETY: a new descriptor nothing else owns.
        let mut temp = unsafe { File::from_raw_fd(fd) };
        let remove_temp = || {
            // SAFETY: valid descriptor and NUL-terminated name.
            unsafe { libc::unlinkat(folder.as_raw_fd(), c_temp.as_ptr(), 0) };
        };
        let written = (|| -> Result<Stamp, OpenError> {
            use std::io::Write;
            if exists {
                use std::os::unix::fs::PermissionsExt;
                temp.set_permissions(std::fs::Permissions::from_mode(original.st_mode & 0o7777))?;
                // Keep the owner where we may (root editing another user's file).
                // SAFETY: a valid descriptor; failure leaves our own ownership.
                unsafe { libc::fchown(temp.as_raw_fd(), original.st_uid, original.st_gid) };
            }
            temp.write_all(content)?;
            temp.sync_all()?;
            if let Some(expected) = expected {
                let now = self.open(path)?;
                let mut bytes = Vec::new();
                (&now).read_to_end(&mut bytes)?;
                if Stamp::of(&now, &bytes)? != expected {
                    return Err(OpenError::Changed);
                }
            }
            Ok(Stamp::of(&temp, content)?)
        })();
        let stamp = match written {
            Ok(stamp) => stamp,
            Err(error) => {
                remove_temp();
                return Err(error);
            }
        };
        // SAFETY: valid descriptors and NUL-terminated names in the same folder.
        if unsafe { libc::renameat(folder.as_raw_fd(), c_temp.as_ptr(), folder.as_raw_fd(), c_name.as_ptr()) } != 0 {
            let error = io::Error::last_os_error();
            remove_temp();
            return Err(error.into());
        }
        // The rename itself durable: the folder flushed.
        let _ = folder.sync_all();
        Ok(stamp)
    }

    fn open_beneath(&self, relative: &Path) -> Result<File, OpenError> {
        let root = File::open(&self.root)?;
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        Ok(File::from(openat2_beneath(&root, relative, flags, 0)?))
    }
}

/// `openat2(dir, path, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: a link
/// or `..` that would leave `dir` is an error ([`OpenError::Escapes`]).
fn openat2_beneath(dir: &File, path: &Path, flags: i32, mode: u64) -> Result<OwnedFd, OpenError> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: open_how is a plain struct of integers; all-zero is its default.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = mode;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: valid descriptor, NUL-terminated path and a pointer to `how` with its size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        let error = io::Error::last_os_error();
        return Err(open_error(error));
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// What a failed open means: a link out, a FIFO or device opened for writing with no
/// one at the other end (`ENXIO`), or anything else.
fn open_error(error: io::Error) -> OpenError {
    match error.raw_os_error() {
        Some(libc::EXDEV | libc::ELOOP) => OpenError::Escapes,
        Some(libc::ENXIO) => OpenError::NotRegular("FIFO or device"),
        _ => OpenError::Io(error),
    }
}

/// Create the folders of `path` under `dir` one by one, each found beneath `dir`.
fn make_folders_beneath(dir: &File, path: &Path) -> Result<(), OpenError> {
    let mut prefix = PathBuf::new();
    for component in path.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        let parent = if prefix.as_os_str().is_empty() {
            None
        } else {
            Some(openat2_beneath(
                dir,
                &prefix,
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                0,
            )?)
        };
        prefix.push(name);
        match openat2_beneath(dir, &prefix, libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC, 0) {
            Ok(_) => continue,
            Err(OpenError::Io(error)) if error.kind() == io::ErrorKind::NotFound => {}
            Err(other) => return Err(other),
        }
        use std::os::unix::ffi::OsStrExt;
        let c_name = std::ffi::CString::new(name.as_bytes()).map_err(io::Error::other)?;
        let at = parent.as_ref().map_or(dir.as_raw_fd(), AsRawFd::as_raw_fd);
        // SAFETY: valid descriptor and NUL-terminated name.
        if unsafe { libc::mkdirat(at, c_name.as_ptr(), 0o777) } != 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::AlreadyExists {
                return Err(error.into());
            }
        }
    }
    Ok(())
}

static TEMP_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Remove `.` and fold `..` without touching the disk.
pub(crate) fn lexical_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonicalise the longest existing prefix (following symlinks) and append the rest.
/// A dangling link is followed to its target, so a write through it is judged by where
/// it would land.
fn real_path(path: &Path) -> PathBuf {
    real_path_within(path, 40)
}

fn real_path_within(path: &Path, links_left: usize) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        if links_left > 0
            && let Ok(target) = std::fs::read_link(&existing)
        {
            let base = existing.parent().unwrap_or(Path::new("/"));
            let mut followed = real_path_within(&lexical_normal(&base.join(target)), links_left - 1);
            for part in rest.iter().rev() {
                followed.push(part);
            }
            return followed;
        }
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_outside_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        assert!(matches!(ws.resolve("src/new.rs"), Ok(Resolved::Inside(_))));
        assert!(matches!(ws.resolve("src/../a/b/c.txt"), Ok(Resolved::Inside(_))));
        assert!(matches!(ws.resolve("../x"), Ok(Resolved::Outside(_))));
        assert!(matches!(ws.resolve("/etc/passwd"), Ok(Resolved::Outside(_))));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
            assert!(matches!(ws.resolve("out/new.txt"), Ok(Resolved::Outside(_))));
        }
        #[cfg(unix)]
        {
            let target = outside.path().join("planted.txt");
            std::os::unix::fs::symlink(&target, dir.path().join("notes.md")).unwrap();
            assert_eq!(
                ws.resolve("notes.md"),
                Ok(Resolved::Outside(target)),
                "a dangling link is judged by its target"
            );
        }
        assert_eq!(ws.resolve(""), Err(PathError::Empty));
        assert_eq!(ws.resolve("a\0b"), Err(PathError::Nul));
    }

    #[test]
    fn open_refuses_special_files_and_links_swapped_out_of_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let fifo = ws.root().join("pipe");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(matches!(ws.open(&fifo), Err(OpenError::NotRegular("FIFO"))));
        assert!(matches!(ws.replace(&fifo, b"x", None), Err(OpenError::NotRegular(_))));
        // Judged inside, then swapped for a link out before the write.
        let planned = ws.root().join("swap.txt");
        std::os::unix::fs::symlink(outside.path().join("planted.txt"), &planned).unwrap();
        assert!(matches!(
            ws.replace(&planned, b"x", None),
            Err(OpenError::NotRegular(_))
        ));
        assert!(!outside.path().join("planted.txt").exists());
        let deep = ws.root().join("a/b/c.txt");
        ws.replace(&deep, b"hi", None).unwrap();
        assert_eq!(std::fs::read_to_string(&deep).unwrap(), "hi");
        std::os::unix::fs::symlink(outside.path(), ws.root().join("out")).unwrap();
        assert!(matches!(
            ws.replace(&ws.root().join("out/x/y.txt"), b"x", None),
            Err(OpenError::Escapes)
        ));
        assert!(!outside.path().join("x").exists(), "no folder was made outside");
    }

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_stale_one_is_left_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let script = ws.root().join("run.sh");
        std::fs::write(&script, "echo one\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
        let file = ws.open(&script).unwrap();
        let read = Stamp::of(&file, b"echo one\n").unwrap();
        ws.replace(&script, b"echo two\n", Some(read)).unwrap();
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "echo two\n");
        assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o7777, 0o751);
        // Someone appends after our read: the edit is refused and their line stays.
        std::fs::write(&script, "echo two\necho theirs\n").unwrap();
        assert!(matches!(
            ws.replace(&script, b"echo three\n", Some(read)),
            Err(OpenError::Changed)
        ));
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "echo two\necho theirs\n");
        let leftovers: Vec<_> = std::fs::read_dir(ws.root())
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
