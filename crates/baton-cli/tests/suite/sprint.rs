//! `baton sprint`, `baton escalations` and `baton answer` end to end: real git repositories, the
//! real binary, agents replayed by the script provider and a cheap test command the script
//! controls (`cat tests-pass`: the tests pass once a developer has written that file).
//!
//! Scripts are written as JSON (valid YAML) with `repeat: true` and a `match` on every turn that
//! must only answer one situation, so a turn answering the wrong input is a script miss, which
//! fails the agent and so the test. The helpers are shared with `team.rs` and `demo.rs`.

use super::common::{Project, Rng, Run, SPRINT_REL, s, utc_stamp};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// The stories of the test sprint: two in epic 1, one in epic 2.
pub(super) const K1: &str = "1-1-alpha";
pub(super) const K2: &str = "1-2-beta";
pub(super) const K3: &str = "2-1-gamma";
const KEYS: [&str; 3] = [K1, K2, K3];

/// Where the story files go.
pub(super) const STORIES: &str = "_bmad-output/implementation-artifacts";

/// A generous wall-clock bound for one `baton` run: a hang guard, not a timing assertion.
pub(super) const HANG_GUARD: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------------------------
// Running the binary with a hang guard.

/// Spawns `cmd` with piped output (drained by threads so a chatty child never blocks).
fn spawn_piped(
    mut cmd: Command,
) -> (
    Child,
    std::thread::JoinHandle<String>,
    std::thread::JoinHandle<String>,
) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the baton binary starts");
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    });
    (child, t_out, t_err)
}

/// Runs `cmd` to its end; kills it and fails the test if it outlives [`HANG_GUARD`].
pub(super) fn run_guarded(cmd: Command, args: &[&str]) -> Run {
    let (mut child, t_out, t_err) = spawn_piped(cmd);
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for baton") {
            break st;
        }
        if started.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`baton {}` still ran after {} s: it hangs\n--- stdout ---\n{}\n--- stderr ---\n{}",
                args.join(" "),
                HANG_GUARD.as_secs(),
                t_out.join().unwrap_or_default(),
                t_err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code(),
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
        args: args.join(" "),
    }
}

/// `baton -C root ARGS` with no user configuration (so no user agents can shadow the bundled
/// ones), under the hang guard.
pub(super) fn baton(p: &Project, args: &[&str]) -> Run {
    run_guarded(command(p, args), args)
}

/// The command for `baton -C root ARGS` with an empty user configuration directory.
pub(super) fn command(p: &Project, args: &[&str]) -> Command {
    let mut cmd = p.command(args);
    cmd.env("BATON_CONFIG_DIR", p.root().join(".baton/no-user-config"));
    cmd
}

/// The JSON lines of a `--json` sprint run: its events, and the final report.
pub(super) fn events_and_report(run: &Run) -> (Vec<Value>, Value) {
    let mut events: Vec<Value> = run
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}\n{}", run.describe()))
        })
        .collect();
    let last = events
        .pop()
        .unwrap_or_else(|| panic!("no output\n{}", run.describe()));
    assert_eq!(
        last["event"],
        "report",
        "the last line is not the report\n{}",
        run.describe()
    );
    (events, last["report"].clone())
}

/// `baton sprint ARGS --json`, asserting the exit code; returns (events, report, run).
pub(super) fn sprint_json(p: &Project, args: &[&str], code: i32) -> (Vec<Value>, Value, Run) {
    let mut all = vec!["sprint"];
    all.extend_from_slice(args);
    all.push("--json");
    let run = baton(p, &all).expect_code(code);
    let (events, report) = events_and_report(&run);
    (events, report, run)
}

/// The report's entry for `key`.
#[track_caller]
fn story_report<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["stories"]
        .as_array()
        .expect("`stories` is an array")
        .iter()
        .find(|st| st["key"] == key)
        .unwrap_or_else(|| panic!("no `{key}` in the report {report:#}"))
}

/// The keys of the report's stories.
fn reported_keys(report: &Value) -> Vec<String> {
    report["stories"]
        .as_array()
        .expect("`stories` is an array")
        .iter()
        .map(|st| s(st, "key").to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Test projects.

/// Runs git in `root` (with an identity, so commits work anywhere).
pub(super) fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Puts `p` under git with one commit of everything.
pub(super) fn git_init(p: &Project) {
    git(p.root(), &["init", "-q"]);
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "-m", "init"]);
}

/// Stage commits, oldest first. The run's own housekeeping commits (`sprint: run … <end>`,
/// `sprint: work of interrupted run …`, `baton: commit its own files …`) are left out: see
/// `housekeeping`.
pub(super) fn subjects(p: &Project) -> Vec<String> {
    all_subjects(p)
        .into_iter()
        .filter(|s| !is_housekeeping(s))
        .collect()
}

fn is_housekeeping(subject: &str) -> bool {
    subject.starts_with("sprint: ") || subject.starts_with("baton: ")
}

