//! `baton plan` and `baton chat`: the planning pipeline from an idea to a sprint plan, and the
//! router for people who just talk.
//!
//! This module parses the user's intent (a new idea, `--continue`, `--from`, `--tier`), prints
//! the tier suggestion with its signals, runs the engine's planning workflow, and renders each
//! artifact's path and summary. The decisions (which step, when to stop) are the engine's.

use crate::commands::Code;
use crate::plan_args::PlanArgs;
use crate::render;
use anyhow::{Context, Result, bail};
use baton_agent::runner::Mode;
use baton_core::plan::docs::{ReqKind, parse_architecture, parse_epics, parse_prd};
use baton_core::plan::pipeline::{DocState, PlanDecision, PlanStep};
use baton_core::plan::tier::{Project, suggest_tier};
use baton_engine::run::{JournalHandle, RunKind, RunSpec};
use baton_engine::workflows::plan::{
    self as engine, Paths, PlanEnd, PlanOptions, PlanRun, PlanState, StepDone,
};
use baton_store::journal::SqliteJournal;
use baton_store::ledger::Now;
use baton_store::planning::shown;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Source files counted at most when sizing a brownfield codebase.
const COUNT_LIMIT: usize = 5000;

fn project_shape(root: &Path) -> Project {
    let signals = super::init::brownfield_signals(root);
    Project {
        brownfield: !signals.is_empty(),
        source_files: super::init::count_sources(root, COUNT_LIMIT),
    }
}

fn project_name(root: &Path) -> String {
    root.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".to_owned())
}

fn idea_of(args: &PlanArgs) -> Result<Option<String>> {
    let idea = match (&args.idea, &args.idea_file) {
        (Some(i), _) => Some(i.clone()),
        (None, Some(f)) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("cannot read the idea file `{}`", f.display()))?,
        ),
        (None, None) => None,
    };
    match idea {
        Some(i) if i.trim().is_empty() => {
            bail!("the idea is empty; say in a sentence what to build")
        }
        other => Ok(other),
    }
}

/// `6 functional and 3 non-functional requirements`.
fn requirements(functional: usize, non_functional: usize) -> String {
    let noun = if functional + non_functional == 1 {
        "requirement"
    } else {
        "requirements"
    };
    format!("{functional} functional and {non_functional} non-functional {noun}")
}

/// A one-line summary of an artifact, computed from the file (no model).
fn summary(root: &Path, done: &StepDone) -> String {
    let text = std::fs::read_to_string(&done.path).unwrap_or_default();
    let n = |k: usize, one: &str, many: &str| super::team::plural(k as u64, one, many);
    let sections = n(
        text.lines().filter(|l| l.starts_with("## ")).count(),
        "section",
        "sections",
    );
    let name = shown(root, &done.path);
    match done.step {
        PlanStep::Prd | PlanStep::QuickSpec => {
            let prd = parse_prd(&name, &text);
            let count = |k| prd.requirements.iter().filter(|r| r.id.kind == k).count();
            format!(
                "{sections}, {}",
                requirements(count(ReqKind::Fr), count(ReqKind::Nfr))
            )
        }
        PlanStep::Architecture => format!(
            "{sections}, {}",
            n(
                parse_architecture(&name, &text).decisions.len(),
                "decision",
                "decisions"
            )
        ),
        PlanStep::Epics => {
            let e = parse_epics(&name, &text);
            format!(
                "{}, {}; cross-reference check: {}",
                n(e.epics.len(), "epic", "epics"),
                n(e.stories().count(), "story", "stories"),
                n(done.findings.len(), "finding", "findings")
            )
        }
        PlanStep::Readiness => match done.verdict {
            Some(v) => format!(
                "verdict {} ({}){}",
                v.word(),
                v.alias(),
                if done.capped {
                    ", capped from PASS by a high-severity finding"
                } else {
                    ""
                }
            ),
            None => "no verdict".to_owned(),
        },
        PlanStep::SprintPlanning => match &done.sprint {
            Some(r) => format!(
                "{} added, {} raised, {} kept, {} orphan(s)",
                r.added.len(),
                r.raised.len(),
                r.kept,
                r.orphans.len()
            ),
            None => String::new(),
        },
        PlanStep::Brief => sections,
    }
}

