//! Stories in parallel: up to `[sprint] parallel` stories in flight at once, each in its own
//! git worktree on its own branch, merged into the base through the one [`MergeLane`].
//!
//! The scheduler takes the batch in the order `next` uses and starts a story when a slot is
//! free and its dependencies are merged. A story depends on the stories its file names in
//! `depends_on:` (frontmatter; full or short keys), or, when it names none, on the earlier
//! stories of its epic in this batch. A dependency that ended without being merged (an
//! escalation, a human needed) keeps its dependents from starting; everything else goes on. The
//! orchestrator stays the only writer of the sprint file and the journal, which live in the main
//! tree; each story's file lives in its worktree (the ledger keeps its `Status:` line there) and
//! reaches the base through the lane. A worktree left by a killed run is re-attached (a rebase it
//! left stopped is given up, its branch intact), one whose directory is gone is pruned and added
//! again from its branch, and a merged story's worktree and branch are removed.

use super::lane::{self, MergeLane};
use super::report::{RunEnd, SprintReport};
use super::{budget_exhausted, drive_in_time, hold_retrospectives, record};
use crate::ctx::{RunCtx, StoryCtx, StoryTree};
use crate::error::EngineError;
use crate::protocol::{EventBody, MergePhase};
use crate::story::Ended;
use baton_agent::workspace::git::GitError;
use baton_core::key::{KeyKind, classify};
use baton_core::status::{Status, StatusValue};
use baton_core::story::StoryEnd;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

/// Whether a story may start now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ready {
    /// Its dependencies are merged.
    Go,
    /// A dependency is still being worked in this run.
    Wait,
    /// A dependency will not be merged in this run.
    Never(String),
}

/// A story in flight: its context, and how it ended (or why it could not start).
type Running<'a> = Pin<Box<dyn Future<Output = (Arc<StoryCtx>, Ended)> + Send + 'a>>;

/// Works `keys` with up to `run.settings.parallel` stories in flight. Returns how the run must
/// end when something other than the stories' own ends decides it (paused, stopped, cancelled,
/// timed out, or no base branch).
pub(super) async fn run(
    run: &Arc<RunCtx>,
    keys: &[String],
    deadline: tokio::time::Instant,
    report: &mut SprintReport,
) -> Option<(RunEnd, String)> {
    let main = run.workspace().clone();
    let Some(base) = main.current_branch().await else {
        report.skipped += keys.len();
        return Some((
            RunEnd::Failed,
            "stories in parallel are merged into the current branch, and HEAD is on none \
             (detached, or no commit yet); check out a branch, or run with --parallel 1"
                .to_owned(),
        ));
    };
    if let Err(e) = main.prune_worktrees().await {
        run.emit(EventBody::Notice {
            message: format!("could not prune stale worktrees: {e}"),
        });
    }
    let lane = Arc::new(MergeLane::new(base, main));
    let deps = dependencies(run, keys);
    let slots = run.settings.parallel.max(1);
    let mut pending: Vec<String> = keys.to_vec();
    let mut unmerged: BTreeSet<String> = BTreeSet::new();
    let mut running: FuturesUnordered<Running<'_>> = FuturesUnordered::new();
    let mut stop: Option<(RunEnd, String)> = None;
    let mut paused: Option<(RunEnd, String)> = None;
    loop {
        if stop.is_none() {
            if run.cancelled() {
                stop = Some((RunEnd::Cancelled, "cancelled".into()));
            } else if let Some(why) = budget_exhausted(run) {
                stop = Some((RunEnd::Stopped, why));
            } else if tokio::time::Instant::now() >= deadline {
                stop = Some((RunEnd::Failed, "run timed out".into()));
            }
        }
        if stop.is_none() {
            let mut i = 0;
            while running.len() < slots && i < pending.len() {
                match readiness(run, &pending[i], &deps, &unmerged) {
                    Ready::Wait => i += 1,
                    Ready::Never(why) => {
                        let key = pending.remove(i);
                        let ctx = StoryCtx::new(run.clone(), &key);
                        record(run, &ctx, Ended::Story(StoryEnd::Skipped(why)), report);
                        unmerged.insert(key);
                    }
                    Ready::Go => {
                        let key = pending.remove(i);
                        // Everything a story awaits (its worktree, git, the lane) is awaited
                        // inside its own future: the loop only waits for the next to end, so no
                        // story ever waits on a lock held by one that is not being polled.
                        running.push(Box::pin(work(run.clone(), lane.clone(), key, deadline)));
                    }
                }
            }
        }
        let Some((ctx, ended)) = running.next().await else {
            break;
        };
        let merged = ended == Ended::Story(StoryEnd::Done)
            || run
                .status(&ctx.key)
                .is_ok_and(|s| s == StatusValue::Known(Status::E2eVerify));
        if !merged {
            unmerged.insert(ctx.key.clone());
        }
        match record(run, &ctx, ended, report) {
            Some(p @ (RunEnd::Paused, _)) => {
                paused.get_or_insert(p);
            }
            Some(s) => {
                stop.get_or_insert(s);
            }
            None => {}
        }
    }
    if !pending.is_empty() {
        report.skipped += pending.len();
        if stop.is_none() && paused.is_none() {
            // Only dependencies never merged can leave stories unstarted with nothing stopping.
            return Some((
                RunEnd::Failed,
                format!(
                    "{} not started: {} on stories that did not finish",
                    pending.join(", "),
                    if pending.len() == 1 {
                        "it depends"
                    } else {
                        "they depend"
                    }
                ),
            ));
        }
    }
    stop.or(paused)
}

