//! A story's page: its steps with agent, model, outcome, output and spend, its review findings,
//! stage commits, escalations, and its agents' activity.

use super::escalations::EscalationCard;
use super::{ViewError, journal_of, typed, usage_of};
use crate::{Host, InFlight, Project, StageCommit};
use baton_core::key::KeyKind;
use baton_core::verdict::Severity;
use baton_protocol::{Event, EventBody};
use baton_store::journal::board::Spend;
use baton_store::journal::{StepRecord, StoredEvent, UsageOf};
use baton_store::sprint_file::SprintDoc;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How many of a story's newest events its page reads.
const STORY_EVENTS: usize = 20_000;

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
    /// What it spent: the cost ledger's lines of the step (or, in a journal from before they
    /// named their step, its agent's usage events while it ran).
    pub spend: Spend,
}

/// A finding written into the story's `### Review Findings`.
#[derive(Debug, Clone, Serialize)]
pub struct FindingView {
    /// The review round.
    pub round: String,
    /// `critical`, `high`, `medium` or `low` from a journaled review; `blocking` (to patch) or
    /// `deferred` from the story file of a story reviewed before reviews were journaled.
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
    /// What its steps were reminded of by the team's memory.
    pub recalls: Vec<crate::Recall>,
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
    let (steps, escalations, seq, events, ledger) = match journal.as_deref() {
        Some(j) => (
            j.steps_for_key(key)?,
            j.escalations_for_key(key, false)?,
            j.last_event_seq()?,
            j.story_events(key, STORY_EVENTS)?,
            Some((j.usage_by_step(key)?, j.usage(UsageOf::Key(key))?)),
        ),
        None => Default::default(),
    };
    let activity: Vec<Activity> = events.iter().filter_map(activity_of).collect();
    let events: Vec<Event> = events.iter().filter_map(typed).collect();
    let models = models_by_agent(&events);
    let (by_step, ledger_total) = ledger.unwrap_or_default();
    let steps: Vec<StepView> = steps
        .iter()
        .map(|s| step_view(s, &events, &models, by_step.get(&s.id).copied()))
        .collect();
    // The cost ledger names each call's step; a journal from before it did has only the
    // agents' usage events to sum.
    let spend = if by_step.is_empty() {
        events.iter().filter_map(usage_of).map(|(_, u)| u).sum()
    } else {
        ledger_total
    };
    let file = project.stories_dir.join(format!("{key}.md"));
    // The parsed verdicts the run journaled carry each finding's severity; a story reviewed
    // before they were journaled has only its story file's record.
    let mut findings = journaled_findings(&events);
    if findings.is_empty() && super::inside(&file, &project.stories_dir) {
        findings = review_findings(&file);
    }
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
        recalls: host.recalls(key),
    })
}

/// The model each agent last started on.
fn models_by_agent(events: &[Event]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in events {
        if let EventBody::AgentStarted { agent, model } = &e.body {
            out.insert(agent.clone(), model.clone());
        }
    }
    out
}

/// The findings of the story's journaled reviews (`review` events), newest round first and,
/// within a round, most severe first, each with its severity (`critical`, `high`, `medium`,
/// `low`), file and line.
pub fn journaled_findings(events: &[Event]) -> Vec<FindingView> {
    let mut out: Vec<(u32, Severity, FindingView)> = Vec::new();
    for e in events {
        let EventBody::Review {
            round, findings, ..
        } = &e.body
        else {
            continue;
        };
        for f in findings {
            let place = match (f.file.is_empty(), f.line) {
                (true, _) => String::new(),
                (false, Some(l)) => format!(" [{}:{l}]", f.file),
                (false, None) => format!(" [{}]", f.file),
            };
            out.push((
                *round,
                f.severity,
                FindingView {
                    round: round.to_string(),
                    severity: f.severity.as_str(),
                    text: format!("{}{place}", f.issue),
                },
            ));
        }
    }
    // Severities order most severe first.
    out.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    out.into_iter().map(|(_, _, f)| f).collect()
}

