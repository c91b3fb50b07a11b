//! The orchestrator's own overhead: a whole sprint driven through `SprintEngine::run` with a
//! model that answers instantly.
//!
//! A generated project (10 epics × 20 stories, every story `backlog`, BMad v6 sprint file) in a
//! fresh git repository is run with `batch = 200` in YOLO mode, wired the way `baton sprint`
//! wires it: a `SqliteJournal` ledger shared as `Arc<Mutex<Ok(Ledger)>>`, the sprint tools, a
//! second journal connection for the cost ledger, transcripts under `.baton/runs/`, and the
//! bundled `scrum-master`, `developer` and `reviewer` agents, all on `script/bench` (a script
//! generated here and written to `.baton/scripts/bench.yaml`). Each story goes
//! create → dev → test command (`true`) → review → done:
//!
//! - scrum master, 2 turns: `write_file` of the story file (one scripted turn per story key, as
//!   a script cannot template paths), then a final answer;
//! - developer, 2 turns: `write_file` of `src/story_E_S.rs`, `edit_file` of `src/lib.rs` and of
//!   the story's File List (one turn per story), then a final answer;
//! - reviewer, 2 turns: `run_git_diff` against `HEAD~1`, then a ```` ```baton-review ```` block
//!   that passes with three low findings.
//!
//! So 600 agent runs, 1,200 model turns, 800 story transitions (plus 20 epic ones) and one git
//! commit per stage. Every scripted turn repeats and is found by a `match` pattern.
//!
//! Each variant runs in a fresh child process (so its `VmHWM` is its own) with
//! `GIT_TRACE2_EVENT` pointed at a file, from which the git subprocesses the engine and the
//! agents' tools spawned are counted and timed (git's own `t_abs`, i.e. from its `main` to its
//! exit; the fork/exec/dynamic-link cost is on top). Variants: the repository on the disk
//! (`CARGO_TARGET_TMPDIR`), and on tmpfs (`/dev/shm`, where `fsync` returns at once). Commits
//! cannot be switched off without changing the engine, so the git share is measured rather than
//! removed.
//!
//! The time between consecutive engine/agent events is attributed to the event that ends the
//! interval, which splits a run into git work, journal/ledger work, the script model and the
//! rest (see the printed legend).
//!
//! Run with `cargo bench -p baton-engine --bench loop`. `BATON_LOOP_EPICS` and
//! `BATON_LOOP_STORIES_PER_EPIC` change the size; `BATON_LOOP_VARIANTS` (comma-separated:
//! `disk`, `tmpfs`) picks the variants; `BATON_LOOP_NO_GIT_TRACE=1` runs without the git trace
//! (to check that tracing costs nothing measurable; no git figures are printed then).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use baton_agent::discovery::{self, Locations};
use baton_agent::runner::{Budget, Mode};
use baton_agent::sandbox::Sandbox;
use baton_agent::tools::CommandPolicy;
use baton_core::budget::BudgetLimits;
use baton_core::dispatch::DispatchOptions;
use baton_core::status::Status;
use baton_engine::protocol::{Event, EventBody};
use baton_engine::run::{JournalHandle, Run, RunKind, RunSpec};
use baton_engine::setup::Setup;
use baton_engine::sprint::{RunEnd, SprintEngine, SprintSettings};
use baton_engine::sprint_tools::{self, SharedLedger};
use baton_engine::workflow::Workflow;
use baton_store::journal::{BoxedStore, CostEntry, Journal, SqliteJournal};
use baton_store::ledger::{Ledger, LedgerOptions, Now};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Set in a child process: the variant it runs.
const CHILD_ENV: &str = "BATON_LOOP_BENCH_VARIANT";
/// The git trace file of a child.
const TRACE_ENV: &str = "GIT_TRACE2_EVENT";

const STORIES_DIR: &str = "_bmad-output/implementation-artifacts";
const PLANNING_DIR: &str = "_bmad-output/planning-artifacts";
const LIB_HEADER: &str = "//! The loop benchmark's crate.\n";

