//! The planning pipeline: from an idea to a checked plan and a `sprint-status.yaml`.
//!
//! The same facts → decision → effect shape as the sprint loop. Facts are the planning
//! documents' frontmatter checkpoints ([`facts`]); the decision is `baton_core::plan::decide`;
//! the effects are the steps below. An agent step gives the role's agent the bundled (or
//! overridden) template, the idea and the previous artifacts as they are on disk now, takes its
//! answer as the document body, and writes the artifact atomically with its frontmatter
//! (`stepsCompleted`, `workflowType`, `inputDocuments`, `status`, `date`). The readiness step also
//! hands the agent the deterministic cross-reference check, appends the check and an FR
//! traceability matrix computed in code, and caps the verdict at CONCERNS when a finding is high.
//! Sprint planning is code only (BMAD-FORMAT.md R5). Because the facts are the files, a run killed
//! at any point resumes at its first incomplete step and never rewrites a complete artifact.

pub mod facts;
pub mod templates;

use crate::prompts::render;
use crate::setup::{Setup, SetupError};
use baton_agent::outcome::{Outcome, Status as AgentStatus};
use baton_core::plan::check::{Finding, Severity, has_high};
use baton_core::plan::docs::ReqKind;
use baton_core::plan::pipeline::{DocState, PlanDecision, PlanStep, Readiness, decide, path};
use baton_core::stamp::Stamp;
use baton_store::frontmatter::{Checkpoints, Document, FrontmatterError};
use baton_store::journal::SqliteJournal;
use baton_store::planning::{self, LoadedPlan, ReadError, shown};
use baton_store::sprint_file::plan::{PlanJournal, PlanReport, plan_sprint, planned_from};
pub use facts::Paths;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const STEP_PROMPT: &str = include_str!("../../prompts/plan_step.md");
const INPUT_PROMPT: &str = include_str!("../../prompts/plan_input.md");
const READINESS_PROMPT: &str = include_str!("../../prompts/plan_readiness.md");
const RESUME_PROMPT: &str = include_str!("../../prompts/plan_resume.md");
const ROUTER_PROMPT: &str = include_str!("../../prompts/plan_router.md");

/// The file under the state directory that remembers the idea and the tier between runs.
pub const STATE_FILE: &str = "plan.json";

