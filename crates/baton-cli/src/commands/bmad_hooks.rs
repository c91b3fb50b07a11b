//! The hooks a skill's files declare, run around its turns and tool calls, and the checkpoint
//! before each turn.
//!
//! Hooks run only in a trusted project, without a shell, with a scrubbed environment and capped
//! output (see `baton_agent::hooks`): `SessionStart` when the session starts in a process
//! (`once: true`: only in its first), `PreToolUse` before each tool call whose name the matcher
//! takes, `PostToolUse` once the call returned, `Stop` after a turn. Every run is written to the
//! session's `hooks.log` with its stdout (64 KiB kept of each hook, 256 KiB of all hooks of a
//! turn). A failing hook is logged and the session goes on, unless the hook is `critical: true`:
//! then the session stops after the turn.
//!
//! `SKILL.md`'s hooks are the session's. A step file's (`step-02-….md`) belong to that step:
//! its tool hooks run while it is the step the session is in, its `Stop` hooks when it ends.
//! Which steps have ended is BMad's own record, the `stepsCompleted` frontmatter of the documents
//! the session writes (numbers or step file names); the step the session is in is the first
//! step file not completed.

use super::parts::{checkpoints, output_dir, session_dir, stamp_artifacts};
use crate::config::Config;
use anyhow::{Context, Result};
use baton_core::autopilot::hooks::{self, Event, Hook};
use baton_engine::workflows::bmad::{HookStop, TurnEvent, TurnHook};
use baton_store::bmad_skills::Skill;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A hook and where it was declared.
#[derive(Debug, Clone)]
struct Declared {
    /// The step file's number (`step-02-…` is 2); `None` for `SKILL.md`'s, the session's own.
    step: Option<u32>,
    hook: Hook,
}

/// The number of a step file (`step-02-design-epics.md`, `step-01b-continue.md` → 1, 2).
fn step_number(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("step-")
        .or_else(|| name.strip_prefix("step"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The step files of a skill (`step-*.md`, at its top or under `steps/`), sorted.
fn step_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for sub in [dir.to_path_buf(), dir.join("steps")] {
        if let Ok(read) = std::fs::read_dir(&sub) {
            let mut steps: Vec<PathBuf> = read
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("step") && n.ends_with(".md"))
                })
                .collect();
            steps.sort();
            files.extend(steps);
        }
    }
    files
}

/// The hooks a skill declares: its `SKILL.md`'s frontmatter (the session's), then each step
/// file's (that step's).
fn skill_hooks(root: &Path, skill: &Skill) -> Result<Vec<Declared>> {
    let mut files = vec![(None, skill.instructions.clone())];
    for f in step_files(skill.dir()) {
        let n = f.file_name().and_then(|n| n.to_str()).and_then(step_number);
        files.push((n.or(Some(0)), f));
    }
    let mut out = Vec::new();
    for (step, f) in files {
        let text = std::fs::read_to_string(&f)
            .with_context(|| format!("cannot read `{}`", f.display()))?;
        let Some(front) = frontmatter(&text) else {
            continue;
        };
        let found = hooks::parse(front).map_err(|e| {
            anyhow::anyhow!(
                "`{}`: hooks: {e}",
                f.strip_prefix(root).unwrap_or(&f).display()
            )
        })?;
        out.extend(found.into_iter().map(|hook| Declared { step, hook }));
    }
    Ok(out)
}

fn frontmatter(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---")?;
    Some(&rest[..end])
}

/// The steps a document's frontmatter says are completed (`stepsCompleted: [1, 2]` or
/// `['step-01-validate-prerequisites', …]`).
fn completed_in(text: &str) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let Some(front) = frontmatter(text) else {
        return out;
    };
    let Ok(v) = serde_saphyr::from_str::<serde_json::Value>(front) else {
        return out;
    };
    if let Some(items) = v.get("stepsCompleted").and_then(|s| s.as_array()) {
        for i in items {
            let n = match i {
                serde_json::Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                serde_json::Value::String(s) => {
                    let name = s.rsplit('/').next().unwrap_or(s);
                    step_number(name).or_else(|| s.trim().parse().ok())
                }
                _ => None,
            };
            out.extend(n);
        }
    }
    out
}

/// The steps the markdown documents under `dir` modified since `since` record as completed.
fn completed_since(dir: &Path, since: std::time::SystemTime) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in read.flatten() {
            let path = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let fresh = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|m| m >= since);
            if fresh
                && path.extension().is_some_and(|x| x == "md")
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.extend(completed_in(&text));
            }
        }
    }
    out
}

/// What the hooks of one process of a session share.
struct HookState {
    turn_started: Option<std::time::SystemTime>,
    critical: Option<String>,
    pending_post: Option<String>,
    budget: baton_agent::hooks::StepBudget,
    /// Steps completed so far (kept in the session's folder across processes).
    completed: BTreeSet<u32>,
    /// The step the session is in, whose tool hooks run.
    current: Option<u32>,
}

