//! The story machine: given what is known about a story, what happens next.
//!
//! [`decide`] is the whole of the sprint loop's policy, as a pure function of [`StoryFacts`]:
//! it reads the dispatch table (every column: the stage, the status to set while an agent works,
//! where success and failure lead), settles the newest step's result, acts on a human's answer,
//! and rebuilds every bound from the history — fix rounds, stalls (the same findings twice),
//! loops (the same status too often), retries of inconclusive or thin reviews. The engine only
//! carries the [`Decision`] out and records what happened as a new fact, so a run resumed after
//! a kill decides exactly as one that never stopped.

mod facts;
#[cfg(test)]
mod tests;

pub use facts::{
    AgentEscalation, EscalationFact, Rules, StepDetail, StepFact, StepOutcome, StoryFacts,
};

use crate::actor::Actor;
use crate::dispatch::{self, Route, Stage};
use crate::escalation::{Choice, EscalationKind};
use crate::status::{Status, StatusValue};
use serde::Serialize;

/// What to do next for a story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run a stage (an agent, then the orchestrator's own checks).
    Run(StagePlan),
    /// Move the story to another status.
    Move(Move),
    /// Ask a human.
    Escalate(Escalate),
    /// Act on an answered escalation: make the move the answer asks for (if any), then mark
    /// the escalation resolved.
    Resolve {
        /// The escalation.
        id: i64,
        /// The move the answer asks for.
        then: Option<Move>,
    },
    /// An escalation waits for its answer.
    Wait(i64),
    /// The story ends here for this run.
    End(StoryEnd),
}

/// A stage to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePlan {
    /// The stage.
    pub stage: Stage,
    /// The bundled agent that does it.
    pub agent: &'static str,
    /// The mode the agent is told to work in.
    pub mode: &'static str,
    /// The round (fix and review rounds count from 1).
    pub round: u32,
    /// Something the agent must be told this time.
    pub note: Option<Note>,
    /// Output of the failing test run that sent the story back, for a fix round.
    pub failing_tests: Option<String>,
}

/// A one-time addition to an agent's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The previous review gave no usable verdict.
    Inconclusive {
        /// Why.
        reason: String,
    },
    /// The previous review reported too few findings.
    TooFewFindings {
        /// Findings reported.
        found: usize,
        /// Findings required.
        min: usize,
    },
    /// A human sent the story back at the done checkpoint.
    SentBack,
    /// A human answered the agent's escalation.
    Answered {
        /// The escalation.
        id: i64,
        /// Its title.
        title: String,
        /// The answer.
        answer: String,
    },
}

impl Note {
    /// The text appended to the agent's task.
    pub fn text(&self) -> String {
        match self {
            Note::Inconclusive { reason } => format!(
                "Your previous review gave no usable verdict ({reason}). End your answer with the ```baton-review block exactly as specified."
            ),
            Note::TooFewFindings { found, min } => format!(
                "Your review reported {found} findings; at least {min} are required. Re-examine the diff and the story's claims."
            ),
            Note::SentBack => {
                "A human sent this story back for another round before marking it done.".into()
            }
            Note::Answered { id, title, answer } => {
                format!("A human answered your escalation #{id} (\"{title}\"): {answer}")
            }
        }
    }
}

/// A status change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The new status.
    pub to: Status,
    /// Who makes it.
    pub actor: Actor,
    /// Why (journaled).
    pub reason: String,
    /// Whether the move may break the transition table (a human accepting a story).
    pub force: bool,
    /// The stage commit that goes with it (`dev`, `review round 2`, …), if any.
    pub commit: Option<String>,
    /// Record the commit the story's work starts from before moving (development starts).
    pub baseline: bool,
}

/// An escalation to raise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalate {
    /// What raises it.
    pub kind: EscalationKind,
    /// Short title.
    pub title: String,
    /// What was found.
    pub finding: String,
    /// The choices offered.
    pub choices: Vec<Choice>,
}

