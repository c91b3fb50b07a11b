//! One step of a unit's work, the same in every workflow: journal its start, run its agent on
//! the worker the agent's role names (the native loop, Claude Code, Codex or pi), settle how an
//! unfinished agent ended, and journal the step's end.
//!
//! What a *completed* agent's work means (tests re-run, a parsed verdict, a document checked) is
//! the workflow's stage's business; what an agent that did not complete means is the same
//! everywhere, and lives here ([`unfinished`]).

use super::{Run, Unit};
use crate::error::EngineError;
use crate::memory::About;
use crate::protocol::UnitKey;
use baton_agent::outcome::{Outcome, Status as AgentStatus, Stop};
use baton_agent::worker::Job;
use baton_core::story::{AgentEscalation, StepOutcome};
use baton_store::journal::StepRecord;
use std::sync::Arc;

/// How an agent that did not complete ended, as a step records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    /// The step's outcome.
    pub outcome: StepOutcome,
    /// Why (the agent's reason, or its status).
    pub reason: String,
    /// The agent's escalation, when it escalated.
    pub escalation: Option<AgentEscalation>,
    /// The budget stopped it (typed: never read off the reason's text).
    pub budget_stop: bool,
}

/// How `o` ended when it did not complete; `None` for a completed agent, whose work its stage
/// settles.
pub fn unfinished(o: &Outcome) -> Option<Unfinished> {
    let reason = o
        .reason
        .clone()
        .unwrap_or_else(|| o.status.as_str().to_owned());
    let outcome = match o.status {
        AgentStatus::Completed => return None,
        AgentStatus::Halted => StepOutcome::Halted,
        AgentStatus::Escalated => StepOutcome::Escalated,
        AgentStatus::Failed => StepOutcome::Failed,
        AgentStatus::TimedOut => StepOutcome::TimedOut,
        AgentStatus::Cancelled => StepOutcome::Cancelled,
    };
    let escalation =
        (o.status == AgentStatus::Escalated).then(|| agent_escalation(o, reason.clone()));
    Some(Unfinished {
        outcome,
        reason,
        escalation,
        budget_stop: o.stop == Some(Stop::Budget),
    })
}

/// The escalation an agent raised, as a step records it; `finding` is what an agent that
/// escalated without saying why is reported with.
pub fn agent_escalation(o: &Outcome, finding: String) -> AgentEscalation {
    match &o.escalation {
        Some(e) => AgentEscalation {
            title: e.title.clone(),
            finding: e.finding.clone(),
            options: e.options.clone(),
        },
        None => AgentEscalation {
            title: "agent escalated".into(),
            finding,
            options: Vec::new(),
        },
    }
}

impl Run {
    /// Says once per run that the memory failed, and why; the run goes on without it.
    pub fn memory_trouble(&self, e: &baton_store::memory::MemoryError) {
        use std::sync::atomic::Ordering;
        if !self.memory_warned.swap(true, Ordering::Relaxed) {
            self.emit(
                crate::protocol::Scope::Run,
                crate::protocol::EventBody::Notice {
                    message: format!("memory: {e}; going on without it"),
                },
            );
        }
    }

    /// Journals the start of a step of `unit` at `stage`, round `round`, with the workflow's
    /// own detail (JSON); returns the step's id.
    pub fn begin_step(
        &self,
        unit: &UnitKey,
        stage: &str,
        round: u32,
        detail: Option<String>,
    ) -> Result<i64, EngineError> {
        let step = StepRecord {
            id: 0,
            run_id: self.id.clone(),
            key: Some(unit.journal_key()),
            stage: stage.to_owned(),
            attempt: round,
            input_hash: String::new(),
            outcome: None,
            started_at: self.clock.now().rfc3339,
            ended_at: None,
            detail,
        };
        self.with_journal(|j| Ok(j.begin_step(&step)?))
    }

    /// Journals how step `id` ended, with the workflow's own detail (JSON).
    pub fn end_step(
        &self,
        id: i64,
        outcome: StepOutcome,
        detail: Option<String>,
    ) -> Result<(), EngineError> {
        let at = self.clock.now().rfc3339;
        self.with_journal(|j| Ok(j.end_step(id, &at, outcome.as_str(), detail.as_deref())?))
    }

