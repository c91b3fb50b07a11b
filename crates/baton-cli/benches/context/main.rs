//! The context benchmark: what one story costs in input tokens, today and after, in one run.
//!
//! A BMad project (PRD ≈ 17 KB, epics ≈ 22 KB, architecture ≈ 61 KB, generated in the pinned
//! templates' shape: `documents.rs`) takes one story through `baton sprint --yolo` (the release
//! binary, baton's real agents and tools): create → dev → review that fails → fix → review →
//! QA → done. The model is a local server speaking the Anthropic Messages API that plays the
//! agents' turns (`workload.rs`: they read what their prompts tell them to) and applies
//! Anthropic's documented prompt-cache rules to the real request bodies, reporting usage as
//! Anthropic does (`cache.rs`). The story runs with a dev step of 10 turns and of 40.
//!
//! Each workload runs twice, as two variants of `baton.toml` and of the workload:
//! - **today**: no prompt caching, no compaction, whole documents read;
//! - **after**: caching (5-minute breakpoints), compaction of old tool results, section reads.
//!
//! A variant's settings are lines of `baton.toml` ([`TODAY`], [`AFTER`]); a line this build of
//! baton does not know (a setting another change adds) is left out and said so, so the bench
//! runs on every build and measures each setting as soon as it exists.
//!
//! Printed per stage and per story: requests, input tokens (all), cache reads, cache writes,
//! billed-equivalent input (reads × 0.1 + writes × 1.25 + uncached, the five-minute rates) and
//! output tokens; then the targets, reported and not asserted: billed-equivalent input per story
//! at most 0.3 × today's; the 40-turn dev step at most 0.15 × today's billed-equivalent and 0.35 ×
//! today's raw input; from the third turn of every agent on, at least 85 % of input tokens read
//! from the cache.
//!
//! Tokens are counted with `tiktoken-rs`'s `o200k_base` (OpenAI's tokenizer; Claude's is not
//! available offline, see `cache.rs`). Model time is simulated: each request is taken to come 20 s
//! after the one before, which is what the cache's lifetime is checked against.
//!
//! Run with `cargo bench -p baton-cli --bench context`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod cache;
mod documents;
mod workload;

use baton_test_support::{MockResponse, MockServer, RecordedRequest, anthropic_stream};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use workload::{Docs, PLANNING, Reads, STORIES, Stage, Tools};

/// Seconds between two requests, for the cache's lifetime.
const SECONDS_PER_REQUEST: u64 = 20;
/// The variable holding the key the server is sent.
const KEY_ENV: &str = "BATON_BENCH_KEY";

/// One way to run the story: the lines it adds to `baton.toml` and how its agents read.
struct Variant {
    name: &'static str,
    /// Lines of `[providers.anthropic]`.
    provider: &'static [&'static str],
    /// Lines of `[agents]`.
    agents: &'static [&'static str],
    reads: Reads,
}

/// Today's baton: no caching asked for, nothing compacted, whole documents read.
const TODAY: Variant = Variant {
    name: "today",
    provider: &["cache = \"off\""],
    agents: &["compact_after_bytes = 0"],
    reads: Reads::Whole,
};

/// After: baton's defaults (five-minute cache breakpoints, old tool results compacted past
/// 16 KiB), sections read.
const AFTER: Variant = Variant {
    name: "after",
    provider: &[],
    agents: &[],
    reads: Reads::Sections,
};

/// One request as the server saw it.
#[derive(Debug, Clone, Copy)]
struct Record {
    stage: Stage,
    /// The agent's turn, from 1.
    turn: usize,
    usage: cache::Usage,
}

