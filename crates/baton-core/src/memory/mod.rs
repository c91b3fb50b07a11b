//! What the team learned, as values: a memory's kind, importance, source and scope, the key that
//! makes the same lesson one memory however often it is learned, and (in [`recall`]) which
//! memories a unit of work gets and how they are shown to its agent.
//!
//! A memory is atomic: one decision, one pattern, one problem and its solution, one milestone or
//! one preference. Its text is data written by a person or taken from an agent's or reviewer's
//! output, so it is only ever quoted in a prompt, never followed as an instruction of baton's.
//! Storing, searching and pruning belong to `baton-store`; nothing here does IO.

pub mod recall;
pub mod sources;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt::{self, Write as _};

/// What kind of lesson a memory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An architectural decision (importance 9–10).
    Decision,
    /// An implementation pattern to follow or avoid (7–8).
    Pattern,
    /// A problem and how it was solved (7–8).
    ProblemSolution,
    /// A milestone reached (6–7).
    Milestone,
    /// A person's preference about how the work is done (any importance; 8 by default).
    Preference,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 5] = [
        Kind::Decision,
        Kind::Pattern,
        Kind::ProblemSolution,
        Kind::Milestone,
        Kind::Preference,
    ];

    /// The stable id stored and accepted on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Decision => "decision",
            Kind::Pattern => "pattern",
            Kind::ProblemSolution => "problem-solution",
            Kind::Milestone => "milestone",
            Kind::Preference => "preference",
        }
    }

    /// Parses a stored id.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The importance levels the kind may take (the requirement's scale).
    pub fn importance_range(self) -> (u8, u8) {
        match self {
            Kind::Decision => (9, 10),
            Kind::Pattern | Kind::ProblemSolution => (7, 8),
            Kind::Milestone => (6, 7),
            Kind::Preference => (MIN_IMPORTANCE, MAX_IMPORTANCE),
        }
    }

    /// The importance a memory of this kind gets when nobody says otherwise.
    pub fn default_importance(self) -> u8 {
        match self {
            Kind::Decision => 9,
            Kind::Pattern | Kind::ProblemSolution => 7,
            Kind::Milestone => 6,
            Kind::Preference => 8,
        }
    }

    /// `importance` moved into the kind's range.
    pub fn clamp(self, importance: u8) -> u8 {
        let (lo, hi) = self.importance_range();
        importance.clamp(lo, hi)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The lowest importance.
pub const MIN_IMPORTANCE: u8 = 1;
/// The highest importance.
pub const MAX_IMPORTANCE: u8 = 10;

/// Where a memory came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// An epic's retrospective: its action items and lessons.
    Retrospective,
    /// A review finding a fix round resolved.
    ReviewFinding,
    /// A person said it: `baton remember`, or a confirmed correction.
    HumanFeedback,
    /// A person's answer to an escalation, with its reason.
    Escalation,
    /// An agent's own report.
    AgentReport,
    /// A BMad workflow's `.memlog.md`.
    Memlog,
}

impl Source {
    /// Every source.
    pub const ALL: [Source; 6] = [
        Source::Retrospective,
        Source::ReviewFinding,
        Source::HumanFeedback,
        Source::Escalation,
        Source::AgentReport,
        Source::Memlog,
    ];

    /// The stable id stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Retrospective => "retrospective",
            Source::ReviewFinding => "review-finding",
            Source::HumanFeedback => "human-feedback",
            Source::Escalation => "escalation",
            Source::AgentReport => "agent-report",
            Source::Memlog => "memlog",
        }
    }

    /// Parses a stored id.
    pub fn parse(s: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a memory applies: the whole project, one epic, and/or files matching globs.
///
/// An empty scope is the project's. With globs, the memory is recalled only for a unit that
/// touches a matching file; with an epic, only for that epic's units.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// The epic (`3`), when only its stories should recall it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epic: Option<String>,
    /// Globs over paths relative to the project root (`src/db/**`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<String>,
}

impl Scope {
    /// The whole project.
    pub fn project() -> Scope {
        Scope::default()
    }

    /// Files matching `globs`.
    pub fn files(globs: Vec<String>) -> Scope {
        Scope { epic: None, globs }
    }

    /// The stable label the store groups memories by for its per-scope cap: `project`,
    /// `epic:3`, `files:a,b` (globs sorted).
    pub fn label(&self) -> String {
        let mut globs = self.globs.clone();
        globs.sort();
        globs.dedup();
        match (&self.epic, globs.is_empty()) {
            (None, true) => "project".to_owned(),
            (Some(e), true) => format!("epic:{e}"),
            (None, false) => format!("files:{}", globs.join(",")),
            (Some(e), false) => format!("epic:{e};files:{}", globs.join(",")),
        }
    }
}

/// A memory about to be stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draft {
    /// Its kind.
    pub kind: Kind,
    /// 1–10.
    pub importance: u8,
    /// Where it came from.
    pub source: Source,
    /// The lesson, one or a few sentences.
    pub text: String,
    /// The story, task or step it came from (`1-2-login`, `epic-1-retrospective`).
    pub unit: Option<String>,
    /// Where it applies.
    pub scope: Scope,
    /// What makes two drafts the same lesson, when the text alone does not (a review finding's
    /// fingerprint: the same problem with another suggested fix is the same lesson).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<String>,
}

impl Draft {
    /// A memory of `kind` at its default importance.
    pub fn new(kind: Kind, source: Source, text: impl Into<String>) -> Draft {
        Draft {
            kind,
            importance: kind.default_importance(),
            source,
            text: text.into(),
            unit: None,
            scope: Scope::project(),
            same_as: None,
        }
    }

