//! BMad projects as they are in the wild: one minimal synthetic fixture per layout and dialect
//! (alpha `.bmad` config, early-alpha `bmad/` with `output_folder`, v6 defaults, legacy
//! statuses, an empty `{}` plan, wrapped keys, every story status dialect, stories in
//! subfolders, a story file ahead of the sprint, another tool's `sprint-status.yaml`, lettered
//! and dotted epics), each run through `status`, `status --validate`, `status --json` and a
//! `set` whose byte diff is only the target value, `last_updated` and (when it follows) the
//! epic line; `init` never adds a second sprint file; a closed stdout ends quietly.

use super::common::{Project, parse_json, snapshot};
use std::fs;
use std::io::Read as _;
use std::process::Stdio;

/// Asserts `new` differs from `old` only by the line replacements in `changes` (each made
/// exactly once) and a `last_updated:` line (changed, or inserted before `development_status:`).
#[track_caller]
fn assert_only_changes(old: &str, new: &str, changes: &[(&str, &str)]) {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    if new_lines.len() == old_lines.len() + 1 {
        let at = new_lines
            .iter()
            .position(|l| l.starts_with("last_updated: "))
            .unwrap_or_else(|| panic!("a line was added, not `last_updated`:\n{new}"));
        assert!(
            !old.contains("\nlast_updated:"),
            "`last_updated` added twice\n{new}"
        );
        assert!(
            new_lines[at + 1].starts_with("development_status:"),
            "`last_updated` inserted before `development_status:`\n{new}"
        );
        new_lines.remove(at);
    }
    assert_eq!(old_lines.len(), new_lines.len(), "line count\n{new}");
    let mut seen = vec![false; changes.len()];
    for (o, n) in old_lines.iter().zip(&new_lines) {
        if o == n {
            continue;
        }
        if o.starts_with("last_updated:") && n.starts_with("last_updated:") {
            continue;
        }
        let i = changes
            .iter()
            .position(|(from, to)| {
                o.trim_end_matches(['\n', '\r']) == *from && n.trim_end_matches(['\n', '\r']) == *to
            })
            .unwrap_or_else(|| panic!("unexpected change {o:?} → {n:?}\n--- new ---\n{new}"));
        assert!(!seen[i], "change {:?} made twice", changes[i]);
        seen[i] = true;
    }
    for (i, ok) in seen.iter().enumerate() {
        assert!(
            ok,
            "expected change {:?} not made\n--- new ---\n{new}",
            changes[i]
        );
    }
}

/// `status`, `status --validate` (expecting `validate_code`), `status --json`: each names the
/// sprint file at `sprint_rel`. Returns the JSON board.
#[track_caller]
fn look(p: &Project, sprint_rel: &str, validate_code: i32) -> serde_json::Value {
    let file = p.root().join(sprint_rel).display().to_string();
    let board = p.ok(&["status"]);
    assert!(
        board.stdout.lines().next() == Some(&format!("sprint file: {file}")),
        "the board names the file it read\n{}",
        board.describe()
    );
    let v = p.run(&["status", "--validate"]).expect_code(validate_code);
    assert!(v.stdout.contains(&file), "{}", v.describe());
    let json = parse_json(&p.ok(&["status", "--json"]));
    assert_eq!(json["file"], file);
    json
}

/// Runs `baton set KEY STATUS` and checks the sprint file's diff.
#[track_caller]
fn set_and_diff(p: &Project, sprint_rel: &str, key: &str, to: &str, changes: &[(&str, &str)]) {
    let path = p.root().join(sprint_rel);
    let before = fs::read_to_string(&path).expect("sprint file");
    p.ok(&["set", key, to]);
    let after = fs::read_to_string(&path).expect("sprint file");
    assert_only_changes(&before, &after, changes);
}

fn status_of<'a>(json: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    json["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["key"] == key)
        .unwrap_or_else(|| panic!("no entry `{key}` in {json}"))
}

fn kinds(json: &serde_json::Value) -> Vec<String> {
    json["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            format!(
                "{}:{}",
                p["severity"].as_str().unwrap_or(""),
                p["kind"].as_str().unwrap_or("")
            )
        })
        .collect()
}

const HEADER: &str = "generated: 01-02-2026 10:00\nlast_updated: 01-02-2026 10:00\nproject: wild\nproject_key: NOKEY\ntracking_system: file-system\nstory_location: stories\n\n";

