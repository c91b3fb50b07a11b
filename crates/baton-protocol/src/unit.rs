//! Units of work, typed: what one story, plan task, planning step, retrospective, team task,
//! BMad session or GitHub issue is journaled under, and the parsing of the journal's keys back
//! into them (the one place a key's text is read; nothing matches `sdd:` or `bmad:` by hand).

use crate::run::RunKind;
use baton_core::key::{KeyKind, classify};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A unit of work: what one story, plan task or planning step is journaled under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKey {
    /// A story of the sprint (`1-2-login`).
    Story(String),
    /// A task of a plan file (`baton sdd`).
    PlanTask {
        /// The plan, relative to the project root.
        plan: String,
        /// The task's id in it.
        id: String,
    },
    /// A step of the planning pipeline (`prd`).
    PlanStep(String),
    /// An epic's retrospective (`epic-1-retrospective`).
    Retrospective(String),
    /// One agent's task in `baton team`, by its position.
    TeamTask(usize),
    /// A session of a BMad skill run by `baton bmad` (`bmad-prd-1`).
    Bmad(String),
    /// A GitHub issue of the pipeline (`baton pm`), by its number.
    Issue(u64),
}

/// A journal key that names no unit of work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseUnitKeyError {
    /// Nothing.
    #[error("an empty key names no unit of work")]
    Empty,
    /// A prefix no workflow journals under.
    #[error(
        "`{0}` has no known prefix (`sdd:`, `plan:`, `team:`, `bmad:`, `gh:#`) and is not a story key"
    )]
    UnknownPrefix(String),
    /// A known prefix with a malformed rest.
    #[error("`{key}` is not a {what} key: {why}")]
    Malformed {
        /// The key.
        key: String,
        /// The kind of unit its prefix names.
        what: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An epic, or text no story key looks like.
    #[error("`{0}` names no story, task, step or session")]
    NotAUnit(String),
}

