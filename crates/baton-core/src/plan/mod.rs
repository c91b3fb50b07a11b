//! The planning phase's pure rules: reading a plan's documents, checking them against each other,
//! suggesting a project tier, and deciding the planning pipeline's next step.
//!
//! A plan is a product requirements document (functional requirements `FR1…`, non-functional
//! `NFR1…`), an architecture document (decisions `ADR-001…`) and an epics document (epics, stories
//! with Given/When/Then acceptance criteria, the requirements each story cites). [`docs`] parses
//! those texts into typed values with 1-based line numbers, [`check`] cross-references them,
//! [`tier`] reads an idea's wording, and [`pipeline`] is the planning workflow's `decide`. Nothing
//! here does IO: the caller reads the files and hands over their text.

pub mod bmad;
pub mod check;
pub mod docs;
pub mod pipeline;
pub mod tier;

pub use check::{Finding, FindingKind, Severity, check};
pub use docs::{Architecture, Epic, Epics, Prd, Requirement, Story};
pub use pipeline::{DocState, PlanDecision, PlanFacts, PlanStep, Readiness, decide};
pub use tier::{Confidence, Project, TierSuggestion, suggest_tier};
