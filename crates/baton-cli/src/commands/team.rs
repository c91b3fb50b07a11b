//! `baton team`: ad-hoc dispatch of agents, with costs journaled and transcripts kept.

use crate::cli::TeamArgs;
use crate::commands::Code;
use crate::render;
use anyhow::{Context, Result, bail};
use baton_agent::runner::{Budget, Mode};
use baton_agent::sandbox::Sandbox;
use baton_engine::run::{JournalHandle, RunKind, RunSpec};
use baton_engine::setup::Setup;
use baton_engine::sprint::RunEnd;
use baton_engine::team::{Dispatch, Team, TeamReport};
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

/// The sprint's ledger for the agents' sprint tools, or why there is none (the tools then say
/// so to the agent).
pub fn sprint_ledger(cfg: &crate::config::Config) -> baton_engine::sprint_tools::SharedLedger {
    Arc::new(Mutex::new(crate::project::ledger(cfg).map_err(|e| {
        baton_engine::sprint_tools::NoSprint(format!("the sprint is not available: {e:#}"))
    })))
}

/// Runs `baton team`.
pub fn run(root: &Path, args: &TeamArgs) -> Result<Code> {
    let (dispatch, task) = dispatch(args)?;
    super::budget_args::check_budget_args(&args.budget)?;
    let cfg = super::budget_args::with_budget(crate::project::config(root)?, &args.budget);
    let found = super::plumbing::discover_agents(root);
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let run_id = run_id("team");
    let ledger = sprint_ledger(&cfg);
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
        None,
    )?;
    let workflow = Team {
        dispatch,
        task,
        concurrency: cfg.concurrency,
    };
    // `--json` prints the report alone; otherwise each agent's progress goes to stderr.
    let style = if args.json {
        render::Style::Quiet
    } else {
        render::Style::Plain
    };
    let report = render::run(
        RunSpec {
            id: run_id.clone(),
            kind: RunKind::Team,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(journal),
            escalations_log: cfg.state_dir.join("escalations.log"),
            interactive: false,
            event_log: super::plumbing::event_log(&cfg),
        },
        workflow,
        style,
    )??;
    let code = match report.end {
        RunEnd::Completed => Code::Ok,
        RunEnd::Paused => Code::Paused,
        RunEnd::Stopped => Code::Budget,
        RunEnd::Cancelled | RunEnd::Failed | RunEnd::Interrupted => Code::Error,
    };
    if args.json {
        let out = serde_json::json!({ "run_id": run_id, "report": report });
        let text = serde_json::to_string_pretty(&out)?;
        println!("{}", baton_core::secrets::redact(&text));
    } else {
        print_report(&report, &run_id);
    }
    Ok(code)
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
            println!("{}", baton_core::secrets::redact(o.summary.trim()));
        }
        let cache = match (o.usage.cache_read_tokens, o.usage.cache_write_tokens) {
            (0, 0) => String::new(),
            (r, w) => format!(" ({r} cache read, {w} cache write)"),
        };
        println!(
            "   {}, {} in{cache} / {} out tokens{}, ${:.4}{}",
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
    // The external memory's write queue is baton's, like `.baton/`: no agent reads or plants
    // entries in it.
    let mut deny = cfg.sandbox_deny.clone();
    deny.push(format!(
        "{}/**",
        super::memory::queue_dir(cfg)
            .strip_prefix(root)
            .unwrap_or(Path::new(".memory-queue"))
            .display()
    ));
    let sandbox = Sandbox::with_protected(root, &deny, &cfg.protected())?;
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
    let models = cfg.agent_models(model);
    setup.role_models = models.role_models;
    setup.model_override = models.model_override;
    setup.cli = crate::cli_workers::config(cfg);
    setup.transcript_dir = Some(cfg.runs_dir().join(run_id));
    setup.max_turns = cfg.max_turns;
    setup.timeout = cfg.agent_timeout;
    setup.max_tokens = cfg.agent_max_tokens;
    setup.agent_max_tokens = cfg.agent_overrides_max_tokens.clone();
    setup.compaction = cfg.compaction;
    let ledger_run = run_id.to_owned();
    let cost_journal = journal.clone();
    // Each line names the step its call was made for, so the token meter sums stages and
    // stories from the ledger.
    setup.ledger = Some(Arc::new(move |c, step| {
        if let Ok(mut j) = cost_journal.lock() {
            let _ = j.record_cost(&CostEntry {
                run_id: Some(ledger_run.clone()),
                step_id: step,
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
    setup.memory = super::memory::for_run(cfg);
    Ok(setup)
}
