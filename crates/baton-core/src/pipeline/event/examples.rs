//! [`scope`] against GitHub's own webhook payloads: the examples of npm's
//! `@octokit/webhooks-examples@7.6.1` (its `api.github.com/index.json`, which `.ci/run` unpacks
//! into `target/webhook-examples/` and names in `BATON_TEST_WEBHOOK_EXAMPLES`). Every example
//! of every event reads without an error, and the ones the pipeline acts on give the issues the
//! test reads from the payload itself. The examples come from a repository that is not the
//! pipeline's (branch `changes`), so the tests also give them a pipeline branch, a fork or a
//! closing keyword, keeping the rest of GitHub's payload as it is. Without the variable the
//! tests print a `SKIPPED:` notice and pass, unless `BATON_TEST_WEBHOOK_EXAMPLES_REQUIRED=1`
//! (CI), which makes a missing file fail.

use super::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const ENV_FILE: &str = "BATON_TEST_WEBHOOK_EXAMPLES";
const ENV_REQUIRED: &str = "BATON_TEST_WEBHOOK_EXAMPLES_REQUIRED";

/// Every event's examples, by event name; `None` after a skip notice.
fn examples() -> Option<&'static BTreeMap<String, Vec<Value>>> {
    static ALL: OnceLock<Option<BTreeMap<String, Vec<Value>>>> = OnceLock::new();
    ALL.get_or_init(|| {
        let Some(file) = std::env::var_os(ENV_FILE) else {
            let msg = format!(
                "GitHub's webhook payloads are not installed: run .ci/run (it unpacks \
                 @octokit/webhooks-examples@7.6.1's api.github.com/index.json into \
                 target/webhook-examples) or set {ENV_FILE} to that file"
            );
            assert!(
                std::env::var(ENV_REQUIRED).as_deref() != Ok("1"),
                "{ENV_REQUIRED}=1 but {msg}"
            );
            eprintln!("SKIPPED (webhook payloads): {msg}");
            return None;
        };
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{ENV_FILE}={}: {e}", file.to_string_lossy()));
        let index: Vec<Value> = serde_json::from_str(&text).unwrap();
        let mut by_name = BTreeMap::new();
        for event in index {
            let name = event["name"].as_str().unwrap().to_owned();
            let examples = event["examples"].as_array().unwrap().clone();
            by_name.insert(name, examples);
        }
        Some(by_name)
    })
    .as_ref()
}

/// The examples of `event` with `action`, at least one.
fn of<'a>(all: &'a BTreeMap<String, Vec<Value>>, event: &str, action: &str) -> Vec<&'a Value> {
    let found: Vec<&Value> = all[event]
        .iter()
        .filter(|e| e["action"].as_str() == Some(action))
        .collect();
    assert!(!found.is_empty(), "no `{event}.{action}` example");
    found
}

