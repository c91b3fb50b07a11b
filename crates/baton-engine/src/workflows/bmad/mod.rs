//! `baton bmad`: one of BMad's own skills run unattended, as a workflow of the run.
//!
//! The skill's agent takes one turn at a time ([`task`] builds what it is told). After each turn
//! the rules in [`baton_core::autopilot`] read what it said: a headless skill's JSON status ends
//! the session (done, or its open questions and blocks go to a person); a validation that did
//! not pass is fixed in a loop that calls a party on a stall ([`party`]) and stops for a person
//! when it cannot end; a menu is answered by baton within the tier's batch and confidence, or
//! put to a person as a checkpoint; a question is answered by baton at levels 0–1 and put to a
//! person above; anything else is the skill's end. Every turn, answer, party and end is a
//! journaled step ([`history`]), so a killed session resumes at the turn it was in; before each
//! turn the run's artifacts are checkpointed, so a session can be rolled back. Turns, menus
//! answered, parties and the session's end are events too (`bmad_turn`, …).

//!
//! The loop is split by what it reads: [`pass`] takes one step of it, [`validation`] the
//! validation loop, [`menus`] menus and their checkpoints, [`session`] the turns, answers,
//! parties and ends it journals.

pub mod history;
mod menus;
pub mod party;
mod pass;
mod session;
pub mod task;
mod validation;

use crate::error::EngineError;
use crate::protocol::UnitKey;
use crate::run::Run;
use crate::workflow::{Ending, Workflow};
use crate::workflows::sprint::report::RunEnd;
use baton_core::autopilot::tier::Tier;
use baton_core::story::StepOutcome;
use history::{Entry, History};
use pass::Pass;
use regex::Regex;
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A session's time limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The whole run of the workflow (1800 s by default).
    pub workflow: Duration,
    /// A person's answer at the terminal (300 s by default); the session pauses after it.
    pub human: Duration,
    /// The least time between two menus baton answers (2 s by default).
    pub menu_interval: Duration,
    /// A party round (120 s by default).
    pub party_round: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            workflow: Duration::from_secs(1800),
            human: Duration::from_secs(300),
            menu_interval: baton_core::autopilot::tier::MENU_INTERVAL,
            party_round: party::ROUND_TIMEOUT,
        }
    }
}

/// Why a [`TurnHook`] stops the session (a checkpoint that could not be taken, a critical hook
/// that failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookStop(pub String);

