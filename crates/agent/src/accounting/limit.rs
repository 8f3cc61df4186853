//! The limit in force: the configured characters, or, with `auto`, what the window
//! leaves for the messages once the reply and the fixed part are set aside.

use super::{AUTO_WINDOW_PERCENT, MIN_REPLY_TOKENS};
use crate::compact::{MIN_CONTEXT_CHAR_LIMIT, short_count};

/// Below this share of what the window holds a configured limit earns a hint (which
/// says "a quarter").
const FAR_BELOW_PERCENT: usize = 25;

/// The least room an automatic limit gives the messages. After a summary (up to a
/// third of the limit) a turn needs room for one exchange (a request, a file read of
/// a couple of thousand characters and a reply), or it is summarised again at once.
pub const MIN_WORKING_CHARS: usize = 6_000;

/// Window sizes tried when saying how large a window would give the messages room.
const LARGER_WINDOWS: std::ops::RangeInclusive<u32> = 1..=10;

/// What the limit is compared with: the window, the reply's reserve and the fixed part.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    pub window_tokens: u64,
    pub max_tokens: u64,
    /// The messages' characters per token where the fixed part was counted, else the
    /// whole request's.
    pub chars_per_token: f64,
    pub fixed_chars: usize,
    /// The fixed part's tokens as the server counted them: set aside as they are,
    /// where without a count its characters are set aside at the request's ratio
    /// (the tool definitions' JSON packs fewer characters into a token than prose).
    pub fixed_tokens: Option<u64>,
}

impl Fit {
    /// Tokens kept free for the reply: its `max_tokens`, at most half the window.
    pub fn reply_reserve(&self) -> u64 {
        self.max_tokens.min(self.window_tokens / 2)
    }

    fn messages_chars(&self, prompt_tokens: u64) -> usize {
        let chars = match self.fixed_tokens {
            Some(fixed) => (prompt_tokens.saturating_sub(fixed) as f64 * self.chars_per_token) as usize,
            None => ((prompt_tokens as f64 * self.chars_per_token) as usize).saturating_sub(self.fixed_chars),
        };
        chars.max(MIN_CONTEXT_CHAR_LIMIT)
    }

    /// The fixed part in tokens: as counted, else its characters at the ratio.
    pub fn fixed_part_tokens(&self) -> u64 {
        self.fixed_tokens
            .unwrap_or_else(|| (self.fixed_chars as f64 / self.chars_per_token).ceil() as u64)
    }

    /// The most message characters a request can hold and still leave the reply room.
    pub fn holds_chars(&self) -> usize {
        self.messages_chars(self.window_tokens.saturating_sub(self.reply_reserve()))
    }

    /// The window's share, less the reply, in characters: the automatic limit
    /// wherever that leaves room for a turn.
    pub fn auto_chars(&self) -> usize {
        let share = self.window_tokens * AUTO_WINDOW_PERCENT / 100;
        self.messages_chars(share.saturating_sub(self.reply_reserve()))
    }

    /// What the whole window holds for the messages with the reply kept to a
    /// quarter of it: how far a small window can stretch.
    fn stretched_chars(&self) -> usize {
        let reserve = self.reply_reserve().min(self.window_tokens / 4).max(MIN_REPLY_TOKENS);
        self.messages_chars(self.window_tokens.saturating_sub(reserve))
    }

    /// The automatic limit: the window's share; where that leaves less than a turn
    /// needs, as much of [`MIN_WORKING_CHARS`] as the stretched window holds.
    pub fn auto_limit(&self) -> AutoLimit {
        let share = self.auto_chars();
        if share >= MIN_WORKING_CHARS {
            return AutoLimit::Share(share);
        }
        let chars = self.stretched_chars().min(MIN_WORKING_CHARS).max(share);
        if chars >= MIN_WORKING_CHARS {
            return AutoLimit::Stretched { chars, share };
        }
        let needs_tokens = LARGER_WINDOWS
            .map(|doubling| self.window_tokens << doubling)
            .find(|&window_tokens| {
                let larger = Fit { window_tokens, ..*self };
                larger.stretched_chars() >= MIN_WORKING_CHARS
            });
        AutoLimit::Cramped { chars, needs_tokens }
    }
}

/// How an automatic limit was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoLimit {
    /// The window's share ([`AUTO_WINDOW_PERCENT`]) less the reply and fixed part.
    Share(usize),
    /// The share left less than a turn needs: raised to [`MIN_WORKING_CHARS`], which
    /// the window holds with the reply kept to a quarter of it.
    Stretched { chars: usize, share: usize },
    /// Even the stretched window holds less than a turn needs: all it holds, and the
    /// window (a doubling of this one) that would give a turn room.
    Cramped { chars: usize, needs_tokens: Option<u64> },
}

impl AutoLimit {
    pub fn chars(self) -> usize {
        match self {
            AutoLimit::Share(chars) | AutoLimit::Stretched { chars, .. } | AutoLimit::Cramped { chars, .. } => chars,
        }
    }
}

/// How the limit was chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LimitChoice {
    /// `context_char_limit` as configured (the seed's 50,000 by default).
    #[default]
    Configured,
    /// `context_char_limit = "auto"` / `--limit auto`.
    Auto,
}

impl LimitChoice {
    /// How `limit` was chosen: automatic where the file or `--limit` said `auto`.
    pub fn of(limit: crate::compact::Limit) -> LimitChoice {
        if limit.auto {
            LimitChoice::Auto
        } else {
            LimitChoice::Configured
        }
    }
}

