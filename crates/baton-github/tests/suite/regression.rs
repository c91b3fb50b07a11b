//! One test per fixed bug.

use super::common::{assert_contract, client};
use baton_github::Forge;
use baton_test_support::github::FakeGitHub;

/// A 304 answer has no `link` header: a list polled with cached pages kept only its first page
/// when the client read the next page from the 304 instead of from the cached answer.
#[tokio::test]
async fn a_list_served_from_the_cache_still_follows_every_page() {
    let fake = FakeGitHub::start().await;
    let gh = client(&fake);
    for n in 0..25 {
        fake.add_issue(&format!("Story {n}"), "", &[], "acme");
    }
    assert_eq!(gh.list_open_issues().await.unwrap().len(), 25);
    assert_eq!(gh.list_open_issues().await.unwrap().len(), 25);
    let statuses: Vec<u16> = fake.calls().iter().map(|c| c.status).collect();
    assert_eq!(statuses, [200, 200, 200, 304, 304, 304]);
    assert!(
        fake.calls()[3]
            .response_headers
            .iter()
            .all(|(n, _)| n != "link")
    );
    assert_contract(&fake);
}
