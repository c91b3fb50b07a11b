//! `baton bmad` end to end, on projects set up by BMad's own installer, with the script
//! provider playing a model that follows the skills' protocols: a headless `bmad-prd` run whose
//! memlog BMad's own script writes, a partial run whose questions a person answers, a
//! conversational skill with six menus (unattended at tier 1, checkpointed at tier 4), a stalled
//! validation loop that calls one party, a kill in the middle of a turn, rollback, hooks, and the
//! queue.
//!
//! Needs `BATON_TEST_BMAD_DIR` (BMad's installer) and `uv` on `PATH` or in `BATON_TEST_UV_DIR`;
//! without them the tests say so and pass, unless `BATON_TEST_BMAD_REQUIRED=1` (CI).

use super::common::Project;
use super::sprint::{Script, baton, call, command, open_escalations, re};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) struct Tools {
    pub(super) installer: PathBuf,
    pub(super) uv_dir: PathBuf,
}

pub(super) fn tools() -> Option<Tools> {
    let required = std::env::var("BATON_TEST_BMAD_REQUIRED").as_deref() == Ok("1");
    let installer = std::env::var_os("BATON_TEST_BMAD_DIR")
        .map(|d| PathBuf::from(d).join("node_modules/.bin/bmad-method"))
        .filter(|p| p.is_file());
    let uv_dir = std::env::var_os("BATON_TEST_UV_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH")
                .and_then(|p| std::env::split_paths(&p).find(|d| d.join("uv").is_file()))
        })
        .filter(|d| d.join("uv").is_file());
    match (installer, uv_dir) {
        (Some(installer), Some(uv_dir)) => Some(Tools { installer, uv_dir }),
        _ => {
            let msg = "BMad's installer ($BATON_TEST_BMAD_DIR) or uv ($BATON_TEST_UV_DIR) is missing; .ci/run installs both";
            assert!(!required, "BATON_TEST_BMAD_REQUIRED=1 but {msg}");
            eprintln!("skipped: {msg}");
            None
        }
    }
}

/// A project with BMad installed by its own installer, a script and a trusted `baton.toml`.
pub(super) fn bmad_project(t: &Tools, extra_toml: &str, script: &Script) -> Project {
    let p = Project::empty();
    super::bmad_parity::install_bmad(&t.installer, p.root());
    set_up(p, extra_toml, script)
}

/// `p`, with BMad installed, given a script and a trusted `baton.toml`.
pub(super) fn set_up(p: Project, extra_toml: &str, script: &Script) -> Project {
    p.write(
        "baton.toml",
        &format!(
            "[agents]\nmodel = \"script/t\"\n\n[commands]\nallow = [\"uv\"]\n\n[bmad]\nmenu_interval_ms = 0\n{extra_toml}\n"
        ),
    );
    p.write(".baton/.gitignore", "*\n");
    script.install(&p);
    baton(&p, &["trust"]).expect_code(0);
    p
}

/// `baton ARGS` with `uv` on its `PATH`.
pub(super) fn bmad_command(p: &Project, t: &Tools, args: &[&str]) -> Command {
    let mut cmd = command(p, args);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![t.uv_dir.clone()];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
    cmd
}

pub(super) fn bmad(p: &Project, t: &Tools, args: &[&str]) -> super::common::Run {
    super::sprint::run_guarded(bmad_command(p, t, args), args)
}

pub(super) fn report(run: &super::common::Run) -> Value {
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}", run.describe());
    });
    v["report"].clone()
}

fn config_value(p: &Project, key: &str) -> String {
    let text = std::fs::read_to_string(p.root().join("_bmad/bmm/config.yaml")).expect("config");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .expect("key in BMad's config")
}

/// The steps of `session` at `stage`, in order: (attempt, detail).
pub(super) fn session_steps(p: &Project, session: &str, stage: &str) -> Vec<(u32, Option<String>)> {
    use baton_store::journal::Journal;
    let j = baton_store::journal::SqliteJournal::open(&p.root().join(".baton/baton.db"))
        .expect("journal");
    let mut steps = j.steps_for_key(&format!("bmad:{session}")).expect("steps");
    steps.sort_by_key(|s| s.id);
    steps
        .into_iter()
        .filter(|s| s.stage == stage)
        .map(|s| (s.attempt, s.detail))
        .collect()
}

