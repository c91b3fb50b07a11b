//! What a session journals: its turns (each an agent run of the skill), the answers it is
//! given (by baton or a person), the decisions put to a person, the parties held and its end.

use super::history::{self, By, EndDetail, History, Reply, Selection};
use super::pass::Pass;
use super::{Bmad, TurnEvent, json, party, task};
use crate::error::EngineError;
use crate::protocol::EventBody;
use crate::run::Run;
use crate::run::step::unfinished;
use crate::workflows::sprint::report::RunEnd;
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::story::{Escalate, StepOutcome};
use std::sync::Arc;

impl Bmad {
    pub(super) async fn take_turn(
        &self,
        run: &Arc<Run>,
        history: &History,
        cost: &mut f64,
    ) -> Result<Pass, EngineError> {
        let key = self.key();
        let n = history.turns() + 1;
        if let Err(e) = self.hook(TurnEvent::Before(n)) {
            return Ok(Pass::End(RunEnd::Failed, e.0, None));
        }
        let id = run.begin_step(&key, history::TURN, n, None)?;
        run.emit_unit(
            &key,
            EventBody::BmadTurn {
                session: self.session.clone(),
                turn: n,
            },
        );
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
            self.end_session(run, "failed", &e.0)?;
            return Ok(Pass::End(RunEnd::Failed, e.0, None));
        }
        Ok(Pass::Again)
    }

    pub(super) async fn act_on_answer(
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
    pub(super) async fn ask(
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

    pub(super) fn reply(&self, run: &Run, reply: Reply) -> Result<(), EngineError> {
        let id = run.begin_step(&self.key(), history::REPLY, 0, None)?;
        run.end_step(id, StepOutcome::Completed, Some(json(&reply)))?;
        if let Some(m) = &reply.menu {
            run.emit_unit(
                &self.key(),
                EventBody::BmadMenuAnswered {
                    session: self.session.clone(),
                    selection: m.selection.clone(),
                    by: match reply.by {
                        By::Baton => "baton",
                        By::Person => "person",
                    }
                    .to_owned(),
                    confidence: m.confidence,
                },
            );
        }
        Ok(())
    }

    pub(super) fn end_session(
        &self,
        run: &Run,
        end: &str,
        reason: &str,
    ) -> Result<(), EngineError> {
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
        run.end_step(id, outcome, Some(json(&d)))?;
        run.emit_unit(
            &self.key(),
            EventBody::BmadSessionEnded {
                session: self.session.clone(),
                end: d.end,
                reason: d.reason,
            },
        );
        Ok(())
    }

    /// Holds a party on `topic` and journals it; `None` when there are too few to hold one.
    pub(super) async fn party(
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
        run.emit_unit(
            &self.key(),
            EventBody::BmadParty {
                session: self.session.clone(),
                on: on.to_owned(),
                members: members.iter().map(|p| p.name.clone()).collect(),
            },
        );
        Ok(Some(detail))
    }

    /// At levels 3–4 a party reviews the work before the session ends, once.
    pub(super) async fn party_before_final(
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

pub(super) fn baton_reply(text: &str) -> Reply {
    Reply {
        text: text.to_owned(),
        by: By::Baton,
        menu: None,
        escalation: None,
    }
}
