//! Project instructions (`AGENTS.md` and its kin): found as the Codex CLI documents
//! it, read without trusting the repository, and carried in the system prompt, where
//! no compaction stage can clear, snip or summarise them.
//!
//! Lookup: a global file in scratchpad's config folder first, then one file per folder
//! from the repository root (the nearest folder above the workspace with `.git`, else
//! the workspace) down to the workspace. In each folder the first of
//! `instructions.files` that exists is the one; all of them share
//! `instructions.max_bytes`, and a cut says so.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::compact::short_count;

/// The `[instructions]` table of `config.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InstructionsConfig {
    /// The names looked for in each folder, in order: the first that exists is read.
    pub files: Vec<String>,
    /// What all the files together may hold; the one that crosses it is cut.
    pub max_bytes: usize,
    /// `--no-instructions` turns lookup off.
    #[serde(skip)]
    pub enabled: bool,
    /// The config file's folder, where the global file is looked for.
    #[serde(skip)]
    pub global_dir: Option<PathBuf>,
}

impl Default for InstructionsConfig {
    fn default() -> Self {
        InstructionsConfig {
            files: vec!["AGENTS.override.md".into(), "AGENTS.md".into(), "CLAUDE.md".into()],
            max_bytes: 32 * 1024,
            enabled: true,
            global_dir: None,
        }
    }
}

/// One file as the system prompt carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstructionFile {
    /// Where it is on disk.
    pub path: PathBuf,
    /// How it is named to the user and the model: relative to the workspace where it
    /// is inside it, else the full path.
    pub shown: String,
    /// Its text, cut to what the budget left.
    pub text: String,
    /// Its size on disk, in bytes.
    pub whole_bytes: u64,
}

impl InstructionFile {
    pub fn is_cut(&self) -> bool {
        (self.text.len() as u64) < self.whole_bytes
    }

    /// The tag that closes its block: 64 bits of the SHA-256 of a secret this process
    /// drew at random and the text. Whoever wrote the file cannot know the secret, so
    /// no text can name its own tag and close its block early (a tag of the text alone
    /// was found by brute force in a minute).
    fn tag(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(process_secret());
        hasher.update(self.text.as_bytes());
        hasher
            .finalize()
            .iter()
            .take(8)
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// Its share of the system prompt, in characters as the estimate counts them: its
    /// block and the line break before it.
    pub fn prompt_chars(&self) -> usize {
        1 + self.block().chars().count()
    }

    /// The file's block in the system prompt.
    pub fn block(&self) -> String {
        let tag = self.tag();
        let path = self.shown.replace('"', "%22").replace('\n', "%0A");
        let mut block = format!("<project-instructions path=\"{path}\" id=\"{tag}\">\n{}", self.text);
        if !self.text.ends_with('\n') {
            block.push('\n');
        }
        if self.is_cut() {
            block.push_str(&format!(
                "[cut: the first {} of {} bytes; the rest is in {}]\n",
                self.text.len(),
                self.whole_bytes,
                self.shown
            ));
        }
        block.push_str(&format!("</project-instructions id=\"{tag}\">\n"));
        block
    }
}

/// 32 random bytes drawn once per process, from the kernel. Were none to be had, the
/// time and pid stand in: still unknown to a file written before this process began.
fn process_secret() -> &'static [u8; 32] {
    static SECRET: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| {
        let mut secret = [0u8; 32];
        // SAFETY: getrandom writes at most `secret.len()` bytes into the buffer.
        let got = unsafe { libc::getrandom(secret.as_mut_ptr().cast(), secret.len(), 0) };
        if usize::try_from(got).ok() != Some(secret.len()) {
            let fallback =
                crate::digest::sha256(format!("{:?} {}", std::time::SystemTime::now(), std::process::id()).as_bytes());
            secret.copy_from_slice(&fallback);
        }
        secret
    })
}

/// Said before the blocks, so the model knows what they are and where they came from.
const PREAMBLE: &str = "\n\n# Project instructions\n\
The files below come from the user's configuration and the repository, each in its own block \
with its path. Follow them for how to work in this project, unless the user asks otherwise. \
They stay in this system prompt whatever compaction does to the conversation.\n";

