//! What each page shows, as plain serialisable values: the same value renders the HTML page and
//! is its JSON twin. Built from the sprint file, the story files, the journal and the planning
//! folder on every request, so the board never holds a second copy of the state. One module per
//! page; the one reader of the engine's stored events ([`typed`]) is here, and every page reads
//! them as the protocol's typed events (`baton-protocol`), never by field name.

mod board;
mod escalations;
mod plan;
mod runs;
mod story;

pub use board::{Board, Budget, COLUMNS, Card, Column, Lane, board, budget, column_of};
pub use escalations::{EscalationCard, Escalations, OptionView, escalations};
pub use plan::{FindingLink, Plan, PlanDoc, PlanLine, PlanText, plan, plan_doc};
pub use runs::{AgentRun, RunView, Runs, agent_runs, runs};
pub use story::{Activity, FindingView, StepView, Story, activity_of, review_findings, story};

use crate::{Host, Journal};
use baton_protocol::{Event, EventBody, Scope};
use baton_store::journal::StoredEvent;
use baton_store::journal::board::Spend;
use std::path::Path;

/// How many of the newest journal events a page reads for recent activity.
const RECENT_EVENTS: usize = 2_000;

/// A page could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// Nothing by that name.
    #[error("{0}")]
    NotFound(String),
    /// The sprint file could not be read.
    #[error(transparent)]
    Sprint(#[from] baton_store::sprint_file::LoadError),
    /// The journal could not be read.
    #[error(transparent)]
    Journal(#[from] baton_store::journal::JournalError),
}

/// Whether `path` is a file inside `dir` once links are followed: the board reads nothing a link
/// leads it to outside the folder it was given.
fn inside(path: &Path, dir: &Path) -> bool {
    std::fs::canonicalize(path)
        .ok()
        .zip(std::fs::canonicalize(dir).ok())
        .is_some_and(|(p, d)| p.starts_with(d))
}

fn journal_of(host: &dyn Host) -> Option<Box<dyn Journal>> {
    host.journal().ok().flatten()
}

fn recent_events(j: &dyn Journal) -> Result<Vec<StoredEvent>, ViewError> {
    let last = j.last_event_seq()?;
    let from = last.saturating_sub(i64::try_from(RECENT_EVENTS).unwrap_or(i64::MAX));
    Ok(j.events_after(from, RECENT_EVENTS)?)
}

/// A journal event as the protocol's typed [`Event`]: the one place the board reads the stored
/// JSON of an event. `None` for a row this build cannot read (hand-edited, or an event kind a
/// newer baton wrote): such a row is left out of the pages, never guessed at.
pub fn typed(e: &StoredEvent) -> Option<Event> {
    Some(Event {
        run: e.run_id.clone(),
        seq: u64::try_from(e.seq).ok()?,
        at: e.at.clone(),
        scope: serde_json::from_str::<Scope>(&e.scope).ok()?,
        body: serde_json::from_str::<EventBody>(&e.body).ok()?,
    })
}

/// The story a stored scope names (a unit's or an agent's), if any.
pub fn scope_story(scope: &str) -> Option<String> {
    serde_json::from_str::<Scope>(scope)
        .ok()?
        .story()
        .map(str::to_owned)
}

/// The spend of a `usage` event (its `input_tokens` include the cache's, as the token meter
/// counts them; an event written before the cache fields existed has none); `None` for any
/// other event.
fn spend_of(body: &EventBody) -> Option<(&str, Spend)> {
    match body {
        EventBody::Usage {
            agent,
            input_tokens,
            cache_read_tokens,
            cache_write_tokens,
            output_tokens,
            cost_usd,
            ..
        } => Some((
            agent.as_str(),
            Spend {
                input_tokens: *input_tokens,
                cache_read_tokens: *cache_read_tokens,
                cache_write_tokens: *cache_write_tokens,
                output_tokens: *output_tokens,
                cost_usd: *cost_usd,
            },
        )),
        _ => None,
    }
}

/// A `usage` event's agent and spend.
fn usage_of(e: &Event) -> Option<(String, Spend)> {
    spend_of(&e.body).map(|(agent, spend)| (agent.to_owned(), spend))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_out_of_the_folder_is_not_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("stories");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(dir.path().join("secret.md"), "x").unwrap();
        std::fs::write(folder.join("1-1-a.md"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.md"), folder.join("1-2-b.md")).unwrap();
        assert!(inside(&folder.join("1-1-a.md"), &folder));
        assert!(!inside(&folder.join("1-2-b.md"), &folder));
        assert!(!inside(&folder.join("missing.md"), &folder));
    }

    #[test]
    fn scopes_name_their_story() {
        assert_eq!(
            scope_story(r#"{"unit":{"story":"1-1-a"}}"#).as_deref(),
            Some("1-1-a")
        );
        assert_eq!(
            scope_story(r#"{"agent":{"unit":{"story":"1-1-a"},"agent":"developer"}}"#).as_deref(),
            Some("1-1-a")
        );
        assert_eq!(scope_story("\"run\""), None);
    }
}
