//! Turning agent definitions and settings into runnable agents.
//!
//! One model client per `provider/model` is shared by every agent that uses it (so a scripted
//! session is consumed in order across agents); each agent gets exactly the tools its definition
//! lists, read-only roles lose every writing tool and gain the read-only guard. When the project
//! turns the test-first guard on, every agent's chain gets it ([`Setup::tdd`]); context rules
//! ([`Setup::rules`]) are given to each agent run fresh, so `once` means once per run.

mod clients;
mod workers;

use baton_agent::compaction::Compaction;
use baton_agent::definition::AgentDef;
use baton_agent::rules::Rule;
use baton_agent::runner::{Budget, CallFn, CallRecord, EventFn, Mode};
use baton_agent::sandbox::Sandbox;
use baton_agent::tdd::TddCore;
use baton_agent::tools::{CommandPolicy, Tool};
use baton_agent::worker::cli::CliConfig;
use baton_agent::workspace::Workspace;
use baton_llm::pricing::Price;
use baton_llm::registry::ProviderConfig;
use baton_llm::{LlmError, ModelClient};
use baton_store::journal::GuardState;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Records one model call in the cost ledger, with the journal step it was made for.
pub type LedgerFn = Arc<dyn Fn(&CallRecord, Option<i64>) + Send + Sync>;

/// The output cap of one model turn when neither the agent nor the provider sets one: enough
/// for a tool call writing a sizeable file, small enough that a looping local model stops in
/// minutes rather than at the call's timeout.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Why an agent cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// No agent of that name.
    #[error("no agent named `{name}`; known agents: {known}")]
    UnknownAgent {
        /// Asked for.
        name: String,
        /// Known names.
        known: String,
    },
    /// The model string is not `provider/model`.
    #[error("agent `{agent}`: model `{model}` is not `provider/model`")]
    BadModel {
        /// Agent.
        agent: String,
        /// Model string.
        model: String,
    },
    /// The definition names tools that do not exist.
    #[error("agent `{agent}` lists unknown tools: {tools}")]
    UnknownTools {
        /// Agent.
        agent: String,
        /// Unknown names.
        tools: String,
    },
    /// The agent's coding-agent CLI cannot be run.
    #[error("agent `{agent}`: {message}")]
    Cli {
        /// Agent.
        agent: String,
        /// Why.
        message: String,
    },
    /// The client could not be built.
    #[error("agent `{agent}`: {source}")]
    Client {
        /// Agent.
        agent: String,
        /// Cause.
        #[source]
        source: LlmError,
    },
}

/// Everything shared by the agents of one run: cloneable services (agents, providers, the
/// budget, cancellation, guards, the model clients' cache). The per-unit part, the workspace an
/// agent works in, is given to [`Setup::worker_in`]; [`Setup::workspace`] is the main tree's.
#[derive(Clone)]
pub struct Setup {
    /// Project (or worktree) root.
    pub root: PathBuf,
    /// Agents by name.
    pub agents: BTreeMap<String, AgentDef>,
    /// Providers.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Prices.
    pub prices: BTreeMap<String, Price>,
    /// A model that replaces every agent's own.
    pub model_override: Option<String>,
    /// Standard or YOLO.
    pub mode: Mode,
    /// The run's budget.
    pub budget: Arc<Budget>,
    /// The path jail.
    pub sandbox: Arc<Sandbox>,
    /// The tree the agents work in (its one git runner and snapshots).
    pub workspace: Arc<Workspace>,
    /// `run_command` policy.
    pub commands: CommandPolicy,
    /// Tools beyond the standard ones (sprint tools).
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// Where transcripts go.
    pub transcript_dir: Option<PathBuf>,
    /// Default turn limit.
    pub max_turns: u32,
    /// Default timeout.
    pub timeout: Duration,
    /// Cancellation of the whole run.
    pub cancel: CancellationToken,
    /// Progress events.
    pub on_event: Option<EventFn>,
    /// Every model call, as it is made (beside [`Setup::ledger`]).
    pub on_call: Option<CallFn>,
    /// The cost ledger: every model call with the journal step it was made for (`None` for an
    /// agent that works outside a step), so the token meter can sum a stage and a story.
    pub ledger: Option<LedgerFn>,
    /// Output cap of agents that have none of their own (`None`: [`DEFAULT_MAX_TOKENS`]).
    pub max_tokens: Option<u32>,
    /// Output caps of named agents.
    pub agent_max_tokens: BTreeMap<String, u32>,
    /// When agents' old tool results are compacted (`[agents] compact_after_bytes`).
    pub compaction: Compaction,
    /// The test-first guard, shared by every agent (`None`: off).
    pub tdd: Option<Arc<TddCore>>,
    /// Context rules for every agent run (empty: none).
    pub rules: Vec<Rule>,
    /// Where rule firings are journaled, and under which scope.
    pub rules_journal: Option<(Arc<Mutex<dyn GuardState + Send>>, String)>,
    /// How coding-agent CLIs are run (`claude-code/…`, `codex/…`, `pi/…` models).
    pub cli: CliConfig,
    /// Models by role (`[agents.roles]`): they win over [`Setup::model_override`] and over an
    /// agent's own model.
    pub role_models: BTreeMap<String, String>,
    /// What the team learned (`None`: memory is off, or not loaded for an untrusted project).
    pub memory: Option<Arc<crate::memory::Memory>>,
    /// One client per `provider/model`, shared by every clone.
    clients: Arc<Mutex<HashMap<String, Arc<dyn ModelClient>>>>,
}

