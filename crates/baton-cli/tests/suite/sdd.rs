//! `baton sdd PLAN.md` end to end on a real git repository with the script provider: a two-task
//! plan completes (test-first guard on), a spec failure loops once and passes, max iterations
//! and a verdict without its block escalate (and an answer is acted on), the optional reviews
//! run concurrently, a killed run resumes at its stage, and the cost limits refuse a dispatch.

use super::common::{Project, Run, s};
use super::sprint::{Script, baton, call, git_init, open_escalations, re};
use baton_store::journal::{Journal, SqliteJournal, StepRecord};
use serde_json::{Value, json};

const PLAN: &str = "# Plan\n\nTwo small things.\n\n```baton-tasks\n- id: 1\n  title: Add the \
                    calculator\n  files: [calc.py]\n  acceptance_test: test_calc.py\n- id: 2\n  \
                    title: Add the printer\n  files: [printer.py]\n```\n";

/// A project with the plan, `script/t`, and (trusted) `true` as its test command.
pub(super) fn project(script: &Script, extra_toml: &str) -> Project {
    let p = Project::empty();
    p.write("PLAN.md", PLAN);
    p.write("README.md", "a project\n");
    p.write(".baton/.gitignore", "*\n");
    p.write(
        "baton.toml",
        &format!(
            "[commands]\nallow = [\"true\"]\n\n[tdd]\ntest_commands = [[\"true\"]]\n{extra_toml}"
        ),
    );
    let root = std::fs::canonicalize(p.root()).expect("canonical root");
    p.write(
        ".baton/no-user-config/trusted-projects",
        &format!("{}\n", root.display()),
    );
    script.install(&p);
    git_init(&p);
    p
}

fn verdict(passed: bool, severity: &str) -> String {
    let findings = if passed {
        json!([])
    } else {
        json!([{ "severity": severity, "file": "calc.py", "issue": "the sum is wrong" }])
    };
    format!(
        "Checked.\n\n```baton-review\n{}\n```\n",
        json!({ "passed": passed, "findings": findings, "must_fix": [], "summary": "checked" })
    )
}

/// The implementer of task `id`, test-first: writes the test, runs the tests, writes the code.
pub(super) fn implement(script: Script, id: &str, module: &str) -> Script {
    implement_with(script, id, module, vec![])
}

/// The implementer of task `id`, making the calls `first` before working test-first.
fn implement_with(script: Script, id: &str, module: &str, first: Vec<Value>) -> Script {
    let mut calls = first;
    calls.extend([
        call(
            "write_file",
            json!({ "path": format!("test_{module}.py"), "content": "def test(): pass\n" }),
        ),
        call("run_command", json!({ "program": "true", "args": [] })),
        call(
            "write_file",
            json!({ "path": format!("{module}.py"), "content": "def f(): pass\n" }),
        ),
    ]);
    script
        .turn(
            "implementer",
            &re(&format!("Implement task {id} of the plan `PLAN.md`")),
            "Test first.",
            calls,
        )
        .turn(
            "implementer",
            &re(&format!("to `{module}.py`")),
            &format!("Implemented task {id}; the tests pass."),
            vec![],
        )
}

/// The implementer's fix round `round` of task `id`, answering only a task that holds the
/// review's finding: writes `fix<round>.py`.
fn fix(script: Script, id: &str, round: u32) -> Script {
    script
        .turn(
            "implementer",
            &format!(
                "(?s)^{}.*the sum is wrong",
                re(&format!("Fix round {round} of task {id} "))
            ),
            "Fixing.",
            vec![call(
                "write_file",
                json!({ "path": format!("fix{round}.py"), "content": "x = 1\n" }),
            )],
        )
        .turn(
            "implementer",
            &re(&format!("to `fix{round}.py`")),
            "Fixed.",
            vec![],
        )
}

/// Reviewer `agent` (`Spec`, `Quality`, …) of task `id`, round `round`, answers `text`.
fn review(script: Script, agent: &str, name: &str, id: &str, round: &str, text: &str) -> Script {
    script.turn(
        agent,
        &format!(
            "^{} review of task {} of the plan `PLAN\\.md`, round {round}:",
            name,
            re(id)
        ),
        text,
        vec![],
    )
}

