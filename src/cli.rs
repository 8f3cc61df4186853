//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{AUTO_LIMIT, Config, ProviderKind};

#[derive(Debug, Parser)]
#[command(
    name = "scratchpad",
    version,
    about = "A terminal coding agent that makes its context window visible",
    after_help = "Without a subcommand or -p, opens the full-screen app. With no ANTHROPIC_API_KEY it runs the offline demo model."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Run one request without the UI and print the answer (headless).
    #[arg(short = 'p', long = "print", value_name = "REQUEST")]
    pub print: Option<String>,
    /// With -p: print every agent event as one JSON line instead of the answer.
    #[arg(long, value_enum)]
    pub events: Option<EventFormat>,
    /// With -p: allow what would otherwise be asked (destructive commands, paths outside the workspace).
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventFormat {
    Jsonl,
}

#[derive(Debug, Default, Args)]
pub struct RunArgs {
    /// The model API: auto (Anthropic if ANTHROPIC_API_KEY is set, else the offline demo), anthropic, openai, demo.
    #[arg(long, value_enum, global = true)]
    pub provider: Option<ProviderKind>,
    /// Model id (also MODEL_ID).
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// API base URL (also ANTHROPIC_BASE_URL), e.g. http://127.0.0.1:8080/v1 for --provider openai.
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// Config file (default: the platform config dir's scratchpad/config.toml).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// The workspace folder (default: the current directory).
    #[arg(short = 'C', long, global = true)]
    pub workspace: Option<PathBuf>,
    /// Resume a session: the one with this id, or without one, pick it from a list.
    #[arg(long, num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Continue the newest session (same as --resume without an id).
    #[arg(long = "continue")]
    pub continue_session: bool,
    /// With --resume or --continue: look at the session without taking it over (it may
    /// be open in another scratchpad). Nothing is sent, run or saved.
    #[arg(long)]
    pub read_only: bool,
    /// Turn Anthropic prompt caching off.
    #[arg(long, global = true)]
    pub no_cache: bool,
    /// Read no project instruction files (AGENTS.md, CLAUDE.md).
    #[arg(long, global = true)]
    pub no_instructions: bool,
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the compaction pipeline once on a recorded history (JSON array of messages).
    Compact(CompactArgs),
    /// Replay a recorded conversation through the pipeline step by step.
    Simulate(SimulateArgs),
    /// Undo the newest compaction stage of a session (the newest session by default).
    Undo(UndoArgs),
    /// List this workspace's sessions, newest first, with their branches.
    Sessions(SessionsArgs),
    /// Start a new session from a point of another and print its id; the other is
    /// left as it is. Restores the conversation, not the workspace's files.
    Fork(ForkArgs),
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// One JSON array of the sessions instead of a line each.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The session to fork (its id, as `scratchpad sessions` lists it).
    pub session: String,
    /// Where: a message position (1-based, as the session showed its messages; the
    /// fork ends just before it) or a compaction stage's id (the history just before
    /// that stage, rebuilt from its transcript and checked against its receipt).
    #[arg(long, value_name = "N|STAGE_ID", value_parser = parse_fork_at)]
    pub at: crate::session::ForkAt,
}

fn parse_fork_at(value: &str) -> Result<crate::session::ForkAt, String> {
    value.parse()
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The session id (see `scratchpad --resume` errors or the sessions folder); default: the newest.
    #[arg(long)]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The history: a JSON array of Anthropic-format messages, a transcript or a
    /// session journal (default: the workspace's newest session).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// The current user request (default: the newest user prompt in the history).
    #[arg(long)]
    pub request: Option<String>,
    /// Use a deterministic extractive summary instead of asking a model.
    #[arg(long)]
    pub summary_stub: bool,
    /// The old name of `simulate --now` (read for this release, and said).
    #[arg(long)]
    pub dry_run: bool,
    /// Summarise everything before message N (1-based, as the session shows messages)
    /// and keep N and what follows verbatim, whatever the limit.
    #[arg(long, value_name = "N", conflicts_with = "dry_run")]
    pub keep_from: Option<usize>,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// A transcript (.jsonl of messages), a session journal, or a JSON array of
    /// messages (default: the workspace's newest session).
    pub file: Option<PathBuf>,
    /// Print the steps as JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Draw the timeline as an SVG file.
    #[arg(long, value_name = "FILE.svg", conflicts_with = "now")]
    pub plot: Option<PathBuf>,
    /// Not a replay: what compaction would do to the history as it stands, once (the
    /// receipts, one JSON line each), writing nothing and asking no model.
    #[arg(long)]
    pub now: bool,
    /// With --now: the current user request (default: the newest user prompt).
    #[arg(long, requires = "now")]
    pub request: Option<String>,
}

