//! From command line, config file and environment to a ready agent: the settings in
//! their loading order, the provider, the workspace and the session journal.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::accounting::LimitChoice;
use crate::agent::SYSTEM_PROMPT;
use crate::cli::RunArgs;
use crate::config::{Config, ConfigError, DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_BASE_URL, ProviderKind};
use crate::provider::Provider;
use crate::provider::anthropic::{AnthropicConfig, AnthropicProvider, DEFAULT_BASE_URL};
use crate::provider::demo::DemoProvider;
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};
use crate::session::{self, Journal};
use crate::tools::ToolBox;
use crate::tools::workspace::Workspace;
pub use scratchpad_agent::start::Launch;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("workspace {path}: {source}")]
    Workspace { path: PathBuf, source: std::io::Error },
    #[error("--provider anthropic needs ANTHROPIC_API_KEY in the environment")]
    MissingKey,
    #[error("cannot set up the model client: {0}")]
    Provider(#[from] crate::provider::ProviderError),
    #[error(transparent)]
    Session(#[from] session::SessionError),
    #[error("--read-only opens a saved session to look at: give --resume ID or --continue")]
    ReadOnlyWithoutSession,
}

/// Settings after defaults < file < environment < flags.
pub fn resolve_config(args: &RunArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, LaunchError> {
    let (mut config, _) = Config::load(args.config.as_deref())?;
    // The global instruction file lives beside the config file in use.
    config.instructions.global_dir = args
        .config
        .clone()
        .or_else(crate::config::default_config_path)
        .and_then(|path| path.parent().map(std::path::Path::to_path_buf));
    config.instructions.enabled = !args.no_instructions;
    config.apply_env(env);
    if let Some(kind) = args.provider {
        config.provider.kind = kind;
    }
    if let Some(model) = &args.model {
        config.provider.model = model.clone();
    }
    if let Some(url) = &args.base_url {
        config.provider.base_url = url.clone();
    }
    if args.no_cache {
        config.provider.prompt_caching = false;
    }
    args.thresholds.apply(&mut config);
    config
        .validate()
        .map_err(|invalid| ConfigError::Value(invalid.message))?;
    Ok(config)
}

/// For the offline commands (`compact`, `simulate`): an automatic limit sized to the
/// window of the configured model (or `provider.context_window_tokens`) at the default
/// characters per token, since no call has measured them. Returns how it was sized.
pub fn resolve_offline_limit(config: &mut Config) -> Option<String> {
    if !config.compaction.context_char_limit.auto {
        return None;
    }
    let model = if config.provider.model.is_empty() {
        DEFAULT_ANTHROPIC_MODEL
    } else {
        &config.provider.model
    };
    let window = crate::accounting::known_window(model).map_or(config.provider.context_window_tokens, |w| w.tokens);
    let fit = crate::accounting::Fit {
        window_tokens: window,
        max_tokens: u64::from(config.provider.max_tokens),
        chars_per_token: crate::accounting::DEFAULT_CHARS_PER_TOKEN,
        fixed_chars: crate::accounting::fixed_chars(
            SYSTEM_PROMPT,
            &ToolBox::specs_for(&config.tools),
            config.compaction.estimate,
        ),
        fixed_tokens: None,
    };
    let decision = crate::accounting::decide_limit(LimitChoice::Auto, config.compaction.context_char_limit.chars, &fit);
    config.compaction.context_char_limit.chars = decision.chars;
    decision.note.message()
}

pub fn build_provider(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> Result<Arc<dyn Provider>, LaunchError> {
    let key = env("ANTHROPIC_API_KEY").filter(|k| !k.trim().is_empty());
    let kind = match (config.provider.kind, &key) {
        (ProviderKind::Auto, Some(_)) => ProviderKind::Anthropic,
        (ProviderKind::Auto, None) => ProviderKind::Demo,
        (kind, _) => kind,
    };
    let settings = &config.provider;
    let or = |value: &str, default: &str| {
        if value.is_empty() {
            default.to_string()
        } else {
            value.to_string()
        }
    };
    Ok(match kind {
        ProviderKind::Anthropic => Arc::new(AnthropicProvider::new(AnthropicConfig {
            base_url: or(&settings.base_url, DEFAULT_BASE_URL),
            api_key: key.ok_or(LaunchError::MissingKey)?.into(),
            // Empty: the model a local server names, else the default.
            model: settings.model.clone(),
            prompt_caching: settings.prompt_caching,
            thinking: settings.thinking,
            retry: settings.retry.clone(),
        })?),
        ProviderKind::Openai => Arc::new(OpenAiProvider::new(OpenAiConfig {
            base_url: or(&settings.base_url, DEFAULT_OPENAI_BASE_URL),
            api_key: env("OPENAI_API_KEY").filter(|k| !k.is_empty()).map(Into::into),
            model: settings.model.clone(),
            retry: settings.retry.clone(),
        })?),
        ProviderKind::Demo | ProviderKind::Auto => {
            Arc::new(DemoProvider::new(Duration::from_millis(config.ui.demo_word_delay_ms)))
        }
    })
}

pub fn launch(args: &RunArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<Launch, LaunchError> {
    let config = resolve_config(args, env)?;
    let provider = build_provider(&config, env)?;
    let root = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|source| LaunchError::Workspace {
            path: PathBuf::from("."),
            source,
        })?,
    };
    let workspace = Workspace::new(&root).map_err(|source| LaunchError::Workspace {
        path: root.clone(),
        source,
    })?;
    let resume = match (&args.resume, args.continue_session) {
        (Some(id), _) if !id.is_empty() => Some(Some(id.as_str())),
        (Some(_), _) | (None, true) => Some(None),
        (None, false) => None,
    };
    let migrated = session::migrate_legacy(workspace.root())?;
    if args.read_only {
        let id = resume.ok_or(LaunchError::ReadOnlyWithoutSession)?;
        let path = session::find(workspace.root(), id)?;
        // No lock and no journal: the session may be open elsewhere, and this view
        // never writes to it.
        let restored = session::restore(&path)?;
        let name = session::id_of(&path);
        let holder = session::lock_holder(&path)
            .map(|pid| format!(" (open in pid {pid})"))
            .unwrap_or_default();
        let pins = restored.pins;
        let mut notices = restored.repairs;
        notices.extend(migrated);
        notices.extend(config.notes.iter().cloned());
        return Ok(Launch {
            config,
            provider,
            workspace,
            journal: None,
            read_only: Some(format!(
                "a read-only view of session {}{holder}: browse, inspect and preview; nothing is sent, run or saved",
                name
            )),
            history: restored.messages,
            past: restored.past,
            pins,
            notices,
            pick_session: false,
        });
    }
    // `--continue` where nothing was begun yet begins: there is nothing to lose.
    let found = match resume {
        Some(id) => match session::find(workspace.root(), id) {
            Err(session::SessionError::NoneFound(_)) if id.is_none() => None,
            found => Some(found?),
        },
        None => None,
    };
    let nothing_to_continue = resume.is_some() && found.is_none();
    let (journal, history, past, pins, mut notices) = match found {
        Some(path) => {
            let (mut journal, restored) = Journal::resume(&path)?;
            if !restored.repairs.is_empty() {
                // Journal the mended history so every later resume starts from it.
                journal.append(&session::Record::Repair {
                    messages: restored.messages.clone(),
                    notes: restored.repairs.clone(),
                })?;
                journal.sync()?;
            }
            (
                journal,
                restored.messages,
                restored.past,
                restored.pins,
                restored.repairs,
            )
        }
        None => (
            Journal::create(
                &session::sessions_dir(workspace.root()),
                provider.kind(),
                provider.model(),
            )?,
            Vec::new(),
            Vec::new(),
            Default::default(),
            nothing_to_continue
                .then(|| "no earlier session in this workspace to continue: this is a new one".to_string())
                .into_iter()
                .collect(),
        ),
    };
    notices.extend(migrated);
    notices.extend(config.notes.iter().cloned());
    Ok(Launch {
        config,
        provider,
        workspace,
        journal: Some(journal),
        read_only: None,
        history,
        past,
        pins,
        notices,
        pick_session: false,
    })
}

/// The async runtime, its threads with stacks of [`scratchpad_core::json::WORKER_STACK_BYTES`]: every thread
/// that holds histories may clone or drop a deeply nested value.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(scratchpad_core::json::WORKER_STACK_BYTES)
        .build()
}
