//! The sprint workflow: stories from backlog to done, enforced by code, resumable at any instant.
//!
//! This module is the scheduler: it selects the batch, drives each story (see [`crate::story`])
//! under the story and run timeouts, holds owed retrospectives, stops at the budget, an open
//! escalation or cancellation, and writes the report. Every decision about a story is
//! [`baton_core::story::decide`]'s; state lives in the sprint file, the story files and the
//! journal only, so a run killed anywhere resumes from them.

pub mod carry;
pub mod lane;
mod parallel;
pub mod recovery;
pub mod report;
mod user_changes;

use crate::ctx::{RunCtx, StoryCtx};
use crate::error::EngineError;
use crate::protocol::EventBody;
use crate::run::{Run, RunKind};
use crate::settings::SprintSettings;
use crate::sprint_tools::SharedLedger;
use crate::stages::retro;
use crate::story::{Ended, drive};
use crate::workflow::{Ending, Workflow};
use baton_agent::runner::Mode;
use baton_core::actor::Actor;
use baton_core::key::KeyKind;
use baton_core::status::{Status, StatusValue};
use baton_core::story::{Move, StoryEnd};
use baton_store::journal::Journal;
use report::{RunEnd, SprintReport};
use std::sync::Arc;

/// How long a story's move waits for others' to share its commit, with stories in parallel.
const GROUP_WINDOW_MS: u64 = 5;

/// The sprint workflow: the ledger and the settings; the run supplies everything else.
pub struct SprintEngine {
    /// The sprint ledger (sprint file + journal).
    pub ledger: SharedLedger,
    /// Settings.
    pub settings: SprintSettings,
}

impl SprintEngine {
    /// A sprint over `ledger` with `settings`.
    pub fn new(ledger: SharedLedger, settings: SprintSettings) -> SprintEngine {
        SprintEngine { ledger, settings }
    }

    /// The sprint's view of `run`.
    pub fn context(&self, run: Arc<Run>) -> Arc<RunCtx> {
        Arc::new(RunCtx {
            run,
            ledger: self.ledger.clone(),
            settings: self.settings.clone(),
            // With stories in parallel, moves a few milliseconds apart share a commit.
            grouper: crate::group_commit::Grouper::with_window(if self.settings.parallel > 1 {
                std::time::Duration::from_millis(GROUP_WINDOW_MS)
            } else {
                std::time::Duration::ZERO
            }),
            story_files_ignored: tokio::sync::OnceCell::new(),
        })
    }

    /// Runs the batch to its end (preflight is the session's: see [`recovery::preflight`]).
    async fn work(&self, run: Arc<RunCtx>) -> SprintReport {
        let mut report = match self.start(&run).await {
            Ok(()) => run_batch(&run).await,
            Err(e) => {
                let mut r = SprintReport::new(&run.id);
                r.end = RunEnd::Failed;
                r.reason = e.to_string();
                r
            }
        };
        // A story's status move and its stage commit are one effect: a run interrupted between
        // the two makes the stage's commit, under the stage's own message, before its own.
        if report.end == RunEnd::Cancelled
            && let Err(e) = recovery::commit_owed_stage(&run, &run.id).await
        {
            run.emit(EventBody::Notice {
                message: format!("the interrupted stage's commit was not made: {e}"),
            });
        }
        // Whatever the end, leave nothing of baton's uncommitted (escalation log, review
        // findings, a needs-intervention status), so the next `baton sprint` starts clean.
        let short = report.reason.lines().next().unwrap_or_default().to_owned();
        // A failure is remembered: the run then does not end `completed`.
        let _ = run
            .commit(
                "-",
                format!(
                    "sprint: run {} {}{}",
                    run.id,
                    report.end.as_str(),
                    if short.is_empty() {
                        String::new()
                    } else {
                        format!(": {short}")
                    }
                ),
            )
            .await;
        let failures = run.commit_failures();
        if let Some(first) = failures.first() {
            let failed = format!(
                "{} stage commit(s) failed; the work is in the tree, uncommitted (first: {first})",
                failures.len()
            );
            if report.end == RunEnd::Completed {
                // Work that is not committed is not done: the run did not succeed.
                report.end = RunEnd::Failed;
                report.reason = failed;
            } else {
                // The story a failed commit stopped says why too; the run's end names it.
                report.reason = format!("{}; {failed}", report.reason);
            }
        }
        report.usage = run.run.usage();
        report
    }

