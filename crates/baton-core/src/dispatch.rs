//! The dispatch table: which agent works on a story in each status, and where it goes next.
//!
//! Routing is data, not code paths: [`TABLE`] holds one [`Row`] per story status that has work
//! to do, and [`route`] only looks rows up. A row names the [`Stage`] (which fixes the bundled
//! agent, see [`agent_for`]), the mode the agent is told to work in, the status to set while it
//! works, and the status to set when it succeeds or fails. Two project options bend the table:
//! `story_review` sends new stories through a document review, `qa` sends reviewed stories
//! through end-to-end verification. Every move a row makes is a legal edge of
//! [`crate::transition::EDGES`] for the orchestrator and for the stage's own agent (tested below).
//!
//! The table covers stories only. `done` and `needs-intervention` have nothing to dispatch (the
//! latter waits for a human), and `optional` belongs to retrospectives, which run on request
//! ([`Stage::Retro`]) rather than by routing.

use crate::actor::Actor;
use crate::status::Status;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A kind of agent work on a story.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Write the story file from the epics.
    Create,
    /// Review the story document before development.
    StoryReview,
    /// Revise the story document after its review.
    Revise,
    /// Implement the story.
    Dev,
    /// Address the findings of a failed review.
    Fix,
    /// Review the code against the story.
    Review,
    /// Verify the story end to end.
    Verify,
    /// Hold an epic's retrospective.
    Retro,
}

impl Stage {
    /// Every stage, in workflow order.
    pub const ALL: [Stage; 8] = [
        Stage::Create,
        Stage::StoryReview,
        Stage::Revise,
        Stage::Dev,
        Stage::Fix,
        Stage::Review,
        Stage::Verify,
        Stage::Retro,
    ];

    /// The kebab-case name used in the journal and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Create => "create",
            Stage::StoryReview => "story-review",
            Stage::Revise => "revise",
            Stage::Dev => "dev",
            Stage::Fix => "fix",
            Stage::Review => "review",
            Stage::Verify => "verify",
            Stage::Retro => "retro",
        }
    }

    /// Parses the kebab-case name.
    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The actor the stage's agent acts as in the transition table.
    pub fn actor(self) -> Actor {
        match self {
            Stage::Create | Stage::Revise | Stage::Retro => Actor::ScrumMaster,
            Stage::StoryReview | Stage::Review => Actor::Reviewer,
            Stage::Dev | Stage::Fix => Actor::Developer,
            Stage::Verify => Actor::Qa,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The bundled agent (by name, as in `baton-agent/agents/<name>.md`) that performs a stage.
pub fn agent_for(stage: Stage) -> &'static str {
    match stage {
        Stage::Create | Stage::Revise | Stage::Retro => "scrum-master",
        Stage::StoryReview | Stage::Review => "reviewer",
        Stage::Dev | Stage::Fix => "developer",
        Stage::Verify => "qa",
    }
}

/// Project options that change the route.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DispatchOptions {
    /// Review each new story document before development (`story-doc-review`).
    pub story_review: bool,
    /// Verify each reviewed story end to end before it is done (`e2e-verify`).
    pub qa: bool,
}

/// An option a [`Row`] can depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    /// [`DispatchOptions::story_review`].
    StoryReview,
    /// [`DispatchOptions::qa`].
    Qa,
}

impl Toggle {
    /// Whether the option is on.
    pub fn is_on(self, opts: DispatchOptions) -> bool {
        match self {
            Toggle::StoryReview => opts.story_review,
            Toggle::Qa => opts.qa,
        }
    }
}

/// One row of the dispatch table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The story status the row applies to.
    pub status: Status,
    /// `Some(f)`: applies only when the story is (`true`) or is not (`false`) being fixed after a
    /// failed review; `None`: either way.
    pub fixing: Option<bool>,
    /// The work to do; the agent is [`agent_for`] it.
    pub stage: Stage,
    /// The mode the agent is told to work in.
    pub mode: &'static str,
    /// The status to set before the agent starts, if it differs from `status`.
    pub working: Option<Status>,
    /// The status to set when the agent succeeds.
    pub on_success: Status,
    /// When the option is on, success leads here instead of `on_success`.
    pub detour: Option<(Toggle, Status)>,
    /// The status to set when the agent's verdict is negative; `None`: a failure escalates.
    pub on_failure: Option<Status>,
}

/// What to run for a story, and where it goes afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Route {
    /// The work to do.
    pub stage: Stage,
    /// The bundled agent that does it.
    pub agent: &'static str,
    /// The mode the agent is told to work in.
    pub mode: &'static str,
    /// The status to set before the agent starts, if any.
    pub working: Option<Status>,
    /// The status to set on success.
    pub on_success: Status,
    /// The status to set on a negative verdict; `None`: escalate.
    pub on_failure: Option<Status>,
}

