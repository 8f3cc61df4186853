//! Where a workspace's journals are: in the platform data folder, one folder per
//! workspace, out of the model's reach; and the move of journals an earlier version
//! kept inside the workspace.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::SessionError;

/// Where journals were kept before they moved out of the workspace (out of the
/// model's reach); found there, they are moved on the first start.
pub const LEGACY_SESSIONS_DIR: &str = ".scratchpad/sessions";

/// The workspace folder an earlier version kept its journals in (in
/// [`LEGACY_SESSIONS_DIR`]).
pub const LEGACY_FOLDER: &str = ".scratchpad";

/// The folder of this workspace's journals: in the platform data folder, outside the
/// workspace, where no command or file tool can write, one folder per workspace (its
/// name and a hash of its path).
pub fn sessions_dir(workspace: &Path) -> PathBuf {
    let root = scratchpad_core::places::data_dir().unwrap_or_else(|| workspace.join(".scratchpad"));
    sessions_dir_under(&root, workspace)
}

/// [`sessions_dir`] under a given data folder.
pub fn sessions_dir_under(data_root: &Path, workspace: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let real = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let hash = crate::digest::sha256(real.as_os_str().as_bytes());
    let hex: String = hash[..6].iter().map(|byte| format!("{byte:02x}")).collect();
    let name = real
        .file_name()
        .map(|name| crate::store::safe_file_stem(&name.to_string_lossy()))
        .unwrap_or_else(|| "root".into());
    data_root.join("sessions").join(format!("{name}-{hex}"))
}

/// Move journals left in the workspace's `.scratchpad/sessions/` by an earlier
/// version to [`sessions_dir`]; a line for the user when any moved.
pub fn migrate_legacy(workspace: &Path) -> Result<Option<String>, SessionError> {
    migrate_legacy_into(workspace, &sessions_dir(workspace))
}

/// Left in a workspace's sessions folder (outside the workspace) once its old folder
/// was looked at: the move is made once, at the first start of a version that keeps
/// journals out of the workspace. A journal planted in the old place later (the model
/// can write the workspace) is never taken for one of the user's.
const LEGACY_LOOKED_AT: &str = ".legacy-moved";

/// [`migrate_legacy`] into the sessions folder `target`.
fn migrate_legacy_into(workspace: &Path, target: &Path) -> Result<Option<String>, SessionError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SessionError::Io { path, source }
    };
    let marker = target.join(LEGACY_LOOKED_AT);
    if std::fs::symlink_metadata(&marker).is_ok() {
        return Ok(None);
    }
    crate::store::create_private_dir(target).map_err(io(target))?;
    std::fs::write(&marker, b"").map_err(io(&marker))?;
    let own = workspace.join(LEGACY_FOLDER);
    let legacy = workspace.join(LEGACY_SESSIONS_DIR);
    // Our folders are never followed through a link: moving the journals "in" a
    // planted link would move files from wherever it points.
    let is_folder = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
    if std::fs::symlink_metadata(&own).is_ok() && !(is_folder(&own) && is_folder(&legacy)) {
        return Ok(Some(format!(
            "{LEGACY_SESSIONS_DIR}/ is not a folder of scratchpad's (a link or a file stands there): \
             nothing was moved from it"
        )));
    }
    let Ok(entries) = std::fs::read_dir(&legacy) else {
        return Ok(None);
    };
    let mut moved = 0;
    for entry in entries.filter_map(Result::ok) {
        let from = entry.path();
        let is_journal = from
            .extension()
            .is_some_and(|extension| extension == "jsonl" || extension == "torn");
        // Only regular files: a link planted there is not followed.
        if !is_journal || !entry.file_type().is_ok_and(|kind| kind.is_file()) {
            continue;
        }
        let to = target.join(entry.file_name());
        if to.exists() {
            continue;
        }
        if std::fs::rename(&from, &to).is_err() {
            // Another filesystem: copy, flush, then remove the old one.
            std::fs::copy(&from, &to)
                .and_then(|_| File::open(&to)?.sync_all())
                .and_then(|()| std::fs::remove_file(&from))
                .map_err(io(&from))?;
        }
        moved += 1;
    }
    let _ = std::fs::remove_dir(&legacy);
    let _ = std::fs::remove_dir(workspace.join(LEGACY_FOLDER));
    Ok((moved > 0).then(|| {
        format!(
            "Moved {moved} session journal(s) from {LEGACY_SESSIONS_DIR}/ to {}, out of the model's reach.",
            target.display()
        )
    }))
}

