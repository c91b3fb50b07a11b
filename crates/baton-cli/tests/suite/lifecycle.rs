//! What every workflow shares about a run's life: escalations belong to the workflow whose
//! unit raised them (an open plan, BMad or pipeline escalation never stops `baton sprint`, and
//! `baton answer` names the command that takes each kind up), and a run left "running" by a
//! killed process is marked ended (interrupted) when the next run of any workflow starts.

use super::board::Server;
use super::common::{Project, SPRINT_REL};
use super::sprint::{
    K1, STORIES, Script, Toml, baton, command, dirty, git, git_init, sprint_json, sprint_project,
    statuses, subjects,
};
use baton_store::journal::{EscalationLog, EscalationRecord, RunLog, RunRecord, SqliteJournal};
use serde_json::json;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Records an open escalation of the unit `key` (raised by run `run`), as its workflow's
/// `raise` does; returns its id.
fn plant_escalation(p: &Project, key: &str, run: &str) -> i64 {
    let mut j = SqliteJournal::open(&p.root().join(".baton/baton.db")).expect("journal");
    j.raise_escalation(&EscalationRecord {
        id: 0,
        run_id: Some(run.to_owned()),
        key: Some(key.to_owned()),
        title: format!("a question of {key}"),
        finding: "the agent could not decide".into(),
        options: vec!["retry".into(), "abort".into()],
        answer: None,
        created_at: "2026-01-01T00:00:00Z".into(),
        answered_at: None,
        kind: "agent".into(),
        resolved_at: None,
        after_step: 0,
    })
    .expect("escalation recorded")
}

/// An open escalation of another workflow's unit `key`: the sprint works its story to the
/// end, and answering the escalation names `resume` as the command that continues with it.
fn another_workflow_s_escalation_leaves_the_sprint_going(key: &str, resume: &str) {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    let id = plant_escalation(&p, key, "other-1");
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    assert_eq!(statuses(&p)[K1], "done");
    let answered = baton(&p, &["answer", &id.to_string(), "1"]).expect_code(0);
    assert!(
        answered
            .stdout
            .contains(&format!("next: `{resume}` continues with it")),
        "{}",
        answered.describe()
    );
    assert!(
        !answered.stdout.contains("baton sprint"),
        "{}",
        answered.describe()
    );
}

#[test]
fn an_open_planning_escalation_does_not_stop_the_sprint() {
    another_workflow_s_escalation_leaves_the_sprint_going("plan:prd", "baton plan --continue");
}

#[test]
fn an_open_bmad_escalation_does_not_stop_the_sprint() {
    another_workflow_s_escalation_leaves_the_sprint_going(
        "bmad:bmad-create-prd-1",
        "baton bmad run bmad-create-prd",
    );
}

#[test]
fn an_open_pipeline_escalation_does_not_stop_the_sprint() {
    another_workflow_s_escalation_leaves_the_sprint_going("gh:#7", "baton pm");
}

#[test]
fn an_open_team_or_plan_task_escalation_does_not_stop_the_sprint() {
    another_workflow_s_escalation_leaves_the_sprint_going("team:1", "baton team");
    another_workflow_s_escalation_leaves_the_sprint_going("sdd:PLAN.md#2", "baton sdd PLAN.md");
}

#[test]
fn an_open_escalation_of_another_story_still_stops_the_sprint_and_names_it() {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    let id = plant_escalation(&p, "1-2-beta", "other-1");
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 3);
    assert_eq!(report["end"], "paused", "{}", run.describe());
    assert_eq!(report["escalation"]["id"], id, "{}", run.describe());
    assert_eq!(statuses(&p)[K1], "backlog");
    let answered = baton(&p, &["answer", &id.to_string(), "1"]).expect_code(0);
    assert!(
        answered
            .stdout
            .contains("next: `baton sprint` continues with it"),
        "{}",
        answered.describe()
    );
}

// ---------------------------------------------------------------------------------------------
// A run killed with `kill -9` is marked ended (interrupted) when the next run of any workflow
// starts; a run of another live process is left alone.

