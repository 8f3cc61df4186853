//! The `/` finder: what typing `/` at the prompt lists. Every slash command, including
//! the actions that are keys in one view (`f` in the chat forks, `p` in /context
//! pins), with the key that does the same where it works and what it would do now;
//! one that cannot run now says why instead of vanishing.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use unicode_width::UnicodeWidthStr;

use crate::commands::SlashCommand;
use crate::keymap;
use crate::theme;

/// The commands that match what is typed as the first word of the prompt: the one it
/// names exactly first, then those it begins, then those whose description has it
/// (`/branch` finds `/fork`). Nothing once a space or a new line follows.
pub fn matches(typed: &str) -> Vec<SlashCommand> {
    let Some(word) = typed.strip_prefix('/') else {
        return Vec::new();
    };
    if word.contains(char::is_whitespace) {
        return Vec::new();
    }
    let word = word.to_lowercase();
    let name_of = |command: SlashCommand| command.name().trim_start_matches('/');
    let mut found: Vec<SlashCommand> = SlashCommand::all().filter(|&c| name_of(c) == word).collect();
    found.extend(SlashCommand::all().filter(|&c| name_of(c) != word && name_of(c).starts_with(&word)));
    if word.len() >= 3 {
        found.extend(
            SlashCommand::all()
                .filter(|&c| !name_of(c).starts_with(&word) && c.description().to_lowercase().contains(word.as_str())),
        );
    }
    found
}

/// One row of the finder: the command, the key that does the same where it works,
/// and what it would do now or why it cannot.
pub struct Found {
    pub command: SlashCommand,
    pub key: Option<String>,
    pub now: Result<String, String>,
}

impl Found {
    pub fn new(command: SlashCommand, now: Result<String, String>) -> Found {
        Found {
            command,
            key: command.action().and_then(keymap::hint),
            now,
        }
    }
}

/// Draw the finder just above the prompt at `prompt`, `selected` highlighted; as many
/// rows as fit above it, scrolled so the selected one shows.
pub fn draw(frame: &mut Frame<'_>, prompt: Rect, found: &[Found], selected: usize) {
    if found.is_empty() || prompt.y < 3 {
        return;
    }
    let selected = selected.min(found.len() - 1);
    let height = (found.len() as u16 + 2).min(prompt.y);
    let names = found.iter().map(|f| f.command.name().width()).max().unwrap_or(0) + 1;
    let keys = found
        .iter()
        .filter_map(|f| f.key.as_deref().map(UnicodeWidthStr::width))
        .max()
        .map_or(0, |widest| widest.min(16) + 1);
    let texts = found
        .iter()
        .map(|f| f.now.as_ref().map_or_else(|why| why.width() + 2, |what| what.width()))
        .max()
        .unwrap_or(0);
    // As wide as the longest row needs, up to the prompt's width; a row that still
    // does not fit ends in an ellipsis.
    let width = u16::try_from(names + keys + texts + 2)
        .unwrap_or(u16::MAX)
        .min(prompt.width.saturating_sub(2));
    let area = Rect {
        x: prompt.x + 1,
        y: prompt.y - height,
        width,
        height,
    };
    let visible = usize::from(height - 2);
    let first = (selected + 1).saturating_sub(visible);
    let text_columns = usize::from(width.saturating_sub(2)).saturating_sub(names + keys);
    let palette = theme::palette();
    let lines: Vec<Line<'static>> = found
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(at, row)| {
            let style = if at == selected {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            let key = crate::ellipsized(row.key.as_deref().unwrap_or(""), keys.saturating_sub(1));
            let (text, colour) = match &row.now {
                Ok(what) => (what.clone(), palette.soft),
                Err(why) => (format!("✗ {why}"), palette.attention),
            };
            Line::from(vec![
                Span::styled(format!("{:<names$}", row.command.name()), style.fg(palette.accent)),
                Span::styled(format!("{key:<keys$}"), style.fg(palette.muted)),
                Span::styled(crate::ellipsized(&text, text_columns), style.fg(colour)),
            ])
        })
        .collect();
    let title = if found.len() > visible {
        format!(
            " commands {}–{} of {} (Tab, ↑↓) ",
            first + 1,
            first + lines.len(),
            found.len()
        )
    } else {
        " commands (Tab, ↑↓) ".to_string()
    };
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(typed: &str) -> Vec<&'static str> {
        matches(typed).into_iter().map(SlashCommand::name).collect()
    }

    #[test]
    fn the_named_command_comes_first_then_those_begun_then_those_described() {
        assert_eq!(names("/fork")[0], "/fork", "typed in full, it is still listed");
        assert_eq!(names("/co"), ["/compact", "/context", "/count"]);
        assert_eq!(names("/summar")[..2], ["/summary", "/summarise"]);
        assert!(names("/archive").contains(&"/drop"), "{:?}", names("/archive"));
        assert!(names("/fork ").is_empty(), "arguments follow: the finder is gone");
        assert!(names("fork").is_empty());
    }

    /// Every action that does something (not a move, an edit of the prompt or an
    /// answer to a question) is found from `/`.
    #[test]
    fn every_action_is_found_from_the_prompt() {
        use crate::keymap::Action as A;
        let found: Vec<A> = SlashCommand::all().filter_map(SlashCommand::action).collect();
        let moves_edits_and_answers = [
            A::Send,
            A::NewLine,
            A::ExpandPastes,
            A::DeleteToLineStart,
            A::Previous,
            A::Next,
            A::CompleteOrCycleFocus,
            A::CancelOrBack,
            A::ScrollUp,
            A::ScrollDown,
            A::Follow,
            A::DismissBanner,
            A::Interrupt,
            A::ShowReceipt,
            A::HideReceipt,
            A::PageUp,
            A::PageDown,
            A::Top,
            A::Bottom,
            A::Search,
            A::NextMatch,
            A::PreviousMatch,
            A::JumpBack,
            A::Close,
            A::NextList,
            A::Fold,
            A::AllowOnce,
            A::Deny,
            A::DenyBecause,
            A::AlwaysForProject,
            A::AlwaysAllow,
            A::CancelTurn,
            A::ApplySummary,
            A::RejectSummary,
            A::Open(0),
        ];
        for row in keymap::SCREEN
            .iter()
            .chain(keymap::VIEWS.iter().flat_map(|(_, rows)| rows.iter()))
        {
            for &(_, _, action) in row.bindings {
                let action = if matches!(action, A::Open(_)) {
                    A::Open(0)
                } else {
                    action
                };
                assert!(
                    found.contains(&action) || moves_edits_and_answers.contains(&action),
                    "{action:?} ({}) is found from / by no command",
                    row.what
                );
            }
        }
        for action in found {
            assert!(keymap::hint(action).is_some(), "{action:?} has a command and no key");
        }
    }
}
