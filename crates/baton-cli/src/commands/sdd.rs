//! `baton sdd PLAN.md`: subagent-driven development of a plan file. This module reads the plan,
//! wires the agents (the test-first guard on unless `--no-tdd`), renders the engine's events
//! (status lines, stages, commits, escalations; JSON lines with `--json`) and prints the report.

use super::budget_args::{check_budget_args, with_budget};
use super::team::{build_setup, run_id};
use crate::cli::SddArgs;
use crate::commands::Code;
use crate::config::Config;
use crate::render;
use anyhow::{Context, Result, bail};
use baton_agent::runner::Mode;
use baton_agent::tdd::{TddCore, TddMode};
use baton_core::sdd::{SddRules, parse_plan};
use baton_engine::run::{JournalHandle, RunKind, RunSpec};
use baton_engine::sdd::{Sdd, SddReport, SddSettings};
use baton_store::journal::SqliteJournal;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Arc, Mutex};

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
        cfg.tdd_settings(TddMode::Tdd),
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
    let no_sprint: baton_engine::sprint_tools::SharedLedger =
        Arc::new(Mutex::new(Err(baton_engine::sprint_tools::NoSprint(
            "`baton sdd` works without the sprint file".to_owned(),
        ))));
    let mut setup = build_setup(
        root,
        &cfg,
        found.agents,
        Mode::Yolo,
        args.run.model.clone(),
        &run_id,
        no_sprint,
        journal.clone(),
        None,
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
        allow_dirty: args.run.allow_dirty,
    };
    let json = args.run.json;
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let workflow = Sdd { settings, plan };
    let report = render::run(
        RunSpec {
            id: run_id,
            kind: RunKind::Sdd,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(journal),
            escalations_log: cfg.state_dir.join("escalations.log"),
            interactive,
            event_log: super::plumbing::event_log(&cfg),
        },
        workflow,
        render::Style::pick(json, false),
    )?;
    print_report(&report, json)?;
    Ok(super::plumbing::exit_code(report.end))
}
