//! `baton team`: ad-hoc dispatch of agents, with costs journaled and transcripts kept.

use crate::cli::TeamArgs;
use crate::commands::Code;
use anyhow::{Context, Result, bail};
use baton_agent::outcome::Status;
use baton_agent::runner::{AgentEvent, Budget, Mode, PROGRESS_EVERY_TOKENS};
use baton_agent::sandbox::Sandbox;
use baton_engine::setup::Setup;
use baton_engine::team::{self, Dispatch, TeamReport};
use baton_store::journal::{CostEntry, Journal, SqliteJournal};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A time-ordered run id.
pub fn run_id(kind: &str) -> String {
    let now = jiff::Timestamp::now();
    format!(
        "{kind}-{}-{}",
        now.strftime("%Y%m%dT%H%M%SZ"),
        std::process::id()
    )
}

fn dispatch(args: &TeamArgs) -> Result<(Dispatch, String)> {
    let (agents, task): (Option<Dispatch>, &str) =
        match (&args.parallel, &args.chain, args.args.as_slice()) {
            (Some(p), None, [task]) => (Some(Dispatch::Parallel(p.clone())), task),
            (None, Some(c), [task]) => (Some(Dispatch::Chain(c.clone())), task),
            (None, None, [agent, task]) => (Some(Dispatch::Single(agent.clone())), task),
            (None, None, [_]) => bail!("give an agent and a task: `baton team AGENT \"task\"`"),
            (_, _, [_, _]) => bail!(
                "with --parallel or --chain, give only the task: `baton team --chain a,b \"task\"`"
            ),
            _ => {
                bail!("usage: `baton team AGENT \"task\"` or `baton team --parallel a,b \"task\"`")
            }
        };
    let d = agents.context("no agents given")?;
    if let Dispatch::Parallel(v) | Dispatch::Chain(v) = &d
        && v.iter().any(|a| a.trim().is_empty())
    {
        bail!("an agent name in the list is empty");
    }
    if task.trim().is_empty() {
        bail!("the task is empty");
    }
    Ok((d, task.to_owned()))
}

/// Runs `baton team`.
pub fn run(root: &Path, args: &TeamArgs) -> Result<Code> {
    let (dispatch, task) = dispatch(args)?;
    super::sdd::check_budget_args(&args.budget)?;
    let cfg = super::sdd::with_budget(crate::project::config(root)?, &args.budget);
    let found = super::plumbing::discover_agents(root);
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let run_id = run_id("team");
    super::plumbing::begin_run(&journal, &run_id, "team")?;
    let ledger = Arc::new(Mutex::new(match crate::project::ledger(&cfg) {
        Ok(l) => Ok(l),
        Err(e) => Err(format!("the sprint is not available: {e:#}")),
    }));
    let mode = if args.yolo {
        Mode::Yolo
    } else {
        Mode::Standard
    };
    let setup = build_setup(
        root,
        &cfg,
        found.agents,
        mode,
        args.model.clone(),
        &run_id,
        ledger,
        journal.clone(),
        (!args.json).then(|| Arc::new(progress) as baton_agent::runner::EventFn),
    )?;
    let rt = super::plumbing::runtime()?;
    // On Ctrl-C or SIGTERM the agents end `cancelled` at their next await, keeping what they did.
    crate::interrupt::cancel_on_signal(&rt, setup.cancel.clone())?;
    let report = rt.block_on(team::run(&setup, &dispatch, &task, cfg.concurrency))?;
    let (code, status, reason) = verdict(&report);
    super::plumbing::end_run(&journal, &run_id, status, &reason)?;
    if args.json {
        let out = serde_json::json!({ "run_id": run_id, "report": report });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_report(&report, &run_id);
    }
    Ok(code)
}

fn verdict(report: &TeamReport) -> (Code, &'static str, String) {
    if report.all_completed {
        return (Code::Ok, "completed", String::new());
    }
    let first_bad = report.steps.iter().find(|o| o.status != Status::Completed);
    let reason = first_bad
        .map(|o| {
            format!(
                "{}: {}",
                o.agent,
                o.reason.clone().unwrap_or_else(|| o.status.as_str().into())
            )
        })
        .unwrap_or_else(|| "not every agent ran".into());
    match first_bad.map(|o| (o.status, o.reason.as_deref().unwrap_or_default())) {
        Some((Status::Escalated, _)) => (Code::Paused, "paused", reason),
        Some((Status::Cancelled, r)) if r.starts_with("budget") => {
            (Code::Budget, "stopped", reason)
        }
        Some((Status::Cancelled, _)) => (Code::Error, "cancelled", reason),
        _ => (Code::Error, "failed", reason),
    }
}

