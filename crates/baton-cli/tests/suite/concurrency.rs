//! Concurrency: 8 processes setting 1,600 stories of one sprint file in parallel lose nothing
//! (file, validation and journal agree, each event exactly once), and processes that open a fresh
//! journal at the same moment all succeed.

use super::common::{Project, SPRINT_REL, parse_json, run_in, s, utc_stamp};
use std::collections::BTreeMap;
use std::time::SystemTime;

const EPICS: usize = 8;
const STORIES: usize = 200;
const WRITERS: usize = 8;

fn story_key(epic: usize, story: usize) -> String {
    format!("{epic}-{story}-story-number-{story}")
}

/// 8 epics × 200 stories, all `backlog`, with a fresh stamp (no staleness warning).
fn big_sprint() -> String {
    let now = utc_stamp(SystemTime::now());
    let mut text = format!(
        "# A big sprint\n\ngenerated: {now}\nlast_updated: {now}\nproject: big\n\
         project_key: NOKEY\ntracking_system: file-system\n\
         story_location: _bmad-output/implementation-artifacts\n\ndevelopment_status:\n"
    );
    for e in 1..=EPICS {
        if e > 1 {
            text.push('\n');
        }
        text.push_str(&format!("  epic-{e}: backlog\n"));
        for st in 1..=STORIES {
            text.push_str(&format!("  {}: backlog\n", story_key(e, st)));
        }
        text.push_str(&format!("  epic-{e}-retrospective: optional\n"));
    }
    text
}

#[test]
fn eight_processes_set_1600_stories_and_nothing_is_lost() {
    let original = big_sprint();
    // No `baton init`: the writers create the journal between them.
    let p = Project::with_sprint(&original);
    let all: Vec<(usize, usize)> = (1..=EPICS)
        .flat_map(|e| (1..=STORIES).map(move |st| (e, st)))
        .collect();
    // Writer w takes every 8th story, so every writer touches every epic and epics are lifted
    // under contention.
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let root = p.root().to_path_buf();
            let mine: Vec<String> = all
                .iter()
                .skip(w)
                .step_by(WRITERS)
                .map(|&(e, st)| story_key(e, st))
                .collect();
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for key in &mine {
                    let run = run_in(&root, &["set", key, "ready-for-dev"]);
                    if run.code != Some(0) {
                        failures.push(run.describe());
                    }
                }
                (mine.len(), failures)
            })
        })
        .collect();
    let mut failures = Vec::new();
    let mut done = 0;
    for w in writers {
        let (n, f) = w.join().expect("writer thread");
        done += n;
        failures.extend(f);
    }
    assert_eq!(done, EPICS * STORIES);
    assert!(
        failures.is_empty(),
        "{} of {done} `baton set` runs failed; first:\n{}",
        failures.len(),
        failures[0]
    );

    // The file: every story ready-for-dev, every epic in-progress, nothing else changed.
    let text = p.read_sprint();
    let stamp = super::common::field_value(&text, "last_updated");
    let mut expected = String::new();
    for line in original.lines() {
        let line = if line.starts_with("last_updated: ") {
            format!("last_updated: {stamp}")
        } else if line.starts_with("  epic-") && line.ends_with(": backlog") {
            line.replace(": backlog", ": in-progress")
        } else if line.ends_with(": backlog") {
            line.replace(": backlog", ": ready-for-dev")
        } else {
            line.to_owned()
        };
        expected.push_str(&line);
        expected.push('\n');
    }
    super::common::assert_same_text(&text, &expected, "the sprint file after 1,600 sets");

    let status = p.status_json();
    let statuses = super::common::statuses_of(&status);
    for &(e, st) in &all {
        assert_eq!(statuses[&story_key(e, st)], "ready-for-dev");
    }
    for e in 1..=EPICS {
        assert_eq!(statuses[&format!("epic-{e}")], "in-progress");
    }
    assert_eq!(status["valid"], true);
    assert_eq!(
        status["problems"],
        serde_json::json!([]),
        "no problem, and no journal mismatch"
    );
    p.ok(&["status", "--validate"]);

    // The journal: each story's event exactly once, applied; each epic's lift exactly once.
    let events = p.all_events();
    let not_applied: Vec<_> = events
        .iter()
        .filter(|e| s(e, "state") != "applied")
        .collect();
    assert!(
        not_applied.is_empty(),
        "pending or abandoned events: {not_applied:#?}"
    );
    let mut per_key: BTreeMap<&str, Vec<&serde_json::Value>> = BTreeMap::new();
    for e in &events {
        per_key.entry(s(e, "key")).or_default().push(e);
    }
    for &(e, st) in &all {
        let key = story_key(e, st);
        let evs = per_key.get(key.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        assert_eq!(evs.len(), 1, "`{key}` has {} events: {evs:#?}", evs.len());
        assert_eq!(
            (s(evs[0], "from"), s(evs[0], "to"), s(evs[0], "actor")),
            ("backlog", "ready-for-dev", "human")
        );
    }
    for e in 1..=EPICS {
        let key = format!("epic-{e}");
        let evs = per_key.get(key.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        assert_eq!(evs.len(), 1, "`{key}` has {} events: {evs:#?}", evs.len());
        assert_eq!(
            (s(evs[0], "from"), s(evs[0], "to"), s(evs[0], "actor")),
            ("backlog", "in-progress", "orchestrator")
        );
        // Lifted together with one of its own stories.
        let group = &evs[0]["group"];
        assert!(
            events.iter().any(|x| &x["group"] == group
                && s(x, "key").starts_with(&format!("{e}-"))
                && s(x, "to") == "ready-for-dev"),
            "`{key}` was lifted with one of its stories"
        );
    }
    assert_eq!(events.len(), EPICS * STORIES + EPICS);
    // Plain `log --json` (applied only) agrees.
    assert_eq!(p.log(&[]).len(), events.len());

    let dir = p.root().join(SPRINT_REL);
    let dir = dir.parent().unwrap();
    let strays: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "sprint-status.yaml")
        .collect();
    assert!(
        strays.is_empty(),
        "files left beside the sprint file: {strays:?}"
    );
}