impl UnitKey {
    /// The unit a journal key names: the inverse of [`UnitKey::journal_key`]. `sdd:<plan>#<id>`,
    /// `plan:<step>`, `team:<n>`, `bmad:<session>`, `gh:#<n>`; without a prefix, an epic's
    /// retrospective (`epic-1-retrospective`) or a story.
    pub fn parse(key: &str) -> Result<UnitKey, ParseUnitKeyError> {
        let malformed = |what, why| ParseUnitKeyError::Malformed {
            key: key.to_owned(),
            what,
            why,
        };
        if key.is_empty() {
            return Err(ParseUnitKeyError::Empty);
        }
        if let Some(rest) = key.strip_prefix("sdd:") {
            let (plan, id) = rest
                .rsplit_once('#')
                .ok_or_else(|| malformed("plan task", "it lacks `#<task id>`"))?;
            if plan.is_empty() || id.is_empty() {
                return Err(malformed("plan task", "the plan or the task id is empty"));
            }
            return Ok(UnitKey::PlanTask {
                plan: plan.to_owned(),
                id: id.to_owned(),
            });
        }
        if let Some(step) = key.strip_prefix("plan:") {
            if step.is_empty() {
                return Err(malformed("planning step", "the step is empty"));
            }
            return Ok(UnitKey::PlanStep(step.to_owned()));
        }
        if let Some(n) = key.strip_prefix("team:") {
            return n
                .parse()
                .map(UnitKey::TeamTask)
                .map_err(|_| malformed("team task", "its position is not a number"));
        }
        if let Some(session) = key.strip_prefix("bmad:") {
            if session.is_empty() {
                return Err(malformed("BMad session", "the session is empty"));
            }
            return Ok(UnitKey::Bmad(session.to_owned()));
        }
        if let Some(n) = key.strip_prefix("gh:#") {
            return n
                .parse()
                .map(UnitKey::Issue)
                .map_err(|_| malformed("GitHub issue", "its number is not a number"));
        }
        if key.contains(':') {
            return Err(ParseUnitKeyError::UnknownPrefix(key.to_owned()));
        }
        if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ParseUnitKeyError::NotAUnit(key.to_owned()));
        }
        match classify(key) {
            KeyKind::Retrospective { .. } => Ok(UnitKey::Retrospective(key.to_owned())),
            KeyKind::Epic { .. } => Err(ParseUnitKeyError::NotAUnit(key.to_owned())),
            KeyKind::Story { .. } | KeyKind::Opaque | KeyKind::Malformed => {
                Ok(UnitKey::Story(key.to_owned()))
            }
        }
    }

    /// The workflow whose runs work on this kind of unit (and resume it after an answer).
    pub fn workflow(&self) -> RunKind {
        match self {
            UnitKey::Story(_) | UnitKey::Retrospective(_) => RunKind::Sprint,
            UnitKey::PlanTask { .. } => RunKind::Sdd,
            UnitKey::PlanStep(_) => RunKind::Plan,
            UnitKey::TeamTask(_) => RunKind::Team,
            UnitKey::Bmad(_) => RunKind::Bmad,
            UnitKey::Issue(_) => RunKind::Pm,
        }
    }

    /// The command that takes up an answer to one of this unit's escalations: `baton sprint`,
    /// `baton sdd <plan>`, `baton plan --continue`, `baton team`, `baton bmad run <skill>`,
    /// `baton pm`.
    pub fn resume_command(&self) -> String {
        match self {
            UnitKey::Story(_) | UnitKey::Retrospective(_) => "baton sprint".to_owned(),
            UnitKey::PlanTask { plan, .. } => format!("baton sdd {plan}"),
            UnitKey::PlanStep(_) => "baton plan --continue".to_owned(),
            UnitKey::TeamTask(_) => "baton team".to_owned(),
            // A session is `<skill>-<n>`.
            UnitKey::Bmad(session) => format!(
                "baton bmad run {}",
                session
                    .rsplit_once('-')
                    .map_or(session.as_str(), |(s, _)| s)
            ),
            UnitKey::Issue(_) => "baton pm".to_owned(),
        }
    }

    /// The kind of step a unit's agent takes when the workflow says no more (for recall):
    /// `story`, `sdd`, `plan:<step>`, `retro`, `team`.
    pub fn stage_kind(&self) -> String {
        match self {
            UnitKey::Story(_) => "story".to_owned(),
            UnitKey::PlanTask { .. } => "sdd".to_owned(),
            UnitKey::PlanStep(step) => format!("plan:{step}"),
            UnitKey::Retrospective(_) => "retro".to_owned(),
            UnitKey::TeamTask(_) => "team".to_owned(),
            UnitKey::Bmad(_) => "bmad".to_owned(),
            UnitKey::Issue(_) => "pm".to_owned(),
        }
    }

    /// The epic of a story or retrospective (`1` of `1-2-login` and `epic-1-retrospective`).
    pub fn epic(&self) -> Option<String> {
        match self {
            UnitKey::Story(k) => k
                .split_once('-')
                .map(|(e, _)| e.to_owned())
                .filter(|e| !e.is_empty()),
            UnitKey::Retrospective(k) => k
                .strip_prefix("epic-")
                .and_then(|r| r.split_once('-'))
                .map(|(e, _)| e.to_owned()),
            _ => None,
        }
    }

    /// The story this unit is, if it is one.
    pub fn story(&self) -> Option<&str> {
        match self {
            UnitKey::Story(k) => Some(k),
            _ => None,
        }
    }

    /// The key the journal records the unit's steps and escalations under.
    pub fn journal_key(&self) -> String {
        match self {
            UnitKey::Story(k) | UnitKey::Retrospective(k) => k.clone(),
            UnitKey::PlanTask { plan, id } => format!("sdd:{plan}#{id}"),
            UnitKey::PlanStep(step) => format!("plan:{step}"),
            UnitKey::TeamTask(n) => format!("team:{n}"),
            UnitKey::Bmad(session) => format!("bmad:{session}"),
            UnitKey::Issue(n) => format!("gh:#{n}"),
        }
    }
}

/// Whether the journal key `key` (`None`: an escalation of no unit) is a unit of `workflow`'s.
/// A key that breaks a workflow's grammar belongs to none.
pub fn belongs_to(key: Option<&str>, workflow: RunKind) -> bool {
    key.and_then(|k| UnitKey::parse(k).ok())
        .is_some_and(|u| u.workflow() == workflow)
}

impl fmt::Display for UnitKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.journal_key())
    }
}

impl FromStr for UnitKey {
    type Err = ParseUnitKeyError;

