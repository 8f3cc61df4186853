//! Confinement of file tools to the workspace. A path is inside when, after resolving
//! `..` and every symlink of its existing part, it lies under the workspace's real
//! path; anything else needs the user's permission.

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

/// Remove `.` and fold `..` without touching the disk.
fn lexical_normal(path: &Path) -> PathBuf {
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
fn real_path(path: &Path) -> PathBuf {
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
        assert_eq!(ws.resolve(""), Err(PathError::Empty));
        assert_eq!(ws.resolve("a\0b"), Err(PathError::Nul));
    }
}
