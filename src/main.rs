use std::io;

use clap::Parser;
use color_eyre::eyre::{Result, bail};

use scratchpad::cli::{Cli, Command};
use scratchpad::commands;
use scratchpad::compact::{CompactConfig, ExtractiveSummariser, Summariser, SummaryError, SummaryRequest};

/// Without `--summary-stub` and without a model to ask, stage 4 reports this and
/// leaves the history unchanged.
struct NoModel;

impl Summariser for NoModel {
    fn summarise(&mut self, _: &SummaryRequest<'_>) -> Result<String, SummaryError> {
        Err(SummaryError(
            "no model configured for summaries; pass --summary-stub".into(),
        ))
    }
}

fn main() -> Result<()> {
    color_eyre::install()?;
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Compact(args)) => {
            let mut config = CompactConfig::default();
            args.thresholds.apply(&mut config);
            let workspace = match args.workspace {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            let mut stub = ExtractiveSummariser;
            let mut none = NoModel;
            let summariser: &mut dyn Summariser = if args.summary_stub { &mut stub } else { &mut none };
            commands::compact::run(
                &args.input,
                args.request.as_deref(),
                &config,
                &workspace,
                summariser,
                &mut io::stdout().lock(),
                &mut io::stderr().lock(),
            )?;
            Ok(())
        }
        None => bail!("the interactive app is not built yet; see `scratchpad --help`"),
    }
}
