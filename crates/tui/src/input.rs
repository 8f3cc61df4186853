//! The prompt editor: a multi-line `ratatui-textarea` with prompt history on Up/Down
//! (its own history is undo/redo); what typing `/` lists is the [finder](super::finder).

use super::commands::SlashCommand;
use super::keymap::{self, Action, View};
use super::theme;
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::{Block, Borders};
use ratatui_textarea::TextArea;
use unicode_width::UnicodeWidthStr;

/// A one-line text a view edits in place (a filter, a label): Backspace takes the last
/// character off, a plain or shifted character goes on the end. Whether `key` was one.
pub fn edit_line(text: &mut String, key: &KeyEvent) -> bool {
    use crossterm::event::{KeyCode, KeyModifiers};
    match key.code {
        KeyCode::Backspace => {
            text.pop();
            true
        }
        KeyCode::Char(c) if !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) => {
            text.push(c);
            true
        }
        _ => false,
    }
}

/// What an empty prompt says.
const PLACEHOLDER: &str = "Ask scratchpad… (Enter sends, Alt+Enter newline, / for commands)";

/// What an empty prompt says in a read-only view, where nothing typed is sent.
const READ_ONLY_PLACEHOLDER: &str =
    "Look around with / commands (/context, /tree, /compact --preview); nothing is sent";

/// What the prompt is doing, for its title.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptState {
    Ready,
    /// A turn runs; Enter queues the text.
    Busy,
    /// The text will be sent when the turn ends.
    Queued,
    /// A read-only view of a saved session: nothing typed is sent.
    ReadOnly,
    /// Why a call is denied: Enter denies with these words.
    Reason,
}

pub enum InputAction {
    None,
    Submit(String),
}

pub struct InputBox {
    textarea: TextArea<'static>,
    /// Large pastes, shown in the prompt as `[pasted N lines #k]` and sent whole.
    pastes: Vec<Paste>,
    history: Vec<String>,
    /// Position in `history` while browsing it with Up/Down.
    browsing: Option<usize>,
    draft: String,
    completion: usize,
    /// The last text sent as it was shown, when a collapsed paste made it differ from
    /// what was sent: the chat shows the request as it was typed.
    sent_shown: Option<String>,
}

impl Default for InputBox {
    fn default() -> Self {
        let mut input = InputBox {
            textarea: TextArea::default(),
            pastes: Vec::new(),
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
            completion: 0,
            sent_shown: None,
        };
        input.clear();
        input
    }
}

impl InputBox {
    /// Empty the prompt (its history stays).
    pub fn clear(&mut self) {
        self.set_text("");
    }

    /// Replace what the prompt holds (the cursor goes to its end).
    pub fn set_text(&mut self, text: &str) {
        let lines: Vec<String> = text.split('\n').map(str::to_string).collect();
        self.pastes.clear();
        self.textarea = TextArea::new(lines);
        // A long request wraps, to be read back whole, rather than scrolling sideways.
        self.textarea.set_wrap_mode(ratatui_textarea::WrapMode::WordOrGlyph);
        self.textarea.set_cursor_line_style(Style::default());
        self.textarea.set_placeholder_text(PLACEHOLDER);
        self.textarea.move_cursor(ratatui_textarea::CursorMove::Bottom);
        self.textarea.move_cursor(ratatui_textarea::CursorMove::End);
    }

    /// What the prompt would send: its text with each collapsed paste whole again.
    pub fn text(&self) -> String {
        let shown = self.textarea.lines().join("\n");
        self.pastes
            .iter()
            .fold(shown, |text, paste| text.replacen(&paste.label, &paste.text, 1))
    }

    /// How the text just sent looked in the prompt, when a collapsed paste made it
    /// differ from what was sent.
    pub fn take_sent_shown(&mut self) -> Option<String> {
        self.sent_shown.take()
    }

    pub fn is_empty(&self) -> bool {
        self.textarea.is_empty()
    }

    /// Rows the prompt takes at `width` columns (its border included): its lines as
    /// they wrap, at most six.
    pub fn height(&self, width: u16) -> u16 {
        let inner = usize::from(width.saturating_sub(2)).max(1);
        let rows: usize = self
            .textarea
            .lines()
            .iter()
            .map(|line| line.width().div_ceil(inner).max(1))
            .sum();
        u16::try_from(rows).unwrap_or(u16::MAX).clamp(1, 6) + 2
    }

