//! Settings, loaded in this order: defaults < config file < environment < CLI flags.
//! An unknown key or a bad value is an error naming the key, the file and the line.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::compact::CompactConfig;
use crate::instructions::InstructionsConfig;
use crate::provider::RetryPolicy;
use crate::setting::InvalidSetting;
use crate::tools::ToolsConfig;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub provider: ProviderSettings,
    pub compaction: CompactConfig,
    pub tools: ToolsConfig,
    pub ui: UiSettings,
    pub instructions: InstructionsConfig,
    /// `[mcp_servers.NAME]`: the MCP servers started at launch.
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::McpServerConfig>,
    /// What the file said that the user should know (a key read under its old name).
    #[serde(skip)]
    pub notes: Vec<String>,
}

pub use scratchpad_core::compact::AUTO_LIMIT;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Anthropic when ANTHROPIC_API_KEY is set, else the offline demo model.
    #[default]
    Auto,
    Anthropic,
    Openai,
    Demo,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSettings {
    pub kind: ProviderKind,
    /// Model id; empty means the provider's default.
    pub model: String,
    /// Empty means the provider's default (Anthropic) or http://127.0.0.1:8080/v1 (openai).
    pub base_url: String,
    pub max_tokens: u32,
    pub prompt_caching: bool,
    /// `"off"`, `"adaptive"` or a budget in tokens: whether a turn's calls let the
    /// model think first (Anthropic only).
    pub thinking: crate::provider::Thinking,
    /// The model's context window in tokens, when neither the server nor the table of
    /// known models says.
    pub context_window_tokens: u64,
    pub retry: RetryPolicy,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
            kind: ProviderKind::Auto,
            model: String::new(),
            base_url: String::new(),
            max_tokens: 8_192,
            prompt_caching: true,
            thinking: crate::provider::Thinking::Off,
            context_window_tokens: 200_000,
            retry: RetryPolicy::default(),
        }
    }
}

/// `ui.theme`: which palette the app draws with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThemeChoice {
    /// Ask the terminal for its background (OSC 11) and pick the palette made for it.
    #[default]
    Auto,
    Dark,
    Light,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UiSettings {
    /// Capture the mouse for wheel scrolling and clicking markers.
    pub mouse: bool,
    /// Make paths on screen OSC 8 hyperlinks where the terminal supports them.
    pub hyperlinks: bool,
    /// Delay between streamed words of the offline demo model, in milliseconds.
    pub demo_word_delay_ms: u64,
    /// `auto` (ask the terminal for its background), `dark` or `light`.
    pub theme: ThemeChoice,
}

impl Default for UiSettings {
    fn default() -> Self {
        UiSettings {
            mouse: true,
            hyperlinks: true,
            demo_word_delay_ms: 15,
            theme: ThemeChoice::Auto,
        }
    }
}

pub const DEFAULT_ANTHROPIC_MODEL: &str = crate::provider::anthropic::DEFAULT_MODEL;
pub const DEFAULT_OPENAI_BASE_URL: &str = "http://127.0.0.1:8080/v1";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config file {path}, line {line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("invalid setting: {0}")]
    Value(String),
    #[error(
        "config file {path} can be changed by {who}, so it is not used (it sets the sandbox and the permissions); fix with: chmod go-w {path}"
    )]
    Writable { path: PathBuf, who: &'static str },
}

/// Refuse a config file others can change, as ssh refuses such a file: it decides
/// the sandbox, the permissions and which commands run unasked. The file must belong
/// to this user (or root) and be writable by neither its group nor others.
fn check_owner_only(path: &Path) -> Result<(), ConfigError> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let who = if metadata.uid() != me && metadata.uid() != 0 {
        "another user (its owner)"
    } else if metadata.mode() & 0o002 != 0 {
        "anyone"
    } else if metadata.mode() & 0o020 != 0 {
        "its group"
    } else {
        return Ok(());
    };
    Err(ConfigError::Writable {
        path: path.to_path_buf(),
        who,
    })
}

