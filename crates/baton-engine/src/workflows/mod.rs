//! Workflows: the sprint loop (a scheduler over the story machine) and ad-hoc team dispatch.
//! Later workflows (the planning pipeline, subagent-driven development) are siblings here.

pub mod plan;
pub mod sprint;
pub mod team;
