//! `baton remember`, `baton forget` and `baton memory`, and opening the memory for a run.
//!
//! The memory lives in `.baton/memory.db` beside the journal. It is loaded only for a trusted
//! project: a cloned repository can ship a memory database or queue of its own, and what it holds
//! would be put in front of every agent. An external backend (`[memory] external`) is run only
//! for a trusted project too, and its write queue is `.memory-queue/` beside the planning folder
//! (`_bmad-output/.memory-queue/`), out of agents' reach.

use super::Code;
use crate::cli::{
    ForgetArgs, MemoryCommand, MemoryImportArgs, MemoryListArgs, MemoryRecallsArgs,
    MemorySearchArgs, MemoryStatusArgs, RememberArgs,
};
use crate::config::Config;
use anyhow::{Context, Result, bail};
use baton_core::memory::{Draft, Kind, Scope, Source, sources};
use baton_engine::memory::Memory;
use baton_store::memory::degrade::{CommandBackend, Degrading, Health};
use baton_store::memory::queue::WriteQueue;
use baton_store::memory::{Curated, DEFAULT_CAP, Filter, MemoryError, SqliteMemory};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The memory database of a project.
pub fn db_path(cfg: &Config) -> PathBuf {
    cfg.state_dir.join("memory.db")
}

/// The write queue of the external backend: `.memory-queue/` beside the planning folder.
pub fn queue_dir(cfg: &Config) -> PathBuf {
    cfg.planning
        .parent()
        .unwrap_or(&cfg.root)
        .join(".memory-queue")
}

/// The default recall budget, in tokens.
const DEFAULT_RECALL_TOKENS: usize = 300;

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The memory of a run: `None` when it is off, when the project is untrusted (said once when
/// there is a memory it would have loaded), or when it cannot be opened (said, and the run goes
/// on without it).
pub fn for_run(cfg: &Config) -> Option<Arc<Memory>> {
    if !cfg.memory.enabled.unwrap_or(true) {
        return None;
    }
    if !cfg.trusted {
        if db_path(cfg).exists() || queue_dir(cfg).exists() {
            eprintln!(
                "note: this project's memory (`{}`) is not loaded until you review the project and run `baton trust`",
                rel(&cfg.root, &db_path(cfg))
            );
        }
        return None;
    }
    match open(cfg) {
        Ok(m) => Some(Arc::new(m)),
        Err(e) => {
            eprintln!("warning: {e}; going on without memory");
            None
        }
    }
}

fn open(cfg: &Config) -> Result<Memory, MemoryError> {
    let store = SqliteMemory::open(
        &db_path(cfg),
        cfg.memory.max_per_scope.unwrap_or(DEFAULT_CAP),
        now(),
    )?;
    let mut memory = Memory::new(
        Box::new(store),
        cfg.memory.recall_tokens.unwrap_or(DEFAULT_RECALL_TOKENS),
    )
    .skipping(cfg.memory.skip.clone().unwrap_or_default());
    if let Some(argv) = cfg.memory.external.clone() {
        let timeout = Duration::from_secs(cfg.memory.external_timeout_secs.unwrap_or(10));
        memory = memory.with_external(Degrading::new(
            CommandBackend::new(argv, timeout),
            WriteQueue::new(queue_dir(cfg)),
            Box::new(std::thread::sleep),
        ));
    }
    Ok(memory)
}

/// The memory for a command that reads or changes it: refused for an untrusted project or when
/// memory is off.
fn for_command(root: &Path) -> Result<(Config, Memory)> {
    let cfg = crate::project::config(root)?;
    if !cfg.memory.enabled.unwrap_or(true) {
        bail!("memory is off in `baton.toml` (`[memory] enabled = false`)");
    }
    if !cfg.trusted {
        bail!(
            "this project is not trusted, so its memory is not loaded: a cloned repository can \
             ship one. Review the project, then run `baton trust`"
        );
    }
    let memory = open(&cfg)?;
    Ok((cfg, memory))
}

/// Runs `baton remember`.
pub fn remember(root: &Path, args: &RememberArgs) -> Result<Code> {
    let (_, memory) = for_command(root)?;
    let kind = parse_kind(&args.kind)?;
    let mut draft = Draft::new(kind, Source::HumanFeedback, args.text.clone());
    draft.scope = Scope {
        epic: args.epic.clone(),
        globs: args.scopes.clone(),
    };
    if let Some(n) = args.importance {
        draft.importance = kind.clamp(n);
        if draft.importance != n {
            let (lo, hi) = kind.importance_range();
            eprintln!(
                "note: a {kind} has importance {lo}–{hi}; stored with {}",
                draft.importance
            );
        }
    }
    let curated = memory.learn(draft, now())?;
    let id = curated.id();
    if args.json {
        println!(
            "{}",
            serde_json::json!({"id": id, "strengthened": matches!(curated, Curated::Strengthened(_))})
        );
    } else {
        match curated {
            Curated::Added(_) => println!("remembered as m{id}"),
            Curated::Strengthened(_) => {
                println!("m{id} already held this; it is now stronger")
            }
        }
    }
    Ok(Code::Ok)
}

fn parse_kind(s: &str) -> Result<Kind> {
    Kind::parse(s).with_context(|| {
        format!(
            "unknown kind `{s}`; the kinds are {}",
            Kind::ALL.map(Kind::as_str).join(", ")
        )
    })
}

fn parse_id(s: &str) -> Result<i64> {
    s.trim()
        .trim_start_matches('m')
        .parse()
        .ok()
        .filter(|n: &i64| *n > 0)
        .with_context(|| format!("`{s}` is not a memory id; `baton memory list` shows them (m12)"))
}

/// Runs `baton forget`.
pub fn forget(root: &Path, args: &ForgetArgs) -> Result<Code> {
    let (_, memory) = for_command(root)?;
    let id = parse_id(&args.id)?;
    if !memory.with_store(|s| s.forget(id, now()))? {
        bail!("there is no memory m{id}; `baton memory list` shows them");
    }
    println!("forgot m{id}: it is no longer recalled");
    Ok(Code::Ok)
}

/// Runs `baton memory …`.
pub fn run(root: &Path, cmd: &MemoryCommand) -> Result<Code> {
    match cmd {
        MemoryCommand::List(a) => list(root, a),
        MemoryCommand::Search(a) => search(root, a),
        MemoryCommand::Recalls(a) => recalls(root, a),
        MemoryCommand::Import(a) => import(root, a),
        MemoryCommand::Status(a) => status(root, a),
    }
}

fn print(memories: &[baton_store::memory::Memory], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(memories)?);
        return Ok(());
    }
    if memories.is_empty() {
        println!("no memories");
        return Ok(());
    }
    for m in memories {
        let mut place = Vec::new();
        if let Some(e) = &m.scope.epic {
            place.push(format!("epic {e}"));
        }
        if !m.scope.globs.is_empty() {
            place.push(m.scope.globs.join(", "));
        }
        let place = if place.is_empty() {
            "project".to_owned()
        } else {
            place.join("; ")
        };
        let strength = if m.strength > 1 {
            format!(" ×{}", m.strength)
        } else {
            String::new()
        };
        println!(
            "m{} {} {}{strength} · {} · from {}{}\n    {}",
            m.id,
            m.kind,
            m.importance,
            place,
            m.source,
            m.unit
                .as_deref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default(),
            m.text
        );
    }
    Ok(())
}