fn read(event: &str, payload: &Value) -> Trigger {
    scope(event, &payload.to_string()).unwrap_or_else(|e| panic!("{event}: {e}\n{payload:#}"))
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

#[test]
fn every_real_payload_reads() {
    let Some(all) = examples() else { return };
    // The events the PM's workflows run on must be there, or this test checks nothing.
    for event in [
        "issues",
        "issue_comment",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "check_suite",
        "check_run",
        "workflow_dispatch",
        "workflow_run",
        "status",
        "push",
    ] {
        assert!(
            all.get(event).is_some_and(|e| !e.is_empty()),
            "no `{event}` examples"
        );
    }
    let mut read_ok = 0;
    let mut failures = Vec::new();
    for (event, examples) in all {
        for (i, payload) in examples.iter().enumerate() {
            match scope(event, &payload.to_string()) {
                Ok(t) => {
                    assert_eq!(&t.event, event);
                    assert_eq!(t.action.as_deref(), payload["action"].as_str());
                    assert_eq!(t.sender, text(&payload["sender"]["login"]), "{event}[{i}]");
                    read_ok += 1;
                }
                Err(e) => failures.push(format!("{event}[{i}]: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{read_ok} real payloads of {} events read", all.len());
    assert!(read_ok > 300, "only {read_ok} examples");
}

#[test]
fn issue_events_name_their_issue() {
    let Some(all) = examples() else { return };
    let mut checked = 0;
    for payload in &all["issues"] {
        let t = read("issues", payload);
        let issue = &payload["issue"];
        let n = num(&issue["number"]);
        assert_eq!(t.number, Some(n));
        assert_eq!(t.author_association, text(&issue["author_association"]));
        let want = if issue.get("pull_request").is_some() {
            // A pull request seen as an issue carries no branch.
            Scope::PullRequests(vec![n])
        } else if matches!(payload["action"].as_str(), Some("deleted" | "transferred")) {
            Scope::All
        } else {
            Scope::Issues(vec![n])
        };
        assert_eq!(t.scope, want, "issues.{:?}", t.action);
        checked += 1;
    }
    assert!(checked >= 20, "{checked}");
    // The handback the PM waits for: an agent removes its label.
    for payload in of(all, "issues", "unlabeled")
        .into_iter()
        .chain(of(all, "issues", "labeled"))
    {
        let t = read("issues", payload);
        assert_eq!(
            t.scope,
            Scope::Issues(vec![num(&payload["issue"]["number"])])
        );
        assert_eq!(t.label, text(&payload["label"]["name"]));
        assert!(t.label.is_some());
        assert_eq!(t.sender_is_bot, payload["sender"]["type"] == "Bot");
    }
    // A pull request's closing keyword names its issue.
    let pr_issue = all["issues"]
        .iter()
        .find(|p| p["issue"].get("pull_request").is_some())
        .unwrap();
    let mut p = pr_issue.clone();
    p["issue"]["body"] = json!("Implements the story.\n\nCloses #31");
    assert_eq!(read("issues", &p).scope, Scope::Issues(vec![31]));
}

#[test]
fn comments_name_their_issue() {
    let Some(all) = examples() else { return };
    for payload in &all["issue_comment"] {
        let t = read("issue_comment", payload);
        let n = num(&payload["issue"]["number"]);
        assert_eq!(t.scope, Scope::Issues(vec![n]));
        assert_eq!(t.number, Some(n));
        assert_eq!(
            t.author_association,
            text(&payload["comment"]["author_association"])
        );
    }
    let created = of(all, "issue_comment", "created")[0];
    // On a pull request, the comment's issue is found through the pull request's branch.
    let mut on_pr = created.clone();
    on_pr["issue"]["pull_request"] = json!({"url": "https://api.github.com/repos/o/r/pulls/9"});
    let n = num(&created["issue"]["number"]);
    assert_eq!(
        read("issue_comment", &on_pr).scope,
        Scope::PullRequests(vec![n])
    );
    // The PM editing its own status comment is not news; an agent's handback is.
    for action in ["created", "edited"] {
        let mut p = of(all, "issue_comment", action)[0].clone();
        p["comment"]["body"] = json!(format!(
            "{}\n## PM Status",
            super::super::status_comment::MARKER
        ));
        assert!(matches!(read("issue_comment", &p).scope, Scope::Ignore(_)));
        p["comment"]["body"] = json!("[Backend Developer → Product Manager] PR #42 opened.");
        assert_eq!(
            read("issue_comment", &p).scope,
            Scope::Issues(vec![num(&p["issue"]["number"])])
        );
    }
}

/// The pull request events: GitHub's examples as they are (not the pipeline's), then on a
/// pipeline branch, from a fork, and with a closing keyword.
fn check_pull_request_event(event: &str, assoc_of: &str) {
    let Some(all) = examples() else { return };
    assert!(!all[event].is_empty(), "no `{event}` examples");
    for payload in &all[event] {
        let pr = &payload["pull_request"];
        let n = num(&pr["number"]);
        let head = pr["head"]["ref"].as_str().unwrap();
        let issue = n + 1000;
        let t = read(event, payload);
        assert_eq!(t.number, Some(n));
        assert_eq!(
            t.author_association,
            text(&payload[assoc_of]["author_association"])
        );
        // As GitHub sent it: another branch, no closing keyword.
        assert!(issue_of_branch(head).is_none());
        assert!(
            closing_refs(pr["body"].as_str().unwrap_or(""), None).is_empty(),
            "{event}: the example's body closes an issue; this test assumes not"
        );
        let Scope::Ignore(why) = &t.scope else {
            panic!("{event}: {:?}", t.scope)
        };
        assert!(
            why.contains(&format!("#{n}")) && why.contains(head),
            "{why}"
        );

        let mut on_branch = payload.clone();
        on_branch["pull_request"]["head"]["ref"] = json!(branch_of_issue(issue));
        assert_eq!(read(event, &on_branch).scope, Scope::Issues(vec![issue]));

        let mut from_fork = on_branch.clone();
        from_fork["pull_request"]["head"]["repo"]["id"] = json!(1);
        assert!(matches!(read(event, &from_fork).scope, Scope::Ignore(_)));
        let mut fork_gone = on_branch.clone();
        fork_gone["pull_request"]["head"]["repo"] = Value::Null;
        assert!(matches!(read(event, &fork_gone).scope, Scope::Ignore(_)));

        let mut closing = payload.clone();
        let repo = payload["repository"]["full_name"].as_str().unwrap();
        closing["pull_request"]["body"] = json!(format!("Fixes #{issue}, resolves {repo}#7"));
        assert_eq!(read(event, &closing).scope, Scope::Issues(vec![7, issue]));
        from_fork["pull_request"]["body"] = json!(format!("Fixes #{issue}"));
        assert_eq!(read(event, &from_fork).scope, Scope::Issues(vec![issue]));
    }
}

#[test]
fn pull_requests_map_to_their_issue() {
    check_pull_request_event("pull_request", "pull_request");
}

#[test]
fn reviews_map_to_their_pull_requests_issue() {
    check_pull_request_event("pull_request_review", "review");
}

#[test]
fn review_comments_and_threads_map_to_their_pull_requests_issue() {
    check_pull_request_event("pull_request_review_comment", "comment");
    check_pull_request_event("pull_request_review_thread", "pull_request");
}

/// The CI events: GitHub's examples, then on pipeline branches.
fn check_ci_event(event: &str) {
    let Some(all) = examples() else { return };
    let completed = of(all, event, "completed");
    for payload in &all[event] {
        if payload["action"] != "completed" {
            let Scope::Ignore(why) = read(event, payload).scope else {
                panic!(
                    "{event}.{}: a check that has not finished",
                    payload["action"]
                )
            };
            assert!(why.contains("nothing has finished"), "{why}");
        }
    }
    for payload in completed {
        let obj = &payload[event];
        let branch_at = if event == "check_run" {
            &obj["check_suite"]["head_branch"]
        } else {
            &obj["head_branch"]
        };
        let branch = branch_at.as_str().unwrap();
        let pulls = obj["pull_requests"].as_array().unwrap();
        assert!(issue_of_branch(branch).is_none());
        assert!(matches!(read(event, payload).scope, Scope::Ignore(_)));

        // Its head branch is an issue's.
        let mut p = payload.clone();
        let at = if event == "check_run" {
            &mut p[event]["check_suite"]["head_branch"]
        } else {
            &mut p[event]["head_branch"]
        };
        *at = json!(branch_of_issue(77));
        assert_eq!(read(event, &p).scope, Scope::Issues(vec![77]));
        if event == "workflow_run" {
            // The same branch name in a fork is not the pipeline's.
            let repo = num(&p[event]["repository"]["id"]);
            assert_eq!(num(&p[event]["head_repository"]["id"]), repo);
            p[event]["head_repository"]["id"] = json!(repo + 1);
            assert!(matches!(read(event, &p).scope, Scope::Ignore(_)));
        }

        // Its pull requests' heads are issues' (one from a fork, not).
        if pulls.is_empty() {
            continue;
        }
        let mut p = payload.clone();
        let mut want = Vec::new();
        for pr in p[event]["pull_requests"].as_array_mut().unwrap() {
            let issue = num(&pr["number"]) + 500;
            pr["head"]["ref"] = json!(branch_of_issue(issue));
            want.push(issue);
        }
        want.sort_unstable();
        want.dedup();
        assert_eq!(read(event, &p).scope, Scope::Issues(want));
        p[event]["pull_requests"][0]["head"]["repo"]["id"] = json!(1);
        if pulls.len() == 1 {
            assert!(matches!(read(event, &p).scope, Scope::Ignore(_)));
        }
    }
}

#[test]
fn finished_check_suites_map_by_branch_and_pull_request() {
    check_ci_event("check_suite");
}

#[test]
fn finished_check_runs_map_by_branch_and_pull_request() {
    check_ci_event("check_run");
}

#[test]
fn finished_workflow_runs_map_by_branch_and_pull_request() {
    check_ci_event("workflow_run");
}

#[test]
fn pushes_and_statuses_map_by_branch() {
    let Some(all) = examples() else { return };
    for payload in &all["push"] {
        assert!(matches!(read("push", payload).scope, Scope::Ignore(_)));
        let mut p = payload.clone();
        p["ref"] = json!(format!("refs/heads/{}", branch_of_issue(8)));
        assert_eq!(read("push", &p).scope, Scope::Issues(vec![8]));
        p["ref"] = json!(format!("refs/tags/{}", branch_of_issue(8)));
        assert!(matches!(read("push", &p).scope, Scope::Ignore(_)));
    }
    for payload in &all["status"] {
        assert!(matches!(read("status", payload).scope, Scope::Ignore(_)));
        let mut p = payload.clone();
        p["branches"][0]["name"] = json!(branch_of_issue(9));
        assert_eq!(read("status", &p).scope, Scope::Issues(vec![9]));
    }
}

#[test]
fn manual_runs_look_at_everything_or_the_issue_given() {
    let Some(all) = examples() else { return };
    for payload in &all["workflow_dispatch"] {
        assert_eq!(read("workflow_dispatch", payload).scope, Scope::All);
        let mut p = payload.clone();
        p["inputs"] = json!({"issue": "12"});
        assert_eq!(read("workflow_dispatch", &p).scope, Scope::Issues(vec![12]));
    }
    // Events the workflows are not given still read, and a full pass is never wrong.
    for event in ["star", "fork", "release", "repository_dispatch"] {
        for payload in all.get(event).into_iter().flatten() {
            assert_eq!(read(event, payload).scope, Scope::All, "{event}");
        }
    }
}