/// Why planning could not go on (the files on disk stay valid).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An agent could not be set up.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A file could not be read or written.
    #[error("`{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A document's frontmatter is broken.
    #[error(transparent)]
    Frontmatter(#[from] FrontmatterError),
    /// A planning document could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Sprint planning failed.
    #[error(transparent)]
    Sprint(#[from] baton_store::sprint_file::plan::PlanError),
    /// The saved planning state does not parse.
    #[error("`{path}` is not a planning state baton wrote: {message}; delete it to start over")]
    State {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PlanError + '_ {
    move |source| PlanError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a planning run remembers between invocations (`.baton/plan.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanState {
    /// The idea in the user's words.
    pub idea: String,
    /// The tier in force.
    pub tier: u8,
    /// Why this tier: the suggestion's signals, or that it was given with `--tier`.
    #[serde(default)]
    pub signals: Vec<String>,
}

/// Reads the saved state, if any.
pub fn load_state(state_dir: &Path) -> Result<Option<PlanState>, PlanError> {
    let path = state_dir.join(STATE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&path)(e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| PlanError::State {
            path,
            message: e.to_string(),
        })
}

/// Saves the state atomically.
pub fn save_state(state_dir: &Path, state: &PlanState) -> Result<(), PlanError> {
    let path = state_dir.join(STATE_FILE);
    std::fs::create_dir_all(state_dir).map_err(io_err(state_dir))?;
    let text = serde_json::to_string_pretty(state).map_err(|e| PlanError::State {
        path: path.clone(),
        message: e.to_string(),
    })?;
    baton_store::atomic::replace_durable(&path, text.as_bytes())
        .map(|_| ())
        .map_err(|e| io_err(&path)(e.source))
}

/// How to run.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Where things are.
    pub paths: Paths,
    /// Where `--from` and resumes keep the old artifacts (`.baton/checkpoints`).
    pub checkpoints: PathBuf,
    /// The project's name, for templates and the sprint file.
    pub project: String,
    /// Today, `YYYY-MM-DD`.
    pub date: String,
    /// Now, for `last_updated`.
    pub stamp: Stamp,
    /// The comment header and top-level keys of a new sprint file, ending in
    /// `development_status:`.
    pub sprint_header: String,
    /// Run straight through.
    pub yolo: bool,
    /// Run sprint planning even when the sprint file already names every story.
    pub force_sprint: bool,
    /// The sprint file's lock (one writer at a time).
    pub lock_path: PathBuf,
    /// The journal sprint planning records its changes in, and the run they belong to.
    pub journal: Option<(Arc<Mutex<SqliteJournal>>, String)>,
}

/// One step that ran.
#[derive(Debug, Clone, Serialize)]
pub struct StepDone {
    /// The step.
    pub step: PlanStep,
    /// The artifact written.
    pub path: PathBuf,
    /// The readiness verdict after the check (readiness only).
    pub verdict: Option<Readiness>,
    /// The agent said PASS but a high-severity finding capped it at CONCERNS.
    pub capped: bool,
    /// The cross-reference check after the step (epics and readiness).
    pub findings: Vec<Finding>,
    /// What sprint planning did (sprint planning only).
    pub sprint: Option<PlanReport>,
    /// What the agent cost.
    pub cost_usd: f64,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "end", rename_all = "kebab-case")]
pub enum PlanEnd {
    /// Standard mode: stopped so the user can read and edit.
    Paused {
        /// The step `--continue` runs.
        next: PlanStep,
    },
    /// Every step of the tier is complete.
    Done,
    /// The readiness gate failed at tier 3–4.
    Blocked {
        /// Why.
        reason: String,
    },
    /// A step did not produce its artifact; nothing complete was touched.
    Failed {
        /// The step.
        step: PlanStep,
        /// Why.
        reason: String,
    },
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct PlanRun {
    /// Steps that ran, in order.
    pub ran: Vec<StepDone>,
    /// How it ended.
    pub end: PlanEnd,
}

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
fn steps_list(step: PlanStep) -> String {
    let last = match step {
        PlanStep::Brief | PlanStep::Readiness => 6,
        PlanStep::Architecture => 8,
        PlanStep::Prd => 12,
        _ => 4,
    };
    let v: Vec<String> = (1..=last).map(|n| n.to_string()).collect();
    format!("[{}]", v.join(", "))
}

fn yaml_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `AGENT ended STATUS: REASON`, for an agent that did not complete.
fn ended(outcome: &Outcome) -> String {
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
fn clean_body(answer: &str) -> String {
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

/// Runs agent `name` on `task` on the worker its role names (the native loop, or a coding-agent
/// CLI).
async fn run_agent(setup: &Setup, name: &str, task: String) -> Result<Outcome, PlanError> {
    let (worker, agent) = setup.worker(name)?;
    Ok(worker.run(&baton_agent::worker::Job { agent, task }).await)
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

/// Runs the pipeline until it pauses, blocks, fails or is done.
pub async fn run(
    setup: &Setup,
    opts: &PlanOptions,
    state: &PlanState,
) -> Result<PlanRun, PlanError> {
    let mut ran: Vec<StepDone> = Vec::new();
    let mut force_sprint = opts.force_sprint;
    loop {
        let mut facts = facts::load(&opts.paths, state.tier, opts.yolo, ran.len(), &opts.date);
        if force_sprint {
            facts.docs.retain(|(s, _)| *s != PlanStep::SprintPlanning);
        }
        let (step, resume) = match decide(&facts) {
            PlanDecision::Run { step, resume } => (step, resume),
            PlanDecision::Pause { next } => {
                return Ok(PlanRun {
                    ran,
                    end: PlanEnd::Paused { next },
                });
            }
            PlanDecision::Blocked { reason } => {
                return Ok(PlanRun {
                    ran,
                    end: PlanEnd::Blocked { reason },
                });
            }
            PlanDecision::Done => {
                return Ok(PlanRun {
                    ran,
                    end: PlanEnd::Done,
                });
            }
        };
        let result = if step == PlanStep::SprintPlanning {
            force_sprint = false;
            sprint_step(opts)?
        } else {
            agent_step(setup, opts, state, step, resume).await?
        };
        match result {
            Ok(done) => ran.push(done),
            Err(reason) => {
                return Ok(PlanRun {
                    ran,
                    end: PlanEnd::Failed { step, reason },
                });
            }
        }
        let after = facts::load(&opts.paths, state.tier, true, 0, &opts.date);
        if after.state(step) != DocState::Complete {
            return Ok(PlanRun {
                ran,
                end: PlanEnd::Failed {
                    step,
                    reason: format!(
                        "the {step} step ran but its artifact does not read as complete"
                    ),
                },
            });
        }
    }
}

fn sprint_step(opts: &PlanOptions) -> Result<Result<StepDone, String>, PlanError> {
    let paths = &opts.paths;
    let loaded = planning::load(&paths.planning, &paths.root)?;
    let Some(epics) = &loaded.epics else {
        return Ok(Err("there is no epics document to plan from".to_owned()));
    };
    if epics.epics.is_empty() {
        return Ok(Err(format!(
            "`{}` has no `## Epic N: title` heading; nothing to plan",
            epics.path
        )));
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

async fn agent_step(
    setup: &Setup,
    opts: &PlanOptions,
    state: &PlanState,
    step: PlanStep,
    resume: bool,
) -> Result<Result<StepDone, String>, PlanError> {
    let paths = &opts.paths;
    let docs = planning::find(&paths.planning);
    let target = facts::artifact(paths, &docs, step, &opts.date);
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
    let outcome = run_agent(setup, step.role(), task).await?;
    if outcome.status != AgentStatus::Completed {
        return Ok(Err(ended(&outcome)));
    }
    let mut body = clean_body(&outcome.summary);
    if body.trim().is_empty() {
        return Ok(Err(format!(
            "{} answered with an empty document",
            outcome.agent
        )));
    }
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
        steps_list(step),
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
        cost_usd: outcome.cost_usd,
    }))
}

