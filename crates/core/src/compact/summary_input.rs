//! What the summariser reads: the record as text within `summary_input_chars`, room
//! given by value rather than by position. First whole: what the user and the model
//! wrote, every tool call (name and input), and the lines of every failed result that
//! say what went wrong (errors, exit codes). Then the rest of the failed results, and
//! the lines of the other results that say what happened (errors, measured figures).
//! Then the rest of those results. What does not fit is trimmed head-and-tail, the
//! longest first. Every stage that summarises, in the foreground or the background,
//! reads this.

use super::loss::{is_error_line, is_measured_line};
use super::render::{Piece, pieces, role_name};
use crate::message::Message;
use crate::text::prefix_chars;

/// How valuable a part is: lower tiers get room first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tier {
    /// Requests, the model's text, calls, and what went wrong in a failed result.
    Said,
    /// The rest of a failed result, and the lines of the others that say what happened.
    Outcome,
    /// The rest of a result.
    Body,
}

/// One part of the rendered text, whole or trimmed as room allows.
struct Part {
    tier: Tier,
    /// Text written before the part whatever room it gets (a label).
    label: &'static str,
    text: String,
    /// For a result: the tier of its lines that say what happened, and those lines,
    /// shown after it when it is trimmed.
    outcome: Option<(Tier, String)>,
}

/// `left_out` lines first (what could not be trusted), then `messages` as text, at
/// most `cap` characters.
pub fn render(messages: &[Message], left_out: &[String], cap: usize) -> String {
    let mut notes = String::new();
    for line in left_out {
        notes.push_str(&format!("[scratchpad: {line}]\n"));
    }
    let notes = prefix_chars(&notes, cap / 4).to_string();
    let cap = cap.saturating_sub(notes.chars().count());
    let layout = layout(messages);
    let whole: usize = layout.iter().map(|item| item.chars()).sum();
    let body = if whole <= cap {
        assemble(&layout, None)
    } else {
        fitted(&layout, cap)
    };
    notes + &body
}

/// A message header or a part.
enum Item {
    Header(String),
    Part(Part),
}

impl Item {
    fn chars(&self) -> usize {
        match self {
            Item::Header(text) => text.chars().count(),
            Item::Part(part) => part.label.chars().count() + part.text.chars().count() + 1,
        }
    }
}

fn layout(messages: &[Message]) -> Vec<Item> {
    let mut items = Vec::new();
    for message in messages {
        items.push(Item::Header(format!(
            "\n{}:\n",
            role_name(message.role()).to_uppercase()
        )));
        for piece in pieces(message) {
            match piece {
                Piece::Text(text) => items.push(part(Tier::Said, "", text.to_string())),
                Piece::Call { name, input, .. } => {
                    items.push(part(Tier::Said, "[tool call] ", format!("{name} {input}")));
                }
                Piece::Result { text, error: true, .. } => {
                    items.push(result(Tier::Outcome, Tier::Said, "[tool error] ", text.into_owned()));
                }
                Piece::Result { text, error: false, .. } => {
                    items.push(result(Tier::Body, Tier::Outcome, "[tool result] ", text.into_owned()));
                }
                Piece::Unknown(kind) => items.push(part(Tier::Said, "", format!("[{kind} block]"))),
            }
        }
    }
    items
}

fn part(tier: Tier, label: &'static str, text: String) -> Item {
    Item::Part(Part {
        tier,
        label,
        text,
        outcome: None,
    })
}

/// A tool result: its text at `tier`, its lines that say what happened at `outcome`.
fn result(tier: Tier, outcome: Tier, label: &'static str, text: String) -> Item {
    let lines = outcome_lines(&text);
    Item::Part(Part {
        tier,
        label,
        outcome: (!lines.is_empty()).then_some((outcome, lines)),
        text,
    })
}

