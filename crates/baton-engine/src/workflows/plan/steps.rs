//! The planning steps' effects: an agent step gives the role's agent its template, the idea and
//! the earlier artifacts as they are on disk now, takes its answer as the document body, and
//! writes the artifact atomically with its frontmatter; the readiness step adds the
//! cross-reference check and an FR traceability matrix computed in code; sprint planning is code
//! only (BMAD-FORMAT.md R5).

use super::{
    INPUT_PROMPT, PlanError, PlanOptions, PlanState, READINESS_PROMPT, RESUME_PROMPT, RETRY_PROMPT,
    STEP_PROMPT, StepDone, artifact, facts, io_err, templates,
};
use crate::prompts::render;
use crate::protocol::UnitKey;
use crate::run::Run;
use baton_agent::outcome::{Outcome, Status as AgentStatus};
use baton_core::escalation::{Choice, EscalationKind};
use baton_core::plan::check::{Finding, Severity, has_high};
use baton_core::plan::docs::ReqKind;
use baton_core::plan::pipeline::{PlanStep, Readiness, path};
use baton_core::story::Escalate;
use baton_store::frontmatter::{Checkpoints, Document, StepRef};
use baton_store::planning::{self, LoadedPlan, shown};
use baton_store::sprint_file::plan::{PlanJournal, plan_sprint, planned_from};
use std::io;
use std::sync::Arc;

/// Why a step produced no artifact (an agent that did not complete, an empty answer, no epics
/// to plan from); the plan ends `failed` with it, and nothing complete was touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unproduced(pub String);

/// The template file of a step.
fn template_name(step: PlanStep) -> &'static str {
    match step {
        PlanStep::QuickSpec => "quick-spec.md",
        PlanStep::Brief => "product-brief.md",
        PlanStep::Prd => "prd.md",
        PlanStep::Architecture => "architecture.md",
        PlanStep::Epics => "epics.md",
        PlanStep::Readiness => "readiness-report.md",
        PlanStep::SprintPlanning => "epics.md",
    }
}

/// The artifact's human name.
fn artifact_name(step: PlanStep) -> &'static str {
    match step {
        PlanStep::QuickSpec => "quick technical spec",
        PlanStep::Brief => "product brief",
        PlanStep::Prd => "product requirements document (PRD)",
        PlanStep::Architecture => "architecture document",
        PlanStep::Epics => "epics and stories document",
        PlanStep::Readiness => "implementation readiness report",
        PlanStep::SprintPlanning => "sprint status",
    }
}