/// The user's config file: `$XDG_CONFIG_HOME/scratchpad/config.toml` or the platform's
/// equivalent.
pub fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "scratchpad").map(|dirs| dirs.config_dir().join("config.toml"))
}

/// Where logs go: the platform's data dir (`~/.local/share/scratchpad/scratchpad.log`).
pub fn default_log_path() -> PathBuf {
    scratchpad_core::places::data_dir()
        .map(|dir| dir.join("scratchpad.log"))
        .unwrap_or_else(|| std::env::temp_dir().join("scratchpad.log"))
}

impl Config {
    /// Parse a config file's text, checking every value.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let parse_error = |error: toml::de::Error| ConfigError::Parse {
            path: path.to_path_buf(),
            message: error.to_string().trim_end().to_string(),
        };
        let table: toml::Table = toml::from_str(text).map_err(parse_error)?;
        let mut config: Config = toml::from_str(text).map_err(parse_error)?;
        let compaction = table.get("compaction");
        for (old, new) in [(
            "compact_when_idle",
            "compaction.background_swap = \"when_idle\" (or \"at_limit\")",
        )] {
            if compaction.and_then(|section| section.get(old)).is_some() {
                config.notes.push(format!(
                    "{}: compaction.{old} is now {new}; the old form is read for this release only",
                    path.display()
                ));
            }
        }
        if compaction.and_then(|section| section.get("confirm_lossy")).is_some() {
            config.notes.push(format!(
                "{}: compaction.confirm_lossy is now compaction.review_summaries; the old name is read for this \
                 release only",
                path.display()
            ));
        }
        config
            .validate()
            .map_err(|InvalidSetting { key, message }| ConfigError::Invalid {
                path: path.to_path_buf(),
                line: line_of(text, key),
                message,
            })?;
        Ok(config)
    }

    /// Load `path` if given (it must exist), else the default file if it exists.
    pub fn load(path: Option<&Path>) -> Result<(Self, Option<PathBuf>), ConfigError> {
        let chosen = match path {
            Some(path) => Some(path.to_path_buf()),
            None => default_config_path().filter(|p| p.is_file()),
        };
        let Some(chosen) = chosen else {
            return Ok((Config::default(), None));
        };
        check_owner_only(&chosen)?;
        let text = std::fs::read_to_string(&chosen).map_err(|source| ConfigError::Read {
            path: chosen.clone(),
            source,
        })?;
        Ok((Config::from_toml(&text, &chosen)?, Some(chosen)))
    }

    /// Environment overrides: `ANTHROPIC_BASE_URL`, `MODEL_ID`.
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) {
        if let Some(url) = env("ANTHROPIC_BASE_URL").filter(|v| !v.is_empty())
            && matches!(self.provider.kind, ProviderKind::Auto | ProviderKind::Anthropic)
        {
            self.provider.base_url = url;
        }
        if let Some(model) = env("MODEL_ID").filter(|v| !v.is_empty()) {
            self.provider.model = model;
        }
    }

    /// Check every value; the error names the key.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        self.compaction.validate()?;
        for (key, value, range) in self.numeric_settings() {
            if !range.contains(&value) {
                return Err(InvalidSetting::new(
                    key,
                    format!(
                        "{key} must be between {} and {}, got {value}",
                        range.start(),
                        range.end()
                    ),
                ));
            }
        }
        self.tools.hidden_env_matcher()?;
        for (name, server) in &self.mcp_servers {
            server.check(name)?;
        }
        if let Some(name) = self.instructions.files.iter().find(|name| !is_plain_file_name(name)) {
            return Err(InvalidSetting::new(
                "files",
                format!("instructions.files names files in each folder, not paths: {name:?}"),
            ));
        }
        Ok(())
    }
}

