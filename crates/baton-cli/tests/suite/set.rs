//! `baton set`: byte-exact edits of a hand-written BMad file, the transition rules (refusals,
//! `--force`, `--note`, changes requested), error exits, and epics following their stories.

use super::common::{
    Project, assert_same_text, assert_stamp_between, field_value, line_of, replace_once, s, sprint,
};
use std::time::SystemTime;

/// A hand-written sprint file with everything a BMad file may hold in the wild.
const HAND_WRITTEN: &str = "\
# Sprint status of the demo project (hand-written, not generated)
# generated: 01-02-2026 10:00
# project: demo
#
# STATUS DEFINITIONS: the usual ones.

generated: 01-02-2026 10:00
last_updated: 01-03-2026 11:30   # bumped by every tool
project: demo
project_key: NOKEY
tracking_system: file-system
story_location: _bmad-output/implementation-artifacts
team_channel: \"#demo\"   # not a BMad key: must survive

development_status:
  # Epic 1: the basics
  epic-1: backlog   # first epic
  1-1-setup: backlog
  1-2-x: ready-for-dev    # story file written by hand
  1-2a-hotfix: backlog  # letter suffix
  1-3-x: {status: backlog, size: M}
  1-4-y:
    status: backlog
    size: S
  1-5-ext: awaiting-operator  # bmad-loop owns this one
  epic-1-retrospective: optional


  sprint-07: whatever

  # Epic 2
  epic-2: backlog
  2-1-z: backlog
";

/// Runs `baton set ARGS`, returning the clock before and after for the `last_updated` check.
fn timed_set(p: &Project, args: &[&str]) -> (SystemTime, SystemTime) {
    let before = SystemTime::now();
    let mut full = vec!["set"];
    full.extend_from_slice(args);
    p.ok(&full);
    (before, SystemTime::now())
}

#[test]
fn set_changes_only_the_value_the_epic_and_last_updated() {
    let p = Project::with_sprint(HAND_WRITTEN);
    let before = SystemTime::now();
    let out = p.ok(&["set", "1-2-x", "in-progress"]);
    let after = SystemTime::now();
    assert!(
        out.stdout.contains("1-2-x: ready-for-dev → in-progress"),
        "{}",
        out.describe()
    );
    assert!(
        out.stdout.contains("epic-1: backlog → in-progress"),
        "the epic follows its first story\n{}",
        out.describe()
    );

    let actual = p.read_sprint();
    let stamp = field_value(&actual, "last_updated");
    assert_stamp_between(&stamp, before, after);
    let mut expected = replace_once(
        HAND_WRITTEN,
        "last_updated: 01-03-2026 11:30   #",
        &format!("last_updated: {stamp}   #"),
    );
    expected = replace_once(
        &expected,
        "  epic-1: backlog   # first epic\n",
        "  epic-1: in-progress   # first epic\n",
    );
    expected = replace_once(
        &expected,
        "  1-2-x: ready-for-dev    # story",
        "  1-2-x: in-progress    # story",
    );
    assert_same_text(&actual, &expected, "after `set 1-2-x in-progress`");

    // The lines baton must never touch, checked one by one as well.
    for (key, lines) in [
        ("1-2a-hotfix", 1),
        ("1-3-x", 1),
        ("1-4-y", 3),
        ("1-5-ext", 1),
        ("sprint-07", 1),
        ("team_channel", 1),
        ("epic-1-retrospective", 1),
    ] {
        let (n, _) = line_of(HAND_WRITTEN, key);
        let original: Vec<&str> = HAND_WRITTEN.lines().skip(n - 1).take(lines).collect();
        let now: Vec<&str> = actual.lines().skip(n - 1).take(lines).collect();
        assert_eq!(now, original, "the `{key}` line(s) changed");
    }
}

