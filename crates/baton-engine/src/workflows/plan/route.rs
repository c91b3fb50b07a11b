//! The planning pipeline seen from outside a run: where the plan stands ([`route`]), the
//! router's explanation of it ([`converse`]), `--from STEP` ([`redo_from`]), and the planning
//! agents' narrowed tools.

use super::steps::ended;
use super::{Paths, PlanError, PlanOptions, ROUTER_PROMPT, facts, io_err};
use crate::prompts::render;
use crate::setup::Setup;
use baton_agent::outcome::Status as AgentStatus;
use baton_core::plan::pipeline::{DocState, PlanDecision, PlanStep, decide, path};
use baton_store::frontmatter::Checkpoints;
use baton_store::planning::{self, shown};
use serde::Serialize;
use std::path::PathBuf;

/// Tools a planning agent keeps: the orchestrator writes the artifact from its answer, so the
/// agent only reads (and may escalate).
pub const PLANNING_TOOLS: &[&str] = &[
    "read_file",
    "list_files",
    "grep",
    "escalate",
    "read_sprint_status",
];

/// Narrows the planning roles' agents (analyst, pm, architect, scrum-master, and the router) to
/// [`PLANNING_TOOLS`], so that answering with the document is a complete run.
pub fn planning_agents(
    agents: &mut std::collections::BTreeMap<String, baton_agent::definition::AgentDef>,
) {
    let roles: Vec<&str> = PlanStep::ALL
        .iter()
        .map(|s| s.role())
        .chain(["bmad-master"])
        .collect();
    for (name, def) in agents.iter_mut() {
        if roles.contains(&name.as_str()) {
            def.tools.retain(|t| PLANNING_TOOLS.contains(&t.as_str()));
        }
    }
}

/// Prepares `--from STEP`: every artifact of the tier's path from `from` on is copied to a
/// checkpoint and removed, so the pipeline produces it again. Returns (artifact, checkpoint).
pub fn redo_from(
    opts: &PlanOptions,
    tier: u8,
    from: PlanStep,
) -> Result<Vec<(PathBuf, PathBuf)>, PlanError> {
    let docs = planning::find(&opts.paths.planning);
    let store = Checkpoints::new(&opts.checkpoints);
    let mut kept = Vec::new();
    for &step in path(tier).iter().skip_while(|s| **s != from) {
        if !step.uses_agent() {
            continue;
        }
        let targets: Vec<PathBuf> = if step == PlanStep::Readiness {
            docs.readiness.clone()
        } else {
            vec![facts::artifact(&opts.paths, &docs, step, &opts.date)]
        };
        for target in targets.into_iter().filter(|t| t.is_file()) {
            let cp = store.save(&target, &format!("before-redo-{}", step.name()))?;
            std::fs::remove_file(&target).map_err(io_err(&target))?;
            kept.push((target, cp.path));
        }
    }
    Ok(kept)
}

/// What the router knows: each step of the tier's path with its checkpoint, and the decision.
#[derive(Debug, Clone, Serialize)]
pub struct RouteView {
    /// The tier.
    pub tier: u8,
    /// Step, artifact (root-relative) and state, in order.
    pub steps: Vec<(PlanStep, String, DocState)>,
    /// What `baton plan --continue` would do first.
    pub next: PlanDecision,
}

/// Reads where the plan stands (no model).
pub fn route(paths: &Paths, tier: u8, date: &str) -> RouteView {
    let facts = facts::load(paths, tier, true, 0, date);
    let docs = planning::find(&paths.planning);
    let steps = path(tier)
        .iter()
        .map(|&s| {
            (
                s,
                shown(&paths.root, &facts::artifact(paths, &docs, s, date)),
                facts.state(s),
            )
        })
        .collect();
    RouteView {
        tier,
        steps,
        next: decide(&facts),
    }
}

/// The router's conversation: the `bmad-master` agent explains the state and the next step the
/// code chose; its answer is returned for display and decides nothing.
pub async fn converse(setup: &Setup, view: &RouteView) -> Result<String, PlanError> {
    let state: Vec<String> = view
        .steps
        .iter()
        .map(|(s, p, d)| {
            let d = match d {
                DocState::Missing => "missing",
                DocState::Started => "started",
                DocState::Complete => "complete",
            };
            format!("- {s}: `{p}` ({d})")
        })
        .collect();
    let next = match &view.next {
        PlanDecision::Run { step, .. } | PlanDecision::Pause { next: step } => {
            format!("run the {step} step (`baton plan --continue`)")
        }
        PlanDecision::Blocked { reason } => format!("blocked: {reason}"),
        PlanDecision::Done => "the plan is complete; build it with `baton sprint`".to_owned(),
    };
    let task = render(
        ROUTER_PROMPT,
        &[
            ("state", &state.join("\n")),
            ("next", &next),
            (
                "commands",
                "`baton plan \"IDEA\"`, `baton plan --continue`, `baton plan --yolo`, `baton plan --from STEP`, `baton check`, `baton sprint-plan`, `baton sprint`",
            ),
        ],
    );
    let (worker, agent) = setup.worker("bmad-master")?;
    let outcome = worker.run(&baton_agent::worker::Job { agent, task }).await;
    if outcome.status != AgentStatus::Completed {
        return Ok(format!("(the router could not talk: {})", ended(&outcome)));
    }
    Ok(outcome.summary)
}