#[test]
fn alpha_layout_with_dot_bmad_config() {
    let p = Project::empty();
    p.write(
        ".bmad/bmm/config.yaml",
        "project_name: wild\noutput_folder: '{project-root}/docs'\nsprint_artifacts: '{output_folder}/sprint-artifacts'\ndev_story_location: \"{project-root}/docs/stories\"\n",
    );
    let rel = "docs/sprint-artifacts/sprint-status.yaml";
    p.write(
        rel,
        &format!("{HEADER}development_status:\n  epic-1: contexted\n  1-1-login: drafted\n  1-2-logout: backlog\n  epic-1-retrospective: optional\n"),
    );
    p.write(
        "docs/stories/1-1-login.md",
        "# Story 1.1: Login\n\nStatus: drafted\n\n## Story\n",
    );
    let json = look(&p, rel, 0);
    assert_eq!(status_of(&json, "1-1-login")["status"], "ready-for-dev");
    set_and_diff(
        &p,
        rel,
        "1-1-login",
        "in-progress",
        &[("  1-1-login: drafted", "  1-1-login: in-progress")],
    );
    assert_eq!(
        fs::read_to_string(p.root().join("docs/stories/1-1-login.md")).unwrap(),
        "# Story 1.1: Login\n\nStatus: in-progress\n\n## Story\n"
    );
    assert!(!p.sprint_path().exists(), "no second sprint file");
}

#[test]
fn early_alpha_bmad_dir_with_output_folder() {
    let p = Project::empty();
    p.write("bmad/bmm/config.yaml", "output_folder: docs\n");
    let rel = "docs/sprint-status.yaml";
    p.write(
        rel,
        &format!("{HEADER}development_status:\n  epic-1: backlog\n  1-1-a: backlog\n"),
    );
    look(&p, rel, 0);
    set_and_diff(
        &p,
        rel,
        "1-1-a",
        "ready-for-dev",
        &[
            ("  epic-1: backlog", "  epic-1: in-progress"),
            ("  1-1-a: backlog", "  1-1-a: ready-for-dev"),
        ],
    );
}

#[test]
fn v6_default_layout_with_config_and_without() {
    for with_config in [true, false] {
        let p = Project::empty();
        if with_config {
            p.write(
                "_bmad/bmm/config.yaml",
                "output_folder: \"{project-root}/_bmad-output\"\nplanning_artifacts: \"{project-root}/_bmad-output/planning-artifacts\"\nimplementation_artifacts: \"{project-root}/_bmad-output/implementation-artifacts\"\n",
            );
        }
        let rel = "_bmad-output/implementation-artifacts/sprint-status.yaml";
        p.write(
            rel,
            &format!(
                "{HEADER}development_status:\n  epic-1: in-progress\n  1-1-a: review  # keep me\n"
            ),
        );
        look(&p, rel, 0);
        set_and_diff(
            &p,
            rel,
            "1-1-a",
            "done",
            &[
                ("  1-1-a: review  # keep me", "  1-1-a: done  # keep me"),
                ("  epic-1: in-progress", "  epic-1: done"),
            ],
        );
    }
}

#[test]
fn legacy_statuses_warn_and_stay_unless_set() {
    let p = Project::with_sprint(&format!(
        "{HEADER}development_status:\n  epic-1: contexted\n  1-1-a: drafted\n  1-2-b: completed\n  epic-1-retrospective: completed\n  epic-2: backlog\n  2-1-c: backlog\n  epic-2-retrospective: pending\n"
    ));
    let rel = super::common::SPRINT_REL;
    let json = look(&p, rel, 0);
    assert_eq!(json["valid"], true);
    let legacy = kinds(&json)
        .iter()
        .filter(|k| *k == "warning:legacy-status")
        .count();
    assert_eq!(legacy, 5, "{json}");
    assert_eq!(status_of(&json, "epic-1-retrospective")["status"], "done");
    assert_eq!(status_of(&json, "epic-1")["status"], "in-progress");
    set_and_diff(
        &p,
        rel,
        "2-1-c",
        "ready-for-dev",
        &[
            ("  epic-2: backlog", "  epic-2: in-progress"),
            ("  2-1-c: backlog", "  2-1-c: ready-for-dev"),
        ],
    );
    set_and_diff(
        &p,
        rel,
        "1-1-a",
        "in-progress",
        &[("  1-1-a: drafted", "  1-1-a: in-progress")],
    );
}

