use super::*;
use SddStage::*;
use StepOutcome::*;

/// Facts built step by step.
#[derive(Clone)]
struct T(TaskFacts);

impl T {
    fn new() -> T {
        T(TaskFacts::default())
    }

    fn rules(mut self, max: u32, security: bool, performance: bool) -> T {
        self.0.rules = SddRules {
            max_iterations: max,
            security,
            performance,
        };
        self
    }

    fn next_id(&self) -> i64 {
        let s = self.0.steps.last().map(|s| s.id).unwrap_or(0);
        let e = self.0.escalations.last().map(|e| e.after_step).unwrap_or(0);
        s.max(e) + 1
    }

    fn step_with(mut self, stage: SddStage, outcome: Option<StepOutcome>, critical: usize) -> T {
        let id = self.next_id();
        self.0.steps.push(SddStep {
            id,
            stage,
            round: 1,
            outcome,
            detail: SddDetail {
                base: None,
                reason: Some(format!("{stage} said so")),
                findings: critical + 1,
                critical,
                findings_text: Some(format!("findings of step {id}")),
                escalation: None,
            },
        });
        self
    }

    fn s(self, stage: SddStage, outcome: StepOutcome) -> T {
        self.step_with(stage, Some(outcome), 0)
    }

    fn esc(mut self, answer: Option<Choice>, resolved: bool) -> T {
        let after = self.0.steps.last().map(|s| s.id).unwrap_or(0);
        let kind = match &self.decide() {
            TaskDecision::Escalate(e) => e.kind,
            other => panic!("expected an escalation to answer, got {other:?}"),
        };
        self.0.escalations.push(SddEscalation {
            id: self.0.escalations.len() as i64 + 1,
            kind,
            title: "t".into(),
            answer,
            resolved,
            after_step: after,
        });
        self
    }

    fn decide(&self) -> TaskDecision {
        decide(&self.0)
    }

    fn runs(&self) -> (SddStage, u32) {
        match self.decide() {
            TaskDecision::Run(r) => (r.stage, r.round),
            other => panic!("expected a run, got {other:?}"),
        }
    }

    fn escalates(&self) -> EscalationKind {
        match self.decide() {
            TaskDecision::Escalate(e) => {
                assert_eq!(e.choices, e.kind.choices());
                e.kind
            }
            other => panic!("expected an escalation, got {other:?}"),
        }
    }
}

#[test]
fn the_happy_path_runs_each_stage_once() {
    let t = T::new();
    assert_eq!(t.runs(), (Implement, 1));
    assert_eq!(view(&t.0).state, TaskState::Pending);
    let t = t.s(Implement, Completed);
    assert_eq!(t.runs(), (SpecReview, 1));
    assert_eq!(view(&t.0).state, TaskState::Reviewing);
    let t = t.s(SpecReview, Passed);
    assert_eq!(t.runs(), (QualityReview, 1));
    let v = view(&t.0);
    assert_eq!(
        (v.spec, v.quality, v.security),
        (Mark::Passed, Mark::Waiting, Mark::Off)
    );
    let t = t.s(QualityReview, Passed);
    assert_eq!(t.decide(), TaskDecision::Complete);
    assert_eq!(view(&t.0).state, TaskState::Complete);
}

#[test]
fn a_failing_review_sends_its_findings_to_a_fix_round_then_reviews_again() {
    let t = T::new()
        .s(Implement, Completed)
        .s(SpecReview, ChangesRequested);
    let TaskDecision::Run(fix) = t.decide() else {
        panic!("{:?}", t.decide());
    };
    assert_eq!((fix.stage, fix.round), (Fix, 1));
    assert_eq!(fix.findings, vec!["findings of step 2".to_owned()]);
    assert_eq!(view(&t.0).state, TaskState::Fixing);
    let t = t.s(Fix, Completed);
    assert_eq!(t.runs(), (SpecReview, 2));
    let t = t.s(SpecReview, Passed).s(QualityReview, ChangesRequested);
    assert_eq!(t.runs(), (Fix, 2), "the second fix round of the task");
    let t = t.s(Fix, Completed);
    assert_eq!(t.runs(), (QualityReview, 2));
    assert_eq!(t.s(QualityReview, Passed).decide(), TaskDecision::Complete);
}