/// Tools a planning agent keeps: the orchestrator writes the artifact from its answer, so the
/// agent only reads (and may escalate).
pub const PLANNING_TOOLS: &[&str] = &[
    "read_file",
    "list_files",
    "grep",
    "escalate",
    "read_sprint_status",
];

/// Narrows the planning roles' agents (analyst, pm, architect, scrum-master, and the router) to
/// [`PLANNING_TOOLS`], so that answering with the document is a complete run.
pub fn planning_agents(
    agents: &mut std::collections::BTreeMap<String, baton_agent::definition::AgentDef>,
) {
    let roles: Vec<&str> = PlanStep::ALL
        .iter()
        .map(|s| s.role())
        .chain(["bmad-master"])
        .collect();
    for (name, def) in agents.iter_mut() {
        if roles.contains(&name.as_str()) {
            def.tools.retain(|t| PLANNING_TOOLS.contains(&t.as_str()));
        }
    }
}

/// Prepares `--from STEP`: every artifact of the tier's path from `from` on is copied to a
/// checkpoint and removed, so the pipeline produces it again. Returns (artifact, checkpoint).
pub fn redo_from(
    opts: &PlanOptions,
    tier: u8,
    from: PlanStep,
) -> Result<Vec<(PathBuf, PathBuf)>, PlanError> {
    let docs = planning::find(&opts.paths.planning);
    let store = Checkpoints::new(&opts.checkpoints);
    let mut kept = Vec::new();
    for &step in path(tier).iter().skip_while(|s| **s != from) {
        if !step.uses_agent() {
            continue;
        }
        let targets: Vec<PathBuf> = if step == PlanStep::Readiness {
            docs.readiness.clone()
        } else {
            vec![facts::artifact(&opts.paths, &docs, step, &opts.date)]
        };
        for target in targets.into_iter().filter(|t| t.is_file()) {
            let cp = store.save(&target, &format!("before-redo-{}", step.name()))?;
            std::fs::remove_file(&target).map_err(io_err(&target))?;
            kept.push((target, cp.path));
        }
    }
    Ok(kept)
}

