//! The slash commands: one enum read by the `/` finder, the handler, the help
//! overlay and (checked by a test) the book (`docs/src/screen.md`). Every action that
//! is a key somewhere (`f` in the chat, `p` in /context) is a command too, so typing
//! `/` finds it from anywhere.

use crate::keymap::Action;

#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumIter, strum::IntoStaticStr, strum::EnumString)]
pub enum SlashCommand {
    #[strum(to_string = "/compact")]
    Compact,
    #[strum(to_string = "/undo")]
    Undo,
    #[strum(to_string = "/summary")]
    Summary,
    #[strum(to_string = "/summarise")]
    Summarise,
    #[strum(to_string = "/fork")]
    Fork,
    #[strum(to_string = "/context")]
    Context,
    #[strum(to_string = "/count")]
    Count,
    #[strum(to_string = "/pin")]
    Pin,
    #[strum(to_string = "/restore")]
    Restore,
    #[strum(to_string = "/drop")]
    Drop,
    #[strum(to_string = "/archive", serialize = "/transcripts")]
    Archive,
    #[strum(to_string = "/clear")]
    Clear,
    #[strum(to_string = "/resume")]
    Resume,
    #[strum(to_string = "/tree")]
    Tree,
    #[strum(to_string = "/label")]
    Label,
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
            SlashCommand::Label => "NAME",
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
            SlashCommand::Summarise => {
                "summarise everything before the selected request, and keep it and what follows verbatim"
            }
            SlashCommand::Fork => {
                "a new session from the history as it was before the selected compaction (this one stays)"
            }
            SlashCommand::Count => "count the context's tokens exactly, where the provider can, in /context",
            SlashCommand::Pin => "pin a tool result, so stage 3 leaves it whole (or unpin it), in /context",
            SlashCommand::Restore => "put a shortened tool result back in full, in /context",
            SlashCommand::Drop => "move a tool result to the archive now, with a receipt, in /context",
            SlashCommand::Label => "name this session (l in /tree names any point of it)",
            SlashCommand::Context => "what the context holds, and the timeline",
            SlashCommand::Archive => "browse the archive: transcripts and saved outputs (also /transcripts)",
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

    /// The key that does the same in some view, if any: the finder shows it, and the
    /// handler runs what that key runs.
    pub fn action(self) -> Option<Action> {
        Some(match self {
            SlashCommand::Undo => Action::Undo,
            SlashCommand::Summarise => Action::SummariseUpTo,
            SlashCommand::Fork => Action::ForkBefore,
            SlashCommand::Context => Action::OpenContext,
            SlashCommand::Count => Action::CountTokens,
            SlashCommand::Pin => Action::Pin,
            SlashCommand::Restore => Action::Restore,
            SlashCommand::Drop => Action::Drop,
            SlashCommand::Archive => Action::OpenBrowser,
            SlashCommand::Label => Action::Label,
            SlashCommand::Help => Action::Help,
            _ => return None,
        })
    }

    /// Whether it may run while a turn is running (it changes neither the history nor
    /// the system prompt).
    pub fn while_busy(self) -> bool {
        !matches!(
            self,
            SlashCommand::Compact
                | SlashCommand::Summary
                | SlashCommand::Summarise
                | SlashCommand::Fork
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
        assert_eq!(
            SlashCommand::parse("/transcripts"),
            Some(Ok((SlashCommand::Archive, ""))),
            "the archive's old name"
        );
        assert_eq!(SlashCommand::parse("/foo bar"), Some(Err("foo")));
        assert_eq!(SlashCommand::parse("plain text"), None);
    }
}