/// The server's state for one run.
struct Sim {
    cache: cache::Cache,
    clock: u64,
    records: Vec<Record>,
    errors: Vec<String>,
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The base commit a review task names (`(base 0123456789ab)`).
fn base_of(task: &str) -> Option<String> {
    let at = task.find("(base ")?;
    let rest = &task[at + 6..];
    Some(rest[..rest.find(')')?].to_owned())
}

/// The model: plays the agents' turns and reports Anthropic's usage under the cache's rules.
fn responder(
    sim: Arc<Mutex<Sim>>,
    docs: Arc<Docs>,
    reads: Reads,
    dev_turns: usize,
) -> impl Fn(&RecordedRequest) -> MockResponse {
    move |request: &RecordedRequest| {
        let body = &request.body;
        let system = text_of(&body["system"]);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let task = messages
            .first()
            .map(|m| text_of(&m["content"]))
            .unwrap_or_default();
        let mut sim = sim.lock().unwrap();
        let Some(stage) = Stage::of(&system, &task) else {
            sim.errors.push(format!(
                "a request of an unknown agent: {}",
                &system[..system.len().min(80)]
            ));
            return MockResponse::text(500, "unknown agent");
        };
        let index = messages.iter().filter(|m| m["role"] == "assistant").count();
        let turns = workload::turns(
            stage,
            reads,
            dev_turns,
            &docs,
            Tools::of(body),
            base_of(&task).as_deref(),
        );
        let Some(turn) = turns.get(index) else {
            sim.errors
                .push(format!("{} has no turn {}", stage.label(), index + 1));
            return MockResponse::text(500, "no such turn");
        };
        sim.clock += SECONDS_PER_REQUEST;
        let now = sim.clock;
        let mut usage = sim.cache.request(body, now);
        let calls: Vec<(String, String, String)> = turn
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                (
                    format!("toolu_bench_{now}_{i}"),
                    name.clone(),
                    args.to_string(),
                )
            })
            .collect();
        usage.output = cache::tokens(&turn.text)
            + calls
                .iter()
                .map(|(_, n, a)| cache::tokens(n) + cache::tokens(a))
                .sum::<u64>();
        sim.records.push(Record {
            stage,
            turn: index + 1,
            usage,
        });
        let wire = anthropic_stream::Usage {
            input_tokens: usage.input,
            output_tokens: usage.output,
            cache_read_input_tokens: usage.read,
            cache_creation_input_tokens: usage.write,
        };
        if calls.is_empty() {
            anthropic_stream::text(&[&turn.text], wire)
        } else {
            let calls: Vec<(&str, &str, &str)> = calls
                .iter()
                .map(|(i, n, a)| (i.as_str(), n.as_str(), a.as_str()))
                .collect();
            anthropic_stream::tool_use(&turn.text, &calls, 400, wire)
        }
    }
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
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

const SPRINT: &str = "generated: 03-21-2026 09:00
last_updated: 03-21-2026 09:00
project: larder
project_key: NOKEY
tracking_system: file-system
story_location: _bmad-output/implementation-artifacts

development_status:
  epic-1: done
  1-1-sign-up-and-create-a-household: done
  1-2-invite-members: done
  1-3-roles-and-permissions: done
  1-4-leave-or-delete-a-household: done
  epic-1-retrospective: optional

  epic-2: in-progress
  2-1-add-items-by-hand: done
  2-2-scan-barcodes: done
  2-3-pantry-history: backlog
  2-4-expiry-reminders: backlog
  epic-2-retrospective: optional
";

/// `baton.toml` of a project whose model is served at `url`, with `variant`'s lines (those this
/// build knows).
fn config(url: &str, provider: &[&str], agents: &[&str]) -> String {
    format!(
        "[sprint]\ntest_command = [\"cat\", \"ci/green.txt\"]\nqa = true\nretrospective = false\n\n\
         [agents]\nmodel = \"anthropic/claude-sonnet-4-5\"\n{}\n\n\
         [providers.anthropic]\nkind = \"anthropic\"\nbase_url = \"{url}\"\napi_key_env = \"{KEY_ENV}\"\nmax_retries = 0\n{}\n",
        agents.join("\n"),
        provider.join("\n")
    )
}

/// A fresh project in `root`: the planning documents, the sprint file, the test outputs the
/// agents print, a small crate; committed.
fn project(root: &Path, docs: &Docs, toml: &str) {
    let write = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(&format!("{PLANNING}/prd.md"), &docs.prd);
    write(&format!("{PLANNING}/epics.md"), &docs.epics);
    write(&format!("{PLANNING}/architecture.md"), &docs.architecture);
    write(&format!("{STORIES}/sprint-status.yaml"), SPRINT);
    write("ci/red.txt", &workload::test_output(true));
    write("ci/green.txt", &workload::test_output(false));
    write(
        "Cargo.toml",
        "[package]\nname = \"larder\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    );
    write(
        "src/lib.rs",
        "//! Larder: the household pantry.\n\npub mod pantry;\n",
    );
    write("src/pantry/mod.rs", "//! The pantry.\n\npub mod history;\n");
    write(".gitignore", "/target\n");
    write(".baton/.gitignore", "*\n");
    write("baton.toml", toml);
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "larder"]);
}

fn baton(baton: &Path, root: &Path, user: &Path, args: &[&str]) -> std::process::Output {
    Command::new(baton)
        .arg("-C")
        .arg(root)
        .args(args)
        .env("BATON_CONFIG_DIR", user)
        .env(KEY_ENV, "sk-bench")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Whether this build accepts a `baton.toml` with these lines.
fn accepted(exe: &Path, docs: &Docs, provider: &[&str], agents: &[&str]) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        docs,
        &config("http://127.0.0.1:9", provider, agents),
    );
    baton(exe, dir.path(), user.path(), &["status", "--json"])
        .status
        .success()
}

