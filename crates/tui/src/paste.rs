//! Pastes the terminal did not bracket. Without bracketed paste a paste arrives as
//! keys, its newlines as Enter, which would send its first line at once and merge the
//! rest. A hand does not press two keys within [`SETTLE`] of each other; a paste
//! delivers thousands that way. So plain keys are held for [`SETTLE`]: one that no
//! other follows that soon is a key; a run of them is a paste, gathered (across the
//! pieces a terminal delivers it in, up to [`CONTINUE`] apart) into one
//! [`Event::Paste`], whose Enters are newlines. Nothing is sent until an Enter
//! pressed on its own.

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// How close behind the previous plain key one must come to start a paste. Typing,
/// key repeat and rollover keep keys 25 ms or more apart.
pub const SETTLE: Duration = Duration::from_millis(15);

/// How long a paste under way may pause between two of its pieces.
pub const CONTINUE: Duration = Duration::from_millis(60);

#[derive(Debug, Default)]
pub struct BurstDetector {
    /// Plain keys read but not yet known to be typing or a paste.
    held: Vec<(Instant, Event)>,
    /// The paste being gathered.
    paste: String,
    /// When the last plain key was read.
    last_plain: Option<Instant>,
}

impl BurstDetector {
    /// Input events as read, each with the time it was read, in order; what can be
    /// handed on now. With `to_prompt` false (a view or a question has the keys) keys
    /// are never held or gathered.
    pub fn take(&mut self, events: Vec<(Instant, Event)>, to_prompt: bool) -> Vec<Event> {
        let mut out = Vec::with_capacity(events.len());
        for (read_at, event) in events {
            let typed = plain_key(&event).filter(|_| to_prompt);
            let gap = self
                .last_plain
                .map(|previous| read_at.saturating_duration_since(previous));
            match typed {
                Some(c) if !self.paste.is_empty() && gap.is_some_and(|gap| gap < CONTINUE) => self.paste.push(c),
                Some(c) if !self.held.is_empty() && gap.is_some_and(|gap| gap < SETTLE) => {
                    for (_, held) in self.held.drain(..) {
                        self.paste.extend(plain_key(&held));
                    }
                    self.paste.push(c);
                }
                Some(_) => {
                    self.release(&mut out);
                    self.held.push((read_at, event));
                }
                None => {
                    self.release(&mut out);
                    out.push(event);
                }
            }
            if typed.is_some() {
                self.last_plain = Some(read_at);
            }
        }
        out
    }

    /// What is held and due at `now`: keys no other key followed within [`SETTLE`],
    /// a paste no piece followed within [`CONTINUE`].
    pub fn due(&mut self, now: Instant) -> Vec<Event> {
        let mut out = Vec::new();
        if self.deadline().is_some_and(|deadline| now >= deadline) {
            self.release(&mut out);
        }
        out
    }

    /// When [`BurstDetector::due`] has something to hand on, if anything is held.
    pub fn deadline(&self) -> Option<Instant> {
        let last = self.last_plain?;
        if !self.paste.is_empty() {
            Some(last + CONTINUE)
        } else if !self.held.is_empty() {
            Some(last + SETTLE)
        } else {
            None
        }
    }