/// Overrides for every compaction threshold.
#[derive(Debug, Default, Args)]
pub struct ThresholdArgs {
    /// CONTEXT_CHAR_LIMIT: stage 3 fires above it, stage 4 guarantees it; `auto` sizes
    /// it to the model's window [default: 50000]
    #[arg(long, global = true, value_name = "CHARS|auto", value_parser = parse_limit)]
    pub limit: Option<LimitArg>,
    /// Stage 1 fires while the newest tool batch holds more [default: 200000]
    #[arg(long, global = true, value_name = "CHARS")]
    pub tool_result_budget: Option<usize>,
    /// Stage 1 persists only results larger than this [default: 30000]
    #[arg(long, global = true, value_name = "CHARS")]
    pub persist_over: Option<usize>,
    /// Preview kept in a `<persisted-output>` block by stage 1 [default: 2000]
    #[arg(long, global = true, value_name = "CHARS")]
    pub persisted_preview: Option<usize>,
    /// Stage 2 (snip_compact) fires above this many messages [default: 50]
    #[arg(long, global = true, value_name = "N")]
    pub max_messages: Option<usize>,
    /// Messages stage 2 keeps from the start of the history [default: 3]
    #[arg(long, global = true, value_name = "N")]
    pub keep_head: Option<usize>,
    /// Stage 3 clears down to this share of the limit [default: 80]
    #[arg(long, global = true, value_name = "PERCENT")]
    pub target_percent: Option<usize>,
    /// Newest seen tool results stage 3 leaves whole [default: 3]
    #[arg(long, global = true, value_name = "N")]
    pub keep_recent: Option<usize>,
    /// Stage 3 leaves results of at most this many characters alone [default: 120]
    #[arg(long, global = true, value_name = "CHARS")]
    pub min_chars: Option<usize>,
    /// Preview kept by fit_tool_results [default: 1000]
    #[arg(long, global = true, value_name = "CHARS")]
    pub fit_preview: Option<usize>,
    /// Newest messages reactive compaction keeps verbatim [default: 5]
    #[arg(long, global = true, value_name = "N")]
    pub reactive_keep: Option<usize>,
    /// Longest history text handed to the summariser [default: 80000]
    #[arg(long, global = true, value_name = "CHARS")]
    pub summary_input: Option<usize>,
    /// Summarise the older history in the background from this share of the limit,
    /// to swap in at the limit with no wait; 0 turns it off [default: 70]
    #[arg(long, global = true, value_name = "PERCENT")]
    pub background_at: Option<usize>,
}

/// `--limit`: a number of characters or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitArg {
    Chars(usize),
    Auto,
}

fn parse_limit(value: &str) -> Result<LimitArg, String> {
    if value == AUTO_LIMIT {
        return Ok(LimitArg::Auto);
    }
    value
        .parse()
        .map(LimitArg::Chars)
        .map_err(|_| format!("expected a number of characters or `{AUTO_LIMIT}`, got `{value}`"))
}

impl ThresholdArgs {
    pub fn apply(&self, settings: &mut Config) {
        match self.limit {
            // Automatic from where the file's limit starts it.
            Some(LimitArg::Auto) => settings.compaction.context_char_limit.auto = true,
            Some(LimitArg::Chars(chars)) => {
                settings.compaction.context_char_limit = crate::compact::Limit::chars(chars);
            }
            None => {}
        }
        let config = &mut settings.compaction;
        let pairs = [
            (self.tool_result_budget, &mut config.tool_result_budget_chars),
            (self.persist_over, &mut config.persist_result_over_chars),
            (self.persisted_preview, &mut config.persisted_preview_chars),
            (self.max_messages, &mut config.snip_max_messages),
            (self.keep_head, &mut config.snip_keep_head),
            (self.target_percent, &mut config.micro_target_percent),
            (self.keep_recent, &mut config.micro_keep_recent),
            (self.min_chars, &mut config.micro_min_chars),
            (self.fit_preview, &mut config.fit_preview_chars),
            (self.reactive_keep, &mut config.reactive_keep_messages),
            (self.summary_input, &mut config.summary_input_chars),
            (self.background_at, &mut config.background_at_percent),
        ];
        for (value, field) in pairs {
            if let Some(value) = value {
                *field = value;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn limit_takes_a_number_or_auto() {
        let mut config = Config::default();
        Cli::parse_from(["scratchpad", "--limit", "auto"])
            .run
            .thresholds
            .apply(&mut config);
        assert_eq!(config.compaction.context_char_limit, crate::compact::Limit::auto());
        Cli::parse_from(["scratchpad", "--limit", "9000"])
            .run
            .thresholds
            .apply(&mut config);
        assert_eq!(
            config.compaction.context_char_limit,
            crate::compact::Limit::chars(9_000)
        );
        let error = Cli::try_parse_from(["scratchpad", "--limit", "big"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("a number of characters or `auto`"), "{error}");
    }
}
