//! Parity with BMad 6.12's own sprint-planning script, run for real: `sprint_plan.py generate`,
//! `validate` and `status` from the pinned npm package `bmad-method`, on messy epics documents
//! (many epics, lettered stories, titles in Devanagari, Bengali and Tamil, symbol-only titles,
//! titles ending in closing `#`s, repeated headings, shards, an Epic 0 written last).
//!
//! `BATON_TEST_BMAD_DIR` names the folder `.ci/run` installs into: `node_modules/bmad-method`
//! (npm prefix) and `python/` (pip target holding `ruamel.yaml`). Without it the tests are skipped
//! with a notice, unless `BATON_TEST_BMAD_REQUIRED=1` (CI), which makes a missing install fail.

use super::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const PLAN_SCRIPT: &str =
    "node_modules/bmad-method/src/bmm-skills/plan/bmad-sprint-planning/scripts/sprint_plan.py";
const RETRO_SCRIPT: &str =
    "node_modules/bmad-method/src/bmm-skills/ship/bmad-retrospective/scripts/sprint_status.py";
const PLANNING: &str = "_bmad-output/planning-artifacts";
const IMPL: &str = "_bmad-output/implementation-artifacts";
const DATE: &str = "11-20-2026 09:00";

/// BMad's scripts as installed by `.ci/run`.
struct Bmad {
    dir: PathBuf,
}

/// The installed scripts, or `None` after a skip notice (a failure when required).
fn bmad() -> Option<Bmad> {
    let dir = std::env::var_os("BATON_TEST_BMAD_DIR").map(PathBuf::from);
    let found = dir.filter(|d| d.join(PLAN_SCRIPT).is_file() && d.join("python/ruamel").is_dir());
    if found.is_none() {
        let msg = "BMad's scripts are not installed under $BATON_TEST_BMAD_DIR; run .ci/run (it installs bmad-method@6.12.0 and ruamel.yaml into target/bmad) and set BATON_TEST_BMAD_DIR=target/bmad";
        assert!(
            std::env::var("BATON_TEST_BMAD_REQUIRED").as_deref() != Ok("1"),
            "BATON_TEST_BMAD_REQUIRED=1 but {msg}"
        );
        eprintln!("SKIPPED: {msg}");
    }
    found.map(|dir| Bmad { dir })
}

