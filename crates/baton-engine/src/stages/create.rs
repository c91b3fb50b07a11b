//! Create (and revise) a story file: the scrum master writes it from the planning documents.
//! Whether the file exists afterwards is a fact the next decision reads.

use super::{Settled, StageWork};
use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::prompts;
use baton_agent::outcome::Outcome;
use baton_core::story::{StagePlan, StepOutcome};

/// The create and revise stages.
pub struct Create;

impl StageWork for Create {
    async fn task(&self, plan: &StagePlan, ctx: &StoryCtx) -> Result<String, EngineError> {
        let run = &ctx.run;
        Ok(prompts::render(
            prompts::CREATE,
            &[
                ("key", &ctx.key),
                ("mode", plan.mode),
                ("story_file", &ctx.rel(&ctx.story_path())),
                ("planning_dir", &run.rel(&run.settings.planning_dir)),
            ],
        ))
    }

    async fn settle(
        &self,
        _plan: &StagePlan,
        _outcome: &Outcome,
        _step: i64,
        _ctx: &StoryCtx,
    ) -> Result<Settled, EngineError> {
        Ok(Settled::of(StepOutcome::Completed))
    }
}