/// How a story ends for this run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "end", content = "reason", rename_all = "kebab-case")]
pub enum StoryEnd {
    /// Done.
    Done,
    /// It needs a human's intervention.
    NeedsIntervention(String),
    /// The budget stopped it.
    Stopped(String),
    /// The run was cancelled.
    Cancelled,
    /// Nothing baton can do with it.
    Skipped(String),
}

/// Decides what happens next for a story.
pub fn decide(f: &StoryFacts) -> Decision {
    if f.cancelled {
        return Decision::End(StoryEnd::Cancelled);
    }
    if let Some(why) = &f.budget_exhausted {
        return Decision::End(StoryEnd::Stopped(format!("budget: {why}")));
    }
    if let Some(e) = f
        .escalations
        .iter()
        .find(|e| e.answer.is_some() && !e.resolved)
    {
        return resolve(f, e);
    }
    if let Some(e) = f.escalations.iter().find(|e| e.answer.is_none()) {
        return Decision::Wait(e.id);
    }
    let status = match &f.status {
        StatusValue::Known(s) => *s,
        other => {
            return Decision::End(StoryEnd::Skipped(format!(
                "status `{other}` belongs to another tool"
            )));
        }
    };
    match status {
        Status::Done => return Decision::End(StoryEnd::Done),
        Status::NeedsIntervention => {
            let why = f
                .status_reason
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "needs intervention".into());
            return Decision::End(StoryEnd::NeedsIntervention(why));
        }
        _ => {}
    }
    let fixing = status == Status::InProgress && f.fixing();
    let Some(route) = dispatch::route(status, fixing, f.rules.dispatch) else {
        return Decision::End(StoryEnd::Skipped(format!("nothing to do for `{status}`")));
    };
    if let Some(working) = route.working.filter(|w| *w != status) {
        let mut m = mv(
            f,
            working,
            route.stage.actor(),
            "development started".into(),
        );
        m.baseline = m.to == working;
        return Decision::Move(m);
    }
    if let Some(last) = f
        .last_step()
        .filter(|s| !f.moved_by_human_since_last_step && applies(s, status, &route))
        && let Some(d) = settle(f, last, status, &route)
    {
        return d;
    }
    plan(f, &route)
}

/// Whether the newest step's result is still to be acted on: the story has not moved since it
/// started.
fn applies(step: &StepFact, status: Status, route: &Route) -> bool {
    match step.detail.started_in {
        Some(s) => s == status,
        // Steps journaled before `started_in` existed: judge by the stage.
        None => {
            step.stage == route.stage
                || (status == Status::InProgress && matches!(step.stage, Stage::Dev | Stage::Fix))
        }
    }
}

/// Acts on the newest step's outcome, if it decides anything.
fn settle(f: &StoryFacts, last: &StepFact, status: Status, route: &Route) -> Option<Decision> {
    let outcome = last.outcome?;
    let agent = last.detail.agent.as_deref().unwrap_or(route.agent);
    let reason = last.detail.reason.clone().unwrap_or_default();
    let end =
        |why: String| Decision::Move(mv(f, Status::NeedsIntervention, Actor::Orchestrator, why));
    match outcome {
        StepOutcome::Halted => return Some(end(format!("HALT: {reason}"))),
        StepOutcome::Failed | StepOutcome::TimedOut => {
            return Some(end(format!("{agent} {outcome}: {reason}")));
        }
        StepOutcome::Escalated => {
            let raised = f
                .escalated_since(last.id, &[EscalationKind::Agent])
                .next()
                .is_some();
            if raised {
                return None;
            }
            let e = last.detail.escalation.clone().unwrap_or_default();
            let options = if e.options.is_empty() {
                vec!["continue".to_owned(), "stop".to_owned()]
            } else {
                e.options
            };
            return Some(Decision::Escalate(Escalate {
                kind: EscalationKind::Agent,
                title: format!("{agent}: {}", e.title),
                finding: if e.finding.is_empty() {
                    reason
                } else {
                    e.finding
                },
                choices: options.into_iter().map(Choice::Custom).collect(),
            }));
        }
        StepOutcome::Cancelled | StepOutcome::TestsInterrupted if last.this_run => {
            return Some(Decision::End(if last.detail.budget_stop {
                StoryEnd::Stopped(reason)
            } else {
                StoryEnd::Cancelled
            }));
        }
        _ => {}
    }
    let round = last.round.max(1);
    match (route.stage, outcome) {
        (Stage::Create | Stage::Revise, StepOutcome::Completed) => Some(if f.story_file_exists {
            let mut m = mv(
                f,
                route.on_success,
                Actor::ScrumMaster,
                "story file written".into(),
            );
            m.commit = Some(route.stage.as_str().to_owned());
            Decision::Move(m)
        } else {
            end(format!(
                "{agent} finished without writing `{}`",
                f.story_file
            ))
        }),
        (Stage::StoryReview, o) if is_verdict(o) => {
            let to = if o == StepOutcome::Passed {
                route.on_success
            } else {
                route.on_failure.unwrap_or(Status::StoryDocImproved)
            };
            Some(Decision::Move(mv(
                f,
                to,
                Actor::Reviewer,
                "story document reviewed".into(),
            )))
        }
        (Stage::Dev | Stage::Fix, StepOutcome::Completed) => {
            let mut m = mv(
                f,
                route.on_success,
                Actor::Developer,
                "implementation complete, tests pass".into(),
            );
            m.commit = Some(if last.stage == Stage::Fix {
                format!("fix round {round}")
            } else {
                "dev".to_owned()
            });
            Some(Decision::Move(m))
        }
        (Stage::Review | Stage::Verify, o) => settle_review(f, last, status, route, o),
        _ => None,
    }
}

