//! Sprint tools for agents: read the board, and move a story through the validated, journaled
//! ledger — never by editing the sprint file directly.
//!
//! Every update goes through the transition table with the agent's role as the actor, so a
//! developer cannot pass its own review and a reviewer cannot start development.

use baton_agent::tools::{BoxFuture, Tool, ToolContext, ToolResult, str_arg};
use baton_core::actor::Actor;
use baton_core::next::next_action;
use baton_core::status::Status;
use baton_core::validate::{Options, validate};
use baton_llm::ToolSpec;
use baton_store::journal::BoxedStore;
use baton_store::ledger::{Ledger, Now, Request};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

/// The shared ledger; `Err` holds why there is none (no sprint file yet), which the tools return
/// to the model.
pub type SharedLedger = Arc<Mutex<Result<Ledger<BoxedStore>, NoSprint>>>;

/// Why a run has no sprint ledger (`baton sdd` and `baton plan` work without the sprint file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoSprint(pub String);

/// Both sprint tools over one ledger, with each agent's actor taken from its role.
pub fn tools(
    ledger: SharedLedger,
    agents: &BTreeMap<String, baton_agent::definition::AgentDef>,
    run_id: Option<String>,
) -> Vec<Arc<dyn Tool>> {
    let actors = agents
        .values()
        .map(|a| (a.name.clone(), actor_for_role(&a.role)))
        .collect();
    vec![
        Arc::new(ReadSprintStatus {
            ledger: ledger.clone(),
        }),
        Arc::new(UpdateSprintStatus {
            ledger,
            actors,
            run_id,
        }),
    ]
}

/// The actor for an agent role.
pub fn actor_for_role(role: &str) -> Actor {
    match role {
        "scrum-master" => Actor::ScrumMaster,
        "developer" | "implementer" => Actor::Developer,
        "reviewer" => Actor::Reviewer,
        "qa" => Actor::Qa,
        _ => Actor::Orchestrator,
    }
}

/// `read_sprint_status`.
pub struct ReadSprintStatus {
    /// The ledger.
    pub ledger: SharedLedger,
}

impl Tool for ReadSprintStatus {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_sprint_status".into(),
            description: "Read the sprint board. mode `data` (JSON entries and the next action), `interactive` (a markdown table) or `validate` (problems with line numbers).".into(),
            parameters: json!({
                "type": "object",
                "properties": {"mode": {"type": "string", "enum": ["data", "interactive", "validate"], "description": "default: data"}},
            }),
        }
    }

    fn writes(&self) -> bool {
        false
    }

    fn call<'a>(
        &'a self,
        args: &'a serde_json::Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let mode = args.get("mode").and_then(|m| m.as_str()).unwrap_or("data");
            let Ok(mut guard) = self.ledger.lock() else {
                return ToolResult::error("the sprint ledger is unavailable");
            };
            let ledger = match guard.as_mut() {
                Ok(l) => l,
                Err(why) => return ToolResult::error(why.to_string()),
            };
            if let Err(e) = ledger.refresh() {
                return ToolResult::error(e.to_string());
            }
            let sprint = ledger.doc().sprint();
            match mode {
                "data" => {
                    let entries: Vec<serde_json::Value> = sprint
                        .unique()
                        .map(|e| json!({"key": e.key.as_str(), "kind": e.key.kind().name(), "status": e.effective().as_str(), "line": e.line}))
                        .collect();
                    ToolResult::ok(
                        json!({"entries": entries, "next": next_action(sprint)}).to_string(),
                    )
                }
                "interactive" => {
                    let mut out = String::from("| key | status |\n|---|---|\n");
                    for e in sprint.unique() {
                        let _ = writeln!(out, "| {} | {} |", e.key, e.effective());
                    }
                    ToolResult::ok(out)
                }
                "validate" => {
                    let problems = validate(sprint, &Options::default());
                    if problems.is_empty() {
                        return ToolResult::ok("valid: no problems");
                    }
                    let mut out = String::new();
                    for p in problems {
                        let _ = writeln!(
                            out,
                            "line {}: {:?}: {}",
                            p.line.unwrap_or(0),
                            p.severity,
                            p.message
                        );
                    }
                    ToolResult::ok(out)
                }
                other => ToolResult::error(format!(
                    "unknown mode `{other}`; use data, interactive or validate"
                )),
            }
        })
    }
}

/// `update_sprint_status`.
pub struct UpdateSprintStatus {
    /// The ledger.
    pub ledger: SharedLedger,
    /// Agent name → actor.
    pub actors: BTreeMap<String, Actor>,
    /// Run id for the journal.
    pub run_id: Option<String>,
}

impl Tool for UpdateSprintStatus {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "update_sprint_status".into(),
            description: "Move a story (or an epic) to a new status. The move is checked against the workflow's transition table for your role and journaled; an illegal move is refused with the legal ones listed. The epic follows its stories automatically.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "story": {"type": "string", "description": "Story key, e.g. 1-2-login"},
                    "epic": {"type": "string", "description": "Epic key, e.g. epic-1 (when moving an epic itself)"},
                    "status": {"type": "string", "description": "New status"},
                    "note": {"type": "string", "description": "Optional note kept as a comment on the line"}
                },
                "required": ["status"]
            }),
        }
    }

    fn writes(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        args: &'a serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let status = match str_arg(args, "status") {
                Ok(s) => s,
                Err(e) => return e,
            };
            let Some(to) = Status::parse(status) else {
                return ToolResult::error(format!("unknown status `{status}`"));
            };
            let story = args.get("story").and_then(|v| v.as_str());
            let epic = args.get("epic").and_then(|v| v.as_str());
            let key = match (story, epic) {
                (Some(s), Some(e)) => {
                    let n = e.strip_prefix("epic-").unwrap_or_default();
                    if !s.starts_with(&format!("{n}-")) {
                        return ToolResult::error(format!("story `{s}` does not belong to `{e}`"));
                    }
                    s
                }
                (Some(s), None) => s,
                (None, Some(e)) => e,
                (None, None) => return ToolResult::error("give `story` or `epic`"),
            };
            let actor = self
                .actors
                .get(&ctx.agent)
                .copied()
                .unwrap_or(Actor::Orchestrator);
            let req = Request {
                key: key.to_owned(),
                to,
                actor,
                reason: format!("by agent `{}`", ctx.agent),
                note: args.get("note").and_then(|v| v.as_str()).map(str::to_owned),
                force: false,
                run_id: self.run_id.clone(),
            };
            let Ok(mut guard) = self.ledger.lock() else {
                return ToolResult::error("the sprint ledger is unavailable");
            };
            let ledger = match guard.as_mut() {
                Ok(l) => l,
                Err(why) => return ToolResult::error(why.to_string()),
            };
            match ledger.transition(&req, &Now::system()) {
                Ok(applied) if applied.is_empty() => {
                    ToolResult::ok(format!("`{key}` is already {to}"))
                }
                Ok(applied) => {
                    let lines: Vec<String> = applied
                        .iter()
                        .map(|a| format!("{}: {} → {}", a.key, a.from, a.to))
                        .collect();
                    ToolResult::ok(lines.join("\n"))
                }
                Err(e) => ToolResult::error(e.to_string()),
            }
        })
    }
}
