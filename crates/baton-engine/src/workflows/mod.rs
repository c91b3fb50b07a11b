//! Workflows: the sprint loop (a scheduler over the story machine) and ad-hoc team dispatch.
//! Subagent-driven development of a plan file is [`sdd`]; later workflows are siblings here.

pub mod sdd;
pub mod sprint;
pub mod team;