fn list(root: &Path, args: &MemoryListArgs) -> Result<Code> {
    let (_, memory) = for_command(root)?;
    let filter = Filter {
        kind: args.kind.as_deref().map(parse_kind).transpose()?,
        source: None,
        limit: Some(args.limit),
    };
    print(&memory.with_store(|s| s.list(&filter))?, args.json)?;
    Ok(Code::Ok)
}

fn search(root: &Path, args: &MemorySearchArgs) -> Result<Code> {
    let (_, memory) = for_command(root)?;
    let found = memory.with_store(|s| s.search(&args.words.join(" "), args.limit))?;
    print(&found, args.json)?;
    Ok(Code::Ok)
}

fn recalls(root: &Path, args: &MemoryRecallsArgs) -> Result<Code> {
    let (_, memory) = for_command(root)?;
    let recalls = memory.with_store(|s| s.recalls(&args.unit))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&recalls)?);
        return Ok(Code::Ok);
    }
    if recalls.is_empty() {
        println!("{} was reminded of nothing", args.unit);
    }
    for r in recalls {
        let at = jiff::Timestamp::from_second(r.at)
            .map(|t| t.to_string())
            .unwrap_or_default();
        let ids: Vec<String> = r.memories.iter().map(|i| format!("m{i}")).collect();
        println!("{at} {} ({}): {}", r.stage, r.run_id, ids.join(", "));
    }
    Ok(Code::Ok)
}