    async fn start(&self, run: &RunCtx) -> Result<(), EngineError> {
        recovery::tidy(run).await
    }
}

impl Workflow for SprintEngine {
    type Report = SprintReport;

    async fn preflight(&self, run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
        recovery::preflight(&self.context(run.clone())).await
    }

    async fn run(self, run: Arc<Run>) -> SprintReport {
        let ctx = self.context(run);
        self.work(ctx).await
    }

    fn ending(report: &SprintReport, _run: &Run) -> Ending {
        Ending::new(report.end.as_str(), report.reason.clone())
    }
}

/// The stories this run takes: explicit ones, else the first `batch` unfinished stories in
/// sprint order.
fn select(run: &RunCtx) -> Result<Vec<String>, EngineError> {
    run.with_ledger(|l| {
        l.refresh()?;
        let sprint = l.doc().sprint();
        if let Some(keys) = &run.settings.stories {
            for k in keys {
                match sprint.get(k) {
                    Some(e) if matches!(e.key.kind(), KeyKind::Story { .. }) => {}
                    Some(_) => return Err(EngineError::NotAStory(k.clone())),
                    None => return Err(EngineError::UnknownKey(k.clone())),
                }
            }
            return Ok(keys.clone());
        }
        // A story baton parked whose `# baton:` marker a rewrite dropped (BMad's own sprint
        // planning regenerates the file) is still parked: the journal knows.
        let parked: std::collections::BTreeSet<String> = l
            .audit()?
            .into_iter()
            .filter(|d| d.journal == Status::NeedsIntervention.as_str())
            .map(|d| d.key)
            .collect();
        let sprint = l.doc().sprint();
        Ok(sprint
            .unique()
            .filter(|e| matches!(e.key.kind(), KeyKind::Story { .. }))
            .filter(|e| !parked.contains(e.key.as_str()))
            .filter(|e| match e.effective() {
                StatusValue::Known(s) => s != Status::Done && s != Status::NeedsIntervention,
                _ => false,
            })
            .take(run.settings.batch.max(1))
            .map(|e| e.key.as_str().to_owned())
            .collect())
    })
}

/// Holds every owed retrospective (if the project holds them); a failure is reported, never
/// fatal to the run.
async fn hold_retrospectives(run: &Arc<RunCtx>) {
    if !run.settings.retrospective {
        return;
    }
    let Ok(epics) = retro::owed(run) else {
        return;
    };
    for epic in epics {
        if run.setup.cancel.is_cancelled() {
            return;
        }
        if let Err(e) = retro::hold(run, epic).await {
            run.emit(EventBody::Notice {
                message: format!("the retrospective of epic {epic} was not held: {e}"),
            });
        }
    }
}

fn budget_exhausted(run: &RunCtx) -> Option<String> {
    run.run
        .budget_exhausted()
        .map(|why| format!("budget: {why}"))
}

