//! baton-engine: workflows built from agents and the sprint state.
//!
//! `team` dispatches agents ad hoc (single, parallel, chain) without any sprint; `sprint_tools`
//! gives agents validated, journaled access to the sprint file; `setup` turns discovered agent
//! definitions and settings into runnable agents. The engine decides; it never talks HTTP or
//! parses YAML itself.

pub mod setup;
pub mod sprint;
pub mod sprint_tools;
pub mod team;
