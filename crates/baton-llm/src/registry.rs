//! Providers by name: the bundled ones, the user's `[providers.*]` entries, and the one function
//! that turns a `provider/model` spec into a ready [`ModelClient`].
//!
//! A user entry with a bundled name replaces the bundled entry, except that fields it leaves out
//! are taken from the bundled one when both have the same kind (so `[providers.openai]` with just
//! `kind` and `timeout_secs` keeps the URL and key variable). API keys are read from the
//! environment variable the entry names, at client construction, and never appear in messages.
//!
//! The prompt-cache settings say what a provider's server takes: `cache` (Anthropic kind: the
//! breakpoints' lifetime, or `off`), `cache_key` and `cache_prompt` (OpenAI-compatible kind:
//! whether `prompt_cache_key` and `cache_prompt` may be sent). The bundled `openai` entry sends
//! the key and the bundled `llamacpp` entry `cache_prompt`; no other server gets a parameter it
//! was not declared to take.

use crate::anthropic::AnthropicClient;
use crate::cache::PromptCache;
use crate::client::ModelClient;
use crate::error::LlmError;
use crate::openai::OpenAiClient;
pub use crate::openai::ToolChoice;
use crate::retry::RetryPolicy;
use crate::script::ScriptClient;
use crate::types::ModelSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions.
    #[serde(rename = "openai")]
    OpenAi,
    /// The Anthropic Messages API.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Scripted replay from YAML files.
    #[serde(rename = "script")]
    Script,
}

/// One provider entry (`[providers.<name>]` in `baton.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Protocol: `openai`, `anthropic` or `script`.
    pub kind: ProviderKind,
    /// Endpoint, e.g. `http://localhost:11434/v1` (OpenAI-compatible URLs end before
    /// `/chat/completions`, Anthropic ones before `/v1/messages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Environment variable holding the API key; none means no key is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Limit for one whole model call in seconds (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Retries after the first attempt (default 3, so 4 attempts in all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Most bytes one streamed answer may have (default 8 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_answer_bytes: Option<u64>,
    /// Script provider: folder of `<model>.yaml` files, relative to the project root (default
    /// `.baton/scripts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_dir: Option<PathBuf>,
    /// Output cap of one model turn, in tokens (sent as `max_tokens`). When an agent sets its
    /// own cap too, the smaller one applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// OpenAI-compatible only: the `tool_choice` sent with tools (`auto`, `required`, `none`);
    /// unset sends none (the server's default, `auto` on most). llama-cpp-python's server
    /// ignores `tools` unless it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Anthropic only: the prompt-cache breakpoints' lifetime (`5m`, `1h`) or `off` (unset:
    /// `5m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<PromptCache>,
    /// OpenAI-compatible only: send a `prompt_cache_key` per agent and unit (unset: no; the
    /// bundled `openai` entry says yes). Only for servers that take the parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<bool>,
    /// OpenAI-compatible only: send `cache_prompt: true`, llama.cpp's server's request to keep
    /// the previous prompt's KV cache (unset: no; the bundled `llamacpp` entry says yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_prompt: Option<bool>,
}

