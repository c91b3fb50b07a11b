//! baton-core: the domain vocabulary and pure rules of baton.
//!
//! Keys and statuses of a BMad Method v6 `sprint-status.yaml`, the transition table that says which
//! moves are legal and for whom, how an epic follows its stories, the "what next" order, date
//! stamps, the validation of a whole sprint, and plan files with the per-task machine of
//! subagent-driven development. Nothing here does IO: every input arrives as a
//! value and every answer leaves as one, so the rules can be tested exhaustively and reused by
//! every front end.

pub mod actor;
pub mod autopilot;
pub mod budget;
pub mod dispatch;
pub mod epic;
pub mod escalation;
pub mod key;
pub mod memory;
pub mod meter;
pub mod next;
pub mod pipeline;
pub mod plan;
pub mod sdd;
pub mod secrets;
pub mod sprint;
pub mod stall;
pub mod stamp;
pub mod status;
pub mod story;
pub mod transition;
pub mod unit;
pub mod validate;
pub mod verdict;

pub use actor::Actor;
pub use key::{Key, KeyKind};
pub use sprint::{Entry, Sprint};
pub use stamp::Stamp;
pub use status::{Status, StatusValue};
