//! The transition table: which status changes are legal, and for whom.
//!
//! Moves are data, not code paths: [`EDGES`] lists every `(kind, from, to, actors)` the workflow
//! uses. A move not in the table is refused with the legal ones listed, unless forced: `--force`
//! lets a human (or the orchestrator's own repair) lower a status or skip ahead, and the force is
//! journaled. Review → in-progress on requested changes is a listed edge, so it needs no force.
//! `needs-intervention` can be entered from any unfinished state and left towards the state the
//! story was in, or anywhere that state could go.

use crate::actor::Actor;
use crate::key::KeyKind;
use crate::status::{Status, StatusValue};
use Actor::{
    Developer as Dev, Human, Orchestrator as Orch, Qa, Reviewer as Rev, ScrumMaster as Sm,
};
use Status::*;

/// Which kind of key an edge applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Stories.
    Story,
    /// Epics.
    Epic,
    /// Retrospectives.
    Retro,
}

impl Scope {
    fn of(kind: KeyKind) -> Option<Scope> {
        match kind {
            KeyKind::Story { .. } => Some(Scope::Story),
            KeyKind::Epic { .. } => Some(Scope::Epic),
            KeyKind::Retrospective { .. } => Some(Scope::Retro),
            KeyKind::Opaque | KeyKind::Malformed => None,
        }
    }
}

/// One legal move.
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    /// The kind of key.
    pub scope: Scope,
    /// From.
    pub from: Status,
    /// To.
    pub to: Status,
    /// Who may make it.
    pub actors: &'static [Actor],
}

const fn e(scope: Scope, from: Status, to: Status, actors: &'static [Actor]) -> Edge {
    Edge {
        scope,
        from,
        to,
        actors,
    }
}

/// Every legal move of the workflow (BMAD-FORMAT.md §2.4 and R7, plus baton's extended states).
pub const EDGES: &[Edge] = &[
    e(Scope::Story, Backlog, ReadyForDev, &[Sm, Orch, Human]),
    e(Scope::Story, Backlog, StoryDocReview, &[Sm, Orch]),
    e(
        Scope::Story,
        StoryDocReview,
        ReadyForDev,
        &[Rev, Orch, Human],
    ),
    e(Scope::Story, StoryDocReview, StoryDocImproved, &[Rev, Orch]),
    e(Scope::Story, StoryDocImproved, StoryDocReview, &[Sm, Orch]),
    e(
        Scope::Story,
        StoryDocImproved,
        ReadyForDev,
        &[Sm, Orch, Human],
    ),
    e(Scope::Story, ReadyForDev, InProgress, &[Dev, Orch, Human]),
    e(Scope::Story, InProgress, Review, &[Dev, Orch, Human]),
    e(Scope::Story, Review, Done, &[Rev, Orch, Human]),
    e(Scope::Story, Review, InProgress, &[Rev, Orch, Human]),
    e(Scope::Story, Review, E2eVerify, &[Rev, Orch]),
    e(Scope::Story, E2eVerify, Done, &[Qa, Orch, Human]),
    e(Scope::Story, E2eVerify, InProgress, &[Qa, Orch]),
    e(Scope::Epic, Backlog, InProgress, &[Sm, Orch, Human]),
    e(Scope::Epic, InProgress, Done, &[Orch, Human]),
    e(Scope::Retro, Optional, Done, &[Sm, Orch, Human]),
];

/// Where a key stands: its canonical value in the file and its extended state, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Current {
    /// The canonical value in the file.
    pub canonical: StatusValue,
    /// baton's extended state.
    pub extended: Option<Status>,
}

impl Current {
    /// The status baton acts on.
    pub fn effective(&self) -> StatusValue {
        self.extended
            .map_or_else(|| self.canonical.clone(), StatusValue::Known)
    }
}

/// How a move was allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// A listed edge.
    Edge,
    /// Not listed, allowed because forced.
    Forced,
    /// Nothing to do: already there.
    Unchanged,
}

/// Why a move was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The status is not valid for this kind of key.
    #[error("`{to}` is not a status {} {kind} can have (allowed: {allowed})", if kind.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" })]
    WrongKind {
        /// The key kind.
        kind: &'static str,
        /// Requested status.
        to: Status,
        /// Legal statuses for the kind.
        allowed: String,
    },
    /// The key is not an epic, story or retrospective.
    #[error("`{kind}` keys are kept as they are; baton does not change their status")]
    NotManaged {
        /// The key kind.
        kind: &'static str,
    },
    /// Not a legal move for this actor.
    #[error("{from} → {to} is not a legal move for {actor}{}", legal_list(.legal))]
    Illegal {
        /// From (effective).
        from: String,
        /// To.
        to: Status,
        /// Who asked.
        actor: Actor,
        /// The moves that are legal from here for this actor.
        legal: Vec<Status>,
    },
}

fn legal_list(legal: &[Status]) -> String {
    if legal.is_empty() {
        "; no move is legal from here without --force".to_owned()
    } else {
        let names: Vec<&str> = legal.iter().map(|s| s.as_str()).collect();
        format!("; legal from here: {}", names.join(", "))
    }
}