#[test]
fn an_empty_flow_plan_is_an_empty_board() {
    let p = Project::with_sprint(&format!("{HEADER}development_status: {{}}\n"));
    let json = look(&p, super::common::SPRINT_REL, 0);
    assert_eq!(json["entries"].as_array().map(Vec::len), Some(0));
    assert_eq!(json["valid"], true);
    let out = p.run(&["set", "1-1-a", "done"]).expect_code(1);
    assert!(
        out.stderr.contains("not in `development_status`"),
        "{}",
        out.describe()
    );
}

#[test]
fn keys_wrapped_by_a_yaml_emitter_are_read_validated_and_editable() {
    let long = "3-4-a-story-key-long-enough-that-pyyaml-puts-its-status-on-the-next-line";
    let explicit = format!(
        "{long}-and-even-longer-so-the-emitter-writes-it-as-an-explicit-question-mark-key-x"
    );
    let p = Project::with_sprint(&format!(
        "{HEADER}development_status:\n  epic-3: in-progress\n  {long}:\n    ready-for-dev\n  ? {explicit}\n  : backlog\n"
    ));
    let rel = super::common::SPRINT_REL;
    let json = look(&p, rel, 0);
    assert_eq!(status_of(&json, long)["status"], "ready-for-dev");
    assert_eq!(status_of(&json, &explicit)["status"], "backlog");
    set_and_diff(
        &p,
        rel,
        long,
        "in-progress",
        &[("    ready-for-dev", "    in-progress")],
    );
    set_and_diff(
        &p,
        rel,
        &explicit,
        "ready-for-dev",
        &[("  : backlog", "  : ready-for-dev")],
    );
}

#[test]
fn validate_reports_every_entry_it_cannot_handle() {
    let p = Project::with_sprint(&format!(
        "{HEADER}development_status:\n  epic-1: backlog\n  - stray\n  1-1-a: backlog\n  just words here\n  1-2-b: done\n"
    ));
    let out = p.run(&["status", "--validate"]).expect_code(1);
    let file = p.sprint_path().display().to_string();
    for line in [10, 12] {
        assert!(
            out.stdout.contains(&format!("{file}:{line}: error:")),
            "line {line} reported\n{}",
            out.describe()
        );
    }
}

/// One story file per dialect: read, and rewritten in its own form by `set`.
#[test]
fn every_story_status_dialect_is_read_and_updated_in_place() {
    let dialects: [(&str, &str, &str); 5] = [
        (
            "1-1-plain",
            "# Story 1.1: Plain\n\nStatus: review\n\n## Story\n",
            "Status: done",
        ),
        (
            "1-2-heading",
            "# Story 1.2: Heading\n\n## Status: review\n\n## Story\n",
            "## Status: done",
        ),
        (
            "1-3-quote",
            "# Story 1.3: Quote\n\n> **Status:** review\n> **Epic:** 1\n",
            "> **Status:** done",
        ),
        (
            "1-4-next-line",
            "# Story 1.4: Next line\n\n## Status\n\nreview\n\n## Story\n",
            "done",
        ),
        (
            "1-5-frontmatter",
            "---\nstatus: review\nepic: 1\n---\n# Story 1.5: Frontmatter\n\n## Story\n",
            "status: done",
        ),
    ];
    let mut body = String::from("  epic-1: in-progress\n");
    for (key, ..) in &dialects {
        body.push_str(&format!("  {key}: review\n"));
    }
    // Keeps the epic in progress, so each `set` changes one line.
    body.push_str("  1-9-last: backlog\n");
    let p = Project::with_sprint(&format!("{HEADER}development_status:\n{body}"));
    let dir = "_bmad-output/implementation-artifacts";
    for (key, text, _) in &dialects {
        p.write(&format!("{dir}/{key}.md"), text);
    }
    let json = look(&p, super::common::SPRINT_REL, 0);
    for (key, ..) in &dialects {
        assert_eq!(
            status_of(&json, key)["story_file_status"],
            "review",
            "{key}"
        );
    }
    assert!(
        !kinds(&json).iter().any(|k| k.contains("story-file")),
        "{json}"
    );
    for (key, text, new_line) in &dialects {
        set_and_diff(
            &p,
            super::common::SPRINT_REL,
            key,
            "done",
            &[(&format!("  {key}: review"), &format!("  {key}: done"))],
        );
        let after = fs::read_to_string(p.root().join(format!("{dir}/{key}.md"))).unwrap();
        let old_line = new_line.replace("done", "review");
        assert_eq!(
            after,
            text.replacen(&old_line, new_line, 1),
            "{key}: only the value changes"
        );
        assert_eq!(
            after.matches("done").count(),
            1,
            "{key}: no second status line"
        );
    }
}

