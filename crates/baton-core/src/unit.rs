//! Units of work and the workflows they belong to.
//!
//! Every step and escalation of the journal is recorded under a unit's key: a story
//! (`1-2-login`), an epic's retrospective (`epic-1-retrospective`), a plan task
//! (`sdd:PLAN.md#3`), a planning step (`plan:prd`), an agent's task of `baton team` (`team:2`),
//! a BMad skill session (`bmad:bmad-prd-1`) or a GitHub issue of the pipeline (`gh:#12`). This
//! module owns both directions: [`UnitKey::journal_key`] writes a key and [`UnitKey::parse`]
//! reads one back, so which workflow a journaled escalation belongs to ([`UnitKey::workflow`])
//! and which command takes its answer up ([`UnitKey::resume_command`]) are decided here, never
//! by matching string prefixes at the call sites.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which workflow a run is (the journal's `runs.kind`), and which one a unit belongs to.
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

    /// The kind the journal names `name`, if any.
    pub fn parse(name: &str) -> Option<RunKind> {
        RunKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for RunKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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

/// A journal key that names a workflow's unit but breaks its grammar (`team:x`, `gh:12`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` is not a unit key: {why}")]
pub struct UnitKeyError {
    /// The key as read.
    pub key: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl UnitKey {
    /// Reads a journal key back ([`UnitKey::journal_key`] is its inverse). A key without a
    /// workflow's prefix is the sprint's: an epic's retrospective when it is spelled like one,
    /// else a story (projects in the wild have keys of their own, which are still stories).
    pub fn parse(key: &str) -> Result<UnitKey, UnitKeyError> {
        let bad = |why| UnitKeyError {
            key: key.to_owned(),
            why,
        };
        if let Some(task) = key.strip_prefix("sdd:") {
            let (plan, id) = task
                .rsplit_once('#')
                .ok_or_else(|| bad("a plan task is `sdd:<plan>#<task id>`"))?;
            return Ok(UnitKey::PlanTask {
                plan: plan.to_owned(),
                id: id.to_owned(),
            });
        }
        if let Some(step) = key.strip_prefix("plan:") {
            return Ok(UnitKey::PlanStep(step.to_owned()));
        }
        if let Some(n) = key.strip_prefix("team:") {
            return n
                .parse()
                .map(UnitKey::TeamTask)
                .map_err(|_| bad("a team task is `team:<position>`"));
        }
        if let Some(session) = key.strip_prefix("bmad:") {
            return Ok(UnitKey::Bmad(session.to_owned()));
        }
        if let Some(n) = key.strip_prefix("gh:") {
            return n
                .strip_prefix('#')
                .and_then(|n| n.parse().ok())
                .map(UnitKey::Issue)
                .ok_or_else(|| bad("an issue is `gh:#<number>`"));
        }
        Ok(match crate::key::classify(key) {
            crate::key::KeyKind::Retrospective { .. } => UnitKey::Retrospective(key.to_owned()),
            _ => UnitKey::Story(key.to_owned()),
        })
    }

    /// The workflow whose unit this is: the one that raised its escalations and acts on their
    /// answers.
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
    fn a_prefixed_key_that_breaks_its_grammar_is_refused_and_belongs_to_no_workflow() {
        for key in ["team:x", "gh:12", "gh:#x", "sdd:PLAN.md"] {
            let e = UnitKey::parse(key).expect_err(key);
            assert_eq!(e.key, key);
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
        for kind in RunKind::ALL {
            assert_eq!(RunKind::parse(kind.as_str()), Some(kind));
        }
    }

    proptest! {
        #[test]
        fn every_unit_s_journal_key_is_read_back_as_the_same_unit(
            text in "[a-z0-9 :/._-]{1,12}",
            plan in "[a-z0-9 #:/._-]{0,12}",
            n in any::<u64>(),
            pos in any::<usize>(),
        ) {
            // A story's key never starts with a workflow's prefix (the sprint file's grammar).
            let story = format!("1-{text}");
            let mut units = vec![
                UnitKey::PlanTask { plan, id: text.replace('#', "") },
                UnitKey::PlanStep(text.clone()),
                UnitKey::TeamTask(pos),
                UnitKey::Bmad(text.clone()),
                UnitKey::Issue(n),
            ];
            if !matches!(crate::key::classify(&story), crate::key::KeyKind::Retrospective { .. }) {
                units.push(UnitKey::Story(story));
            }
            for unit in units {
                prop_assert_eq!(UnitKey::parse(&unit.journal_key()), Ok(unit.clone()));
            }
        }
    }
}
