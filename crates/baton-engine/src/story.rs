//! The story driver: load the facts, decide, carry the decision out, until the story ends or
//! waits for a human. All policy is in [`baton_core::story::decide`]; all IO in
//! [`crate::ctx::StoryCtx`] and the stages.

use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::stages;
use baton_core::story::{Decision, StoryEnd, decide};

/// How a story's drive ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The story ended for this run.
    Story(StoryEnd),
    /// It waits for the answer to this escalation.
    Paused(i64),
}

/// More decisions than any story needs: a story still going is stuck, not busy.
const MAX_DECISIONS: usize = 1_000;

/// Drives one story until it ends or waits for a human.
pub async fn drive(ctx: &StoryCtx) -> Result<Ended, EngineError> {
    for _ in 0..MAX_DECISIONS {
        let facts = ctx.load_facts()?;
        match decide(&facts) {
            Decision::Run(plan) => {
                // decide() plans a stage only for a story in a known status.
                let Some(status) = facts.status.known() else {
                    return Err(EngineError::NoProgress {
                        key: ctx.key.clone(),
                        what: "a stage planned for an unknown status".into(),
                    });
                };
                stages::run(&plan, status, ctx).await?
            }
            Decision::Move(m) => ctx.transition(&m).await?,
            Decision::Escalate(e) => ctx.raise(&e, &facts).await?,
            Decision::Resolve { id, then } => ctx.resolve(id, then.as_ref()).await?,
            Decision::Wait(id) => return Ok(Ended::Paused(id)),
            Decision::End(end) => return Ok(Ended::Story(end)),
        }
    }
    Err(EngineError::NoProgress {
        key: ctx.key.clone(),
        what: format!("{MAX_DECISIONS} decisions"),
    })
}
