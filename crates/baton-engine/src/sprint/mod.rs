//! The sprint loop: stories from backlog to done, enforced by code, resumable at any instant.
//!
//! Each story is driven by its status through the dispatch table (baton-core): the scrum master
//! creates it, the developer implements it, the orchestrator runs the tests itself, the reviewer
//! reviews it against git, and a failed review sends it back for a bounded number of fix rounds.
//! Every decision — the verdict, the round count, a stall, a loop, the budget, an escalation — is
//! made here in code. State lives in the sprint file, the story file and the journal only, so a
//! run killed anywhere resumes from them: completed steps are not repeated, an interrupted step
//! runs again, and the ledger records every transition exactly once.

pub mod checks;
pub mod git;
pub mod story;

use crate::setup::Setup;
use crate::sprint_tools::SharedLedger;
use baton_agent::outcome::{Outcome, Status as AgentStatus};
use baton_agent::runner::{AgentEvent, Mode};
use baton_core::actor::Actor;
use baton_core::budget::BudgetState;
use baton_core::dispatch::{self, DispatchOptions, Stage};
use baton_core::key::KeyKind;
use baton_core::stall::{StallDetector, findings_fingerprint};
use baton_core::status::{Status, StatusValue};
use baton_core::verdict::{Verdict, parse_review};
use baton_store::journal::{EscalationRecord, EventFilter, Journal, RunRecord, StepRecord};
use baton_store::ledger::{Now, Request};
use serde::Serialize;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Settings of a sprint run.
#[derive(Debug, Clone)]
pub struct SprintSettings {
    /// Project root (a git work tree).
    pub root: PathBuf,
    /// Story directory.
    pub stories_dir: PathBuf,
    /// Planning directory.
    pub planning_dir: PathBuf,
    /// The append-only escalation log (`_bmad-output/escalations.log`).
    pub escalations_log: PathBuf,
    /// Stories per run.
    pub batch: usize,
    /// Explicit stories, in this order.
    pub stories: Option<Vec<String>>,
    /// Story-document review and QA stages.
    pub dispatch: DispatchOptions,
    /// Fix rounds before escalating.
    pub max_review_rounds: u32,
    /// Findings a review must report.
    pub min_findings: usize,
    /// The project's test command (program and arguments); `None` skips the check.
    pub test_command: Option<Vec<String>>,
    /// Timeout of one test run.
    pub test_timeout: Duration,
    /// Statuses a story may only enter after a human confirms (standard mode).
    pub checkpoints: Vec<Status>,
    /// Timeout of one story.
    pub story_timeout: Duration,
    /// Timeout of the whole run.
    pub run_timeout: Duration,
    /// Times a story may enter the same status before it is a loop.
    pub loop_limit: usize,
    /// Hold an epic's retrospective (scrum master) when its last story is done.
    pub retrospective: bool,
}

/// Something that happened in a sprint, for progress displays and `--json`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SprintEvent {
    /// The run started.
    RunStarted {
        /// Run id.
        run_id: String,
        /// Stories in the batch.
        stories: Vec<String>,
        /// Standard or YOLO.
        mode: Mode,
    },
    /// A stage of a story started.
    Stage {
        /// Story.
        key: String,
        /// Stage.
        stage: Stage,
        /// Review round (1 for the first).
        round: u32,
        /// Agent.
        agent: String,
    },
    /// A status changed.
    Transition {
        /// Key.
        key: String,
        /// From.
        from: String,
        /// To.
        to: String,
    },
    /// The orchestrator ran the tests.
    Tests {
        /// Story.
        key: String,
        /// Whether they passed.
        passed: bool,
    },
    /// A stage was committed.
    Commit {
        /// Story.
        key: String,
        /// Message.
        message: String,
    },
    /// A stage could not be committed (its work stays in the tree for the next commit).
    CommitFailed {
        /// Story.
        key: String,
        /// The intended message.
        message: String,
        /// Why.
        error: String,
    },
    /// A human is needed.
    Escalation {
        /// Escalation.
        escalation: EscalationRecord,
    },
    /// A story finished for this run.
    StoryFinished {
        /// Story.
        key: String,
        /// Its status now.
        status: String,
        /// Why, when not done.
        reason: Option<String>,
    },
    /// An agent event.
    Agent {
        /// The event.
        inner: AgentEvent,
    },
}

/// Callback for sprint events.
pub type SprintEventFn = Arc<dyn Fn(&SprintEvent) + Send + Sync>;

/// Asks a human (when one is at a terminal).
pub trait HumanInput: Send + Sync {
    /// Shows the escalation and returns the chosen option, or `None` if nobody can answer now.
    fn ask(&self, escalation: &EscalationRecord) -> Option<String>;
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnd {
    /// Every story of the batch is done.
    Completed,
    /// Waiting for a human's answer.
    Paused,
    /// The budget stopped it.
    Stopped,
    /// A story needs intervention or something failed.
    Failed,
    /// Cancelled (Ctrl-C).
    Cancelled,
}

impl RunEnd {
    /// The journal's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunEnd::Completed => "completed",
            RunEnd::Paused => "paused",
            RunEnd::Stopped => "stopped",
            RunEnd::Failed => "failed",
            RunEnd::Cancelled => "cancelled",
        }
    }
}

/// One story's line of the batch report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StoryReport {
    /// Story key.
    pub key: String,
    /// Status at the end of the run.
    pub final_status: String,
    /// Agents dispatched, in order.
    pub agents: Vec<String>,
    /// Fix rounds used (review rounds that requested changes, and failed test runs).
    pub review_rounds: u32,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars.
    pub cost_usd: f64,
    /// Why it did not finish, if it did not.
    pub error: Option<String>,
}

/// The batch report.
#[derive(Debug, Clone, Serialize)]
pub struct SprintReport {
    /// Run id.
    pub run_id: String,
    /// How it ended.
    pub end: RunEnd,
    /// Why.
    pub reason: String,
    /// Stories in the batch.
    pub total: usize,
    /// Done.
    pub completed: usize,
    /// Need intervention or failed.
    pub failed: usize,
    /// Not started or not finished because the run stopped first.
    pub skipped: usize,
    /// Per story.
    pub stories: Vec<StoryReport>,
    /// The escalation awaiting an answer, if paused.
    pub escalation: Option<EscalationRecord>,
}