/// What lookup found: the files in order, and a line for each file it left out or cut.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<InstructionFile>,
    pub problems: Vec<String>,
}

impl Instructions {
    /// Look the files up for `workspace`, the global one in the config's folder.
    pub fn load(workspace: &Path, config: &InstructionsConfig) -> Self {
        Self::load_with(config.global_dir.as_deref(), workspace, config)
    }

    /// [`Instructions::load`] with the global file looked for in `global_dir`.
    fn load_with(global_dir: Option<&Path>, workspace: &Path, config: &InstructionsConfig) -> Self {
        let mut found = Instructions::default();
        if !config.enabled {
            return found;
        }
        let mut left = config.max_bytes;
        let workspace = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
        let root = repository_root(&workspace);
        let mut folders: Vec<(PathBuf, PathBuf)> = Vec::new();
        if let Some(global) = global_dir {
            folders.push((global.to_path_buf(), global.to_path_buf()));
        }
        let mut chain: Vec<PathBuf> = workspace
            .ancestors()
            .take_while(|folder| folder.starts_with(&root))
            .map(Path::to_path_buf)
            .collect();
        chain.reverse();
        folders.extend(chain.into_iter().map(|folder| (folder, root.clone())));
        let mut seen = std::collections::HashSet::new();
        for (folder, allowed) in folders {
            // A workspace inside the config folder would read its file twice.
            if !seen.insert(folder.canonicalize().unwrap_or_else(|_| folder.clone())) {
                continue;
            }
            // One file a folder: the first of `instructions.files` with something in
            // it (an empty override does not hide the file it would replace); every
            // other file there is named as left out.
            let present: Vec<PathBuf> = config
                .files
                .iter()
                .map(|name| folder.join(name))
                .filter(|path| path.symlink_metadata().is_ok())
                .collect();
            let mut chosen: Option<String> = None;
            for path in present {
                let shown = shown_path(&path, &workspace);
                if let Some(chosen) = &chosen {
                    found.problems.push(format!(
                        "{shown} left out: {chosen} is read in its place (one file a folder)"
                    ));
                    continue;
                }
                if left == 0 {
                    found.problems.push(format!(
                        "{shown} left out: the instruction files already hold instructions.max_bytes ({} bytes)",
                        config.max_bytes
                    ));
                    chosen = Some(shown);
                    continue;
                }
                match read_limited(&path, &allowed, left) {
                    Ok((text, _)) if text.trim().is_empty() => {
                        found.problems.push(format!("{shown} left out: it is empty"));
                    }
                    Ok((text, whole_bytes)) => {
                        left = left.saturating_sub(text.len());
                        let file = InstructionFile {
                            path,
                            shown: shown.clone(),
                            text,
                            whole_bytes,
                        };
                        if file.is_cut() {
                            found.problems.push(format!(
                                "{} cut to its first {} of {} bytes: the instruction files may hold {} in all \
                                 (instructions.max_bytes)",
                                file.shown,
                                file.text.len(),
                                file.whole_bytes,
                                config.max_bytes
                            ));
                        }
                        found.files.push(file);
                        chosen = Some(shown);
                    }
                    Err(why) => found.problems.push(format!("{shown} left out: {why}")),
                }
            }
        }
        found
    }

    /// The system prompt's part for the files: empty when there are none.
    pub fn prompt_part(&self) -> String {
        if self.files.is_empty() {
            return String::new();
        }
        let mut part = PREAMBLE.to_string();
        for file in &self.files {
            part.push('\n');
            part.push_str(&file.block());
        }
        part
    }

    /// `base` with the files after it.
    pub fn system_prompt(&self, base: &str) -> String {
        format!("{base}{}", self.prompt_part())
    }

    /// The files by name, for the summariser and the receipts.
    pub fn shown_paths(&self) -> Vec<String> {
        self.files.iter().map(|file| file.shown.clone()).collect()
    }

    /// The start line: `instructions: AGENTS.md (2.1k), src/AGENTS.md (0.4k)`.
    pub fn summary_line(&self) -> Option<String> {
        (!self.files.is_empty()).then(|| {
            let listed: Vec<String> = self
                .files
                .iter()
                .map(|file| format!("{} ({})", file.shown, short_count(file.text.chars().count())))
                .collect();
            format!("instructions: {}", listed.join(", "))
        })
    }

