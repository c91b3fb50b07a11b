//! Subagent-driven development of a plan file (`baton sdd PLAN.md`): each task of the plan is
//! driven like a story — facts → decide → stage → settle — by the pure task machine
//! ([`baton_core::sdd::decide`]).
//!
//! Per task: the implementer (with the test-first guard on), then the spec reviewer, the
//! quality reviewer and, when asked for, the security and performance reviewers concurrently.
//! Reviewers get the files git says changed since the task started; their fenced verdict is
//! parsed in code. Every step and escalation is journaled under the task's key
//! (`sdd:<plan>#<id>`) and the state each task enters goes to the journal's `sdd_tasks`, so a
//! run killed anywhere resumes at the task and stage where it stopped. Escalations go through
//! the same journal records, `escalations.log` line and `baton answer` as the sprint's.

use crate::clock::{Clock, SystemClock};
use crate::ctx::Answer;
use crate::error::EngineError;
use crate::escalation::{self, EscalationHost};
use crate::prompts;
use crate::protocol::{EscalationView, Event};
use crate::setup::Setup;
use crate::stages::agent_escalation;
use crate::workflows::sprint::report::RunEnd;
use baton_agent::outcome::{Outcome, Status as AgentStatus};
use baton_agent::worker::{Job, Worker};
use baton_core::budget::BudgetState;
use baton_core::sdd::{
    Mark, Plan, PlanTask, SddDetail, SddEnd, SddRules, SddRun, SddStage, SddStep, TaskDecision,
    TaskFacts, TaskState, TaskView, decide, view,
};
use baton_core::story::{Escalate, StepOutcome};
use baton_core::verdict::{Severity, Verdict, parse_review};
use baton_store::journal::{
    EscalationRecord, Journal, RunRecord, SddTaskRecord, SqliteJournal, StepRecord,
};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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
    /// The append-only escalation log.
    pub escalations_log: PathBuf,
    /// Run even with uncommitted changes in the tree.
    pub allow_dirty: bool,
}

/// Something that happened in an SDD run.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SddEvent {
    /// The run started.
    Started {
        /// Run id.
        run_id: String,
        /// The plan.
        plan: String,
        /// Its tasks.
        tasks: usize,
    },
    /// Where a task stands: `[TDD] Task 3/7 "…" — reviewing (spec ✓ quality …) | $2.34`.
    Status {
        /// The line.
        line: String,
        /// The task's id.
        task: String,
        /// Its position from 1.
        position: usize,
        /// Tasks in the plan.
        total: usize,
        /// Where it stands.
        view: TaskView,
        /// Spent so far in the run.
        cost_usd: f64,
    },
    /// A stage started.
    Stage {
        /// The task.
        task: String,
        /// The stage.
        stage: SddStage,
        /// Its round.
        round: u32,
        /// The agent.
        agent: String,
    },
    /// A stage ended.
    StageEnded {
        /// The task.
        task: String,
        /// The stage.
        stage: SddStage,
        /// How.
        outcome: StepOutcome,
    },
    /// A commit was made, or failed.
    Commit {
        /// The message.
        message: String,
        /// Why it failed, if it did.
        error: Option<String>,
    },
    /// A human is needed.
    Escalation {
        /// The escalation.
        escalation: EscalationView,
    },
    /// Something to know.
    Notice {
        /// The message.
        message: String,
    },
    /// An agent's activity.
    Agent {
        /// The event.
        agent_event: Event,
    },
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

/// The SDD engine: everything a run needs, wired by the front end.
pub struct SddEngine {
    /// Agents and their shared settings (budget, cancellation, guard).
    pub setup: Arc<Setup>,
    /// The journal.
    pub journal: Arc<Mutex<SqliteJournal>>,
    /// Settings.
    pub settings: SddSettings,
    /// This run's id.
    pub run_id: String,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Where events go.
    pub events: mpsc::UnboundedSender<SddEvent>,
    /// Answers from a human at a terminal (`None`: nobody can answer now).
    pub answers: Option<tokio::sync::Mutex<mpsc::UnboundedReceiver<Answer>>>,
}

impl SddEngine {
    /// An engine on the system clock.
    pub fn new(
        setup: Arc<Setup>,
        journal: Arc<Mutex<SqliteJournal>>,
        settings: SddSettings,
        run_id: String,
        events: mpsc::UnboundedSender<SddEvent>,
        answers: Option<mpsc::UnboundedReceiver<Answer>>,
    ) -> SddEngine {
        SddEngine {
            setup,
            journal,
            settings,
            run_id,
            clock: Arc::new(SystemClock),
            events,
            answers: answers.map(tokio::sync::Mutex::new),
        }
    }

