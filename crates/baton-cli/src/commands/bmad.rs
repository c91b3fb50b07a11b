//! `baton bmad`: BMad's own installed skills, run unattended by the `bmad` workflow of the
//! engine; their sessions, checkpoints and rollback, and a queue of skill runs.
//!
//! This module finds the skill and what it is run with (its instructions, the project's BMad
//! configuration resolved, the tier, the party roster, the limits), and reports. The loop
//! itself is the engine's (`baton_engine::workflows::bmad`); checkpoints and hooks around each
//! turn are `bmad_hooks`'s.

use crate::cli::{BmadCommand, BmadRunArgs, BmadSkillsArgs, BmadStatusArgs};
use crate::commands::Code;
use crate::render;
use anyhow::{Context, Result, bail};
use baton_agent::runner::Mode;
use baton_core::autopilot::tier::Tier;
use baton_engine::run::{JournalHandle, RunKind, RunSpec};
use baton_engine::sprint::RunEnd;
use baton_engine::workflows::bmad::history::History;
use baton_engine::workflows::bmad::party::{Persona, Roster};
use baton_engine::workflows::bmad::{Bmad, BmadReport, Limits, task};
use baton_store::bmad_skills::{self, Skill};
use baton_store::journal::{Journal, SqliteJournal};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[path = "bmad_hooks.rs"]
mod hooks;
#[path = "bmad_parts.rs"]
mod parts;

/// The agent that runs skills unless `--agent` or `[bmad] agent` says otherwise.
pub const DEFAULT_AGENT: &str = "bmad-skill";

