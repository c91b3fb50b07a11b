//! What each page shows, as plain serialisable values: the same value renders the HTML page and
//! is its JSON twin. Built from the sprint file, the story files, the journal and the planning
//! folder on every request, so the board never holds a second copy of the state. One module per
//! page; the helpers that read the engine's events are here.

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

/// The story an event's scope names (a unit's or an agent's), if any.
pub fn scope_story(scope: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(scope).ok()?;
    let unit = v.get("unit").or_else(|| v.get("agent")?.get("unit"))?;
    unit.get("story")?.as_str().map(str::to_owned)
}

fn scope_agent(scope: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(scope).ok()?;
    v.get("agent")?.get("agent")?.as_str().map(str::to_owned)
}

/// The spend a `usage` event's body reports (its `input_tokens` include the cache's, as the
/// token meter counts them; an event written before the cache fields existed has none).
fn spend_of(body: &serde_json::Value) -> Spend {
    let count = |k: &str| body[k].as_u64().unwrap_or(0);
    Spend {
        input_tokens: count("input_tokens"),
        cache_read_tokens: count("cache_read_tokens"),
        cache_write_tokens: count("cache_write_tokens"),
        output_tokens: count("output_tokens"),
        cost_usd: body["cost_usd"].as_f64().unwrap_or(0.0),
    }
}

/// A `usage` event's agent and spend.
fn usage_of(e: &StoredEvent) -> Option<(String, Spend, &str)> {
    let body: serde_json::Value = serde_json::from_str(&e.body).ok()?;
    if body["event"] != "usage" {
        return None;
    }
    Some((
        body["agent"].as_str().unwrap_or_default().to_owned(),
        spend_of(&body),
        e.at.as_str(),
    ))
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
