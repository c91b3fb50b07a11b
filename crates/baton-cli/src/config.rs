//! `baton.toml`: typed, strict, resolved once at the edge.
//!
//! The raw file is read with unknown keys rejected (naming their line), then resolved against the
//! project root into a [`Config`] with absolute paths and every default filled in; the libraries
//! receive plain values, never the file. Defaults follow BMad's layout
//! (`_bmad-output/implementation-artifacts/sprint-status.yaml`, stories beside it,
//! `_bmad-output/planning-artifacts/`), so a project without `baton.toml` works as is.

use baton_core::budget::BudgetLimits;
use baton_llm::pricing::Price;
use baton_llm::registry::ProviderConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The config file's name, at the project root.
pub const FILE_NAME: &str = "baton.toml";
/// baton's private directory, at the project root.
pub const STATE_DIR: &str = ".baton";

/// Default location of the sprint file, relative to the root.
pub const DEFAULT_SPRINT_STATUS: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";
/// Default story directory.
pub const DEFAULT_STORIES: &str = "_bmad-output/implementation-artifacts";
/// Default planning directory.
pub const DEFAULT_PLANNING: &str = "_bmad-output/planning-artifacts";

/// Errors reading `baton.toml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Reading failed.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// A value is out of its range, or a pattern is invalid.
    #[error("{}:{line}: `{key}` {message}", path.display())]
    Value {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key (1 when it cannot be found).
        line: usize,
        /// The key, as `[section] key`.
        key: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// The TOML is invalid or has unknown keys.
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// `baton.toml` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[paths]`.
    #[serde(default)]
    pub paths: RawPaths,
    /// `[sprint]`.
    #[serde(default)]
    pub sprint: RawSprint,
    /// `[providers.NAME]`: model providers (override the bundled ones by name).
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[prices."provider/model"]`: prices per million tokens (override the bundled ones).
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    /// `[budget]`.
    #[serde(default)]
    pub budget: BudgetLimits,
    /// `[commands]`.
    #[serde(default)]
    pub commands: RawCommands,
    /// `[sandbox]`.
    #[serde(default)]
    pub sandbox: RawSandbox,
    /// `[agents]`.
    #[serde(default)]
    pub agents: RawAgents,
    /// `[team]`.
    #[serde(default)]
    pub team: RawTeam,
    /// `[tdd]`: the test-first guard.
    #[serde(default)]
    pub tdd: RawTdd,
    /// `[rules]`: context rules.
    #[serde(default)]
    pub rules: RawRules,
    /// `[cli.NAME]`: coding-agent CLIs (docs/cli-workers.md).
    #[serde(default)]
    pub cli: crate::cli_workers::RawCli,
}

/// `[tdd]`: the test-first guard (docs/tdd.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTdd {
    /// `off`, `tdd` or `atdd` (`baton tdd …` overrides it; an untrusted project may only turn
    /// the guard on).
    pub mode: Option<String>,
    /// Globs of paths the guard never checks (replaces the defaults).
    pub exempt: Option<Vec<String>>,
    /// Commands that run the tests, each a program with leading arguments (added to the defaults).
    pub test_commands: Option<Vec<Vec<String>>>,
    /// Explicit mappings: implementation glob → test path (`{stem}`: the file's stem).
    pub overrides: Option<BTreeMap<String, String>>,
}

/// `[rules]`: context rules (docs/agents.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRules {
    /// Whether rules are injected at all (default true).
    pub enabled: Option<bool>,
}

/// `[commands]`: what `run_command` may run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommands {
    /// Programs allowed (replaces the default list).
    pub allow: Option<Vec<String>>,
    /// Timeout of one command, in seconds (default 300).
    pub timeout_secs: Option<u64>,
    /// Output kept per command, in bytes (default 30000).
    pub max_output_bytes: Option<usize>,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSandbox {
    /// Glob patterns agents may neither read nor write (replaces the default list).
    pub deny: Option<Vec<String>>,
}

/// `[agents]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgents {
    /// A `provider/model` that replaces every agent's own model.
    pub model: Option<String>,
    /// Turn limit of agents that set none (default 40).
    pub max_turns: Option<u32>,
    /// Timeout of agents that set none, in seconds (default 1800).
    pub timeout_secs: Option<u64>,
    /// Output cap of one model turn, in tokens, for agents without their own (default 8192; a
    /// provider's `max_tokens` lowers it).
    pub max_tokens: Option<u32>,
    /// `[agents.overrides.NAME]`: settings of one agent.
    #[serde(default)]
    pub overrides: BTreeMap<String, RawAgentOverride>,
    /// `[agents.roles]`: a model (or CLI backend) per role.
    #[serde(default)]
    pub roles: BTreeMap<String, String>,
}

/// `[agents.overrides.NAME]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgentOverride {
    /// Output cap of one model turn of this agent, in tokens.
    pub max_tokens: Option<u32>,
}

