//! End-to-end tests of the `baton` binary: one test binary, one module per area (see `suite/`).

// Helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod suite;
