//! The story driver: load the facts, decide, carry the decision out, until the story ends or
//! waits for a human. All policy is in [`baton_core::story::decide`]; all IO in
//! [`crate::ctx::StoryCtx`] and the stages.

use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::stages;
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::story::{Decision, StoryEnd, StoryFacts, decide};

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
    // A person may have corrected the story's work while it waited.
    crate::feedback::notice_reverts(ctx).await;
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
            Decision::Resolve { id, then } => {
                if let Some(aside) = set_aside(ctx, &facts, id).await? {
                    ctx.resolve(id, then.as_ref()).await?;
                    return Ok(Ended::Story(StoryEnd::Skipped(format!(
                        "its branch is set aside as `{aside}`; the story starts over on the \
                         next run"
                    ))));
                }
                ctx.resolve(id, then.as_ref()).await?
            }
            Decision::Wait(id) => return Ok(Ended::Paused(id)),
            Decision::End(end) => return Ok(Ended::Story(end)),
        }
    }
    Err(EngineError::NoProgress {
        key: ctx.key.clone(),
        what: format!("{MAX_DECISIONS} decisions"),
    })
}

/// When the answer to escalation `id` sets the story's branch aside (a merge the rounds could
/// not make): renames the branch, removes the worktree, and returns the branch's new name.
async fn set_aside(
    ctx: &StoryCtx,
    facts: &StoryFacts,
    id: i64,
) -> Result<Option<String>, EngineError> {
    let Some(tree) = &ctx.tree else {
        return Ok(None);
    };
    let asked = facts.escalations.iter().find(|e| e.id == id);
    if !asked.is_some_and(|e| {
        e.kind == EscalationKind::MergeConflict && e.answer == Some(Choice::SetAside)
    }) {
        return Ok(None);
    }
    tree.lane.set_aside(ctx, id).await.map(Some)
}