#[test]
fn set_on_struct_values_edits_only_the_status_inside() {
    let p = Project::with_sprint(HAND_WRITTEN);
    p.ok(&["set", "1-2-x", "in-progress"]);
    let first = p.read_sprint();

    let (before, after) = timed_set(&p, &["1-3-x", "ready-for-dev"]);
    let actual = p.read_sprint();
    let stamp = field_value(&actual, "last_updated");
    assert_stamp_between(&stamp, before, after);
    let mut expected = replace_once(
        &first,
        &format!("last_updated: {}", field_value(&first, "last_updated")),
        &format!("last_updated: {stamp}"),
    );
    expected = replace_once(
        &expected,
        "  1-3-x: {status: backlog, size: M}\n",
        "  1-3-x: {status: ready-for-dev, size: M}\n",
    );
    assert_same_text(&actual, &expected, "after `set 1-3-x ready-for-dev`");

    let (before, after) = timed_set(&p, &["1-4-y", "ready-for-dev"]);
    let second = actual;
    let actual = p.read_sprint();
    let stamp = field_value(&actual, "last_updated");
    assert_stamp_between(&stamp, before, after);
    let mut expected = replace_once(
        &second,
        &format!("last_updated: {}", field_value(&second, "last_updated")),
        &format!("last_updated: {stamp}"),
    );
    expected = replace_once(
        &expected,
        "  1-4-y:\n    status: backlog\n    size: S\n",
        "  1-4-y:\n    status: ready-for-dev\n    size: S\n",
    );
    assert_same_text(&actual, &expected, "after `set 1-4-y ready-for-dev`");

    let st = p.statuses();
    assert_eq!(st["1-3-x"], "ready-for-dev");
    assert_eq!(st["1-4-y"], "ready-for-dev");
    assert_eq!(st["1-5-ext"], "awaiting-operator");
    assert_eq!(st["sprint-07"], "whatever");
}

#[test]
fn set_keeps_quotes_and_adds_a_missing_last_updated_before_development_status() {
    let original = "generated: 01-02-2026 10:00\nproject: demo\n\ndevelopment_status:\n  \
                    epic-1: \"backlog\"\n  1-1-a: 'backlog'  # quoted\n  1-2-b: backlog\n";
    let p = Project::with_sprint(original);
    let (before, after) = timed_set(&p, &["1-1-a", "ready-for-dev"]);
    let actual = p.read_sprint();
    let stamp = field_value(&actual, "last_updated");
    assert_stamp_between(&stamp, before, after);
    let expected = format!(
        "generated: 01-02-2026 10:00\nproject: demo\n\nlast_updated: {stamp}\ndevelopment_status:\n  \
         epic-1: \"in-progress\"\n  1-1-a: 'ready-for-dev'  # quoted\n  1-2-b: backlog\n"
    );
    assert_same_text(
        &actual,
        &expected,
        "quoted values and inserted last_updated",
    );
}

const SMALL: &str = "  epic-1: in-progress\n  1-1-a: done\n  1-2-b: review\n  1-3-c: backlog\n\
                     \n  epic-2: backlog\n  2-1-d: backlog\n";

#[test]
fn an_illegal_move_is_refused_listing_the_legal_ones_and_nothing_changes() {
    let p = Project::with_sprint(&sprint(SMALL));
    let before = p.sprint_bytes();
    let out = p.run(&["set", "1-3-c", "done"]).expect_code(1);
    assert!(out.stderr.contains("backlog → done"), "{}", out.describe());
    assert!(
        out.stderr
            .contains("legal from here: ready-for-dev, needs-intervention"),
        "the legal moves are listed\n{}",
        out.describe()
    );
    assert!(out.stderr.contains("--force"), "{}", out.describe());
    assert_eq!(
        p.sprint_bytes(),
        before,
        "a refused move leaves the file byte-for-byte"
    );
    assert!(p.all_events().is_empty(), "a refused move journals nothing");

    // Lowering is refused too, with its own legal list.
    let out = p.run(&["set", "1-1-a", "in-progress"]).expect_code(1);
    assert!(
        out.stderr.contains("done → in-progress"),
        "{}",
        out.describe()
    );
    assert_eq!(p.sprint_bytes(), before);
}

#[test]
fn force_allows_a_lowering_and_the_journal_says_forced() {
    let p = Project::with_sprint(&sprint(SMALL));
    let out = p.ok(&["set", "1-1-a", "backlog", "--force", "--reason", "re-plan"]);
    assert!(
        out.stdout.contains("1-1-a: done → backlog (forced)"),
        "{}",
        out.describe()
    );
    assert_eq!(p.statuses()["1-1-a"], "backlog");
    let events = p.log(&["--key", "1-1-a"]);
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0];
    assert_eq!(
        (s(e, "from"), s(e, "to"), s(e, "reason"), s(e, "state")),
        ("done", "backlog", "re-plan", "applied")
    );
    assert_eq!(e["forced"], true, "{e}");
    assert_eq!(s(e, "actor"), "human");

    // An ordinary move is journaled as not forced.
    p.ok(&["set", "1-2-b", "done"]);
    let events = p.log(&["--key", "1-2-b"]);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["forced"], false);
}