/// The session's log of hook runs.
type Log = Arc<dyn Fn(String) + Send + Sync>;

/// What the hooks of a session run with.
struct Hooks {
    root: PathBuf,
    declared: Vec<Declared>,
    state: Mutex<HookState>,
    log: Log,
}

impl Hooks {
    /// Runs the hooks for `event` of `steps` (`None`: the session's own) whose matcher takes
    /// `tool`, logging each with its output.
    fn run(&self, event: Event, tool: Option<&str>, steps: &dyn Fn(Option<u32>) -> bool) {
        for d in self
            .declared
            .iter()
            .filter(|d| steps(d.step) && hooks::applies(&d.hook, event, tool))
        {
            let h = &d.hook;
            let stdin = serde_json::json!({
                "hook_event_name": format!("{event:?}"),
                "tool_name": tool,
                "step": d.step,
                "cwd": self.root.display().to_string(),
            })
            .to_string();
            let mut run = baton_agent::hooks::run(h, &self.root, &[], &stdin);
            let Ok(mut s) = self.state.lock() else { return };
            s.budget.take(&mut run);
            let what = format!(
                "hook {:?}{} `{}`{}",
                event,
                d.step.map(|n| format!(" of step {n}")).unwrap_or_default(),
                h.argv.join(" "),
                tool.map(|t| format!(" ({t})")).unwrap_or_default()
            );
            let stdout = if run.stdout.trim().is_empty() {
                String::new()
            } else {
                format!("\nstdout:\n{}", run.stdout.trim_end())
            };
            if run.failed() {
                let why = run.error.clone().unwrap_or_else(|| {
                    if run.timed_out {
                        "timed out".to_owned()
                    } else {
                        format!("exit {}", run.exit.map_or("?".into(), |c| c.to_string()))
                    }
                });
                let line = format!(
                    "{what} failed ({why}){}: {}",
                    if h.critical { ", critical" } else { "" },
                    run.stderr.trim()
                );
                (self.log)(format!("{line}{stdout}"));
                if h.critical && s.critical.is_none() {
                    s.critical = Some(line);
                }
            } else {
                (self.log)(format!("{what} ran{stdout}"));
            }
        }
    }

    /// Whether a hook of `step` runs for tool calls now: the session's, or the current step's.
    fn in_step(&self) -> impl Fn(Option<u32>) -> bool + '_ {
        let current = self.state.lock().ok().and_then(|s| s.current);
        move |step| step.is_none() || step == current
    }

    fn critical(&self) -> Result<(), HookStop> {
        self.state
            .lock()
            .ok()
            .and_then(|mut s| s.critical.take())
            .map_or(Ok(()), |c| Err(HookStop(c)))
    }
}

/// The first step of `all` not in `completed`.
fn current_step(all: &BTreeSet<u32>, completed: &BTreeSet<u32>) -> Option<u32> {
    all.iter().find(|n| !completed.contains(n)).copied()
}

