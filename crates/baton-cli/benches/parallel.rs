//! Stories in parallel, end to end: `baton sprint --parallel P` (the release binary) on a
//! generated project whose model answers every turn after a fixed latency.
//!
//! The project has `BATON_PAR_STORIES` (8) independent stories (one per epic, so no story waits
//! for another) in a fresh git repository, on `script/bench`: the scrum master writes the story
//! file (2 turns), the developer writes `src/<key>.rs`, fills the File List and writes the file
//! the test command (`cat tests-pass`) reads (2 turns), and the reviewer passes it (1 turn); every
//! turn waits `BATON_PAR_LATENCY_MS` (300) before it answers. Each story is merged through the
//! lane (rebase, the test command, fast-forward).
//!
//! Measured for P = 1, 2, 4, 8 (`BATON_PAR_P`), each in a child `baton` process run under
//! `/usr/bin/time -v` with `GIT_TRACE2_EVENT` pointed at a file:
//! - wall time, against the goal `1.1 × (stories / P) × T1` where T1 is the wall time of one
//!   story alone (P = 1, one story), plus the merge lane's own time (the sum over stories of
//!   `queued` → `merged`, from the run's events, less the time spent waiting for the lane);
//! - git processes per story (every git the engine and the agents' tools started);
//! - CPU (user + system) per agent step, the model's latency being a sleep;
//! - peak memory (maximum resident set size) against P = 1.
//!
//! Run with `cargo bench -p baton-cli --bench parallel`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const STORIES_DIR: &str = "_bmad-output/implementation-artifacts";

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

fn key(i: u64) -> String {
    format!("{i}-1-story-{i}")
}

/// A turn of `agent` answering inputs that match `pattern`, after the model's latency.
fn turn(agent: &str, pattern: &str, text: &str, calls: Value, latency: u64) -> Value {
    json!({
        "agent": agent, "repeat": true, "match": pattern, "text": text,
        "tool_calls": calls, "delay_ms": latency,
    })
}

fn escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

fn project(dir: &Path, stories: u64, latency: u64) {
    std::fs::create_dir_all(dir.join(STORIES_DIR)).unwrap();
    std::fs::create_dir_all(dir.join(".baton/scripts")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join(".baton/.gitignore"), "*\n").unwrap();
    std::fs::write(dir.join("src/lib.txt"), "bench\n").unwrap();
    std::fs::write(
        dir.join("baton.toml"),
        "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\n\n[agents]\nmodel = \"script/bench\"\n",
    )
    .unwrap();
    let mut status = String::from(
        "generated: 2026-01-01\nlast_updated: 2026-01-01\nproject: bench\nproject_key: NOKEY\n\
         tracking_system: file-system\nstory_location: _bmad-output/implementation-artifacts\n\n\
         development_status:\n",
    );
    let mut turns = Vec::new();
    for i in 1..=stories {
        let k = key(i);
        status.push_str(&format!(
            "  epic-{i}: backlog\n  {k}: backlog\n  epic-{i}-retrospective: optional\n"
        ));
        let story = format!("{STORIES_DIR}/{k}.md");
        let text = format!(
            "# Story {k}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a user, I want {k}.\n\n\
             ## Acceptance Criteria\n\n1. it exists\n\n## Tasks / Subtasks\n\n- [ ] do it (AC: 1)\n\n\
             ## Dev Notes\n\n## Dev Agent Record\n\n### File List\n"
        );
        turns.push(turn(
            "scrum-master",
            &escape(&format!("Create the story file for story `{k}`")),
            "Writing it.",
            json!([{ "name": "write_file", "arguments": { "path": story, "content": text } }]),
            latency,
        ));
        turns.push(turn(
            "scrum-master",
            &escape(&format!("to `{story}`")),
            "Written.",
            json!([]),
            latency,
        ));
        turns.push(turn(
            "developer",
            &escape(&format!("Implement story `{k}` (mode: dev)")),
            "Implementing.",
            json!([
                { "name": "write_file", "arguments": { "path": format!("src/{k}.rs"), "content": format!("// {k}\n") } },
                { "name": "edit_file", "arguments": { "path": story, "old_string": "### File List\n", "new_string": format!("### File List\n\n- src/{k}.rs\n") } },
                { "name": "write_file", "arguments": { "path": "tests-pass", "content": "ok\n" } }
            ]),
            latency,
        ));
        turns.push(turn(
            "developer",
            &escape(&format!("to `src/{k}.rs`")),
            "Done; tests pass.",
            json!([]),
            latency,
        ));
        let verdict = json!({
            "passed": true,
            "findings": [
                { "severity": "low", "file": "src/lib.txt", "line": 1, "issue": "a name" },
                { "severity": "low", "file": "src/lib.txt", "line": 2, "issue": "a doc" },
                { "severity": "low", "file": "src/lib.txt", "line": 3, "issue": "an example" }
            ],
            "must_fix": [], "summary": "fine"
        });
        turns.push(turn(
            "reviewer",
            &escape(&format!("Review story `{k}`, review round 1 (mode:")),
            &format!("Checked.\n\n```baton-review\n{verdict}\n```\n"),
            json!([]),
            latency,
        ));
    }
    std::fs::write(
        dir.join(format!("{STORIES_DIR}/sprint-status.yaml")),
        status,
    )
    .unwrap();
    std::fs::write(
        dir.join(".baton/scripts/bench.yaml"),
        serde_json::to_string_pretty(&json!({ "turns": turns })).unwrap(),
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "init"]);
}

