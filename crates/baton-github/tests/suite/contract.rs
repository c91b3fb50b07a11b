//! Every call the pipeline makes, driven through the client against the fake: what it returns,
//! the headers it sends, and — when GitHub's REST description is installed — every request and
//! every answer validated against the operation it hit.

use super::common::{TOKEN, assert_contract, client, contract};
use baton_github::{Forge, ForgeError, MergeMethod, NewLabel, NewPull, Permission, PullUpdate};
use baton_test_support::github::{FakeGitHub, sha_of};
use std::collections::BTreeSet;

#[tokio::test]
async fn every_call_matches_githubs_description() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    fake.set_collaborator("dev-lead", "maintain");
    fake.set_collaborator("helper", "triage");
    // The owner's approval and both checks are needed to merge.
    fake.protect_base(2, &["test", "clippy"]);

    // Issues: 23 open (three pages of ten), one closed, one pull request (left out).
    let mut open = BTreeSet::new();
    for n in 0..23 {
        let labels: &[&str] = if n % 2 == 0 { &["agent/backend"] } else { &[] };
        open.insert(fake.add_issue(&format!("Story {n}"), "As a user…", labels, "acme"));
    }
    let closed = fake.add_issue("Old", "", &[], "acme");
    fake.close_issue(closed);
    let other = fake.add_pull("Other work", "feature/x", "main", false, "dev-lead");
    let issues = gh.list_open_issues().await.unwrap();
    assert_eq!(
        issues.iter().map(|i| i.number).collect::<BTreeSet<_>>(),
        open
    );
    // GitHub lists pull requests among issues; the client leaves them out.
    assert!(fake.calls().iter().any(|c| {
        c.response
            .as_ref()
            .and_then(|r| r.as_array())
            .is_some_and(|a| {
                a.iter()
                    .any(|i| i["number"] == other && i["pull_request"].is_object())
            })
    }));
    // Every issue, closed ones too; and one opened through the API.
    let all = gh.list_all_issues().await.unwrap();
    assert_eq!(all.len(), open.len() + 1);
    assert!(
        all.iter()
            .any(|i| i.number == closed && i.state == "closed")
    );
    let made = gh
        .create_issue(&baton_github::NewIssue {
            title: "1-2-login: Log in".into(),
            body: "<!-- baton:story 1-2-login -->\n# Story".into(),
            labels: vec!["imported".into()],
        })
        .await
        .unwrap();
    assert_eq!(made.labels, ["imported"]);
    assert_eq!(fake.issue(made.number)["title"], "1-2-login: Log in");
    let first = *open.first().unwrap();
    let issue = gh.get_issue(first).await.unwrap();
    assert_eq!(issue.labels, ["agent/backend"]);
    assert_eq!(issue.author_association.as_deref(), Some("OWNER"));

    // Comments: 12 (two pages), from the owner, a collaborator and a stranger.
    for n in 0..12 {
        let author = ["acme", "dev-lead", "stranger"][n % 3];
        fake.add_comment(
            first,
            author,
            &format!("[Architect → Product Manager] note {n}"),
        );
    }
    let comments = gh.list_comments(first).await.unwrap();
    assert_eq!(comments.len(), 12);
    assert_eq!(
        comments
            .iter()
            .take(3)
            .map(|c| c.author_association.as_str())
            .collect::<Vec<_>>(),
        ["OWNER", "COLLABORATOR", "NONE"]
    );
    let status = gh
        .create_comment(first, "<!-- baton:pm-status v1 -->\n## PM Status")
        .await
        .unwrap();
    let edited = gh
        .edit_comment(
            status.id,
            "<!-- baton:pm-status v1 -->\n## PM Status\n**Phase:** Ready",
        )
        .await
        .unwrap();
    assert_eq!(edited.id, status.id, "edited in place");
    assert!(edited.updated_at > status.created_at);
    assert_eq!(fake.comments_of(first).len(), 13);

    // Labels.
    let created = gh
        .create_label(&NewLabel {
            name: "status/ready".into(),
            color: "0e8a16".into(),
            description: Some("Fully specified".into()),
        })
        .await
        .unwrap();
    assert_eq!(created.name, "status/ready");
    let duplicate = gh
        .create_label(&NewLabel {
            name: "status/ready".into(),
            color: "000000".into(),
            description: None,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(duplicate, ForgeError::Rejected { status: 422, .. }),
        "{duplicate}"
    );
    let on_issue = gh
        .add_labels(
            first,
            &["status/ready".to_owned(), "agent/architect".to_owned()],
        )
        .await
        .unwrap();
    assert_eq!(
        on_issue.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        ["agent/backend", "status/ready", "agent/architect"]
    );
    let left = gh.remove_label(first, "agent/backend").await.unwrap();
    assert_eq!(left.len(), 2);
    let missing = gh.remove_label(first, "agent/backend").await.unwrap_err();
    assert!(matches!(missing, ForgeError::NotFound { .. }), "{missing}");
    assert_eq!(fake.labels_of(first), ["status/ready", "agent/architect"]);
    let labels = gh.list_labels().await.unwrap();
    assert!(labels.iter().any(|l| l.name == "agent/architect"));

    // Pull requests: a draft for the story's branch, found again by its head.
    let branch = format!("baton/issue-{first}");
    assert!(gh.list_pulls_for_branch(&branch).await.unwrap().is_empty());
    let pull = gh
        .create_pull(&NewPull {
            title: format!("Story {first}"),
            head: branch.clone(),
            base: "main".into(),
            body: format!("Closes #{first}"),
            draft: true,
        })
        .await
        .unwrap();
    assert!(pull.draft);
    let again = gh
        .create_pull(&NewPull {
            title: "twice".into(),
            head: branch.clone(),
            base: "main".into(),
            body: String::new(),
            draft: true,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(again, ForgeError::Rejected { status: 422, .. }),
        "{again}"
    );
    let found = gh.list_pulls_for_branch(&branch).await.unwrap();
    assert_eq!(
        found.iter().map(|p| p.number).collect::<Vec<_>>(),
        [pull.number]
    );
    let updated = gh
        .update_pull(
            pull.number,
            &PullUpdate {
                body: Some(format!("Closes #{first}\n\nDone.")),
                ..PullUpdate::default()
            },
        )
        .await
        .unwrap();
    assert!(updated.body.ends_with("Done."));

    // Checks and reviews on its head.
    let sha = sha_of(&branch);
    assert_eq!(pull.head.sha, sha);
    fake.add_check_run(&sha, "test", "completed", Some("success"));
    fake.add_check_run(&sha, "clippy", "in_progress", None);
    fake.add_check_run(&sha_of("elsewhere"), "test", "completed", Some("failure"));
    let checks = gh.list_check_runs(&sha).await.unwrap();
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    assert_eq!(checks[1].conclusion, None);
    fake.add_review(pull.number, "dev-lead", "CHANGES_REQUESTED", "Split this.");
    fake.add_review(pull.number, "dev-lead", "APPROVED", "");
    let reviews = gh.list_reviews(pull.number).await.unwrap();
    assert_eq!(
        reviews.iter().map(|r| r.state.as_str()).collect::<Vec<_>>(),
        ["CHANGES_REQUESTED", "APPROVED"]
    );

    // Publishing: ready for review, then auto-merge (GraphQL), read back over REST.
    gh.mark_ready_for_review(&pull).await.unwrap();
    gh.enable_auto_merge(&pull, MergeMethod::Squash)
        .await
        .unwrap();
    let published = gh.get_pull(pull.number).await.unwrap();
    assert!(!published.draft);
    assert_eq!(published.mergeable, Some(true));
    assert_eq!(
        published
            .auto_merge
            .as_ref()
            .map(|a| a.merge_method.as_str()),
        Some("squash")
    );
    assert!(
        !published.is_merged(),
        "blocked: one approval, clippy still running"
    );
    // The owner approves and clippy passes: GitHub merges on its own.
    fake.add_review(pull.number, "acme", "APPROVED", "");
    assert!(fake.pull(pull.number)["merged"] == false);
    fake.add_check_run(&sha, "clippy", "completed", Some("success"));
    assert_eq!(
        fake.pull(pull.number)["merged_by"]["login"],
        "baton-pm[bot]"
    );
    let merged = gh.list_pulls_for_branch(&branch).await.unwrap();
    assert!(merged[0].is_merged());
    assert_eq!(merged[0].state, "closed");

    // Permissions.
    assert_eq!(
        gh.collaborator_permission("dev-lead").await.unwrap(),
        Permission::Maintain
    );
    assert_eq!(
        gh.collaborator_permission("helper").await.unwrap(),
        Permission::Triage
    );
    assert_eq!(
        gh.collaborator_permission("stranger").await.unwrap(),
        Permission::Read
    );
    assert_eq!(
        gh.collaborator_permission("acme").await.unwrap(),
        Permission::Admin
    );

    // Every request carried the token and GitHub's headers.
    let calls = fake.calls();
    assert!(calls.len() > 25, "{} calls", calls.len());
    for call in &calls {
        assert_eq!(
            call.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(call.header("accept"), Some("application/vnd.github+json"));
        assert_eq!(call.header("x-github-api-version"), Some("2022-11-28"));
        assert!(
            call.header("user-agent")
                .is_some_and(|u| u.starts_with("baton/"))
        );
    }
    let checked = assert_contract(&fake);
    if contract().is_some() {
        assert_eq!(
            checked,
            calls.iter().filter(|c| c.route != Some("/graphql")).count()
        );
        // Writes of every kind were among them.
        for method in ["GET", "POST", "PATCH", "DELETE"] {
            assert!(
                calls.iter().any(|c| c.method == method),
                "no {method} checked"
            );
        }
    }
}

#[tokio::test]
async fn auto_merge_is_refused_for_a_pull_request_that_could_merge_now() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let number = fake.add_pull("Story", "baton/issue-1", "main", false, "acme");
    let pull = gh.get_pull(number).await.unwrap();
    let refused = gh
        .enable_auto_merge(&pull, MergeMethod::Squash)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ForgeError::Rejected { message, .. } if message.contains("clean status")),
        "{refused}"
    );
    assert!(fake.pull(number)["auto_merge"].is_null());
    assert_eq!(fake.pull(number)["mergeable_state"], "clean");
    assert_contract(&fake);
}

