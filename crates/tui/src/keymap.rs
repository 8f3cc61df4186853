//! Every key binding, in one table: which key does what where. The key handlers ask
//! [`action`] what a key means in their view, and the help overlay and the book
//! (checked by a test) list the same rows.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
mod views;
pub use views::VIEWS;

/// Where a key is pressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The prompt has the focus.
    Prompt,
    /// The main screen, wherever the focus is (before the focused part is asked).
    Screen,
    /// The chat has the focus (compaction markers).
    Chat,
    /// The tool-call pane has the focus.
    Tools,
    /// The archive browser's list.
    Browser,
    /// A file open in the viewer.
    Viewer,
    /// The `/context` view.
    Context,
    /// The permission question.
    Permission,
    /// A written summary in review before the model reads it.
    Review,
    /// What `/compact` would do, before anything is written (`/compact --preview`).
    Preview,
    /// The help overlay.
    Help,
    /// The session picker (`/resume`).
    Picker,
    /// The session tree (`/tree`, Esc Esc).
    Tree,
}

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Send,
    NewLine,
    ExpandPastes,
    DeleteToLineStart,
    Previous,
    Next,
    CompleteOrCycleFocus,
    CancelOrBack,
    ScrollUp,
    ScrollDown,
    Follow,
    OpenBrowser,
    OpenContext,
    DismissBanner,
    Help,
    Interrupt,
    /// Open the selected item's `n`th file (0: the first), or the item itself.
    Open(u8),
    ShowReceipt,
    HideReceipt,
    Undo,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Search,
    NextMatch,
    PreviousMatch,
    JumpBack,
    Close,
    Restore,
    Pin,
    Drop,
    CountTokens,
    NextList,
    AllowOnce,
    Deny,
    DenyBecause,
    AlwaysForProject,
    AlwaysAllow,
    CancelTurn,
    /// The summary in review goes in, as it is in the editor.
    ApplySummary,
    /// The summary in review does not go in: the history stays as it was.
    RejectSummary,
    /// Fold or unfold a branch of the session tree.
    Fold,
    /// Name a session or a point of it.
    Label,
    /// A new session from just before the selected compaction.
    ForkBefore,
    /// Summarise everything before the selected request, keep the rest verbatim.
    SummariseUpTo,
}

/// A key with its modifiers. Letters match with or without Shift (the terminal
/// reports `N` with Shift).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    code: KeyCode,
    modifiers: KeyModifiers,
}

const fn key(code: KeyCode) -> Key {
    Key {
        code,
        modifiers: KeyModifiers::NONE,
    }
}

const fn char(c: char) -> Key {
    key(KeyCode::Char(c))
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        modifiers: KeyModifiers::CONTROL,
    }
}

const fn with(code: KeyCode, modifiers: KeyModifiers) -> Key {
    Key { code, modifiers }
}

impl Key {
    fn matches(&self, event: &KeyEvent) -> bool {
        let mut modifiers = event.modifiers;
        if matches!(event.code, KeyCode::Char(_)) {
            modifiers.remove(KeyModifiers::SHIFT);
        }
        self.code == event.code && self.modifiers == modifiers
    }
}

/// One row of the help: how it names the keys, what they do, and the bindings.
pub struct Row {
    pub keys: &'static str,
    pub what: &'static str,
    pub bindings: &'static [(View, Key, Action)],
}

const fn row(keys: &'static str, what: &'static str, bindings: &'static [(View, Key, Action)]) -> Row {
    Row { keys, what, bindings }
}

use Action as A;
use View as V;