impl ProviderConfig {
    /// An entry of `kind` with every optional field unset.
    pub fn new(kind: ProviderKind) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: None,
            api_key_env: None,
            timeout_secs: None,
            max_retries: None,
            max_answer_bytes: None,
            script_dir: None,
            max_tokens: None,
            tool_choice: None,
            cache: None,
            cache_key: None,
            cache_prompt: None,
        }
    }

    fn url(kind: ProviderKind, url: &str, key: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            base_url: Some(url.to_owned()),
            api_key_env: key.map(str::to_owned),
            ..ProviderConfig::new(kind)
        }
    }

    /// The retry policy this entry asks for.
    pub fn retry_policy(&self) -> RetryPolicy {
        let mut policy = RetryPolicy::default();
        if let Some(seconds) = self.timeout_secs {
            policy.timeout = Duration::from_secs(seconds);
        }
        if let Some(retries) = self.max_retries {
            policy.max_attempts = retries.saturating_add(1);
        }
        if let Some(bytes) = self.max_answer_bytes {
            policy.max_answer_bytes = bytes;
        }
        policy
    }

    /// Fills the fields this entry leaves out from `base` (same kind only).
    fn or_from(mut self, base: &ProviderConfig) -> ProviderConfig {
        if self.kind == base.kind {
            self.base_url = self.base_url.or_else(|| base.base_url.clone());
            self.api_key_env = self.api_key_env.or_else(|| base.api_key_env.clone());
            self.timeout_secs = self.timeout_secs.or(base.timeout_secs);
            self.max_retries = self.max_retries.or(base.max_retries);
            self.max_answer_bytes = self.max_answer_bytes.or(base.max_answer_bytes);
            self.script_dir = self.script_dir.or_else(|| base.script_dir.clone());
            self.max_tokens = self.max_tokens.or(base.max_tokens);
            self.tool_choice = self.tool_choice.or(base.tool_choice);
            self.cache = self.cache.or(base.cache);
            self.cache_key = self.cache_key.or(base.cache_key);
            self.cache_prompt = self.cache_prompt.or(base.cache_prompt);
        }
        self
    }
}

/// Default OpenAI endpoint, for `openai`-kind entries without a `base_url`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Default Anthropic endpoint, for `anthropic`-kind entries without a `base_url`.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// Default folder of script files, relative to the project root.
pub const DEFAULT_SCRIPT_DIR: &str = ".baton/scripts";

/// The providers baton knows without configuration.
pub fn bundled_providers() -> BTreeMap<String, ProviderConfig> {
    use ProviderKind::{Anthropic, OpenAi, Script};
    let entries = [
        (
            "openai",
            ProviderConfig {
                cache_key: Some(true),
                ..ProviderConfig::url(OpenAi, OPENAI_BASE_URL, Some("OPENAI_API_KEY"))
            },
        ),
        (
            "anthropic",
            ProviderConfig::url(Anthropic, ANTHROPIC_BASE_URL, Some("ANTHROPIC_API_KEY")),
        ),
        (
            "ollama",
            ProviderConfig::url(OpenAi, "http://localhost:11434/v1", None),
        ),
        (
            "vllm",
            ProviderConfig::url(OpenAi, "http://localhost:8000/v1", None),
        ),
        (
            "llamacpp",
            ProviderConfig {
                cache_prompt: Some(true),
                ..ProviderConfig::url(OpenAi, "http://localhost:8080/v1", None)
            },
        ),
        (
            "openrouter",
            ProviderConfig::url(
                OpenAi,
                "https://openrouter.ai/api/v1",
                Some("OPENROUTER_API_KEY"),
            ),
        ),
        (
            "script",
            ProviderConfig {
                script_dir: Some(PathBuf::from(DEFAULT_SCRIPT_DIR)),
                ..ProviderConfig::new(Script)
            },
        ),
    ];
    entries
        .into_iter()
        .map(|(name, config)| (name.to_owned(), config))
        .collect()
}