    /// Pasted text goes in at the cursor; a large paste as one short label that is
    /// sent whole (Ctrl+O shows it in full).
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let Some(size) = collapsed_size(&text) else {
            self.textarea.insert_str(text);
            return;
        };
        let number = self.pastes.len() + 1;
        let label = format!("[pasted {size} #{number}]");
        self.textarea.insert_str(&label);
        self.pastes.push(Paste { label, text });
    }

    /// Show every collapsed paste in full (Ctrl+O).
    pub fn expand_pastes(&mut self) {
        if !self.pastes.is_empty() {
            let text = self.text();
            self.set_text(&text);
        }
    }

    /// The commands the `/` finder lists for what is typed.
    pub fn completions(&self) -> Vec<SlashCommand> {
        super::finder::matches(&self.text())
    }

    /// Which of [`InputBox::completions`] is highlighted.
    pub fn completion(&self) -> usize {
        self.completion
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> InputAction {
        let single_line = self.textarea.lines().len() == 1;
        let tab = keymap::action(View::Screen, &key) == Some(Action::CompleteOrCycleFocus);
        match keymap::action(View::Prompt, &key) {
            Some(Action::NewLine) => self.textarea.insert_newline(),
            Some(Action::ExpandPastes) => self.expand_pastes(),
            // As in a shell: delete from the cursor to the start of the line.
            Some(Action::DeleteToLineStart) => {
                self.textarea.delete_line_by_head();
            }
            Some(Action::Send) => {
                let completions = self.completions();
                if let Some(command) = completions.get(self.completion.min(completions.len().saturating_sub(1))) {
                    self.set_text(command.name());
                    self.completion = 0;
                }
                let text = self.text();
                if text.trim().is_empty() {
                    return InputAction::None;
                }
                if self.history.last() != Some(&text) {
                    self.history.push(text.clone());
                }
                self.browsing = None;
                let shown = self.textarea.lines().join("\n");
                self.sent_shown = (shown != text).then_some(shown);
                self.clear();
                return InputAction::Submit(text);
            }
            _ if tab => {
                let completions = self.completions();
                if let Some(command) = completions.get(self.completion.min(completions.len().saturating_sub(1))) {
                    self.set_text(&format!("{} ", command.name()));
                    self.completion = 0;
                }
            }
            Some(Action::Previous) if !self.completions().is_empty() => {
                self.completion = self.completion.saturating_sub(1);
            }
            Some(Action::Next) if !self.completions().is_empty() => {
                self.completion = (self.completion + 1).min(self.completions().len() - 1);
            }
            Some(Action::Previous) if single_line && !self.history.is_empty() => {
                let at = match self.browsing {
                    None => {
                        self.draft = self.text();
                        self.history.len() - 1
                    }
                    Some(at) => at.saturating_sub(1),
                };
                self.browsing = Some(at);
                let text = self.history[at].clone();
                self.set_text(&text);
            }
            Some(Action::Next) if single_line && self.browsing.is_some() => {
                let next = self.browsing.map_or(0, |at| at + 1);
                if next >= self.history.len() {
                    self.browsing = None;
                    let draft = std::mem::take(&mut self.draft);
                    self.set_text(&draft);
                } else {
                    self.browsing = Some(next);
                    let text = self.history[next].clone();
                    self.set_text(&text);
                }
            }
            _ => {
                self.textarea.input(key);
                self.completion = 0;
            }
        }
        InputAction::None
    }

    pub fn render(&mut self, frame: &mut Frame<'_>, area: Rect, state: PromptState, focused: bool) {
        self.textarea.set_placeholder_text(match state {
            PromptState::ReadOnly => READ_ONLY_PLACEHOLDER,
            _ => PLACEHOLDER,
        });
        let title = match state {
            PromptState::Ready => " request ",
            PromptState::Busy => " request · Esc cancels the turn · Enter queues it ",
            PromptState::Queued => " queued · sent when the turn ends · edit it freely ",
            PromptState::ReadOnly => " read-only view · nothing typed is sent · / commands look around ",
            PromptState::Reason => {
                " why not? · Enter denies with these words, which the model reads · Esc back to the question "
            }
        };
        self.textarea.set_block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(Style::default().fg(if focused {
                    theme::palette().accent
                } else {
                    theme::palette().muted
                }))
                .title(title),
        );
        self.textarea
            .set_placeholder_style(Style::default().fg(theme::palette().muted));
        frame.render_widget(&self.textarea, area);
    }
}

