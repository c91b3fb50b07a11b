//! A story's moves: the durable status transition with its stage commit (through the merge lane
//! for a story in its own worktree), and raising and resolving its escalations.

use super::StoryCtx;
use crate::error::EngineError;
use crate::protocol::EventBody;
use crate::story_doc;
use baton_core::status::{Status, StatusValue};
use baton_core::story::{Escalate, Move, StoryFacts};
use baton_store::ledger::Request;

impl StoryCtx {
    fn request(&self, m: &Move) -> Request {
        Request {
            key: self.key.clone(),
            to: m.to,
            actor: m.actor,
            reason: m.reason.clone(),
            note: None,
            force: m.force,
            run_id: Some(self.run.id.clone()),
        }
    }

    /// Carries out a move. A story in its own worktree that is about to be merged (`done`, or
    /// QA after review) goes through the merge lane first: its story file gets the status the
    /// move will give it, the stage commit is made in the worktree, the lane brings the work into
    /// the base branch, and only then is the move made. When the lane asks a human instead, the
    /// move waits for the answer.
    pub async fn transition(&self, m: &Move) -> Result<(), EngineError> {
        let Some(tree) = &self.tree else {
            return self.apply(m).await;
        };
        if !matches!(m.to, Status::Done | Status::E2eVerify) {
            return self.apply(m).await;
        }
        let story = self.story_path();
        if story.is_file() {
            let req = self.request(m);
            let now = self.run.clock.now();
            let text = self.run.with_ledger(|l| {
                l.refresh()?;
                Ok(l.status_text(&req, &now))
            })?;
            if let Some(text) = text {
                baton_store::story_file::sync_status(&story, &text).map_err(|e| {
                    EngineError::File {
                        path: story.clone(),
                        message: e.to_string(),
                    }
                })?;
                self.workspace().touched(&[&story]);
            }
        }
        if let Some(what) = &m.commit {
            self.commit(what).await?;
        }
        match tree.lane.merge(self).await? {
            crate::workflows::sprint::lane::Merged::Merged => {}
            _ => return Ok(()),
        }
        let mut merged = m.clone();
        merged.commit = None;
        self.apply(&merged).await?;
        if m.to == Status::Done {
            tree.lane.retire(self).await;
        }
        Ok(())
    }

    /// Makes a move: the baseline commit first when development starts, then the durable
    /// transition, then the stage commit that goes with it.
    async fn apply(&self, m: &Move) -> Result<(), EngineError> {
        let story = self.story_path();
        let ws = self.workspace();
        if m.baseline
            && story.is_file()
            && let Some(head) = ws.head().await
        {
            story_doc::set_baseline(&story, &head)?;
            ws.touched(&[&story]);
        }
        let req = self.request(m);
        let applied = self
            .run
            .grouper
            .transition(&self.run.ledger, req, || self.run.clock.now())
            .await?;
        let sprint_file = self.run.with_ledger(|l| Ok(l.doc().path().to_path_buf()))?;
        if applied.is_empty() {
            return Err(EngineError::NoProgress {
                key: self.key.clone(),
                what: format!("the move to {}", m.to),
            });
        }
        ws.touched(&[&sprint_file, &story]);
        for a in applied {
            let (from, _) = StatusValue::parse(&a.from, baton_core::key::classify(&a.key));
            let Some(to) = Status::parse(&a.to) else {
                continue;
            };
            self.emit(EventBody::Transition {
                key: a.key,
                from,
                to,
            });
        }
        if m.commit.is_some() && crate::failpoint::after_move(&self.run.run) {
            return Ok(());
        }
        if let Some(what) = &m.commit {
            self.commit(what).await?;
        }
        Ok(())
    }

    /// Raises an escalation; with a human at the terminal, waits for their answer.
    pub async fn raise(&self, e: &Escalate, facts: &StoryFacts) -> Result<(), EngineError> {
        self.run
            .raise(&self.unit.key, e.title.clone(), e, facts.newest_step_id())
            .await
    }

    /// Carries out an answer's move (if any) and marks the escalation resolved.
    pub async fn resolve(&self, id: i64, then: Option<&Move>) -> Result<(), EngineError> {
        if let Some(m) = then {
            self.transition(m).await?;
        }
        self.run.resolve_escalation(id)
    }
}