/// The lines of a result that say what happened.
fn outcome_lines(text: &str) -> String {
    text.lines()
        .filter(|line| is_error_line(line) || is_measured_line(line) || line.contains("[exit code"))
        .map(|line| prefix_chars(line.trim(), 300))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The layout within `cap`: headers whole, then each tier shares what is left, the
/// longest parts trimmed first (a water level), so no part shrinks while a longer one
/// keeps more.
fn fitted(layout: &[Item], cap: usize) -> String {
    // A trimmed part's note and the rounding cost a few characters each; the loop
    // asks for less until the text fits.
    let mut budget = cap;
    for _ in 0..6 {
        let allotted = allot(layout, budget);
        let text = assemble(layout, Some(&allotted));
        let chars = text.chars().count();
        if chars <= cap {
            return text;
        }
        budget = budget.saturating_sub(chars - cap + 64);
    }
    let text = assemble(layout, Some(&allot(layout, budget)));
    prefix_chars(&text, cap).to_string()
}

/// Room for each part (index in `layout`; the outcome lines of a result as the same
/// index with `Tier::Outcome`): characters of text it may keep.
struct Allotted {
    parts: Vec<usize>,
    outcomes: Vec<usize>,
}

fn allot(layout: &[Item], budget: usize) -> Allotted {
    let fixed: usize = layout
        .iter()
        .map(|item| match item {
            Item::Header(text) => text.chars().count(),
            Item::Part(part) => part.label.chars().count() + 1,
        })
        .sum();
    let mut left = budget.saturating_sub(fixed);
    let mut parts = vec![0; layout.len()];
    let mut outcomes = vec![0; layout.len()];
    for tier in [Tier::Said, Tier::Outcome, Tier::Body] {
        // (index in the layout, whether it is the outcome lines, length)
        let mut wanted: Vec<(usize, bool, usize)> = Vec::new();
        for (at, item) in layout.iter().enumerate() {
            let Item::Part(part) = item else { continue };
            if part.tier == tier {
                wanted.push((at, false, part.text.chars().count()));
            }
            if let Some((outcome_tier, lines)) = &part.outcome
                && *outcome_tier == tier
            {
                wanted.push((at, true, lines.chars().count()));
            }
        }
        let lengths: Vec<usize> = wanted.iter().map(|(_, _, length)| *length).collect();
        let shares = water_fill(&lengths, left);
        for ((at, outcome, _), share) in wanted.iter().zip(&shares) {
            if *outcome {
                outcomes[*at] = *share;
            } else {
                parts[*at] = *share;
            }
        }
        left -= shares.iter().sum::<usize>();
    }
    Allotted { parts, outcomes }
}

/// Shares of `budget` for parts of `lengths`: each gets all it has or the same level
/// as every other part that does not fit, never more than `budget` in all.
pub(crate) fn water_fill(lengths: &[usize], budget: usize) -> Vec<usize> {
    let whole: usize = lengths.iter().sum();
    if whole <= budget {
        return lengths.to_vec();
    }
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&at| lengths[at]);
    let mut left = budget;
    let mut level = 0;
    for (rank, &at) in order.iter().enumerate() {
        let sharing = lengths.len() - rank;
        let even = left / sharing;
        if lengths[at] <= even {
            left -= lengths[at];
        } else {
            level = even;
            break;
        }
    }
    lengths.iter().map(|&length| length.min(level)).collect()
}

fn assemble(layout: &[Item], allotted: Option<&Allotted>) -> String {
    let mut out = String::new();
    for (at, item) in layout.iter().enumerate() {
        match item {
            Item::Header(text) => out.push_str(text),
            Item::Part(part) => {
                out.push_str(part.label);
                let room = allotted.map_or(usize::MAX, |allotted| allotted.parts[at]);
                let length = part.text.chars().count();
                if room >= length {
                    out.push_str(&part.text);
                } else {
                    out.push_str(&head_and_tail(&part.text, length, room));
                    let outcome_room = allotted.map_or(0, |allotted| allotted.outcomes[at]);
                    if let Some((_, lines)) = part.outcome.as_ref().filter(|_| outcome_room > 0) {
                        out.push_str("\n[lines of it that say what happened:]\n");
                        out.push_str(prefix_chars(lines, outcome_room));
                    }
                }
                out.push('\n');
            }
        }
    }
    out
}