/// The moves `actor` may make from `current` without force.
pub fn legal_targets(kind: KeyKind, current: &Current, actor: Actor) -> Vec<Status> {
    let Some(scope) = Scope::of(kind) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut push = |s: Status| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    match current.effective() {
        StatusValue::Known(NeedsIntervention) => {
            // Leaving needs-intervention: back to where the story was, or onwards from there.
            if let (Human | Orch, Some(under)) = (actor, current.canonical.known()) {
                push(under);
                for edge in EDGES.iter().filter(|e| e.scope == scope && e.from == under) {
                    push(edge.to);
                }
            }
        }
        StatusValue::Known(from) => {
            for edge in EDGES.iter().filter(|e| e.scope == scope && e.from == from) {
                if edge.actors.contains(&actor) {
                    push(edge.to);
                }
            }
            if scope == Scope::Story && from != Done && matches!(actor, Human | Orch) {
                push(NeedsIntervention);
            }
        }
        StatusValue::Foreign(_) | StatusValue::Unknown(_) => {
            // A value baton doesn't know: a human may repair it to any status of the kind.
            if actor == Human {
                for s in Status::ALL.into_iter().filter(|s| s.legal_for(kind)) {
                    push(s);
                }
            }
        }
    }
    out
}

/// Checks one move. `Ok(Allowed::Forced)` only when `force` was needed and given.
pub fn check(
    kind: KeyKind,
    current: &Current,
    to: Status,
    actor: Actor,
    force: bool,
) -> Result<Allowed, Refusal> {
    let Some(_) = Scope::of(kind) else {
        return Err(Refusal::NotManaged { kind: kind.name() });
    };
    if !to.legal_for(kind) {
        let allowed: Vec<&str> = Status::ALL
            .into_iter()
            .filter(|s| s.legal_for(kind))
            .map(Status::as_str)
            .collect();
        return Err(Refusal::WrongKind {
            kind: kind.name(),
            to,
            allowed: allowed.join(", "),
        });
    }
    if current.effective() == StatusValue::Known(to) {
        return Ok(Allowed::Unchanged);
    }
    let legal = legal_targets(kind, current, actor);
    if legal.contains(&to) {
        return Ok(Allowed::Edge);
    }
    if force && matches!(actor, Human | Orch) {
        return Ok(Allowed::Forced);
    }
    Err(Refusal::Illegal {
        from: current.effective().as_str().to_owned(),
        to,
        actor,
        legal,
    })
}

/// Whether `to` is lower than `from` in BMad's never-downgrade order.
pub fn is_lowering(kind: KeyKind, from: &StatusValue, to: Status) -> bool {
    match (from.known().and_then(|f| f.rank(kind)), to.rank(kind)) {
        (Some(f), Some(t)) => t < f,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::classify;

    fn at(s: Status) -> Current {
        Current {
            canonical: StatusValue::Known(s.projection().unwrap_or(s)),
            extended: s.is_extended().then_some(s),
        }
    }

    #[test]
    fn the_happy_path_is_legal_for_its_actors() {
        let story = classify("1-1-a");
        let path = [
            (Backlog, ReadyForDev, Sm),
            (ReadyForDev, InProgress, Dev),
            (InProgress, Review, Dev),
            (Review, Done, Rev),
        ];
        for (from, to, actor) in path {
            assert_eq!(check(story, &at(from), to, actor, false), Ok(Allowed::Edge));
        }
    }

    #[test]
    fn requested_changes_lower_without_force() {
        let story = classify("1-1-a");
        assert_eq!(
            check(story, &at(Review), InProgress, Rev, false),
            Ok(Allowed::Edge)
        );
    }

    #[test]
    fn other_lowering_needs_force_and_lists_legal_moves() {
        let story = classify("1-1-a");
        let err = check(story, &at(Done), Backlog, Human, false).unwrap_err();
        assert!(matches!(err, Refusal::Illegal { .. }));
        assert!(err.to_string().contains("done → backlog"));
        assert_eq!(
            check(story, &at(Done), Backlog, Human, true),
            Ok(Allowed::Forced)
        );
    }

    #[test]
    fn agents_cannot_force_or_cross_roles() {
        let story = classify("1-1-a");
        assert!(check(story, &at(InProgress), Done, Dev, true).is_err());
        assert!(check(story, &at(Review), Done, Dev, false).is_err());
        assert!(check(story, &at(ReadyForDev), InProgress, Rev, false).is_err());
    }

    #[test]
    fn skipping_ahead_is_refused_with_the_legal_list() {
        let story = classify("1-1-a");
        let err = check(story, &at(Backlog), Done, Human, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "backlog → done is not a legal move for human; legal from here: ready-for-dev, needs-intervention"
        );
    }

    #[test]
    fn kinds_restrict_statuses() {
        assert!(matches!(
            check(classify("epic-1"), &at(Backlog), Review, Human, true),
            Err(Refusal::WrongKind { .. })
        ));
        assert!(matches!(
            check(classify("sprint-1"), &at(Backlog), Done, Human, true),
            Err(Refusal::NotManaged { .. })
        ));
    }

    #[test]
    fn needs_intervention_returns_to_the_underlying_state() {
        let story = classify("1-1-a");
        let cur = Current {
            canonical: StatusValue::Known(Review),
            extended: Some(NeedsIntervention),
        };
        assert_eq!(check(story, &cur, Review, Human, false), Ok(Allowed::Edge));
        assert_eq!(check(story, &cur, Done, Human, false), Ok(Allowed::Edge));
        assert!(check(story, &cur, Done, Rev, false).is_err());
    }

    #[test]
    fn every_edge_stays_within_its_kind() {
        for edge in EDGES {
            let kind = match edge.scope {
                Scope::Story => classify("1-1-a"),
                Scope::Epic => classify("epic-1"),
                Scope::Retro => classify("epic-1-retrospective"),
            };
            assert!(
                edge.from.legal_for(kind) && edge.to.legal_for(kind),
                "{edge:?}"
            );
            assert!(!edge.actors.is_empty());
        }
    }
}
