//! After every agent step: the sprint file holds only the transitions baton made.
//!
//! Statuses move through the ledger only — the orchestrator's own moves and the sprint tools,
//! both journaled. The file tools refuse the sprint file, but an agent has other routes (an
//! allowlisted interpreter, `sed -i` through a build script). So after each step the file is
//! compared with what the ledger last wrote: a status that changed without a journaled event is
//! put back by a forced, journaled transition (actor `orchestrator`, reason naming the edit), an
//! unparsable file is restored from the ledger's copy, and the step fails with the reason, which
//! sends its story to `needs-intervention`.

use crate::ctx::RunCtx;
use crate::error::EngineError;
use baton_core::actor::Actor;
use baton_core::status::StatusValue;
use baton_store::journal::{EventFilter, Journal};
use baton_store::ledger::Request;
use baton_store::sprint_file::SprintDoc;

/// Checks the sprint file after an agent step; returns why the step must fail, if it must.
pub fn check(run: &RunCtx) -> Result<Option<String>, EngineError> {
    let now = run.clock.now();
    run.with_ledger(|l| {
        if !l.doc().changed_on_disk() {
            return Ok(None);
        }
        let path = l.doc().path().to_path_buf();
        let shown = run.rel(&path);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let on_disk = match SprintDoc::parse(&path, text) {
            Ok(d) => d,
            Err(e) => {
                // Not even a sprint file any more: put baton's last version back.
                baton_store::atomic::replace(&path, l.doc().text().as_bytes())
                    .map_err(|err| EngineError::file(&path, err))?;
                l.refresh()?;
                return Ok(Some(format!(
                    "`{shown}` was rewritten outside baton's tools and no longer parsed ({e}); baton's last version was restored"
                )));
            }
        };
        let mut edits = Vec::new();
        for entry in l.doc().sprint().unique() {
            let key = entry.key.as_str();
            let before = entry.effective();
            let after = on_disk.sprint().get(key).map(|e| e.effective());
            if after.as_ref() == Some(&before) {
                continue;
            }
            // A journaled move (a sprint tool, `baton set` from another process) is baton's own.
            let last = l.journal().events(&EventFilter {
                key: Some(key.to_owned()),
                limit: Some(1),
                ..EventFilter::default()
            })?;
            let journaled = after
                .as_ref()
                .is_some_and(|a| last.last().is_some_and(|e| e.to == a.as_str()));
            if !journaled {
                edits.push((key.to_owned(), before, after));
            }
        }
        if edits.is_empty() {
            l.refresh()?;
            return Ok(None);
        }
        if edits.iter().any(|(_, _, after)| after.is_none()) {
            // A key was removed: no transition can bring it back; restore baton's version.
            baton_store::atomic::replace(&path, l.doc().text().as_bytes())
                .map_err(|err| EngineError::file(&path, err))?;
        }
        l.refresh()?;
        let mut said = Vec::new();
        for (key, before, after) in &edits {
            let shown_after = after
                .as_ref()
                .map_or("(removed)".to_owned(), |a| a.as_str().to_owned());
            said.push(format!("`{key}`: {before} → {shown_after}"));
            let (StatusValue::Known(to), Some(_)) = (before, after) else {
                continue;
            };
            let req = Request {
                key: key.clone(),
                to: *to,
                actor: Actor::Orchestrator,
                reason: format!(
                    "reverted: `{shown}` was edited outside baton's tools ({before} → {shown_after})"
                ),
                note: None,
                force: true,
                run_id: Some(run.id.clone()),
            };
            l.transition(&req, &now)?;
        }
        Ok(Some(format!(
            "`{shown}` was edited outside baton's tools ({}); the edit was reverted",
            said.join(", ")
        )))
    })
}
