//! The sprint's view of a run, and one story's view of it.
//!
//! [`RunCtx`] is a [`Run`] (agents, workers, journal, clock, events, escalations) plus what only
//! a sprint has: the sprint ledger (sprint file and journal) and the sprint's settings.
//! [`StoryCtx`] is the per-story unit the driver and the stages work through: it loads a story's
//! facts, journals steps and runs agents through the run, carries out moves (with their stage
//! commits), and raises and resolves escalations. Nothing outside these two types and the run
//! touches a file, the journal or git on a story's behalf.

use crate::error::EngineError;
use crate::memory::About;
use crate::protocol::{EventBody, UnitKey};
use crate::run::meter_of;
use crate::run::{Run, Unit, escalate};
use crate::settings::SprintSettings;
use crate::sprint_tools::SharedLedger;
use crate::story_doc;
use crate::workflows::sprint::report::{StageReport, StoryReport};
use baton_agent::outcome::Outcome;
use baton_agent::runner::Mode;
use baton_agent::workspace::Workspace;
use baton_core::actor::Actor;
use baton_core::dispatch::Stage;
use baton_core::status::{Status, StatusValue};
use baton_core::story::{
    Escalate, Move, Rules, StagePlan, StepDetail, StepFact, StepOutcome, StoryFacts,
};
use baton_store::journal::{BoxedStore, EscalationLog, EventFilter, Journal, StepRecord};
use baton_store::ledger::{Ledger, Request};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What every story of a sprint run shares: the [`Run`] (reached through `Deref`), the sprint
/// ledger and the sprint's settings.
pub struct RunCtx {
    /// The run.
    pub run: Arc<Run>,
    /// The sprint ledger.
    pub ledger: SharedLedger,
    /// Settings.
    pub settings: SprintSettings,
    /// Moves of stories in flight at once, committed together.
    pub grouper: crate::group_commit::Grouper,
    /// Whether git ignores the story files, asked once.
    pub story_files_ignored: tokio::sync::OnceCell<bool>,
}

impl std::ops::Deref for RunCtx {
    type Target = Run;

    fn deref(&self) -> &Run {
        &self.run
    }
}

impl RunCtx {
    /// Sends an event about the run as a whole.
    pub fn emit(&self, body: EventBody) {
        self.run.emit_run(body);
    }

    /// Runs `f` on the ledger.
    pub fn with_ledger<T>(
        &self,
        f: impl FnOnce(&mut Ledger<BoxedStore>) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let mut guard = self
            .ledger
            .lock()
            .map_err(|_| EngineError::NoLedger("the ledger lock is poisoned".into()))?;
        match guard.as_mut() {
            Ok(l) => f(l),
            Err(why) => Err(EngineError::NoLedger(why.to_string())),
        }
    }

    /// The effective status of `key`.
    pub fn status(&self, key: &str) -> Result<StatusValue, EngineError> {
        self.with_ledger(|l| {
            l.refresh()?;
            l.doc()
                .sprint()
                .get(key)
                .map(|e| e.effective())
                .ok_or_else(|| EngineError::UnknownKey(key.to_owned()))
        })
    }

