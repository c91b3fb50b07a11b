//! What each page shows, as plain serialisable values: the same value renders the HTML page and
//! is its JSON twin. Built from the sprint file, the story files, the journal and the planning
//! folder on every request, so the board never holds a second copy of the state.

use crate::{Host, InFlight, Journal, Project, StageCommit};
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::key::KeyKind;
use baton_core::status::Status;
use baton_store::journal::board::Spend;
use baton_store::journal::{EscalationRecord, RunRecord, StepRecord, StoredEvent};
use baton_store::sprint_file::SprintDoc;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The board's columns: BMad's story statuses, in their order.
pub const COLUMNS: [&str; 5] = ["backlog", "ready-for-dev", "in-progress", "review", "done"];

/// How many of the newest journal events a page reads for recent activity.
const RECENT_EVENTS: usize = 2_000;
/// How many of a story's newest events its page reads.
const STORY_EVENTS: usize = 20_000;

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

fn journal_of(host: &dyn Host) -> Option<Box<dyn Journal>> {
    host.journal().ok().flatten()
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

/// An escalation as a card: its options with their ids, the recommended one first.
#[derive(Debug, Clone, Serialize)]
pub struct EscalationCard {
    /// Id.
    pub id: i64,
    /// The story (or task).
    pub key: Option<String>,
    /// What raised it.
    pub kind: String,
    /// Title.
    pub title: String,
    /// What was found.
    pub finding: String,
    /// The options, in order.
    pub options: Vec<OptionView>,
    /// The recommended option's id: baton lists the choice that keeps the work going first.
    pub recommended: Option<String>,
    /// The answer's label, once answered.
    pub answer: Option<String>,
    /// When it was raised.
    pub created_at: String,
    /// The run that raised it.
    pub run_id: Option<String>,
}

/// One option of an escalation.
#[derive(Debug, Clone, Serialize)]
pub struct OptionView {
    /// 1-based number (what `baton answer ID N` takes).
    pub number: usize,
    /// Stable id (what the journal stores).
    pub id: String,
    /// Label.
    pub label: String,
}

impl EscalationCard {
    /// The card of a journaled escalation.
    pub fn of(e: &EscalationRecord) -> EscalationCard {
        let kind = EscalationKind::parse(&e.kind);
        let options: Vec<OptionView> = e
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let c = Choice::from_stored(kind, o);
                OptionView {
                    number: i + 1,
                    id: o.clone(),
                    label: c.label().to_owned(),
                }
            })
            .collect();
        EscalationCard {
            id: e.id,
            key: e.key.clone(),
            kind: e.kind.clone(),
            title: e.title.clone(),
            finding: e.finding.clone(),
            recommended: options.first().map(|o| o.id.clone()),
            options,
            answer: e.answer.as_deref().map(|a| Choice::label_of(kind, a)),
            created_at: e.created_at.clone(),
            run_id: e.run_id.clone(),
        }
    }
}

/// The escalations page.
#[derive(Debug, Clone, Serialize)]
pub struct Escalations {
    /// The journal number the page was built at.
    pub seq: i64,
    /// Open ones, oldest first.
    pub open: Vec<EscalationCard>,
    /// Answered ones, newest first (at most 20).
    pub answered: Vec<EscalationCard>,
}

/// Builds the escalations page.
pub fn escalations(host: &dyn Host) -> Result<Escalations, ViewError> {
    let Some(j) = journal_of(host) else {
        return Ok(Escalations {
            seq: 0,
            open: Vec::new(),
            answered: Vec::new(),
        });
    };
    let all = j.escalations(false)?;
    let open = all
        .iter()
        .filter(|e| e.answer.is_none())
        .map(EscalationCard::of)
        .collect();
    let mut answered: Vec<EscalationCard> = all
        .iter()
        .filter(|e| e.answer.is_some())
        .map(EscalationCard::of)
        .collect();
    answered.reverse();
    answered.truncate(20);
    Ok(Escalations {
        seq: j.last_event_seq()?,
        open,
        answered,
    })
}

/// One step of a story.
#[derive(Debug, Clone, Serialize)]
pub struct StepView {
    /// Journal id.
    pub id: i64,
    /// The run.
    pub run: String,
    /// The stage (`create`, `dev`, `review`, `fix`, `merge`, …).
    pub stage: String,
    /// Attempt.
    pub attempt: u32,
    /// The outcome (`None`: running, or cut off).
    pub outcome: Option<String>,
    /// Start.
    pub started_at: String,
    /// End.
    pub ended_at: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// The model it ran on (`provider/model`; the provider names the worker).
    pub model: Option<String>,
    /// Why it failed, the failing tests' output, or the review's summary.
    pub output: Option<String>,
    /// Findings a review reported, and how many were blocking.
    pub findings: Option<usize>,
    /// Blocking findings.
    pub blocking: Option<usize>,
    /// What it spent.
    pub spend: Spend,
}