/// What the router knows: each step of the tier's path with its checkpoint, and the decision.
#[derive(Debug, Clone, Serialize)]
pub struct RouteView {
    /// The tier.
    pub tier: u8,
    /// Step, artifact (root-relative) and state, in order.
    pub steps: Vec<(PlanStep, String, DocState)>,
    /// What `baton plan --continue` would do first.
    pub next: PlanDecision,
}

/// Reads where the plan stands (no model).
pub fn route(paths: &Paths, tier: u8, date: &str) -> RouteView {
    let facts = facts::load(paths, tier, true, 0, date);
    let docs = planning::find(&paths.planning);
    let steps = path(tier)
        .iter()
        .map(|&s| {
            (
                s,
                shown(&paths.root, &facts::artifact(paths, &docs, s, date)),
                facts.state(s),
            )
        })
        .collect();
    RouteView {
        tier,
        steps,
        next: decide(&facts),
    }
}

/// The router's conversation: the `bmad-master` agent explains the state and the next step the
/// code chose; its answer is returned for display and decides nothing.
pub async fn converse(setup: &Setup, view: &RouteView) -> Result<String, PlanError> {
    let state: Vec<String> = view
        .steps
        .iter()
        .map(|(s, p, d)| {
            let d = match d {
                DocState::Missing => "missing",
                DocState::Started => "started",
                DocState::Complete => "complete",
            };
            format!("- {s}: `{p}` ({d})")
        })
        .collect();
    let next = match &view.next {
        PlanDecision::Run { step, .. } | PlanDecision::Pause { next: step } => {
            format!("run the {step} step (`baton plan --continue`)")
        }
        PlanDecision::Blocked { reason } => format!("blocked: {reason}"),
        PlanDecision::Done => "the plan is complete; build it with `baton sprint`".to_owned(),
    };
    let task = render(
        ROUTER_PROMPT,
        &[
            ("state", &state.join("\n")),
            ("next", &next),
            (
                "commands",
                "`baton plan \"IDEA\"`, `baton plan --continue`, `baton plan --yolo`, `baton plan --from STEP`, `baton check`, `baton sprint-plan`, `baton sprint`",
            ),
        ],
    );
    let outcome = run_agent(setup, "bmad-master", task).await?;
    if outcome.status != AgentStatus::Completed {
        return Ok(format!("(the router could not talk: {})", ended(&outcome)));
    }
    Ok(outcome.summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_lose_fences_and_frontmatter() {
        assert_eq!(clean_body("```markdown\n# T\n\nx\n```"), "# T\n\nx\n");
        assert_eq!(clean_body("---\na: 1\n---\n# T\n"), "# T\n");
        assert_eq!(clean_body("  # T\n"), "# T\n");
    }

    #[test]
    fn state_round_trips_and_a_bad_file_is_named() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(load_state(dir.path()).ok().flatten(), None);
        let s = PlanState {
            idea: "x".into(),
            tier: 2,
            signals: vec!["a".into()],
        };
        save_state(dir.path(), &s).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(load_state(dir.path()).ok().flatten(), Some(s));
        std::fs::write(dir.path().join(STATE_FILE), "{").unwrap_or_else(|e| panic!("{e}"));
        let err = load_state(dir.path()).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("plan.json")));
    }

    #[test]
    fn steps_lists_end_at_bmad_final_steps() {
        assert_eq!(steps_list(PlanStep::Epics), "[1, 2, 3, 4]");
        assert!(steps_list(PlanStep::Architecture).ends_with("8]"));
    }
}
