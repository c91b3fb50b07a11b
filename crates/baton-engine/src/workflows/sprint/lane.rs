//! The merge lane: the one way a story worked in its own worktree reaches the base branch.
//!
//! A story whose review passed joins the lane, and the lane takes stories one at a time. It
//! brings the story's branch up to date with the base by **rebase** (so the story's commits keep
//! their subjects, and the base's history stays a line of stories), runs the project's test
//! command on the result inside the worktree, and only then fast-forwards the base branch. A
//! conflict stops the rebase with both sides (and their common ancestor) written into the
//! conflicted files; the developer resolves them in a **merge fix round**, and the orchestrator,
//! not the agent, continues the rebase once no conflict marker is left, so the resolution lands
//! in the story's own commit. Tests that fail on the updated branch get a merge fix round too,
//! committed as `story(<key>): merge fix round N`. Rounds are journaled as steps of stage
//! `merge` and bounded like fix rounds; when they are used up the rebase is aborted (the branch
//! is exactly as it was) and a human is asked: retry, hand the story over, or set its branch
//! aside. Nothing here picks a side (`-X ours`/`-X theirs`), resets over work, or deletes a
//! branch with unmerged commits.

use crate::checks::{self, TestCommand, TestVerdict};
use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::prompts;
use crate::protocol::{EventBody, MergePhase};
use crate::run::step;
use baton_agent::workspace::{Rebase, Workspace};
use baton_core::escalation::EscalationKind;
use baton_core::story::{Escalate, StepDetail, StepOutcome};
use baton_store::journal::{EscalationLog, Journal};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The stage name merge fix rounds are journaled under.
pub const MERGE_STAGE: &str = "merge";

/// The lane of one run: the base branch, the main tree, and whose turn it is.
pub struct MergeLane {
    base: String,
    main: Arc<Workspace>,
    turn: tokio::sync::Mutex<()>,
    waiting: Mutex<Vec<String>>,
}

/// How a story's turn in the lane ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The base branch now holds the story's work.
    Merged,
    /// A human was asked (the escalation is open, or answered at the terminal).
    Escalated,
    /// The run was cancelled or stopped while the story was in the lane; the branch is as it was.
    Interrupted,
}

/// What a turn found, before the lane is let go.
enum Turn {
    Merged,
    Escalate(Escalate, i64),
    Interrupted,
}

/// The worktree directory of story `key` in the project at `root`.
pub fn tree_dir(root: &Path, key: &str) -> PathBuf {
    root.join(".baton").join("worktrees").join(key)
}

/// The branch of story `key`.
pub fn branch_of(key: &str) -> String {
    format!("baton/{key}")
}

/// Whether `text` still holds a conflict marker line.
fn has_markers(text: &str) -> bool {
    text.lines().any(|l| {
        l.starts_with("<<<<<<< ")
            || l.starts_with(">>>>>>> ")
            || l.starts_with("||||||| ")
            || l == "======="
    })
}

impl MergeLane {
    /// The lane into `base`, whose branch is checked out in the main tree `main`.
    pub fn new(base: String, main: Arc<Workspace>) -> MergeLane {
        MergeLane {
            base,
            main,
            turn: tokio::sync::Mutex::new(()),
            waiting: Mutex::new(Vec::new()),
        }
    }

