//! The app's disk work, kept off the UI thread: listing `.transcripts/` and
//! `.task_outputs/tool-results/`, and reading and rendering a file for the viewer. A
//! job runs on a blocking thread and its result comes back through the app's loop as
//! [`Loaded`]; tests run the same work at once ([`Disk::inline`]).

use std::path::PathBuf;

use tokio::sync::mpsc::UnboundedSender;

use std::path::Path;

use super::browser::{FileEntry, LineRole, transcript_lines};
use crate::compact::Stage;
use crate::session::labels::{self, Labels};
use crate::session::{Branch, SessionSummary};
use crate::store::{TOOL_RESULTS_DIR, TRANSCRIPTS_DIR};

/// What the app asks of the disk.
pub enum DiskJob {
    /// The files of the archive, with what wrote each (for their origin).
    List { written_by: Vec<(String, Stage)> },
    /// One file, relative to the workspace, as the viewer's lines.
    Open { path: String },
    /// The workspace's sessions, for the picker.
    Sessions,
    /// A session and its forks, for the tree, with their labels.
    Family { session: String },
    /// Name a session or a point of it (an empty label removes the name).
    Label { key: String, label: String },
    /// The tour's dismissed notes, with `dismiss` added and kept when given.
    Tour { dismiss: Option<crate::tour::TourStop> },
}

/// What came back.
pub enum Loaded {
    Listing(Vec<FileEntry>),
    Opened {
        path: String,
        lines: Result<Vec<(String, super::browser::LineRole)>, String>,
    },
    Sessions(Vec<SessionSummary>),
    Family {
        branches: Result<Vec<Branch>, String>,
        labels: Labels,
    },
    /// The labels after a change, or why it could not be kept.
    Labels(Result<Labels, String>),
    /// The tour's dismissed notes, or why they could not be read or kept.
    Tour(Result<Vec<crate::tour::TourStop>, String>),
}

/// Where disk work runs.
pub struct Disk {
    workspace: PathBuf,
    /// The workspace's session journals.
    sessions: PathBuf,
    /// The data folder (the tour's notes), when there is one.
    data_dir: Option<PathBuf>,
    mode: Mode,
}

enum Mode {
    /// On a blocking thread of the runtime; results through the app's loop.
    Background(UnboundedSender<Loaded>),
    /// At once, on the caller's thread (tests, benchmarks): results kept for
    /// [`Disk::take_done`].
    Inline(Vec<Loaded>),
}

impl Disk {
    pub fn background(workspace: PathBuf, results: UnboundedSender<Loaded>) -> Self {
        Disk {
            sessions: crate::session::sessions_dir(&workspace),
            data_dir: crate::places::data_dir(),
            workspace,
            mode: Mode::Background(results),
        }
    }

    pub fn inline(workspace: PathBuf) -> Self {
        Disk {
            sessions: crate::session::sessions_dir(&workspace),
            data_dir: None,
            workspace,
            mode: Mode::Inline(Vec::new()),
        }
    }

    /// Sessions kept in `sessions` instead of the data folder's (tests).
    pub fn with_sessions_dir(mut self, sessions: PathBuf) -> Self {
        self.sessions = sessions;
        self
    }

    /// The data folder's files (the tour's) kept in `dir` (tests).
    pub fn with_data_dir(mut self, dir: PathBuf) -> Self {
        self.data_dir = Some(dir);
        self
    }

    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    pub fn request(&mut self, job: DiskJob) {
        let workspace = self.workspace.clone();
        let sessions = self.sessions.clone();
        let data_dir = self.data_dir.clone();
        let work = move || match job {
            DiskJob::List { written_by } => Loaded::Listing(list_files(&workspace, &written_by)),
            DiskJob::Open { path } => Loaded::Opened {
                lines: load_file(&workspace, &path),
                path,
            },
            DiskJob::Sessions => Loaded::Sessions(crate::session::list(&sessions)),
            DiskJob::Family { session } => Loaded::Family {
                branches: crate::session::family(&sessions, &session).map_err(|error| error.to_string()),
                labels: labels::load(&sessions),
            },
            DiskJob::Label { key, label } => {
                let mut kept = labels::load(&sessions);
                kept.set(key, &label);
                Loaded::Labels(
                    labels::save(&sessions, &kept)
                        .map(|()| kept)
                        .map_err(|error| error.to_string()),
                )
            }
            // With no data folder the tour still shows; only a dismissal cannot last.
            DiskJob::Tour { dismiss } => Loaded::Tour(match (&data_dir, dismiss) {
                (Some(dir), dismiss) => crate::tour::keep(dir, dismiss),
                (None, None) => Ok(Vec::new()),
                (None, Some(_)) => Err("dismissed for this run only: there is no data folder to keep it in".into()),
            }),
        };
        match &mut self.mode {
            Mode::Background(results) => {
                let results = results.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = results.send(work());
                });
            }
            Mode::Inline(done) => done.push(work()),
        }
    }

    /// Results of inline work, to apply now.
    pub fn take_done(&mut self) -> Vec<Loaded> {
        match &mut self.mode {
            Mode::Inline(done) => std::mem::take(done),
            Mode::Background(_) => Vec::new(),
        }
    }
}

