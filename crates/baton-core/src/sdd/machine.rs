//! The per-task machine of subagent-driven development: `decide(&TaskFacts) -> TaskDecision`.
//!
//! A plan task goes pending → implementing → reviewing (spec, then quality, then the optional
//! security and performance reviews together) → complete, with a fixing round after each failing
//! review. The facts are the task's journaled steps and escalations; [`decide`] replays them from
//! the start, so a resumed run continues exactly where a killed one stopped, and a step cut off
//! mid-way (no outcome) is simply run again. Bounds come from the history too: a review that
//! still fails after `max_iterations` fix rounds escalates (fix manually, skip this review,
//! adjust the plan, abort); an inconclusive verdict escalates at once; critical findings of an
//! optional review loop like a required review's, its other findings are only recorded.

use crate::escalation::{Choice, EscalationKind};
use crate::story::Escalate;
use crate::story::{AgentEscalation, StepOutcome};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A stage of a plan task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SddStage {
    /// The implementer's first pass.
    Implement,
    /// The implementer fixing a review's findings.
    Fix,
    /// Does the change do what the task asked, no less and no more?
    SpecReview,
    /// Is it well made?
    QualityReview,
    /// Optional: is it safe?
    SecurityReview,
    /// Optional: is it fast enough?
    PerformanceReview,
}

impl SddStage {
    /// Every stage.
    pub const ALL: [SddStage; 6] = [
        SddStage::Implement,
        SddStage::Fix,
        SddStage::SpecReview,
        SddStage::QualityReview,
        SddStage::SecurityReview,
        SddStage::PerformanceReview,
    ];

    /// The stable id stored in the journal.
    pub fn as_str(self) -> &'static str {
        match self {
            SddStage::Implement => "implement",
            SddStage::Fix => "fix",
            SddStage::SpecReview => "spec-review",
            SddStage::QualityReview => "quality-review",
            SddStage::SecurityReview => "security-review",
            SddStage::PerformanceReview => "performance-review",
        }
    }

    /// Parses a stored id.
    pub fn parse(s: &str) -> Option<SddStage> {
        SddStage::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The bundled agent that works this stage.
    pub fn agent(self) -> &'static str {
        match self {
            SddStage::Implement | SddStage::Fix => "implementer",
            SddStage::SpecReview => "spec-reviewer",
            SddStage::QualityReview => "quality-reviewer",
            SddStage::SecurityReview => "security-reviewer",
            SddStage::PerformanceReview => "performance-reviewer",
        }
    }

    /// Whether the stage is a review.
    pub fn is_review(self) -> bool {
        !matches!(self, SddStage::Implement | SddStage::Fix)
    }

    /// The review gate this stage belongs to (`None` for the implementer's stages).
    pub fn gate(self) -> Option<Gate> {
        match self {
            SddStage::SpecReview => Some(Gate::Spec),
            SddStage::QualityReview => Some(Gate::Quality),
            SddStage::SecurityReview | SddStage::PerformanceReview => Some(Gate::Optional),
            SddStage::Implement | SddStage::Fix => None,
        }
    }
}

impl fmt::Display for SddStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A review gate: what a fix round answers to, and what fix rounds are counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gate {
    /// The spec review.
    Spec,
    /// The quality review.
    Quality,
    /// The optional reviews, run together.
    Optional,
}

impl Gate {
    /// A short name for status lines and titles.
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Spec => "spec",
            Gate::Quality => "quality",
            Gate::Optional => "optional",
        }
    }
}

/// A task's state, as journaled and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// Nothing done yet.
    Pending,
    /// The implementer's first pass.
    Implementing,
    /// A review is due or running.
    Reviewing,
    /// The implementer is fixing a review's findings.
    Fixing,
    /// Waiting for a human's answer.
    Escalated,
    /// Every review passed (or was skipped by a human).
    Complete,
}

impl TaskState {
    /// The stable id.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Implementing => "implementing",
            TaskState::Reviewing => "reviewing",
            TaskState::Fixing => "fixing",
            TaskState::Escalated => "escalated",
            TaskState::Complete => "complete",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a settled step leaves for later decisions (stored as JSON beside the step).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SddDetail {
    /// The commit the task's work started from (an implement step records it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Why it failed or was inconclusive; a review's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Findings the review reported.
    #[serde(default)]
    pub findings: usize,
    /// Critical findings.
    #[serde(default)]
    pub critical: usize,
    /// The findings as markdown, for the implementer's fix round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings_text: Option<String>,
    /// An agent's own escalation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<AgentEscalation>,
}

/// One journaled step of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SddStep {
    /// Journal id (steps are ordered by it).
    pub id: i64,
    /// The stage.
    pub stage: SddStage,
    /// Its round, from 1.
    pub round: u32,
    /// How it ended (`None`: cut off, it runs again).
    pub outcome: Option<StepOutcome>,
    /// What it left.
    pub detail: SddDetail,
}