async fn run_batch(run: &Arc<RunCtx>) -> SprintReport {
    let mut report = SprintReport::new(&run.id);
    // Stories a killed parallel run left in their worktrees resume there, even one at a time.
    let in_flight = parallel::sweep(run).await;
    let keys = match select(run) {
        Ok(k) => k,
        Err(e) => {
            report.end = RunEnd::Failed;
            report.reason = e.to_string();
            return report;
        }
    };
    if keys.is_empty()
        && let Some((end, why)) = nothing_to_do(run)
    {
        report.end = end;
        report.reason = why;
        if end == RunEnd::Completed {
            hold_retrospectives(run).await;
        }
        return report;
    }
    report.total = keys.len();
    run.emit(EventBody::RunStarted {
        run_id: run.id.clone(),
        stories: keys.clone(),
        yolo: run.setup.mode == Mode::Yolo,
    });
    // Retrospectives an earlier (killed) run owed come first.
    hold_retrospectives(run).await;
    let deadline = tokio::time::Instant::now()
        .checked_add(run.settings.run_timeout)
        .unwrap_or_else(far_future);
    if run.settings.parallel > 1 || keys.iter().any(|k| in_flight.contains(k)) {
        // Each story in its own worktree: one story's escalation does not hold the others.
        if let Some((end, why)) = parallel::run(run, &keys, deadline, &mut report).await {
            report.end = end;
            report.reason = why;
            return report;
        }
        return summarize(report);
    }
    // An open escalation of another story blocks new stories (its own story may resume); one of
    // another workflow's units (a plan task, a planning step, a BMad session, an issue, a team
    // task) waits for that workflow, not for the sprint.
    let open: Vec<_> = run
        .with_ledger(|l| Ok(l.journal().escalations(true)?))
        .unwrap_or_default()
        .into_iter()
        .filter(|e| crate::protocol::belongs_to(e.key.as_deref(), RunKind::Sprint))
        .collect();
    for (i, key) in keys.iter().enumerate() {
        let left = keys.len() - i;
        if let Some(e) = open.iter().find(|e| e.key.as_deref() != Some(key.as_str())) {
            report.end = RunEnd::Paused;
            report.reason = format!("escalation #{} is open: {}", e.id, e.title);
            report.escalation = Some(crate::protocol::escalation_view(e, false));
            report.skipped += left;
            break;
        }
        let ctx = StoryCtx::new(run.clone(), key);
        let budget = run
            .settings
            .story_timeout
            .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
        let ended = drive_in_time(&ctx, budget).await;
        if ended == Ended::Story(StoryEnd::Done) {
            hold_retrospectives(run).await;
        }
        if let Some((end, why)) = record(run, &ctx, ended, &mut report) {
            report.end = end;
            report.reason = why;
            report.skipped += left - 1;
            return report;
        }
        // The budget is checked after each story too.
        if let Some(why) = budget_exhausted(run) {
            report.end = RunEnd::Stopped;
            report.reason = why;
            report.skipped += left - 1;
            return report;
        }
        if tokio::time::Instant::now() >= deadline {
            report.end = RunEnd::Failed;
            report.reason = "run timed out".into();
            report.skipped += left - 1;
            return report;
        }
    }
    summarize(report)
}

/// The end of a run whose stories all had their turn: completed only when every one is done.
fn summarize(mut report: SprintReport) -> SprintReport {
    if report.end == RunEnd::Completed {
        if report.failed > 0 {
            report.end = RunEnd::Failed;
            report.reason = format!(
                "{} intervention",
                count(report.failed, "story needs", "stories need")
            );
        } else if report.completed < report.total {
            report.end = RunEnd::Failed;
            report.reason = format!(
                "{} not be worked",
                count(
                    report.total - report.completed,
                    "story could",
                    "stories could"
                )
            );
        } else {
            report.reason = format!("{} done", count(report.completed, "story", "stories"));
        }
    }
    report
}

/// Drives one story under `budget` (the story timeout, or what is left of the run's); a story
/// the engine could not drive, or that ran out of time, is moved to `needs-intervention`.
async fn drive_in_time(ctx: &StoryCtx, budget: std::time::Duration) -> Ended {
    match tokio::time::timeout(budget, drive(ctx)).await {
        Ok(Ok(end)) => end,
        Ok(Err(e)) => Ended::Story(intervene(ctx, e.to_string()).await),
        Err(_) => {
            let why = format!("story timed out after {} s", budget.as_secs());
            Ended::Story(intervene(ctx, why).await)
        }
    }
}

