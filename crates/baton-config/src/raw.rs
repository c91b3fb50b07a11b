//! `baton.toml` as written: the serde types, every table with unknown keys rejected.
//!
//! These are the first of the two phases (STYLE.md habit 5): the file's shape, every value
//! optional, nothing checked beyond its type. [`parse`] names the line of a syntax error or an
//! unknown key; ranges are checked by [`crate::limits`], the trust rules applied by
//! [`crate::narrow`], and defaults filled in by [`crate::resolve`].

use crate::error::ConfigError;
use baton_agent::worker::cli::Cli;
use baton_core::budget::BudgetLimits;
use baton_llm::pricing::Price;
use baton_llm::registry::ProviderConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// `[memory]`.
    #[serde(default)]
    pub memory: RawMemory,
    /// `[bmad]`: running BMad's own skills (docs/bmad.md).
    #[serde(default)]
    pub bmad: RawBmad,
    /// `[cli.NAME]`: coding-agent CLIs (docs/cli-workers.md).
    #[serde(default)]
    pub cli: RawCli,
    /// `[pipeline]`: the GitHub pipeline (docs/github.md).
    #[serde(default)]
    pub pipeline: RawPipeline,
}

/// `[pipeline]`: the GitHub pipeline run by `baton pm` (docs/github.md). Every key has the
/// pipeline protocol's value as its default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPipeline {
    /// The product owner's GitHub handle, without `@` (default: the repository's owner).
    pub owner: Option<String>,
    /// The role that refines stories (default `business-analyst`; its label `agent/<role>`).
    pub analyst: Option<String>,
    /// The role that designs (default `architect`).
    pub architect: Option<String>,
    /// The role that implements (default `backend`).
    pub implementer: Option<String>,
    /// The role that reviews pull requests (default `reviewer`).
    pub reviewer: Option<String>,
    /// The baton agent each role runs (defaults: business-analyst → analyst, architect →
    /// architect, reviewer → reviewer, any other role → developer).
    pub agents: Option<BTreeMap<String, String>>,
    /// Issues implementing at once: the number of implementation seats (default 2).
    pub max_implementing: Option<u32>,
    /// Round trips without a phase change before the owner is asked (default 3).
    pub round_trips: Option<u32>,
    /// Hours an assigned agent may stay silent before it is pinged (default 24).
    pub silence_hours: Option<u64>,
    /// Hours an issue may await the owner before the owner is reminded (default 48).
    pub remind_hours: Option<u64>,
    /// How the PM's published pull requests merge: `merge`, `squash` or `rebase` (default
    /// `squash`).
    pub merge_method: Option<String>,
    /// The label that brings a new issue into the pipeline (default: every open issue is in it).
    pub intake_label: Option<String>,
    /// The account the token acts as, whose comments are the PM's and the agents' (default
    /// `github-actions[bot]`, what `GITHUB_TOKEN` posts as in GitHub Actions).
    pub login: Option<String>,
    /// The branch pull requests merge into (default `main`).
    pub base: Option<String>,
    /// The number of the GitHub Project (v2) whose status field the PM sets (default: none;
    /// the `status/*` labels alone).
    pub project: Option<u64>,
    /// The project's single-select field (default `Status`); its options are the phases' names.
    pub project_field: Option<String>,
    /// The user or organisation owning the project (default: the repository's owner).
    pub project_owner: Option<String>,
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

/// `[memory]`: what the team learned, recalled before agent steps (docs/memory.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    /// Whether memories are recalled and written at all (default true).
    pub enabled: Option<bool>,
    /// The most tokens the recalled memories may take in a task (default 300).
    pub recall_tokens: Option<usize>,
    /// The most memories one scope keeps; past it the least important are pruned (default 500).
    pub max_per_scope: Option<usize>,
    /// An external memory backend, run as a program (`["memory-bridge", "--url", "..."]`).
    pub external: Option<Vec<String>>,
    /// How long the external backend has to answer one call (default 10).
    pub external_timeout_secs: Option<u64>,
    /// Kinds of step that get no memories (`review`, `dev`, `plan:prd`, `sdd`, `team`, ...).
    pub skip: Option<Vec<String>>,
}

/// `[bmad]`: running BMad's own skills unattended (docs/bmad.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBmad {
    /// The tier (0–4) when neither `--tier` nor a profile says (default: suggested from the
    /// project and the input).
    pub tier: Option<u8>,
    /// The agent that runs skills (default `bmad-skill`).
    pub agent: Option<String>,
    /// A whole `baton bmad run`, in seconds (default 1800).
    pub workflow_timeout_secs: Option<u64>,
    /// One agent turn of a skill, in seconds (default 600).
    pub agent_timeout_secs: Option<u64>,
    /// A person's answer at the terminal, in seconds (default 300).
    pub human_timeout_secs: Option<u64>,
    /// A party round, in seconds (default 120).
    pub party_round_secs: Option<u64>,
    /// The least time between two menus baton answers, in milliseconds (default 2000).
    pub menu_interval_ms: Option<u64>,
    /// Regular expressions whose first group (or whole match) on a line of a turn is a
    /// validation issue.
    pub validation_patterns: Option<Vec<String>>,
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
    /// Replace old tool results by stubs once those still sent in full exceed this many bytes
    /// (default 16384); `0` or `"off"`: never.
    pub compact_after_bytes: Option<CompactAfter>,
    /// `[agents.overrides.NAME]`: settings of one agent.
    #[serde(default)]
    pub overrides: BTreeMap<String, RawAgentOverride>,
    /// `[agents.roles]`: a model (or CLI backend) per role.
    #[serde(default)]
    pub roles: BTreeMap<String, String>,
}

