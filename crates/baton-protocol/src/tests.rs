//! The protocol is serde both ways: every event body, scope and op survives a JSON round trip
//! (what a web page or another process reads is what the run sent), and the JSON keeps the
//! shape front ends already read (`event` beside the body's fields).

use crate::*;
use baton_core::dispatch::Stage;
use baton_core::sdd::{Mark, SddStage, TaskState, TaskView};
use baton_core::status::{Status, StatusValue};
use baton_core::story::StepOutcome;
use proptest::prelude::*;
use proptest::sample::select;

fn text() -> impl Strategy<Value = String> {
    "[a-z0-9 #:/._-]{0,12}"
}

fn status() -> impl Strategy<Value = Status> {
    select(Status::ALL.to_vec())
}

fn status_value() -> impl Strategy<Value = StatusValue> {
    prop_oneof![
        status().prop_map(StatusValue::Known),
        Just(StatusValue::Foreign("awaiting-operator".into())),
        "x-[a-z]{1,8}".prop_map(StatusValue::Unknown),
    ]
}

/// Dollars as JSON carries them: finite, and exact in a short decimal.
fn usd() -> impl Strategy<Value = f64> {
    (0u32..1_000_000).prop_map(|c| f64::from(c) / 100.0)
}

fn unit() -> impl Strategy<Value = UnitKey> {
    prop_oneof![
        text().prop_map(UnitKey::Story),
        (text(), text()).prop_map(|(plan, id)| UnitKey::PlanTask { plan, id }),
        text().prop_map(UnitKey::PlanStep),
        text().prop_map(UnitKey::Retrospective),
        any::<usize>().prop_map(UnitKey::TeamTask),
        text().prop_map(UnitKey::Bmad),
        any::<u64>().prop_map(UnitKey::Issue),
    ]
}

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![
        Just(Scope::Run),
        unit().prop_map(Scope::Unit),
        (proptest::option::of(unit()), text())
            .prop_map(|(unit, agent)| Scope::Agent { unit, agent }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<i64>(), text()).prop_map(|(id, choice)| Op::Answer { id, choice }),
        any::<i64>().prop_map(|id| Op::Defer { id }),
        Just(Op::Cancel),
    ]
}

fn view() -> impl Strategy<Value = EscalationView> {
    (
        any::<i64>(),
        proptest::option::of(text()),
        text(),
        proptest::collection::vec((text(), text()), 0..3),
        any::<bool>(),
        proptest::option::of(text()),
    )
        .prop_map(
            |(id, key, title, choices, awaiting, answer)| EscalationView {
                id,
                key,
                kind: "max-rounds".into(),
                title: title.clone(),
                finding: title,
                options: choices.iter().map(|(_, l)| l.clone()).collect(),
                choices: choices
                    .into_iter()
                    .map(|(id, label)| ChoiceView { id, label })
                    .collect(),
                answer,
                awaiting,
                created_at: "2026-11-26T00:00:00Z".into(),
                answered_at: None,
                resolved_at: None,
                run_id: Some("sprint-1".into()),
            },
        )
}

fn task_view() -> impl Strategy<Value = TaskView> {
    let mark = || {
        select(vec![
            Mark::Waiting,
            Mark::Passed,
            Mark::Failed,
            Mark::Skipped,
            Mark::Off,
        ])
    };
    let state = select(vec![
        TaskState::Pending,
        TaskState::Implementing,
        TaskState::Reviewing,
        TaskState::Fixing,
        TaskState::Escalated,
        TaskState::Complete,
    ]);
    (state, mark(), mark(), mark(), mark(), any::<u32>()).prop_map(
        |(state, spec, quality, security, performance, fixes)| TaskView {
            state,
            spec,
            quality,
            security,
            performance,
            fixes,
        },
    )
}

