//! Starting any workflow as a session: the workflow runs on its own task, events come out of
//! one channel and operations go into another.
//!
//! The front end reads [`Session::events`] and renders them; it sends [`Op`]s (an answer, a
//! deferral, cancellation) on [`Session::ops`]; [`Session::done`] yields the report. An answer
//! to an escalation nobody is being asked about is rejected with an event at once.

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
    for message in workflow.preflight(&run).await? {
        run.emit_run(EventBody::Notice { message });
    }
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
    let done = tokio::spawn(workflow.run(run));
    Ok(Session {
        ops: ops_tx,
        events: io.events,
        done,
    })
}