/// The spec reviewer of task `id`, round `round`, answers `text`.
fn spec_review(script: Script, id: &str, round: &str, text: &str) -> Script {
    review(script, "spec-reviewer", "Spec", id, round, text)
}

/// The quality reviewer of task `id`, round `round`, answers `text`.
fn quality_review(script: Script, id: &str, round: &str, text: &str) -> Script {
    review(script, "quality-reviewer", "Quality", id, round, text)
}

pub(super) fn passing_reviews(script: Script, id: &str) -> Script {
    let script = spec_review(script, id, "\\d+", &verdict(true, ""));
    quality_review(script, id, "\\d+", &verdict(true, ""))
}

fn sdd(p: &Project, extra: &[&str], code: i32) -> (Vec<Value>, Value, Run) {
    let mut args = vec!["sdd", "PLAN.md", "--json", "--model", "script/t"];
    args.extend_from_slice(extra);
    let run = baton(p, &args).expect_code(code);
    let mut lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", run.describe())))
        .collect();
    let report = lines.pop().expect("a report line");
    assert_eq!(report["event"], "report", "{}", run.describe());
    (lines, report["report"].clone(), run)
}

fn steps(p: &Project, task: &str) -> Vec<StepRecord> {
    let j = SqliteJournal::open(&p.root().join(".baton/baton.db")).expect("journal");
    j.steps_for_key(&format!("sdd:PLAN.md#{task}"))
        .expect("steps")
}

fn stages(p: &Project, task: &str) -> Vec<(String, u32, String)> {
    steps(p, task)
        .into_iter()
        .map(|s| (s.stage, s.attempt, s.outcome.unwrap_or_default()))
        .collect()
}

fn st(stage: &str, round: u32, outcome: &str) -> (String, u32, String) {
    (stage.to_owned(), round, outcome.to_owned())
}

fn task_states(report: &Value) -> Vec<String> {
    report["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| s(t, "state").to_owned())
        .collect()
}

fn git_subjects(p: &Project) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["log", "--format=%s", "--reverse"])
        .current_dir(p.root())
        .output()
        .expect("git log");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_two_task_plan_completes_with_the_guard_on() {
    let script = implement(Script::new(), "1", "calc");
    // Task 2's implementer tries the code before its test first: the guard refuses it.
    let early = call(
        "write_file",
        json!({ "path": "printer.py", "content": "too early\n" }),
    );
    let script = implement_with(passing_reviews(script, "1"), "2", "printer", vec![early]);
    let script = passing_reviews(script, "2");
    let p = project(&script, "");
    let (events, report, _) = sdd(&p, &[], 0);
    let j = SqliteJournal::open(&p.root().join(".baton/baton.db")).expect("journal");
    let guard = j.guard_records(None, None).expect("guard log");
    let denied: Vec<_> = guard.iter().filter(|g| g.kind == "deny").collect();
    assert_eq!(denied.len(), 1, "{guard:#?}");
    assert_eq!(denied[0].path, "printer.py");
    assert!(
        denied[0].detail.contains("test_printer.py"),
        "{:?}",
        denied[0]
    );
    assert_eq!(guard.iter().filter(|g| g.kind == "test-run").count(), 2);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "refused" && e["scope"]["agent"]["agent"] == "implementer")
    );
    assert_eq!(s(&report, "end"), "completed");
    assert_eq!(task_states(&report), ["complete", "complete"]);
    for task in ["1", "2"] {
        assert_eq!(
            stages(&p, task),
            [
                st("implement", 1, "completed"),
                st("spec-review", 1, "passed"),
                st("quality-review", 1, "passed")
            ]
        );
    }
    // The work is committed per task, test before code (the guard let it through in that order).
    assert_eq!(
        git_subjects(&p)[1..],
        ["sdd(task 1): implement", "sdd(task 2): implement"]
    );
    assert!(p.root().join("calc.py").is_file() && p.root().join("test_printer.py").is_file());
    // The status line, with the guard's prefix and the reviews' marks.
    let lines: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "status")
        .map(|e| s(e, "line"))
        .collect();
    assert!(
        lines.contains(
            &"[TDD] Task 1/2 \"Add the calculator\" — reviewing (spec ✓ quality …) | $0.00"
        ),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&"[TDD] Task 2/2 \"Add the printer\" — complete (spec ✓ quality ✓) | $0.00"),
        "{lines:#?}"
    );
    // The reviewers got the files git says changed since the task started.
    let spec_task = std::fs::read_dir(p.root().join(".baton/runs"))
        .expect("runs")
        .flat_map(|d| std::fs::read_dir(d.expect("run").path()).expect("run dir"))
        .map(|f| std::fs::read_to_string(f.expect("file").path()).unwrap_or_default())
        .find(|t| t.contains("Spec review of task 2"))
        .expect("the spec reviewer's transcript of task 2");
    assert!(
        spec_task.contains("`printer.py`, `test_printer.py`") && !spec_task.contains("`calc.py`, "),
        "{spec_task}"
    );
    // A second run has nothing left to do.
    let (_, again, _) = sdd(&p, &[], 0);
    assert_eq!(task_states(&again), ["complete", "complete"]);
    assert_eq!(steps(&p, "1").len(), 3);
}