/// `[team]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTeam {
    /// How many agents `--parallel` runs at once (default 4).
    pub concurrency: Option<usize>,
}

/// `[paths]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPaths {
    /// The sprint-status file.
    pub sprint_status: Option<PathBuf>,
    /// Where story files live.
    pub stories: Option<PathBuf>,
    /// Planning artifacts.
    pub planning: Option<PathBuf>,
}

/// `[sprint]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSprint {
    /// Write extended statuses literally (default false: projection + comment).
    pub write_extended_statuses: Option<bool>,
    /// Move an epic to done when all its stories are done (default true).
    pub auto_epic_done: Option<bool>,
    /// Days after which the sprint file is reported stale (default 7).
    pub stale_days: Option<u32>,
    /// The project's test command, run by the orchestrator after every dev and fix step
    /// (program and arguments, no shell), e.g. `["cargo", "test"]`.
    pub test_command: Option<Vec<String>>,
    /// Timeout of one test run in seconds (default 900).
    pub test_timeout_secs: Option<u64>,
    /// Fix rounds before escalating (default 3).
    pub max_review_rounds: Option<u32>,
    /// Findings a review must report (default 3).
    pub min_findings: Option<usize>,
    /// Review story documents before development (default false).
    pub story_review: Option<bool>,
    /// Verify stories end to end with QA after review (default false).
    pub qa: Option<bool>,
    /// Stories per `baton sprint` run (default 3).
    pub batch: Option<usize>,
    /// Statuses a story enters only after a human confirms, in standard mode (default ["done"]).
    pub checkpoints: Option<Vec<String>>,
    /// Timeout of one story in seconds (default 7200).
    pub story_timeout_secs: Option<u64>,
    /// Timeout of one run in seconds (default 28800).
    pub run_timeout_secs: Option<u64>,
    /// Hold an epic's retrospective when its last story is done (default false).
    pub retrospective: Option<bool>,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Project root.
    pub root: PathBuf,
    /// The sprint-status file.
    pub sprint_status: PathBuf,
    /// Story directory.
    pub stories: PathBuf,
    /// Planning directory.
    pub planning: PathBuf,
    /// `.baton/`.
    pub state_dir: PathBuf,
    /// Write extended statuses literally.
    pub write_extended_statuses: bool,
    /// Epic follows to done automatically.
    pub auto_epic_done: bool,
    /// Staleness threshold in days.
    pub stale_days: u32,
    /// Providers: bundled, overridden by name from the file.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Prices: bundled, overridden from the file.
    pub prices: BTreeMap<String, Price>,
    /// Run budget.
    pub budget: BudgetLimits,
    /// `run_command` policy.
    pub commands: baton_agent::tools::CommandPolicy,
    /// Sandbox deny globs.
    pub sandbox_deny: Vec<String>,
    /// Model override for every agent.
    pub agent_model: Option<String>,
    /// Default agent turn limit.
    pub max_turns: u32,
    /// Default agent timeout.
    pub agent_timeout: Duration,
    /// Parallel agents at once.
    pub concurrency: usize,
    /// Output cap of agents without their own (`None`: the engine's default).
    pub agent_max_tokens: Option<u32>,
    /// Output caps of named agents.
    pub agent_overrides_max_tokens: BTreeMap<String, u32>,
    /// `[sprint]` as written (the engine's settings are built from it), after the trust rules.
    pub sprint: RawSprint,
    /// `[tdd]` as written, after the trust rules.
    pub tdd: RawTdd,
    /// Whether context rules are on.
    pub rules_enabled: bool,
    /// Coding-agent CLIs (`[cli.*]`).
    pub cli: BTreeMap<baton_agent::worker::cli::Cli, baton_agent::worker::cli::CliSettings>,
    /// Models by role (`[agents.roles]`).
    pub role_models: BTreeMap<String, String>,
    /// Whether the project is trusted (`baton trust`).
    pub trusted: bool,
    /// Settings of an untrusted project's `baton.toml` that were not applied, one line each.
    pub ignored: Vec<String>,
}

