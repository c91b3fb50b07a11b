//! Status vocabulary: canonical BMad statuses, baton's extended story states, legacy and foreign
//! values.
//!
//! The sprint file holds canonical statuses (BMAD-FORMAT.md §2.3). baton's finer story states
//! (`story-doc-review`, `story-doc-improved`, `e2e-verify`, `needs-intervention`) are written to the
//! file only when the project asks for it; otherwise the file shows their canonical *projection* and
//! a trailing `# baton: <state>` comment. Legacy values are normalised on read; foreign values
//! written by other tools (`awaiting-operator`) are kept, not done and not actionable.

use crate::key::KeyKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A status baton understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Not started (stories, epics).
    Backlog,
    /// Story file written, ready for development.
    ReadyForDev,
    /// Being developed (stories) or under way (epics).
    InProgress,
    /// Waiting for code review.
    Review,
    /// Finished.
    Done,
    /// A retrospective that may be held.
    Optional,
    /// Extended: the story document is being reviewed.
    StoryDocReview,
    /// Extended: the story document was improved after its review.
    StoryDocImproved,
    /// Extended: review passed, end-to-end verification by QA under way.
    E2eVerify,
    /// Extended: the orchestrator stopped; a human must look.
    NeedsIntervention,
}

impl Status {
    /// Every status baton knows, canonical first.
    pub const ALL: [Status; 10] = [
        Status::Backlog,
        Status::ReadyForDev,
        Status::InProgress,
        Status::Review,
        Status::Done,
        Status::Optional,
        Status::StoryDocReview,
        Status::StoryDocImproved,
        Status::E2eVerify,
        Status::NeedsIntervention,
    ];

    /// The spelling in the sprint file.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Backlog => "backlog",
            Status::ReadyForDev => "ready-for-dev",
            Status::InProgress => "in-progress",
            Status::Review => "review",
            Status::Done => "done",
            Status::Optional => "optional",
            Status::StoryDocReview => "story-doc-review",
            Status::StoryDocImproved => "story-doc-improved",
            Status::E2eVerify => "e2e-verify",
            Status::NeedsIntervention => "needs-intervention",
        }
    }

    /// Parses a canonical or extended spelling (not legacy ones: see [`StatusValue::parse`]).
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// True for baton's extended story states, which BMad tools do not know.
    pub fn is_extended(self) -> bool {
        matches!(
            self,
            Status::StoryDocReview
                | Status::StoryDocImproved
                | Status::E2eVerify
                | Status::NeedsIntervention
        )
    }

    /// The canonical status written to the sprint file for an extended state. `None` for
    /// `needs-intervention`, which keeps whatever canonical status the story had.
    pub fn projection(self) -> Option<Status> {
        match self {
            Status::StoryDocReview | Status::StoryDocImproved => Some(Status::ReadyForDev),
            Status::E2eVerify => Some(Status::Review),
            Status::NeedsIntervention => None,
            other => Some(other),
        }
    }

    /// Whether this status is legal for a key of `kind`.
    pub fn legal_for(self, kind: KeyKind) -> bool {
        match kind {
            KeyKind::Epic { .. } => {
                matches!(self, Status::Backlog | Status::InProgress | Status::Done)
            }
            KeyKind::Story { .. } => !matches!(self, Status::Optional),
            KeyKind::Retrospective { .. } => matches!(self, Status::Optional | Status::Done),
            KeyKind::Opaque | KeyKind::Malformed => true,
        }
    }

    /// Rank in BMad's never-downgrade order (§2.3), extended states ranked by their projection.
    /// `None` for `needs-intervention`, which has no place in the order.
    pub fn rank(self, kind: KeyKind) -> Option<u8> {
        let canonical = self.projection()?;
        Some(match (kind, canonical) {
            (KeyKind::Epic { .. }, Status::Backlog) => 0,
            (KeyKind::Epic { .. }, Status::InProgress) => 1,
            (KeyKind::Epic { .. }, Status::Done) => 2,
            (KeyKind::Retrospective { .. }, Status::Optional) => 0,
            (KeyKind::Retrospective { .. }, Status::Done) => 1,
            (_, Status::Backlog | Status::Optional) => 0,
            (_, Status::ReadyForDev) => 1,
            (_, Status::InProgress) => 2,
            (_, Status::Review) => 3,
            (_, Status::Done) => 4,
            _ => return None,
        })
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let raw = String::deserialize(d)?;
        Status::parse(&raw)
            .ok_or_else(|| serde::de::Error::custom(format!("`{raw}` is not a status")))
    }
}