/// Adds how a story ended to the report and says so; returns how the run must end because of
/// it (paused, stopped, cancelled), if it must.
fn record(
    run: &RunCtx,
    ctx: &StoryCtx,
    ended: Ended,
    report: &mut SprintReport,
) -> Option<(RunEnd, String)> {
    let key = &ctx.key;
    let mut story = ctx.report.lock().map(|r| r.clone()).unwrap_or_default();
    story.final_status = run.status(key).map(|s| s.to_string()).unwrap_or_default();
    let (stop, reason) = match ended {
        Ended::Story(StoryEnd::Done) => {
            report.completed += 1;
            (None, None)
        }
        Ended::Story(StoryEnd::NeedsIntervention(why)) => {
            report.failed += 1;
            (None, Some(why))
        }
        Ended::Story(StoryEnd::Skipped(why)) => {
            report.skipped += 1;
            (None, Some(why))
        }
        Ended::Paused(id) => {
            report.skipped += 1;
            let esc = run.escalation_view(id).ok().flatten();
            let title = esc.as_ref().map(|e| e.title.clone()).unwrap_or_default();
            report.escalation = esc;
            (
                Some((RunEnd::Paused, format!("escalation #{id}: {title}"))),
                Some("paused".to_owned()),
            )
        }
        Ended::Story(StoryEnd::Stopped(why)) => (Some((RunEnd::Stopped, why.clone())), Some(why)),
        Ended::Story(StoryEnd::Cancelled) => (
            Some((RunEnd::Cancelled, "cancelled".into())),
            Some("cancelled".into()),
        ),
    };
    if let Some(tree) = &ctx.tree
        && story.final_status != Status::Done.as_str()
    {
        story.branch = Some(tree.branch.clone());
        story.worktree = Some(ctx.rel_to_project(ctx.workspace().tree_dir()));
    }
    story.error = reason.clone();
    ctx.emit(EventBody::StoryFinished {
        key: key.clone(),
        status: run
            .status(key)
            .unwrap_or(StatusValue::Unknown(String::new())),
        reason,
    });
    report.stories.push(story);
    stop
}

/// `1 story`, `2 stories`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Why a run that selected no story has nothing to do, and how it ends: `failed` when stories
/// wait for a human (naming them and the command that puts each back) or none are planned,
/// `completed` when every story is done. `None` when there is another reason (left to the run).
fn nothing_to_do(run: &RunCtx) -> Option<(RunEnd, String)> {
    let (next, blocked) = run
        .with_ledger(|l| {
            let sprint = l.doc().sprint();
            Ok((
                baton_core::next::next_action(sprint),
                baton_core::next::blocked_stories(sprint),
            ))
        })
        .ok()?;
    if !blocked.is_empty() {
        let list: Vec<String> = blocked
            .iter()
            .map(|b| format!("{} ({}): `{}`", b.key, b.status, b.command()))
            .collect();
        return Some((
            RunEnd::Failed,
            format!(
                "nothing can be worked: {} a human; look at its transcripts and `baton \
                 escalations --all`, then put it back: {}",
                count(blocked.len(), "story needs", "stories need"),
                list.join(", ")
            ),
        ));
    }
    match next {
        baton_core::next::NextAction::NothingPlanned => Some((
            RunEnd::Failed,
            "nothing to work: the sprint file has no stories yet; add epics and stories \
             (BMad's sprint-planning workflow writes them), then run `baton sprint` again"
                .to_owned(),
        )),
        baton_core::next::NextAction::AllDone => Some((
            RunEnd::Completed,
            "every story is done; nothing to run".to_owned(),
        )),
        _ => None,
    }
}

/// Moves a story the engine could not drive on to `needs-intervention` with `why`.
async fn intervene(ctx: &StoryCtx, why: String) -> StoryEnd {
    let m = Move {
        to: Status::NeedsIntervention,
        actor: Actor::Orchestrator,
        reason: why.clone(),
        force: false,
        commit: None,
        baseline: false,
    };
    if let Err(e) = ctx.transition(&m).await {
        return StoryEnd::NeedsIntervention(format!("{why} (and it could not be marked: {e})"));
    }
    StoryEnd::NeedsIntervention(why)
}

/// An instant far enough away to never arrive.
fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + std::time::Duration::from_secs(100 * 365 * 24 * 3600)
}
