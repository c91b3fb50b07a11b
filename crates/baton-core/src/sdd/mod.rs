//! Subagent-driven development of a plan file: the plan's tasks ([`plan`]) and the pure machine
//! that decides each task's next step from its journaled history ([`machine`]).

pub mod plan;

pub use plan::{Plan, PlanError, PlanSource, PlanTask, parse_plan};
pub mod machine;

pub use machine::{
    Gate, Mark, SddDetail, SddEnd, SddEscalation, SddRules, SddRun, SddStage, SddStep,
    TaskDecision, TaskFacts, TaskState, TaskView, decide, view,
};
