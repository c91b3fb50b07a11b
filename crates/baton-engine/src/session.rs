//! Starting any workflow as a session: the workflow runs on its own task, events come out of
//! one channel and operations go into another.
//!
//! The front end reads [`Session::events`] and renders them; it sends [`Op`]s (an answer, a
//! deferral, cancellation) on [`Session::ops`]; [`Session::done`] yields the report. An answer
//! to an escalation nobody is being asked about is rejected with an event at once.
//!
//! The session owns the run's life in the journal, for every workflow alike: it takes the run's
//! liveness hold, marks ended (interrupted) the runs a killed process left "running" (a run
//! another live process holds is left alone), journals the run's beginning after the
//! preflight, and its end from the report ([`Workflow::ending`]) when the work is done. An end
//! the journal could not record is said in an event.

use crate::error::EngineError;
use crate::protocol::{Event, EventBody, Op};
use crate::run::{Answer, Run, RunIo};
use crate::workflow::Workflow;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A running workflow.
pub struct Session<R> {
    /// Operations in.
    pub ops: mpsc::UnboundedSender<Op>,
    /// Events out; closed when the run ends.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The report, when the run ends.
    pub done: JoinHandle<R>,
}

/// Checks the project (`workflow`'s preflight, its notices sent as events), then starts the
/// workflow on `run` on the current tokio runtime.
pub async fn start<W: Workflow>(
    workflow: W,
    run: Arc<Run>,
    io: RunIo,
) -> Result<Session<W::Report>, EngineError> {
    let hold = run.hold()?;
    run.close_orphaned_runs()?;
    for message in workflow.preflight(&run).await? {
        run.emit_run(EventBody::Notice { message });
    }
    run.begin()?;
    let (ops_tx, mut ops_rx) = mpsc::unbounded_channel::<Op>();
    let answers = io.answers();
    let ops_run = Arc::downgrade(&run);
    tokio::spawn(async move {
        while let Some(op) = ops_rx.recv().await {
            let Some(run) = ops_run.upgrade() else {
                return;
            };
            let answer = match &op {
                Op::Cancel => {
                    run.setup.cancel.cancel();
                    continue;
                }
                Op::Answer { id, choice } => Answer::Chose(*id, choice.clone()),
                Op::Defer { id } => Answer::Later(*id),
            };
            let id = match answer {
                Answer::Chose(id, _) | Answer::Later(id) => id,
            };
            if !run.awaits(id) {
                run.reject_op(
                    op,
                    format!(
                        "escalation #{id} is not waiting for an answer in this run; `baton \
                         escalations` lists the open ones and `baton answer` answers them"
                    ),
                );
                continue;
            }
            let _ = answers.send(answer);
        }
    });
    let done = tokio::spawn(async move {
        let report = workflow.run(run.clone()).await;
        let ending = W::ending(&report, &run);
        if let Err(e) = run.end(&ending.status, &ending.reason) {
            run.emit_run(EventBody::Notice {
                message: format!("the journal did not record the end of run {}: {e}", run.id),
            });
        }
        drop(hold);
        report
    });
    Ok(Session {
        ops: ops_tx,
        events: io.events,
        done,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{JournalHandle, RunKind, RunSpec};
    use crate::setup::Setup;
    use crate::workflow::Ending;
    use baton_agent::runner::{Budget, Mode};
    use baton_agent::sandbox::Sandbox;
    use baton_agent::tools::CommandPolicy;
    use baton_store::journal::{RunLog, RunRecord, SqliteJournal};
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::Mutex;

    #[test]
    fn the_journal_s_interrupted_status_is_the_protocol_s_run_end() {
        assert_eq!(
            crate::protocol::RunEnd::Interrupted.as_str(),
            baton_store::journal::INTERRUPTED
        );
    }

    /// A workflow that ends as it is told.
    struct Ends(&'static str);

    impl Workflow for Ends {
        type Report = &'static str;

        async fn preflight(&self, _run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
            Ok(Vec::new())
        }

        async fn run(self, _run: Arc<Run>) -> &'static str {
            self.0
        }

        fn ending(report: &&'static str, _run: &Run) -> Ending {
            Ending::new(*report, format!("it was {report}"))
        }
    }

    fn run(dir: &Path, id: &str, kind: RunKind) -> (Arc<Run>, RunIo) {
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
            id: id.into(),
            kind,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(Arc::new(Mutex::new(journal))),
            escalations_log: dir.join("escalations.log"),
            interactive: false,
            event_log: None,
        })
    }

    fn record(dir: &Path, id: &str) -> RunRecord {
        let j = SqliteJournal::open(&dir.join("baton.db")).unwrap();
        RunLog::run(&j, id).unwrap().unwrap()
    }

    /// A run some process began: `held` while that process lives.
    fn begun_elsewhere(dir: &Path, id: &str, held: bool) -> Option<baton_store::journal::RunHold> {
        let mut j = SqliteJournal::open(&dir.join("baton.db")).unwrap();
        let hold = held.then(|| j.hold_run(id).unwrap());
        j.begin_run(&RunRecord {
            id: id.into(),
            kind: "plan".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            ended_at: None,
            status: "running".into(),
            reason: None,
        })
        .unwrap();
        hold
    }

    #[tokio::test]
    async fn the_session_journals_every_workflow_s_begin_and_end() {
        let dir = tempfile::tempdir().unwrap();
        for (i, (kind, end)) in [
            (RunKind::Team, "completed"),
            (RunKind::Bmad, "failed"),
            (RunKind::Pm, "paused"),
        ]
        .into_iter()
        .enumerate()
        {
            let id = format!("r{i}");
            let (r, io) = run(dir.path(), &id, kind);
            let s = start(Ends(end), r, io).await.unwrap();
            assert_eq!(s.done.await.unwrap(), end);
            let rec = record(dir.path(), &id);
            assert_eq!(rec.kind, kind.as_str());
            assert_eq!(rec.status, end);
            assert_eq!(
                rec.reason.as_deref(),
                Some(format!("it was {end}").as_str())
            );
            assert!(rec.ended_at.is_some());
            // The run's hold went with it.
            assert!(!dir.path().join("live").join(format!("{id}.lock")).exists());
        }
    }

    #[tokio::test]
    async fn a_run_whose_process_is_gone_is_closed_and_a_live_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        drop(begun_elsewhere(dir.path(), "killed", false));
        let live = begun_elsewhere(dir.path(), "live", true);
        let (r, io) = run(dir.path(), "next", RunKind::Sprint);
        let s = start(Ends("completed"), r, io).await.unwrap();
        s.done.await.unwrap();
        let killed = record(dir.path(), "killed");
        assert_eq!(killed.status, "interrupted");
        assert!(killed.ended_at.is_some());
        assert!(
            killed
                .reason
                .is_some_and(|why| why.contains("found when run next started")),
        );
        let alive = record(dir.path(), "live");
        assert_eq!((alive.status.as_str(), alive.ended_at), ("running", None));
        // Once its process is gone, the next start closes it too.
        drop(live);
        let (r, io) = run(dir.path(), "after", RunKind::Team);
        start(Ends("completed"), r, io)
            .await
            .unwrap()
            .done
            .await
            .unwrap();
        assert_eq!(record(dir.path(), "live").status, "interrupted");
        assert_eq!(record(dir.path(), "next").status, "completed");
    }
}
