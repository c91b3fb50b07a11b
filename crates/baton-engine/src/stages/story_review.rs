//! Review a story document before anyone builds it: the verdict block decides, nothing else.

use super::{Settled, StageWork};
use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::prompts;
use baton_agent::outcome::Outcome;
use baton_core::story::{StagePlan, StepDetail, StepOutcome};
use baton_core::verdict::{Verdict, parse_review};

/// The story-document review stage.
pub struct StoryReview;

impl StageWork for StoryReview {
    async fn task(&self, _plan: &StagePlan, ctx: &StoryCtx) -> Result<String, EngineError> {
        Ok(prompts::render(
            prompts::STORY_REVIEW,
            &[
                ("key", &ctx.key),
                ("story_file", &ctx.rel(&ctx.story_path())),
            ],
        ))
    }

    async fn settle(
        &self,
        _plan: &StagePlan,
        outcome: &Outcome,
        _step: i64,
        _ctx: &StoryCtx,
    ) -> Result<Settled, EngineError> {
        let (outcome, reason) = match parse_review(&outcome.summary) {
            Verdict::Pass(r) => (StepOutcome::Passed, r.summary),
            Verdict::Fail(r) => (StepOutcome::ChangesRequested, r.summary),
            Verdict::Inconclusive { reason } => (StepOutcome::Inconclusive, reason),
        };
        Ok(Settled {
            outcome,
            detail: StepDetail {
                reason: Some(reason),
                ..StepDetail::default()
            },
            commit: None,
        })
    }
}