    /// A project path relative to the root, for messages and prompts.
    pub fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.settings.root)
            .unwrap_or(p)
            .display()
            .to_string()
    }

    /// The story file of `key`: in the story directory or one of its subfolders, where BMad
    /// projects keep them; where it will be written when there is none yet.
    pub fn story_path(&self, key: &str) -> PathBuf {
        let dir = &self.settings.stories_dir;
        baton_store::story_file::find_indexed(dir, key)
            .unwrap_or_else(|| dir.join(format!("{key}.md")))
    }

    /// Commits what changed with `message` for `key` (`-`: the run's own commit). A failure
    /// is reported and remembered by the run (which then does not end `completed`), and
    /// returned.
    pub async fn commit(&self, key: &str, message: String) -> Result<(), EngineError> {
        let unit = (key != "-").then(|| self.run.unit(UnitKey::Story(key.to_owned())));
        self.run.commit(unit.as_ref(), message).await
    }

    /// Facts of `key`, for [`baton_core::story::decide`], with its story file in the project's
    /// stories folder.
    pub fn facts(&self, key: &str) -> Result<StoryFacts, EngineError> {
        self.facts_at(key, &self.story_path(key), &self.settings.root)
    }

    /// Facts of `key` whose story file is (or will be) `story_path`, in the tree at `root`.
    pub fn facts_at(
        &self,
        key: &str,
        story_path: &Path,
        root: &Path,
    ) -> Result<StoryFacts, EngineError> {
        let (status, events, steps, escalations) = self.with_ledger(|l| {
            l.refresh()?;
            let status = l
                .doc()
                .sprint()
                .get(key)
                .map(|e| e.effective())
                .ok_or_else(|| EngineError::UnknownKey(key.to_owned()))?;
            let events = l.journal().events(&EventFilter {
                key: Some(key.to_owned()),
                ..EventFilter::default()
            })?;
            let steps = l.journal().steps_for_key(key)?;
            let escalations = EscalationLog::escalations_for_key(l.journal(), key, false)?;
            Ok((status, events, steps, escalations))
        })?;
        let mut entered = BTreeMap::new();
        for e in &events {
            if let Some(s) = Status::parse(&e.to) {
                *entered.entry(s).or_insert(0u32) += 1;
            }
        }
        // A move a human made outside any run (`baton set`) after the newest step ended.
        let last_step_at = steps
            .last()
            .map(|s| s.ended_at.as_deref().unwrap_or(&s.started_at))
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        let moved_by_human_since_last_step = last_step_at.is_some_and(|step_at| {
            events.iter().any(|e| {
                e.actor == Actor::Human.as_str()
                    && e.run_id.is_none()
                    && e.at
                        .parse::<jiff::Timestamp>()
                        .is_ok_and(|moved_at| moved_at > step_at)
            })
        });
        let status_reason = events
            .iter()
            .rev()
            .find(|e| Some(e.to.as_str()) == Some(status.as_str()))
            .map(|e| e.reason.clone());
        let setup = &self.setup;
        Ok(StoryFacts {
            key: key.to_owned(),
            status,
            status_reason,
            story_file: story_path
                .strip_prefix(root)
                .unwrap_or(story_path)
                .display()
                .to_string(),
            story_file_exists: story_path.is_file(),
            steps: steps
                .into_iter()
                .filter_map(|s| self.step_fact(s))
                .collect(),
            escalations: escalations.into_iter().map(escalate::fact).collect(),
            entered,
            rules: Rules {
                dispatch: self.settings.dispatch,
                max_review_rounds: self.settings.max_review_rounds,
                min_findings: self.settings.min_findings,
                loop_limit: self.settings.loop_limit,
                confirm_done: setup.mode == Mode::Standard
                    && self.settings.checkpoints.contains(&Status::Done),
            },
            budget_exhausted: match setup.budget.check(Default::default()) {
                baton_core::budget::BudgetState::Exhausted(why) => Some(why),
                _ => None,
            },
            cancelled: setup.cancel.is_cancelled(),
            moved_by_human_since_last_step,
        })
    }

    fn step_fact(&self, s: StepRecord) -> Option<StepFact> {
        // Steps of stages this build does not know (a newer baton) are not this story's facts.
        let stage = Stage::parse(&s.stage)?;
        let detail: StepDetail = s
            .detail
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or_default();
        Some(StepFact {
            id: s.id,
            stage,
            round: s.attempt,
            outcome: s.outcome.as_deref().and_then(StepOutcome::parse),
            this_run: s.run_id == self.run.id,
            detail,
        })
    }
}

/// One story's view of the run.
pub struct StoryCtx {
    /// The run.
    pub run: Arc<RunCtx>,
    /// The story.
    pub key: String,
    /// The story as a unit of the run, with the tree it works in.
    pub unit: Unit,
    /// Its own worktree and branch, when it is worked beside others.
    pub tree: Option<StoryTree>,
    /// What the report says of it.
    pub report: Mutex<StoryReport>,
}