impl Config {
    /// The journal database.
    pub fn journal_path(&self) -> PathBuf {
        self.state_dir.join("baton.db")
    }

    /// The lock serialising writers of the sprint file.
    pub fn lock_path(&self) -> PathBuf {
        self.state_dir.join("sprint.lock")
    }

    /// Loads `root/baton.toml` (defaults if absent) and resolves paths against `root`, applying
    /// the trust rules ([`crate::narrow`]) unless the project is trusted. What an untrusted
    /// project asked for and did not get is reported once on stderr.
    pub fn load(root: &Path) -> Result<Config, ConfigError> {
        let cfg = Self::load_as(root, crate::trust::is_trusted(root))?;
        if !cfg.ignored.is_empty() {
            warn_ignored(&cfg);
        }
        Ok(cfg)
    }

    /// Loads as [`Config::load`], with trust given instead of looked up; prints nothing.
    pub fn load_as(root: &Path, trusted: bool) -> Result<Config, ConfigError> {
        let path = root.join(FILE_NAME);
        let (mut raw, text) =
            match baton_store::bounded::read_to_string(&path, baton_store::bounded::CONFIG_LIMIT) {
                Ok(text) => (parse(&path, &text)?, text),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    (RawConfig::default(), String::new())
                }
                Err(source) => return Err(ConfigError::Io { path, source }),
            };
        crate::limits::validate(&path, &text, &raw)?;
        crate::cli_workers::validate(&path, &text, &raw)?;
        let ignored = if trusted {
            Vec::new()
        } else {
            crate::narrow::narrow(&mut raw)
        };
        let mut cfg = Self::resolve(root, raw);
        cfg.trusted = trusted;
        cfg.ignored = ignored;
        Ok(cfg)
    }

    /// What the sandbox must protect from agents' file tools in this project: BMad's defaults
    /// plus the configured sprint file and story directory, for the agents' sandbox.
    pub fn protected(&self) -> baton_agent::protect::Protected {
        baton_agent::protect::Protected::for_project(&self.sprint_status, &self.stories)
    }

    /// Resolves a raw config against `root`.
    pub fn resolve(root: &Path, raw: RawConfig) -> Config {
        let at = |p: Option<PathBuf>, default: &str| root.join(p.unwrap_or_else(|| default.into()));
        let mut cfg = Config {
            root: root.to_path_buf(),
            sprint_status: at(raw.paths.sprint_status, DEFAULT_SPRINT_STATUS),
            stories: at(raw.paths.stories, DEFAULT_STORIES),
            planning: at(raw.paths.planning, DEFAULT_PLANNING),
            state_dir: root.join(STATE_DIR),
            write_extended_statuses: raw.sprint.write_extended_statuses.unwrap_or(false),
            auto_epic_done: raw.sprint.auto_epic_done.unwrap_or(true),
            stale_days: raw.sprint.stale_days.unwrap_or(7),
            providers: {
                let mut p = baton_llm::registry::bundled_providers();
                p.extend(raw.providers);
                p
            },
            prices: {
                let mut p = baton_llm::pricing::bundled_prices();
                p.extend(raw.prices);
                p
            },
            budget: raw.budget,
            commands: {
                let mut c = baton_agent::tools::CommandPolicy::default();
                if let Some(allow) = raw.commands.allow {
                    c.allow = allow;
                }
                if let Some(t) = raw.commands.timeout_secs {
                    c.timeout = Duration::from_secs(t);
                }
                if let Some(m) = raw.commands.max_output_bytes {
                    c.max_output_bytes = m;
                }
                c
            },
            sandbox_deny: raw
                .sandbox
                .deny
                .unwrap_or_else(baton_agent::sandbox::Sandbox::default_deny),
            agent_model: raw.agents.model,
            max_turns: raw.agents.max_turns.unwrap_or(40),
            agent_timeout: Duration::from_secs(raw.agents.timeout_secs.unwrap_or(1800)),
            concurrency: raw.team.concurrency.unwrap_or(4).max(1),
            agent_max_tokens: raw.agents.max_tokens,
            agent_overrides_max_tokens: raw
                .agents
                .overrides
                .iter()
                .filter_map(|(name, o)| Some((name.clone(), o.max_tokens?)))
                .collect(),
            sprint: raw.sprint,
            tdd: raw.tdd,
            rules_enabled: raw.rules.enabled.unwrap_or(true),
            cli: crate::cli_workers::resolve(root, &raw.cli),
            role_models: raw.agents.roles.clone(),
            trusted: true,
            ignored: Vec::new(),
        };
        // API keys never reach the programs agents run.
        let mut keys: Vec<String> = cfg
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone())
            .collect();
        keys.sort();
        keys.dedup();
        cfg.commands.env_remove = keys;
        cfg
    }

    /// Where transcripts of runs go.
    pub fn runs_dir(&self) -> PathBuf {
        self.state_dir.join("runs")
    }
}

