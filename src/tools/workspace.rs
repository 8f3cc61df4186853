//! Confinement of file tools to the workspace. A path is inside when, after resolving
//! `..` and every symlink of its existing part (a dangling link by its target), it lies
//! under the workspace's real path; anything else needs the user's permission.
//!
//! That judgement is made when the call is planned; [`Workspace::open`] makes it again
//! when the file is opened, in the kernel (`openat2` with `RESOLVE_BENEATH`), so a link
//! swapped in between cannot lead a write outside. Only regular files are opened: a
//! FIFO, a device or a socket is refused instead of hanging the agent.

use std::fs::File;
use std::io;
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
}

impl Workspace {
    /// `root` is canonicalised once, so comparisons see through a symlinked checkout.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Workspace {
            root: root.canonicalize()?,
        })
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Create if missing (with its folders), then truncate.
    Write,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("it leads outside the workspace through a link; refused")]
    Escapes,
    #[error("it is not a regular file but a {0}; only regular files are read or written")]
    NotRegular(&'static str),
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl Workspace {
    /// Open `path` as judged by [`Workspace::resolve`]: an inside path is resolved
    /// beneath the workspace by the kernel; an outside one (the user allowed it) is
    /// opened without following a link in its last part.
    pub fn open(&self, path: &Path, access: Access) -> Result<File, OpenError> {
        let file = match path.strip_prefix(&self.root) {
            Ok(relative) => self.open_beneath(relative, access)?,
            Err(_) => {
                use std::os::unix::fs::OpenOptionsExt;
                let mut options = std::fs::OpenOptions::new();
                match access {
                    Access::Read => options.read(true),
                    Access::Write => options.write(true).create(true),
                };
                options
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
        if access == Access::Write {
            file.set_len(0)?;
        }
        Ok(file)
    }

    fn open_beneath(&self, relative: &Path, access: Access) -> Result<File, OpenError> {
        let root = File::open(&self.root)?;
        let flags = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        let fd = match access {
            Access::Read => openat2_beneath(&root, relative, flags | libc::O_RDONLY, 0)?,
            Access::Write => {
                if let Some(parent) = relative.parent() {
                    make_folders_beneath(&root, parent)?;
                }
                openat2_beneath(&root, relative, flags | libc::O_WRONLY | libc::O_CREAT, 0o666)?
            }
        };
        Ok(File::from(fd))
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
        assert!(matches!(
            ws.open(&fifo, Access::Read),
            Err(OpenError::NotRegular("FIFO"))
        ));
        assert!(matches!(ws.open(&fifo, Access::Write), Err(OpenError::NotRegular(_))));
        // Judged inside, then swapped for a link out before the open.
        let planned = ws.root().join("swap.txt");
        std::os::unix::fs::symlink(outside.path().join("planted.txt"), &planned).unwrap();
        assert!(matches!(ws.open(&planned, Access::Write), Err(OpenError::Escapes)));
        assert!(!outside.path().join("planted.txt").exists());
        let deep = ws.root().join("a/b/c.txt");
        use std::io::Write;
        ws.open(&deep, Access::Write).unwrap().write_all(b"hi").unwrap();
        assert_eq!(std::fs::read_to_string(&deep).unwrap(), "hi");
        std::os::unix::fs::symlink(outside.path(), ws.root().join("out")).unwrap();
        assert!(matches!(
            ws.open(&ws.root().join("out/x/y.txt"), Access::Write),
            Err(OpenError::Escapes)
        ));
        assert!(!outside.path().join("x").exists(), "no folder was made outside");
    }
}