/// One escalation of a task: the same facts as a story's (`after_step` is the newest step of
/// the task when it was raised).
pub type SddEscalation = crate::story::EscalationFact;

/// The rules a task runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SddRules {
    /// Fix rounds per review gate before a human is asked.
    pub max_iterations: u32,
    /// Run the security review.
    pub security: bool,
    /// Run the performance review.
    pub performance: bool,
}

impl Default for SddRules {
    fn default() -> Self {
        SddRules {
            max_iterations: 3,
            security: false,
            performance: false,
        }
    }
}

/// Everything [`decide`] reads about one task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFacts {
    /// Its steps, oldest first.
    pub steps: Vec<SddStep>,
    /// Its escalations, oldest first.
    pub escalations: Vec<SddEscalation>,
    /// The rules.
    pub rules: SddRules,
    /// The run was cancelled.
    pub cancelled: bool,
    /// The budget is spent (why).
    pub budget_exhausted: Option<String>,
}

/// A stage to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SddRun {
    /// The stage.
    pub stage: SddStage,
    /// Its round, from 1.
    pub round: u32,
    /// For a fix round: the findings to fix.
    pub findings: Vec<String>,
    /// What the agent must be told beyond its task.
    pub note: Option<String>,
}

/// How a task stops the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "end", content = "reason", rename_all = "kebab-case")]
pub enum SddEnd {
    /// The run was cancelled.
    Cancelled,
    /// The budget stopped it.
    Budget(String),
    /// A human stops the run to edit the plan.
    AdjustPlan(String),
    /// A human aborted the run.
    Aborted(String),
}

/// What happens next for a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskDecision {
    /// Run one stage.
    Run(SddRun),
    /// Run these stages concurrently (the optional reviews).
    RunParallel(Vec<SddRun>),
    /// Ask a human.
    Escalate(Escalate),
    /// Mark an answered escalation acted on, then (if given) end the run.
    Resolve {
        /// The escalation.
        id: i64,
        /// How the run ends after it.
        then: Option<SddEnd>,
    },
    /// Wait for the answer to this escalation.
    Wait(i64),
    /// The task is complete.
    Complete,
    /// The run stops.
    End(SddEnd),
}

/// A review's mark on the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// Not run (yet) this round.
    Waiting,
    /// Passed.
    Passed,
    /// Failed: a fix round follows, or a human is asked.
    Failed,
    /// A human skipped it.
    Skipped,
    /// Not part of this run.
    Off,
}

impl Mark {
    /// `✓`, `✗`, `skipped`, `…`.
    pub fn symbol(self) -> &'static str {
        match self {
            Mark::Waiting => "…",
            Mark::Passed => "✓",
            Mark::Failed => "✗",
            Mark::Skipped => "skipped",
            Mark::Off => "",
        }
    }
}

/// Where a task stands, for status lines and the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskView {
    /// The state.
    pub state: TaskState,
    /// The spec review's mark.
    pub spec: Mark,
    /// The quality review's mark.
    pub quality: Mark,
    /// The security review's mark.
    pub security: Mark,
    /// The performance review's mark.
    pub performance: Mark,
    /// Fix rounds run since the task (re)started.
    pub fixes: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Implement,
    Review(Gate),
    Fix(Gate),
    Blocked(Escalate),
    Complete,
}

/// The replayed history.
#[derive(Debug, Clone)]
struct Replay {
    phase: Phase,
    fixes: BTreeMap<Gate, u32>,
    marks: BTreeMap<SddStage, Mark>,
    /// Settled optional reviews of the current round.
    optional: BTreeMap<SddStage, (StepOutcome, SddDetail)>,
    /// The findings the next fix round addresses.
    findings: Vec<String>,
    /// Reviews run per stage since the task (re)started (for round numbers).
    runs: BTreeMap<SddStage, u32>,
    /// The stage the task is blocked at, to run again on `retry`.
    blocked_at: Option<SddStage>,
    /// The gate a failed fix round was fixing.
    blocked_fix: Option<Gate>,
    note: Option<String>,
    any_step: bool,
}

