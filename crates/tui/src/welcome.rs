//! What an empty chat says: what scratchpad is, what to type, where the keys are. The
//! keys are named as the keymap names them.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::keymap::{self, Action};
use super::state::SessionInfo;
use super::theme;

/// The welcome, one paragraph per line (the chat wraps them).
pub fn lines(session: &SessionInfo) -> Vec<Line<'static>> {
    let palette = theme::palette();
    let plain = Style::default().fg(palette.text);
    let soft = Style::default().fg(palette.soft);
    let key = Style::default().fg(palette.accent).add_modifier(Modifier::BOLD);
    let keys_of = |action: Action| keymap::keys_for(action).unwrap_or("?").to_string();
    let mut lines = vec![
        Line::from(Span::styled(
            "scratchpad is a coding agent that shows its own context window.",
            plain.add_modifier(Modifier::BOLD),
        )),
        Line::from(Span::styled(
            "The gauge below is how full the model's context is. When it fills, older tool output \
             and history are compacted, and a ◆ marker here says what was archived and where.",
            soft,
        )),
        Line::default(),
        Line::from(vec![
            Span::styled("Type a request and press Enter, for example ", plain),
            Span::styled("survey this workspace", key),
        ]),
        Line::from(vec![
            Span::styled(keys_of(Action::Help), key),
            Span::styled(" the keys · ", soft),
            Span::styled("/", key),
            Span::styled(" finds any command or action · ", soft),
            Span::styled(keys_of(Action::OpenContext), key),
            Span::styled(" what the context holds · ", soft),
            Span::styled(keys_of(Action::OpenBrowser), key),
            Span::styled(" the archive", soft),
        ]),
    ];
    if session.is_demo() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            "This is the offline demo model: it works on this folder with real tool calls, and \
             its small limit makes every compaction stage fire within a minute. Set \
             ANTHROPIC_API_KEY to talk to Claude.",
            Style::default().fg(palette.muted),
        )));
    }
    lines
}
