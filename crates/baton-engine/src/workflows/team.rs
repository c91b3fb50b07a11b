//! `baton team`: ad-hoc dispatch of agents, without any sprint, as a workflow of the run.
//!
//! Single (one agent, one task), parallel (the same task to several agents, at most
//! `concurrency` at once) and chain (agents in order, each step's final answer replacing
//! `{previous}` in the next step's task; the chain stops at the first step that does not
//! complete). Each agent's task is a unit of the run; its agent runs on the worker its role
//! names, and the run is journaled with how it ended. Each task's start and end are events
//! (`team_task_started`, `team_task_finished`) beside its agent's own.

use crate::error::EngineError;
use crate::protocol::{EventBody, UnitKey};
use crate::run::Run;
use crate::setup::SetupError;
use crate::workflow::{Ending, Workflow};
use crate::workflows::sprint::report::RunEnd;
use baton_agent::outcome::{Outcome, Status, Stop};
use futures_util::StreamExt;
use serde::Serialize;
use std::sync::Arc;

/// How to dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatch {
    /// One agent.
    Single(String),
    /// The same task to each, concurrently.
    Parallel(Vec<String>),
    /// Each in order, feeding `{previous}`.
    Chain(Vec<String>),
}

/// The result of a team dispatch.
#[derive(Debug, Clone, Serialize)]
pub struct TeamReport {
    /// `single`, `parallel` or `chain`.
    pub mode: &'static str,
    /// One outcome per agent run, in dispatch order.
    pub steps: Vec<Outcome>,
    /// Whether every step completed.
    pub all_completed: bool,
    /// For a chain that stopped early: the 1-based step it stopped at.
    pub stopped_at: Option<usize>,
    /// Total cost in US dollars.
    pub cost_usd: f64,
    /// How the run ended: `completed`, `paused` (an agent escalated), `stopped` (the budget),
    /// `cancelled` or `failed`.
    pub end: RunEnd,
    /// Why, when not completed: the first agent that did not complete, and its reason.
    pub reason: String,
}

/// The placeholder a chain step's task may contain.
pub const PREVIOUS: &str = "{previous}";

fn chain_task(task: &str, previous: Option<&str>) -> String {
    match previous {
        None => task.replace(PREVIOUS, ""),
        Some(p) if task.contains(PREVIOUS) => task.replace(PREVIOUS, p),
        Some(p) => format!("{task}\n\nThe previous step's answer:\n{p}"),
    }
}

/// The team workflow: whom to dispatch, the task, and how many agents at once.
pub struct Team {
    /// How to dispatch.
    pub dispatch: Dispatch,
    /// The task.
    pub task: String,
    /// Agents at once (parallel dispatch).
    pub concurrency: usize,
}

impl Workflow for Team {
    type Report = Result<TeamReport, SetupError>;

    /// Every agent is checked before any runs, so a typo fails fast; CLIs a killed baton left
    /// running are ended.
    async fn preflight(&self, run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
        for name in self.names() {
            run.setup
                .worker_with(&name, None)
                .map_err(|e| EngineError::Preflight(e.to_string()))?;
        }
        Ok(run.end_orphaned_workers().await)
    }

    /// Dispatches.
    async fn run(self, run: Arc<Run>) -> Result<TeamReport, SetupError> {
        self.dispatch(&run).await
    }

    fn ending(report: &Result<TeamReport, SetupError>, _run: &Run) -> Ending {
        match report {
            Ok(r) => Ending::new(r.end.as_str(), r.reason.clone()),
            Err(e) => Ending::new(RunEnd::Failed.as_str(), e.to_string()),
        }
    }
}

impl Team {
    fn names(&self) -> Vec<String> {
        match &self.dispatch {
            Dispatch::Single(a) => vec![a.clone()],
            Dispatch::Parallel(v) | Dispatch::Chain(v) => v.clone(),
        }
    }