/// The id of the session whose journal is `journal`: its file name without `.jsonl`.
pub fn id_of(journal: &Path) -> String {
    journal
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The journal with `id`, or the newest one when `id` is `None`.
pub fn find(workspace: &Path, id: Option<&str>) -> Result<PathBuf, SessionError> {
    find_in(&sessions_dir(workspace), id)
}

/// [`find`] in a given folder of journals.
pub fn find_in(dir: &Path, id: Option<&str>) -> Result<PathBuf, SessionError> {
    let dir = dir.to_path_buf();
    if let Some(id) = id {
        let id = id.trim_end_matches(".jsonl");
        if crate::store::safe_file_stem(id) != id {
            return Err(SessionError::NotFound(id.to_string()));
        }
        let path = dir.join(format!("{}.jsonl", id.trim_end_matches(".jsonl")));
        return if path.is_file() {
            Ok(path)
        } else {
            Err(SessionError::NotFound(id.to_string()))
        };
    }
    let newest = std::fs::read_dir(&dir)
        .map_err(|_| SessionError::NoneFound(dir.clone()))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .max();
    newest.map(|(_, path)| path).ok_or(SessionError::NoneFound(dir))
}

/// The command that picks session `id` of `workspace` up again: `--continue` while it
/// is the newest (what `--continue` opens), `--resume ID` otherwise; `None` when it
/// left no journal (a session nobody used).
pub fn way_back(workspace: &Path, id: &str) -> Option<String> {
    way_back_in(&sessions_dir(workspace), id)
}

/// [`way_back`] for a given folder of journals.
fn way_back_in(dir: &Path, id: &str) -> Option<String> {
    let path = find_in(dir, Some(id)).ok()?;
    Some(if find_in(dir, None).is_ok_and(|newest| newest == path) {
        "scratchpad --continue".to_string()
    } else {
        format!("scratchpad --resume {id}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_way_back_names_a_session_that_is_not_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let write = |id: &str, age_secs: u64| {
            let path = dir.path().join(format!("{id}.jsonl"));
            std::fs::write(&path, "{}\n").unwrap();
            let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_secs);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        };
        write("20261201-100000-1", 600);
        write("20261202-100000-2", 60);
        assert_eq!(
            way_back_in(dir.path(), "20261202-100000-2").as_deref(),
            Some("scratchpad --continue")
        );
        assert_eq!(
            way_back_in(dir.path(), "20261201-100000-1").as_deref(),
            Some("scratchpad --resume 20261201-100000-1")
        );
        assert_eq!(way_back_in(dir.path(), "20261203-100000-3"), None, "left no journal");
    }

    /// The old folder is looked at once: journals there at the first start are moved,
    /// one planted there later is not (the model can write the workspace).
    #[test]
    fn legacy_journals_move_once_and_a_later_one_stays() {
        let workspace = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let legacy = workspace.path().join(LEGACY_SESSIONS_DIR);
        std::fs::create_dir_all(&legacy).unwrap();
        std::fs::write(legacy.join("20260101-000000-1.jsonl"), "{}\n").unwrap();
        let said = migrate_legacy_into(workspace.path(), target.path()).unwrap();
        assert!(said.is_some_and(|line| line.starts_with("Moved 1 session journal")));
        assert!(target.path().join("20260101-000000-1.jsonl").is_file());
        std::fs::create_dir_all(&legacy).unwrap();
        std::fs::write(legacy.join("29991231-235959-1.jsonl"), "{\"forged\":1}\n").unwrap();
        assert_eq!(migrate_legacy_into(workspace.path(), target.path()).unwrap(), None);
        assert!(
            !target.path().join("29991231-235959-1.jsonl").exists(),
            "planted later: not moved"
        );
    }

    /// A `.scratchpad` that is a link is not followed: the journals where it points
    /// stay where they are.
    #[test]
    fn a_linked_legacy_folder_is_not_followed() {
        let workspace = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(elsewhere.path().join("sessions")).unwrap();
        let theirs = elsewhere.path().join("sessions/20260101-000000-1.jsonl");
        std::fs::write(&theirs, "{}\n").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), workspace.path().join(".scratchpad")).unwrap();
        let said = migrate_legacy_into(workspace.path(), target.path()).unwrap();
        assert!(said.is_some_and(|line| line.contains("nothing was moved")));
        assert!(theirs.is_file(), "left where it was");
        assert!(!target.path().join("20260101-000000-1.jsonl").exists());
    }
}