/// The headless `bmad-prd` turn: BMad's memlog script seeds the run's memlog, the PRD is
/// written where BMad puts it, a decision is logged, and the JSON status closes the run.
fn prd_script(workspace: &str, status: &str, questions: &[&str]) -> Script {
    let memlog = |args: &[&str]| {
        let mut a = vec!["run", "_bmad/scripts/memlog.py"];
        a.extend_from_slice(args);
        call("run_command", json!({ "program": "uv", "args": a }))
    };
    let prd = format!("{workspace}/prd.md");
    let status_json = json!({
        "status": status,
        "intent": "create",
        "prd": prd,
        "memlog": format!("{workspace}/.memlog.md"),
        "assumptions": ["teams are small"],
        "open_questions": questions,
    });
    Script::new()
        .turn(
            "bmad-skill",
            &re("headless: true"),
            "Creating the PRD headless.",
            vec![
                memlog(&["init", "--workspace", workspace, "--field", "topic=Todo"]),
                call(
                    "write_file",
                    json!({ "path": prd, "content": "---\ntitle: Todo\nstatus: draft\n---\n# PRD\n\n## FR1 Lists\n" }),
                ),
                memlog(&[
                    "append", "--workspace", workspace, "--type", "decision", "--text",
                    "lists before sharing, because teams start alone",
                ]),
            ],
        )
        .turn(
            "bmad-skill",
            "exit code: 0",
            &format!("The PRD is written.\n```json\n{status_json}\n```"),
            vec![],
        )
}

#[test]
fn a_headless_prd_run_writes_the_prd_and_bmads_memlog_and_completes() {
    let Some(t) = tools() else { return };
    let p = bmad_project(&t, "", &Script::new());
    let date = jiff::Zoned::now().strftime("%Y-%m-%d").to_string();
    let ws = format!(
        "_bmad-output/planning-artifacts/prds/prd-{}-{date}",
        config_value(&p, "project_name")
    );
    prd_script(&ws, "complete", &[]).install(&p);
    let run = bmad(
        &p,
        &t,
        &["bmad", "run", "bmad-prd", "--input", "a todo app", "--json"],
    )
    .expect_code(0);
    let r = report(&run);
    assert_eq!(r["end"], "completed", "{}", run.describe());
    assert!(
        r["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("complete")
    );
    let prd = std::fs::read_to_string(p.root().join(&ws).join("prd.md")).expect("the PRD");
    assert!(prd.contains("## FR1"));
    // The step it was written in is in its frontmatter, beside BMad's own keys.
    assert!(
        prd.starts_with("---\ntitle: Todo\nstatus: draft\n"),
        "{prd}"
    );
    assert!(
        prd.contains("baton:") && prd.contains("can_rollback: true") && prd.contains("step: 1"),
        "{prd}"
    );
    // The memlog is BMad's own script's work: its frontmatter and its entry.
    let memlog = std::fs::read_to_string(p.root().join(&ws).join(".memlog.md")).expect("memlog");
    assert!(memlog.starts_with("---\ntopic: Todo"), "{memlog}");
    assert!(memlog.contains("lists before sharing"), "{memlog}");
    // The run was headless: the protocol was in the agent's task.
    let turns = session_steps(&p, "bmad-prd-1", "bmad-turn");
    assert_eq!(turns.len(), 1, "{turns:?}");
}

#[test]
fn a_partial_run_escalates_its_questions_and_the_answer_finishes_it() {
    let Some(t) = tools() else { return };
    let p = bmad_project(&t, "", &Script::new());
    let ws = "_bmad-output/planning-artifacts/prds/prd-partial";
    let done = json!({"status": "complete", "intent": "create", "prd": format!("{ws}/prd.md"), "assumptions": [], "open_questions": []});
    // The answered run comes first: its task also holds what the first run's did.
    let mut script = Script::new().turn(
        "bmad-skill",
        "(?s)The user answers:.*Schools pay",
        &format!("Folded the answer in.\n```json\n{done}\n```"),
        vec![],
    );
    script
        .turns
        .extend(prd_script(ws, "partial", &["Who pays for it?"]).turns);
    script.install(&p);
    let run = bmad(
        &p,
        &t,
        &["bmad", "run", "bmad-prd", "--input", "a todo app", "--json"],
    )
    .expect_code(3);
    let r = report(&run);
    assert_eq!(r["end"], "paused");
    let open = open_escalations(&p);
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["kind"], "bmad-questions");
    assert!(
        open[0]["finding"]
            .as_str()
            .unwrap_or_default()
            .contains("Who pays for it?")
    );
    let id = open[0]["id"].as_i64().expect("id").to_string();
    baton(&p, &["answer", &id, "Schools pay, per seat"]).expect_code(0);
    let run = bmad(&p, &t, &["bmad", "run", "bmad-prd", "--json"]).expect_code(0);
    assert_eq!(report(&run)["end"], "completed", "{}", run.describe());
    assert!(open_escalations(&p).is_empty());
}