impl Config {
    /// Every number in the configuration with the range it must lie in, so that no
    /// value can wrap arithmetic, exhaust memory or make a wait endless.
    fn numeric_settings(&self) -> Vec<(&'static str, u64, std::ops::RangeInclusive<u64>)> {
        const CHARS: u64 = 1_000_000_000;
        const COUNT: u64 = 1_000_000;
        let c = &self.compaction;
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        vec![
            (
                "tool_result_budget_chars",
                as_u64(c.tool_result_budget_chars),
                1..=CHARS,
            ),
            (
                "persist_result_over_chars",
                as_u64(c.persist_result_over_chars),
                1..=CHARS,
            ),
            ("persisted_preview_chars", as_u64(c.persisted_preview_chars), 0..=COUNT),
            ("snip_max_messages", as_u64(c.snip_max_messages), 3..=COUNT),
            ("snip_keep_head", as_u64(c.snip_keep_head), 1..=COUNT),
            ("context_char_limit", as_u64(c.context_char_limit.chars), 2_000..=CHARS),
            ("micro_keep_recent", as_u64(c.micro_keep_recent), 0..=COUNT),
            ("micro_min_chars", as_u64(c.micro_min_chars), 0..=CHARS),
            ("fit_preview_chars", as_u64(c.fit_preview_chars), 0..=COUNT),
            ("reactive_keep_messages", as_u64(c.reactive_keep_messages), 0..=COUNT),
            (
                "summary_input_chars",
                as_u64(c.summary_input_chars),
                1_000..=100_000_000,
            ),
            ("index_percent", as_u64(c.index_percent), 0..=50),
            ("loop_guard", as_u64(c.loop_guard), 0..=100),
            ("summary_floor_chars", as_u64(c.summary_floor_chars), 0..=CHARS),
            ("max_tokens", u64::from(self.provider.max_tokens), 1..=1_000_000),
            (
                "context_window_tokens",
                self.provider.context_window_tokens,
                1..=100_000_000,
            ),
            ("max_attempts", u64::from(self.provider.retry.max_attempts), 1..=20),
            ("base_delay_ms", self.provider.retry.base_delay_ms, 0..=600_000),
            ("max_delay_ms", self.provider.retry.max_delay_ms, 0..=600_000),
            ("idle_timeout_secs", self.provider.retry.idle_timeout_secs, 1..=3_600),
            ("startup_wait_secs", self.provider.retry.startup_wait_secs, 0..=3_600),
            ("bash_timeout_secs", self.tools.bash_timeout_secs, 1..=600),
            ("output_cap_bytes", as_u64(self.tools.output_cap_bytes), 1_000..=1 << 30),
            (
                "read_default_lines",
                as_u64(self.tools.read_default_lines),
                1..=10_000_000,
            ),
            ("demo_word_delay_ms", self.ui.demo_word_delay_ms, 0..=10_000),
            ("max_bytes", as_u64(self.instructions.max_bytes), 0..=16 << 20),
        ]
    }
}

/// A name without a folder: `AGENTS.md`, not `docs/AGENTS.md` or `..`.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('\0')
}

