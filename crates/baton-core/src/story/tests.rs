//! Table tests of [`decide`]: one per branch, bound, verdict, escalation answer and resume case.

use super::*;
use crate::dispatch::DispatchOptions;
use Stage::{Create, Dev, Fix, Revise, StoryReview, Verify};
use Status::*;

/// A story's facts, built step by step.
struct F(StoryFacts);

impl F {
    fn at(status: Status) -> F {
        F(StoryFacts::new("1-1-login", status))
    }

    fn opts(mut self, story_review: bool, qa: bool) -> F {
        self.0.rules.dispatch = DispatchOptions { story_review, qa };
        self
    }

    fn confirm_done(mut self) -> F {
        self.0.rules.confirm_done = true;
        self
    }

    /// A settled step that started in `started_in`.
    fn step(self, stage: Stage, started_in: Status, outcome: StepOutcome) -> F {
        self.step_with(stage, started_in, Some(outcome), StepDetail::default())
    }

    fn step_with(
        mut self,
        stage: Stage,
        started_in: Status,
        outcome: Option<StepOutcome>,
        mut detail: StepDetail,
    ) -> F {
        let id = self.0.newest_step_id() + 1;
        let round = match stage {
            Fix => self.0.rounds_used() + 1,
            Stage::Review | Verify => self.0.rounds_used() + 1,
            _ => 1,
        };
        detail.started_in = Some(started_in);
        self.0.steps.push(StepFact {
            id,
            stage,
            round,
            outcome,
            this_run: false,
            detail,
        });
        self
    }

    fn review(self, outcome: StepOutcome, fingerprint: &str) -> F {
        let status = self.0.status.known().unwrap_or(Review);
        self.step_with(
            Stage::Review,
            status,
            Some(outcome),
            StepDetail {
                fingerprint: Some(fingerprint.into()),
                blocking: Some(2),
                findings: Some(1),
                reason: Some("why".into()),
                ..StepDetail::default()
            },
        )
    }

    fn this_run(mut self) -> F {
        if let Some(s) = self.0.steps.last_mut() {
            s.this_run = true;
        }
        self
    }

    fn escalation(mut self, kind: EscalationKind, answer: Option<Choice>, resolved: bool) -> F {
        let id = self.0.escalations.len() as i64 + 1;
        let after_step = self.0.newest_step_id();
        self.0.escalations.push(EscalationFact {
            id,
            kind,
            title: "t".into(),
            answer,
            resolved,
            after_step,
        });
        self
    }

    fn entered(mut self, status: Status, n: u32) -> F {
        self.0.entered.insert(status, n);
        self
    }

    fn status(mut self, s: Status) -> F {
        self.0.status = StatusValue::Known(s);
        self
    }

    fn decide(&self) -> Decision {
        decide(&self.0)
    }
}

fn run_of(d: &Decision) -> &StagePlan {
    match d {
        Decision::Run(p) => p,
        other => panic!("expected a run, got {other:?}"),
    }
}

fn move_of(d: &Decision) -> &Move {
    match d {
        Decision::Move(m) => m,
        other => panic!("expected a move, got {other:?}"),
    }
}

fn escalation_of(d: &Decision) -> &Escalate {
    match d {
        Decision::Escalate(e) => e,
        other => panic!("expected an escalation, got {other:?}"),
    }
}

// ---- every dispatch row ----

#[test]
fn backlog_runs_create() {
    let p = run_of(&F::at(Backlog).decide()).clone();
    assert_eq!(
        (p.stage, p.agent, p.mode, p.round),
        (Create, "scrum-master", "create", 1)
    );
}

#[test]
fn created_story_moves_to_ready_or_to_story_review() {
    let d = F::at(Backlog)
        .step(Create, Backlog, StepOutcome::Completed)
        .decide();
    let m = move_of(&d);
    assert_eq!((m.to, m.actor), (ReadyForDev, Actor::ScrumMaster));
    assert_eq!(m.commit.as_deref(), Some("create"));
    let d = F::at(Backlog)
        .opts(true, false)
        .step(Create, Backlog, StepOutcome::Completed)
        .decide();
    assert_eq!(move_of(&d).to, StoryDocReview);
}

