//! Escalations as typed values: what raised one, and the choices a human can answer with.
//!
//! The engine acts on an answer by its meaning, never by the words shown to the human. Every
//! [`EscalationKind`] and every [`Choice`] therefore has a stable id (what the journal stores and
//! what `baton answer` accepts) and a label (what a person reads). Rewording a label changes
//! nothing an already-journaled escalation means. An agent's own escalation offers options the
//! agent wrote; those are [`Choice::Custom`] and are stored as written.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What raised an escalation, and so how the engine acts on its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EscalationKind {
    /// The story used all its fix rounds and the review still requests changes.
    MaxReviewRounds,
    /// Two reviews in a row reported the same findings.
    Stall,
    /// Reviews gave no usable verdict.
    InconclusiveReview,
    /// Reviews reported fewer findings than required.
    TooFewFindings,
    /// Standard mode asks a human before a story enters a checkpoint status.
    Checkpoint,
    /// An agent called `escalate`.
    Agent,
    /// A plan task's review still fails after `max_iterations` fix rounds.
    SddMaxIterations,
    /// A plan task's reviewer gave no usable verdict.
    SddInconclusive,
    /// A plan task's agent failed, halted or escalated.
    SddAgent,
    /// A story's branch could not be merged into the base: its merge fix rounds are used up.
    MergeConflict,
    /// A BMad skill's menu that baton does not answer alone (`baton bmad`): the options are the
    /// menu's keys.
    BmadMenu,
    /// A BMad skill's questions for a person (`baton bmad`): answered in free text.
    BmadQuestions,
    /// A BMad skill's validation loop stopped without passing (`baton bmad`).
    BmadStall,
}

impl EscalationKind {
    /// Every kind.
    pub const ALL: [EscalationKind; 13] = [
        EscalationKind::MaxReviewRounds,
        EscalationKind::Stall,
        EscalationKind::InconclusiveReview,
        EscalationKind::TooFewFindings,
        EscalationKind::Checkpoint,
        EscalationKind::Agent,
        EscalationKind::SddMaxIterations,
        EscalationKind::SddInconclusive,
        EscalationKind::SddAgent,
        EscalationKind::MergeConflict,
        EscalationKind::BmadMenu,
        EscalationKind::BmadQuestions,
        EscalationKind::BmadStall,
    ];

    /// The stable id stored in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            EscalationKind::MaxReviewRounds => "max-review-rounds",
            EscalationKind::Stall => "stall",
            EscalationKind::InconclusiveReview => "inconclusive-review",
            EscalationKind::TooFewFindings => "too-few-findings",
            EscalationKind::Checkpoint => "checkpoint",
            EscalationKind::Agent => "agent",
            EscalationKind::SddMaxIterations => "sdd-max-iterations",
            EscalationKind::SddInconclusive => "sdd-inconclusive",
            EscalationKind::SddAgent => "sdd-agent",
            EscalationKind::MergeConflict => "merge-conflict",
            EscalationKind::BmadMenu => "bmad-menu",
            EscalationKind::BmadQuestions => "bmad-questions",
            EscalationKind::BmadStall => "bmad-stall",
        }
    }

    /// Whether a person may answer in their own words rather than with one of the options.
    pub fn free_text(self) -> bool {
        self == EscalationKind::BmadQuestions
    }

    /// Parses a stored id.
    pub fn parse(s: &str) -> Option<EscalationKind> {
        EscalationKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The choices offered for this kind (an agent's escalation offers its own).
    pub fn choices(self) -> &'static [Choice] {
        match self {
            EscalationKind::MaxReviewRounds | EscalationKind::Stall => {
                &[Choice::AnotherRound, Choice::Accept, Choice::Stop]
            }
            EscalationKind::InconclusiveReview | EscalationKind::TooFewFindings => {
                &[Choice::RerunReview, Choice::Accept, Choice::Stop]
            }
            EscalationKind::Checkpoint => &[Choice::Confirm, Choice::SendBack],
            EscalationKind::Agent
            | EscalationKind::BmadMenu
            | EscalationKind::BmadQuestions
            | EscalationKind::BmadStall => &[],
            EscalationKind::SddMaxIterations => &[
                Choice::FixManually,
                Choice::SkipReview,
                Choice::AdjustPlan,
                Choice::Abort,
            ],
            EscalationKind::SddInconclusive => &[
                Choice::RerunReview,
                Choice::SkipReview,
                Choice::AdjustPlan,
                Choice::Abort,
            ],
            EscalationKind::SddAgent => &[
                Choice::Retry,
                Choice::FixManually,
                Choice::AdjustPlan,
                Choice::Abort,
            ],
            EscalationKind::MergeConflict => {
                &[Choice::RetryMerge, Choice::HandOver, Choice::SetAside]
            }
        }
    }
}

