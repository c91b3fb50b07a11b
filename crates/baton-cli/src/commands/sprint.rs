//! `baton sprint`, `baton escalations`, `baton answer`: the sprint's front end.
//!
//! The engine runs as a session (`baton_engine::session`); this module only renders its events
//! (a live line per story in a terminal, plain lines otherwise, JSON lines with `--json`) and
//! sends a human's answers back as operations; Ctrl-C and SIGTERM cancel the run
//! ([`crate::interrupt`]).

use super::team::{build_setup, run_id};
use crate::cli::{AnswerArgs, EscalationsArgs, SprintArgs};
use crate::commands::Code;
use crate::config::Config;
use anyhow::{Context, Result, bail};
use baton_agent::runner::Mode;
use baton_core::escalation::{EscalationKind, choose};
use baton_engine::protocol::{EscalationView, Event, Op};
use baton_engine::session;
use baton_engine::sprint::{RunEnd, SprintEngine, SprintOptions, SprintReport, SprintSettings};
use baton_store::journal::{Journal, SqliteJournal};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The engine's settings from `baton.toml` and the flags.
pub fn settings(
    cfg: &Config,
    batch: Option<usize>,
    stories: Option<Vec<String>>,
    allow_dirty: bool,
) -> Result<SprintSettings> {
    let s = &cfg.sprint;
    let opts = SprintOptions {
        batch: batch.or(s.batch),
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

/// Asks the human at the terminal; `None`: answer later.
pub(crate) fn ask(e: &EscalationView) -> Option<String> {
    eprintln!("\nescalation #{}: {}\n{}", e.id, e.title, e.finding);
    for (i, o) in e.options.iter().enumerate() {
        eprintln!("  {}. {o}", i + 1);
    }
    let kind = EscalationKind::parse(&e.kind);
    let stored: Vec<String> = e.choices.iter().map(|c| c.id.clone()).collect();
    loop {
        eprint!(
            "choose 1-{} (or press Enter to answer later): ",
            e.options.len()
        );
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        match choose(kind, &stored, line) {
            Ok(choice) => return Some(choice),
            Err(msg) => eprintln!("{msg}"),
        }
    }
}

fn print_event(e: &Event) {
    match e {
        Event::RunStarted {
            run_id,
            stories,
            yolo,
        } => {
            let mode = if *yolo { "YOLO" } else { "standard" };
            eprintln!("run {run_id} ({mode} mode): {}", stories.join(", "));
        }
        Event::Notice { message } => eprintln!("note: {message}"),
        Event::Stage {
            key,
            stage,
            round,
            agent,
        } => {
            let r = if *round > 1 {
                format!(" round {round}")
            } else {
                String::new()
            };
            eprintln!("[{key}] {stage}{r} by {agent}");
        }
        Event::Transition { key, from, to } => eprintln!("[{key}] {from} → {to}"),
        Event::Tests {
            key,
            passed,
            interrupted,
        } => {
            let what = match (passed, interrupted) {
                (true, _) => "pass",
                (false, true) => "interrupted",
                (false, false) => "FAIL",
            };
            eprintln!("[{key}] tests {what}");
        }
        Event::Commit { key, message } if key == "-" => {
            eprintln!("committed baton's own changes: {message}")
        }
        Event::Commit { key, message } => eprintln!("[{key}] committed: {message}"),
        Event::CommitFailed {
            key,
            message,
            error,
        } => {
            eprintln!("[{key}] warning: could not commit `{message}`: {error}");
        }
        Event::Escalation { escalation } => {
            eprintln!(
                "[{}] escalation #{}: {}",
                escalation.key.as_deref().unwrap_or("-"),
                escalation.id,
                escalation.title
            );
        }
        Event::StoryFinished {
            key,
            status,
            reason,
        } => {
            eprintln!(
                "[{key}] {status}{}",
                reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
        }
        Event::AgentStarted { agent, model } => eprintln!("[{agent}] started on {model}"),
        Event::Turn { agent, turn } => eprintln!("[{agent}] turn {turn}"),
        Event::ToolCall { agent, tool } => eprintln!("[{agent}] {tool}"),
        e @ (Event::Refused { .. } | Event::BudgetWarning { .. } | Event::AgentFinished { .. }) => {
            super::plumbing::print_agent_notice(e)
        }
        Event::UsageEstimated { agent, provider } => {
            eprintln!("[{agent}] warning: {}", estimated_warning(provider))
        }
        // Without a live line, a long answer shows a line every thousand tokens or so.
        Event::Streaming {
            agent,
            turn,
            output_tokens,
            elapsed_secs,
        } if output_tokens % 1000 < baton_agent::runner::PROGRESS_EVERY_TOKENS => eprintln!(
            "[{agent}] turn {turn}: answering, {output_tokens} tokens in {}:{:02}",
            elapsed_secs / 60,
            elapsed_secs % 60
        ),
        Event::Usage { .. } | Event::Streaming { .. } => {}
    }
}

/// The one-time warning for a provider that streams no usage.
pub fn estimated_warning(provider: &str) -> String {
    format!(
        "provider `{provider}` streams no token usage: its token counts, costs and token \
         budgets are estimated from the text (about 4 characters a token)"
    )
}

/// A live status line per story in a terminal: stage, round, tokens, cost, elapsed. Events
/// that matter later (transitions, tests, commits, escalations) are printed above it.
#[derive(Default)]
struct Live {
    key: String,
    stage: String,
    round: u32,
    tokens: u64,
    cost: f64,
    started: Option<std::time::Instant>,
    /// The answer streaming in: (turn, output tokens so far, seconds since the call started).
    streaming: Option<(u32, u64, u64)>,
}

impl Live {
    fn show(&mut self, e: &Event) {
        let permanent = match e {
            Event::Stage {
                key,
                stage,
                round,
                agent,
            } => {
                if *key != self.key {
                    *self = Live {
                        key: key.clone(),
                        started: Some(std::time::Instant::now()),
                        ..Live::default()
                    };
                }
                self.stage = format!("{stage} ({agent})");
                self.round = *round;
                false
            }
            Event::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
                ..
            } => {
                self.tokens += input_tokens + output_tokens;
                self.cost += cost_usd;
                self.streaming = None;
                false
            }
            Event::Streaming {
                turn,
                output_tokens,
                elapsed_secs,
                ..
            } => {
                self.streaming = Some((*turn, *output_tokens, *elapsed_secs));
                false
            }
            Event::ToolCall { tool, .. } => {
                self.stage = format!(
                    "{} · {tool}",
                    self.stage.split(" · ").next().unwrap_or_default()
                );
                false
            }
            Event::Turn { .. } => {
                self.streaming = None;
                false
            }
            Event::AgentStarted { .. }
            | Event::Refused { .. }
            | Event::BudgetWarning { .. }
            | Event::AgentFinished { .. } => false,
            _ => true,
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        if permanent {
            let _ = err.flush();
            drop(err);
            print_event(e);
            err = std::io::stderr().lock();
        }
        if !self.key.is_empty() && !matches!(e, Event::StoryFinished { .. }) {
            let secs = self.started.map_or(0, |s| s.elapsed().as_secs());
            let answering = self
                .streaming
                .map(|(turn, tokens, call_secs)| {
                    format!(
                        " · turn {turn}: answering, {tokens} tokens in {}:{:02}",
                        call_secs / 60,
                        call_secs % 60
                    )
                })
                .unwrap_or_default();
            let _ = write!(
                err,
                "[{}] {} · round {} · {} tokens · ${:.4} · {}:{:02}{answering}",
                self.key,
                self.stage,
                self.round.max(1),
                self.tokens,
                self.cost,
                secs / 60,
                secs % 60
            );
        }
        let _ = err.flush();
    }
}

/// Runs the sprint for `root` and returns the report (also used by `baton demo`).
pub fn run_sprint(
    root: &Path,
    cfg: &Config,
    args: &SprintArgs,
    settings: SprintSettings,
) -> Result<SprintReport> {
    let rt = super::plumbing::runtime()?;
    let found = super::plumbing::discover_agents(root);
    let ledger = Arc::new(Mutex::new(Ok(crate::project::ledger(cfg)?)));
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let run_id = run_id("sprint");
    let mode = if args.yolo {
        Mode::Yolo
    } else {
        Mode::Standard
    };
    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let agent_tx = events_tx.clone();
    let on_agent: baton_agent::runner::EventFn = Arc::new(move |e| {
        let _ = agent_tx.send(Event::from_agent(e));
    });
    let setup = build_setup(
        root,
        cfg,
        found.agents,
        mode,
        args.run.model.clone(),
        &run_id,
        ledger.clone(),
        journal,
        Some(on_agent),
    )?;
    // Agents stop at their next await; the run then ends `cancelled` and the journal records
    // it. Whatever step was interrupted runs again on the next `baton sprint`.
    crate::interrupt::cancel_on_signal(&rt, setup.cancel.clone())?;
    let engine = SprintEngine::new(Arc::new(setup), ledger, settings, run_id);
    let json = args.run.json;
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let mut live = (!json && std::io::stderr().is_terminal()).then(Live::default);
    let render = move |e: &Event| {
        if json {
            if let Ok(line) = serde_json::to_string(e) {
                println!("{line}");
            }
        } else if let Some(live) = live.as_mut() {
            live.show(e);
        } else {
            print_event(e);
        }
    };
    rt.block_on(drive_session(
        engine,
        interactive,
        events_tx,
        events_rx,
        render,
    ))
}

/// Renders the session's events and answers for the human until the run ends.
async fn drive_session(
    engine: SprintEngine,
    interactive: bool,
    events_tx: tokio::sync::mpsc::UnboundedSender<Event>,
    events_rx: tokio::sync::mpsc::UnboundedReceiver<Event>,
    mut render: impl FnMut(&Event),
) -> Result<SprintReport> {
    let mut s = session::start_sprint(engine, interactive, events_tx, events_rx).await?;
    let mut done = s.done;
    let report = loop {
        tokio::select! {
            report = &mut done => break report.context("the sprint stopped unexpectedly")?,
            Some(e) = s.events.recv() => {
                render(&e);
                if let Event::Escalation { escalation } = &e
                    && escalation.awaiting
                {
                    let view = escalation.clone();
                    let id = view.id;
                    let op = match tokio::task::spawn_blocking(move || ask(&view)).await {
                        Ok(Some(choice)) => Op::Answer { id, choice },
                        _ => Op::Defer { id },
                    };
                    let _ = s.ops.send(op);
                }
            }
        }
    };
    while let Ok(e) = s.events.try_recv() {
        render(&e);
    }
    Ok(report)
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
    let settings = settings(&cfg, args.batch, args.stories.clone(), args.run.allow_dirty)?;
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
    let all = journal.escalations(false)?;
    let Some(e) = all.iter().find(|e| e.id == args.id) else {
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