#[test]
fn a_spec_failure_loops_once_and_passes() {
    let script = implement(Script::new(), "1", "calc");
    let script = spec_review(script, "1", "1", &verdict(false, "high"));
    let script = fix(script, "1", 1);
    let script = passing_reviews(script, "1");
    let script = passing_reviews(implement(script, "2", "printer"), "2");
    let p = project(&script, "");
    let (_, report, _) = sdd(&p, &["--no-tdd"], 0);
    assert_eq!(task_states(&report), ["complete", "complete"]);
    assert_eq!(
        stages(&p, "1"),
        [
            st("implement", 1, "completed"),
            st("spec-review", 1, "changes-requested"),
            st("fix", 1, "completed"),
            st("spec-review", 2, "passed"),
            st("quality-review", 1, "passed")
        ]
    );
    // The fix round was told the findings (its script answers only then) and committed.
    assert!(git_subjects(&p).contains(&"sdd(task 1): fix round 1".to_owned()));
}

#[test]
fn max_iterations_escalate_and_an_answer_is_acted_on() {
    let script = implement(Script::new(), "1", "calc");
    let script = spec_review(script, "1", "[12]", &verdict(false, "high"));
    let script = fix(script, "1", 1);
    let script = spec_review(script, "1", "3", &verdict(true, ""));
    let script = quality_review(script, "1", "1", &verdict(true, ""));
    // Task 2's implementer writes a draft, then has nothing more to say: it fails.
    let script = script.turn(
        "implementer",
        &re("Implement task 2 "),
        "Drafting.",
        vec![call(
            "write_file",
            json!({ "path": "draft.py", "content": "x\n" }),
        )],
    );
    let p = project(&script, "");
    let (events, report, _) = sdd(&p, &["--no-tdd", "--max-iterations", "1"], 3);
    assert_eq!(s(&report, "end"), "paused");
    assert_eq!(task_states(&report), ["escalated", "pending"]);
    let esc = &report["escalation"];
    assert_eq!(s(esc, "kind"), "sdd-max-iterations");
    assert!(s(esc, "title").contains("spec review still fails after 1 fix round"));
    let ids: Vec<&str> = esc["choices"]
        .as_array()
        .expect("choices")
        .iter()
        .map(|c| s(c, "id"))
        .collect();
    assert_eq!(ids, ["fix-manually", "skip-review", "adjust-plan", "abort"]);
    assert!(events.iter().any(|e| e["event"] == "escalation"));
    assert_eq!(open_escalations(&p).len(), 1);
    // The human fixes it by hand: the spec review runs again and passes; task 2's implementer
    // fails after writing a draft (another escalation).
    let id = esc["id"].as_i64().expect("id").to_string();
    let answered = baton(&p, &["answer", &id, "fix-manually"]).expect_code(0);
    assert!(
        answered.stdout.contains("`baton sdd PLAN.md` continues"),
        "{}",
        answered.stdout
    );
    let (_, report, _) = sdd(&p, &["--no-tdd", "--max-iterations", "1"], 3);
    assert_eq!(task_states(&report)[0], "complete");
    assert_eq!(
        stages(&p, "1")[4..],
        [
            st("spec-review", 3, "passed"),
            st("quality-review", 1, "passed")
        ]
    );
    assert_eq!(s(&report["escalation"], "kind"), "sdd-agent");
    // Run the failed step again, now with a script: task 2 completes, and its second attempt
    // keeps the first one's base commit (the draft was committed in between).
    let id = report["escalation"]["id"].as_i64().expect("id").to_string();
    baton(&p, &["answer", &id, "retry"]).expect_code(0);
    passing_reviews(implement(Script::new(), "2", "printer"), "2").install(&p);
    let (_, report, _) = sdd(&p, &["--no-tdd"], 0);
    assert_eq!(task_states(&report), ["complete", "complete"]);
    let two = steps(&p, "2");
    let outcomes: Vec<&str> = two.iter().filter_map(|s| s.outcome.as_deref()).collect();
    assert_eq!(outcomes, ["failed", "completed", "passed", "passed"]);
    let base = |s: &StepRecord| -> Value {
        serde_json::from_str::<Value>(s.detail.as_deref().unwrap_or("{}")).expect("detail")["base"]
            .clone()
    };
    assert!(base(&two[0]).is_string());
    assert_eq!(base(&two[0]), base(&two[1]));
    let drafts = git_subjects(&p)
        .iter()
        .filter(|m| *m == "sdd(task 2): implement")
        .count();
    assert_eq!(drafts, 2, "the draft and the implementation");
}