/// The limit in force and what to tell the user about it.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitDecision {
    pub chars: usize,
    pub note: LimitNote,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LimitNote {
    /// The configured limit fits the window comfortably.
    AsConfigured,
    /// Derived from the window: the label says how.
    Auto(String),
    /// The configured limit was above what the window holds.
    Clamped { configured: usize, label: String },
    /// The configured limit uses little of the window.
    FarBelow { configured: usize, holds: usize },
    /// Derived from a window too small for compaction to leave a turn room: every
    /// turn or nearly would be summarised.
    Cramped {
        chars: usize,
        window_tokens: u64,
        needs_tokens: Option<u64>,
    },
    /// The window cannot hold the fixed part (system prompt and tools) with a reply:
    /// every request would be refused, whatever the limit.
    WindowTooSmall { window_tokens: u64, fixed_tokens: u64 },
}

impl LimitNote {
    /// Whether it warns of trouble (a clamped or cramped limit, a window too small for
    /// the fixed part), rather than saying how the limit was chosen: print mode says
    /// these at the start.
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            LimitNote::Clamped { .. } | LimitNote::Cramped { .. } | LimitNote::WindowTooSmall { .. }
        )
    }

    /// The window cannot hold the system prompt and tools with a reply.
    pub fn window_too_small(&self) -> bool {
        matches!(self, LimitNote::WindowTooSmall { .. })
    }

    /// The line for the user, if there is something to say.
    pub fn message(&self) -> Option<String> {
        match self {
            LimitNote::AsConfigured => None,
            LimitNote::Auto(label) => Some(format!("limit auto: {label}")),
            LimitNote::Clamped { configured, label } => Some(format!(
                "context_char_limit {} is more than the model's window holds; using {label}",
                short_count(*configured)
            )),
            LimitNote::Cramped {
                chars,
                window_tokens,
                needs_tokens,
            } => Some(format!(
                "limit auto: {} chars, all the model's window of {window_tokens} tokens leaves for the conversation \
                 once the system prompt, tools and a reply are set aside. That is less than one exchange needs after \
                 a summary, so compaction will run nearly every turn.{}",
                short_count(*chars),
                needs_tokens.map_or_else(String::new, |tokens| format!(
                    " A window of {tokens} tokens gives it room (for llama-server, start it with -c {tokens})."
                ))
            )),
            LimitNote::WindowTooSmall {
                window_tokens,
                fixed_tokens,
            } => Some(format!(
                "The model's window of {window_tokens} tokens cannot hold scratchpad's system prompt and tool \
                 definitions (about {fixed_tokens} tokens) and a reply, so every request would be refused. \
                 Give the model a larger window (for llama-server, start it with -c 4096 or more)."
            )),
            LimitNote::FarBelow { configured, holds } => Some(format!(
                "Compaction starts at {} characters, under a quarter of what this model can hold (about {}). \
                 To let conversations grow longer before they are compacted, start with --limit auto.",
                short_count(*configured),
                short_count(*holds)
            )),
        }
    }
}

/// The limit for `configured` chars under `choice`, given what the window holds.
pub fn decide_limit(choice: LimitChoice, configured: usize, fit: &Fit) -> LimitDecision {
    let describe = |chars: usize, percent: u64| match fit.fixed_tokens {
        Some(fixed_tokens) => format!(
            "{} chars ({percent}% of {} tokens − {} for the reply − {} the server counted for the system prompt and tools, × {:.1} chars/token)",
            short_count(chars),
            short_count(fit.window_tokens as usize),
            short_count(fit.reply_reserve() as usize),
            short_count(fixed_tokens as usize),
            fit.chars_per_token,
        ),
        None => format!(
            "{} chars ({percent}% of {} tokens − {} for the reply, × {:.1} chars/token, − {} fixed)",
            short_count(chars),
            short_count(fit.window_tokens as usize),
            short_count(fit.reply_reserve() as usize),
            fit.chars_per_token,
            short_count(fit.fixed_chars)
        ),
    };
    let holds = fit.holds_chars();
    let fixed_tokens = fit.fixed_part_tokens();
    if fixed_tokens + MIN_REPLY_TOKENS >= fit.window_tokens {
        // The limit cannot help: say so rather than a limit worked out from less
        // than nothing.
        return LimitDecision {
            chars: MIN_CONTEXT_CHAR_LIMIT,
            note: LimitNote::WindowTooSmall {
                window_tokens: fit.window_tokens,
                fixed_tokens,
            },
        };
    }
    match choice {
        LimitChoice::Auto => match fit.auto_limit() {
            AutoLimit::Share(chars) => LimitDecision {
                chars,
                note: LimitNote::Auto(describe(chars, AUTO_WINDOW_PERCENT)),
            },
            AutoLimit::Stretched { chars, share } => LimitDecision {
                chars,
                note: LimitNote::Auto(format!(
                    "{} chars, the least a turn needs after a summary; the window's {AUTO_WINDOW_PERCENT}% share \
                     would leave {} and every turn would be summarised",
                    short_count(chars),
                    short_count(share)
                )),
            },
            AutoLimit::Cramped { chars, needs_tokens } => LimitDecision {
                chars,
                note: LimitNote::Cramped {
                    chars,
                    window_tokens: fit.window_tokens,
                    needs_tokens,
                },
            },
        },
        LimitChoice::Configured if configured > holds => LimitDecision {
            chars: holds,
            note: LimitNote::Clamped {
                configured,
                label: describe(holds, 100),
            },
        },
        LimitChoice::Configured if configured < holds * FAR_BELOW_PERCENT / 100 => LimitDecision {
            chars: configured,
            note: LimitNote::FarBelow { configured, holds },
        },
        LimitChoice::Configured => LimitDecision {
            chars: configured,
            note: LimitNote::AsConfigured,
        },
    }
}
