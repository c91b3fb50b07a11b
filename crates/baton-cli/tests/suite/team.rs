//! `baton team` end to end: one agent, `--parallel`, `--chain` with `{previous}`, an unknown
//! agent, and the exit codes of an escalation and of the budget, on the script provider.

use super::common::{Project, Run, parse_json, s, snapshot};
use super::sprint::{Script, baton, call, git_init, re};
use serde_json::{Value, json};

/// The scout's final answer: a marker the chain's second step must receive.
const SCOUT_ANSWER: &str = "The tests are in `tests/it.rs` (scout-answer-5e2).";

/// A project with a test file and `script` as `script/t`; no `baton.toml` (team needs none).
fn team_project(script: &Script) -> Project {
    let p = Project::empty();
    p.write("tests/it.rs", "#[test]\nfn it() {}\n");
    p.write(".baton/.gitignore", "*\n");
    script.install(&p);
    git_init(&p);
    p
}

/// The scout lists the files, then answers; the reviewer answers a chained task only if it holds
/// the scout's answer in place of `{previous}`, else (parallel) the plain task.
fn team_script() -> Script {
    Script::new()
        .raw(json!({
            "agent": "scout",
            "match": "find the tests",
            "repeat": true,
            "tool_calls": [call("list_files", json!({ "pattern": "**/*.rs" }))],
            "usage": { "input_tokens": 120, "output_tokens": 30 },
        }))
        .raw(json!({
            "agent": "scout",
            "match": re("tests/it.rs"),
            "repeat": true,
            "text": SCOUT_ANSWER,
            "usage": { "input_tokens": 200, "output_tokens": 10 },
        }))
        .turn(
            "reviewer",
            &re(&format!("then check: {SCOUT_ANSWER}")),
            "Checked the scout's claim: confirmed (chained-review).",
            vec![],
        )
        .turn(
            "reviewer",
            "^find the tests$",
            "I would look under tests/ (parallel-review).",
            vec![],
        )
}

