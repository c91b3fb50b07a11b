//! What `baton bmad` keeps around a skill's turns and sessions: checkpoints of the artifacts
//! before each turn and rollback to one, the hooks a skill's and its step files' frontmatter
//! declare, and the queue of skill runs.
//!
//! Checkpoints live in `.baton/bmad/<session>/checkpoints/<N>/` (N: turns taken when it was
//! taken) and cover BMad's output folder (`output_folder`, `_bmad-output` by default). A
//! rollback archives what it replaces under `<output>/.archive/<time>/`, never deleting it.
//!
//! After each turn, every markdown artifact the turn wrote that has YAML frontmatter gets a
//! `baton` key: the session, the step (turn) it was written in, when, the checkpoint it can be
//! rolled back to, and `can_rollback`. The journal stays the source of truth; the key lets a
//! person (or BMad) reading the artifact see where it stands.
//!
//! The hooks a skill's files declare are `bmad_hooks`'s.

use crate::cli::{BmadQueueCommand, BmadRollbackArgs};
use crate::commands::Code;
use crate::config::Config;
use anyhow::{Context, Result, bail};
use baton_store::bmad_checkpoint::Checkpoints;
use baton_store::bmad_queue::{Priority, Queue};
use baton_store::journal::SqliteJournal;
use std::path::{Path, PathBuf};

/// Whether `s` can name a session (`<skill>-<n>`): it becomes a folder under `.baton/bmad/`, so
/// nothing that could leave it.
fn plain_session(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

pub(super) fn session_dir(cfg: &Config, session: &str) -> PathBuf {
    cfg.state_dir.join("bmad").join(session)
}

pub(super) fn output_dir(root: &Path) -> String {
    baton_store::bmad_skills::config(root)
        .into_iter()
        .find(|(k, _)| k == "output_folder")
        .map_or_else(|| "_bmad-output".to_owned(), |(_, v)| v)
}

pub(super) fn checkpoints(root: &Path, cfg: &Config, session: &str) -> Result<Checkpoints> {
    Ok(Checkpoints::new(
        root,
        &session_dir(cfg, session).join("checkpoints"),
        &[PathBuf::from(output_dir(root))],
    )?)
}

/// The complete checkpoints of `session` (none when they cannot be read).
pub fn checkpoint_steps(cfg: &Config, session: &str) -> Vec<u32> {
    checkpoints(&cfg.root, cfg, session)
        .and_then(|c| Ok(c.steps()?))
        .unwrap_or_default()
}

/// Sets the `baton` frontmatter key of each markdown file under `output` written since `since`.
pub(super) fn stamp_artifacts(
    root: &Path,
    output: &Path,
    session: &str,
    step: u32,
    since: std::time::SystemTime,
    log: &dyn Fn(String),
) {
    let mut stack = vec![output.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in read.flatten() {
            let path = e.path();
            let Ok(ft) = e.file_type() else { continue };
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            if ft.is_dir() && !hidden {
                stack.push(path);
                continue;
            }
            let fresh = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| m >= since);
            if !ft.is_file() || hidden || !fresh || path.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if !text.starts_with("---\n") {
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let Ok(mut doc) = baton_store::frontmatter::Document::parse(&rel, &text) else {
                continue;
            };
            let value = serde_json::json!({
                "session": session,
                "step": step,
                "at": jiff::Timestamp::now().to_string(),
                "checkpoint": step.saturating_sub(1),
                "can_rollback": true,
            });
            let done = doc
                .set("baton", &value)
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    baton_store::atomic::replace(&path, doc.text().as_bytes())
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                });
            if let Err(e) = done {
                log(format!(
                    "could not record the step in `{rel}`'s frontmatter: {e}"
                ));
            }
        }
    }
}

/// `baton bmad rollback`.
pub fn rollback(root: &Path, args: &BmadRollbackArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let journal = SqliteJournal::open(&cfg.journal_path())?;
    let session = match &args.session {
        Some(s) if !plain_session(s) => {
            bail!("`{s}` is not a session name (`baton bmad status` lists them: `bmad-prd-1`)")
        }
        Some(s) => s.clone(),
        None => latest_session(root, &journal)?
            .context("no BMad skill session to roll back (`baton bmad status` lists them)")?,
    };
    let points = checkpoints(root, &cfg, &session)?;
    let steps = points.steps()?;
    let Some(&last) = steps.last() else {
        bail!("session {session} has no checkpoint yet");
    };
    let to = args.to.unwrap_or(last);
    let stamp = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%SZ")
        .to_string();
    let archive = root.join(output_dir(root)).join(".archive");
    let r = points.restore(to, &archive, &stamp)?;
    println!(
        "{session}: artifacts restored to checkpoint {to} ({} files)",
        r.restored.len()
    );
    for a in &r.archived {
        println!("  archived {a} → {}/.archive/{stamp}/{a}", output_dir(root));
    }
    println!(
        "the session's journal is unchanged: `baton bmad run` goes on from its last turn, or \
         `--fresh` starts over"
    );
    Ok(Code::Ok)
}

fn latest_session(root: &Path, journal: &SqliteJournal) -> Result<Option<String>> {
    let mut best: Option<(String, String)> = None;
    for s in baton_store::bmad_skills::list(root)? {
        for (session, _) in super::sessions(journal, &s.name)? {
            let steps =
                baton_store::journal::Journal::steps_for_key(journal, &format!("bmad:{session}"))?;
            let at = steps
                .iter()
                .map(|s| s.started_at.clone())
                .max()
                .unwrap_or_default();
            if best.as_ref().is_none_or(|(b, _)| at > *b) {
                best = Some((at, session));
            }
        }
    }
    Ok(best.map(|(_, s)| s))
}

