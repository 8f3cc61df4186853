//! The names the model calls MCP tools by: `mcp__<server>__<tool>`, in the characters
//! the APIs accept (`[A-Za-z0-9_-]`), at most 64 of them, and never two alike.

/// What every MCP tool's name begins with.
pub const PREFIX: &str = "mcp__";

/// The longest tool name the APIs take.
pub const MAX_NAME: usize = 64;

/// `part` in the accepted characters: any other becomes `_`.
fn sanitise(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A name for each `(server, tool)`, in order. A name cut to [`MAX_NAME`] or made
/// alike by sanitising takes `_2`, `_3`, … in the order given, so the same servers and
/// tools always get the same names.
pub fn assign(pairs: &[(String, String)]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(pairs.len());
    for (server, tool) in pairs {
        let base: String = format!("{PREFIX}{}__{}", sanitise(server), sanitise(tool))
            .chars()
            .take(MAX_NAME)
            .collect();
        let mut name = base.clone();
        let mut n = 2;
        while names.contains(&name) {
            let suffix = format!("_{n}");
            name = format!("{}{suffix}", &base[..base.len().min(MAX_NAME - suffix.len())]);
            n += 1;
        }
        names.push(name);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(server: &str, tool: &str) -> (String, String) {
        (server.to_string(), tool.to_string())
    }

    #[test]
    fn names_are_prefixed_sanitised_bounded_and_unique() {
        let long = "t".repeat(80);
        let names = assign(&[
            pair("files", "read"),
            pair("my server", "get.item/x"),
            pair("my_server", "get_item_x"),
            pair("s", &long),
            pair("s", &format!("{long}-other")),
            pair("é", "ü"),
        ]);
        assert_eq!(names[0], "mcp__files__read");
        assert_eq!(names[1], "mcp__my_server__get_item_x");
        assert_eq!(names[2], "mcp__my_server__get_item_x_2", "a collision takes a number");
        assert_eq!(names[3].len(), MAX_NAME);
        assert_eq!(names[4].len(), MAX_NAME);
        assert!(names[4].ends_with("_2"), "cut alike, then numbered: {}", names[4]);
        assert_eq!(names[5], "mcp______");
        for name in &names {
            assert!(name.len() <= MAX_NAME);
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
        }
        assert_eq!(assign(&[pair("files", "read")])[0], names[0], "the same every time");
    }
}
