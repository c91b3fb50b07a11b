//! Subagent-driven development of a plan file (`baton sdd PLAN.md`): each task of the plan is a
//! unit of the run, driven like a story — facts → decide → stage → settle — by the pure task
//! machine ([`baton_core::sdd::decide`]).
//!
//! Per task: the implementer (with the test-first guard on), then the spec reviewer, the
//! quality reviewer and, when asked for, the security and performance reviewers concurrently
//! (`stage.rs`). Everything else is the run's: steps are journaled and agents run on the worker
//! their role names through [`crate::run::step`], escalations go through
//! [`crate::run::escalate`], the beginning and end of the run through [`crate::run::preflight`].
//! The state each task enters goes to the journal's `sdd_tasks`, so a run killed anywhere
//! resumes at the task and stage where it stopped.

mod stage;

use crate::error::EngineError;
use crate::protocol::{EscalationView, EventBody, UnitKey};
use crate::run::{Run, Unit, escalate, preflight};
use crate::workflow::{Ending, Workflow};
use crate::workflows::sprint::report::RunEnd;
use baton_core::sdd::{
    Mark, Plan, PlanTask, SddEnd, SddRules, SddStage, SddStep, TaskDecision, TaskFacts, TaskState,
    TaskView, decide, view,
};
use baton_core::story::StepOutcome;
use baton_store::journal::SddTaskRecord;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Settings of an SDD run.
#[derive(Debug, Clone)]
pub struct SddSettings {
    /// Project root (a git work tree).
    pub root: PathBuf,
    /// The plan file, relative to the root (it names the tasks' keys).
    pub plan: String,
    /// Fix rounds and optional reviews.
    pub rules: SddRules,
    /// Whether the test-first guard is on (shown as `[TDD]`).
    pub tdd: bool,
    /// Run even with uncommitted changes in the tree.
    pub allow_dirty: bool,
}

/// One task in the report.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    /// Id.
    pub id: String,
    /// Title.
    pub title: String,
    /// State at the end of the run.
    pub state: TaskState,
}

/// How an SDD run ended.
#[derive(Debug, Clone, Serialize)]
pub struct SddReport {
    /// Run id.
    pub run_id: String,
    /// The plan.
    pub plan: String,
    /// The end.
    pub end: RunEnd,
    /// Why.
    pub reason: String,
    /// Every task.
    pub tasks: Vec<TaskReport>,
    /// The escalation it paused on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalation: Option<EscalationView>,
    /// Spent in this run (US dollars).
    pub cost_usd: f64,
}

/// How one task's drive ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TaskEnd {
    Complete,
    Paused(i64),
    Stop(SddEnd),
}

/// More decisions than any task needs.
const MAX_DECISIONS: usize = 500;

/// The SDD workflow: a plan and how to work it; the run supplies everything else.
pub struct Sdd {
    /// Settings.
    pub settings: SddSettings,
    /// The plan.
    pub plan: Plan,
}

/// One task of the plan as a unit of the run.
struct TaskCtx<'a> {
    run: &'a Arc<Run>,
    settings: &'a SddSettings,
    task: &'a PlanTask,
    unit: Unit,
    position: usize,
    total: usize,
    /// Where the task was last shown to stand.
    shown: Mutex<Option<TaskView>>,
}

impl Workflow for Sdd {
    type Report = SddReport;

    /// Refuses a project that is not a repository, and a dirty tree unless asked; the work a
    /// killed run left uncommitted is committed (its step runs again).
    async fn preflight(&self, run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
        let mut notices = run.end_orphaned_workers().await;
        notices.extend(self.check_tree(run).await?);
        Ok(notices)
    }

    /// Runs the plan's tasks in order until every one is complete, one waits for a human, or
    /// the run stops.
    async fn run(self, run: Arc<Run>) -> SddReport {
        self.work(run).await
    }

    fn ending(report: &SddReport, _run: &Run) -> Ending {
        Ending::new(report.end.as_str(), report.reason.clone())
    }
}

impl Sdd {
    /// The repository and the dirty tree.
    async fn check_tree(&self, run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
        run.require_repo("`baton sdd` commits each task's work (run `git init` and commit first)")
            .await?;
        // baton's own files and the plan itself never make the tree dirty for a run.
        let plan = self.settings.plan.clone();
        let dirty = run
            .foreign_dirt(|p| p == plan || p == "baton.toml" || p.starts_with(".baton/"))
            .await;
        if dirty.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(prev) = run.interrupted()? {
            // The work of a step a killed run cut off: kept, and the step runs again.
            // A failure is the run's to report: it does not end `completed`.
            let _ = run
                .commit(None, "sdd: work left by an interrupted run".into())
                .await;
            return Ok(vec![format!(
                "run {} was interrupted; its uncommitted work is kept and the plan resumes",
                prev.id
            )]);
        }
        if self.settings.allow_dirty {
            return Ok(Vec::new());
        }
        Err(EngineError::Preflight(format!(
            "the working tree has uncommitted changes ({}); commit or stash them, or pass \
             --allow-dirty",
            preflight::list(&dirty)
        )))
    }

