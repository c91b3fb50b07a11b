//! The PM against GitHub's own moves: two passes interleaved at every request (one stalled
//! there while the other runs whole) never undo each other's move, and issues GitHub or a
//! person closed are followed to Done or to the owner.

use super::pm_flow::{World, world};
use super::sprint::{Script, run_guarded};
use std::time::{Duration, Instant};

const BOT: &str = "baton-pm[bot]";

/// A comment as the role's turn posts it.
fn says(w: &World, issue: u64, role: &str, header: &str, text: &str) {
    w.fake.add_comment_as(
        issue,
        BOT,
        "NONE",
        &format!("[{header}] {text}\n\n---\n_Agent: {role} · Skills: agent-pipeline, {role}_"),
    );
}

fn history(w: &World, issue: u64) -> String {
    let status = w.status_comments(issue);
    assert_eq!(
        status.len(),
        1,
        "one status comment on #{issue}: {status:#?}"
    );
    status[0].clone()
}

/// Pass A handles the issue (`pm --issue N`, as an event-triggered run does) and is stalled
/// before its `step`-th request; meanwhile pass B (the sweep, `pm`) runs whole; then A goes on.
/// `false` when A made fewer requests than `step` (every step has been tried).
fn interleave(w: &World, n: u64, step: u64) -> bool {
    w.fake.hold_request(step);
    let issue = n.to_string();
    let a_args = ["pm", "--issue", issue.as_str()];
    let cmd = w.command(&a_args);
    let a = std::thread::spawn(move || run_guarded(cmd, &["pm", "--issue", "N"]));
    let started = Instant::now();
    while !w.fake.holding() && !a.is_finished() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "pass A neither stalled nor ended"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let held = w.fake.holding();
    if held {
        let b = w.run(&["pm"]);
        assert_eq!(b.code, Some(0), "step {step}: {}", b.describe());
    }
    w.fake.release();
    let a = a.join().expect("pass A's thread");
    assert_eq!(a.code, Some(0), "step {step}: {}", a.describe());
    held
}

#[test]
fn two_passes_interleaved_at_every_request_never_undo_a_move() {
    let w = world(&Script::new(), "");
    let mut covered = 0;
    for step in 1..=120u64 {
        // An issue the analyst has just handed back: its next move is Needs Architecture.
        let n = w
            .fake
            .add_issue(&format!("Race {step}"), "A story to refine.", &[], "acme");
        w.run(&["pm", "--issue", &n.to_string()]).expect_code(0);
        assert_eq!(w.phase(n), "status/needs-story");
        says(
            &w,
            n,
            "business-analyst",
            "Business Analyst → Product Manager",
            "Story written with two acceptance criteria.",
        );
        let held = interleave(&w, n, step);
        let h = history(&w, n);
        assert_eq!(
            w.phase(n),
            "status/needs-architecture",
            "step {step}: the move was undone\n{h}"
        );
        assert_eq!(w.agent_labels(n), ["agent/architect"], "step {step}\n{h}");
        assert_eq!(
            h.matches("UTC: Needs Story → Needs Architecture").count(),
            1,
            "step {step}: moved once\n{h}"
        );
        assert!(
            !h.contains("Needs Architecture → ") && !h.contains("moved it from"),
            "step {step}: a pass took a label it had listed for a person's move\n{h}"
        );
        if !held {
            covered = step - 1;
            break;
        }
    }
    eprintln!("pass A was stalled before each of its {covered} requests in turn");
    assert!(
        covered > 10,
        "pass A was stalled before each of its requests ({covered})"
    );
    w.check_contract();
}

#[test]
fn an_issue_closed_by_hand_asks_the_owner_once_and_the_owners_done_ends_it() {
    let w = world(&Script::new(), "");
    let n = w
        .fake
        .add_issue("Waitlist", "Fully specified.", &["status/ready"], "acme");
    w.pass();
    assert_eq!(w.phase(n), "status/implementing");
    assert!(w.fake.refs().contains_key("refs/baton/seats/1"));

    // A person closes it without any merge: labels stay on, as on GitHub.
    w.fake.close_issue(n);
    assert!(w.labels(n).contains(&"status/implementing".to_owned()));
    let run = w.pass();
    assert!(!run.stdout.contains("no longer open"), "{}", run.describe());
    assert_eq!(w.phase(n), "status/awaiting-owner");
    assert!(w.agent_labels(n).is_empty());
    assert!(
        !w.fake.refs().contains_key("refs/baton/seats/1"),
        "the seat is given back"
    );
    let h = history(&w, n);
    assert!(h.contains("gave back implementation seat 1"), "{h}");
    let asked = |w: &World| {
        w.comments(n)
            .iter()
            .filter_map(|c| c["body"].as_str().map(str::to_owned))
            .filter(|b| !b.starts_with("<!-- baton:pm-status v1 -->"))
            .filter(|b| b.contains("the issue was closed without a merged pull request"))
            .count()
    };
    assert_eq!(asked(&w), 1);
    // Nothing new: nothing more, no reminder two days on.
    w.fake.advance(jiff::SignedDuration::from_hours(72));
    w.pass();
    assert_eq!(asked(&w), 1);
    assert_eq!(w.phase(n), "status/awaiting-owner");
    // A reply that is not "done" changes nothing while it is closed.
    w.fake.add_comment(n, "acme", "Hmm, let me think about it.");
    w.pass();
    assert_eq!(w.phase(n), "status/awaiting-owner");
    w.fake.add_comment(n, "acme", "Done — shipped by hand.");
    w.pass();
    assert_eq!(w.phase(n), "status/done");
    assert!(history(&w, n).contains("Awaiting Owner → Done"));
    assert_eq!(w.fake.issue(n)["state"], "closed", "the PM reopens nothing");
    w.check_contract();
}

#[test]
fn a_merged_pull_request_makes_an_issue_a_person_closed_done() {
    let w = world(&Script::new(), "");
    let n = w
        .fake
        .add_issue("Waitlist", "Fully specified.", &["status/ready"], "acme");
    w.pass();
    assert_eq!(w.phase(n), "status/implementing");
    // The pull request's text names no issue, so GitHub closes nothing on the merge.
    let pr = w.fake.add_pull(
        "Waitlist",
        &format!("baton/issue-{n}"),
        "main",
        false,
        "acme",
    );
    w.fake.merge(pr).expect("the owner merges");
    assert_eq!(w.fake.issue(n)["state"], "open");
    w.fake.close_issue(n);
    w.pass();
    assert_eq!(w.phase(n), "status/done");
    let h = history(&w, n);
    assert!(h.contains("Implementing → Done"), "{h}");
    assert_eq!(
        h.matches("UTC: gave back implementation seat 1").count(),
        1,
        "{h}"
    );
    assert!(
        !w.fake
            .refs()
            .keys()
            .any(|r| r.starts_with("refs/baton/seats/")),
        "{:?}",
        w.fake.refs()
    );
    // Done: no longer followed.
    w.fake.clear_calls();
    w.pass();
    assert!(
        !w.fake
            .calls()
            .iter()
            .any(|c| c.path == format!("/repos/acme/widgets/issues/{n}/comments")),
        "a Done issue is not read again"
    );
    w.check_contract();
}
