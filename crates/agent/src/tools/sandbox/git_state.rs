//! Git state in the workspace: every `.git` at any depth (a repository's folder, or a
//! file naming its folder elsewhere, as worktrees and submodules have) and the folder
//! such a file names. Git runs the hooks and config it finds there when the user next
//! uses git, outside the sandbox, so a command may neither change one nor make a new
//! one unasked. Those that exist when a command starts are bound read-only; one the
//! command made is set aside under another name when it ends (nothing is lost, and
//! git no longer reads it).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

use super::SandboxError;

/// The name git looks for.
const GIT: &str = ".git";

/// What a set-aside `.git` is renamed to (numbered when taken): not a name git reads.
const SET_ASIDE_SUFFIX: &str = ".refused";

/// The git state a workspace holds at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GitState {
    /// Every `.git` entry (folder, file or link), not looked inside, with its inode:
    /// one replaced under the same name is new.
    entries: BTreeMap<PathBuf, u64>,
    /// The folders `.git` files name (`gitdir: …`) that exist.
    targets: BTreeSet<PathBuf>,
}

/// A `.git` a command made, and the name it now has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetAside {
    pub made: PathBuf,
    pub now: PathBuf,
}

impl GitState {
    /// Walk `workspace` (links not followed; scratchpad's archive folders, which no
    /// command can write, not entered).
    pub fn of(workspace: &Path) -> Self {
        let found = Mutex::new(Vec::new());
        WalkBuilder::new(workspace)
            .standard_filters(false)
            .follow_links(false)
            .build_parallel()
            .run(|| {
                Box::new(|entry| {
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    let name = entry.file_name();
                    if entry.depth() == 1 && crate::store::ARCHIVE_FOLDERS.iter().any(|own| name == OsStr::new(own)) {
                        return WalkState::Skip;
                    }
                    if entry.depth() > 0 && name == OsStr::new(GIT) {
                        found
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .push((entry.ino().unwrap_or(0), entry.into_path()));
                        return WalkState::Skip;
                    }
                    WalkState::Continue
                })
            });
        let entries: BTreeMap<PathBuf, u64> = found
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .into_iter()
            .map(|(inode, path)| (path, inode))
            .collect();
        let targets = entries.keys().filter_map(|entry| named_folder(entry)).collect();
        GitState { entries, targets }
    }

    /// What a command must not write: every `.git` and every folder a `.git` file names.
    pub fn protected(&self) -> Vec<PathBuf> {
        self.entries.keys().chain(&self.targets).cloned().collect()
    }

    /// Whether writing `path` (in `workspace`) writes git state: it lies in a folder
    /// named `.git` (one that exists or one it would make) or in one a `.git` file
    /// names.
    pub fn covers(&self, workspace: &Path, path: &Path) -> bool {
        let relative = path.strip_prefix(workspace).unwrap_or(path);
        relative
            .components()
            .any(|part| part == Component::Normal(OsStr::new(GIT)))
            || self.protected().iter().any(|protected| path.starts_with(protected))
    }

    /// After a command (every process it started gone): rename each `.git` in
    /// `workspace` that was not in this state to a name git does not read. Those
    /// that cannot be moved are returned as errors, to be said.
    pub fn set_aside_new(&self, workspace: &Path) -> Vec<Result<SetAside, SandboxError>> {
        GitState::of(workspace)
            .entries
            .into_iter()
            .filter(|(entry, inode)| self.entries.get(entry) != Some(inode))
            .map(|(made, _)| {
                set_aside(&made).map(|now| SetAside {
                    made: made.clone(),
                    now,
                })
            })
            .collect()
    }
}

/// The existing folder a `.git` file names (`gitdir: PATH`, relative to the file's
/// folder), if it is one.
fn named_folder(entry: &Path) -> Option<PathBuf> {
    let metadata = std::fs::symlink_metadata(entry).ok()?;
    if !metadata.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(entry).ok()?;
    let named = text.lines().find_map(|line| line.strip_prefix("gitdir:"))?.trim();
    let folder = entry.parent()?.join(named).canonicalize().ok()?;
    folder.is_dir().then_some(folder)
}

/// Rename `made` beside itself, never over anything (`RENAME_NOREPLACE`).
fn set_aside(made: &Path) -> Result<PathBuf, SandboxError> {
    use std::os::unix::ffi::OsStrExt;
    let source =
        std::ffi::CString::new(made.as_os_str().as_bytes()).map_err(|_| SandboxError::NulInPath(made.to_path_buf()))?;
    for number in 1..=100 {
        let name = match number {
            1 => format!("{GIT}{SET_ASIDE_SUFFIX}"),
            n => format!("{GIT}{SET_ASIDE_SUFFIX}-{n}"),
        };
        let place = made.with_file_name(name);
        let target =
            std::ffi::CString::new(place.as_os_str().as_bytes()).map_err(|_| SandboxError::NulInPath(place.clone()))?;
        // SAFETY: two NUL-terminated paths, relative to nothing (both are absolute).
        let renamed = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                source.as_ptr(),
                libc::AT_FDCWD,
                target.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if renamed == 0 {
            return Ok(place);
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EEXIST) {
            return Err(SandboxError::SetAside {
                path: made.to_path_buf(),
                source: error,
            });
        }
    }
    Err(SandboxError::NoSpareName(made.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_git_entry_is_found_and_a_new_one_set_aside_beside_itself() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
        std::fs::create_dir_all(root.join("real-gitdir")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.git"), "gitdir: ../real-gitdir\n").unwrap();
        std::fs::create_dir_all(root.join(".transcripts/x/.git")).unwrap();
        let state = GitState::of(root);
        let mut protected = state.protected();
        protected.sort();
        let root = &root.canonicalize().unwrap();
        let mut expected = [".git", "real-gitdir", "sub/.git", "vendor/lib/.git"].map(|p| root.join(p));
        expected.sort();
        assert_eq!(protected, expected, "sub/../real-gitdir is the named folder");
        assert!(state.covers(root, &root.join("new/place/.git/config")));
        assert!(state.covers(root, &root.join("real-gitdir/hooks/pre-commit")));
        assert!(!state.covers(root, &root.join("src/main.rs")));
        assert!(!state.covers(root, &root.join("notes.git")));

        assert!(state.set_aside_new(root).is_empty(), "nothing new");
        std::fs::create_dir_all(root.join("deep/.git/hooks")).unwrap();
        std::fs::create_dir(root.join("deep/.git.refused")).unwrap();
        let set: Vec<SetAside> = state.set_aside_new(root).into_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(
            set,
            vec![SetAside {
                made: root.join("deep/.git"),
                now: root.join("deep/.git.refused-2"),
            }]
        );
        assert!(root.join("deep/.git.refused-2/hooks").is_dir(), "moved whole");
        assert!(!root.join("deep/.git").exists());

        // The top `.git` swapped for another under the same name is new.
        std::fs::rename(root.join(".git"), root.join("old")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        let set = state.set_aside_new(root);
        assert_eq!(set.len(), 1, "{set:?}");
        assert!(root.join(".git.refused").is_dir());
    }

    #[test]
    fn a_link_named_git_is_set_aside_and_what_it_names_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let before = GitState::of(dir.path());
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(".git")).unwrap();
        let set = before.set_aside_new(dir.path());
        assert_eq!(set.len(), 1, "{set:?}");
        assert!(dir.path().join(".git.refused").symlink_metadata().unwrap().is_symlink());
        assert!(elsewhere.path().is_dir());
    }
}