enum StoryEnd {
    Done,
    NeedsIntervention(String),
    Paused(Box<EscalationRecord>),
    Stopped(String),
    Cancelled,
    Skipped(String),
    /// The step ended in a way that lets the story go on (an escalation answered at once).
    Retry,
}

/// Escalation kinds the engine acts on.
mod kind {
    pub const MAX_ROUNDS: &str = "max-review-rounds";
    pub const STALL: &str = "stall";
    pub const INCONCLUSIVE: &str = "inconclusive-review";
    pub const FEW_FINDINGS: &str = "too-few-findings";
    pub const CHECKPOINT: &str = "checkpoint";
    pub const AGENT: &str = "agent";
}

const ANOTHER_ROUND: &str = "another fix round";
const RERUN_REVIEW: &str = "re-run the review";
const ACCEPT: &str = "accept as is (mark done)";
const STOP: &str = "stop (needs-intervention)";
const CONFIRM: &str = "confirm done";
const SEND_BACK: &str = "send back for another round";

/// The sprint engine.
pub struct SprintEngine {
    /// Agents and their shared settings.
    pub setup: Arc<Setup>,
    /// The sprint ledger (sprint file + journal).
    pub ledger: SharedLedger,
    /// Settings.
    pub settings: SprintSettings,
    /// This run's id.
    pub run_id: String,
    /// Progress events.
    pub on_event: Option<SprintEventFn>,
    /// A human at a terminal, if any.
    pub human: Option<Arc<dyn HumanInput>>,
}

struct StoryRun {
    report: StoryReport,
    note: Option<String>,
    inconclusive: u32,
    few_findings_retried: bool,
    stall: StallDetector,
}

impl SprintEngine {
    fn emit(&self, e: SprintEvent) {
        if let Some(f) = &self.on_event {
            f(&e);
        }
    }

    fn with_ledger<T>(
        &self,
        f: impl FnOnce(
            &mut baton_store::ledger::Ledger<baton_store::journal::SqliteJournal>,
        ) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut guard = self
            .ledger
            .lock()
            .map_err(|_| "the sprint ledger is poisoned".to_owned())?;
        match guard.as_mut() {
            Ok(l) => f(l),
            Err(why) => Err(why.clone()),
        }
    }

    fn status(&self, key: &str) -> Result<StatusValue, String> {
        self.with_ledger(|l| {
            l.refresh().map_err(|e| e.to_string())?;
            l.doc()
                .sprint()
                .get(key)
                .map(|e| e.effective())
                .ok_or_else(|| format!("`{key}` is not in the sprint file"))
        })
    }

    /// One transition through the ledger; a story entering the same status too often is a
    /// loop and goes to needs-intervention instead.
    fn transition(
        &self,
        key: &str,
        to: Status,
        actor: Actor,
        reason: &str,
        force: bool,
    ) -> Result<(), String> {
        let applied = self.with_ledger(|l| {
            let entered = l
                .journal()
                .events(&EventFilter {
                    key: Some(key.to_owned()),
                    ..EventFilter::default()
                })
                .map_err(|e| e.to_string())?
                .iter()
                .filter(|e| e.to == to.as_str())
                .count();
            let (to, actor, reason, force) =
                if entered >= self.settings.loop_limit && to != Status::NeedsIntervention {
                    (
                        Status::NeedsIntervention,
                        Actor::Orchestrator,
                        format!("loop detected: `{key}` entered {to} {entered} times"),
                        false,
                    )
                } else {
                    (to, actor, reason.to_owned(), force)
                };
            let req = Request {
                key: key.to_owned(),
                to,
                actor,
                reason,
                note: None,
                force,
                run_id: Some(self.run_id.clone()),
            };
            l.transition(&req, &Now::system())
                .map_err(|e| e.to_string())
        })?;
        for a in applied {
            self.emit(SprintEvent::Transition {
                key: a.key,
                from: a.from,
                to: a.to,
            });
        }
        Ok(())
    }

    fn story_path(&self, key: &str) -> PathBuf {
        self.settings.stories_dir.join(format!("{key}.md"))
    }

    fn rel(&self, p: &std::path::Path) -> String {
        p.strip_prefix(&self.settings.root)
            .unwrap_or(p)
            .display()
            .to_string()
    }

    async fn commit(&self, key: &str, what: &str) {
        let short = key.split('-').take(2).collect::<Vec<_>>().join("-");
        self.commit_message(key, format!("story({short}): {what}"))
            .await;
    }

    async fn commit_message(&self, key: &str, message: String) {
        match git::commit_all(&self.settings.root, &message).await {
            Ok(Some(_)) => self.emit(SprintEvent::Commit {
                key: key.to_owned(),
                message,
            }),
            Ok(None) => {}
            // The work stays in the tree and goes into the next commit; say so.
            Err(e) => self.emit(SprintEvent::CommitFailed {
                key: key.to_owned(),
                message,
                error: e,
            }),
        }
    }

    fn steps(&self, key: &str) -> Vec<StepRecord> {
        self.with_ledger(|l| l.journal().steps_for_key(key).map_err(|e| e.to_string()))
            .unwrap_or_default()
    }

    /// Fix rounds used so far, and extra rounds a human granted.
    fn rounds(&self, key: &str) -> (u32, u32) {
        let used = self
            .steps(key)
            .iter()
            .filter(|s| {
                s.stage == "fix" && !matches!(s.outcome.as_deref(), None | Some("agent-done"))
            })
            .count() as u32;
        let granted = self
            .escalations(key)
            .iter()
            .filter(|e| {
                (e.kind == kind::MAX_ROUNDS || e.kind == kind::STALL)
                    && e.answer.as_deref() == Some(ANOTHER_ROUND)
            })
            .count() as u32;
        (used, granted)
    }

