//! One pass of a session's loop: the session's end if it has one, the answer to its open
//! escalation, the next turn, or what baton makes of the last turn (a status, a validation, a
//! menu, a question, the skill's end).

use super::history::{By, Entry, History, Reply};
use super::session::baton_reply;
use super::{Bmad, STATUS_REMINDER};
use crate::error::EngineError;
use crate::run::Run;
use crate::workflows::sprint::report::RunEnd;
use baton_core::autopilot::headless::{Next as StatusNext, RunStatus, Status};
use baton_core::autopilot::turn::{self, Reading};
use baton_core::escalation::EscalationKind;
use std::sync::Arc;
use std::time::Instant;

/// What one pass of the loop came to.
pub(super) enum Pass {
    /// Go round again.
    Again,
    /// The run ends here.
    End(RunEnd, String, Option<i64>),
}

impl Bmad {
    pub(super) async fn pass(
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
            Reading::Status(Ok(status)) => self.on_status(run, &history, &status).await,
            Reading::Status(Err(e)) => self.on_bad_status(run, &history, &e.to_string()),
            Reading::Validation(v) => self.on_validation(run, &history, &v).await,
            Reading::Menu(d, v) => {
                self.on_menu(run, &history, &output, &d, v.as_ref(), last_menu)
                    .await
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

    async fn on_status(
        &self,
        run: &Arc<Run>,
        history: &History,
        status: &Status,
    ) -> Result<Pass, EngineError> {
        match status.next() {
            StatusNext::Done => {
                self.party_before_final(run, history).await?;
                let reason = format!(
                    "the skill reported `{}`{}",
                    match status.status {
                        RunStatus::Complete => "complete",
                        RunStatus::Partial => "partial",
                        RunStatus::Blocked => "blocked",
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
        }
    }

    fn on_bad_status(&self, run: &Run, history: &History, e: &str) -> Result<Pass, EngineError> {
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
}
