//! Raising escalations: the journal record, the human-readable `escalations.log`, the event, and
//! — when a human is at a terminal — waiting for their answer.
//!
//! Choices are stored by their stable ids ([`baton_core::escalation::Choice`]); the log and the
//! front ends show labels. Acting on an answer is a decision ([`baton_core::story::decide`]), not
//! something done here.

use crate::clock::Clock;
use crate::ctx::{Answer, RunCtx};
use crate::error::EngineError;
use crate::protocol::{EscalationView, Event};
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::story::{Escalate, EscalationFact};
use baton_store::journal::{EscalationRecord, Journal, SqliteJournal};
use std::io::Write as _;
use std::path::Path;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The facts the story and task machines read of a journaled escalation.
pub fn fact(e: EscalationRecord) -> EscalationFact {
    let kind = EscalationKind::parse(&e.kind).unwrap_or(EscalationKind::Agent);
    EscalationFact {
        id: e.id,
        kind,
        title: e.title,
        answer: e.answer.map(|a| Choice::from_stored(Some(kind), &a)),
        resolved: e.resolved_at.is_some(),
        after_step: e.after_step,
    }
}

/// Records `e` for `key` (raised after step `after_step`) and asks a human if one is there.
pub async fn raise(
    run: &RunCtx,
    key: &str,
    e: &Escalate,
    after_step: i64,
) -> Result<(), EngineError> {
    raise_in(run, key, e.title.clone(), e, after_step).await
}

/// What raising an escalation needs from the run that raises it: a sprint's story run
/// ([`RunCtx`], journaling through its ledger) or an sdd run (journaling directly).
pub(crate) trait EscalationHost: Sync {
    /// This run's id.
    fn run_id(&self) -> &str;
    /// The clock the record's times come from.
    fn clock(&self) -> &dyn Clock;
    /// Answers from a human at a terminal (`None`: nobody can answer now).
    fn answers(&self) -> Option<&tokio::sync::Mutex<mpsc::UnboundedReceiver<Answer>>>;
    /// Cancelled when the run stops: waiting for an answer ends then.
    fn cancel(&self) -> &CancellationToken;
    /// Where the human-readable line goes.
    fn escalations_log(&self) -> &Path;
    /// Runs `f` on the journal.
    fn with_journal<T>(
        &self,
        f: impl FnOnce(&mut SqliteJournal) -> Result<T, EngineError>,
    ) -> Result<T, EngineError>;
    /// Tells the front end about a raised escalation.
    fn emit_escalation(&self, escalation: EscalationView);
}

impl EscalationHost for RunCtx {
    fn run_id(&self) -> &str {
        &self.run_id
    }
    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }
    fn answers(&self) -> Option<&tokio::sync::Mutex<mpsc::UnboundedReceiver<Answer>>> {
        self.answers.as_ref()
    }
    fn cancel(&self) -> &CancellationToken {
        &self.setup.cancel
    }
    fn escalations_log(&self) -> &Path {
        &self.settings.escalations_log
    }
    fn with_journal<T>(
        &self,
        f: impl FnOnce(&mut SqliteJournal) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        self.with_ledger(|l| f(l.journal_mut()))
    }
    fn emit_escalation(&self, escalation: EscalationView) {
        self.emit(Event::Escalation { escalation });
    }
}

/// Records `e` for `key` under `title` (raised after step `after_step`) in `host`'s journal and
/// `escalations.log`, tells the front end, and asks a human if one is there.
pub(crate) async fn raise_in(
    host: &impl EscalationHost,
    key: &str,
    title: String,
    e: &Escalate,
    after_step: i64,
) -> Result<(), EngineError> {
    let mut esc = EscalationRecord {
        id: 0,
        run_id: Some(host.run_id().to_owned()),
        key: Some(key.to_owned()),
        title,
        finding: e.finding.clone(),
        options: e.choices.iter().map(|c| c.id().to_owned()).collect(),
        answer: None,
        created_at: host.clock().now().rfc3339,
        answered_at: None,
        kind: e.kind.as_str().to_owned(),
        resolved_at: None,
        after_step,
    };
    esc.id = host.with_journal(|j| Ok(j.raise_escalation(&esc)?))?;
    append_log(host.escalations_log(), key, e, &esc)?;
    let answers = host.answers();
    host.emit_escalation(EscalationView::of(&esc, answers.is_some()));
    let Some(answers) = answers else {
        return Ok(());
    };
    let mut answers = answers.lock().await;
    loop {
        let answer = tokio::select! {
            a = answers.recv() => a,
            () = host.cancel().cancelled() => None,
        };
        match answer {
            Some(Answer::Chose(id, choice)) if id == esc.id && esc.options.contains(&choice) => {
                let at = host.clock().now().rfc3339;
                host.with_journal(|j| Ok(j.answer_escalation(esc.id, &choice, &at)?))?;
                return Ok(());
            }
            Some(Answer::Later(id)) if id == esc.id => return Ok(()),
            // An answer to something else, or not an option: keep waiting.
            Some(_) => {}
            None => return Ok(()),
        }
    }
}

/// One line per escalation in `escalations.log` at `path`, for people who read files rather
/// than run commands. The line names the choices by their labels.
fn append_log(
    path: &Path,
    key: &str,
    e: &Escalate,
    esc: &EscalationRecord,
) -> Result<(), EngineError> {
    let line = format!(
        "{} #{} [{}] {}: {} — {} | options: {}\n",
        esc.created_at,
        esc.id,
        key,
        e.kind,
        esc.title,
        e.finding.replace('\n', " "),
        e.choices
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}) {}", i + 1, c.label()))
            .collect::<Vec<_>>()
            .join(" ")
    );
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
