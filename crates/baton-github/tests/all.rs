//! The GitHub client against the fake GitHub: every call, checked against GitHub's own REST
//! description, and the retry, rate-limit, cache and secrecy rules (see `suite/`).

// Helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::print_stderr, clippy::unwrap_used, clippy::expect_used)]

mod suite;
