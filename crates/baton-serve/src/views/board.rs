//! The board: one lane per epic, one column per BMad story status, a card per story with its
//! extended state, its place in flight and its open escalation; and the budget meter.

use super::{ViewError, journal_of};
use crate::{Host, InFlight, Journal, Project};
use baton_core::key::KeyKind;
use baton_core::status::Status;
use baton_store::journal::EscalationRecord;
use baton_store::journal::board::Spend;
use baton_store::sprint_file::SprintDoc;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The board's columns: BMad's story statuses, in their order.
pub const COLUMNS: [&str; 5] = ["backlog", "ready-for-dev", "in-progress", "review", "done"];

/// A story on the board.
#[derive(Debug, Clone, Serialize)]
pub struct Card {
    /// Its key.
    pub key: String,
    /// The status baton acts on (an extended state when there is one).
    pub status: String,
    /// The column it shows in.
    pub column: &'static str,
    /// A badge: the extended state, or a status baton does not manage.
    pub badge: Option<String>,
    /// Where it stands when it is in flight in its own worktree.
    pub in_flight: Option<String>,
    /// Its open escalation.
    pub escalation: Option<i64>,
}

/// One column of one epic.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// Its status.
    pub status: &'static str,
    /// Its stories, in file order.
    pub cards: Vec<Card>,
}

/// One epic's row of the board.
#[derive(Debug, Clone, Serialize)]
pub struct Lane {
    /// The epic (`1`, `14c`, …).
    pub epic: String,
    /// The epic's status.
    pub status: String,
    /// Its retrospective's status, if the file lists one.
    pub retrospective: Option<String>,
    /// The columns.
    pub columns: Vec<Column>,
}

/// Spend against the budget.
#[derive(Debug, Clone, Serialize)]
pub struct Budget {
    /// The run measured (the newest).
    pub run: Option<String>,
    /// What it spent.
    pub spent: Spend,
    /// `warn_usd`.
    pub warn_usd: Option<f64>,
    /// `hard_usd`.
    pub hard_usd: Option<f64>,
    /// Percent of the hard limit (else of the warning), for the meter; `None` without limits.
    pub percent: Option<f64>,
    /// `ok`, `warn` or `over`.
    pub level: &'static str,
}

/// The board page.
#[derive(Debug, Clone, Serialize)]
pub struct Board {
    /// The sprint file's `project`.
    pub project: Option<String>,
    /// The journal number the page was built at (live updates follow from there).
    pub seq: i64,
    /// The column names.
    pub columns: [&'static str; 5],
    /// One lane per epic, in file order.
    pub lanes: Vec<Lane>,
    /// Stories in flight.
    pub in_flight: Vec<InFlight>,
    /// Open escalations.
    pub open_escalations: usize,
    /// The budget meter.
    pub budget: Budget,
    /// How many stories.
    pub stories: usize,
    /// The column of every story status (`null`: the story keeps its column, as
    /// `needs-intervention` does), for the live script.
    pub status_columns: BTreeMap<&'static str, Option<&'static str>>,
}

/// The column a status shows in (`None`: not a story status).
pub fn column_of(status: Status) -> Option<&'static str> {
    let canonical = status.projection()?;
    COLUMNS.into_iter().find(|c| *c == canonical.as_str())
}