/// The dispatch table. At most one row matches a `(status, fixing)` pair.
pub const TABLE: &[Row] = &[
    // A new story: the scrum master writes its file; with story review on, the document is
    // reviewed before anyone builds it.
    Row {
        status: Status::Backlog,
        fixing: None,
        stage: Stage::Create,
        mode: "create",
        working: None,
        on_success: Status::ReadyForDev,
        detour: Some((Toggle::StoryReview, Status::StoryDocReview)),
        on_failure: None,
    },
    // The story document under review: accepted, or sent back for revision.
    Row {
        status: Status::StoryDocReview,
        fixing: None,
        stage: Stage::StoryReview,
        mode: "story-review",
        working: None,
        on_success: Status::ReadyForDev,
        detour: None,
        on_failure: Some(Status::StoryDocImproved),
    },
    // The scrum master revises the document after its review; it is reviewed again.
    Row {
        status: Status::StoryDocImproved,
        fixing: None,
        stage: Stage::Revise,
        mode: "revise",
        working: None,
        on_success: Status::StoryDocReview,
        detour: None,
        on_failure: None,
    },
    // Development starts: the story is in progress while the developer works, then in review.
    Row {
        status: Status::ReadyForDev,
        fixing: None,
        stage: Stage::Dev,
        mode: "dev",
        working: Some(Status::InProgress),
        on_success: Status::Review,
        detour: None,
        on_failure: None,
    },
    // In progress and not fixing: an interrupted development run is resumed.
    Row {
        status: Status::InProgress,
        fixing: Some(false),
        stage: Stage::Dev,
        mode: "dev",
        working: None,
        on_success: Status::Review,
        detour: None,
        on_failure: None,
    },
    // In progress after a failed review (or QA): the developer fixes the findings.
    Row {
        status: Status::InProgress,
        fixing: Some(true),
        stage: Stage::Fix,
        mode: "fix",
        working: None,
        on_success: Status::Review,
        detour: None,
        on_failure: None,
    },
    // Code review: a pass finishes the story (or sends it to QA); a fail sends it back.
    Row {
        status: Status::Review,
        fixing: None,
        stage: Stage::Review,
        mode: "review",
        working: None,
        on_success: Status::Done,
        detour: Some((Toggle::Qa, Status::E2eVerify)),
        on_failure: Some(Status::InProgress),
    },
    // End-to-end verification: a pass finishes the story; a fail sends it back to development.
    Row {
        status: Status::E2eVerify,
        fixing: None,
        stage: Stage::Verify,
        mode: "verify",
        working: None,
        on_success: Status::Done,
        detour: None,
        on_failure: Some(Status::InProgress),
    },
];