/// A finding written into the story's `### Review Findings`.
#[derive(Debug, Clone, Serialize)]
pub struct FindingView {
    /// The review round.
    pub round: String,
    /// `blocking` (critical or high: to patch) or `deferred` (low).
    pub severity: &'static str,
    /// The finding, with its location.
    pub text: String,
}

/// One line of an agent's activity.
#[derive(Debug, Clone, Serialize)]
pub struct Activity {
    /// Journal number.
    pub seq: i64,
    /// Time.
    pub at: String,
    /// The agent, when an agent did it.
    pub agent: Option<String>,
    /// The event's name.
    pub event: String,
    /// One line.
    pub text: String,
}

/// The story page.
#[derive(Debug, Clone, Serialize)]
pub struct Story {
    /// The journal number the page was built at.
    pub seq: i64,
    /// The key.
    pub key: String,
    /// The epic.
    pub epic: Option<String>,
    /// Its status.
    pub status: String,
    /// Its steps, in time order.
    pub steps: Vec<StepView>,
    /// Its escalations.
    pub escalations: Vec<EscalationCard>,
    /// The review findings of its story file, blocking first.
    pub findings: Vec<FindingView>,
    /// Its stage commits and their diffs.
    pub commits: Vec<StageCommit>,
    /// What it cost.
    pub spend: Spend,
    /// Its recent agent activity (the live transcript continues it).
    pub activity: Vec<Activity>,
    /// In flight, where.
    pub in_flight: Option<InFlight>,
}

/// Whether `key` may name a file in the stories folder: a plain file name.
fn safe_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 200
        && !key.starts_with('.')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// Builds the story page for `key` (a story of the sprint file).