/// The keys of the main screen.
pub const SCREEN: &[Row] = &[
    row(
        "Enter",
        "send the request",
        &[(V::Prompt, key(KeyCode::Enter), A::Send)],
    ),
    row(
        "Alt+Enter, Shift+Enter, Ctrl+J",
        "new line",
        &[
            (V::Prompt, with(KeyCode::Enter, KeyModifiers::ALT), A::NewLine),
            (V::Prompt, with(KeyCode::Enter, KeyModifiers::SHIFT), A::NewLine),
            (V::Prompt, ctrl('j'), A::NewLine),
        ],
    ),
    row(
        "Ctrl+U",
        "delete from the cursor to the start of the line",
        &[(V::Prompt, ctrl('u'), A::DeleteToLineStart)],
    ),
    row(
        "Ctrl+O",
        "show a collapsed paste (`[pasted N lines]`) in full",
        &[(V::Prompt, ctrl('o'), A::ExpandPastes)],
    ),
    row(
        "Up / Down",
        "previous / next request (single-line prompt); move in the `/` finder",
        &[
            (V::Prompt, key(KeyCode::Up), A::Previous),
            (V::Prompt, key(KeyCode::Down), A::Next),
        ],
    ),
    row(
        "Tab",
        "complete a slash command; otherwise cycle focus: prompt → chat → tool calls (in the chat when the pane does not fit)",
        &[(V::Screen, key(KeyCode::Tab), A::CompleteOrCycleFocus)],
    ),
    row(
        "Esc",
        "cancel the running turn (its command's process group is killed); close a view; twice on an empty prompt: the session tree, to fork before a request",
        &[(V::Screen, key(KeyCode::Esc), A::CancelOrBack)],
    ),
    row(
        "Up / Down in the chat",
        "select a request, a compaction marker (or, in a narrow terminal, a tool call)",
        &[
            (V::Chat, key(KeyCode::Up), A::Previous),
            (V::Chat, key(KeyCode::Down), A::Next),
        ],
    ),
    row(
        "Enter, 1–9 in the chat",
        "open the selected marker's first / nth file, or a tool call's saved output (else show its output)",
        &[
            (V::Chat, key(KeyCode::Enter), A::Open(0)),
            (V::Chat, char('1'), A::Open(0)),
            (V::Chat, char('2'), A::Open(1)),
            (V::Chat, char('3'), A::Open(2)),
            (V::Chat, char('4'), A::Open(3)),
            (V::Chat, char('5'), A::Open(4)),
            (V::Chat, char('6'), A::Open(5)),
            (V::Chat, char('7'), A::Open(6)),
            (V::Chat, char('8'), A::Open(7)),
            (V::Chat, char('9'), A::Open(8)),
        ],
    ),
    row(
        "Right / Left in the chat",
        "show / hide the selected marker's receipt and whole summary, or a tool call's output",
        &[
            (V::Chat, key(KeyCode::Right), A::ShowReceipt),
            (V::Chat, key(KeyCode::Left), A::HideReceipt),
        ],
    ),
    row(
        "u in the chat",
        "undo the selected marker's compaction (the newest)",
        &[(V::Chat, char('u'), A::Undo)],
    ),
    row(
        "f in the chat",
        "fork: a new session from the history as it was before the selected marker's compaction (this one is kept)",
        &[(V::Chat, char('f'), A::ForkBefore)],
    ),
    row(
        "s in the chat",
        "summarise everything before the selected request, and keep it and what follows verbatim",
        &[(V::Chat, char('s'), A::SummariseUpTo)],
    ),
    row(
        "Up / Down in tool calls",
        "select a call",
        &[
            (V::Tools, key(KeyCode::Up), A::Previous),
            (V::Tools, key(KeyCode::Down), A::Next),
        ],
    ),
    row(
        "Enter in tool calls",
        "expand the newest call, open a saved output, or collapse",
        &[(V::Tools, key(KeyCode::Enter), A::Open(0))],
    ),
    row(
        "PgUp / PgDn, mouse wheel",
        "scroll the chat (End follows the stream again)",
        &[
            (V::Screen, key(KeyCode::PageUp), A::ScrollUp),
            (V::Screen, key(KeyCode::PageDown), A::ScrollDown),
            (V::Screen, key(KeyCode::End), A::Follow),
        ],
    ),
    row("click on a link", "open that file in the browser", &[]),
    row(
        "Ctrl+T",
        "the archive browser (/archive)",
        &[(V::Screen, ctrl('t'), A::OpenBrowser)],
    ),
    row("Ctrl+X", "the /context view", &[(V::Screen, ctrl('x'), A::OpenContext)]),
    row(
        "Ctrl+D",
        "dismiss the error banner, or the tour's note (for good)",
        &[(V::Screen, ctrl('d'), A::DismissBanner)],
    ),
    row(
        "?, F1",
        "help, the keys of where you are first (? on an empty prompt; F1 anywhere, over a view too)",
        &[
            (V::Prompt, char('?'), A::Help),
            (V::Screen, key(KeyCode::F(1)), A::Help),
        ],
    ),
    row(
        "Ctrl+C",
        "cancel the running turn or clear the prompt; twice within 2 s quits",
        &[(V::Screen, ctrl('c'), A::Interrupt)],
    ),
];

