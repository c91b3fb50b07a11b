//! The run: the one object every workflow (sprint, sdd, plan, team) works through.
//!
//! A [`Run`] holds what a run of any workflow shares: its id and kind, the clock, the journal
//! (through [`JournalHandle`]: the sprint ledger's connection, or a journal of its own), the
//! agents and their workers ([`Setup`]), the event stream with its sequence numbers, the answers
//! a human gives at a terminal, the `escalations.log` and the stage commits that failed. There
//! is one copy of each thing a workflow does with them: journal a step and run its agent on the
//! worker its role names ([`step`]), raise, wait for and resolve an escalation ([`escalate`]),
//! check the project and record the run's beginning and end ([`preflight`]). A workflow adds
//! only its own decisions and stages.

pub mod escalate;
pub mod preflight;
pub mod step;
pub mod unit;

use crate::clock::{Clock, SystemClock};
use crate::error::EngineError;
use crate::protocol::{Event, EventBody, Scope, UnitKey};
use crate::setup::Setup;
use crate::sprint_tools::SharedLedger;
use baton_agent::workspace::Workspace;
use baton_store::journal::{RunEvents, Store};
pub use escalate::Answer;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
pub use unit::Unit;

pub use baton_protocol::RunKind;

/// The token meter of a call's (or an agent run's) `usage` costing `cost_usd`: `Usage` keeps
/// uncached input, cache reads and cache writes apart, the meter's input is all three
/// (`baton_core::meter`, "The counting rule").
pub fn meter_of(usage: &baton_llm::Usage, cost_usd: f64) -> baton_core::meter::Meter {
    baton_core::meter::Meter::of_call(
        usage.input_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.output_tokens,
        cost_usd,
    )
}

/// How a run reaches the journal: through the sprint ledger (whose connection also writes the
/// sprint file's transitions), or through a journal of its own (a run without a sprint file).
#[derive(Clone)]
pub enum JournalHandle {
    /// The sprint ledger's journal.
    Ledger(SharedLedger),
    /// A journal of the run's own.
    Own(Arc<Mutex<dyn Store>>),
}

impl JournalHandle {
    /// Runs `f` on the journal.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn Store) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        match self {
            JournalHandle::Ledger(ledger) => {
                let mut guard = ledger
                    .lock()
                    .map_err(|_| EngineError::NoLedger("the ledger lock is poisoned".into()))?;
                match guard.as_mut() {
                    Ok(l) => f(&mut **l.journal_mut()),
                    Err(why) => Err(EngineError::NoLedger(why.to_string())),
                }
            }
            JournalHandle::Own(journal) => {
                let mut j = journal
                    .lock()
                    .map_err(|_| EngineError::NoLedger("the journal lock is poisoned".into()))?;
                f(&mut *j)
            }
        }
    }
}

/// Where a run's events are numbered and kept: the journal's run event log, so that a late
/// subscriber (a web page, another process) catches up from the journal and then follows live.
pub type EventLog = Box<dyn RunEvents + Send>;

/// What a run is built from: plain, already resolved values.
pub struct RunSpec {
    /// The run's id.
    pub id: String,
    /// Its workflow.
    pub kind: RunKind,
    /// The agents, their workers and the shared services (budget, cancellation, workspace).
    pub setup: Arc<Setup>,
    /// The journal.
    pub journal: JournalHandle,
    /// The append-only, human-readable escalation log.
    pub escalations_log: PathBuf,
    /// A human at a terminal can answer escalations as they are raised.
    pub interactive: bool,
    /// The journal's run event log (`None`: events are numbered in memory only).
    pub event_log: Option<EventLog>,
}

/// The numbering of a run's events.
struct Numbering {
    log: Option<EventLog>,
    last: u64,
}

/// What the front end holds of a run: the events coming out.
pub struct RunIo {
    /// Events out; closed when the run and every agent it started are gone.
    pub events: mpsc::UnboundedReceiver<Event>,
    answers: mpsc::UnboundedSender<Answer>,
}