#[test]
fn max_iterations_per_review_then_a_human_is_asked() {
    let mut t = T::new().rules(2, false, false).s(Implement, Completed);
    for _ in 0..2 {
        t = t.s(SpecReview, ChangesRequested);
        assert_eq!(t.runs().0, Fix);
        t = t.s(Fix, Completed);
    }
    let t = t.s(SpecReview, ChangesRequested);
    assert_eq!(t.escalates(), EscalationKind::SddMaxIterations);
    let TaskDecision::Escalate(e) = t.decide() else {
        unreachable!()
    };
    assert!(
        e.title
            .contains("spec review still fails after 2 fix rounds"),
        "{}",
        e.title
    );
    assert_eq!(
        e.choices,
        [
            Choice::FixManually,
            Choice::SkipReview,
            Choice::AdjustPlan,
            Choice::Abort
        ]
    );
    assert_eq!(view(&t.0).state, TaskState::Escalated);
    // Quality has its own rounds.
    let q = T::new()
        .rules(1, false, false)
        .s(Implement, Completed)
        .s(SpecReview, ChangesRequested)
        .s(Fix, Completed)
        .s(SpecReview, Passed)
        .s(QualityReview, ChangesRequested);
    assert_eq!(q.runs().0, Fix);
}

#[test]
fn an_inconclusive_verdict_escalates_at_once() {
    let t = T::new().s(Implement, Completed).s(SpecReview, Inconclusive);
    assert_eq!(t.escalates(), EscalationKind::SddInconclusive);
    let t = T::new()
        .s(Implement, Completed)
        .s(SpecReview, Passed)
        .s(QualityReview, Inconclusive);
    assert_eq!(t.escalates(), EscalationKind::SddInconclusive);
}

#[test]
fn open_and_answered_escalations_wait_then_resolve() {
    let blocked = T::new().s(Implement, Completed).s(SpecReview, Inconclusive);
    assert_eq!(
        blocked.clone().esc(None, false).decide(),
        TaskDecision::Wait(1)
    );
    let answered = blocked.clone().esc(Some(Choice::RerunReview), false);
    assert_eq!(
        answered.decide(),
        TaskDecision::Resolve { id: 1, then: None }
    );
    let adjust = blocked.clone().esc(Some(Choice::AdjustPlan), false);
    assert!(matches!(
        adjust.decide(),
        TaskDecision::Resolve {
            then: Some(SddEnd::AdjustPlan(_)),
            ..
        }
    ));
    let abort = blocked.esc(Some(Choice::Abort), false);
    assert!(matches!(
        abort.decide(),
        TaskDecision::Resolve {
            then: Some(SddEnd::Aborted(_)),
            ..
        }
    ));
}

#[test]
fn every_answer_continues_where_it_says() {
    let max = T::new()
        .rules(1, false, false)
        .s(Implement, Completed)
        .s(SpecReview, ChangesRequested)
        .s(Fix, Completed)
        .s(SpecReview, ChangesRequested);
    assert_eq!(max.escalates(), EscalationKind::SddMaxIterations);
    let cases: &[(Choice, TaskDecision)] = &[
        (
            Choice::FixManually,
            TaskDecision::Run(SddRun {
                stage: SpecReview,
                round: 3,
                findings: Vec::new(),
                note: Some(
                    "A human changed the code by hand after the last review; review the change \
                     as it stands now."
                        .into(),
                ),
            }),
        ),
        (
            Choice::SkipReview,
            TaskDecision::Run(SddRun {
                stage: QualityReview,
                round: 1,
                findings: Vec::new(),
                note: None,
            }),
        ),
        (
            Choice::AdjustPlan,
            TaskDecision::Run(SddRun {
                stage: Implement,
                round: 1,
                findings: Vec::new(),
                note: None,
            }),
        ),
        (
            Choice::Abort,
            TaskDecision::Run(SddRun {
                stage: Implement,
                round: 1,
                findings: Vec::new(),
                note: None,
            }),
        ),
    ];
    for (choice, want) in cases {
        let t = max.clone().esc(Some(choice.clone()), true);
        assert_eq!(&t.decide(), want, "{choice:?}");
    }
    // After a manual fix the rounds start again: one more failure is a fix round.
    let t = max
        .clone()
        .esc(Some(Choice::FixManually), true)
        .s(SpecReview, ChangesRequested);
    assert_eq!(t.runs().0, Fix);
    // A skipped review shows as skipped.
    let t = max.esc(Some(Choice::SkipReview), true);
    assert_eq!(view(&t.0).spec, Mark::Skipped);
}

