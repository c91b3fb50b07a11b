//! Starting a workflow as a session: the engine runs on its own task, events come out of one
//! channel and operations go into another.
//!
//! The front end reads [`Session::events`] and renders them; it sends [`Op`]s (an answer, a
//! deferral, cancellation) on [`Session::ops`]; [`Session::done`] yields the report. The agents'
//! own events are forwarded into the same stream as flat [`Event`]s.

use crate::ctx::Answer;
use crate::error::EngineError;
use crate::protocol::{Event, Op};
use crate::workflows::sprint::report::SprintReport;
use crate::workflows::sprint::{SprintEngine, recovery};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A running workflow.
pub struct Session {
    /// Operations in.
    pub ops: mpsc::UnboundedSender<Op>,
    /// Events out; closed when the run ends.
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The report, when the run ends.
    pub done: JoinHandle<SprintReport>,
}

/// Checks the project, then starts the sprint on the current tokio runtime. `interactive`: a
/// human can answer escalations as they are raised (otherwise they wait for `baton answer`).
/// `events` is the sender the engine's agents already report to (see
/// [`crate::setup::Setup::on_event`]), paired with `receiver`.
pub async fn start_sprint(
    engine: SprintEngine,
    interactive: bool,
    events: mpsc::UnboundedSender<Event>,
    receiver: mpsc::UnboundedReceiver<Event>,
) -> Result<Session, EngineError> {
    let (answer_tx, answer_rx) = mpsc::unbounded_channel();
    let run = engine.context(events.clone(), interactive.then_some(answer_rx));
    for message in recovery::preflight(&run).await? {
        let _ = events.send(Event::Notice { message });
    }
    let (ops_tx, mut ops_rx) = mpsc::unbounded_channel::<Op>();
    let cancel = engine.setup.cancel.clone();
    tokio::spawn(async move {
        while let Some(op) = ops_rx.recv().await {
            let answer = match op {
                Op::Cancel => {
                    cancel.cancel();
                    continue;
                }
                Op::Answer { id, choice } => Answer::Chose(id, choice),
                Op::Defer { id } => Answer::Later(id),
            };
            let _ = answer_tx.send(answer);
        }
    });
    let done = tokio::spawn(async move { engine.run(run).await });
    Ok(Session {
        ops: ops_tx,
        events: receiver,
        done,
    })
}
