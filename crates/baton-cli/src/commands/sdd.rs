//! `baton sdd PLAN.md`: subagent-driven development of a plan file. This module reads the plan,
//! wires the agents (the test-first guard on unless `--no-tdd`), renders the engine's events
//! (status lines, stages, commits, escalations; JSON lines with `--json`) and prints the report.

use super::team::{build_setup, run_id};
use crate::cli::{BudgetArgs, SddArgs};
use crate::commands::Code;
use crate::config::Config;
use anyhow::{Context, Result, bail};
use baton_agent::runner::Mode;
use baton_agent::tdd::{TddCore, TddMode};
use baton_core::sdd::{SddRules, parse_plan};
use baton_engine::ctx::Answer;
use baton_engine::protocol::Event;
use baton_engine::sdd::{SddEngine, SddEvent, SddReport, SddSettings};
use baton_store::journal::SqliteJournal;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// `cfg` with the command line's cost limits in place of `[budget]`'s.
pub fn with_budget(mut cfg: Config, b: &BudgetArgs) -> Config {
    if b.warn_usd.is_some() {
        cfg.budget.warn_usd = b.warn_usd;
    }
    if b.hard_usd.is_some() {
        cfg.budget.hard_usd = b.hard_usd;
    }
    cfg.budget.allow_over_budget |= b.allow_over_budget;
    cfg
}

/// Checks the command line's cost limits like `[budget]`'s.
pub fn check_budget_args(b: &BudgetArgs) -> Result<()> {
    for (flag, v) in [("--warn-usd", b.warn_usd), ("--hard-usd", b.hard_usd)] {
        if let Some(v) = v
            && !(v.is_finite() && v >= 0.0)
        {
            bail!("{flag} {v}: give a number of US dollars, 0 or more");
        }
    }
    Ok(())
}

/// The plan file relative to the project root (it must lie inside it).
fn relative_plan(root: &Path, plan: &Path) -> Result<String> {
    // A relative path is taken from the current directory, else from the project root.
    let abs = match std::env::current_dir() {
        _ if plan.is_absolute() => plan.to_path_buf(),
        Ok(cwd) if cwd.join(plan).is_file() => cwd.join(plan),
        _ => root.join(plan),
    };
    let abs = abs
        .canonicalize()
        .with_context(|| format!("cannot open the plan `{}`", plan.display()))?;
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot open the project `{}`", root.display()))?;
    let rel = abs.strip_prefix(&root).map_err(|_| {
        anyhow::anyhow!(
            "the plan `{}` is outside the project `{}`",
            plan.display(),
            root.display()
        )
    })?;
    Ok(rel.to_string_lossy().replace('\\', "/"))
}

fn print_event(e: &SddEvent, live_status: bool) {
    match e {
        SddEvent::Started {
            run_id,
            plan,
            tasks,
        } => eprintln!("run {run_id}: {plan}, {tasks} task(s)"),
        SddEvent::Status { line, .. } => {
            if live_status {
                eprintln!("{line}");
            }
        }
        SddEvent::Stage {
            task,
            stage,
            round,
            agent,
        } => eprintln!("[task {task}] {stage} round {round} by {agent}"),
        SddEvent::StageEnded {
            task,
            stage,
            outcome,
        } => eprintln!("[task {task}] {stage}: {outcome}"),
        SddEvent::Commit {
            message,
            error: None,
        } => eprintln!("committed: {message}"),
        SddEvent::Commit {
            message,
            error: Some(err),
        } => eprintln!("warning: could not commit `{message}`: {err}"),
        SddEvent::Escalation { escalation } => {
            eprintln!("escalation #{}: {}", escalation.id, escalation.title)
        }
        SddEvent::Notice { message } => eprintln!("note: {message}"),
        SddEvent::Agent { agent_event } => super::plumbing::print_agent_notice(agent_event),
    }
}

fn print_report(r: &SddReport, json: bool) -> Result<()> {
    if super::plumbing::print_run_report(r, json)? {
        return Ok(());
    }
    if let Some(e) = &r.escalation {
        super::plumbing::print_escalation(e, &format!("baton sdd {}", r.plan));
    }
    Ok(())
}