/// The step numbers written to `stepsCompleted`: 1 through BMad's final step, so BMad's own
/// workflows read the document as complete.
pub(super) fn steps_list(step: PlanStep) -> String {
    let last = match step {
        PlanStep::Brief | PlanStep::Readiness => 6,
        PlanStep::Architecture => 8,
        PlanStep::Prd => 12,
        _ => 4,
    };
    let v: Vec<String> = (1..=last).map(|n| n.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// BMad's final step file of a step-file workflow, for a document whose `stepsCompleted` lists
/// step file names (BMAD-FORMAT.md §4): the name that marks it complete.
fn final_step_file(step: PlanStep) -> &'static str {
    match step {
        PlanStep::Prd => "step-12-complete.md",
        PlanStep::Architecture => "step-08-complete.md",
        PlanStep::Brief => "step-06-complete.md",
        PlanStep::Epics => "step-04-final-validation.md",
        PlanStep::Readiness => "step-06-final-assessment.md",
        PlanStep::QuickSpec | PlanStep::SprintPlanning => "step-04-complete.md",
    }
}

/// `stepsCompleted` of a finished document in the dialect found (BMAD-FORMAT.md R8): a list of
/// step file names a BMad workflow began stays a list of names (what was there, then the final
/// step's file); otherwise step numbers 1 through BMad's final step.
pub(super) fn steps_completed(step: PlanStep, found: &[StepRef]) -> String {
    if !found.iter().any(|s| matches!(s, StepRef::Name(_))) {
        return steps_list(step);
    }
    let mut names: Vec<String> = found.iter().map(ToString::to_string).collect();
    let last = final_step_file(step);
    if !names.iter().any(|n| n == last) {
        names.push(last.to_owned());
    }
    let quoted: Vec<String> = names.iter().map(|n| yaml_str(n)).collect();
    format!("[{}]", quoted.join(", "))
}

fn yaml_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `AGENT ended STATUS: REASON`, for an agent that did not complete.
pub(super) fn ended(outcome: &Outcome) -> String {
    format!(
        "{} ended {}{}",
        outcome.agent,
        outcome.status.as_str(),
        outcome
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    )
}

/// The document the agent answered, without a frontmatter block or a wrapping code fence.
pub(super) fn clean_body(answer: &str) -> String {
    let mut t = answer.trim();
    for fence in ["```markdown", "```md", "```"] {
        if let Some(inner) = t.strip_prefix(fence) {
            if let Some(inner) = inner.trim_end().strip_suffix("```") {
                t = inner.trim();
            }
            break;
        }
    }
    let off = baton_store::frontmatter::body_offset(t);
    format!("{}\n", t[off..].trim())
}

/// Renders findings as Markdown list lines.
pub fn findings_markdown(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "- none: the plan is consistent.".to_owned();
    }
    findings
        .iter()
        .map(|f| {
            format!(
                "- **{}** `{}:{}` {}",
                f.severity.as_str(),
                f.file,
                f.line,
                f.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The FR traceability matrix of a plan, computed from the documents.
pub fn traceability(plan: &LoadedPlan) -> String {
    let mut out = String::from("| Requirement | Stories |\n|---|---|\n");
    let Some(prd) = &plan.prd else {
        return "No PRD: nothing to trace.".to_owned();
    };
    for r in &prd.requirements {
        let stories: Vec<String> = plan
            .epics
            .iter()
            .flat_map(|e| e.stories())
            .filter(|(_, s)| s.cites.iter().any(|(id, _)| *id == r.id))
            .map(|(_, s)| s.number.clone())
            .collect();
        let cell = if stories.is_empty() {
            if r.id.kind == ReqKind::Fr {
                "**none (orphan)**".to_owned()
            } else {
                "none".to_owned()
            }
        } else {
            stories.join(", ")
        };
        out.push_str(&format!("| {} | {cell} |\n", r.id));
    }
    out
}

pub(super) fn sprint_step(opts: &PlanOptions) -> Result<Result<StepDone, Unproduced>, PlanError> {
    let paths = &opts.paths;
    let loaded = planning::load(&paths.planning, &paths.root)?;
    if let Some(t) = loaded.undecided.first() {
        // Which version is current is the person's call, as in BMad's sprint planning.
        return Ok(Err(Unproduced(format!(
            "`{}` and `{}` hold the same epics, whole and sharded; say which is current with \
             `baton sprint-plan --epics whole` or `--epics sharded`",
            shown(&paths.root, &t.whole),
            shown(&paths.root, &t.sharded)
        ))));
    }
    let Some(epics) = &loaded.epics else {
        return Ok(Err(Unproduced(
            "there is no epics document to plan from".to_owned(),
        )));
    };
    if epics.epics.is_empty() {
        return Ok(Err(Unproduced(format!(
            "`{}` has no `## Epic N: title` heading; nothing to plan",
            epics.path
        ))));
    }
    let plan = planned_from(epics, &paths.stories);
    let _lock =
        baton_store::lock::FileLock::acquire(&opts.lock_path).map_err(|e| PlanError::Io {
            path: opts.lock_path.clone(),
            source: io::Error::other(e.to_string()),
        })?;
    let report = match &opts.journal {
        Some((journal, run_id)) => {
            let mut guard = journal
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut pj = PlanJournal {
                journal: &mut *guard,
                at: jiff::Timestamp::now().to_string(),
                run_id: Some(run_id.clone()),
            };
            plan_sprint(
                &paths.sprint_status,
                &opts.sprint_header,
                &plan,
                opts.stamp,
                Some(&mut pj),
            )?
        }
        None => plan_sprint(
            &paths.sprint_status,
            &opts.sprint_header,
            &plan,
            opts.stamp,
            None,
        )?,
    };
    Ok(Ok(StepDone {
        step: PlanStep::SprintPlanning,
        path: paths.sprint_status.clone(),
        verdict: None,
        capped: false,
        findings: loaded.check().unwrap_or_default(),
        sprint: Some(report),
        cost_usd: 0.0,
    }))
}

pub(super) async fn agent_step(
    run: &Arc<Run>,
    opts: &PlanOptions,
    state: &PlanState,
    step: PlanStep,
    resume: bool,
) -> Result<Result<StepDone, Unproduced>, PlanError> {
    let paths = &opts.paths;
    let docs = planning::find(&paths.planning);
    let target = facts::artifact(paths, &docs, step, &opts.date);
    // The progress list as another tool left it: its dialect is kept.
    let found_steps = facts::doc_state(step, &target).1;
    let (template, _) = templates::template(&paths.root, template_name(step))
        .unwrap_or_else(|| (String::new(), templates::Source::Bundled));
    let template = render(&template, &[("project", &opts.project)]);
    // Inputs: every earlier artifact of the tier's path, as it is on disk now.
    let mut inputs = String::new();
    let mut input_paths = Vec::new();
    for &prev in path(state.tier).iter().take_while(|s| **s != step) {
        let p = facts::artifact(paths, &docs, prev, &opts.date);
        if !p.is_file() || !prev.uses_agent() {
            continue;
        }
        let text = baton_store::bounded::read_to_string(&p, baton_store::bounded::DOCUMENT_LIMIT)
            .map_err(io_err(&p))?;
        let body = &text[baton_store::frontmatter::body_offset(&text)..];
        let shown_path = shown(&paths.root, &p);
        inputs.push_str(&render(
            INPUT_PROMPT,
            &[("path", &shown_path), ("body", body.trim_end())],
        ));
        inputs.push_str("\n\n");
        input_paths.push(shown_path);
    }
    let mut extra = String::new();
    if resume && target.is_file() {
        let (_, steps) = facts::doc_state(step, &target);
        let list: Vec<String> = steps.iter().map(ToString::to_string).collect();
        let shown_target = shown(&paths.root, &target);
        extra.push_str(&render(
            RESUME_PROMPT,
            &[("path", &shown_target), ("steps", &list.join(", "))],
        ));
        extra.push_str("\n\n");
        let text = std::fs::read_to_string(&target).map_err(io_err(&target))?;
        let body = &text[baton_store::frontmatter::body_offset(&text)..];
        extra.push_str(&render(
            INPUT_PROMPT,
            &[("path", &shown_target), ("body", body.trim_end())],
        ));
        extra.push_str("\n\n");
        Checkpoints::new(&opts.checkpoints).save(&target, "before-resume")?;
    }
    let mut plan_now = None;
    if step == PlanStep::Readiness {
        let loaded = planning::load(&paths.planning, &paths.root)?;
        let findings = loaded.check().unwrap_or_default();
        extra.push_str(&render(
            READINESS_PROMPT,
            &[("findings", &findings_markdown(&findings))],
        ));
        extra.push_str("\n\n");
        plan_now = Some((loaded, findings));
    }
    let idea = if state.idea.trim().is_empty() {
        String::new()
    } else {
        format!("The idea, in the user's words:\n\n{}\n", state.idea.trim())
    };
    let shown_target = shown(&paths.root, &target);
    let tier = state.tier.to_string();
    let task = render(
        STEP_PROMPT,
        &[
            ("artifact", artifact_name(step)),
            ("project", &opts.project),
            ("step", step.name()),
            ("tier", &tier),
            ("idea", &idea),
            ("template", template.trim_end()),
            ("inputs", &inputs),
            ("extra", &extra),
            ("path", &shown_target),
        ],
    );
    let unit_key = UnitKey::PlanStep(step.name().to_owned());
    let unit = run.unit(unit_key.clone());
    // The answer is checked before anything is written: the document, not a conversation about
    // it. A failed check is given back once with its reason; a second one is escalated and the
    // artifact is not written (so never marked complete).
    let mut attempt = task.clone();
    let mut retried = false;
    let mut cost_usd = 0.0;
    let mut body = loop {
        let outcome = run.run_agent(&unit, step.role(), &attempt).await;
        cost_usd += outcome.cost_usd;
        if outcome.status != AgentStatus::Completed {
            return Ok(Err(Unproduced(ended(&outcome))));
        }
        let body = clean_body(&outcome.summary);
        let problem = if body.trim().is_empty() {
            Some("the answer is empty".to_owned())
        } else {
            artifact::check(&template, &body)
                .err()
                .map(|e| e.to_string())
        };
        let Some(reason) = problem else {
            break body;
        };
        if !retried {
            retried = true;
            attempt = format!(
                "{task}\n\n{}",
                render(RETRY_PROMPT, &[("reason", &reason)]).trim_end()
            );
            continue;
        }
        let finding = format!(
            "{} answered twice with something that is not the {}: {reason}; nothing was written",
            outcome.agent,
            artifact_name(step)
        );
        let escalation = Escalate {
            kind: EscalationKind::Agent,
            title: format!("the {step} step produced no document"),
            finding: finding.clone(),
            choices: vec![Choice::Retry, Choice::Abort],
        };
        run.raise(&unit_key, escalation.title.clone(), &escalation, 0)
            .await
            .map_err(|e| PlanError::Run(e.to_string()))?;
        return Ok(Err(Unproduced(finding)));
    };
    let mut verdict = None;
    let mut capped = false;
    let mut findings = Vec::new();
    if let Some((loaded, f)) = plan_now {
        let said = Readiness::find(&body);
        let high = has_high(&f);
        let v = said.unwrap_or(Readiness::Concerns).capped(high);
        capped = said == Some(Readiness::Pass) && v != Readiness::Pass;
        body.push_str("\n## Cross-Reference Check (computed by the orchestrator)\n\n");
        body.push_str(&findings_markdown(&f));
        body.push_str("\n\n## FR Traceability Matrix (computed by the orchestrator)\n\n");
        body.push_str(&traceability(&loaded));
        body.push_str(&format!(
            "\n## Final Verdict\n\n**Verdict:** {} ({}){}\n",
            v.word(),
            v.alias(),
            if capped {
                format!(
                    " — capped from PASS: {} high-severity finding(s) in the cross-reference check",
                    f.iter().filter(|x| x.severity == Severity::High).count()
                )
            } else if said.is_none() {
                " — the report named no verdict, so none better than CONCERNS is given".to_owned()
            } else {
                String::new()
            }
        ));
        verdict = Some(v);
        findings = f;
    }
    let inputs_yaml: Vec<String> = input_paths.iter().map(|p| yaml_str(p)).collect();
    let mut front = format!(
        "---\nstepsCompleted: {}\nworkflowType: {}\ninputDocuments: [{}]\nstatus: complete\nproject_name: {}\ndate: {}\n",
        steps_completed(step, &found_steps),
        yaml_str(step.workflow_type()),
        inputs_yaml.join(", "),
        yaml_str(&opts.project),
        yaml_str(&opts.date),
    );
    if let Some(v) = verdict {
        front.push_str(&format!("verdict: {}\n", v.word()));
    }
    front.push_str("---\n");
    let text = format!("{front}\n{body}");
    // Refuse to write a document whose frontmatter would not read back.
    Document::parse(&target, text.clone())?;
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    baton_store::atomic::replace_durable(&target, text.as_bytes())
        .map_err(|e| io_err(&target)(e.source))?;
    if step == PlanStep::Epics {
        findings = planning::load(&paths.planning, &paths.root)?
            .check()
            .unwrap_or_default();
    }
    Ok(Ok(StepDone {
        step,
        path: target,
        verdict,
        capped,
        findings,
        sprint: None,
        cost_usd,
    }))
}