/// The checkpoints and hooks around each turn of `session`, and the callback that runs the tool
/// hooks on the agent's events.
pub fn turn_hook(
    root: &Path,
    cfg: &Config,
    session: &str,
    skill: &Skill,
) -> Result<(TurnHook, baton_agent::runner::EventFn)> {
    let points = Arc::new(checkpoints(root, cfg, session)?);
    // A hook runs a program the skill's files name, outside the command allowlist: only a
    // trusted project's skills may run them (a cloned repository ships its own `.claude/`).
    let mut declared = skill_hooks(root, skill)?;
    if !cfg.trusted && !declared.is_empty() {
        eprintln!(
            "warning: `{}` declares {} hook(s); they are not run in a project you have not trusted \
             (review them, then `baton trust`)",
            skill.name,
            declared.len()
        );
        declared.clear();
    }
    let all_steps: BTreeSet<u32> = step_files(skill.dir())
        .iter()
        .filter_map(|f| f.file_name().and_then(|n| n.to_str()).and_then(step_number))
        .collect();
    let dir = session_dir(cfg, session);
    let steps_file = dir.join("steps-completed.json");
    let completed: BTreeSet<u32> = std::fs::read_to_string(&steps_file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let root = root.to_path_buf();
    let output = root.join(output_dir(&root));
    let session = session.to_owned();
    let once_marker = dir.join("session-start-once");
    let log_path = dir.join("hooks.log");
    let log: Log = Arc::new(move |line: String| {
        eprintln!("baton: {}", line.lines().next().unwrap_or_default());
        if let Some(dir) = log_path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
        {
            let _ = writeln!(f, "{}", baton_core::secrets::redact(&line));
        }
    });
    let hooks = Arc::new(Hooks {
        root: root.clone(),
        declared,
        state: Mutex::new(HookState {
            turn_started: None,
            critical: None,
            pending_post: None,
            budget: baton_agent::hooks::StepBudget::default(),
            current: current_step(&all_steps, &completed),
            completed,
        }),
        log: log.clone(),
    });
    let events: baton_agent::runner::EventFn = {
        let hooks = hooks.clone();
        Arc::new(move |e: &baton_agent::runner::AgentEvent| {
            use baton_agent::runner::AgentEvent as A;
            if hooks.declared.is_empty() {
                return;
            }
            // The previous call has returned once anything else happens.
            let post = hooks
                .state
                .lock()
                .ok()
                .and_then(|mut s| s.pending_post.take());
            if let Some(tool) = post {
                hooks.run(Event::PostToolUse, Some(&tool), &hooks.in_step());
            }
            if let A::ToolCall { tool, .. } = e {
                hooks.run(Event::PreToolUse, Some(tool), &hooks.in_step());
                if let Ok(mut s) = hooks.state.lock() {
                    s.pending_post = Some(tool.clone());
                }
            }
        })
    };
    let turn: TurnHook = Arc::new(move |e: TurnEvent<'_>| match e {
        TurnEvent::Start { .. } => {
            let session_only = |step: Option<u32>| step.is_none();
            let every = Hooks {
                root: hooks.root.clone(),
                declared: hooks
                    .declared
                    .iter()
                    .filter(|d| !d.hook.once)
                    .cloned()
                    .collect(),
                state: Mutex::new(HookState {
                    turn_started: None,
                    critical: None,
                    pending_post: None,
                    budget: baton_agent::hooks::StepBudget::default(),
                    completed: BTreeSet::new(),
                    current: None,
                }),
                log: hooks.log.clone(),
            };
            every.run(Event::SessionStart, None, &session_only);
            let mut stop = every.critical();
            if !once_marker.exists() {
                let once = Hooks {
                    declared: hooks
                        .declared
                        .iter()
                        .filter(|d| d.hook.once)
                        .cloned()
                        .collect(),
                    ..every
                };
                once.run(Event::SessionStart, None, &session_only);
                if let Some(d) = once_marker.parent() {
                    let _ = std::fs::create_dir_all(d);
                }
                let _ = std::fs::write(&once_marker, b"");
                stop = stop.and(once.critical());
            }
            stop
        }
        TurnEvent::Before(n) => {
            if let Ok(mut s) = hooks.state.lock() {
                s.budget = baton_agent::hooks::StepBudget::default();
                s.turn_started = Some(std::time::SystemTime::now());
                s.current = current_step(&all_steps, &s.completed);
            }
            points
                .take(n - 1)
                .map(|_| ())
                .map_err(|e| HookStop(format!("checkpoint before turn {n}: {e}")))
        }
        TurnEvent::After(n, _) => {
            let since = hooks.state.lock().ok().and_then(|s| s.turn_started);
            let mut ended = BTreeSet::new();
            if let Some(since) = since {
                stamp_artifacts(&root, &output, &session, n, since, &*log);
                let now = completed_since(&output, since);
                if let Ok(mut s) = hooks.state.lock() {
                    ended = now.difference(&s.completed).copied().collect();
                    s.completed.extend(now);
                    if let Ok(text) = serde_json::to_string(&s.completed) {
                        let _ = baton_store::atomic::replace(&steps_file, text.as_bytes());
                    }
                }
            }
            let post = hooks
                .state
                .lock()
                .ok()
                .and_then(|mut s| s.pending_post.take());
            if let Some(tool) = post {
                hooks.run(Event::PostToolUse, Some(&tool), &hooks.in_step());
            }
            // The session's Stop hooks after every turn; a step's when the step ended.
            hooks.run(Event::Stop, None, &|step| {
                step.is_none_or(|n| ended.contains(&n))
            });
            hooks.critical()
        }
    });
    Ok((turn, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_completed_are_read_as_numbers_or_step_file_names() {
        assert_eq!(step_number("step-02-design-epics.md"), Some(2));
        assert_eq!(step_number("step-01b-continue.md"), Some(1));
        assert_eq!(step_number("steps.md"), None);
        let doc = "---\nstepsCompleted: [1, 2]\ninputDocuments: []\n---\n# Epics\n";
        assert_eq!(completed_in(doc), BTreeSet::from([1, 2]));
        let doc = "---\nstepsCompleted:\n  - 'step-01-validate-prerequisites'\n  - steps/step-02-design-epics.md\n---\n";
        assert_eq!(completed_in(doc), BTreeSet::from([1, 2]));
        assert!(completed_in("# no frontmatter").is_empty());
        let all = BTreeSet::from([1, 2, 3, 4]);
        assert_eq!(current_step(&all, &BTreeSet::from([1, 2])), Some(3));
        assert_eq!(current_step(&all, &all), None);
    }
}