fn is_verdict(o: StepOutcome) -> bool {
    matches!(
        o,
        StepOutcome::Passed
            | StepOutcome::ChangesRequested
            | StepOutcome::VerificationFailed
            | StepOutcome::Inconclusive
            | StepOutcome::TooFewFindings
    )
}

fn settle_review(
    f: &StoryFacts,
    last: &StepFact,
    status: Status,
    route: &Route,
    outcome: StepOutcome,
) -> Option<Decision> {
    let verify = route.stage == Stage::Verify;
    let actor = if verify { Actor::Qa } else { Actor::Reviewer };
    let key = &f.key;
    match outcome {
        StepOutcome::Passed => {
            if route.on_success == Status::Done && f.rules.confirm_done {
                let asked = f
                    .escalated_since(last.id, &[EscalationKind::Checkpoint])
                    .last();
                match asked {
                    None => {
                        return Some(Decision::Escalate(Escalate {
                            kind: EscalationKind::Checkpoint,
                            title: format!("confirm `{key}` is done"),
                            finding: "The review passed. Standard mode asks a human before a story moves to done.".into(),
                            choices: EscalationKind::Checkpoint.choices().to_vec(),
                        }));
                    }
                    // Answered and resolved, yet the story is still here: the answer's move was
                    // refused; follow the answer without asking again.
                    Some(e) if e.answer != Some(Choice::Confirm) => {
                        return Some(Decision::Move(mv(
                            f,
                            Status::InProgress,
                            Actor::Human,
                            "sent back at the done checkpoint".into(),
                        )));
                    }
                    Some(_) => {}
                }
            }
            let summary = last.detail.reason.clone().unwrap_or_default();
            let mut m = mv(
                f,
                route.on_success,
                actor,
                format!("review passed: {summary}"),
            );
            m.commit = Some(if verify { "verified" } else { "review passed" }.to_owned());
            Some(Decision::Move(m))
        }
        o if o.is_rejection() => {
            let blocking = last.detail.blocking.unwrap_or_default();
            let mut m = mv(
                f,
                route.on_failure.unwrap_or(Status::InProgress),
                actor,
                format!("changes requested: {blocking} blocking findings"),
            );
            m.commit = Some(format!("review round {}", last.round.max(1)));
            Some(Decision::Move(m))
        }
        StepOutcome::Inconclusive | StepOutcome::TooFewFindings => {
            let kind = if outcome == StepOutcome::Inconclusive {
                EscalationKind::InconclusiveReview
            } else {
                EscalationKind::TooFewFindings
            };
            // Retries are counted since a human last answered one of these escalations.
            let cut = f
                .escalations
                .iter()
                .filter(|e| {
                    e.resolved
                        && matches!(
                            e.kind,
                            EscalationKind::InconclusiveReview | EscalationKind::TooFewFindings
                        )
                })
                .map(|e| e.after_step)
                .max()
                .unwrap_or(0);
            let since: Vec<&StepFact> = f
                .steps
                .iter()
                .filter(|s| s.id > cut && matches!(s.stage, Stage::Review | Stage::Verify))
                .filter(|s| s.detail.started_in.is_none_or(|st| st == status))
                .collect();
            let tripped = if outcome == StepOutcome::Inconclusive {
                // Two reviews in a row without a usable verdict.
                since
                    .iter()
                    .rev()
                    .take_while(|s| s.outcome == Some(StepOutcome::Inconclusive))
                    .count()
                    >= 2
            } else {
                since
                    .iter()
                    .filter(|s| s.outcome == Some(StepOutcome::TooFewFindings))
                    .count()
                    >= 2
            };
            if !tripped {
                return None;
            }
            let reason = last.detail.reason.clone().unwrap_or_default();
            let (title, finding) = if outcome == StepOutcome::Inconclusive {
                (
                    format!("review of `{key}` is inconclusive"),
                    format!("Two reviews in a row gave no usable verdict: {reason}"),
                )
            } else {
                (
                    format!("review of `{key}` reports too few findings"),
                    format!(
                        "The reviewer reported {} findings twice; at least {} are required.",
                        last.detail.findings.unwrap_or_default(),
                        f.rules.min_findings
                    ),
                )
            };
            Some(Decision::Escalate(Escalate {
                kind,
                title,
                finding,
                choices: kind.choices().to_vec(),
            }))
        }
        _ => None,
    }
}

