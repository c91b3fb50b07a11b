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
//! turn the run's artifacts are checkpointed, so a session can be rolled back.

pub mod history;
pub mod party;
pub mod task;

use crate::error::EngineError;
use crate::protocol::UnitKey;
use crate::run::Run;
use crate::run::step::unfinished;
use crate::workflow::{Ending, Workflow};
use crate::workflows::sprint::report::RunEnd;
use baton_core::autopilot::confidence::CheckpointFormat;
use baton_core::autopilot::headless::Next as StatusNext;
use baton_core::autopilot::party::{Gate, gate};
use baton_core::autopilot::stall::{Loop, Next as LoopNext, issue_set_hash};
use baton_core::autopilot::tier::Tier;
use baton_core::autopilot::turn::{self, MenuDecision, Reading};
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::story::{Escalate, StepOutcome};
use history::{By, EndDetail, Entry, History, Reply, Selection};
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

/// Called around each turn with the turn's number: before it starts (the artifacts'
/// checkpoint, the step's hooks) and after it ends. An error stops the session.
pub type TurnHook = Arc<dyn Fn(TurnEvent<'_>) -> Result<(), String> + Send + Sync>;

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

/// What one pass of the loop came to.
enum Pass {
    /// Go round again.
    Again,
    /// The run ends here.
    End(RunEnd, String, Option<i64>),
}

impl Bmad {
    fn key(&self) -> UnitKey {
        UnitKey::Bmad(self.session.clone())
    }

    fn history(&self, run: &Run) -> Result<History, EngineError> {
        let key = self.key().journal_key();
        let steps = run.with_journal(|j| Ok(j.steps_for_key(&key)?))?;
        History::read(&steps).map_err(EngineError::Preflight)
    }

    fn hook(&self, e: TurnEvent<'_>) -> Result<(), String> {
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
            end = Some((RunEnd::Failed, e, None));
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

    async fn pass(
        &self,
        run: &Arc<Run>,
        cost: &mut f64,
        last_menu: &mut Option<Instant>,
    ) -> Result<Pass, EngineError> {
        let key = self.key();
        let history = self.history(run)?;
        if let Some(e) = history.ended() {
            let end = match e.end.as_str() {
                "completed" => RunEnd::Completed,
                "stopped" => RunEnd::Stopped,
                _ => RunEnd::Failed,
            };
            return Ok(Pass::End(end, e.reason.clone(), None));
        }
        let escalations = run.escalations_of(&key)?;
        if let Some(e) = escalations.iter().find(|e| e.resolved_at.is_none()) {
            let Some(answer) = e.answer.clone() else {
                return Ok(Pass::End(
                    RunEnd::Paused,
                    format!("waiting for an answer to escalation #{}: {}", e.id, e.title),
                    Some(e.id),
                ));
            };
            let kind = EscalationKind::parse(&e.kind);
            let pass = self.act_on_answer(run, kind, e.id, &answer).await?;
            run.resolve_escalation(e.id)?;
            return Ok(pass);
        }
        let Some(output) = history.unanswered().map(str::to_owned) else {
            return self.take_turn(run, &history, cost).await;
        };
        let tier = self.tier;
        match turn::read(&output, self.skill.headless, &self.validation_patterns) {
            Reading::Status(Ok(status)) => match status.next() {
                StatusNext::Done => {
                    self.party_before_final(run, &history).await?;
                    let reason = format!(
                        "the skill reported `{}`{}",
                        match status.status {
                            baton_core::autopilot::headless::RunStatus::Complete => "complete",
                            baton_core::autopilot::headless::RunStatus::Partial => "partial",
                            baton_core::autopilot::headless::RunStatus::Blocked => "blocked",
                        },
                        if status.artifacts.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ": {}",
                                status
                                    .artifacts
                                    .iter()
                                    .map(|(k, v)| format!("{k} {v}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    );
                    self.end_session(run, "completed", &reason)?;
                    Ok(Pass::End(RunEnd::Completed, reason, None))
                }
                StatusNext::Questions(qs) => {
                    let finding = format!(
                        "The skill finished `partial` with open questions. Answer them in your own \
                         words (`baton answer ID \"…\"`), or `stop`:\n{}",
                        qs.iter()
                            .enumerate()
                            .map(|(i, q)| format!("{}. {q}", i + 1))
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                    self.ask(
                        run,
                        EscalationKind::BmadQuestions,
                        "open questions",
                        finding,
                        vec!["stop".into()],
                    )
                    .await
                }
                StatusNext::Escalate(reason) => {
                    let finding = format!(
                        "The skill is blocked: {reason}\nAnswer with what it needs in your own words, or `stop`."
                    );
                    self.ask(
                        run,
                        EscalationKind::BmadQuestions,
                        "blocked",
                        finding,
                        vec!["stop".into()],
                    )
                    .await
                }
            },
            Reading::Status(Err(e)) => {
                let reminded = history.entries.iter().rev().find_map(|e| match e {
                    Entry::Reply(r) => Some(r.text.starts_with(STATUS_REMINDER)),
                    _ => None,
                });
                if reminded == Some(true) {
                    let reason = format!("the skill twice ended without a usable status: {e}");
                    self.end_session(run, "failed", &reason)?;
                    return Ok(Pass::End(RunEnd::Failed, reason, None));
                }
                self.reply(
                    run,
                    Reply {
                        text: format!(
                            "{STATUS_REMINDER} ({e}). Finish the headless protocol and end with its \
                             JSON status object in a ```json fence."
                        ),
                        by: By::Baton,
                        menu: None,
                        escalation: None,
                    },
                )?;
                Ok(Pass::Again)
            }
            Reading::Validation(v) => {
                let hash = issue_set_hash(&v.issues);
                let mut l = replay(&history, self.skill.headless, &self.validation_patterns);
                let next = match l.observe(&hash, false) {
                    LoopNext::Fix | LoopNext::Retry
                        if gate(v.blocking, v.major, None) == Gate::Party
                            && !party_on(&history, &hash) =>
                    {
                        LoopNext::Party(hash.clone())
                    }
                    n => n,
                };
                let issues = v
                    .issues
                    .iter()
                    .map(|i| format!("- {i}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                match next {
                    LoopNext::Done => {
                        self.reply(run, baton_reply("Validation passed: go on."))?;
                        Ok(Pass::Again)
                    }
                    LoopNext::Fix | LoopNext::Retry => {
                        self.reply(
                            run,
                            baton_reply(&format!(
                                "The validation found these issues:\n{issues}\nFix them, then validate again."
                            )),
                        )?;
                        Ok(Pass::Again)
                    }
                    LoopNext::Party(h) => {
                        let topic = format!(
                            "The `{}` validation keeps reporting these issues:\n{issues}",
                            self.skill.name
                        );
                        let Some(detail) = self.party(run, &topic, &h).await? else {
                            return self
                                .ask(
                                    run,
                                    EscalationKind::BmadStall,
                                    "validation stalled",
                                    format!("The validation stalled and no party could be held:\n{issues}"),
                                    vec!["retry".into(), "accept".into(), "stop".into()],
                                )
                                .await;
                        };
                        self.reply(
                            run,
                            baton_reply(&format!(
                                "A party of reviewers discussed the issues and advises:\n{}\nApply it, fix the issues, then validate again.",
                                detail.summary
                            )),
                        )?;
                        Ok(Pass::Again)
                    }
                    LoopNext::Escalate(reason) => {
                        self.ask(
                            run,
                            EscalationKind::BmadStall,
                            "validation stalled",
                            format!("The validation loop stopped: {reason}. The issues:\n{issues}"),
                            vec!["retry".into(), "accept".into(), "stop".into()],
                        )
                        .await
                    }
                }
            }
            Reading::Menu(d, v) => {
                let (continues, in_a_row) = history.streak();
                match turn::decide_menu(&d, tier, continues, in_a_row, v.map(|v| v.passed)) {
                    MenuDecision::Select {
                        key: choice,
                        label,
                        confidence,
                        reason,
                    } => {
                        if let Some(t) = last_menu {
                            let wait = self.limits.menu_interval.saturating_sub(t.elapsed());
                            tokio::time::sleep(wait).await;
                        }
                        *last_menu = Some(Instant::now());
                        let selection = Selection {
                            options: d.options.iter().map(|o| o.key.clone()).collect(),
                            continues: label.trim().to_lowercase().starts_with("continue"),
                            selection: choice.clone(),
                            confidence,
                            reason,
                            at: run.clock.now().rfc3339,
                        };
                        self.reply(
                            run,
                            Reply {
                                text: choice,
                                by: By::Baton,
                                menu: Some(selection),
                                escalation: None,
                            },
                        )?;
                        Ok(Pass::Again)
                    }
                    MenuDecision::Checkpoint {
                        format,
                        recommended,
                        confidence,
                        reason,
                    } => {
                        let mut options: Vec<String> = d
                            .options
                            .iter()
                            .map(|o| format!("{}: {}", o.key, o.label))
                            .collect();
                        if let Some(r) = &recommended
                            && let Some(at) = options
                                .iter()
                                .position(|o| o.starts_with(&format!("{r}: ")))
                        {
                            let o = options.remove(at);
                            options.insert(0, o);
                        }
                        let mut finding = checkpoint_text(
                            format,
                            &output,
                            &history,
                            confidence,
                            &reason,
                            recommended.as_deref(),
                        );
                        // From level 2, a decision this unsure is discussed by a party first,
                        // once per menu; its advice goes to the person with the checkpoint.
                        let on = format!("menu after turn {}", history.turns());
                        if baton_core::autopilot::party::due(tier, confidence, false)
                            && !party_on(&history, &on)
                        {
                            let topic = format!(
                                "The `{}` skill shows this menu and baton is not sure which option to take:\n{}",
                                self.skill.name,
                                tail(&output, 20)
                            );
                            if let Some(d) = self.party(run, &topic, &on).await? {
                                finding.push_str(&format!(
                                    "\nA party of reviewers advises:\n{}",
                                    d.summary
                                ));
                            }
                        }
                        self.ask(
                            run,
                            EscalationKind::BmadMenu,
                            "menu checkpoint",
                            finding,
                            options,
                        )
                        .await
                    }
                }
            }
            Reading::Question(q) => {
                if tier.level() <= 1 {
                    self.reply(
                        run,
                        baton_reply(&turn::default_reply(self.input.as_deref())),
                    )?;
                    return Ok(Pass::Again);
                }
                self.ask(
                    run,
                    EscalationKind::BmadQuestions,
                    "the skill asks",
                    format!("The skill asks:\n{q}\nAnswer in your own words, or `stop`."),
                    vec!["stop".into()],
                )
                .await
            }
            Reading::Finished => {
                self.party_before_final(run, &history).await?;
                let reason = "the skill finished".to_owned();
                self.end_session(run, "completed", &reason)?;
                Ok(Pass::End(RunEnd::Completed, reason, None))
            }
        }
    }

    async fn take_turn(
        &self,
        run: &Arc<Run>,
        history: &History,
        cost: &mut f64,
    ) -> Result<Pass, EngineError> {
        let key = self.key();
        let n = history.turns() + 1;
        if let Err(e) = self.hook(TurnEvent::Before(n)) {
            return Ok(Pass::End(RunEnd::Failed, e, None));
        }
        let id = run.begin_step(&key, history::TURN, n, None)?;
        let task = task::build(
            &self.skill,
            &self.config,
            self.input.as_deref(),
            history,
            &self.date,
        );
        let unit = run.unit(key.clone());
        let about = Run::about_unit(&unit);
        let o = run
            .run_agent_about(&unit, Some(id), &self.agent, &task, &about)
            .await;
        *cost += o.cost_usd;
        if let Some(u) = unfinished(&o) {
            run.end_step(id, u.outcome, None)?;
            if let Some(e) = u.escalation {
                return self
                    .ask(run, EscalationKind::Agent, &e.title, e.finding, e.options)
                    .await;
            }
            let end = if u.budget_stop {
                RunEnd::Stopped
            } else if u.outcome == StepOutcome::Cancelled {
                RunEnd::Cancelled
            } else {
                RunEnd::Failed
            };
            return Ok(Pass::End(
                end,
                format!("turn {n}: {}; the next run takes it again", u.reason),
                None,
            ));
        }
        let detail = history::TurnDetail {
            output: o.summary.clone(),
        };
        run.end_step(id, StepOutcome::Completed, Some(json(&detail)))?;
        if let Err(e) = self.hook(TurnEvent::After(n, &o.summary)) {
            self.end_session(run, "failed", &e)?;
            return Ok(Pass::End(RunEnd::Failed, e, None));
        }
        Ok(Pass::Again)
    }

    async fn act_on_answer(
        &self,
        run: &Arc<Run>,
        kind: Option<EscalationKind>,
        id: i64,
        answer: &str,
    ) -> Result<Pass, EngineError> {
        let person = |text: String, menu: Option<Selection>| Reply {
            text,
            by: By::Person,
            menu,
            escalation: Some(id),
        };
        let stop = |this: &Bmad| -> Result<Pass, EngineError> {
            let reason = format!("stopped by the answer to escalation #{id}");
            this.end_session(run, "stopped", &reason)?;
            Ok(Pass::End(RunEnd::Stopped, reason, None))
        };
        match kind {
            Some(EscalationKind::BmadMenu) => {
                let (k, label) = answer.split_once(": ").unwrap_or((answer, answer));
                let selection = Selection {
                    options: Vec::new(),
                    selection: k.to_owned(),
                    confidence: 100.0,
                    reason: format!("a person chose it (escalation #{id})"),
                    continues: label.trim().to_lowercase().starts_with("continue"),
                    at: run.clock.now().rfc3339,
                };
                self.reply(run, person(k.to_owned(), Some(selection)))?;
            }
            Some(EscalationKind::BmadQuestions) => {
                if answer == "stop" {
                    return stop(self);
                }
                self.reply(run, person(format!("The user answers:\n{answer}"), None))?;
            }
            Some(EscalationKind::BmadStall) => match answer {
                "stop" => return stop(self),
                "accept" => self.reply(
                    run,
                    person(
                        "The user accepts the remaining issues: record them as open items and go on."
                            .into(),
                        None,
                    ),
                )?,
                _ => self.reply(
                    run,
                    person("The user asks you to try again: fix the issues, then validate again.".into(), None),
                )?,
            },
            _ => self.reply(run, person(format!("The user chose: {answer}"), None))?,
        }
        Ok(Pass::Again)
    }

    /// Puts a decision to a person; with one at the terminal, waits for the answer (at most the
    /// human limit), else pauses.
    async fn ask(
        &self,
        run: &Arc<Run>,
        kind: EscalationKind,
        title: &str,
        finding: String,
        options: Vec<String>,
    ) -> Result<Pass, EngineError> {
        let key = self.key();
        let e = Escalate {
            kind,
            title: format!("{}: {title}", self.skill.name),
            finding,
            choices: options.into_iter().map(Choice::Custom).collect(),
        };
        let raised =
            tokio::time::timeout(self.limits.human, run.raise(&key, e.title.clone(), &e, 0)).await;
        match raised {
            Ok(r) => r?,
            Err(_) => {
                return Ok(Pass::End(
                    RunEnd::Paused,
                    format!(
                        "no answer within {} s; `baton answer` and `baton bmad run {}` go on",
                        self.limits.human.as_secs(),
                        self.skill.name
                    ),
                    None,
                ));
            }
        }
        Ok(Pass::Again)
    }

    fn reply(&self, run: &Run, reply: Reply) -> Result<(), EngineError> {
        let id = run.begin_step(&self.key(), history::REPLY, 0, None)?;
        run.end_step(id, StepOutcome::Completed, Some(json(&reply)))
    }

    fn end_session(&self, run: &Run, end: &str, reason: &str) -> Result<(), EngineError> {
        let id = run.begin_step(&self.key(), history::END, 0, None)?;
        let d = EndDetail {
            end: end.to_owned(),
            reason: reason.to_owned(),
        };
        let outcome = if end == "completed" {
            StepOutcome::Completed
        } else {
            StepOutcome::Failed
        };
        run.end_step(id, outcome, Some(json(&d)))
    }

    /// Holds a party on `topic` and journals it; `None` when there are too few to hold one.
    async fn party(
        &self,
        run: &Arc<Run>,
        topic: &str,
        on: &str,
    ) -> Result<Option<history::PartyDetail>, EngineError> {
        let Some(members) = self.roster.members(self.tier.level()) else {
            return Ok(None);
        };
        let id = run.begin_step(&self.key(), history::PARTY, 0, None)?;
        let timeout = self.roster.round_timeout.unwrap_or(self.limits.party_round);
        let detail = party::hold(run, &self.key(), &self.agent, &members, topic, on, timeout).await;
        run.end_step(id, StepOutcome::Completed, Some(json(&detail)))?;
        Ok(Some(detail))
    }

    /// At levels 3–4 a party reviews the work before the session ends, once.
    async fn party_before_final(
        &self,
        run: &Arc<Run>,
        history: &History,
    ) -> Result<(), EngineError> {
        if !self.tier.party_before_final() || history.party_held() {
            return Ok(());
        }
        let topic = format!(
            "The `{}` skill is about to finish. Review what it produced for anything that must \
             change before it is final. Its last answer:\n{}",
            self.skill.name,
            history.unanswered().unwrap_or_default()
        );
        self.party(run, &topic, "before final").await?;
        Ok(())
    }
}

fn baton_reply(text: &str) -> Reply {
    Reply {
        text: text.to_owned(),
        by: By::Baton,
        menu: None,
        escalation: None,
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "{}".to_owned())
}

/// Whether a party was already held on issue set `hash`.
fn party_on(history: &History, hash: &str) -> bool {
    history
        .entries
        .iter()
        .any(|e| matches!(e, Entry::Party(p) if p.on == hash))
}

/// The validation loop as the earlier turns left it: each failing validation observed in order,
/// and a party that the same issues outlived marked as failed.
fn replay(history: &History, headless: bool, custom: &[Regex]) -> Loop {
    let mut l = Loop::new();
    let mut party: Option<String> = None;
    for e in history.earlier() {
        match e {
            Entry::Party(p) => party = Some(p.on.clone()),
            Entry::Turn(_, t) => match turn::read(&t.output, headless, custom) {
                Reading::Validation(v) => {
                    let h = issue_set_hash(&v.issues);
                    if party.take().as_deref() == Some(h.as_str()) {
                        l.party_failed(&h);
                    }
                    l.observe(&h, false);
                }
                Reading::Menu(_, Some(v)) if v.passed => {
                    l.observe("", true);
                }
                _ => {}
            },
            _ => {}
        }
    }
    if let Some(h) = party {
        // The party's advice has not been validated yet: a repeat of its set fails it.
        l.party_failed(&h);
    }
    l
}

/// What a person is shown at a menu checkpoint, by the format its confidence calls for.
fn checkpoint_text(
    format: CheckpointFormat,
    output: &str,
    history: &History,
    confidence: f64,
    reason: &str,
    recommended: Option<&str>,
) -> String {
    let rec = recommended.map_or_else(
        || "baton makes no recommendation".to_owned(),
        |r| format!("baton recommends `{r}`"),
    );
    match format {
        CheckpointFormat::Minimal => format!(
            "Checkpoint (minimal, confidence {confidence:.0}%): {reason}; {rec}. Confirm with the \
             first option."
        ),
        CheckpointFormat::Summary => {
            let menus = history.menus();
            let recent: Vec<String> = menus
                .iter()
                .rev()
                .take(5)
                .map(|m| {
                    format!(
                        "- chose `{}` ({:.0}%): {}",
                        m.selection, m.confidence, m.reason
                    )
                })
                .collect();
            format!(
                "Checkpoint (summary, confidence {confidence:.0}%): {reason}; {rec}.\nRecent \
                 decisions:\n{}\nThe skill's last words:\n{}",
                if recent.is_empty() {
                    "- none".to_owned()
                } else {
                    recent.join("\n")
                },
                tail(output, 12)
            )
        }
        CheckpointFormat::FullAudit => {
            let menus: Vec<String> = history
                .menus()
                .iter()
                .map(|m| {
                    format!(
                        "- {} chose `{}` of {:?} ({:.0}%): {}",
                        m.at, m.selection, m.options, m.confidence, m.reason
                    )
                })
                .collect();
            format!(
                "Checkpoint (full audit, confidence {confidence:.0}%): {reason}; {rec}.\nEvery \
                 decision so far:\n{}\nThe skill's whole turn:\n{}",
                if menus.is_empty() {
                    "- none".to_owned()
                } else {
                    menus.join("\n")
                },
                output.trim()
            )
        }
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
