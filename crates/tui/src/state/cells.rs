//! What the chat and the tools pane show: one entry per message, marker or notice,
//! and each tool call with a short preview of its output.

use std::time::{Duration, Instant};

use crate::compact::StageEvent;
use crate::protocol::ToolStatus;
use crate::terminal_text::screen_safe;

#[derive(Clone, Debug, PartialEq)]
pub enum ChatEntry {
    User(String),
    /// A request typed with a large paste collapsed (`[pasted 58 lines #1]`): shown
    /// as it was typed, whole when expanded.
    Pasted {
        shown: String,
        full: String,
    },
    Assistant {
        text: String,
        streaming: bool,
    },
    /// A compaction stage fired here; later firings of the same stage in the same
    /// turn fold into it (newest last), shown as one line with a count that expands.
    Marker(MarkerRun),
    /// Something the app says (compaction requested, retries, resumed session).
    Notice(String),
    /// What a compaction would do, from `/compact --preview`: nothing was written.
    Preview(Vec<StageEvent>),
    /// A tool call, by its place in the tool list: shown in the chat only when the
    /// tool pane does not fit, as one line that expands.
    Tool(usize),
    /// The project's instruction files: at the start, and each time they changed.
    Instructions(crate::protocol::InstructionsNote),
}

impl ChatEntry {
    /// The request that opens the chat, when nothing but notices comes before it:
    /// there is nothing before it to summarise.
    pub fn opening_request(entries: &[ChatEntry]) -> Option<usize> {
        let first = entries
            .iter()
            .position(|entry| !matches!(entry, ChatEntry::Notice(_) | ChatEntry::Instructions(_)))?;
        Self::request_of(&entries[first]).map(|_| first)
    }

    /// The text a request was sent with (a collapsed paste's whole text); `None` for
    /// anything else.
    pub fn request_of(&self) -> Option<&str> {
        match self {
            ChatEntry::User(text) | ChatEntry::Pasted { full: text, .. } => Some(text),
            _ => None,
        }
    }

    /// The files a marker links to: every member's, oldest first, each once.
    pub fn paths(&self) -> Vec<String> {
        match self {
            ChatEntry::Marker(run) => run.paths(),
            _ => Vec::new(),
        }
    }
}

/// A compaction as `/context` lists it: its stage, what it took the estimate from and
/// to, and whether it was undone since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compaction {
    pub stage: crate::compact::Stage,
    pub chars_before: usize,
    pub chars_after: usize,
    pub undone: bool,
    /// A summary's retention line (`keeps 18/20: paths 6/6, …`).
    pub retention: Option<String>,
    /// Characters it freed (negative: grew).
    pub freed: Option<i64>,
    /// Turns and model calls since the compaction before it.
    pub turns_since_previous: Option<usize>,
    pub calls_since_previous: Option<usize>,
    /// A summarising stage's summary, in characters.
    pub summary_chars: Option<usize>,
}

/// The firings one marker shows, and which of them were undone since.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkerRun {
    pub events: Vec<StageEvent>,
    /// Positions in `events` of the firings undone.
    pub undone: std::collections::BTreeSet<usize>,
    /// The next call's prompt cache missed where this run changed the history.
    pub cache_miss: Option<crate::protocol::CacheReport>,
}

impl MarkerRun {
    pub fn new(event: StageEvent) -> Self {
        MarkerRun {
            events: vec![event],
            undone: Default::default(),
            cache_miss: None,
        }
    }

    pub fn newest(&self) -> Option<&StageEvent> {
        self.events.last()
    }

    pub fn is_undone(&self, at: usize) -> bool {
        self.undone.contains(&at)
    }

    /// Every firing of the marker was undone.
    pub fn all_undone(&self) -> bool {
        self.undone.len() == self.events.len()
    }

    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        for path in self.events.iter().flat_map(|event| &event.paths) {
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
        paths
    }

    /// What the marker's own firings took out of the context, net (negative when they
    /// added more than they took, as a summary longer than its input would): the
    /// context may have grown between them, which is not theirs to answer for.
    pub fn net_chars_out(&self) -> i64 {
        self.events
            .iter()
            .map(|event| event.chars_before as i64 - event.chars_after as i64)
            .sum()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum CallState {
    /// Next in its batch, not yet running: asked about, or about to start.
    Pending,
    Running {
        since: Instant,
    },
    Done {
        status: ToolStatus,
        took: Duration,
    },
}

/// Lines of a tool's output the app keeps (and the pane shows when a call expands).
pub const OUTPUT_PREVIEW_LINES: usize = 12;

/// Characters of each kept line.
const OUTPUT_PREVIEW_LINE_CHARS: usize = 400;

/// What the app keeps of a tool's output: its first lines, made safe for the
/// terminal, and how long it was. The whole output is the agent's (and, once a stage
/// saved it, on disk at the call's `saved_path`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputPreview {
    pub head: Vec<String>,
    pub lines: usize,
    pub chars: usize,
}

impl OutputPreview {
    pub fn of(output: &str) -> Self {
        OutputPreview {
            head: output
                .lines()
                .take(OUTPUT_PREVIEW_LINES)
                .map(|line| screen_safe(crate::text::prefix_chars(line, OUTPUT_PREVIEW_LINE_CHARS)).into_owned())
                .collect(),
            lines: output.lines().count(),
            chars: output.chars().count(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub summary: String,
    pub state: CallState,
    pub output: OutputPreview,
    /// Set when a compaction stage saved this result's full text.
    pub saved_path: Option<String>,
    /// The turn that made the call (1 for the first request of the session).
    pub turn: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_keeps_a_preview_of_an_output_not_the_output() {
        let long = (0..5_000).map(|n| format!("line {n}\n")).collect::<String>();
        let preview = OutputPreview::of(&long);
        assert_eq!(preview.head.len(), OUTPUT_PREVIEW_LINES);
        assert_eq!((preview.lines, preview.chars), (5_000, long.chars().count()));
        let wide = OutputPreview::of(&format!("\u{1b}]52;c;x\u{7}{}", "w".repeat(10_000)));
        assert!(wide.head[0].chars().count() <= OUTPUT_PREVIEW_LINE_CHARS);
        assert!(!wide.head[0].contains('\u{1b}'), "made safe for the terminal");
    }
}