#[test]
fn a_human_putting_a_story_back_spends_its_failed_step() {
    // The scrum master failed, the story went to needs-intervention, and a human set it back.
    let mut f = F::at(Backlog).step(Create, Backlog, StepOutcome::Failed);
    assert_eq!(move_of(&f.decide()).to, NeedsIntervention);
    f.0.moved_by_human_since_last_step = true;
    let p = run_of(&f.decide()).clone();
    assert_eq!((p.stage, p.round), (Create, 1));
}

#[test]
fn create_without_a_story_file_needs_intervention() {
    let mut f = F::at(Backlog).step(Create, Backlog, StepOutcome::Completed);
    f.0.story_file_exists = false;
    let m = move_of(&f.decide()).clone();
    assert_eq!(m.to, NeedsIntervention);
    assert!(m.reason.contains("without writing"), "{}", m.reason);
}

#[test]
fn story_doc_review_passes_or_sends_to_revision() {
    let f = F::at(StoryDocReview).opts(true, false);
    assert_eq!(run_of(&f.decide()).stage, StoryReview);
    let pass = F::at(StoryDocReview).opts(true, false).step(
        StoryReview,
        StoryDocReview,
        StepOutcome::Passed,
    );
    assert_eq!(move_of(&pass.decide()).to, ReadyForDev);
    for o in [
        StepOutcome::ChangesRequested,
        StepOutcome::Inconclusive,
        StepOutcome::TooFewFindings,
    ] {
        let fail = F::at(StoryDocReview)
            .opts(true, false)
            .step(StoryReview, StoryDocReview, o);
        assert_eq!(move_of(&fail.decide()).to, StoryDocImproved, "{o}");
    }
}

#[test]
fn revision_runs_then_goes_back_to_review() {
    let f = F::at(StoryDocImproved).opts(true, false);
    assert_eq!(run_of(&f.decide()).stage, Revise);
    let done = f.step(Revise, StoryDocImproved, StepOutcome::Completed);
    assert_eq!(move_of(&done.decide()).to, StoryDocReview);
}

#[test]
fn ready_for_dev_first_moves_to_the_working_status_with_a_baseline() {
    let m = move_of(&F::at(ReadyForDev).decide()).clone();
    assert_eq!(
        (m.to, m.actor, m.baseline),
        (InProgress, Actor::Developer, true)
    );
    assert_eq!(m.commit, None);
}

#[test]
fn in_progress_runs_dev_and_completed_dev_moves_to_review() {
    let p = run_of(&F::at(InProgress).decide()).clone();
    assert_eq!((p.stage, p.agent, p.round), (Dev, "developer", 1));
    let d = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .decide();
    let m = move_of(&d);
    assert_eq!((m.to, m.actor), (Review, Actor::Developer));
    assert_eq!(m.commit.as_deref(), Some("dev"));
}

#[test]
fn failing_tests_send_the_developer_into_a_fix_round_with_the_output() {
    let d = F::at(InProgress)
        .step_with(
            Dev,
            InProgress,
            Some(StepOutcome::TestsFailed),
            StepDetail {
                reason: Some("assertion failed".into()),
                ..StepDetail::default()
            },
        )
        .decide();
    let p = run_of(&d);
    assert_eq!((p.stage, p.round), (Fix, 1));
    assert_eq!(p.failing_tests.as_deref(), Some("assertion failed"));
}

#[test]
fn review_runs_and_its_verdicts_move_the_story() {
    let p = run_of(&F::at(Review).decide()).clone();
    assert_eq!((p.stage, p.agent, p.round), (Stage::Review, "reviewer", 1));
    let pass = F::at(Review).review(StepOutcome::Passed, "a").decide();
    let m = move_of(&pass);
    assert_eq!((m.to, m.actor), (Done, Actor::Reviewer));
    assert_eq!(m.commit.as_deref(), Some("review passed"));
    let fail = F::at(Review)
        .review(StepOutcome::ChangesRequested, "a")
        .decide();
    let m = move_of(&fail);
    assert_eq!((m.to, m.actor), (InProgress, Actor::Reviewer));
    assert_eq!(m.commit.as_deref(), Some("review round 1"));
    assert!(m.reason.contains("2 blocking"), "{}", m.reason);
}

