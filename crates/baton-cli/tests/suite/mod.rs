//! The areas of the end-to-end suite; shared helpers live in `common`.

mod bmad_parity;
mod bmad_run;
mod board;
mod cli_workers;
mod common;

mod concurrency;
mod crash;
mod demo;
mod first_hour;
mod hand_edits;
mod hardening;
mod init;
mod init_test_command;
mod log;
mod memory;
mod parallel;
mod plan_pipeline;
mod planning;
mod pm;
mod pm_flow;
mod pm_init;
mod pm_rules;
mod read_sections;
mod regression;
mod sdd;
mod set;
mod snapshots;
mod sprint;
mod tdd;
mod team;
mod token_meter;
mod user_repos;
mod validate;
mod wild;
mod wire_replay;