pub fn story(project: &Project, host: &dyn Host, key: &str) -> Result<Story, ViewError> {
    let doc = SprintDoc::load(&project.sprint_file)?;
    let entry = doc
        .sprint()
        .get(key)
        .filter(|e| matches!(e.key.kind(), KeyKind::Story { .. }) && safe_key(key))
        .ok_or_else(|| ViewError::NotFound(format!("no story `{key}` in the sprint file")))?;
    let status = entry.effective().as_str().to_owned();
    let epic = entry.key.kind().epic().map(|e| e.to_string());
    let journal = journal_of(host);
    let (steps, escalations, seq, events) = match journal.as_deref() {
        Some(j) => (
            j.steps_for_key(key)?,
            j.escalations_for_key(key, false)?,
            j.last_event_seq()?,
            j.story_events(key, STORY_EVENTS)?,
        ),
        None => Default::default(),
    };
    let activity: Vec<Activity> = events.iter().filter_map(activity_of).collect();
    let models = models_by_agent(&events);
    let steps: Vec<StepView> = steps
        .iter()
        .map(|s| step_view(s, &events, &models))
        .collect();
    let spend = events
        .iter()
        .filter_map(usage_of)
        .fold(Spend::default(), |a, (_, u, _)| add(a, u));
    let findings = review_findings(&project.stories_dir.join(format!("{key}.md")));
    Ok(Story {
        seq,
        key: key.to_owned(),
        epic,
        status,
        steps,
        escalations: escalations.iter().map(EscalationCard::of).collect(),
        findings,
        commits: host.stage_commits(key),
        spend,
        activity,
        in_flight: host.in_flight().into_iter().find(|f| f.key == key),
    })
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

/// The model each agent last started on.
fn models_by_agent(events: &[StoredEvent]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in events {
        let Ok(body) = serde_json::from_str::<serde_json::Value>(&e.body) else {
            continue;
        };
        if body["event"] == "agent_started"
            && let (Some(agent), Some(model)) = (body["agent"].as_str(), body["model"].as_str())
        {
            out.insert(agent.to_owned(), model.to_owned());
        }
    }
    out
}

/// A `usage` event's agent and spend.
fn usage_of(e: &StoredEvent) -> Option<(String, Spend, &str)> {
    let body: serde_json::Value = serde_json::from_str(&e.body).ok()?;
    if body["event"] != "usage" {
        return None;
    }
    Some((
        body["agent"].as_str().unwrap_or_default().to_owned(),
        Spend {
            input_tokens: body["input_tokens"].as_u64().unwrap_or(0),
            output_tokens: body["output_tokens"].as_u64().unwrap_or(0),
            cost_usd: body["cost_usd"].as_f64().unwrap_or(0.0),
        },
        e.at.as_str(),
    ))
}

fn add(a: Spend, b: Spend) -> Spend {
    Spend {
        input_tokens: a.input_tokens + b.input_tokens,
        output_tokens: a.output_tokens + b.output_tokens,
        cost_usd: a.cost_usd + b.cost_usd,
    }
}

/// An event as one line of activity; `None` for events not worth a line.
pub fn activity_of(e: &StoredEvent) -> Option<Activity> {
    let body: serde_json::Value = serde_json::from_str(&e.body).ok()?;
    let event = body["event"].as_str()?.to_owned();
    let s = |k: &str| body[k].as_str().unwrap_or_default().to_owned();
    let text = match event.as_str() {
        "agent_started" => format!("started on {}", s("model")),
        "turn" => format!("turn {}", body["turn"]),
        "tool_call" => format!("calls {}", s("tool")),
        "refused" => format!("refused {}: {}", s("tool"), s("reason")),
        "usage" => format!(
            "{} in / {} out tokens, ${:.4}",
            body["input_tokens"],
            body["output_tokens"],
            body["cost_usd"].as_f64().unwrap_or(0.0)
        ),
        "agent_finished" => format!("finished: {}", s("status")),
        "stage" => format!(
            "stage {} (round {}) by {}",
            s("stage"),
            body["round"],
            s("agent")
        ),
        "transition" => format!("{} → {}", s("from"), s("to")),
        "tests" => format!(
            "tests {}",
            if body["passed"] == true {
                "passed"
            } else {
                "failed"
            }
        ),
        "commit" => format!("commit {}", s("message")),
        "escalation" => format!(
            "escalation #{}: {}",
            body["escalation"]["id"],
            body["escalation"]["title"].as_str().unwrap_or_default()
        ),
        "budget_warning" => format!("budget: {}", s("message")),
        "story_finished" => format!("finished as {}", s("status")),
        "merge" => format!("merge: {} {}", s("phase"), s("detail")),
        _ => return None,
    };
    Some(Activity {
        seq: e.seq,
        at: e.at.clone(),
        agent: scope_agent(&e.scope).or_else(|| body["agent"].as_str().map(str::to_owned)),
        event,
        text,
    })
}

/// A step with what its agent spent while it ran (the usage events of that agent between the
/// step's start and end).
fn step_view(
    s: &StepRecord,
    events: &[StoredEvent],
    models: &BTreeMap<String, String>,
) -> StepView {
    let detail: serde_json::Value = s
        .detail
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    let agent = detail["agent"].as_str().map(str::to_owned);
    let count = |k: &str| detail[k].as_u64().and_then(|n| usize::try_from(n).ok());
    let during =
        |at: &str| at >= s.started_at.as_str() && s.ended_at.as_deref().is_none_or(|end| at <= end);
    let spend = events
        .iter()
        .filter(|e| e.run_id == s.run_id && during(&e.at))
        .filter_map(usage_of)
        .filter(|(a, _, _)| agent.as_deref().is_none_or(|ours| ours == a))
        .fold(Spend::default(), |acc, (_, u, _)| add(acc, u));
    StepView {
        id: s.id,
        run: s.run_id.clone(),
        stage: s.stage.clone(),
        attempt: s.attempt,
        outcome: s.outcome.clone(),
        started_at: s.started_at.clone(),
        ended_at: s.ended_at.clone(),
        model: agent.as_ref().and_then(|a| models.get(a).cloned()),
        agent,
        output: detail["reason"].as_str().map(str::to_owned),
        findings: count("findings"),
        blocking: count("blocking"),
        spend,
    }
}

/// The findings of a story file's `### Review Findings` section (BMad's dialect, as baton
/// writes it: `- [ ] [Review][Patch] …` to patch, `- [x] [Review][Defer] …` deferred).
pub fn review_findings(path: &Path) -> Vec<FindingView> {
    let Ok(text) = baton_store::bounded::read_to_string(path, baton_store::bounded::DOCUMENT_LIMIT)
    else {
        return Vec::new();
    };
    let Some(at) = text.find("### Review Findings") else {
        return Vec::new();
    };
    let mut round = String::new();
    let mut out = Vec::new();
    for line in text[at..].lines().skip(1) {
        let line = line.trim();
        if line.starts_with('#') {
            break;
        }
        if let Some(r) = line.strip_prefix("Round ") {
            round = r.split(':').next().unwrap_or_default().to_owned();
        } else if let Some(f) = line.strip_prefix("- [ ] [Review][Patch] ") {
            out.push(FindingView {
                round: round.clone(),
                severity: "blocking",
                text: f.to_owned(),
            });
        } else if let Some(f) = line.strip_prefix("- [x] [Review][Defer] ") {
            out.push(FindingView {
                round: round.clone(),
                severity: "deferred",
                text: f.trim_end_matches(" — deferred").to_owned(),
            });
        }
    }
    out.sort_by_key(|f| f.severity != "blocking");
    out
}

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
    /// Tokens in.
    pub input_tokens: u64,
    /// Tokens out.
    pub output_tokens: u64,
    /// Dollars.
    pub cost_usd: f64,
    /// Started at.
    pub started_at: String,
    /// Finished as (`None`: still running).
    pub finished: Option<String>,
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

/// The agents of run `run` as its events tell them.
pub fn agent_runs(events: &[StoredEvent], run: &str) -> Vec<AgentRun> {
    let mut out: Vec<AgentRun> = Vec::new();
    for e in events.iter().filter(|e| e.run_id == run) {
        let Ok(body) = serde_json::from_str::<serde_json::Value>(&e.body) else {
            continue;
        };
        let Some(agent) = body["agent"].as_str() else {
            continue;
        };
        let key = scope_story(&e.scope);
        match body["event"].as_str() {
            Some("agent_started") => {
                let model = body["model"].as_str().unwrap_or_default().to_owned();
                out.push(AgentRun {
                    key,
                    agent: agent.to_owned(),
                    backend: model.split('/').next().unwrap_or_default().to_owned(),
                    model,
                    turns: 0,
                    input_tokens: 0,
                    output_tokens: 0,
                    cost_usd: 0.0,
                    started_at: e.at.clone(),
                    finished: None,
                });
            }
            Some(name) => {
                let Some(a) = out
                    .iter_mut()
                    .rev()
                    .find(|a| a.agent == agent && a.key == key)
                else {
                    continue;
                };
                match name {
                    "turn" => a.turns = body["turn"].as_u64().unwrap_or(a.turns),
                    "usage" => {
                        a.input_tokens += body["input_tokens"].as_u64().unwrap_or(0);
                        a.output_tokens += body["output_tokens"].as_u64().unwrap_or(0);
                        a.cost_usd += body["cost_usd"].as_f64().unwrap_or(0.0);
                    }
                    "agent_finished" => a.finished = body["status"].as_str().map(str::to_owned),
                    _ => {}
                }
            }
            None => {}
        }
    }
    out
}

/// A planning document the board may show, by its kind: the URL names the kind, never a path.
#[derive(Debug, Clone, Serialize)]
pub struct PlanDoc {
    /// `brief`, `prd`, `architecture`, `epics`, `quick-spec`.
    pub kind: &'static str,
    /// Its path, relative to the project.
    pub file: String,
    /// Findings in it.
    pub findings: usize,
}

/// The plan page.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The planning folder, relative to the project.
    pub folder: String,
    /// Its documents.
    pub docs: Vec<PlanDoc>,
    /// `baton check`'s findings (`None`: no epics document to check).
    pub findings: Option<Vec<FindingLink>>,
}

