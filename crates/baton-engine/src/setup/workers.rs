//! The workers that run a setup's agents: a coding-agent CLI or the native loop, each in the
//! tree its unit of work uses, with exactly the tools, guards, hook and cost ledger it is given.

use super::{Setup, SetupError};
use baton_agent::definition::AgentDef;
use baton_agent::guard::GuardChain;
use baton_agent::rules::ContextRules;
use baton_agent::runner::{CallFn, CallRecord, EventFn, Runner};
use baton_agent::tdd::TddGuard;
use baton_agent::tools::{ToolContext, Toolbox};
use baton_agent::worker::Worker;
use baton_agent::worker::cli::{Backend, CliWorker};
use baton_agent::workspace::Workspace;
use baton_llm::ModelSpec;
use baton_llm::pricing;
use std::sync::Arc;

impl Setup {
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