#[test]
fn an_agent_that_fails_escalates_and_retry_runs_its_step_again() {
    let t = T::new().s(Implement, Failed);
    assert_eq!(t.escalates(), EscalationKind::SddAgent);
    let t = t.esc(Some(Choice::Retry), true);
    assert_eq!(t.runs(), (Implement, 1));
    let fix = T::new()
        .s(Implement, Completed)
        .s(SpecReview, ChangesRequested)
        .s(Fix, TimedOut);
    assert_eq!(fix.escalates(), EscalationKind::SddAgent);
    let TaskDecision::Run(r) = fix.esc(Some(Choice::Retry), true).decide() else {
        panic!()
    };
    assert_eq!(r.stage, Fix);
    assert_eq!(r.findings, vec!["findings of step 2".to_owned()]);
}

#[test]
fn a_step_cut_off_runs_again() {
    let t = T::new()
        .s(Implement, Completed)
        .step_with(SpecReview, None, 0);
    assert_eq!(t.runs(), (SpecReview, 1));
    let t = T::new().s(Implement, Completed).s(SpecReview, Cancelled);
    assert_eq!(t.runs(), (SpecReview, 1));
}

#[test]
fn optional_reviews_run_together_and_only_critical_findings_loop() {
    let base = T::new()
        .rules(3, true, true)
        .s(Implement, Completed)
        .s(SpecReview, Passed)
        .s(QualityReview, Passed);
    let TaskDecision::RunParallel(runs) = base.decide() else {
        panic!("{:?}", base.decide());
    };
    assert_eq!(
        runs.iter().map(|r| r.stage).collect::<Vec<_>>(),
        [SecurityReview, PerformanceReview]
    );
    // One settled, the other cut off: only the missing one runs.
    let half = base.clone().s(SecurityReview, Passed);
    let TaskDecision::RunParallel(runs) = half.decide() else {
        panic!()
    };
    assert_eq!(
        runs.iter().map(|r| r.stage).collect::<Vec<_>>(),
        [PerformanceReview]
    );
    // Non-critical findings are recorded, not looped.
    let recorded = base
        .clone()
        .step_with(SecurityReview, Some(ChangesRequested), 0)
        .s(PerformanceReview, Passed);
    assert_eq!(recorded.decide(), TaskDecision::Complete);
    // A critical finding loops like a required review, and both optional reviews run again.
    let critical = base
        .clone()
        .step_with(SecurityReview, Some(ChangesRequested), 1)
        .s(PerformanceReview, Passed);
    assert_eq!(critical.runs().0, Fix);
    assert_eq!(view(&critical.0).security, Mark::Failed);
    let again = critical.s(Fix, Completed);
    let TaskDecision::RunParallel(runs) = again.decide() else {
        panic!()
    };
    assert_eq!(runs.len(), 2);
    let done = again.s(SecurityReview, Passed).s(PerformanceReview, Passed);
    assert_eq!(done.decide(), TaskDecision::Complete);
}

#[test]
fn cancellation_and_the_budget_stop_an_unfinished_task() {
    let mut t = T::new().s(Implement, Completed);
    t.0.cancelled = true;
    assert_eq!(t.decide(), TaskDecision::End(SddEnd::Cancelled));
    let mut t = T::new().s(Implement, Completed);
    t.0.budget_exhausted = Some("spent".into());
    assert_eq!(
        t.decide(),
        TaskDecision::End(SddEnd::Budget("spent".into()))
    );
    let mut done = T::new()
        .s(Implement, Completed)
        .s(SpecReview, Passed)
        .s(QualityReview, Passed);
    done.0.budget_exhausted = Some("spent".into());
    assert_eq!(done.decide(), TaskDecision::Complete);
}

#[test]
fn stage_ids_round_trip() {
    for st in SddStage::ALL {
        assert_eq!(SddStage::parse(st.as_str()), Some(st));
    }
    assert_eq!(SddStage::parse("review"), None);
}
