//! `baton init`: what it creates, idempotence (byte-identical second run), greenfield/brownfield
//! detection and its signals, `--json`, and strict `baton.toml` (unknown keys name their line).

use super::common::{Project, SPRINT_REL, parse_json, snapshot, sprint};
use serde_json::Value;

#[test]
fn init_on_an_empty_dir_creates_config_and_state_and_no_sprint_file_without_epics() {
    let p = Project::empty();
    let out = p.ok(&["init"]);
    assert!(p.root().join("baton.toml").is_file(), "{}", out.describe());
    assert!(p.root().join(".baton").is_dir());
    for created in ["baton.toml", ".baton/"] {
        assert!(
            out.stdout.contains(&format!("created  {created}")),
            "reports creating `{created}`\n{}",
            out.describe()
        );
    }
    assert!(out.stdout.contains("greenfield"), "{}", out.describe());
    assert!(!out.stdout.contains("brownfield"), "{}", out.describe());
    // A sprint file without stories is one BMad's validate rejects: none is written until there
    // are epics, and `init` says how one will come.
    assert!(!p.sprint_path().exists());
    assert!(
        out.stdout.contains("no sprint file found") && out.stdout.contains("baton sprint-plan"),
        "{}",
        out.describe()
    );
    // Once there are epics, `init` plans the sprint from them.
    p.write(
        "_bmad-output/planning-artifacts/epics.md",
        "# Epics\n\n## Epic 1: Counting\n\n### Story 1.1: Count words\n\nAs a user, I count.\n",
    );
    let again = p.ok(&["init"]);
    assert!(p.sprint_path().is_file(), "{}", again.describe());
    let name = p.root().file_name().unwrap().to_string_lossy().into_owned();
    let status = p.status_json();
    assert_eq!(status["project"], Value::String(name));
    assert_eq!(status["valid"], true);
    p.ok(&["status", "--validate"]);
    // The commented template parses to the defaults: the sprint file is where BMad puts it.
    assert_eq!(status["file"], p.sprint_path().display().to_string());
}

#[test]
fn init_twice_changes_nothing() {
    let p = Project::empty();
    p.ok(&["init"]);
    let before = snapshot(p.root());
    assert!(
        before.keys().any(|k| k.starts_with(".baton")),
        "the journal exists: {:?}",
        before.keys()
    );
    let out = p.ok(&["init"]);
    let after = snapshot(p.root());
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "`{}` changed", path.display());
    }
    assert!(out.stdout.contains("nothing changed"), "{}", out.describe());
    assert!(!out.stdout.contains("created"), "{}", out.describe());
    let v = parse_json(&p.ok(&["init", "--json"]));
    assert_eq!(v["created"], Value::Array(vec![]));
    assert_eq!(v["kept"].as_array().map(Vec::len), Some(2), "{v}");
}

#[test]
fn init_keeps_an_existing_sprint_file_byte_for_byte() {
    let text = sprint("  epic-1: backlog   # mine\n  1-1-a: backlog\n");
    let p = Project::with_sprint(&text);
    let out = p.ok(&["init"]);
    assert_eq!(p.read_sprint(), text);
    assert!(
        out.stdout.contains(&format!("kept     {SPRINT_REL}")),
        "{}",
        out.describe()
    );
}

