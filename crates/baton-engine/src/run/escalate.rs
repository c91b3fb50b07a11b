//! Escalations, one copy for every workflow: the journal record, the human-readable
//! `escalations.log` line, the event, waiting for a human's answer when one is at a terminal, and
//! marking an escalation resolved once its workflow acted on the answer.
//!
//! Choices are stored by their stable ids ([`baton_core::escalation::Choice`]); the log and the
//! front ends show labels. An answer that names another escalation, or a choice that is not one
//! of the options, is rejected with an event, not dropped in silence. Acting on an answer is the
//! workflow's decision, not something done here.

use super::Run;
use crate::error::EngineError;
use crate::protocol::{EscalationView, EventBody, Op, Scope, UnitKey};
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::story::{Escalate, EscalationFact};
use baton_store::journal::{EscalationLog, EscalationRecord};
use std::io::Write as _;
use std::path::Path;

/// A human's answer arriving from a front end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This choice (stored form) for this escalation.
    Chose(i64, String),
    /// Later (`baton answer`).
    Later(i64),
}

impl Answer {
    /// The op this answer came from.
    fn op(&self) -> Op {
        match self {
            Answer::Chose(id, choice) => Op::Answer {
                id: *id,
                choice: choice.clone(),
            },
            Answer::Later(id) => Op::Defer { id: *id },
        }
    }
}

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

/// How often a run waiting for a person looks in the journal for an answer given elsewhere.
const ANSWER_POLL: std::time::Duration = std::time::Duration::from_millis(500);

impl Run {
    /// Records `e` for `unit` under `title` (raised after step `after_step`) in the journal and
    /// `escalations.log`, tells the front end, and, with a human at the terminal, waits for
    /// their answer (or for the run to be cancelled).
    pub async fn raise(
        &self,
        unit: &UnitKey,
        title: String,
        e: &Escalate,
        after_step: i64,
    ) -> Result<(), EngineError> {
        let key = unit.journal_key();
        let mut esc = EscalationRecord {
            id: 0,
            run_id: Some(self.id.clone()),
            key: Some(key.clone()),
            title,
            finding: e.finding.clone(),
            options: e.choices.iter().map(|c| c.id().to_owned()).collect(),
            answer: None,
            created_at: self.clock.now().rfc3339,
            answered_at: None,
            kind: e.kind.as_str().to_owned(),
            resolved_at: None,
            after_step,
        };
        esc.id = self.with_journal(|j| Ok(j.raise_escalation(&esc)?))?;
        append_log(&self.escalations_log, &key, e, &esc)?;
        // baton wrote it: the main tree's next commit knows without asking git.
        self.workspace().touched(&[&self.escalations_log]);
        // Marked as awaited before the front end hears of it, so its answer is never early.
        if self.answers.is_some() {
            self.set_awaiting(Some(esc.id));
        }
        self.emit(
            Scope::Unit(unit.clone()),
            EventBody::Escalation {
                escalation: crate::protocol::escalation_view(&esc, self.answers.is_some()),
            },
        );
        let Some(answers) = &self.answers else {
            return Ok(());
        };
        let mut answers = answers.lock().await;
        let answered = self.wait_for_answer(&mut answers, &esc).await;
        self.set_awaiting(None);
        answered
    }

    /// In YOLO mode, a person at the terminal who picks another option than the recommended
    /// (first) one has corrected baton: the choice is remembered as a preference of low
    /// importance without asking (standard mode leaves it to `baton answer --remember`).
    fn learn_correction(&self, esc: &EscalationRecord, choice: &str) {
        let Some(memory) = &self.setup.memory else {
            return;
        };
        if self.setup.mode != baton_agent::runner::Mode::Yolo
            || esc.options.first().is_none_or(|o| o == choice)
        {
            return;
        }
        let kind = EscalationKind::parse(&esc.kind);
        let label = |c: &str| Choice::label_of(kind, c);
        let d = baton_core::memory::sources::override_preference(
            esc.key.as_deref(),
            &esc.title,
            &label(choice),
            &label(&esc.options[0]),
            3,
        );
        let now = crate::memory::unix_secs(&self.clock.now().rfc3339);
        if let Err(e) = memory.learn(d, now) {
            self.memory_trouble(&e);
        }
    }

    fn set_awaiting(&self, id: Option<i64>) {
        if let Ok(mut a) = self.awaiting.lock() {
            *a = id;
        }
    }

    /// Whether an answer to escalation `id` can be taken now: a human is being asked about it.
    pub fn awaits(&self, id: i64) -> bool {
        self.awaiting.lock().is_ok_and(|a| *a == Some(id))
    }