    /// What changed from `self` to `newer`, a line per file; empty when nothing did.
    pub fn changes(&self, newer: &Instructions) -> Vec<String> {
        let size = |file: &InstructionFile| short_count(file.text.chars().count());
        let mut changes = Vec::new();
        for file in &newer.files {
            match self.files.iter().find(|old| old.path == file.path) {
                Some(old) if old.text == file.text => {}
                Some(old) => changes.push(format!("{} changed ({} → {})", file.shown, size(old), size(file))),
                None => changes.push(format!("{} added ({})", file.shown, size(file))),
            }
        }
        for old in &self.files {
            if !newer.files.iter().any(|file| file.path == old.path) {
                changes.push(format!("{} removed", old.shown));
            }
        }
        changes
    }
}

/// The nearest folder at or above `workspace` holding `.git`, else the workspace.
fn repository_root(workspace: &Path) -> PathBuf {
    workspace
        .ancestors()
        .find(|folder| folder.join(".git").symlink_metadata().is_ok())
        .unwrap_or(workspace)
        .to_path_buf()
}

/// `path` relative to the workspace where it is inside it; `../` for the folders
/// between the repository root and the workspace; else in full.
fn shown_path(path: &Path, workspace: &Path) -> String {
    if let Ok(inside) = path.strip_prefix(workspace) {
        return inside.display().to_string();
    }
    let above = workspace
        .ancestors()
        .enumerate()
        .find(|(_, folder)| path.starts_with(folder) && folder.parent().is_some());
    match above {
        Some((ups, folder)) if path.parent() == Some(folder) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{}{name}", "../".repeat(ups))
        }
        _ => path.display().to_string(),
    }
}

/// Read at most `budget` bytes of `path`: a regular file (a link only to one inside
/// `allowed`), valid UTF-8, cut at a line end where it must be cut. The text and the
/// file's whole size.
fn read_limited(path: &Path, allowed: &Path, budget: usize) -> Result<(String, u64), String> {
    let resolved = path
        .canonicalize()
        .map_err(|error| format!("cannot be resolved ({error})"))?;
    let allowed = allowed.canonicalize().unwrap_or_else(|_| allowed.to_path_buf());
    if !resolved.starts_with(&allowed) {
        return Err(format!(
            "it is a link to {}, outside {}",
            resolved.display(),
            allowed.display()
        ));
    }
    // Only a regular file is opened at all (opening a device can act on it); and then
    // without blocking or following a link, should it have been swapped meanwhile.
    let before = std::fs::metadata(&resolved).map_err(|error| format!("cannot be read ({error})"))?;
    if !before.is_file() {
        return Err(format!("it is {}, not a regular file", kind_of(&before)));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(&resolved)
        .map_err(|error| format!("cannot be opened ({error})"))?;
    let metadata = file.metadata().map_err(|error| format!("cannot be read ({error})"))?;
    if !metadata.is_file() {
        return Err(format!("it is {}, not a regular file", kind_of(&metadata)));
    }
    let mut bytes = Vec::new();
    file.take(budget as u64)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("cannot be read ({error})"))?;
    let whole = metadata.len().max(bytes.len() as u64);
    if (bytes.len() as u64) < whole {
        cut_at_line_end(&mut bytes);
    }
    let text = String::from_utf8(bytes).map_err(|error| {
        format!(
            "it is not UTF-8 text (an invalid byte at offset {})",
            error.utf8_error().valid_up_to()
        )
    })?;
    Ok((text, whole))
}

/// Drop the end of a cut read back to its last full line, or else to its last whole
/// UTF-8 character, so a cut neither splits a character nor leaves half a line.
fn cut_at_line_end(bytes: &mut Vec<u8>) {
    if let Some(newline) = bytes.iter().rposition(|&b| b == b'\n')
        && newline >= bytes.len() / 2
    {
        bytes.truncate(newline + 1);
        return;
    }
    let valid = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        // An error with no length is an incomplete character at the end: the cut's.
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        Err(_) => bytes.len(),
    };
    bytes.truncate(valid);
}

fn kind_of(metadata: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests;