/// The test-first guard for the implementer: the project's, or `tdd` when the project has none.
fn guard(cfg: &Config, journal: &Arc<Mutex<SqliteJournal>>) -> Result<Arc<TddCore>> {
    let core = TddCore::new(
        super::tdd::settings(cfg, TddMode::Tdd),
        &cfg.root,
        journal.clone(),
        "native",
    )
    .with_context(|| format!("`{}`", cfg.root.join(crate::config::FILE_NAME).display()))?;
    Ok(Arc::new(core))
}

/// Runs `baton sdd`.
pub fn run(root: &Path, args: &SddArgs) -> Result<Code> {
    check_budget_args(&args.run.budget)?;
    let cfg = with_budget(crate::project::config(root)?, &args.run.budget);
    let plan_rel = relative_plan(root, &args.plan)?;
    let plan_path = root.join(&plan_rel);
    let text =
        baton_store::bounded::read_to_string(&plan_path, baton_store::bounded::DOCUMENT_LIMIT)
            .with_context(|| format!("cannot read the plan `{plan_rel}`"))?;
    let plan = parse_plan(&text).map_err(|e| anyhow::anyhow!("`{plan_rel}` {e}"))?;
    if args.max_iterations == Some(0) {
        bail!("--max-iterations 0: give 1 or more fix rounds");
    }
    let found = super::plumbing::discover_agents(root);
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let run_id = run_id("sdd");
    let (events_tx, mut events_rx) = tokio::sync::mpsc::unbounded_channel();
    let agent_tx = events_tx.clone();
    let on_agent: baton_agent::runner::EventFn = Arc::new(move |e| {
        let _ = agent_tx.send(SddEvent::Agent {
            agent_event: Event::from_agent(e),
        });
    });
    let no_sprint: baton_engine::sprint_tools::SharedLedger = Arc::new(Mutex::new(Err(
        "`baton sdd` works without the sprint file".to_owned(),
    )));
    let mut setup = build_setup(
        root,
        &cfg,
        found.agents,
        Mode::Yolo,
        args.run.model.clone(),
        &run_id,
        no_sprint,
        journal.clone(),
        Some(on_agent),
    )?;
    if args.no_tdd {
        setup.tdd = None;
    } else if setup.tdd.is_none() {
        setup.tdd = Some(guard(&cfg, &journal)?);
    }
    let settings = SddSettings {
        root: root.to_path_buf(),
        plan: plan_rel,
        rules: SddRules {
            max_iterations: args.max_iterations.unwrap_or(3),
            security: args.security,
            performance: args.performance,
        },
        tdd: setup.tdd.is_some(),
        escalations_log: cfg.state_dir.join("escalations.log"),
        allow_dirty: args.run.allow_dirty,
    };
    let setup = Arc::new(setup);
    let cancel = setup.cancel.clone();
    let cli_state = setup.cli.state_dir.clone();
    let json = args.run.json;
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let (answer_tx, answer_rx) = tokio::sync::mpsc::unbounded_channel();
    let engine = SddEngine::new(
        setup,
        journal,
        settings,
        run_id,
        events_tx,
        interactive.then_some(answer_rx),
    );
    let rt = super::plumbing::runtime()?;
    crate::interrupt::cancel_on_signal(&rt, cancel)?;
    let render = |e: &SddEvent| {
        if json {
            if let Ok(line) = serde_json::to_string(e) {
                println!("{line}");
            }
        } else {
            print_event(e, true);
        }
    };
    let report = rt.block_on(async {
        // Nothing a killed run left may edit the tree alongside this one.
        if let Some(dir) = &cli_state {
            for message in baton_agent::worker::cli::end_orphaned_workers(dir).await {
                eprintln!("note: {message}");
            }
        }
        let run = engine.run(&plan);
        tokio::pin!(run);
        let report = loop {
            tokio::select! {
                r = &mut run => break r,
                Some(e) = events_rx.recv() => {
                    render(&e);
                    if let SddEvent::Escalation { escalation } = &e
                        && escalation.awaiting
                    {
                        let view = escalation.clone();
                        let id = view.id;
                        let answer = match tokio::task::spawn_blocking(move || {
                            super::sprint::ask(&view)
                        })
                        .await
                        {
                            Ok(Some(choice)) => Answer::Chose(id, choice),
                            _ => Answer::Later(id),
                        };
                        let _ = answer_tx.send(answer);
                    }
                }
            }
        };
        while let Ok(e) = events_rx.try_recv() {
            render(&e);
        }
        report
    });
    print_report(&report, json)?;
    Ok(super::plumbing::exit_code(report.end))
}