#[tokio::test]
async fn auto_merge_is_refused_on_a_conflict() {
    let fake = FakeGitHub::start().await;
    // The pipeline holds its forge as a trait object.
    let gh: Box<dyn Forge> = Box::new(client(&fake));
    let number = fake.add_pull("Story", "baton/issue-1", "main", false, "acme");
    fake.set_conflict(number, true);
    let pull = gh.get_pull(number).await.unwrap();
    assert_eq!(pull.mergeable, Some(false));
    let refused = gh
        .enable_auto_merge(&pull, MergeMethod::Merge)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, ForgeError::Rejected { message, .. } if message.contains("conflict")),
        "{refused}"
    );
    assert!(fake.pull(number)["auto_merge"].is_null());
    assert!(fake.merge(number).is_err());
    assert_contract(&fake);
}

#[tokio::test]
async fn the_contract_catches_an_answer_that_drifts() {
    let Some(api) = contract() else { return };
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &["agent/backend"], "acme");
    gh.get_issue(issue).await.unwrap();
    gh.create_comment(issue, "hello").await.unwrap();
    let calls = fake.calls();
    assert!(api.check_call(&calls[0]).is_ok());
    assert!(api.check_call(&calls[1]).is_ok());

    // An issue without its required `node_id`, a comment whose `created_at` is no date.
    let mut get = calls[0].clone();
    get.response
        .as_mut()
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove("node_id");
    let errors = api.check_call(&get).unwrap_err();
    assert!(
        errors.iter().any(|e| e.contains("`node_id` is required")),
        "{errors:?}"
    );
    let mut post = calls[1].clone();
    post.response.as_mut().unwrap()["created_at"] = "yesterday".into();
    let errors = api.check_call(&post).unwrap_err();
    assert!(
        errors.iter().any(|e| e.contains("/created_at")),
        "{errors:?}"
    );
    // A request with an undeclared query parameter or a body of the wrong shape.
    let mut query = calls[0].clone();
    query.query.push(("pretty".into(), "1".into()));
    assert!(api.check_call(&query).is_err());
    let mut body = calls[1].clone();
    body.body = Some(serde_json::json!({ "body": 42 }));
    assert!(api.check_call(&body).is_err());
}
