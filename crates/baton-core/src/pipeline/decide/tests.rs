use super::*;
use crate::pipeline::Phase;
use proptest::prelude::*;

const H: Secs = 3600;

fn roles() -> Roles {
    Roles::default()
}

fn free() -> Board {
    Board {
        seat_free: true,
        escalation_waiting: false,
    }
}

fn run(issue: &Issue, board: Board, now: Secs) -> Vec<Action> {
    decide(issue, board, &roles(), Limits::default(), now)
}

fn pr(ci: Ci, review: Review) -> Option<Pr> {
    Some(Pr {
        draft: true,
        ci,
        review,
        merged: false,
        closed: false,
    })
}

fn with(phase: Phase, f: impl FnOnce(&mut Issue)) -> Issue {
    let mut i = Issue::new(phase);
    f(&mut i);
    i
}

fn back(from: &str) -> Option<Handback> {
    Some(Handback {
        from: from.into(),
        asks: None,
        blocked: false,
    })
}

use Action::*;

#[test]
fn every_routing_row() {
    let a = |s: &str| Assign(s.to_owned());
    let table: Vec<(&str, Issue, Board, Vec<Action>)> = vec![
        (
            "triage",
            Issue::new(Phase::Triage),
            free(),
            vec![Move(Phase::NeedsStory), a("business-analyst")],
        ),
        (
            "analyst done",
            with(Phase::NeedsStory, |i| i.handback = back("business-analyst")),
            free(),
            vec![
                Move(Phase::NeedsArchitecture),
                ResetRoundTrips,
                a("architect"),
            ],
        ),
        (
            "architect done",
            with(Phase::NeedsArchitecture, |i| i.handback = back("architect")),
            free(),
            vec![Move(Phase::Ready), ResetRoundTrips],
        ),
        (
            "ready, a seat",
            Issue::new(Phase::Ready),
            free(),
            vec![TakeSeat, Move(Phase::Implementing), a("backend")],
        ),
        (
            "implementer done with a PR",
            with(Phase::Implementing, |i| {
                i.handback = back("backend");
                i.pr = pr(Ci::Pending, Review::None);
            }),
            free(),
            vec![Move(Phase::CiPending), ResetRoundTrips],
        ),
        (
            "ci green",
            with(Phase::CiPending, |i| i.pr = pr(Ci::Green, Review::None)),
            free(),
            vec![Move(Phase::InReview), a("reviewer")],
        ),
        (
            "ci red",
            with(Phase::CiPending, |i| i.pr = pr(Ci::Red, Review::None)),
            free(),
            vec![RoundTrip, Move(Phase::ChangesRequested), a("backend")],
        ),
        (
            "ci running",
            with(Phase::CiPending, |i| i.pr = pr(Ci::Pending, Review::None)),
            free(),
            vec![Wait("CI is running".into())],
        ),
        (
            "review: changes",
            with(Phase::InReview, |i| {
                i.handback = back("reviewer");
                i.pr = pr(Ci::Green, Review::ChangesRequested);
            }),
            free(),
            vec![RoundTrip, Move(Phase::ChangesRequested), a("backend")],
        ),
        (
            "fixed",
            with(Phase::ChangesRequested, |i| {
                i.handback = back("backend");
                i.pr = pr(Ci::Pending, Review::ChangesRequested);
            }),
            free(),
            vec![Move(Phase::CiPending), ResetRoundTrips],
        ),
        (
            "review: approved, green",
            with(Phase::InReview, |i| {
                i.handback = back("reviewer");
                i.pr = pr(Ci::Green, Review::Approved);
            }),
            free(),
            vec![Move(Phase::ReadyToMerge), ResetRoundTrips, Publish],
        ),
        (
            "approved, CI not green",
            with(Phase::InReview, |i| {
                i.handback = back("reviewer");
                i.pr = pr(Ci::Pending, Review::Approved);
            }),
            free(),
            vec![
                Move(Phase::CiPending),
                Wait("approved; CI must be green before it is published".into()),
            ],
        ),
        (
            "ready to merge, still a draft",
            with(Phase::ReadyToMerge, |i| {
                i.pr = pr(Ci::Green, Review::Approved)
            }),
            free(),
            vec![Publish],
        ),
        (
            "merged",
            with(Phase::ReadyToMerge, |i| {
                i.pr = Some(Pr {
                    draft: false,
                    ci: Ci::Green,
                    review: Review::Approved,
                    merged: true,
                    closed: false,
                })
            }),
            free(),
            vec![Move(Phase::Done), ReleaseSeat],
        ),
        ("done", Issue::new(Phase::Done), free(), vec![]),
        (
            "a working phase with nobody on it",
            Issue::new(Phase::NeedsArchitecture),
            free(),
            vec![a("architect")],
        ),
    ];
    for (what, issue, board, want) in table {
        assert_eq!(run(&issue, board, 0), want, "{what}");
    }
}