/// The entry for `name`: the user's (completed from a bundled one of the same name and kind),
/// else the bundled one.
pub fn resolve_provider(
    name: &str,
    providers: &BTreeMap<String, ProviderConfig>,
) -> Result<ProviderConfig, LlmError> {
    let bundled = bundled_providers();
    match (providers.get(name), bundled.get(name)) {
        (Some(user), Some(base)) => Ok(user.clone().or_from(base)),
        (Some(user), None) => Ok(user.clone()),
        (None, Some(base)) => Ok(base.clone()),
        (None, None) => {
            let mut known: Vec<&str> = bundled
                .keys()
                .chain(providers.keys())
                .map(String::as_str)
                .collect();
            known.sort_unstable();
            known.dedup();
            Err(LlmError::Config(format!(
                "unknown provider `{name}`; known providers: {}. Add a `[providers.{name}]` \
                 entry to `baton.toml` to define it",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }
}

/// Builds the client for `spec`. `providers` are the user's entries; `root` is the project root
/// (script paths are relative to it).
pub fn build_client(
    spec: &ModelSpec,
    providers: &BTreeMap<String, ProviderConfig>,
    root: &Path,
) -> Result<Arc<dyn ModelClient>, LlmError> {
    let name = spec.provider.as_str();
    let config = resolve_provider(name, providers)?;
    let api_key = match &config.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Some(key.trim().to_owned()),
            _ => {
                return Err(LlmError::Config(format!(
                    "provider `{name}` needs an API key in the environment variable `{var}`, \
                     which is not set; export it or change `api_key_env` in `[providers.{name}]`"
                )));
            }
        },
        None => None,
    };
    let policy = config.retry_policy();
    Ok(match config.kind {
        ProviderKind::OpenAi => {
            let url = config.base_url.as_deref().unwrap_or(OPENAI_BASE_URL);
            Arc::new(
                OpenAiClient::new(name, url, api_key)?
                    .with_retry_policy(policy)
                    .with_tool_choice(config.tool_choice)
                    .with_cache_key(config.cache_key.unwrap_or(false))
                    .with_cache_prompt(config.cache_prompt.unwrap_or(false)),
            )
        }
        ProviderKind::Anthropic => {
            let url = config.base_url.as_deref().unwrap_or(ANTHROPIC_BASE_URL);
            Arc::new(
                AnthropicClient::new(name, url, api_key)?
                    .with_retry_policy(policy)
                    .with_cache(config.cache.unwrap_or_default()),
            )
        }
        ProviderKind::Script => {
            Arc::new(ScriptClient::load(script_path(&config, &spec.model, root))?)
        }
    })
}

/// Where the script for `model` lives: `<root>/<model>` for a model ending in `.yaml`/`.yml`,
/// else `<root>/<script_dir>/<model>.yaml`.
pub fn script_path(config: &ProviderConfig, model: &str, root: &Path) -> PathBuf {
    if model.ends_with(".yaml") || model.ends_with(".yml") {
        return root.join(model);
    }
    let dir = config
        .script_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_SCRIPT_DIR));
    root.join(dir).join(format!("{model}.yaml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> ModelSpec {
        ModelSpec::parse(s).expect("valid spec")
    }

    fn config_error(result: Result<Arc<dyn ModelClient>, LlmError>) -> String {
        match result {
            Err(LlmError::Config(message)) => message,
            Err(other) => panic!("expected a config error, got {other}"),
            Ok(_) => panic!("expected a config error, got a client"),
        }
    }

    #[test]
    fn unknown_provider_lists_the_known_ones() {
        let mut user = BTreeMap::new();
        user.insert("mine".to_owned(), ProviderConfig::new(ProviderKind::OpenAi));
        let message = config_error(build_client(&spec("nope/x"), &user, Path::new(".")));
        assert!(message.contains("unknown provider `nope`"), "{message}");
        for name in [
            "`anthropic`",
            "`llamacpp`",
            "`mine`",
            "`ollama`",
            "`openai`",
            "`script`",
        ] {
            assert!(message.contains(name), "{name} missing from: {message}");
        }
    }

    #[test]
    fn missing_key_variable_is_named_and_no_key_is_printed() {
        let var = "BATON_TEST_KEY_THAT_IS_NEVER_SET_7F3A";
        let mut user = BTreeMap::new();
        user.insert(
            "corp".to_owned(),
            ProviderConfig {
                api_key_env: Some(var.to_owned()),
                base_url: Some("http://127.0.0.1:9/v1".to_owned()),
                ..ProviderConfig::new(ProviderKind::OpenAi)
            },
        );
        let message = config_error(build_client(&spec("corp/m"), &user, Path::new(".")));
        assert!(message.contains(var), "{message}");
        assert!(message.contains("`corp`"), "{message}");
    }

    #[test]
    fn local_providers_need_no_key() {
        let providers = BTreeMap::new();
        for name in ["ollama/llama3", "vllm/qwen", "llamacpp/any"] {
            assert!(
                build_client(&spec(name), &providers, Path::new(".")).is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn user_entries_override_and_inherit_bundled_fields() {
        let mut user = BTreeMap::new();
        user.insert(
            "openai".to_owned(),
            ProviderConfig {
                timeout_secs: Some(5),
                max_retries: Some(0),
                ..ProviderConfig::new(ProviderKind::OpenAi)
            },
        );
        let resolved = resolve_provider("openai", &user).expect("known");
        assert_eq!(resolved.base_url.as_deref(), Some(OPENAI_BASE_URL));
        assert_eq!(resolved.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        let policy = resolved.retry_policy();
        assert_eq!(policy.timeout, Duration::from_secs(5));
        assert_eq!(policy.max_attempts, 1);

        user.insert(
            "ollama".to_owned(),
            ProviderConfig::new(ProviderKind::Anthropic),
        );
        let resolved = resolve_provider("ollama", &user).expect("known");
        assert_eq!(resolved, ProviderConfig::new(ProviderKind::Anthropic));
    }

    #[test]
    fn cache_hints_default_by_provider_and_are_inherited() {
        let none = BTreeMap::new();
        let resolved = |name: &str, user: &BTreeMap<String, ProviderConfig>| {
            let p = resolve_provider(name, user).expect("known");
            (p.cache, p.cache_key, p.cache_prompt)
        };
        assert_eq!(resolved("openai", &none), (None, Some(true), None));
        assert_eq!(resolved("llamacpp", &none), (None, None, Some(true)));
        for local in ["ollama", "vllm", "openrouter", "anthropic"] {
            assert_eq!(resolved(local, &none), (None, None, None), "{local}");
        }
        let mut user = BTreeMap::new();
        user.insert(
            "openai".to_owned(),
            ProviderConfig {
                timeout_secs: Some(5),
                ..ProviderConfig::new(ProviderKind::OpenAi)
            },
        );
        user.insert(
            "llamacpp".to_owned(),
            ProviderConfig {
                cache_prompt: Some(false),
                ..ProviderConfig::new(ProviderKind::OpenAi)
            },
        );
        user.insert(
            "anthropic".to_owned(),
            ProviderConfig {
                cache: Some(PromptCache::OneHour),
                ..ProviderConfig::new(ProviderKind::Anthropic)
            },
        );
        assert_eq!(resolved("openai", &user), (None, Some(true), None));
        assert_eq!(resolved("llamacpp", &user), (None, None, Some(false)));
        assert_eq!(
            resolved("anthropic", &user),
            (Some(PromptCache::OneHour), None, None)
        );
        let config: ProviderConfig =
            serde_json::from_str(r#"{"kind": "anthropic", "cache": "off"}"#).expect("valid");
        assert_eq!(config.cache, Some(PromptCache::Off));
        assert!(
            serde_json::from_str::<ProviderConfig>(r#"{"kind": "anthropic", "cache": "10m"}"#)
                .is_err()
        );
    }

    #[test]
    fn script_paths() {
        let config = bundled_providers().remove("script").expect("bundled");
        let root = Path::new("/proj");
        assert_eq!(
            script_path(&config, "demo", root),
            Path::new("/proj/.baton/scripts/demo.yaml")
        );
        assert_eq!(
            script_path(&config, "tests/run.yml", root),
            Path::new("/proj/tests/run.yml")
        );
    }

    #[test]
    fn missing_script_names_the_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let message = config_error(build_client(
            &spec("script/absent"),
            &BTreeMap::new(),
            dir.path(),
        ));
        assert!(message.contains("absent.yaml"), "{message}");
    }

    #[test]
    fn kinds_are_spelled_in_lowercase_and_unknown_fields_are_refused() {
        let config: ProviderConfig =
            serde_json::from_str(r#"{"kind": "openai", "base_url": "http://x"}"#).expect("valid");
        assert_eq!(config.kind, ProviderKind::OpenAi);
        assert!(serde_json::from_str::<ProviderConfig>(r#"{"kind": "OpenAi"}"#).is_err());
        assert!(
            serde_json::from_str::<ProviderConfig>(r#"{"kind": "script", "dir": "x"}"#).is_err()
        );
    }
}