#[test]
fn processes_opening_a_fresh_journal_at_once_all_succeed() {
    let body: String = (1..=8)
        .map(|i| format!("  epic-{i}: backlog\n  {i}-1-a: backlog\n"))
        .collect();
    for round in 0..20 {
        let p = Project::with_sprint(&super::common::sprint(&body));
        // A start line: each process is started by a shell that first reads a FIFO, so all of
        // them block until the test opens it, then open the fresh journal together. (baton
        // itself refuses a FIFO as `baton.toml`, so the gate is outside baton.)
        let gate_path = p.root().join("start-line");
        let made = std::process::Command::new("mkfifo")
            .arg(&gate_path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo failed");
        let children: Vec<_> = (1..=8)
            .map(|i| {
                std::process::Command::new("sh")
                    .arg("-c")
                    .arg("read _ < \"$0\"; exec \"$@\"")
                    .arg(&gate_path)
                    .arg(super::common::BATON)
                    .arg("-C")
                    .arg(p.root())
                    .args(["set", &format!("{i}-1-a"), "ready-for-dev"])
                    .env("TZ", "UTC")
                    .env_remove("BATON_PROJECT")
                    .current_dir(std::env::temp_dir())
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn baton")
            })
            .collect();
        // Give them time to reach the FIFO (a late one just reads the plain file below).
        std::thread::sleep(std::time::Duration::from_millis(100));
        // Read+write never blocks on Linux and releases every blocked reader.
        let gate = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&gate_path)
            .expect("open the FIFO");
        let plain = p.root().join("start-line.plain");
        std::fs::write(&plain, "").unwrap();
        std::fs::rename(&plain, &gate_path).unwrap();
        drop(gate); // EOF: every shell goes on to run baton.
        for c in children {
            let out = c.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "round {round}: {:?}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let st = super::common::statuses_of(&parse_json(&p.ok(&["status", "--json"])));
        for i in 1..=8 {
            assert_eq!(st[&format!("{i}-1-a")], "ready-for-dev", "round {round}");
            assert_eq!(st[&format!("epic-{i}")], "in-progress", "round {round}");
        }
        assert_eq!(p.all_events().len(), 16, "round {round}");
    }
}
