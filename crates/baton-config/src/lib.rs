//! `baton.toml`: parsed strictly, layered, narrowed for an untrusted project, and resolved once
//! into typed settings.
//!
//! The binary calls it, and so can a server, a pipeline runner or a worker on another machine:
//! nothing here prints, reads flags or decides exit codes. The phases, one module each:
//!
//! - [`raw`]: the file's serde types, unknown keys rejected with their line ([`parse`]);
//! - [`limits`] and [`cli`]: ranges and values checked against the text, naming file, line and
//!   key ([`ConfigError`]);
//! - [`narrow`]: what an untrusted project's file may change (it may narrow, never widen); what
//!   it did not get is returned as lines ([`Config::ignored`], [`Config::ignored_warning`]);
//! - [`resolve`]: defaults filled in, paths made absolute ([`Config`]);
//! - [`layer`]: precedence in one place, bundled < project file < flags ([`Config::load_as`],
//!   [`BudgetFlags`], [`Config::agent_models`]);
//! - [`paths`]: paths the file leaves unset, found from the project's BMad layout;
//! - [`tdd`]: the test-first guard's settings and mode;
//! - [`rules`]: which context rules are in force;
//! - [`template`]: the file `baton init` writes;
//! - [`test_command`]: the test command the project's own files propose, for that file;
//! - [`trust`]: the user's list of trusted projects, which decides whether [`narrow`] applies.

#![warn(missing_docs)]

pub mod cli;
pub mod error;
pub mod layer;
pub mod limits;
pub mod narrow;
pub mod paths;
pub mod raw;
pub mod resolve;
pub mod rules;
pub mod tdd;
pub mod template;
pub mod test_command;
pub mod trust;

pub use error::ConfigError;
pub use layer::{AgentModels, BudgetFlags, FlagError};
pub use raw::PathsSet;
pub use raw::{RawConfig, parse};
pub use resolve::Config;
pub use template::TEMPLATE;

/// The config file's name, at the project root.
pub const FILE_NAME: &str = "baton.toml";
/// baton's private directory, at the project root.
pub const STATE_DIR: &str = ".baton";

/// Default location of the sprint file, relative to the root.
pub const DEFAULT_SPRINT_STATUS: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";
/// Default story directory.
pub const DEFAULT_STORIES: &str = "_bmad-output/implementation-artifacts";
/// Default planning directory.
pub const DEFAULT_PLANNING: &str = "_bmad-output/planning-artifacts";