const MENU: &str = "Select an option:\n[A] Advanced Elicitation\n[P] Party Mode\n[C] Continue";

/// A conversational skill of six menus: turn k writes `epics.md` as "after turn k" and ends
/// with BMad's menu; the seventh turn finishes.
fn six_menus(delay_turn: Option<u32>) -> Script {
    let mut s = Script::new();
    for k in 1..=7u32 {
        let pattern = if k == 1 {
            re("Start the skill now")
        } else {
            format!(
                "(?s)### You \\(turn {}\\)[^#]*### Answer[^#]*Go on from the last answer",
                k - 1
            )
        };
        let text = if k < 7 {
            format!("Step {k} is drafted in epics.md.\n\n{MENU}")
        } else {
            "All epics and stories are written to epics.md.".to_owned()
        };
        let mut turn = json!({
            "agent": "bmad-skill",
            "match": pattern,
            "text": "Writing.",
            "tool_calls": [
                call("write_file", json!({
                    "path": "_bmad-output/planning-artifacts/epics.md",
                    "content": format!("after turn {k}\n"),
                })),
                call("write_file", json!({
                    "path": format!("_bmad-output/planning-artifacts/turn-{k}.md"),
                    "content": "done\n",
                })),
            ],
        });
        if delay_turn == Some(k) {
            turn["delay_ms"] = json!(60_000);
        }
        s = s
            .raw(turn)
            .turn("bmad-skill", &re(&format!("turn-{k}.md")), &text, vec![]);
        // The follow-up answers only this turn's tool result, once.
        let last = s.turns.len() - 1;
        s.turns[last]["repeat"] = json!(false);
    }
    s
}

