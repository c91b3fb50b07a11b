//! The validation loop of a session: a validation that did not pass is sent back to be fixed;
//! the same issue set twice in a row calls one party; a set that survives the party, comes
//! back after another, or outlasts the round limit goes to a person. The loop is replayed from
//! the session's journaled turns, so a resumed session stands where it stood.

use super::Bmad;
use super::history::{Entry, History};
use super::pass::Pass;
use super::session::baton_reply;
use crate::error::EngineError;
use crate::run::Run;
use baton_core::autopilot::party::{Gate, gate};
use baton_core::autopilot::stall::{Loop, Next as LoopNext, issue_set_hash};
use baton_core::autopilot::turn::{self, Reading};
use baton_core::autopilot::validation::Validation;
use baton_core::escalation::EscalationKind;
use regex::Regex;
use std::sync::Arc;

impl Bmad {
    pub(super) async fn on_validation(
        &self,
        run: &Arc<Run>,
        history: &History,
        v: &Validation,
    ) -> Result<Pass, EngineError> {
        let hash = issue_set_hash(&v.issues);
        let mut l = replay(history, self.skill.headless, &self.validation_patterns);
        let next = match l.observe(&hash, false) {
            LoopNext::Fix | LoopNext::Retry
                if gate(v.blocking, v.major, None) == Gate::Party && !party_on(history, &hash) =>
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
}

/// Whether a party was already held on issue set `hash`.
pub(super) fn party_on(history: &History, hash: &str) -> bool {
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
