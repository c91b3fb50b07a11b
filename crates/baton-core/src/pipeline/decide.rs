//! What the PM does next with one issue: a pure function of the facts a pass read, the board's
//! state, the limits and the time.
//!
//! | facts | actions |
//! |---|---|
//! | the pull request merged (the issue open or closed) | Done, seat released |
//! | the issue closed, no merged pull request, the owner's comment starting with "done" | Done, seat released |
//! | the issue closed, no merged pull request | Awaiting Owner once, seat released; then it waits (no reminders) |
//! | the pull request closed unmerged | Awaiting Owner (a person closed it) |
//! | Awaiting Owner, the owner replied | back to the phase it left, its agent assigned, round trips reset |
//! | Awaiting Owner for 48 h since it began or the last reminder | remind the owner |
//! | a handback saying the agent is blocked | Awaiting Owner at once |
//! | a handback asking another agent | that agent assigned (the round trip counts at the answer) |
//! | the answer to such a question | the asking agent assigned again, one round trip (question and answer are one) |
//! | 3 round trips without a phase change | Awaiting Owner (at the third answer, CI failure or change request) |
//! | the analyst's handback | Needs Architecture, the architect assigned |
//! | the architect's handback | Ready |
//! | the implementer's handback with a pull request | CI Pending |
//! | the implementer's handback without one | Awaiting Owner |
//! | the reviewer's handback: approved, CI green | Ready to Merge, publish |
//! | the reviewer's handback: changes requested | Changes Requested, the implementer assigned, one round trip |
//! | an assigned agent silent 24 h after its assignment (or the last ping) | ping and re-trigger |
//! | Triage | Needs Story, the analyst assigned |
//! | Ready, a seat free, no escalation waiting | a seat taken, Implementing, the implementer assigned |
//! | CI Pending: green / red | In Review with the reviewer / Changes Requested with the implementer |
//! | Ready to Merge, still a draft, CI green and approved | publish |
//!
//! Publishing (ready for review, auto-merge on) happens only with CI green and the review
//! approved; nothing here merges. Seats are taken by the workflow atomically (the caller says
//! whether one is free for this issue), never counted.

use super::Phase;

/// Seconds.
pub type Secs = i64;

/// The state of a pull request's checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ci {
    /// Running, or not started.
    Pending,
    /// All passed.
    Green,
    /// One failed.
    Red,
}

/// The pull request's review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// None yet.
    None,
    /// Approved.
    Approved,
    /// Changes requested.
    ChangesRequested,
}

/// The issue's pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pr {
    /// Still a draft.
    pub draft: bool,
    /// Its checks.
    pub ci: Ci,
    /// Its review.
    pub review: Review,
    /// Merged.
    pub merged: bool,
    /// Closed without merging.
    pub closed: bool,
}

/// The latest handback not yet acted on (from an author allowed to route work).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handback {
    /// The role that handed back.
    pub from: String,
    /// The role it asks a question of, when it does.
    pub asks: Option<String>,
    /// It says it is blocked.
    pub blocked: bool,
}

/// What a pass knows of an issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// Its phase.
    pub phase: Phase,
    /// The role whose label it carries, and when the label was added.
    pub assigned: Option<(String, Secs)>,
    /// The last time the assigned agent commented.
    pub last_agent_comment: Option<Secs>,
    /// The last ping.
    pub last_ping: Option<Secs>,
    /// A handback to act on.
    pub handback: Option<Handback>,
    /// The role waiting for an answer to its question.
    pub asked_by: Option<String>,
    /// Round trips since the phase last changed.
    pub round_trips: u32,
    /// Its pull request.
    pub pr: Option<Pr>,
    /// Since when it awaits the owner, and the phase it left.
    pub awaiting: Option<(Secs, Phase)>,
    /// The last reminder to the owner.
    pub last_reminder: Option<Secs>,
    /// The owner replied since it began awaiting.
    pub owner_replied: bool,
    /// The issue is closed on GitHub (by a merge that named it, or by hand).
    pub closed: bool,
    /// The owner's newest reply since it began awaiting starts with the word "done".
    pub owner_says_done: bool,
}

impl Issue {
    /// A new issue in `phase`, with nothing else known.
    pub fn new(phase: Phase) -> Issue {
        Issue {
            phase,
            assigned: None,
            last_agent_comment: None,
            last_ping: None,
            handback: None,
            asked_by: None,
            round_trips: 0,
            pr: None,
            awaiting: None,
            last_reminder: None,
            owner_replied: false,
            closed: false,
            owner_says_done: false,
        }
    }
}