/// A `baton check` finding with the page and line it points at.
#[derive(Debug, Clone, Serialize)]
pub struct FindingLink {
    /// The finding.
    #[serde(flatten)]
    pub finding: baton_core::plan::check::Finding,
    /// The document kind it is in, when it is one the board shows.
    pub doc: Option<&'static str>,
}

fn plan_files(project: &Project) -> Vec<(&'static str, PathBuf)> {
    let found = baton_store::planning::find(&project.planning_dir);
    [
        ("brief", found.brief),
        ("prd", found.prd),
        ("architecture", found.architecture),
        ("epics", found.epics),
        ("quick-spec", found.quick_spec),
    ]
    .into_iter()
    .filter_map(|(k, p)| Some((k, p?)))
    .collect()
}

/// Builds the plan page.
pub fn plan(project: &Project) -> Plan {
    let root = &project.root;
    let files = plan_files(project);
    let findings = baton_store::planning::load(&project.planning_dir, root)
        .ok()
        .and_then(|p| p.check());
    let shown = |p: &Path| baton_store::planning::shown(root, p);
    let links: Option<Vec<FindingLink>> = findings.map(|fs| {
        fs.into_iter()
            .map(|f| FindingLink {
                doc: files
                    .iter()
                    .find(|(_, p)| shown(p) == f.file)
                    .map(|(k, _)| *k),
                finding: f,
            })
            .collect()
    });
    Plan {
        folder: shown(&project.planning_dir),
        docs: files
            .iter()
            .map(|(kind, p)| PlanDoc {
                kind,
                file: shown(p),
                findings: links
                    .iter()
                    .flatten()
                    .filter(|l| l.doc == Some(*kind))
                    .count(),
            })
            .collect(),
        findings: links,
    }
}