/// Prints, once per process, what an untrusted project's configuration did not get.
fn warn_ignored(cfg: &Config) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if WARNED.swap(true, Ordering::Relaxed) {
        return;
    }
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "warning: `{}` comes from a project you have not trusted, so these settings were \
             ignored:",
            cfg.root.join(FILE_NAME).display()
        );
        for line in &cfg.ignored {
            eprintln!("  - {line}");
        }
        eprintln!(
            "  Review `{FILE_NAME}` (and `.baton/agents/`), then run `baton trust` to apply them."
        );
    }
}

/// Parses `baton.toml` text; errors name the line.
pub fn parse(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(1);
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message: e.message().to_owned(),
        }
    })
}

/// The `baton.toml` that `baton init` writes: every setting, commented, at its default.
pub const TEMPLATE: &str = r#"# baton configuration. Every setting is optional. Commented values are the defaults, except in
# [budget] and [agents] model, which have no default (no limit, each agent's own model).

[paths]
# sprint_status = "_bmad-output/implementation-artifacts/sprint-status.yaml"
# stories = "_bmad-output/implementation-artifacts"
# planning = "_bmad-output/planning-artifacts"

[sprint]
# Write baton's extended story states (needs-intervention, e2e-verify, ...) literally into
# sprint-status.yaml. Off: the file keeps BMad's canonical status plus a `# baton: ...` comment.
# write_extended_statuses = false
# Move an epic to `done` when all its stories are done (BMad leaves this to a human).
# auto_epic_done = true
# Warn when the sprint file has not been updated for this many days.
# stale_days = 7
# The test command the orchestrator runs itself after every dev and fix step (no shell).
# test_command = ["cargo", "test"]
# test_timeout_secs = 900
# max_review_rounds = 3
# min_findings = 3
# story_review = false
# qa = false
# batch = 3
# In standard mode a story enters these statuses only after a human confirms.
# checkpoints = ["done"]
# story_timeout_secs = 7200
# run_timeout_secs = 28800
# Hold an epic's retrospective (scrum master) when its last story is done.
# retrospective = false

[budget]
# warn_usd = 5.0
# hard_usd = 20.0
# max_input_tokens = 5000000
# max_output_tokens = 500000

[agents]
# model = "anthropic/claude-sonnet-4-5"   # replaces every agent's own model
# max_turns = 40
# timeout_secs = 1800
# Output cap of one model turn, in tokens; a provider's `max_tokens` lowers it.
# max_tokens = 8192
# [agents.overrides.dev]
# max_tokens = 16384

[team]
# concurrency = 4

[commands]
# Programs agents may run (no shell; arguments are passed as a list).
# allow = ["cargo", "git", "ls", "cat", "echo", "python3", "npm", "node", "make", "go", "pytest"]
# timeout_secs = 300
# max_output_bytes = 30000

[sandbox]
# Files agents may neither read nor write.
# deny = [".env*", "*.pem", "*.key", "id_*"]