/// Called around each turn with the turn's number: before it starts (the artifacts'
/// checkpoint, the step's hooks) and after it ends. An error stops the session.
pub type TurnHook = Arc<dyn Fn(TurnEvent<'_>) -> Result<(), HookStop> + Send + Sync>;

/// When a [`TurnHook`] is called.
#[derive(Debug, Clone, Copy)]
pub enum TurnEvent<'a> {
    /// The session starts in this process (after `turns` turns already taken).
    Start {
        /// Turns already taken.
        turns: u32,
    },
    /// Turn `n` is about to start.
    Before(u32),
    /// Turn `n` ended with this answer.
    After(u32, &'a str),
}

/// The workflow.
pub struct Bmad {
    /// The session (`bmad-prd-1`): the unit its steps are journaled under.
    pub session: String,
    /// The skill.
    pub skill: task::Skill,
    /// The agent that runs it.
    pub agent: String,
    /// The caller's input.
    pub input: Option<String>,
    /// The tier.
    pub tier: Tier,
    /// Where the tier came from, for the session's record.
    pub tier_from: String,
    /// The project's BMad configuration, resolved.
    pub config: Vec<(String, String)>,
    /// The project's own validation patterns.
    pub validation_patterns: Vec<Regex>,
    /// Who can be called to a party.
    pub roster: party::Roster,
    /// Time limits.
    pub limits: Limits,
    /// Today (`2026-11-26`), for the skill's `{date}`.
    pub date: String,
    /// Checkpoints and hooks around each turn.
    pub on_turn: Option<TurnHook>,
}

/// How a session's run ended.
#[derive(Debug, Clone, Serialize)]
pub struct BmadReport {
    /// The session.
    pub session: String,
    /// The skill.
    pub skill: String,
    /// How the run ended.
    pub end: RunEnd,
    /// Why, or what the skill reported.
    pub reason: String,
    /// Turns taken in the session so far.
    pub turns: u32,
    /// Menus answered in the session so far (by baton or a person).
    pub menus: usize,
    /// Parties held.
    pub parties: usize,
    /// The escalation waiting for a person, when paused.
    pub escalation: Option<i64>,
    /// Cost of this run, in US dollars.
    pub cost_usd: f64,
}

/// The reminder a headless skill gets when its answer carries no usable status.
const STATUS_REMINDER: &str = "Your answer did not end with a usable JSON status";

impl Workflow for Bmad {
    type Report = Result<BmadReport, EngineError>;

    async fn preflight(&self, run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
        run.setup
            .worker_with(&self.agent, None)
            .map_err(|e| EngineError::Preflight(e.to_string()))?;
        Ok(run.end_orphaned_workers().await)
    }

    async fn run(self, run: Arc<Run>) -> Result<BmadReport, EngineError> {
        self.drive(&run).await
    }

    fn ending(report: &Result<BmadReport, EngineError>, _run: &Run) -> Ending {
        match report {
            Ok(r) => Ending::new(r.end.as_str(), r.reason.clone()),
            Err(e) => Ending::new(RunEnd::Failed.as_str(), e.to_string()),
        }
    }
}

impl Bmad {
    fn key(&self) -> UnitKey {
        UnitKey::Bmad(self.session.clone())
    }

    fn history(&self, run: &Run) -> Result<History, EngineError> {
        let key = self.key().journal_key();
        let steps = run.with_journal(|j| Ok(j.steps_for_key(&key)?))?;
        History::read(&steps).map_err(|e| EngineError::Preflight(e.to_string()))
    }

    fn hook(&self, e: TurnEvent<'_>) -> Result<(), HookStop> {
        self.on_turn.as_ref().map_or(Ok(()), |h| h(e))
    }

    async fn drive(&self, run: &Arc<Run>) -> Result<BmadReport, EngineError> {
        let started = Instant::now();
        let mut cost = 0.0;
        let mut last_menu: Option<Instant> = None;
        let first = self.history(run)?;
        if first.start().is_none() {
            let id = run.begin_step(&self.key(), history::START, 0, None)?;
            let d = history::StartDetail {
                tier: self.tier.level(),
                tier_from: self.tier_from.clone(),
                input: self.input.clone(),
            };
            run.end_step(id, StepOutcome::Completed, Some(json(&d)))?;
        }
        let mut end = None;
        if first.ended().is_none()
            && let Err(e) = self.hook(TurnEvent::Start {
                turns: first.turns(),
            })
        {
            end = Some((RunEnd::Failed, e.0, None));
        }
        while end.is_none() {
            if run.cancelled() {
                end = Some((RunEnd::Cancelled, "cancelled".into(), None));
                break;
            }
            if let Some(b) = run.budget_exhausted() {
                end = Some((RunEnd::Stopped, b, None));
                break;
            }
            if started.elapsed() > self.limits.workflow {
                end = Some((
                    RunEnd::Failed,
                    format!(
                        "the workflow ran past its {} s limit; `baton bmad run {}` resumes it",
                        self.limits.workflow.as_secs(),
                        self.skill.name
                    ),
                    None,
                ));
                break;
            }
            match self.pass(run, &mut cost, &mut last_menu).await? {
                Pass::Again => {}
                Pass::End(e, r, id) => end = Some((e, r, id)),
            }
        }
        let (end, reason, escalation) = end.unwrap_or((RunEnd::Failed, String::new(), None));
        let h = self.history(run)?;
        Ok(BmadReport {
            session: self.session.clone(),
            skill: self.skill.name.clone(),
            end,
            reason,
            turns: h.turns(),
            menus: h.menus().len(),
            parties: h
                .entries
                .iter()
                .filter(|e| matches!(e, Entry::Party(_)))
                .count(),
            escalation,
            cost_usd: cost,
        })
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "{}".to_owned())
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
