//! `baton bmad` on projects installed by BMad 6.12's own installer for every tool target it
//! offers (the list read from the installer's `--list-tools`, never typed here), and the skill
//! protocols as the installed files declare them: each skill's headless flag against its own
//! `SKILL.md`, the generated table of docs/bmad.md, BMad's final menu of
//! `bmad-create-epics-and-stories` answered at tier 1 with its completion step run, a
//! validation returning the same issues twice, and hooks around real tool calls and per step.
//!
//! The installs are cached under the target directory (`CARGO_TARGET_TMPDIR/bmad-installs/
//! <version>/<tool>`): the installer runs offline, once per target and version.
//!
//! Needs what `bmad_run` needs (`BATON_TEST_BMAD_DIR`, uv); skipped with a notice without them
//! unless `BATON_TEST_BMAD_REQUIRED=1`.

use super::bmad_run::{Tools, bmad, report, session_steps, set_up, tools};
use super::common::Project;
use super::sprint::{Script, baton, call, open_escalations, re};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The installer's tool targets: `(id, skills folder)`, from its own `--list-tools`.
fn offered(t: &Tools) -> Vec<(String, String)> {
    let out = Command::new(&t.installer)
        .args(["install", "--list-tools"])
        .output()
        .expect("BMad's installer runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = Vec::new();
    let mut table = false;
    for line in text.lines() {
        if line.trim_start().starts_with("---") {
            table = true;
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if !table || words.len() < 3 {
            continue;
        }
        let dir = words[words.len() - 1];
        if !dir.starts_with('.') {
            continue;
        }
        rows.push((words[0].trim_start_matches('*').to_owned(), dir.to_owned()));
    }
    assert!(rows.len() > 40, "{text}");
    rows
}

fn version(t: &Tools) -> String {
    let pkg = t
        .installer
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("bmad-method/package.json"))
        .expect("the package");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(pkg).expect("package.json")).expect("JSON");
    v["version"].as_str().expect("a version").to_owned()
}

