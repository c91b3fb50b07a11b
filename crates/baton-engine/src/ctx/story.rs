//! What a story does through its context: where its files are, journaling its steps, recalling
//! and storing memories, running its agents and committing its stages.

use super::{InStep, RunCtx, StoryCtx, StoryTree};
use crate::error::EngineError;
use crate::memory::About;
use crate::protocol::{EventBody, UnitKey};
use crate::run::Unit;
use crate::run::meter_of;
use crate::story_doc;
use crate::workflows::sprint::report::{StageReport, StoryReport};
use baton_agent::outcome::Outcome;
use baton_agent::workspace::Workspace;
use baton_core::status::Status;
use baton_core::story::{StagePlan, StepDetail, StepOutcome, StoryFacts};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
}