/// An agent's turn that answers after ten minutes: a run is killed while it waits.
fn stalling(agent: &str) -> serde_json::Value {
    json!({ "agent": agent, "repeat": true, "delay_ms": 600_000, "text": "thinking" })
}

/// The reviewer's quick answer to `baton team reviewer "say done"` (the next start).
fn quick_reviewer(script: Script) -> Script {
    script
        .raw(json!({ "agent": "reviewer", "match": "^say done$", "repeat": true, "text": "done" }))
}

fn journal(p: &Project) -> Option<SqliteJournal> {
    let db = p.root().join(".baton/baton.db");
    db.is_file()
        .then(|| SqliteJournal::open(&db).expect("journal"))
}

/// The run `id` as the journal has it.
pub(super) fn run_record(p: &Project, id: &str) -> RunRecord {
    let j = journal(p).expect("a journal");
    RunLog::run(&j, id)
        .expect("journal read")
        .unwrap_or_else(|| panic!("no run {id}"))
}

/// The runs of `kind` the journal says are running.
pub(super) fn running(p: &Project, kind: &str) -> Vec<String> {
    journal(p)
        .map(|j| {
            j.unfinished_runs()
                .expect("journal read")
                .into_iter()
                .filter(|r| r.kind == kind)
                .map(|r| r.id)
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `child` has begun a run of `kind`; its id.
fn begun(p: &Project, child: &mut Child, kind: &str) -> String {
    let started = Instant::now();
    loop {
        if let Some(id) = running(p, kind).pop() {
            return id;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the {kind} run ended before it was killed: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no {kind} run began"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `baton ARGS` on `p`, waits until its run of `kind` has begun, and SIGKILLs it; the
/// killed run's id.
fn kill_9(p: &Project, args: &[&str], kind: &str) -> String {
    let mut child = command(p, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("baton starts");
    let id = begun(p, &mut child, kind);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert_eq!(
        run_record(p, &id).status,
        "running",
        "the kill left it running"
    );
    id
}

/// Another workflow's start: `baton team reviewer "say done"`.
fn next_start(p: &Project) {
    baton(
        p,
        &[
            "team", "reviewer", "say done", "--model", "script/t", "--json",
        ],
    )
    .expect_code(0);
}

/// The killed run `id` is ended (interrupted) in the journal and on the board's runs page.
pub(super) fn assert_interrupted(p: &Project, id: &str) {
    let r = run_record(p, id);
    assert_eq!(r.status, "interrupted", "{r:?}");
    assert!(r.ended_at.is_some(), "{r:?}");
    assert!(
        r.reason
            .as_deref()
            .is_some_and(|why| why.contains("ended without ending it")),
        "{r:?}"
    );
    if !p.sprint_path().is_file() {
        // The board serves a project with a sprint file.
        p.write(
            SPRINT_REL,
            "development_status:\n  epic-1: backlog\n  1-1-alpha: backlog\n",
        );
    }
    let server = Server::start(p, &[], &[]);
    let page = server.get("/runs", &[]);
    assert_eq!(page.status, 200, "{}", page.body);
    let row = page
        .body
        .split("<tr>")
        .find(|row| row.contains(&format!("<code>{id}</code>")))
        .unwrap_or_else(|| panic!("run {id} is not on the runs page:\n{}", page.body));
    assert!(row.contains("<td>interrupted</td>"), "{row}");
}

#[test]
fn a_killed_sprint_is_marked_interrupted_when_another_workflow_starts() {
    let script = quick_reviewer(Script::new().raw(stalling("scrum-master")));
    let p = sprint_project(Toml::default(), &script);
    let id = kill_9(&p, &["sprint", "--yolo", "--stories", K1], "sprint");
    next_start(&p);
    assert_interrupted(&p, &id);
}

#[test]
fn a_killed_team_run_is_marked_interrupted_when_another_workflow_starts() {
    let script = quick_reviewer(Script::new().raw(stalling("scout")));
    let p = sprint_project(Toml::default(), &script);
    let id = kill_9(
        &p,
        &["team", "scout", "look", "--model", "script/t"],
        "team",
    );
    // The next start is a sprint that has nothing to wait for.
    Script::new().straight(K1).install(&p);
    sprint_json(&p, &["--yolo", "--stories", K1], 0);
    assert_interrupted(&p, &id);
}

#[test]
fn a_killed_plan_run_is_marked_interrupted_when_another_workflow_starts() {
    let p = super::plan_pipeline::project("^Write the architecture document", 600_000);
    quick_reviewer(Script::new()).install(&p);
    git_init(&p);
    let id = kill_9(&p, &["plan", super::plan_pipeline::IDEA, "--yolo"], "plan");
    next_start(&p);
    assert_interrupted(&p, &id);
}

#[test]
fn a_killed_sdd_run_is_marked_interrupted_and_a_live_one_is_left_alone() {
    let script = quick_reviewer(Script::new().raw(stalling("implementer")));
    let p = super::sdd::project(&script, "");
    let sdd = [
        "sdd", "PLAN.md", "--json", "--model", "script/t", "--no-tdd",
    ];
    // A live run of another process is not closed by the next start.
    let mut live = command(&p, &sdd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("baton starts");
    let id = begun(&p, &mut live, "sdd");
    next_start(&p);
    let r = run_record(&p, &id);
    assert_eq!((r.status.as_str(), r.ended_at), ("running", None));
    // Killed, it is.
    live.kill().expect("SIGKILL");
    let _ = live.wait();
    next_start(&p);
    assert_interrupted(&p, &id);
}

// ---------------------------------------------------------------------------------------------
// A stage's status move and its commit are one effect.

/// The subjects of the commits that changed `path`, oldest first.
fn commits_of(p: &Project, path: &str) -> Vec<String> {
    git(p.root(), &["log", "--reverse", "--format=%s", "--", path])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs `baton sprint` with the failpoint `after-move:MODE` (the run is interrupted right after
/// the story's first status move, before its stage commit), then resumes to the end.
fn interrupted_after_the_move(mode: &str) -> Project {
    let p = sprint_project(Toml::default(), &Script::new().straight(K1));
    let out = command(&p, &["sprint", "--yolo", "--stories", K1])
        .env("BATON_FAILPOINT", format!("after-move:{mode}"))
        .output()
        .expect("baton runs");
    assert_ne!(out.status.code(), Some(0), "the run was not interrupted");
    assert_eq!(statuses(&p)[K1], "ready-for-dev", "the move was made");
    let story = format!("{STORIES}/{K1}.md");
    if mode == "cancel" {
        // Ctrl-C: the run ended, after making the stage's own commit.
        assert_eq!(commits_of(&p, &story), ["story(1-1): create"]);
        assert_eq!(dirty(&p), Vec::<String>::new());
    }
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 0);
    assert_eq!(report["end"], "completed", "{}", run.describe());
    p
}

fn assert_the_stage_has_its_own_commit(p: &Project) {
    let story = format!("{STORIES}/{K1}.md");
    let history = commits_of(p, &story);
    assert_eq!(
        history.first().map(String::as_str),
        Some("story(1-1): create"),
        "the story file's first commit is its stage's: {history:?}"
    );
    assert!(
        !history.iter().any(|s| s.starts_with("sprint: ")),
        "a run's own commit took the stage's files: {history:?}"
    );
    let reference = sprint_project(Toml::default(), &Script::new().straight(K1));
    sprint_json(&reference, &["--yolo", "--stories", K1], 0);
    assert_eq!(subjects(p), subjects(&reference));
    assert_eq!(statuses(p)[K1], "done");
}

#[test]
fn a_ctrl_c_between_a_stage_s_move_and_its_commit_leaves_the_stage_s_own_commit() {
    let p = interrupted_after_the_move("cancel");
    assert_the_stage_has_its_own_commit(&p);
}

#[test]
fn a_kill_between_a_stage_s_move_and_its_commit_is_made_good_by_the_next_run() {
    let p = interrupted_after_the_move("abort");
    assert_the_stage_has_its_own_commit(&p);
    let killed: Vec<RunRecord> = journal(&p)
        .expect("journal")
        .runs_of_kind("sprint", 3)
        .expect("journal read");
    assert_eq!(killed.len(), 2, "{killed:?}");
    assert_eq!(killed[1].status, "interrupted", "{killed:?}");
}
