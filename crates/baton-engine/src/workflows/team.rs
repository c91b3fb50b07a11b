//! `baton team`: ad-hoc dispatch of agents, without any sprint.
//!
//! Single (one agent, one task), parallel (the same task to several agents, at most
//! `concurrency` at once) and chain (agents in order, each step's final answer replacing
//! `{previous}` in the next step's task; the chain stops at the first step that does not
//! complete).

use crate::setup::{Setup, SetupError};
use baton_agent::definition::AgentDef;
use baton_agent::outcome::{Outcome, Status};
use baton_agent::worker::{Job, Worker};
use futures_util::StreamExt;
use serde::Serialize;

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

async fn run_one(worker: &dyn Worker, def: &AgentDef, task: &str) -> Outcome {
    worker
        .run(&Job {
            agent: def.clone(),
            task: task.to_owned(),
        })
        .await
}

/// Runs a dispatch. Every agent is checked before any runs, so a typo fails fast.
pub async fn run(
    setup: &Setup,
    dispatch: &Dispatch,
    task: &str,
    concurrency: usize,
) -> Result<TeamReport, SetupError> {
    let names: Vec<String> = match dispatch {
        Dispatch::Single(a) => vec![a.clone()],
        Dispatch::Parallel(v) | Dispatch::Chain(v) => v.clone(),
    };
    let mut runners = Vec::with_capacity(names.len());
    for n in &names {
        let (worker, agent) = setup.worker(n)?;
        runners.push((worker, agent));
    }
    let mut steps = Vec::with_capacity(runners.len());
    let mut stopped_at = None;
    let mode = match dispatch {
        Dispatch::Single(_) => {
            for (worker, def) in &runners {
                steps.push(run_one(worker.as_ref(), def, &chain_task(task, None)).await);
            }
            "single"
        }
        Dispatch::Parallel(_) => {
            let task = chain_task(task, None);
            let mut indexed: Vec<(usize, Outcome)> =
                futures_util::stream::iter(runners.iter().enumerate())
                    .map(|(i, (worker, def))| {
                        let task = task.clone();
                        async move { (i, run_one(worker.as_ref(), def, &task).await) }
                    })
                    .buffer_unordered(concurrency.max(1))
                    .collect()
                    .await;
            indexed.sort_by_key(|(i, _)| *i);
            steps = indexed.into_iter().map(|(_, o)| o).collect();
            "parallel"
        }
        Dispatch::Chain(_) => {
            let mut previous: Option<String> = None;
            for (i, (worker, def)) in runners.iter().enumerate() {
                let outcome =
                    run_one(worker.as_ref(), def, &chain_task(task, previous.as_deref())).await;
                let ok = outcome.status == Status::Completed;
                previous = Some(outcome.summary.clone());
                steps.push(outcome);
                if !ok {
                    if i + 1 < runners.len() {
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
    Ok(TeamReport {
        mode,
        steps,
        all_completed,
        stopped_at,
        cost_usd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_tasks_fill_the_placeholder_or_append() {
        assert_eq!(chain_task("do {previous} now", Some("X")), "do X now");
        assert_eq!(chain_task("do {previous} now", None), "do  now");
        assert!(chain_task("review it", Some("X")).ends_with("answer:\nX"));
    }
}