/// What one run measured.
struct Measured {
    wall: f64,
    cpu: f64,
    max_rss_kb: u64,
    git: usize,
    lane_own: f64,
}

fn run(baton: &Path, dir: &Path, parallel: u64, stories: u64) -> Measured {
    let trace = dir.join(".baton/git-trace.json");
    let timing = dir.join(".baton/time.txt");
    let started = Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg("-o")
        .arg(&timing)
        .arg(baton)
        .args(["-C"])
        .arg(dir)
        .args([
            "sprint",
            "--yolo",
            "--json",
            "--parallel",
            &parallel.to_string(),
        ])
        .args(["--batch", &stories.to_string()])
        .env("GIT_TRACE2_EVENT", &trace)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("baton runs under /usr/bin/time");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "baton sprint failed in {}",
        dir.display()
    );
    let time = std::fs::read_to_string(&timing).unwrap_or_default();
    let field = |name: &str| -> f64 {
        time.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    let cpu = field("User time (seconds):") + field("System time (seconds):");
    let max_rss_kb = field("Maximum resident set size (kbytes):") as u64;
    let git = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"event\":\"start\""))
        .count();
    // The lane's own time: from the start of each story's rebase to its merge.
    let mut rebasing = std::collections::BTreeMap::new();
    let mut lane_own = 0.0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if e["event"] != "merge" {
            continue;
        }
        let at = e["at"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_millisecond() as f64 / 1000.0);
        let k = e["key"].as_str().unwrap_or_default().to_owned();
        match (e["phase"].as_str(), at) {
            (Some("rebasing"), Some(t)) => {
                rebasing.insert(k, t);
            }
            (Some("merged"), Some(t)) => {
                if let Some(s) = rebasing.remove(&k) {
                    lane_own += t - s;
                }
            }
            _ => {}
        }
    }
    Measured {
        wall,
        cpu,
        max_rss_kb,
        git,
        lane_own,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` lists benches; nothing to run here.
    }
    let baton = PathBuf::from(env!("CARGO_BIN_EXE_baton"));
    let stories = env_or("BATON_PAR_STORIES", 8);
    let latency = env_or("BATON_PAR_LATENCY_MS", 300);
    let ps: Vec<u64> = std::env::var("BATON_PAR_P")
        .ok()
        .map(|v| v.split(',').filter_map(|p| p.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 4, 8]);
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parallel-bench");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();

    let one_dir = tmp.join("one");
    std::fs::create_dir_all(&one_dir).unwrap();
    project(&one_dir, 1, latency);
    let one = run(&baton, &one_dir, 1, 1);
    println!(
        "one story alone: {:.2} s wall, {} git processes, {:.3} s CPU\n",
        one.wall, one.git, one.cpu
    );
    println!(
        "{stories} stories, model latency {latency} ms a turn (5 turns a story, 3 agent steps)\n"
    );
    println!(
        "| P | wall s | goal s (1.1·N/P·T1 + lane) | lane s | git/story | CPU ms/step | peak RSS MiB | RSS vs P=1 |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut base_rss = None;
    for p in ps {
        let dir = tmp.join(format!("p{p}"));
        std::fs::create_dir_all(&dir).unwrap();
        project(&dir, stories, latency);
        let m = run(&baton, &dir, p, stories);
        let goal = 1.1 * (stories as f64 / p as f64) * one.wall + m.lane_own;
        let rss = m.max_rss_kb as f64 / 1024.0;
        let base = *base_rss.get_or_insert(rss);
        println!(
            "| {p} | {:.2} | {:.2} {} | {:.2} | {:.1} | {:.1} | {:.1} | {:.2}× |",
            m.wall,
            goal,
            if m.wall <= goal { "met" } else { "MISSED" },
            m.lane_own,
            m.git as f64 / stories as f64,
            m.cpu * 1000.0 / (3 * stories) as f64,
            rss,
            rss / base,
        );
    }
}
