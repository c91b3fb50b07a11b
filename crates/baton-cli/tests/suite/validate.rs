//! `baton status --validate` (text and JSON): every problem with its `file:line`, exit codes,
//! warnings that do not fail a file, YAML syntax errors, and the journal audit.

use super::common::{Project, parse_json, problems_of, replace_once, sprint};

/// Five different errors, one per line 7..=11.
const FIVE_PROBLEMS: &str = "\
generated: 01-02-2026 10:00
last_updated: 01-02-2026 10:00
project: demo

development_status:
  epic-1: in-progress
  1-1-a: finished
  1-x-b: backlog
  2-1-c: backlog
  1-1-a: done
  epic-3-retrospective: optional
";

/// `(kind, line, key, fragment of the message)` of the five errors.
const EXPECTED: [(&str, u64, &str, &str); 5] = [
    ("unknown-status", 7, "1-1-a", "finished"),
    ("malformed-key", 8, "1-x-b", "1-x-b"),
    ("missing-epic", 9, "2-1-c", "epic-2"),
    ("duplicate-key", 10, "1-1-a", "line 7"),
    ("orphan-retrospective", 11, "epic-3-retrospective", "epic-3"),
];

#[test]
fn validate_lists_all_five_problems_with_file_and_line() {
    let p = Project::with_sprint(FIVE_PROBLEMS);
    let out = p.run(&["status", "--validate"]).expect_code(1);
    let file = p.sprint_path().display().to_string();
    for (kind, line, key, fragment) in EXPECTED {
        let prefix = format!("{file}:{line}: error: ");
        let found = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no `{prefix}…` line for {kind}\n{}", out.describe()));
        assert!(
            found.contains(key) && found.contains(fragment),
            "{kind}: `{found}` should name `{key}` and `{fragment}`"
        );
    }
    let errors = out
        .stdout
        .lines()
        .filter(|l| l.starts_with(&format!("{file}:")) && l.contains(": error: "))
        .count();
    assert_eq!(errors, 5, "exactly five errors\n{}", out.describe());
    assert!(out.stdout.contains("5 error(s)"), "{}", out.describe());
}

#[test]
fn validate_json_has_valid_false_and_the_five_problems() {
    let p = Project::with_sprint(FIVE_PROBLEMS);
    let out = p.run(&["status", "--validate", "--json"]).expect_code(1);
    let v = parse_json(&out);
    assert_eq!(v["valid"], false);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["file"], p.sprint_path().display().to_string());
    let errors: Vec<(String, Option<u64>, Option<String>)> = problems_of(&v)
        .into_iter()
        .filter(|(sev, ..)| sev == "error")
        .map(|(_, kind, line, key)| (kind, line, key))
        .collect();
    let expected: Vec<(String, Option<u64>, Option<String>)> = EXPECTED
        .iter()
        .map(|(kind, line, key, _)| ((*kind).to_owned(), Some(*line), Some((*key).to_owned())))
        .collect();
    assert_eq!(errors, expected);
    // Plain `--json` (without --validate) reports the same and still exits 0.
    let plain = p.ok(&["status", "--json"]);
    assert_eq!(parse_json(&plain)["problems"], v["problems"]);
}

#[test]
fn a_valid_file_exits_0_even_with_warnings() {
    let body = "  epic-1: contexted\n  1-1-a: drafted\n  1-2-b: awaiting-operator\n  \
                1-2a-c: review\n  epic-1-retrospective: optional\n\n  sprint-07: whatever\n";
    let p = Project::with_sprint(&sprint(body));
    let out = p.ok(&["status", "--validate"]);
    assert!(out.stdout.contains("is valid"), "{}", out.describe());
    assert!(!out.stdout.contains(": error: "), "{}", out.describe());
    let v = parse_json(&p.ok(&["status", "--validate", "--json"]));
    assert_eq!(v["valid"], true);
    let problems = problems_of(&v);
    assert!(
        problems.iter().all(|(sev, ..)| sev == "warning"),
        "{problems:?}"
    );
    for (kind, key) in [
        ("legacy-status", "epic-1"),
        ("legacy-status", "1-1-a"),
        ("foreign-status", "1-2-b"),
        ("opaque-key", "sprint-07"),
    ] {
        assert!(
            problems
                .iter()
                .any(|(_, k, line, kk)| k == kind && kk.as_deref() == Some(key) && line.is_some()),
            "a `{kind}` warning for `{key}` with its line: {problems:?}"
        );
    }
    let st = super::common::statuses_of(&v);
    assert_eq!(st["epic-1"], "in-progress", "legacy read as modern");
    assert_eq!(st["1-1-a"], "ready-for-dev");
}

