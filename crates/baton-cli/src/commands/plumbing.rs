//! The plumbing the commands that run agents share (`baton sprint`, `sdd`, `team`, `plan`):
//! discovering the agents with their notices, the async runtime, a run end's exit code, and the
//! lines that tell a person how to answer a paused run's escalation. The journal's record of a
//! run is the engine's (`baton_engine::run`).

use crate::commands::Code;
use anyhow::{Context, Result};
use baton_agent::discovery::Discovery;
use baton_engine::protocol::EscalationView;
use baton_engine::sprint::RunEnd;
use serde::Serialize;
use std::path::Path;

/// Discovers the agents of the project at `root`, printing the notices and the definitions
/// that were skipped to stderr.
pub fn discover_agents(root: &Path) -> Discovery {
    let found = super::agents::discover(root);
    for n in &found.notices {
        eprintln!("note: {n}");
    }
    for e in &found.errors {
        eprintln!("warning: agent definition skipped: {e}");
    }
    found
}

/// The async runtime a command's run is driven on.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The journal's run event log of the project `cfg` describes, on a connection of its own (an
/// event append never waits for the ledger's lock); `None` when the journal cannot be opened, and
/// the run's events are then numbered in memory.
pub fn event_log(cfg: &crate::config::Config) -> Option<baton_engine::run::EventLog> {
    baton_store::journal::SqliteJournal::open(&cfg.journal_path())
        .ok()
        .map(|j| Box::new(j) as baton_engine::run::EventLog)
}

/// The exit code of a run that ended `end`.
pub fn exit_code(end: RunEnd) -> Code {
    match end {
        RunEnd::Completed => Code::Ok,
        RunEnd::Paused => Code::Paused,
        RunEnd::Stopped => Code::Budget,
        RunEnd::Failed | RunEnd::Cancelled | RunEnd::Interrupted => Code::Error,
    }
}

/// Prints a run's report: one JSON line (`{"event":"report",…}`) when `json`, else YAML.
/// Whether it was JSON (nothing else is to be printed then).
pub fn print_run_report(report: &impl Serialize, json: bool) -> Result<bool> {
    if json {
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "event": "report", "report": report }))?
        );
        return Ok(true);
    }
    println!(
        "{}",
        serde_saphyr::to_string(report)
            .context("cannot render the report")?
            .trim_end()
    );
    Ok(false)
}

/// Prints the escalation a run paused on and how to answer it; `again` is the command that
/// resumes the run (`baton sprint`).
pub fn print_escalation(e: &EscalationView, again: &str) {
    println!("\nescalation #{}: {}\n{}", e.id, e.title, e.finding);
    for (i, o) in e.options.iter().enumerate() {
        println!("  {}. {o}", i + 1);
    }
    println!(
        "answer with: baton answer {} <1-{}>, then run `{again}` again",
        e.id,
        e.options.len()
    );
}
