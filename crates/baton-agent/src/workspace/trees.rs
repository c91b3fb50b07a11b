//! Worktrees and branches: the git operations of work that runs in parallel.
//!
//! A story worked beside others gets a [`Workspace`] of its own: a git worktree on a branch of
//! its own, created from the base branch, confined by a sandbox with the project's rules. This
//! module owns everything done to those trees and branches: creating or re-attaching a worktree,
//! listing and pruning them, bringing a branch up to date with the base by rebase (stopping at a
//! conflict with the conflicted files named, continuing or aborting it), fast-forwarding the base,
//! and removing a worktree or a branch only when nothing would be lost (`git worktree remove`
//! without force refuses a tree with uncommitted work, `git branch -d` a branch with unmerged
//! commits). Every call that changes shared metadata holds the repository's one metadata lock
//! ([`Git::run_serial`]), so two stories never race on a ref, the worktree list or an index lock.
//! Nothing here ever resolves a conflict by picking a side, resets over work, or forces a delete.

use super::Workspace;
use super::git::{Git, GitError};
use crate::sandbox::Sandbox;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Identity and settings of baton's own history rewriting: a rebase re-commits the story's
/// commits as baton, never opens an editor, and shows both sides of a conflict with their base.
const REBASE_CONFIG: [&str; 12] = [
    "-c",
    "user.name=baton",
    "-c",
    "user.email=baton@localhost",
    "-c",
    "core.editor=true",
    "-c",
    "merge.conflictStyle=diff3",
    "-c",
    "rebase.autoStash=false",
    "-c",
    "rerere.enabled=false",
];

/// One worktree of the repository, as `git worktree list` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    /// Where it is.
    pub path: PathBuf,
    /// Its branch (short name), if it is on one.
    pub branch: Option<String>,
    /// Its directory is gone (git will prune it).
    pub prunable: bool,
}

/// Where a rebase stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebase {
    /// The branch is on top of the base: nothing to do, or every commit replayed.
    Done,
    /// Stopped at a commit that conflicts: these files (root-relative) hold both sides.
    Conflicts(Vec<String>),
}

fn failed(command: &str, stderr: impl Into<String>) -> GitError {
    GitError::Failed {
        command: command.into(),
        stderr: stderr.into(),
    }
}

/// Whether `name` is a branch name baton may pass to git (no option, no range, no space).
fn check_branch(name: &str) -> Result<(), GitError> {
    if name.is_empty()
        || name.starts_with('-')
        || name.contains("..")
        || name.contains(char::is_whitespace)
        || name.contains(['~', '^', ':', '?', '*', '[', '\\'])
    {
        return Err(failed(
            "worktree",
            format!("`{name}` is not a valid branch name"),
        ));
    }
    Ok(())
}

impl Git {
    /// The repository's worktrees (the main tree first), as `git worktree list` reports them.
    pub async fn worktrees(&self) -> Result<Vec<WorktreeInfo>, GitError> {
        let out = self.run(&["worktree", "list", "--porcelain", "-z"]).await?;
        let mut list = Vec::new();
        let mut cur: Option<WorktreeInfo> = None;
        for field in out.split('\0') {
            if field.is_empty() {
                list.extend(cur.take());
                continue;
            }
            if let Some(p) = field.strip_prefix("worktree ") {
                list.extend(cur.take());
                cur = Some(WorktreeInfo {
                    path: PathBuf::from(p),
                    branch: None,
                    prunable: false,
                });
            } else if let Some(c) = cur.as_mut() {
                if let Some(b) = field.strip_prefix("branch ") {
                    c.branch = Some(b.strip_prefix("refs/heads/").unwrap_or(b).to_owned());
                } else if field.starts_with("prunable") {
                    c.prunable = true;
                }
            }
        }
        list.extend(cur);
        Ok(list)
    }
}

impl Workspace {
    /// A workspace on `branch` in a git worktree at `dir`, confined by a sandbox of the same
    /// rules rooted there: the same deny patterns and every protected path (the sprint file,
    /// `baton.toml`, `.baton/`, BMad's configuration, story statuses) at the same place in the
    /// worktree. A worktree already registered at `dir` on `branch` is re-attached; otherwise
    /// one is added, on the existing branch or on a new one created from HEAD. For a project
    /// below the repository's root (`apps/x`), the worktree holds the whole repository and the
    /// workspace is the project's directory in it (`dir/apps/x`): its commits, paths and
    /// status stay inside the project there, as in the main tree.
    pub async fn worktree(&self, branch: &str, dir: &Path) -> Result<Workspace, GitError> {
        check_branch(branch)?;
        let prefix = self.prefix().await?;
        let registered = self.worktrees().await?.into_iter().find(|w| w.path == dir);
        match registered {
            Some(w) if !w.prunable => {
                if w.branch.as_deref() != Some(branch) && !self.rebasing_in(dir).await {
                    return Err(failed(
                        "worktree",
                        format!(
                            "{} is a worktree of branch `{}`, not `{branch}`",
                            dir.display(),
                            w.branch.as_deref().unwrap_or("(detached)")
                        ),
                    ));
                }
            }
            _ => {
                if registered.is_some() {
                    self.git.run_serial(&["worktree", "prune"], &[]).await?;
                }
                let dir_s = dir.to_string_lossy().into_owned();
                let exists = self.branch_exists(branch).await;
                if exists {
                    self.git
                        .run_serial(&["worktree", "add", &dir_s, branch], &[])
                        .await?;
                } else {
                    self.git
                        .run_serial(&["worktree", "add", "-b", branch, &dir_s], &[])
                        .await?;
                }
            }
        }
        self.tree_at(dir, &prefix)
    }