#[test]
fn six_menus_run_unattended_at_tier_1_and_pause_at_the_first_at_tier_4() {
    let Some(t) = tools() else { return };
    let skill = "bmad-create-epics-and-stories";
    let p = bmad_project(&t, "", &six_menus(None));
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(0);
    let r = report(&run);
    assert_eq!(
        (r["end"].as_str(), r["menus"].as_u64()),
        (Some("completed"), Some(6)),
        "{}",
        run.describe()
    );
    assert!(open_escalations(&p).is_empty());

    let p = bmad_project(&t, "", &six_menus(None));
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "4", "--json"]).expect_code(3);
    assert_eq!(report(&run)["turns"], 1, "{}", run.describe());
    let open = open_escalations(&p);
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["kind"], "bmad-menu");
    assert!(
        open[0]["finding"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Checkpoint (minimal"),
        "{open:?}"
    );
    assert_eq!(open[0]["options"][0], "C: Continue", "recommended first");
    let id = open[0]["id"].as_i64().expect("id").to_string();
    baton(&p, &["answer", &id, "C"]).expect_code(0);
    // The tier is the session's: the resumed run takes the answer, then checkpoints again.
    let run = bmad(&p, &t, &["bmad", "run", skill, "--json"]).expect_code(3);
    assert_eq!(report(&run)["turns"], 2, "{}", run.describe());
    assert_eq!(report(&run)["menus"], 1);
}

/// A validation that fails twice on the same issue, a party of two rounds, and the same issue
/// after it.
fn stalled_validation() -> Script {
    let fail = |issue: &str| format!("Validation done.\nVerdict: FAIL\n- [major] {issue}");
    let s = Script::new()
        .turn(
            "bmad-skill",
            &re("Start the skill now"),
            &fail("epic 2 has no stories"),
            vec![],
        )
        .turn(
            "bmad-skill",
            "Fix them, then validate again",
            &fail("FR3 is not covered"),
            vec![],
        )
        // Personas: a near miss does not end the party; the literal keyword does.
        .turn(
            "bmad-skill",
            "Round 1 of",
            "Split FR3 into two stories.\nexit",
            vec![],
        )
        .turn("bmad-skill", "Round 2 of", "Agreed.\n*exit", vec![]);
    // After the party the same issue comes back.
    let mut s = s;
    s.turns[1]["repeat"] = json!(true);
    s.turn(
        "bmad-skill",
        "party of reviewers discussed",
        &fail("FR3 is not covered"),
        vec![],
    )
}

#[test]
fn a_stalled_validation_calls_one_party_then_a_person() {
    let Some(t) = tools() else { return };
    let skill = "bmad-create-epics-and-stories";
    let s = stalled_validation();
    let p = bmad_project(&t, "", &s);
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(3);
    let r = report(&run);
    assert_eq!(r["parties"], 1, "{}", run.describe());
    let open = open_escalations(&p);
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["kind"], "bmad-stall");
    // The issue outlived the party: a person decides, and no second party was called.
    assert!(
        open[0]["finding"]
            .as_str()
            .unwrap_or_default()
            .contains("FR3 is not covered"),
        "{open:?}"
    );
    // The party held two rounds: `exit` without the asterisk did not end it.
    let parties = session_steps(&p, &format!("{skill}-1"), "bmad-party");
    let detail = parties[0].1.clone().expect("a party's detail");
    let d: Value = serde_json::from_str(&detail).expect("JSON");
    assert_eq!(
        (d["rounds"].as_u64(), d["exited"].as_bool()),
        (Some(2), Some(true)),
        "{d}"
    );
    // Answering stop ends the session for good.
    let id = open[0]["id"].as_i64().expect("id").to_string();
    baton(&p, &["answer", &id, "stop"]).expect_code(0);
    let run = bmad(&p, &t, &["bmad", "run", skill, "--json"]).expect_code(4);
    assert_eq!(report(&run)["end"], "stopped");
}

fn epics(p: &Project) -> String {
    std::fs::read_to_string(p.root().join("_bmad-output/planning-artifacts/epics.md"))
        .unwrap_or_default()
}

