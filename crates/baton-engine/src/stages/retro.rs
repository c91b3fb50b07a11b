//! An epic's retrospective, held by the scrum master once every story of the epic is done.
//!
//! It is owed while the epic's stories are all done and its `epic-N-retrospective` entry is still
//! `optional` — facts read from the sprint file, so a run killed while the retrospective was being
//! held owes it again, and the next run holds it. A failed retrospective is reported, never fatal
//! to the run.

use crate::ctx::{InStep, RunCtx, StoryCtx};
use crate::error::EngineError;
use crate::prompts;
use crate::protocol::EventBody;
use baton_agent::outcome::Status as AgentStatus;
use baton_core::actor::Actor;
use baton_core::dispatch::{self, Stage};
use baton_core::key::{EpicId, KeyKind};
use baton_core::status::{Status, StatusValue};
use baton_core::story::{Move, StagePlan, StepDetail, StepOutcome};
use std::sync::Arc;

/// The epics whose retrospective is owed, in sprint order.
pub fn owed(run: &RunCtx) -> Result<Vec<EpicId>, EngineError> {
    run.with_ledger(|l| {
        l.refresh()?;
        let sprint = l.doc().sprint();
        Ok(sprint
            .unique()
            .filter_map(|e| match e.key.kind() {
                KeyKind::Retrospective { epic } => Some((epic, e.effective())),
                _ => None,
            })
            .filter(|(epic, status)| {
                *status == StatusValue::Known(Status::Optional)
                    && sprint.stories_of(*epic).next().is_some()
                    && sprint.stories_of(*epic).all(|s| s.effective().is_done())
            })
            .map(|(epic, _)| epic)
            .collect())
    })
}

/// Holds the retrospective of `epic`; returns whether it was held.
pub async fn hold(run: &Arc<RunCtx>, epic: EpicId) -> Result<bool, EngineError> {
    let key = format!("epic-{epic}-retrospective");
    let ctx = StoryCtx::new(run.clone(), &key);
    let agent = dispatch::agent_for(Stage::Retro);
    let plan = StagePlan {
        stage: Stage::Retro,
        agent,
        mode: "retro",
        round: 1,
        note: None,
        failing_tests: None,
    };
    ctx.emit(EventBody::Stage {
        key: key.clone(),
        stage: Stage::Retro,
        round: 1,
        agent: agent.to_owned(),
    });
    let dir = run.rel(&run.settings.stories_dir);
    let task = prompts::render(
        prompts::RETRO,
        &[("epic", &epic.to_string()), ("stories_dir", &dir)],
    );
    let step = ctx.begin_step(&plan, Status::Optional)?;
    // The retrospective writes the memory; it recalls none.
    let about = crate::memory::About {
        stage: "retro".into(),
        skip: true,
        ..crate::memory::About::default()
    };
    let in_step = InStep {
        id: step,
        stage: plan.stage.as_str(),
        round: plan.round,
    };
    let outcome = ctx.run_agent_about(in_step, agent, &task, &about).await;
    let tampered = crate::tamper::check(run)?;
    let prefix = format!("epic-{epic}-retro");
    let documents: Vec<std::path::PathBuf> = std::fs::read_dir(&run.settings.stories_dir)
        .map(|r| {
            r.flatten()
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(&prefix) && n.ends_with(".md")
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    let written = !documents.is_empty();
    let held = outcome.status == AgentStatus::Completed && written && tampered.is_none();
    let detail = StepDetail {
        started_in: Some(Status::Optional),
        agent: Some(agent.to_owned()),
        reason: (!held).then(|| {
            tampered
                .clone()
                .or_else(|| outcome.reason.clone())
                .unwrap_or_else(|| format!("no `{prefix}*.md` was written"))
        }),
        ..StepDetail::default()
    };
    let result = if held {
        StepOutcome::Completed
    } else {
        StepOutcome::Failed
    };
    ctx.end_step(step, result, &detail)?;
    if !held {
        return Ok(false);
    }
    // Its action items and lessons are what the next stories should know.
    for doc in &documents {
        if let Ok(text) = std::fs::read_to_string(doc) {
            ctx.learn(baton_core::memory::sources::retro_drafts(&text, &key));
        }
    }
    ctx.transition(&Move {
        to: Status::Done,
        actor: Actor::ScrumMaster,
        reason: "retrospective held".into(),
        force: false,
        commit: None,
        baseline: false,
    })
    .await?;
    // The retrospective is held; a failed commit is the run's to report (it does not end
    // `completed`).
    let _ = run.commit(&key, commit_message(epic)).await;
    Ok(true)
}

/// The commit of a held retrospective; a resume names the work of a run killed between the
/// move to `done` and this commit the same way.
pub fn commit_message(epic: EpicId) -> String {
    format!("epic({epic}): retrospective")
}