impl RunIo {
    /// The sender answers travel on to a waiting escalation.
    pub(crate) fn answers(&self) -> mpsc::UnboundedSender<Answer> {
        self.answers.clone()
    }
}

/// A run of any workflow.
pub struct Run {
    /// The run's id.
    pub id: String,
    /// Its workflow.
    pub kind: RunKind,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Agents, workers and the shared services.
    pub setup: Arc<Setup>,
    /// The journal.
    pub journal: JournalHandle,
    /// The append-only escalation log.
    pub escalations_log: PathBuf,
    events: mpsc::UnboundedSender<Event>,
    numbering: Mutex<Numbering>,
    answers: Option<tokio::sync::Mutex<mpsc::UnboundedReceiver<Answer>>>,
    /// The escalation a human is being asked about now, if any.
    awaiting: Mutex<Option<i64>>,
    commit_failures: Mutex<Vec<String>>,
    memory_warned: std::sync::atomic::AtomicBool,
    /// The token meter of every agent the run ran.
    usage: Mutex<baton_core::meter::Meter>,
}

impl Run {
    /// A run on the system clock, and the front end's end of it.
    pub fn new(spec: RunSpec) -> (Arc<Run>, RunIo) {
        Run::with_clock(spec, Arc::new(SystemClock))
    }

    /// A run on `clock`.
    pub fn with_clock(spec: RunSpec, clock: Arc<dyn Clock>) -> (Arc<Run>, RunIo) {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (answers_tx, answers_rx) = mpsc::unbounded_channel();
        let run = Run {
            id: spec.id,
            kind: spec.kind,
            clock,
            setup: spec.setup,
            journal: spec.journal,
            escalations_log: spec.escalations_log,
            events: events_tx,
            numbering: Mutex::new(Numbering {
                log: spec.event_log,
                last: 0,
            }),
            answers: spec
                .interactive
                .then(|| tokio::sync::Mutex::new(answers_rx)),
            awaiting: Mutex::new(None),
            commit_failures: Mutex::new(Vec::new()),
            memory_warned: std::sync::atomic::AtomicBool::new(false),
            usage: Mutex::new(baton_core::meter::Meter::default()),
        };
        (
            Arc::new(run),
            RunIo {
                events: events_rx,
                answers: answers_tx,
            },
        )
    }