/// Prints an agent event as a plain progress line.
pub fn progress(e: &AgentEvent) {
    match e {
        AgentEvent::Started { agent, model } => eprintln!("[{agent}] started on {model}"),
        AgentEvent::Turn { agent, turn } => eprintln!("[{agent}] turn {turn}"),
        AgentEvent::ToolCall { agent, tool } => eprintln!("[{agent}] {tool}"),
        AgentEvent::Refused {
            agent,
            tool,
            reason,
        } => eprintln!("[{agent}] {tool} refused: {reason}"),
        AgentEvent::BudgetWarning { agent, message } => {
            eprintln!("[{agent}] budget warning: {message}")
        }
        AgentEvent::Finished { agent, status } => eprintln!("[{agent}] {}", status.as_str()),
        AgentEvent::UsageEstimated { agent, provider } => eprintln!(
            "[{agent}] warning: {}",
            super::sprint::estimated_warning(provider)
        ),
        AgentEvent::Streaming {
            agent,
            turn,
            output_tokens,
            elapsed_secs,
        } if output_tokens % 1000 < PROGRESS_EVERY_TOKENS => eprintln!(
            "[{agent}] turn {turn}: answering, {output_tokens} tokens in {}:{:02}",
            elapsed_secs / 60,
            elapsed_secs % 60
        ),
        AgentEvent::Usage { .. } | AgentEvent::Streaming { .. } => {}
    }
}

/// `1 turn`, `2 turns`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn print_report(report: &TeamReport, run_id: &str) {
    for (i, o) in report.steps.iter().enumerate() {
        println!(
            "── {}. {} ({}) — {}{}",
            i + 1,
            o.agent,
            o.model,
            o.status.as_str(),
            o.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        );
        if !o.summary.trim().is_empty() {
            println!("{}", o.summary.trim());
        }
        println!(
            "   {}, {} in / {} out tokens{}, ${:.4}{}",
            plural(u64::from(o.turns), "turn", "turns"),
            o.usage.total_input(),
            o.usage.output_tokens,
            if o.usage_estimated {
                " (estimated)"
            } else {
                ""
            },
            o.cost_usd,
            if o.files_changed.is_empty() {
                String::new()
            } else {
                format!(", changed: {}", o.files_changed.join(", "))
            }
        );
        if let Some(e) = &o.escalation {
            println!("   escalation: {} — {}", e.title, e.finding);
            for (n, opt) in e.options.iter().enumerate() {
                println!("     {}. {opt}", n + 1);
            }
        }
        if let Some(t) = &o.transcript {
            println!("   transcript: {}", t.display());
        }
    }
    if let Some(n) = report.stopped_at {
        println!("chain stopped at step {n}");
    }
    println!("run {run_id}: total ${:.4}", report.cost_usd);
}

/// Builds the agents' shared setup: sandbox, budget, providers, sprint tools, cost ledger.
#[allow(clippy::too_many_arguments)]
pub fn build_setup(
    root: &Path,
    cfg: &crate::config::Config,
    agents: std::collections::BTreeMap<String, baton_agent::definition::AgentDef>,
    mode: Mode,
    model: Option<String>,
    run_id: &str,
    ledger: baton_engine::sprint_tools::SharedLedger,
    journal: Arc<Mutex<SqliteJournal>>,
    on_event: Option<baton_agent::runner::EventFn>,
) -> Result<Setup> {
    let sandbox = Sandbox::with_protected(root, &cfg.sandbox_deny, &cfg.protected())?;
    let sprint_tools = baton_engine::sprint_tools::tools(ledger, &agents, Some(run_id.to_owned()));
    let mut setup = Setup::new(
        root.to_path_buf(),
        agents,
        cfg.providers.clone(),
        cfg.prices.clone(),
        mode,
        Arc::new(Budget::new(cfg.budget)),
        Arc::new(sandbox),
        cfg.commands.clone(),
    );
    setup.extra_tools = sprint_tools;
    // `--model` wins over everything, `[agents.roles]` over `[agents] model`.
    if model.is_none() {
        setup.role_models = cfg.role_models.clone();
    }
    setup.model_override = model.or(cfg.agent_model.clone());
    setup.cli = crate::cli_workers::config(cfg);
    setup.transcript_dir = Some(cfg.runs_dir().join(run_id));
    setup.max_turns = cfg.max_turns;
    setup.timeout = cfg.agent_timeout;
    setup.max_tokens = cfg.agent_max_tokens;
    setup.agent_max_tokens = cfg.agent_overrides_max_tokens.clone();
    let ledger_run = run_id.to_owned();
    let cost_journal = journal.clone();
    setup.on_call = Some(Arc::new(move |c| {
        if let Ok(mut j) = cost_journal.lock() {
            let _ = j.record_cost(&CostEntry {
                run_id: Some(ledger_run.clone()),
                step_id: None,
                at: jiff::Timestamp::now().to_string(),
                model: c.model.clone(),
                input_tokens: c.usage.input_tokens,
                output_tokens: c.usage.output_tokens,
                cache_read_tokens: c.usage.cache_read_tokens,
                cache_write_tokens: c.usage.cache_write_tokens,
                cost_usd: c.cost_usd,
                estimated: c.estimated,
            });
        }
    }));
    setup.on_event = on_event;
    setup.tdd = super::tdd::core(cfg, journal.clone(), "native")?.map(Arc::new);
    setup.rules = super::tdd::context_rules(cfg)?;
    setup.rules_journal = Some((journal, "native".to_owned()));
    Ok(setup)
}
