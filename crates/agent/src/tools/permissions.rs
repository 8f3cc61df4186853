//! What the agent may run without asking: a guard in front of the sandbox (which is
//! the boundary). Commands are read with bash's grammar ([`super::shell_grammar`]), so
//! wrappers, pipelines, substitutions and nested shells are judged by what they really
//! run. A short deny list refuses the worst outright; destructive commands, writes
//! outside the workspace and anything that cannot be classified become a question.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::shell_grammar::{self, Word, program_name};
use super::workspace::lexical_normal;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionConfig {
    /// Extra substrings that refuse a shell command outright.
    pub deny: Vec<String>,
    /// Extra substrings that make a shell command a question.
    pub ask: Vec<String>,
    /// Allow file tools outside the workspace without asking.
    pub allow_outside_workspace: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// A question; `destructive` ones are never approved "always".
    Ask {
        question: String,
        destructive: bool,
    },
    Deny(String),
}

fn ask(question: impl Into<String>, destructive: bool) -> Verdict {
    Verdict::Ask {
        question: question.into(),
        destructive,
    }
}

/// Judge a shell command run in `workspace`.
pub fn judge_command(command: &str, config: &PermissionConfig, workspace: &Path) -> Verdict {
    let flat = crate::text::flatten_whitespace(command);
    for pattern in &config.deny {
        if !pattern.is_empty() && flat.contains(pattern.as_str()) {
            return Verdict::Deny(format!("matches the configured deny pattern `{pattern}`"));
        }
    }
    let parsed = shell_grammar::parse(command);
    for words in &parsed.commands {
        if let Some(reason) = denied(words) {
            return Verdict::Deny(reason);
        }
    }
    for pattern in &config.ask {
        if !pattern.is_empty() && flat.contains(pattern.as_str()) {
            return ask(
                format!("The command matches the ask pattern `{pattern}`. Run it?"),
                false,
            );
        }
    }
    for words in &parsed.commands {
        if let Some(what) = destructive(words) {
            return ask(format!("{what}. Run it?"), true);
        }
        if words.first().is_some_and(Option::is_none) {
            return ask(
                "The command runs a program whose name is known only when it runs. Run it?",
                true,
            );
        }
    }
    if let Some(reason) = parsed.opaque.first() {
        return ask(
            format!("scratchpad cannot tell what this runs ({reason}). Run it?"),
            true,
        );
    }
    for target in &parsed.written_files {
        match target {
            None => return ask("The command writes to a file named only when it runs. Run it?", true),
            Some(path) if !writable_without_asking(path, workspace) => {
                return ask(
                    format!("The command writes to `{path}`, outside the workspace. Run it?"),
                    true,
                );
            }
            Some(_) => {}
        }
    }
    Verdict::Allow
}

/// A file a command may write without a question: inside the workspace or the
/// temporary folder, or a harmless device.
fn writable_without_asking(path: &str, workspace: &Path) -> bool {
    if matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty") || path.starts_with("&") {
        return true;
    }
    if path.starts_with('~') {
        return false;
    }
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        workspace.join(path)
    };
    let normal = lexical_normal(&joined);
    normal.starts_with(workspace) || normal.starts_with(std::env::temp_dir())
}

fn literal_words(words: &[Word]) -> Vec<&str> {
    words.iter().filter_map(|w| w.as_deref()).collect()
}

/// Why a command is never run, if it is one of those.
fn denied(words: &[Word]) -> Option<String> {
    let Some(Some(first)) = words.first() else {
        return None;
    };
    let program = program_name(first);
    let words = literal_words(words);
    match program {
        "sudo" | "su" | "doas" | "pkexec" | "shutdown" | "reboot" | "halt" | "poweroff" => {
            Some(format!("`{program}` is never run by the agent"))
        }
        p if p == "mkfs" || p.starts_with("mkfs.") => Some("formatting a filesystem is never run by the agent".into()),
        "dd" if words.iter().any(|w| w.starts_with("if=")) => Some("`dd if=` is never run by the agent".into()),
        "rm" if removes_root(&words) => Some("`rm -rf /` is never run by the agent".into()),
        _ => None,
    }
}