/// How the screen's key table names the keys of `action`, for text that tells the
/// user which key to press.
pub fn keys_for(action: Action) -> Option<&'static str> {
    SCREEN
        .iter()
        .find(|row| row.bindings.iter().any(|&(_, _, bound)| bound == action))
        .map(|row| row.keys)
}

/// Where `action` is a key, said as the finder shows it: the screen's own words (`u in
/// the chat`, `Ctrl+T`), or a view's key and the view (`p in /context`).
pub fn hint(action: Action) -> Option<String> {
    if let Some(keys) = keys_for(action) {
        return Some(keys.to_string());
    }
    VIEWS.iter().flat_map(|(_, rows)| rows.iter()).find_map(|row| {
        let &(view, _, _) = row.bindings.iter().find(|&&(_, _, bound)| bound == action)?;
        Some(format!("{} {}", row.keys, view.place()))
    })
}

impl View {
    /// Where it is, after a key: `in /context`.
    pub fn place(self) -> &'static str {
        match self {
            View::Prompt => "at the prompt",
            View::Screen => "anywhere",
            View::Chat => "in the chat",
            View::Tools => "in tool calls",
            View::Browser => "in /archive",
            View::Viewer => "in the viewer",
            View::Context => "in /context",
            View::Permission => "in a permission question",
            View::Review => "in a review",
            View::Preview => "in a preview",
            View::Help => "in the help",
            View::Picker => "in /resume",
            View::Tree => "in /tree",
        }
    }
}

/// An action a view offers now, for its footer: the action (its key comes from the
/// table above), a short word for it, and whether it can run now (or why not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    pub action: Action,
    pub label: &'static str,
    pub now: Result<(), String>,
}

impl Offer {
    /// An action that can run now.
    pub fn ready(action: Action, label: &'static str) -> Offer {
        Offer {
            action,
            label,
            now: Ok(()),
        }
    }

    /// An action that can run only when `now` is `Ok`.
    pub fn when(action: Action, label: &'static str, now: Result<(), String>) -> Offer {
        Offer { action, label, now }
    }
}

/// How a footer names a key: `r`, `Enter`, `Ctrl+T`, `↑`.
fn key_name(key: Key) -> String {
    let name = match key.code {
        KeyCode::Char(' ') => "Space".to_string(),
        KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => c.to_ascii_uppercase().to_string(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Tab => "Tab".into(),
        KeyCode::Up => "↑".into(),
        KeyCode::Down => "↓".into(),
        KeyCode::Left => "←".into(),
        KeyCode::Right => "→".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    };
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        format!("Ctrl+{name}")
    } else {
        name
    }
}

/// The key of `action` in `view` as a footer shows it: its first binding there, with
/// Up and Down together as `↑↓`.
pub fn key_in(view: View, action: Action) -> Option<String> {
    let bound = |wanted: Action| {
        SCREEN
            .iter()
            .chain(VIEWS.iter().flat_map(|(_, rows)| rows.iter()))
            .flat_map(|row| row.bindings.iter())
            .find(|&&(at, _, bound)| at == view && bound == wanted)
            .map(|&(_, key, _)| key)
    };
    let key = bound(action)?;
    if action == Action::Previous && bound(Action::Next).is_some_and(|next| next.code == KeyCode::Down) {
        return Some("↑↓".into());
    }
    Some(key_name(key))
}

