//! `baton log`: the JSON schema of events, `--key`, `--limit` (newest kept), `--all`, and the
//! plain table (actor, key, from → to, forced, reason).

use super::common::{Project, s, sprint};
use serde_json::Value;

/// A project with six applied events: 1-1-a walks to review and back, epic-1 follows, 1-2-b is
/// forced ahead.
fn project_with_history() -> Project {
    let p = Project::with_sprint(&sprint(
        "  epic-1: backlog\n  1-1-a: backlog\n  1-2-b: backlog\n",
    ));
    for to in ["ready-for-dev", "in-progress", "review", "in-progress"] {
        p.ok(&["set", "1-1-a", to]);
    }
    p.ok(&[
        "set",
        "1-2-b",
        "review",
        "--force",
        "--reason",
        "done elsewhere",
    ]);
    p
}

fn triple(e: &Value) -> (&str, &str, &str) {
    (s(e, "key"), s(e, "from"), s(e, "to"))
}

#[test]
fn log_json_lists_every_event_in_order_with_its_fields() {
    let p = project_with_history();
    let events = p.log(&[]);
    let got: Vec<_> = events.iter().map(triple).collect();
    assert_eq!(
        got,
        [
            ("1-1-a", "backlog", "ready-for-dev"),
            ("epic-1", "backlog", "in-progress"),
            ("1-1-a", "ready-for-dev", "in-progress"),
            ("1-1-a", "in-progress", "review"),
            ("1-1-a", "review", "in-progress"),
            ("1-2-b", "backlog", "review"),
        ]
    );
    let ids: Vec<i64> = events.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
    for e in &events {
        for field in [
            "id", "group", "at", "actor", "key", "from", "to", "reason", "forced", "run_id",
            "state",
        ] {
            assert!(e.get(field).is_some(), "`{field}` missing in {e}");
        }
        assert_eq!(s(e, "state"), "applied");
        assert_eq!(e["run_id"], Value::Null);
    }
    // The epic's event was written with the story's, in one group, by the orchestrator.
    assert_eq!(events[1]["group"], events[0]["group"]);
    assert_ne!(events[2]["group"], events[0]["group"]);
    assert_eq!(s(&events[1], "actor"), "orchestrator");
    assert_eq!(s(&events[0], "actor"), "human");
    assert_eq!(events[5]["forced"], true);
    assert_eq!(s(&events[5], "reason"), "done elsewhere");
    assert!(events[..5].iter().all(|e| e["forced"] == false));
}

#[test]
fn log_key_filters() {
    let p = project_with_history();
    let a = p.log(&["--key", "1-1-a"]);
    assert_eq!(a.len(), 4, "{a:#?}");
    assert!(a.iter().all(|e| s(e, "key") == "1-1-a"));
    let epic = p.log(&["--key", "epic-1"]);
    assert_eq!(
        epic.iter().map(triple).collect::<Vec<_>>(),
        [("epic-1", "backlog", "in-progress")]
    );
    assert!(p.log(&["--key", "9-9-none"]).is_empty());

    let plain = p.ok(&["log", "--key", "1-2-b"]);
    assert!(plain.stdout.contains("1-2-b"), "{}", plain.describe());
    assert!(!plain.stdout.contains("1-1-a"), "{}", plain.describe());
    assert!(!plain.stdout.contains("epic-1"), "{}", plain.describe());
}

#[test]
fn log_limit_keeps_the_newest() {
    let p = project_with_history();
    let all = p.log(&[]);
    let last2 = p.log(&["--limit", "2"]);
    assert_eq!(last2, all[all.len() - 2..].to_vec());
    let one = p.log(&["--limit", "1", "--key", "1-1-a"]);
    assert_eq!(
        one.iter().map(triple).collect::<Vec<_>>(),
        [("1-1-a", "review", "in-progress")]
    );
    assert_eq!(p.log(&["--limit", "100"]), all);
    let plain = p.ok(&["log", "--limit", "1"]);
    assert!(plain.stdout.contains("1-2-b"), "{}", plain.describe());
    assert!(!plain.stdout.contains("1-1-a"), "{}", plain.describe());
}

#[test]
fn plain_log_lists_actor_key_and_change() {
    let p = project_with_history();
    let out = p.ok(&["log"]);
    let rows: Vec<&str> = out.stdout.lines().collect();
    let has = |parts: &[&str]| rows.iter().any(|r| parts.iter().all(|p| r.contains(p)));
    assert!(
        has(&["human", "1-1-a", "backlog → ready-for-dev"]),
        "{}",
        out.stdout
    );
    assert!(
        has(&["orchestrator", "epic-1", "backlog → in-progress"]),
        "{}",
        out.stdout
    );
    assert!(
        has(&["human", "1-1-a", "review → in-progress"]),
        "{}",
        out.stdout
    );
    assert!(
        has(&[
            "human",
            "1-2-b",
            "backlog → review (forced)",
            "done elsewhere"
        ]),
        "{}",
        out.stdout
    );
    assert_eq!(
        rows.iter().filter(|r| r.contains(" → ")).count(),
        6,
        "one row per event\n{}",
        out.stdout
    );
    let all = p.ok(&["log", "--all"]);
    assert_eq!(
        all.stdout.lines().filter(|r| r.contains("applied")).count(),
        6,
        "`--all` shows the state\n{}",
        all.stdout
    );
}

#[test]
fn an_empty_journal_says_so() {
    let p = Project::with_sprint(&sprint("  epic-1: backlog\n"));
    let out = p.ok(&["log"]);
    assert!(out.stdout.contains("no events yet"), "{}", out.describe());
    assert!(p.log(&[]).is_empty());
}