    /// Hand on the gathered paste, then the held keys, in the order they came. A
    /// burst of one line and then Enter is a line typed faster than a hand types (a
    /// multiplexer's `send-keys`, a typing tool) and sent, as a shell takes it: its
    /// text, then the Enter. An Enter within a burst makes it a paste of lines.
    fn release(&mut self, out: &mut Vec<Event>) {
        if !self.paste.is_empty() {
            let paste = std::mem::take(&mut self.paste);
            match paste.strip_suffix('\n') {
                Some(line) if !line.is_empty() && !line.contains('\n') => {
                    out.push(Event::Paste(line.to_string()));
                    out.push(Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
                }
                _ => out.push(Event::Paste(paste)),
            }
        }
        out.extend(self.held.drain(..).map(|(_, event)| event));
    }
}

/// The character a key press types, if it is a plain one: a character (Shift
/// allowed), Enter (or the Ctrl+J a line feed reads as in raw mode) as a newline, Tab.
fn plain_key(event: &Event) -> Option<char> {
    let Event::Key(KeyEvent {
        code,
        modifiers,
        kind: KeyEventKind::Press | KeyEventKind::Repeat,
        ..
    }) = event
    else {
        return None;
    };
    let plain = modifiers.difference(KeyModifiers::SHIFT).is_empty();
    match code {
        KeyCode::Char(c) if plain => Some(*c),
        KeyCode::Char('j') if *modifiers == KeyModifiers::CONTROL => Some('\n'),
        KeyCode::Enter if modifiers.is_empty() => Some('\n'),
        KeyCode::Tab if modifiers.is_empty() => Some('\t'),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: char) -> Event {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\t' => KeyCode::Tab,
            c => KeyCode::Char(c),
        };
        Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    /// `text` as keys read `gap` apart from `start`.
    fn keys(text: &str, start: Instant, gap: Duration) -> Vec<(Instant, Event)> {
        text.chars()
            .enumerate()
            .map(|(at, c)| (start + gap * at as u32, key(c)))
            .collect()
    }

    #[test]
    fn a_paste_in_pieces_is_one_paste_and_an_enter_after_it_sends() {
        let mut detector = BurstDetector::default();
        let start = Instant::now();
        let fast = Duration::from_micros(20);
        assert_eq!(detector.take(keys("first line\nsecond\n", start, fast), true), vec![]);
        // The terminal's next piece, 30 ms on, belongs to the same paste.
        let next = start + Duration::from_millis(30);
        assert_eq!(detector.take(keys("third", next, fast), true), vec![]);
        assert_eq!(detector.due(next + Duration::from_millis(10)), vec![], "not yet over");
        let over = detector.deadline().expect("a paste is held");
        assert_eq!(
            detector.due(over),
            vec![Event::Paste("first line\nsecond\nthird".into())]
        );
        assert_eq!(detector.deadline(), None);
        // The Enter the user presses after it is an Enter.
        let enter_at = over + Duration::from_millis(300);
        assert_eq!(detector.take(vec![(enter_at, key('\n'))], true), vec![]);
        assert_eq!(detector.due(enter_at + SETTLE), vec![key('\n')]);
    }

    /// A line and Enter in one burst (tmux's `send-keys "survey this workspace"
    /// Enter`, a fast typist with rollover) is sent; a burst with an Enter inside it
    /// is still a paste of lines, its Enters newlines.
    #[test]
    fn a_line_and_enter_in_one_burst_sends_and_lines_stay_a_paste() {
        let mut detector = BurstDetector::default();
        let start = Instant::now();
        let fast = Duration::from_micros(200);
        assert_eq!(
            detector.take(keys("survey this workspace\n", start, fast), true),
            vec![]
        );
        let over = detector.deadline().expect("held");
        assert_eq!(
            detector.due(over),
            vec![Event::Paste("survey this workspace".into()), key('\n')]
        );
        let later = over + Duration::from_secs(1);
        assert_eq!(detector.take(keys("rm -rf build\nls\n", later, fast), true), vec![]);
        let over = detector.deadline().expect("held");
        assert_eq!(detector.due(over), vec![Event::Paste("rm -rf build\nls\n".into())]);
    }

    #[test]
    fn typing_is_keys_in_order() {
        let mut detector = BurstDetector::default();
        let start = Instant::now();
        let mut handed = Vec::new();
        for (at, event) in keys("hi\n", start, Duration::from_millis(60)) {
            handed.extend(detector.take(vec![(at, event)], true));
            handed.extend(detector.due(at + Duration::from_millis(20)));
        }
        assert_eq!(handed, vec![key('h'), key('i'), key('\n')]);
    }

    #[test]
    fn keys_for_a_view_are_never_held_and_a_control_key_ends_a_paste() {
        let mut detector = BurstDetector::default();
        let start = Instant::now();
        let fast = Duration::from_micros(20);
        let burst = keys("nnnn", start, fast);
        let expected: Vec<Event> = burst.iter().map(|(_, event)| event.clone()).collect();
        assert_eq!(detector.take(burst, false), expected, "a view gets its keys at once");
        let later = start + Duration::from_secs(1);
        let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        let mut mixed = keys("abc", later, fast);
        mixed.push((later + fast * 3, ctrl_c.clone()));
        assert_eq!(detector.take(mixed, true), vec![Event::Paste("abc".into()), ctrl_c]);
        assert_eq!(detector.deadline(), None, "nothing is left held");
    }
}