/// Runs `baton bmad …`.
pub fn run(root: &Path, cmd: &BmadCommand) -> Result<Code> {
    match cmd {
        BmadCommand::Run(a) => run_skill(root, a),
        BmadCommand::Status(a) => status(root, a),
        BmadCommand::Skills(a) => skills(root, a),
        BmadCommand::Rollback(a) => parts::rollback(root, a),
        BmadCommand::Queue(q) => parts::queue(root, q),
        BmadCommand::Watch(a) => parts::watch(root, a),
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read `{}`", path.display()))
}

/// The input given inline or in a file (read now).
pub fn input_of(root: &Path, inline: Option<&str>, file: Option<&Path>) -> Result<Option<String>> {
    match (inline, file) {
        (Some(i), _) => Ok(Some(i.to_owned())),
        (None, Some(f)) => Ok(Some(read(&root.join(f))?)),
        (None, None) => Ok(None),
    }
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

/// The skill's instructions: its `SKILL.md`, and for a headless run the headless protocol and
/// its schemas.
fn instructions(root: &Path, skill: &Skill, headless: bool) -> Result<String> {
    let mut text = read(&skill.instructions)?;
    if headless {
        for extra in ["references/headless.md", "assets/headless-schemas.md"] {
            let p = skill.dir().join(extra);
            if p.is_file() {
                text.push_str(&format!("\n\n## `{}`\n\n{}", rel(root, &p), read(&p)?));
            }
        }
    }
    Ok(text)
}

/// Who can be called to a party: BMad's `bmad-party-mode` skill and its agent personas.
fn roster(root: &Path, round: Option<Duration>) -> Roster {
    let skills = bmad_skills::list(root).unwrap_or_default();
    let persona = |s: &Skill| {
        std::fs::read_to_string(&s.instructions)
            .ok()
            .map(|instructions| Persona {
                name: s.name.clone(),
                instructions,
            })
    };
    Roster {
        party_skill: skills
            .iter()
            .find(|s| s.name == "bmad-party-mode")
            .and_then(persona),
        personas: skills
            .iter()
            .filter(|s| s.name.starts_with("bmad-agent-"))
            .filter_map(persona)
            .collect(),
        round_timeout: round,
    }
}

/// The sessions of `skill` in the journal, oldest first: `<skill>-1`, `<skill>-2`, …
pub fn sessions(journal: &SqliteJournal, skill: &str) -> Result<Vec<(String, History)>> {
    let mut out = Vec::new();
    for n in 1.. {
        let session = format!("{skill}-{n}");
        let steps = journal.steps_for_key(&format!("bmad:{session}"))?;
        if steps.is_empty() {
            break;
        }
        let h = History::read(&steps)?;
        out.push((session, h));
    }
    Ok(out)
}

/// The tier and where it came from, by the override priority: explicit, profile, setting,
/// hint, then a suggestion from the project and the input.
fn pick_tier(
    root: &Path,
    args: &BmadRunArgs,
    setting: Option<u8>,
    input: Option<&str>,
) -> Result<(u8, String)> {
    if let Some(t) = args.tier {
        return Ok((t, "--tier".into()));
    }
    if let Some(p) = &args.profile {
        let t = match p.as_str() {
            "fast" => 1,
            "balanced" => 2,
            "careful" => 4,
            other => bail!("unknown profile `{other}`: use fast, balanced or careful"),
        };
        return Ok((t, format!("--profile {p}")));
    }
    if let Some(t) = setting {
        return Ok((t, "[bmad] tier".into()));
    }
    let signals = super::init::brownfield_signals(root);
    let project = baton_core::plan::tier::Project {
        brownfield: !signals.is_empty(),
        source_files: super::init::count_sources(root, 10_000),
    };
    if let Some(h) = &args.hint {
        let s = baton_core::plan::tier::suggest_tier(h, project);
        return Ok((s.tier, format!("--hint ({})", s.signals.join(", "))));
    }
    let s = baton_core::plan::tier::suggest_tier(input.unwrap_or_default(), project);
    Ok((
        s.tier,
        format!(
            "suggested for a {} project{}",
            if project.brownfield {
                "brownfield"
            } else {
                "greenfield"
            },
            if s.signals.is_empty() {
                String::new()
            } else {
                format!(" ({})", s.signals.join(", "))
            }
        ),
    ))
}

fn run_skill(root: &Path, args: &BmadRunArgs) -> Result<Code> {
    let style = match args.progress.as_str() {
        "verbose" => render::Style::Plain,
        "summary" => render::Style::pick(false, std::io::stderr().is_terminal()),
        "silent" => render::Style::Quiet,
        "stream" => render::Style::Json,
        other => bail!("unknown progress mode `{other}`: use verbose, summary, silent or stream"),
    };
    let style = if args.json {
        render::Style::Quiet
    } else {
        style
    };
    super::budget_args::check_budget_args(&args.budget)?;
    let mut cfg = super::budget_args::with_budget(crate::project::config(root)?, &args.budget);
    let skill = bmad_skills::find(root, &args.skill)?;
    let headless = skill.headless.is_some() && !args.conversational;
    let input = input_of(root, args.input.as_deref(), args.input_file.as_deref())?;
    let journal = Arc::new(Mutex::new(SqliteJournal::open(&cfg.journal_path())?));
    let known = {
        let j = journal
            .lock()
            .map_err(|_| anyhow::anyhow!("the journal lock is poisoned"))?;
        sessions(&j, &skill.name)?
    };
    // Resume the last session unless it ended (or a fresh one is asked for); a resumed session
    // keeps the tier and input it started with unless they are given again.
    let resumed = known
        .last()
        .filter(|(_, h)| h.ended().is_none() && !args.fresh)
        .cloned();
    let b = cfg.bmad.clone();
    let (session, tier, tier_from, input) = match &resumed {
        Some((s, h)) => {
            let start = h.start();
            let (tier, from) = match (args.tier.is_some() || args.profile.is_some(), start) {
                (false, Some(st)) => (st.tier, "the session".to_owned()),
                _ => pick_tier(root, args, b.tier, input.as_deref())?,
            };
            let input = input.or_else(|| start.and_then(|st| st.input.clone()));
            (s.clone(), tier, from, input)
        }
        None => {
            let (tier, from) = pick_tier(root, args, b.tier, input.as_deref())?;
            (
                format!("{}-{}", skill.name, known.len() + 1),
                tier,
                from,
                input,
            )
        }
    };
    let tier = Tier::new(tier).context("the tier must be 0 to 4")?;
    let patterns = b
        .validation_patterns
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|p| {
            regex::Regex::new(p)
                .with_context(|| format!("baton.toml: [bmad] validation_patterns: `{p}` is not a valid regular expression"))
        })
        .collect::<Result<Vec<_>>>()?;
    let agent = args
        .agent
        .clone()
        .or(b.agent.clone())
        .unwrap_or_else(|| DEFAULT_AGENT.to_owned());
    let secs = |v: Option<u64>, d: u64| Duration::from_secs(v.unwrap_or(d));
    let limits = Limits {
        workflow: secs(b.workflow_timeout_secs, 1800),
        human: secs(b.human_timeout_secs, 300),
        menu_interval: Duration::from_millis(b.menu_interval_ms.unwrap_or(2000)),
        party_round: secs(b.party_round_secs, 120),
    };
    let found = super::plumbing::discover_agents(root);
    let run_id = super::team::run_id("bmad");
    let ledger = super::team::sprint_ledger(&cfg);
    let mode = if args.yolo {
        Mode::Yolo
    } else {
        Mode::Standard
    };
    cfg.agent_timeout = Duration::from_secs(b.agent_timeout_secs.unwrap_or(600));
    let (on_turn, hook_events) = hooks::turn_hook(root, &cfg, &session, &skill)?;
    let setup = super::team::build_setup(
        root,
        &cfg,
        found.agents,
        mode,
        args.model.clone(),
        &run_id,
        ledger,
        journal.clone(),
        Some(hook_events),
    )?;
    let skill_dir = rel(root, skill.dir());
    let workflow = Bmad {
        session: session.clone(),
        skill: task::Skill {
            name: skill.name.clone(),
            dir: skill_dir,
            instructions: instructions(root, &skill, headless)?,
            headless,
        },
        agent,
        input,
        tier,
        tier_from: tier_from.clone(),
        config: bmad_skills::config(root),
        validation_patterns: patterns,
        roster: roster(root, None),
        limits,
        date: jiff::Zoned::now().strftime("%Y-%m-%d").to_string(),
        on_turn: Some(on_turn),
    };
    if !args.json && !matches!(style, render::Style::Quiet) {
        eprintln!(
            "{} session {session} of `{}` ({}), tier {} ({tier_from})",
            if resumed.is_some() {
                "resuming"
            } else {
                "starting"
            },
            skill.name,
            if headless {
                "headless"
            } else {
                "conversational"
            },
            tier.level(),
        );
    }
    let interactive =
        !args.json && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    // Memlogs written from here on are this session's, offered for import when it completes.
    let started = std::time::SystemTime::now() - Duration::from_secs(1);
    let report = render::run(
        RunSpec {
            id: run_id.clone(),
            kind: RunKind::Bmad,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(journal),
            escalations_log: cfg.state_dir.join("escalations.log"),
            interactive,
            event_log: super::plumbing::event_log(&cfg),
        },
        workflow,
        style,
    )??;
    let code = code_of(report.end);
    let offers = match report.end {
        RunEnd::Completed => super::memory::memlog_offers(&cfg, started),
        _ => Vec::new(),
    };
    if args.json {
        let mut out =
            serde_json::json!({ "run_id": run_id, "tier": tier.level(), "report": report });
        if !offers.is_empty() {
            out["memlogs"] = serde_json::json!(super::memory::memlogs_since(&cfg, started));
        }
        println!(
            "{}",
            baton_core::secrets::redact(&serde_json::to_string_pretty(&out)?)
        );
    } else {
        print_report(&report);
        offers.iter().for_each(|o| println!("{o}"));
    }
    Ok(code)
}

/// The exit code of a run that ended so.
pub fn code_of(end: RunEnd) -> Code {
    match end {
        RunEnd::Completed => Code::Ok,
        RunEnd::Paused => Code::Paused,
        RunEnd::Stopped => Code::Budget,
        RunEnd::Cancelled | RunEnd::Failed | RunEnd::Interrupted => Code::Error,
    }
}

fn print_report(r: &BmadReport) {
    println!(
        "{} {}: {}{}",
        r.session,
        r.end.as_str(),
        baton_core::secrets::redact(&r.reason),
        r.escalation
            .map(|id| format!(
                " (`baton answer {id} …`, then `baton bmad run {}`)",
                r.skill
            ))
            .unwrap_or_default()
    );
    println!(
        "  {} turns, {} menus answered, {} parties, ${:.4} this run",
        r.turns, r.menus, r.parties, r.cost_usd
    );
}

fn status(root: &Path, args: &BmadStatusArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let journal = SqliteJournal::open(&cfg.journal_path())?;
    let names: Vec<String> = match &args.skill {
        Some(s) => vec![s.clone()],
        None => bmad_skills::list(root)?
            .into_iter()
            .map(|s| s.name)
            .collect(),
    };
    let mut rows = Vec::new();
    for name in names {
        for (session, h) in sessions(&journal, &name)? {
            let checkpoints = parts::checkpoint_steps(&cfg, &session);
            rows.push(serde_json::json!({
                "session": session,
                "skill": name,
                "turns": h.turns(),
                "menus": h.menus().len(),
                "parties": h.entries.iter().filter(|e| matches!(e, baton_engine::workflows::bmad::history::Entry::Party(_))).count(),
                "state": h.ended().map_or("unfinished".to_owned(), |e| e.end.clone()),
                "reason": h.ended().map(|e| e.reason.clone()),
                "tier": h.start().map(|s| s.tier),
                "checkpoints": checkpoints,
                "next": if h.ended().is_some() { None } else { Some(format!("turn {}", h.turns() + 1)) },
            }));
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(Code::Ok);
    }
    if rows.is_empty() {
        println!("no BMad skill sessions yet (`baton bmad run SKILL` starts one)");
    }
    for r in &rows {
        println!(
            "{}  {}  {} turns done, {} menus, {} parties{}{}",
            r["session"].as_str().unwrap_or_default(),
            r["state"].as_str().unwrap_or_default(),
            r["turns"],
            r["menus"],
            r["parties"],
            r["next"]
                .as_str()
                .map(|n| format!("; remaining: {n} onwards"))
                .unwrap_or_default(),
            r["reason"]
                .as_str()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default(),
        );
    }
    Ok(Code::Ok)
}

fn skills(root: &Path, args: &BmadSkillsArgs) -> Result<Code> {
    use baton_store::bmad_skills::Kind;
    let list = bmad_skills::list(root)?;
    if args.json {
        let rows: Vec<_> = list
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name,
                    "module": s.module,
                    "kind": s.kind,
                    "headless": s.headless.is_some(),
                    "declared": s.declared.map(|d| d.as_str()),
                    "path": rel(root, &s.instructions),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(Code::Ok);
    }
    if args.markdown {
        print!("{}", markdown(&list));
        return Ok(Code::Ok);
    }
    if list.is_empty() {
        println!("no BMad skills are installed here (`npx bmad-method install` installs them)");
        return Ok(Code::Ok);
    }
    let targets = baton_store::bmad_targets::installed(root);
    if !targets.is_empty() {
        println!(
            "installed for {}",
            targets
                .iter()
                .map(|t| format!("{} ({}, worker {})", t.id, t.dir, t.worker()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for s in list.iter().filter(|s| s.kind == Kind::Work) {
        println!(
            "{}{}  {}",
            s.name,
            if s.headless.is_some() {
                " (headless)"
            } else {
                ""
            },
            s.description
        );
    }
    let names = |k: Kind| {
        list.iter()
            .filter(|s| s.kind == k)
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let personas = names(Kind::Persona);
    if !personas.is_empty() {
        println!("party members (persona agents, not run on their own): {personas}");
    }
    let helpers = names(Kind::Helper);
    if !helpers.is_empty() {
        println!("BMad's helpers (about BMad itself, not work): {helpers}");
    }
    Ok(Code::Ok)
}

/// The tables docs/bmad.md shows: every tool target of BMad's installer with the folder its
/// skills go to and the worker that drives it, then every skill of `list` with how it runs.
fn markdown(list: &[Skill]) -> String {
    use baton_store::bmad_skills::Kind;
    let mut out =
        String::from("| tool target (`--tools`) | skills folder | baton worker |\n|---|---|---|\n");
    for t in baton_store::bmad_targets::TARGETS {
        out.push_str(&format!(
            "| `{}` ({}) | `{}` | {} |\n",
            t.id,
            t.name,
            t.dir,
            t.worker()
        ));
    }
    out.push_str("\n| skill | module | runs | headless declared by |\n|---|---|---|---|\n");
    for s in list {
        let runs = match s.kind {
            Kind::Persona => "party member",
            Kind::Helper => "helper (not listed as work)",
            Kind::Work if s.headless.is_some() => "headless",
            Kind::Work => "conversational",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            s.name,
            s.module,
            runs,
            s.declared
                .map_or_else(|| "–".to_owned(), |d| format!("`{}`", d.as_str()))
        ));
    }
    out
}