/// The roles of the pipeline, by what they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles {
    /// Refines stories (`business-analyst`).
    pub analyst: String,
    /// Designs (`architect`).
    pub architect: String,
    /// Implements (`backend`).
    pub implementer: String,
    /// Reviews (`reviewer`).
    pub reviewer: String,
}

impl Roles {
    /// Every role, analyst first.
    pub fn all(&self) -> Vec<String> {
        vec![
            self.analyst.clone(),
            self.architect.clone(),
            self.implementer.clone(),
            self.reviewer.clone(),
        ]
    }
}

impl Default for Roles {
    fn default() -> Roles {
        Roles {
            analyst: "business-analyst".into(),
            architect: "architect".into(),
            implementer: "backend".into(),
            reviewer: "reviewer".into(),
        }
    }
}

/// The limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Round trips without a phase change before the owner is asked.
    pub round_trips: u32,
    /// Silence after an assignment before a ping.
    pub silence: Secs,
    /// Time awaiting the owner before a reminder.
    pub remind_after: Secs,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            round_trips: 3,
            silence: 24 * 3600,
            remind_after: 48 * 3600,
        }
    }
}

/// The board's state for this issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Board {
    /// A seat can be taken for this issue.
    pub seat_free: bool,
    /// An escalation waits for the owner on some issue.
    pub escalation_waiting: bool,
}

/// One thing the PM does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Move to a phase (the project field or `status/*` label; the status comment's history).
    Move(Phase),
    /// Add the role's `agent/*` label.
    Assign(String),
    /// Take an implementation seat.
    TakeSeat,
    /// Give the seat back.
    ReleaseSeat,
    /// Count a round trip.
    RoundTrip,
    /// Start counting round trips afresh.
    ResetRoundTrips,
    /// Remember who asked, to route the answer back.
    AskedBy(Option<String>),
    /// Comment on the issue to wake the role, and re-run its workflow.
    Ping(String),
    /// Remind the owner.
    RemindOwner,
    /// Hand the issue to the owner, with why.
    Escalate(String),
    /// Mark the pull request ready for review, with auto-merge.
    Publish,
    /// Nothing to do now, and why (for the job summary).
    Wait(String),
}

fn escalate(why: impl Into<String>) -> Vec<Action> {
    vec![
        Action::Escalate(why.into()),
        Action::Move(Phase::AwaitingOwner),
    ]
}

fn publishable(pr: Option<Pr>) -> bool {
    pr.is_some_and(|p| p.ci == Ci::Green && p.review == Review::Approved && !p.merged && !p.closed)
}

/// The role an issue in `phase` is worked by.
fn role_of(phase: Phase, roles: &Roles) -> Option<&str> {
    match phase {
        Phase::NeedsStory => Some(&roles.analyst),
        Phase::NeedsArchitecture => Some(&roles.architect),
        Phase::Implementing | Phase::ChangesRequested => Some(&roles.implementer),
        Phase::InReview => Some(&roles.reviewer),
        _ => None,
    }
}

