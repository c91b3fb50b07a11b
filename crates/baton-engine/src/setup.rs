//! Turning agent definitions and settings into runnable agents.
//!
//! One model client per `provider/model` is shared by every agent that uses it (so a scripted
//! session is consumed in order across agents); each agent gets exactly the tools its definition
//! lists, read-only roles lose every writing tool and gain the read-only guard. When the project
//! turns the test-first guard on, every agent's chain gets it ([`Setup::tdd`]); context rules
//! ([`Setup::rules`]) are given to each agent run fresh, so `once` means once per run.

use baton_agent::compaction::Compaction;
use baton_agent::definition::AgentDef;
use baton_agent::guard::GuardChain;
use baton_agent::rules::{ContextRules, Rule};
use baton_agent::runner::{Budget, CallFn, CallRecord, EventFn, Mode, Runner};
use baton_agent::sandbox::Sandbox;
use baton_agent::tdd::{TddCore, TddGuard};
use baton_agent::tools::{CommandPolicy, Tool, ToolContext, Toolbox};
use baton_agent::worker::Worker;
use baton_agent::worker::cli::{Backend, CliConfig, CliWorker};
use baton_agent::workspace::Workspace;
use baton_llm::pricing::{self, Price};
use baton_llm::registry::{self, ProviderConfig};
use baton_llm::{LlmError, ModelClient, ModelSpec};
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

    /// The price of a native agent's calls on `spec`: the model's price, its cache writes billed
    /// at the 1-hour rate when the provider's breakpoints ask for the 1-hour lifetime.
    fn native_price(&self, spec: &ModelSpec) -> Option<pricing::Price> {
        let price = pricing::price_for(spec, &self.prices);
        let one_hour = registry::resolve_provider(&spec.provider, &self.providers)
            .is_ok_and(|p| p.cache == Some(baton_llm::cache::PromptCache::OneHour));
        if one_hour {
            price.map(pricing::Price::with_one_hour_writes)
        } else {
            price
        }
    }

    fn client(&self, agent: &str, spec: &ModelSpec) -> Result<Arc<dyn ModelClient>, SetupError> {
        let key = spec.to_string();
        if let Ok(cache) = self.clients.lock()
            && let Some(c) = cache.get(&key)
        {
            return Ok(c.clone());
        }
        let client =
            registry::build_client(spec, &self.providers, &self.root).map_err(|source| {
                SetupError::Client {
                    agent: agent.to_owned(),
                    source,
                }
            })?;
        if let Ok(mut cache) = self.clients.lock() {
            cache.insert(key, client.clone());
        }
        Ok(client)
    }

    /// The output cap of agent `agent` on `spec`: the smaller of the agent's (its own entry, else
    /// the agents' default) and the provider's, [`DEFAULT_MAX_TOKENS`] when neither is set.
    pub fn max_tokens_for(&self, agent: &str, spec: &ModelSpec) -> u32 {
        let agent_cap = self
            .agent_max_tokens
            .get(agent)
            .copied()
            .or(self.max_tokens);
        let provider_cap = registry::resolve_provider(&spec.provider, &self.providers)
            .ok()
            .and_then(|p| p.max_tokens);
        match (agent_cap, provider_cap) {
            (Some(a), Some(p)) => a.min(p),
            (Some(n), None) | (None, Some(n)) => n,
            (None, None) => DEFAULT_MAX_TOKENS,
        }
        .max(1)
    }

    /// The model string agent `def` runs on: its role's, else the override, else its own.
    pub fn model_of(&self, def: &AgentDef) -> String {
        self.role_models
            .get(&def.role)
            .or(self.model_override.as_ref())
            .cloned()
            .unwrap_or_else(|| def.model.clone())
    }

    /// The worker that runs agent `name`: a coding-agent CLI when its model names one
    /// (`claude-code/…`, `codex/…`, `pi/PROVIDER/…`), else the native loop.
    pub fn worker(&self, name: &str) -> Result<(Box<dyn Worker>, AgentDef), SetupError> {
        self.worker_with(name, self.on_event.clone())
    }

    /// [`Setup::worker`], with the agent's events going to `on_event` (a run scopes them to the
    /// unit the agent works for).
    pub fn worker_with(
        &self,
        name: &str,
        on_event: Option<EventFn>,
    ) -> Result<(Box<dyn Worker>, AgentDef), SetupError> {
        self.worker_in(name, on_event, &self.workspace, None)
    }

    /// What each model call of an agent working in journal step `step` is reported to: the
    /// plain callback and the cost ledger, told the step.
    fn calls_in(&self, step: Option<i64>) -> Option<CallFn> {
        if self.ledger.is_none() {
            return self.on_call.clone();
        }
        let on_call = self.on_call.clone();
        let ledger = self.ledger.clone();
        Some(Arc::new(move |c: &CallRecord| {
            if let Some(f) = &on_call {
                f(c);
            }
            if let Some(f) = &ledger {
                f(c, step);
            }
        }))
    }

    /// [`Setup::worker_with`], working in `workspace`: the unit of work's own tree (a story's
    /// worktree, say), with its root, sandbox and git runner; everything else is shared. Its
    /// model calls go to the cost ledger under journal step `step`.
    pub fn worker_in(
        &self,
        name: &str,
        on_event: Option<EventFn>,
        workspace: &Arc<Workspace>,
        step: Option<i64>,
    ) -> Result<(Box<dyn Worker>, AgentDef), SetupError> {
        let def = self.agent(name)?.clone();
        let model = self.model_of(&def);
        match Backend::parse(&model) {
            None => {
                let (runner, def) = self.runner_in(name, on_event, workspace, step)?;
                Ok((Box::new(runner), def))
            }
            Some(Err(why)) => Err(SetupError::Cli {
                agent: def.name.clone(),
                message: why,
            }),
            Some(Ok(backend)) => {
                let settings = self.cli.settings(backend.cli);
                let program = self.cli.program(backend.cli).ok_or_else(|| SetupError::Cli {
                    agent: def.name.clone(),
                    message: format!(
                        "`{}` is not installed (not found on PATH); install it with `npm install -g {}@{}` or set `[cli.{}] program`",
                        backend.cli.program(),
                        backend.cli.package().0,
                        backend.cli.package().1,
                        backend.cli,
                    ),
                })?;
                let spec = ModelSpec {
                    provider: backend.price_provider().to_owned(),
                    model: backend.model.clone(),
                };
                let price = pricing::price_for(&spec, &self.prices);
                let worker = CliWorker {
                    program,
                    settings,
                    policy_hook: self
                        .cli
                        .policy_hook
                        .as_ref()
                        .map(|hook| tree_hook(hook, self.workspace.root(), workspace.root())),
                    allow_commands: self.commands.allow.clone(),
                    state_dir: self
                        .cli
                        .state_dir
                        .clone()
                        .unwrap_or_else(|| std::env::temp_dir().join("baton-cli")),
                    workspace: workspace.clone(),
                    transcript_dir: self.transcript_dir.clone(),
                    mode: self.mode,
                    budget: self.budget.clone(),
                    price,
                    default_max_turns: self.max_turns,
                    default_timeout: self.timeout,
                    cancel: self.cancel.child_token(),
                    on_event,
                    on_call: self.calls_in(step),
                    backend,
                };
                Ok((Box::new(worker), def))
            }
        }
    }

    /// A runner for agent `name` (the native loop, whatever its model names).
    pub fn runner(&self, name: &str) -> Result<(Runner, AgentDef), SetupError> {
        self.runner_in(name, self.on_event.clone(), &self.workspace, None)
    }

    fn runner_in(
        &self,
        name: &str,
        on_event: Option<EventFn>,
        workspace: &Arc<Workspace>,
        step: Option<i64>,
    ) -> Result<(Runner, AgentDef), SetupError> {
        let def = self.agent(name)?.clone();
        let model = self.model_of(&def);
        let spec = ModelSpec::parse(&model).ok_or_else(|| SetupError::BadModel {
            agent: def.name.clone(),
            model: model.clone(),
        })?;
        let mut all = Toolbox::standard();
        for t in &self.extra_tools {
            all.add(t.clone());
        }
        let mut tools = all
            .select(&def.tools)
            .map_err(|unknown| SetupError::UnknownTools {
                agent: def.name.clone(),
                tools: unknown.join(", "),
            })?;
        let read_only = def.is_read_only();
        if read_only {
            tools = tools.read_only();
        }
        let client = self.client(&def.name, &spec)?;
        let price = self.native_price(&spec);
        let max_tokens = self.max_tokens_for(&def.name, &spec);
        let mut guards = GuardChain::standard(read_only);
        if let Some(core) = &self.tdd {
            guards.push(Box::new(TddGuard::new(core.clone())));
        }
        if !self.rules.is_empty() {
            guards.push_context(Box::new(ContextRules::new(
                self.rules.clone(),
                &def.name,
                self.rules_journal.clone(),
            )));
        }
        let runner = Runner {
            client,
            model: spec,
            price,
            mode: self.mode,
            budget: self.budget.clone(),
            tools,
            guards,
            ctx: ToolContext {
                root: workspace.root().to_path_buf(),
                sandbox: workspace.sandbox().clone(),
                commands: self.commands.clone(),
                cancel: self.cancel.child_token(),
                agent: def.name.clone(),
            },
            workspace: workspace.clone(),
            transcript_dir: self.transcript_dir.clone(),
            default_max_turns: self.max_turns,
            default_timeout: self.timeout,
            max_tokens: Some(max_tokens),
            compaction: self.compaction,
            on_event,
            on_call: self.calls_in(step),
        };
        Ok((runner, def))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_agent::definition::{self, Source};
    use baton_agent::worker::cli::{Cli, CliSettings};

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

/// The policy hook command for an agent working in `tree`: the project's own, told the worktree
/// when `tree` is not the project's root (a story worked in parallel), so that the project's
/// rules are judged where the agent works.
fn tree_hook(hook: &str, project: &std::path::Path, tree: &std::path::Path) -> String {
    if tree == project {
        return hook.to_owned();
    }
    let quoted = format!("'{}'", tree.display().to_string().replace('\'', r"'\''"));
    format!("{hook} --tree {quoted}")
}

#[cfg(test)]
mod tree_hook_tests {
    use super::tree_hook;
    use std::path::Path;

    #[test]
    fn a_worktree_agent_s_hook_names_its_tree_quoted() {
        let p = Path::new("/p");
        assert_eq!(
            tree_hook("baton guard --policy", p, p),
            "baton guard --policy"
        );
        assert_eq!(
            tree_hook(
                "baton guard --policy",
                p,
                Path::new("/p/.baton/worktrees/it's")
            ),
            r"baton guard --policy --tree '/p/.baton/worktrees/it'\''s'"
        );
    }
}