/// The journal step a story's agent works in: its id (the cost ledger's lines name it), and
/// the stage and round the report names it by.
#[derive(Debug, Clone, Copy)]
pub struct InStep<'a> {
    /// The step's id in the journal.
    pub id: i64,
    /// Its stage (`create`, `dev`, `review`, `fix`, `merge`, …).
    pub stage: &'a str,
    /// Its round.
    pub round: u32,
}

/// A story's own worktree and branch, and the lane that merges it into the base.
pub struct StoryTree {
    /// The branch (`baton/<key>`).
    pub branch: String,
    /// The merge lane of the run.
    pub lane: Arc<crate::workflows::sprint::lane::MergeLane>,
    /// The files git ignores that were carried into the worktree, with their content then.
    pub carried: crate::workflows::sprint::carry::Carried,
}

impl StoryCtx {
    /// A context for `key`.
    pub fn new(run: Arc<RunCtx>, key: &str) -> StoryCtx {
        StoryCtx {
            unit: run.unit(UnitKey::Story(key.to_owned())),
            run,
            key: key.to_owned(),
            tree: None,
            report: Mutex::new(StoryReport {
                key: key.to_owned(),
                ..StoryReport::default()
            }),
        }
    }

    /// A context for `key` worked in its own worktree `workspace` on `tree`'s branch.
    pub fn in_tree(
        run: Arc<RunCtx>,
        key: &str,
        workspace: Arc<Workspace>,
        tree: StoryTree,
    ) -> StoryCtx {
        let mut ctx = StoryCtx::new(run, key);
        ctx.unit = Unit::new(ctx.unit.key.clone(), workspace);
        ctx.tree = Some(tree);
        ctx
    }

    /// The story folder in the tree the story works in.
    pub fn stories_dir(&self) -> PathBuf {
        let s = &self.run.settings;
        match s.stories_dir.strip_prefix(&s.root) {
            Ok(rel) if self.tree.is_some() => self.workspace().root().join(rel),
            _ => s.stories_dir.clone(),
        }
    }

    /// The story file, in the tree the story works in.
    pub fn story_path(&self) -> PathBuf {
        if self.tree.is_none() {
            return self.run.story_path(&self.key);
        }
        let dir = self.stories_dir();
        baton_store::story_file::find_indexed(&dir, &self.key)
            .unwrap_or_else(|| dir.join(format!("{}.md", self.key)))
    }

    /// A path in the story's tree relative to its root, for messages and prompts.
    pub fn rel(&self, p: &Path) -> String {
        if self.tree.is_none() {
            return self.run.rel(p);
        }
        p.strip_prefix(self.workspace().root())
            .unwrap_or(p)
            .display()
            .to_string()
    }