/// Plans the stage the route asks for, after the bounds that come first.
fn plan(f: &StoryFacts, route: &Route) -> Decision {
    let used = f.rounds_used();
    let mut failing_tests = None;
    if route.stage == Stage::Fix {
        if let Some(e) = stall(f) {
            return Decision::Escalate(e);
        }
        let limit = f.rules.max_review_rounds.saturating_add(f.rounds_granted());
        if used >= limit {
            return Decision::Escalate(Escalate {
                kind: EscalationKind::MaxReviewRounds,
                title: format!("`{}` used all {used} fix rounds", f.key),
                finding: format!(
                    "The review still requests changes after {used} fix rounds (limit {}).",
                    f.rules.max_review_rounds
                ),
                choices: EscalationKind::MaxReviewRounds.choices().to_vec(),
            });
        }
        failing_tests = f
            .last_settled()
            .filter(|s| s.outcome == Some(StepOutcome::TestsFailed))
            .and_then(|s| s.detail.reason.clone());
    }
    let round = match route.stage {
        Stage::Dev | Stage::Fix | Stage::Review | Stage::Verify => used.saturating_add(1),
        _ => 1,
    };
    Decision::Run(StagePlan {
        stage: route.stage,
        agent: route.agent,
        mode: route.mode,
        round,
        note: note(f),
        failing_tests,
    })
}

/// Two rejections in a row with the same findings, not yet put to a human.
fn stall(f: &StoryFacts) -> Option<Escalate> {
    let mut rejections = f.steps.iter().rev().filter(|s| {
        matches!(s.stage, Stage::Review | Stage::Verify)
            && matches!(
                s.outcome,
                Some(StepOutcome::ChangesRequested | StepOutcome::VerificationFailed)
            )
    });
    let latest = rejections.next()?;
    let previous = rejections.next()?;
    let same = latest.detail.fingerprint.is_some()
        && latest.detail.fingerprint == previous.detail.fingerprint;
    let asked = f
        .escalated_since(latest.id, &[EscalationKind::Stall])
        .next()
        .is_some();
    (same && !asked).then(|| Escalate {
        kind: EscalationKind::Stall,
        title: format!("`{}` is stalled", f.key),
        finding: "Two reviews in a row reported the same findings: the fixes are not landing."
            .into(),
        choices: EscalationKind::Stall.choices().to_vec(),
    })
}