/// BMad installed for `tool` by its own installer, once per version, in the target directory.
fn cached_install(t: &Tools, tool: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("bmad-installs")
        .join(version(t))
        .join(tool);
    // One install at a time in this process; a finished one carries a marker.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let done = dir.join(".installed");
    if done.is_file() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    let tmp = dir.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("a folder for the install");
    let out = Command::new(&t.installer)
        .args(["install", "--directory"])
        .arg(&tmp)
        .args(["--modules", "bmm", "--tools", tool, "--yes"])
        .current_dir(&tmp)
        .output()
        .expect("BMad's installer runs");
    assert!(
        out.status.success(),
        "bmad-method install --tools {tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(tmp.join(".installed"), "").expect("the marker");
    // Another test process may have installed it meanwhile: either copy is the same.
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for e in std::fs::read_dir(from).expect("read").flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_name() == ".installed" {
            continue;
        }
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

/// A project installed for `tool`, with a script and a trusted `baton.toml`.
fn project_for(t: &Tools, tool: &str, script: &Script) -> Project {
    let p = Project::empty();
    copy_dir(&cached_install(t, tool), p.root());
    set_up(p, "", script)
}

/// The skills `baton bmad skills --json` lists in `p`.
fn listed(p: &Project) -> Vec<Value> {
    let run = baton(p, &["bmad", "skills", "--json"]).expect_code(0);
    match serde_json::from_str(&run.stdout) {
        Ok(Value::Array(v)) => v,
        _ => panic!("{}", run.describe()),
    }
}

/// A headless run of `bmad-prd` found in `dir`, and a conversational `bmad-create-epics-and-
/// stories` that ends with BMad's final menu.
fn two_runs(dir: &str) -> Script {
    let status = json!({"status": "complete", "intent": "create", "prd": "_bmad-output/planning-artifacts/prd.md", "assumptions": [], "open_questions": []});
    Script::new()
        .turn(
            "bmad-skill",
            &format!(
                "(?s)headless: true.*{}",
                re(&format!("`{dir}/bmad-prd/SKILL.md`"))
            ),
            &format!("The PRD is written.\n```json\n{status}\n```"),
            vec![],
        )
        .turn(
            "bmad-skill",
            &format!(
                "(?s){}.*Start the skill now",
                re(&format!("`{dir}/bmad-create-epics-and-stories/SKILL.md`"))
            ),
            "Every FR is covered.\n\n**All validations complete!** [C] Complete Workflow",
            vec![],
        )
        .turn(
            "bmad-skill",
            "(?s)### You \\(turn 1\\).*Go on from the last answer",
            "Epics and Stories complete.",
            vec![],
        )
}

/// What every target must give: its 29 skills listed from its folder (22 of them work), one
/// headless and one conversational skill run to completion.
fn check_target(t: &Tools, tool: &str, dir: &str) {
    cached_install(t, tool);
    let p = project_for(t, tool, &two_runs(dir));
    let skills = listed(&p);
    let names: Vec<&str> = skills.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(skills.len(), 29, "{tool}: {names:?}");
    for s in &skills {
        let path = s["path"].as_str().unwrap_or_default();
        assert!(path.starts_with(dir), "{tool}: {s}");
    }
    let work = skills.iter().filter(|s| s["kind"] == "work").count();
    assert_eq!(work, 22, "{tool}: personas and helpers are not work");
    let human = baton(&p, &["bmad", "skills"]).expect_code(0).stdout;
    assert!(
        human.contains(&format!("installed for {tool} ({dir}")),
        "{human}"
    );
    assert!(
        !human.lines().any(|l| l.starts_with("bmad-agent-")),
        "{human}"
    );
    let run = bmad(
        &p,
        t,
        &["bmad", "run", "bmad-prd", "--input", "todo", "--json"],
    );
    assert_eq!(
        report(&run)["end"],
        "completed",
        "{tool}: {}",
        run.describe()
    );
    let run = bmad(
        &p,
        t,
        &[
            "bmad",
            "run",
            "bmad-create-epics-and-stories",
            "--tier",
            "1",
            "--json",
        ],
    );
    let r = report(&run);
    assert_eq!(
        (r["end"].as_str(), r["menus"].as_u64()),
        (Some("completed"), Some(1)),
        "{tool}: {}",
        run.describe()
    );
}

#[test]
fn every_tool_target_of_bmads_installer_is_listed_and_runs_a_headless_and_a_conversational_skill() {
    let Some(t) = tools() else { return };
    let targets = offered(&t);
    // baton's copy of the installer's table is the installer's.
    let ours: Vec<(String, String)> = baton_store::bmad_targets::TARGETS
        .iter()
        .map(|x| (x.id.to_owned(), x.dir.to_owned()))
        .collect();
    let (mut a, mut b) = (targets.clone(), ours);
    a.sort();
    b.sort();
    assert_eq!(a, b, "baton's target table differs from the installer's");
    let started = std::time::Instant::now();
    // Four at a time: each target is its own project.
    let per = targets.len().div_ceil(4);
    std::thread::scope(|s| {
        for chunk in targets.chunks(per) {
            let t = &t;
            s.spawn(move || {
                for (tool, dir) in chunk {
                    check_target(t, tool, dir);
                }
            });
        }
    });
    eprintln!(
        "{} tool targets listed and run in {:.1} s",
        targets.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Every skill of the installed package, with how it runs: what the tables pin.
fn skills_table(p: &Project) -> String {
    let mut out = String::new();
    for s in listed(p) {
        out.push_str(&format!(
            "{:<32} {:<8} {:<13} {}\n",
            s["name"].as_str().unwrap_or_default(),
            s["kind"].as_str().unwrap_or_default(),
            if s["headless"] == true {
                "headless"
            } else {
                "conversational"
            },
            s["declared"].as_str().unwrap_or("-"),
        ));
    }
    out
}

#[test]
fn the_headless_flag_of_every_skill_agrees_with_its_own_files() {
    let Some(t) = tools() else { return };
    let p = project_for(&t, "claude-code", &Script::new());
    for s in listed(&p) {
        let name = s["name"].as_str().unwrap_or_default();
        let dir = p.root().join(".claude/skills").join(name);
        let text = std::fs::read_to_string(dir.join("SKILL.md")).expect("SKILL.md");
        // The files' own word: a headless file, or a SKILL.md that speaks of a headless run.
        let declares = dir.join("references/headless.md").is_file()
            || dir.join("assets/headless-schemas.md").is_file()
            || text.to_lowercase().contains("headless");
        assert_eq!(s["headless"] == true, declares, "{name}: {s}");
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("bmad_skills_headless", skills_table(&p)));
}

/// The block of docs/bmad.md between the generated-table markers.
const BEGIN: &str = "<!-- generated by `baton bmad skills --markdown` on a BMad 6.12 install -->\n";
const END: &str = "<!-- end of the generated tables -->";

#[test]
fn the_support_tables_of_the_docs_are_the_generated_ones() {
    let Some(t) = tools() else { return };
    let p = project_for(&t, "claude-code", &Script::new());
    let table = baton(&p, &["bmad", "skills", "--markdown"])
        .expect_code(0)
        .stdout;
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bmad.md"))
        .expect("docs/bmad.md");
    let at = docs.find(BEGIN).expect("the generated block's start") + BEGIN.len();
    let end = docs[at..].find(END).expect("the generated block's end") + at;
    assert_eq!(
        &docs[at..end],
        table,
        "docs/bmad.md is not what `baton bmad skills --markdown` prints; paste it between the markers"
    );
}

/// The menu line each step file of `bmad-create-epics-and-stories` tells the skill to show.
fn step_menus(p: &Project) -> Vec<String> {
    let steps = p
        .root()
        .join(".claude/skills/bmad-create-epics-and-stories/steps");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&steps)
        .expect("steps")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("a step file");
            let line = text
                .lines()
                .rfind(|l| l.contains("[C]") && !l.trim_start().starts_with(['-', '#']))
                .unwrap_or_else(|| panic!("no menu in {}", f.display()));
            let line = line.trim();
            let line = line.strip_prefix("Display:").unwrap_or(line).trim();
            line.trim_matches(['"', '`']).to_owned()
        })
        .collect()
}

const EPICS: &str = "_bmad-output/planning-artifacts/epics.md";

/// `bmad-create-epics-and-stories` as its four step files run it: turn k writes `epics.md` with
/// the steps completed before it and ends with step k's own menu line; turn 5 runs the
/// completion step (BMad's resolver for `workflow.on_complete`) and finishes.
fn epics_workflow(menus: &[String]) -> Script {
    let mut s = Script::new();
    for k in 1..=5u32 {
        let pattern = if k == 1 {
            re("Start the skill now")
        } else {
            format!(
                "(?s)### You \\(turn {}\\)[^#]*### Answer[^#]*Go on from the last answer",
                k - 1
            )
        };
        let done: Vec<u32> = (1..k).collect();
        let mut calls = vec![call(
            "write_file",
            json!({
                "path": EPICS,
                "content": format!("---\nstepsCompleted: {done:?}\n---\n# Epics\n\nafter turn {k}\n"),
            }),
        )];
        if k == 5 {
            calls.push(call(
                "run_command",
                json!({"program": "uv", "args": ["run", "_bmad/scripts/resolve_customization.py", "--skill", ".claude/skills/bmad-create-epics-and-stories", "--project-root", ".", "--key", "workflow.on_complete"]}),
            ));
        }
        calls.push(call(
            "write_file",
            json!({"path": format!("_bmad-output/planning-artifacts/turn-{k}.md"), "content": "done\n"}),
        ));
        let text = match menus.get(usize::try_from(k).unwrap_or(0) - 1) {
            Some(m) => format!("Step {k} is drafted in epics.md.\n\n{m}"),
            None => "The completion step ran: `workflow.on_complete` is empty. Epics and Stories complete.".to_owned(),
        };
        s = s
            .raw(json!({"agent": "bmad-skill", "match": pattern, "text": "Working.", "tool_calls": calls}))
            .turn("bmad-skill", &re(&format!("turn-{k}.md")), &text, vec![]);
        let last = s.turns.len() - 1;
        s.turns[last]["repeat"] = json!(false);
    }
    s
}

#[test]
fn create_epics_at_tier_1_answers_every_menu_including_the_final_one_and_runs_its_completion() {
    let Some(t) = tools() else { return };
    let p = project_for(&t, "claude-code", &Script::new());
    let menus = step_menus(&p);
    assert_eq!(menus.len(), 4, "{menus:?}");
    assert_eq!(
        menus[3],
        "**All validations complete!** [C] Complete Workflow"
    );
    epics_workflow(&menus).install(&p);
    let skill = "bmad-create-epics-and-stories";
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(0);
    let r = report(&run);
    assert_eq!(
        (r["end"].as_str(), r["menus"].as_u64(), r["turns"].as_u64()),
        (Some("completed"), Some(4), Some(5)),
        "{}",
        run.describe()
    );
    // The completion step ran: turn 5 is the one after `[C] Complete Workflow`.
    let turns = session_steps(&p, &format!("{skill}-1"), "bmad-turn");
    let last = turns
        .last()
        .and_then(|(_, d)| d.clone())
        .unwrap_or_default();
    assert!(last.contains("on_complete"), "{last}");
    let replies = session_steps(&p, &format!("{skill}-1"), "bmad-reply");
    let chosen: Vec<String> = replies
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d.as_deref()?).ok())
        .map(|v| v["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(chosen, ["C", "C", "C", "C"]);
    assert!(open_escalations(&p).is_empty());
}

#[test]
fn the_same_issues_twice_call_one_party_and_issues_surviving_it_go_to_a_person() {
    let Some(t) = tools() else { return };
    let skill = "bmad-create-epics-and-stories";
    let fail = "Validation done.\nVerdict: FAIL\n- [major] FR3 is not covered";
    // The first two turns fail alike, each once; the party's members all say `*exit`.
    let party = |mut s: Script| {
        s.turns[1]["repeat"] = json!(false);
        s.turn(
            "bmad-skill",
            "Round 1 of",
            "Split FR3 in two.\n*exit",
            vec![],
        )
    };
    // The same set twice, then again after the party: one party, then a person.
    let s = party(
        Script::new()
            .turn("bmad-skill", &re("Start the skill now"), fail, vec![])
            .turn("bmad-skill", "Fix them, then validate again", fail, vec![]),
    )
    .turn("bmad-skill", "party of reviewers discussed", fail, vec![]);
    let p = project_for(&t, "claude-code", &s);
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(3);
    let r = report(&run);
    assert_eq!(
        (r["parties"].as_u64(), r["turns"].as_u64()),
        (Some(1), Some(3)),
        "{}",
        run.describe()
    );
    let open = open_escalations(&p);
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["kind"], "bmad-stall");
    assert!(
        open[0]["finding"]
            .as_str()
            .unwrap_or_default()
            .contains("survived a party"),
        "{open:?}"
    );
    // The same set twice, and the party's advice fixes it: the session ends by itself.
    let s = party(
        Script::new()
            .turn("bmad-skill", &re("Start the skill now"), fail, vec![])
            .turn("bmad-skill", "Fix them, then validate again", fail, vec![]),
    )
    .turn(
        "bmad-skill",
        "party of reviewers discussed",
        "Verdict: PASS\nEvery FR is covered.",
        vec![],
    );
    let p = project_for(&t, "claude-code", &s);
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(0);
    let r = report(&run);
    assert_eq!(
        (r["end"].as_str(), r["parties"].as_u64()),
        (Some("completed"), Some(1)),
        "{}",
        run.describe()
    );
}