/// An event as one line of activity; `None` for events not worth a line.
pub fn activity_of(e: &StoredEvent) -> Option<Activity> {
    let e = typed(e)?;
    let text = match &e.body {
        EventBody::AgentStarted { model, .. } => format!("started on {model}"),
        EventBody::Turn { turn, .. } => format!("turn {turn}"),
        EventBody::ToolCall { tool, .. } => format!("calls {tool}"),
        EventBody::Refused { tool, reason, .. } => format!("refused {tool}: {reason}"),
        EventBody::Usage { .. } => {
            let (_, u) = super::spend_of(&e.body)?;
            let cache = match (u.cache_read_tokens, u.cache_write_tokens) {
                (0, 0) => String::new(),
                (r, w) => format!(" ({r} cache read, {w} cache write)"),
            };
            format!(
                "{} in{cache} / {} out tokens, ${:.4}",
                u.input_tokens, u.output_tokens, u.cost_usd
            )
        }
        EventBody::AgentFinished { status, .. } => format!("finished: {status}"),
        EventBody::Stage {
            stage,
            round,
            agent,
            ..
        } => format!("stage {stage} (round {round}) by {agent}"),
        EventBody::Transition { from, to, .. } => format!("{from} → {to}"),
        EventBody::Tests { passed, .. } => {
            format!("tests {}", if *passed { "passed" } else { "failed" })
        }
        EventBody::Commit { message, .. } => format!("commit {message}"),
        EventBody::Escalation { escalation } => {
            format!("escalation #{}: {}", escalation.id, escalation.title)
        }
        EventBody::EscalationAnswered { escalation, .. } => format!(
            "escalation #{} answered: {}",
            escalation.id,
            escalation.answer.as_deref().unwrap_or_default()
        ),
        EventBody::BudgetWarning { message, .. } => format!("budget: {message}"),
        EventBody::StoryFinished { status, .. } => format!("finished as {status}"),
        EventBody::Merge { phase, detail, .. } => format!("merge: {} {detail}", phase.as_str()),
        EventBody::Review {
            round,
            passed,
            findings,
            ..
        } => format!(
            "review round {round}: {} ({} findings)",
            if *passed {
                "passed"
            } else {
                "changes requested"
            },
            findings.len()
        ),
        _ => return None,
    };
    let agent = e
        .scope
        .agent()
        .map(str::to_owned)
        .or_else(|| match &e.body {
            EventBody::Stage { agent, .. }
            | EventBody::AgentStarted { agent, .. }
            | EventBody::Turn { agent, .. }
            | EventBody::ToolCall { agent, .. }
            | EventBody::Refused { agent, .. }
            | EventBody::Usage { agent, .. }
            | EventBody::BudgetWarning { agent, .. }
            | EventBody::AgentFinished { agent, .. } => Some(agent.clone()),
            _ => None,
        });
    Some(Activity {
        seq: i64::try_from(e.seq).unwrap_or(i64::MAX),
        at: e.at,
        agent,
        event: e.body.name().to_owned(),
        text,
    })
}

/// What the board shows of a step's journaled detail.
#[derive(Debug, Default, serde::Deserialize)]
struct StepDetail {
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    findings: Option<usize>,
    #[serde(default)]
    blocking: Option<usize>,
}

/// A step with what its agent spent: the cost ledger's lines of the step (`ledger`), else the
/// usage events of that agent between the step's start and end.
fn step_view(
    s: &StepRecord,
    events: &[Event],
    models: &BTreeMap<String, String>,
    ledger: Option<Spend>,
) -> StepView {
    let detail: StepDetail = s
        .detail
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or_default();
    let agent = detail.agent;
    let during =
        |at: &str| at >= s.started_at.as_str() && s.ended_at.as_deref().is_none_or(|end| at <= end);
    let spend = ledger.unwrap_or_else(|| {
        events
            .iter()
            .filter(|e| e.run == s.run_id && during(&e.at))
            .filter_map(usage_of)
            .filter(|(a, _)| agent.as_deref().is_none_or(|ours| ours == a))
            .map(|(_, u)| u)
            .sum()
    });
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
        output: detail.reason,
        findings: detail.findings,
        blocking: detail.blocking,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