#[test]
fn a_passed_review_goes_to_qa_when_qa_is_on_and_qa_verdicts_move_it() {
    let d = F::at(Review)
        .opts(false, true)
        .review(StepOutcome::Passed, "a")
        .decide();
    assert_eq!(move_of(&d).to, E2eVerify);
    let f = F::at(E2eVerify).opts(false, true);
    assert_eq!(run_of(&f.decide()).stage, Verify);
    let pass = F::at(E2eVerify)
        .opts(false, true)
        .step(Verify, E2eVerify, StepOutcome::Passed)
        .decide();
    let m = move_of(&pass);
    assert_eq!(
        (m.to, m.actor, m.commit.as_deref()),
        (Done, Actor::Qa, Some("verified"))
    );
    let fail = F::at(E2eVerify)
        .opts(false, true)
        .step(Verify, E2eVerify, StepOutcome::VerificationFailed)
        .decide();
    assert_eq!(move_of(&fail).to, InProgress);
}

#[test]
fn after_a_rejection_the_developer_fixes_round_by_round() {
    let f = F::at(Review)
        .step(Dev, InProgress, StepOutcome::Completed)
        .review(StepOutcome::ChangesRequested, "a")
        .status(InProgress);
    let p = run_of(&f.decide()).clone();
    assert_eq!((p.stage, p.round, p.mode), (Fix, 1, "fix"));
    let f = f
        .step(Fix, InProgress, StepOutcome::Completed)
        .status(Review);
    let p = run_of(&f.decide()).clone();
    assert_eq!((p.stage, p.round), (Stage::Review, 2));
}

#[test]
fn a_completed_fix_moves_to_review_named_by_its_round() {
    let d = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .step(Stage::Review, Review, StepOutcome::ChangesRequested)
        .step(Fix, InProgress, StepOutcome::Completed)
        .decide();
    assert_eq!(move_of(&d).commit.as_deref(), Some("fix round 1"));
}

#[test]
fn terminal_and_foreign_statuses_end_the_story() {
    assert_eq!(F::at(Done).decide(), Decision::End(StoryEnd::Done));
    let mut f = F::at(NeedsIntervention);
    f.0.status_reason = Some("HALT: no db".into());
    assert_eq!(
        f.decide(),
        Decision::End(StoryEnd::NeedsIntervention("HALT: no db".into()))
    );
    let mut f = F::at(Backlog);
    f.0.status = StatusValue::Foreign("blocked".into());
    assert!(matches!(f.decide(), Decision::End(StoryEnd::Skipped(_))));
    assert!(matches!(
        F::at(Optional).decide(),
        Decision::End(StoryEnd::Skipped(_))
    ));
}

// ---- verdicts that are not verdicts ----

#[test]
fn an_inconclusive_review_is_retried_once_with_a_note_then_escalated() {
    let once = F::at(Review).review(StepOutcome::Inconclusive, "");
    let p = run_of(&once.decide()).clone();
    assert_eq!(p.stage, Stage::Review);
    assert!(matches!(p.note, Some(Note::Inconclusive { .. })));
    let twice = once.review(StepOutcome::Inconclusive, "");
    let e = escalation_of(&twice.decide()).clone();
    assert_eq!(e.kind, EscalationKind::InconclusiveReview);
    assert_eq!(
        e.choices,
        [Choice::RerunReview, Choice::Accept, Choice::Stop]
    );
}

#[test]
fn too_few_findings_are_retried_once_then_escalated() {
    let once = F::at(Review).review(StepOutcome::TooFewFindings, "");
    let p = run_of(&once.decide()).clone();
    assert_eq!(p.note, Some(Note::TooFewFindings { found: 1, min: 3 }));
    let twice = once.review(StepOutcome::TooFewFindings, "");
    assert_eq!(
        escalation_of(&twice.decide()).kind,
        EscalationKind::TooFewFindings
    );
}

#[test]
fn a_rerun_answer_resets_the_retry_count() {
    let f = F::at(Review)
        .review(StepOutcome::Inconclusive, "")
        .review(StepOutcome::Inconclusive, "")
        .escalation(
            EscalationKind::InconclusiveReview,
            Some(Choice::RerunReview),
            true,
        );
    assert_eq!(run_of(&f.decide()).stage, Stage::Review);
    let f = f.review(StepOutcome::Inconclusive, "");
    assert_eq!(
        run_of(&f.decide()).stage,
        Stage::Review,
        "one since the answer"
    );
}

// ---- bounds ----

