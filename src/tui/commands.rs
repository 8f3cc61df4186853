//! The slash commands: one enum read by the completion popup, the handler, the help
//! overlay and (checked by a test) the README.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlashCommand {
    Compact,
    Undo,
    Context,
    Transcripts,
    Clear,
    Permissions,
    Model,
    Help,
    Quit,
}

impl SlashCommand {
    pub const ALL: [SlashCommand; 9] = [
        SlashCommand::Compact,
        SlashCommand::Undo,
        SlashCommand::Context,
        SlashCommand::Transcripts,
        SlashCommand::Clear,
        SlashCommand::Permissions,
        SlashCommand::Model,
        SlashCommand::Help,
        SlashCommand::Quit,
    ];

    /// As typed, with its slash.
    pub fn name(self) -> &'static str {
        match self {
            SlashCommand::Compact => "/compact",
            SlashCommand::Undo => "/undo",
            SlashCommand::Context => "/context",
            SlashCommand::Transcripts => "/transcripts",
            SlashCommand::Clear => "/clear",
            SlashCommand::Permissions => "/permissions",
            SlashCommand::Model => "/model",
            SlashCommand::Help => "/help",
            SlashCommand::Quit => "/quit",
        }
    }

    /// What may follow the name.
    pub fn arguments(self) -> &'static str {
        match self {
            SlashCommand::Compact => "[--preview] [focus]",
            SlashCommand::Permissions => "[revoke N]",
            _ => "",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            SlashCommand::Compact => {
                "summarise the history now, keeping the focus in detail; --preview shows what it would do"
            }
            SlashCommand::Undo => "put the history back as it was before the newest compaction stage",
            SlashCommand::Context => "what the context holds, and the timeline",
            SlashCommand::Transcripts => "browse archived transcripts and saved outputs",
            SlashCommand::Clear => "start a new conversation (and session); forgets approvals",
            SlashCommand::Permissions => "what was approved \"always\" this session; revoke one",
            SlashCommand::Model => "show the provider, model, window and how the limit was chosen",
            SlashCommand::Help => "keys and commands",
            SlashCommand::Quit => "leave scratchpad (also /exit)",
        }
    }

    /// Whether it may run while a turn is running (it changes no history).
    pub fn while_busy(self) -> bool {
        !matches!(self, SlashCommand::Compact | SlashCommand::Undo | SlashCommand::Clear)
    }

    /// `text` as a command and its arguments: `None` when it is no slash command,
    /// `Some(Err(name))` for an unknown one.
    pub fn parse(text: &str) -> Option<Result<(SlashCommand, &str), &str>> {
        let command = text.trim().strip_prefix('/')?;
        let (name, rest) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
        let found = SlashCommand::ALL
            .into_iter()
            .find(|c| &c.name()[1..] == name)
            .or_else(|| (name == "exit").then_some(SlashCommand::Quit));
        Some(found.map(|c| (c, rest.trim())).ok_or(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_ones_are_named() {
        for command in SlashCommand::ALL {
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