    async fn dispatch(&self, run: &Arc<Run>) -> Result<TeamReport, SetupError> {
        let names = self.names();
        for n in &names {
            run.setup.agent(n)?;
        }
        let one = |i: usize, name: &str, task: String| {
            let run = run.clone();
            let name = name.to_owned();
            async move {
                let unit = run.unit(UnitKey::TeamTask(i + 1));
                run.emit_unit(
                    &unit.key,
                    EventBody::TeamTaskStarted {
                        task: i + 1,
                        agent: name.clone(),
                    },
                );
                let outcome = run.run_agent(&unit, &name, &task).await;
                run.emit_unit(
                    &unit.key,
                    EventBody::TeamTaskFinished {
                        task: i + 1,
                        agent: name,
                        status: outcome.status.as_str().to_owned(),
                        cost_usd: outcome.cost_usd,
                    },
                );
                outcome
            }
        };
        let task = self.task.as_str();
        let mut steps = Vec::with_capacity(names.len());
        let mut stopped_at = None;
        let mode = match &self.dispatch {
            Dispatch::Single(name) => {
                steps.push(one(0, name, chain_task(task, None)).await);
                "single"
            }
            Dispatch::Parallel(_) => {
                let task = chain_task(task, None);
                let mut indexed: Vec<(usize, Outcome)> =
                    futures_util::stream::iter(names.clone().into_iter().enumerate())
                        .map(|(i, name)| {
                            let run = one(i, &name, task.clone());
                            async move { (i, run.await) }
                        })
                        .buffer_unordered(self.concurrency.max(1))
                        .collect()
                        .await;
                indexed.sort_by_key(|(i, _)| *i);
                steps = indexed.into_iter().map(|(_, o)| o).collect();
                "parallel"
            }
            Dispatch::Chain(_) => {
                let mut previous: Option<String> = None;
                for (i, name) in names.iter().enumerate() {
                    let outcome = one(i, name, chain_task(task, previous.as_deref())).await;
                    let ok = outcome.status == Status::Completed;
                    previous = Some(outcome.summary.clone());
                    steps.push(outcome);
                    if !ok {
                        if i + 1 < names.len() {
                            stopped_at = Some(i + 1);
                        }
                        break;
                    }
                }
                "chain"
            }
        };
        let all_completed =
            steps.len() == names.len() && steps.iter().all(|o| o.status == Status::Completed);
        let cost_usd = steps.iter().map(|o| o.cost_usd).sum();
        let (end, reason) = ending(&steps, all_completed);
        Ok(TeamReport {
            mode,
            steps,
            all_completed,
            stopped_at,
            cost_usd,
            end,
            reason,
        })
    }
}