/// `[agents] compact_after_bytes`: a number of bytes, or `"off"` (which `0` means too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactAfter {
    /// Compact past this many bytes (`0`: never).
    Bytes(u64),
    /// Never compact.
    Off,
}

impl<'de> Deserialize<'de> for CompactAfter {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = CompactAfter;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of bytes, or \"off\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<CompactAfter, E> {
                Ok(CompactAfter::Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<CompactAfter, E> {
                u64::try_from(v)
                    .map(CompactAfter::Bytes)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CompactAfter, E> {
                match v {
                    "off" => Ok(CompactAfter::Off),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(Visit)
    }
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

/// Which `[paths]` keys the file sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathsSet {
    /// `sprint_status`.
    pub sprint_status: bool,
    /// `stories`.
    pub stories: bool,
    /// `planning`.
    pub planning: bool,
}

impl PathsSet {
    /// The keys `paths` sets.
    pub fn of(paths: &RawPaths) -> Self {
        PathsSet {
            sprint_status: paths.sprint_status.is_some(),
            stories: paths.stories.is_some(),
            planning: paths.planning.is_some(),
        }
    }

    /// Whether every path is set.
    pub fn all(&self) -> bool {
        self.sprint_status && self.stories && self.planning
    }
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
    /// Stories in flight at once, each in its own git worktree (default 1).
    pub parallel: Option<usize>,
    /// Statuses a story enters only after a human confirms, in standard mode (default ["done"]).
    pub checkpoints: Option<Vec<String>>,
    /// Timeout of one story in seconds (default 7200).
    pub story_timeout_secs: Option<u64>,
    /// Timeout of one run in seconds (default 28800).
    pub run_timeout_secs: Option<u64>,
    /// Hold an epic's retrospective when its last story is done (default false).
    pub retrospective: Option<bool>,
}

/// `[cli]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCli {
    /// `[cli.claude-code]`.
    #[serde(rename = "claude-code", default)]
    pub claude_code: Option<RawCliSettings>,
    /// `[cli.codex]`.
    #[serde(default)]
    pub codex: Option<RawCliSettings>,
    /// `[cli.pi]`.
    #[serde(default)]
    pub pi: Option<RawCliSettings>,
}

impl RawCli {
    pub(crate) fn entries_mut(&mut self) -> [(Cli, &mut Option<RawCliSettings>); 3] {
        [
            (Cli::ClaudeCode, &mut self.claude_code),
            (Cli::Codex, &mut self.codex),
            (Cli::Pi, &mut self.pi),
        ]
    }

    /// The section of `cli`.
    pub fn get(&self, cli: Cli) -> Option<&RawCliSettings> {
        match cli {
            Cli::ClaudeCode => self.claude_code.as_ref(),
            Cli::Codex => self.codex.as_ref(),
            Cli::Pi => self.pi.as_ref(),
        }
    }
}

/// `[cli.NAME]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawCliSettings {
    /// The program (absolute, or relative to the project).
    pub program: Option<PathBuf>,
    /// A model server the CLI is pointed at.
    pub base_url: Option<String>,
    /// pi only: the wire of `base_url`.
    pub api: Option<String>,
    /// The variable holding the key passed to the CLI.
    pub api_key_env: Option<String>,
    /// Retries of a failed model call.
    pub max_retries: Option<u32>,
    /// Seconds without an event before the run is stopped.
    pub stall_timeout_secs: Option<u64>,
    /// `refuse` (default) or `allow`: whether the CLI may run in a workspace holding the
    /// repository's own configuration for it that no flag turns off.
    pub project_config: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn compact_after_bytes_is_a_number_or_off() {
        let agents = |text: &str| parse(Path::new("baton.toml"), text).map(|r| r.agents);
        let value = |text: &str| agents(text).unwrap().compact_after_bytes;
        assert_eq!(
            value("[agents]\ncompact_after_bytes = 65536\n"),
            Some(CompactAfter::Bytes(65536))
        );
        assert_eq!(
            value("[agents]\ncompact_after_bytes = 0\n"),
            Some(CompactAfter::Bytes(0))
        );
        assert_eq!(
            value("[agents]\ncompact_after_bytes = \"off\"\n"),
            Some(CompactAfter::Off)
        );
        assert_eq!(value("[agents]\n"), None);
        for (text, expected) in [
            (
                "[agents]\nmax_turns = 5\ncompact_after_bytes = \"never\"\n",
                "baton.toml:3: invalid value: string \"never\", expected a number of bytes, or \"off\"",
            ),
            (
                "[agents]\n\ncompact_after_bytes = -1\n",
                "baton.toml:3: invalid value: integer `-1`, expected a number of bytes, or \"off\"",
            ),
            (
                "[agents]\ncompact_after_bytes = true\n",
                "baton.toml:2: invalid type: boolean `true`, expected a number of bytes, or \"off\"",
            ),
            (
                "[agents]\ncompact_after = 1000\n",
                "baton.toml:2: unknown field `compact_after`",
            ),
        ] {
            let msg = agents(text).unwrap_err().to_string();
            assert!(msg.starts_with(expected), "{msg}");
        }
    }

    #[test]
    fn an_unknown_cli_is_rejected() {
        let text = "[cli.gemini]\nprogram = \"x\"\n";
        assert!(parse(Path::new("baton.toml"), text).is_err());
    }
}
