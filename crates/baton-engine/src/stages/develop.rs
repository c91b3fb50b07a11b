//! Implement a story, or fix it after a rejected review: the developer works, then the
//! orchestrator runs the project's tests itself. The developer's word that "all tests pass" is
//! never the verdict; an interrupted test run is no verdict at all.

use super::{Settled, StageWork};
use crate::checks::{self, TestCommand, TestVerdict};
use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::prompts;
use crate::protocol::EventBody;
use crate::story_doc;
use baton_agent::outcome::Outcome;
use baton_core::dispatch::Stage;
use baton_core::status::Status;
use baton_core::story::{StagePlan, StepDetail, StepOutcome};

/// The dev and fix stages.
pub struct Develop;

impl StageWork for Develop {
    async fn task(&self, plan: &StagePlan, ctx: &StoryCtx) -> Result<String, EngineError> {
        let run = &ctx.run;
        let story = ctx.story_path();
        let tests_line = run
            .settings
            .test_command
            .as_ref()
            .map(|c| prompts::render(prompts::TESTS_LINE, &[("command", &c.join(" "))]))
            .unwrap_or_default();
        let story_file = ctx.rel(&story);
        if plan.stage != Stage::Fix {
            return Ok(prompts::render(
                prompts::DEV,
                &[
                    ("key", &ctx.key),
                    ("story_file", &story_file),
                    ("tests_line", &tests_line),
                ],
            ));
        }
        let findings = story_doc::latest_findings(&story).unwrap_or_default();
        let failing = plan
            .failing_tests
            .as_deref()
            .map(|out| prompts::render(prompts::FAILING_TESTS, &[("output", out)]))
            .unwrap_or_default();
        Ok(prompts::render(
            prompts::FIX,
            &[
                ("key", &ctx.key),
                ("round", &plan.round.to_string()),
                ("story_file", &story_file),
                ("tests_line", &tests_line),
                ("findings", &findings),
                ("failing_tests", &failing),
            ],
        ))
    }

    async fn settle(
        &self,
        plan: &StagePlan,
        _outcome: &Outcome,
        step: i64,
        ctx: &StoryCtx,
    ) -> Result<Settled, EngineError> {
        let run = &ctx.run;
        let Some(argv) = run.settings.test_command.clone() else {
            return Ok(Settled::of(StepOutcome::Completed));
        };
        // Until the tests settle it, the step is only `agent-done`: a run killed during the
        // tests repeats the step, same round.
        let pending = StepDetail {
            started_in: Some(Status::InProgress),
            agent: Some(plan.agent.to_owned()),
            ..StepDetail::default()
        };
        ctx.end_step(step, StepOutcome::AgentDone, &pending)?;
        let test = TestCommand {
            argv,
            timeout: run.settings.test_timeout,
            env_remove: run.setup.commands.env_remove.clone(),
        };
        let result = checks::run_tests(ctx.workspace().root(), &test, &run.setup.cancel).await;
        // The tests may have written anything: the stage's commit asks git about the whole tree.
        ctx.workspace().forget();
        ctx.emit(EventBody::Tests {
            key: ctx.key.clone(),
            passed: result.passed(),
            interrupted: result.verdict == TestVerdict::Interrupted,
        });
        Ok(match result.verdict {
            TestVerdict::Passed => Settled::of(StepOutcome::Completed),
            TestVerdict::Interrupted => Settled::of(StepOutcome::TestsInterrupted),
            TestVerdict::Failed => {
                let what = if plan.stage == Stage::Fix {
                    format!("fix round {}", plan.round)
                } else {
                    "dev".to_owned()
                };
                Settled {
                    outcome: StepOutcome::TestsFailed,
                    detail: StepDetail {
                        reason: Some(result.output_tail),
                        ..StepDetail::default()
                    },
                    // The work is kept, and the next round starts from it.
                    commit: Some(format!("{what} (tests failing)")),
                }
            }
        })
    }
}