/// A paste of this many lines, or of this many characters, is shown collapsed.
const COLLAPSE_LINES: usize = 10;
const COLLAPSE_CHARS: usize = 2_000;

/// What a text too large to show is said to be (`12 lines`, `4000 chars`), where it is
/// that large: the one rule for the prompt's pastes and what shows them again.
pub fn collapsed_size(text: &str) -> Option<String> {
    let lines = text.lines().count();
    if lines < COLLAPSE_LINES && text.chars().count() < COLLAPSE_CHARS {
        return None;
    }
    Some(if lines > 1 {
        format!("{lines} lines")
    } else {
        format!("{} chars", text.chars().count())
    })
}

/// A large paste: the label the prompt shows for it, and its text.
struct Paste {
    label: String,
    text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn type_text(input: &mut InputBox, text: &str) {
        for c in text.chars() {
            input.handle_key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn enter_sends_alt_enter_adds_a_line_and_up_down_browse_history() {
        let mut input = InputBox::default();
        type_text(&mut input, "first");
        input.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
        type_text(&mut input, "line");
        assert!(matches!(input.handle_key(key(KeyCode::Enter)), InputAction::Submit(t) if t == "first\nline"));
        type_text(&mut input, "second");
        assert!(matches!(input.handle_key(key(KeyCode::Enter)), InputAction::Submit(t) if t == "second"));
        type_text(&mut input, "draft");
        input.handle_key(key(KeyCode::Up));
        assert_eq!(input.text(), "second");
        input.handle_key(key(KeyCode::Down));
        assert_eq!(input.text(), "draft");
        assert!(matches!(input.handle_key(key(KeyCode::Enter)), InputAction::Submit(_)));
        assert!(
            matches!(input.handle_key(key(KeyCode::Enter)), InputAction::None),
            "empty input sends nothing"
        );
    }

    #[test]
    fn ctrl_u_deletes_to_the_start_of_the_line() {
        let mut input = InputBox::default();
        type_text(&mut input, "keep this");
        input.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(input.text(), "");
        type_text(&mut input, "again");
        input.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::NONE));
        input.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(input.text(), "n", "only what is before the cursor goes");
    }

    #[test]
    fn slash_commands_complete() {
        let mut input = InputBox::default();
        type_text(&mut input, "/co");
        let names: Vec<&str> = input.completions().iter().map(|c| c.name()).collect();
        assert_eq!(names, vec!["/compact", "/context", "/count"]);
        input.handle_key(key(KeyCode::Down));
        input.handle_key(key(KeyCode::Tab));
        assert_eq!(input.text(), "/context ");
        assert!(input.completions().is_empty());
    }

    #[test]
    fn a_large_paste_is_shown_collapsed_and_sent_whole() {
        let mut input = InputBox::default();
        type_text(&mut input, "look at this: ");
        let pasted: String = (1..=240).map(|n| format!("line {n}\n")).collect();
        input.paste(&pasted);
        type_text(&mut input, " thanks");
        assert_eq!(input.textarea.lines(), ["look at this: [pasted 240 lines #1] thanks"]);
        assert_eq!(input.height(80), 3, "one row, not 240");
        let expected = format!("look at this: {pasted} thanks");
        assert_eq!(input.text(), expected);
        let InputAction::Submit(sent) = input.handle_key(key(KeyCode::Enter)) else {
            panic!("Enter sends");
        };
        assert_eq!(sent, expected, "sent whole");
        assert!(input.is_empty());
        // A small paste goes in as it is.
        input.paste("two\nlines");
        assert_eq!(input.textarea.lines(), ["two", "lines"]);
    }

    #[test]
    fn ctrl_o_shows_a_collapsed_paste_in_full() {
        let mut input = InputBox::default();
        let long = "x".repeat(3_000);
        input.paste(&long);
        assert_eq!(input.textarea.lines(), ["[pasted 3000 chars #1]"]);
        input.handle_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
        assert_eq!(input.textarea.lines(), [long.as_str()]);
        assert_eq!(input.text(), long);
    }

    #[test]
    fn a_long_line_wraps_in_the_box() {
        let mut input = InputBox::default();
        type_text(&mut input, &"word ".repeat(40));
        assert_eq!(input.height(62), 2 + 4, "200 columns of text in a 60-column box");
        assert_eq!(input.textarea.wrap_mode(), ratatui_textarea::WrapMode::WordOrGlyph);
    }
}
