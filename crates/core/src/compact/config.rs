//! Every threshold of the pipeline, in characters of the serialised history, with the
//! summariser to ask and the checks a configured value must pass.

use super::*;

/// Every threshold of the pipeline, in characters of the serialised history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactConfig {
    /// Stage 1 fires while the newest tool batch holds more than this.
    pub tool_result_budget_chars: usize,
    /// Stage 1 persists only results larger than this.
    pub persist_result_over_chars: usize,
    /// Preview kept in a `<persisted-output>` block by stage 1.
    pub persisted_preview_chars: usize,
    /// Stage 2 fires above this many messages.
    pub snip_max_messages: usize,
    /// Messages kept from the start of the history by stage 2.
    pub snip_keep_head: usize,
    /// CONTEXT_CHAR_LIMIT: stage 3 fires above it, stage 4 guarantees it. Written as
    /// a number of characters, or `"auto"` to follow the model's window.
    pub context_char_limit: Limit,
    /// Stage 3 clears old results until the estimate is at or under this share of the limit.
    pub micro_target_percent: usize,
    /// Newest seen tool results stage 3 leaves whole.
    pub micro_keep_recent: usize,
    /// Stage 3 leaves results of at most this many characters alone.
    pub micro_min_chars: usize,
    /// Preview kept by fit_tool_results.
    pub fit_preview_chars: usize,
    /// Newest messages reactive compaction keeps verbatim.
    pub reactive_keep_messages: usize,
    /// Longest history text handed to the summariser, room given by value.
    pub summary_input_chars: usize,
    /// Most of the limit, in percent, the index of a `[Compacted]` message may take (0: no index).
    pub index_percent: usize,
    /// Summaries in a row that did not hold (the history still over the limit after
    /// one, or the context filled again within the turn) before scratchpad stops
    /// compacting on its own and says why (0: never stops).
    pub loop_guard: usize,
    /// A summary asked for (`/compact`, the `compact` tool) that could free at most
    /// this many characters is skipped and said, instead of run.
    pub summary_floor_chars: usize,
    /// How the estimate counts characters: the seed's `json.dumps` layout or compact JSON.
    pub estimate: EstimateMode,
    /// Show every summary in the one review step before the model reads it: what
    /// leaves, the summary (yours to edit) and its index; apply or not now. Its old
    /// name, `confirm_lossy`, is read too, and said.
    #[serde(alias = "confirm_lossy")]
    pub review_summaries: bool,
    /// Who writes a summary: the model, the server's own compaction, or no one (the
    /// extractive summary).
    pub summariser: SummariserChoice,
    /// Summarise the older part of the history in the background once the estimate
    /// passes this share of the limit, ready to swap in at the limit (0: never).
    pub background_at_percent: usize,
    /// When the background summary goes in: at the limit, or as soon as it is ready
    /// once a turn ended past `background_at_percent` (while you read). Its old form,
    /// `compact_when_idle = true`, is read too, and said.
    #[serde(alias = "compact_when_idle")]
    pub background_swap: BackgroundSwap,
}

impl Default for CompactConfig {
    fn default() -> Self {
        CompactConfig {
            tool_result_budget_chars: 200_000,
            persist_result_over_chars: 30_000,
            persisted_preview_chars: 2_000,
            snip_max_messages: 50,
            snip_keep_head: 3,
            context_char_limit: Limit::chars(DEFAULT_CONTEXT_CHAR_LIMIT),
            micro_target_percent: 80,
            micro_keep_recent: 3,
            micro_min_chars: 120,
            fit_preview_chars: 1_000,
            reactive_keep_messages: 5,
            summary_input_chars: 80_000,
            index_percent: DEFAULT_INDEX_PERCENT,
            loop_guard: 3,
            summary_floor_chars: 500,
            estimate: EstimateMode::Seed,
            review_summaries: false,
            summariser: SummariserChoice::Model,
            background_at_percent: DEFAULT_BACKGROUND_AT_PERCENT,
            background_swap: BackgroundSwap::AtLimit,
        }
    }
}