    async fn work(&self, run: Arc<Run>) -> SddReport {
        let mut report = SddReport {
            run_id: run.id.clone(),
            plan: self.settings.plan.clone(),
            end: RunEnd::Completed,
            reason: String::new(),
            tasks: Vec::new(),
            escalation: None,
            cost_usd: 0.0,
        };
        let result = self.drive_all(&run, &mut report).await;
        if let Err(e) = result {
            report.end = RunEnd::Failed;
            report.reason = e.to_string();
        }
        report.tasks = self
            .plan
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| TaskReport {
                id: t.id.clone(),
                title: t.title.clone(),
                state: self
                    .task(&run, t, i + 1)
                    .facts()
                    .map(|f| view(&f).state)
                    .unwrap_or(TaskState::Pending),
            })
            .collect();
        report.cost_usd = run.spent();
        report
    }

    fn task<'a>(&'a self, run: &'a Arc<Run>, task: &'a PlanTask, position: usize) -> TaskCtx<'a> {
        TaskCtx {
            run,
            settings: &self.settings,
            task,
            unit: run.unit(UnitKey::PlanTask {
                plan: self.settings.plan.clone(),
                id: task.id.clone(),
            }),
            position,
            total: self.plan.tasks.len(),
            shown: Mutex::new(None),
        }
    }

    async fn drive_all(&self, run: &Arc<Run>, report: &mut SddReport) -> Result<(), EngineError> {
        run.emit_run(EventBody::TasksStarted {
            run_id: run.id.clone(),
            plan: self.settings.plan.clone(),
            tasks: self.plan.tasks.len(),
        });
        let mut complete = 0;
        for (i, task) in self.plan.tasks.iter().enumerate() {
            match self.task(run, task, i + 1).drive().await? {
                TaskEnd::Complete => complete += 1,
                TaskEnd::Paused(id) => {
                    let esc = run.escalation_view(id)?;
                    let title = esc.as_ref().map(|e| e.title.clone()).unwrap_or_default();
                    report.escalation = esc;
                    report.end = RunEnd::Paused;
                    report.reason = format!("task {}: escalation #{id}: {title}", task.id);
                    return Ok(());
                }
                TaskEnd::Stop(end) => {
                    (report.end, report.reason) = match end {
                        SddEnd::Cancelled => (RunEnd::Cancelled, "cancelled".to_owned()),
                        SddEnd::Budget(why) => (RunEnd::Stopped, format!("budget: {why}")),
                        SddEnd::AdjustPlan(why) => (RunEnd::Paused, why),
                        SddEnd::Aborted(why) => (RunEnd::Failed, why),
                    };
                    return Ok(());
                }
            }
        }
        report.reason = format!(
            "{complete} task{} complete",
            if complete == 1 { "" } else { "s" }
        );
        Ok(())
    }
}