/// Runs `init --json` and returns `(kind, signals)`, checking the text output agrees.
fn detect(p: &Project) -> (String, Vec<String>) {
    let v = parse_json(&p.ok(&["init", "--json"]));
    let kind = v["kind"].as_str().expect("kind").to_owned();
    let signals: Vec<String> = v["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .map(|s| s.as_str().expect("a signal").to_owned())
        .collect();
    let text = p.ok(&["init"]);
    assert!(
        text.stdout.contains(&format!("project: {kind}")),
        "{}",
        text.describe()
    );
    for s in &signals {
        assert!(
            text.stdout.contains(s.as_str()),
            "signal `{s}` printed\n{}",
            text.describe()
        );
    }
    (kind, signals)
}

#[test]
fn a_src_dir_makes_a_brownfield() {
    let p = Project::empty();
    std::fs::create_dir(p.root().join("src")).unwrap();
    let (kind, signals) = detect(&p);
    assert_eq!(kind, "brownfield");
    assert_eq!(signals, ["directory `src/` exists"]);
}

#[test]
fn a_manifest_makes_a_brownfield() {
    let p = Project::empty();
    p.write("package.json", "{}\n");
    let (kind, signals) = detect(&p);
    assert_eq!(kind, "brownfield");
    assert_eq!(signals, ["`package.json` exists"]);
}

#[test]
fn more_than_ten_source_files_make_a_brownfield() {
    let p = Project::empty();
    for i in 0..11 {
        p.write(&format!("tools/scripts/s{i}.py"), "print(1)\n");
    }
    let (kind, signals) = detect(&p);
    assert_eq!(kind, "brownfield");
    assert_eq!(signals, ["more than 10 source files"]);
}

#[test]
fn a_project_where_bmad_was_just_installed_stays_greenfield() {
    let p = Project::empty();
    // What `npx bmad-method install --tools claude-code` writes: its scripts are BMad's, not the
    // project's source.
    for i in 0..6 {
        p.write(
            &format!(".claude/skills/bmad-skill-{i}/scripts/tool.py"),
            "print(1)\n",
        );
        p.write(&format!("_bmad/scripts/s{i}.py"), "print(1)\n");
        p.write(&format!(".agents/skills/bmad-{i}/run.sh"), "true\n");
    }
    let (kind, signals) = detect(&p);
    assert_eq!(kind, "greenfield", "{signals:?}");
}

#[test]
fn ten_source_files_or_vendored_ones_stay_greenfield() {
    let p = Project::empty();
    for i in 0..10 {
        p.write(&format!("tools/s{i}.py"), "print(1)\n");
    }
    for i in 0..20 {
        p.write(&format!("node_modules/x/m{i}.js"), "1\n");
    }
    let (kind, signals) = detect(&p);
    assert_eq!(kind, "greenfield");
    assert!(signals.is_empty(), "{signals:?}");
}

#[test]
fn init_json_reports_kind_signals_and_what_it_created() {
    let p = Project::empty();
    p.write("go.mod", "module x\n");
    std::fs::create_dir(p.root().join("lib")).unwrap();
    let v = parse_json(&p.ok(&["init", "--json"]));
    assert_eq!(v["kind"], "brownfield");
    assert_eq!(
        v["signals"],
        serde_json::json!(["directory `lib/` exists", "`go.mod` exists"])
    );
    assert_eq!(v["created"], serde_json::json!(["baton.toml", ".baton/"]));
    assert_eq!(v["root"], p.root().display().to_string());
}

#[test]
fn an_unknown_key_in_baton_toml_fails_every_command_with_its_line() {
    let p = Project::with_sprint(&sprint("  epic-1: backlog\n  1-1-a: backlog\n"));
    p.write(
        "baton.toml",
        "# mine\n[sprint]\nauto_epic_done = true\n\n[paths]\nstoriez = \"x\"\n",
    );
    let before = snapshot(p.root());
    for args in [
        &["init"][..],
        &["status"],
        &["status", "--json"],
        &["status", "--validate"],
        &["set", "1-1-a", "ready-for-dev"],
        &["log"],
    ] {
        let out = p.run(args).expect_code(1);
        assert!(out.stderr.contains("baton.toml:6"), "{}", out.describe());
        assert!(out.stderr.contains("storiez"), "{}", out.describe());
    }
    assert_eq!(snapshot(p.root()), before, "nothing was written");
}

#[test]
fn the_project_flag_works_after_the_command_and_must_exist() {
    let p = Project::with_sprint(&sprint("  epic-1: backlog\n"));
    let missing = p.root().join("nowhere");
    let out = super::common::run_in(&missing, &["status"]).expect_code(1);
    assert!(
        out.stderr.contains(&missing.display().to_string()),
        "{}",
        out.describe()
    );
    // `-C` after the subcommand is the same flag.
    let out = std::process::Command::new(super::common::BATON)
        .args(["status", "--json", "-C"])
        .arg(p.root())
        .current_dir(std::env::temp_dir())
        .env_remove("BATON_PROJECT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["file"], p.sprint_path().display().to_string());
}

#[test]
fn a_project_named_like_yaml_syntax_gets_a_sprint_file_that_reads_back() {
    let p = Project::empty();
    for name in ["null", "#x", "app: two", "@acme", "2024"] {
        let root = p.root().join(name);
        std::fs::create_dir_all(root.join("_bmad-output/planning-artifacts")).unwrap();
        std::fs::write(
            root.join("_bmad-output/planning-artifacts/epics.md"),
            "# Epics\n\n## Epic 1: One\n\n### Story 1.1: First\n\nAs a user, I start.\n",
        )
        .unwrap();
        let init = super::common::run_in(&root, &["init"]);
        assert_eq!(init.code, Some(0), "{name}: {}", init.describe());
        let status = super::common::run_in(&root, &["status", "--validate"]);
        assert_eq!(status.code, Some(0), "{name}: {}", status.describe());
        let json = super::common::run_in(&root, &["status", "--json"]);
        let v: Value = serde_json::from_str(&json.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", json.describe()));
        assert_eq!(v["project"], name, "{name}: {v:#}");
    }
}
