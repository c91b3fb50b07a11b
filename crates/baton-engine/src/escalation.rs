//! Raising escalations: the journal record, the human-readable `escalations.log`, the event, and
//! — when a human is at a terminal — waiting for their answer.
//!
//! Choices are stored by their stable ids ([`baton_core::escalation::Choice`]); the log and the
//! front ends show labels. Acting on an answer is a decision ([`baton_core::story::decide`]), not
//! something done here.

use crate::ctx::{Answer, RunCtx};
use crate::error::EngineError;
use crate::protocol::{EscalationView, Event};
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::story::Escalate;
use baton_store::journal::{EscalationRecord, Journal};
use std::io::Write as _;

/// Records `e` for `key` (raised after step `after_step`) and asks a human if one is there.
pub async fn raise(
    run: &RunCtx,
    key: &str,
    e: &Escalate,
    after_step: i64,
) -> Result<(), EngineError> {
    let mut esc = EscalationRecord {
        id: 0,
        run_id: Some(run.run_id.clone()),
        key: Some(key.to_owned()),
        title: e.title.clone(),
        finding: e.finding.clone(),
        options: e.choices.iter().map(|c| c.id().to_owned()).collect(),
        answer: None,
        created_at: run.clock.now().rfc3339,
        answered_at: None,
        kind: e.kind.as_str().to_owned(),
        resolved_at: None,
        after_step,
    };
    esc.id = run.with_ledger(|l| Ok(l.journal_mut().raise_escalation(&esc)?))?;
    append_log(run, key, e, &esc)?;
    let interactive = run.answers.is_some();
    run.emit(Event::Escalation {
        escalation: EscalationView::of(&esc, interactive),
    });
    let Some(answers) = &run.answers else {
        return Ok(());
    };
    let mut answers = answers.lock().await;
    loop {
        let answer = tokio::select! {
            a = answers.recv() => a,
            () = run.setup.cancel.cancelled() => None,
        };
        match answer {
            Some(Answer::Chose(id, choice)) if id == esc.id && esc.options.contains(&choice) => {
                let at = run.clock.now().rfc3339;
                run.with_ledger(|l| {
                    Ok(l.journal_mut().answer_escalation(esc.id, &choice, &at)?)
                })?;
                return Ok(());
            }
            Some(Answer::Later(id)) if id == esc.id => return Ok(()),
            // An answer to something else, or not an option: keep waiting.
            Some(_) => {}
            None => return Ok(()),
        }
    }
}

/// One line per escalation in `escalations.log`, for people who read files rather than run
/// commands. The line names the choices by their labels.
fn append_log(
    run: &RunCtx,
    key: &str,
    e: &Escalate,
    esc: &EscalationRecord,
) -> Result<(), EngineError> {
    let kind = Some(e.kind).filter(|k| *k != EscalationKind::Agent);
    let line = format!(
        "{} #{} [{}] {}: {} — {} | options: {}\n",
        esc.created_at,
        esc.id,
        key,
        e.kind,
        e.title,
        e.finding.replace('\n', " "),
        esc.options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}) {}", i + 1, Choice::label_of(kind, o)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let path = &run.settings.escalations_log;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|err| EngineError::file(dir, err))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|err| EngineError::file(path, err))?;
    f.write_all(line.as_bytes())
        .map_err(|err| EngineError::file(path, err))?;
    Ok(())
}
