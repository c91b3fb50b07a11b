//! A story in a large repository against the same story in a small one: `baton sprint` (the
//! release binary) on a project of 30,000 tracked files and on the same project without them.
//!
//! Both projects hold `BATON_LARGE_STORIES` (3) independent stories on `script/bench`, answered
//! at once (no model latency: what is measured is baton's own work, git's above all): the scrum
//! master writes the story file, the developer writes `src/<key>.rs`, fills the File List and
//! writes the file the test command (`cat tests-pass`) reads, and the reviewer passes it. The
//! large project adds `BATON_LARGE_FILES` (30,000) tracked files in 300 folders beside `src/`,
//! and a few untracked build files in an ignored folder. Each project is made once and copied
//! for every run, and the copy's index is refreshed first (as the user's own `git status` would
//! have left it).
//!
//! Measured `BATON_LARGE_RUNS` (3) times each, one story at a time (and with `--parallel 2`
//! when `BATON_LARGE_PARALLEL=1`), the median of: wall time per story, and git processes per
//! story (every git started, counted from `GIT_TRACE2_EVENT`). The goal: a story in the large
//! project takes at most 1.5 times as long as in the small one. `BATON_LARGE_BIN` runs another
//! baton binary instead (an older build, to compare).
//!
//! Run with `cargo bench -p baton-cli --bench large_repo`.

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
            "-c",
            "commit.gpgsign=false",
            // No automatic gc in the background (it would pack objects while a copy is made).
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
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

fn turn(agent: &str, pattern: &str, text: &str, calls: Value) -> Value {
    json!({ "agent": agent, "repeat": true, "match": pattern, "text": text, "tool_calls": calls })
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

/// The project with `stories` stories and `files` tracked files beside it, committed.
fn project(dir: &Path, stories: u64, files: u64) {
    std::fs::create_dir_all(dir.join(STORIES_DIR)).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.txt"), "bench\n").unwrap();
    std::fs::write(dir.join(".gitignore"), "/build/\n").unwrap();
    std::fs::write(
        dir.join("baton.toml"),
        "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\n\n[agents]\nmodel = \"script/bench\"\n",
    )
    .unwrap();
    for i in 0..files {
        let folder = dir.join(format!("vendor/d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&folder).unwrap();
        }
        std::fs::write(folder.join(format!("f{i:05}.txt")), format!("file {i}\n")).unwrap();
    }
    if files > 0 {
        std::fs::create_dir_all(dir.join("build")).unwrap();
        for i in 0..50 {
            std::fs::write(dir.join(format!("build/o{i}.o")), "obj").unwrap();
        }
    }
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
        ));
        turns.push(turn(
            "scrum-master",
            &escape(&format!("to `{story}`")),
            "Written.",
            json!([]),
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
        ));
        turns.push(turn(
            "developer",
            &escape(&format!("to `src/{k}.rs`")),
            "Done; tests pass.",
            json!([]),
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
        ));
    }
    std::fs::write(
        dir.join(format!("{STORIES_DIR}/sprint-status.yaml")),
        status,
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "init"]);
    // Packed, as a repository that lived a while is.
    git(dir, &["gc", "-q"]);
    // The machine's, after the commit: never part of the project's history.
    std::fs::create_dir_all(dir.join(".baton/scripts")).unwrap();
    std::fs::write(dir.join(".baton/.gitignore"), "*\n").unwrap();
    std::fs::write(
        dir.join(".baton/scripts/bench.yaml"),
        serde_json::to_string_pretty(&json!({ "turns": turns })).unwrap(),
    )
    .unwrap();
}

/// What one run measured.
struct Measured {
    wall: f64,
    git: usize,
}

fn run(baton: &Path, template: &Path, dir: &Path, parallel: u64, stories: u64) -> Measured {
    let _ = std::fs::remove_dir_all(dir);
    let copied = Command::new("cp")
        .arg("-a")
        .arg(template)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        copied.status.success(),
        "cp -a {} {}: {}",
        template.display(),
        dir.display(),
        String::from_utf8_lossy(&copied.stderr)
    );
    // A copy's files have new inodes and change times: refresh the index once, as the user's
    // own `git status` would have.
    git(dir, &["update-index", "-q", "--refresh"]);
    let trace = dir.join(".baton/git-trace.json");
    let started = Instant::now();
    let out = Command::new(baton)
        .arg("-C")
        .arg(dir)
        .args([
            "sprint",
            "--yolo",
            "--json",
            "--parallel",
            &parallel.to_string(),
            "--batch",
            &stories.to_string(),
        ])
        .env("GIT_TRACE2_EVENT", &trace)
        .env("BATON_CONFIG_DIR", dir.join(".baton/no-user-config"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("baton runs");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "baton sprint failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout)
    );
    let git = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"event\":\"start\""))
        .count();
    Measured { wall, git }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` lists benches; nothing to run here.
    }
    let baton = std::env::var_os("BATON_LARGE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_baton")));
    let stories = env_or("BATON_LARGE_STORIES", 3);
    let files = env_or("BATON_LARGE_FILES", 30_000);
    let runs = env_or("BATON_LARGE_RUNS", 3).max(1);
    let mut modes = vec![1];
    if env_or("BATON_LARGE_PARALLEL", 0) == 1 {
        modes.push(2);
    }
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("large-repo-bench");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let small = tmp.join("small");
    let large = tmp.join("large");
    let made = Instant::now();
    project(&small, stories, 0);
    project(&large, stories, files);
    println!(
        "projects made in {:.1} s: small (a handful of files), large ({files} more tracked files)\n",
        made.elapsed().as_secs_f64()
    );
    println!(
        "{stories} stories a run, {runs} runs each, medians; binary {}\n",
        baton.display()
    );
    println!(
        "| parallel | small s/story | large s/story | large ÷ small | git/story small | git/story large |"
    );
    println!("|---|---|---|---|---|---|");
    for p in modes {
        let mut walls = [Vec::new(), Vec::new()];
        let mut gits = [Vec::new(), Vec::new()];
        for r in 0..runs {
            // Alternate, so neither project always runs on a colder cache.
            for (i, template) in [&small, &large].into_iter().enumerate() {
                let dir = tmp.join(format!("run-{p}-{r}-{i}"));
                let m = run(&baton, template, &dir, p, stories);
                walls[i].push(m.wall / stories as f64);
                gits[i].push(m.git as f64 / stories as f64);
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        let [ws, wl] = walls.map(median);
        let [gs, gl] = gits.map(median);
        let ratio = wl / ws;
        println!(
            "| {p} | {ws:.3} | {wl:.3} | {ratio:.2}× {} | {gs:.1} | {gl:.1} |",
            if ratio <= 1.5 {
                "(goal ≤ 1.5×: met)"
            } else {
                "(goal ≤ 1.5×: MISSED)"
            }
        );
    }
}