#[test]
fn stories_in_subfolders_are_found_and_kept_in_step() {
    let p = Project::with_sprint(&format!(
        "{HEADER}development_status:\n  epic-2: in-progress\n  2-1-a: ready-for-dev\n"
    ));
    let story = "_bmad-output/implementation-artifacts/stories/epic-2/2-1-a.md";
    p.write(story, "# Story 2.1: A\n\nStatus: ready-for-dev\n");
    let json = look(&p, super::common::SPRINT_REL, 0);
    assert_eq!(
        status_of(&json, "2-1-a")["story_file_status"],
        "ready-for-dev"
    );
    set_and_diff(
        &p,
        super::common::SPRINT_REL,
        "2-1-a",
        "in-progress",
        &[("  2-1-a: ready-for-dev", "  2-1-a: in-progress")],
    );
    assert_eq!(
        fs::read_to_string(p.root().join(story)).unwrap(),
        "# Story 2.1: A\n\nStatus: in-progress\n"
    );
}

#[test]
fn a_story_file_ahead_of_the_sprint_is_reported_and_not_lowered() {
    let p = Project::with_sprint(&format!(
        "{HEADER}development_status:\n  epic-1: in-progress\n  1-1-a: review\n"
    ));
    let story = "_bmad-output/implementation-artifacts/1-1-a.md";
    let text = "# Story 1.1: A\n\nStatus: done\n";
    p.write(story, text);
    let json = look(&p, super::common::SPRINT_REL, 0);
    assert!(
        kinds(&json).contains(&"warning:story-file-mismatch".to_owned()),
        "{json}"
    );
    let board = p.ok(&["status"]);
    assert!(
        board.stdout.contains("story file: done"),
        "{}",
        board.describe()
    );
    let v = p.ok(&["status", "--validate"]);
    assert!(
        v.stdout.contains("ahead of the sprint file"),
        "{}",
        v.describe()
    );
    let out = p.ok(&["set", "1-1-a", "in-progress"]);
    assert!(
        out.stderr.contains("ahead of the sprint file"),
        "{}",
        out.describe()
    );
    assert_eq!(
        fs::read_to_string(p.root().join(story)).unwrap(),
        text,
        "not lowered"
    );
}

#[test]
fn another_tools_sprint_status_is_refused_in_one_sentence() {
    let p = Project::with_sprint("sprint: 4\nstories:\n  - id: ABC-1\n    state: open\n");
    for args in [
        &["status"][..],
        &["status", "--validate"],
        &["status", "--json"],
    ] {
        let out = p.run(args).expect_code(1);
        let err: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(err.len(), 1, "{}", out.describe());
        assert!(
            err[0].contains("is not a BMad sprint file"),
            "{}",
            out.describe()
        );
        assert!(
            !out.stdout.contains("everything is done"),
            "{}",
            out.describe()
        );
        assert!(
            !err[0].contains("baton init"),
            "init cannot fix this\n{}",
            out.describe()
        );
    }
    let before = snapshot(p.root());
    p.ok(&["init"]);
    let after = snapshot(p.root());
    let added: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert!(
        added
            .iter()
            .all(|k| !k.to_string_lossy().ends_with(".yaml")),
        "no sprint file created: {added:?}"
    );
}