/// What the session, not the config file, tells the stages: the tool results the user
/// pinned, the instruction files the system prompt carries verbatim, and how receipts
/// name a call's input. Its owner is the session (the agent keeps it and journals the
/// pins); a run of the pipeline borrows it through its [`Context`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionFacts {
    /// Tool results the user pinned in `/context`: stage 3 leaves them whole.
    pub pinned: std::collections::BTreeSet<String>,
    /// The project instruction files the system prompt carries, by path: the
    /// summariser is told they stay, and every summarising stage's receipt lists them
    /// as kept verbatim.
    pub verbatim_instructions: Vec<String>,
    /// How receipts name a call's input, handed in by whoever owns the tools.
    pub describe_input: receipt::InputDescriber,
}

impl SessionFacts {
    /// A session that has pinned nothing, carries no instruction files and names
    /// inputs by their first text field: for a run with no session (tests, benches).
    pub const NONE: SessionFacts = SessionFacts {
        pinned: std::collections::BTreeSet::new(),
        verbatim_instructions: Vec::new(),
        describe_input: receipt::InputDescriber::FIRST_TEXT_FIELD,
    };
}

/// The seed's CONTEXT_CHAR_LIMIT, and where an automatic limit starts.
pub const DEFAULT_CONTEXT_CHAR_LIMIT: usize = 50_000;

/// The value of `compaction.context_char_limit` (and `--limit`) that asks for an
/// automatic limit.
pub const AUTO_LIMIT: &str = "auto";

/// The context limit, the one home of both what the config file says and what the
/// stages work to: `chars` is the limit now; `auto` says it follows the model's window
/// (`"auto"` in the file, `--limit auto`), `chars` then being where it starts until
/// the window is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The limit in characters of the estimate.
    pub chars: usize,
    /// Whether it follows the model's window.
    pub auto: bool,
}

impl Limit {
    /// A limit of `chars` characters, as configured.
    pub const fn chars(chars: usize) -> Limit {
        Limit { chars, auto: false }
    }

    /// A limit that follows the model's window, starting from the seed's.
    pub const fn auto() -> Limit {
        Limit {
            chars: DEFAULT_CONTEXT_CHAR_LIMIT,
            auto: true,
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.auto {
            serializer.serialize_str(AUTO_LIMIT)
        } else {
            serializer.serialize_u64(u64::try_from(self.chars).unwrap_or(u64::MAX))
        }
    }
}

/// A number of characters, or `"auto"`: anything else is refused by name.
impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Limit;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(formatter, "a number of characters or \"{AUTO_LIMIT}\"")
            }

            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Limit, E> {
                usize::try_from(value)
                    .map(Limit::chars)
                    .map_err(|_| E::custom(format!("{value} characters is more than this machine can count")))
            }

            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Limit, E> {
                u64::try_from(value)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(value), &self))
                    .and_then(|value| self.visit_u64(value))
            }

            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Limit, E> {
                if value == AUTO_LIMIT {
                    Ok(Limit::auto())
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(value), &self))
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `compaction.background_swap`: when the summary prepared in the background goes in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackgroundSwap {
    /// At the limit, in place of writing a summary then (no wait).
    #[default]
    AtLimit,
    /// As soon as it is ready, once a turn ended past `background_at_percent`: the
    /// next request starts small and the prompt cache is rewritten at a quiet moment.
    WhenIdle,
}

