//! What every test needs: a fake GitHub, a client pointed at it with short waits, and GitHub's
//! REST description when it is installed.

use baton_github::{GitHub, Policy, Token};
use baton_test_support::github::FakeGitHub;
use baton_test_support::openapi::{ENV_FILE, ENV_REQUIRED, OpenApi};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// The token the tests use; no output may ever contain it.
pub const TOKEN: &str = "ghp_TESTSECRET0123456789abcdefABCDEF";

/// A client for the fake's repository: ten items a page (so lists span pages), 5 ms backoff
/// and at most 5 s of waiting for a rate limit.
pub fn client(fake: &FakeGitHub) -> GitHub {
    GitHub::new(
        &fake.base_url(),
        &fake.owner(),
        &fake.repo(),
        Token::new(TOKEN),
    )
    .unwrap()
    .with_policy(Policy {
        get_retries: 3,
        backoff: Duration::from_millis(5),
        max_wait: Duration::from_secs(5),
        per_page: 10,
        etag_entries: 64,
    })
}

/// GitHub's REST description, loaded once; `None` after a skip notice when it is not
/// installed (a failure when `BATON_TEST_GITHUB_OPENAPI_REQUIRED=1`).
pub fn contract() -> Option<&'static OpenApi> {
    static API: OnceLock<Option<OpenApi>> = OnceLock::new();
    API.get_or_init(|| {
        let file = std::env::var_os(ENV_FILE)
            .map(PathBuf::from)
            .filter(|f| f.is_file());
        let Some(file) = file else {
            let msg = format!(
                "GitHub's REST description is not installed: run .ci/run (it unpacks \
                 @octokit/openapi@23.0.2's api.github.com.json into target/github-openapi) or set \
                 {ENV_FILE} to that file"
            );
            assert!(
                std::env::var(ENV_REQUIRED).as_deref() != Ok("1"),
                "{ENV_REQUIRED}=1 but {msg}"
            );
            eprintln!("SKIPPED (contract checks): {msg}");
            return None;
        };
        Some(OpenApi::load(&file).unwrap())
    })
    .as_ref()
}

/// Checks every recorded REST call (GraphQL has no REST description) against the
/// description; returns how many were checked.
pub fn assert_contract(fake: &FakeGitHub) -> usize {
    let Some(api) = contract() else { return 0 };
    let mut problems = Vec::new();
    let mut checked = 0;
    for call in fake.calls().iter().filter(|c| c.route != Some("/graphql")) {
        checked += 1;
        if let Err(mut errors) = api.check_call(call) {
            problems.append(&mut errors);
        }
    }
    assert!(
        problems.is_empty(),
        "{} contract problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    checked
}