impl fmt::Display for EscalationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An answer to an escalation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Choice {
    /// Grant another fix round.
    AnotherRound,
    /// Run the review again.
    RerunReview,
    /// Accept the story as it is and mark it done.
    Accept,
    /// Stop: the story needs intervention.
    Stop,
    /// Confirm the story is done.
    Confirm,
    /// Send the story back for another round.
    SendBack,
    /// A human fixed it in the tree; review again.
    FixManually,
    /// Count the failing review as passed and go on.
    SkipReview,
    /// Stop so a human can edit the plan; the task starts over on the next run.
    AdjustPlan,
    /// Abort the run; the task starts over on the next run.
    Abort,
    /// Run the failed step again.
    Retry,
    /// Try the merge again, with fresh merge fix rounds.
    RetryMerge,
    /// Hand the story over to a human: it needs intervention, its branch and worktree stay.
    HandOver,
    /// Set the story's branch aside (renamed, never deleted) and start the story over.
    SetAside,
    /// One of the options an agent offered, as written.
    Custom(String),
}

/// The typed choices, for lookups by id and label.
const TYPED: [Choice; 14] = [
    Choice::AnotherRound,
    Choice::RerunReview,
    Choice::Accept,
    Choice::Stop,
    Choice::Confirm,
    Choice::SendBack,
    Choice::FixManually,
    Choice::SkipReview,
    Choice::AdjustPlan,
    Choice::Abort,
    Choice::Retry,
    Choice::RetryMerge,
    Choice::HandOver,
    Choice::SetAside,
];

impl Choice {
    /// The stable id stored in the journal (an agent's option is stored as written).
    pub fn id(&self) -> &str {
        match self {
            Choice::AnotherRound => "another-round",
            Choice::RerunReview => "rerun-review",
            Choice::Accept => "accept",
            Choice::Stop => "stop",
            Choice::Confirm => "confirm",
            Choice::SendBack => "send-back",
            Choice::FixManually => "fix-manually",
            Choice::SkipReview => "skip-review",
            Choice::AdjustPlan => "adjust-plan",
            Choice::Abort => "abort",
            Choice::Retry => "retry",
            Choice::RetryMerge => "retry-merge",
            Choice::HandOver => "hand-over",
            Choice::SetAside => "set-aside",
            Choice::Custom(s) => s,
        }
    }

    /// What a human reads.
    pub fn label(&self) -> &str {
        match self {
            Choice::AnotherRound => "another fix round",
            Choice::RerunReview => "re-run the review",
            Choice::Accept => "accept as is (mark done)",
            Choice::Stop => "stop (needs-intervention)",
            Choice::Confirm => "confirm done",
            Choice::SendBack => "send back for another round",
            Choice::FixManually => "fixed by hand: review again",
            Choice::SkipReview => "skip this review",
            Choice::AdjustPlan => "adjust the plan (stop; the task starts over)",
            Choice::Abort => "abort the run",
            Choice::Retry => "run the step again",
            Choice::RetryMerge => "retry the merge (fresh merge fix rounds)",
            Choice::HandOver => "hand over to a human (needs-intervention; branch kept)",
            Choice::SetAside => "set the branch aside (kept, renamed) and start the story over",
            Choice::Custom(s) => s,
        }
    }

    /// Reads a stored option or answer of an escalation of `kind`: an id for the engine's own
    /// kinds, the text itself for an agent's. Labels stored before ids existed are read too.
    pub fn from_stored(kind: Option<EscalationKind>, stored: &str) -> Choice {
        // Kinds without typed choices (an agent's, a BMad skill's) store their options as written.
        if kind.is_none_or(|k| k.choices().is_empty()) {
            return Choice::Custom(stored.to_owned());
        }
        TYPED
            .into_iter()
            .find(|c| c.id() == stored || c.label() == stored)
            .unwrap_or_else(|| Choice::Custom(stored.to_owned()))
    }