/// A status value as read from the file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StatusValue {
    /// A status baton understands (after legacy normalisation).
    Known(Status),
    /// A value written by another tool (`awaiting-operator`): not done, not actionable.
    Foreign(String),
    /// A value nobody documents: reported by validation, treated like a foreign one.
    Unknown(String),
}

/// Statuses other tools write that baton keeps without complaint (BMAD-FORMAT.md §2.3).
pub const KNOWN_FOREIGN: &[&str] = &["awaiting-operator"];

impl StatusValue {
    /// Parses a raw value for a key of `kind`; the second item names the legacy spelling that
    /// was normalised, if any.
    pub fn parse(raw: &str, kind: KeyKind) -> (StatusValue, Option<&'static str>) {
        let legacy = match (raw, kind) {
            ("drafted", _) => Some(("drafted", Status::ReadyForDev)),
            ("contexted", _) => Some(("contexted", Status::InProgress)),
            ("pending", KeyKind::Retrospective { .. }) => Some(("pending", Status::Optional)),
            // The v6-alpha template defined "completed: Retrospective has been done"; alpha-era
            // files use it for epics and stories too.
            ("completed", _) => Some(("completed", Status::Done)),
            _ => None,
        };
        if let Some((name, status)) = legacy {
            return (StatusValue::Known(status), Some(name));
        }
        if let Some(status) = Status::parse(raw) {
            return (StatusValue::Known(status), None);
        }
        if KNOWN_FOREIGN.contains(&raw) {
            return (StatusValue::Foreign(raw.to_owned()), None);
        }
        (StatusValue::Unknown(raw.to_owned()), None)
    }

    /// The known status, if any.
    pub fn known(&self) -> Option<Status> {
        match self {
            StatusValue::Known(s) => Some(*s),
            _ => None,
        }
    }

    /// The spelling to show.
    pub fn as_str(&self) -> &str {
        match self {
            StatusValue::Known(s) => s.as_str(),
            StatusValue::Foreign(s) | StatusValue::Unknown(s) => s,
        }
    }

    /// Whether the work this names is finished.
    pub fn is_done(&self) -> bool {
        matches!(self, StatusValue::Known(Status::Done))
    }
}

impl fmt::Display for StatusValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for StatusValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Reads the spelling [`Serialize`] writes back as it was: a status by its own name, a known
/// foreign value as foreign, anything else as unknown (no legacy normalisation: that needs the
/// key's kind, which a bare value does not carry).
impl<'de> Deserialize<'de> for StatusValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StatusValue, D::Error> {
        let raw = String::deserialize(d)?;
        Ok(match Status::parse(&raw) {
            Some(s) => StatusValue::Known(s),
            None if KNOWN_FOREIGN.contains(&raw.as_str()) => StatusValue::Foreign(raw),
            None => StatusValue::Unknown(raw),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::classify;

    #[test]
    fn legacy_values_normalise() {
        let story = classify("1-1-a");
        assert_eq!(
            StatusValue::parse("drafted", story),
            (StatusValue::Known(Status::ReadyForDev), Some("drafted"))
        );
        let epic = classify("epic-1");
        assert_eq!(
            StatusValue::parse("contexted", epic).0,
            StatusValue::Known(Status::InProgress)
        );
        let retro = classify("epic-1-retrospective");
        assert_eq!(
            StatusValue::parse("pending", retro).0,
            StatusValue::Known(Status::Optional)
        );
        assert_eq!(
            StatusValue::parse("completed", retro),
            (StatusValue::Known(Status::Done), Some("completed"))
        );
    }

    #[test]
    fn foreign_and_unknown_are_kept() {
        let story = classify("1-1-a");
        assert_eq!(
            StatusValue::parse("awaiting-operator", story).0,
            StatusValue::Foreign("awaiting-operator".into())
        );
        assert_eq!(
            StatusValue::parse("finished", story).0,
            StatusValue::Unknown("finished".into())
        );
    }

    #[test]
    fn every_status_round_trips_its_spelling() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
    }

    #[test]
    fn extended_states_project_to_canonical() {
        for s in Status::ALL {
            if let Some(p) = s.projection() {
                assert!(!p.is_extended());
            }
        }
    }
}