/// `baton team ARGS --json --model script/t`, parsed; asserts the exit code.
fn team(p: &Project, args: &[&str], code: i32) -> (Value, Run) {
    let mut all = vec!["team"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", "--model", "script/t"]);
    let run = baton(p, &all).expect_code(code);
    (parse_json(&run), run)
}

fn steps(out: &Value) -> &Vec<Value> {
    out["report"]["steps"].as_array().expect("report.steps")
}

/// The task an agent was given, from its transcript.
fn transcript_task(step: &Value) -> String {
    let path = s(step, "transcript");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .find(|r| r["kind"] == "task")
        .map(|r| s(&r, "text").to_owned())
        .expect("a task record")
}

#[test]
fn one_agent_prints_its_outcome_as_json() {
    let p = team_project(&team_script());
    let (out, run) = team(&p, &["scout", "find the tests"], 0);
    assert!(s(&out, "run_id").starts_with("team-"), "{out:#}");
    let steps = steps(&out);
    assert_eq!(steps.len(), 1, "{out:#}");
    let step = &steps[0];
    assert_eq!(step["status"], "completed", "{}", run.describe());
    assert_eq!((s(step, "agent"), s(step, "model")), ("scout", "script/t"));
    assert_eq!(step["summary"], SCOUT_ANSWER);
    assert_eq!(step["turns"], 2);
    // The scripted usage of both turns, summed.
    assert_eq!(step["usage"]["input_tokens"], 320, "{step:#}");
    assert_eq!(step["usage"]["output_tokens"], 40, "{step:#}");
    assert_eq!(out["report"]["all_completed"], true);
    assert_eq!(transcript_task(step), "find the tests");
    // A read-only scout changed nothing.
    assert_eq!(step["files_changed"], json!([]));
}

#[test]
fn parallel_runs_every_agent_on_the_same_task() {
    let p = team_project(&team_script());
    let (out, run) = team(&p, &["--parallel", "scout,reviewer", "find the tests"], 0);
    let steps = steps(&out);
    let agents: Vec<&str> = steps.iter().map(|st| s(st, "agent")).collect();
    assert_eq!(agents, ["scout", "reviewer"], "{}", run.describe());
    for st in steps {
        assert_eq!(st["status"], "completed", "{st:#}");
        assert_eq!(transcript_task(st), "find the tests");
    }
    assert_eq!(steps[0]["summary"], SCOUT_ANSWER);
    assert!(
        s(&steps[1], "summary").contains("parallel-review"),
        "{out:#}"
    );
    assert_eq!(out["report"]["all_completed"], true);
}

#[test]
fn chain_feeds_each_answer_into_the_next_task() {
    let p = team_project(&team_script());
    let (out, run) = team(
        &p,
        &[
            "--chain",
            "scout,reviewer",
            "find the tests; then check: {previous}",
        ],
        0,
    );
    let steps = steps(&out);
    assert_eq!(steps.len(), 2, "{}", run.describe());
    for st in steps {
        assert_eq!(st["status"], "completed", "{st:#}");
    }
    // The reviewer's turn only answers a task holding the scout's answer (else a script miss
    // fails it); its transcript shows the exact task.
    assert!(
        s(&steps[1], "summary").contains("chained-review"),
        "{out:#}"
    );
    assert_eq!(transcript_task(&steps[0]), "find the tests; then check: ");
    assert_eq!(
        transcript_task(&steps[1]),
        format!("find the tests; then check: {SCOUT_ANSWER}")
    );
}

#[test]
fn a_chain_stops_at_the_first_step_that_fails() {
    // The reviewer has no turn for this task: a script miss fails it, and the scout after it
    // never runs.
    let p = team_project(&team_script());
    let (out, _) = team(
        &p,
        &["--chain", "scout,reviewer,scout", "find the tests"],
        1,
    );
    let steps = steps(&out);
    assert_eq!(steps.len(), 2, "{out:#}");
    assert_eq!(steps[1]["status"], "failed", "{out:#}");
    assert!(s(&steps[1], "reason").contains("script"), "{out:#}");
    assert_eq!(out["report"]["stopped_at"], 2, "{out:#}");
    assert_eq!(out["report"]["all_completed"], false);
}

#[test]
fn an_unknown_agent_exits_1_naming_the_known_agents() {
    let p = team_project(&team_script());
    let run = baton(
        &p,
        &[
            "team",
            "no-such-agent",
            "find the tests",
            "--model",
            "script/t",
        ],
    );
    let run = run.expect_code(1);
    assert!(run.stderr.contains("no-such-agent"), "{}", run.describe());
    for known in ["scout", "reviewer", "developer", "scrum-master"] {
        assert!(
            run.stderr.contains(known),
            "`{known}` not named\n{}",
            run.describe()
        );
    }
    // Checked before any agent runs: a typo in a chain fails fast too.
    let run = baton(
        &p,
        &[
            "team",
            "--chain",
            "scout,reviewr",
            "find the tests",
            "--model",
            "script/t",
        ],
    )
    .expect_code(1);
    assert!(run.stderr.contains("reviewr"), "{}", run.describe());
    let runs = p.root().join(".baton/runs");
    let transcripts = if runs.exists() {
        snapshot(&runs).len()
    } else {
        0
    };
    assert_eq!(
        transcripts, 0,
        "an agent ran before the unknown name was reported"
    );
}

#[test]
fn an_escalation_exits_3_and_the_budget_exits_4() {
    let script = Script::new().turn(
        "scout",
        "which one",
        "",
        vec![call(
            "escalate",
            json!({ "title": "two test suites", "finding": "tests/ and it/", "options": ["tests/", "it/"] }),
        )],
    );
    let p = team_project(&script);
    let (out, _) = team(&p, &["scout", "which one is it?"], 3);
    let step = &steps(&out)[0];
    assert_eq!(step["status"], "escalated", "{out:#}");
    assert_eq!(step["escalation"]["title"], "two test suites", "{out:#}");

    let p = team_project(&team_script());
    p.write(
        "baton.toml",
        "[budget]\nhard_usd = 0.0001\n\n[prices.\"script/t\"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0\n",
    );
    let (out, _) = team(&p, &["scout", "find the tests"], 4);
    let step = &steps(&out)[0];
    assert_eq!(step["status"], "cancelled", "{out:#}");
    assert!(s(step, "reason").starts_with("budget"), "{out:#}");
}

#[test]
fn a_configured_key_an_agent_repeats_is_in_no_transcript_journal_or_event() {
    const KEY: &str = "sk-ant-test-9f2c41d7e0b8a6";
    // The model repeats the key it read from the environment (an allowlisted interpreter
    // printed it): its answer, the outcome's summary and the events all carry it.
    let script = Script::new().turn(
        "scout",
        "show the environment",
        &format!("ANTHROPIC_API_KEY={KEY} is set."),
        vec![],
    );
    let p = team_project(&script);
    let run = p
        .command(&[
            "team",
            "scout",
            "show the environment",
            "--json",
            "--model",
            "script/t",
        ])
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .expect("baton runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ANTHROPIC_API_KEY=*** is set"), "{stdout}");
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );
    // Shown to a person: the report and the events on the terminal.
    let human = p
        .command(&[
            "team",
            "scout",
            "show the environment",
            "--model",
            "script/t",
        ])
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .expect("baton runs");
    let (out, err) = (
        String::from_utf8_lossy(&human.stdout),
        String::from_utf8_lossy(&human.stderr),
    );
    assert!(human.status.success(), "{out}\n{err}");
    assert!(out.contains("ANTHROPIC_API_KEY=*** is set"), "{out}");
    assert!(!out.contains(KEY) && !err.contains(KEY), "{out}\n{err}");
    let written = snapshot(&p.root().join(".baton"));
    assert!(
        written.keys().any(|k| k.starts_with("runs")),
        "no transcript"
    );
    // The recorded model session itself (the test's input) holds the key, of course.
    for (path, bytes) in written.iter().filter(|(k, _)| !k.starts_with("scripts")) {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(KEY), "the key is in {}", path.display());
    }
}