/// Builds the board.
pub fn board(project: &Project, host: &dyn Host) -> Result<Board, ViewError> {
    let doc = SprintDoc::load(&project.sprint_file)?;
    let journal = journal_of(host);
    let seq = journal
        .as_ref()
        .and_then(|j| j.last_event_seq().ok())
        .unwrap_or(0);
    let open: Vec<EscalationRecord> = journal
        .as_ref()
        .and_then(|j| j.escalations(true).ok())
        .unwrap_or_default();
    let escalated: HashMap<&str, i64> = open
        .iter()
        .filter_map(|e| Some((e.key.as_deref()?, e.id)))
        .collect();
    let in_flight = host.in_flight();
    let flying: HashMap<&str, &InFlight> = in_flight.iter().map(|f| (f.key.as_str(), f)).collect();
    let mut lanes: Vec<Lane> = Vec::new();
    let mut lane_of: HashMap<String, usize> = HashMap::new();
    let mut stories = 0;
    let sprint = doc.sprint();
    for entry in sprint.unique() {
        let kind = entry.key.kind();
        let Some(epic) = kind.epic() else { continue };
        let epic = epic.to_string();
        let index = *lane_of.entry(epic.clone()).or_insert_with(|| {
            lanes.push(Lane {
                epic: epic.clone(),
                status: "backlog".to_owned(),
                retrospective: None,
                columns: COLUMNS
                    .iter()
                    .map(|c| Column {
                        status: c,
                        cards: Vec::new(),
                    })
                    .collect(),
            });
            lanes.len() - 1
        });
        let lane = &mut lanes[index];
        let status = entry.effective().as_str().to_owned();
        match kind {
            KeyKind::Epic { .. } => lane.status = status,
            KeyKind::Retrospective { .. } => lane.retrospective = Some(status),
            KeyKind::Story { .. } => {
                stories += 1;
                let known = Status::parse(&status);
                let column = known
                    .and_then(column_of)
                    .or_else(|| entry.value.known().and_then(column_of))
                    .unwrap_or("backlog");
                let badge = match known {
                    Some(s) if !s.is_extended() && column_of(s) == Some(column) => None,
                    _ => Some(status.clone()),
                };
                let key = entry.key.as_str();
                let card = Card {
                    key: key.to_owned(),
                    status,
                    column,
                    badge,
                    in_flight: flying
                        .get(key)
                        .map(|f| f.phase.clone().unwrap_or_else(|| "working".to_owned())),
                    escalation: escalated.get(key).copied(),
                };
                if let Some(col) = lane.columns.iter_mut().find(|c| c.status == column) {
                    col.cards.push(card);
                }
            }
            KeyKind::Opaque | KeyKind::Malformed => {}
        }
    }
    let budget = budget(project, journal.as_deref());
    Ok(Board {
        project: sprint
            .fields
            .iter()
            .find(|f| f.name == "project")
            .and_then(|f| f.value.clone()),
        seq,
        columns: COLUMNS,
        lanes,
        in_flight,
        open_escalations: open.len(),
        budget,
        stories,
        status_columns: Status::ALL
            .into_iter()
            .map(|s| (s.as_str(), column_of(s)))
            .collect(),
    })
}

/// The newest run's spend against `warn_usd` and `hard_usd`.
pub fn budget(project: &Project, journal: Option<&dyn Journal>) -> Budget {
    let run = journal
        .and_then(|j| j.recent_runs(1).ok())
        .and_then(|r| r.into_iter().next());
    let spent = match (journal, &run) {
        (Some(j), Some(r)) => j.run_spend(&r.id).unwrap_or_default(),
        _ => Spend::default(),
    };
    let limit = project.hard_usd.or(project.warn_usd).filter(|l| *l > 0.0);
    let percent = limit.map(|l| (spent.cost_usd / l * 100.0).clamp(0.0, 100.0));
    let level = if project.hard_usd.is_some_and(|h| spent.cost_usd >= h) {
        "over"
    } else if project.warn_usd.is_some_and(|w| spent.cost_usd >= w) {
        "warn"
    } else {
        "ok"
    };
    Budget {
        run: run.map(|r| r.id),
        spent,
        warn_usd: project.warn_usd,
        hard_usd: project.hard_usd,
        percent,
        level,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::status::Status;

    #[test]
    fn extended_states_show_in_their_canonical_column() {
        assert_eq!(column_of(Status::StoryDocReview), Some("ready-for-dev"));
        assert_eq!(column_of(Status::E2eVerify), Some("review"));
        assert_eq!(column_of(Status::NeedsIntervention), None);
        assert_eq!(column_of(Status::Done), Some("done"));
    }
}