    fn from_str(s: &str) -> Result<UnitKey, ParseUnitKeyError> {
        UnitKey::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_journal_key_parses_back_to_its_unit() {
        for unit in [
            UnitKey::Story("1-2-login".into()),
            UnitKey::Story("2-6a-extra".into()),
            UnitKey::PlanTask {
                plan: "docs/plans/a#b.md".into(),
                id: "3".into(),
            },
            UnitKey::PlanStep("prd".into()),
            UnitKey::Retrospective("epic-1-retrospective".into()),
            UnitKey::TeamTask(2),
            UnitKey::Bmad("bmad-prd-1".into()),
            UnitKey::Issue(42),
        ] {
            assert_eq!(UnitKey::parse(&unit.journal_key()), Ok(unit.clone()));
            assert_eq!(unit.to_string().parse::<UnitKey>(), Ok(unit));
        }
    }

    #[test]
    fn keys_that_name_no_unit_say_why() {
        assert_eq!(UnitKey::parse(""), Err(ParseUnitKeyError::Empty));
        assert!(matches!(
            UnitKey::parse("jira:PROJ-1"),
            Err(ParseUnitKeyError::UnknownPrefix(_))
        ));
        let e = UnitKey::parse("sdd:PLAN.md").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`sdd:PLAN.md` is not a plan task key: it lacks `#<task id>`"
        );
        assert!(UnitKey::parse("team:two").is_err());
        assert!(UnitKey::parse("gh:#x").is_err());
        assert!(UnitKey::parse("gh:12").is_err());
        assert!(matches!(
            UnitKey::parse("epic-1"),
            Err(ParseUnitKeyError::NotAUnit(_))
        ));
        assert!(UnitKey::parse("1-1 a").is_err());
    }

    #[test]
    fn each_unit_belongs_to_one_workflow() {
        assert_eq!(
            UnitKey::parse("epic-2-retrospective").map(|u| u.workflow()),
            Ok(RunKind::Sprint)
        );
        assert_eq!(
            UnitKey::parse("sdd:PLAN.md#1").map(|u| u.workflow()),
            Ok(RunKind::Sdd)
        );
        assert_eq!(
            UnitKey::parse("plan:prd").map(|u| u.workflow()),
            Ok(RunKind::Plan)
        );
        assert_eq!(
            UnitKey::parse("bmad:bmad-prd-1").map(|u| u.workflow()),
            Ok(RunKind::Bmad)
        );
        assert_eq!(
            UnitKey::parse("gh:#7").map(|u| u.workflow()),
            Ok(RunKind::Pm)
        );
        assert_eq!(
            UnitKey::parse("team:1").map(|u| u.workflow()),
            Ok(RunKind::Team)
        );
    }
}

#[cfg(test)]
mod workflow_tests {
    use super::*;

    #[test]
    fn each_workflow_s_keys_are_read_back_as_its_units() {
        let cases = [
            (
                "1-2-login",
                UnitKey::Story("1-2-login".into()),
                RunKind::Sprint,
            ),
            (
                "epic-1-retrospective",
                UnitKey::Retrospective("epic-1-retrospective".into()),
                RunKind::Sprint,
            ),
            (
                "legacy-key",
                UnitKey::Story("legacy-key".into()),
                RunKind::Sprint,
            ),
            (
                "sdd:docs/PLAN.md#2",
                UnitKey::PlanTask {
                    plan: "docs/PLAN.md".into(),
                    id: "2".into(),
                },
                RunKind::Sdd,
            ),
            ("plan:prd", UnitKey::PlanStep("prd".into()), RunKind::Plan),
            ("team:3", UnitKey::TeamTask(3), RunKind::Team),
            (
                "bmad:bmad-create-prd-2",
                UnitKey::Bmad("bmad-create-prd-2".into()),
                RunKind::Bmad,
            ),
            ("gh:#12", UnitKey::Issue(12), RunKind::Pm),
        ];
        for (key, unit, workflow) in cases {
            assert_eq!(UnitKey::parse(key), Ok(unit.clone()), "{key}");
            assert_eq!(unit.workflow(), workflow, "{key}");
            assert_eq!(unit.journal_key(), key);
            assert!(belongs_to(Some(key), workflow), "{key}");
        }
        assert!(!belongs_to(None, RunKind::Sprint));
    }

    #[test]
    fn a_prefixed_key_that_breaks_its_grammar_belongs_to_no_workflow() {
        for key in ["team:x", "gh:12", "gh:#x", "sdd:PLAN.md"] {
            assert!(UnitKey::parse(key).is_err(), "{key}");
            for kind in RunKind::ALL {
                assert!(!belongs_to(Some(key), kind), "{key} {kind}");
            }
        }
    }

    #[test]
    fn each_kind_names_the_command_that_resumes_it() {
        for (key, command) in [
            ("1-1-a", "baton sprint"),
            ("epic-2-retrospective", "baton sprint"),
            ("sdd:PLAN.md#1", "baton sdd PLAN.md"),
            ("plan:architecture", "baton plan --continue"),
            ("team:1", "baton team"),
            ("bmad:bmad-create-prd-3", "baton bmad run bmad-create-prd"),
            ("gh:#4", "baton pm"),
        ] {
            let unit = UnitKey::parse(key).expect(key);
            assert_eq!(unit.resume_command(), command, "{key}");
        }
    }
}