/// What the next agent must be told: a human's answer given since the last step, or why the
/// last review is being run again.
fn note(f: &StoryFacts) -> Option<Note> {
    let newest = f.newest_step_id();
    let answered = f
        .escalations
        .iter()
        .rev()
        .find(|e| e.resolved && e.after_step >= newest);
    if let Some(e) = answered {
        match (e.kind, &e.answer) {
            (EscalationKind::Checkpoint, Some(c)) if *c != Choice::Confirm => {
                return Some(Note::SentBack);
            }
            (EscalationKind::Agent, Some(a)) => {
                return Some(Note::Answered {
                    id: e.id,
                    title: e.title.clone(),
                    answer: a.label().to_owned(),
                });
            }
            _ => {}
        }
    }
    let last = f.last_step()?;
    match last.outcome? {
        StepOutcome::Inconclusive => Some(Note::Inconclusive {
            reason: last.detail.reason.clone().unwrap_or_default(),
        }),
        StepOutcome::TooFewFindings => Some(Note::TooFewFindings {
            found: last.detail.findings.unwrap_or_default(),
            min: f.rules.min_findings,
        }),
        _ => None,
    }
}

/// Acts on a human's answer.
fn resolve(f: &StoryFacts, e: &EscalationFact) -> Decision {
    let status = f.status.known();
    let human = |to: Status, reason: String, force: bool, commit: Option<&str>| Move {
        to,
        actor: Actor::Human,
        reason,
        force,
        commit: commit.map(str::to_owned),
        baseline: false,
    };
    let then = match (e.kind, e.answer.as_ref()) {
        (_, Some(Choice::Accept)) => (status != Some(Status::Done)).then(|| {
            human(
                Status::Done,
                format!("accepted as is (escalation #{})", e.id),
                true,
                Some("done (accepted by a human)"),
            )
        }),
        (_, Some(Choice::Stop)) => (status != Some(Status::NeedsIntervention)).then(|| {
            human(
                Status::NeedsIntervention,
                format!("stopped by a human (escalation #{}: {})", e.id, e.title),
                false,
                Some("stopped by a human"),
            )
        }),
        (EscalationKind::Checkpoint, Some(Choice::Confirm)) => {
            (status != Some(Status::Done)).then(|| {
                human(
                    Status::Done,
                    format!("confirmed (escalation #{})", e.id),
                    false,
                    Some("done (confirmed by a human)"),
                )
            })
        }
        (EscalationKind::MergeConflict, Some(Choice::HandOver)) => {
            (status != Some(Status::NeedsIntervention)).then(|| {
                human(
                    Status::NeedsIntervention,
                    format!(
                        "handed over to a human (escalation #{}: {}); its branch is kept",
                        e.id, e.title
                    ),
                    false,
                    None,
                )
            })
        }
        (EscalationKind::MergeConflict, Some(Choice::SetAside)) => {
            (status != Some(Status::Backlog)).then(|| {
                human(
                    Status::Backlog,
                    format!(
                        "its branch was set aside (escalation #{}); the story starts over",
                        e.id
                    ),
                    true,
                    None,
                )
            })
        }
        (EscalationKind::Checkpoint, Some(_)) => (status != Some(Status::InProgress)).then(|| {
            human(
                Status::InProgress,
                "sent back at the done checkpoint".into(),
                false,
                None,
            )
        }),
        _ => None,
    };
    Decision::Resolve { id: e.id, then }
}

/// A move by `actor`, unless the story entered `to` too often already: then it is a loop, and
/// the story needs a human instead.
fn mv(f: &StoryFacts, to: Status, actor: Actor, reason: String) -> Move {
    let entered = f.entered.get(&to).copied().unwrap_or(0);
    if to != Status::NeedsIntervention && actor != Actor::Human && entered >= f.rules.loop_limit {
        return Move {
            to: Status::NeedsIntervention,
            actor: Actor::Orchestrator,
            reason: format!("loop detected: `{}` entered {to} {entered} times", f.key),
            force: false,
            commit: None,
            baseline: false,
        };
    }
    Move {
        to,
        actor,
        reason,
        force: false,
        commit: None,
        baseline: false,
    }
}