/// Looks up the route of a story in `status`. `fixing` says whether an `in-progress` story is
/// addressing review findings. `None` when there is nothing to dispatch (`done`,
/// `needs-intervention`, `optional`).
pub fn route(status: Status, fixing: bool, opts: DispatchOptions) -> Option<Route> {
    let row = TABLE
        .iter()
        .find(|r| r.status == status && r.fixing.is_none_or(|f| f == fixing))?;
    let on_success = match row.detour {
        Some((toggle, to)) if toggle.is_on(opts) => to,
        _ => row.on_success,
    };
    Some(Route {
        stage: row.stage,
        agent: agent_for(row.stage),
        mode: row.mode,
        working: row.working,
        on_success,
        on_failure: row.on_failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::classify;
    use crate::status::StatusValue;
    use crate::transition::{Allowed, Current, check};
    use Status::*;

    const PLAIN: DispatchOptions = DispatchOptions {
        story_review: false,
        qa: false,
    };

    const OPTIONS: [DispatchOptions; 4] = [
        PLAIN,
        DispatchOptions {
            story_review: true,
            qa: false,
        },
        DispatchOptions {
            story_review: false,
            qa: true,
        },
        DispatchOptions {
            story_review: true,
            qa: true,
        },
    ];

    fn at(s: Status) -> Current {
        Current {
            canonical: StatusValue::Known(s.projection().unwrap_or(s)),
            extended: s.is_extended().then_some(s),
        }
    }

    fn r(
        stage: Stage,
        agent: &'static str,
        mode: &'static str,
        working: Option<Status>,
        on_success: Status,
        on_failure: Option<Status>,
    ) -> Option<Route> {
        Some(Route {
            stage,
            agent,
            mode,
            working,
            on_success,
            on_failure,
        })
    }

    #[test]
    fn every_status_routes_as_listed() {
        let want = [
            (
                Backlog,
                false,
                r(
                    Stage::Create,
                    "scrum-master",
                    "create",
                    None,
                    ReadyForDev,
                    None,
                ),
            ),
            (
                StoryDocReview,
                false,
                r(
                    Stage::StoryReview,
                    "reviewer",
                    "story-review",
                    None,
                    ReadyForDev,
                    Some(StoryDocImproved),
                ),
            ),
            (
                StoryDocImproved,
                false,
                r(
                    Stage::Revise,
                    "scrum-master",
                    "revise",
                    None,
                    StoryDocReview,
                    None,
                ),
            ),
            (
                ReadyForDev,
                false,
                r(
                    Stage::Dev,
                    "developer",
                    "dev",
                    Some(InProgress),
                    Review,
                    None,
                ),
            ),
            (
                InProgress,
                false,
                r(Stage::Dev, "developer", "dev", None, Review, None),
            ),
            (
                InProgress,
                true,
                r(Stage::Fix, "developer", "fix", None, Review, None),
            ),
            (
                Review,
                false,
                r(
                    Stage::Review,
                    "reviewer",
                    "review",
                    None,
                    Done,
                    Some(InProgress),
                ),
            ),
            (
                E2eVerify,
                false,
                r(Stage::Verify, "qa", "verify", None, Done, Some(InProgress)),
            ),
        ];
        for (status, fixing, route_want) in want {
            assert_eq!(
                route(status, fixing, PLAIN),
                route_want,
                "{status} {fixing}"
            );
        }
        // `fixing` matters only in progress.
        for status in Status::ALL.into_iter().filter(|s| *s != InProgress) {
            assert_eq!(route(status, true, PLAIN), route(status, false, PLAIN));
        }
    }

    #[test]
    fn terminal_statuses_route_nowhere() {
        for status in [Done, NeedsIntervention, Optional] {
            for opts in OPTIONS {
                for fixing in [false, true] {
                    assert_eq!(route(status, fixing, opts), None, "{status}");
                }
            }
        }
        for status in Status::ALL {
            if ![Done, NeedsIntervention, Optional].contains(&status) {
                assert!(route(status, false, PLAIN).is_some(), "{status}");
            }
        }
    }

    #[test]
    fn story_review_option_detours_new_stories() {
        let opts = DispatchOptions {
            story_review: true,
            qa: false,
        };
        let created = route(Backlog, false, opts).unwrap();
        assert_eq!(created.on_success, StoryDocReview);
        // Other rows are unaffected.
        assert_eq!(route(Review, false, opts).unwrap().on_success, Done);
    }

    #[test]
    fn qa_option_detours_reviewed_stories() {
        let opts = DispatchOptions {
            story_review: false,
            qa: true,
        };
        let reviewed = route(Review, false, opts).unwrap();
        assert_eq!(reviewed.on_success, E2eVerify);
        assert_eq!(reviewed.on_failure, Some(InProgress));
        assert_eq!(route(Backlog, false, opts).unwrap().on_success, ReadyForDev);
        assert_eq!(route(E2eVerify, false, opts).unwrap().on_success, Done);
    }

    #[test]
    fn rows_do_not_overlap() {
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                let overlap = a.status == b.status
                    && match (a.fixing, b.fixing) {
                        (Some(x), Some(y)) => x == y,
                        _ => true,
                    };
                assert!(!overlap, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn every_move_is_a_legal_transition() {
        let story = classify("1-1-a");
        for status in Status::ALL {
            for fixing in [false, true] {
                for opts in OPTIONS {
                    let Some(rt) = route(status, fixing, opts) else {
                        continue;
                    };
                    for actor in [Actor::Orchestrator, rt.stage.actor()] {
                        if let Some(w) = rt.working {
                            assert_eq!(
                                check(story, &at(status), w, actor, false),
                                Ok(Allowed::Edge),
                                "{status} → {w} (working) for {actor}"
                            );
                        }
                        let from = rt.working.unwrap_or(status);
                        let ends = std::iter::once(rt.on_success).chain(rt.on_failure);
                        for to in ends {
                            assert_eq!(
                                check(story, &at(from), to, actor, false),
                                Ok(Allowed::Edge),
                                "{from} → {to} for {actor} ({status}, fixing {fixing}, {opts:?})"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn agents_exist_and_stages_round_trip() {
        for stage in Stage::ALL {
            assert_eq!(Stage::parse(stage.as_str()), Some(stage));
            assert_eq!(stage.to_string(), stage.as_str());
            assert_eq!(
                serde_json::to_string(&stage).unwrap(),
                format!("\"{}\"", stage.as_str())
            );
            assert!(
                ["scrum-master", "reviewer", "developer", "qa"].contains(&agent_for(stage)),
                "{stage}"
            );
            assert_eq!(agent_for(stage), stage.actor().as_str());
        }
        for row in TABLE {
            assert_eq!(row.mode, row.stage.as_str(), "{row:?}");
        }
    }
}