/// Every commit subject, oldest first.
fn all_subjects(p: &Project) -> Vec<String> {
    git(p.root(), &["log", "--reverse", "--format=%s"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The run's housekeeping commits.
fn housekeeping(p: &Project) -> Vec<String> {
    all_subjects(p)
        .into_iter()
        .filter(|s| is_housekeeping(s))
        .collect()
}

/// Uncommitted changes (untracked files included) outside baton's own `.baton/`.
pub(super) fn dirty(p: &Project) -> Vec<String> {
    git(
        p.root(),
        &["status", "--porcelain", "--untracked-files=all"],
    )
    .lines()
    .map(str::to_owned)
    .filter(|l| !l.get(3..).unwrap_or_default().starts_with(".baton/"))
    .collect()
}

/// `baton.toml` sections added to the defaults of the test project.
#[derive(Default, Clone, Copy)]
pub(super) struct Toml<'a> {
    /// Lines of `[sprint]`.
    pub(super) sprint: &'a str,
    /// Lines of `[agents]`.
    pub(super) agents: &'a str,
    /// Further tables.
    pub(super) tail: &'a str,
}

/// A git repository with `baton.toml`, a sprint file holding [`KEYS`] in backlog, `.baton/` with
/// its `.gitignore`, and `script` as `.baton/scripts/t.yaml`.
pub(super) fn sprint_project(toml: Toml<'_>, script: &Script) -> Project {
    let p = Project::empty();
    p.write(
        "baton.toml",
        &format!(
            "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\n{}\n\n[agents]\nmodel = \"script/t\"\n{}\n\n{}\n",
            toml.sprint, toml.agents, toml.tail
        ),
    );
    let now = utc_stamp(SystemTime::now());
    p.write(
        SPRINT_REL,
        &format!(
            "# the sprint of the end-to-end tests\ngenerated: {now}\nlast_updated: {now}\n\
             project: e2e\nproject_key: NOKEY\ntracking_system: file-system\n\
             story_location: {STORIES}\n\ndevelopment_status:\n  epic-1: backlog\n  \
             {K1}: backlog\n  {K2}: backlog\n  epic-1-retrospective: optional\n\n  \
             epic-2: backlog\n  {K3}: backlog\n  epic-2-retrospective: optional\n"
        ),
    );
    p.write(".baton/.gitignore", "*\n");
    p.write("src/lib.txt", "the product\n");
    script.install(&p);
    git_init(&p);
    p
}

/// `key → status` of the sprint file (effective statuses, as `baton status --json` shows them).
pub(super) fn statuses(p: &Project) -> BTreeMap<String, String> {
    let run = baton(p, &["status", "--json"]).expect_code(0);
    super::common::statuses_of(&super::common::parse_json(&run))
}

/// `(from, to)` of every applied journal event of `key`, oldest first.
pub(super) fn transitions(p: &Project, key: &str) -> Vec<(String, String)> {
    journal(p)
        .iter()
        .filter(|e| e["key"] == key)
        .map(|e| (s(e, "from").to_owned(), s(e, "to").to_owned()))
        .collect()
}

/// Every applied journal event (`baton log --json`), oldest first.
pub(super) fn journal(p: &Project) -> Vec<Value> {
    let run = baton(p, &["log", "--json"]).expect_code(0);
    match super::common::parse_json(&run) {
        Value::Array(mut events) => {
            events.sort_by_key(|e| e["id"].as_i64().unwrap_or_default());
            events
        }
        other => panic!("`baton log --json` printed {other}"),
    }
}

/// `(from, to)` pairs, for comparisons.
pub(super) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// The life of a story that passed its first review.
pub(super) const STRAIGHT: [(&str, &str); 4] = [
    ("backlog", "ready-for-dev"),
    ("ready-for-dev", "in-progress"),
    ("in-progress", "review"),
    ("review", "done"),
];

/// The `(key, from, to)` of the transition events a `--json` run printed.
fn event_transitions(events: &[Value]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter(|e| e["event"] == "transition")
        .map(|e| {
            (
                s(e, "key").to_owned(),
                s(e, "from").to_owned(),
                s(e, "to").to_owned(),
            )
        })
        .collect()
}

/// Stage events `(key, stage, round)` of a `--json` run.
pub(super) fn stages(events: &[Value]) -> Vec<(String, String, u64)> {
    events
        .iter()
        .filter(|e| e["event"] == "stage")
        .map(|e| {
            (
                s(e, "key").to_owned(),
                s(e, "stage").to_owned(),
                e["round"].as_u64().expect("round"),
            )
        })
        .collect()
}

/// Open escalations (`baton escalations --json`).
pub(super) fn open_escalations(p: &Project) -> Vec<Value> {
    let run = baton(p, &["escalations", "--json"]).expect_code(0);
    match super::common::parse_json(&run) {
        Value::Array(v) => v,
        other => panic!("`baton escalations --json` printed {other}"),
    }
}

fn story_file(p: &Project, key: &str) -> String {
    std::fs::read_to_string(p.root().join(format!("{STORIES}/{key}.md")))
        .unwrap_or_else(|e| panic!("story file of `{key}`: {e}"))
}

/// `1-1` of `1-1-alpha`: the short key of commit messages.
pub(super) fn short(key: &str) -> String {
    key.split('-').take(2).collect::<Vec<_>>().join("-")
}

// ---------------------------------------------------------------------------------------------
// Scripts.

/// Escapes regex metacharacters, so a `match` finds `text` literally.
pub(super) fn re(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A tool call with JSON arguments.
pub(super) fn call(name: &str, arguments: Value) -> Value {
    json!({ "name": name, "arguments": arguments })
}

/// A script for the script provider, written as JSON.
#[derive(Default, Clone)]
pub(super) struct Script {
    pub(super) turns: Vec<Value>,
}

impl Script {
    pub(super) fn new() -> Script {
        Script::default()
    }

    /// A repeatable turn of `agent` answering inputs that match `pattern` (any input if empty).
    pub(super) fn turn(self, agent: &str, pattern: &str, text: &str, calls: Vec<Value>) -> Script {
        let mut t = json!({ "agent": agent, "repeat": true, "text": text, "tool_calls": calls });
        if !pattern.is_empty() {
            t["match"] = json!(pattern);
        }
        self.raw(t)
    }

    /// A turn written out in full.
    pub(super) fn raw(mut self, turn: Value) -> Script {
        self.turns.push(turn);
        self
    }

    /// Writes the script to `.baton/scripts/t.yaml` (replacing any earlier one).
    pub(super) fn install(&self, p: &Project) {
        let text = serde_json::to_string_pretty(&json!({ "turns": self.turns })).expect("JSON");
        p.write(".baton/scripts/t.yaml", &text);
    }

    /// The scrum master writes the story file of `key`.
    pub(super) fn create(self, key: &str) -> Script {
        let path = format!("{STORIES}/{key}.md");
        let story = format!(
            "# Story {key}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a tester, I want `{key}`, so \
             that the sprint has work.\n\n## Acceptance Criteria\n\n1. `src/{key}.rs` exists.\n\n\
             ## Tasks / Subtasks\n\n- [ ] Task 1: write it (AC: 1)\n\n## Dev Notes\n\n- nothing \
             special\n\n## Dev Agent Record\n\n### Agent Model Used\n\n### Completion Notes List\n\n\
             ### File List\n"
        );
        self.turn(
            "scrum-master",
            &re(&format!("Create the story file for story `{key}`")),
            "I will write the story from the epics.",
            vec![call(
                "write_file",
                json!({ "path": path, "content": story }),
            )],
        )
        .turn(
            "scrum-master",
            &re(&format!("to `{path}`")),
            &format!("Story `{key}` is written to `{path}`."),
            vec![],
        )
    }

    /// The developer implements `key`: writes `src/<key>.rs`, fills the File List, and (if
    /// `passing`) writes `tests-pass`; then claims success either way.
    pub(super) fn develop(self, key: &str, passing: bool) -> Script {
        let mut calls = vec![
            call(
                "write_file",
                json!({ "path": format!("src/{key}.rs"), "content": format!("// {key}\n") }),
            ),
            call(
                "edit_file",
                json!({
                    "path": format!("{STORIES}/{key}.md"),
                    "old_string": "### File List\n",
                    "new_string": format!("### File List\n\n- src/{key}.rs\n"),
                }),
            ),
        ];
        if passing {
            calls.push(call(
                "write_file",
                json!({ "path": "tests-pass", "content": "ok\n" }),
            ));
        }
        self.turn(
            "developer",
            &re(&format!("Implement story `{key}` (mode: dev)")),
            "Red first: the test, then the code.",
            calls,
        )
        .turn(
            "developer",
            &re(&format!("to `src/{key}.rs`")),
            &format!("Implemented `{key}`. All tests pass."),
            vec![],
        )
    }

    /// Fix round `round` of `key`, answering only a task whose text (after the round's header)
    /// contains `must_see` (a regex): writes `src/<key>-fix<round>.rs`, and `tests-pass` if
    /// `passing`.
    pub(super) fn fix(self, key: &str, round: u32, must_see: &str, passing: bool) -> Script {
        let file = format!("src/{key}-fix{round}.rs");
        let mut calls = vec![call(
            "write_file",
            json!({ "path": file, "content": format!("// fix {round}\n") }),
        )];
        if passing {
            calls.push(call(
                "write_file",
                json!({ "path": "tests-pass", "content": "ok\n" }),
            ));
        }
        self.turn(
            "developer",
            &format!(
                "(?s){}.*{must_see}",
                re(&format!("Fix story `{key}`, fix round {round} (mode: fix)"))
            ),
            "Addressing the findings.",
            calls,
        )
        .turn(
            "developer",
            &re(&format!("to `{file}`")),
            &format!("Fixed round {round}. All tests pass."),
            vec![],
        )
    }

    /// The reviewer's answer to review round `round` of `key`.
    pub(super) fn review(self, key: &str, round: u32, answer: &str) -> Script {
        self.turn(
            "reviewer",
            &re(&format!(
                "Review story `{key}`, review round {round} (mode:"
            )),
            answer,
            vec![],
        )
    }

    /// A whole story that passes at once.
    pub(super) fn straight(self, key: &str) -> Script {
        self.create(key).develop(key, true).review(
            key,
            1,
            &pass_verdict(&format!("{key} meets its criteria")),
        )
    }
}

/// A reviewer's answer ending in a verdict block.
pub(super) fn verdict(passed: bool, findings: &[(&str, &str)], summary: &str) -> String {
    let list: Vec<Value> = findings
        .iter()
        .enumerate()
        .map(|(i, (sev, issue))| {
            json!({ "severity": sev, "file": "src/lib.txt", "line": i + 1, "issue": issue })
        })
        .collect();
    let must_fix: Vec<&str> = findings
        .iter()
        .filter(|(sev, _)| *sev != "low")
        .map(|(_, issue)| *issue)
        .collect();
    let block =
        json!({ "passed": passed, "findings": list, "must_fix": must_fix, "summary": summary });
    format!(
        "I checked every claim against the diff.\n\n```baton-review\n{}\n```\n",
        serde_json::to_string_pretty(&block).expect("JSON")
    )
}

/// A pass with the three findings a review must report.
pub(super) fn pass_verdict(summary: &str) -> String {
    verdict(
        true,
        &[
            ("low", "a name could be clearer"),
            ("low", "a doc comment is thin"),
            ("low", "one more example would help"),
        ],
        summary,
    )
}

/// A fail whose one blocking finding is `issue`.
pub(super) fn fail_verdict(issue: &str) -> String {
    verdict(
        false,
        &[
            ("high", issue),
            ("low", "a name could be clearer"),
            ("low", "a doc comment is thin"),
        ],
        "changes requested",
    )
}

// ---------------------------------------------------------------------------------------------
// 1. The happy path.

#[test]
fn three_stories_from_backlog_to_done_agree_everywhere() {
    let script = Script::new().straight(K1).straight(K2).straight(K3);
    let p = sprint_project(Toml::default(), &script);
    let (events, report, _) = sprint_json(&p, &["--yolo"], 0);

    // The report.
    assert_eq!(report["end"], "completed", "{report:#}");
    assert_eq!(
        (report["total"].as_u64(), report["completed"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(
        (report["failed"].as_u64(), report["skipped"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(report["escalation"].is_null(), "{report:#}");
    assert_eq!(reported_keys(&report), KEYS);
    for key in KEYS {
        let st = story_report(&report, key);
        assert_eq!(st["final_status"], "done", "{st:#}");
        assert_eq!(
            st["agents"],
            json!(["scrum-master", "developer", "reviewer"]),
            "{st:#}"
        );
        assert_eq!(st["review_rounds"], 0, "{st:#}");
        assert!(st["error"].is_null(), "{st:#}");
        assert!(
            st["input_tokens"].as_u64().unwrap_or_default() > 0,
            "{st:#}"
        );
    }

    // The sprint file: every story done, the epics followed, retrospectives untouched.
    let st = statuses(&p);
    for key in KEYS {
        assert_eq!(st[key], "done", "{st:?}");
    }
    assert_eq!(
        (st["epic-1"].as_str(), st["epic-2"].as_str()),
        ("done", "done"),
        "{st:?}"
    );
    assert_eq!(st["epic-1-retrospective"], "optional");
    baton(&p, &["status", "--validate"]).expect_code(0);

    // The story files.
    for key in KEYS {
        let text = story_file(&p, key);
        assert!(
            text.lines().any(|l| l.trim() == "Status: done"),
            "{key}:\n{text}"
        );
        assert!(text.contains("## Dev Agent Record"), "{key}:\n{text}");
        assert!(
            text.contains(&format!("### File List\n\n- src/{key}.rs\n")),
            "{key}:\n{text}"
        );
        assert!(p.root().join(format!("src/{key}.rs")).is_file());
    }

    // The commits: create, dev, review passed for each story, in order; nothing left over.
    let mut expected = vec!["init".to_owned()];
    for key in KEYS {
        for what in ["create", "dev", "review passed"] {
            expected.push(format!("story({}): {what}", short(key)));
        }
    }
    assert_eq!(subjects(&p), expected);
    assert_eq!(
        dirty(&p),
        Vec::<String>::new(),
        "the run left uncommitted work"
    );

    // The journal: each transition exactly once, in order; the epics followed.
    for key in KEYS {
        assert_eq!(transitions(&p, key), pairs(&STRAIGHT), "journal of {key}");
    }
    let epic = pairs(&[("backlog", "in-progress"), ("in-progress", "done")]);
    assert_eq!(transitions(&p, "epic-1"), epic);
    assert_eq!(transitions(&p, "epic-2"), epic);

    // The events printed are the journal's transitions, in the same order.
    let journaled: Vec<(String, String, String)> = journal(&p)
        .iter()
        .map(|e| {
            (
                s(e, "key").to_owned(),
                s(e, "from").to_owned(),
                s(e, "to").to_owned(),
            )
        })
        .collect();
    assert_eq!(event_transitions(&events), journaled);

    // A second run has nothing left to do and changes nothing.
    let (_, again, _) = sprint_json(&p, &["--yolo"], 0);
    assert_eq!(again["total"], 0, "{again:#}");
    assert_eq!(journal(&p).len(), journaled.len());
    assert_eq!(subjects(&p), expected);
}

// ---------------------------------------------------------------------------------------------
// 2. Review fails twice, then passes; the fixer gets the findings.

#[test]
fn review_fails_twice_then_passes_and_the_fixer_gets_the_findings() {
    let one = "the parser drops empty lines (finding-one-7c1)";
    let two = "the error message names the wrong file (finding-two-9d4)";
    let script = Script::new()
        .create(K1)
        .develop(K1, true)
        .review(K1, 1, &fail_verdict(one))
        .fix(K1, 1, &re(one), true)
        .review(K1, 2, &fail_verdict(two))
        .fix(K1, 2, &re(two), true)
        .review(K1, 3, &pass_verdict("both findings are fixed"));
    let p = sprint_project(Toml::default(), &script);
    let (events, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 0);

    let st = story_report(&report, K1);
    assert_eq!(st["final_status"], "done", "{}", run.describe());
    assert_eq!(st["review_rounds"], 2, "{st:#}");
    assert_eq!(
        st["agents"],
        json!([
            "scrum-master",
            "developer",
            "reviewer",
            "developer",
            "reviewer",
            "developer",
            "reviewer"
        ])
    );
    assert_eq!(
        stages(&events),
        [
            (K1.to_owned(), "create".to_owned(), 1),
            (K1.to_owned(), "dev".to_owned(), 1),
            (K1.to_owned(), "review".to_owned(), 1),
            (K1.to_owned(), "fix".to_owned(), 1),
            (K1.to_owned(), "review".to_owned(), 2),
            (K1.to_owned(), "fix".to_owned(), 2),
            (K1.to_owned(), "review".to_owned(), 3),
        ]
    );
    let sh = short(K1);
    let expected: Vec<String> = [
        "init".to_owned(),
        format!("story({sh}): create"),
        format!("story({sh}): dev"),
        format!("story({sh}): review round 1"),
        format!("story({sh}): fix round 1"),
        format!("story({sh}): review round 2"),
        format!("story({sh}): fix round 2"),
        format!("story({sh}): review passed"),
    ]
    .into();
    assert_eq!(subjects(&p), expected);
    assert_eq!(
        transitions(&p, K1),
        pairs(&[
            ("backlog", "ready-for-dev"),
            ("ready-for-dev", "in-progress"),
            ("in-progress", "review"),
            ("review", "in-progress"),
            ("in-progress", "review"),
            ("review", "in-progress"),
            ("in-progress", "review"),
            ("review", "done"),
        ])
    );
    // The findings of every round are in the story file, in BMad's dialect.
    let text = story_file(&p, K1);
    assert!(
        text.contains(&format!("- [ ] [Review][Patch] {one}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("- [ ] [Review][Patch] {two}")),
        "{text}"
    );
    assert!(text.contains("Round 3: passed"), "{text}");
    assert_eq!(dirty(&p), Vec::<String>::new());
}

/// The control of the test above: the same script, except that the fix turn waits for text the
/// findings do not hold, fails the story. So the test above can fail when the findings are not
/// passed on.
#[test]
fn a_fix_turn_waiting_for_other_findings_fails_the_story() {
    let script = Script::new()
        .create(K1)
        .develop(K1, true)
        .review(K1, 1, &fail_verdict("the parser drops empty lines"))
        .fix(K1, 1, "a finding nobody reported", true);
    let p = sprint_project(Toml::default(), &script);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 1);
    let st = story_report(&report, K1);
    assert_eq!(
        st["final_status"],
        "needs-intervention",
        "{}",
        run.describe()
    );
    let error = st["error"].as_str().unwrap_or_default();
    assert!(error.contains("developer failed"), "{error}");
    assert_eq!(statuses(&p)[K1], "needs-intervention");
}

// ---------------------------------------------------------------------------------------------
// 3. Too many fix rounds: escalation, answer, resume.

/// K1 fails every review up to round `fails`; K2 passes at once. With `max_review_rounds = 1`,
/// K1 escalates after its first fix round.
pub(super) fn escalating_project(fails: u32) -> Project {
    let mut script = Script::new().create(K1).develop(K1, true);
    for round in 1..=fails {
        let issue = format!("round {round} finds a new problem (issue-{round}x)");
        script = script
            .review(K1, round, &fail_verdict(&issue))
            .fix(K1, round, &re(&issue), true);
    }
    script = script
        .review(K1, fails + 1, &pass_verdict("fixed at last"))
        .straight(K2);
    sprint_project(
        Toml {
            sprint: "max_review_rounds = 1",
            ..Toml::default()
        },
        &script,
    )
}

/// Runs the sprint of [`escalating_project`] until it pauses; checks the pause everywhere and
/// that K2 is not started, also when asked for explicitly. Returns the escalation's id.
fn pause_on_max_rounds(p: &Project) -> i64 {
    let run = baton(p, &["sprint", "--yolo", "--batch", "2"]).expect_code(3);
    assert!(run.stdout.contains("end: paused"), "{}", run.describe());
    assert!(
        run.stdout.contains("answer with: baton answer 1 <1-3>"),
        "the paused run does not say how to answer\n{}",
        run.describe()
    );
    assert_eq!(statuses(p)[K1], "in-progress");
    assert_eq!(
        statuses(p)[K2],
        "backlog",
        "K2 started during an open escalation"
    );

    let open = open_escalations(p);
    assert_eq!(open.len(), 1, "{open:#?}");
    let e = &open[0];
    assert_eq!(
        (e["kind"].as_str(), e["key"].as_str()),
        (Some("max-review-rounds"), Some(K1))
    );
    assert_eq!(
        e["options"],
        json!([
            "another fix round",
            "accept as is (mark done)",
            "stop (needs-intervention)"
        ])
    );
    let id = e["id"].as_i64().expect("id");

    let listed = baton(p, &["escalations"]).expect_code(0);
    assert!(
        listed.stdout.contains(&format!("#{id} [{K1}]")),
        "{}",
        listed.describe()
    );
    assert!(
        listed.stdout.contains("(max-review-rounds)"),
        "{}",
        listed.describe()
    );
    assert!(
        listed
            .stdout
            .contains(&format!("answer with: baton answer {id} <1-3>")),
        "{}",
        listed.describe()
    );

    let log = std::fs::read_to_string(p.root().join("_bmad-output/escalations.log"))
        .expect("_bmad-output/escalations.log");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains(&format!("#{id} [{K1}] max-review-rounds: ")),
        "{log}"
    );
    assert!(
        lines[0].ends_with(
            "| options: 1) another fix round 2) accept as is (mark done) 3) stop (needs-intervention)"
        ),
        "{log}"
    );

    // Neither an explicit request nor a second run starts K2 while the escalation is open.
    // (`--allow-dirty`: the paused run leaves escalations.log uncommitted, see the ignored
    // test `bug_a_paused_run_leaves_the_tree_dirty_so_the_advertised_resume_refuses`.)
    let (_, report, _) = sprint_json(p, &["--yolo", "--allow-dirty", "--stories", K2], 3);
    assert_eq!(report["end"], "paused", "{report:#}");
    assert_eq!(report["skipped"], 1, "{report:#}");
    assert_eq!(report["escalation"]["id"], id, "{report:#}");
    let (_, report, _) = sprint_json(p, &["--yolo", "--allow-dirty", "--batch", "2"], 3);
    assert_eq!(report["escalation"]["id"], id, "{report:#}");
    assert_eq!(reported_keys(&report), [K1], "{report:#}");
    assert_eq!(statuses(p)[K2], "backlog");
    assert_eq!(transitions(p, K2), []);
    assert_eq!(
        open_escalations(p).len(),
        1,
        "a run raised the same escalation twice"
    );
    id
}

#[test]
fn max_rounds_escalates_and_another_fix_round_finishes_the_story() {
    let p = escalating_project(2);
    let id = pause_on_max_rounds(&p);

    let answered = baton(&p, &["answer", &id.to_string(), "1"]).expect_code(0);
    assert!(
        answered.stdout.contains("another fix round"),
        "{}",
        answered.describe()
    );
    assert_eq!(open_escalations(&p), Vec::<Value>::new());
    // Answering twice is refused.
    baton(&p, &["answer", &id.to_string(), "2"]).expect_code(1);

    let (events, report, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--batch", "2"], 0);
    assert_eq!(report["completed"], 2, "{}", run.describe());
    assert_eq!(story_report(&report, K1)["review_rounds"], 2);
    assert_eq!(
        stages(&events)[..2],
        [
            (K1.to_owned(), "fix".to_owned(), 2),
            (K1.to_owned(), "review".to_owned(), 3)
        ]
    );
    let st = statuses(&p);
    assert_eq!((st[K1].as_str(), st[K2].as_str()), ("done", "done"));
    let subjects = subjects(&p);
    let sh = short(K1);
    for what in ["fix round 1", "fix round 2", "review passed"] {
        let msg = format!("story({sh}): {what}");
        assert_eq!(
            subjects.iter().filter(|m| **m == msg).count(),
            1,
            "{subjects:#?}"
        );
    }
    let all = baton(&p, &["escalations", "--all", "--json"]).expect_code(0);
    let all = super::common::parse_json(&all);
    assert_eq!(all[0]["answer"], "another fix round", "{all:#}");
    assert!(all[0]["resolved_at"].is_string(), "{all:#}");
}

#[test]
fn max_rounds_escalates_and_accept_marks_the_story_done() {
    let p = escalating_project(2);
    let id = pause_on_max_rounds(&p);
    baton(&p, &["answer", &id.to_string(), "accept as is (mark done)"]).expect_code(0);
    let (events, report, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--batch", "2"], 0);
    assert_eq!(report["completed"], 2, "{}", run.describe());
    // No agent works on K1 again.
    assert!(
        !stages(&events).iter().any(|(k, _, _)| k == K1),
        "{:?}",
        stages(&events)
    );
    assert_eq!(statuses(&p)[K1], "done");
    let last = journal(&p)
        .into_iter()
        .rfind(|e| e["key"] == K1)
        .expect("K1 events");
    assert_eq!(
        (s(&last, "from"), s(&last, "to")),
        ("in-progress", "done"),
        "{last:#}"
    );
    assert_eq!(
        (s(&last, "actor"), last["forced"].as_bool()),
        ("human", Some(true)),
        "{last:#}"
    );
    assert_eq!(statuses(&p)[K2], "done");
}

// ---------------------------------------------------------------------------------------------
// 4. "All tests pass" while they fail.

#[test]
fn a_developer_claiming_green_tests_that_fail_does_not_reach_review() {
    // Every fix must see the failing test output (`cat: tests-pass: …`) in its task.
    let failing = r"The tests fail:\n```\n[^`]*tests-pass";
    let script = Script::new()
        .create(K1)
        .develop(K1, false)
        .fix(K1, 1, failing, false)
        .fix(K1, 2, failing, false);
    let p = sprint_project(
        Toml {
            sprint: "max_review_rounds = 2",
            ..Toml::default()
        },
        &script,
    );
    let (events, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 3);

    assert_eq!(statuses(&p)[K1], "in-progress", "{}", run.describe());
    assert_eq!(
        transitions(&p, K1),
        pairs(&[
            ("backlog", "ready-for-dev"),
            ("ready-for-dev", "in-progress")
        ]),
        "a story whose tests fail moved on"
    );
    let tests: Vec<bool> = events
        .iter()
        .filter(|e| e["event"] == "tests")
        .map(|e| e["passed"].as_bool().expect("passed"))
        .collect();
    assert_eq!(tests, [false, false, false]);
    assert_eq!(
        stages(&events),
        [
            (K1.to_owned(), "create".to_owned(), 1),
            (K1.to_owned(), "dev".to_owned(), 1),
            (K1.to_owned(), "fix".to_owned(), 1),
            (K1.to_owned(), "fix".to_owned(), 2),
        ]
    );
    assert_eq!(story_report(&report, K1)["review_rounds"], 2);
    assert_eq!(
        report["escalation"]["kind"], "max-review-rounds",
        "{report:#}"
    );
    let sh = short(K1);
    let tail: Vec<String> = subjects(&p)[2..].to_vec();
    assert_eq!(
        tail,
        [
            format!("story({sh}): dev (tests failing)"),
            format!("story({sh}): fix round 1 (tests failing)"),
            format!("story({sh}): fix round 2 (tests failing)"),
        ]
    );

    // Another round with a fix that makes the tests pass: now the story moves on.
    Script::new()
        .fix(K1, 3, failing, true)
        .review(K1, 4, &pass_verdict("green now"))
        .install(&p);
    let id = report["escalation"]["id"].as_i64().expect("id").to_string();
    baton(&p, &["answer", &id, "another fix round"]).expect_code(0);
    let (events, _, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    assert_eq!(statuses(&p)[K1], "done", "{}", run.describe());
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "tests")
            .map(|e| e["passed"].as_bool())
            .collect::<Vec<_>>(),
        [Some(true)]
    );
    let moved: Vec<(String, String)> = transitions(&p, K1)[2..].to_vec();
    assert_eq!(
        moved,
        pairs(&[("in-progress", "review"), ("review", "done")])
    );
}

// ---------------------------------------------------------------------------------------------
// 5. A review without a verdict is never a pass.

#[test]
fn a_review_without_a_verdict_is_rerun_then_escalated_never_passed() {
    let no_verdict = "Looks good to me, ship it! All tests pass.";
    // The first turn answers only the re-run, whose task carries the orchestrator's note.
    let script = Script::new()
        .create(K1)
        .develop(K1, true)
        .turn("reviewer", "no usable verdict", no_verdict, vec![])
        .review(K1, 1, no_verdict);
    let p = sprint_project(Toml::default(), &script);
    let (events, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 3);

    let reviews = stages(&events)
        .into_iter()
        .filter(|(_, stage, _)| stage == "review")
        .count();
    assert_eq!(reviews, 2, "{}", run.describe());
    assert_eq!(
        report["escalation"]["kind"], "inconclusive-review",
        "{report:#}"
    );
    assert_eq!(
        report["escalation"]["options"],
        json!([
            "re-run the review",
            "accept as is (mark done)",
            "stop (needs-intervention)"
        ])
    );
    assert_eq!(statuses(&p)[K1], "review");
    assert!(!transitions(&p, K1).iter().any(|(_, to)| to == "done"));
    assert!(!subjects(&p).iter().any(|m| m.contains("review passed")));

    // Re-run the review with a reviewer that now gives a verdict.
    Script::new()
        .review(K1, 1, &pass_verdict("now with a verdict"))
        .install(&p);
    let id = report["escalation"]["id"].as_i64().expect("id").to_string();
    baton(&p, &["answer", &id, "1"]).expect_code(0);
    let (_, _, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    assert_eq!(statuses(&p)[K1], "done", "{}", run.describe());
}

#[test]
fn stop_on_an_inconclusive_review_marks_the_story_needs_intervention() {
    let script = Script::new().create(K1).develop(K1, true).review(
        K1,
        1,
        "```json\n{\"passed\": true}\n```\n",
    );
    let p = sprint_project(Toml::default(), &script);
    let (_, report, _) = sprint_json(&p, &["--yolo", "--stories", K1], 3);
    let id = report["escalation"]["id"].as_i64().expect("id").to_string();
    baton(&p, &["answer", &id, "3"]).expect_code(0);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 1);
    assert_eq!(
        story_report(&report, K1)["final_status"],
        "needs-intervention",
        "{}",
        run.describe()
    );
    assert_eq!(statuses(&p)[K1], "needs-intervention");
}

// ---------------------------------------------------------------------------------------------
// 6. HALT.

#[test]
fn a_developer_halt_marks_the_story_needs_intervention() {
    let halt = "HALT: three consecutive failing test runs";
    let script = Script::new()
        .create(K1)
        .turn(
            "developer",
            &re(&format!("Implement story `{K1}`")),
            &format!("I tried three times.\n{halt}\n"),
            vec![],
        )
        .straight(K2);
    let p = sprint_project(Toml::default(), &script);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--batch", "2"], 1);

    let st = story_report(&report, K1);
    assert_eq!(
        st["final_status"],
        "needs-intervention",
        "{}",
        run.describe()
    );
    assert!(
        st["error"]
            .as_str()
            .unwrap_or_default()
            .contains("three consecutive failing test runs"),
        "{st:#}"
    );
    // A halted story does not stop the batch.
    assert_eq!(story_report(&report, K2)["final_status"], "done");
    assert_eq!(report["end"], "failed", "{report:#}");

    // `baton status --json` shows the effective status; the file keeps the canonical one and
    // a comment.
    let status = super::common::parse_json(&baton(&p, &["status", "--json"]).expect_code(0));
    let entry = status["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["key"] == K1)
        .expect("K1 entry");
    assert_eq!(entry["status"], "needs-intervention", "{entry:#}");
    let sprint = p.read_sprint();
    let line = sprint
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{K1}:")))
        .expect("K1 line");
    let (value, comment) = line.split_once('#').unwrap_or((line, ""));
    assert_eq!(value.trim(), format!("{K1}: in-progress"), "{line}");
    assert!(
        comment
            .trim_start()
            .starts_with("baton: needs-intervention ("),
        "{line}"
    );
    baton(&p, &["status", "--validate"]).expect_code(0);
    // The story file records it.
    assert!(
        story_file(&p, K1).contains("- HALT: three consecutive failing test runs"),
        "{}",
        story_file(&p, K1)
    );
    assert!(!transitions(&p, K1).iter().any(|(_, to)| to == "review"));
}

// ---------------------------------------------------------------------------------------------
// 7. The budget.

#[test]
fn the_budget_stops_the_run_and_later_stories_never_start() {
    let mut script = Script::new();
    for key in KEYS {
        script = script.straight(key);
    }
    // Every turn reports a large usage; at $1000 per million tokens one turn is $1.
    let turns: Vec<Value> = script
        .turns
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t["usage"] = json!({ "input_tokens": 1000, "output_tokens": 1000 });
            t
        })
        .collect();
    let script = Script { turns };
    let p = sprint_project(
        Toml {
            tail: "[budget]\nhard_usd = 0.0001\n\n[prices.\"script/t\"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0",
            ..Toml::default()
        },
        &script,
    );
    let (events, report, run) = sprint_json(&p, &["--yolo"], 4);
    assert_eq!(report["end"], "stopped", "{}", run.describe());
    assert!(s(&report, "reason").contains("budget"), "{report:#}");
    assert_eq!(report["total"], 3, "{report:#}");
    assert_eq!(report["completed"], 0, "{report:#}");
    assert_eq!(report["skipped"], 2, "{report:#}");
    assert_eq!(reported_keys(&report), [K1], "{report:#}");
    let st = story_report(&report, K1);
    assert!(s(st, "error").contains("budget"), "{st:#}");
    // Stories 2 and 3 were never started: no stage, no transition.
    for key in [K2, K3] {
        assert!(
            !stages(&events).iter().any(|(k, _, _)| k == key),
            "{key} started"
        );
        assert_eq!(transitions(&p, key), []);
        assert_eq!(statuses(&p)[key], "backlog");
    }
}

// ---------------------------------------------------------------------------------------------
// 8. Killed at random instants, resumed to the same end.

const KILL_ROUNDS: u64 = 30;
const KILL_SEED: u64 = 0xBA70_5EED_0000_0008;

/// Three stories; K2 needs one fix round, so the kills also land in fix and re-review steps.
fn kill_script() -> Script {
    let issue = "beta misses an edge case (kill-issue)";
    Script::new()
        .straight(K1)
        .create(K2)
        .develop(K2, true)
        .review(K2, 1, &fail_verdict(issue))
        .fix(K2, 1, &re(issue), true)
        .review(K2, 2, &pass_verdict("edge case covered"))
        .straight(K3)
}

/// The journal holds each transition once: no event repeated back to back for a key, exactly
/// one `review → done` per story, and each story's events are the uninterrupted run's.
fn check_journal_once(p: &Project, reference: &BTreeMap<String, Vec<(String, String)>>, ctx: &str) {
    let events = journal(p);
    let mut last: BTreeMap<String, (String, String)> = BTreeMap::new();
    for e in &events {
        let key = s(e, "key").to_owned();
        let step = (s(e, "from").to_owned(), s(e, "to").to_owned());
        assert_ne!(
            last.get(&key),
            Some(&step),
            "{ctx}: `{key}` {step:?} journaled twice in a row"
        );
        last.insert(key, step);
    }
    for (key, expected) in reference {
        let got = transitions(p, key);
        let done = got
            .iter()
            .filter(|(f, t)| f == "review" && t == "done")
            .count();
        if KEYS.contains(&key.as_str()) {
            assert_eq!(done, 1, "{ctx}: `{key}` entered done {done} times: {got:?}");
        }
        assert_eq!(&got, expected, "{ctx}: the journal of `{key}` differs");
    }
}

/// Known bug: the temp files of killed story-file writes are neither swept nor ignored, so the
/// next stage commit adds them (`bug_a_killed_writers_temp_file_next_to_a_story_is_committed`).
/// Until that is fixed the kill test only counts them; set this to `true` once it is.
const STORY_TEMPS_ARE_SWEPT: bool = true;

/// Known bug: a stage whose status change was applied but whose commit a kill prevented is
/// never committed (`bug_a_stage_commit_lost_to_a_kill_is_never_made`). Until that is fixed the
/// kill test tolerates (and counts) exactly that leftover; set this to `true` once it is.
const LOST_COMMITS_ARE_REDONE: bool = true;

/// A temporary file of an atomic write of a story file (`.<key>.md.baton-tmp-…`).
fn is_story_temp(path: &str) -> bool {
    path.contains(&format!("{STORIES}/.")) && path.contains(".md.baton-tmp-")
}

#[test]
fn a_sprint_killed_at_random_instants_resumes_to_the_same_end() {
    // The uninterrupted run: the reference end state and the span to kill in.
    let script = kill_script();
    let reference = sprint_project(Toml::default(), &script);
    let started = Instant::now();
    sprint_json(&reference, &["--yolo"], 0);
    let span = u64::try_from(started.elapsed().as_millis())
        .unwrap_or(u64::MAX)
        .max(50);
    let expected_status = statuses(&reference);
    for key in KEYS {
        assert_eq!(expected_status[key], "done");
    }
    let mut expected_journal = BTreeMap::new();
    for key in KEYS.iter().copied().chain(["epic-1", "epic-2"]) {
        expected_journal.insert(key.to_owned(), transitions(&reference, key));
    }
    let expected_subjects = subjects(&reference);
    let expected_src: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(reference.root().join("src"))
            .expect("src")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };

    let mut killed_mid_run = 0;
    let mut stray_story_temps = 0;
    let mut lost_commits = 0;
    for round in 0..KILL_ROUNDS {
        let seed = KILL_SEED ^ round;
        let ctx = format!("round {round} (seed {seed:#x})");
        let mut rng = Rng::new(seed);
        let p = sprint_project(Toml::default(), &script);

        // Kill the first run, and in some rounds the first resume too, at a random instant.
        let kills = 1 + rng.below(2);
        let mut attempts = Vec::new();
        for k in 0..kills {
            let args: &[&str] = if k == 0 {
                &["sprint", "--yolo", "--json"]
            } else {
                &["sprint", "--yolo", "--json", "--allow-dirty"]
            };
            let mut child = command(&p, args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn baton");
            let delay = rng.below(span + 1);
            std::thread::sleep(Duration::from_millis(delay));
            let finished = child.try_wait().expect("try_wait").is_some();
            let _ = child.kill(); // SIGKILL
            let status = child.wait().expect("reap");
            if !finished {
                killed_mid_run += 1;
            }
            attempts.push(format!("kill after {delay} ms: {status}"));
        }

        // Resume until the run completes. A killed run can leave work uncommitted (a stage's
        // files and its status change are written before its commit: the developer's files,
        // the sprint file after ready-for-dev → in-progress, a temp file), and `baton sprint`
        // refuses a dirty tree, so resumes pass --allow-dirty. (docs/sprint.md promises a plain
        // `baton sprint` resumes: `bug_the_documented_resume_after_a_kill_refuses_the_dirty_tree`.)
        let mut last = None;
        for _ in 0..10 {
            let run = baton(&p, &["sprint", "--yolo", "--allow-dirty"]);
            attempts.push(format!("resume: {:?}", run.code));
            let ok = run.code == Some(0);
            last = Some(run);
            if ok {
                break;
            }
        }
        let last = last.expect("at least one resume");
        assert_eq!(
            last.code,
            Some(0),
            "{ctx}: no resume completed: {attempts:?}\n{}",
            last.describe()
        );

        // The same end as the uninterrupted run.
        let st = statuses(&p);
        for (key, want) in &expected_status {
            assert_eq!(
                st.get(key),
                Some(want),
                "{ctx}: status of `{key}` ({attempts:?})"
            );
        }
        check_journal_once(&p, &expected_journal, &format!("{ctx} {attempts:?}"));
        let pending: Vec<Value> = p
            .all_events()
            .into_iter()
            .filter(|e| e["state"] == "pending")
            .collect();
        assert!(
            pending.is_empty(),
            "{ctx}: events left pending: {pending:#?}"
        );
        let v = baton(&p, &["status", "--validate"]);
        assert_eq!(
            v.code,
            Some(0),
            "{ctx}: the sprint file is invalid\n{}",
            v.describe()
        );
        let dirt: Vec<String> = dirty(&p)
            .into_iter()
            .filter(|l| STORY_TEMPS_ARE_SWEPT || !is_story_temp(l))
            .collect();
        let got_subjects = subjects(&p);
        if LOST_COMMITS_ARE_REDONE {
            assert!(
                dirt.is_empty(),
                "{ctx}: uncommitted work after the resume: {dirt:?} ({attempts:?})"
            );
            assert_eq!(
                got_subjects, expected_subjects,
                "{ctx}: the commits ({attempts:?})"
            );
        } else {
            // Until then, only the signature of a lost commit is tolerated: the sprint and
            // story files of the stage whose commit the kill prevented.
            let foreign: Vec<&String> = dirt
                .iter()
                .filter(|l| !l.get(3..).unwrap_or_default().starts_with(STORIES))
                .collect();
            assert!(
                foreign.is_empty(),
                "{ctx}: uncommitted work after the resume: {dirt:?} ({attempts:?})"
            );
            lost_commits += usize::from(!dirt.is_empty() || got_subjects != expected_subjects);
        }
        let mut src: Vec<String> = std::fs::read_dir(p.root().join("src"))
            .expect("src")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        src.sort();
        assert_eq!(src, expected_src, "{ctx}");
        assert!(open_escalations(&p).is_empty(), "{ctx}");
        // No temporary file of an interrupted write was swept into a commit.
        let tracked = git(p.root(), &["ls-files"]);
        let strays: Vec<&str> = tracked
            .lines()
            .filter(|l| l.contains(".baton-tmp-"))
            .filter(|l| STORY_TEMPS_ARE_SWEPT || !is_story_temp(l))
            .collect();
        assert!(
            strays.is_empty(),
            "{ctx}: committed temporary files {strays:?}"
        );
        stray_story_temps += tracked.lines().filter(|l| is_story_temp(l)).count();
    }
    if lost_commits > 0 {
        eprintln!("known bug: {lost_commits} rounds lost a stage commit to the kill");
    }
    if stray_story_temps > 0 {
        eprintln!(
            "known bug: {stray_story_temps} temp files of killed story-file writes were committed"
        );
    }
    // The delays must actually interrupt runs, or the test proves nothing.
    assert!(
        killed_mid_run * 2 >= KILL_ROUNDS,
        "only {killed_mid_run} kills of {KILL_ROUNDS} rounds interrupted a run"
    );
}

/// Starts `baton sprint --yolo --json` on a project whose developer stalls (a long `delay_ms`)
/// right after its writes, and SIGKILLs it once the last of them exists: a kill in the
/// middle of the dev step, deterministically. Then installs a script without the stall.
fn kill_in_the_dev_step() -> Project {
    let stalling = Script::new().create(K1).develop(K1, true);
    let mut turns = stalling.turns.clone();
    let last = turns.last_mut().expect("the developer's final turn");
    last["delay_ms"] = json!(600_000);
    let p = sprint_project(Toml::default(), &Script { turns });
    let mut child = command(&p, &["sprint", "--yolo", "--json", "--stories", K1])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn baton");
    // `tests-pass` is the developer's last write before the stalled turn.
    let written = p.root().join("tests-pass");
    let started = Instant::now();
    while !written.exists() {
        if let Some(st) = child.try_wait().expect("try_wait") {
            panic!("the run ended ({st}) before the developer wrote its file");
        }
        assert!(
            started.elapsed() < HANG_GUARD,
            "the developer never wrote its file"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    Script::new().straight(K1).install(&p);
    p
}

#[test]
fn a_run_killed_in_the_middle_of_a_step_runs_that_step_again() {
    let p = kill_in_the_dev_step();
    assert_eq!(statuses(&p)[K1], "in-progress");
    assert!(
        !dirty(&p).is_empty(),
        "the kill left nothing uncommitted, the test proves nothing"
    );
    // The dev step was interrupted, so it runs again (and only it): no new create.
    let (events, _, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    assert_eq!(
        stages(&events),
        [
            (K1.to_owned(), "dev".to_owned(), 1),
            (K1.to_owned(), "review".to_owned(), 1)
        ],
        "{}",
        run.describe()
    );
    assert_eq!(transitions(&p, K1), pairs(&STRAIGHT));
    assert_eq!(dirty(&p), Vec::<String>::new());
    let sh = short(K1);
    assert_eq!(
        subjects(&p),
        [
            "init".to_owned(),
            format!("story({sh}): create"),
            format!("story({sh}): dev"),
            format!("story({sh}): review passed")
        ]
    );
}

/// docs/sprint.md ("Resume"): "Kill a run at any instant (Ctrl-C, `kill -9`) and run
/// `baton sprint` again". A kill inside a stage leaves that stage's files and the status change
/// uncommitted, and `baton sprint` then refuses the dirty tree (exit 1) unless `--allow-dirty`.
#[test]
fn fixed_the_documented_resume_after_a_kill_refuses_the_dirty_tree() {
    let p = kill_in_the_dev_step();
    let run = baton(&p, &["sprint", "--yolo", "--stories", K1]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
    assert_eq!(statuses(&p)[K1], "done");
}

/// Seen in the kill test: killed between a stage's transition (applied and journaled) and its
/// commit, the resume finds the status already advanced, never makes the commit, and exits 0
/// with the tree dirty (for the last stage of a run), or folds the change into the next stage's
/// commit (for an earlier one). Simulated exactly by undoing the last commit, keeping its
/// changes staged, as the kill (after `git add`, before `git commit`) left them.
#[test]
fn fixed_a_stage_commit_lost_to_a_kill_is_never_made() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    sprint_json(&p, &["--yolo", "--stories", K1], 0);
    git(p.root(), &["reset", "-q", "--soft", "HEAD~1"]);
    assert_eq!(statuses(&p)[K1], "done");
    sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    assert_eq!(
        dirty(&p),
        Vec::<String>::new(),
        "the resume left the stage uncommitted"
    );
    // The lost stage's changes touch only baton's own files (the sprint and story files): the
    // run commits them before it starts (the run before it ended, so it is no killed run whose
    // stage recovery would name).
    let closing = housekeeping(&p);
    assert!(
        closing
            .iter()
            .any(|c| c.starts_with("baton: commit its own files")),
        "{:?}",
        all_subjects(&p)
    );
}

/// docs/sprint.md: "the journal's steps say whether an in-progress story is being fixed …, an
/// interrupted step runs again". A run killed while the orchestrator runs the tests after a
/// completed fix step (with a real test suite, the longest window of a round) resumes with the
/// *dev* stage: `fixing()` looks at the newest step with an outcome, which is the fix step
/// labelled `completed`, not one of `changes-requested | tests-failed | verification-failed`.
/// So the developer is told "Implement story `K` (mode: dev)" without the findings. Made
/// deterministic with a FIFO as `tests-pass`: `cat` blocks on it until the run is killed.
#[cfg(target_os = "linux")]
#[test]
fn fixed_a_kill_during_the_tests_after_a_fix_resumes_with_the_dev_task() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::fs::OpenOptionsExt;
    const O_NONBLOCK: i32 = 0o4000; // Linux
    let issue = "a finding the fix must see (fifo-issue)";
    let mut fix = Script::new().fix(K1, 1, &re(issue), false).turns;
    // The fix's final answer waits a second: time to turn `tests-pass` into a FIFO.
    fix[1]["delay_ms"] = json!(1000);
    let mut script = Script::new()
        .create(K1)
        .develop(K1, true)
        .review(K1, 1, &fail_verdict(issue));
    script.turns.extend(fix);
    let p = sprint_project(Toml::default(), &script);
    // Ignored by git, so only the test command reads it (the agent runner hashes changed files).
    p.write(".gitignore", "tests-pass\n");
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "-m", "ignore tests-pass"]);
    let mut child = command(&p, &["sprint", "--yolo", "--json", "--stories", K1])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn baton");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Once the fix stage starts, the dev step's test run is over.
    loop {
        let line = lines
            .next()
            .expect("the run ended before its fix stage")
            .expect("a line of output");
        if line.contains(r#""event":"stage""#) && line.contains(r#""stage":"fix""#) {
            break;
        }
    }
    let fifo = p.root().join("tests-pass");
    std::fs::remove_file(&fifo).expect("remove tests-pass");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    // When `cat` holds the FIFO, the fix step has ended and the tests are running: kill then.
    let started = Instant::now();
    let writer = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(O_NONBLOCK)
            .open(&fifo)
        {
            Ok(f) => break f,
            Err(_) => {
                assert!(started.elapsed() < HANG_GUARD, "the tests never ran");
                assert!(
                    child.try_wait().expect("try_wait").is_none(),
                    "the run ended"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    };
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    drop(writer); // `cat` reads end-of-file and exits.
    drop(lines);
    std::fs::remove_file(&fifo).expect("remove the FIFO");
    p.write("tests-pass", "ok\n");

    // The resume may re-run the fix or only the tests, but must not start the story over.
    Script::new()
        .develop(K1, true)
        .fix(K1, 1, &re(issue), true)
        .fix(K1, 2, &re(issue), true)
        .review(K1, 2, &pass_verdict("fixed"))
        .install(&p);
    let (events, _, run) = sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    let st = stages(&events);
    assert!(
        !st.iter().any(|(_, stage, _)| stage == "dev"),
        "the resume ran the dev stage instead of the fix: {st:?}\n{}",
        run.describe()
    );
}

/// What a writer killed between creating its temp file and the rename leaves next to a file.
fn leave_a_killed_writers_temp(p: &Project, file: &str) -> String {
    let (dir, name) = file.rsplit_once('/').expect("a path with a directory");
    let temp = format!("{dir}/.{name}.baton-tmp-K1ll3d");
    p.write(&temp, "half a file");
    temp
}

#[test]
fn a_killed_writers_temp_file_next_to_the_sprint_file_is_swept() {
    let p = kill_in_the_dev_step();
    let temp = leave_a_killed_writers_temp(&p, SPRINT_REL);
    sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    assert!(!p.root().join(&temp).exists(), "{temp} is still there");
    assert!(!git(p.root(), &["ls-files"]).contains(".baton-tmp-"));
}

/// Seen in the kill test: a write of a story file (review findings, Status line, baseline) killed
/// before its rename leaves `.<key>.md.baton-tmp-XXXXXX`; only the sprint file's temps are swept
/// (`Ledger` → `atomic::remove_stale_temps(sprint file)`), and `git add -A` in the next stage
/// commit puts the stray into the history.
#[test]
fn fixed_a_killed_writers_temp_file_next_to_a_story_is_committed() {
    let p = kill_in_the_dev_step();
    let temp = leave_a_killed_writers_temp(&p, &format!("{STORIES}/{K1}.md"));
    sprint_json(&p, &["--yolo", "--allow-dirty", "--stories", K1], 0);
    let tracked = git(p.root(), &["ls-files"]);
    assert!(!tracked.contains(".baton-tmp-"), "committed:\n{tracked}");
    assert!(!p.root().join(&temp).exists(), "{temp} is still there");
}

// ---------------------------------------------------------------------------------------------
// 9. Adversarial scripts: every run ends, within its bounds, never done.

/// Each case: a name, the script, and what must end the run — text of the story's error, or
/// the kind of the escalation it paused on.
fn adversarial_cases() -> Vec<(&'static str, Script, &'static str)> {
    let implement = re(&format!("Implement story `{K1}`"));
    vec![
        (
            "an empty answer",
            Script::new().create(K1).turn("developer", "", "", vec![]),
            "the model returned an empty answer",
        ),
        (
            "garbage instead of a review",
            Script::new().create(K1).develop(K1, true).turn(
                "reviewer",
                "",
                "}}}{{{ \u{1F4A5} ``` baton-review\n{\"passed\": tru",
                vec![],
            ),
            "inconclusive-review",
        ),
        (
            "endless tool calls",
            Script::new().create(K1).turn(
                "developer",
                "",
                "Let me look around once more.",
                vec![call("list_files", json!({ "pattern": "**/*" }))],
            ),
            "reached max_turns",
        ),
        (
            // The tool error reaches the model (the second turn answers only it); the claim
            // of success is then disproved by the tests, round after round.
            "an unknown tool, then a false claim",
            Script::new()
                .create(K1)
                .turn(
                    "developer",
                    &implement,
                    "",
                    vec![call("frobnicate", json!({ "level": 11 }))],
                )
                .turn(
                    "developer",
                    &re("tool `frobnicate` is not available to agent `developer`"),
                    "Done, all green.",
                    vec![],
                )
                .turn("developer", "Fix story", "", vec![call("frobnicate", json!({}))]),
            "max-review-rounds",
        ),
        (
            "broken JSON arguments, forever",
            Script::new()
                .create(K1)
                .raw(json!({
                    "agent": "developer",
                    "match": "are not valid JSON",
                    "repeat": true,
                    "tool_calls": [{ "name": "write_file", "raw_arguments": "{\"path\": \"src/x.rs\"," }],
                }))
                .raw(json!({
                    "agent": "developer",
                    "match": implement,
                    "repeat": true,
                    "tool_calls": [{ "name": "write_file", "raw_arguments": "{\"path\": \"src/x.rs\"," }],
                })),
            "reached max_turns",
        ),
        (
            "a tool call outside the project, forever",
            Script::new().create(K1).turn(
                "developer",
                "",
                "",
                vec![call(
                    "write_file",
                    json!({ "path": "../escaped.txt", "content": "x" }),
                )],
            ),
            "reached max_turns",
        ),
        (
            "no turn for the agent",
            Script::new().create(K1),
            "has no turn for agent `developer`",
        ),
        (
            "a scrum master who calls no tool at all",
            Script::new().turn("scrum-master", "", "The story is ready.", vec![]),
            "made no tool call although its work needs tools",
        ),
        (
            "a scrum master who reads but writes nothing",
            Script::new()
                .raw(json!({
                    "agent": "scrum-master",
                    "tool_calls": [call("list_files", json!({ "pattern": "*" }))],
                }))
                .raw(json!({ "agent": "scrum-master", "text": "The story is ready." })),
            "finished without writing",
        ),
        (
            "an agent escalation",
            Script::new().create(K1).turn(
                "developer",
                "",
                "I need a decision.",
                vec![call(
                    "escalate",
                    json!({ "title": "which database?", "finding": "the story does not say", "options": ["sqlite", "postgres"] }),
                )],
            ),
            "agent",
        ),
    ]
}

#[test]
fn adversarial_scripts_always_end_in_failure_or_escalation() {
    for (name, script, expected) in adversarial_cases() {
        // `max_turns = 4` binds only agents whose definition sets no limit; the bundled
        // developer sets 80 (docs/configuration.md), so the endless cases end at 80 turns.
        let p = sprint_project(
            Toml {
                sprint: "max_review_rounds = 1",
                agents: "max_turns = 4",
                ..Toml::default()
            },
            &script,
        );
        let args = ["sprint", "--yolo", "--json", "--stories", K1];
        let run = baton(&p, &args);
        assert!(
            matches!(run.code, Some(1 | 3)),
            "{name}: expected exit 1 or 3\n{}",
            run.describe()
        );
        let (_, report) = events_and_report(&run);
        let end = s(&report, "end");
        assert_eq!(
            end,
            if run.code == Some(3) {
                "paused"
            } else {
                "failed"
            },
            "{name}: {report:#}"
        );
        let why = if end == "paused" {
            report["escalation"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        } else {
            story_report(&report, K1)["error"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert!(
            why.contains(expected),
            "{name}: ended by `{why}`, expected `{expected}`"
        );
        let status = statuses(&p)[K1].clone();
        assert_ne!(status, "done", "{name}: a broken agent got its story done");
        let escaped = p.root().parent().expect("temp dir").join("escaped.txt");
        assert!(
            !escaped.exists(),
            "{name}: a file was written outside the project"
        );
        baton(&p, &["status", "--validate"]).expect_code(0);
        // The end is stable: another run ends the same way and changes no status.
        let mut again_args = args.to_vec();
        again_args.push("--allow-dirty");
        let again = baton(&p, &again_args);
        assert_eq!(again.code, run.code, "{name}: {}", again.describe());
        assert_eq!(statuses(&p)[K1], status, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Standard mode: a human confirms done.

#[test]
fn standard_mode_pauses_at_the_done_checkpoint_until_confirmed() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    let run = baton(&p, &["sprint", "--stories", K1]).expect_code(3);
    assert!(
        run.stdout.contains("answer with: baton answer 1 <1-2>"),
        "{}",
        run.describe()
    );
    assert_eq!(statuses(&p)[K1], "review");
    let open = open_escalations(&p);
    assert_eq!(open.len(), 1);
    assert_eq!(open[0]["kind"], "checkpoint");
    assert_eq!(
        open[0]["options"],
        json!(["confirm done", "send back for another round"])
    );

    baton(&p, &["answer", "1", "1"]).expect_code(0);
    let (events, report, run) = sprint_json(&p, &["--allow-dirty", "--stories", K1], 0);
    assert_eq!(report["completed"], 1, "{}", run.describe());
    assert!(
        stages(&events).is_empty(),
        "confirming ran an agent: {:?}",
        stages(&events)
    );
    assert_eq!(statuses(&p)[K1], "done");
    let last = journal(&p)
        .into_iter()
        .rfind(|e| e["key"] == K1)
        .expect("events");
    assert_eq!(
        (s(&last, "from"), s(&last, "to"), s(&last, "actor")),
        ("review", "done", "human")
    );
}

// ---------------------------------------------------------------------------------------------
// Bugs found by this suite (ignored until fixed).

/// `baton sprint` says "answer with: baton answer N, then run `baton sprint` again", but every
/// pause writes `_bmad-output/escalations.log` (untracked) and, at the done checkpoint, the
/// review findings into the story file, without committing either; so the advertised
/// `baton sprint` refuses with "the working tree has uncommitted changes" (exit 1).
#[test]
fn fixed_a_paused_run_leaves_the_tree_dirty_so_the_advertised_resume_refuses() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    baton(&p, &["sprint", "--stories", K1]).expect_code(3);
    assert_eq!(
        dirty(&p),
        Vec::<String>::new(),
        "the paused run left uncommitted work"
    );
    baton(&p, &["answer", "1", "1"]).expect_code(0);
    let run = baton(&p, &["sprint", "--stories", K1]);
    assert_eq!(run.code, Some(0), "{}", run.describe());
}

/// When the budget stops an agent mid-stream, the streamed estimate that crossed the limit is
/// quoted in the reason ("spent $0.0090") but never accounted: the report gives the stopped story
/// 0 tokens and $0 (and the cost ledger gets nothing for that call).
#[test]
fn fixed_a_call_stopped_by_the_budget_is_not_accounted() {
    let p = sprint_project(
        Toml {
            tail: "[budget]\nhard_usd = 0.0001\n\n[prices.\"script/t\"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 1000.0",
            ..Toml::default()
        },
        &Script::new().straight(K1),
    );
    let (_, report, _) = sprint_json(&p, &["--yolo", "--stories", K1], 4);
    let st = story_report(&report, K1);
    assert!(s(st, "error").contains("spent $"), "{st:#}");
    assert!(
        st["cost_usd"].as_f64().unwrap_or_default() >= 0.0001,
        "{st:#}"
    );
    assert!(
        st["output_tokens"].as_u64().unwrap_or_default() > 0,
        "{st:#}"
    );
}

/// A story moved to done by an answer (`confirm done`, `accept as is`) is never committed: the
/// run ends 0 with the sprint file and story file modified, and no `review passed` commit.
#[test]
fn fixed_a_story_done_by_an_answer_is_not_committed() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    baton(&p, &["sprint", "--stories", K1]).expect_code(3);
    baton(&p, &["answer", "1", "confirm done"]).expect_code(0);
    sprint_json(&p, &["--allow-dirty", "--stories", K1], 0);
    assert_eq!(statuses(&p)[K1], "done");
    let modified: Vec<String> = dirty(&p)
        .into_iter()
        .filter(|l| !l.ends_with("escalations.log"))
        .collect();
    assert_eq!(
        modified,
        Vec::<String>::new(),
        "the done status is not committed"
    );
}

#[test]
fn a_parked_story_whose_marker_a_rewrite_dropped_is_not_worked_again() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K2));
    baton(
        &p,
        &[
            "set",
            K1,
            "needs-intervention",
            "--note",
            "max review rounds",
        ],
    )
    .expect_code(0);
    // BMad's sprint planning rewrites the file and drops every comment: the line says
    // `backlog` again, which the journal knows is a parked story.
    let rewritten: String = p
        .read_sprint()
        .lines()
        .map(|l| match l.split_once("  #") {
            Some((kept, _)) => format!("{kept}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    assert!(
        rewritten.contains(&format!("{K1}: backlog\n")),
        "{rewritten}"
    );
    p.write(SPRINT_REL, &rewritten);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--batch", "1"], 0);
    assert_eq!(reported_keys(&report), [K2], "{report:#}\n{}", run.stderr);
    assert!(
        transitions(&p, K1)
            .iter()
            .all(|(_, to)| to == "needs-intervention")
    );
}

#[test]
fn an_answer_given_elsewhere_resumes_a_run_asking_at_a_terminal() {
    // The run asks at a terminal (a pseudo-terminal from `script`); the answer comes from
    // another process (`baton answer`, as the board does): the run takes it and goes on.
    let p = escalating_project(2);
    let line = format!(
        "{} -C '{}' sprint --yolo --batch 2",
        super::common::BATON,
        p.root().display()
    );
    let mut child = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env("BATON_CONFIG_DIR", p.root().join(".baton/no-user-config"))
        .env("TZ", "UTC")
        .env_remove("BATON_PROJECT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("script runs");
    // Nobody types: the question waits on an open, silent terminal.
    let _keyboard = child.stdin.take();
    let started = std::time::Instant::now();
    let id = loop {
        if let Some(e) = open_escalations(&p).first() {
            break e["id"].as_i64().expect("id");
        }
        assert!(started.elapsed() < HANG_GUARD, "no escalation was raised");
        std::thread::sleep(Duration::from_millis(100));
    };
    baton(&p, &["answer", &id.to_string(), "1"]).expect_code(0);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(started.elapsed() < HANG_GUARD, "the run still waits");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut shown = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut out, &mut shown);
    }
    assert!(status.success(), "{shown}");
    assert!(
        shown.contains(&format!(
            "escalation #{id} was answered elsewhere: another fix round"
        )),
        "{shown}"
    );
    let st = statuses(&p);
    assert_eq!(
        (st[K1].as_str(), st[K2].as_str()),
        ("done", "done"),
        "{shown}"
    );
}