    /// The base branch.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The stories waiting for their turn, first first.
    pub fn waiting(&self) -> Vec<String> {
        self.waiting.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Holds the lane while work in the main tree (a retrospective) must not meet a merge.
    pub async fn hold(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.turn.lock().await
    }

    /// Takes the story of `ctx` through the lane: waits for its turn, rebases its branch onto
    /// the base (with merge fix rounds for conflicts), runs the tests (with merge fix rounds for
    /// failures), and fast-forwards the base. Escalates when the rounds are used up.
    pub async fn merge(&self, ctx: &StoryCtx) -> Result<Merged, EngineError> {
        let key = ctx.key.clone();
        let ahead = {
            let mut w = self.waiting.lock().map_err(|_| poisoned())?;
            w.push(key.clone());
            w.len() - 1
        };
        self.emit(ctx, MergePhase::Queued, format!("{ahead} ahead"));
        let turn = {
            let _turn = self.turn.lock().await;
            if let Ok(mut w) = self.waiting.lock() {
                w.retain(|k| *k != key);
            }
            self.take_turn(ctx).await
        };
        match turn? {
            Turn::Merged => Ok(Merged::Merged),
            Turn::Interrupted => Ok(Merged::Interrupted),
            // The lane is free before a human is asked: other stories merge meanwhile.
            Turn::Escalate(e, after_step) => {
                self.emit(
                    ctx,
                    MergePhase::Kept,
                    format!("{}: not merged; a human is asked", ctx.tree_branch()),
                );
                ctx.run
                    .raise(&ctx.unit.key, e.title.clone(), &e, after_step)
                    .await?;
                Ok(Merged::Escalated)
            }
        }
    }

    async fn take_turn(&self, ctx: &StoryCtx) -> Result<Turn, EngineError> {
        let ws = ctx.workspace();
        // A rebase a killed run left stopped is given up: the branch is back as it was.
        ws.rebase_abort().await?;
        self.emit(ctx, MergePhase::Rebasing, self.base.clone());
        let mut state = ws.rebase_onto(&self.base).await?;
        while let Rebase::Conflicts(files) = state {
            if let Some(turn) = self.stop_here(ctx, &files.join(", ")).await? {
                ws.rebase_abort().await?;
                return Ok(turn);
            }
            self.emit(ctx, MergePhase::Conflict, files.join(", "));
            let resolved = self.conflict_round(ctx, &files).await?;
            if ctx.run.cancelled() {
                ws.rebase_abort().await?;
                return Ok(Turn::Interrupted);
            }
            state = if resolved {
                ws.rebase_continue().await?
            } else {
                Rebase::Conflicts(files)
            };
        }
        if let Some(argv) = ctx.run.settings.test_command.clone() {
            loop {
                self.emit(ctx, MergePhase::Testing, argv.join(" "));
                let test = TestCommand {
                    argv: argv.clone(),
                    timeout: ctx.run.settings.test_timeout,
                    env_remove: ctx.run.setup.commands.env_remove.clone(),
                };
                let result = checks::run_tests(ws.root(), &test, &ctx.run.setup.cancel).await;
                // The tests may have written anything: git is asked about the whole tree next.
                ws.forget();
                ctx.emit(EventBody::Tests {
                    key: ctx.key.clone(),
                    passed: result.passed(),
                    interrupted: result.verdict == TestVerdict::Interrupted,
                });
                match result.verdict {
                    TestVerdict::Passed => break,
                    TestVerdict::Interrupted => return Ok(Turn::Interrupted),
                    TestVerdict::Failed => {}
                }
                let why = format!(
                    "the tests fail on the branch updated with `{}`:\n{}",
                    self.base, result.output_tail
                );
                if let Some(turn) = self.stop_here(ctx, &why).await? {
                    return Ok(turn);
                }
                self.tests_round(ctx, &result.output_tail).await?;
                if ctx.run.cancelled() {
                    return Ok(Turn::Interrupted);
                }
            }
        }
        self.main.fast_forward(&ctx.tree_branch()).await?;
        self.emit(ctx, MergePhase::Merged, self.base.clone());
        Ok(Turn::Merged)
    }

    /// `Some` when the story must not get another merge fix round now: the run is stopping, or
    /// the rounds are used up (then a human is asked, about `what` went wrong).
    async fn stop_here(&self, ctx: &StoryCtx, what: &str) -> Result<Option<Turn>, EngineError> {
        if ctx.run.cancelled() || ctx.run.budget_exhausted().is_some() {
            return Ok(Some(Turn::Interrupted));
        }
        let (used, last) = self.rounds_used(ctx)?;
        let max = ctx.run.settings.max_review_rounds;
        if used < max {
            return Ok(None);
        }
        let kind = EscalationKind::MergeConflict;
        Ok(Some(Turn::Escalate(
            Escalate {
                kind,
                title: format!("`{}` cannot be merged into `{}`", ctx.key, self.base),
                finding: format!(
                    "{used} merge fix round(s) did not bring branch `{}` onto `{}`: {what}. The \
                     branch and its worktree `{}` are kept as they were.",
                    ctx.tree_branch(),
                    self.base,
                    ctx.rel_to_project(ctx.workspace().tree_dir()),
                ),
                choices: kind.choices().to_vec(),
            },
            last,
        )))
    }

    /// Merge fix rounds used since a human last answered a merge escalation of the story, and
    /// the newest merge step's id.
    fn rounds_used(&self, ctx: &StoryCtx) -> Result<(u32, i64), EngineError> {
        ctx.run.with_ledger(|l| {
            let steps = l.journal().steps_for_key(&ctx.key)?;
            let escalations = EscalationLog::escalations_for_key(l.journal(), &ctx.key, false)?;
            let cut = escalations
                .iter()
                .filter(|e| {
                    e.kind == EscalationKind::MergeConflict.as_str() && e.resolved_at.is_some()
                })
                .map(|e| e.after_step)
                .max()
                .unwrap_or(0);
            let merges: Vec<_> = steps.iter().filter(|s| s.stage == MERGE_STAGE).collect();
            let last = merges.last().map_or(0, |s| s.id);
            let used = merges
                .iter()
                .filter(|s| s.id > cut && s.outcome.is_some())
                .count();
            Ok((u32::try_from(used).unwrap_or(u32::MAX), last))
        })
    }

    /// One merge fix round on conflicted `files`; whether every marker is gone afterwards.
    async fn conflict_round(&self, ctx: &StoryCtx, files: &[String]) -> Result<bool, EngineError> {
        let commit = ctx
            .workspace()
            .git()
            .run(&["log", "-1", "--format=%s", "REBASE_HEAD"])
            .await
            .map(|s| s.trim().to_owned())
            .unwrap_or_default();
        let list: Vec<String> = files.iter().map(|f| format!("- `{f}`")).collect();
        let vars = [
            ("base", self.base.as_str()),
            ("commit", commit.as_str()),
            ("files", &list.join("\n")),
        ];
        let settled = self
            .round(ctx, prompts::MERGE_CONFLICT, &vars, |ctx| {
                let root = ctx.workspace().root().to_path_buf();
                let left: Vec<&String> = files
                    .iter()
                    .filter(|f| {
                        std::fs::read_to_string(root.join(f.as_str()))
                            .map(|t| has_markers(&t))
                            .unwrap_or(false)
                    })
                    .collect();
                if left.is_empty() {
                    None
                } else {
                    Some(format!(
                        "conflict markers are left in {}",
                        left.iter()
                            .map(|f| format!("`{f}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }
            })
            .await?;
        Ok(settled)
    }

    /// One merge fix round for tests failing with `output`; the work is committed.
    async fn tests_round(&self, ctx: &StoryCtx, output: &str) -> Result<(), EngineError> {
        let failing = prompts::render(prompts::FAILING_TESTS, &[("output", output)]);
        let vars = [
            ("base", self.base.as_str()),
            ("failing_tests", failing.as_str()),
        ];
        self.round(ctx, prompts::MERGE_TESTS, &vars, |_| None)
            .await?;
        let (used, _) = self.rounds_used(ctx)?;
        ctx.commit(&format!("merge fix round {used}")).await?;
        Ok(())
    }

    /// Runs the developer on a merge fix round from `template` and journals it as a `merge`
    /// step. `check` says what is still wrong after a completed round (`None`: nothing).
    /// Returns whether the round settled as passed.
    async fn round(
        &self,
        ctx: &StoryCtx,
        template: &str,
        vars: &[(&str, &str)],
        check: impl Fn(&StoryCtx) -> Option<String>,
    ) -> Result<bool, EngineError> {
        let (used, _) = self.rounds_used(ctx)?;
        let round = used + 1;
        let tests_line = ctx
            .run
            .settings
            .test_command
            .as_ref()
            .map(|c| prompts::render(prompts::TESTS_LINE, &[("command", &c.join(" "))]))
            .unwrap_or_default();
        let round_s = round.to_string();
        let story_file = ctx.rel(&ctx.story_path());
        let mut all: Vec<(&str, &str)> = vec![
            ("key", ctx.key.as_str()),
            ("round", round_s.as_str()),
            ("story_file", story_file.as_str()),
            ("tests_line", tests_line.as_str()),
        ];
        all.extend_from_slice(vars);
        let task = prompts::render(template, &all);
        let agent = "developer";
        let detail = StepDetail {
            agent: Some(agent.to_owned()),
            ..StepDetail::default()
        };
        let step = ctx.run.begin_step(
            &ctx.unit.key,
            MERGE_STAGE,
            round,
            serde_json::to_string(&detail).ok(),
        )?;
        let in_step = crate::ctx::InStep {
            id: step,
            stage: MERGE_STAGE,
            round,
        };
        let outcome = ctx.run_agent(in_step, agent, &task).await;
        let (result, reason) = match step::unfinished(&outcome) {
            Some(u) => (u.outcome, Some(u.reason)),
            None => match check(ctx) {
                None => (StepOutcome::Passed, None),
                Some(why) => (StepOutcome::Failed, Some(why)),
            },
        };
        let detail = StepDetail {
            agent: Some(outcome.agent.clone()),
            reason,
            ..StepDetail::default()
        };
        ctx.run
            .end_step(step, result, serde_json::to_string(&detail).ok())?;
        Ok(result == StepOutcome::Passed)
    }

    /// After a merge into the base: brings the story's files git ignores back to the project
    /// ([`super::carry`]), then removes the story's worktree and its (merged) branch. A tree or
    /// branch git will not remove without losing something is kept, and said; so is a tree
    /// holding an ignored file whose copy in the project changed meanwhile.
    pub async fn retire(&self, ctx: &StoryCtx) {
        let dir = ctx.workspace().tree_dir().to_path_buf();
        let branch = ctx.tree_branch();
        let empty = super::carry::Carried::new();
        let carried = ctx.tree.as_ref().map_or(&empty, |t| &t.carried);
        let left = super::carry::carry_out(ctx, carried).await;
        let kept = if !left.is_empty() {
            Some(format!(
                "worktree kept: git ignores {}, which changed both here and in the project",
                left.iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        } else {
            match self.main.remove_worktree(&dir).await {
                Err(e) => Some(format!("worktree kept: {e}")),
                Ok(()) => match self.main.delete_merged_branch(&branch).await {
                    Ok(true) => None,
                    Ok(false) => Some("branch kept: it holds unmerged commits".to_owned()),
                    Err(e) => Some(format!("branch kept: {e}")),
                },
            }
        };
        if let Some(why) = kept {
            self.emit(ctx, MergePhase::Kept, format!("{branch}: {why}"));
        }
        let _ = ctx.run.with_ledger(|l| {
            l.place_story(&ctx.key, None);
            Ok(())
        });
    }

    /// Sets the story's branch aside after a human chose to: the worktree goes (refused, and
    /// said, if it holds uncommitted work), the branch is renamed and never deleted.
    pub async fn set_aside(&self, ctx: &StoryCtx, escalation: i64) -> Result<String, EngineError> {
        let dir = ctx.workspace().tree_dir().to_path_buf();
        let ws = ctx.workspace();
        ws.rebase_abort().await?;
        self.main.remove_worktree(&dir).await?;
        let branch = ctx.tree_branch();
        let aside = format!("{branch}-set-aside-{escalation}");
        self.main.rename_branch(&branch, &aside).await?;
        ctx.run.with_ledger(|l| {
            l.place_story(&ctx.key, None);
            Ok(())
        })?;
        self.emit(ctx, MergePhase::Kept, aside.clone());
        Ok(aside)
    }

    fn emit(&self, ctx: &StoryCtx, phase: MergePhase, detail: String) {
        ctx.emit(EventBody::Merge {
            key: ctx.key.clone(),
            phase,
            detail,
        });
    }
}

fn poisoned() -> EngineError {
    EngineError::NoLedger("the merge lane's lock is poisoned".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_markers_are_whole_lines() {
        assert!(has_markers("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> x\n"));
        assert!(has_markers("a\n=======\n"));
        assert!(!has_markers("a\n======= not a marker\nb <<<<<<< c\n"));
        assert!(!has_markers("# Title\n=====\n"));
    }

    #[test]
    fn a_story_s_tree_and_branch_are_named_after_its_key() {
        assert_eq!(
            tree_dir(Path::new("/p"), "1-2-login"),
            Path::new("/p/.baton/worktrees/1-2-login")
        );
        assert_eq!(branch_of("1-2-login"), "baton/1-2-login");
    }
}