    /// The label of a stored option of an escalation of `kind`.
    pub fn label_of(kind: Option<EscalationKind>, stored: &str) -> String {
        Choice::from_stored(kind, stored).label().to_owned()
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Picks one of `options` (stored forms, of an escalation of `kind`) from what a person typed:
/// a number from 1, a stored id, a label (case-insensitive), or the key of a menu option stored as
/// `KEY: label`. An escalation whose kind takes free text takes any other non-empty text as the
/// answer itself. Returns the stored form.
pub fn choose(
    kind: Option<EscalationKind>,
    options: &[String],
    typed: &str,
) -> Result<String, String> {
    let typed = typed.trim();
    if let Ok(n) = typed.parse::<usize>() {
        return options
            .get(n.wrapping_sub(1))
            .cloned()
            .ok_or_else(|| format!("option {n} does not exist; choose 1 to {}", options.len()));
    }
    options
        .iter()
        .find(|o| {
            let c = Choice::from_stored(kind, o);
            c.id().eq_ignore_ascii_case(typed)
                || c.label().eq_ignore_ascii_case(typed)
                || o.split_once(": ")
                    .is_some_and(|(key, _)| key.eq_ignore_ascii_case(typed))
        })
        .cloned()
        .or_else(|| {
            (kind.is_some_and(EscalationKind::free_text) && !typed.is_empty())
                .then(|| typed.to_owned())
        })
        .ok_or_else(|| {
            let list: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {}", i + 1, Choice::label_of(kind, o)))
                .collect();
            format!(
                "`{typed}` is not an option; choose one of: {}",
                list.join("; ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_menu_key_picks_its_option_and_questions_take_free_text() {
        let menu = vec![
            "C: Continue".to_owned(),
            "A: Advanced Elicitation".to_owned(),
        ];
        let k = Some(EscalationKind::BmadMenu);
        assert_eq!(choose(k, &menu, "a").unwrap(), "A: Advanced Elicitation");
        assert_eq!(choose(k, &menu, "1").unwrap(), "C: Continue");
        assert!(choose(k, &menu, "Z").is_err());
        let q = Some(EscalationKind::BmadQuestions);
        let opts = vec!["stop".to_owned()];
        assert_eq!(choose(q, &opts, "stop").unwrap(), "stop");
        assert_eq!(
            choose(q, &opts, "Teachers, then parents").unwrap(),
            "Teachers, then parents"
        );
        assert!(choose(q, &opts, "  ").is_err());
    }

    #[test]
    fn kinds_round_trip_their_ids() {
        for k in EscalationKind::ALL {
            assert_eq!(EscalationKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(EscalationKind::parse("nope"), None);
    }

    #[test]
    fn stored_ids_and_old_labels_read_as_the_same_choice() {
        let k = Some(EscalationKind::MaxReviewRounds);
        for c in TYPED {
            assert_eq!(Choice::from_stored(k, c.id()), c);
            assert_eq!(Choice::from_stored(k, c.label()), c);
        }
        // An agent's options are never reinterpreted, even when they look like ids.
        assert_eq!(
            Choice::from_stored(Some(EscalationKind::Agent), "accept"),
            Choice::Custom("accept".into())
        );
    }

    #[test]
    fn choose_by_number_id_or_label() {
        let k = Some(EscalationKind::Stall);
        let opts: Vec<String> = EscalationKind::Stall
            .choices()
            .iter()
            .map(|c| c.id().to_owned())
            .collect();
        assert_eq!(choose(k, &opts, "1").unwrap(), "another-round");
        assert_eq!(choose(k, &opts, "ACCEPT").unwrap(), "accept");
        assert_eq!(
            choose(k, &opts, "stop (needs-intervention)").unwrap(),
            "stop"
        );
        assert!(choose(k, &opts, "4").unwrap_err().contains("1 to 3"));
        assert!(choose(k, &opts, "0").is_err());
        let err = choose(k, &opts, "maybe").unwrap_err();
        assert!(err.contains("1. another fix round"), "{err}");
        let agent = vec!["retry".to_owned(), "give up".to_owned()];
        assert_eq!(
            choose(Some(EscalationKind::Agent), &agent, "Give Up").unwrap(),
            "give up"
        );
    }
}
