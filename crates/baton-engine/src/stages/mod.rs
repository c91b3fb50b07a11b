//! Stages: the work a [`StagePlan`] asks for, one module per stage behind [`StageWork`].
//!
//! A stage turns the plan into its agent's task, and the agent's completed run plus the
//! orchestrator's own checks (tests re-run, changed files from git, the parsed verdict) into a
//! [`Settled`] step: a typed [`StepOutcome`] and the [`StepDetail`] later decisions read. What
//! happens next is not the stage's business: the step is journaled as a fact and
//! [`baton_core::story::decide`] takes it from there.

mod create;
mod develop;
pub mod retro;
mod review;
mod story_review;

use crate::ctx::{InStep, StoryCtx};
use crate::error::EngineError;
use crate::protocol::EventBody;
use crate::run::step::{self, Unfinished};
use crate::story_doc;
use crate::tamper;
use baton_agent::outcome::Outcome;
use baton_core::dispatch::Stage;
use baton_core::status::Status;
use baton_core::story::{StagePlan, StepDetail, StepOutcome};
use std::future::Future;

/// How a step ended, as the orchestrator settled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    /// The outcome.
    pub outcome: StepOutcome,
    /// What it leaves for later decisions.
    pub detail: StepDetail,
    /// A commit to make once the step is journaled (work kept even though it did not pass).
    pub commit: Option<String>,
}

impl Settled {
    /// A step that ended with `outcome` and nothing more to say.
    pub fn of(outcome: StepOutcome) -> Settled {
        Settled {
            outcome,
            detail: StepDetail::default(),
            commit: None,
        }
    }
}

/// One kind of stage.
pub trait StageWork: Sync {
    /// The agent's task.
    fn task(
        &self,
        plan: &StagePlan,
        ctx: &StoryCtx,
    ) -> impl Future<Output = Result<String, EngineError>> + Send;

    /// The step's result, from the agent's completed run and the orchestrator's own checks.
    /// `step` is the journal id of the step (a stage may record an intermediate outcome).
    fn settle(
        &self,
        plan: &StagePlan,
        outcome: &Outcome,
        step: i64,
        ctx: &StoryCtx,
    ) -> impl Future<Output = Result<Settled, EngineError>> + Send;
}

/// Runs the stage `plan` asks for, on a story in `status`, and journals its result.
pub async fn run(plan: &StagePlan, status: Status, ctx: &StoryCtx) -> Result<(), EngineError> {
    match plan.stage {
        Stage::Create | Stage::Revise => execute(&create::Create, plan, status, ctx).await,
        Stage::StoryReview => execute(&story_review::StoryReview, plan, status, ctx).await,
        Stage::Dev | Stage::Fix => execute(&develop::Develop, plan, status, ctx).await,
        Stage::Review | Stage::Verify => execute(&review::Review, plan, status, ctx).await,
        Stage::Retro => Err(EngineError::NoProgress {
            key: ctx.key.clone(),
            what: "a retrospective planned as a story stage".into(),
        }),
    }
}

async fn execute<S: StageWork>(
    stage: &S,
    plan: &StagePlan,
    status: Status,
    ctx: &StoryCtx,
) -> Result<(), EngineError> {
    ctx.emit(EventBody::Stage {
        key: ctx.key.clone(),
        stage: plan.stage,
        round: plan.round,
        agent: plan.agent.to_owned(),
    });
    let mut task = stage.task(plan, ctx).await?;
    if let Some(note) = &plan.note {
        task = format!("{task}\n\n{}", note.text());
    }
    let about = ctx
        .about(
            plan.stage.as_str(),
            matches!(
                plan.stage,
                Stage::Review | Stage::Verify | Stage::StoryReview
            ),
        )
        .await;
    let step = ctx.begin_step(plan, status)?;
    let in_step = InStep {
        id: step,
        stage: plan.stage.as_str(),
        round: plan.round,
    };
    let outcome = ctx
        .run_agent_about(in_step, plan.agent, &task, &about)
        .await;
    let mut settled = if let Some(why) = tamper::check(&ctx.run)? {
        Settled {
            outcome: StepOutcome::Failed,
            detail: StepDetail {
                reason: Some(why),
                ..StepDetail::default()
            },
            commit: None,
        }
    } else {
        match step::unfinished(&outcome) {
            None => stage.settle(plan, &outcome, step, ctx).await?,
            Some(u) => unfinished(u, ctx)?,
        }
    };
    settled.detail.started_in = Some(status);
    settled.detail.agent = Some(outcome.agent.clone());
    ctx.end_step(step, settled.outcome, &settled.detail)?;
    if let Some(what) = &settled.commit {
        ctx.commit(what).await?;
    }
    Ok(())
}

/// The step of an agent that did not complete: settled the same in every workflow
/// ([`crate::run::step::unfinished`]), plus the sprint's own trace of a halt in the story file.
fn unfinished(u: Unfinished, ctx: &StoryCtx) -> Result<Settled, EngineError> {
    if u.outcome == StepOutcome::Halted {
        let story = ctx.story_path();
        if story.is_file() {
            story_doc::add_halt(&story, &u.reason)?;
            ctx.workspace().touched(&[&story]);
        }
    }
    Ok(Settled {
        outcome: u.outcome,
        detail: StepDetail {
            reason: Some(u.reason),
            escalation: u.escalation,
            budget_stop: u.budget_stop,
            ..StepDetail::default()
        },
        commit: None,
    })
}