/// Puts `hooks` into the frontmatter of the file `rel` of the installed skill.
fn with_hooks(p: &Project, rel: &str, hooks: &str) {
    let path = p
        .root()
        .join(".claude/skills/bmad-create-epics-and-stories")
        .join(rel);
    let text = std::fs::read_to_string(&path).expect("the skill's file");
    let text = match text.strip_prefix("---\n") {
        Some(rest) => format!("---\n{hooks}{rest}"),
        None => format!("---\n{hooks}---\n{text}"),
    };
    std::fs::write(&path, text).expect("write");
}

#[test]
fn tool_hooks_run_around_a_real_write_and_a_steps_hooks_only_at_that_step() {
    let Some(t) = tools() else { return };
    let skill = "bmad-create-epics-and-stories";
    let p = project_for(&t, "claude-code", &Script::new());
    let menus = step_menus(&p);
    epics_workflow(&menus).install(&p);
    let probe = |when: &str| {
        format!(
            "[\"sh\", \"-c\", \"if test -f {EPICS}; then echo {when}: epics.md present; else echo {when}: epics.md absent; fi\"]"
        )
    };
    with_hooks(
        &p,
        "SKILL.md",
        &format!(
            "hooks:\n  PreToolUse:\n    - matcher: \"write_file\"\n      hooks:\n        - command: {}\n  PostToolUse:\n    - matcher: \"write_file\"\n      hooks:\n        - command: {}\n",
            probe("before"),
            probe("after")
        ),
    );
    with_hooks(
        &p,
        "steps/step-02-design-epics.md",
        "hooks:\n  Stop:\n    - hooks:\n        - command: [\"sh\", \"-c\", \"echo step 2 is over\"]\n",
    );
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(0);
    assert_eq!(report(&run)["end"], "completed", "{}", run.describe());
    let log = std::fs::read_to_string(p.root().join(format!(".baton/bmad/{skill}-1/hooks.log")))
        .expect("the hook log");
    // The first write found no epics.md before it and one after it: the hooks ran around it.
    let first_before = log.find("before: epics.md absent").expect(&log);
    let first_after = log.find("after: epics.md present").expect(&log);
    assert!(first_before < first_after, "{log}");
    assert!(log.contains("hook PreToolUse `sh -c"), "{log}");
    // Step 2's Stop hook ran once: when step 2 was recorded completed (turn 3), its stdout kept.
    assert_eq!(log.matches("stdout:\nstep 2 is over").count(), 1, "{log}");
    assert!(log.contains("hook Stop of step 2"), "{log}");

    // A critical Stop hook of step 2 stops the session when step 2 ends, not after turn 1.
    let p = project_for(&t, "claude-code", &Script::new());
    epics_workflow(&menus).install(&p);
    with_hooks(
        &p,
        "steps/step-02-design-epics.md",
        "hooks:\n  Stop:\n    - hooks:\n        - command: [\"false\"]\n          critical: true\n",
    );
    let run = bmad(&p, &t, &["bmad", "run", skill, "--tier", "1", "--json"]).expect_code(1);
    let r = report(&run);
    assert_eq!(
        (r["end"].as_str(), r["turns"].as_u64()),
        (Some("failed"), Some(3)),
        "{}",
        run.describe()
    );
}
