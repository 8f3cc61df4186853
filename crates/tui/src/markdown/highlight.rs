//! Fenced code coloured by `syntect`'s grammars, in the theme's code roles.

use super::*;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The kind of code a scope stack describes, innermost scope first.
fn role_of(stack: &ScopeStack) -> CodeRole {
    static ROLES: OnceLock<Vec<(Scope, CodeRole)>> = OnceLock::new();
    let roles = ROLES.get_or_init(|| {
        [
            ("comment", CodeRole::Comment),
            ("string", CodeRole::Text),
            ("constant", CodeRole::Constant),
            ("keyword", CodeRole::Keyword),
            ("storage", CodeRole::Keyword),
            ("entity.name.function", CodeRole::Function),
            ("support.function", CodeRole::Function),
            ("entity.name.type", CodeRole::Type),
            ("support.type", CodeRole::Type),
        ]
        .into_iter()
        .filter_map(|(name, role)| Scope::new(name).ok().map(|scope| (scope, role)))
        .collect()
    });
    for scope in stack.as_slice().iter().rev() {
        if let Some((_, role)) = roles.iter().find(|(prefix, _)| prefix.is_prefix_of(*scope)) {
            return *role;
        }
    }
    CodeRole::Plain
}

/// The lines of `code` as styled segments, highlighted when the language is known.
pub(super) fn highlight(language: &str, code: &str) -> Vec<Vec<(String, Style)>> {
    let set = syntaxes();
    let syntax: Option<&SyntaxReference> = (!language.is_empty())
        .then(|| set.find_syntax_by_token(language))
        .flatten();
    let plain = Style::default().fg(code_colour(CodeRole::Plain));
    let Some(syntax) = syntax else {
        return code.lines().map(|line| vec![(line.to_string(), plain)]).collect();
    };
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::new();
    for line in syntect::util::LinesWithEndings::from(code) {
        let Ok(ops) = state.parse_line(line, set) else {
            out.push(vec![(line.trim_end_matches('\n').to_string(), plain)]);
            continue;
        };
        let mut segments = Vec::new();
        // Each op applies to the text of its range.
        for (range, op) in syntect::easy::ScopeRangeIterator::new(&ops, line) {
            // A scope the grammar cannot apply leaves the stack as it was.
            let _ = stack.apply(op);
            let piece = line[range].trim_end_matches('\n');
            if !piece.is_empty() {
                let style = Style::default().fg(code_colour(role_of(&stack)));
                segments.push((piece.to_string(), style));
            }
        }
        out.push(segments);
    }
    out
}