/// The lines of `lines` that this build's `baton.toml` accepts (one project per line tried).
fn known<'a>(exe: &Path, docs: &Docs, lines: &[&'a str], provider: bool) -> Vec<&'a str> {
    assert!(
        accepted(exe, docs, &[], &[]),
        "the benchmark's own project is refused"
    );
    lines
        .iter()
        .copied()
        .filter(|line| {
            if provider {
                accepted(exe, docs, &[line], &[])
            } else {
                accepted(exe, docs, &[], &[line])
            }
        })
        .collect()
}

/// Runs the story once; returns every request's record.
fn run(
    exe: &Path,
    rt: &tokio::runtime::Runtime,
    docs: &Arc<Docs>,
    variant: &Variant,
    provider: &[&str],
    agents: &[&str],
    dev_turns: usize,
) -> Vec<Record> {
    let dir = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let root = dir.path();
    let sim = Arc::new(Mutex::new(Sim {
        cache: cache::Cache::default(),
        clock: 0,
        records: Vec::new(),
        errors: Vec::new(),
    }));
    let server = rt.block_on(MockServer::start());
    server.respond_with(Arc::new(responder(
        sim.clone(),
        docs.clone(),
        variant.reads,
        dev_turns,
    )));
    project(root, docs, &config(&server.url(), provider, agents));
    let trust = baton(exe, root, user.path(), &["trust"]);
    assert!(trust.status.success(), "baton trust: {trust:?}");
    let key = documents::story_key();
    let out = baton(
        exe,
        root,
        user.path(),
        &["sprint", "--yolo", "--json", "--stories", &key],
    );
    let sim = sim.lock().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let done = report
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|r| r["report"]["completed"] == 1);
    if !done || !sim.errors.is_empty() || !server.refused().is_empty() {
        panic!(
            "the story did not run through ({} / {dev_turns} dev turns): {:?}\nrefused: {:?}\n--- stdout (end) ---\n{}\n--- stderr (end) ---\n{}",
            variant.name,
            sim.errors,
            server.refused(),
            tail(&report, 3000),
            tail(&String::from_utf8_lossy(&out.stderr), 3000)
        );
    }
    sim.records.clone()
}

fn tail(s: &str, n: usize) -> &str {
    let mut at = s.len().saturating_sub(n);
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[at..]
}

/// Sums of some requests.
#[derive(Debug, Clone, Copy, Default)]
struct Sum {
    requests: u64,
    input: u64,
    read: u64,
    write: u64,
    uncached: u64,
    output: u64,
}

impl Sum {
    fn of<'a>(records: impl Iterator<Item = &'a Record>) -> Sum {
        let mut s = Sum::default();
        for r in records {
            s.requests += 1;
            s.input += r.usage.total_input();
            s.read += r.usage.read;
            s.write += r.usage.write;
            s.uncached += r.usage.input;
            s.output += r.usage.output;
        }
        s
    }

    /// Reads at 0.1, writes at 1.25 (five-minute entries), the rest at 1.
    fn billed(&self) -> f64 {
        self.read as f64 * 0.1 + self.write as f64 * 1.25 + self.uncached as f64
    }
}

fn row(label: &str, s: Sum) {
    println!(
        "  {label:<30} {:>5} {:>10} {:>10} {:>9} {:>12.0} {:>8}",
        s.requests,
        s.input,
        s.read,
        s.write,
        s.billed(),
        s.output
    );
}

fn table(title: &str, records: &[Record]) {
    println!("\n{title}");
    println!(
        "  {:<30} {:>5} {:>10} {:>10} {:>9} {:>12} {:>8}",
        "stage", "reqs", "input", "cache rd", "cache wr", "billed-eq in", "output"
    );
    for stage in Stage::ALL {
        row(
            stage.label(),
            Sum::of(records.iter().filter(|r| r.stage == stage)),
        );
    }
    row("story", Sum::of(records.iter()));
}