#[test]
fn lettered_and_dotted_epics_are_first_class() {
    let p = Project::with_sprint(&format!(
        "{HEADER}development_status:\n  epic-14c: backlog\n  14c-1-a: backlog\n  epic-14c-retrospective: optional\n  epic-2.5: in-progress\n  2.5-1-b: review\n  epic-10a: backlog\n  10a-1-c: backlog\n  epic-one: backlog\n  1-1-d: backlog\n  1-2-e: backlog\n"
    ));
    let rel = super::common::SPRINT_REL;
    let json = look(&p, rel, 1);
    assert_eq!(status_of(&json, "epic-14c")["kind"], "epic");
    assert_eq!(status_of(&json, "14c-1-a")["epic"], "14c");
    assert_eq!(status_of(&json, "2.5-1-b")["epic"], "2.5");
    let errors: Vec<&serde_json::Value> = json["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["severity"] == "error")
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "one problem for the misnamed epic: {errors:?}"
    );
    let msg = errors[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("`1-1-d`, `1-2-e`") && msg.contains("epic-one"),
        "{msg}"
    );
    set_and_diff(
        &p,
        rel,
        "14c-1-a",
        "ready-for-dev",
        &[
            ("  epic-14c: backlog", "  epic-14c: in-progress"),
            ("  14c-1-a: backlog", "  14c-1-a: ready-for-dev"),
        ],
    );
    set_and_diff(
        &p,
        rel,
        "2.5-1-b",
        "done",
        &[
            ("  2.5-1-b: review", "  2.5-1-b: done"),
            ("  epic-2.5: in-progress", "  epic-2.5: done"),
        ],
    );
    set_and_diff(
        &p,
        rel,
        "epic-14c-retrospective",
        "done",
        &[(
            "  epic-14c-retrospective: optional",
            "  epic-14c-retrospective: done",
        )],
    );
}

#[test]
fn init_finds_an_existing_sprint_file_wherever_bmad_put_it() {
    let layouts: [(&str, &str, &str); 6] = [
        (
            "",
            "",
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
        ),
        ("", "", "docs/sprint-artifacts/sprint-status.yaml"),
        ("", "", "docs/sprint-status.yaml"),
        (
            "_bmad/bmm/config.yaml",
            "implementation_artifacts: \"{project-root}/work/impl\"\n",
            "work/impl/sprint-status.yaml",
        ),
        (
            ".bmad/bmm/config.yaml",
            "output_folder: '{project-root}/out'\nsprint_artifacts: '{output_folder}/sprints'\n",
            "out/sprints/sprint-status.yaml",
        ),
        (
            "bmad/bmm/config.yaml",
            "output_folder: ./notes\n",
            "notes/sprint-status.yaml",
        ),
    ];
    for (config, config_text, rel) in layouts {
        let p = Project::empty();
        if !config.is_empty() {
            p.write(config, config_text);
        }
        p.write(
            rel,
            &format!("{HEADER}development_status:\n  epic-1: backlog\n  1-1-a: backlog\n"),
        );
        let before = snapshot(p.root());
        let out = p.ok(&["init"]);
        assert!(
            out.stdout.contains(rel),
            "init says where it found the file\n{}",
            out.describe()
        );
        let after = snapshot(p.root());
        let yamls: Vec<_> = after
            .keys()
            .filter(|k| k.to_string_lossy().ends_with("sprint-status.yaml"))
            .collect();
        assert_eq!(yamls.len(), 1, "{rel}: no second sprint file: {yamls:?}");
        for (k, v) in &before {
            assert_eq!(after.get(k), Some(v), "{rel}: `{}` unchanged", k.display());
        }
        let toml = fs::read_to_string(p.root().join("baton.toml")).unwrap();
        assert!(
            toml.contains(&format!("sprint_status = \"{rel}\"")),
            "{toml}"
        );
        look(&p, rel, 0);
    }
}

#[test]
fn status_json_into_a_closed_pipe_exits_quietly() {
    let mut body = String::from("  epic-1: in-progress\n");
    for i in 1..=1500 {
        body.push_str(&format!(
            "  1-{i}-a-story-with-a-reasonably-long-slug: backlog\n"
        ));
    }
    let p = Project::with_sprint(&format!("{HEADER}development_status:\n{body}"));
    for args in [&["status", "--json"][..], &["status"]] {
        let mut child = p
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn baton");
        // The output is far larger than a pipe's buffer, so the write meets the closed end.
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err)
            .expect("read stderr");
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: quiet, got {err}");
    }
}

#[test]
fn init_with_a_stale_setting_does_not_split_the_plan() {
    let p = Project::empty();
    p.write(
        "baton.toml",
        "[paths]\nsprint_status = \"_bmad-output/implementation-artifacts/sprint-status.yaml\"\n",
    );
    let rel = "docs/sprint-artifacts/sprint-status.yaml";
    p.write(
        rel,
        &format!("{HEADER}development_status:\n  epic-1: backlog\n"),
    );
    let out = p.ok(&["init"]);
    assert!(out.stdout.contains(rel), "{}", out.describe());
    assert!(!p.sprint_path().exists(), "no second sprint file");
}
