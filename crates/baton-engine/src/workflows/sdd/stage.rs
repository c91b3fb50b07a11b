//! The stages of a plan task: the agent's task text for each (implement, fix, the reviews), and
//! the settled result of a completed agent (a review's fenced verdict parsed in code). Running
//! the agent and journaling the step are the run's ([`crate::run::step`]).

use super::TaskCtx;
use crate::error::EngineError;
use crate::prompts;
use crate::protocol::EventBody;
use crate::run::{Run, step};
use baton_agent::outcome::Outcome;
use baton_core::sdd::{SddDetail, SddRun, SddStage, TaskFacts};
use baton_core::story::StepOutcome;
use baton_core::verdict::{Severity, Verdict, parse_review};

impl TaskCtx<'_> {
    /// The commit the task's work started from: what its newest implement step recorded.
    fn base(facts: &TaskFacts) -> Option<String> {
        facts
            .steps
            .iter()
            .rev()
            .find(|s| s.stage == SddStage::Implement)
            .and_then(|s| s.detail.base.clone())
    }

    async fn task_text(&self, r: &SddRun, facts: &TaskFacts, base: Option<&str>) -> String {
        let task = self.task;
        let plan = self.settings.plan.as_str();
        let files = prompts::list(&task.files);
        let acceptance = task.acceptance_test.as_deref().unwrap_or("(none named)");
        let body = if task.body.is_empty() {
            String::new()
        } else {
            format!("The plan says:\n{}\n", task.body)
        };
        let id = task.id.as_str();
        let round = r.round.to_string();
        let text = match r.stage {
            SddStage::Implement => prompts::render(
                prompts::SDD_IMPLEMENT,
                &[
                    ("task_id", id),
                    ("plan", plan),
                    ("title", &task.title),
                    ("files", &files),
                    ("acceptance", acceptance),
                    ("body", &body),
                ],
            ),
            SddStage::Fix => prompts::render(
                prompts::SDD_FIX,
                &[
                    ("round", &round),
                    ("task_id", id),
                    ("plan", plan),
                    ("title", &task.title),
                    ("findings", r.findings.join("\n").trim()),
                ],
            ),
            review => {
                let base = base.map(str::to_owned).or_else(|| Self::base(facts));
                let changed = self
                    .unit
                    .workspace
                    .changed_from(base.as_deref())
                    .await
                    .unwrap_or_default();
                let changed: Vec<&String> = changed.iter().filter(|p| **p != plan).collect();
                let base_note = base
                    .as_deref()
                    .map(|b| format!(" (base {})", b.chars().take(12).collect::<String>()))
                    .unwrap_or_default();
                let name = match review {
                    SddStage::SpecReview => "Spec",
                    SddStage::QualityReview => "Quality",
                    SddStage::SecurityReview => "Security",
                    _ => "Performance",
                };
                prompts::render(
                    prompts::SDD_REVIEW,
                    &[
                        ("review", name),
                        ("task_id", id),
                        ("plan", plan),
                        ("round", &round),
                        ("title", &task.title),
                        ("files", &files),
                        ("acceptance", acceptance),
                        ("body", &body),
                        ("base", &base_note),
                        ("changed", &prompts::list(&changed)),
                    ],
                )
            }
        };
        match &r.note {
            Some(note) => format!("{text}\n\n{note}"),
            None => text,
        }
    }

    /// Runs one stage and journals its settled result; `Some(why)` when the budget stopped it
    /// (a dispatch refused, or a stream cut off at the hard limit).
    pub(super) async fn stage(
        &self,
        r: &SddRun,
        facts: &TaskFacts,
    ) -> Result<Option<String>, EngineError> {
        let agent = r.stage.agent();
        self.run.emit_unit(
            &self.unit.key,
            EventBody::TaskStage {
                task: self.task.id.clone(),
                stage: r.stage,
                round: r.round,
                agent: agent.to_owned(),
            },
        );
        // The commit the task starts from; an implementation run again after it failed keeps
        // the first attempt's, so the reviewers see that attempt's files too.
        let base = if r.stage == SddStage::Implement {
            let retried = facts
                .steps
                .iter()
                .rev()
                .find(|s| s.stage == SddStage::Implement)
                .filter(|s| s.outcome != Some(StepOutcome::Completed))
                .and_then(|s| s.detail.base.clone());
            match retried {
                Some(b) => Some(b),
                None => self.unit.workspace.head().await,
            }
        } else {
            None
        };
        let text = self.task_text(r, facts, base.as_deref()).await;
        let begin = SddDetail {
            base: base.clone(),
            ..SddDetail::default()
        };
        let id = self.run.begin_step(
            &self.unit.key,
            r.stage.as_str(),
            r.round,
            serde_json::to_string(&begin).ok(),
        )?;
        if !r.stage.is_review() {
            // The task is implementing (or fixing) from the moment its step begins.
            self.show_now()?;
        }
        let about = Run::about_unit(&self.unit);
        let outcome = self
            .run
            .run_agent_about(&self.unit, Some(id), agent, &text, &about)
            .await;
        let (result, mut detail, budget_stop) = settle(r, &outcome);
        detail.base = base;
        self.run
            .end_step(id, result, serde_json::to_string(&detail).ok())?;
        self.run.emit_unit(
            &self.unit.key,
            EventBody::TaskStageEnded {
                task: self.task.id.clone(),
                stage: r.stage,
                outcome: result,
            },
        );
        if !r.stage.is_review() && result != StepOutcome::Cancelled {
            let what = match r.stage {
                SddStage::Fix => format!("fix round {}", r.round),
                _ => "implement".to_owned(),
            };
            self.run
                .commit(
                    Some(&self.unit),
                    format!("sdd(task {}): {what}", self.task.id),
                )
                .await?;
        }
        // The reason reads `budget: …`; the run's report says `budget:` itself.
        Ok(budget_stop.then(|| {
            let why = detail.reason.as_deref().unwrap_or_default();
            why.strip_prefix("budget: ").unwrap_or(why).to_owned()
        }))
    }
}

/// A stage's result from the agent's outcome and, for reviews, the parsed verdict; and whether
/// the budget stopped it.
fn settle(r: &SddRun, o: &Outcome) -> (StepOutcome, SddDetail, bool) {
    if let Some(u) = step::unfinished(o) {
        let detail = SddDetail {
            reason: Some(u.reason),
            escalation: u.escalation,
            ..SddDetail::default()
        };
        return (u.outcome, detail, u.budget_stop);
    }
    let mut detail = SddDetail {
        reason: o.reason.clone(),
        ..SddDetail::default()
    };
    if !r.stage.is_review() {
        return (StepOutcome::Completed, detail, false);
    }
    let outcome = match parse_review(&o.summary) {
        Verdict::Inconclusive { reason } => {
            detail.reason = Some(reason);
            StepOutcome::Inconclusive
        }
        Verdict::Pass(review) | Verdict::Fail(review) => {
            detail.reason = Some(review.summary.clone());
            detail.findings = review.findings.len();
            detail.critical = review
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Critical)
                .count();
            detail.findings_text = Some(format!(
                "{} review:\n{}",
                r.stage.agent(),
                review.to_markdown(r.round)
            ));
            if review.passed {
                StepOutcome::Passed
            } else {
                StepOutcome::ChangesRequested
            }
        }
    };
    (outcome, detail, false)
}
