//! Answering an escalation outside the run that raised it: the one code path of `baton answer`
//! and the web board's answer form.
//!
//! The typed choice (an option's number, id or label) is checked against the escalation's
//! options, the first answer is recorded in the journal (a second one is refused, naming the
//! first), and the answer is written to the run event log as
//! [`EventBody::EscalationAnswered`], so every front end following the log (a board left open,
//! another terminal) sees it without reloading. Which command acts on the answer is named from
//! the escalation's unit ([`UnitKey`]), parsed, never matched by prefix.

use crate::protocol::{EventBody, Scope, UnitKey, escalation_view};
use baton_core::escalation::{Choice, EscalationKind, choose};
use baton_store::journal::{EscalationLog, EscalationRecord, JournalError, RunEvents, Store};

/// An answer recorded by `baton answer` (or the web board, through the same code).
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The escalation.
    pub id: i64,
    /// The stored choice.
    pub choice: String,
    /// Its label.
    pub label: String,
    /// The command that acts on it.
    pub next: String,
    /// The label of the option baton recommended (the first).
    pub recommended: Option<String>,
    /// The escalation as it was asked.
    pub escalation: EscalationRecord,
    /// Why the answer's event could not be written to the run event log (the answer stands;
    /// open boards show it on their next reload).
    pub event_error: Option<String>,
}

/// Why an answer was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// No escalation has this number.
    #[error("no escalation #{0}; `baton escalations` lists the open ones")]
    Unknown(i64),
    /// It was answered already.
    #[error("escalation #{id} was already answered: {label}")]
    Already {
        /// The escalation.
        id: i64,
        /// The answer's label.
        label: String,
    },
    /// The typed choice is not one of its options.
    #[error("{0}")]
    NotAnOption(String),
    /// The journal could not be read or written.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Why an answer's event could not be written to the run event log.