#[test]
fn a_kill_in_turn_3_resumes_at_turn_3_and_rollback_restores_turn_2() {
    let Some(t) = tools() else { return };
    let skill = "bmad-create-epics-and-stories";
    let p = bmad_project(&t, "", &six_menus(Some(3)));
    let mut child = bmad_command(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("baton starts");
    // Wait until turn 3 has begun, then kill -9.
    let mut begun = false;
    for _ in 0..600 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if p.root().join(".baton/baton.db").exists()
            && session_steps(&p, &format!("{skill}-1"), "bmad-turn")
                .iter()
                .any(|(n, _)| *n == 3)
        {
            begun = true;
            break;
        }
    }
    let killed = super::lifecycle::running(&p, "bmad");
    let _ = child.kill();
    let _ = child.wait();
    assert!(begun, "turn 3 never began");
    six_menus(None).install(&p);
    let run = bmad(&p, &t, &["bmad", "run", skill, "--json"]).expect_code(0);
    // The next run marks the killed one ended (interrupted) in the journal.
    assert_eq!(killed.len(), 1, "the killed run: {killed:?}");
    assert_eq!(
        super::lifecycle::run_record(&p, &killed[0]).status,
        "interrupted"
    );
    assert_eq!(report(&run)["end"], "completed", "{}", run.describe());
    let turns: Vec<u32> = session_steps(&p, &format!("{skill}-1"), "bmad-turn")
        .iter()
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(
        turns,
        [1, 2, 3, 3, 4, 5, 6, 7],
        "turn 3 ran again, nothing before it did"
    );
    assert_eq!(epics(&p), "after turn 7\n");

    let session = "bmad-create-epics-and-stories-1";
    baton(&p, &["bmad", "rollback", "--session", session, "--to", "2"]).expect_code(0);
    assert_eq!(
        epics(&p),
        "after turn 2\n",
        "checkpoint 2: as turn 2 left it"
    );
    let archive = p.root().join("_bmad-output/.archive");
    let archived: Vec<String> = walk(&archive)
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    assert!(
        archived.contains(&"after turn 7\n".to_owned()),
        "{archived:?}"
    );
    // The killed run stays ended (interrupted), on the board's runs page too.
    super::lifecycle::assert_interrupted(&p, &killed[0]);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(read) = std::fs::read_dir(dir) {
        for e in read.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_critical_hook_failure_stops_the_run_and_another_is_only_logged() {
    let Some(t) = tools() else { return };
    let skill = "bmad-create-epics-and-stories";
    let p = bmad_project(&t, "", &six_menus(None));
    let step = p.root().join(format!(".claude/skills/{skill}/SKILL.md"));
    let text = std::fs::read_to_string(&step).expect("SKILL.md");
    let hooks = "hooks:\n  Stop:\n    - hooks:\n        - command: [\"false\"]\n  PreToolUse:\n    - matcher: \"write_file\"\n      hooks:\n        - command: [\"sh\", \"-c\", \"echo checked\"]\n";
    let with = text.replacen("---\n", &format!("---\n{hooks}"), 1);
    std::fs::write(&step, &with).expect("write");
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(0);
    assert_eq!(report(&run)["end"], "completed", "{}", run.describe());
    let log = std::fs::read_to_string(p.root().join(format!(".baton/bmad/{skill}-1/hooks.log")))
        .expect("the hook log");
    assert!(log.contains("Stop `false` failed"), "{log}");

    let p = bmad_project(&t, "", &six_menus(None));
    let critical = text.replacen(
        "---\n",
        "---\nhooks:\n  Stop:\n    - hooks:\n        - command: [\"false\"]\n          critical: true\n",
        1,
    );
    std::fs::write(
        p.root().join(format!(".claude/skills/{skill}/SKILL.md")),
        critical,
    )
    .expect("write");
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(1);
    let r = report(&run);
    assert_eq!(
        (r["end"].as_str(), r["turns"].as_u64()),
        (Some("failed"), Some(1)),
        "{}",
        run.describe()
    );
    assert!(
        r["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("critical")
    );

    // A project nobody trusted runs none of its skills' hooks: the same skill finishes.
    baton(&p, &["trust", "--revoke"]).expect_code(0);
    let run = bmad(
        &p,
        &t,
        &["bmad", "run", skill, "--tier", "1", "--fresh", "--json"],
    )
    .expect_code(0);
    assert_eq!(report(&run)["end"], "completed", "{}", run.describe());
    assert!(
        run.stderr
            .contains("not run in a project you have not trusted"),
        "{}",
        run.describe()
    );
}

#[test]
fn the_queue_holds_100_tasks_across_restarts_and_refuses_the_101st() {
    let Some(t) = tools() else { return };
    let p = bmad_project(&t, "", &Script::new());
    for i in 0..100 {
        let priority = if i == 42 { "high" } else { "normal" };
        baton(
            &p,
            &[
                "bmad",
                "queue",
                "add",
                "bmad-prd",
                "--input",
                &format!("idea {i}"),
                "--priority",
                priority,
            ],
        )
        .expect_code(0);
    }
    let run = baton(&p, &["bmad", "queue", "add", "bmad-prd"]).expect_code(1);
    assert!(run.stderr.contains("100"), "{}", run.describe());
    let list: Value = serde_json::from_str(
        &baton(&p, &["bmad", "queue", "list", "--json"])
            .expect_code(0)
            .stdout,
    )
    .expect("JSON");
    let list = list.as_array().expect("a list");
    assert_eq!(list.len(), 100);
    assert_eq!(list[0]["input"], "idea 42", "high priority first");
    assert_eq!(list[1]["input"], "idea 0", "then first in, first out");
    let id = list[5]["id"].as_u64().expect("id").to_string();
    baton(&p, &["bmad", "queue", "remove", &id]).expect_code(0);
    baton(&p, &["bmad", "queue", "add", "bmad-prd"]).expect_code(0);
    baton(&p, &["bmad", "queue", "remove", "9999"]).expect_code(1);
}

#[test]
fn the_watch_reports_a_change_made_outside_a_run_once() {
    use super::common::SPRINT_REL;
    use super::sprint::{K1, Toml, sprint_project};
    let p = sprint_project(Toml::default(), &Script::new());
    let child = command(&p, &["bmad", "watch", "--json", "--for", "4"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("baton starts");
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let text = std::fs::read_to_string(p.root().join(SPRINT_REL)).expect("sprint");
    // Two writes in quick succession: one change, to where the file ended.
    let line = format!("  {K1}: backlog");
    p.write(
        SPRINT_REL,
        &text.replacen(&line, &format!("  {K1}: ready-for-dev"), 1),
    );
    p.write(
        SPRINT_REL,
        &text.replacen(&line, &format!("  {K1}: in-progress"), 1),
    );
    let out = child.wait_with_output().expect("the watch ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(
        events,
        vec![json!({"event": "status", "key": K1, "from": "backlog", "to": "in-progress"})],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The BMad events of the project's run event log, as `name detail` lines.
fn bmad_events(p: &Project) -> Vec<String> {
    use baton_engine::protocol::{EventBody as B, Scope, UnitKey};
    super::common::run_events(p.root())
        .into_iter()
        .filter_map(|(scope, body)| {
            let unit = match &scope {
                Scope::Unit(UnitKey::Bmad(s)) => s.clone(),
                _ => return None,
            };
            let line = match body {
                B::BmadTurn { session, turn } => format!("turn {session} {turn}"),
                B::BmadMenuAnswered {
                    session,
                    selection,
                    by,
                    ..
                } => format!("menu {session} {selection} by {by}"),
                B::BmadParty {
                    session, members, ..
                } => format!("party {session} {}", members.len()),
                B::BmadSessionEnded { session, end, .. } => format!("ended {session} {end}"),
                _ => return None,
            };
            assert!(line.contains(&unit), "{line} is scoped to {unit}");
            Some(line)
        })
        .collect()
}

#[test]
fn a_sessions_turns_menus_parties_and_end_are_events() {
    let Some(t) = tools() else { return };
    let skill = "bmad-create-epics-and-stories";
    let session = format!("{skill}-1");
    let p = bmad_project(&t, "", &six_menus(None));
    bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(0);
    let events = bmad_events(&p);
    let turns = events.iter().filter(|e| e.starts_with("turn ")).count();
    let menus: Vec<&String> = events.iter().filter(|e| e.starts_with("menu ")).collect();
    assert_eq!(turns, 7, "{events:#?}");
    assert_eq!(menus.len(), 6, "{events:#?}");
    assert!(menus.iter().all(|m| m.ends_with(" by baton")), "{menus:#?}");
    assert_eq!(
        events.first().map(String::as_str),
        Some(&*format!("turn {session} 1"))
    );
    assert_eq!(
        events.last().map(String::as_str),
        Some(&*format!("ended {session} completed")),
        "{events:#?}"
    );

    let p = bmad_project(&t, "", &stalled_validation());
    bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(3);
    let events = bmad_events(&p);
    assert_eq!(
        events.iter().filter(|e| e.starts_with("party ")).count(),
        1,
        "{events:#?}"
    );
}

#[test]
fn a_finished_session_that_kept_a_memlog_offers_its_import() {
    let Some(t) = tools() else { return };
    let p = bmad_project(&t, "", &Script::new());
    let ws = "_bmad-output/planning-artifacts/prds/prd-offer";
    prd_script(ws, "complete", &[]).install(&p);
    let run = bmad(
        &p,
        &t,
        &["bmad", "run", "bmad-prd", "--input", "a todo app"],
    )
    .expect_code(0);
    let offer = format!("`baton memory import {ws}/.memlog.md`");
    assert!(run.stdout.contains(&offer), "{}", run.describe());
    // The command offered works, once.
    let import = ["memory", "import", &format!("{ws}/.memlog.md")];
    let first = baton(&p, &import).expect_code(0);
    assert!(
        first.stdout.contains("1 new memories"),
        "{}",
        first.describe()
    );
    let again = baton(&p, &import).expect_code(0);
    assert!(
        again
            .stdout
            .contains("0 new memories, 0 strengthened, 1 imported before"),
        "{}",
        again.describe()
    );
}