fn import(root: &Path, args: &MemoryImportArgs) -> Result<Code> {
    let (_, memory) = for_command(root)?;
    let path = root.join(&args.memlog);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let entries = sources::memlog_entries(&text)
        .with_context(|| format!("`{}` is not a BMad memlog", path.display()))?;
    let unit = path
        .parent()
        .and_then(Path::file_name)
        .map_or_else(|| "memlog".to_owned(), |n| n.to_string_lossy().into_owned());
    // The same file however it is named on the command line (`./x`, an absolute path).
    let file = match (path.canonicalize(), root.canonicalize()) {
        (Ok(p), Ok(r)) => rel(&r, &p),
        _ => rel(root, &path),
    };
    let lessons = sources::memlog_lessons(&entries, &unit, &file);
    let (mut added, mut strengthened, mut before) = (0, 0, 0);
    for (origin, d) in lessons {
        match memory.learn_once(d, &origin, now())? {
            Some(Curated::Added(_)) => added += 1,
            Some(Curated::Strengthened(_)) => strengthened += 1,
            None => before += 1,
        }
    }
    let earlier = if before > 0 {
        format!(", {before} imported before (unchanged)")
    } else {
        String::new()
    };
    println!(
        "{} entries read: {added} new memories, {strengthened} strengthened{earlier}; the rest \
         (ideas, questions, notes, events) stay in the memlog",
        entries.len()
    );
    Ok(Code::Ok)
}

fn status(root: &Path, args: &MemoryStatusArgs) -> Result<Code> {
    let (cfg, memory) = for_command(root)?;
    let count = memory.with_store(|s| s.list(&Filter::default()))?.len();
    let health = memory.external_health(now()).transpose()?;
    let external = match &health {
        None => "none".to_owned(),
        Some(Health::Up) => "up".to_owned(),
        Some(Health::Degraded { queued, .. }) => {
            format!("not answering; {queued} writes queued")
        }
        Some(Health::Unavailable { .. }) => {
            "unavailable (down for over 4 hours); writes are queued".to_owned()
        }
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "path": db_path(&cfg),
                "memories": count,
                "recall_tokens": cfg.memory.recall_tokens.unwrap_or(DEFAULT_RECALL_TOKENS),
                "external": external,
            })
        );
    } else {
        println!(
            "memory: {} ({count} memories, {} tokens recalled at most per step)\nexternal backend: {external}",
            rel(&cfg.root, &db_path(&cfg)),
            cfg.memory.recall_tokens.unwrap_or(DEFAULT_RECALL_TOKENS)
        );
    }
    Ok(Code::Ok)
}

/// The memlogs (`.memlog.md`, as BMad's `memlog.py` keeps them) under BMad's output folder (the
/// planning folder's parent, `_bmad-output/`) written since `since`, relative to the root, in
/// name order: what a skill session that just finished could have the memory import.
pub fn memlogs_since(cfg: &Config, since: std::time::SystemTime) -> Vec<String> {
    let base = cfg.planning.parent().unwrap_or(&cfg.root);
    let mut found = Vec::new();
    let mut dirs = vec![(base.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() && depth < 5 {
                dirs.push((path, depth + 1));
            } else if kind.is_file()
                && entry.file_name() == ".memlog.md"
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|m| m >= since)
            {
                found.push(rel(&cfg.root, &path));
            }
        }
    }
    found.sort();
    found
}

/// The lines offering to import the memlogs a finished skill session wrote (none when memory
/// is off).
pub fn memlog_offers(cfg: &Config, since: std::time::SystemTime) -> Vec<String> {
    if !cfg.memory.enabled.unwrap_or(true) {
        return Vec::new();
    }
    memlogs_since(cfg, since)
        .into_iter()
        .map(|m| {
            format!(
                "the session kept a memlog: `baton memory import {m}` remembers its decisions and lessons"
            )
        })
        .collect()
}

/// What `baton answer` (and the board) remembers of an answer: the decision and its reason
/// (`--why`), and a choice other than the recommended one as a preference when the person
/// confirms it. Returns a line for each memory made.
pub fn learn_from_answer(
    root: &Path,
    escalation: &baton_store::journal::EscalationRecord,
    chosen_label: &str,
    recommended: Option<&str>,
    why: Option<&str>,
    confirm: impl FnOnce() -> bool,
) -> Result<Vec<String>> {
    let cfg = crate::project::config(root)?;
    let mut made = Vec::new();
    if !cfg.trusted || !cfg.memory.enabled.unwrap_or(true) {
        return Ok(made);
    }
    let memory = open(&cfg)?;
    let unit = escalation.key.as_deref();
    if let Some(why) = why.map(str::trim).filter(|w| !w.is_empty()) {
        let d = sources::answer_decision(unit, chosen_label, why);
        let id = memory.learn(d, now())?.id();
        made.push(format!("remembered the decision and its reason as m{id}"));
    }
    if let Some(rec) = recommended
        && rec != chosen_label
        && confirm()
    {
        let d = sources::override_preference(unit, &escalation.title, chosen_label, rec, 6);
        let id = memory.learn(d, now())?.id();
        made.push(format!("remembered the preference as m{id}"));
    }
    Ok(made)
}