impl Replay {
    fn new() -> Replay {
        Replay {
            phase: Phase::Implement,
            fixes: BTreeMap::new(),
            marks: BTreeMap::new(),
            optional: BTreeMap::new(),
            findings: Vec::new(),
            runs: BTreeMap::new(),
            blocked_at: None,
            blocked_fix: None,
            note: None,
            any_step: false,
        }
    }

    fn optional_stages(rules: &SddRules) -> Vec<SddStage> {
        let mut v = Vec::new();
        if rules.security {
            v.push(SddStage::SecurityReview);
        }
        if rules.performance {
            v.push(SddStage::PerformanceReview);
        }
        v
    }

    /// The phase after `gate` passed.
    fn after(gate: Gate, rules: &SddRules) -> Phase {
        match gate {
            Gate::Spec => Phase::Review(Gate::Quality),
            Gate::Quality if Replay::optional_stages(rules).is_empty() => Phase::Complete,
            Gate::Quality => Phase::Review(Gate::Optional),
            Gate::Optional => Phase::Complete,
        }
    }

    fn block(&mut self, stage: SddStage, e: Escalate) {
        self.blocked_at = Some(stage);
        self.blocked_fix = match self.phase {
            Phase::Fix(g) => Some(g),
            _ => None,
        };
        self.phase = Phase::Blocked(e);
    }

    /// A review (or the optional group) failed: a fix round, or a human once the rounds are
    /// used up.
    fn failed(&mut self, stage: SddStage, gate: Gate, findings: Vec<String>, rules: &SddRules) {
        let used = self.fixes.get(&gate).copied().unwrap_or(0);
        if used >= rules.max_iterations {
            self.block(
                stage,
                Escalate {
                    kind: EscalationKind::SddMaxIterations,
                    title: format!(
                        "the {} review still fails after {used} fix round{}",
                        gate.as_str(),
                        if used == 1 { "" } else { "s" }
                    ),
                    finding: findings.join("\n"),
                    choices: EscalationKind::SddMaxIterations.choices().to_vec(),
                },
            );
        } else {
            self.findings = findings;
            self.phase = Phase::Fix(gate);
        }
    }

    fn agent_failed(&mut self, s: &SddStep, outcome: StepOutcome) {
        let (title, finding) = match &s.detail.escalation {
            Some(e) if outcome == StepOutcome::Escalated => (e.title.clone(), e.finding.clone()),
            _ => (
                format!("the {} agent {} ({})", s.stage.agent(), outcome, s.stage),
                s.detail.reason.clone().unwrap_or_default(),
            ),
        };
        self.block(
            s.stage,
            Escalate {
                kind: EscalationKind::SddAgent,
                title,
                finding,
                choices: EscalationKind::SddAgent.choices().to_vec(),
            },
        );
    }

    fn step(&mut self, s: &SddStep, rules: &SddRules) {
        // A step cut off (or cancelled) leaves the phase where it was: it runs again.
        let Some(outcome) = s.outcome.filter(|o| *o != StepOutcome::Cancelled) else {
            return;
        };
        self.any_step = true;
        self.note = None;
        if s.stage.is_review() {
            *self.runs.entry(s.stage).or_insert(0) += 1;
        }
        let unfinished = matches!(
            outcome,
            StepOutcome::Failed
                | StepOutcome::TimedOut
                | StepOutcome::Halted
                | StepOutcome::Escalated
        );
        match s.stage {
            SddStage::Implement | SddStage::Fix if unfinished => self.agent_failed(s, outcome),
            SddStage::Implement => self.phase = Phase::Review(Gate::Spec),
            SddStage::Fix => {
                let gate = match self.phase {
                    Phase::Fix(g) => g,
                    _ => Gate::Spec,
                };
                *self.fixes.entry(gate).or_insert(0) += 1;
                if gate == Gate::Optional {
                    self.optional.clear();
                }
                self.phase = Phase::Review(gate);
            }
            SddStage::SpecReview | SddStage::QualityReview => {
                let gate = s.stage.gate().unwrap_or(Gate::Spec);
                match outcome {
                    StepOutcome::Passed => {
                        self.marks.insert(s.stage, Mark::Passed);
                        self.phase = Replay::after(gate, rules);
                    }
                    StepOutcome::ChangesRequested => {
                        self.marks.insert(s.stage, Mark::Failed);
                        let text = s.detail.findings_text.clone().unwrap_or_default();
                        self.failed(s.stage, gate, vec![text], rules);
                    }
                    StepOutcome::Inconclusive => self.inconclusive(s),
                    _ => self.agent_failed(s, outcome),
                }
            }
            SddStage::SecurityReview | SddStage::PerformanceReview => {
                if unfinished {
                    self.agent_failed(s, outcome);
                    return;
                }
                if outcome == StepOutcome::Inconclusive {
                    self.inconclusive(s);
                    return;
                }
                self.optional.insert(s.stage, (outcome, s.detail.clone()));
                self.settle_optional(rules);
            }
        }
    }