    /// The workspace of the project's directory `prefix` in the worktree at `dir`, with this
    /// workspace's rules and git settings.
    fn tree_at(&self, dir: &Path, prefix: &str) -> Result<Workspace, GitError> {
        let root = if prefix.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(prefix.trim_end_matches('/'))
        };
        if !root.is_dir() {
            std::fs::create_dir_all(&root).map_err(|e| {
                failed(
                    "worktree",
                    format!("cannot create `{}`: {e}", root.display()),
                )
            })?;
        }
        let deny: Vec<String> = self
            .sandbox
            .deny_patterns()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let sandbox = Sandbox::with_protected(&root, &deny, self.sandbox.protected())
            .map_err(|e| failed("worktree", e.to_string()))?;
        let mut ws = Workspace::with_git(&root, Arc::new(sandbox), self.git.for_tree(&root));
        if let Ok(mut p) = ws.prefix.lock() {
            *p = Some(prefix.to_owned());
        }
        if !prefix.is_empty() {
            ws.tree_top = Some(dir.to_path_buf());
        }
        Ok(ws)
    }

    /// Whether the branch `name` exists.
    pub async fn branch_exists(&self, name: &str) -> bool {
        self.git
            .run(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{name}"),
            ])
            .await
            .is_ok()
    }

    /// The branch HEAD is on (short name), `None` when detached or before the first commit.
    pub async fn current_branch(&self) -> Option<String> {
        self.git
            .run(&["symbolic-ref", "--quiet", "--short", "HEAD"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    }

    /// The branches whose names start with `prefix` (short names, sorted).
    pub async fn branches(&self, prefix: &str) -> Result<Vec<String>, GitError> {
        let pattern = format!("refs/heads/{prefix}");
        let out = self
            .git
            .run(&["for-each-ref", "--format=%(refname:short)", &pattern])
            .await?;
        let mut list: Vec<String> = out.lines().map(str::to_owned).collect();
        list.sort();
        Ok(list)
    }

    /// The repository's worktrees (the main tree first).
    pub async fn worktrees(&self) -> Result<Vec<WorktreeInfo>, GitError> {
        self.git.worktrees().await
    }

    /// Forgets worktrees whose directory is gone (left by a killed run or removed by hand).
    pub async fn prune_worktrees(&self) -> Result<(), GitError> {
        self.git
            .run_serial(&["worktree", "prune"], &[])
            .await
            .map(|_| ())
    }

    /// Removes the worktree at `dir`. git refuses when it holds uncommitted work: nothing is
    /// forced, and the refusal is returned.
    pub async fn remove_worktree(&self, dir: &Path) -> Result<(), GitError> {
        let dir_s = dir.to_string_lossy().into_owned();
        self.git
            .run_serial(&["worktree", "remove", &dir_s], &[])
            .await
            .map(|_| ())
    }

    /// Deletes branch `name` if everything on it is merged into HEAD; `Ok(false)` (and the
    /// branch kept) when it holds unmerged commits.
    pub async fn delete_merged_branch(&self, name: &str) -> Result<bool, GitError> {
        check_branch(name)?;
        match self.git.run_serial(&["branch", "-d", name], &[]).await {
            Ok(_) => Ok(true),
            Err(GitError::Failed { stderr, .. }) if stderr.contains("not fully merged") => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Renames branch `from` to `to` (which must not exist): a branch set aside, never lost.
    pub async fn rename_branch(&self, from: &str, to: &str) -> Result<(), GitError> {
        check_branch(from)?;
        check_branch(to)?;
        self.git
            .run_serial(&["branch", "-m", from, to], &[])
            .await
            .map(|_| ())
    }

    /// Whether commit-ish `a` is an ancestor of (or equal to) `b`.
    pub async fn is_ancestor(&self, a: &str, b: &str) -> bool {
        if a.starts_with('-') || b.starts_with('-') {
            return false;
        }
        self.git
            .run(&["merge-base", "--is-ancestor", a, b])
            .await
            .is_ok()
    }

    /// Fast-forwards HEAD's branch to `branch`; refused (and nothing changed) when that is not
    /// a fast-forward or would overwrite uncommitted work.
    pub async fn fast_forward(&self, branch: &str) -> Result<(), GitError> {
        check_branch(branch)?;
        self.forget();
        self.git
            .run_serial(&["merge", "--ff-only", "--no-edit", branch], &[])
            .await
            .map(|_| ())
    }

    /// Whether a rebase is stopped in this tree.
    pub async fn rebasing(&self) -> bool {
        self.rebasing_in(&self.root).await
    }

    async fn rebasing_in(&self, dir: &Path) -> bool {
        let git = self.git.for_tree(dir);
        for d in ["rebase-merge", "rebase-apply"] {
            if let Ok(p) = git.run(&["rev-parse", "--git-path", d]).await {
                let p = PathBuf::from(p.trim());
                let p = if p.is_absolute() { p } else { dir.join(p) };
                if p.exists() {
                    return true;
                }
            }
        }
        false
    }

    /// Replays this tree's branch on top of `base`. Keeps commits that become empty (their
    /// subjects are the story's history) and stops at the first conflict.
    pub async fn rebase_onto(&self, base: &str) -> Result<Rebase, GitError> {
        check_branch(base)?;
        self.forget();
        let out = self
            .git
            .run_serial(&["rebase", "--empty=keep", base], &REBASE_CONFIG)
            .await;
        self.after_rebase_step(out).await
    }

    /// Stages the resolution of a stopped rebase (the paths git lists as changed or conflicted
    /// under the root, baton's state left out) and continues it.
    pub async fn rebase_continue(&self) -> Result<Rebase, GitError> {
        self.forget();
        let prefix = self.prefix().await?;
        let paths: Vec<String> = self
            .git
            .status(&prefix)
            .await?
            .files
            .into_iter()
            .filter(|f| !super::git::is_baton_state(f))
            .collect();
        {
            let _held = self.git.meta_lock().await;
            self.git.stage_paths(&paths).await?;
        }
        let out = self
            .git
            .run_serial(&["rebase", "--continue"], &REBASE_CONFIG)
            .await;
        self.after_rebase_step(out).await
    }

    /// Gives a stopped rebase up: the branch is back where it was, its commits intact.
    pub async fn rebase_abort(&self) -> Result<(), GitError> {
        self.forget();
        if !self.rebasing().await {
            return Ok(());
        }
        self.git
            .run_serial(&["rebase", "--abort"], &[])
            .await
            .map(|_| ())
    }

    async fn after_rebase_step(&self, out: Result<String, GitError>) -> Result<Rebase, GitError> {
        match out {
            Ok(_) => Ok(Rebase::Done),
            Err(e) => {
                let files = self.conflicted().await?;
                if files.is_empty() || !self.rebasing().await {
                    // Not a conflict: leave nothing half done behind.
                    let _ = self.rebase_abort().await;
                    return Err(e);
                }
                Ok(Rebase::Conflicts(files))
            }
        }
    }

    /// Files with unresolved conflicts, root-relative, sorted.
    pub async fn conflicted(&self) -> Result<Vec<String>, GitError> {
        let out = self
            .git
            .run(&["diff", "--name-only", "--diff-filter=U", "-z", "--relative"])
            .await?;
        let mut files: Vec<String> = out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        files.sort();
        files.dedup();
        Ok(files)
    }

    /// The git runner of the worktree at `dir` (sharing this repository's metadata lock).
    pub fn git_for(&self, dir: &Path) -> Git {
        self.git.for_tree(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn repo() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-qm", "init"]);
        let sandbox = Arc::new(Sandbox::new(dir.path(), &Sandbox::default_deny()).unwrap());
        let ws = Workspace::new(dir.path(), sandbox, Vec::new());
        (dir, ws)
    }

    #[tokio::test]
    async fn a_worktree_is_re_attached_listed_and_removed_only_when_clean() {
        let (dir, ws) = repo();
        let wt_dir = dir.path().join(".baton/worktrees/1-1");
        let wt = ws.worktree("baton/1-1", &wt_dir).await.unwrap();
        assert_eq!(wt.current_branch().await.as_deref(), Some("baton/1-1"));
        // Asking again re-attaches the same tree, with no second `worktree add`.
        let again = ws.worktree("baton/1-1", &wt_dir).await.unwrap();
        assert_eq!(again.root(), wt_dir);
        let list = ws.worktrees().await.unwrap();
        assert_eq!(list.len(), 2, "{list:?}");
        assert_eq!(list[1].branch.as_deref(), Some("baton/1-1"));
        // A different branch at the same place is refused.
        assert!(ws.worktree("baton/other", &wt_dir).await.is_err());
        // Uncommitted work keeps the tree.
        std::fs::write(wt_dir.join("new.txt"), "work\n").unwrap();
        assert!(ws.remove_worktree(&wt_dir).await.is_err());
        assert!(wt_dir.join("new.txt").exists());
        wt.commit_all("work").await.unwrap();
        ws.remove_worktree(&wt_dir).await.unwrap();
        assert!(!wt_dir.exists());
        // Its branch holds an unmerged commit: kept.
        assert!(!ws.delete_merged_branch("baton/1-1").await.unwrap());
        assert!(ws.branch_exists("baton/1-1").await);
        // Once merged, it goes.
        ws.fast_forward("baton/1-1").await.unwrap();
        assert!(ws.delete_merged_branch("baton/1-1").await.unwrap());
        assert!(!ws.branch_exists("baton/1-1").await);
    }

    #[tokio::test]
    async fn a_worktree_whose_directory_vanished_is_pruned_and_added_again() {
        let (dir, ws) = repo();
        let wt_dir = dir.path().join(".baton/worktrees/1-2");
        let wt = ws.worktree("baton/1-2", &wt_dir).await.unwrap();
        std::fs::write(wt_dir.join("b.txt"), "b\n").unwrap();
        wt.commit_all("story work").await.unwrap();
        std::fs::remove_dir_all(&wt_dir).unwrap();
        let back = ws.worktree("baton/1-2", &wt_dir).await.unwrap();
        // The branch's commit is there again.
        assert_eq!(
            std::fs::read_to_string(back.root().join("b.txt")).unwrap(),
            "b\n"
        );
    }

    #[tokio::test]
    async fn a_conflicting_rebase_stops_with_both_sides_and_continues_with_the_same_subject() {
        let (dir, ws) = repo();
        let wt_dir = dir.path().join(".baton/worktrees/2-1");
        let wt = ws.worktree("baton/2-1", &wt_dir).await.unwrap();
        std::fs::write(wt_dir.join("a.txt"), "one\nTWO from the story\nthree\n").unwrap();
        wt.commit_all("story(2-1): dev").await.unwrap();
        // The base moves on the same line.
        std::fs::write(dir.path().join("a.txt"), "one\ntwo from main\nthree\n").unwrap();
        ws.commit_all("story(1-1): dev").await.unwrap();
        let files = match wt.rebase_onto("main").await.unwrap() {
            Rebase::Conflicts(f) => f,
            Rebase::Done => panic!("the rebase did not conflict"),
        };
        assert_eq!(files, ["a.txt"]);
        assert!(wt.rebasing().await);
        let text = std::fs::read_to_string(wt_dir.join("a.txt")).unwrap();
        for side in [
            "two from main",
            "TWO from the story",
            "||||||| ",
            "<<<<<<< ",
            ">>>>>>> ",
        ] {
            assert!(text.contains(side), "{side} missing from\n{text}");
        }
        std::fs::write(
            wt_dir.join("a.txt"),
            "one\ntwo from main, TWO from the story\nthree\n",
        )
        .unwrap();
        assert_eq!(wt.rebase_continue().await.unwrap(), Rebase::Done);
        assert!(!wt.rebasing().await);
        let log = git(&wt_dir, &["log", "--format=%s"]);
        assert_eq!(
            log.lines().collect::<Vec<_>>(),
            ["story(2-1): dev", "story(1-1): dev", "init"]
        );
        ws.fast_forward("baton/2-1").await.unwrap();
        assert!(
            std::fs::read_to_string(dir.path().join("a.txt"))
                .unwrap()
                .contains("TWO from the story")
        );
    }

    #[tokio::test]
    async fn an_aborted_rebase_leaves_the_branch_as_it_was() {
        let (dir, ws) = repo();
        let wt_dir = dir.path().join(".baton/worktrees/2-2");
        let wt = ws.worktree("baton/2-2", &wt_dir).await.unwrap();
        std::fs::write(wt_dir.join("a.txt"), "one\nstory\nthree\n").unwrap();
        wt.commit_all("story(2-2): dev").await.unwrap();
        let before = wt.git().head().await;
        std::fs::write(dir.path().join("a.txt"), "one\nmain\nthree\n").unwrap();
        ws.commit_all("other").await.unwrap();
        assert!(matches!(
            wt.rebase_onto("main").await.unwrap(),
            Rebase::Conflicts(_)
        ));
        wt.rebase_abort().await.unwrap();
        assert_eq!(wt.git().head().await, before);
        assert_eq!(
            wt.current_branch().await.as_deref(),
            Some("baton/2-2"),
            "the branch is checked out again"
        );
        // A base that cannot be fast-forwarded to a diverged branch is left alone.
        assert!(ws.fast_forward("baton/2-2").await.is_err());
        assert!(ws.rebase_onto("--evil").await.is_err());
    }
}
