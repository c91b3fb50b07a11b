//! `baton demo` end to end: the bundled example project driven to done in a fresh directory,
//! with real `cargo test` runs, commits and journal; a non-empty `--dir` is refused.

use super::common::{Project, run_in};
use super::sprint::{events_and_report, git, run_guarded};
use serde_json::Value;

#[test]
fn the_demo_completes_three_stories_one_after_a_fix_round() {
    let tmp = Project::empty();
    let dir = tmp.root().join("tally");
    let args = [
        "demo",
        "--dir",
        dir.to_str().expect("UTF-8 temp path"),
        "--json",
    ];
    // The demo's own `cargo test` builds into the demo directory, not a shared target dir.
    let mut cmd = tmp.command(&args);
    cmd.env_remove("CARGO_TARGET_DIR")
        .env("BATON_CONFIG_DIR", tmp.root().join("no-user-config"));
    let run = run_guarded(cmd, &args).expect_code(0);
    let (events, report) = events_and_report(&run);
    assert_eq!(report["end"], "completed", "{report:#}");
    assert_eq!(
        (report["total"].as_u64(), report["completed"].as_u64()),
        (Some(3), Some(3))
    );
    let stories = report["stories"].as_array().expect("stories");
    assert!(
        stories.iter().all(|s| s["final_status"] == "done"),
        "{report:#}"
    );
    let rounds: Vec<u64> = stories
        .iter()
        .map(|s| s["review_rounds"].as_u64().expect("review_rounds"))
        .collect();
    assert_eq!(rounds.iter().filter(|r| **r == 1).count(), 1, "{rounds:?}");
    assert_eq!(rounds.iter().filter(|r| **r == 0).count(), 2, "{rounds:?}");
    // The test command really ran, once per dev or fix step, and passed.
    let tests: Vec<&Value> = events.iter().filter(|e| e["event"] == "tests").collect();
    assert_eq!(tests.len(), 4, "{tests:?}");
    assert!(tests.iter().all(|t| t["passed"] == true), "{tests:?}");

    // The artifacts agree: every story done in the file, one commit per stage, a clean tree.
    let status = run_in(&dir, &["status", "--json"]).expect_code(0);
    let status = super::common::statuses_of(&super::common::parse_json(&status));
    for key in [
        "1-1-count-words",
        "1-2-count-lines",
        "2-1-summary-line",
        "epic-1",
        "epic-2",
    ] {
        assert_eq!(status[key], "done", "{status:?}");
    }
    let log = git(&dir, &["log", "--reverse", "--format=%s"]);
    // The stories' commits, in order (retrospective commits may sit between them).
    let subjects: Vec<&str> = log.lines().filter(|l| l.starts_with("story(")).collect();
    assert_eq!(
        subjects,
        [
            "story(1-1): create",
            "story(1-1): dev",
            "story(1-1): review passed",
            "story(1-2): create",
            "story(1-2): dev",
            "story(1-2): review round 1",
            "story(1-2): fix round 1",
            "story(1-2): review passed",
            "story(2-1): create",
            "story(2-1): dev",
            "story(2-1): review passed",
        ]
    );
    let dirty = git(&dir, &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(dirty, "", "the demo left uncommitted work");
}

#[test]
fn the_demo_refuses_a_directory_that_is_not_empty() {
    let tmp = Project::empty();
    tmp.write("mine.txt", "precious\n");
    let dir = tmp.root().to_str().expect("UTF-8 temp path").to_owned();
    let args = ["demo", "--dir", dir.as_str()];
    let run = run_guarded(tmp.command(&args), &args).expect_code(1);
    assert!(run.stderr.contains("not empty"), "{}", run.describe());
    let left: Vec<_> = std::fs::read_dir(tmp.root())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        left,
        ["mine.txt"],
        "the refused demo wrote into the directory"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.root().join("mine.txt")).expect("mine"),
        "precious\n"
    );
}