    /// The same lesson learned again has the same key: the kind, the scope and the text with
    /// case, spacing and closing punctuation ignored. Curation merges drafts with equal keys into
    /// one memory, made stronger, instead of storing a second.
    pub fn key(&self) -> String {
        key_of(
            self.kind,
            &self.scope,
            self.same_as.as_deref().unwrap_or(&self.text),
        )
    }
}

/// The curation key of a lesson ([`Draft::key`]).
pub fn key_of(kind: Kind, scope: &Scope, text: &str) -> String {
    let digest = Sha256::digest(
        format!("{}\n{}\n{}", kind.as_str(), scope.label(), normalise(text)).as_bytes(),
    );
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// Lowercase, one space between words, closing punctuation and quotes dropped.
pub fn normalise(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined
        .to_lowercase()
        .trim_end_matches(|c: char| c.is_whitespace() || ".,;:!?…。\"'`".contains(c))
        .to_owned()
}

/// Why a draft cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DraftError {
    /// Nothing to remember.
    #[error("a memory needs some text")]
    Empty,
    /// Longer than a memory should be.
    #[error("a memory holds at most {MAX_TEXT} characters; this one has {0}")]
    TooLong(usize),
    /// Importance outside 1–10.
    #[error("importance must be from 1 to 10, not {0}")]
    Importance(u8),
    /// A glob that does not parse.
    #[error("the scope glob `{glob}` does not parse: {reason}")]
    Glob {
        /// The glob.
        glob: String,
        /// Why.
        reason: String,
    },
}

/// The longest memory text, in characters: a memory is atomic, not a document.
pub const MAX_TEXT: usize = 2_000;

/// Checks a draft before it is stored: some text, not too long, importance in 1–10, globs that
/// parse. The text is trimmed.
pub fn check(draft: &mut Draft) -> Result<(), DraftError> {
    draft.text = draft.text.trim().to_owned();
    if draft.text.is_empty() {
        return Err(DraftError::Empty);
    }
    let chars = draft.text.chars().count();
    if chars > MAX_TEXT {
        return Err(DraftError::TooLong(chars));
    }
    if !(MIN_IMPORTANCE..=MAX_IMPORTANCE).contains(&draft.importance) {
        return Err(DraftError::Importance(draft.importance));
    }
    for glob in &draft.scope.globs {
        recall::compile(glob).map_err(|reason| DraftError::Glob {
            glob: glob.clone(),
            reason,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_sources_round_trip_their_ids() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
        for s in Source::ALL {
            assert_eq!(Source::parse(s.as_str()), Some(s));
        }
        assert_eq!(Kind::parse("lesson"), None);
    }

    #[test]
    fn importance_follows_the_scale_of_each_kind() {
        let table = [
            (Kind::Decision, 9, (9, 10)),
            (Kind::Pattern, 7, (7, 8)),
            (Kind::ProblemSolution, 7, (7, 8)),
            (Kind::Milestone, 6, (6, 7)),
            (Kind::Preference, 8, (1, 10)),
        ];
        for (kind, default, range) in table {
            assert_eq!(kind.default_importance(), default, "{kind}");
            assert_eq!(kind.importance_range(), range, "{kind}");
        }
        assert_eq!(Kind::Decision.clamp(3), 9);
        assert_eq!(Kind::Milestone.clamp(10), 7);
        assert_eq!(Kind::Preference.clamp(2), 2);
    }

    #[test]
    fn the_same_lesson_has_the_same_key_whatever_its_spelling() {
        let a = Draft::new(
            Kind::Pattern,
            Source::Retrospective,
            "Run the migrations first.",
        );
        let mut b = Draft::new(
            Kind::Pattern,
            Source::HumanFeedback,
            "  run the   MIGRATIONS first ",
        );
        b.importance = 8;
        assert_eq!(a.key(), b.key());
        let other_kind = Draft::new(
            Kind::Decision,
            Source::Retrospective,
            "Run the migrations first.",
        );
        assert_ne!(a.key(), other_kind.key());
        let mut scoped = a.clone();
        scoped.scope = Scope::files(vec!["src/db/**".into()]);
        assert_ne!(a.key(), scoped.key());
        let mut reordered = scoped.clone();
        reordered.scope.globs = vec!["src/db/**".into(), "src/db/**".into()];
        assert_eq!(scoped.key(), reordered.key());
    }

    #[test]
    fn scope_labels_group_memories_for_the_cap() {
        assert_eq!(Scope::project().label(), "project");
        let s = Scope {
            epic: Some("2".into()),
            globs: vec!["b/**".into(), "a.rs".into()],
        };
        assert_eq!(s.label(), "epic:2;files:a.rs,b/**");
        assert_eq!(Scope::files(vec!["x".into()]).label(), "files:x");
    }

    #[test]
    fn a_draft_is_checked_before_it_is_stored() {
        let mut d = Draft::new(Kind::Preference, Source::HumanFeedback, "   ");
        assert_eq!(check(&mut d), Err(DraftError::Empty));
        let mut d = Draft::new(
            Kind::Preference,
            Source::HumanFeedback,
            "x".repeat(MAX_TEXT + 1),
        );
        assert_eq!(check(&mut d), Err(DraftError::TooLong(MAX_TEXT + 1)));
        let mut d = Draft::new(Kind::Preference, Source::HumanFeedback, "ok");
        d.importance = 11;
        assert_eq!(check(&mut d), Err(DraftError::Importance(11)));
        let mut d = Draft::new(Kind::Preference, Source::HumanFeedback, " keep it ");
        d.scope = Scope::files(vec!["src/[".into()]);
        assert!(matches!(check(&mut d), Err(DraftError::Glob { .. })));
        d.scope = Scope::files(vec!["src/**/*.rs".into()]);
        assert_eq!(check(&mut d), Ok(()));
        assert_eq!(d.text, "keep it");
    }
}