/// The 1-based line where `key` is set, found by the TOML parser's spans in whichever
/// table holds it (every key name is used by one table only), so a key in a comment or
/// a string never counts; 0 when the file does not set it.
fn line_of(text: &str, key: &str) -> usize {
    fn find(table: &toml::de::DeTable<'_>, key: &str) -> Option<usize> {
        table.iter().find_map(|(name, value)| {
            if name.get_ref() == key {
                return Some(name.span().start);
            }
            match value.get_ref() {
                toml::de::DeValue::Table(inner) => find(inner, key),
                _ => None,
            }
        })
    }
    toml::de::DeTable::parse(text)
        .ok()
        .and_then(|document| find(document.get_ref(), key))
        .map_or(0, |start| text[..start].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml(text, Path::new("config.toml"))
    }

    #[test]
    fn an_error_names_the_line_the_parser_found_the_key_on() {
        let text = "# context_char_limit = 1 is what a comment may say\n[provider]\nmodel = \"context_char_limit = 5\"\n\n[compaction]\ncontext_char_limit = 10\n";
        let error = parse(text).unwrap_err().to_string();
        assert!(
            error.contains("line 6") && error.contains("context_char_limit"),
            "{error}"
        );
        let retry = parse("[provider.retry]\nmax_attempts = 99\n").unwrap_err().to_string();
        assert!(retry.contains("line 2: max_attempts"), "{retry}");
    }

    #[test]
    fn an_automatic_limit_is_read_and_errors_keep_their_lines() {
        use crate::compact::Limit;
        let auto = parse("[compaction]\ncontext_char_limit = \"auto\"\nsnip_keep_head = 2\n").unwrap();
        assert_eq!(auto.compaction.context_char_limit, Limit::auto());
        assert_eq!(auto.compaction.snip_keep_head, 2);
        assert_eq!(parse("").unwrap().compaction.context_char_limit, Limit::chars(50_000));
        let later = parse("[compaction]\ncontext_char_limit = \"auto\"\nsnip_keep_head = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(later.contains("line 3"), "{later}");
        let wrong = parse("[compaction]\ncontext_char_limit = \"automatic\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("line 2") && wrong.contains("a number of characters or \"auto\""),
            "{wrong}"
        );
        let negative = parse("[compaction]\ncontext_char_limit = -5\n")
            .unwrap_err()
            .to_string();
        assert!(negative.contains("a number of characters"), "{negative}");
    }

    #[test]
    fn an_mcp_server_is_read_and_its_mistakes_are_named() {
        let config = parse(
            "[mcp_servers.gh]\ncommand = \"npx\"\nargs = [\"-y\", \"srv\"]\nenv = { T = \"${GH}\" }\n\
             tool_timeout_secs = 9\ntrusted_tools = [\"a\"]\nmax_result_chars = 5000\n",
        )
        .unwrap();
        let server = &config.mcp_servers["gh"];
        assert_eq!(server.args, ["-y", "srv"]);
        assert_eq!(server.env["T"], "${GH}");
        assert_eq!((server.tool_timeout_secs, server.max_result_chars), (9, 5000));
        assert!(server.trusts("a") && server.enabled);
        let unknown = parse("[mcp_servers.gh]\ncommand = \"x\"\nurl_typo = 1\n")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("line 3"), "{unknown}");
        let missing = parse("[mcp_servers.gh]\nargs = []\n").unwrap_err().to_string();
        assert!(missing.contains("neither a `command`"), "{missing}");
        let both = parse("[mcp_servers.gh]\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n")
            .unwrap_err()
            .to_string();
        assert!(both.contains("one or the other"), "{both}");
        let web = parse("[mcp_servers.web]\nurl = \"https://h/mcp\"\nheaders = { X-Key = \"${K}\" }\n").unwrap();
        assert_eq!(web.mcp_servers["web"].headers["X-Key"], "${K}");
        let scheme = parse("[mcp_servers.web]\nurl = \"ftp://h\"\n").unwrap_err().to_string();
        assert!(scheme.contains("http:// or https://"), "{scheme}");
        let tiny = parse("[mcp_servers.gh]\ncommand = \"x\"\nmax_result_chars = 3\n")
            .unwrap_err()
            .to_string();
        assert!(tiny.contains("max_result_chars must be between 200"), "{tiny}");
    }

    #[test]
    fn the_example_file_is_the_defaults() {
        let example = include_str!("../../../config.example.toml");
        assert_eq!(parse(example).unwrap(), Config::default());
    }

    #[test]
    fn thinking_is_off_adaptive_or_a_budget_and_anything_else_is_named() {
        use crate::provider::Thinking;
        let thinking = |value: &str| parse(&format!("[provider]\nthinking = {value}\n"));
        assert_eq!(thinking("\"adaptive\"").unwrap().provider.thinking, Thinking::Adaptive);
        assert_eq!(thinking("\"off\"").unwrap().provider.thinking, Thinking::Off);
        assert_eq!(thinking("4096").unwrap().provider.thinking, Thinking::Budget(4096));
        let small = thinking("100").unwrap_err().to_string();
        assert!(small.contains("line 2") && small.contains("at least 1024"), "{small}");
        let word = thinking("\"lots\"").unwrap_err().to_string();
        assert!(word.contains("\"lots\"") && word.contains("adaptive"), "{word}");
    }

    #[test]
    fn every_key_is_read() {
        let text = r#"
[provider]
kind = "openai"
model = "m"
base_url = "http://127.0.0.1:9/v1"
max_tokens = 100
prompt_caching = false
thinking = 2048
context_window_tokens = 8192
[provider.retry]
max_attempts = 2
base_delay_ms = 5
max_delay_ms = 10
idle_timeout_secs = 7
startup_wait_secs = 9
[compaction]
tool_result_budget_chars = 1
persist_result_over_chars = 2
persisted_preview_chars = 1
snip_max_messages = 10
snip_keep_head = 2
context_char_limit = 3000
micro_target_percent = 50
micro_keep_recent = 1
micro_min_chars = 10
fit_preview_chars = 20
reactive_keep_messages = 3
summary_input_chars = 2000
index_percent = 5
loop_guard = 4
summary_floor_chars = 300
estimate = "compact"
review_summaries = true
summariser = "server"
background_at_percent = 55
background_swap = "when_idle"
[tools]
bash_timeout_secs = 5
output_cap_bytes = 2000
read_default_lines = 10
[tools.permissions]
deny = ["git push"]
ask = ["curl"]
allow_outside_workspace = true
[ui]
mouse = false
hyperlinks = false
demo_word_delay_ms = 0
theme = "light"
[instructions]
files = ["RULES.md"]
max_bytes = 100
"#;
        let config = parse(text).unwrap();
        let mut expected = Config {
            provider: ProviderSettings {
                kind: ProviderKind::Openai,
                model: "m".into(),
                base_url: "http://127.0.0.1:9/v1".into(),
                max_tokens: 100,
                prompt_caching: false,
                thinking: crate::provider::Thinking::Budget(2048),
                context_window_tokens: 8192,
                retry: RetryPolicy {
                    max_attempts: 2,
                    base_delay_ms: 5,
                    max_delay_ms: 10,
                    idle_timeout_secs: 7,
                    startup_wait_secs: 9,
                },
            },
            ..Config::default()
        };
        expected.compaction = CompactConfig {
            tool_result_budget_chars: 1,
            persist_result_over_chars: 2,
            persisted_preview_chars: 1,
            snip_max_messages: 10,
            snip_keep_head: 2,
            context_char_limit: crate::compact::Limit::chars(3000),
            micro_target_percent: 50,
            micro_keep_recent: 1,
            micro_min_chars: 10,
            fit_preview_chars: 20,
            reactive_keep_messages: 3,
            summary_input_chars: 2000,
            index_percent: 5,
            loop_guard: 4,
            summary_floor_chars: 300,
            estimate: crate::compact::EstimateMode::Compact,
            review_summaries: true,
            summariser: crate::compact::SummariserChoice::Server,
            background_at_percent: 55,
            background_swap: crate::compact::BackgroundSwap::WhenIdle,
        };
        expected.tools.bash_timeout_secs = 5;
        expected.tools.output_cap_bytes = 2000;
        expected.tools.read_default_lines = 10;
        expected.tools.permissions.deny = vec!["git push".into()];
        expected.tools.permissions.ask = vec!["curl".into()];
        expected.tools.permissions.allow_outside_workspace = true;
        expected.ui = UiSettings {
            mouse: false,
            hyperlinks: false,
            demo_word_delay_ms: 0,
            theme: ThemeChoice::Light,
        };
        expected.instructions.files = vec!["RULES.md".into()];
        expected.instructions.max_bytes = 100;
        assert_eq!(config, expected);
    }

    /// A key read under its old name (or form) works for this release, and says its
    /// new one.
    #[test]
    fn old_key_names_are_read_and_said() {
        let path = Path::new("/tmp/old.toml");
        let old = Config::from_toml("[compaction]\nconfirm_lossy = true\n", path).unwrap();
        assert!(old.compaction.review_summaries);
        assert_eq!(old.notes.len(), 1);
        assert!(
            old.notes[0].contains("is now compaction.review_summaries"),
            "{:?}",
            old.notes
        );
        let new = Config::from_toml("[compaction]\nreview_summaries = true\n", path).unwrap();
        assert!(new.compaction.review_summaries);
        assert!(new.notes.is_empty());
        let idle = Config::from_toml("[compaction]\ncompact_when_idle = true\n", path).unwrap();
        assert_eq!(
            idle.compaction.background_swap,
            crate::compact::BackgroundSwap::WhenIdle
        );
        assert!(
            idle.notes[0].contains("is now compaction.background_swap"),
            "{:?}",
            idle.notes
        );
        let wrong = Config::from_toml("[compaction]\nbackground_swap = \"soon\"\n", path)
            .unwrap_err()
            .to_string();
        assert!(wrong.contains("\"at_limit\" or \"when_idle\""), "{wrong}");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key_and_line() {
        let unknown = parse("[compaction]\ncontext_char_limt = 5\n").unwrap_err().to_string();
        assert!(
            unknown.contains("context_char_limt") && unknown.contains("line 2"),
            "{unknown}"
        );
        let wrong_type = parse("[compaction]\n\ncontext_char_limit = \"big\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            wrong_type.contains("line 3") && wrong_type.contains("context_char_limit"),
            "{wrong_type}"
        );
        let too_small = parse("[compaction]\ncontext_char_limit = 10\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            too_small,
            "config file config.toml, line 2: context_char_limit must be at least 2000, got 10"
        );
        let percent = parse("[compaction]\n\n\nmicro_target_percent = 0\n")
            .unwrap_err()
            .to_string();
        assert!(percent.contains("line 4"), "{percent}");
        let kind = parse("[provider]\nkind = \"gpt\"\n").unwrap_err().to_string();
        assert!(kind.contains("line 2") && kind.contains("gpt"), "{kind}");
        let stray = parse("[tools]\ndeny = []\n").unwrap_err().to_string();
        assert!(stray.contains("deny") && stray.contains("line 2"), "{stray}");
        let timeout = parse("[tools]\nbash_timeout_secs = 0\n").unwrap_err().to_string();
        assert!(
            timeout.contains("line 2") && timeout.contains("bash_timeout_secs"),
            "{timeout}"
        );
        let path = parse("[instructions]\n\nfiles = [\"AGENTS.md\", \"docs/AGENTS.md\"]\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            path,
            "config file config.toml, line 3: instructions.files names files in each folder, not paths: \"docs/AGENTS.md\""
        );
    }

    #[test]
    fn values_that_would_overflow_or_wait_forever_are_refused_by_name() {
        for (text, key) in [
            (
                "[compaction]\nsnip_keep_head = 18446744073709551615\n",
                "snip_keep_head",
            ),
            (
                "[compaction]\ncontext_char_limit = 18446744073709551615\n",
                "context_char_limit",
            ),
            (
                "[provider.retry]\nmax_delay_ms = 18446744073709551615\n",
                "max_delay_ms",
            ),
            ("[provider.retry]\nbase_delay_ms = 9999999999\n", "base_delay_ms"),
            ("[provider.retry]\nidle_timeout_secs = 0\n", "idle_timeout_secs"),
            ("[tools]\noutput_cap_bytes = 18446744073709551615\n", "output_cap_bytes"),
        ] {
            let error = parse(text).expect_err(text).to_string();
            assert!(error.contains(key), "{text}: {error}");
        }
    }

    #[test]
    fn a_config_file_others_can_change_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[tools.sandbox]\nmode = \"off\"\n").unwrap();
        for (mode, who) in [(0o666, "anyone"), (0o620, "its group")] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let error = Config::load(Some(&path)).unwrap_err().to_string();
            assert!(error.contains(who) && error.contains("chmod go-w"), "{error}");
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (config, _) = Config::load(Some(&path)).unwrap();
        assert_eq!(config.tools.sandbox.mode, crate::tools::sandbox::SandboxMode::Off);
    }

    #[test]
    fn environment_overrides_the_file() {
        let mut config = Config::default();
        config.apply_env(|key| match key {
            "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:1".into()),
            "MODEL_ID" => Some("claude-x".into()),
            _ => None,
        });
        assert_eq!(config.provider.base_url, "http://127.0.0.1:1");
        assert_eq!(config.provider.model, "claude-x");
    }
}