    fn emit(&self, e: SddEvent) {
        let _ = self.events.send(e);
    }

    fn with_journal<T>(
        &self,
        f: impl FnOnce(&mut SqliteJournal) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let mut j = self
            .journal
            .lock()
            .map_err(|_| EngineError::NoLedger("the journal lock is poisoned".into()))?;
        f(&mut j)
    }

    /// The journal key of a task.
    pub fn key(&self, task: &PlanTask) -> String {
        format!("sdd:{}#{}", self.settings.plan, task.id)
    }

    fn spent(&self) -> f64 {
        self.setup.budget.spent().usd
    }

    /// Runs the plan's tasks in order until every one is complete, one waits for a human, or
    /// the run stops.
    pub async fn run(&self, plan: &Plan) -> SddReport {
        let mut report = SddReport {
            run_id: self.run_id.clone(),
            plan: self.settings.plan.clone(),
            end: RunEnd::Completed,
            reason: String::new(),
            tasks: Vec::new(),
            escalation: None,
            cost_usd: 0.0,
        };
        let result = match self.start().await {
            Ok(()) => self.drive_all(plan, &mut report).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            report.end = RunEnd::Failed;
            report.reason = e.to_string();
        }
        report.tasks = plan
            .tasks
            .iter()
            .map(|t| TaskReport {
                id: t.id.clone(),
                title: t.title.clone(),
                state: self
                    .facts(t)
                    .map(|f| view(&f).state)
                    .unwrap_or(TaskState::Pending),
            })
            .collect();
        report.cost_usd = self.spent();
        let at = self.clock.now().rfc3339;
        let _ = self.with_journal(|j| {
            Ok(j.end_run(&self.run_id, &at, report.end.as_str(), &report.reason)?)
        });
        report
    }

    /// Checks the tree and journals the run's start.
    async fn start(&self) -> Result<(), EngineError> {
        let ws = &self.setup.workspace;
        if !ws.git().is_repo().await {
            return Err(EngineError::Preflight(format!(
                "`{}` is not a git repository; `baton sdd` commits each task's work (run `git \
                 init` and commit first)",
                self.settings.root.display()
            )));
        }
        let snap = ws.snapshot().await;
        // baton's own files and the plan itself never make the tree dirty for a run.
        let dirty: Vec<String> = snap
            .dirty()
            .filter(|p| *p != self.settings.plan && *p != "baton.toml" && !p.starts_with(".baton/"))
            .map(str::to_owned)
            .collect();
        if !dirty.is_empty() {
            let interrupted = self
                .with_journal(|j| Ok(j.last_run("sdd")?))?
                .is_some_and(|r| r.status == "running");
            if interrupted {
                // The work of a step a killed run cut off: kept, and the step runs again.
                self.commit("sdd: work left by an interrupted run".into())
                    .await;
            } else if !self.settings.allow_dirty {
                return Err(EngineError::Preflight(format!(
                    "the working tree has uncommitted changes ({}); commit or stash them, or \
                     pass --allow-dirty",
                    dirty.join(", ")
                )));
            }
        }
        let started = self.clock.now().rfc3339;
        self.with_journal(|j| {
            Ok(j.begin_run(&RunRecord {
                id: self.run_id.clone(),
                kind: "sdd".into(),
                started_at: started,
                ended_at: None,
                status: "running".into(),
                reason: None,
            })?)
        })
    }

