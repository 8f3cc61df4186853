//! What a shell command line would run, read with bash's real grammar (tree-sitter-bash):
//! every simple command anywhere in it (pipelines, lists, substitutions, function
//! bodies, loops), with wrappers looked through (`env`, `command`, `exec`, `nohup`,
//! `nice`, `timeout`, `xargs`, `setsid`, `stdbuf`, `time`, `find -exec`, `sh -c`,
//! `bash -c`, `eval`), and every file a redirection writes to. A word whose value the
//! shell only knows when it runs (`${S}o`, `$(…)`) is not literal; a command whose
//! program is not literal cannot be classified.

use tree_sitter::{Node, Parser};

/// One word: its literal value, or `None` when expansion decides it at run time.
pub type Word = Option<String>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Every simple command, wrappers removed, from the program name on.
    pub commands: Vec<Vec<Word>>,
    /// Targets of output redirections (`>`, `>>`, `&>`, `>|`) and of `tee`.
    pub written_files: Vec<Word>,
    /// Something the grammar could not read (a syntax error), or code for another
    /// interpreter (`python -c`, `perl -e`): what runs is unknown.
    pub opaque: Vec<String>,
}

/// How deep `sh -c '…'` and `eval` may nest before the line is called opaque.
const MAX_NESTING: usize = 8;

pub fn parse(command: &str) -> Parsed {
    let mut parsed = Parsed::default();
    parse_into(command, &mut parsed, 0);
    parsed
}

fn parse_into(source: &str, parsed: &mut Parsed, depth: usize) {
    if depth > MAX_NESTING {
        parsed.opaque.push("commands nested too deeply".into());
        return;
    }
    let mut parser = Parser::new();
    if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        parsed.opaque.push("the shell grammar is unavailable".into());
        return;
    }
    let Some(tree) = parser.parse(source, None) else {
        parsed.opaque.push("the command could not be parsed".into());
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        parsed.opaque.push("the command is not valid shell syntax".into());
    }
    walk(root, source, parsed, depth);
}

fn walk(node: Node<'_>, source: &str, parsed: &mut Parsed, depth: usize) {
    match node.kind() {
        "command" => {
            let words = command_words(node, source);
            if !words.is_empty() {
                unwrap_command(words, parsed, depth);
            }
        }
        "file_redirect" => {
            let writes = node
                .children(&mut node.walk())
                .any(|child| matches!(child.kind(), ">" | ">>" | "&>" | "&>>" | ">|" | "<>"));
            if writes && let Some(target) = node.child_by_field_name("destination") {
                parsed.written_files.push(literal(target, source));
            }
        }
        _ => {}
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        walk(child, source, parsed, depth);
    }
}

/// The program name and arguments of a `command` node (assignments and redirections
/// left out).
fn command_words(node: Node<'_>, source: &str) -> Vec<Word> {
    let mut words = Vec::new();
    if let Some(name) = node.child_by_field_name("name") {
        words.push(literal(name, source));
    }
    let mut cursor = node.walk();
    for argument in node.children_by_field_name("argument", &mut cursor) {
        words.push(literal(argument, source));
    }
    words
}

/// The value of a word node when it holds no expansion.
fn literal(node: Node<'_>, source: &str) -> Word {
    let text = node.utf8_text(source.as_bytes()).ok()?;
    match node.kind() {
        "command_name" => node.named_child(0).and_then(|word| literal(word, source)),
        "word" | "number" => Some(unescape(text)),
        "raw_string" => Some(text.trim_matches('\'').to_string()),
        "string" => {
            let mut value = String::new();
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                if child.kind() != "string_content" {
                    return None;
                }
                value.push_str(child.utf8_text(source.as_bytes()).ok()?);
            }
            Some(value)
        }
        "concatenation" => {
            let mut value = String::new();
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                value.push_str(&literal(child, source)?);
            }
            Some(value)
        }
        _ => None,
    }
}

/// A bare word with its backslash escapes applied (`r\m` is `rm`).
fn unescape(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `/usr/bin/env` → `env`.
pub fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Record `words` as a command, or, for a wrapper, the command it runs.
fn unwrap_command(words: Vec<Word>, parsed: &mut Parsed, depth: usize) {
    let Some(Some(program)) = words.first() else {
        parsed.commands.push(words);
        return;
    };
    let program = program_name(program).to_string();
    let rest = &words[1..];
    let literal_at = |at: usize| rest.get(at).and_then(|w| w.as_deref());
    let inner: Option<Vec<Word>> = match program.as_str() {
        "env" => Some(skip_options(rest, &["-u", "--unset", "-C", "--chdir", "-S"], |w| {
            w.contains('=')
        })),
        "command" | "exec" | "nohup" | "setsid" | "time" | "builtin" => Some(skip_options(rest, &["-a"], |_| false)),
        "nice" | "ionice" => Some(skip_options(rest, &["-n", "-c", "--adjustment"], |_| false)),
        "stdbuf" => Some(skip_options(rest, &[], |_| false)),
        "timeout" => {
            let after = skip_options(rest, &["-s", "--signal", "-k", "--kill-after"], |_| false);
            Some(after.into_iter().skip(1).collect())
        }
        "xargs" => Some(skip_options(
            rest,
            &[
                "-I",
                "-i",
                "-n",
                "-P",
                "-L",
                "-s",
                "-d",
                "-E",
                "-a",
                "--max-args",
                "--max-procs",
            ],
            |_| false,
        )),
        "find" => {
            find_actions(rest, parsed, depth);
            None
        }
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" => {
            match rest.iter().position(|w| w.as_deref() == Some("-c")) {
                Some(at) => match rest.get(at + 1) {
                    Some(Some(script)) => parse_into(script, parsed, depth + 1),
                    _ => parsed
                        .opaque
                        .push(format!("`{program} -c` with a script known only when it runs")),
                },
                None if literal_at(0).is_none() && !rest.is_empty() => {
                    parsed
                        .opaque
                        .push(format!("`{program}` with a script known only when it runs"));
                }
                None => {}
            }
            None
        }
        "eval" => {
            match rest.iter().cloned().collect::<Option<Vec<String>>>() {
                Some(parts) => parse_into(&parts.join(" "), parsed, depth + 1),
                None => parsed.opaque.push("`eval` of text known only when it runs".into()),
            }
            None
        }
        "python" | "python3" | "python2" | "perl" | "ruby" | "node" | "nodejs" | "php" | "lua" | "Rscript"
            if rest
                .iter()
                .any(|w| matches!(w.as_deref(), Some("-c" | "-e" | "-E" | "--eval" | "-r"))) =>
        {
            parsed.opaque.push(format!("inline {program} code"));
            None
        }
        "tee" => {
            parsed.written_files.extend(
                rest.iter()
                    .filter(|w| !w.as_deref().is_some_and(|w| w.starts_with('-')))
                    .cloned(),
            );
            None
        }
        _ => None,
    };
    parsed.commands.push(words.clone());
    if let Some(inner) = inner
        && !inner.is_empty()
    {
        unwrap_command(inner, parsed, depth);
    }
}