/// The share of input read from the cache, from the third turn of each agent on: all the agent
/// runs together, and the worst one with its stage.
fn late_reads(records: &[Record]) -> (f64, f64, &'static str) {
    let late: Vec<&Record> = records.iter().filter(|r| r.turn >= 3).collect();
    let share = |s: Sum| {
        if s.input == 0 {
            1.0
        } else {
            s.read as f64 / s.input as f64
        }
    };
    let all = share(Sum::of(late.iter().copied()));
    let (worst, stage) = Stage::ALL
        .iter()
        .map(|st| (Sum::of(late.iter().copied().filter(|r| r.stage == *st)), st))
        .filter(|(s, _)| s.requests > 0)
        .map(|(s, st)| (share(s), st.label()))
        .fold((1.0, "-"), |a, b| if b.0 < a.0 { b } else { a });
    (all, worst, stage)
}

fn main() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_baton"));
    cache::self_check();
    let docs = Arc::new(Docs::new());
    println!(
        "context benchmark: one story through baton sprint, on a local Anthropic-wire server with Anthropic's cache rules"
    );
    println!(
        "documents: prd.md {:.1} KB ({} tokens), epics.md {:.1} KB ({} tokens), architecture.md {:.1} KB ({} tokens), the story {:.1} KB ({} tokens)",
        docs.prd.len() as f64 / 1024.0,
        cache::tokens(&docs.prd),
        docs.epics.len() as f64 / 1024.0,
        cache::tokens(&docs.epics),
        docs.architecture.len() as f64 / 1024.0,
        cache::tokens(&docs.architecture),
        docs.story.len() as f64 / 1024.0,
        cache::tokens(&docs.story)
    );
    println!(
        "tokens: tiktoken-rs o200k_base (an approximation of Claude's tokenizer); minimum cacheable prefix {} tokens; {} s between requests",
        cache::MIN_CACHEABLE,
        SECONDS_PER_REQUEST
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut settings: BTreeMap<&str, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
    for v in [&TODAY, &AFTER] {
        let provider = known(&exe, &docs, v.provider, true);
        let agents = known(&exe, &docs, v.agents, false);
        let missing: Vec<&&str> = v
            .provider
            .iter()
            .chain(v.agents)
            .filter(|l| !provider.contains(l) && !agents.contains(l))
            .collect();
        println!(
            "variant `{}`: reads {}; baton.toml: {}{}",
            v.name,
            match v.reads {
                Reads::Whole => "whole documents",
                Reads::Sections => "sections",
            },
            if provider.is_empty() && agents.is_empty() {
                "(nothing)".to_owned()
            } else {
                provider
                    .iter()
                    .chain(&agents)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if missing.is_empty() {
                String::new()
            } else {
                format!(
                    "; not known to this build, left out: {}",
                    missing
                        .iter()
                        .map(|l| format!("`{l}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
        settings.insert(v.name, (provider, agents));
    }
    let mut results: BTreeMap<(usize, &str), Vec<Record>> = BTreeMap::new();
    for dev_turns in [10, 40] {
        for v in [&TODAY, &AFTER] {
            let (provider, agents) = &settings[v.name];
            let records = run(&exe, &rt, &docs, v, provider, agents, dev_turns);
            table(
                &format!("{} — dev step of {dev_turns} turns", v.name),
                &records,
            );
            results.insert((dev_turns, v.name), records);
        }
    }
    let sum = |turns: usize, name: &str, stage: Option<Stage>| {
        Sum::of(
            results[&(turns, name)]
                .iter()
                .filter(|r| stage.is_none_or(|s| r.stage == s)),
        )
    };
    let ratio = |a: f64, b: f64| if b == 0.0 { f64::NAN } else { a / b };
    println!("\ntargets (after ÷ today; reported, not asserted):");
    for turns in [10, 40] {
        let (t, a) = (sum(turns, "today", None), sum(turns, "after", None));
        println!(
            "  story with a {turns}-turn dev step: billed-equivalent input {:.2} × (target ≤ 0.30), raw input {:.2} ×",
            ratio(a.billed(), t.billed()),
            ratio(a.input as f64, t.input as f64)
        );
    }
    let (t, a) = (
        sum(40, "today", Some(Stage::Dev)),
        sum(40, "after", Some(Stage::Dev)),
    );
    println!(
        "  the 40-turn dev step: billed-equivalent input {:.2} × (target ≤ 0.15), raw input {:.2} × (target ≤ 0.35)",
        ratio(a.billed(), t.billed()),
        ratio(a.input as f64, t.input as f64)
    );
    for turns in [10, 40] {
        for name in ["today", "after"] {
            let (all, worst, stage) = late_reads(&results[&(turns, name)]);
            println!(
                "  {name}, {turns}-turn dev step: cache reads from each agent's third turn on: {:.0} % of input overall, {:.0} % in the worst stage, {stage} (target ≥ 85 %)",
                all * 100.0,
                worst * 100.0
            );
        }
    }
}