/// Files larger than this are shown up to this size.
const MAX_VIEW_BYTES: u64 = 8 * 1024 * 1024;

fn origin_of(path: &str, written_by: &[(String, Stage)]) -> String {
    if let Some((_, stage)) = written_by.iter().rev().find(|(p, _)| p == path) {
        return stage.name().to_string();
    }
    if let Some(name) = path.strip_prefix(&format!("{TRANSCRIPTS_DIR}/transcript_")) {
        return Stage::all()
            .map(Stage::name)
            .find(|stage| name.starts_with(stage))
            .unwrap_or("transcript")
            .to_string();
    }
    "tool result".into()
}

pub fn list_files(workspace: &Path, written_by: &[(String, Stage)]) -> Vec<FileEntry> {
    let mut entries = Vec::new();
    for dir in [TRANSCRIPTS_DIR, TOOL_RESULTS_DIR] {
        let Ok(read) = std::fs::read_dir(workspace.join(dir)) else {
            continue;
        };
        for entry in read.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue; // temporary files still being written
            }
            let Ok(metadata) = entry.metadata() else { continue };
            if !metadata.is_file() {
                continue;
            }
            let modified = metadata.modified().map_or(0, crate::time::unix_of);
            let path = format!("{dir}/{name}");
            entries.push(FileEntry {
                origin: origin_of(&path, written_by),
                path,
                size: metadata.len(),
                modified,
            });
        }
    }
    entries.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.path.cmp(&a.path)));
    entries
}

fn read_capped(path: &Path) -> std::io::Result<(String, bool)> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut bytes = Vec::new();
    file.take(MAX_VIEW_BYTES).read_to_end(&mut bytes)?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), size > MAX_VIEW_BYTES))
}

pub fn load_file(workspace: &Path, relative: &str) -> Result<Vec<(String, LineRole)>, String> {
    let path: PathBuf = workspace.join(relative);
    let (text, truncated) = read_capped(&path).map_err(|error| format!("cannot open {relative}: {error}"))?;
    let text = crate::terminal_text::screen_safe(&text);
    let mut lines = if relative.ends_with(".jsonl") {
        transcript_lines(&text)
    } else {
        text.lines().map(|l| (l.to_string(), LineRole::Plain)).collect()
    };
    if truncated {
        lines.push((format!("[… shown up to {MAX_VIEW_BYTES} bytes]"), LineRole::Note));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn background_work_answers_through_the_channel() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(crate::store::TRANSCRIPTS_DIR)).unwrap();
        let saved = format!("{}/transcript_snip_compact_1.jsonl", crate::store::TRANSCRIPTS_DIR);
        std::fs::write(dir.path().join(&saved), "{\"role\":\"user\",\"content\":\"hello\"}\n").unwrap();
        let (results, mut loaded) = tokio::sync::mpsc::unbounded_channel();
        let mut disk = Disk::background(dir.path().to_path_buf(), results);
        disk.request(DiskJob::List { written_by: Vec::new() });
        disk.request(DiskJob::Open { path: saved.clone() });
        assert!(disk.take_done().is_empty(), "nothing is done on the caller's thread");
        let mut listed = None;
        let mut opened = None;
        for _ in 0..2 {
            match loaded.recv().await.unwrap() {
                Loaded::Listing(entries) => listed = Some(entries),
                Loaded::Opened { path, lines } => opened = Some((path, lines)),
                _ => panic!("asked for files"),
            }
        }
        let entries = listed.unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].origin, "snip_compact");
        let (path, lines) = opened.unwrap();
        assert_eq!(path, saved);
        assert!(lines.unwrap().iter().any(|(line, _)| line == "hello"));
        disk.request(DiskJob::Open {
            path: "missing.txt".into(),
        });
        match loaded.recv().await.unwrap() {
            Loaded::Opened { lines, .. } => assert!(lines.unwrap_err().contains("cannot open missing.txt")),
            _ => panic!("asked to open"),
        }
    }
}