fn queue_path(cfg: &Config) -> PathBuf {
    cfg.state_dir.join("bmad-queue.json")
}

/// `baton bmad queue …`.
pub fn queue(root: &Path, cmd: &BmadQueueCommand) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let mut q = Queue::open(&queue_path(&cfg))?;
    match cmd {
        BmadQueueCommand::Add(a) => {
            baton_store::bmad_skills::find(root, &a.skill)?;
            let priority: Priority = a.priority.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
            let input = super::input_of(root, a.input.as_deref(), a.input_file.as_deref())?;
            let t = q.add(
                &a.skill,
                input.as_deref(),
                a.tier,
                priority,
                &jiff::Timestamp::now().to_string(),
            )?;
            println!(
                "queued #{}: {} ({} priority); {} in the queue",
                t.id,
                t.skill,
                t.priority.as_str(),
                q.len()
            );
        }
        BmadQueueCommand::List(a) => {
            let list = q.list();
            if a.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if list.is_empty() {
                println!("the queue is empty");
            } else {
                for t in &list {
                    println!(
                        "#{}  {}  {}{}  added {}",
                        t.id,
                        t.skill,
                        t.priority.as_str(),
                        t.tier.map(|t| format!("  tier {t}")).unwrap_or_default(),
                        t.added_at
                    );
                }
            }
        }
        BmadQueueCommand::Remove(a) => {
            let t = q.remove(a.id)?;
            println!("removed #{}: {}", t.id, t.skill);
        }
        BmadQueueCommand::Run(a) => {
            let mut ran = 0;
            while a.max.is_none_or(|m| ran < m) {
                let Some(t) = q.pop_next()? else { break };
                ran += 1;
                println!("── queued #{}: {}", t.id, t.skill);
                let args = crate::cli::BmadRunArgs {
                    skill: t.skill.clone(),
                    input: t.input.clone(),
                    input_file: None,
                    tier: t.tier,
                    profile: None,
                    hint: None,
                    conversational: false,
                    fresh: false,
                    agent: None,
                    model: None,
                    yolo: false,
                    progress: "summary".into(),
                    budget: crate::cli::BudgetArgs::default(),
                    json: false,
                };
                let code = super::run_skill(root, &args)?;
                if !matches!(code, Code::Ok) {
                    println!(
                        "queued #{} did not finish; the rest of the queue waits",
                        t.id
                    );
                    return Ok(code);
                }
            }
            if ran == 0 {
                println!("the queue is empty");
            }
        }
    }
    Ok(Code::Ok)
}

fn snapshot(path: &Path, text: String) -> Result<baton_core::autopilot::watch::Snapshot> {
    let doc = baton_store::sprint_file::SprintDoc::parse(path, text)?;
    Ok(doc
        .sprint()
        .entries
        .iter()
        .map(|e| (e.key.to_string(), e.raw.clone().unwrap_or_default()))
        .collect())
}

/// `baton bmad watch`: polls the sprint file every 100 ms and reports what the watcher lets
/// through. A file that does not read (a write caught half-way, or a hand edit) is reported
/// once per distinct error and watched on; nothing is ever written.
pub fn watch(root: &Path, args: &crate::cli::BmadWatchArgs) -> Result<Code> {
    use baton_core::autopilot::watch::{Change, Watcher};
    let cfg = crate::project::config(root)?;
    let path = cfg.sprint_status.clone();
    let read = |p: &Path| {
        std::fs::read_to_string(p).with_context(|| format!("cannot read `{}`", p.display()))
    };
    let mut last_text = read(&path)?;
    let mut w = Watcher::new(snapshot(&path, last_text.clone())?);
    let mut current = snapshot(&path, last_text.clone())?;
    let start = std::time::Instant::now();
    let mut last_error = String::new();
    if !args.json {
        eprintln!("watching `{}` (Ctrl-C stops)", path.display());
    }
    loop {
        let now = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        if args.for_secs.is_some_and(|s| now >= s * 1000) {
            return Ok(Code::Ok);
        }
        if let Ok(text) = read(&path)
            && text != last_text
        {
            match snapshot(&path, text.clone()) {
                Ok(s) => {
                    current = s;
                    last_error.clear();
                }
                Err(e) => {
                    let e = format!("{e:#}");
                    if e != last_error {
                        eprintln!("warning: {e}; still watching");
                        last_error = e;
                    }
                }
            }
            last_text = text;
        }
        w.observe(now, current.clone());
        for c in w.tick(now) {
            let line = match &c {
                Change::Status { key, from, to } => {
                    if args.json {
                        serde_json::json!({"event": "status", "key": key, "from": from, "to": to})
                            .to_string()
                    } else {
                        format!(
                            "{key}: {} → {}",
                            from.as_deref().unwrap_or("(new)"),
                            to.as_deref().unwrap_or("(removed)")
                        )
                    }
                }
                Change::Cycling {
                    key,
                    between,
                    debounce_ms,
                } => {
                    if args.json {
                        serde_json::json!({"event": "cycling", "key": key, "between": between, "debounce_ms": debounce_ms}).to_string()
                    } else {
                        format!(
                            "warning: {key} keeps cycling between {}; watching on with a {debounce_ms} ms debounce",
                            between.join(" and ")
                        )
                    }
                }
            };
            println!("{line}");
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_name_cannot_leave_the_state_folder() {
        assert!(plain_session("bmad-prd-1"));
        for bad in ["", "../x", "a/b", "-rf", "Bmad", "x y"] {
            assert!(!plain_session(bad), "{bad:?}");
        }
    }
}
