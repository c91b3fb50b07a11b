//! `baton sprint`, `baton escalations`, `baton answer`.

use super::team::{build_setup, progress, run_id};
use crate::cli::{AnswerArgs, EscalationsArgs, SprintArgs};
use crate::commands::Code;
use crate::config::Config;
use anyhow::{Context, Result, bail};
use baton_agent::runner::Mode;
use baton_core::dispatch::DispatchOptions;
use baton_core::status::Status;
use baton_engine::sprint::{
    HumanInput, RunEnd, SprintEngine, SprintEvent, SprintReport, SprintSettings, git,
};
use baton_store::journal::{EscalationRecord, Journal, SqliteJournal};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The engine's settings from `baton.toml` and the flags.
pub fn settings(
    cfg: &Config,
    batch: Option<usize>,
    stories: Option<Vec<String>>,
) -> Result<SprintSettings> {
    let s = &cfg.sprint;
    let checkpoints = s
        .checkpoints
        .clone()
        .unwrap_or_else(|| vec!["done".into()])
        .iter()
        .map(|c| {
            Status::parse(c)
                .with_context(|| format!("`[sprint] checkpoints`: unknown status `{c}`"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SprintSettings {
        root: cfg.root.clone(),
        stories_dir: cfg.stories.clone(),
        planning_dir: cfg.planning.clone(),
        escalations_log: cfg.root.join("_bmad-output").join("escalations.log"),
        batch: batch.or(s.batch).unwrap_or(3).max(1),
        stories,
        dispatch: DispatchOptions {
            story_review: s.story_review.unwrap_or(false),
            qa: s.qa.unwrap_or(false),
        },
        max_review_rounds: s.max_review_rounds.unwrap_or(3),
        min_findings: s.min_findings.unwrap_or(3),
        test_command: s.test_command.clone().filter(|c| !c.is_empty()),
        test_timeout: Duration::from_secs(s.test_timeout_secs.unwrap_or(900)),
        checkpoints,
        story_timeout: Duration::from_secs(s.story_timeout_secs.unwrap_or(7200)),
        run_timeout: Duration::from_secs(s.run_timeout_secs.unwrap_or(28_800)),
        loop_limit: 5,
        retrospective: s.retrospective.unwrap_or(false),
    })
}

/// A human at a terminal answers escalations on the spot.
struct Terminal;

impl HumanInput for Terminal {
    fn ask(&self, e: &EscalationRecord) -> Option<String> {
        eprintln!("\nescalation #{}: {}\n{}", e.id, e.title, e.finding);
        for (i, o) in e.options.iter().enumerate() {
            eprintln!("  {}. {o}", i + 1);
        }
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
            match choose(&e.options, line) {
                Ok(choice) => return Some(choice),
                Err(msg) => eprintln!("{msg}"),
            }
        }
    }
}

fn choose(options: &[String], choice: &str) -> Result<String, String> {
    if let Ok(n) = choice.parse::<usize>() {
        return options
            .get(n.wrapping_sub(1))
            .cloned()
            .ok_or_else(|| format!("option {n} does not exist; choose 1 to {}", options.len()));
    }
    options
        .iter()
        .find(|o| o.eq_ignore_ascii_case(choice.trim()))
        .cloned()
        .ok_or_else(|| {
            let list: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {o}", i + 1))
                .collect();
            format!(
                "`{choice}` is not an option; choose one of: {}",
                list.join("; ")
            )
        })
}

fn print_event(e: &SprintEvent) {
    match e {
        SprintEvent::RunStarted {
            run_id,
            stories,
            mode,
        } => {
            let mode = if *mode == Mode::Yolo {
                "YOLO"
            } else {
                "standard"
            };
            eprintln!("run {run_id} ({mode} mode): {}", stories.join(", "));
        }
        SprintEvent::Stage {
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
        SprintEvent::Transition { key, from, to } => eprintln!("[{key}] {from} → {to}"),
        SprintEvent::Tests { key, passed } => {
            eprintln!("[{key}] tests {}", if *passed { "pass" } else { "FAIL" });
        }
        SprintEvent::Commit { key, message } => eprintln!("[{key}] commit: {message}"),
        SprintEvent::CommitFailed {
            key,
            message,
            error,
        } => {
            eprintln!("[{key}] warning: could not commit `{message}`: {error}");
        }
        SprintEvent::Escalation { escalation } => {
            eprintln!(
                "[{}] escalation #{}: {}",
                escalation.key.as_deref().unwrap_or("-"),
                escalation.id,
                escalation.title
            );
        }
        SprintEvent::StoryFinished {
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
        SprintEvent::Agent { inner } => progress(inner),
    }
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
}

impl Live {
    fn show(&mut self, e: &SprintEvent) {
        let permanent = match e {
            SprintEvent::Stage {
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
            SprintEvent::Agent {
                inner:
                    baton_agent::runner::AgentEvent::Usage {
                        usage, cost_usd, ..
                    },
            } => {
                self.tokens += usage.total_input() + usage.output_tokens;
                self.cost += cost_usd;
                false
            }
            SprintEvent::Agent {
                inner: baton_agent::runner::AgentEvent::ToolCall { tool, .. },
            } => {
                self.stage = format!(
                    "{} · {tool}",
                    self.stage.split(" · ").next().unwrap_or_default()
                );
                false
            }
            SprintEvent::Agent { .. } => false,
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
        if !self.key.is_empty() && !matches!(e, SprintEvent::StoryFinished { .. }) {
            let secs = self.started.map_or(0, |s| s.elapsed().as_secs());
            let _ = write!(
                err,
                "[{}] {} · round {} · {} tokens · ${:.4} · {}:{:02}",
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    if !rt.block_on(git::is_repo(root)) {
        bail!(
            "`{}` is not a git repository; baton commits every stage of a story. Run `git init` first.",
            root.display()
        );
    }
    let interrupted = crate::project::journal(cfg)
        .ok()
        .and_then(|j| j.last_run("sprint").ok().flatten())
        .filter(|r| r.ended_at.is_none());
    if !args.allow_dirty {
        let dirty = rt.block_on(git::dirty(root)).map_err(anyhow::Error::msg)?;
        if let (false, Some(prev)) = (dirty.is_empty(), &interrupted) {
            // The uncommitted work is what the killed run left; the engine commits it first.
            eprintln!(
                "note: run {} was interrupted; its uncommitted work is kept and the sprint resumes",
                prev.id
            );
        } else if !dirty.is_empty() {
            bail!(
                "the working tree has uncommitted changes ({}{}); commit or stash them, or pass --allow-dirty",
                dirty.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                if dirty.len() > 5 { ", …" } else { "" }
            );
        }
    }
    let found = super::agents::discover(root);
    for n in &found.notices {
        eprintln!("note: {n}");
    }
    for e in &found.errors {
        eprintln!("warning: agent definition skipped: {e}");
    }
    let ledger = Arc::new(Mutex::new(Ok(crate::project::ledger(cfg)?)));
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let run_id = run_id("sprint");
    let mode = if args.yolo {
        Mode::Yolo
    } else {
        Mode::Standard
    };
    let json = args.json;
    let live = (!json && std::io::stderr().is_terminal()).then(|| Mutex::new(Live::default()));
    let emit: Arc<dyn Fn(&SprintEvent) + Send + Sync> = Arc::new(move |e: &SprintEvent| {
        if json {
            if let Ok(line) = serde_json::to_string(e) {
                println!("{line}");
            }
        } else if let Some(live) = &live {
            if let Ok(mut l) = live.lock() {
                l.show(e);
            }
        } else {
            print_event(e);
        }
    });
    let agent_emit = emit.clone();
    let on_agent: baton_agent::runner::EventFn =
        Arc::new(move |e| agent_emit(&SprintEvent::Agent { inner: e.clone() }));
    let setup = build_setup(
        root,
        cfg,
        found.agents,
        mode,
        args.model.clone(),
        &run_id,
        ledger.clone(),
        journal,
        Some(on_agent),
    )?;
    let cancel = setup.cancel.clone();
    let interactive = !json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let engine = SprintEngine {
        setup: Arc::new(setup),
        ledger,
        settings,
        run_id,
        on_event: Some(emit),
        human: interactive.then(|| Arc::new(Terminal) as Arc<dyn HumanInput>),
    };
    let report = rt.block_on(async {
        let run = engine.run();
        tokio::pin!(run);
        tokio::select! {
            r = &mut run => r,
            _ = tokio::signal::ctrl_c() => {
                // Agents stop at their next await; the run then ends `cancelled` and the journal
                // records it. Whatever step was interrupted runs again on the next `baton sprint`.
                cancel.cancel();
                run.await
            }
        }
    });
    Ok(report)
}

/// The exit code of a report.
pub fn exit_code(report: &SprintReport) -> Code {
    match report.end {
        RunEnd::Completed => Code::Ok,
        RunEnd::Paused => Code::Paused,
        RunEnd::Stopped => Code::Budget,
        RunEnd::Failed | RunEnd::Cancelled => Code::Error,
    }
}

/// Prints the report (YAML, or JSON).
pub fn print_report(report: &SprintReport, json: bool) -> Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "event": "report", "report": report }))?
        );
        return Ok(());
    }
    println!(
        "{}",
        serde_saphyr::to_string(report)
            .context("cannot render the report")?
            .trim_end()
    );
    if let (RunEnd::Paused, Some(e)) = (report.end, &report.escalation) {
        println!("\nescalation #{}: {}\n{}", e.id, e.title, e.finding);
        for (i, o) in e.options.iter().enumerate() {
            println!("  {}. {o}", i + 1);
        }
        println!(
            "answer with: baton answer {} <1-{}>, then run `baton sprint` again",
            e.id,
            e.options.len()
        );
    }
    Ok(())
}

/// Runs `baton sprint`.
pub fn run(root: &Path, args: &SprintArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let settings = settings(&cfg, args.batch, args.stories.clone())?;
    let report = run_sprint(root, &cfg, args, settings)?;
    print_report(&report, args.json)?;
    Ok(exit_code(&report))
}

/// Runs `baton escalations`.
pub fn escalations(root: &Path, args: &EscalationsArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let journal = crate::project::journal(&cfg)?;
    let list = journal.escalations(!args.all)?;
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
    if let Some(a) = &e.answer {
        bail!("escalation #{} was already answered: {a}", e.id);
    }
    let choice = choose(&e.options, &args.choice).map_err(anyhow::Error::msg)?;
    journal.answer_escalation(e.id, &choice, &jiff::Timestamp::now().to_string())?;
    println!(
        "escalation #{} answered: {choice}\nnext: `baton sprint` continues with it",
        e.id
    );
    Ok(Code::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_by_number_or_text() {
        let opts = vec!["another fix round".to_owned(), "stop".to_owned()];
        assert_eq!(choose(&opts, "1").unwrap(), "another fix round");
        assert_eq!(choose(&opts, "STOP").unwrap(), "stop");
        assert!(choose(&opts, "3").unwrap_err().contains("1 to 2"));
        assert!(choose(&opts, "0").is_err());
        assert!(
            choose(&opts, "maybe")
                .unwrap_err()
                .contains("1. another fix round")
        );
    }
}