#[test]
fn a_status_the_kind_cannot_have_is_an_error() {
    let p = Project::with_sprint(&sprint("  epic-1: review\n  1-1-a: optional\n"));
    let v = parse_json(&p.run(&["status", "--validate", "--json"]).expect_code(1));
    let errors: Vec<(String, Option<u64>)> = problems_of(&v)
        .into_iter()
        .filter(|(sev, ..)| sev == "error")
        .map(|(_, kind, line, _)| (kind, line))
        .collect();
    assert_eq!(
        errors,
        [
            ("wrong-kind-status".to_owned(), Some(9)),
            ("wrong-kind-status".to_owned(), Some(10))
        ]
    );
}

const BROKEN: &str = "generated: 01-02-2026 10:00\nproject: demo\n\ndevelopment_status:\n  \
                      epic-1: backlog\n  1-1-a: backlog\n  1-2-b: [backlog\n  1-3-c: backlog\n";

#[test]
fn a_yaml_syntax_error_exits_1_naming_file_and_line() {
    let p = Project::with_sprint(BROKEN);
    let file = p.sprint_path().display().to_string();
    let out = p.run(&["status", "--validate"]).expect_code(1);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with(&format!("{file}:")))
        .unwrap_or_else(|| panic!("no `file:line` in\n{}", out.describe()));
    let n: usize = line[file.len() + 1..]
        .split(':')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no line number in `{line}`"));
    assert!(
        (7..=8).contains(&n),
        "the error is reported near line 7: `{line}`"
    );

    let v = parse_json(&p.run(&["status", "--validate", "--json"]).expect_code(1));
    assert_eq!(v["valid"], false);
    let problems = problems_of(&v);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].0, "error");
    assert_eq!(problems[0].1, "syntax");
    assert_eq!(problems[0].2, Some(n as u64));

    // Every other command refuses the file too, naming it, and leaves it alone.
    for args in [&["status"][..], &["set", "1-1-a", "ready-for-dev"]] {
        let out = p.run(args).expect_code(1);
        assert!(
            out.stderr.contains(&format!("{file}:{n}")),
            "{}",
            out.describe()
        );
    }
    assert_eq!(p.read_sprint(), BROKEN);
}

#[test]
fn a_yaml_syntax_error_is_worded_once() {
    let p = Project::with_sprint(BROKEN);
    let out = p.run(&["status", "--validate"]).expect_code(1);
    assert!(!out.stdout.contains("error: error:"), "{}", out.describe());
    let out = p.run(&["status"]).expect_code(1);
    assert!(!out.stderr.contains("error: error:"), "{}", out.describe());
}

#[test]
fn a_hand_edit_is_reported_as_a_journal_mismatch() {
    let text = sprint("  epic-1: backlog\n  1-1-a: backlog\n  1-2-b: backlog\n");
    let p = Project::with_sprint(&text);
    p.ok(&["set", "1-1-a", "ready-for-dev"]);
    let edited = replace_once(
        &p.read_sprint(),
        "  1-1-a: ready-for-dev",
        "  1-1-a: review",
    );
    p.write(super::common::SPRINT_REL, &edited);
    let v = parse_json(&p.ok(&["status", "--validate", "--json"]));
    assert_eq!(v["valid"], true, "a mismatch is a warning");
    let problems = problems_of(&v);
    assert!(
        problems
            .iter()
            .any(|(sev, kind, line, key)| sev == "warning"
                && kind == "journal-mismatch"
                && *line == Some(10)
                && key.as_deref() == Some("1-1-a")),
        "{problems:?}"
    );
}

#[test]
fn a_sprint_file_with_carriage_returns_alone_names_its_line_endings() {
    let text = "generated: 01-01-2026 10:00\rproject: p\rdevelopment_status:\r  epic-1: backlog\r  1-1-a: backlog\r";
    let p = Project::with_sprint(text);
    for args in [
        &["status"][..],
        &["status", "--validate"],
        &["set", "1-1-a", "ready-for-dev"],
    ] {
        let out = p.run(args);
        assert_ne!(out.code, Some(0), "{}", out.describe());
        let said = format!("{}{}", out.stdout, out.stderr);
        assert!(
            said.contains("carriage return"),
            "{args:?}: {}",
            out.describe()
        );
        assert!(
            !said.contains("no `development_status` mapping"),
            "{}",
            out.describe()
        );
    }
    // Nothing was written.
    assert_eq!(std::fs::read_to_string(p.sprint_path()).unwrap(), text);
}