/// What the PM does next with `issue` at `now`.
pub fn decide(
    issue: &Issue,
    board: Board,
    roles: &Roles,
    limits: Limits,
    now: Secs,
) -> Vec<Action> {
    if issue.phase == Phase::Done {
        return Vec::new();
    }
    if let Some(pr) = issue.pr {
        if pr.merged {
            return vec![Action::Move(Phase::Done), Action::ReleaseSeat];
        }
        if pr.closed && !issue.closed && issue.phase != Phase::AwaitingOwner {
            return escalate("the pull request was closed without merging");
        }
    }
    if issue.closed {
        // Closed on GitHub without a merged pull request: a person closed it.
        if issue.owner_says_done {
            return vec![Action::Move(Phase::Done), Action::ReleaseSeat];
        }
        if issue.phase == Phase::AwaitingOwner {
            return vec![Action::Wait(
                "closed without a merged pull request; the owner's \"done\" makes it Done".into(),
            )];
        }
        let mut out = escalate("the issue was closed without a merged pull request");
        out.push(Action::ReleaseSeat);
        return out;
    }
    if issue.phase == Phase::AwaitingOwner {
        let Some((since, left)) = issue.awaiting else {
            return vec![Action::Wait("awaits the owner".into())];
        };
        if issue.owner_replied {
            let mut out = vec![Action::Move(left), Action::ResetRoundTrips];
            if let Some(role) = role_of(left, roles) {
                out.push(Action::Assign(role.to_owned()));
            }
            return out;
        }
        let last = issue.last_reminder.unwrap_or(since).max(since);
        if now - last >= limits.remind_after {
            return vec![Action::RemindOwner];
        }
        return vec![Action::Wait("awaits the owner".into())];
    }
    if let Some(h) = &issue.handback {
        return handback(issue, h, roles, limits);
    }
    if let Some((role, at)) = &issue.assigned {
        let heard = issue.last_agent_comment.is_some_and(|c| c >= *at);
        let since = issue.last_ping.unwrap_or(*at).max(*at);
        if !heard && now - since >= limits.silence {
            return vec![Action::Ping(role.clone())];
        }
        return vec![Action::Wait(format!("{role} is working"))];
    }
    match issue.phase {
        Phase::Triage => vec![
            Action::Move(Phase::NeedsStory),
            Action::Assign(roles.analyst.clone()),
        ],
        Phase::Ready if board.escalation_waiting => vec![Action::Wait(
            "no new work while an escalation waits for the owner".into(),
        )],
        Phase::Ready if !board.seat_free => {
            vec![Action::Wait("every implementation seat is taken".into())]
        }
        Phase::Ready => vec![
            Action::TakeSeat,
            Action::Move(Phase::Implementing),
            Action::Assign(roles.implementer.clone()),
        ],
        Phase::CiPending => match issue.pr.map(|p| p.ci) {
            Some(Ci::Green) => vec![
                Action::Move(Phase::InReview),
                Action::Assign(roles.reviewer.clone()),
            ],
            Some(Ci::Red) => round_trip(
                issue,
                limits,
                vec![
                    Action::Move(Phase::ChangesRequested),
                    Action::Assign(roles.implementer.clone()),
                ],
            ),
            _ => vec![Action::Wait("CI is running".into())],
        },
        Phase::ReadyToMerge if issue.pr.is_some_and(|p| p.draft) && publishable(issue.pr) => {
            vec![Action::Publish]
        }
        Phase::ReadyToMerge => vec![Action::Wait("auto-merge will merge it".into())],
        phase => match role_of(phase, roles) {
            // A working phase with nobody assigned: its agent again.
            Some(role) => vec![Action::Assign(role.to_owned())],
            None => vec![Action::Wait(format!("{phase}"))],
        },
    }
}

/// `then`, counting a round trip; the owner instead when that makes too many.
fn round_trip(issue: &Issue, limits: Limits, then: Vec<Action>) -> Vec<Action> {
    if issue.round_trips + 1 >= limits.round_trips {
        let mut out = vec![Action::RoundTrip];
        out.extend(escalate(format!(
            "{} round trips without progress",
            limits.round_trips
        )));
        return out;
    }
    let mut out = vec![Action::RoundTrip];
    out.extend(then);
    out
}

fn handback(issue: &Issue, h: &Handback, roles: &Roles, limits: Limits) -> Vec<Action> {
    if h.blocked {
        return escalate(format!("{} says it is blocked", h.from));
    }
    // A question and its answer are one round trip, counted at the answer.
    if let Some(to) = &h.asks {
        return vec![
            Action::AskedBy(Some(h.from.clone())),
            Action::Assign(to.clone()),
        ];
    }
    if let Some(asker) = &issue.asked_by
        && *asker != h.from
    {
        return round_trip(
            issue,
            limits,
            vec![Action::AskedBy(None), Action::Assign(asker.clone())],
        );
    }
    let next = |phase: Phase, role: Option<&String>| {
        let mut out = vec![Action::Move(phase), Action::ResetRoundTrips];
        if let Some(r) = role {
            out.push(Action::Assign(r.clone()));
        }
        out
    };
    match issue.phase {
        Phase::NeedsStory | Phase::Triage => next(Phase::NeedsArchitecture, Some(&roles.architect)),
        Phase::NeedsArchitecture => next(Phase::Ready, None),
        Phase::Implementing | Phase::ChangesRequested => match issue.pr {
            Some(_) => next(Phase::CiPending, None),
            None => escalate(format!("{} handed back without a pull request", h.from)),
        },
        Phase::InReview => match issue.pr.map(|p| p.review) {
            Some(Review::Approved) if publishable(issue.pr) => {
                let mut out = next(Phase::ReadyToMerge, None);
                out.push(Action::Publish);
                out
            }
            Some(Review::Approved) => vec![
                Action::Move(Phase::CiPending),
                Action::Wait("approved; CI must be green before it is published".into()),
            ],
            Some(Review::ChangesRequested) => round_trip(
                issue,
                limits,
                vec![
                    Action::Move(Phase::ChangesRequested),
                    Action::Assign(roles.implementer.clone()),
                ],
            ),
            _ => escalate(format!("{} handed back without a review", h.from)),
        },
        phase => vec![Action::Wait(format!(
            "a handback in {phase} needs no routing"
        ))],
    }
}

#[cfg(test)]
mod tests;
