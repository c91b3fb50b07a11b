//! Workflows: the sprint loop (a scheduler over the story machine) and ad-hoc team dispatch.
//! The planning pipeline is [`plan`], subagent-driven development of a plan file [`sdd`]; later
//! workflows are siblings here.

pub mod bmad;
pub mod plan;
pub mod pm;
pub mod sdd;
pub mod sprint;
pub mod team;