/// Puts story `key` in its worktree and drives it there under the story and run timeouts; once
/// it is done, holds the retrospectives it made owed (with the lane held: they work in the main
/// tree).
async fn work(
    run: Arc<RunCtx>,
    lane: Arc<MergeLane>,
    key: String,
    deadline: tokio::time::Instant,
) -> (Arc<StoryCtx>, Ended) {
    let ctx = match start(&run, &lane, &key).await {
        Ok(ctx) => ctx,
        Err(why) => {
            let ctx = Arc::new(StoryCtx::new(run, &key));
            return (
                ctx,
                Ended::Story(StoryEnd::NeedsIntervention(why.to_string())),
            );
        }
    };
    let budget = run
        .settings
        .story_timeout
        .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
    let ended = drive_in_time(&ctx, budget).await;
    if ended == Ended::Story(StoryEnd::Done) {
        let _held = lane.hold().await;
        hold_retrospectives(&run).await;
    }
    (ctx, ended)
}

/// Why a story could not be put in its own worktree (it then goes to a human with the reason).
#[derive(Debug, thiserror::Error)]
enum TreeError {
    /// The worktree could not be made or re-attached.
    #[error("its worktree `{}` could not be set up: {source}", dir.display())]
    Worktree {
        /// The worktree's directory.
        dir: PathBuf,
        /// Why.
        source: GitError,
    },
    /// A killed run's rebase could not be given up.
    #[error("its worktree has a stopped rebase that would not abort: {0}")]
    RebaseAbort(GitError),
    /// The ledger could not be told where the story's file lives.
    #[error("{0}")]
    Ledger(EngineError),
    /// What a killed run left in the worktree could not be settled.
    #[error("what a killed run left in its worktree could not be settled: {0}")]
    Settle(EngineError),
}

/// Puts story `key` in its worktree (new, re-attached, or added again from its branch) and
/// tells the ledger where its file lives now.
async fn start(
    run: &Arc<RunCtx>,
    lane: &Arc<MergeLane>,
    key: &str,
) -> Result<Arc<StoryCtx>, TreeError> {
    let dir = lane::tree_dir(&run.settings.root, key);
    let branch = lane::branch_of(key);
    let ws = run
        .workspace()
        .worktree(&branch, &dir)
        .await
        .map_err(|source| TreeError::Worktree {
            dir: dir.clone(),
            source,
        })?;
    // A killed run's rebase, stopped in this tree, is given up: the branch is as it was.
    ws.rebase_abort().await.map_err(TreeError::RebaseAbort)?;
    // Files git ignores (BMad's output folder, say) are not in a worktree made from a commit.
    let carried = super::carry::carry_in(run, &ws).await;
    let ctx = StoryCtx::in_tree(
        run.clone(),
        key,
        Arc::new(ws),
        StoryTree {
            branch: branch.clone(),
            lane: lane.clone(),
            carried,
        },
    );
    let stories = ctx.stories_dir();
    run.with_ledger(|l| {
        l.place_story(key, Some(stories));
        Ok(())
    })
    .map_err(TreeError::Ledger)?;
    super::recovery::settle_tree(&ctx)
        .await
        .map_err(TreeError::Settle)?;
    ctx.emit(EventBody::Merge {
        key: key.to_owned(),
        phase: MergePhase::Worktree,
        detail: branch,
    });
    Ok(Arc::new(ctx))
}

/// Tidies what a killed parallel run left: worktrees whose directory is gone are pruned, and a
/// done story's worktree and (merged) branch are removed. Returns the stories whose branch is
/// still in flight, to be resumed in their worktrees.
pub(super) async fn sweep(run: &RunCtx) -> BTreeSet<String> {
    let main = run.workspace();
    let mut in_flight = BTreeSet::new();
    let Ok(branches) = main.branches("baton/").await else {
        return in_flight;
    };
    if branches.is_empty() {
        return in_flight;
    }
    let _ = main.prune_worktrees().await;
    for branch in branches {
        let Some(key) = branch.strip_prefix("baton/") else {
            continue;
        };
        if key.contains("-set-aside-") {
            continue;
        }
        match run.status(key) {
            Ok(StatusValue::Known(Status::Done)) => {
                let dir = lane::tree_dir(&run.settings.root, key);
                if dir.exists() {
                    let _ = main.remove_worktree(&dir).await;
                }
                let _ = main.delete_merged_branch(&branch).await;
            }
            Ok(_) => {
                in_flight.insert(key.to_owned());
            }
            Err(_) => {}
        }
    }
    in_flight
}