[tdd]
# The test-first guard: off, tdd or atdd (`baton tdd on|off|atdd` overrides this). See docs/tdd.md.
# mode = "off"
# exempt = ["*.d.ts", "*.config.*", "migrations/**", "docs/**", "*.md", "*.lock", ...]
# Commands that count as test runs, added to the defaults (cargo test, npm test, pytest, go test, ...).
# test_commands = [["make", "check"]]
# [tdd.overrides]
# "src/legacy/*.rs" = "tests/legacy_{stem}.rs"

[rules]
# Context rules remind agents of the process when their own words show they are about to skip it.
# enabled = true

# Providers: bundled ones are openai, anthropic, ollama, vllm, llamacpp, openrouter, script.
# [providers.ollama]
# kind = "openai"
# base_url = "http://localhost:11434/v1"
# max_tokens = 4096        # output cap of one turn on this provider
# tool_choice = "auto"     # sent with tools: auto, required or none (OpenAI-compatible only)
#
# [providers.anthropic]
# kind = "anthropic"
# api_key_env = "ANTHROPIC_API_KEY"

# Prices in US dollars per million tokens (bundled for common models).
# [prices."openai/gpt-4o"]
# input_per_mtok = 2.5
# output_per_mtok = 10.0
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_bmad_layout() {
        let c = Config::resolve(Path::new("/p"), RawConfig::default());
        assert_eq!(
            c.sprint_status,
            Path::new("/p/_bmad-output/implementation-artifacts/sprint-status.yaml")
        );
        assert_eq!(
            c.stories,
            Path::new("/p/_bmad-output/implementation-artifacts")
        );
        assert!(c.auto_epic_done && !c.write_extended_statuses);
        assert!(
            c.commands
                .env_remove
                .contains(&"ANTHROPIC_API_KEY".to_owned())
        );
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_line() {
        let err = parse(
            Path::new("baton.toml"),
            "[paths]\nstories = \"s\"\n\n[sprint]\nauto_epic_dne = true\n",
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("baton.toml:5: unknown field `auto_epic_dne`"),
            "{msg}"
        );
    }

    #[test]
    fn the_template_parses_to_defaults() {
        let raw = parse(Path::new("baton.toml"), TEMPLATE).unwrap();
        let a = Config::resolve(Path::new("/p"), raw);
        let b = Config::resolve(Path::new("/p"), RawConfig::default());
        assert_eq!(a.sprint_status, b.sprint_status);
        assert_eq!(a.providers.len(), b.providers.len());
        assert_eq!(a.max_turns, b.max_turns);
        assert_eq!(a.sandbox_deny, b.sandbox_deny);
    }

    #[test]
    fn overrides_apply() {
        let raw = parse(
            Path::new("baton.toml"),
            "[paths]\nsprint_status = \"docs/sprint-artifacts/sprint-status.yaml\"\n[sprint]\nauto_epic_done = false\n",
        )
        .unwrap();
        let c = Config::resolve(Path::new("/p"), raw);
        assert_eq!(
            c.sprint_status,
            Path::new("/p/docs/sprint-artifacts/sprint-status.yaml")
        );
        assert!(!c.auto_epic_done);
    }

    #[test]
    fn output_caps_are_read_per_agent_and_provider() {
        let raw = parse(
            Path::new("baton.toml"),
            "[agents]\nmax_tokens = 2048\n[agents.overrides.dev]\nmax_tokens = 4096\n\
             [providers.local]\nkind = \"openai\"\nmax_tokens = 1024\ntool_choice = \"required\"\n",
        )
        .unwrap();
        let c = Config::resolve(Path::new("/p"), raw);
        assert_eq!(c.agent_max_tokens, Some(2048));
        assert_eq!(c.agent_overrides_max_tokens.get("dev"), Some(&4096));
        let local = &c.providers["local"];
        assert_eq!(local.max_tokens, Some(1024));
        assert_eq!(
            local.tool_choice,
            Some(baton_llm::registry::ToolChoice::Required)
        );
        let err = parse(
            Path::new("baton.toml"),
            "[agents.overrides.dev]\nmax_tokns = 1\n",
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("baton.toml:2: unknown field"),
            "{err}"
        );
    }
}
