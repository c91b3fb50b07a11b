//! Runs: which workflow a run is ([`RunKind`], the journal's `runs.kind`) and how it ended
//! ([`RunEnd`], the journal's `runs.status` once it ended), with their journal spellings.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which workflow a run is (the journal's `runs.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// `baton sprint`.
    Sprint,
    /// `baton sdd`.
    Sdd,
    /// `baton plan`.
    Plan,
    /// `baton team`.
    Team,
    /// `baton bmad`.
    Bmad,
    /// `baton pm` (a pass, or a specialist's turn).
    Pm,
}

impl RunKind {
    /// Every kind.
    pub const ALL: [RunKind; 6] = [
        RunKind::Sprint,
        RunKind::Sdd,
        RunKind::Plan,
        RunKind::Team,
        RunKind::Bmad,
        RunKind::Pm,
    ];

    /// The journal's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Sprint => "sprint",
            RunKind::Sdd => "sdd",
            RunKind::Plan => "plan",
            RunKind::Team => "team",
            RunKind::Bmad => "bmad",
            RunKind::Pm => "pm",
        }
    }
}

impl fmt::Display for RunKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run kind the journal does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a kind of run (sprint, sdd, plan, team, bmad, pm)")]
pub struct ParseRunKindError(pub String);

impl FromStr for RunKind {
    type Err = ParseRunKindError;

    fn from_str(s: &str) -> Result<RunKind, ParseRunKindError> {
        RunKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| ParseRunKindError(s.to_owned()))
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnd {
    /// Every story of the batch is done.
    Completed,
    /// Waiting for a human's answer.
    Paused,
    /// The budget stopped it.
    Stopped,
    /// A story needs intervention, nothing could be done, or something failed.
    Failed,
    /// Cancelled (Ctrl-C).
    Cancelled,
    /// Killed while running, and marked so by the next run of any workflow.
    Interrupted,
}

impl RunEnd {
    /// Every end.
    pub const ALL: [RunEnd; 6] = [
        RunEnd::Completed,
        RunEnd::Paused,
        RunEnd::Stopped,
        RunEnd::Failed,
        RunEnd::Cancelled,
        RunEnd::Interrupted,
    ];

    /// The journal's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunEnd::Completed => "completed",
            RunEnd::Paused => "paused",
            RunEnd::Stopped => "stopped",
            RunEnd::Failed => "failed",
            RunEnd::Cancelled => "cancelled",
            RunEnd::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for RunEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A run end the journal does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not how a run ends (completed, paused, stopped, failed, cancelled, interrupted)")]
pub struct ParseRunEndError(pub String);

impl FromStr for RunEnd {
    type Err = ParseRunEndError;

    fn from_str(s: &str) -> Result<RunEnd, ParseRunEndError> {
        RunEnd::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| ParseRunEndError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_spellings_parse_back() {
        for k in RunKind::ALL {
            assert_eq!(k.as_str().parse(), Ok(k));
        }
        for e in RunEnd::ALL {
            assert_eq!(e.as_str().parse(), Ok(e));
        }
        assert!("sprints".parse::<RunKind>().is_err());
        assert!("running".parse::<RunEnd>().is_err());
    }
}
