//! The slash commands: one enum read by the completion popup, the handler, the help
//! overlay and (checked by a test) the book (`docs/src/screen.md`).

#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr, strum::EnumString)]
pub enum SlashCommand {
    #[strum(to_string = "/compact")]
    Compact,
    #[strum(to_string = "/undo")]
    Undo,
    #[strum(to_string = "/summary")]
    Summary,
    #[strum(to_string = "/context")]
    Context,
    #[strum(to_string = "/transcripts")]
    Transcripts,
    #[strum(to_string = "/clear")]
    Clear,
    #[strum(to_string = "/resume")]
    Resume,
    #[strum(to_string = "/tree")]
    Tree,
    #[strum(to_string = "/permissions")]
    Permissions,
    #[strum(to_string = "/instructions")]
    Instructions,
    #[strum(to_string = "/mcp")]
    Mcp,
    #[strum(to_string = "/model")]
    Model,
    #[strum(to_string = "/help")]
    Help,
    #[strum(to_string = "/quit", serialize = "/exit")]
    Quit,
}

impl SlashCommand {
    /// Every command, in the order the popup, the help and the book list them.
    pub fn all() -> impl Iterator<Item = SlashCommand> {
        <SlashCommand as strum::IntoEnumIterator>::iter()
    }

    /// As typed, with its slash.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// What may follow the name.
    pub fn arguments(self) -> &'static str {
        match self {
            SlashCommand::Compact => "[--preview] [focus]",
            SlashCommand::Permissions => "[revoke N]",
            SlashCommand::Mcp => "[trust|restart|disable NAME]",
            _ => "",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            SlashCommand::Compact => {
                "summarise the history now, keeping the focus in detail; --preview shows what it would do"
            }
            SlashCommand::Undo => "put the history back as it was before the newest compaction stage",
            SlashCommand::Summary => "review (and edit) the summary prepared in the background before it goes in",
            SlashCommand::Context => "what the context holds, and the timeline",
            SlashCommand::Transcripts => "browse archived transcripts and saved outputs",
            SlashCommand::Clear => "start a new conversation (and session); forgets approvals",
            SlashCommand::Resume => "pick a session of this workspace to continue instead",
            SlashCommand::Tree => {
                "this session and its forks: fork before any request or compaction, label, open a branch"
            }
            SlashCommand::Permissions => "what was approved \"always\" this session; revoke one",
            SlashCommand::Instructions => "the project's instruction files (AGENTS.md): read them again and list them",
            SlashCommand::Mcp => "the MCP servers: their state, tools and what each costs every request",
            SlashCommand::Model => "show the provider, model, window and how the limit was chosen",
            SlashCommand::Help => "keys and commands",
            SlashCommand::Quit => "leave scratchpad (also /exit)",
        }
    }

    /// Whether it may run while a turn is running (it changes neither the history nor
    /// the system prompt).
    pub fn while_busy(self) -> bool {
        !matches!(
            self,
            SlashCommand::Compact
                | SlashCommand::Summary
                | SlashCommand::Undo
                | SlashCommand::Clear
                | SlashCommand::Resume
                | SlashCommand::Tree
                | SlashCommand::Instructions
                | SlashCommand::Mcp
        )
    }

    /// `text` as a command and its arguments: `None` when it is no slash command,
    /// `Some(Err(name))` for an unknown one.
    pub fn parse(text: &str) -> Option<Result<(SlashCommand, &str), &str>> {
        let text = text.trim();
        let command = text.strip_prefix('/')?;
        let (name, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
        let typed = &text[..name.len() + 1];
        match typed.parse::<SlashCommand>() {
            Ok(found) => Some(Ok((found, rest.trim()))),
            Err(_) => Some(Err(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_ones_are_named() {
        for command in SlashCommand::all() {
            assert_eq!(SlashCommand::parse(command.name()), Some(Ok((command, ""))));
        }
        assert_eq!(
            SlashCommand::parse("/compact  keep the parser notes "),
            Some(Ok((SlashCommand::Compact, "keep the parser notes")))
        );
        assert_eq!(SlashCommand::parse("/exit"), Some(Ok((SlashCommand::Quit, ""))));
        assert_eq!(SlashCommand::parse("/foo bar"), Some(Err("foo")));
        assert_eq!(SlashCommand::parse("plain text"), None);
    }
}