    /// Whether the story is in-progress because changes were requested (rather than an
    /// interrupted first implementation).
    fn fixing(&self, key: &str) -> bool {
        self.steps(key)
            .iter()
            .rev()
            .find(|s| s.outcome.is_some())
            .is_some_and(|s| {
                // A fix step that completed while the story stayed in-progress was interrupted
                // before its tests confirmed it: it is still a fix.
                s.stage == "fix"
                    || matches!(
                        s.outcome.as_deref(),
                        Some("changes-requested" | "tests-failed" | "verification-failed")
                    )
            })
    }

    fn escalations(&self, key: &str) -> Vec<EscalationRecord> {
        self.with_ledger(|l| l.journal().escalations(false).map_err(|e| e.to_string()))
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e.key.as_deref() == Some(key))
            .collect()
    }

    /// Records an escalation (journal and escalations.log); asks a human if one is there.
    fn escalate(
        &self,
        key: &str,
        kind: &str,
        title: &str,
        finding: &str,
        options: &[&str],
    ) -> Result<EscalationRecord, String> {
        let mut esc = EscalationRecord {
            id: 0,
            run_id: Some(self.run_id.clone()),
            key: Some(key.to_owned()),
            title: title.to_owned(),
            finding: finding.to_owned(),
            options: options.iter().map(|s| (*s).to_owned()).collect(),
            answer: None,
            created_at: Now::system().rfc3339,
            answered_at: None,
            kind: kind.to_owned(),
            resolved_at: None,
        };
        esc.id = self.with_ledger(|l| {
            l.journal_mut()
                .raise_escalation(&esc)
                .map_err(|e| e.to_string())
        })?;
        let line = format!(
            "{} #{} [{}] {}: {} — {} | options: {}\n",
            esc.created_at,
            esc.id,
            key,
            kind,
            title,
            finding.replace('\n', " "),
            esc.options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}) {o}", i + 1))
                .collect::<Vec<_>>()
                .join(" ")
        );
        if let Some(dir) = self.settings.escalations_log.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.settings.escalations_log)
        {
            let _ = f.write_all(line.as_bytes());
            let _ = f.sync_data();
        }
        self.emit(SprintEvent::Escalation {
            escalation: esc.clone(),
        });
        if let Some(answer) = self.human.as_ref().and_then(|h| h.ask(&esc)) {
            let at = Now::system().rfc3339;
            self.with_ledger(|l| {
                l.journal_mut()
                    .answer_escalation(esc.id, &answer, &at)
                    .map_err(|e| e.to_string())
            })?;
            esc.answer = Some(answer);
            esc.answered_at = Some(at);
        }
        Ok(esc)
    }

    async fn agent(
        &self,
        run: &mut StoryRun,
        key: &str,
        name: &str,
        stage: Stage,
        round: u32,
        task: &str,
    ) -> Outcome {
        self.emit(SprintEvent::Stage {
            key: key.to_owned(),
            stage,
            round,
            agent: name.to_owned(),
        });
        let task = match run.note.take() {
            Some(note) => format!("{task}\n\n{note}"),
            None => task.to_owned(),
        };
        let step = StepRecord {
            id: 0,
            run_id: self.run_id.clone(),
            key: Some(key.to_owned()),
            stage: stage.to_string(),
            attempt: round,
            input_hash: String::new(),
            outcome: None,
            started_at: Now::system().rfc3339,
            ended_at: None,
        };
        let step_id = self
            .with_ledger(|l| l.journal_mut().begin_step(&step).map_err(|e| e.to_string()))
            .ok();
        run.report.agents.push(name.to_owned());
        let outcome = match self.setup.runner(name) {
            Ok((runner, def)) => runner.run(&def, &task).await,
            Err(e) => Outcome {
                agent: name.to_owned(),
                model: String::new(),
                status: AgentStatus::Failed,
                reason: Some(e.to_string()),
                summary: String::new(),
                files_changed: Vec::new(),
                usage: Default::default(),
                cost_usd: 0.0,
                turns: 0,
                transcript: None,
                escalation: None,
            },
        };
        run.report.input_tokens += outcome.usage.total_input();
        run.report.output_tokens += outcome.usage.output_tokens;
        run.report.cost_usd += outcome.cost_usd;
        if let Some(id) = step_id {
            // A dev or fix step is settled by the orchestrator's own test run; until then it is
            // only `agent-done`, so a run killed during the tests repeats the step, same round.
            let label = match (stage, outcome.status) {
                (Stage::Dev | Stage::Fix, AgentStatus::Completed) => "agent-done",
                (_, status) => status.as_str(),
            };
            self.end_step(id, label);
        }
        outcome
    }

    fn end_step(&self, id: i64, outcome: &str) {
        let at = Now::system().rfc3339;
        let _ = self.with_ledger(|l| {
            l.journal_mut()
                .end_step(id, &at, outcome)
                .map_err(|e| e.to_string())
        });
    }

    /// Relabels the outcome of the newest step of `key` (e.g. `completed` → `tests-failed`).
    fn relabel_last_step(&self, key: &str, outcome: &str) {
        if let Some(s) = self
            .steps(key)
            .into_iter()
            .rev()
            .find(|s| s.outcome.is_some())
        {
            self.end_step(s.id, outcome);
        }
    }

    /// Moves the story to needs-intervention with `why` and ends it there.
    fn intervene(&self, key: &str, why: String) -> Result<StoryEnd, String> {
        self.transition(
            key,
            Status::NeedsIntervention,
            Actor::Orchestrator,
            &why,
            false,
        )?;
        Ok(StoryEnd::NeedsIntervention(why))
    }

    /// Maps an agent run that did not complete to the story's end.
    fn unfinished(&self, key: &str, o: &Outcome) -> Result<StoryEnd, String> {
        let reason = o
            .reason
            .clone()
            .unwrap_or_else(|| o.status.as_str().to_owned());
        match o.status {
            AgentStatus::Escalated => {
                let e = o
                    .escalation
                    .clone()
                    .unwrap_or_else(|| baton_agent::tools::Escalation {
                        title: "agent escalated".into(),
                        finding: reason.clone(),
                        options: vec!["continue".into(), "stop".into()],
                    });
                let opts: Vec<&str> = e.options.iter().map(String::as_str).collect();
                let esc = self.escalate(
                    key,
                    kind::AGENT,
                    &format!("{}: {}", o.agent, e.title),
                    &e.finding,
                    &opts,
                )?;
                Ok(if esc.answer.is_some() {
                    StoryEnd::Retry
                } else {
                    StoryEnd::Paused(Box::new(esc))
                })
            }
            AgentStatus::Cancelled if reason.starts_with("budget") => Ok(StoryEnd::Stopped(reason)),
            AgentStatus::Cancelled => Ok(StoryEnd::Cancelled),
            AgentStatus::Halted => {
                let _ = story::add_halt(&self.story_path(key), &reason);
                let why = format!("HALT: {reason}");
                self.intervene(key, why)
            }
            _ => {
                let why = format!("{} {}: {reason}", o.agent, o.status.as_str());
                self.intervene(key, why)
            }
        }
    }

    /// Acts on an answered escalation of `key`; returns an end if the answer ends the story.
    async fn apply_answer(
        &self,
        key: &str,
        run: &mut StoryRun,
    ) -> Result<Option<StoryEnd>, String> {
        let mut pending_commit: Option<&str> = None;
        let end = self.act_on_answers(key, run, &mut pending_commit)?;
        if let Some(what) = pending_commit {
            self.commit(key, what).await;
        }
        Ok(end)
    }

    fn act_on_answers(
        &self,
        key: &str,
        run: &mut StoryRun,
        pending_commit: &mut Option<&'static str>,
    ) -> Result<Option<StoryEnd>, String> {
        let answered: Vec<EscalationRecord> = self
            .escalations(key)
            .into_iter()
            .filter(|e| e.answer.is_some() && e.resolved_at.is_none())
            .collect();
        let mut end = None;
        for e in answered {
            let answer = e.answer.clone().unwrap_or_default();
            let at = Now::system().rfc3339;
            self.with_ledger(|l| {
                l.journal_mut()
                    .resolve_escalation(e.id, &at)
                    .map_err(|x| x.to_string())
            })?;
            match (e.kind.as_str(), answer.as_str()) {
                (_, ACCEPT) => {
                    self.transition(
                        key,
                        Status::Done,
                        Actor::Human,
                        &format!("accepted as is (escalation #{})", e.id),
                        true,
                    )?;
                    end = Some(StoryEnd::Done);
                    *pending_commit = Some("done (accepted by a human)");
                }
                (_, STOP) => {
                    let why = format!("stopped by a human (escalation #{}: {})", e.id, e.title);
                    self.transition(key, Status::NeedsIntervention, Actor::Human, &why, false)?;
                    *pending_commit = Some("stopped by a human");
                    end = Some(StoryEnd::NeedsIntervention(why));
                }
                (kind::CHECKPOINT, CONFIRM) => {
                    self.transition(
                        key,
                        Status::Done,
                        Actor::Human,
                        &format!("confirmed (escalation #{})", e.id),
                        false,
                    )?;
                    end = Some(StoryEnd::Done);
                    *pending_commit = Some("done (confirmed by a human)");
                }
                (kind::CHECKPOINT, _) => {
                    self.transition(
                        key,
                        Status::InProgress,
                        Actor::Human,
                        "sent back at the done checkpoint",
                        false,
                    )?;
                    run.note = Some(
                        "A human sent this story back for another round before marking it done."
                            .into(),
                    );
                }
                (kind::INCONCLUSIVE | kind::FEW_FINDINGS, _) => {
                    run.inconclusive = 0;
                    run.few_findings_retried = false;
                }
                (kind::MAX_ROUNDS | kind::STALL, _) => {}
                _ => {
                    run.note = Some(format!(
                        "A human answered your escalation #{} (\"{}\"): {answer}",
                        e.id, e.title
                    ));
                }
            }
        }
        Ok(end)
    }

    async fn drive(&self, key: &str, run: &mut StoryRun) -> Result<StoryEnd, String> {
        loop {
            if self.setup.cancel.is_cancelled() {
                return Ok(StoryEnd::Cancelled);
            }
            if let BudgetState::Exhausted(why) = self.setup.budget.check(Default::default()) {
                return Ok(StoryEnd::Stopped(format!("budget: {why}")));
            }
            if let Some(end) = self.apply_answer(key, run).await? {
                return Ok(end);
            }
            if let Some(open) = self
                .escalations(key)
                .into_iter()
                .find(|e| e.answer.is_none())
            {
                return Ok(StoryEnd::Paused(Box::new(open)));
            }
            let status = match self.status(key)? {
                StatusValue::Known(s) => s,
                other => {
                    return Ok(StoryEnd::Skipped(format!(
                        "status `{other}` belongs to another tool"
                    )));
                }
            };
            if status == Status::Done {
                return Ok(StoryEnd::Done);
            }
            if status == Status::NeedsIntervention {
                return Ok(StoryEnd::NeedsIntervention("needs intervention".into()));
            }
            let fixing = status == Status::InProgress && self.fixing(key);
            let Some(route) = dispatch::route(status, fixing, self.settings.dispatch) else {
                return Ok(StoryEnd::Skipped(format!("nothing to do for `{status}`")));
            };
            let (used, granted) = self.rounds(key);
            run.report.review_rounds = used;
            let story_path = self.story_path(key);
            let story_rel = self.rel(&story_path);
            match route.stage {
                Stage::Create | Stage::Revise => {
                    let task = format!(
                        "Create the story file for story `{key}` (mode: {}). Write it to `{story_rel}`, from the epics and architecture in `{}`, following the story template; its Status line reads `ready-for-dev`.",
                        route.mode,
                        self.rel(&self.settings.planning_dir)
                    );
                    let o = self
                        .agent(run, key, route.agent, route.stage, 1, &task)
                        .await;
                    if o.status != AgentStatus::Completed {
                        match self.unfinished(key, &o)? {
                            StoryEnd::Retry => continue,
                            end => return Ok(end),
                        }
                    }
                    if !story_path.is_file() {
                        let why = format!("{} finished without writing `{story_rel}`", route.agent);
                        return self.intervene(key, why);
                    }
                    self.transition(
                        key,
                        route.on_success,
                        Actor::ScrumMaster,
                        "story file written",
                        false,
                    )?;
                    self.commit(key, "create").await;
                }
                Stage::StoryReview => {
                    let task = format!(
                        "Review the story document `{story_rel}` of story `{key}` (mode: story-review) for completeness and testability. End with the baton-review block."
                    );
                    let o = self
                        .agent(run, key, route.agent, route.stage, 1, &task)
                        .await;
                    if o.status != AgentStatus::Completed {
                        match self.unfinished(key, &o)? {
                            StoryEnd::Retry => continue,
                            end => return Ok(end),
                        }
                    }
                    let to = match parse_review(&o.summary) {
                        Verdict::Pass(_) => route.on_success,
                        _ => route.on_failure.unwrap_or(Status::StoryDocImproved),
                    };
                    self.transition(key, to, Actor::Reviewer, "story document reviewed", false)?;
                }
                Stage::Dev | Stage::Fix => {
                    if status == Status::ReadyForDev {
                        if let Some(head) = baton_agent::tools::git::head(&self.settings.root).await
                        {
                            let _ = story::set_baseline(&story_path, &head);
                        }
                        self.transition(
                            key,
                            Status::InProgress,
                            Actor::Developer,
                            "development started",
                            false,
                        )?;
                    }
                    // A dev or fix step already settled `completed` while the story is still
                    // in-progress was killed between its passing tests and its transition: the
                    // step is done; only the check and the transition are owed.
                    if status == Status::InProgress && self.last_step_settled(key) {
                        let passed = match &self.settings.test_command {
                            Some(cmd) => {
                                checks::run_tests(
                                    &self.settings.root,
                                    cmd,
                                    self.settings.test_timeout,
                                )
                                .await
                                .passed
                            }
                            None => true,
                        };
                        if passed {
                            let what = if used > 0 {
                                format!("fix round {used}")
                            } else {
                                "dev".to_owned()
                            };
                            self.transition(
                                key,
                                route.on_success,
                                Actor::Developer,
                                "implementation complete, tests pass",
                                false,
                            )?;
                            self.commit(key, &what).await;
                        } else {
                            self.relabel_last_step(key, "tests-failed");
                        }
                        continue;
                    }
                    let fix = route.stage == Stage::Fix;
                    let round = used + 1;
                    if fix && used >= self.settings.max_review_rounds + granted {
                        let esc = self.escalate(
                            key,
                            kind::MAX_ROUNDS,
                            &format!("`{key}` used all {used} fix rounds"),
                            &format!(
                                "The review still requests changes after {used} fix rounds (limit {}).",
                                self.settings.max_review_rounds
                            ),
                            &[ANOTHER_ROUND, ACCEPT, STOP],
                        )?;
                        if esc.answer.is_none() {
                            return Ok(StoryEnd::Paused(Box::new(esc)));
                        }
                        continue;
                    }
                    let test_cmd = self.settings.test_command.clone().map(|c| c.join(" "));
                    let tests_line = test_cmd
                        .as_deref()
                        .map(|c| format!("The test command is `{c}`; the orchestrator runs it after you finish."))
                        .unwrap_or_default();
                    let task = if fix {
                        let findings = story::latest_findings(&story_path).unwrap_or_default();
                        let tests = match &self.settings.test_command {
                            Some(cmd) if self.last_outcome_is(key, "tests-failed") => {
                                let run = checks::run_tests(
                                    &self.settings.root,
                                    cmd,
                                    self.settings.test_timeout,
                                )
                                .await;
                                format!("The tests fail:\n```\n{}\n```", run.output_tail)
                            }
                            _ => String::new(),
                        };
                        format!(
                            "Fix story `{key}`, fix round {round} (mode: fix). The story file is `{story_rel}`.\n{tests_line}\nReview findings to address:\n{findings}\n{tests}"
                        )
                    } else {
                        format!(
                            "Implement story `{key}` (mode: dev). The story file is `{story_rel}`. Work task by task, test first, and keep the File List and Dev Agent Record up to date.\n{tests_line}"
                        )
                    };
                    let stage_name = if fix { Stage::Fix } else { Stage::Dev };
                    let o = self
                        .agent(run, key, route.agent, stage_name, round, &task)
                        .await;
                    if o.status != AgentStatus::Completed {
                        match self.unfinished(key, &o)? {
                            StoryEnd::Retry => continue,
                            end => return Ok(end),
                        }
                    }
                    let what = if fix {
                        format!("fix round {round}")
                    } else {
                        "dev".to_owned()
                    };
                    if let Some(cmd) = &self.settings.test_command {
                        let t =
                            checks::run_tests(&self.settings.root, cmd, self.settings.test_timeout)
                                .await;
                        self.emit(SprintEvent::Tests {
                            key: key.to_owned(),
                            passed: t.passed,
                        });
                        if !t.passed {
                            // The developer's word is not enough: failing tests send the story
                            // back, and that counts as a fix round.
                            self.relabel_last_step(key, "tests-failed");
                            self.commit(key, &format!("{what} (tests failing)")).await;
                            continue;
                        }
                    }
                    self.relabel_last_step(key, "completed");
                    self.transition(
                        key,
                        route.on_success,
                        Actor::Developer,
                        "implementation complete, tests pass",
                        false,
                    )?;
                    self.commit(key, &what).await;
                }
                Stage::Review | Stage::Verify => {
                    let verify = route.stage == Stage::Verify;
                    let base = story::baseline(&story_path);
                    let changed = baton_agent::tools::git::changed_files(
                        &self.settings.root,
                        base.as_deref(),
                    )
                    .await
                    .unwrap_or_default();
                    let listed = std::fs::read_to_string(&story_path)
                        .map(|t| baton_store::story_file::file_list(&t))
                        .unwrap_or_default();
                    let check = checks::compare_file_list(&listed, &changed);
                    let changed_code: Vec<&String> = changed
                        .iter()
                        .filter(|p| !p.starts_with("_bmad-output/") && !p.starts_with(".baton/"))
                        .collect();
                    let task = format!(
                        "{} story `{key}`, review round {} (mode: {}). The story file is `{story_rel}`.\nFiles changed according to git since the story started{}: {}\nIn git but missing from the File List: {}\nIn the File List but unchanged in git: {}\nVerify every claim against the diff (`run_git_diff`). End with the baton-review block.",
                        if verify { "Verify" } else { "Review" },
                        used + 1,
                        route.mode,
                        base.as_deref()
                            .map(|b| format!(" (base {})", &b[..b.len().min(12)]))
                            .unwrap_or_default(),
                        list(&changed_code),
                        list(&check.unlisted.iter().collect::<Vec<_>>()),
                        list(&check.unchanged.iter().collect::<Vec<_>>()),
                    );
                    let o = self
                        .agent(run, key, route.agent, route.stage, used + 1, &task)
                        .await;
                    if o.status != AgentStatus::Completed {
                        match self.unfinished(key, &o)? {
                            StoryEnd::Retry => continue,
                            end => return Ok(end),
                        }
                    }
                    let review = match parse_review(&o.summary) {
                        Verdict::Inconclusive { reason } => {
                            run.inconclusive += 1;
                            self.relabel_last_step(key, "inconclusive");
                            if run.inconclusive >= 2 {
                                let esc = self.escalate(
                                    key,
                                    kind::INCONCLUSIVE,
                                    &format!("review of `{key}` is inconclusive"),
                                    &format!(
                                        "Two reviews in a row gave no usable verdict: {reason}"
                                    ),
                                    &[RERUN_REVIEW, ACCEPT, STOP],
                                )?;
                                if esc.answer.is_none() {
                                    return Ok(StoryEnd::Paused(Box::new(esc)));
                                }
                            } else {
                                run.note = Some(format!(
                                    "Your previous review gave no usable verdict ({reason}). End your answer with the ```baton-review block exactly as specified."
                                ));
                            }
                            continue;
                        }
                        Verdict::Pass(r) => (true, r),
                        Verdict::Fail(r) => (false, r),
                    };
                    let (passed, review) = review;
                    if !verify && review.findings.len() < self.settings.min_findings {
                        self.relabel_last_step(key, "too-few-findings");
                        if run.few_findings_retried {
                            let esc = self.escalate(
                                key,
                                kind::FEW_FINDINGS,
                                &format!("review of `{key}` reports too few findings"),
                                &format!(
                                    "The reviewer reported {} findings twice; at least {} are required.",
                                    review.findings.len(),
                                    self.settings.min_findings
                                ),
                                &[RERUN_REVIEW, ACCEPT, STOP],
                            )?;
                            if esc.answer.is_none() {
                                return Ok(StoryEnd::Paused(Box::new(esc)));
                            }
                        } else {
                            run.few_findings_retried = true;
                            run.note = Some(format!(
                                "Your review reported {} findings; at least {} are required. Re-examine the diff and the story's claims.",
                                review.findings.len(),
                                self.settings.min_findings
                            ));
                        }
                        continue;
                    }
                    let _ = story::add_review_findings(&story_path, &review.to_markdown(used + 1));
                    if passed {
                        self.relabel_last_step(key, "passed");
                        let to = route.on_success;
                        if to == Status::Done && !self.confirm_done(key)? {
                            let open = self
                                .escalations(key)
                                .into_iter()
                                .find(|e| e.answer.is_none());
                            return Ok(open
                                .map_or(StoryEnd::Skipped("not confirmed".into()), |e| {
                                    StoryEnd::Paused(Box::new(e))
                                }));
                        }
                        let actor = if verify { Actor::Qa } else { Actor::Reviewer };
                        self.transition(
                            key,
                            to,
                            actor,
                            &format!("review passed: {}", review.summary),
                            false,
                        )?;
                        self.commit(key, if verify { "verified" } else { "review passed" })
                            .await;
                    } else {
                        self.relabel_last_step(
                            key,
                            if verify {
                                "verification-failed"
                            } else {
                                "changes-requested"
                            },
                        );
                        let actor = if verify { Actor::Qa } else { Actor::Reviewer };
                        self.transition(
                            key,
                            Status::InProgress,
                            actor,
                            &format!("changes requested: {} blocking findings", review.blocking()),
                            false,
                        )?;
                        self.commit(key, &format!("review round {}", used + 1))
                            .await;
                        if run.stall.observe(&findings_fingerprint(&review.findings)) {
                            let esc = self.escalate(
                                key,
                                kind::STALL,
                                &format!("`{key}` is stalled"),
                                "Two reviews in a row reported the same findings: the fixes are not landing.",
                                &[ANOTHER_ROUND, ACCEPT, STOP],
                            )?;
                            if esc.answer.is_none() {
                                return Ok(StoryEnd::Paused(Box::new(esc)));
                            }
                        }
                    }
                }
                Stage::Retro => {
                    return Ok(StoryEnd::Skipped(
                        "retrospectives are not run by the sprint loop".into(),
                    ));
                }
            }
        }
    }

    /// Holds the retrospective of `key`'s epic if every story of it is done and the
    /// retrospective is still optional. A failure is reported, never fatal to the run.
    async fn retrospective(&self, key: &str, run: &mut StoryRun) {
        let Some(epic) = baton_core::key::classify(key).epic() else {
            return;
        };
        let retro = format!("epic-{epic}-retrospective");
        let ready = self
            .with_ledger(|l| {
                let sprint = l.doc().sprint();
                let all_done = sprint.stories_of(epic).all(|s| s.effective().is_done());
                let optional = sprint.get(&retro).map(|e| e.effective())
                    == Some(StatusValue::Known(Status::Optional));
                Ok(all_done && optional)
            })
            .unwrap_or(false);
        if !ready {
            return;
        }
        let dir = self.rel(&self.settings.stories_dir);
        let task = format!(
            "Hold the retrospective of epic {epic} (mode: retro). Read every story file of the epic in `{dir}`, then write `{dir}/epic-{epic}-retro.md` with what went well, what did not, and action items with owners. No time estimates."
        );
        let o = self
            .agent(
                run,
                key,
                dispatch::agent_for(Stage::Retro),
                Stage::Retro,
                1,
                &task,
            )
            .await;
        let written = std::fs::read_dir(&self.settings.stories_dir)
            .map(|r| {
                r.flatten().any(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(&format!("epic-{epic}-retro")) && n.ends_with(".md")
                })
            })
            .unwrap_or(false);
        let held = o.status == AgentStatus::Completed
            && written
            && self
                .transition(
                    &retro,
                    Status::Done,
                    Actor::ScrumMaster,
                    "retrospective held",
                    false,
                )
                .is_ok();
        if held {
            self.commit_message(&retro, format!("epic({epic}): retrospective"))
                .await;
        }
    }

    /// Whether the newest settled step of `key` is a dev or fix step whose tests passed.
    fn last_step_settled(&self, key: &str) -> bool {
        self.steps(key)
            .iter()
            .rev()
            .find(|s| s.outcome.is_some())
            .is_some_and(|s| {
                (s.stage == "dev" || s.stage == "fix") && s.outcome.as_deref() == Some("completed")
            })
    }

    fn last_outcome_is(&self, key: &str, outcome: &str) -> bool {
        self.steps(key)
            .iter()
            .rev()
            .find(|s| s.outcome.is_some())
            .is_some_and(|s| s.outcome.as_deref() == Some(outcome))
    }

    /// In standard mode, a story enters `done` only after a human confirms.
    fn confirm_done(&self, key: &str) -> Result<bool, String> {
        if self.setup.mode == Mode::Yolo || !self.settings.checkpoints.contains(&Status::Done) {
            return Ok(true);
        }
        let esc = self.escalate(
            key,
            kind::CHECKPOINT,
            &format!("confirm `{key}` is done"),
            "The review passed. Standard mode asks a human before a story moves to done.",
            &[CONFIRM, SEND_BACK],
        )?;
        match esc.answer.as_deref() {
            Some(CONFIRM) => {
                let at = Now::system().rfc3339;
                self.with_ledger(|l| {
                    l.journal_mut()
                        .resolve_escalation(esc.id, &at)
                        .map_err(|e| e.to_string())
                })?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The stories this run takes: explicit ones, else the first `batch` unfinished stories in
    /// sprint order.
    fn select(&self) -> Result<Vec<String>, String> {
        self.with_ledger(|l| {
            l.refresh().map_err(|e| e.to_string())?;
            let sprint = l.doc().sprint();
            if let Some(keys) = &self.settings.stories {
                for k in keys {
                    match sprint.get(k) {
                        Some(e) if matches!(e.key.kind(), KeyKind::Story { .. }) => {}
                        Some(_) => return Err(format!("`{k}` is not a story")),
                        None => return Err(format!("`{k}` is not in the sprint file")),
                    }
                }
                return Ok(keys.clone());
            }
            Ok(sprint
                .unique()
                .filter(|e| matches!(e.key.kind(), KeyKind::Story { .. }))
                .filter(|e| match e.effective() {
                    StatusValue::Known(s) => s != Status::Done && s != Status::NeedsIntervention,
                    _ => false,
                })
                .take(self.settings.batch.max(1))
                .map(|e| e.key.as_str().to_owned())
                .collect())
        })
    }

    /// Before a run: removes temp files killed writers left among the stories, and commits the
    /// uncommitted work of a previous run that was killed, so its stages are kept, not lost.
    async fn tidy_before(&self) {
        for dir in [&self.settings.stories_dir] {
            if let Ok(entries) = std::fs::read_dir(dir) {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with('.') && name.contains(".baton-tmp-") {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
        }
        let previous = self
            .with_ledger(|l| l.journal().last_run("sprint").map_err(|e| e.to_string()))
            .ok()
            .flatten();
        if let Some(prev) = previous.filter(|r| r.ended_at.is_none() && r.id != self.run_id) {
            let message = self
                .recovered_stage(&prev.id)
                .await
                .unwrap_or_else(|| format!("sprint: work of interrupted run {}", prev.id));
            self.commit_message("-", message).await;
            let _ = self.with_ledger(|l| {
                l.journal_mut()
                    .end_run(
                        &prev.id,
                        &Now::system().rfc3339,
                        "cancelled",
                        "interrupted; resumed by a later run",
                    )
                    .map_err(|e| e.to_string())
            });
        }
    }

    /// The stage commit a killed run owed: named after its last transition, unless HEAD already
    /// is that commit (then the leftovers are a step's unfinished work).
    async fn recovered_stage(&self, run_id: &str) -> Option<String> {
        let events = self
            .with_ledger(|l| {
                l.journal()
                    .events(&EventFilter::default())
                    .map_err(|e| e.to_string())
            })
            .ok()?;
        let last = events.iter().rev().find(|e| {
            e.run_id.as_deref() == Some(run_id)
                && matches!(baton_core::key::classify(&e.key), KeyKind::Story { .. })
        })?;
        let (used, _) = self.rounds(&last.key);
        let what = match (last.from.as_deref().unwrap_or_default(), last.to.as_str()) {
            ("backlog", _) => "create".to_owned(),
            ("in-progress", "review") if used > 0 => format!("fix round {used}"),
            ("in-progress", "review") => "dev".to_owned(),
            ("review", "done") => "review passed".to_owned(),
            ("e2e-verify", "done") => "verified".to_owned(),
            ("review" | "e2e-verify", "in-progress") => {
                let steps = self.steps(&last.key);
                // If a fix step settled after the review, the tree holds its work, not the
                // review's: that is the next stage's to commit.
                if steps
                    .iter()
                    .rev()
                    .find(|s| s.outcome.is_some())
                    .is_some_and(|s| s.stage == "fix" || s.stage == "dev")
                {
                    return None;
                }
                let n = steps
                    .iter()
                    .filter(|s| {
                        matches!(
                            s.outcome.as_deref(),
                            Some("changes-requested" | "verification-failed")
                        )
                    })
                    .count();
                format!("review round {n}")
            }
            _ => return None,
        };
        let short = last.key.split('-').take(2).collect::<Vec<_>>().join("-");
        let message = format!("story({short}): {what}");
        let head = git::head_subject(&self.settings.root).await;
        (head.as_deref() != Some(message.as_str())).then_some(message)
    }

    /// Runs the batch to its end.
    pub async fn run(&self) -> SprintReport {
        self.tidy_before().await;
        let started = Now::system().rfc3339;
        let _ = self.with_ledger(|l| {
            l.journal_mut()
                .begin_run(&RunRecord {
                    id: self.run_id.clone(),
                    kind: "sprint".into(),
                    started_at: started,
                    ended_at: None,
                    status: "running".into(),
                    reason: None,
                })
                .map_err(|e| e.to_string())
        });
        let report = self.run_batch().await;
        // Whatever the end, leave nothing of baton's uncommitted (escalation log, review
        // findings, a needs-intervention status), so the next `baton sprint` starts clean.
        let short = report.reason.lines().next().unwrap_or_default();
        self.commit_message(
            "-",
            format!(
                "sprint: run {} {}{}",
                self.run_id,
                report.end.as_str(),
                if short.is_empty() {
                    String::new()
                } else {
                    format!(": {short}")
                }
            ),
        )
        .await;
        let _ = self.with_ledger(|l| {
            l.journal_mut()
                .end_run(
                    &self.run_id,
                    &Now::system().rfc3339,
                    report.end.as_str(),
                    &report.reason,
                )
                .map_err(|e| e.to_string())
        });
        report
    }

    async fn run_batch(&self) -> SprintReport {
        let mut report = SprintReport {
            run_id: self.run_id.clone(),
            end: RunEnd::Completed,
            reason: String::new(),
            total: 0,
            completed: 0,
            failed: 0,
            skipped: 0,
            stories: Vec::new(),
            escalation: None,
        };
        let keys = match self.select() {
            Ok(k) => k,
            Err(e) => {
                report.end = RunEnd::Failed;
                report.reason = e;
                return report;
            }
        };
        report.total = keys.len();
        self.emit(SprintEvent::RunStarted {
            run_id: self.run_id.clone(),
            stories: keys.clone(),
            mode: self.setup.mode,
        });
        // An open escalation of another story blocks new stories (its own story may resume).
        let open: Vec<EscalationRecord> = self
            .with_ledger(|l| l.journal().escalations(true).map_err(|e| e.to_string()))
            .unwrap_or_default();
        let deadline = tokio::time::Instant::now() + self.settings.run_timeout;
        for (i, key) in keys.iter().enumerate() {
            if let Some(e) = open.iter().find(|e| e.key.as_deref() != Some(key.as_str())) {
                report.end = RunEnd::Paused;
                report.reason = format!("escalation #{} is open: {}", e.id, e.title);
                report.escalation = Some(e.clone());
                report.skipped += keys.len() - i;
                break;
            }
            let mut run = StoryRun {
                report: StoryReport {
                    key: key.clone(),
                    ..StoryReport::default()
                },
                note: None,
                inconclusive: 0,
                few_findings_retried: false,
                stall: StallDetector::new(),
            };
            let budget = self
                .settings
                .story_timeout
                .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            let end = match tokio::time::timeout(budget, self.drive(key, &mut run)).await {
                Ok(Ok(end)) => end,
                Ok(Err(e)) => StoryEnd::NeedsIntervention(e),
                Err(_) => {
                    let why = format!("story timed out after {} s", budget.as_secs());
                    let _ = self.transition(
                        key,
                        Status::NeedsIntervention,
                        Actor::Orchestrator,
                        &why,
                        false,
                    );
                    StoryEnd::NeedsIntervention(why)
                }
            };
            if matches!(end, StoryEnd::Done) && self.settings.retrospective {
                self.retrospective(key, &mut run).await;
            }
            run.report.final_status = self.status(key).map(|s| s.to_string()).unwrap_or_default();
            let (stop, reason) = match end {
                StoryEnd::Done => {
                    report.completed += 1;
                    (None, None)
                }
                StoryEnd::NeedsIntervention(why) => {
                    report.failed += 1;
                    (None, Some(why))
                }
                StoryEnd::Skipped(why) => {
                    report.skipped += 1;
                    (None, Some(why))
                }
                StoryEnd::Retry => {
                    report.skipped += 1;
                    (None, Some("interrupted".to_owned()))
                }
                StoryEnd::Paused(esc) => {
                    report.skipped += 1;
                    report.escalation = Some((*esc).clone());
                    (
                        Some((
                            RunEnd::Paused,
                            format!("escalation #{}: {}", esc.id, esc.title),
                        )),
                        Some("paused".to_owned()),
                    )
                }
                StoryEnd::Stopped(why) => (Some((RunEnd::Stopped, why.clone())), Some(why)),
                StoryEnd::Cancelled => (
                    Some((RunEnd::Cancelled, "cancelled".into())),
                    Some("cancelled".into()),
                ),
            };
            run.report.error = reason.clone();
            self.emit(SprintEvent::StoryFinished {
                key: key.clone(),
                status: run.report.final_status.clone(),
                reason,
            });
            report.stories.push(run.report);
            if let Some((end, why)) = stop {
                report.end = end;
                report.reason = why;
                report.skipped += keys.len() - i - 1;
                return report;
            }
            // The budget is checked after each story too.
            if let BudgetState::Exhausted(why) = self.setup.budget.check(Default::default()) {
                report.end = RunEnd::Stopped;
                report.reason = format!("budget: {why}");
                report.skipped += keys.len() - i - 1;
                return report;
            }
            if tokio::time::Instant::now() >= deadline {
                report.end = RunEnd::Failed;
                report.reason = "run timed out".into();
                report.skipped += keys.len() - i - 1;
                return report;
            }
        }
        if report.end == RunEnd::Completed {
            if report.failed > 0 {
                report.end = RunEnd::Failed;
                report.reason = format!("{} stories need intervention", report.failed);
            } else if report.completed < report.total {
                report.end = RunEnd::Failed;
                report.reason = format!(
                    "{} stories could not be worked",
                    report.total - report.completed
                );
            } else {
                report.reason = format!("{} stories done", report.completed);
            }
        }
        report
    }
}

fn list<T: AsRef<str>>(items: &[T]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        items
            .iter()
            .map(|s| format!("`{}`", s.as_ref()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