fn main() {
    if let Ok(variant) = std::env::var(CHILD_ENV) {
        child(&variant);
    } else {
        parent();
    }
}

fn size() -> (usize, usize) {
    let get = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
            .max(1)
    };
    (
        get("BATON_LOOP_EPICS", 10),
        get("BATON_LOOP_STORIES_PER_EPIC", 20),
    )
}

// ---------------------------------------------------------------------------------------------
// Parent: one child process per variant, then a comparison table.

fn parent() {
    let (epics, per) = size();
    let wanted = std::env::var("BATON_LOOP_VARIANTS").unwrap_or_else(|_| "disk,tmpfs".into());
    let mut variants: Vec<&str> = wanted.split(',').map(str::trim).collect();
    if !Path::new("/dev/shm").is_dir() {
        eprintln!("note: /dev/shm is missing; the tmpfs variant is skipped");
        variants.retain(|v| *v != "tmpfs");
    }
    println!(
        "sprint loop benchmark: {epics} epics × {per} stories = {} stories, batch {}, YOLO, script model, test command `true`",
        epics * per,
        epics * per
    );
    let exe = std::env::current_exe().expect("current exe");
    let mut results: Vec<Value> = Vec::new();
    for v in variants {
        let trace_dir = tempfile::tempdir().expect("trace dir");
        let trace = trace_dir.path().join("git-trace2.jsonl");
        let mut cmd = Command::new(&exe);
        cmd.env(CHILD_ENV, v).env_remove(TRACE_ENV);
        if std::env::var_os("BATON_LOOP_NO_GIT_TRACE").is_none() {
            cmd.env(TRACE_ENV, &trace);
        }
        let out = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .expect("run the child");
        let text = String::from_utf8_lossy(&out.stdout);
        for line in text.lines() {
            match line.strip_prefix("@result ") {
                Some(json) => results.push(serde_json::from_str(json).expect("result line")),
                None => println!("{line}"),
            }
        }
        assert!(out.status.success(), "variant `{v}` failed: {}", out.status);
    }
    if results.len() > 1 {
        println!("\n== comparison ==");
        println!(
            "{:<8} {:>9} {:>11} {:>13} {:>10} {:>9} {:>9} {:>10}",
            "variant",
            "wall s",
            "ms/agent",
            "ms/transition",
            "git procs",
            "git s",
            "non-git s",
            "VmHWM MiB"
        );
        for r in &results {
            println!(
                "{:<8} {:>9.2} {:>11.2} {:>13.2} {:>10} {:>9.2} {:>9.2} {:>10.1}",
                r["variant"].as_str().unwrap_or("?"),
                r["wall_s"].as_f64().unwrap_or(0.0),
                r["ms_per_agent_run"].as_f64().unwrap_or(0.0),
                r["ms_per_transition"].as_f64().unwrap_or(0.0),
                r["git_processes"].as_u64().unwrap_or(0),
                r["git_s"].as_f64().unwrap_or(0.0),
                r["wall_s"].as_f64().unwrap_or(0.0) - r["git_s"].as_f64().unwrap_or(0.0),
                r["vm_hwm_kib"].as_f64().unwrap_or(0.0) / 1024.0,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Child: one full run.

/// Story keys in sprint order: `(epic, story, key)`.
fn keys(epics: usize, per: usize) -> Vec<(usize, usize, String)> {
    (1..=epics)
        .flat_map(|e| (1..=per).map(move |s| (e, s, format!("{e}-{s}-loop-story"))))
        .collect()
}

const SPRINT_HEADER: &str = "\
# generated: 01-02-2026 10:00
# project: loop-bench
# project_key: NOKEY
# tracking_system: file-system
# story_location: _bmad-output/implementation-artifacts

# STATUS DEFINITIONS:
# ==================
# Epic Status:
#   - backlog: Epic not yet started
#   - in-progress: Epic actively being worked on
#   - done: All stories in epic completed
#
# Story Status:
#   - backlog: Story only exists in epic file
#   - ready-for-dev: Story file created in stories folder
#   - in-progress: Developer actively working on implementation
#   - review: Ready for code review (via Dev's code-review workflow)
#   - done: Story completed
#
# Retrospective Status:
#   - optional: Can be completed but not required
#   - done: Retrospective has been completed

generated: 01-02-2026 10:00
last_updated: 01-02-2026 10:00
project: loop-bench
project_key: NOKEY
tracking_system: file-system
story_location: _bmad-output/implementation-artifacts

development_status:
";

fn sprint_text(epics: usize, per: usize) -> String {
    let mut out = String::from(SPRINT_HEADER);
    for e in 1..=epics {
        if e > 1 {
            out.push('\n');
        }
        writeln!(out, "  epic-{e}: backlog").unwrap();
        for s in 1..=per {
            writeln!(out, "  {e}-{s}-loop-story: backlog").unwrap();
        }
        writeln!(out, "  epic-{e}-retrospective: optional").unwrap();
    }
    out
}

fn story_text(e: usize, s: usize) -> String {
    format!(
        "# Story {e}.{s}: Loop story {e}.{s}

Status: ready-for-dev

## Story

As the loop benchmark, I want story {e}.{s} implemented, so that the sprint has work.

## Acceptance Criteria

1. Given nothing, when `value_{e}_{s}()` is called, then it returns {e}{s:03}.

## Tasks / Subtasks

- [ ] Task 1: write a failing test for the acceptance criterion (AC: 1)
- [ ] Task 2: implement until it passes (AC: 1)

## Dev Notes

- One module per story under `src/`, declared in `src/lib.rs`.

## Dev Agent Record

### Agent Model Used

### Debug Log References

### Completion Notes List

### File List
"
    )
}

fn module_text(e: usize, s: usize) -> String {
    format!(
        "//! Story {e}.{s}.

/// The value of story {e}.{s}.
pub fn value_{e}_{s}() -> u32 {{
    {e}{s:03}
}}

#[cfg(test)]
mod tests {{
    use super::*;

    #[test]
    fn returns_its_value() {{
        assert_eq!(value_{e}_{s}(), {e}{s:03});
    }}
}}
"
    )
}

const REVIEW: &str = r#"Checked every claim of the story against the diff.

```baton-review
{
  "passed": true,
  "findings": [
    {"severity": "low", "file": "src/lib.rs", "line": 1, "issue": "the crate doc could list the modules"},
    {"severity": "low", "file": "src/lib.rs", "line": 3, "issue": "the module declarations are not sorted"},
    {"severity": "low", "file": "src/lib.rs", "line": 2, "issue": "the test name could state the expected value"}
  ],
  "must_fix": [],
  "summary": "The story meets its acceptance criterion; only cosmetic notes."
}
```
"#;

/// The script: per-story first turns for the scrum master and the developer (their paths differ
/// per story), generic second turns, and the two reviewer turns. JSON is YAML.
fn script(keys: &[(usize, usize, String)]) -> String {
    let usage = json!({"input_tokens": 1000, "output_tokens": 200});
    let mut turns = Vec::new();
    for (e, s, key) in keys {
        turns.push(json!({
            "agent": "scrum-master",
            "match": format!("Create the story file for story `{key}`"),
            "repeat": true,
            "text": "I will write the story from the epics.",
            "tool_calls": [{
                "name": "write_file",
                "arguments": {"path": format!("{STORIES_DIR}/{key}.md"), "content": story_text(*e, *s)},
            }],
            "usage": usage,
        }));
    }
    turns.push(json!({
        "agent": "scrum-master",
        "match": format!("^wrote \\d+ bytes to `{STORIES_DIR}/"),
        "repeat": true,
        "text": "The story file is written with its acceptance criteria and tasks.",
        "usage": usage,
    }));
    for (e, s, key) in keys {
        turns.push(json!({
            "agent": "developer",
            "match": format!("Implement story `{key}`"),
            "repeat": true,
            "text": "Red first: the test, then the code to make it pass.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": format!("src/story_{e}_{s}.rs"), "content": module_text(*e, *s)}},
                {"name": "edit_file", "arguments": {
                    "path": "src/lib.rs",
                    "old_string": LIB_HEADER,
                    "new_string": format!("{LIB_HEADER}pub mod story_{e}_{s};\n"),
                }},
                {"name": "edit_file", "arguments": {
                    "path": format!("{STORIES_DIR}/{key}.md"),
                    "old_string": "### File List\n",
                    "new_string": format!("### File List\n\n- src/story_{e}_{s}.rs\n- src/lib.rs\n"),
                }},
            ],
            "usage": usage,
        }));
    }
    turns.push(json!({
        "agent": "developer",
        "match": "^wrote \\d+ bytes to `src/story_",
        "repeat": true,
        "text": "Implemented test-first and updated the File List.",
        "usage": usage,
    }));
    turns.push(json!({
        "agent": "reviewer",
        "match": "^Review story `[^`]+`, review round 1 ",
        "repeat": true,
        "tool_calls": [{"name": "run_git_diff", "arguments": {"base": "HEAD~1"}}],
        "usage": usage,
    }));
    turns.push(json!({
        "agent": "reviewer",
        "match": "^diff against ",
        "repeat": true,
        "text": REVIEW,
        "usage": usage,
    }));
    serde_json::to_string_pretty(&json!({ "turns": turns })).unwrap()
}

fn git_setup(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .env_remove(TRACE_ENV)
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn git_output(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env_remove(TRACE_ENV)
        .output()
        .expect("run git");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Writes the project and commits it.
fn make_project(root: &Path, epics: usize, per: usize) {
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        &format!("{STORIES_DIR}/sprint-status.yaml"),
        &sprint_text(epics, per),
    );
    write(
        &format!("{PLANNING_DIR}/epics.md"),
        "# Epics\n\nGenerated stories for the loop benchmark.\n",
    );
    write("src/lib.rs", LIB_HEADER);
    write(".baton/.gitignore", "*\n");
    write(".baton/scripts/bench.yaml", &script(&keys(epics, per)));
    git_setup(root, &["init", "-q", "-b", "main"]);
    git_setup(root, &["add", "-A"]);
    git_setup(root, &["commit", "-q", "-m", "initial"]);
}

/// Time between consecutive events, attributed to the event that ends the interval.
#[derive(Default)]
struct Recorder {
    last: Option<Instant>,
    spans: BTreeMap<String, (u64, Duration)>,
    story_ends: Vec<Instant>,
    transitions: u64,
    commits: u64,
    agent_runs: u64,
    turns: u64,
    tool_calls: u64,
    tests: u64,
}

impl Recorder {
    fn mark(&mut self, label: String) {
        let now = Instant::now();
        if let Some(last) = self.last {
            let e = self.spans.entry(label).or_default();
            e.0 += 1;
            e.1 += now - last;
        }
        self.last = Some(now);
    }

    fn sprint(&mut self, e: &Event) {
        let label = match &e.body {
            EventBody::RunStarted { .. } => "run_started".to_owned(),
            EventBody::Stage { stage, .. } => format!("stage {stage}"),
            EventBody::Transition { key, to, .. } => {
                self.transitions += 1;
                if key.starts_with("epic-") {
                    format!("transition epic {to}")
                } else {
                    format!("transition {to}")
                }
            }
            EventBody::Tests { .. } => {
                self.tests += 1;
                "tests".to_owned()
            }
            EventBody::Commit { .. } => {
                self.commits += 1;
                "commit".to_owned()
            }
            EventBody::CommitFailed { .. } => "commit_failed".to_owned(),
            EventBody::Escalation { .. } => "escalation".to_owned(),
            EventBody::StoryFinished { .. } => {
                self.story_ends.push(Instant::now());
                "story_finished".to_owned()
            }
            EventBody::AgentStarted { agent, .. } => {
                self.agent_runs += 1;
                format!("agent_started {agent}")
            }
            EventBody::Turn { turn, .. } => {
                self.turns += 1;
                format!("turn {}", (*turn).min(3))
            }
            EventBody::ToolCall { .. } => {
                self.tool_calls += 1;
                "tool_call".to_owned()
            }
            EventBody::Refused { .. } => "refused".to_owned(),
            EventBody::Usage { .. } => "usage".to_owned(),
            EventBody::Streaming { .. } => "streaming".to_owned(),
            EventBody::UsageEstimated { .. } => "usage_estimated".to_owned(),
            EventBody::BudgetWarning { .. } => "budget_warning".to_owned(),
            EventBody::AgentFinished { agent, .. } => format!("agent_finished {agent}"),
            _ => "other".to_owned(),
        };
        self.mark(label);
    }
}

/// What the interval ending at each event contains (by label prefix).
const LEGEND: &[(&str, &str)] = &[
    (
        "stage review",
        "facts + decide, baseline, the diff since the baseline (1 git) + File List check",
    ),
    (
        "stage",
        "facts (sprint-file refresh, the story's steps, events and escalations) + decide",
    ),
    (
        "agent_started",
        "begin_step (journal), runner + toolbox build, transcript file, snapshot (no git after baton's own commit)",
    ),
    ("turn 1", "prompt and request set-up"),
    (
        "turn 2",
        "the turn-1 tool calls run (sm: write_file; dev: write + 2 edits; reviewer: run_git_diff, 4 git)",
    ),
    (
        "usage",
        "script model call + cost-ledger insert (2nd journal connection, no fsync of its own)",
    ),
    ("tool_call", "guard chain"),
    (
        "agent_finished",
        "one `git status --porcelain=v2 --branch` after the run, sprint-file check, transcript",
    ),
    ("tests", "end_step (journal) + the test command (`true`)"),
    (
        "transition in-progress",
        "end_step (journal), baseline (HEAD known from the last commit) into the story file, ledger transition",
    ),
    (
        "transition done",
        "end_step (journal), review parse, findings into the story file, ledger transition (fsync ×2)",
    ),
    (
        "transition epic",
        "none: emitted right after the story's own transition",
    ),
    (
        "transition",
        "end_step (journal), facts + decide, ledger transition (journal + sprint file: fsync ×2)",
    ),
    (
        "commit",
        "git add + commit (2 git; hooks and automatic maintenance off)",
    ),
    (
        "story_finished",
        "loop top finding `done` + final status read",
    ),
];

fn proc_status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// (user, system, children user, children system) CPU seconds (USER_HZ = 100).
fn cpu_times() -> [f64; 4] {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    // Fields after the command: state is field 3; utime..cstime are fields 14..17.
    let f: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|v| v.parse::<f64>().unwrap_or(0.0) / 100.0)
        .collect();
    [f[0], f[1], f[2], f[3]]
}

/// Git processes from the trace: per command, (count, seconds of git's own run time), for the
/// processes baton spawned and for the ones git spawned itself.
struct GitTrace {
    by_cmd: BTreeMap<String, (u64, f64)>,
    children: BTreeMap<String, (u64, f64)>,
}

fn read_trace(path: &Path) -> GitTrace {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut times: BTreeMap<String, f64> = BTreeMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let sid = v["sid"].as_str().unwrap_or_default().to_owned();
        match v["event"].as_str() {
            Some("cmd_name") => {
                names.insert(sid, v["name"].as_str().unwrap_or("?").to_owned());
            }
            Some("atexit") => {
                times.insert(sid, v["t_abs"].as_f64().unwrap_or(0.0));
            }
            Some("start") => {
                names.entry(sid).or_insert_with(|| "?".into());
            }
            _ => {}
        }
    }
    let mut out = GitTrace {
        by_cmd: BTreeMap::new(),
        children: BTreeMap::new(),
    };
    for (sid, name) in names {
        let t = times.get(&sid).copied().unwrap_or(0.0);
        let map = if sid.contains('/') {
            &mut out.children
        } else {
            &mut out.by_cmd
        };
        let e = map.entry(name).or_default();
        e.0 += 1;
        e.1 += t;
    }
    out
}