impl Bmad {
    fn python(&self) -> Command {
        let mut c = Command::new("python3");
        c.env("PYTHONPATH", self.dir.join("python"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env_remove("PYTHONHOME");
        c
    }

    /// Runs `sprint_plan.py ARGS`; its JSON answer.
    fn plan(&self, args: &[&str]) -> Value {
        let out = self
            .python()
            .arg(self.dir.join(PLAN_SCRIPT))
            .args(args)
            .output()
            .expect("python3 runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "sprint_plan.py {args:?}: {e}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// Runs the retrospective's `sprint_status.py ARGS`; its JSON answer.
    fn retro(&self, args: &[&str]) -> Value {
        let out = self
            .python()
            .arg(self.dir.join(RETRO_SCRIPT))
            .args(args)
            .output()
            .expect("python3 runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "sprint_status.py {args:?}: {e}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// `generate` from `epic_files` into `status_file`, stories looked up in the project's
    /// implementation folder.
    fn generate(&self, root: &Path, epic_files: &[PathBuf], status_file: &Path) -> Value {
        let mut args: Vec<String> = vec!["generate".into()];
        for f in epic_files {
            args.push("--epic-file".into());
            args.push(f.display().to_string());
        }
        for (flag, value) in [
            ("--status-file", status_file.display().to_string()),
            ("--stories-dir", root.join(IMPL).display().to_string()),
            ("--project", "messy".to_owned()),
            ("--date", DATE.to_owned()),
        ] {
            args.push(flag.into());
            args.push(value);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let v = self.plan(&args);
        assert_eq!(v["ok"], true, "generate failed: {v}");
        v
    }

    /// `validate`: the problems BMad finds (empty when valid).
    fn problems(&self, status_file: &Path) -> Vec<String> {
        let v = self.plan(&[
            "validate",
            "--status-file",
            &status_file.display().to_string(),
        ]);
        let problems: Vec<String> = v["problems"]
            .as_array()
            .map(|a| a.iter().map(|p| p.to_string()).collect())
            .unwrap_or_default();
        assert_eq!(v["valid"], problems.is_empty(), "{v}");
        problems
    }

    /// `status`: BMad's recommendation as (skill, story key or retrospective key), `None` when
    /// BMad says all is done.
    fn recommendation(&self, status_file: &Path) -> Option<(String, String)> {
        let v = self.plan(&[
            "status",
            "--status-file",
            &status_file.display().to_string(),
        ]);
        assert_eq!(v["ok"], true, "status failed: {v}");
        let r = &v["recommendation"];
        if r.is_null() {
            return None;
        }
        let skill = s(r, "skill").to_owned();
        let key = match r["story_key"].as_str() {
            Some(k) => k.to_owned(),
            None => {
                // "all stories done — epic-N-retrospective is still open"
                let reason = s(r, "reason");
                reason
                    .split_whitespace()
                    .find(|w| w.ends_with("-retrospective"))
                    .unwrap_or_else(|| panic!("no retrospective in {reason:?}"))
                    .to_owned()
            }
        };
        Some((skill, key))
    }

    /// `development_status` as ordered (key, status) pairs, read by ruamel.yaml as BMad reads it.
    fn entries(&self, status_file: &Path) -> Vec<(String, String)> {
        let code = "import json, sys\nfrom ruamel.yaml import YAML\n\
                    d = YAML(typ='rt').load(open(sys.argv[1], encoding='utf-8'))\n\
                    print(json.dumps([[str(k), str(v)] for k, v in (d.get('development_status') or {}).items()]))";
        let out = self
            .python()
            .args(["-c", code])
            .arg(status_file)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Vec<(String, String)> =
            serde_json::from_slice(&out.stdout).expect("pairs of strings");
        v
    }
}

/// baton's next step in BMad's terms: the skill BMad would name and the key.
fn baton_next(p: &Project) -> Option<(String, String)> {
    let next = p.status_json()["next"].clone();
    let key = next["key"].as_str().map(str::to_owned);
    let skill = match s(&next, "action") {
        "continue-dev" | "start-dev" | "create-story" => "bmad-build",
        "code-review" => "bmad-code-review",
        "retrospective" => "bmad-retrospective",
        "all-done" => return None,
        other => panic!("no BMad counterpart for baton's next action {other}: {next}"),
    };
    Some((
        skill.to_owned(),
        key.unwrap_or_else(|| panic!("no key in {next}")),
    ))
}

/// Sets every `development_status` entry's value in `text` through `f(key, value)`.
fn restatus(text: &str, f: impl Fn(&str, &str) -> Option<&'static str>) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("development_status:") {
            inside = true;
        } else if inside && !line.starts_with(' ') && !line.trim().is_empty() {
            inside = false;
        }
        let body = line.trim_end_matches('\n');
        if inside
            && let Some((k, v)) = body.trim_start().split_once(": ")
            && let Some(new) = f(k, v.split('#').next().unwrap_or_default().trim())
        {
            out.push_str(&format!("  {k}: {new}\n"));
            continue;
        }
        out.push_str(line);
    }
    out
}

/// A messy epics document: many epics (two of them beyond 9, an empty one, an Epic 0 written
/// last), lettered stories, titles in other scripts, symbol-only titles, closing `#`s, headings
/// BMad does not read, a fenced heading, and repeated story headings.
fn messy_epics() -> String {
    let mut t = String::from(
        "# Messy - Epic Breakdown\n\n## Requirements Inventory\n\nFR1: things work\n\n## Epic List\n\n\
         ### Epic 1: Foundation ##\n### Epic 2: OAuth2 and S3 uploads\n\n\
         ## Epic 1: Foundation ##\n\n\
         ### Story 1.1: Set up the repository\n\nAs a dev...\n\n\
         ### Story 1.2: C# interop ###\n### Story 1.2a: Split part\n### Story 1.3: →★←\n\
         ### Story 1.4: ###\n#### Story 1.5 - Dashed title\n###Story 1.6 No space\n\
         ### Story 1.1: Set up the repository\n\n```markdown\n### Story 1.9: fenced, not a story\n```\n\n\
         ## Epic 2: OAuth2 and S3 uploads\n\n\
         ### Story 2.1: हिन्दी पाठ सुविधा\n### Story 2.2: বাংলা রিপোর্ট\n### Story 2.3: தமிழ் மொழி\n\
         ### Story 2.10: Ten after three\n### Story 2.2: বাংলা রিপোর্ট\n### Story 2.4: **Bold** title\n\
         ### Story 2.1: हिन्दी पाठ सुविधा\n\n\
         ## Epic 3: Nothing yet\n\n## Epic Three: not numbered\n\n",
    );
    for e in 4..=12 {
        t.push_str(&format!("## Epic {e}: Area {e} (v{e}.0)\n\n"));
        for st in 1..=3 {
            t.push_str(&format!(
                "### Story {e}.{st}: Feature {e}.{st} — part {st}\n\n"
            ));
        }
        t.push_str(&format!("### Story {e}.3b: Feature {e}.3, the rest\n\n"));
    }
    t.push_str("## Epic 0: Groundwork, written last\n\n### Story 0.1: Préparer l'équipe\n");
    t
}

fn project_with(epics_rel: &str, text: &str) -> Project {
    let p = Project::empty();
    p.write(&format!("{PLANNING}/{epics_rel}"), text);
    p.write(&format!("{IMPL}/.keep"), "");
    p
}

#[test]
fn sprint_plan_and_bmad_generate_agree_on_keys_order_and_statuses() {
    let Some(bmad) = bmad() else { return };
    let p = project_with("epics.md", &messy_epics());
    // A story file on disk floors its story at ready-for-dev in both.
    p.write(
        &format!("{IMPL}/1-2a-split-part.md"),
        "# Story 1.2a: Split part\n\nStatus: ready-for-dev\n",
    );
    let report = parse_json(&p.ok(&["sprint-plan", "--json"]));
    let theirs = p.root().join("bmad-sprint-status.yaml");
    let generated = bmad.generate(
        p.root(),
        &[p.root().join(PLANNING).join("epics.md")],
        &theirs,
    );
    let ours = bmad.entries(&p.sprint_path());
    assert_eq!(
        ours,
        bmad.entries(&theirs),
        "baton's plan differs from BMad's generate"
    );
    assert_eq!(ours.first().map(|(k, _)| k.as_str()), Some("epic-0"));
    // BMad warns about the repeats and the heading it cannot read; baton says the same.
    let warnings = generated["warnings"].to_string();
    assert!(warnings.contains("duplicate story heading"), "{warnings}");
    let ours_warned = report["warnings"].to_string();
    assert_eq!(ours_warned.matches("written twice").count(), 3, "{report}");
    assert!(ours_warned.contains("Epic Three"), "{report}");
    assert_eq!(bmad.problems(&p.sprint_path()), Vec::<String>::new());
    // baton's own validation accepts what it wrote.
    p.ok(&["status", "--validate"]);
}

#[test]
fn sharded_epics_plan_like_bmad_with_the_list_file_first() {
    let Some(bmad) = bmad() else { return };
    let p = project_with(
        "epics/index.md",
        "# Epics\n\n- [Epic List](./epic-list.md)\n- [Epic 1: Setup](./epic-1-setup.md)\n\
         - [Epic 2: OAuth2 and S3](./epic-2-oauth2-and-s3.md)\n- [Epic 10](./epic-10-late.md)\n\
         - [Epic 3](./epic-3-export.md)\n- [Epic 0](./epic-0-groundwork.md)\n",
    );
    let shards = [
        (
            "epic-list.md",
            "# Epic List\n\n## Epic 1: Setup\n## Epic 2: OAuth2 and S3\n## Epic 3: Export\n",
        ),
        (
            "epic-1-setup.md",
            "# Epic 1: Setup\n\n## Story 1.1: Init\n## Story 1.2: CI for v2 ##\n",
        ),
        (
            "epic-2-oauth2-and-s3.md",
            "# Epic 2: OAuth2 and S3\n\n## Story 2.1: OAuth2 flow\n### Story 2.1a: S3 bucket\n",
        ),
        (
            "epic-10-late.md",
            "# Epic 10: Late\n\n## Story 10.1: তারপর\n",
        ),
        (
            "epic-3-export.md",
            "# Epic 3: Export\n\n## Story 3.1: ★\n## Story 3.2: CSV\n",
        ),
        (
            "epic-0-groundwork.md",
            "# Epic 0: Groundwork\n\n## Story 0.1: Prep\n",
        ),
    ];
    let mut files = vec![p.root().join(PLANNING).join("epics/index.md")];
    for (name, text) in shards {
        p.write(&format!("{PLANNING}/epics/{name}"), text);
        files.push(p.root().join(PLANNING).join("epics").join(name));
    }
    p.ok(&["sprint-plan"]);
    let theirs = p.root().join("bmad-sprint-status.yaml");
    bmad.generate(p.root(), &files, &theirs);
    let ours = bmad.entries(&p.sprint_path());
    assert_eq!(ours, bmad.entries(&theirs));
    let epics: Vec<&str> = ours
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| k.starts_with("epic-") && !k.ends_with("retrospective"))
        .collect();
    assert_eq!(epics, ["epic-0", "epic-1", "epic-2", "epic-3", "epic-10"]);
    assert_eq!(bmad.problems(&p.sprint_path()), Vec::<String>::new());
    // `baton check` places each epic in its own shard, not in the list file.
    let check = p.run(&["check", "--json"]);
    assert!(
        !check.stdout.contains("epic-list.md:"),
        "{}",
        check.describe()
    );
}

#[test]
fn a_merge_follows_the_epics_order_as_bmad_does_and_validates() {
    let Some(bmad) = bmad() else { return };
    let first = "## Epic 1: One\n### Story 1.1: A\n### Story 1.3: C\n\n## Epic 3: Three\n### Story 3.1: X\n";
    let p = project_with("epics.md", first);
    p.ok(&["sprint-plan"]);
    let text = restatus(&p.read_sprint(), |k, _| match k {
        "epic-1" => Some("in-progress"),
        "1-1-a" => Some("done"),
        "1-3-c" => Some("review"),
        _ => None,
    });
    p.write(SPRINT_REL, &text);
    let before = p.root().join("bmad-sprint-status.yaml");
    std::fs::write(&before, &text).expect("copy");
    // A story in the middle, a lettered one, a new last story, and a new epic between 1 and 3.
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: One\n### Story 1.1: A\n### Story 1.2: B\n### Story 1.2a: B2\n### Story 1.3: C\n### Story 1.4: D\n\n\
         ## Epic 2: Two\n### Story 2.1: Y\n\n## Epic 3: Three\n### Story 3.1: X\n",
    );
    p.ok(&["sprint-plan"]);
    bmad.generate(
        p.root(),
        &[p.root().join(PLANNING).join("epics.md")],
        &before,
    );
    assert_eq!(bmad.entries(&p.sprint_path()), bmad.entries(&before));
    assert_eq!(bmad.problems(&p.sprint_path()), Vec::<String>::new());
    // The next step agrees: the story in review.
    assert_eq!(baton_next(&p), bmad.recommendation(&p.sprint_path()));
}

#[test]
fn bmads_status_and_batons_next_step_agree() {
    let Some(bmad) = bmad() else { return };
    let p = project_with("epics.md", &messy_epics());
    p.ok(&["sprint-plan"]);
    let planned = p.read_sprint();
    type Pick = fn(&str, &str) -> Option<&'static str>;
    let cases: Vec<(&str, Pick)> = vec![
        ("fresh: the first backlog story by number", |_, _| None),
        ("a ready story beats backlog", |k, _| {
            (k == "5-3b-feature-5-3-the-rest").then_some("ready-for-dev")
        }),
        ("review beats ready", |k, _| match k {
            "5-3b-feature-5-3-the-rest" => Some("ready-for-dev"),
            "12-1-feature-12-1-part-1" => Some("review"),
            _ => None,
        }),
        (
            "in-progress beats review; the lettered story sorts after its number",
            |k, _| match k {
                "1-2a-split-part" | "1-3-8b2abc1b" => Some("in-progress"),
                "2-1-ह-न-द-प-ठ-स-व-ध" => Some("review"),
                _ => None,
            },
        ),
        ("all done: the lowest open retrospective", |k, _| {
            (!k.starts_with("epic-")).then_some("done")
        }),
        ("all done but an empty epic's retrospective", |k, _| {
            if k == "epic-3-retrospective" {
                None
            } else if k.ends_with("-retrospective") || !k.starts_with("epic-") {
                Some("done")
            } else {
                None
            }
        }),
        ("everything done", |k, _| {
            (k.ends_with("-retrospective") || !k.starts_with("epic-")).then_some("done")
        }),
    ];
    for (what, pick) in cases {
        p.write(SPRINT_REL, &restatus(&planned, pick));
        assert_eq!(
            baton_next(&p),
            bmad.recommendation(&p.sprint_path()),
            "{what}"
        );
    }
}

#[test]
fn baton_init_on_planned_epics_writes_a_file_bmad_validates() {
    let Some(bmad) = bmad() else { return };
    for name in ["tally", "null", "#x", "app: two", "@acme", "2026", "it's"] {
        let parent = tempfile::tempdir().expect("a temp dir");
        let root = parent.path().join(name);
        std::fs::create_dir_all(&root).expect("mkdir");
        // With epics: the sprint file is planned from them.
        std::fs::create_dir_all(root.join(PLANNING)).expect("mkdir");
        std::fs::write(
            root.join(PLANNING).join("epics.md"),
            "## Epic 1: A\n### Story 1.1: B\n",
        )
        .expect("write");
        run_in(&root, &["init"]).expect_code(0);
        let sprint = root.join(SPRINT_REL);
        assert_eq!(bmad.problems(&sprint), Vec::<String>::new(), "{name}");
        run_in(&root, &["sprint-plan"]).expect_code(0);
        assert_eq!(
            bmad.problems(&sprint),
            Vec::<String>::new(),
            "{name} after sprint-plan"
        );
    }
}

#[test]
fn a_story_parked_by_baton_stays_parked_after_bmads_generate_drops_the_marker() {
    let Some(bmad) = bmad() else { return };
    let p = project_with(
        "epics.md",
        "## Epic 1: A\n### Story 1.1: One\n### Story 1.2: Two\n",
    );
    p.ok(&["sprint-plan"]);
    p.write(
        SPRINT_REL,
        &restatus(&p.read_sprint(), |k, _| match k {
            "epic-1" | "1-1-one" => Some("in-progress"),
            _ => None,
        }),
    );
    p.ok(&["set", "1-1-one", "needs-intervention"]);
    assert!(p.read_sprint().contains("# baton: needs-intervention"));
    bmad.generate(
        p.root(),
        &[p.root().join(PLANNING).join("epics.md")],
        &p.sprint_path(),
    );
    let refreshed = p.read_sprint();
    assert!(
        !refreshed.contains("# baton:"),
        "BMad kept the marker?\n{refreshed}"
    );
    assert!(refreshed.contains("1-1-one: in-progress"), "{refreshed}");
    // BMad would resume the story; baton knows it waits for a human and says so.
    let board = p.status_json();
    assert_eq!(board["blocked"][0]["key"], "1-1-one", "{board}");
    assert_eq!(board["next"]["key"], "1-2-two", "{board}");
    assert_eq!(bmad.problems(&p.sprint_path()), Vec::<String>::new());
}

#[test]
fn bmads_retrospective_script_reads_and_updates_what_baton_wrote() {
    let Some(bmad) = bmad() else { return };
    let p = project_with(
        "epics.md",
        "## Epic 1: A\n### Story 1.1: One\n### Story 1.2a: Two\n\n## Epic 2: B\n### Story 2.1: Three\n",
    );
    p.ok(&["sprint-plan"]);
    p.write(
        SPRINT_REL,
        &restatus(&p.read_sprint(), |k, _| match k {
            "epic-1" => Some("in-progress"),
            "1-1-one" | "1-2a-two" => Some("done"),
            _ => None,
        }),
    );
    p.ok(&["set", "2-1-three", "ready-for-dev"]);
    let file = p.sprint_path().display().to_string();
    // BMad's retrospective picks epic 1, whose stories are all done.
    let detected = bmad.retro(&["detect-epic", "--file", &file]);
    assert_eq!(detected["epic"], 1, "{detected}");
    assert_eq!(
        detected["pending_stories"],
        serde_json::json!([]),
        "{detected}"
    );
    assert_eq!(detected["retro_status"], "optional", "{detected}");
    let updated = bmad.retro(&[
        "update",
        "--file",
        &file,
        "--epic",
        "1",
        "--set-retro-done",
        "--add-action",
        r#"[{"action": "Keep stories small", "owner": "scrum-master"}]"#,
        "--date",
        DATE,
    ]);
    assert_eq!(updated["ok"], true, "{updated}");
    // baton reads BMad's update, and BMad's validate still accepts the file.
    p.ok(&["status", "--validate"]);
    let board = p.status_json();
    let statuses = statuses_of(&board);
    assert_eq!(statuses["epic-1-retrospective"], "done", "{board}");
    assert_eq!(board["next"]["key"], "2-1-three", "{board}");
    assert_eq!(bmad.problems(&p.sprint_path()), Vec::<String>::new());
    assert_eq!(baton_next(&p), bmad.recommendation(&p.sprint_path()));
}

#[test]
fn a_memlog_written_by_bmads_own_script_becomes_memories() {
    let Some(bmad) = bmad() else { return };
    let p = Project::empty();
    super::sprint::baton(&p, &["trust"]).expect_code(0);
    let memlog = p.root().join("_bmad-output/brainstorming/.memlog.md");
    let script = bmad
        .dir
        .join("node_modules/bmad-method/src/scripts/memlog.py");
    let run = |args: &[&str]| {
        let out = bmad
            .python()
            .arg(&script)
            .args(args)
            .arg("--path")
            .arg(&memlog)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "memlog.py {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "init",
        "--field",
        "topic=Onboarding --- for a budgeting app",
    ]);
    let entries: [(&str, Option<&str>, &str); 6] = [
        ("note", None, "user picked techniques: SCAMPER"),
        ("idea", Some("user"), "skip the signup wall"),
        (
            "insight",
            None,
            "real numbers (pre-categorized) calm people",
        ),
        (
            "decision",
            Some("user"),
            "lead with one account;\n defer multi-account import",
        ),
        ("direction", None, "optimize for the anxious first-timer"),
        ("event", None, "session complete"),
    ];
    for (kind, by, text) in entries {
        let mut args = vec!["append", "--text", text, "--type", kind];
        if let Some(by) = by {
            args.extend(["--by", by]);
        }
        run(&args);
    }
    let imported = super::sprint::baton(
        &p,
        &["memory", "import", "_bmad-output/brainstorming/.memlog.md"],
    )
    .expect_code(0);
    assert!(
        imported.stdout.contains("6 entries read: 3 new memories"),
        "{}",
        imported.stdout
    );
    let listed = super::sprint::baton(&p, &["memory", "list", "--json"]).expect_code(0);
    let listed: Value = serde_json::from_str(&listed.stdout).expect("JSON");
    let mut got: Vec<(String, String, String)> = listed
        .as_array()
        .expect("array")
        .iter()
        .map(|m| {
            (
                m["kind"].as_str().unwrap_or_default().to_owned(),
                m["text"].as_str().unwrap_or_default().to_owned(),
                m["unit"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    got.sort();
    let b = "brainstorming".to_owned();
    assert_eq!(
        got,
        vec![
            (
                "decision".into(),
                "lead with one account; defer multi-account import".into(),
                b.clone()
            ),
            (
                "decision".into(),
                "optimize for the anxious first-timer".into(),
                b.clone()
            ),
            (
                "pattern".into(),
                "real numbers (pre-categorized) calm people".into(),
                b
            ),
        ]
    );
    // baton never writes the memlog: it is BMad's script's file.
    let text = std::fs::read_to_string(&memlog).expect("memlog");
    assert_eq!(text.matches("\n- ").count(), 6, "{text}");
}

/// Every markdown file of BMad's installed package, relative to it, sorted.
fn markdown_files(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            markdown_files(&path, root, out);
        } else if path.extension().is_some_and(|x| x == "md") {
            out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
}

#[test]
fn the_menu_detector_over_every_markdown_file_of_bmads_skills_is_pinned() {
    use baton_core::autopilot::menu::detect;
    let Some(bmad) = bmad() else { return };
    let root = bmad.dir.join("node_modules/bmad-method/src");
    let mut files = Vec::new();
    markdown_files(&root, &root, &mut files);
    files.sort();
    assert!(files.len() > 100, "{} markdown files", files.len());
    let mut report = String::new();
    let mut whole_hits = 0;
    for rel in &files {
        let text = std::fs::read_to_string(root.join(rel)).unwrap_or_default();
        // A skill's file documents menus (in instructions, fences and examples); read whole,
        // it is not one.
        let whole = detect(&text);
        if whole.is_menu() {
            whole_hits += 1;
            report.push_str(&format!("WHOLE FILE {} {}\n", rel.display(), whole.score));
        }
        // What a skill tells the agent to display is what the agent's turn will end with: a
        // `Display:` line, or a step file's menu line shown as it is
        // (`**All validations complete!** [C] Complete Workflow`).
        let step_file = rel.components().any(|c| c.as_os_str() == "steps");
        for line in text.lines() {
            let t = line.trim();
            let shown = match t.strip_prefix("Display:") {
                Some(shown) => shown,
                None if step_file
                    && t.contains("[C]")
                    && !t.starts_with(['-', '#', '|', '>', '*'])
                    || step_file && t.starts_with("**") && t.contains("[C]") =>
                {
                    t
                }
                None => continue,
            };
            let shown = shown.trim().trim_matches(['"', '`']);
            if shown.is_empty() {
                continue;
            }
            let d = detect(shown);
            report.push_str(&format!(
                "{} {:>3} {} | {}\n",
                if d.is_menu() { "MENU" } else { "----" },
                d.score,
                rel.display(),
                shown
            ));
        }
    }
    assert_eq!(whole_hits, 0, "{report}");
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("bmad_skill_menus", report));
}

#[test]
fn every_headless_status_example_in_bmads_skills_is_read() {
    use baton_core::autopilot::headless::{RunStatus, parse};
    let Some(bmad) = bmad() else { return };
    let root = bmad.dir.join("node_modules/bmad-method/src");
    let mut files = Vec::new();
    markdown_files(&root, &root, &mut files);
    files.sort();
    let mut read = Vec::new();
    for rel in &files {
        let text = std::fs::read_to_string(root.join(rel)).unwrap_or_default();
        // Each fenced JSON example with a `status` of a run.
        for block in text.split("```json").skip(1) {
            let Some((body, _)) = block.split_once("```") else {
                continue;
            };
            let Ok(serde_json::Value::Object(o)) = serde_json::from_str::<Value>(body) else {
                continue;
            };
            let Some(status) = o.get("status").and_then(Value::as_str) else {
                continue;
            };
            if !["complete", "partial", "blocked"].contains(&status) {
                continue;
            }
            let s = parse(body).unwrap_or_else(|e| panic!("{}: {e}\n{body}", rel.display()));
            let want = match status {
                "complete" => RunStatus::Complete,
                "partial" => RunStatus::Partial,
                _ => RunStatus::Blocked,
            };
            assert_eq!(s.status, want, "{}", rel.display());
            read.push(format!("{} {status}", rel.display()));
        }
    }
    // The headless skills' schemas are among them.
    for skill in ["bmad-prd", "bmad-ux"] {
        assert!(
            read.iter().any(|r| r.contains(skill)),
            "no status example of {skill}: {read:#?}"
        );
    }
    assert!(read.iter().any(|r| r.ends_with("blocked")), "{read:#?}");
}

#[test]
fn skills_installed_by_bmads_own_installer_are_found() {
    use baton_store::bmad_skills::{find, list};
    let Some(bmad) = bmad() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    install_bmad(&bmad.dir.join("node_modules/.bin/bmad-method"), dir.path());
    let all = list(dir.path()).expect("the manifest reads");
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    for want in [
        "bmad-prd",
        "bmad-party-mode",
        "bmad-retrospective",
        "bmad-ux",
        "bmad-spec",
    ] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    let prd = find(dir.path(), "bmad-prd").expect("bmad-prd");
    assert!(prd.instructions.is_file());
    assert_eq!(prd.module, "bmm");
    assert!(prd.headless.is_some(), "bmad-prd has a headless mode");
    let party = find(dir.path(), "bmad-party-mode").expect("bmad-party-mode");
    assert!(party.headless.is_none());
    // Every skill with a headless mode, as installed.
    let headless: Vec<&str> = all
        .iter()
        .filter(|s| s.headless.is_some())
        .map(|s| s.name.as_str())
        .collect();
    for want in ["bmad-prd", "bmad-ux", "bmad-spec", "bmad-brainstorming"] {
        assert!(headless.contains(&want), "{want} not in {headless:?}");
    }
    let err = find(dir.path(), "bmad-nope").unwrap_err().to_string();
    assert!(err.contains("installed: bmad-"), "{err}");
}

/// Installs BMad's `bmm` module for Claude Code into `dir` with BMad's own `installer`.
pub(super) fn install_bmad(installer: &Path, dir: &Path) {
    let out = Command::new(installer)
        .args(["install", "--directory"])
        .arg(dir)
        .args(["--modules", "bmm", "--tools", "claude-code", "--yes"])
        .current_dir(dir)
        .output()
        .expect("BMad's installer runs");
    assert!(
        out.status.success(),
        "bmad-method install: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A plan made in phases, as create-epics writes it when run again: `epics.md` (phase 1, with
/// its coverage written as ranges), `epics-next.md` (phase 2, numbering its own Epic 28 and
/// claiming its requirements as a range), and `epics-cli-ux`, kept whole and sharded, the two
/// versions differing (one of them superseded).
fn phased_plan(p: &Project) {
    let criteria = "\n**Given** a file\n**When** it runs\n**Then** it works\n\n";
    let story = |n: &str, title: &str| format!("### Story {n}: {title}\n{criteria}");
    let mut prd = String::from("# PRD\n\n## Functional Requirements\n\n");
    for n in 1..=21 {
        prd.push_str(&format!("- FR{n}: requirement {n}\n"));
    }
    prd.push_str("\n## Non-Functional Requirements\n\n- NFR1: fast\n- NFR2: small\n");
    p.write(&format!("{PLANNING}/prd.md"), &prd);
    p.write(
        &format!("{PLANNING}/epics.md"),
        &format!(
            "---\nstepsCompleted: [1, 2, 3, 4]\n---\n# Tally - Epic Breakdown\n\n\
             ## Requirements Inventory\n\n### Functional Requirements\n\n\
             FR1-FR15: Section Detection — COMPLETE\nFR16\u{2013}FR18: Export — COMPLETE\n\n\
             ### NonFunctional Requirements\n\nNFR1-NFR2: Performance — COMPLETE\n\n\
             ## Epic 1: Section detection\n\n{}{}## Epic 2: Export\n\n{}\
             ## Epic 28: Legacy import\n\n{}{}{}",
            story("1.1", "Detect headings"),
            story("1.2", "Detect lists"),
            story("2.1", "Export CSV"),
            story("28.1", "Read old files"),
            story("28.2", "Map old fields"),
            story("28.3", "Report import errors"),
        ),
    );
    p.write(
        &format!("{PLANNING}/epics-next.md"),
        &format!(
            "# Tally Next - Epic Breakdown\n\n## Epic 28: Cloud sync\n\n**FRs covered:** FR19-FR20 (all)\n\n\
             {}{}{}{}## Epic 29: Sharing\n\n**FRs covered:** FR21\n\n{}",
            story("28.1", "Sync daemon"),
            story("28.2", "Conflict detection"),
            story("28.3", "Offline queue"),
            story("28.4", "Conflict resolution"),
            story("29.1", "Share links"),
        ),
    );
    p.write(
        &format!("{PLANNING}/epics-cli-ux.md"),
        &format!(
            "# CLI UX\n\n## Epic 30: CLI ergonomics\n\n{}{}",
            story("30.1", "Colored output"),
            story("30.2", "Progress bars"),
        ),
    );
    p.write(
        &format!("{PLANNING}/epics-cli-ux/index.md"),
        "# CLI UX\n\n- [Epic 30](./epic-30-cli-ergonomics.md)\n",
    );
    p.write(
        &format!("{PLANNING}/epics-cli-ux/epic-30-cli-ergonomics.md"),
        &format!(
            "# Epic 30: CLI ergonomics\n\n{}{}{}",
            story("30.1", "Colored output"),
            story("30.2", "Progress bars and spinners"),
            story("30.3", "Shell completions"),
        ),
    );
}

#[test]
fn several_epics_documents_plan_as_bmads_generate_plans_them_and_a_twin_is_asked_about() {
    let Some(bmad) = bmad() else { return };
    for (version, cli_ux) in [
        ("whole", vec!["epics-cli-ux.md"]),
        (
            "sharded",
            vec![
                "epics-cli-ux/index.md",
                "epics-cli-ux/epic-30-cli-ergonomics.md",
            ],
        ),
    ] {
        let p = project_with(
            "epics.md",
            "## Epic 1: Section detection\n### Story 1.1: Detect headings\n### Story 1.2: Detect lists\n\n\
             ## Epic 2: Export\n### Story 2.1: Export CSV\n\n## Epic 28: Legacy import\n\
             ### Story 28.1: Read old files\n### Story 28.2: Map old fields\n### Story 28.3: Report import errors\n",
        );
        // Phase 1 was planned and built; a story of an older plan is still in the file, done.
        p.ok(&["sprint-plan"]);
        let built = restatus(&p.read_sprint(), |k, _| match k {
            "epic-1" | "1-1-detect-headings" | "1-2-detect-lists" | "epic-28" => Some("done"),
            "28-1-read-old-files" | "28-2-map-old-fields" | "28-3-report-import-errors" => {
                Some("done")
            }
            "epic-2" => Some("in-progress"),
            "2-1-export-csv" => Some("review"),
            _ => None,
        })
        .replace(
            "  28-3-report-import-errors: done\n",
            "  28-3-report-import-errors: done\n  28-4-legacy-export: done\n",
        );
        p.write(SPRINT_REL, &built);
        phased_plan(&p);
        p.write(
            &format!("{IMPL}/29-1-share-links.md"),
            "# Story 29.1: Share links\n\nStatus: ready-for-dev\n",
        );

        // Whole and sharded versions of one document: asked, nothing written.
        for command in ["sprint-plan", "check"] {
            let asked = p.run(&[command]);
            assert_ne!(asked.code, Some(0), "{}", asked.describe());
            let choose = format!(
                "Say which: `baton {command} --epics whole` or `baton {command} --epics sharded`"
            );
            for said in ["epics-cli-ux.md", "epics-cli-ux/index.md", choose.as_str()] {
                assert!(
                    asked.stderr.contains(said),
                    "{command}: {}",
                    asked.describe()
                );
            }
        }
        assert_eq!(p.read_sprint(), built, "asking wrote nothing");

        let before = p.root().join("bmad-sprint-status.yaml");
        std::fs::write(&before, &built).expect("copy");
        let report = parse_json(&p.ok(&["sprint-plan", "--epics", version, "--json"]));
        let mut names = vec!["epics.md"];
        names.extend(cli_ux.iter().copied());
        names.push("epics-next.md");
        let files: Vec<PathBuf> = names
            .iter()
            .map(|n| p.root().join(PLANNING).join(n))
            .collect();
        let theirs = bmad.generate(p.root(), &files, &before);

        // The same keys, order and statuses, but for the story no plan names any more, which
        // baton keeps (and reports) where BMad drops it (and reports it).
        let ours: Vec<(String, String)> = bmad
            .entries(&p.sprint_path())
            .into_iter()
            .filter(|(k, _)| k != "28-4-legacy-export")
            .collect();
        assert_eq!(
            ours,
            bmad.entries(&before),
            "{version}: baton's plan differs from BMad's"
        );
        assert_eq!(
            report["orphans"],
            serde_json::json!([["28-4-legacy-export", "done"]]),
            "{report}"
        );
        assert_eq!(
            theirs["dropped_orphans"],
            serde_json::json!([{"key": "28-4-legacy-export", "status": "done"}]),
            "{theirs}"
        );
        // No finished story is taken for a story of the other plan: the later plan's 28.x are
        // new, in both.
        assert!(report.get("renamed").is_none(), "{report}");
        let added: Vec<&str> = report["added"]
            .as_array()
            .expect("added")
            .iter()
            .filter_map(|a| a[0].as_str())
            .collect();
        let mut theirs_new: Vec<&str> = theirs["new_entries"]
            .as_array()
            .expect("new entries")
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        let mut ours_new = added.clone();
        ours_new.sort_unstable();
        theirs_new.sort_unstable();
        assert_eq!(ours_new, theirs_new);
        assert!(added.contains(&"28-4-conflict-resolution"), "{added:?}");
        let statuses = p.statuses();
        assert_eq!(statuses["28-1-read-old-files"], "done");
        assert_eq!(statuses["28-1-sync-daemon"], "backlog");
        assert_eq!(statuses["29-1-share-links"], "ready-for-dev");
        let ux: Vec<&String> = statuses.keys().filter(|k| k.starts_with("30-")).collect();
        assert_eq!(ux.len(), if version == "whole" { 2 } else { 3 }, "{ux:?}");
        assert_eq!(
            report["documents"],
            serde_json::json!([
                "_bmad-output/planning-artifacts/epics.md",
                if version == "whole" {
                    "_bmad-output/planning-artifacts/epics-cli-ux.md"
                } else {
                    "_bmad-output/planning-artifacts/epics-cli-ux/"
                },
                "_bmad-output/planning-artifacts/epics-next.md"
            ]),
            "{report}"
        );
        assert_eq!(bmad.problems(&p.sprint_path()), Vec::<String>::new());
        assert_eq!(baton_next(&p), bmad.recommendation(&before));

        // The check reads the same documents, and coverage written as ranges is coverage.
        let check = p.run(&["check", "--epics", version, "--json"]);
        let found = parse_json(&check);
        assert_eq!(found["epics_documents"], report["documents"], "{found}");
        let findings = found["findings"].to_string();
        assert!(!findings.contains("is covered by no story"), "{findings}");
        assert_eq!(found["high"], 0, "{found:#}");
        // Every planned story is one the check sees.
        assert!(!findings.contains("no stories"), "{findings}");
    }
}