impl TaskCtx<'_> {
    /// The facts of the task.
    fn facts(&self) -> Result<TaskFacts, EngineError> {
        let key = self.unit.key.journal_key();
        let steps = self.run.with_journal(|j| Ok(j.steps_for_key(&key)?))?;
        let escalations = self.run.escalations_of(&self.unit.key)?;
        Ok(TaskFacts {
            steps: steps
                .into_iter()
                .filter_map(|s| {
                    Some(SddStep {
                        id: s.id,
                        stage: SddStage::parse(&s.stage)?,
                        round: s.attempt,
                        outcome: s.outcome.as_deref().and_then(StepOutcome::parse),
                        detail: s
                            .detail
                            .as_deref()
                            .and_then(|d| serde_json::from_str(d).ok())
                            .unwrap_or_default(),
                    })
                })
                .collect(),
            escalations: escalations.into_iter().map(escalate::fact).collect(),
            rules: self.settings.rules,
            cancelled: self.run.cancelled(),
            budget_exhausted: self.run.budget_exhausted(),
        })
    }

    /// Journals and shows where the task stands now, when that changed.
    fn show_now(&self) -> Result<(), EngineError> {
        self.show(&view(&self.facts()?))
    }

    /// Journals and shows where the task stands, when that changed.
    fn show(&self, v: &TaskView) -> Result<(), EngineError> {
        let mut last = self
            .shown
            .lock()
            .map_err(|_| EngineError::NoLedger("the task's view lock is poisoned".into()))?;
        if last.as_ref() == Some(v) {
            return Ok(());
        }
        if last.as_ref().map(|l| l.state) != Some(v.state) {
            let record = SddTaskRecord {
                plan: self.settings.plan.clone(),
                task_id: self.task.id.clone(),
                position: i64::try_from(self.position).unwrap_or(i64::MAX),
                title: self.task.title.clone(),
                state: v.state.as_str().to_owned(),
                run_id: Some(self.run.id.clone()),
                updated_at: self.run.clock.now().rfc3339,
            };
            self.run.with_journal(|j| Ok(j.record_sdd_task(&record)?))?;
        }
        *last = Some(v.clone());
        let cost = self.run.spent();
        self.run.emit_unit(
            &self.unit.key,
            EventBody::TaskStatus {
                line: status_line(
                    self.settings.tdd,
                    self.position,
                    self.total,
                    &self.task.title,
                    v,
                    cost,
                ),
                task: self.task.id.clone(),
                position: self.position,
                total: self.total,
                view: v.clone(),
                cost_usd: cost,
            },
        );
        Ok(())
    }

    async fn drive(&self) -> Result<TaskEnd, EngineError> {
        for _ in 0..MAX_DECISIONS {
            let facts = self.facts()?;
            self.show(&view(&facts))?;
            match decide(&facts) {
                TaskDecision::Run(r) => {
                    if let Some(why) = self.stage(&r, &facts).await? {
                        return Ok(TaskEnd::Stop(SddEnd::Budget(why)));
                    }
                }
                TaskDecision::RunParallel(runs) => {
                    let all =
                        futures_util::future::join_all(runs.iter().map(|r| self.stage(r, &facts)))
                            .await;
                    let mut stop = None;
                    for r in all {
                        stop = stop.or(r?);
                    }
                    if let Some(why) = stop {
                        return Ok(TaskEnd::Stop(SddEnd::Budget(why)));
                    }
                }
                TaskDecision::Escalate(e) => {
                    let title = format!("task {}: {}", self.task.id, e.title);
                    let after_step = facts.steps.last().map_or(0, |s| s.id);
                    self.run
                        .raise(&self.unit.key, title, &e, after_step)
                        .await?;
                }
                TaskDecision::Resolve { id, then } => {
                    self.run.resolve_escalation(id)?;
                    if let Some(end) = then {
                        return Ok(TaskEnd::Stop(end));
                    }
                }
                TaskDecision::Wait(id) => return Ok(TaskEnd::Paused(id)),
                TaskDecision::Complete => return Ok(TaskEnd::Complete),
                TaskDecision::End(end) => return Ok(TaskEnd::Stop(end)),
            }
        }
        Err(EngineError::NoProgress {
            key: self.unit.key.journal_key(),
            what: format!("{MAX_DECISIONS} decisions"),
        })
    }
}

/// `[TDD] Task 3/7 "Parse the input" — reviewing (spec ✓ quality …) | $2.34`.
pub fn status_line(
    tdd: bool,
    position: usize,
    total: usize,
    title: &str,
    v: &TaskView,
    cost_usd: f64,
) -> String {
    let marks: Vec<String> = [
        ("spec", v.spec),
        ("quality", v.quality),
        ("security", v.security),
        ("performance", v.performance),
    ]
    .into_iter()
    .filter(|(_, m)| *m != Mark::Off)
    .map(|(name, m)| format!("{name} {}", m.symbol()))
    .collect();
    let state = match v.state {
        TaskState::Pending | TaskState::Implementing => v.state.as_str().to_owned(),
        _ => format!("{} ({})", v.state, marks.join(" ")),
    };
    format!(
        "{}Task {position}/{total} \"{title}\" — {state} | ${cost_usd:.2}",
        if tdd { "[TDD] " } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_shows_the_task_its_reviews_and_the_cost() {
        let v = TaskView {
            state: TaskState::Reviewing,
            spec: Mark::Passed,
            quality: Mark::Waiting,
            security: Mark::Off,
            performance: Mark::Off,
            fixes: 0,
        };
        assert_eq!(
            status_line(true, 3, 7, "Parse the input", &v, 2.339),
            "[TDD] Task 3/7 \"Parse the input\" — reviewing (spec ✓ quality …) | $2.34"
        );
        let v = TaskView {
            state: TaskState::Implementing,
            security: Mark::Waiting,
            ..v
        };
        assert_eq!(
            status_line(false, 1, 2, "A", &v, 0.0),
            "Task 1/2 \"A\" — implementing | $0.00"
        );
    }
}