/// Whether `key` may start: every dependency merged (`done`, or past review into QA).
fn readiness(
    run: &RunCtx,
    key: &str,
    deps: &BTreeMap<String, Vec<String>>,
    unmerged: &BTreeSet<String>,
) -> Ready {
    for d in deps.get(key).into_iter().flatten() {
        if unmerged.contains(d) {
            return Ready::Never(format!(
                "it depends on `{d}`, which was not merged in this run"
            ));
        }
        match run.status(d) {
            Ok(StatusValue::Known(Status::Done | Status::E2eVerify)) => {}
            Ok(_) if deps.contains_key(d) => return Ready::Wait,
            Ok(s) => {
                return Ready::Never(format!(
                    "it depends on `{d}`, which is `{s}` and not in this run"
                ));
            }
            Err(_) => {
                return Ready::Never(format!(
                    "it depends on `{d}`, which is not in the sprint file"
                ));
            }
        }
    }
    Ready::Go
}

/// Each story's dependencies: those its story file names, else the earlier stories of its epic
/// in `keys`. Keys named in short form (`1-2`) are matched to the sprint's.
fn dependencies(run: &RunCtx, keys: &[String]) -> BTreeMap<String, Vec<String>> {
    let all: Vec<String> = run
        .with_ledger(|l| {
            Ok(l.doc()
                .sprint()
                .unique()
                .filter(|e| matches!(e.key.kind(), KeyKind::Story { .. }))
                .map(|e| e.key.as_str().to_owned())
                .collect())
        })
        .unwrap_or_default();
    let mut out = BTreeMap::new();
    for (i, key) in keys.iter().enumerate() {
        let named = named_dependencies(&run.story_path(key));
        let deps: Vec<String> = match named {
            Some(names) => names
                .iter()
                .map(|n| {
                    all.iter()
                        .find(|k| *k == n || k.starts_with(&format!("{n}-")))
                        .cloned()
                        .unwrap_or_else(|| n.clone())
                })
                .filter(|d| d != key)
                .collect(),
            None => keys[..i]
                .iter()
                .filter(|k| same_epic(k, key))
                .cloned()
                .collect(),
        };
        out.insert(key.clone(), deps);
    }
    out
}

fn same_epic(a: &str, b: &str) -> bool {
    match (classify(a), classify(b)) {
        (KeyKind::Story { epic: x, .. }, KeyKind::Story { epic: y, .. }) => x == y,
        _ => false,
    }
}

/// The keys a story file names in its frontmatter's `depends_on:` (a flow list `[1-1, 1-2]`, a
/// block list, or one key); `None` when the file or the field is missing.
fn named_dependencies(story: &Path) -> Option<Vec<String>> {
    let text = baton_store::bounded::read_to_string(story, 1 << 20).ok()?;
    let doc = baton_store::frontmatter::Document::parse(story, text).ok()?;
    parse_depends_on(doc.frontmatter()?)
}

fn parse_depends_on(front: &str) -> Option<Vec<String>> {
    let mut lines = front.lines();
    let first = lines.by_ref().find(|l| l.starts_with("depends_on:"))?;
    let value = first["depends_on:".len()..].trim();
    let clean = |s: &str| {
        s.trim()
            .trim_matches(|c| c == '"' || c == '\'')
            .trim()
            .to_owned()
    };
    let items: Vec<String> = if let Some(list) = value.strip_prefix('[') {
        list.trim_end_matches(']')
            .split(',')
            .map(clean)
            .filter(|s| !s.is_empty())
            .collect()
    } else if value.is_empty() || value.starts_with('#') {
        lines
            .map_while(|l| l.trim_start().strip_prefix("- "))
            .map(clean)
            .filter(|s| !s.is_empty())
            .collect()
    } else {
        vec![clean(value)]
    };
    Some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depends_on_is_read_in_every_list_form() {
        assert_eq!(
            parse_depends_on("title: x\ndepends_on: [1-1, '2-3-login']\n"),
            Some(vec!["1-1".to_owned(), "2-3-login".to_owned()])
        );
        assert_eq!(
            parse_depends_on("depends_on:\n  - 1-1\n  - \"1-2\"\nother: y\n"),
            Some(vec!["1-1".to_owned(), "1-2".to_owned()])
        );
        assert_eq!(
            parse_depends_on("depends_on: 3-1\n"),
            Some(vec!["3-1".to_owned()])
        );
        assert_eq!(parse_depends_on("depends_on: []\n"), Some(vec![]));
        assert_eq!(parse_depends_on("title: x\n"), None);
    }

    #[test]
    fn stories_of_one_epic_share_it_and_others_do_not() {
        assert!(same_epic("1-1-a", "1-2-b"));
        assert!(!same_epic("1-1-a", "2-1-b"));
        assert!(!same_epic("epic-1", "1-1-a"));
    }
}
