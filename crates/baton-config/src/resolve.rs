//! The resolved configuration: every default filled in, every path absolute.
//!
//! The second of the two phases (STYLE.md habit 5). [`Config::resolve`] turns a checked (and, for
//! an untrusted project, narrowed) [`RawConfig`] into the plain values the libraries receive:
//! the provider table and prices (bundled, overridden by name), the command policy with the
//! providers' key variables removed from what agents run, the sandbox's deny list, the agents'
//! limits, the coding-agent CLIs. Defaults follow BMad's layout
//! (`_bmad-output/implementation-artifacts/sprint-status.yaml`, stories beside it,
//! `_bmad-output/planning-artifacts/`), so a project without `baton.toml` works as is.

use crate::raw::PathsSet;
use crate::raw::{CompactAfter, RawConfig, RawSprint, RawTdd};
use crate::{DEFAULT_PLANNING, DEFAULT_SPRINT_STATUS, DEFAULT_STORIES, FILE_NAME, STATE_DIR};
use baton_agent::compaction::Compaction;
use baton_agent::tools::CommandPolicy;
use baton_agent::worker::cli::{Cli, CliConfig, CliSettings};
use baton_core::budget::BudgetLimits;
use baton_llm::pricing::Price;
use baton_llm::registry::ProviderConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    pub commands: CommandPolicy,
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
    /// When agents' old tool results are compacted (`[agents] compact_after_bytes`).
    pub compaction: Compaction,
    /// `[sprint]` as written (the engine's settings are built from it), after the trust rules.
    pub sprint: RawSprint,
    /// `[tdd]` as written, after the trust rules.
    pub tdd: RawTdd,
    /// Whether context rules are on.
    pub rules_enabled: bool,
    /// `[memory]` as written, after the trust rules.
    pub memory: crate::raw::RawMemory,
    /// `[bmad]` as written, after the trust rules.
    pub bmad: crate::raw::RawBmad,
    /// `[pipeline]` as written, after the trust rules.
    pub pipeline: crate::raw::RawPipeline,
    /// Coding-agent CLIs (`[cli.*]`).
    pub cli: BTreeMap<Cli, CliSettings>,
    /// Models by role (`[agents.roles]`).
    pub role_models: BTreeMap<String, String>,
    /// Whether the project is trusted (`baton trust`).
    pub trusted: bool,
    /// Settings of an untrusted project's `baton.toml` that were not applied, one line each.
    pub ignored: Vec<String>,
    /// Which `[paths]` the file sets, as written (the others may be found from the project's
    /// BMad layout: [`Config::locate_unset`]).
    pub paths_set: PathsSet,
    /// The providers the file declares by name, as written (before the trust rules).
    pub declared_providers: Vec<String>,
}

/// The variables GitHub tokens travel in (baton's pipeline, the `gh` CLI, Actions).
pub const GITHUB_TOKENS: [&str; 4] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "BATON_GITHUB_TOKEN",
    "BATON_PUSH_TOKEN",
];

impl Config {
    /// The journal database.
    pub fn journal_path(&self) -> PathBuf {
        self.state_dir.join("baton.db")
    }

    /// The lock serialising writers of the sprint file.
    pub fn lock_path(&self) -> PathBuf {
        self.state_dir.join("sprint.lock")
    }

    /// What the sandbox must protect from agents' file tools in this project: BMad's defaults
    /// plus the configured sprint file and story directory, for the agents' sandbox.
    pub fn protected(&self) -> baton_agent::protect::Protected {
        baton_agent::protect::Protected::for_project(&self.sprint_status, &self.stories)
    }

    /// Resolves a raw config against `root`.
    pub fn resolve(root: &Path, raw: RawConfig) -> Config {
        let at = |p: Option<PathBuf>, default: &str| root.join(p.unwrap_or_else(|| default.into()));
        let paths_set = PathsSet::of(&raw.paths);
        let declared_providers = raw.providers.keys().cloned().collect();
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
                let mut c = CommandPolicy::default();
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
            compaction: match raw.agents.compact_after_bytes {
                None => Compaction::default(),
                Some(CompactAfter::Bytes(n)) => Compaction::after(n),
                Some(CompactAfter::Off) => Compaction::off(),
            },
            agent_overrides_max_tokens: raw
                .agents
                .overrides
                .iter()
                .filter_map(|(name, o)| Some((name.clone(), o.max_tokens?)))
                .collect(),
            sprint: raw.sprint,
            tdd: raw.tdd,
            rules_enabled: raw.rules.enabled.unwrap_or(true),
            memory: raw.memory,
            bmad: raw.bmad,
            pipeline: raw.pipeline,
            cli: crate::cli::resolve(root, &raw.cli),
            role_models: raw.agents.roles.clone(),
            trusted: true,
            ignored: Vec::new(),
            paths_set,
            declared_providers,
        };
        // API keys and GitHub tokens never reach the programs agents run.
        let mut keys: Vec<String> = cfg
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone())
            .chain(GITHUB_TOKENS.map(str::to_owned))
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

    /// The engine's CLI settings for a run: the resolved `[cli.*]`, the hook command Claude
    /// Code is given for baton's policy (the caller knows its own program), and the CLIs' homes
    /// under `.baton/cli/`.
    pub fn cli_config(&self, policy_hook: Option<String>) -> CliConfig {
        CliConfig {
            settings: self.cli.clone(),
            policy_hook,
            state_dir: Some(self.state_dir.join("cli")),
        }
    }

    /// What an untrusted project's configuration did not get, as the lines of one warning for
    /// the front end to show; `None` when everything applied.
    pub fn ignored_warning(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let mut text = format!(
            "warning: `{}` comes from a project you have not trusted, so these settings were \
             ignored:",
            self.root.join(FILE_NAME).display()
        );
        for line in &self.ignored {
            text.push_str(&format!("\n  - {line}"));
        }
        text.push_str(&format!(
            "\n  Review `{FILE_NAME}` (and `.baton/agents/`), then run `baton trust` to apply them."
        ));
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

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
    fn compaction_is_on_by_default_and_off_at_zero_or_off() {
        let resolve = |text: &str| {
            let raw = parse(Path::new("baton.toml"), text).unwrap();
            Config::resolve(Path::new("/p"), raw).compaction
        };
        assert_eq!(resolve(""), Compaction::default());
        assert_eq!(
            Compaction::default().after_bytes,
            Some(baton_agent::compaction::DEFAULT_AFTER_BYTES)
        );
        assert_eq!(
            resolve("[agents]\ncompact_after_bytes = 65536\n").after_bytes,
            Some(65536)
        );
        assert_eq!(
            resolve("[agents]\ncompact_after_bytes = 0\n"),
            Compaction::off()
        );
        assert_eq!(
            resolve("[agents]\ncompact_after_bytes = \"off\"\n"),
            Compaction::off()
        );
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
             [providers.local]\nkind = \"openai\"\nmax_tokens = 1024\ntool_choice = \"required\"\n\
             cache_key = true\n[providers.anthropic]\nkind = \"anthropic\"\ncache = \"1h\"\n",
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
        assert_eq!(local.cache_key, Some(true));
        assert_eq!(
            c.providers["anthropic"].cache,
            Some(baton_llm::cache::PromptCache::OneHour)
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