#[test]
fn max_fix_rounds_escalate_and_another_round_grants_one() {
    let mut f = F::at(InProgress).step(Dev, InProgress, StepOutcome::Completed);
    for (i, fp) in ["a", "b", "c"].iter().enumerate() {
        f = f
            .status(Review)
            .review(StepOutcome::ChangesRequested, fp)
            .status(InProgress);
        let p = run_of(&f.decide()).clone();
        assert_eq!((p.stage, p.round), (Fix, i as u32 + 1));
        f = f.step(Fix, InProgress, StepOutcome::Completed);
    }
    f = f
        .status(Review)
        .review(StepOutcome::ChangesRequested, "d")
        .status(InProgress);
    let e = escalation_of(&f.decide()).clone();
    assert_eq!(e.kind, EscalationKind::MaxReviewRounds);
    assert!(e.title.contains("all 3 fix rounds"), "{}", e.title);
    let f = f.escalation(
        EscalationKind::MaxReviewRounds,
        Some(Choice::AnotherRound),
        true,
    );
    let p = run_of(&f.decide()).clone();
    assert_eq!((p.stage, p.round), (Fix, 4));
}

#[test]
fn failed_test_runs_of_fixes_use_rounds_and_interrupted_ones_do_not() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::TestsFailed)
        .step(Fix, InProgress, StepOutcome::TestsFailed)
        .step(Fix, InProgress, StepOutcome::TestsInterrupted);
    assert_eq!(f.0.rounds_used(), 1);
    assert_eq!(run_of(&f.decide()).round, 2);
}

#[test]
fn the_same_findings_twice_is_a_stall() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .status(Review)
        .review(StepOutcome::ChangesRequested, "same")
        .status(InProgress)
        .step(Fix, InProgress, StepOutcome::Completed)
        .status(Review)
        .review(StepOutcome::ChangesRequested, "same")
        .status(InProgress);
    let e = escalation_of(&f.decide()).clone();
    assert_eq!(e.kind, EscalationKind::Stall);
    // Answered with another round: the fix runs, and the stall is not raised again for the
    // same pair.
    let f = f.escalation(EscalationKind::Stall, Some(Choice::AnotherRound), true);
    assert_eq!(run_of(&f.decide()).stage, Fix);
    // Different findings are progress.
    let g = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .status(Review)
        .review(StepOutcome::ChangesRequested, "a")
        .status(InProgress)
        .step(Fix, InProgress, StepOutcome::Completed)
        .status(Review)
        .review(StepOutcome::ChangesRequested, "b")
        .status(InProgress);
    assert_eq!(run_of(&g.decide()).stage, Fix);
}

#[test]
fn entering_a_status_too_often_is_a_loop() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .entered(Review, 5);
    let m = move_of(&f.decide()).clone();
    assert_eq!((m.to, m.actor), (NeedsIntervention, Actor::Orchestrator));
    assert!(m.reason.contains("loop detected"), "{}", m.reason);
    let under = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .entered(Review, 4);
    assert_eq!(move_of(&under.decide()).to, Review);
}

#[test]
fn budget_and_cancellation_end_the_story_first() {
    let mut f = F::at(InProgress);
    f.0.budget_exhausted = Some("$5.00 spent of $5.00".into());
    assert_eq!(
        f.decide(),
        Decision::End(StoryEnd::Stopped("budget: $5.00 spent of $5.00".into()))
    );
    let mut f = F::at(InProgress);
    f.0.cancelled = true;
    assert_eq!(f.decide(), Decision::End(StoryEnd::Cancelled));
}

// ---- agent ends ----

#[test]
fn halt_failure_and_timeout_need_intervention() {
    for (o, want) in [
        (StepOutcome::Halted, "HALT: no database"),
        (StepOutcome::Failed, "developer failed: no database"),
        (StepOutcome::TimedOut, "developer timed_out: no database"),
    ] {
        let d = F::at(InProgress)
            .step_with(
                Dev,
                InProgress,
                Some(o),
                StepDetail {
                    agent: Some("developer".into()),
                    reason: Some("no database".into()),
                    ..StepDetail::default()
                },
            )
            .decide();
        let m = move_of(&d);
        assert_eq!((m.to, m.reason.as_str()), (NeedsIntervention, want));
    }
}

