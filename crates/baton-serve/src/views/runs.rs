//! The runs page: the newest runs with their spend, the agents of the newest one as its events
//! tell them, and the budget meter.

use super::board::{Budget, budget};
use super::{ViewError, journal_of, recent_events};
use crate::{Host, Project};
use baton_protocol::EventBody;
use baton_store::journal::board::Spend;
use baton_store::journal::{RunRecord, StoredEvent};
use serde::Serialize;

/// One agent's run within an engine run.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRun {
    /// The story it works for.
    pub key: Option<String>,
    /// The agent (its role).
    pub agent: String,
    /// Its worker: the provider part of the model string (`script`, `claude-code`, …).
    pub backend: String,
    /// The model.
    pub model: String,
    /// Turns taken.
    pub turns: u64,
    /// Its tokens (`input_tokens` with the cache reads and writes in them) and dollars.
    #[serde(flatten)]
    pub spend: Spend,
    /// Started at.
    pub started_at: String,
    /// Finished as (`None`: still running).
    pub finished: Option<String>,
    /// Seconds from its start to its end (`None` while it runs: the page counts them live).
    pub elapsed_secs: Option<u64>,
}

/// A run with its spend.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The run.
    #[serde(flatten)]
    pub run: RunRecord,
    /// What it spent.
    pub spend: Spend,
}

/// The runs page.
#[derive(Debug, Clone, Serialize)]
pub struct Runs {
    /// The journal number the page was built at.
    pub seq: i64,
    /// The newest runs, newest first.
    pub runs: Vec<RunView>,
    /// The agents of the newest run, in start order.
    pub agents: Vec<AgentRun>,
    /// The budget meter of the newest run.
    pub budget: Budget,
}

/// Builds the runs page.
pub fn runs(project: &Project, host: &dyn Host) -> Result<Runs, ViewError> {
    let Some(j) = journal_of(host) else {
        return Ok(Runs {
            seq: 0,
            runs: Vec::new(),
            agents: Vec::new(),
            budget: budget(project, None),
        });
    };
    let records = j.recent_runs(20)?;
    let mut runs = Vec::with_capacity(records.len());
    for run in records {
        let spend = j.run_spend(&run.id)?;
        runs.push(RunView { run, spend });
    }
    let agents = match runs.first() {
        Some(newest) => agent_runs(&recent_events(j.as_ref())?, &newest.run.id),
        None => Vec::new(),
    };
    Ok(Runs {
        seq: j.last_event_seq()?,
        runs,
        agents,
        budget: budget(project, Some(j.as_ref())),
    })
}

/// Whole seconds from `start` to `end` (RFC 3339), if both read.
fn seconds_between(start: &str, end: &str) -> Option<u64> {
    let start: jiff::Timestamp = start.parse().ok()?;
    let end: jiff::Timestamp = end.parse().ok()?;
    u64::try_from(end.as_second() - start.as_second()).ok()
}

/// The agents of run `run` as its events tell them.
pub fn agent_runs(events: &[StoredEvent], run: &str) -> Vec<AgentRun> {
    let mut out: Vec<AgentRun> = Vec::new();
    for e in events
        .iter()
        .filter(|e| e.run_id == run)
        .filter_map(super::typed)
    {
        let key = e.scope.story().map(str::to_owned);
        if let EventBody::AgentStarted { agent, model } = &e.body {
            out.push(AgentRun {
                key,
                agent: agent.clone(),
                backend: model.split('/').next().unwrap_or_default().to_owned(),
                model: model.clone(),
                turns: 0,
                spend: Spend::default(),
                started_at: e.at.clone(),
                finished: None,
                elapsed_secs: None,
            });
            continue;
        }
        let agent = match &e.body {
            EventBody::Turn { agent, .. }
            | EventBody::Usage { agent, .. }
            | EventBody::AgentFinished { agent, .. } => agent,
            _ => continue,
        };
        let Some(a) = out
            .iter_mut()
            .rev()
            .find(|a| &a.agent == agent && a.key == key)
        else {
            continue;
        };
        match &e.body {
            EventBody::Turn { turn, .. } => a.turns = u64::from(*turn),
            EventBody::AgentFinished { status, .. } => {
                a.finished = Some(status.clone());
                a.elapsed_secs = seconds_between(&a.started_at, &e.at);
            }
            body => {
                if let Some((_, spend)) = super::spend_of(body) {
                    a.spend.add(spend);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_runs_sum_their_usage() {
        let ev = |seq, body: &str| StoredEvent {
            seq,
            run_id: "r".into(),
            at: "2026-01-01T00:00:00Z".into(),
            scope: r#"{"agent":{"unit":{"story":"1-1-a"},"agent":"developer"}}"#.into(),
            body: body.into(),
        };
        let runs = agent_runs(
            &[
                ev(
                    1,
                    r#"{"event":"agent_started","agent":"developer","model":"script/demo"}"#,
                ),
                ev(2, r#"{"event":"turn","agent":"developer","turn":2}"#),
                ev(
                    3,
                    r#"{"event":"usage","agent":"developer","input_tokens":10,"cache_read_tokens":6,"cache_write_tokens":2,"output_tokens":3,"cost_usd":0.5}"#,
                ),
                ev(
                    4,
                    r#"{"event":"usage","agent":"developer","input_tokens":5,"output_tokens":1,"cost_usd":0.25}"#,
                ),
            ],
            "r",
        );
        assert_eq!(runs.len(), 1);
        let a = &runs[0];
        assert_eq!(
            (
                a.backend.as_str(),
                a.turns,
                a.spend.input_tokens,
                a.spend.cost_usd
            ),
            ("script", 2, 15, 0.75)
        );
        // The second event, written before the cache fields existed, adds no cache tokens.
        assert_eq!(
            (a.spend.cache_read_tokens, a.spend.cache_write_tokens),
            (6, 2)
        );
        assert_eq!(a.key.as_deref(), Some("1-1-a"));
        assert!(a.finished.is_none() && a.elapsed_secs.is_none());
        let done = agent_runs(
            &[
                ev(
                    1,
                    r#"{"event":"agent_started","agent":"developer","model":"script/demo"}"#,
                ),
                StoredEvent {
                    at: "2026-01-01T00:01:05Z".into(),
                    ..ev(
                        2,
                        r#"{"event":"agent_finished","agent":"developer","status":"completed"}"#,
                    )
                },
            ],
            "r",
        );
        assert_eq!(done[0].finished.as_deref(), Some("completed"));
        assert_eq!(done[0].elapsed_secs, Some(65));
    }
}
