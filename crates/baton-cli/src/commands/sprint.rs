//! `baton sprint`, `baton escalations`, `baton answer`: the sprint's front end.
//!
//! The engine runs as a session (`baton_engine::session`); this module only renders its events
//! (a live line per story in a terminal, plain lines otherwise, JSON lines with `--json`) and
//! sends a human's answers and Ctrl-C back as operations.

use super::team::{build_setup, run_id};
use crate::cli::{AnswerArgs, EscalationsArgs, SprintArgs};
use crate::commands::Code;
use crate::config::Config;
use crate::render;
use anyhow::{Result, bail};
use baton_agent::runner::Mode;
use baton_core::escalation::{EscalationKind, choose};
use baton_engine::protocol::EscalationView;
use baton_engine::run::{JournalHandle, RunKind, RunSpec};
use baton_engine::sprint::{RunEnd, SprintEngine, SprintOptions, SprintReport, SprintSettings};
use baton_store::journal::{Journal, SqliteJournal};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The engine's settings from `baton.toml` and the flags.
pub fn settings(
    cfg: &Config,
    batch: Option<usize>,
    parallel: Option<usize>,
    stories: Option<Vec<String>>,
    allow_dirty: bool,
) -> Result<SprintSettings> {
    let s = &cfg.sprint;
    let opts = SprintOptions {
        batch: batch.or(s.batch),
        parallel: parallel.or(s.parallel),
        stories,
        story_review: s.story_review,
        qa: s.qa,
        max_review_rounds: s.max_review_rounds,
        min_findings: s.min_findings,
        test_command: s.test_command.clone(),
        test_timeout_secs: s.test_timeout_secs,
        checkpoints: s.checkpoints.clone(),
        story_timeout_secs: s.story_timeout_secs,
        run_timeout_secs: s.run_timeout_secs,
        retrospective: s.retrospective,
        allow_dirty,
    };
    Ok(SprintSettings::resolve(
        cfg.root.clone(),
        cfg.stories.clone(),
        cfg.planning.clone(),
        opts,
    )?)
}

/// Runs the sprint for `root` and returns the report (also used by `baton demo`).
pub fn run_sprint(
    root: &Path,
    cfg: &Config,
    args: &SprintArgs,
    settings: SprintSettings,
) -> Result<SprintReport> {
    let found = super::plumbing::discover_agents(root);
    let ledger = Arc::new(Mutex::new(Ok(crate::project::ledger(cfg)?)));
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let run_id = run_id("sprint");
    let mode = if args.yolo {
        Mode::Yolo
    } else {
        Mode::Standard
    };
    let setup = build_setup(
        root,
        cfg,
        found.agents,
        mode,
        args.run.model.clone(),
        &run_id,
        ledger.clone(),
        journal,
        None,
    )?;
    let json = args.run.json;
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let style = render::Style::pick(json, std::io::stderr().is_terminal());
    let escalations_log = settings.escalations_log.clone();
    let engine = SprintEngine::new(ledger.clone(), settings);
    render::run(
        RunSpec {
            id: run_id,
            kind: RunKind::Sprint,
            setup: Arc::new(setup),
            journal: JournalHandle::Ledger(ledger),
            escalations_log,
            interactive,
            event_log: super::plumbing::event_log(cfg),
        },
        engine,
        style,
    )
}

/// The exit code of a report.
pub fn exit_code(report: &SprintReport) -> Code {
    super::plumbing::exit_code(report.end)
}

/// Prints the report (YAML, or JSON).
pub fn print_report(report: &SprintReport, json: bool) -> Result<()> {
    if super::plumbing::print_run_report(report, json)? {
        return Ok(());
    }
    if let (RunEnd::Paused, Some(e)) = (report.end, &report.escalation) {
        super::plumbing::print_escalation(e, "baton sprint");
    }
    Ok(())
}

/// Runs `baton sprint`.
pub fn run(root: &Path, args: &SprintArgs) -> Result<Code> {
    super::sdd::check_budget_args(&args.run.budget)?;
    let cfg = super::sdd::with_budget(crate::project::config(root)?, &args.run.budget);
    if let Some(n) = args.parallel
        && !(1..=baton_config::limits::MAX_PARALLEL).contains(&n)
    {
        bail!(
            "--parallel {n}: give 1 to {} stories in flight at once",
            baton_config::limits::MAX_PARALLEL
        );
    }
    let settings = settings(
        &cfg,
        args.batch,
        args.parallel,
        args.stories.clone(),
        args.run.allow_dirty,
    )?;
    let report = run_sprint(root, &cfg, args, settings)?;
    print_report(&report, args.run.json)?;
    Ok(exit_code(&report))
}

/// Runs `baton escalations`.
pub fn escalations(root: &Path, args: &EscalationsArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let journal = crate::project::journal(&cfg)?;
    let list: Vec<EscalationView> = journal
        .escalations(!args.all)?
        .iter()
        .map(|e| EscalationView::of(e, false))
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(Code::Ok);
    }
    if list.is_empty() {
        println!("no {}escalations", if args.all { "" } else { "open " });
    }
    for e in &list {
        println!(
            "#{} [{}] {} ({})",
            e.id,
            e.key.as_deref().unwrap_or("-"),
            e.title,
            e.kind
        );
        println!("  {}", e.finding);
        for (i, o) in e.options.iter().enumerate() {
            println!("  {}. {o}", i + 1);
        }
        match &e.answer {
            Some(a) => println!("  answered: {a}"),
            None => println!(
                "  answer with: baton answer {} <1-{}>",
                e.id,
                e.options.len()
            ),
        }
    }
    Ok(Code::Ok)
}

/// Runs `baton answer`.
pub fn answer(root: &Path, args: &AnswerArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let mut journal = crate::project::journal(&cfg)?;
    let found = baton_store::journal::EscalationLog::escalation(&journal, args.id)?;
    let Some(e) = found.as_ref() else {
        bail!(
            "no escalation #{}; `baton escalations` lists the open ones",
            args.id
        );
    };
    let kind = EscalationKind::parse(&e.kind);
    if let Some(a) = &e.answer {
        bail!(
            "escalation #{} was already answered: {}",
            e.id,
            baton_core::escalation::Choice::label_of(kind, a)
        );
    }
    let choice = choose(kind, &e.options, &args.choice).map_err(anyhow::Error::msg)?;
    journal.answer_escalation(e.id, &choice, &jiff::Timestamp::now().to_string())?;
    // A plan task's key is `sdd:<plan>#<id>`: `baton sdd <plan>` acts on its answer.
    let next = match e.key.as_deref().and_then(|k| k.strip_prefix("sdd:")) {
        Some(task) => format!(
            "`baton sdd {}`",
            task.rsplit_once('#').map_or(task, |(plan, _)| plan)
        ),
        None => "`baton sprint`".to_owned(),
    };
    println!(
        "escalation #{} answered: {}\nnext: {next} continues with it",
        e.id,
        baton_core::escalation::Choice::label_of(kind, &choice)
    );
    Ok(Code::Ok)
}