    async fn wait_for_answer(
        &self,
        answers: &mut tokio::sync::mpsc::UnboundedReceiver<Answer>,
        esc: &EscalationRecord,
    ) -> Result<(), EngineError> {
        loop {
            let answer = tokio::select! {
                a = answers.recv() => a,
                () = self.setup.cancel.cancelled() => None,
                // An answer recorded elsewhere (`baton answer`, the board) while a person is
                // asked at this terminal is taken as theirs.
                () = tokio::time::sleep(ANSWER_POLL) => {
                    if let Some(choice) = self.answered_elsewhere(esc.id)? {
                        self.emit_run(EventBody::Notice {
                            message: format!(
                                "escalation #{} was answered elsewhere: {}",
                                esc.id,
                                Choice::label_of(EscalationKind::parse(&esc.kind), &choice)
                            ),
                        });
                        return Ok(());
                    }
                    continue;
                }
            };
            let Some(answer) = answer else {
                return Ok(());
            };
            match &answer {
                Answer::Chose(id, choice) if *id == esc.id && esc.options.contains(choice) => {
                    let at = self.clock.now().rfc3339;
                    self.with_journal(|j| Ok(j.answer_escalation(esc.id, choice, &at)?))?;
                    let answered = EscalationRecord {
                        answer: Some(choice.clone()),
                        answered_at: Some(at),
                        ..esc.clone()
                    };
                    self.emit_answered(&answered);
                    self.learn_correction(esc, choice);
                    return Ok(());
                }
                Answer::Later(id) if *id == esc.id => return Ok(()),
                Answer::Chose(id, choice) if *id == esc.id => self.reject(
                    &answer,
                    format!(
                        "`{choice}` is not an option of escalation #{id}; its options are: {}",
                        esc.options.join(", ")
                    ),
                ),
                Answer::Chose(id, _) | Answer::Later(id) => self.reject(
                    &answer,
                    format!(
                        "escalation #{id} is not waiting for an answer; #{} is",
                        esc.id
                    ),
                ),
            }
        }
    }

    /// The answer the journal holds for escalation `id`, if someone gave one.
    fn answered_elsewhere(&self, id: i64) -> Result<Option<String>, EngineError> {
        Ok(self
            .with_journal(|j| Ok(j.escalation(id)?))?
            .and_then(|e| e.answer))
    }

    /// Tells every front end that escalation `answered` was answered at this run's terminal
    /// (an answer given elsewhere wrote its own event).
    fn emit_answered(&self, answered: &EscalationRecord) {
        let scope = answered
            .key
            .as_deref()
            .and_then(|k| UnitKey::parse(k).ok())
            .map_or(Scope::Run, Scope::Unit);
        self.emit(
            scope,
            EventBody::EscalationAnswered {
                escalation: crate::protocol::escalation_view(answered, false),
                next: None,
            },
        );
    }

    /// Tells the front end an answer was not carried out, and why.
    fn reject(&self, answer: &Answer, reason: String) {
        self.reject_op(answer.op(), reason);
    }

    /// Tells the front end `op` was not carried out, and why.
    pub fn reject_op(&self, op: Op, reason: String) {
        self.emit_run(EventBody::OpRejected { op, reason });
    }

    /// Marks escalation `id` resolved: its workflow acted on the answer.
    pub fn resolve_escalation(&self, id: i64) -> Result<(), EngineError> {
        let at = self.clock.now().rfc3339;
        self.with_journal(|j| Ok(j.resolve_escalation(id, &at)?))
    }

    /// The escalation with `id`, as front ends show it (`None`: there is none).
    pub fn escalation_view(&self, id: i64) -> Result<Option<EscalationView>, EngineError> {
        Ok(self
            .with_journal(|j| Ok(EscalationLog::escalation(j, id)?))?
            .map(|e| crate::protocol::escalation_view(&e, false)))
    }

