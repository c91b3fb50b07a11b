//! The client's rules under failure: writes are sent once, reads retried with backoff, rate
//! limits waited out (or reported when too long), conditional GETs served from the cache, and
//! the token never shown.

use super::common::{TOKEN, assert_contract, client};
use baton_github::{Forge, ForgeError, GitHub, Token};
use baton_test_support::github::{Failure, FakeGitHub};

const COMMENTS: &str = "/repos/{owner}/{repo}/issues/{issue_number}/comments";
const ISSUE: &str = "/repos/{owner}/{repo}/issues/{issue_number}";
const LABELS: &str = "/repos/{owner}/{repo}/labels";

fn sent(fake: &FakeGitHub, method: &str, route: &str) -> usize {
    fake.calls()
        .iter()
        .filter(|c| c.method == method && c.route == Some(route))
        .count()
}

#[tokio::test]
async fn a_post_that_gets_a_500_is_sent_once() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    fake.fail_next("POST", COMMENTS, 1, Failure::Status(500));
    let err = gh.create_comment(issue, "hello").await.unwrap_err();
    assert!(
        matches!(err, ForgeError::Server { status: 500, .. }),
        "{err}"
    );
    assert_eq!(sent(&fake, "POST", COMMENTS), 1);
    assert!(fake.comments_of(issue).is_empty());

    // A write GitHub carried out before failing is not repeated either: one comment.
    fake.fail_next("POST", COMMENTS, 1, Failure::AppliedThen(502));
    let err = gh.create_comment(issue, "hello").await.unwrap_err();
    assert!(
        matches!(err, ForgeError::Server { status: 502, .. }),
        "{err}"
    );
    assert_eq!(sent(&fake, "POST", COMMENTS), 2);
    assert_eq!(fake.comments_of(issue).len(), 1);
    assert_contract(&fake);
}

#[tokio::test]
async fn a_get_that_gets_500_twice_then_200_succeeds() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    fake.fail_next("GET", ISSUE, 2, Failure::Status(500));
    assert_eq!(gh.get_issue(issue).await.unwrap().title, "Story");
    let statuses: Vec<u16> = fake.calls().iter().map(|c| c.status).collect();
    assert_eq!(statuses, [500, 500, 200]);
    assert_contract(&fake);
}

#[tokio::test]
async fn a_get_that_keeps_failing_gives_up_after_its_retries() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    fake.fail_next("GET", ISSUE, 10, Failure::Status(502));
    let err = gh.get_issue(issue).await.unwrap_err();
    assert!(
        matches!(err, ForgeError::Server { status: 502, .. }),
        "{err}"
    );
    assert_eq!(err.to_string(), "GitHub get issue: server error (HTTP 502)");
    assert_eq!(sent(&fake, "GET", ISSUE), 4, "one try and three retries");
}

#[tokio::test]
async fn a_403_with_retry_after_is_waited_out_on_get_and_reported_on_post() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    fake.add_label("agent/backend", "1d76db", "");
    fake.fail_next("GET", LABELS, 1, Failure::SecondaryLimit { retry_after: 1 });
    let labels = gh.list_labels().await.unwrap();
    assert_eq!(labels.len(), 1);
    assert_eq!(
        fake.calls().iter().map(|c| c.status).collect::<Vec<_>>(),
        [403, 200]
    );

    let issue = fake.add_issue("Story", "", &[], "acme");
    fake.fail_next(
        "POST",
        COMMENTS,
        1,
        Failure::TooManyRequests { retry_after: 1 },
    );
    let err = gh.create_comment(issue, "hello").await.unwrap_err();
    assert!(
        matches!(err, ForgeError::RateLimited { status: 429, .. }),
        "{err}"
    );
    assert_eq!(sent(&fake, "POST", COMMENTS), 1);
    assert!(fake.comments_of(issue).is_empty());
    assert_contract(&fake);
}

#[tokio::test]
async fn a_primary_limit_past_the_cap_fails_at_once_and_holds_later_requests() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    let reset = jiff::Timestamp::now().as_second() + 3600;
    fake.fail_next("GET", ISSUE, 1, Failure::PrimaryLimit { reset });
    let err = gh.get_issue(issue).await.unwrap_err();
    let ForgeError::RateLimited { status, until, .. } = err else {
        panic!("{err}")
    };
    assert_eq!((status, until.as_second()), (403, reset));
    // The next request is not sent at all while the limit holds.
    let err = gh.create_comment(issue, "hello").await.unwrap_err();
    assert!(
        matches!(err, ForgeError::RateLimited { status: 0, .. }),
        "{err}"
    );
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn a_flaky_404_is_not_found_and_the_next_read_works() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    fake.fail_next("GET", ISSUE, 1, Failure::Status(404));
    let err = gh.get_issue(issue).await.unwrap_err();
    assert!(
        matches!(err, ForgeError::NotFound { call: "get issue" }),
        "{err}"
    );
    assert!(gh.get_issue(issue).await.is_ok());
    assert_contract(&fake);
}

