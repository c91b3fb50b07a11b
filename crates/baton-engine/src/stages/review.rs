//! Code review and end-to-end verification: the reviewer gets what git says changed since the
//! story started (not what the developer claims), and the fenced verdict block is parsed in code:
//! pass, fail, or inconclusive — never a guess. A code review must also report enough findings.

use super::{Settled, StageWork};
use crate::checks;
use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::prompts;
use crate::protocol::EventBody;
use crate::story_doc;
use baton_agent::outcome::Outcome;
use baton_core::dispatch::Stage;
use baton_core::stall::findings_fingerprint;
use baton_core::story::{StagePlan, StepDetail, StepOutcome};
use baton_core::verdict::{Verdict, parse_review};

/// The review and verify stages.
pub struct Review;

/// At most this many characters of a commit id in a prompt.
const SHORT_ID: usize = 12;

impl StageWork for Review {
    async fn task(&self, plan: &StagePlan, ctx: &StoryCtx) -> Result<String, EngineError> {
        let story = ctx.story_path();
        let base = story_doc::baseline(&story);
        let changed = ctx
            .workspace()
            .changed_from(base.as_deref())
            .await
            .unwrap_or_default();
        let listed = story_doc::read(&story)
            .map(|t| baton_store::story_file::file_list(&t))
            .unwrap_or_default();
        let check = checks::compare_file_list(&listed, &changed);
        let changed_code: Vec<&String> = changed
            .iter()
            .filter(|p| !p.starts_with("_bmad-output/") && !p.starts_with(".baton/"))
            .collect();
        let verify = plan.stage == Stage::Verify;
        // The baseline comes from a file an agent can edit: cut it by characters, never bytes.
        let base_note = base
            .as_deref()
            .map(|b| format!(" (base {})", b.chars().take(SHORT_ID).collect::<String>()))
            .unwrap_or_default();
        Ok(prompts::render(
            prompts::REVIEW,
            &[
                ("verb", if verify { "Verify" } else { "Review" }),
                ("key", &ctx.key),
                ("round", &plan.round.to_string()),
                ("mode", plan.mode),
                ("story_file", &ctx.rel(&story)),
                ("base", &base_note),
                ("changed", &prompts::list(&changed_code)),
                ("unlisted", &prompts::list(&check.unlisted)),
                ("unchanged", &prompts::list(&check.unchanged)),
            ],
        ))
    }

    async fn settle(
        &self,
        plan: &StagePlan,
        outcome: &Outcome,
        _step: i64,
        ctx: &StoryCtx,
    ) -> Result<Settled, EngineError> {
        let verify = plan.stage == Stage::Verify;
        let (passed, review) = match parse_review(&outcome.summary) {
            Verdict::Inconclusive { reason } => {
                return Ok(Settled {
                    outcome: StepOutcome::Inconclusive,
                    detail: StepDetail {
                        reason: Some(reason),
                        ..StepDetail::default()
                    },
                    commit: None,
                });
            }
            Verdict::Pass(r) => (true, r),
            Verdict::Fail(r) => (false, r),
        };
        ctx.emit(EventBody::Review {
            key: ctx.key.clone(),
            round: plan.round,
            passed,
            findings: review.findings.clone(),
        });
        let detail = StepDetail {
            reason: Some(review.summary.clone()),
            fingerprint: Some(findings_fingerprint(&review.findings)),
            findings: Some(review.findings.len()),
            blocking: Some(review.blocking()),
            ..StepDetail::default()
        };
        if !verify {
            ctx.review_settled(&review.findings);
        }
        if !verify && review.findings.len() < ctx.run.settings.min_findings {
            return Ok(Settled {
                outcome: StepOutcome::TooFewFindings,
                detail,
                commit: None,
            });
        }
        let story = ctx.story_path();
        story_doc::add_review_findings(&story, &review.to_markdown(plan.round))?;
        ctx.workspace().touched(&[&story]);
        let outcome = match (passed, verify) {
            (true, _) => StepOutcome::Passed,
            (false, false) => StepOutcome::ChangesRequested,
            (false, true) => StepOutcome::VerificationFailed,
        };
        Ok(Settled {
            outcome,
            detail,
            commit: None,
        })
    }
}
