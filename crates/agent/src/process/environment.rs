//! The environment of the processes scratchpad starts (commands, MCP servers): which
//! of the user's variables they never see, and the values withheld from scratchpad's
//! own environment at start.

use globset::{GlobSet, GlobSetBuilder};

use crate::setting::InvalidSetting;

/// The secrets scratchpad itself reads; always hidden from commands.
pub const ALWAYS_HIDDEN_ENV: &[&str] = &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"];

/// The variables hidden by default, after the Codex CLI's convention: any name with
/// one of these words, cloud credentials, database URLs, and the sockets of the
/// user's ssh-agent and tmux (a way out of the sandbox).
pub const DEFAULT_HIDDEN_ENV: &[&str] = &[
    "*KEY*",
    "*SECRET*",
    "*TOKEN*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*DSN*",
    "AWS_*",
    "DATABASE_URL",
    "SSH_AUTH_SOCK",
    "TMUX",
];

/// The hidden variables taken out of scratchpad's own environment at start (so that
/// not even `/proc/<pid>/environ` shows them), kept for `pass_env`.
static WITHHELD: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Keep the variables taken out of the environment (once, at start).
pub fn withhold(variables: Vec<(String, String)>) {
    let _ = WITHHELD.set(variables);
}

/// The user's variable `name`, also when it was withheld from commands (an MCP
/// server's `env` may name a token on purpose).
pub fn user_variable(name: &str) -> Option<String> {
    std::env::var(name).ok().or_else(|| {
        WITHHELD
            .get()?
            .iter()
            .find(|(withheld, _)| withheld == name)
            .map(|(_, value)| value.clone())
    })
}

/// Which variables of scratchpad's environment commands never see.
#[derive(Clone, Debug)]
pub struct HiddenEnv {
    hide: GlobSet,
    pass: GlobSet,
}

impl HiddenEnv {
    /// Whether commands must not see `name`: our own keys always, the rest when
    /// `hide_env` matches and `pass_env` does not.
    pub fn hides(&self, name: &str) -> bool {
        ALWAYS_HIDDEN_ENV.contains(&name) || (self.hide.is_match(name) && !self.pass.is_match(name))
    }

    /// The withheld variables a command gets all the same: those `pass_env` names.
    pub fn passed(&self) -> impl Iterator<Item = &'static (String, String)> {
        let pass = self.pass.clone();
        WITHHELD
            .get()
            .into_iter()
            .flatten()
            .filter(move |(name, _)| !ALWAYS_HIDDEN_ENV.contains(&name.as_str()) && pass.is_match(name))
    }

    /// Only our own keys: should a bad pattern get past validation.
    pub(crate) fn ours_only() -> Self {
        HiddenEnv {
            hide: GlobSet::empty(),
            pass: GlobSet::empty(),
        }
    }
}

impl HiddenEnv {
    /// `hide_env` and `pass_env` compiled; a bad pattern is named, with the key it is
    /// under.
    pub fn compile(hide_env: &[String], pass_env: &[String]) -> Result<HiddenEnv, InvalidSetting> {
        Ok(HiddenEnv {
            hide: env_matcher("hide_env", hide_env)?,
            pass: env_matcher("pass_env", pass_env)?,
        })
    }
}

fn env_matcher(key: &'static str, patterns: &[String]) -> Result<GlobSet, InvalidSetting> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = globset::GlobBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .map_err(|error| InvalidSetting::new(key, format!("{key} pattern `{pattern}`: {error}")))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|error| InvalidSetting::new(key, format!("{key}: {error}")))
}