    /// The project's own workspace (the main tree).
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.setup.workspace
    }

    /// The unit `key`, working in the project's own workspace.
    pub fn unit(&self, key: UnitKey) -> Unit {
        Unit::new(key, self.workspace().clone())
    }

    /// The token meter of every agent the run ran so far: the sum of what their model calls
    /// reported, priced (the same calls the cost ledger holds for the run).
    pub fn usage(&self) -> baton_core::meter::Meter {
        self.usage.lock().map(|u| *u).unwrap_or_default()
    }

    /// Runs `f` on the journal.
    pub fn with_journal<T>(
        &self,
        f: impl FnOnce(&mut dyn Store) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        self.journal.with(f)
    }

    /// Whether the run was cancelled.
    pub fn cancelled(&self) -> bool {
        self.setup.cancel.is_cancelled()
    }

    /// Dollars spent in this run so far.
    pub fn spent(&self) -> f64 {
        self.setup.budget.spent().usd
    }

    /// Why the budget allows no more work, if it does not.
    pub fn budget_exhausted(&self) -> Option<String> {
        match self.setup.budget.check(Default::default()) {
            baton_core::budget::BudgetState::Exhausted(why) => Some(why),
            _ => None,
        }
    }

    /// Numbers an event about `scope` in the journal's run event log and sends it (a front end
    /// that went away is not the engine's problem). The number is taken and the event sent under
    /// one lock, so the stream's order is the journal's. A log that fails once is given up for
    /// the run (the events still flow, numbered on from the last number in memory): events are
    /// progress, never state a decision reads.
    pub fn emit(&self, scope: Scope, body: EventBody) {
        let at = self.clock.now().rfc3339;
        let Ok(mut n) = self.numbering.lock() else {
            return;
        };
        let journaled = n.log.as_mut().and_then(|log| {
            let scope_json = serde_json::to_string(&scope).ok()?;
            let body_json = serde_json::to_string(&body).ok()?;
            let seq = log
                .append_event(&self.id, &at, &scope_json, &body_json)
                .ok()?;
            u64::try_from(seq).ok()
        });
        if journaled.is_none() {
            n.log = None;
        }
        let seq = journaled.unwrap_or(n.last + 1);
        n.last = seq;
        let _ = self.events.send(Event {
            run: self.id.clone(),
            seq,
            at,
            scope,
            body,
        });
    }

    /// Sends an event about the run as a whole.
    pub fn emit_run(&self, body: EventBody) {
        self.emit(Scope::Run, body);
    }

    /// Sends an event about `unit`.
    pub fn emit_unit(&self, unit: &UnitKey, body: EventBody) {
        self.emit(Scope::Unit(unit.clone()), body);
    }

    /// A callback for the agent events of `unit` (`None`: the run's own agents), for workers.
    pub fn agent_events(self: &Arc<Run>, unit: Option<UnitKey>) -> baton_agent::runner::EventFn {
        let run = Arc::downgrade(self);
        Arc::new(move |e| {
            if let Some(run) = run.upgrade() {
                let agent = agent_of(e);
                run.emit(
                    Scope::Agent {
                        unit: unit.clone(),
                        agent,
                    },
                    crate::protocol::agent_body(e),
                );
            }
        })
    }

    /// Commits what changed in `unit`'s workspace with `message` (`None`: the run's own commit
    /// in the main tree), reporting the commit, or why it failed, as an event. A failure is
    /// remembered ([`Run::commit_failures`]) and returned: a stage whose commit failed is not
    /// done, and its caller stops there.
    pub async fn commit(&self, unit: Option<&Unit>, message: String) -> Result<(), EngineError> {
        self.commit_stage(unit, message, false).await
    }

    /// [`Run::commit`]; with `allow_empty`, the commit is made even when git has nothing to
    /// stage (the stage's work is in files git ignores), so the stage is still on record.
    pub async fn commit_stage(
        &self,
        unit: Option<&Unit>,
        message: String,
        allow_empty: bool,
    ) -> Result<(), EngineError> {
        let key = unit.map_or_else(|| "-".to_owned(), |u| u.key.journal_key());
        let scope = unit.map_or(Scope::Run, |u| Scope::Unit(u.key.clone()));
        let workspace = unit.map_or(self.workspace(), |u| &u.workspace);
        if unit.is_none() {
            // The run's own commit takes whatever is left: git is asked about the whole tree.
            workspace.forget();
        }
        match workspace.commit(&message, allow_empty).await {
            Ok(Some(_)) => {
                self.emit(scope, EventBody::Commit { key, message });
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => {
                if let Ok(mut f) = self.commit_failures.lock() {
                    f.push(format!("{message}: {e}"));
                }
                self.emit(
                    scope,
                    EventBody::CommitFailed {
                        key,
                        message: message.clone(),
                        error: e.to_string(),
                    },
                );
                Err(EngineError::CommitFailed { message, source: e })
            }
        }
    }

    /// The stage commits that failed in this run, `message: why` each.
    pub fn commit_failures(&self) -> Vec<String> {
        self.commit_failures
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default()
    }
}

/// The agent an agent event is about.
fn agent_of(e: &baton_agent::runner::AgentEvent) -> String {
    use baton_agent::runner::AgentEvent as A;
    match e {
        A::Started { agent, .. }
        | A::Turn { agent, .. }
        | A::ToolCall { agent, .. }
        | A::Refused { agent, .. }
        | A::Usage { agent, .. }
        | A::Streaming { agent, .. }
        | A::UsageEstimated { agent, .. }
        | A::BudgetWarning { agent, .. }
        | A::Finished { agent, .. } => agent.clone(),
    }
}
