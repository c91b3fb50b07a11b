//! baton-agent: agents, their tools, the sandbox they work in, and the loop that runs them.
//!
//! An agent is a markdown definition (YAML frontmatter + system prompt). It runs in a native
//! tool-calling loop: model turn → tool calls → guard chain (sandbox, command allowlist, the
//! test-first guard) → execution → results → next turn, until a final answer or a bound (turns, timeout,
//! budget, cancellation). Every run ends in a typed [`outcome::Outcome`] whose changed files come
//! from git, not from the agent's words. This crate knows agents, not sprints.

pub mod compaction;
pub mod definition;
pub mod discovery;
pub mod guard;
pub mod hooks;
pub mod outcome;
pub mod process;
pub mod protect;
pub mod rules;
pub mod runner;
pub mod sandbox;
pub mod tdd;
pub mod tools;
pub mod transcript;
pub mod worker;
pub mod workspace;

pub use definition::AgentDef;
pub use outcome::Outcome;
pub use runner::{Budget, Mode, Runner};
