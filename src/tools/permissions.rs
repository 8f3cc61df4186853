//! What the agent may run without asking. A deny list refuses the worst outright;
//! destructive commands and file access outside the workspace become a question.

use serde::{Deserialize, Serialize};

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
    Ask(String),
    Deny(String),
}

/// Judge a shell command.
pub fn judge_command(command: &str, config: &PermissionConfig) -> Verdict {
    let flat = crate::compact::markers::flatten_whitespace(command);
    for pattern in &config.deny {
        if !pattern.is_empty() && flat.contains(pattern.as_str()) {
            return Verdict::Deny(format!("matches the configured deny pattern `{pattern}`"));
        }
    }
    for words in simple_commands(command) {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let program = program_name(words[0]);
        match program {
            "sudo" | "su" | "doas" => return Verdict::Deny(format!("`{program}` is never run by the agent")),
            "shutdown" | "reboot" | "halt" | "poweroff" => {
                return Verdict::Deny(format!("`{program}` is never run by the agent"));
            }
            p if p == "mkfs" || p.starts_with("mkfs.") => {
                return Verdict::Deny("formatting a filesystem is never run by the agent".into());
            }
            "dd" if words.iter().any(|w| w.starts_with("if=")) => {
                return Verdict::Deny("`dd if=` is never run by the agent".into());
            }
            "rm" if removes_root(&words) => return Verdict::Deny("`rm -rf /` is never run by the agent".into()),
            _ => {}
        }
    }
    for pattern in &config.ask {
        if !pattern.is_empty() && flat.contains(pattern.as_str()) {
            return Verdict::Ask(format!("The command matches the ask pattern `{pattern}`. Run it?"));
        }
    }
    for words in simple_commands(command) {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let program = program_name(words[0]);
        if matches!(program, "rm" | "del" | "rmdir" | "shred") {
            return Verdict::Ask(format!("`{}` deletes files. Run it?", words.join(" ")));
        }
        if program == "chmod" && words.contains(&"777") {
            return Verdict::Ask("`chmod 777` makes files writable by everyone. Run it?".into());
        }
    }
    if flat.contains("> /etc/") || flat.contains(">/etc/") || flat.contains(">> /etc/") {
        return Verdict::Ask("The command writes into /etc. Run it?".into());
    }
    Verdict::Allow
}

/// Commands that only read, run without a question even where no sandbox stands
/// behind the checks.
const READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "rg", "egrep", "fgrep", "pwd", "echo", "printf", "which", "file",
    "stat", "du", "df", "tree", "sort", "uniq", "cut", "diff", "cmp", "less", "more", "basename", "dirname",
    "realpath", "true", "false", "date", "whoami", "id", "uname", "printenv", "nl", "tr", "find", "sed", "awk",
];

/// Whether `command` is known to only read: every simple command is a read-only
/// program (`git` only with `status`, `diff`, `log`, `show`, `branch`), nothing is
/// redirected into a file, and no option of `find`, `sed` or `awk` writes.
pub fn is_read_only(command: &str) -> bool {
    if command.contains('>') {
        return false;
    }
    simple_commands(command).iter().all(|words| {
        let program = program_name(&words[0]);
        let writes = |flags: &[&str]| words.iter().any(|w| flags.iter().any(|f| w.starts_with(f)));
        match program {
            "git" => matches!(
                words.get(1).map(String::as_str),
                Some("status" | "diff" | "log" | "show" | "branch")
            ),
            "find" => !writes(&["-exec", "-execdir", "-delete", "-ok", "-fprint", "-fls"]),
            "sed" => !writes(&["-i", "--in-place"]),
            "awk" => !words.iter().any(|w| w.contains("system") || w.contains('>')),
            // `env CMD` runs CMD: read-only only when it just prints.
            "env" => words.len() == 1,
            other => READ_ONLY.contains(&other),
        }
    })
}

/// The simple commands of a command line, each as its words from the program name on
/// (leading `VAR=value` assignments dropped); empty commands are left out.
fn simple_commands(command: &str) -> Vec<Vec<String>> {
    segments(command)
        .into_iter()
        .map(|words| words.into_iter().skip_while(|w| is_assignment(w)).collect::<Vec<_>>())
        .filter(|words| !words.is_empty())
        .collect()
}

/// `/usr/bin/rm` → `rm`.
fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
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

/// Split a command line into simple commands (on `;`, `&&`, `||`, `|`, `&`, newlines,
/// `$(`, backticks and parentheses), each as words with quotes removed.
fn segments(command: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let flush_word = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (None, ';' | '&' | '|' | '\n' | '`' | '(' | ')') => {
                flush_word(&mut word, &mut words);
                if !words.is_empty() {
                    out.push(std::mem::take(&mut words));
                }
            }
            (None, '$') if chars.peek() == Some(&'(') => {
                flush_word(&mut word, &mut words);
                if !words.is_empty() {
                    out.push(std::mem::take(&mut words));
                }
            }
            (None, c) if c.is_whitespace() => flush_word(&mut word, &mut words),
            (None, c) => word.push(c),
        }
    }
    flush_word(&mut word, &mut words);
    if !words.is_empty() {
        out.push(words);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(command: &str) -> Verdict {
        judge_command(command, &PermissionConfig::default())
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
            assert!(matches!(verdict(command), Verdict::Ask(_)), "{command}");
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
        assert!(matches!(judge_command("git  push origin", &config), Verdict::Deny(_)));
        assert!(matches!(
            judge_command("curl http://127.0.0.1", &config),
            Verdict::Ask(_)
        ));
    }
}