    async fn drive_all(&self, plan: &Plan, report: &mut SddReport) -> Result<(), EngineError> {
        self.emit(SddEvent::Started {
            run_id: self.run_id.clone(),
            plan: self.settings.plan.clone(),
            tasks: plan.tasks.len(),
        });
        let total = plan.tasks.len();
        let mut complete = 0;
        for (i, task) in plan.tasks.iter().enumerate() {
            match self.drive(task, i + 1, total).await? {
                TaskEnd::Complete => complete += 1,
                TaskEnd::Paused(id) => {
                    let esc = self
                        .with_journal(|j| Ok(j.escalations(false)?))?
                        .into_iter()
                        .find(|e| e.id == id);
                    let title = esc.as_ref().map(|e| e.title.clone()).unwrap_or_default();
                    report.escalation = esc.as_ref().map(|e| EscalationView::of(e, false));
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

    /// The facts of a task.
    fn facts(&self, task: &PlanTask) -> Result<TaskFacts, EngineError> {
        let key = self.key(task);
        let (steps, escalations) = self.with_journal(|j| {
            let steps = j.steps_for_key(&key)?;
            let escalations: Vec<EscalationRecord> = j
                .escalations(false)?
                .into_iter()
                .filter(|e| e.key.as_deref() == Some(key.as_str()))
                .collect();
            Ok((steps, escalations))
        })?;
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
            escalations: escalations.into_iter().map(escalation::fact).collect(),
            rules: self.settings.rules,
            cancelled: self.setup.cancel.is_cancelled(),
            budget_exhausted: match self.setup.budget.check(Default::default()) {
                BudgetState::Exhausted(why) => Some(why),
                _ => None,
            },
        })
    }

    /// Journals and shows where a task stands, when that changed.
    fn show(
        &self,
        task: &PlanTask,
        position: usize,
        total: usize,
        v: &TaskView,
        last: &mut Option<TaskView>,
    ) -> Result<(), EngineError> {
        if last.as_ref() == Some(v) {
            return Ok(());
        }
        if last.as_ref().map(|l| l.state) != Some(v.state) {
            let record = SddTaskRecord {
                plan: self.settings.plan.clone(),
                task_id: task.id.clone(),
                position: i64::try_from(position).unwrap_or(i64::MAX),
                title: task.title.clone(),
                state: v.state.as_str().to_owned(),
                run_id: Some(self.run_id.clone()),
                updated_at: self.clock.now().rfc3339,
            };
            self.with_journal(|j| Ok(j.record_sdd_task(&record)?))?;
        }
        *last = Some(v.clone());
        let cost = self.spent();
        self.emit(SddEvent::Status {
            line: status_line(self.settings.tdd, position, total, &task.title, v, cost),
            task: task.id.clone(),
            position,
            total,
            view: v.clone(),
            cost_usd: cost,
        });
        Ok(())
    }

    async fn drive(
        &self,
        task: &PlanTask,
        position: usize,
        total: usize,
    ) -> Result<TaskEnd, EngineError> {
        let mut last = None;
        for _ in 0..MAX_DECISIONS {
            let facts = self.facts(task)?;
            self.show(task, position, total, &view(&facts), &mut last)?;
            match decide(&facts) {
                TaskDecision::Run(r) => {
                    if let Some(why) = self.stage(task, &r, &facts).await? {
                        return Ok(TaskEnd::Stop(SddEnd::Budget(why)));
                    }
                }
                TaskDecision::RunParallel(runs) => {
                    let all = futures_util::future::join_all(
                        runs.iter().map(|r| self.stage(task, r, &facts)),
                    )
                    .await;
                    let mut stop = None;
                    for r in all {
                        stop = stop.or(r?);
                    }
                    if let Some(why) = stop {
                        return Ok(TaskEnd::Stop(SddEnd::Budget(why)));
                    }
                }
                TaskDecision::Escalate(e) => self.raise(task, &e, &facts).await?,
                TaskDecision::Resolve { id, then } => {
                    let at = self.clock.now().rfc3339;
                    self.with_journal(|j| Ok(j.resolve_escalation(id, &at)?))?;
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
            key: self.key(task),
            what: format!("{MAX_DECISIONS} decisions"),
        })
    }

    /// The commit a task's work started from: what its newest implement step recorded.
    fn base(facts: &TaskFacts) -> Option<String> {
        facts
            .steps
            .iter()
            .rev()
            .find(|s| s.stage == SddStage::Implement)
            .and_then(|s| s.detail.base.clone())
    }

    async fn task_text(
        &self,
        task: &PlanTask,
        r: &SddRun,
        facts: &TaskFacts,
        base: Option<&str>,
    ) -> String {
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
                    ("plan", &self.settings.plan),
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
                    ("plan", &self.settings.plan),
                    ("title", &task.title),
                    ("findings", r.findings.join("\n").trim()),
                ],
            ),
            review => {
                let base = base.map(str::to_owned).or_else(|| Self::base(facts));
                let changed = self
                    .setup
                    .workspace
                    .changed_from(base.as_deref())
                    .await
                    .unwrap_or_default();
                let changed: Vec<&String> = changed
                    .iter()
                    .filter(|p| **p != self.settings.plan)
                    .collect();
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
                        ("plan", &self.settings.plan),
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
    async fn stage(
        &self,
        task: &PlanTask,
        r: &SddRun,
        facts: &TaskFacts,
    ) -> Result<Option<String>, EngineError> {
        let agent = r.stage.agent();
        self.emit(SddEvent::Stage {
            task: task.id.clone(),
            stage: r.stage,
            round: r.round,
            agent: agent.to_owned(),
        });
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
                None => self.setup.workspace.head().await,
            }
        } else {
            None
        };
        let text = self.task_text(task, r, facts, base.as_deref()).await;
        let begin = SddDetail {
            base: base.clone(),
            ..SddDetail::default()
        };
        let step = StepRecord {
            id: 0,
            run_id: self.run_id.clone(),
            key: Some(self.key(task)),
            stage: r.stage.as_str().to_owned(),
            attempt: r.round,
            input_hash: String::new(),
            outcome: None,
            started_at: self.clock.now().rfc3339,
            ended_at: None,
            detail: serde_json::to_string(&begin).ok(),
        };
        let id = self.with_journal(|j| Ok(j.begin_step(&step)?))?;
        let outcome = self.run_agent(agent, &text).await;
        let (result, mut detail) = settle(r, &outcome);
        detail.base = base;
        let at = self.clock.now().rfc3339;
        let json = serde_json::to_string(&detail).ok();
        self.with_journal(|j| Ok(j.end_step(id, &at, result.as_str(), json.as_deref())?))?;
        self.emit(SddEvent::StageEnded {
            task: task.id.clone(),
            stage: r.stage,
            outcome: result,
        });
        if !r.stage.is_review() && result != StepOutcome::Cancelled {
            let what = match r.stage {
                SddStage::Fix => format!("fix round {}", r.round),
                _ => "implement".to_owned(),
            };
            self.commit(format!("sdd(task {}): {what}", task.id)).await;
        }
        let budget = outcome
            .reason
            .as_deref()
            .and_then(|r| r.strip_prefix("budget: "))
            .filter(|_| result == StepOutcome::Cancelled);
        Ok(budget.map(str::to_owned))
    }

    async fn run_agent(&self, agent: &str, task: &str) -> Outcome {
        match self.setup.runner(agent) {
            Ok((runner, def)) => {
                let job = Job {
                    agent: def,
                    task: task.to_owned(),
                };
                Worker::run(&runner, &job).await
            }
            Err(e) => Outcome::not_started(agent, e.to_string()),
        }
    }

    async fn commit(&self, message: String) {
        let error = match self.setup.workspace.commit_all(&message).await {
            Ok(Some(_)) => None,
            Ok(None) => return,
            Err(e) => Some(e.to_string()),
        };
        self.emit(SddEvent::Commit { message, error });
    }

    /// Records an escalation and, with a human at the terminal, waits for their answer.
    async fn raise(
        &self,
        task: &PlanTask,
        e: &Escalate,
        facts: &TaskFacts,
    ) -> Result<(), EngineError> {
        let title = format!("task {}: {}", task.id, e.title);
        let after_step = facts.steps.last().map_or(0, |s| s.id);
        escalation::raise_in(self, &self.key(task), title, e, after_step).await
    }
}

impl EscalationHost for SddEngine {
    fn run_id(&self) -> &str {
        &self.run_id
    }
    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }
    fn answers(&self) -> Option<&tokio::sync::Mutex<mpsc::UnboundedReceiver<Answer>>> {
        self.answers.as_ref()
    }
    fn cancel(&self) -> &CancellationToken {
        &self.setup.cancel
    }
    fn escalations_log(&self) -> &Path {
        &self.settings.escalations_log
    }
    fn with_journal<T>(
        &self,
        f: impl FnOnce(&mut SqliteJournal) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        SddEngine::with_journal(self, f)
    }
    fn emit_escalation(&self, escalation: EscalationView) {
        self.emit(SddEvent::Escalation { escalation });
    }
}

/// A stage's result from the agent's outcome and, for reviews, the parsed verdict.
fn settle(r: &SddRun, o: &Outcome) -> (StepOutcome, SddDetail) {
    let mut detail = SddDetail {
        reason: o.reason.clone(),
        ..SddDetail::default()
    };
    let outcome = match o.status {
        AgentStatus::Completed if !r.stage.is_review() => StepOutcome::Completed,
        AgentStatus::Completed => match parse_review(&o.summary) {
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
        },
        AgentStatus::Halted => StepOutcome::Halted,
        AgentStatus::Escalated => {
            detail.escalation = Some(agent_escalation(o, o.reason.clone().unwrap_or_default()));
            StepOutcome::Escalated
        }
        AgentStatus::Failed => StepOutcome::Failed,
        AgentStatus::TimedOut => StepOutcome::TimedOut,
        AgentStatus::Cancelled => StepOutcome::Cancelled,
    };
    (outcome, detail)
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