#[test]
fn an_agent_escalation_is_raised_once_and_its_answer_reaches_the_next_run() {
    let f = F::at(InProgress).step_with(
        Dev,
        InProgress,
        Some(StepOutcome::Escalated),
        StepDetail {
            agent: Some("developer".into()),
            escalation: Some(AgentEscalation {
                title: "which db?".into(),
                finding: "two candidates".into(),
                options: vec!["postgres".into(), "sqlite".into()],
            }),
            ..StepDetail::default()
        },
    );
    let e = escalation_of(&f.decide()).clone();
    assert_eq!(e.kind, EscalationKind::Agent);
    assert_eq!(e.title, "developer: which db?");
    assert_eq!(
        e.choices,
        [
            Choice::Custom("postgres".into()),
            Choice::Custom("sqlite".into())
        ]
    );
    let open = f.escalation(EscalationKind::Agent, None, false);
    assert_eq!(open.decide(), Decision::Wait(1));
    let answered = open.escalation(EscalationKind::Agent, None, false);
    let mut answered = answered;
    answered.0.escalations.remove(1);
    answered.0.escalations[0].answer = Some(Choice::Custom("sqlite".into()));
    assert_eq!(answered.decide(), Decision::Resolve { id: 1, then: None });
    answered.0.escalations[0].resolved = true;
    let p = run_of(&answered.decide()).clone();
    assert_eq!(p.stage, Dev);
    assert_eq!(
        p.note.map(|n| n.text()),
        Some("A human answered your escalation #1 (\"t\"): sqlite".to_owned())
    );
}

#[test]
fn a_cancelled_step_of_this_run_ends_it_and_one_of_an_earlier_run_is_repeated() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Cancelled)
        .this_run();
    assert_eq!(f.decide(), Decision::End(StoryEnd::Cancelled));
    let budget = F::at(InProgress)
        .step_with(
            Dev,
            InProgress,
            Some(StepOutcome::Cancelled),
            StepDetail {
                reason: Some("budget: hard limit".into()),
                budget_stop: true,
                ..StepDetail::default()
            },
        )
        .this_run();
    // A reason that merely reads like a budget stop is a cancellation: the type decides.
    let worded = F::at(InProgress)
        .step_with(
            Dev,
            InProgress,
            Some(StepOutcome::Cancelled),
            StepDetail {
                reason: Some("budget: hard limit, in words only".into()),
                ..StepDetail::default()
            },
        )
        .this_run();
    assert_eq!(worded.decide(), Decision::End(StoryEnd::Cancelled));
    assert_eq!(
        budget.decide(),
        Decision::End(StoryEnd::Stopped("budget: hard limit".into()))
    );
    let earlier = F::at(InProgress).step(Dev, InProgress, StepOutcome::Cancelled);
    assert_eq!(run_of(&earlier.decide()).stage, Dev);
}

// ---- standard-mode checkpoint ----

#[test]
fn standard_mode_asks_before_done() {
    let f = F::at(Review)
        .confirm_done()
        .review(StepOutcome::Passed, "a");
    let e = escalation_of(&f.decide()).clone();
    assert_eq!(e.kind, EscalationKind::Checkpoint);
    assert_eq!(e.choices, [Choice::Confirm, Choice::SendBack]);
    // With QA on, the review's success is not `done`: no checkpoint yet.
    let qa = F::at(Review)
        .opts(false, true)
        .confirm_done()
        .review(StepOutcome::Passed, "a");
    assert_eq!(move_of(&qa.decide()).to, E2eVerify);
}

#[test]
fn a_sent_back_story_is_fixed_with_a_note() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .step(Stage::Review, Review, StepOutcome::Passed)
        .escalation(EscalationKind::Checkpoint, Some(Choice::SendBack), true);
    let p = run_of(&f.decide()).clone();
    assert_eq!(p.note, Some(Note::SentBack));
}

// ---- every escalation kind × every choice ----

