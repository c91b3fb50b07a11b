//! The integration tests of baton-llm: the clients against the mock model server, the script
//! provider and the registry — one test binary, one module per area (see `suite/`).

// Helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