/// Every variant of [`EventBody`].
fn body() -> impl Strategy<Value = EventBody> {
    let story = prop_oneof![
        (
            text(),
            proptest::collection::vec(text(), 0..3),
            any::<bool>()
        )
            .prop_map(|(run_id, stories, yolo)| EventBody::RunStarted {
                run_id,
                stories,
                yolo
            }),
        text().prop_map(|message| EventBody::Notice { message }),
        (text(), select(Stage::ALL.to_vec()), any::<u32>(), text()).prop_map(
            |(key, stage, round, agent)| EventBody::Stage {
                key,
                stage,
                round,
                agent
            }
        ),
        (text(), status_value(), status()).prop_map(|(key, from, to)| EventBody::Transition {
            key,
            from,
            to
        }),
        (text(), any::<bool>(), any::<bool>()).prop_map(|(key, passed, interrupted)| {
            EventBody::Tests {
                key,
                passed,
                interrupted,
            }
        }),
        (text(), text()).prop_map(|(key, message)| EventBody::Commit { key, message }),
        (text(), text(), text()).prop_map(|(key, message, error)| EventBody::CommitFailed {
            key,
            message,
            error
        }),
        view().prop_map(|escalation| EventBody::Escalation { escalation }),
        (text(), status_value(), proptest::option::of(text())).prop_map(|(key, status, reason)| {
            EventBody::StoryFinished {
                key,
                status,
                reason,
            }
        }),
    ];
    let agent = prop_oneof![
        (text(), text()).prop_map(|(agent, model)| EventBody::AgentStarted { agent, model }),
        (text(), any::<u32>()).prop_map(|(agent, turn)| EventBody::Turn { agent, turn }),
        (text(), text()).prop_map(|(agent, tool)| EventBody::ToolCall { agent, tool }),
        (text(), text(), text()).prop_map(|(agent, tool, reason)| EventBody::Refused {
            agent,
            tool,
            reason
        }),
        (
            text(),
            any::<u64>(),
            (any::<u64>(), any::<u64>()),
            any::<u64>(),
            usd(),
            any::<bool>()
        )
            .prop_map(
                |(
                    agent,
                    input_tokens,
                    (cache_read_tokens, cache_write_tokens),
                    output_tokens,
                    cost_usd,
                    estimated,
                )| EventBody::Usage {
                    agent,
                    input_tokens,
                    cache_read_tokens,
                    cache_write_tokens,
                    output_tokens,
                    cost_usd,
                    estimated
                }
            ),
        (text(), any::<u32>(), any::<u64>(), any::<u64>()).prop_map(
            |(agent, turn, output_tokens, elapsed_secs)| EventBody::Streaming {
                agent,
                turn,
                output_tokens,
                elapsed_secs
            }
        ),
        (text(), text())
            .prop_map(|(agent, provider)| EventBody::UsageEstimated { agent, provider }),
        (text(), text()).prop_map(|(agent, message)| EventBody::BudgetWarning { agent, message }),
        (text(), text()).prop_map(|(agent, status)| EventBody::AgentFinished { agent, status }),
    ];
    let other =
        prop_oneof![
            (text(), text(), any::<usize>()).prop_map(|(run_id, plan, tasks)| {
                EventBody::TasksStarted {
                    run_id,
                    plan,
                    tasks,
                }
            }),
            (
                text(),
                text(),
                any::<usize>(),
                any::<usize>(),
                task_view(),
                usd()
            )
                .prop_map(|(line, task, position, total, view, cost_usd)| {
                    EventBody::TaskStatus {
                        line,
                        task,
                        position,
                        total,
                        view,
                        cost_usd,
                    }
                }),
            (text(), select(SddStage::ALL.to_vec()), any::<u32>(), text()).prop_map(
                |(task, stage, round, agent)| EventBody::TaskStage {
                    task,
                    stage,
                    round,
                    agent
                }
            ),
            (
                text(),
                select(SddStage::ALL.to_vec()),
                select(StepOutcome::ALL.to_vec())
            )
                .prop_map(|(task, stage, outcome)| EventBody::TaskStageEnded {
                    task,
                    stage,
                    outcome
                }),
            (text(), proptest::option::of(text()))
                .prop_map(|(step, agent)| EventBody::PlanStep { step, agent }),
            (text(), any::<bool>(), text())
                .prop_map(|(step, ok, detail)| EventBody::PlanStepEnded { step, ok, detail }),
            (op(), text()).prop_map(|(op, reason)| EventBody::OpRejected { op, reason }),
        ];
    let workflows = prop_oneof![
        (view(), proptest::option::of(text()))
            .prop_map(|(escalation, next)| EventBody::EscalationAnswered { escalation, next }),
        (any::<usize>(), text())
            .prop_map(|(task, agent)| EventBody::TeamTaskStarted { task, agent }),
        (any::<usize>(), text(), text(), usd()).prop_map(|(task, agent, status, cost_usd)| {
            EventBody::TeamTaskFinished {
                task,
                agent,
                status,
                cost_usd,
            }
        }),
        (text(), any::<u32>()).prop_map(|(session, turn)| EventBody::BmadTurn { session, turn }),
        (text(), text(), text(), usd()).prop_map(|(session, selection, by, confidence)| {
            EventBody::BmadMenuAnswered {
                session,
                selection,
                by,
                confidence,
            }
        }),
        (text(), text(), proptest::collection::vec(text(), 0..3)).prop_map(
            |(session, on, members)| EventBody::BmadParty {
                session,
                on,
                members
            }
        ),
        (text(), text(), text()).prop_map(|(session, end, reason)| EventBody::BmadSessionEnded {
            session,
            end,
            reason
        }),
        (any::<u64>(), text())
            .prop_map(|(issue, effect)| EventBody::PmEffectApplied { issue, effect }),
        (any::<u64>(), any::<u32>())
            .prop_map(|(issue, seat)| EventBody::PmSeatTaken { issue, seat }),
        (any::<u64>(), any::<u32>())
            .prop_map(|(issue, seat)| EventBody::PmSeatReleased { issue, seat }),
    ];
    let sprint = prop_oneof![
        (text(), phase(), text()).prop_map(|(key, phase, detail)| EventBody::Merge {
            key,
            phase,
            detail
        }),
        (text(), any::<u32>(), any::<bool>()).prop_map(|(key, round, passed)| EventBody::Review {
            key,
            round,
            passed,
            findings: Vec::new()
        }),
        (any::<u64>(), text(), text()).prop_map(|(issue, role, agent)| EventBody::PmTurn {
            issue,
            role,
            agent
        }),
    ];
    prop_oneof![story, agent, other, workflows, sprint]
}