#[test]
fn every_answer_of_every_kind_resolves_to_its_move() {
    for kind in EscalationKind::ALL {
        let choices: Vec<Choice> = if kind == EscalationKind::Agent {
            vec![Choice::Custom("go on".into())]
        } else {
            kind.choices().to_vec()
        };
        for choice in choices {
            let f = F::at(Review).escalation(kind, Some(choice.clone()), false);
            let Decision::Resolve { id, then } = f.decide() else {
                panic!("{kind} {choice:?}: expected a resolve");
            };
            assert_eq!(id, 1);
            let want = match (&choice, kind) {
                (Choice::Accept, _) => Some((Done, true)),
                (Choice::Stop, _) => Some((NeedsIntervention, false)),
                (Choice::Confirm, _) => Some((Done, false)),
                (Choice::SendBack, _) => Some((InProgress, false)),
                (Choice::HandOver, _) => Some((NeedsIntervention, false)),
                (Choice::SetAside, _) => Some((Backlog, true)),
                _ => None,
            };
            assert_eq!(
                then.as_ref().map(|m| (m.to, m.force)),
                want,
                "{kind} {choice:?}"
            );
            if let Some(m) = then {
                assert_eq!(m.actor, Actor::Human);
            }
        }
    }
}

#[test]
fn an_answer_already_carried_out_only_resolves() {
    let f = F::at(Done).escalation(EscalationKind::Stall, Some(Choice::Accept), false);
    assert_eq!(f.decide(), Decision::Resolve { id: 1, then: None });
}

#[test]
fn an_open_escalation_waits() {
    let f = F::at(InProgress).escalation(EscalationKind::MaxReviewRounds, None, false);
    assert_eq!(f.decide(), Decision::Wait(1));
}

// ---- resume cases, as histories ----

#[test]
fn resume_after_a_kill_mid_step_repeats_the_step_same_round() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .step(Stage::Review, Review, StepOutcome::ChangesRequested)
        .step_with(Fix, InProgress, None, StepDetail::default());
    let p = run_of(&f.decide()).clone();
    assert_eq!((p.stage, p.round), (Fix, 1));
}

#[test]
fn resume_after_a_kill_during_the_tests_repeats_the_step() {
    let f = F::at(InProgress).step(Dev, InProgress, StepOutcome::AgentDone);
    let p = run_of(&f.decide()).clone();
    assert_eq!((p.stage, p.round), (Dev, 1));
}

#[test]
fn resume_after_passing_tests_but_before_the_transition_only_moves() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .step(Stage::Review, Review, StepOutcome::ChangesRequested)
        .step(Fix, InProgress, StepOutcome::Completed);
    let m = move_of(&f.decide()).clone();
    assert_eq!((m.to, m.commit.as_deref()), (Review, Some("fix round 1")));
}

#[test]
fn resume_after_a_written_story_file_but_before_its_transition_moves_it() {
    let f = F::at(Backlog).step(Create, Backlog, StepOutcome::Completed);
    let m = move_of(&f.decide()).clone();
    assert_eq!((m.to, m.commit.as_deref()), (ReadyForDev, Some("create")));
}

#[test]
fn an_interrupted_test_run_of_an_earlier_run_is_no_verdict() {
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .step(Stage::Review, Review, StepOutcome::ChangesRequested)
        .step(Fix, InProgress, StepOutcome::TestsInterrupted)
        .step(Fix, InProgress, StepOutcome::TestsInterrupted);
    let p = run_of(&f.decide()).clone();
    assert_eq!((p.stage, p.round), (Fix, 1), "no round was used");
    let now = f
        .step(Fix, InProgress, StepOutcome::TestsInterrupted)
        .this_run();
    assert_eq!(now.decide(), Decision::End(StoryEnd::Cancelled));
}

#[test]
fn a_step_whose_story_moved_since_is_not_acted_on_again() {
    // The review's rejection was carried out (the story is in progress): it is the fix's turn.
    let f = F::at(InProgress)
        .step(Dev, InProgress, StepOutcome::Completed)
        .step(Stage::Review, Review, StepOutcome::ChangesRequested);
    assert_eq!(run_of(&f.decide()).stage, Fix);
}

#[test]
fn steps_journaled_without_a_start_status_are_judged_by_stage() {
    let mut f = F::at(InProgress).step(Dev, InProgress, StepOutcome::Completed);
    f.0.steps[0].detail.started_in = None;
    assert_eq!(move_of(&f.decide()).to, Review);
    let mut g = F::at(Review).step(Dev, InProgress, StepOutcome::Completed);
    g.0.steps[0].detail.started_in = None;
    assert_eq!(run_of(&g.decide()).stage, Stage::Review);
}

#[test]
fn outcomes_round_trip_their_ids() {
    for o in StepOutcome::ALL {
        assert_eq!(StepOutcome::parse(o.as_str()), Some(o));
    }
}
