use std::collections::HashMap;
use std::ffi::CString;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use color_eyre::eyre::{Result, WrapErr};

use scratchpad::cli::{Cli, Command};
use scratchpad::compact::{ExtractiveSummariser, Summariser};
use scratchpad::protocol::TurnOutcome;
use scratchpad::provider::ProviderSummariser;
use scratchpad::{commands, headless, launch, logging, tui};

fn main() -> ExitCode {
    // Read the environment once, then take our secrets out of it, before any thread
    // exists: commands the model runs must not find the API key, not even in
    // /proc/<our pid>/environ.
    let environment: HashMap<String, String> = std::env::vars().collect();
    scrub_secrets_from_environment();
    // Panics still get color-eyre's report; errors are one plain line for the user.
    let _ = color_eyre::install();
    // Everything runs on a thread with the stack the runtime's workers get: a history
    // can hold values nested thousands of levels, whose clone and drop recurse.
    let worker = std::thread::Builder::new()
        .name("scratchpad".into())
        .stack_size(scratchpad::json::WORKER_STACK_BYTES)
        .spawn(move || report(run(&environment)));
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        // A panic was reported by its hook.
        Ok(Err(_)) => ExitCode::from(101),
        Err(error) => {
            eprintln!("scratchpad: cannot start: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The exit code of `result`, its error said in one plain line.
fn report(result: Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) => {
            // Each cause once: many messages already quote their source.
            let mut line = String::new();
            for cause in error.chain().map(|cause| cause.to_string()) {
                if !line.contains(&cause) {
                    if !line.is_empty() {
                        line.push_str(": ");
                    }
                    line.push_str(&cause);
                }
            }
            eprintln!("scratchpad: {line}");
            ExitCode::FAILURE
        }
    }
}

fn run(environment: &HashMap<String, String>) -> Result<ExitCode> {
    let cli = Cli::parse();
    let env = |key: &str| environment.get(key).cloned();
    match cli.command {
        Some(Command::Compact(args)) => {
            let mut config = launch::resolve_config(&cli.run, &env)?;
            // stderr carries JSON events here: the limit's note is not one of them.
            let _ = launch::resolve_offline_limit(&mut config);
            let workspace = workspace_dir(&cli.run)?;
            let input = commands::input::input_or_newest(args.input.as_deref(), &workspace)?;
            let job = commands::compact::CompactJob {
                input: &input,
                request: args.request.as_deref(),
                until: args
                    .keep_from
                    .map_or(commands::compact::Until::Pipeline, commands::compact::Until::KeepFrom),
                config: &config.compaction,
                workspace: &workspace,
            };
            if args.dry_run {
                eprintln!("note: `compact --dry-run` is now `simulate --now`; the old name works for this release");
                simulate_now(&input, args.request.as_deref(), &config, &workspace)?;
                return Ok(ExitCode::SUCCESS);
            }
            // The model, its client and a runtime only when a summary may be asked of it.
            let runtime;
            let mut model;
            let mut stub = ExtractiveSummariser;
            let summariser: &mut dyn Summariser = if args.summary_stub {
                &mut stub
            } else {
                runtime = launch::runtime()?;
                let provider = launch::build_provider(&config, &env)?;
                let max_tokens = u32::try_from(scratchpad::accounting::SUMMARY_MAX_TOKENS).unwrap_or(u32::MAX);
                // As the agent asks: the server's own compaction first where
                // `compaction.summariser = "server"` and the server has one.
                model = ProviderSummariser::new(provider, runtime.handle().clone(), max_tokens).choosing(
                    config.compaction.summariser,
                    scratchpad::agent::SYSTEM_PROMPT.to_string(),
                    Vec::new(),
                );
                &mut model
            };
            commands::compact::run(&job, summariser, &mut io::stdout().lock(), &mut io::stderr().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Undo(args)) => {
            let config = launch::resolve_config(&cli.run, &env)?;
            let workspace = workspace_dir(&cli.run)?;
            commands::undo::run(
                &workspace,
                args.session.as_deref(),
                &config.compaction,
                &mut io::stdout().lock(),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Sessions(args)) => {
            let workspace = workspace_dir(&cli.run)?;
            commands::sessions::list(&workspace, args.json, &mut io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Fork(args)) => {
            let config = launch::resolve_config(&cli.run, &env)?;
            let workspace = workspace_dir(&cli.run)?;
            commands::sessions::fork(
                &workspace,
                &args.session,
                &args.at,
                &config.compaction,
                &mut io::stdout().lock(),
                &mut io::stderr().lock(),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Simulate(args)) => {
            let mut config = launch::resolve_config(&cli.run, &env)?;
            if let Some(note) = launch::resolve_offline_limit(&mut config) {
                eprintln!("{note}");
            }
            let workspace = workspace_dir(&cli.run)?;
            let file = commands::input::input_or_newest(args.file.as_deref(), &workspace)?;
            if args.now {
                simulate_now(&file, args.request.as_deref(), &config, &workspace)?;
            } else {
                commands::simulate::run(&args, &file, &config.compaction, &mut io::stdout().lock())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        None => {
            if cli.print.is_none() && !(io::stdin().is_terminal() && io::stdout().is_terminal()) {
                // Checked before anything is created: no journal for a session that
                // cannot start.
                eprintln!("scratchpad needs a terminal; use -p REQUEST for headless");
                return Ok(ExitCode::from(2));
            }
            scratchpad::process::children::adopt_orphans();
            let _guard = logging::init()?;
            // `--resume` without an id: in the app, a new session opens on the picker;
            // headless, the newest session is continued.
            let mut run = cli.run;
            let pick_session = cli.print.is_none() && !run.read_only && run.resume.as_deref() == Some("");
            if pick_session {
                run.resume = None;
            }
            let mut launched = launch::launch(&run, &env)?;
            launched.pick_session = pick_session;
            let runtime = launch::runtime()?;
            let code = match cli.print {
                Some(request) => {
                    let jsonl = cli.events.is_some();
                    let outcome = runtime
                        .block_on(headless::run(launched, request, jsonl, cli.yes))
                        .wrap_err("headless run")?;
                    if outcome == TurnOutcome::Completed {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    }
                }
                None => {
                    let sessions = runtime.block_on(tui::run(launched))?;
                    // Each session worked in (`/clear` starts another); one nobody used
                    // left no journal, and there is nothing to pick up.
                    let root = workspace_dir(&run).ok();
                    for session in sessions {
                        let way_back = root
                            .as_deref()
                            .and_then(|root| scratchpad::session::way_back(root, &session));
                        if let Some(command) = way_back {
                            // The terminal may be gone (its window closed): nothing to tell then.
                            let _ = writeln!(io::stdout(), "session {session} · to pick it up again: {command}");
                        }
                    }
                    ExitCode::SUCCESS
                }
            };
            // The MCP servers stop with the runtime; what they left running (a daemon
            // of their own, handed to us as orphans) goes with them.
            drop(runtime);
            scratchpad::process::children::sweep_orphans();
            Ok(code)
        }
    }
}

/// The workspace of an offline command: `-C`, or the current folder.
/// `simulate --now` (and its old name, `compact --dry-run`) on the terminal's stdout
/// and stderr.
fn simulate_now(
    file: &std::path::Path,
    request: Option<&str>,
    config: &scratchpad::config::Config,
    workspace: &std::path::Path,
) -> Result<(), commands::input::CommandError> {
    commands::simulate::now(
        file,
        request,
        &config.compaction,
        workspace,
        &mut io::stdout().lock(),
        &mut io::stderr().lock(),
    )
    .map(drop)
}

fn workspace_dir(run: &scratchpad::cli::RunArgs) -> io::Result<std::path::PathBuf> {
    match &run.workspace {
        Some(dir) => Ok(dir.clone()),
        None => std::env::current_dir(),
    }
}

/// Overwrite the values of the secrets scratchpad reads (and of the default hidden
/// patterns) where the kernel shows them in /proc/<pid>/environ, drop them from the
/// environment, and make this process non-dumpable so that other processes of the
/// user cannot read its memory or environment either.
fn scrub_secrets_from_environment() {
    let hidden = scratchpad::tools::ToolsConfig::default().hidden_env_matcher();
    let withheld: Vec<(String, String)> = std::env::vars()
        .filter(|(key, _)| hidden.as_ref().is_ok_and(|set| set.hides(key)))
        .collect();
    let names: Vec<String> = withheld.iter().map(|(key, _)| key.clone()).collect();
    // Kept aside for the variables a user hands to commands on purpose (`pass_env`).
    scratchpad::tools::withhold(withheld);
    for name in names {
        let Ok(c_name) = CString::new(name.as_str()) else {
            continue;
        };
        // SAFETY: main has started no thread yet, so nothing else reads or writes the
        // environment; getenv returns the value's bytes, which we overwrite in place
        // within their length, then the variable is removed.
        unsafe {
            let value = libc::getenv(c_name.as_ptr());
            if !value.is_null() {
                std::ptr::write_bytes(value, b'*', libc::strlen(value));
            }
            std::env::remove_var(&name);
        }
    }
    // SAFETY: a prctl that sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}