    fn inconclusive(&mut self, s: &SddStep) {
        self.marks.insert(s.stage, Mark::Failed);
        let reason = s.detail.reason.clone().unwrap_or_default();
        self.block(
            s.stage,
            Escalate {
                kind: EscalationKind::SddInconclusive,
                title: format!("the {} gave no usable verdict", s.stage.agent()),
                finding: reason,
                choices: EscalationKind::SddInconclusive.choices().to_vec(),
            },
        );
    }

    /// Once every optional review of the round has settled: critical findings loop, the rest
    /// is recorded.
    fn settle_optional(&mut self, rules: &SddRules) {
        let wanted = Replay::optional_stages(rules);
        if !wanted.iter().all(|st| self.optional.contains_key(st)) {
            return;
        }
        let mut critical = Vec::new();
        for st in &wanted {
            if let Some((outcome, d)) = self.optional.get(st) {
                let blocks = *outcome == StepOutcome::ChangesRequested && d.critical > 0;
                self.marks
                    .insert(*st, if blocks { Mark::Failed } else { Mark::Passed });
                if blocks {
                    critical.push(d.findings_text.clone().unwrap_or_default());
                }
            }
        }
        if critical.is_empty() {
            self.phase = Phase::Complete;
        } else {
            let stage = wanted.first().copied().unwrap_or(SddStage::SecurityReview);
            self.failed(stage, Gate::Optional, critical, rules);
        }
    }

    /// Acts on a human's answer to the escalation the task is blocked on.
    fn answer(&mut self, choice: &Choice, rules: &SddRules) {
        let stage = self.blocked_at.unwrap_or(SddStage::Implement);
        let gate = stage.gate();
        match (choice, gate) {
            (Choice::AdjustPlan | Choice::Abort, _) => *self = Replay::new(),
            (Choice::FixManually, Some(g)) => {
                self.fixes.insert(g, 0);
                self.reopen(g);
                self.note = Some(
                    "A human changed the code by hand after the last review; review the \
                     change as it stands now."
                        .into(),
                );
            }
            (Choice::RerunReview, Some(g)) => {
                self.reopen(g);
                self.note = Some(
                    "Your previous answer had no usable verdict. End your answer with the \
                     fenced `baton-review` block."
                        .into(),
                );
            }
            (Choice::SkipReview, Some(g)) => {
                for st in SddStage::ALL {
                    if st.gate() == Some(g) && self.marks.contains_key(&st) {
                        self.marks.insert(st, Mark::Skipped);
                    }
                }
                if g == Gate::Optional {
                    self.optional.clear();
                }
                self.phase = Replay::after(g, rules);
            }
            (_, Some(g)) => self.reopen(g),
            (_, None) => {
                // The implementer's own step failed: run it again.
                self.phase = match (stage, self.blocked_fix) {
                    (SddStage::Fix, Some(g)) => Phase::Fix(g),
                    _ => Phase::Implement,
                };
            }
        }
        self.blocked_at = None;
    }

    /// The gate `g` is due again (after a human's answer).
    fn reopen(&mut self, g: Gate) {
        if g == Gate::Optional {
            self.optional.clear();
        }
        self.phase = Phase::Review(g);
    }
}