/// What a destructive command does, if it is one.
fn destructive(words: &[Word]) -> Option<String> {
    let Some(Some(first)) = words.first() else {
        return None;
    };
    let program = program_name(first);
    let words = literal_words(words);
    let has = |flag: &str| words.iter().skip(1).any(|w| *w == flag);
    let shown = words.join(" ");
    match program {
        "rm" | "del" | "rmdir" | "shred" | "unlink" | "truncate" | "srm" => Some(format!("`{shown}` deletes files")),
        "find" if has("-delete") => Some("`find -delete` deletes files".into()),
        "chmod" if has("777") || has("-R") || has("a+w") => Some(format!("`{shown}` changes permissions broadly")),
        "chown" | "chgrp" => Some(format!("`{shown}` changes who owns files")),
        "dd" => Some(format!("`{shown}` writes raw data")),
        "git" => {
            let sub = words.get(1).copied().unwrap_or_default();
            let force = has("-f") || has("--force") || words.iter().any(|w| w.starts_with("--force"));
            match sub {
                "push" if force => Some(format!("`{shown}` rewrites a remote branch")),
                "reset" if has("--hard") => Some(format!("`{shown}` discards changes")),
                "clean" if words.iter().skip(2).any(|w| w.starts_with('-') && w.contains('f')) => {
                    Some(format!("`{shown}` deletes untracked files"))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn removes_root(words: &[&str]) -> bool {
    let recursive = words.iter().any(|w| {
        (w.starts_with('-') && !w.starts_with("--") && (w.contains('r') || w.contains('R'))) || *w == "--recursive"
    });
    let root = words
        .iter()
        .skip(1)
        .any(|w| matches!(*w, "/" | "/*" | "~" | "~/" | "$HOME" | "/." | "--no-preserve-root"));
    recursive && root
}

/// Commands that only read, run without a question even where no sandbox stands
/// behind the checks.
const READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "egrep", "fgrep", "pwd", "echo", "printf", "which", "file",
    "stat", "du", "df", "tree", "sort", "uniq", "cut", "diff", "cmp", "less", "more", "basename", "dirname",
    "realpath", "true", "false", "date", "whoami", "id", "uname", "printenv", "nl", "tr", "find", "sed", "awk",
];

/// Whether `command` is known to only read: it parses, every command is a literal
/// read-only program (`git` only with `status`, `diff`, `log`, `show`, `branch`),
/// nothing is written but to `/dev/null`, and no option of `find`, `sed` or `awk`
/// writes or runs anything.
pub fn is_read_only(command: &str) -> bool {
    let parsed = shell_grammar::parse(command);
    if !parsed.opaque.is_empty() || parsed.written_files.iter().any(|f| f.as_deref() != Some("/dev/null")) {
        return false;
    }
    parsed.commands.iter().all(|words| {
        let Some(Some(first)) = words.first() else {
            return false;
        };
        let words = literal_words(words);
        let writes = |flags: &[&str]| words.iter().any(|w| flags.iter().any(|f| w.starts_with(f)));
        match program_name(first) {
            "git" => git_reads_only(&words),
            "find" => !writes(&["-exec", "-execdir", "-delete", "-ok", "-fprint", "-fls"]),
            "sed" => !writes(&["-i", "--in-place"]),
            "awk" => !words
                .iter()
                .any(|w| w.contains("system") || w.contains('>') || w.contains('|')),
            // `env CMD` runs CMD: read-only only when it just prints.
            "env" => words.len() == 1,
            other => READ_ONLY.contains(&other),
        }
    })
}

/// Whether a command may write a repository's `.git`: any `git` in it that is not
/// known to only read (`git commit`, `git add`, `git config x y`, …). Such a command
/// is a question, and runs with `.git` writable only once approved.
pub fn writes_git(command: &str) -> bool {
    let parsed = shell_grammar::parse(command);
    parsed.commands.iter().any(|words| {
        matches!(words.first(), Some(Some(first)) if program_name(first) == "git")
            && !git_reads_only(&literal_words(words))
    })
}

/// `git` with a subcommand that only reads the repository (`words[0]` is `git`).
/// Global options that point git elsewhere or set config make it not known.
fn git_reads_only(words: &[&str]) -> bool {
    let Some(subcommand) = words.get(1).copied() else {
        return true;
    };
    let rest = &words[2..];
    let only_flags = |allowed: &[&str]| rest.iter().all(|word| allowed.contains(word));
    match subcommand {
        "status" | "diff" | "log" | "show" | "blame" | "grep" | "ls-files" | "ls-tree" | "rev-parse" | "rev-list"
        | "describe" | "shortlog" | "cat-file" | "show-ref" | "for-each-ref" | "name-rev" | "merge-base"
        | "whatchanged" | "help" | "version" | "--version" | "--help" => true,
        "branch" => only_flags(&[
            "-a",
            "-r",
            "-v",
            "-vv",
            "--all",
            "--list",
            "--show-current",
            "--no-color",
        ]),
        "remote" => only_flags(&["-v", "--verbose", "show", "get-url", "origin"]),
        "tag" => only_flags(&["-l", "--list"]),
        "stash" | "worktree" => rest.first().is_some_and(|word| *word == "list"),
        "config" => rest
            .first()
            .is_some_and(|word| matches!(*word, "--get" | "--list" | "-l" | "--get-all" | "--get-regexp")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_writes_are_told_from_reads() {
        for read in [
            "git status",
            "git log --oneline | head",
            "git diff HEAD~1",
            "git branch",
            "git config --get user.name",
            "git stash list",
            "ls",
        ] {
            assert!(!writes_git(read), "{read}");
        }
        for write in [
            "git commit -m x",
            "git add .",
            "cd sub && git checkout main",
            "git config core.hooksPath /tmp/h",
            "git branch -D old",
            "git -c core.fsmonitor=x status",
            "git stash",
            "git init",
        ] {
            assert!(writes_git(write), "{write}");
        }
    }

    fn verdict(command: &str) -> Verdict {
        judge_command(command, &PermissionConfig::default(), Path::new("/work/project"))
    }

    fn asks(command: &str) -> bool {
        matches!(verdict(command), Verdict::Ask { .. })
    }

    #[test]
    fn the_deny_list_refuses_outright() {
        for command in [
            "rm -rf /",
            "rm -fr /*",
            "cd x && rm -rf --no-preserve-root /",
            "sudo apt install x",
            "echo hi; sudo -i",
            "FOO=1 sudo ls",
            "/sbin/shutdown now",
            "reboot",
            "mkfs.ext4 /dev/sda1",
            "dd if=/dev/zero of=/dev/sda",
            "ls $(sudo id)",
        ] {
            assert!(matches!(verdict(command), Verdict::Deny(_)), "{command}");
        }
    }

    #[test]
    fn destructive_commands_ask() {
        for command in [
            "rm file.txt",
            "ls && rm -r build",
            "del x",
            "chmod 777 script.sh",
            "echo x > /etc/hosts",
        ] {
            assert!(asks(command), "{command}");
        }
    }

    #[test]
    fn wrappers_and_tricks_from_the_fault_probe_are_caught() {
        for command in [
            "env sudo id",
            "command sudo ls",
            "exec sudo -i",
            "eval sudo id",
            "bash -c reboot",
        ] {
            assert!(matches!(verdict(command), Verdict::Deny(_)), "{command}");
        }
        for command in [
            "S=sud; ${S}o id",
            "bash -c 'rm -rf DIR'",
            "find DIR -delete",
            "echo f | xargs rm",
            "python3 -c 'import shutil; shutil.rmtree(\"DIR\")'",
            "echo x | tee /etc/file",
            "nohup rm -r x &",
            "timeout 5 shred secret",
            "find . -exec rm {} +",
            "echo hi > ../outside.txt",
            "git push --force origin main",
            "cat x > ~/.bashrc",
        ] {
            assert!(
                matches!(verdict(command), Verdict::Ask { destructive: true, .. }),
                "{command}: {:?}",
                verdict(command)
            );
        }
    }

    #[test]
    fn ordinary_commands_and_lookalikes_are_allowed() {
        for command in [
            "ls -la",
            "cargo test",
            "grep -r 'rm -rf /' docs",
            "echo sudo",
            "git rm --cached x",
            "format",
            "cat /etc/hosts",
            "chmod 755 x",
            "cargo test > target/log.txt 2>&1",
            "echo ok > /dev/null",
            "sort data | uniq -c > /tmp/counts",
        ] {
            assert_eq!(verdict(command), Verdict::Allow, "{command}");
        }
    }

    #[test]
    fn read_only_commands_are_known_and_writers_are_not() {
        for command in [
            "ls -la",
            "cat a | grep x | wc -l",
            "git status",
            "git log --oneline",
            "find . -name '*.rs'",
            "env",
        ] {
            assert!(is_read_only(command), "{command}");
        }
        for command in [
            "echo x > f",
            "git commit -m x",
            "find . -delete",
            "sed -i s/a/b/ f",
            "cargo build",
            "env rm f",
            "ls; touch f",
            "awk 'BEGIN{system(\"rm f\")}'",
        ] {
            assert!(!is_read_only(command), "{command}");
        }
    }

    #[test]
    fn configured_patterns_apply() {
        let config = PermissionConfig {
            deny: vec!["git push".into()],
            ask: vec!["curl".into()],
            allow_outside_workspace: false,
        };
        let workspace = Path::new("/work/project");
        assert!(matches!(
            judge_command("git  push origin", &config, workspace),
            Verdict::Deny(_)
        ));
        assert!(matches!(
            judge_command("curl http://127.0.0.1", &config, workspace),
            Verdict::Ask { destructive: false, .. }
        ));
    }
}