/// How a dispatch ended, from its first agent that did not complete (typed: a budget stop is
/// known by the outcome's [`Stop`], never by its words).
fn ending(steps: &[Outcome], all_completed: bool) -> (RunEnd, String) {
    if all_completed {
        return (RunEnd::Completed, String::new());
    }
    let Some(bad) = steps.iter().find(|o| o.status != Status::Completed) else {
        return (RunEnd::Failed, "not every agent ran".into());
    };
    let reason = format!(
        "{}: {}",
        bad.agent,
        bad.reason
            .clone()
            .unwrap_or_else(|| bad.status.as_str().into())
    );
    let end = match (bad.status, bad.stop) {
        (Status::Escalated, _) => RunEnd::Paused,
        (Status::Cancelled, Some(Stop::Budget)) => RunEnd::Stopped,
        (Status::Cancelled, _) => RunEnd::Cancelled,
        _ => RunEnd::Failed,
    };
    (end, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::protocol::{Event, Scope};
    use crate::run::{JournalHandle, RunKind, RunSpec};
    use crate::setup::Setup;
    use baton_agent::discovery::{self, Locations};
    use baton_agent::runner::{Budget, Mode};
    use baton_agent::sandbox::Sandbox;
    use baton_agent::tools::CommandPolicy;
    use baton_store::journal::SqliteJournal;
    use std::sync::Mutex;

    /// A team of scouts whose model turns a script plays, on a journal in `dir`.
    fn team_run(dir: &std::path::Path, turns: &str) -> (Arc<Run>, crate::run::RunIo) {
        let scripts = dir.join(".baton").join("scripts");
        std::fs::create_dir_all(&scripts).unwrap();
        std::fs::write(scripts.join("team.yaml"), turns).unwrap();
        let agents = discovery::discover(&Locations {
            user_dir: None,
            project_dir: dir.join(".baton").join("agents"),
            trusted: false,
        })
        .agents;
        let sandbox = Sandbox::new(dir, &Sandbox::default_deny()).unwrap();
        let mut setup = Setup::new(
            dir.to_path_buf(),
            agents,
            baton_llm::registry::bundled_providers(),
            baton_llm::pricing::bundled_prices(),
            Mode::Yolo,
            Arc::new(Budget::default()),
            Arc::new(sandbox),
            CommandPolicy::default(),
        );
        setup.model_override = Some("script/team".into());
        let journal = SqliteJournal::open(&dir.join("baton.db")).unwrap();
        Run::new(RunSpec {
            id: "team-1".into(),
            kind: RunKind::Team,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(Arc::new(Mutex::new(journal))),
            escalations_log: dir.join("escalations.log"),
            interactive: false,
            event_log: Some(Box::new(
                SqliteJournal::open(&dir.join("baton.db")).unwrap(),
            )),
        })
    }

    #[tokio::test]
    async fn each_task_of_a_team_starts_and_ends_as_an_event() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (run, mut io) = team_run(
            &root,
            "turns:\n  - agent: scout\n    text: \"nothing to report\"\n    repeat: true\n",
        );
        let team = Team {
            dispatch: Dispatch::Chain(vec!["scout".into(), "scout".into()]),
            task: "look around".into(),
            concurrency: 1,
        };
        let report = team.run(run).await.unwrap();
        assert!(report.all_completed, "{:?}", report.steps);
        let mut events: Vec<Event> = Vec::new();
        while let Ok(e) = io.events.try_recv() {
            events.push(e);
        }
        let ours: Vec<(Scope, EventBody)> = events
            .into_iter()
            .filter(|e| {
                matches!(
                    e.body,
                    EventBody::TeamTaskStarted { .. } | EventBody::TeamTaskFinished { .. }
                )
            })
            .map(|e| (e.scope, e.body))
            .collect();
        let status = |b: &EventBody| match b {
            EventBody::TeamTaskStarted { task, agent } => format!("start {task} {agent}"),
            EventBody::TeamTaskFinished {
                task,
                agent,
                status,
                ..
            } => format!("end {task} {agent} {status}"),
            _ => String::new(),
        };
        assert_eq!(
            ours.iter().map(|(_, b)| status(b)).collect::<Vec<_>>(),
            [
                "start 1 scout",
                "end 1 scout completed",
                "start 2 scout",
                "end 2 scout completed"
            ]
        );
        assert_eq!(ours[2].0, Scope::Unit(UnitKey::TeamTask(2)));
        // The journal's run event log holds them too, for a board or a late reader.
        let journal = SqliteJournal::open(&root.join("baton.db")).unwrap();
        let stored = baton_store::journal::RunEvents::events_after(&journal, 0, 1000).unwrap();
        assert_eq!(
            stored
                .iter()
                .filter(|e| e.body.contains("\"event\":\"team_task_finished\""))
                .count(),
            2
        );
    }

    #[test]
    fn chain_tasks_fill_the_placeholder_or_append() {
        assert_eq!(chain_task("do {previous} now", Some("X")), "do X now");
        assert_eq!(chain_task("do {previous} now", None), "do  now");
        assert!(chain_task("review it", Some("X")).ends_with("answer:\nX"));
    }
}