#[tokio::test]
async fn a_304_serves_the_cached_body() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    let first = gh.get_issue(issue).await.unwrap();
    let second = gh.get_issue(issue).await.unwrap();
    assert_eq!(first, second);
    let calls = fake.calls();
    assert_eq!(calls[0].header("if-none-match"), None);
    let etag = calls[0]
        .response_headers
        .iter()
        .find(|(n, _)| n == "etag")
        .map(|(_, v)| v.clone())
        .unwrap();
    assert_eq!(calls[1].header("if-none-match"), Some(etag.as_str()));
    assert_eq!((calls[1].status, calls[1].response.is_none()), (304, true));

    // A change makes the ETag stale: a full answer with the new state.
    fake.add_comment(issue, "acme", "hi");
    let third = gh.get_issue(issue).await.unwrap();
    assert_eq!(fake.calls()[2].status, 200);
    assert!(third.updated_at > first.updated_at);
    assert_contract(&fake);
}

#[tokio::test]
async fn the_token_never_appears_in_debug_or_errors() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    let mut shown = vec![format!("{gh:?}"), format!("{:?}", Token::new(TOKEN))];
    let failures = [
        Failure::Status(404),
        Failure::Status(403),
        Failure::Status(500),
        Failure::Status(422),
        Failure::SecondaryLimit { retry_after: 3600 },
    ];
    for failure in failures {
        fake.fail_next("POST", COMMENTS, 1, failure);
        let err = gh.create_comment(issue, "x").await.unwrap_err();
        shown.push(err.to_string());
        shown.push(format!("{err:?}"));
    }
    // No answer at all: a port nobody listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let nowhere = GitHub::new(
        &format!("http://{closed}"),
        "acme",
        "widgets",
        Token::new(TOKEN),
    )
    .unwrap();
    let err = nowhere.create_comment(1, "x").await.unwrap_err();
    assert!(matches!(err, ForgeError::Transport { .. }), "{err}");
    shown.push(err.to_string());
    shown.push(format!("{err:?}"));
    for text in &shown {
        assert!(
            !text.contains(TOKEN) && !text.contains("TESTSECRET"),
            "the token shows in: {text}"
        );
    }
    assert!(shown[0].contains("[redacted]"));
    assert!(shown.iter().any(|s| s.contains("create comment")));
}

#[tokio::test]
async fn an_answer_that_spends_the_limit_holds_the_next_request() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    let issue = fake.add_issue("Story", "", &[], "acme");
    let reset = jiff::Timestamp::now().as_second() + 3600;
    fake.spend_rate_limit(reset);
    assert!(gh.get_issue(issue).await.is_ok());
    // Sending now would only be refused: the client reports the limit without sending.
    let err = gh.list_comments(issue).await.unwrap_err();
    let ForgeError::RateLimited { status, until, .. } = err else {
        panic!("{err}")
    };
    assert_eq!((status, until.as_second()), (0, reset));
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn an_unreadable_answer_is_invalid_and_names_the_call() {
    let server = baton_test_support::MockServer::start().await;
    server.enqueue(baton_test_support::MockResponse::text(
        200,
        "<html>maintenance</html>",
    ));
    let gh = GitHub::new(&server.url(), "acme", "widgets", Token::new(TOKEN)).unwrap();
    let err = gh.get_issue(1).await.unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::Invalid {
                call: "get issue",
                status: 200,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("GitHub get issue: unreadable answer (HTTP 200)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_next_page_elsewhere_is_not_followed() {
    let server = baton_test_support::MockServer::start().await;
    server.enqueue(
        baton_test_support::MockResponse::json(200, &serde_json::json!([])).header(
            "link",
            "<https://elsewhere.example/steal?page=2>; rel=\"next\"",
        ),
    );
    let gh = GitHub::new(&server.url(), "acme", "widgets", Token::new(TOKEN)).unwrap();
    let err = gh.list_labels().await.unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::Invalid {
                call: "list labels",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("elsewhere.example"), "{err}");
    assert_eq!(server.requests().len(), 1, "the token went nowhere else");
}