#[test]
fn every_escalation_rule() {
    // Blocked: at once, whatever the round trips.
    let blocked = with(Phase::Implementing, |i| {
        i.handback = Some(Handback {
            from: "backend".into(),
            asks: None,
            blocked: true,
        });
    });
    assert_eq!(
        run(&blocked, free(), 0),
        vec![
            Escalate("backend says it is blocked".into()),
            Move(Phase::AwaitingOwner)
        ]
    );
    // Handing back without the pull request the phase needs.
    let no_pr = with(Phase::Implementing, |i| i.handback = back("backend"));
    assert_eq!(run(&no_pr, free(), 0)[1], Move(Phase::AwaitingOwner));
    // A pull request a person closed.
    let closed = with(Phase::InReview, |i| {
        i.pr = Some(Pr {
            draft: false,
            ci: Ci::Green,
            review: Review::None,
            merged: false,
            closed: true,
        });
    });
    assert_eq!(
        run(&closed, free(), 0)[0],
        Escalate("the pull request was closed without merging".into())
    );
    // Silence: a ping 24 h after the assignment, then 24 h after the last ping.
    let silent = with(Phase::Implementing, |i| {
        i.assigned = Some(("backend".into(), 0))
    });
    assert_eq!(
        run(&silent, free(), 24 * H - 1),
        vec![Wait("backend is working".into())]
    );
    assert_eq!(run(&silent, free(), 24 * H), vec![Ping("backend".into())]);
    let pinged = with(Phase::Implementing, |i| {
        i.assigned = Some(("backend".into(), 0));
        i.last_ping = Some(24 * H);
    });
    assert_eq!(
        run(&pinged, free(), 47 * H),
        vec![Wait("backend is working".into())]
    );
    assert_eq!(run(&pinged, free(), 48 * H), vec![Ping("backend".into())]);
    // An agent that commented is not pinged.
    let heard = with(Phase::Implementing, |i| {
        i.assigned = Some(("backend".into(), 0));
        i.last_agent_comment = Some(H);
    });
    assert_eq!(
        run(&heard, free(), 100 * H),
        vec![Wait("backend is working".into())]
    );
    // Awaiting the owner: a reminder at 48 h, again 48 h after the last.
    let waiting = with(Phase::AwaitingOwner, |i| {
        i.awaiting = Some((0, Phase::Implementing))
    });
    assert_eq!(
        run(&waiting, free(), 48 * H - 1),
        vec![Wait("awaits the owner".into())]
    );
    assert_eq!(run(&waiting, free(), 48 * H), vec![RemindOwner]);
    let reminded = with(Phase::AwaitingOwner, |i| {
        i.awaiting = Some((0, Phase::Implementing));
        i.last_reminder = Some(48 * H);
    });
    assert_eq!(
        run(&reminded, free(), 95 * H),
        vec![Wait("awaits the owner".into())]
    );
    assert_eq!(run(&reminded, free(), 96 * H), vec![RemindOwner]);
    // The owner's reply resumes the phase it left, with its agent, round trips afresh.
    let replied = with(Phase::AwaitingOwner, |i| {
        i.awaiting = Some((0, Phase::Implementing));
        i.owner_replied = true;
    });
    assert_eq!(
        run(&replied, free(), H),
        vec![
            Move(Phase::Implementing),
            ResetRoundTrips,
            Assign("backend".into())
        ]
    );
}

#[test]
fn three_round_trips_without_progress_go_to_the_owner() {
    // A question and its answer are one round trip (seed 002): backend asks the architect, the
    // architect answers, three times; the third answer escalates.
    let ask = Some(Handback {
        from: "backend".into(),
        asks: Some("architect".into()),
        blocked: false,
    });
    let mut issue = with(Phase::Implementing, |i| i.handback = ask.clone());
    for trips in 0..3 {
        issue.round_trips = trips;
        issue.asked_by = None;
        issue.handback = ask.clone();
        assert_eq!(
            run(&issue, free(), 0),
            vec![AskedBy(Some("backend".into())), Assign("architect".into())],
            "question {} counts nothing yet",
            trips + 1
        );
        issue.asked_by = Some("backend".into());
        issue.handback = back("architect");
        let answer = run(&issue, free(), 0);
        if trips < 2 {
            assert_eq!(
                answer,
                vec![RoundTrip, AskedBy(None), Assign("backend".into())],
                "answer {}",
                trips + 1
            );
        } else {
            assert_eq!(
                answer,
                vec![
                    RoundTrip,
                    Escalate("3 round trips without progress".into()),
                    Move(Phase::AwaitingOwner)
                ],
                "the third answer escalates"
            );
        }
    }
    // A CI failure counts one.
    let third_red = with(Phase::CiPending, |i| {
        i.round_trips = 2;
        i.pr = pr(Ci::Red, Review::None);
    });
    assert_eq!(
        run(&third_red, free(), 0)[1],
        Escalate("3 round trips without progress".into())
    );
    // A review cycle counts too.
    let third_review = with(Phase::InReview, |i| {
        i.round_trips = 2;
        i.handback = back("reviewer");
        i.pr = pr(Ci::Green, Review::ChangesRequested);
    });
    assert_eq!(
        run(&third_review, free(), 0)[1],
        Escalate("3 round trips without progress".into())
    );
}