/// One planning document, line by line, with the findings on each line.
#[derive(Debug, Clone, Serialize)]
pub struct PlanText {
    /// The kind.
    pub kind: &'static str,
    /// Its path, relative to the project.
    pub file: String,
    /// Its lines.
    pub lines: Vec<PlanLine>,
}

/// A line of a planning document.
#[derive(Debug, Clone, Serialize)]
pub struct PlanLine {
    /// 1-based.
    pub number: usize,
    /// The text.
    pub text: String,
    /// Findings on it.
    pub findings: Vec<String>,
}

/// The planning document of `kind`, read from the planning folder only.
pub fn plan_doc(project: &Project, kind: &str) -> Result<PlanText, ViewError> {
    let plan = plan(project);
    let (kind, path) = plan_files(project)
        .into_iter()
        .find(|(k, _)| *k == kind)
        .ok_or_else(|| ViewError::NotFound(format!("no `{kind}` document in `{}`", plan.folder)))?;
    // Only a regular file inside the planning folder (no link leading elsewhere) is read.
    let inside = std::fs::canonicalize(&path)
        .ok()
        .zip(std::fs::canonicalize(&project.planning_dir).ok())
        .is_some_and(|(p, dir)| p.starts_with(dir));
    let text = inside
        .then(|| baton_store::bounded::read_to_string(&path, baton_store::bounded::DOCUMENT_LIMIT))
        .and_then(Result::ok)
        .ok_or_else(|| ViewError::NotFound(format!("cannot read the `{kind}` document")))?;
    let mut on_line: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for l in plan
        .findings
        .iter()
        .flatten()
        .filter(|l| l.doc == Some(kind))
    {
        on_line.entry(l.finding.line).or_default().push(format!(
            "{}: {}",
            l.finding.severity.as_str(),
            l.finding.message
        ));
    }
    Ok(PlanText {
        kind,
        file: baton_store::planning::shown(&project.root, &path),
        lines: text
            .lines()
            .enumerate()
            .map(|(i, t)| PlanLine {
                number: i + 1,
                text: t.to_owned(),
                findings: on_line.remove(&(i + 1)).unwrap_or_default(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_states_show_in_their_canonical_column() {
        assert_eq!(column_of(Status::StoryDocReview), Some("ready-for-dev"));
        assert_eq!(column_of(Status::E2eVerify), Some("review"));
        assert_eq!(column_of(Status::NeedsIntervention), None);
        assert_eq!(column_of(Status::Done), Some("done"));
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

    #[test]
    fn story_keys_that_could_leave_the_folder_are_refused() {
        assert!(safe_key("1-2-login"));
        assert!(!safe_key("../x"));
        assert!(!safe_key("a/b"));
        assert!(!safe_key(".hidden"));
        assert!(!safe_key(""));
    }

    #[test]
    fn review_findings_are_read_blocking_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("1-1-a.md");
        std::fs::write(
            &p,
            "# Story\n\n### Review Findings\n\nRound 1: changes requested (1 to patch, 1 deferred)\n\n\
             - [x] [Review][Defer] naming [a.rs:3] — deferred\n\
             - [ ] [Review][Patch] off by one [a.rs:1]\n\n## Dev Notes\n- [ ] [Review][Patch] not a finding\n",
        )
        .unwrap();
        let f = review_findings(&p);
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].severity, f[0].text.as_str()),
            ("blocking", "off by one [a.rs:1]")
        );
        assert_eq!(
            (f[1].severity, f[1].text.as_str()),
            ("deferred", "naming [a.rs:3]")
        );
        assert_eq!(f[0].round, "1");
    }

    #[test]
    fn agent_runs_sum_their_usage() {
        let ev = |seq, body: &str| StoredEvent {
            seq,
            run_id: "r".into(),
            at: "t".into(),
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
                    r#"{"event":"usage","agent":"developer","input_tokens":10,"output_tokens":3,"cost_usd":0.5}"#,
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
            (a.backend.as_str(), a.turns, a.input_tokens, a.cost_usd),
            ("script", 2, 15, 0.75)
        );
        assert_eq!(a.key.as_deref(), Some("1-1-a"));
        assert!(a.finished.is_none());
    }
}
