//! The one contract between baton's engine and its front ends: typed events out, operations in.
//!
//! Every workflow (sprint, sdd, plan, team, bmad, pm) reports everything a front end may show as
//! one [`Event`]: the run, the event's sequence number, its time, its [`Scope`] (the run, a unit
//! of work, or an agent within a unit) and a typed [`EventBody`]. A human's decisions and
//! cancellation come in as [`Op`]s; an op that names no waiting escalation, or a choice that is
//! not one of its options, is answered with [`EventBody::OpRejected`], never silence. An answer
//! given outside a run (`baton answer`, the web board) is an event too
//! ([`EventBody::EscalationAnswered`]), so every front end that follows the run event log sees it.
//!
//! Everything here is serde both ways, and the JSON is the wire: the terminal renderer, `--json`,
//! the journal's run event log and the web board all read and write these types, so a renamed
//! field breaks their build, not their pages. Units of work are typed ([`UnitKey`]), parsed from
//! the journal's keys with [`UnitKey::parse`], never matched by string prefix; runs have a
//! [`RunKind`] and end with a [`RunEnd`]. The crate holds no workflow logic and no I/O; its
//! values (statuses, stages, findings) are `baton-core`'s.

mod body;
mod escalation;
mod event;
mod op;
mod run;
mod unit;

pub use body::EventBody;
pub use escalation::{ChoiceView, EscalationView};
pub use event::{Event, MergePhase, Scope};
pub use op::Op;
pub use run::{ParseRunEndError, ParseRunKindError, RunEnd, RunKind};
pub use unit::{ParseUnitKeyError, UnitKey, belongs_to};

#[cfg(test)]
mod tests;