/// The words after a wrapper's own options (and their values) and, where
/// `is_assignment` says so, its `NAME=value` words.
fn skip_options(words: &[Word], with_value: &[&str], is_assignment: impl Fn(&str) -> bool) -> Vec<Word> {
    let mut at = 0;
    while let Some(word) = words.get(at) {
        match word.as_deref() {
            Some("--") => {
                at += 1;
                break;
            }
            Some(option) if with_value.contains(&option) => at += 2,
            Some(option) if option.starts_with('-') && option.len() > 1 => at += 1,
            Some(assignment) if is_assignment(assignment) => at += 1,
            _ => break,
        }
    }
    words.get(at..).map(<[Word]>::to_vec).unwrap_or_default()
}

/// `find … -exec CMD … ;` runs CMD; `-delete` is recorded as a `find -delete` command.
fn find_actions(words: &[Word], parsed: &mut Parsed, depth: usize) {
    let mut at = 0;
    while at < words.len() {
        match words[at].as_deref() {
            Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let end = words[at + 1..]
                    .iter()
                    .position(|w| matches!(w.as_deref(), Some(";" | "\\;" | "+")))
                    .map_or(words.len(), |offset| at + 1 + offset);
                let inner: Vec<Word> = words[at + 1..end].to_vec();
                if !inner.is_empty() {
                    unwrap_command(inner, parsed, depth);
                }
                at = end + 1;
            }
            Some("-delete") => {
                parsed.commands.push(vec![Some("find".into()), Some("-delete".into())]);
                at += 1;
            }
            Some("-fprint" | "-fprintf" | "-fls") => {
                parsed.written_files.push(words.get(at + 1).cloned().flatten());
                at += 2;
            }
            _ => at += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The programs a line runs, sorted.
    fn programs(command: &str) -> Vec<String> {
        let mut programs: Vec<String> = parse(command)
            .commands
            .iter()
            .map(|words| match words.first() {
                Some(Some(program)) => program_name(program).to_string(),
                _ => "?".to_string(),
            })
            .collect();
        programs.sort();
        programs
    }

    #[test]
    fn wrappers_substitutions_and_nested_shells_are_looked_through() {
        assert_eq!(programs("env FOO=1 sudo id"), ["env", "sudo"]);
        assert_eq!(programs("command sudo ls"), ["command", "sudo"]);
        assert_eq!(programs("nice -n 5 timeout 10 rm -rf x"), ["nice", "rm", "timeout"]);
        assert_eq!(programs("bash -c 'rm -rf DIR'"), ["bash", "rm"]);
        assert_eq!(programs("sh -c \"reboot\""), ["reboot", "sh"]);
        assert_eq!(programs("eval rm -rf x"), ["eval", "rm"]);
        assert_eq!(programs("echo f | xargs rm"), ["echo", "rm", "xargs"]);
        assert_eq!(programs("find . -name x -exec rm {} ;"), ["find", "rm"]);
        assert_eq!(programs("ls $(sudo id)"), ["ls", "sudo"]);
        assert_eq!(programs("f() { shred x; }; f"), ["f", "shred"]);
        assert_eq!(programs("r\\m x"), ["rm"]);
    }

    #[test]
    fn words_known_only_at_run_time_are_not_literal() {
        let parsed = parse("S=sud; ${S}o id");
        assert!(parsed.commands.iter().any(|words| words[0].is_none()), "{parsed:?}");
        assert!(
            !parse("python3 -c 'import shutil; shutil.rmtree(\"x\")'")
                .opaque
                .is_empty()
        );
        assert!(!parse("bash -c \"$CMD\"").opaque.is_empty());
        assert!(!parse("echo 'unterminated").opaque.is_empty());
    }

    #[test]
    fn written_files_come_from_redirections_tee_and_find() {
        let parsed = parse("echo x | tee /etc/file > out.txt 2>/dev/null; cat < in.txt");
        let written: Vec<Option<&str>> = parsed.written_files.iter().map(Option::as_deref).collect();
        assert!(written.contains(&Some("/etc/file")), "{written:?}");
        assert!(written.contains(&Some("out.txt")), "{written:?}");
        assert!(written.contains(&Some("/dev/null")), "{written:?}");
        assert!(!written.contains(&Some("in.txt")), "{written:?}");
        assert!(
            parse("find . -delete")
                .commands
                .iter()
                .any(|w| w.get(1) == Some(&Some("-delete".into())))
        );
    }
}