impl Setup {
    /// A setup with no clients built yet.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        root: PathBuf,
        agents: BTreeMap<String, AgentDef>,
        providers: BTreeMap<String, ProviderConfig>,
        prices: BTreeMap<String, Price>,
        mode: Mode,
        budget: Arc<Budget>,
        sandbox: Arc<Sandbox>,
        commands: CommandPolicy,
    ) -> Setup {
        let workspace = Arc::new(Workspace::new(
            &root,
            sandbox.clone(),
            commands.env_remove.clone(),
        ));
        Setup {
            workspace,
            root,
            agents,
            providers,
            prices,
            model_override: None,
            mode,
            budget,
            sandbox,
            commands,
            extra_tools: Vec::new(),
            transcript_dir: None,
            max_turns: 40,
            timeout: Duration::from_secs(1800),
            cancel: CancellationToken::new(),
            on_event: None,
            on_call: None,
            ledger: None,
            max_tokens: None,
            agent_max_tokens: BTreeMap::new(),
            compaction: Compaction::default(),
            tdd: None,
            rules: Vec::new(),
            rules_journal: None,
            cli: CliConfig::default(),
            role_models: BTreeMap::new(),
            memory: None,
            clients: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The definition of `name`.
    pub fn agent(&self, name: &str) -> Result<&AgentDef, SetupError> {
        self.agents
            .get(name)
            .ok_or_else(|| SetupError::UnknownAgent {
                name: name.to_owned(),
                known: self.agents.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    /// The model string agent `def` runs on: its role's, else the override, else its own.
    pub fn model_of(&self, def: &AgentDef) -> String {
        self.role_models
            .get(&def.role)
            .or(self.model_override.as_ref())
            .cloned()
            .unwrap_or_else(|| def.model.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_agent::definition::{self, Source};
    use baton_agent::worker::cli::{Cli, CliSettings};
    use baton_llm::registry;

    fn setup(root: &std::path::Path) -> Setup {
        let mut agents = BTreeMap::new();
        for (name, role) in [("dev", "developer"), ("rev", "reviewer")] {
            let text = format!(
                "---\nname: {name}\ndescription: d\nrole: {role}\nmodel: script/t\n---\nPrompt.\n"
            );
            agents.insert(
                name.to_owned(),
                definition::parse("t.md", &text, Source::Bundled).unwrap(),
            );
        }
        let sandbox = Arc::new(Sandbox::new(root, &Sandbox::default_deny()).unwrap());
        Setup::new(
            root.to_path_buf(),
            agents,
            registry::bundled_providers(),
            BTreeMap::new(),
            Mode::Yolo,
            Arc::new(Budget::default()),
            sandbox,
            CommandPolicy::default(),
        )
    }

    #[test]
    fn roles_pick_their_backend_over_the_override_and_the_definition() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = setup(dir.path());
        s.model_override = Some("script/other".into());
        s.role_models
            .insert("developer".into(), "claude-code/claude-sonnet-4-5".into());
        assert_eq!(
            s.model_of(s.agent("dev").unwrap()),
            "claude-code/claude-sonnet-4-5"
        );
        assert_eq!(s.model_of(s.agent("rev").unwrap()), "script/other");
        s.cli.settings.insert(
            Cli::ClaudeCode,
            CliSettings {
                program: Some("/nonexistent/claude".into()),
                ..CliSettings::default()
            },
        );
        assert!(s.worker("dev").is_ok());
        s.role_models
            .insert("developer".into(), "pi/only-a-model".into());
        let err = s.worker("dev").err().unwrap().to_string();
        assert!(err.contains("pi/PROVIDER/MODEL"), "{err}");
    }
}
