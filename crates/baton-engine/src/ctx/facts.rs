//! A story's facts as the sprint's decision reads them: its status and why, its steps and
//! open escalations from the journal, the moves it made, and the rules and limits of the run.

use super::RunCtx;
use crate::error::EngineError;
use crate::run::escalate;
use baton_agent::runner::Mode;
use baton_core::actor::Actor;
use baton_core::dispatch::Stage;
use baton_core::status::Status;
use baton_core::story::{Rules, StepDetail, StepFact, StepOutcome, StoryFacts};
use baton_store::journal::{EscalationLog, EventFilter, Journal, StepRecord};
use std::collections::BTreeMap;
use std::path::Path;

impl RunCtx {
    /// Facts of `key`, for [`baton_core::story::decide`], with its story file in the project's
    /// stories folder.
    pub fn facts(&self, key: &str) -> Result<StoryFacts, EngineError> {
        self.facts_at(key, &self.story_path(key), &self.settings.root)
    }

    /// Facts of `key` whose story file is (or will be) `story_path`, in the tree at `root`.
    pub fn facts_at(
        &self,
        key: &str,
        story_path: &Path,
        root: &Path,
    ) -> Result<StoryFacts, EngineError> {
        let (status, events, steps, escalations) = self.with_ledger(|l| {
            l.refresh()?;
            let status = l
                .doc()
                .sprint()
                .get(key)
                .map(|e| e.effective())
                .ok_or_else(|| EngineError::UnknownKey(key.to_owned()))?;
            let events = l.journal().events(&EventFilter {
                key: Some(key.to_owned()),
                ..EventFilter::default()
            })?;
            let steps = l.journal().steps_for_key(key)?;
            let escalations = EscalationLog::escalations_for_key(l.journal(), key, false)?;
            Ok((status, events, steps, escalations))
        })?;
        let mut entered = BTreeMap::new();
        for e in &events {
            if let Some(s) = Status::parse(&e.to) {
                *entered.entry(s).or_insert(0u32) += 1;
            }
        }
        // A move a human made outside any run (`baton set`) after the newest step ended.
        let last_step_at = steps
            .last()
            .map(|s| s.ended_at.as_deref().unwrap_or(&s.started_at))
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        let moved_by_human_since_last_step = last_step_at.is_some_and(|step_at| {
            events.iter().any(|e| {
                e.actor == Actor::Human.as_str()
                    && e.run_id.is_none()
                    && e.at
                        .parse::<jiff::Timestamp>()
                        .is_ok_and(|moved_at| moved_at > step_at)
            })
        });
        let status_reason = events
            .iter()
            .rev()
            .find(|e| Some(e.to.as_str()) == Some(status.as_str()))
            .map(|e| e.reason.clone());
        let setup = &self.setup;
        Ok(StoryFacts {
            key: key.to_owned(),
            status,
            status_reason,
            story_file: story_path
                .strip_prefix(root)
                .unwrap_or(story_path)
                .display()
                .to_string(),
            story_file_exists: story_path.is_file(),
            steps: steps
                .into_iter()
                .filter_map(|s| self.step_fact(s))
                .collect(),
            escalations: escalations.into_iter().map(escalate::fact).collect(),
            entered,
            rules: Rules {
                dispatch: self.settings.dispatch,
                max_review_rounds: self.settings.max_review_rounds,
                min_findings: self.settings.min_findings,
                loop_limit: self.settings.loop_limit,
                confirm_done: setup.mode == Mode::Standard
                    && self.settings.checkpoints.contains(&Status::Done),
            },
            budget_exhausted: match setup.budget.check(Default::default()) {
                baton_core::budget::BudgetState::Exhausted(why) => Some(why),
                _ => None,
            },
            cancelled: setup.cancel.is_cancelled(),
            moved_by_human_since_last_step,
        })
    }

    fn step_fact(&self, s: StepRecord) -> Option<StepFact> {
        // Steps of stages this build does not know (a newer baton) are not this story's facts.
        let stage = Stage::parse(&s.stage)?;
        let detail: StepDetail = s
            .detail
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or_default();
        Some(StepFact {
            id: s.id,
            stage,
            round: s.attempt,
            outcome: s.outcome.as_deref().and_then(StepOutcome::parse),
            this_run: s.run_id == self.run.id,
            detail,
        })
    }
}