#[test]
fn a_note_becomes_a_comment_on_that_line_only() {
    let text = sprint(SMALL);
    let p = Project::with_sprint(&text);
    let (before, after) = timed_set(
        &p,
        &["1-3-c", "ready-for-dev", "--note", "waiting for API keys"],
    );
    let actual = p.read_sprint();
    let stamp = field_value(&actual, "last_updated");
    assert_stamp_between(&stamp, before, after);
    let (n, line) = line_of(&actual, "1-3-c");
    assert!(
        line.starts_with("  1-3-c: ready-for-dev")
            && line.trim_end().ends_with("# waiting for API keys"),
        "line {n} is `{line}`"
    );
    let mut expected = replace_once(
        &text,
        "last_updated: 01-02-2026 10:00",
        &format!("last_updated: {stamp}"),
    );
    expected = replace_once(&expected, "  1-3-c: backlog\n", &format!("{line}\n"));
    assert_same_text(&actual, &expected, "after a set with --note");
    assert_eq!(
        p.statuses()["1-3-c"],
        "ready-for-dev",
        "the note is a comment, not part of the value"
    );
}

#[test]
fn review_back_to_in_progress_is_legal_without_force() {
    let p = Project::with_sprint(&sprint(SMALL));
    let out = p.ok(&["set", "1-2-b", "in-progress"]);
    assert!(out.stdout.contains("1-2-b: review → in-progress"));
    assert!(!out.stdout.contains("forced"), "{}", out.describe());
    assert_eq!(p.statuses()["1-2-b"], "in-progress");
    let events = p.log(&[]);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["forced"], false);
}

#[test]
fn an_unknown_status_word_lists_the_valid_ones() {
    let p = Project::with_sprint(&sprint(SMALL));
    let before = p.sprint_bytes();
    let out = p.run(&["set", "1-3-c", "finished"]).expect_code(1);
    assert!(out.stderr.contains("`finished`"), "{}", out.describe());
    for valid in ["backlog", "ready-for-dev", "in-progress", "review", "done"] {
        assert!(
            out.stderr.contains(valid),
            "`{valid}` is listed\n{}",
            out.describe()
        );
    }
    assert_eq!(p.sprint_bytes(), before);
}

#[test]
fn a_status_the_kind_cannot_have_is_refused() {
    let p = Project::with_sprint(&sprint(SMALL));
    let before = p.sprint_bytes();
    let out = p.run(&["set", "epic-2", "review"]).expect_code(1);
    assert!(
        out.stderr.contains("backlog, in-progress, done"),
        "{}",
        out.describe()
    );
    let out = p
        .run(&["set", "epic-2", "review", "--force"])
        .expect_code(1);
    assert!(out.stderr.contains("epic"), "{}", out.describe());
    assert_eq!(p.sprint_bytes(), before);
}

#[test]
fn an_unknown_key_names_the_file() {
    let p = Project::with_sprint(&sprint(SMALL));
    let before = p.sprint_bytes();
    let out = p
        .run(&["set", "9-9-nowhere", "ready-for-dev"])
        .expect_code(1);
    assert!(out.stderr.contains("9-9-nowhere"), "{}", out.describe());
    assert!(
        out.stderr.contains(&p.sprint_path().display().to_string()),
        "the sprint file is named\n{}",
        out.describe()
    );
    assert_eq!(p.sprint_bytes(), before);
}

#[test]
fn opaque_keys_are_never_changed() {
    let p = Project::with_sprint(&sprint("  epic-1: backlog\n  sprint-07: whatever\n"));
    let before = p.sprint_bytes();
    let out = p
        .run(&["set", "sprint-07", "done", "--force"])
        .expect_code(1);
    assert!(out.stderr.contains("sprint-07"), "{}", out.describe());
    assert_eq!(p.sprint_bytes(), before);
}

#[test]
fn usage_errors_exit_2() {
    let p = Project::with_sprint(&sprint(SMALL));
    let before = p.sprint_bytes();
    for args in [
        &["set"][..],
        &["set", "1-3-c"],
        &["set", "1-3-c", "ready-for-dev", "--bogus"],
        &["set", "1-3-c", "ready-for-dev", "--note"],
        &["frobnicate"],
    ] {
        let out = p.run(args);
        assert_eq!(out.code, Some(2), "{}", out.describe());
        assert!(!out.stderr.is_empty(), "{}", out.describe());
    }
    assert_eq!(p.sprint_bytes(), before);
}

#[test]
fn setting_the_current_status_changes_nothing() {
    let p = Project::with_sprint(&sprint(SMALL));
    let before = p.sprint_bytes();
    let out = p.ok(&["set", "1-2-b", "review"]);
    assert!(out.stdout.contains("nothing to do"), "{}", out.describe());
    assert_eq!(p.sprint_bytes(), before, "not even last_updated moves");
    assert!(p.all_events().is_empty());
}

