use super::*;
use baton_core::memory::{Kind, Scope, Source};
use std::sync::{Arc, Mutex};

/// A backend that fails while `down` is set and counts its calls.
#[derive(Clone, Default)]
struct Flaky {
    down: Arc<Mutex<bool>>,
    calls: Arc<Mutex<u32>>,
    stored: Arc<Mutex<Vec<String>>>,
}

impl External for Flaky {
    fn name(&self) -> String {
        "flaky".into()
    }
    fn write(&mut self, draft: &Draft) -> Result<(), String> {
        *self.calls.lock().unwrap() += 1;
        if *self.down.lock().unwrap() {
            return Err("connection refused".into());
        }
        self.stored.lock().unwrap().push(draft.text.clone());
        Ok(())
    }
    fn recall(&mut self, _q: &Query, _w: &str) -> Result<Vec<Candidate>, String> {
        *self.calls.lock().unwrap() += 1;
        if *self.down.lock().unwrap() {
            return Err("connection refused".into());
        }
        Ok(vec![Candidate {
            id: -1,
            kind: Kind::Pattern,
            importance: 7,
            text: "remote".into(),
            scope: Scope::project(),
            strength: 1,
            age_days: 0.0,
            text_match: 0.0,
        }])
    }
}

fn setup() -> (
    tempfile::TempDir,
    Flaky,
    Degrading<Flaky>,
    Arc<Mutex<Vec<Duration>>>,
) {
    let dir = tempfile::tempdir().unwrap();
    let flaky = Flaky::default();
    let pauses = Arc::new(Mutex::new(Vec::new()));
    let p = pauses.clone();
    let d = Degrading::new(
        flaky.clone(),
        WriteQueue::new(dir.path().join(".memory-queue")),
        Box::new(move |d| p.lock().unwrap().push(d)),
    );
    (dir, flaky, d, pauses)
}

fn draft(i: usize) -> Draft {
    Draft::new(Kind::Pattern, Source::Retrospective, format!("lesson {i}"))
}

#[test]
fn a_failing_write_is_tried_three_times_100_ms_apart_then_queued() {
    let (_dir, flaky, mut d, pauses) = setup();
    *flaky.down.lock().unwrap() = true;
    let sent = d.write(&draft(1), 1_000).unwrap();
    assert!(matches!(sent, Sent::Queued { dropped: 0, .. }), "{sent:?}");
    assert_eq!(*flaky.calls.lock().unwrap(), 3);
    assert_eq!(*pauses.lock().unwrap(), vec![RETRY_PAUSE, RETRY_PAUSE]);
    assert_eq!(
        d.health(2_000).unwrap(),
        Health::Degraded {
            since: 1_000,
            queued: 1
        }
    );
}

#[test]
fn the_queue_is_capped_at_100_and_sent_in_order_when_the_backend_is_back() {
    let (_dir, flaky, mut d, _) = setup();
    *flaky.down.lock().unwrap() = true;
    let mut dropped = 0;
    for i in 1..=105 {
        if let Sent::Queued { dropped: n, .. } = d.write(&draft(i), 1_000).unwrap() {
            dropped += n;
        }
    }
    assert_eq!(dropped, 5);
    *flaky.down.lock().unwrap() = false;
    assert_eq!(d.write(&draft(106), 2_000).unwrap(), Sent::Stored);
    let stored = flaky.stored.lock().unwrap().clone();
    assert_eq!(stored.len(), 101);
    assert_eq!(stored[0], "lesson 106");
    assert_eq!(stored[1], "lesson 6");
    assert_eq!(stored[100], "lesson 105");
    assert_eq!(d.health(3_000).unwrap(), Health::Up);
}

#[test]
fn recalls_are_cached_five_minutes_and_empty_when_down() {
    let (_dir, flaky, mut d, _) = setup();
    let q = Query::default();
    assert_eq!(d.recall(&q, "w", 0).len(), 1);
    *flaky.down.lock().unwrap() = true;
    let calls = *flaky.calls.lock().unwrap();
    assert_eq!(d.recall(&q, "w", 299_000).len(), 1, "served from the cache");
    assert_eq!(*flaky.calls.lock().unwrap(), calls);
    assert!(d.recall(&q, "w", 300_000).is_empty(), "the cache expired");
    assert_eq!(*flaky.calls.lock().unwrap(), calls + 3);
}

#[test]
fn four_hours_down_marks_it_unavailable_and_stops_trying() {
    let (dir, flaky, mut d, _) = setup();
    *flaky.down.lock().unwrap() = true;
    d.write(&draft(1), 0).unwrap();
    let four_hours = millis(GIVE_UP_AFTER);
    assert!(matches!(
        d.health(four_hours - 1).unwrap(),
        Health::Degraded { .. }
    ));
    assert_eq!(
        d.health(four_hours).unwrap(),
        Health::Unavailable { since: 0 }
    );
    let calls = *flaky.calls.lock().unwrap();
    let sent = d.write(&draft(2), four_hours).unwrap();
    assert!(
        matches!(sent, Sent::Queued { ref why, .. } if why.contains("unavailable")),
        "{sent:?}"
    );
    assert!(d.recall(&Query::default(), "w", four_hours).is_empty());
    assert_eq!(*flaky.calls.lock().unwrap(), calls, "not tried again");
    // The mark outlives the process: a new wrapper over the same queue knows.
    let again = Degrading::new(
        flaky.clone(),
        WriteQueue::new(dir.path().join(".memory-queue")),
        Box::new(|_| {}),
    );
    assert_eq!(
        again.health(four_hours).unwrap(),
        Health::Unavailable { since: 0 }
    );
}

#[test]
fn a_command_backend_that_cannot_start_or_answer_fails_cleanly() {
    let mut missing = CommandBackend::new(
        vec!["/nonexistent/memory-bridge".into()],
        Duration::from_secs(1),
    );
    assert!(
        missing
            .write(&draft(1))
            .unwrap_err()
            .contains("memory-bridge")
    );
    let mut silent = CommandBackend::new(
        vec!["sh".into(), "-c".into(), "sleep 5".into()],
        Duration::from_millis(200),
    );
    assert!(
        silent
            .write(&draft(1))
            .unwrap_err()
            .contains("did not answer")
    );
    let mut garbage = CommandBackend::new(
        vec![
            "sh".into(),
            "-c".into(),
            "cat >/dev/null; echo not-json".into(),
        ],
        Duration::from_secs(5),
    );
    assert!(
        garbage
            .recall(&Query::default(), "w")
            .unwrap_err()
            .contains("no JSON")
    );
}

#[test]
fn a_command_backend_gets_the_request_and_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("req");
    // SAFETY-free: the variable is only read by the child, which must not see it.
    let script = format!(
        "cat > {0}; env >> {0}; echo '[{{\"kind\":\"decision\",\"importance\":9,\"source\":\"memlog\",\"text\":\"use sqlite\",\"unit\":null,\"scope\":{{}}}}]'",
        log.display()
    );
    let mut b = CommandBackend::new(
        vec!["sh".into(), "-c".into(), script],
        Duration::from_secs(5),
    );
    let found = b.recall(&Query::default(), "database").unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].text, "use sqlite");
    assert!(found[0].id < 0);
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(seen.starts_with("{\"op\":\"recall\""), "{seen}");
    assert!(!seen.contains("API_KEY"), "{seen}");
}