#[test]
fn closed_issues_are_followed_to_done_or_the_owner() {
    let merged = Some(Pr {
        draft: false,
        ci: Ci::Green,
        review: Review::Approved,
        merged: true,
        closed: false,
    });
    // GitHub closed it on the merge, or a person did after it: Done either way.
    for phase in [Phase::ReadyToMerge, Phase::InReview, Phase::AwaitingOwner] {
        let i = with(phase, |i| {
            i.closed = true;
            i.pr = merged;
        });
        assert_eq!(
            run(&i, free(), 0),
            vec![Move(Phase::Done), ReleaseSeat],
            "{phase}"
        );
    }
    // Closed by hand without a merge: the owner is asked once, the seat given back.
    let by_hand = with(Phase::Implementing, |i| {
        i.closed = true;
        i.pr = pr(Ci::Green, Review::None);
    });
    assert_eq!(
        run(&by_hand, free(), 0),
        vec![
            Escalate("the issue was closed without a merged pull request".into()),
            Move(Phase::AwaitingOwner),
            ReleaseSeat
        ]
    );
    let asked = with(Phase::AwaitingOwner, |i| {
        i.closed = true;
        i.awaiting = Some((0, Phase::Implementing));
        i.owner_replied = true;
    });
    assert!(
        matches!(run(&asked, free(), 100 * H)[..], [Wait(_)]),
        "no reminder and no way back while closed, unless the owner says done"
    );
    let done = with(Phase::AwaitingOwner, |i| {
        i.closed = true;
        i.awaiting = Some((0, Phase::Implementing));
        i.owner_replied = true;
        i.owner_says_done = true;
    });
    assert_eq!(run(&done, free(), 0), vec![Move(Phase::Done), ReleaseSeat]);
}

#[test]
fn guardrails_on_new_work() {
    let ready = Issue::new(Phase::Ready);
    assert_eq!(
        run(
            &ready,
            Board {
                seat_free: false,
                escalation_waiting: false
            },
            0
        ),
        vec![Wait("every implementation seat is taken".into())]
    );
    assert_eq!(
        run(
            &ready,
            Board {
                seat_free: true,
                escalation_waiting: true
            },
            0
        ),
        vec![Wait(
            "no new work while an escalation waits for the owner".into()
        )]
    );
    // Work already under way goes on while an escalation waits.
    let green = with(Phase::CiPending, |i| i.pr = pr(Ci::Green, Review::None));
    assert_eq!(
        run(
            &green,
            Board {
                seat_free: false,
                escalation_waiting: true
            },
            0
        )[0],
        Move(Phase::InReview)
    );
}

fn any_issue() -> impl Strategy<Value = Issue> {
    let phase = proptest::sample::select(Phase::ALL.to_vec());
    let ci = proptest::sample::select(vec![Ci::Pending, Ci::Green, Ci::Red]);
    let review = proptest::sample::select(vec![
        Review::None,
        Review::Approved,
        Review::ChangesRequested,
    ]);
    let pr = proptest::option::of(
        (any::<bool>(), ci, review, any::<bool>(), any::<bool>()).prop_map(
            |(draft, ci, review, merged, closed)| Pr {
                draft,
                ci,
                review,
                merged,
                closed,
            },
        ),
    );
    let handback = proptest::option::of((any::<bool>(), any::<bool>()).prop_map(
        |(asks, blocked)| Handback {
            from: "backend".into(),
            asks: asks.then(|| "architect".into()),
            blocked,
        },
    ));
    (phase, pr, handback, 0u32..5, any::<bool>(), 0i64..200).prop_map(
        |(phase, pr, handback, round_trips, assigned, t)| Issue {
            phase,
            assigned: assigned.then(|| ("backend".into(), t * H)),
            last_agent_comment: None,
            last_ping: None,
            handback,
            asked_by: None,
            round_trips,
            pr,
            awaiting: (phase == Phase::AwaitingOwner).then_some((0, Phase::Implementing)),
            last_reminder: None,
            owner_replied: false,
            closed: false,
            owner_says_done: false,
        },
    )
}

proptest! {
    /// Publishing only ever follows CI green and an approved review; a seat is only taken from
    /// Ready with one free and no escalation waiting; a round trip that reaches the limit goes
    /// to the owner.
    #[test]
    fn guardrails_hold_for_any_facts(issue in any_issue(), seat_free: bool, escalation_waiting: bool, now in 0i64..(400 * H)) {
        let board = Board { seat_free, escalation_waiting };
        let actions = decide(&issue, board, &roles(), Limits::default(), now);
        if actions.contains(&Publish) {
            let p = issue.pr.expect("a PR to publish");
            prop_assert!(p.ci == Ci::Green && p.review == Review::Approved && !p.merged && !p.closed);
        }
        if actions.contains(&TakeSeat) {
            prop_assert!(issue.phase == Phase::Ready && seat_free && !escalation_waiting);
        }
        if actions.contains(&RoundTrip) && issue.round_trips + 1 >= Limits::default().round_trips {
            prop_assert!(actions.iter().any(|a| matches!(a, Escalate(_))), "{actions:?}");
        }
    }
}