#[test]
fn set_json_reports_the_journaled_changes() {
    let p = Project::with_sprint(&sprint(SMALL));
    let out = p.ok(&["set", "2-1-d", "ready-for-dev", "--json"]);
    let applied: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", out.describe()));
    let applied = applied.as_array().expect("an array");
    let pairs: Vec<(&str, &str, &str)> = applied
        .iter()
        .map(|a| (s(a, "key"), s(a, "from"), s(a, "to")))
        .collect();
    assert_eq!(
        pairs,
        [
            ("2-1-d", "backlog", "ready-for-dev"),
            ("epic-2", "backlog", "in-progress")
        ]
    );
    let log = p.log(&[]);
    let ids: Vec<&serde_json::Value> = log.iter().map(|e| &e["id"]).collect();
    let applied_ids: Vec<&serde_json::Value> = applied.iter().map(|a| &a["event_id"]).collect();
    assert_eq!(ids, applied_ids, "event ids match the journal");
}

#[test]
fn the_epic_goes_done_with_its_last_story() {
    let p = Project::with_sprint(&sprint(SMALL));
    p.ok(&["set", "1-3-c", "ready-for-dev"]);
    p.ok(&["set", "1-2-b", "done"]);
    assert_eq!(
        p.statuses()["epic-1"],
        "in-progress",
        "not while 1-3-c is unfinished"
    );
    for to in ["in-progress", "review"] {
        p.ok(&["set", "1-3-c", to]);
    }
    let out = p.ok(&["set", "1-3-c", "done"]);
    assert!(
        out.stdout.contains("epic-1: in-progress → done"),
        "{}",
        out.describe()
    );
    let st = p.statuses();
    assert_eq!(st["epic-1"], "done");
    assert_eq!(st["epic-2"], "backlog", "other epics stay");
    let epic = p.log(&["--key", "epic-1"]);
    assert_eq!(epic.len(), 1, "{epic:#?}");
    assert_eq!(
        (s(&epic[0], "from"), s(&epic[0], "to"), s(&epic[0], "actor")),
        ("in-progress", "done", "orchestrator")
    );
}

#[test]
fn the_epic_stays_when_auto_epic_done_is_off() {
    let p = Project::with_sprint(&sprint(SMALL));
    p.write("baton.toml", "[sprint]\nauto_epic_done = false\n");
    p.ok(&["set", "1-3-c", "ready-for-dev"]);
    for to in ["in-progress", "review", "done"] {
        p.ok(&["set", "1-3-c", to]);
    }
    let out = p.ok(&["set", "1-2-b", "done"]);
    assert!(!out.stdout.contains("epic-1"), "{}", out.describe());
    let st = p.statuses();
    assert_eq!(
        (st["1-2-b"].as_str(), st["1-3-c"].as_str()),
        ("done", "done")
    );
    assert_eq!(st["epic-1"], "in-progress");
    assert!(p.log(&["--key", "epic-1"]).is_empty());
    // A human may still close it.
    p.ok(&["set", "epic-1", "done"]);
    assert_eq!(p.statuses()["epic-1"], "done");
}

#[test]
fn a_parked_story_whose_marker_a_rewrite_dropped_stays_parked_by_the_journal() {
    let p = Project::with_sprint(&sprint(
        "  epic-1: in-progress\n  1-1-a: in-progress\n  1-2-b: backlog\n  epic-1-retrospective: optional\n",
    ));
    p.ok(&[
        "set",
        "1-1-a",
        "needs-intervention",
        "--note",
        "max review rounds",
    ]);
    let parked = p.read_sprint();
    assert!(
        parked.contains("1-1-a: in-progress  # max review rounds # baton: needs-intervention"),
        "{parked}"
    );
    // BMad's sprint planning rewrites the file and drops every comment.
    let rewritten: String = parked
        .lines()
        .map(|l| match l.split_once("  #") {
            Some((kept, _)) => format!("{kept}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    assert!(!rewritten.contains('#'), "{rewritten}");
    p.write(super::common::SPRINT_REL, &rewritten);
    let board = p.status_json();
    assert_eq!(board["next"]["action"], "create-story", "{board}");
    assert_eq!(board["next"]["key"], "1-2-b", "{board}");
    assert_eq!(board["blocked"][0]["key"], "1-1-a", "{board}");
    let row = board["entries"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["key"] == "1-1-a"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["status"], "needs-intervention", "{board}");
    assert_eq!(row["file_status"], "in-progress", "{board}");
    let shown = p.ok(&["status"]);
    assert!(
        shown
            .stdout
            .contains("lost its `# baton: needs-intervention` comment")
            || shown
                .stderr
                .contains("lost its `# baton: needs-intervention` comment"),
        "{}",
        shown.describe()
    );
}