#[test]
fn a_verdict_without_its_block_escalates_at_once() {
    let script = implement(Script::new(), "1", "calc");
    let script = spec_review(script, "1", "1", "Looks fine to me, ship it.");
    let p = project(&script, "");
    let (_, report, _) = sdd(&p, &["--no-tdd"], 3);
    assert_eq!(s(&report["escalation"], "kind"), "sdd-inconclusive");
    assert!(s(&report["escalation"], "finding").contains("no `baton-review` block"));
    assert_eq!(
        stages(&p, "1"),
        [
            st("implement", 1, "completed"),
            st("spec-review", 1, "inconclusive")
        ]
    );
    let log = std::fs::read_to_string(p.root().join(".baton/escalations.log")).expect("log");
    assert!(log.contains("[sdd:PLAN.md#1] sdd-inconclusive"), "{log}");
}

#[test]
fn optional_reviews_run_concurrently() {
    let script = implement(Script::new(), "1", "calc");
    let script = passing_reviews(script, "1");
    // Each optional reviewer takes a moment, so the two runs overlap whatever the scheduling.
    let slow = |script: Script, agent: &str, name: &str| {
        script.raw(json!({
            "agent": agent,
            "match": format!("^{name} review of task 1 "),
            "repeat": true,
            "delay_ms": 400,
            "text": verdict(true, ""),
        }))
    };
    let script = slow(script, "security-reviewer", "Security");
    let script = slow(script, "performance-reviewer", "Performance");
    let p = project(&script, "");
    p.write(
        "PLAN.md",
        "```baton-tasks\n- id: 1\n  title: Add the calculator\n  files: [calc.py]\n```\n",
    );
    let (_, report, _) = sdd(&p, &["--no-tdd", "--security", "--performance"], 0);
    assert_eq!(task_states(&report), ["complete"]);
    let all = steps(&p, "1");
    let find = |stage: &str| {
        all.iter()
            .find(|s| s.stage == stage)
            .unwrap_or_else(|| panic!("no {stage} step: {all:?}"))
    };
    let (a, b) = (find("security-review"), find("performance-review"));
    let t = |x: &str| x.parse::<jiff::Timestamp>().expect("a timestamp");
    let (a0, a1) = (t(&a.started_at), t(a.ended_at.as_deref().expect("ended")));
    let (b0, b1) = (t(&b.started_at), t(b.ended_at.as_deref().expect("ended")));
    assert!(
        a0 < b1 && b0 < a1,
        "the reviews did not overlap: {a:?} {b:?}"
    );
}