/// A view's footer: each offer's key and word, those that cannot run now dimmed (the
/// key says why when pressed). An offer with no key in `view` is left out.
pub fn footer(view: View, offers: &[Offer]) -> ratatui::text::Line<'static> {
    use ratatui::style::Style;
    use ratatui::text::Span;
    let palette = crate::theme::palette();
    let mut spans = Vec::new();
    for offer in offers {
        let Some(key) = key_in(view, offer.action) else {
            continue;
        };
        if !spans.is_empty() {
            spans.push(Span::styled(" · ", Style::default().fg(palette.muted)));
        }
        let (key_colour, label_colour) = match offer.now {
            Ok(()) => (palette.attention, palette.soft),
            Err(_) => (palette.muted, palette.muted),
        };
        spans.push(Span::styled(key, Style::default().fg(key_colour)));
        spans.push(Span::styled(
            format!(" {}", offer.label),
            Style::default().fg(label_colour),
        ));
    }
    ratatui::text::Line::from(spans)
}

/// What `event` does in `view`, if anything.
pub fn action(view: View, event: &KeyEvent) -> Option<Action> {
    SCREEN
        .iter()
        .chain(VIEWS.iter().flat_map(|(_, rows)| rows.iter()))
        .flat_map(|row| row.bindings.iter())
        .find(|(at, key, _)| *at == view && key.matches(event))
        .map(|&(_, _, action)| action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn a_key_means_what_the_table_says_in_its_view() {
        let plain = |c| press(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(action(View::Viewer, &plain('n')), Some(Action::NextMatch));
        assert_eq!(
            action(View::Viewer, &press(KeyCode::Char('N'), KeyModifiers::SHIFT)),
            Some(Action::PreviousMatch)
        );
        assert_eq!(action(View::Chat, &plain('3')), Some(Action::Open(2)));
        assert_eq!(action(View::Browser, &plain('n')), None);
        assert_eq!(
            action(View::Screen, &press(KeyCode::Char('t'), KeyModifiers::CONTROL)),
            Some(Action::OpenBrowser)
        );
        assert_eq!(action(View::Screen, &plain('t')), None, "a letter is for the prompt");
        assert_eq!(
            action(View::Prompt, &press(KeyCode::Enter, KeyModifiers::ALT)),
            Some(Action::NewLine)
        );
    }

    /// A footer names each key as the table binds it in that view, and leaves out an
    /// action with no key there.
    #[test]
    fn a_footer_shows_the_keys_the_table_binds() {
        let offers = [
            Offer::ready(Action::Previous, "select"),
            Offer::ready(Action::Restore, "restores"),
            Offer::when(Action::Pin, "pins", Err("not a tool result".into())),
            Offer::ready(Action::Close, "closes"),
            Offer::ready(Action::SummariseUpTo, "nowhere here"),
        ];
        assert_eq!(
            footer(View::Context, &offers).to_string(),
            "↑↓ select · r restores · p pins · Esc closes"
        );
        assert_eq!(key_in(View::Screen, Action::OpenBrowser).as_deref(), Some("Ctrl+T"));
        assert_eq!(key_in(View::Tree, Action::Fold).as_deref(), Some("Space"));
    }

    /// No key means two things in one view.
    #[test]
    fn no_key_is_bound_twice_in_a_view() {
        let all: Vec<&(View, Key, Action)> = SCREEN
            .iter()
            .chain(VIEWS.iter().flat_map(|(_, rows)| rows.iter()))
            .flat_map(|row| row.bindings.iter())
            .collect();
        for (i, (view, key, first)) in all.iter().enumerate() {
            for (other_view, other_key, second) in &all[i + 1..] {
                assert!(
                    !(view == other_view && key == other_key),
                    "{key:?} in {view:?}: {first:?} and {second:?}"
                );
            }
        }
    }
}