/// `text` cut to about `room` characters: its start and its end, and how much of the
/// middle is left out.
fn head_and_tail(text: &str, length: usize, room: usize) -> String {
    let note_room = 48;
    if room <= note_room {
        return format!("[{length} chars left out]");
    }
    let keep = room - note_room;
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let tail_start = text
        .char_indices()
        .nth(length - tail)
        .map_or(text.len(), |(byte, _)| byte);
    format!(
        "{}\n[... {} chars left out ...]\n{}",
        prefix_chars(text, head),
        length - head - tail,
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::{ContentBlock, Role};

    #[test]
    fn water_fill_levels_the_longest_parts() {
        assert_eq!(water_fill(&[10, 20, 30], 100), vec![10, 20, 30]);
        assert_eq!(water_fill(&[10, 50, 90], 70), vec![10, 30, 30]);
        assert_eq!(water_fill(&[5, 5], 0), vec![0, 0]);
        assert!(water_fill(&[100, 3, 77, 41], 90).iter().sum::<usize>() <= 90);
    }

    /// Everything said, every call and every error survives a history ten times the
    /// cap; results give way, keeping their lines that say what happened.
    #[test]
    fn room_goes_by_value() {
        let mut messages = vec![Message::user_text(
            "Goal: make the lexer stream. Do NOT touch config/prod.toml.",
        )];
        for n in 0..20 {
            messages.push(Message::blocks(
                Role::Assistant,
                vec![
                    ContentBlock::text(format!("Decision {n}: read the next file.")),
                    ContentBlock::tool_use(
                        format!("t{n}"),
                        "bash",
                        json!({"command": format!("cargo test part{n}")}),
                    ),
                ],
            ));
            let body = format!(
                "{}\ntest result: ok. 12 passed; finished in {n}.5s\n{}",
                "noise\n".repeat(800),
                "more noise\n".repeat(400)
            );
            let failed = n == 7 || n == 9;
            let text = match n {
                7 => format!("error[E0308]: mismatched types in round {n}\n[exit code 101]"),
                // A long failed build: its error line is in the middle.
                9 => format!(
                    "{}error[E0599]: no method named `peek9` found\n{}[exit code 101]",
                    "   Compiling lexer\n".repeat(900),
                    "   Compiling parser\n".repeat(900)
                ),
                _ => body,
            };
            messages.push(Message::blocks(
                Role::User,
                vec![ContentBlock::tool_result(format!("t{n}"), text, failed)],
            ));
        }
        let whole = render(&messages, &[], usize::MAX);
        assert!(whole.chars().count() > 100_000);
        let text = render(
            &messages,
            &["x.jsonl was left out of the summary input: changed".into()],
            10_000,
        );
        assert!(text.chars().count() <= 10_000, "{}", text.chars().count());
        assert!(text.starts_with("[scratchpad: x.jsonl was left out"));
        assert!(text.contains("Do NOT touch config/prod.toml."));
        for n in 0..20 {
            assert!(text.contains(&format!("Decision {n}: read the next file.")), "{n}");
            assert!(text.contains(&format!("cargo test part{n}")), "{n}");
            if n != 7 && n != 9 {
                assert!(text.contains(&format!("finished in {n}.5s")), "{n}");
            }
        }
        assert!(text.contains("error[E0308]: mismatched types in round 7\n[exit code 101]"));
        assert!(text.contains("error[E0599]: no method named `peek9` found"));
        assert!(text.contains("chars left out"));
    }

    #[test]
    fn a_short_history_is_rendered_whole_and_a_tiny_cap_holds() {
        let messages = vec![Message::user_text("go"), Message::assistant_text("ok")];
        assert_eq!(render(&messages, &[], 1_000), "\nUSER:\ngo\n\nASSISTANT:\nok\n");
        let long = vec![Message::user_text("x".repeat(5_000)); 40];
        assert!(render(&long, &[], 1_000).chars().count() <= 1_000);
    }
}