fn phase() -> impl Strategy<Value = MergePhase> {
    select(vec![
        MergePhase::Worktree,
        MergePhase::Queued,
        MergePhase::Rebasing,
        MergePhase::Conflict,
        MergePhase::Testing,
        MergePhase::Merged,
        MergePhase::Kept,
    ])
}

fn event() -> impl Strategy<Value = Event> {
    (text(), any::<u64>(), scope(), body()).prop_map(|(run, seq, scope, body)| Event {
        run,
        seq,
        at: "2026-11-26T05:00:00.123Z".into(),
        scope,
        body,
    })
}

proptest! {
    #[test]
    fn every_event_round_trips_through_json(e in event()) {
        let json = serde_json::to_string(&e).unwrap();
        let back: Event = serde_json::from_str(&json).unwrap_or_else(|err| panic!("{err}: {json}"));
        prop_assert_eq!(back, e);
    }

    #[test]
    fn every_name_is_the_event_tag_of_its_json(b in body()) {
        let json = serde_json::to_value(&b).unwrap();
        prop_assert_eq!(json["event"].as_str(), Some(b.name()));
    }

    #[test]
    fn every_op_round_trips_through_json(o in op()) {
        let json = serde_json::to_string(&o).unwrap();
        let back: Op = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, o);
    }
}

#[test]
fn the_body_sits_beside_run_seq_time_and_scope() {
    let e = Event {
        run: "sprint-1".into(),
        seq: 7,
        at: "2026-11-26T05:00:00Z".into(),
        scope: Scope::Unit(UnitKey::Story("1-2-login".into())),
        body: EventBody::Transition {
            key: "1-2-login".into(),
            from: StatusValue::Known(Status::InProgress),
            to: Status::Review,
        },
    };
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        serde_json::json!({
            "run": "sprint-1",
            "seq": 7,
            "at": "2026-11-26T05:00:00Z",
            "scope": { "unit": { "story": "1-2-login" } },
            "event": "transition",
            "key": "1-2-login",
            "from": "in-progress",
            "to": "review",
        })
    );
    let op: Op = serde_json::from_str(r#"{"op":"answer","id":3,"choice":"retry"}"#).unwrap();
    assert_eq!(
        op,
        Op::Answer {
            id: 3,
            choice: "retry".into()
        }
    );
}

#[test]
fn an_answer_given_elsewhere_names_its_escalation_and_what_acts_on_it() {
    let json = serde_json::json!({
        "event": "escalation_answered",
        "escalation": {
            "id": 4, "key": "bmad:bmad-prd-1", "kind": "bmad-menu", "title": "t", "finding": "f",
            "options": ["C: continue"], "choices": [{"id": "C: continue", "label": "C: continue"}],
            "answer": "C: continue", "awaiting": false, "created_at": "2026-11-26T00:00:00Z",
            "answered_at": "2026-11-26T00:01:00Z", "resolved_at": null, "run_id": "bmad-1"
        },
        "next": "`baton bmad run bmad-prd`"
    });
    let body: EventBody = serde_json::from_value(json).unwrap();
    let EventBody::EscalationAnswered { escalation, next } = body else {
        panic!("not an answer: {body:?}");
    };
    assert_eq!(escalation.unit(), Some(UnitKey::Bmad("bmad-prd-1".into())));
    assert_eq!(escalation.unit().map(|u| u.workflow()), Some(RunKind::Bmad));
    assert_eq!(next.as_deref(), Some("`baton bmad run bmad-prd`"));
}