/// `baton sdd PLAN.md` on the script provider, without the guard, started in the background
/// (to be killed while an agent works).
fn spawn_sdd(p: &Project) -> std::process::Child {
    super::sprint::command(
        p,
        &[
            "sdd", "PLAN.md", "--json", "--model", "script/t", "--no-tdd",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("baton sdd")
}

#[test]
fn a_killed_run_resumes_at_the_stage_where_it_stopped() {
    // The spec reviewer takes a minute: the run is killed while it works.
    let script = implement(Script::new(), "1", "calc").raw(json!({
        "agent": "spec-reviewer", "match": "^Spec review", "repeat": true, "delay_ms": 60000,
        "text": verdict(true, ""),
    }));
    let p = project(&script, "");
    let mut child = spawn_sdd(&p);
    let started = std::time::Instant::now();
    while !steps(&p, "1")
        .iter()
        .any(|s| s.stage == "spec-review" && s.outcome.is_none())
    {
        assert!(
            started.elapsed().as_secs() < 120,
            "the spec review never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
    let script = passing_reviews(implement(Script::new(), "1", "calc"), "1");
    let script = passing_reviews(implement(script, "2", "printer"), "2");
    script.install(&p);
    let (_, report, _) = sdd(&p, &["--no-tdd"], 0);
    assert_eq!(task_states(&report), ["complete", "complete"]);
    assert_eq!(
        stages(&p, "1"),
        [
            st("implement", 1, "completed"),
            st("spec-review", 1, ""),
            st("spec-review", 1, "passed"),
            st("quality-review", 1, "passed")
        ],
        "resumed at the review it was killed in, not at the implementation"
    );
}

#[test]
fn a_task_is_implementing_while_its_implementer_works() {
    // The implementer takes a minute: the run is killed while it works.
    let script = Script::new().raw(json!({
        "agent": "implementer", "match": "^Implement task 1 ", "repeat": true, "delay_ms": 60000,
        "text": "Implemented.",
    }));
    let p = project(&script, "");
    let mut child = spawn_sdd(&p);
    // While the implementer works (its step begun, not ended), the task reads `implementing`.
    let state = || {
        let journal = SqliteJournal::open(&p.root().join(".baton/baton.db")).ok()?;
        let tasks = journal.sdd_tasks("PLAN.md").ok()?;
        tasks
            .into_iter()
            .find(|t| t.task_id == "1")
            .map(|t| t.state)
    };
    let started = std::time::Instant::now();
    loop {
        let working = steps(&p, "1")
            .iter()
            .any(|s| s.stage == "implement" && s.outcome.is_none());
        if working && state().as_deref() == Some("implementing") {
            break;
        }
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "the run ended first"
        );
        assert!(
            started.elapsed().as_secs() < 55,
            "the task never read `implementing` while its implementer worked: {:?}",
            state()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().expect("kill");
    child.wait().expect("wait");
}

#[test]
fn a_bad_plan_names_its_line() {
    let p = project(&Script::new(), "");
    p.write("PLAN.md", "# Plan\n\n### Task 1 no colon\n");
    let run = baton(&p, &["sdd", "PLAN.md", "--model", "script/t"]).expect_code(1);
    assert!(
        run.stderr
            .contains("`PLAN.md` line 3: `### Task 1 no colon` is not `### Task N: Title`"),
        "{}",
        run.describe()
    );
}

#[test]
fn the_hard_limit_refuses_a_dispatch_projected_to_cross_it() {
    // Each implementer turn costs $0.15 at these prices; the hard limit is $0.5.
    let price = "\n[prices.\"script/t\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0\n";
    let costly = |agent: &str, pattern: &str, calls: Vec<Value>, text: &str| {
        json!({
            "agent": agent, "match": pattern, "repeat": true, "tool_calls": calls, "text": text,
            "usage": { "input_tokens": 100_000, "output_tokens": 50_000 },
        })
    };
    let mut script = Script::new();
    for (id, module) in [("1", "calc"), ("2", "printer")] {
        script = script
            .raw(costly(
                "implementer",
                &re(&format!("Implement task {id} ")),
                vec![call(
                    "write_file",
                    json!({ "path": format!("{module}.py"), "content": "x\n" }),
                )],
                "",
            ))
            .raw(costly(
                "implementer",
                &re(&format!("to `{module}.py`")),
                vec![],
                "done",
            ));
    }
    let mut script = passing_reviews(passing_reviews(script, "1"), "2");
    // The reviews cost next to nothing (a usage of zero would be estimated from the text).
    for t in &mut script.turns {
        if t.get("usage").is_none() {
            t["usage"] = json!({ "input_tokens": 1, "output_tokens": 1 });
        }
    }
    let p = project(&script, price);
    let (_, report, _) = sdd(&p, &["--no-tdd", "--hard-usd", "0.5"], 4);
    assert_eq!(s(&report, "end"), "stopped");
    let reason = s(&report, "reason");
    assert!(
        reason.contains("the next `implementer` run") && reason.contains("not dispatched"),
        "{reason}"
    );
    assert_eq!(task_states(&report), ["complete", "implementing"]);
    let refused = stages(&p, "2");
    assert_eq!(
        refused,
        [st("implement", 1, "cancelled")],
        "task 2 was never dispatched"
    );
    // With --allow-over-budget (in a fresh project) the dispatch goes ahead with a warning,
    // and its stream is cut off where it crosses the limit.
    let p = project(&script, price);
    let (events, report, _) = sdd(
        &p,
        &["--no-tdd", "--hard-usd", "0.5", "--allow-over-budget"],
        4,
    );
    assert_eq!(s(&report, "end"), "stopped");
    assert!(
        s(&report, "reason").contains("hard budget of $0.5 reached"),
        "{report}"
    );
    let warned = events
        .iter()
        .any(|e| e["event"] == "budget_warning" && s(e, "message").contains("dispatched anyway"));
    assert!(warned, "{events:#?}");
    let stopped = steps(&p, "2");
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].outcome.as_deref(), Some("cancelled"));
}

/// The implementer runs on the worker its role names: a real Claude Code against the loopback
/// model, with the reviewers on the script provider.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_runs_with_the_implementer_on_claude_code() {
    let Some(program) = super::cli_workers::claude() else {
        return;
    };
    let server = baton_test_support::MockServer::start().await;
    let script = passing_reviews(Script::new(), "1");
    let script = passing_reviews(script, "2");
    let toml = format!(
        "\n[agents]\nmodel = \"script/t\"\n\n[agents.roles]\nimplementer = \"claude-code/claude-sonnet-4-5\"\n\n[cli.claude-code]\nprogram = {:?}\nbase_url = {:?}\napi_key_env = \"PATH\"\nmax_retries = 0\n",
        program.display().to_string(),
        server.url()
    );
    let p = project(&script, &toml);
    let root = std::fs::canonicalize(p.root()).expect("canonical root");
    server.respond_with(baton_test_support::scripted::responder_as(
        &root,
        "WRITE:calc.py",
    ));
    // No `--model`: it would win over the role's backend.
    let run = baton(&p, &["sdd", "PLAN.md", "--json", "--no-tdd"]).expect_code(0);
    let mut events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", run.describe())))
        .collect();
    let report = events.pop().expect("a report line")["report"].clone();
    assert_eq!(
        s(&report, "end"),
        "completed",
        "{report:#}\n{}",
        run.describe()
    );
    assert_eq!(task_states(&report), ["complete", "complete"]);
    assert!(p.root().join("calc.py").is_file());
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.raw_body.contains("Implement task 1 of the plan")),
        "the implementer's task did not reach Claude Code"
    );
    // Its events are scoped to the task it works for.
    assert!(
        events.iter().any(|e| e["event"] == "agent_started"
            && e["scope"]["agent"]["unit"]["plan_task"]["id"] == "1"
            && s(e, "model").starts_with("claude-code/")),
        "{events:#?}"
    );
}
