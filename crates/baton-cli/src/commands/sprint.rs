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
use baton_core::budget::FanOut;
use baton_core::meter::Meter;
use baton_engine::answer::{AnswerError, Recorded};
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
    super::budget_args::check_budget_args(&args.run.budget)?;
    let cfg = super::budget_args::with_budget(crate::project::config(root)?, &args.run.budget);
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
    if settings.parallel > 1
        && let Some(code) = confirm_fan_out(&cfg, &settings, args)?
    {
        return Ok(code);
    }
    let report = run_sprint(root, &cfg, args, settings)?;
    print_report(&report, args.run.json)?;
    Ok(exit_code(&report))
}

/// Before stories start in parallel: says what they are projected to cost against the budget
/// and, in standard mode, asks to go on. `Some(code)`: do not start. With `--yolo` the run goes
/// on unless the projection crosses the hard limit.
fn confirm_fan_out(
    cfg: &Config,
    settings: &SprintSettings,
    args: &SprintArgs,
) -> Result<Option<Code>> {
    let stories = match &args.stories {
        Some(list) => list.len(),
        None => unfinished_stories(cfg).min(settings.batch),
    };
    if stories < 2 {
        return Ok(None);
    }
    let projection = cfg.budget.fan_out(0.0, average_story(cfg), stories);
    eprintln!("projected cost: {}", projection.text());
    if args.yolo {
        if matches!(projection, FanOut::Over(_)) {
            eprintln!(
                "not started: the projection crosses the hard limit; lower --batch or --parallel, \
                 or raise `[budget] hard_usd`"
            );
            return Ok(Some(Code::Budget));
        }
        return Ok(None);
    }
    let interactive =
        !args.run.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    if !interactive {
        eprintln!(
            "standard mode asks before starting stories in parallel: run `baton sprint` at a \
             terminal to answer, pass --yolo to go on unless the hard limit would be crossed, or \
             --parallel 1"
        );
        return Ok(Some(Code::Paused));
    }
    eprint!("start them, up to {} at once? [y/N] ", settings.parallel);
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    if matches!(line.trim(), "y" | "Y" | "yes") {
        Ok(None)
    } else {
        eprintln!("not started");
        Ok(Some(Code::Paused))
    }
}

/// Stories not done (nor waiting for a human) in the sprint file.
fn unfinished_stories(cfg: &Config) -> usize {
    let Ok(doc) = baton_store::sprint_file::SprintDoc::load(&cfg.sprint_status) else {
        return 0;
    };
    doc.sprint()
        .unique()
        .filter(|e| matches!(e.key.kind(), baton_core::key::KeyKind::Story { .. }))
        .filter(|e| {
            !matches!(
                e.effective(),
                baton_core::status::StatusValue::Known(
                    baton_core::status::Status::Done
                        | baton_core::status::Status::NeedsIntervention
                )
            )
        })
        .count()
}

/// What a finished story used on average: the cost ledger's lines of the stories done (their
/// dollars priced with the cache's rates), over those stories; for a journal from before the
/// ledger named each call's step, the cost of the runs that finished stories, over the stories
/// they finished. `None` before the first story is done.
fn average_story(cfg: &Config) -> Option<Meter> {
    use baton_store::journal::{CostLedger, EventFilter};
    let journal = crate::project::journal(cfg).ok()?;
    let events = journal.events(&EventFilter::default()).ok()?;
    let mut runs = std::collections::BTreeSet::new();
    let mut stories = std::collections::BTreeSet::new();
    let mut done = 0u32;
    for e in &events {
        if e.to == "done"
            && matches!(
                baton_core::key::classify(&e.key),
                baton_core::key::KeyKind::Story { .. }
            )
            && let Some(run) = &e.run_id
        {
            runs.insert(run.clone());
            stories.insert(e.key.clone());
            done += 1;
        }
    }
    if done == 0 {
        return None;
    }
    let by_key = journal.usage_by_key(None).ok()?;
    let metered: Vec<Meter> = stories
        .iter()
        .filter_map(|k| by_key.get(k).copied())
        .collect();
    if let Ok(n) = u32::try_from(metered.len())
        && n > 0
    {
        return Some(metered.into_iter().sum::<Meter>().per(n));
    }
    let total: f64 = runs
        .iter()
        .filter_map(|r| CostLedger::total_cost(&journal, Some(r)).ok())
        .sum();
    Some(Meter {
        cost_usd: total / f64::from(done),
        ..Meter::default()
    })
}

/// Runs `baton escalations`.
pub fn escalations(root: &Path, args: &EscalationsArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let journal = crate::project::journal(&cfg)?;
    let list: Vec<EscalationView> = journal
        .escalations(!args.all)?
        .iter()
        .map(|e| baton_engine::protocol::escalation_view(e, false))
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

/// Records `typed` (an option's number, id or label) as the answer to escalation `id`, and
/// writes the answer's event to the run event log: the one code path of `baton answer` and the
/// board's answer form (`baton_engine::answer`).
pub fn record_answer(cfg: &Config, id: i64, typed: &str) -> Result<Result<Recorded, AnswerError>> {
    let mut journal = crate::project::journal(cfg)?;
    let now = jiff::Timestamp::now().to_string();
    Ok(baton_engine::answer::record_answer(
        &mut journal,
        id,
        typed,
        &now,
    ))
}

/// Runs `baton answer`.
pub fn answer(root: &Path, args: &AnswerArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let recorded = match record_answer(&cfg, args.id, &args.choice)? {
        Ok(r) => r,
        Err(AnswerError::Journal(e)) => return Err(e.into()),
        Err(e) => bail!("{e}"),
    };
    if let Some(why) = &recorded.event_error {
        eprintln!("warning: the answer stands, but open boards learn of it only on reload: {why}");
    }
    println!(
        "escalation #{} answered: {}\nnext: {} continues with it",
        recorded.id, recorded.label, recorded.next
    );
    // The first option is the one baton recommends; choosing another is a correction worth
    // remembering, when the person says so.
    let confirm = || {
        if args.remember {
            return true;
        }
        if args.no_remember || !std::io::stdin().is_terminal() {
            return false;
        }
        eprint!(
            "Remember this choice over the recommended one as a preference for later work? [y/N] "
        );
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).is_ok()
            && matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
    };
    match super::memory::learn_from_answer(
        root,
        &recorded.escalation,
        &recorded.label,
        recorded.recommended.as_deref(),
        args.why.as_deref(),
        confirm,
    ) {
        Ok(made) => made.iter().for_each(|line| println!("{line}")),
        Err(err) => eprintln!("warning: the answer stands, but it was not remembered: {err:#}"),
    }
    Ok(Code::Ok)
}
