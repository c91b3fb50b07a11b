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

mod artifact;
pub mod facts;
mod route;
mod steps;
pub mod templates;

pub use route::{PLANNING_TOOLS, RouteView, converse, planning_agents, redo_from, route};
pub use steps::{findings_markdown, traceability};

use crate::error::EngineError;
use crate::protocol::{EventBody, UnitKey};
use crate::run::{JournalHandle, Run};
use crate::setup::SetupError;
use crate::workflow::{Ending, Workflow};
use baton_core::plan::check::Finding;
use baton_core::plan::pipeline::{DocState, PlanDecision, PlanStep, Readiness, decide};
use baton_core::stamp::Stamp;
use baton_store::frontmatter::FrontmatterError;
use baton_store::journal::Store;
use baton_store::planning::{ReadError, shown};
use baton_store::sprint_file::plan::PlanReport;
pub use facts::Paths;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub(crate) const STEP_PROMPT: &str = include_str!("../../prompts/plan_step.md");
pub(crate) const INPUT_PROMPT: &str = include_str!("../../prompts/plan_input.md");
pub(crate) const READINESS_PROMPT: &str = include_str!("../../prompts/plan_readiness.md");
pub(crate) const RESUME_PROMPT: &str = include_str!("../../prompts/plan_resume.md");
pub(crate) const ROUTER_PROMPT: &str = include_str!("../../prompts/plan_router.md");
pub(crate) const RETRY_PROMPT: &str = include_str!("../../prompts/plan_retry.md");

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
    /// The run's journal failed.
    #[error("the journal: {0}")]
    Run(String),
    /// The saved planning state does not parse.
    #[error("`{path}` is not a planning state baton wrote: {message}; delete it to start over")]
    State {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PlanError + '_ {
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
#[derive(Clone)]
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
    pub journal: Option<(Arc<Mutex<dyn Store>>, String)>,
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

/// The planning workflow: the options and the idea and tier in force; the run supplies the
/// agents, their workers, the journal and the events.
pub struct Planning {
    /// How to run.
    pub opts: PlanOptions,
    /// The idea and the tier.
    pub state: PlanState,
}

impl Workflow for Planning {
    type Report = Result<PlanRun, PlanError>;

    /// Planning needs no repository and keeps no uncommitted work of its own; CLIs a killed
    /// baton left running are ended.
    async fn preflight(&self, run: &Arc<Run>) -> Result<Vec<String>, EngineError> {
        Ok(run.end_orphaned_workers().await)
    }

    /// Runs the pipeline until it pauses, blocks, fails or is done.
    async fn run(mut self, run: Arc<Run>) -> Result<PlanRun, PlanError> {
        if let JournalHandle::Own(journal) = &run.journal {
            self.opts.journal = Some((journal.clone(), run.id.clone()));
        }
        pipeline(&run, &self.opts, &self.state).await
    }

    fn ending(result: &Result<PlanRun, PlanError>, run: &Run) -> Ending {
        match result {
            _ if run.cancelled() => Ending::new("cancelled", "interrupted"),
            Ok(r) => match &r.end {
                PlanEnd::Done => Ending::new("completed", ""),
                PlanEnd::Paused { next } => Ending::new("paused", format!("before {next}")),
                PlanEnd::Blocked { reason } => Ending::new("failed", reason.clone()),
                PlanEnd::Failed { step, reason } => {
                    Ending::new("failed", format!("{step}: {reason}"))
                }
            },
            Err(e) => Ending::new("failed", e.to_string()),
        }
    }
}

/// Runs the pipeline until it pauses, blocks, fails or is done.
async fn pipeline(
    run: &Arc<Run>,
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
        let end = match decide(&facts) {
            PlanDecision::Run { step, resume } => {
                match one_step(run, opts, state, step, resume, &mut force_sprint).await? {
                    Ok(done) => {
                        ran.push(done);
                        continue;
                    }
                    Err(end) => end,
                }
            }
            PlanDecision::Pause { next } => PlanEnd::Paused { next },
            PlanDecision::Blocked { reason } => PlanEnd::Blocked { reason },
            PlanDecision::Done => PlanEnd::Done,
        };
        return Ok(PlanRun { ran, end });
    }
}

/// Runs `step` and checks its artifact reads complete; `Err(end)` when it did not produce one.
async fn one_step(
    run: &Arc<Run>,
    opts: &PlanOptions,
    state: &PlanState,
    step: PlanStep,
    resume: bool,
    force_sprint: &mut bool,
) -> Result<Result<StepDone, PlanEnd>, PlanError> {
    let unit = UnitKey::PlanStep(step.name().to_owned());
    run.emit_unit(
        &unit,
        EventBody::PlanStep {
            step: step.name().to_owned(),
            agent: step.uses_agent().then(|| step.role().to_owned()),
        },
    );
    let result = if step == PlanStep::SprintPlanning {
        *force_sprint = false;
        steps::sprint_step(opts)?
    } else {
        steps::agent_step(run, opts, state, step, resume).await?
    };
    let ended = |ok: bool, detail: String| {
        run.emit_unit(
            &unit,
            EventBody::PlanStepEnded {
                step: step.name().to_owned(),
                ok,
                detail,
            },
        );
    };
    let done = match result {
        Ok(done) => done,
        Err(steps::Unproduced(reason)) => {
            ended(false, reason.clone());
            return Ok(Err(PlanEnd::Failed { step, reason }));
        }
    };
    let after = facts::load(&opts.paths, state.tier, true, 0, &opts.date);
    if after.state(step) != DocState::Complete {
        let reason = format!("the {step} step ran but its artifact does not read as complete");
        ended(false, reason.clone());
        return Ok(Err(PlanEnd::Failed { step, reason }));
    }
    ended(true, shown(&opts.paths.root, &done.path));
    Ok(Ok(done))
}

#[cfg(test)]
mod tests {
    use super::steps::{clean_body, steps_completed, steps_list};
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
    fn a_list_of_step_files_stays_a_list_of_step_files() {
        use baton_store::frontmatter::StepRef;
        let found = [
            StepRef::Name("step-01-init.md".into()),
            StepRef::Name("step-02-discovery.md".into()),
        ];
        assert_eq!(
            steps_completed(PlanStep::Prd, &found),
            "['step-01-init.md', 'step-02-discovery.md', 'step-12-complete.md']"
        );
        assert_eq!(
            steps_completed(PlanStep::Epics, &[StepRef::Int(1), StepRef::Int(2)]),
            "[1, 2, 3, 4]"
        );
    }

    #[test]
    fn steps_lists_end_at_bmad_final_steps() {
        assert_eq!(steps_list(PlanStep::Epics), "[1, 2, 3, 4]");
        assert!(steps_list(PlanStep::Architecture).ends_with("8]"));
    }
}
