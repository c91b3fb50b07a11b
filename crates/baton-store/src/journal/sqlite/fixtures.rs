//! Records the journal tests build, shared by the tests of every family.

use crate::journal::{CostEntry, EscalationRecord, Event, NewEvent, RunRecord, StepRecord};

pub(super) fn event(key: &str, from: Option<&str>, to: &str) -> NewEvent {
    NewEvent {
        at: "2025-01-01T00:00:00Z".to_owned(),
        actor: "human".to_owned(),
        key: key.to_owned(),
        from: from.map(str::to_owned),
        to: to.to_owned(),
        reason: "because".to_owned(),
        forced: false,
        run_id: None,
    }
}

pub(super) fn run(id: &str) -> RunRecord {
    RunRecord {
        id: id.to_owned(),
        kind: "sprint".to_owned(),
        started_at: "2025-01-01T00:00:00Z".to_owned(),
        ended_at: None,
        status: "running".to_owned(),
        reason: None,
    }
}

pub(super) fn step(run_id: &str, stage: &str, attempt: u32) -> StepRecord {
    StepRecord {
        id: 0,
        run_id: run_id.to_owned(),
        key: Some("1-1-login".to_owned()),
        stage: stage.to_owned(),
        attempt,
        input_hash: format!("hash-{stage}-{attempt}"),
        outcome: None,
        started_at: "2025-01-01T00:01:00Z".to_owned(),
        ended_at: None,
        detail: None,
    }
}

pub(super) fn escalation(title: &str) -> EscalationRecord {
    EscalationRecord {
        id: 0,
        run_id: Some("r-none".to_owned()),
        key: Some("1-2-signup".to_owned()),
        title: title.to_owned(),
        finding: "tests fail on CI only".to_owned(),
        options: vec![
            "retry".to_owned(),
            "skip \"it\"".to_owned(),
            "stop".to_owned(),
        ],
        answer: None,
        created_at: "2025-01-01T00:02:00Z".to_owned(),
        answered_at: None,
        kind: "agent".to_owned(),
        resolved_at: None,
        after_step: 7,
    }
}

pub(super) fn cost(run_id: Option<&str>, usd: f64) -> CostEntry {
    CostEntry {
        run_id: run_id.map(str::to_owned),
        step_id: Some(1),
        at: "2025-01-01T00:03:00Z".to_owned(),
        model: "anthropic/claude".to_owned(),
        input_tokens: 1000,
        output_tokens: 200,
        cache_read_tokens: 30,
        cache_write_tokens: 4,
        cost_usd: usd,
        estimated: false,
    }
}

pub(super) fn keys(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.key.as_str()).collect()
}