fn child(variant: &str) {
    let (epics, per) = size();
    let total_stories = epics * per;
    let base: PathBuf = match variant {
        "disk" => PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        "tmpfs" => PathBuf::from("/dev/shm"),
        other => panic!("unknown variant `{other}` (disk, tmpfs)"),
    };
    std::fs::create_dir_all(&base).unwrap();
    let tmp = tempfile::Builder::new()
        .prefix("baton-loop-")
        .tempdir_in(&base)
        .unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let setup_started = Instant::now();
    make_project(&root, epics, per);
    let stories_dir = root.join(STORIES_DIR);
    let state = root.join(".baton");
    let run_id = format!("sprint-loop-bench-{}", std::process::id());

    // The wiring of `baton sprint` (crates/baton-cli/src/commands/{sprint,team}.rs).
    let journal: BoxedStore = Box::new(SqliteJournal::open(&state.join("baton.db")).unwrap());
    let ledger = Ledger::open(
        &stories_dir.join("sprint-status.yaml"),
        journal,
        LedgerOptions {
            lock_path: state.join("sprint.lock"),
            stories_dir: Some(stories_dir.clone()),
            write_extended: false,
            auto_epic_done: true,
        },
    )
    .unwrap();
    let ledger: SharedLedger = Arc::new(Mutex::new(Ok(ledger)));
    let cost_journal = Arc::new(Mutex::new(
        SqliteJournal::open(&state.join("baton.db")).unwrap(),
    ));
    let agents = discovery::discover(&Locations {
        user_dir: None,
        project_dir: state.join("agents"),
        trusted: false,
    })
    .agents;
    let sandbox = Sandbox::new(&root, &Sandbox::default_deny()).unwrap();
    let tools = sprint_tools::tools(ledger.clone(), &agents, Some(run_id.clone()));
    let mut setup = Setup::new(
        root.clone(),
        agents,
        baton_llm::registry::bundled_providers(),
        baton_llm::pricing::bundled_prices(),
        Mode::Yolo,
        Arc::new(Budget::new(BudgetLimits::default())),
        Arc::new(sandbox),
        CommandPolicy::default(),
    );
    setup.extra_tools = tools;
    setup.model_override = Some("script/bench".into());
    setup.transcript_dir = Some(state.join("runs").join(&run_id));
    let cost_run = run_id.clone();
    setup.on_call = Some(Arc::new(move |c| {
        if let Ok(mut j) = cost_journal.lock() {
            let _ = j.record_cost(&CostEntry {
                run_id: Some(cost_run.clone()),
                step_id: None,
                at: Now::system().rfc3339,
                model: c.model.clone(),
                input_tokens: c.usage.input_tokens,
                output_tokens: c.usage.output_tokens,
                cache_read_tokens: c.usage.cache_read_tokens,
                cache_write_tokens: c.usage.cache_write_tokens,
                cost_usd: c.cost_usd,
                estimated: c.estimated,
            });
        }
    }));
    let rec = Arc::new(Mutex::new(Recorder::default()));
    let sprint_rec = rec.clone();
    let setup = Arc::new(setup);
    let engine = SprintEngine {
        ledger: ledger.clone(),
        settings: SprintSettings {
            root: root.clone(),
            stories_dir,
            planning_dir: root.join(PLANNING_DIR),
            escalations_log: root.join("_bmad-output").join("escalations.log"),
            batch: total_stories,
            parallel: 1,
            stories: None,
            dispatch: DispatchOptions {
                story_review: false,
                qa: false,
            },
            max_review_rounds: 3,
            min_findings: 3,
            test_command: Some(vec!["true".into()]),
            test_timeout: Duration::from_secs(900),
            checkpoints: vec![Status::Done],
            story_timeout: Duration::from_secs(7200),
            run_timeout: Duration::from_secs(28_800),
            loop_limit: 5,
            // The loop measured is create → dev → tests → review → done.
            retrospective: false,
            allow_dirty: false,
        },
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let setup_time = setup_started.elapsed();
    let rss_before = proc_status_kib("VmRSS:");
    let cpu_before = cpu_times();

    let started = Instant::now();
    let report = rt.block_on(async {
        let (run, mut io) = Run::new(RunSpec {
            id: run_id,
            kind: RunKind::Sprint,
            setup,
            journal: JournalHandle::Ledger(ledger.clone()),
            escalations_log: root.join("_bmad-output").join("escalations.log"),
            interactive: false,
            event_log: Some(Box::new(
                SqliteJournal::open(&root.join(".baton/baton.db")).unwrap(),
            )),
        });
        let drain = tokio::spawn(async move {
            while let Some(e) = io.events.recv().await {
                sprint_rec.lock().unwrap().sprint(&e);
            }
        });
        // The session journals a run's beginning; the bench drives the workflow itself.
        run.begin().unwrap();
        let report = Workflow::run(engine, run).await;
        let _ = drain.await;
        report
    });
    let wall = started.elapsed();

    let cpu_after = cpu_times();
    let vm_hwm = proc_status_kib("VmHWM:");
    let rss_after = proc_status_kib("VmRSS:");
    let cpu: Vec<f64> = (0..4).map(|i| cpu_after[i] - cpu_before[i]).collect();

    if report.end != RunEnd::Completed || report.completed != total_stories {
        let bad: Vec<String> = report
            .stories
            .iter()
            .filter(|s| s.final_status != "done")
            .take(5)
            .map(|s| format!("{}: {} {:?}", s.key, s.final_status, s.error))
            .collect();
        panic!(
            "the run did not complete: {:?} {} ({} of {} done); first: {bad:#?}",
            report.end, report.reason, report.completed, total_stories
        );
    }
    let commits_in_repo: u64 = git_output(&root, &["rev-list", "--count", "HEAD"])
        .parse::<u64>()
        .unwrap_or(1)
        - 1;
    let trace = std::env::var_os(TRACE_ENV).map(|p| read_trace(Path::new(&p)));

    let rec = rec.lock().unwrap();
    let secs = wall.as_secs_f64();
    let ms_per_agent = secs * 1000.0 / rec.agent_runs.max(1) as f64;
    let ms_per_transition = secs * 1000.0 / rec.transitions.max(1) as f64;
    let ms_per_turn = secs * 1000.0 / rec.turns.max(1) as f64;
    let ms_per_story = secs * 1000.0 / total_stories as f64;

    println!(
        "\n== variant `{variant}`: repository in {} ==",
        base.display()
    );
    println!(
        "setup (project, script of {} KiB, git init, ledger): {:.2} s (not counted)",
        std::fs::metadata(root.join(".baton/scripts/bench.yaml"))
            .map(|m| m.len() / 1024)
            .unwrap_or(0),
        setup_time.as_secs_f64()
    );
    println!(
        "run: {} / {} stories done, {} agent runs, {} model turns, {} tool calls, {} transitions (stories + epics), {} test runs, {} commit events ({} commits in the repo)",
        report.completed,
        report.total,
        rec.agent_runs,
        rec.turns,
        rec.tool_calls,
        rec.transitions,
        rec.tests,
        rec.commits,
        commits_in_repo
    );
    println!("{:<34} {:>12}", "figure", "value");
    println!("{:<34} {:>12.3}", "total wall time (s)", secs);
    println!("{:<34} {:>12.2}", "per story (ms)", ms_per_story);
    println!("{:<34} {:>12.2}", "per agent run (ms)", ms_per_agent);
    println!("{:<34} {:>12.2}", "per model turn (ms)", ms_per_turn);
    println!("{:<34} {:>12.2}", "per transition (ms)", ms_per_transition);
    println!("{:<34} {:>12.2}", "CPU baton user+sys (s)", cpu[0] + cpu[1]);
    println!(
        "{:<34} {:>12.2}",
        "CPU children user+sys (s)",
        cpu[2] + cpu[3]
    );
    println!(
        "{:<34} {:>12.1}",
        "RSS before run (MiB)",
        rss_before as f64 / 1024.0
    );
    println!(
        "{:<34} {:>12.1}",
        "RSS after run (MiB)",
        rss_after as f64 / 1024.0
    );
    println!(
        "{:<34} {:>12.1}",
        "peak RSS VmHWM (MiB)",
        vm_hwm as f64 / 1024.0
    );

    let n = rec.story_ends.len();
    if n >= 20 {
        let tenth = n / 10;
        let mut durations = Vec::with_capacity(n);
        let mut prev = started;
        for t in &rec.story_ends {
            durations.push((*t - prev).as_secs_f64() * 1000.0);
            prev = *t;
        }
        let mean = |d: &[f64]| d.iter().sum::<f64>() / d.len() as f64;
        println!(
            "per story, first {tenth}: {:.1} ms, last {tenth}: {:.1} ms (growth with history)",
            mean(&durations[..tenth]),
            mean(&durations[n - tenth..])
        );
    }

    println!("\ntime between events, by the event ending the interval:");
    println!(
        "{:<30} {:>6} {:>8} {:>8} {:>6}  contains",
        "interval", "count", "total s", "mean ms", "share"
    );
    let mut spans: Vec<_> = rec.spans.iter().collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.1.1));
    for (label, (count, d)) in spans {
        let legend = LEGEND
            .iter()
            .find(|(l, _)| label.starts_with(l))
            .map_or("", |(_, t)| t);
        println!(
            "{:<30} {:>6} {:>8.2} {:>8.2} {:>5.1}%  {legend}",
            label,
            count,
            d.as_secs_f64(),
            d.as_secs_f64() * 1000.0 / *count as f64,
            d.as_secs_f64() * 100.0 / secs
        );
    }

    let mut git_procs = 0;
    let mut git_secs = 0.0;
    if let Some(trace) = &trace {
        git_procs = trace.by_cmd.values().map(|v| v.0).sum::<u64>();
        git_secs = trace.by_cmd.values().map(|v| v.1).sum::<f64>();
        println!(
            "\ngit subprocesses spawned by baton: {git_procs} ({:.1} per story, {:.1} per agent run), {git_secs:.2} s of git run time ({:.1}% of the wall time; spawn cost not included)",
            git_procs as f64 / total_stories as f64,
            git_procs as f64 / rec.agent_runs.max(1) as f64,
            git_secs * 100.0 / secs
        );
        println!(
            "{:<14} {:>7} {:>9} {:>8}",
            "git command", "count", "total s", "mean ms"
        );
        let mut cmds: Vec<_> = trace.by_cmd.iter().collect();
        cmds.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
        for (name, (count, t)) in cmds {
            println!(
                "{:<14} {:>7} {:>9.2} {:>8.2}",
                name,
                count,
                t,
                t * 1000.0 / *count as f64
            );
        }
        for (name, (count, t)) in &trace.children {
            println!("  (spawned by git itself: {name} × {count}, {t:.2} s)");
        }
    }

    let result = json!({
        "variant": variant,
        "stories": total_stories,
        "wall_s": secs,
        "ms_per_agent_run": ms_per_agent,
        "ms_per_transition": ms_per_transition,
        "agent_runs": rec.agent_runs,
        "transitions": rec.transitions,
        "git_processes": git_procs,
        "git_s": git_secs,
        "vm_hwm_kib": vm_hwm,
    });
    println!("@result {result}");
    drop(rec);
    drop(ledger);
    drop(rt);
}
