//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::compact::CompactConfig;

#[derive(Debug, Parser)]
#[command(
    name = "scratchpad",
    version,
    about = "A terminal coding agent that makes its context window visible"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the compaction pipeline once on a recorded history (JSON array of messages).
    Compact(CompactArgs),
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The history: a JSON array of Anthropic-format messages.
    #[arg(long)]
    pub input: PathBuf,
    /// The current user request (default: the newest user prompt in the history).
    #[arg(long)]
    pub request: Option<String>,
    /// Where `.transcripts/` and `.task_outputs/` are written (default: current directory).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Use a deterministic extractive summary instead of asking a model.
    #[arg(long)]
    pub summary_stub: bool,
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
}

/// Overrides for every compaction threshold.
#[derive(Debug, Default, Args)]
pub struct ThresholdArgs {
    /// CONTEXT_CHAR_LIMIT.
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long)]
    pub tool_result_budget: Option<usize>,
    #[arg(long)]
    pub persist_over: Option<usize>,
    #[arg(long)]
    pub persisted_preview: Option<usize>,
    #[arg(long)]
    pub max_messages: Option<usize>,
    #[arg(long)]
    pub keep_head: Option<usize>,
    #[arg(long)]
    pub target_percent: Option<usize>,
    #[arg(long)]
    pub keep_recent: Option<usize>,
    #[arg(long)]
    pub min_chars: Option<usize>,
    #[arg(long)]
    pub fit_preview: Option<usize>,
    #[arg(long)]
    pub reactive_keep: Option<usize>,
    #[arg(long)]
    pub summary_input: Option<usize>,
}

impl ThresholdArgs {
    pub fn apply(&self, config: &mut CompactConfig) {
        let pairs = [
            (self.limit, &mut config.context_char_limit),
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
        ];
        for (value, field) in pairs {
            if let Some(value) = value {
                *field = value;
            }
        }
    }
}
