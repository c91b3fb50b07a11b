//! Integration tests of baton-agent: one test binary, one module per area.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod suite;