/// `"at_limit"` or `"when_idle"`; `true` and `false` are the old `compact_when_idle`.
impl<'de> Deserialize<'de> for BackgroundSwap {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = BackgroundSwap;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("\"at_limit\" or \"when_idle\"")
            }

            fn visit_bool<E: serde::de::Error>(self, when_idle: bool) -> Result<BackgroundSwap, E> {
                Ok(if when_idle {
                    BackgroundSwap::WhenIdle
                } else {
                    BackgroundSwap::AtLimit
                })
            }

            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<BackgroundSwap, E> {
                match value {
                    "at_limit" => Ok(BackgroundSwap::AtLimit),
                    "when_idle" => Ok(BackgroundSwap::WhenIdle),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `compaction.summariser`: who writes the summaries of stage 4, reactive compaction,
/// `/compact` and the `compact` tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SummariserChoice {
    /// The model, asked with the summary instructions.
    #[default]
    Model,
    /// The server compacts the history itself (Anthropic's compaction on demand); its
    /// block goes first in the history. Where it cannot, the model.
    Server,
    /// No model: the requests, files and commands, extracted (what `--summary-stub`
    /// uses).
    Extractive,
}

/// Where a background summary starts by default: a turn of an agent session adds a
/// tenth to a fifth of the limit (a few tool rounds), so at 70% two or three turns are
/// left for a summary call that takes seconds to minutes, while little of what it
/// covers is still likely to change (the newest messages stay out of it).
pub const DEFAULT_BACKGROUND_AT_PERCENT: usize = 70;

/// The index's share of the limit by default: at 50,000 chars, 5,000, about sixty
/// entries, while the summary and the kept messages keep nine tenths.
pub const DEFAULT_INDEX_PERCENT: usize = 10;

/// The smallest limit the pipeline accepts: the compacted message's own frame and a
/// transcript path must fit under it.
pub const MIN_CONTEXT_CHAR_LIMIT: usize = 2_000;

impl CompactConfig {
    /// Check the relations between fields; the message names the offending key.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.context_char_limit.chars < MIN_CONTEXT_CHAR_LIMIT {
            return Err(InvalidSetting::new(
                "context_char_limit",
                format!(
                    "context_char_limit must be at least {MIN_CONTEXT_CHAR_LIMIT}, got {}",
                    self.context_char_limit.chars
                ),
            ));
        }
        if self.background_at_percent > 100 {
            return Err(InvalidSetting::new(
                "background_at_percent",
                format!(
                    "background_at_percent must be between 0 (off) and 100, got {}",
                    self.background_at_percent
                ),
            ));
        }
        if !(1..=100).contains(&self.micro_target_percent) {
            return Err(InvalidSetting::new(
                "micro_target_percent",
                format!(
                    "micro_target_percent must be between 1 and 100, got {}",
                    self.micro_target_percent
                ),
            ));
        }
        if self.index_percent > 50 {
            return Err(InvalidSetting::new(
                "index_percent",
                format!(
                    "index_percent must be between 0 (no index) and 50, got {}",
                    self.index_percent
                ),
            ));
        }
        if self.snip_max_messages < self.snip_keep_head.saturating_add(2) {
            return Err(InvalidSetting::new(
                "snip_max_messages",
                format!(
                    "snip_max_messages ({}) must exceed snip_keep_head ({}) by at least 2",
                    self.snip_max_messages, self.snip_keep_head
                ),
            ));
        }
        if self.snip_keep_head == 0 {
            return Err(InvalidSetting::new(
                "snip_keep_head",
                "snip_keep_head must be at least 1 (the first user message)",
            ));
        }
        if self.persisted_preview_chars >= self.persist_result_over_chars {
            return Err(InvalidSetting::new(
                "persisted_preview_chars",
                format!(
                    "persisted_preview_chars ({}) must be smaller than persist_result_over_chars ({})",
                    self.persisted_preview_chars, self.persist_result_over_chars
                ),
            ));
        }
        if self.summary_input_chars < 1_000 {
            return Err(InvalidSetting::new(
                "summary_input_chars",
                format!(
                    "summary_input_chars must be at least 1000, got {}",
                    self.summary_input_chars
                ),
            ));
        }
        Ok(())
    }

    /// Most characters the index of a `[Compacted]` message may take.
    pub fn index_room(&self) -> usize {
        self.context_char_limit.chars / 100 * self.index_percent
            + self.context_char_limit.chars % 100 * self.index_percent / 100
    }

    /// What micro_compact clears down to: `micro_target_percent` of the limit.
    pub fn micro_target_chars(&self) -> usize {
        // Exact for every limit: no product that could overflow.
        self.context_char_limit.chars / 100 * self.micro_target_percent
            + self.context_char_limit.chars % 100 * self.micro_target_percent / 100
    }

    /// Messages stage 2 keeps from the end: the rest of the budget after the head
    /// and the archive marker.
    pub fn snip_keep_tail(&self) -> usize {
        self.snip_max_messages - self.snip_keep_head - 1
    }
}