    /// The tree the story's agents work in.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.unit.workspace
    }

    /// Sends an event about the story.
    pub fn emit(&self, body: EventBody) {
        self.run.emit_unit(&self.unit.key, body);
    }

    /// The facts [`baton_core::story::decide`] reads.
    pub fn load_facts(&self) -> Result<StoryFacts, EngineError> {
        let facts = self
            .run
            .facts_at(&self.key, &self.story_path(), self.workspace().root())?;
        if let Ok(mut r) = self.report.lock() {
            r.review_rounds = facts.rounds_used();
        }
        Ok(facts)
    }

    /// Journals the start of a step.
    pub fn begin_step(&self, plan: &StagePlan, started_in: Status) -> Result<i64, EngineError> {
        let detail = StepDetail {
            started_in: Some(started_in),
            agent: Some(plan.agent.to_owned()),
            ..StepDetail::default()
        };
        self.run.begin_step(
            &self.unit.key,
            plan.stage.as_str(),
            plan.round,
            serde_json::to_string(&detail).ok(),
        )
    }

    /// Journals how a step ended.
    pub fn end_step(
        &self,
        id: i64,
        outcome: StepOutcome,
        detail: &StepDetail,
    ) -> Result<(), EngineError> {
        self.run
            .end_step(id, outcome, serde_json::to_string(detail).ok())
    }

    /// What a step of kind `stage` of the story is about, for recall: the files its story's File
    /// List names and those changed since the story started, its epic, and its title's words.
    pub async fn about(&self, stage: &str, reviewer: bool) -> About {
        if self.run.run.setup.memory.is_none() {
            return About::default();
        }
        let story = self.story_path();
        let text = story_doc::read(&story).unwrap_or_default();
        let base = story_doc::baseline(&story);
        let mut files = baton_store::story_file::file_list(&text);
        files.extend(story_doc::mentioned_paths(&text));
        if let Ok(changed) = self.workspace().changed_from(base.as_deref()).await {
            files.extend(changed);
        }
        files.sort();
        files.dedup();
        let title = self.key.splitn(3, '-').nth(2).unwrap_or_default();
        About {
            files,
            epic: self.unit.key.epic(),
            stage: stage.to_owned(),
            reviewer,
            words: title.replace('-', " "),
            skip: false,
        }
    }

    /// Stores what `draft`s teach; a memory that fails is reported once and forgotten about.
    pub fn learn(&self, drafts: Vec<baton_core::memory::Draft>) {
        let Some(memory) = &self.run.run.setup.memory else {
            return;
        };
        let now = crate::memory::unix_secs(&self.run.run.clock.now().rfc3339);
        for d in drafts {
            if let Err(e) = memory.learn(d, now) {
                self.run.run.memory_trouble(&e);
                return;
            }
        }
    }

    /// Settles the story's latest code review in the memory: findings of the previous review it
    /// no longer reports become problem–solution memories.
    pub fn review_settled(&self, findings: &[baton_core::verdict::Finding]) {
        let Some(memory) = &self.run.run.setup.memory else {
            return;
        };
        let now = crate::memory::unix_secs(&self.run.run.clock.now().rfc3339);
        if let Err(e) = memory.review_settled(&self.key, findings, now) {
            self.run.run.memory_trouble(&e);
        }
    }

    /// Runs `agent` on `task` in journal step `step` and accounts its usage in the story's
    /// report.
    pub async fn run_agent(&self, step: InStep<'_>, agent: &str, task: &str) -> Outcome {
        let about = self.about("story", false).await;
        self.run_agent_about(step, agent, task, &about).await
    }

    /// [`StoryCtx::run_agent`] with the memories that apply to what the step is `about`.
    pub async fn run_agent_about(
        &self,
        step: InStep<'_>,
        agent: &str,
        task: &str,
        about: &About,
    ) -> Outcome {
        if let Ok(mut r) = self.report.lock() {
            r.agents.push(agent.to_owned());
        }
        let outcome = self
            .run
            .run
            .run_agent_about(&self.unit, Some(step.id), agent, task, about)
            .await;
        if let Ok(mut r) = self.report.lock() {
            let usage = meter_of(&outcome.usage, outcome.cost_usd);
            r.usage.add(usage);
            r.usage_estimated |= outcome.usage_estimated;
            r.stages.push(StageReport {
                stage: step.stage.to_owned(),
                round: step.round,
                agent: outcome.agent.clone(),
                usage,
            });
        }
        outcome
    }

    /// The subject of the story's stage commit `what` (`story(1-2): dev` of `1-2-login`).
    pub fn subject(&self, what: &str) -> String {
        let short = self.key.split('-').take(2).collect::<Vec<_>>().join("-");
        format!("story({short}): {what}")
    }

    /// Commits the story's stage `what` (`story(1-2): dev`). A commit that fails stops the
    /// story: the error reaches the driver, and the story goes to a human with the reason. When
    /// git ignores the story files, a stage that changed only its story file is still recorded,
    /// as an empty commit under its own subject.
    pub async fn commit(&self, what: &str) -> Result<(), EngineError> {
        let ignored = *self
            .run
            .story_files_ignored
            .get_or_init(|| async {
                let story = self.run.story_path(&self.key);
                let rel = self.run.rel(&story);
                self.run
                    .workspace()
                    .git()
                    .run(&["check-ignore", "-q", "--", &rel])
                    .await
                    .is_ok()
            })
            .await;
        self.run
            .run
            .commit_stage(Some(&self.unit), self.subject(what), ignored)
            .await
    }

    /// The branch of the story's own worktree (empty when it works in the main tree).
    pub fn tree_branch(&self) -> String {
        self.tree
            .as_ref()
            .map(|t| t.branch.clone())
            .unwrap_or_default()
    }

    /// A path relative to the project root, for messages.
    pub fn rel_to_project(&self, p: &Path) -> String {
        self.run.rel(p)
    }

    fn request(&self, m: &Move) -> Request {
        Request {
            key: self.key.clone(),
            to: m.to,
            actor: m.actor,
            reason: m.reason.clone(),
            note: None,
            force: m.force,
            run_id: Some(self.run.id.clone()),
        }
    }

    /// Carries out a move. A story in its own worktree that is about to be merged (`done`, or
    /// QA after review) goes through the merge lane first: its story file gets the status the
    /// move will give it, the stage commit is made in the worktree, the lane brings the work into
    /// the base branch, and only then is the move made. When the lane asks a human instead, the
    /// move waits for the answer.
    pub async fn transition(&self, m: &Move) -> Result<(), EngineError> {
        let Some(tree) = &self.tree else {
            return self.apply(m).await;
        };
        if !matches!(m.to, Status::Done | Status::E2eVerify) {
            return self.apply(m).await;
        }
        let story = self.story_path();
        if story.is_file() {
            let req = self.request(m);
            let now = self.run.clock.now();
            let text = self.run.with_ledger(|l| {
                l.refresh()?;
                Ok(l.status_text(&req, &now))
            })?;
            if let Some(text) = text {
                baton_store::story_file::sync_status(&story, &text).map_err(|e| {
                    EngineError::File {
                        path: story.clone(),
                        message: e.to_string(),
                    }
                })?;
                self.workspace().touched(&[&story]);
            }
        }
        if let Some(what) = &m.commit {
            self.commit(what).await?;
        }
        match tree.lane.merge(self).await? {
            crate::workflows::sprint::lane::Merged::Merged => {}
            _ => return Ok(()),
        }
        let mut merged = m.clone();
        merged.commit = None;
        self.apply(&merged).await?;
        if m.to == Status::Done {
            tree.lane.retire(self).await;
        }
        Ok(())
    }

    /// Makes a move: the baseline commit first when development starts, then the durable
    /// transition, then the stage commit that goes with it.
    async fn apply(&self, m: &Move) -> Result<(), EngineError> {
        let story = self.story_path();
        let ws = self.workspace();
        if m.baseline
            && story.is_file()
            && let Some(head) = ws.head().await
        {
            story_doc::set_baseline(&story, &head)?;
            ws.touched(&[&story]);
        }
        let req = self.request(m);
        let applied = self
            .run
            .grouper
            .transition(&self.run.ledger, req, || self.run.clock.now())
            .await?;
        let sprint_file = self.run.with_ledger(|l| Ok(l.doc().path().to_path_buf()))?;
        if applied.is_empty() {
            return Err(EngineError::NoProgress {
                key: self.key.clone(),
                what: format!("the move to {}", m.to),
            });
        }
        ws.touched(&[&sprint_file, &story]);
        for a in applied {
            let (from, _) = StatusValue::parse(&a.from, baton_core::key::classify(&a.key));
            let Some(to) = Status::parse(&a.to) else {
                continue;
            };
            self.emit(EventBody::Transition {
                key: a.key,
                from,
                to,
            });
        }
        if m.commit.is_some() && crate::failpoint::after_move(&self.run.run) {
            return Ok(());
        }
        if let Some(what) = &m.commit {
            self.commit(what).await?;
        }
        Ok(())
    }

    /// Raises an escalation; with a human at the terminal, waits for their answer.
    pub async fn raise(&self, e: &Escalate, facts: &StoryFacts) -> Result<(), EngineError> {
        self.run
            .raise(&self.unit.key, e.title.clone(), e, facts.newest_step_id())
            .await
    }

    /// Carries out an answer's move (if any) and marks the escalation resolved.
    pub async fn resolve(&self, id: i64, then: Option<&Move>) -> Result<(), EngineError> {
        if let Some(m) = then {
            self.transition(m).await?;
        }
        self.run.resolve_escalation(id)
    }
}