    /// Runs `agent` on `task` for `unit`, on the worker its role names, in the unit's workspace.
    /// An agent that cannot be started ends `failed` with the reason; its events are scoped to
    /// the unit.
    pub async fn run_agent(self: &Arc<Run>, unit: &Unit, agent: &str, task: &str) -> Outcome {
        self.run_agent_about(unit, None, agent, task, &Run::about_unit(unit))
            .await
    }

    /// What an agent working for `unit` is about when its workflow says no more (for recall).
    pub fn about_unit(unit: &Unit) -> About {
        About {
            stage: unit.key.stage_kind(),
            epic: unit.key.epic(),
            words: unit.key.journal_key(),
            ..About::default()
        }
    }

    /// [`Run::run_agent`], with the memories that apply to what the step is `about` appended to
    /// the task as quoted data (and recorded as recalled), its model calls journaled in the cost
    /// ledger under journal step `step` (the token meter of a stage and a story sums them). A
    /// memory that cannot be read is reported once and the step runs without it.
    pub async fn run_agent_about(
        self: &Arc<Run>,
        unit: &Unit,
        step: Option<i64>,
        agent: &str,
        task: &str,
        about: &About,
    ) -> Outcome {
        let mut task = task.to_owned();
        if let Some(memory) = &self.setup.memory {
            let now = crate::memory::unix_secs(&self.clock.now().rfc3339);
            match memory.recall(&self.id, &unit.key.journal_key(), about, now) {
                Ok(r) => task.push_str(&r.section),
                Err(e) => self.memory_trouble(&e),
            }
        }
        let task = task.as_str();
        // The run's events for the unit, and the setup's own callback (a skill's tool hooks)
        // as well: the one must not replace the other.
        let mut events = self.agent_events(Some(unit.key.clone()));
        if let Some(also) = self.setup.on_event.clone() {
            let run_events = events;
            events = std::sync::Arc::new(move |e: &baton_agent::runner::AgentEvent| {
                run_events(e);
                also(e);
            });
        }
        let outcome = match self
            .setup
            .worker_in(agent, Some(events), &unit.workspace, step)
        {
            Ok((worker, def)) => {
                let job = Job {
                    agent: def,
                    task: task.to_owned(),
                };
                worker.run(&job).await
            }
            Err(e) => Outcome::not_started(agent, e.to_string()),
        };
        if let Ok(mut usage) = self.usage.lock() {
            usage.add(super::meter_of(&outcome.usage, outcome.cost_usd));
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: AgentStatus, reason: Option<&str>, stop: Option<Stop>) -> Outcome {
        let mut o = Outcome::not_started("dev", String::new());
        o.status = status;
        o.reason = reason.map(str::to_owned);
        o.stop = stop;
        o
    }

    #[test]
    fn an_unfinished_agent_is_settled_the_same_in_every_workflow() {
        assert_eq!(
            unfinished(&outcome(AgentStatus::Completed, None, None)),
            None
        );
        let u = unfinished(&outcome(AgentStatus::TimedOut, None, None)).unwrap();
        assert_eq!(
            (u.outcome, u.reason.as_str()),
            (StepOutcome::TimedOut, "timed_out")
        );
        let u = unfinished(&outcome(AgentStatus::Escalated, Some("why"), None)).unwrap();
        assert_eq!(u.outcome, StepOutcome::Escalated);
        assert_eq!(u.escalation.unwrap().finding, "why");
    }

    #[test]
    fn a_budget_stop_is_known_by_its_type_not_its_words() {
        let by_words = unfinished(&outcome(
            AgentStatus::Cancelled,
            Some("budget: $5 spent"),
            None,
        ))
        .unwrap();
        assert!(!by_words.budget_stop);
        let typed = unfinished(&outcome(
            AgentStatus::Cancelled,
            Some("the hard limit"),
            Some(Stop::Budget),
        ))
        .unwrap();
        assert!(typed.budget_stop);
        assert_eq!(typed.outcome, StepOutcome::Cancelled);
    }
}