    /// The escalations of `unit`, answered or not.
    pub fn escalations_of(&self, unit: &UnitKey) -> Result<Vec<EscalationRecord>, EngineError> {
        let key = unit.journal_key();
        self.with_journal(|j| Ok(EscalationLog::escalations_for_key(j, &key, false)?))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{JournalHandle, RunKind, RunSpec};
    use crate::session;
    use crate::setup::Setup;
    use crate::workflow::Workflow;
    use baton_agent::runner::{Budget, Mode};
    use baton_agent::sandbox::Sandbox;
    use baton_agent::tools::CommandPolicy;
    use baton_store::journal::SqliteJournal;
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    /// A workflow that raises one escalation and reports the answer it got.
    struct Raises;

    impl Workflow for Raises {
        type Report = Result<Option<String>, EngineError>;

        async fn preflight(&self, _run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
            Ok(Vec::new())
        }

        async fn run(self, run: Arc<Run>) -> Result<Option<String>, EngineError> {
            let unit = UnitKey::Story("1-1-a".into());
            let e = Escalate {
                kind: EscalationKind::MaxReviewRounds,
                title: "max rounds".into(),
                finding: "still failing".into(),
                choices: vec![Choice::AnotherRound, Choice::Stop],
            };
            run.raise(&unit, e.title.clone(), &e, 0).await?;
            Ok(run.escalations_of(&unit)?.pop().and_then(|e| e.answer))
        }

        fn ending(report: &Self::Report, _run: &Run) -> crate::workflow::Ending {
            crate::workflow::Ending::new(
                if report.is_ok() {
                    "completed"
                } else {
                    "failed"
                },
                "",
            )
        }
    }

    fn run(dir: &std::path::Path) -> (Arc<Run>, crate::run::RunIo) {
        let sandbox = Arc::new(Sandbox::new(dir, &Sandbox::default_deny()).unwrap());
        let setup = Setup::new(
            dir.to_path_buf(),
            BTreeMap::new(),
            BTreeMap::new(),
            BTreeMap::new(),
            Mode::Yolo,
            Arc::new(Budget::default()),
            sandbox,
            CommandPolicy::default(),
        );
        let journal = SqliteJournal::open(&dir.join("baton.db")).unwrap();
        Run::new(RunSpec {
            id: "test-1".into(),
            kind: RunKind::Sprint,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(Arc::new(Mutex::new(journal))),
            escalations_log: dir.join("escalations.log"),
            interactive: true,
            event_log: Some(Box::new(
                SqliteJournal::open(&dir.join("baton.db")).unwrap(),
            )),
        })
    }

    #[tokio::test]
    async fn a_bad_answer_is_rejected_with_an_event_and_a_good_one_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let (run, io) = run(dir.path());
        let mut s = session::start(Raises, run, io).await.unwrap();
        let mut seen = Vec::new();
        // Wait until the escalation is raised and awaited.
        let id = loop {
            let e = s.events.recv().await.unwrap();
            seen.push(e.clone());
            if let EventBody::Escalation { escalation } = e.body {
                assert!(escalation.awaiting);
                assert_eq!(e.scope, Scope::Unit(UnitKey::Story("1-1-a".into())));
                break escalation.id;
            }
        };
        let mut rejected = |e: crate::protocol::Event| {
            seen.push(e.clone());
            match e.body {
                EventBody::OpRejected { op, reason } => Some((op, reason)),
                _ => None,
            }
        };
        // An escalation nobody is asked about.
        let unknown = Op::Answer {
            id: id + 41,
            choice: "stop".into(),
        };
        s.ops.send(unknown.clone()).unwrap();
        let (op, reason) = rejected(s.events.recv().await.unwrap()).unwrap();
        assert_eq!(op, unknown);
        assert!(reason.contains("not waiting"), "{reason}");
        // A choice that is not one of the options.
        let invalid = Op::Answer {
            id,
            choice: "accept".into(),
        };
        s.ops.send(invalid.clone()).unwrap();
        let (op, reason) = rejected(s.events.recv().await.unwrap()).unwrap();
        assert_eq!(op, invalid);
        assert!(reason.contains("not an option"), "{reason}");
        // The run still waits, and takes a valid answer.
        s.ops
            .send(Op::Answer {
                id,
                choice: "stop".into(),
            })
            .unwrap();
        let answer = s.done.await.unwrap().unwrap();
        assert_eq!(answer.as_deref(), Some("stop"));
        // The answer is an event too, after which the run ended.
        while let Ok(e) = s.events.try_recv() {
            seen.push(e);
        }
        match &seen.last().map(|e| &e.body) {
            Some(EventBody::EscalationAnswered { escalation, next }) => {
                assert_eq!(escalation.id, id);
                assert!(
                    escalation
                        .answer
                        .as_deref()
                        .is_some_and(|a| a.starts_with("stop"))
                );
                assert!(next.is_none());
            }
            other => panic!("the answer is not the last event: {other:?}"),
        }
        // (An answer given elsewhere is tested below.)
        // The events were numbered by the journal: a late reader finds the same stream there.
        let journal = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        let stored: Vec<(u64, crate::protocol::Scope, EventBody)> =
            baton_store::journal::RunEvents::events_after(&journal, 0, 100)
                .unwrap()
                .into_iter()
                .map(|e| {
                    (
                        u64::try_from(e.seq).unwrap(),
                        serde_json::from_str(&e.scope).unwrap(),
                        serde_json::from_str(&e.body).unwrap(),
                    )
                })
                .collect();
        let sent: Vec<_> = seen.into_iter().map(|e| (e.seq, e.scope, e.body)).collect();
        assert_eq!(stored, sent);
    }

    #[tokio::test]
    async fn an_answer_recorded_elsewhere_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let (run, io) = run(dir.path());
        let mut s = session::start(Raises, run, io).await.unwrap();
        let id = loop {
            let e = s.events.recv().await.unwrap();
            if let EventBody::Escalation { escalation } = e.body {
                break escalation.id;
            }
        };
        // Another process (`baton answer`, the board) records the answer in the journal.
        let mut other = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        assert!(
            other
                .answer_escalation(id, "another-round", "2026-11-26T10:00:00Z")
                .unwrap()
        );
        let answer = tokio::time::timeout(std::time::Duration::from_secs(30), s.done)
            .await
            .expect("the run stopped waiting")
            .unwrap()
            .unwrap();
        assert_eq!(answer.as_deref(), Some("another-round"));
        let mut notices = Vec::new();
        while let Ok(e) = s.events.try_recv() {
            if let EventBody::Notice { message } = e.body {
                notices.push(message);
            }
        }
        assert!(
            notices
                .iter()
                .any(|m| m.contains("answered elsewhere: another fix round")),
            "{notices:?}"
        );
    }
}