#[derive(Debug, thiserror::Error)]
enum AnnounceError {
    /// The event's scope or body could not be encoded.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    /// The journal refused the event.
    #[error("{0}")]
    Journal(#[from] JournalError),
}

/// The command that acts on an answer to an escalation of `unit`.
pub fn resume_command(unit: Option<&UnitKey>) -> String {
    // Each workflow acts on the answers to its own units' escalations.
    format!(
        "`{}`",
        unit.map_or_else(|| "baton sprint".to_owned(), UnitKey::resume_command)
    )
}

/// Records `typed` (an option's number, id or label) as the answer to escalation `id` at `now`
/// (RFC 3339), and writes the answer's event to the run event log.
pub fn record_answer(
    journal: &mut dyn Store,
    id: i64,
    typed: &str,
    now: &str,
) -> Result<Recorded, AnswerError> {
    let found = EscalationLog::escalation(journal, id)?;
    let Some(e) = found else {
        return Err(AnswerError::Unknown(id));
    };
    let kind = EscalationKind::parse(&e.kind);
    let already = |a: &str| AnswerError::Already {
        id: e.id,
        label: Choice::label_of(kind, a),
    };
    if let Some(a) = &e.answer {
        return Err(already(a));
    }
    let choice = choose(kind, &e.options, typed).map_err(AnswerError::NotAnOption)?;
    if !EscalationLog::answer_escalation(journal, e.id, &choice, now)? {
        // Answered by someone else between the read and the write.
        let label = EscalationLog::escalation(journal, id)?
            .and_then(|e| e.answer)
            .unwrap_or_default();
        return Err(already(&label));
    }
    let unit = e.key.as_deref().and_then(|k| UnitKey::parse(k).ok());
    let next = resume_command(unit.as_ref());
    let answered = EscalationRecord {
        answer: Some(choice.clone()),
        answered_at: Some(now.to_owned()),
        ..e.clone()
    };
    let event_error = announce(journal, &answered, unit, &next)
        .err()
        .map(|e| e.to_string());
    Ok(Recorded {
        id: e.id,
        label: Choice::label_of(kind, &choice),
        choice,
        next,
        recommended: e.options.first().map(|o| Choice::label_of(kind, o)),
        escalation: e,
        event_error,
    })
}

/// Writes [`EventBody::EscalationAnswered`] for `answered` to the run event log, under the run
/// that raised it and scoped to its unit.
fn announce(
    journal: &mut dyn Store,
    answered: &EscalationRecord,
    unit: Option<UnitKey>,
    next: &str,
) -> Result<(), AnnounceError> {
    let scope = unit.map_or(Scope::Run, Scope::Unit);
    let body = EventBody::EscalationAnswered {
        escalation: escalation_view(answered, false),
        next: Some(next.to_owned()),
    };
    let scope = serde_json::to_string(&scope)?;
    let body = serde_json::to_string(&body)?;
    let at = answered.answered_at.as_deref().unwrap_or_default();
    let run = answered.run_id.as_deref().unwrap_or_default();
    RunEvents::append_event(journal, run, at, &scope, &body)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_store::journal::SqliteJournal;

    fn raised(j: &mut SqliteJournal, key: &str) -> i64 {
        EscalationLog::raise_escalation(
            j,
            &EscalationRecord {
                id: 0,
                run_id: Some("sprint-1".into()),
                key: Some(key.into()),
                title: "review rounds exhausted".into(),
                finding: "still failing".into(),
                options: vec!["another-round".into(), "accept".into(), "stop".into()],
                answer: None,
                created_at: "2026-11-26T00:00:00Z".into(),
                answered_at: None,
                kind: "max-rounds".into(),
                resolved_at: None,
                after_step: 0,
            },
        )
        .unwrap()
    }

    #[test]
    fn an_answer_is_recorded_once_and_written_to_the_run_event_log() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        let id = raised(&mut j, "1-1-a");
        let before = RunEvents::last_event_seq(&j).unwrap();
        let r = record_answer(&mut j, id, "2", "2026-11-26T00:05:00Z").unwrap();
        assert_eq!(
            (r.choice.as_str(), r.next.as_str()),
            ("accept", "`baton sprint`")
        );
        assert!(r.event_error.is_none());
        let events = RunEvents::events_after(&j, before, 10).unwrap();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].run_id, "sprint-1");
        let scope: Scope = serde_json::from_str(&events[0].scope).unwrap();
        assert_eq!(scope, Scope::Unit(UnitKey::Story("1-1-a".into())));
        let body: EventBody = serde_json::from_str(&events[0].body).unwrap();
        let EventBody::EscalationAnswered { escalation, next } = body else {
            panic!("{body:?}");
        };
        assert_eq!((escalation.id, escalation.awaiting), (id, false));
        assert_eq!(escalation.answer.as_deref(), Some(r.label.as_str()));
        assert_eq!(next.as_deref(), Some("`baton sprint`"));

        // A second answer is refused, names the first, and writes nothing.
        let again = record_answer(&mut j, id, "1", "2026-11-26T00:06:00Z").unwrap_err();
        assert!(matches!(again, AnswerError::Already { .. }), "{again}");
        assert_eq!(RunEvents::events_after(&j, before, 10).unwrap().len(), 1);
        assert!(matches!(
            record_answer(&mut j, id + 9, "1", "t"),
            Err(AnswerError::Unknown(_))
        ));
        let other = raised(&mut j, "1-2-b");
        assert!(matches!(
            record_answer(&mut j, other, "dance", "t"),
            Err(AnswerError::NotAnOption(_))
        ));
        assert_eq!(RunEvents::events_after(&j, before, 10).unwrap().len(), 1);
    }

    #[test]
    fn each_unit_names_the_command_that_acts_on_its_answer() {
        let cmd = |k: &str| resume_command(UnitKey::parse(k).ok().as_ref());
        assert_eq!(cmd("sdd:docs/PLAN.md#3"), "`baton sdd docs/PLAN.md`");
        assert_eq!(cmd("bmad:bmad-prd-2"), "`baton bmad run bmad-prd`");
        assert_eq!(cmd("1-1-a"), "`baton sprint`");
    }
}