/// Replays the task's history; returns the replay, or a decision the history forces (an open
/// escalation, an answer to act on).
fn replay(f: &TaskFacts) -> Result<Replay, TaskDecision> {
    let mut r = Replay::new();
    let mut escalations = f.escalations.iter().peekable();
    for (i, s) in f.steps.iter().enumerate() {
        r.step(s, &f.rules);
        let next_id = f.steps.get(i + 1).map(|n| n.id);
        if !matches!(r.phase, Phase::Blocked(_)) {
            continue;
        }
        // The escalation raised after this step (and before the next one), if any.
        while let Some(e) = escalations.peek() {
            if e.after_step < s.id {
                escalations.next();
                continue;
            }
            if next_id.is_some_and(|n| e.after_step >= n) {
                break;
            }
            let Some(e) = escalations.next() else {
                break;
            };
            match (&e.answer, e.resolved) {
                (None, _) if next_id.is_none() => return Err(TaskDecision::Wait(e.id)),
                (None, _) => {}
                (Some(c), false) => {
                    return Err(TaskDecision::Resolve {
                        id: e.id,
                        then: match c {
                            Choice::AdjustPlan => Some(SddEnd::AdjustPlan(format!(
                                "escalation #{}: adjust the plan, then run `baton sdd` again",
                                e.id
                            ))),
                            Choice::Abort => {
                                Some(SddEnd::Aborted(format!("escalation #{}: aborted", e.id)))
                            }
                            _ => None,
                        },
                    });
                }
                (Some(c), true) => r.answer(c, &f.rules),
            }
            break;
        }
    }
    Ok(r)
}

/// Decides what happens next for a task.
pub fn decide(f: &TaskFacts) -> TaskDecision {
    if f.cancelled {
        return TaskDecision::End(SddEnd::Cancelled);
    }
    let r = match replay(f) {
        Ok(r) => r,
        Err(d) => return d,
    };
    if let Some(why) = &f.budget_exhausted
        && r.phase != Phase::Complete
    {
        return TaskDecision::End(SddEnd::Budget(why.clone()));
    }
    let round = |st: SddStage| r.runs.get(&st).copied().unwrap_or(0) + 1;
    let run = |stage: SddStage| SddRun {
        stage,
        round: round(stage),
        findings: Vec::new(),
        note: r.note.clone(),
    };
    match &r.phase {
        Phase::Implement => TaskDecision::Run(SddRun {
            round: 1,
            ..run(SddStage::Implement)
        }),
        Phase::Review(Gate::Spec) => TaskDecision::Run(run(SddStage::SpecReview)),
        Phase::Review(Gate::Quality) => TaskDecision::Run(run(SddStage::QualityReview)),
        Phase::Review(Gate::Optional) => TaskDecision::RunParallel(
            Replay::optional_stages(&f.rules)
                .into_iter()
                .filter(|st| !r.optional.contains_key(st))
                .map(run)
                .collect(),
        ),
        Phase::Fix(g) => TaskDecision::Run(SddRun {
            stage: SddStage::Fix,
            round: r.fixes.values().sum::<u32>() + 1,
            findings: r.findings.clone(),
            note: Some(format!("Fix the {} review's findings.", g.as_str())),
        }),
        Phase::Blocked(e) => TaskDecision::Escalate(e.clone()),
        Phase::Complete => TaskDecision::Complete,
    }
}

/// Where the task stands.
pub fn view(f: &TaskFacts) -> TaskView {
    let r = replay(f);
    let waiting = r.is_err();
    let r = r.unwrap_or_else(|_| {
        // An open or unresolved escalation: replay without the escalations for the marks.
        let bare = TaskFacts {
            escalations: Vec::new(),
            ..f.clone()
        };
        replay(&bare).unwrap_or_else(|_| Replay::new())
    });
    let state = match &r.phase {
        _ if waiting => TaskState::Escalated,
        Phase::Implement if !r.any_step && f.steps.is_empty() => TaskState::Pending,
        Phase::Implement => TaskState::Implementing,
        Phase::Review(_) => TaskState::Reviewing,
        Phase::Fix(_) => TaskState::Fixing,
        Phase::Blocked(_) => TaskState::Escalated,
        Phase::Complete => TaskState::Complete,
    };
    let mark = |st: SddStage, on: bool| {
        if !on {
            return Mark::Off;
        }
        r.marks.get(&st).copied().unwrap_or(Mark::Waiting)
    };
    TaskView {
        state,
        spec: mark(SddStage::SpecReview, true),
        quality: mark(SddStage::QualityReview, true),
        security: mark(SddStage::SecurityReview, f.rules.security),
        performance: mark(SddStage::PerformanceReview, f.rules.performance),
        fixes: r.fixes.values().sum(),
    }
}

#[cfg(test)]
#[path = "machine_tests.rs"]
mod tests;
