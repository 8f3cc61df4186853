use std::io;
use std::process::ExitCode;

use clap::Parser;
use color_eyre::eyre::{Result, WrapErr};

use scratchpad::cli::{Cli, Command};
use scratchpad::compact::{ExtractiveSummariser, Summariser};
use scratchpad::protocol::TurnOutcome;
use scratchpad::provider::ProviderSummariser;
use scratchpad::{commands, headless, launch, logging, tui};

fn main() -> Result<ExitCode> {
    color_eyre::install()?;
    let cli = Cli::parse();
    let env = |key: &str| std::env::var(key).ok();
    match cli.command {
        Some(Command::Compact(args)) => {
            let config = launch::resolve_config(&cli.run, &env)?;
            let workspace = match &cli.run.workspace {
                Some(dir) => dir.clone(),
                None => std::env::current_dir()?,
            };
            let runtime = tokio::runtime::Runtime::new()?;
            let provider = launch::build_provider(&config, &env)?;
            let mut model = ProviderSummariser::new(provider, runtime.handle().clone());
            let mut stub = ExtractiveSummariser;
            let summariser: &mut dyn Summariser = if args.summary_stub { &mut stub } else { &mut model };
            commands::compact::run(
                &args.input,
                args.request.as_deref(),
                &config.compaction,
                &workspace,
                summariser,
                &mut io::stdout().lock(),
                &mut io::stderr().lock(),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Simulate(args)) => {
            let config = launch::resolve_config(&cli.run, &env)?;
            commands::simulate::run(&args, &config.compaction, &mut io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let _guard = logging::init()?;
            let launched = launch::launch(&cli.run, &env)?;
            let runtime = tokio::runtime::Runtime::new()?;
            match cli.print {
                Some(request) => {
                    let jsonl = cli.events.is_some();
                    let outcome = runtime
                        .block_on(headless::run(launched, request, jsonl, cli.yes))
                        .wrap_err("headless run")?;
                    Ok(if outcome == TurnOutcome::Completed {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    })
                }
                None => {
                    runtime.block_on(tui::run(launched))?;
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
    }
}