fn print_run(root: &Path, run: &PlanRun) {
    for d in &run.ran {
        println!("✓ {:<15} {}", d.step.name(), shown(root, &d.path));
        let s = summary(root, d);
        if !s.is_empty() {
            println!("  {s}");
        }
        if matches!(d.step, PlanStep::Epics | PlanStep::Readiness) && !d.findings.is_empty() {
            super::check::print_findings(&d.findings);
        }
        if let Some(r) = &d.sprint {
            for (k, s) in &r.orphans {
                println!("  ? {k}: {s} (kept; no longer in the epics)");
            }
        }
    }
    match &run.end {
        PlanEnd::Paused { next } => {
            println!(
                "Stopped before the {next} step. Read and edit the files above if you like, then run \
                 `baton plan --continue` (the next agent reads them as they are)."
            );
        }
        PlanEnd::Done => println!("The plan is complete. Build it with `baton sprint`."),
        PlanEnd::Blocked { reason } => println!("Blocked: {reason}"),
        PlanEnd::Failed { step, reason } => println!(
            "The {step} step failed: {reason}. Completed artifacts are untouched; run \
             `baton plan --continue` to retry it."
        ),
    }
}

/// Runs `baton plan` / `baton chat`.
pub fn run(root: &Path, args: &PlanArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let mut paths = Paths {
        root: root.to_path_buf(),
        planning: cfg.planning.clone(),
        sprint_status: cfg.sprint_status.clone(),
        stories: cfg.stories.clone(),
        spec_slug: None,
    };
    let now = Now::system();
    let today = jiff::Zoned::now().strftime("%Y-%m-%d").to_string();
    let saved = engine::load_state(&cfg.state_dir)?;
    let idea = idea_of(args)?;
    let from = match &args.from {
        Some(s) => Some(PlanStep::parse(s).with_context(|| {
            format!(
                "unknown step `{s}`; steps: {}",
                PlanStep::ALL.map(PlanStep::name).join(", ")
            )
        })?),
        None => None,
    };
    let state = match (&idea, saved) {
        (Some(idea), _) => {
            let shape = project_shape(root);
            println!(
                "Project: {}, {} source file{}",
                if shape.brownfield {
                    "brownfield"
                } else {
                    "greenfield"
                },
                shape.source_files,
                if shape.source_files == 1 { "" } else { "s" }
            );
            let suggestion = suggest_tier(idea, shape);
            let tier = args.tier.unwrap_or(suggestion.tier);
            let confidence = serde_json::to_value(suggestion.confidence)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            println!(
                "Suggested tier {} ({confidence} confidence): {}",
                suggestion.tier,
                suggestion.signals.join("; ")
            );
            if args.tier.is_some() && tier != suggestion.tier {
                println!("Using tier {tier} (--tier).");
            }
            PlanState {
                idea: idea.trim().to_owned(),
                tier,
                signals: suggestion.signals,
            }
        }
        (None, Some(mut s)) => {
            if let Some(t) = args.tier {
                s.tier = t;
            }
            s
        }
        (None, None) if args.resume || from.is_some() => PlanState {
            idea: String::new(),
            tier: args.tier.unwrap_or(2),
            signals: vec!["no idea recorded: planning from the documents on disk".to_owned()],
        },
        (None, None) => PlanState {
            idea: String::new(),
            tier: args.tier.unwrap_or(2),
            signals: Vec::new(),
        },
    };
    // A new quick spec is named after the idea, as BMad's quick flow names its spec.
    if !state.idea.trim().is_empty() {
        paths.spec_slug = Some(baton_core::plan::bmad::slug(state.idea.trim()));
    }
    let routing = idea.is_none() && !args.resume && from.is_none();
    let view = engine::route(&paths, state.tier, &today);
    if routing {
        print_route(&view);
        if !args.yolo {
            converse(root, &cfg, args, &view);
            return Ok(Code::Ok);
        }
        if matches!(view.next, PlanDecision::Done | PlanDecision::Blocked { .. }) {
            return Ok(Code::Ok);
        }
        println!("YOLO: taking the recommended path.");
    }
    if idea.is_some()
        && view
            .steps
            .iter()
            .any(|(_, _, st)| *st == DocState::Complete)
    {
        println!(
            "note: the planning folder already holds complete artifacts; they are kept \
             (`baton plan --from STEP` redoes from a step)."
        );
    }
    engine::save_state(&cfg.state_dir, &state)?;
    let opts = PlanOptions {
        paths,
        checkpoints: cfg.state_dir.join("checkpoints"),
        project: project_name(root),
        date: today,
        stamp: now.stamp,
        sprint_header: super::sprint_skeleton::skeleton(
            &project_name(root),
            &shown(root, &cfg.stories),
            &now.stamp.to_string(),
        ),
        yolo: args.yolo,
        force_sprint: from == Some(PlanStep::SprintPlanning),
        lock_path: cfg.lock_path(),
        journal: None,
    };
    if let Some(step) = from
        && !baton_core::plan::pipeline::path(state.tier).contains(&step)
    {
        bail!(
            "tier {} does not have a {step} step; its steps are: {}",
            state.tier,
            baton_core::plan::pipeline::path(state.tier)
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(step) = from {
        for (artifact, checkpoint) in engine::redo_from(&opts, state.tier, step)? {
            println!(
                "Kept {} as {}",
                shown(root, &artifact),
                shown(root, &checkpoint)
            );
        }
    }
    let mut found = super::agents::discover(root);
    engine::planning_agents(&mut found.agents);
    for e in &found.errors {
        eprintln!("warning: agent definition skipped: {e}");
    }
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let run_id = super::team::run_id("plan");
    let ledger = Arc::new(Mutex::new(Err(baton_engine::sprint_tools::NoSprint(
        "the planning agents do not change the sprint".to_owned(),
    ))));
    let setup = super::team::build_setup(
        root,
        &cfg,
        found.agents,
        if args.yolo {
            Mode::Yolo
        } else {
            Mode::Standard
        },
        args.model.clone(),
        &run_id,
        ledger,
        journal.clone(),
        None,
    )?;
    let result = render::run(
        RunSpec {
            id: run_id,
            kind: RunKind::Plan,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(journal),
            escalations_log: cfg.state_dir.join("escalations.log"),
            interactive: false,
            event_log: super::plumbing::event_log(&cfg),
        },
        engine::Planning { opts, state },
        render::Style::Plain,
    )?;
    let code = match &result {
        Ok(r) => match &r.end {
            PlanEnd::Done | PlanEnd::Paused { .. } => Code::Ok,
            PlanEnd::Blocked { .. } | PlanEnd::Failed { .. } => Code::Error,
        },
        Err(_) => Code::Error,
    };
    let run = result?;
    print_run(root, &run);
    Ok(code)
}

fn print_route(view: &engine::RouteView) {
    println!("Planning (tier {}):", view.tier);
    for (step, path, state) in &view.steps {
        let mark = match state {
            DocState::Complete => "✓",
            DocState::Started => "…",
            DocState::Missing => "·",
        };
        println!("  {mark} {:<15} {path}", step.name());
    }
    match &view.next {
        PlanDecision::Run { step, .. } | PlanDecision::Pause { next: step } => {
            println!(
                "Next: the {step} step — `baton plan --continue` (or `--yolo` to run the rest)."
            )
        }
        PlanDecision::Blocked { reason } => println!("Blocked: {reason}"),
        PlanDecision::Done => println!("Next: the plan is complete; `baton sprint` builds it."),
    }
    if view.steps.iter().all(|(_, _, s)| *s == DocState::Missing) {
        println!("Start with `baton plan \"your idea in a sentence\"`.");
    }
}

/// The router's conversation. A router that cannot run (no model configured, no network) is
/// reported and skipped: the state and the next step above are already the answer.
fn converse(root: &Path, cfg: &crate::config::Config, args: &PlanArgs, view: &engine::RouteView) {
    let mut found = super::agents::discover(root);
    engine::planning_agents(&mut found.agents);
    let Ok(journal) = SqliteJournal::open(&cfg.journal_path()) else {
        return;
    };
    let journal = Arc::new(Mutex::new(journal));
    let ledger = Arc::new(Mutex::new(Err(baton_engine::sprint_tools::NoSprint(
        "the router does not change the sprint".to_owned(),
    ))));
    let run_id = super::team::run_id("chat");
    let Ok(setup) = super::team::build_setup(
        root,
        cfg,
        found.agents,
        Mode::Standard,
        args.model.clone(),
        &run_id,
        ledger,
        journal,
        None,
    ) else {
        return;
    };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    match rt.block_on(engine::converse(&setup, view)) {
        Ok(text) if !text.trim().is_empty() => println!("\n{}", text.trim()),
        Ok(_) => {}
        Err(e) => eprintln!("note: the router could not talk: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::requirements;

    #[test]
    fn the_requirements_count_reads_as_english() {
        assert_eq!(
            requirements(6, 3),
            "6 functional and 3 non-functional requirements"
        );
        assert_eq!(
            requirements(1, 0),
            "1 functional and 0 non-functional requirement"
        );
    }
}
