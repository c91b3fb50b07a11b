//! A workspace: the tree agents work in, the sandbox that confines them, and the one git runner.
//!
//! The engine and the workers see a project (or a story's worktree) only as a [`Workspace`]. It
//! owns the root, the sandbox, the [`git::Git`] runner every git process goes through, and the
//! snapshots from which an agent's changed files are computed (from git, never from the agent's
//! words). Snapshots are cheap: after baton's own commit the tree is known to be clean, so the next
//! snapshot costs no git process, and files baton writes itself are recorded as it writes them
//! ([`Workspace::touched`]). [`Workspace::worktree`] hands out a workspace on a branch of its own
//! for work that runs in parallel.

pub mod git;
mod trees;

pub use trees::{Rebase, WorktreeInfo};

use crate::sandbox::Sandbox;
use git::{Git, GitError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the tree looked like at one instant: HEAD and the content of every changed file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    head: Option<String>,
    dirty: BTreeMap<String, Option<u64>>,
    repo: bool,
}

impl Snapshot {
    /// HEAD at the time (possibly abbreviated when it came from baton's own commit).
    pub fn head(&self) -> Option<&str> {
        self.head.as_deref()
    }

    /// Files that differed from HEAD.
    pub fn dirty(&self) -> impl Iterator<Item = &str> {
        self.dirty.keys().map(String::as_str)
    }
}

/// The tree agents work in.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    sandbox: Arc<Sandbox>,
    git: Git,
    prefix: Mutex<Option<String>>,
    /// The state right after baton's own commit, plus what baton wrote since.
    known: Mutex<Option<Snapshot>>,
}

fn content_hash(path: &Path) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    // Bounded and regular files only: a FIFO an agent left in the tree must not block the run.
    let bytes = baton_store::bounded::read(path, 1 << 30).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    Some(h.finish())
}

/// baton's own state is never an agent's work.
fn is_baton_state(path: &str) -> bool {
    path.starts_with(".baton/") || path.contains(".baton-tmp-")
}

impl Workspace {
    /// A workspace at `root`, confined by `sandbox`, whose git runs without `env_remove`.
    pub fn new(root: &Path, sandbox: Arc<Sandbox>, env_remove: Vec<String>) -> Workspace {
        Workspace::with_git(root, sandbox, Git::new(root, env_remove))
    }

    fn with_git(root: &Path, sandbox: Arc<Sandbox>, git: Git) -> Workspace {
        Workspace {
            root: root.to_path_buf(),
            sandbox,
            git,
            prefix: Mutex::new(None),
            known: Mutex::new(None),
        }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The sandbox.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    /// The git runner.
    pub fn git(&self) -> &Git {
        &self.git
    }

    /// The root's path inside its repository, asked once.
    pub async fn prefix(&self) -> Result<String, GitError> {
        if let Some(p) = self.prefix.lock().ok().and_then(|p| p.clone()) {
            return Ok(p);
        }
        let p = self.git.prefix().await?;
        if let Ok(mut cache) = self.prefix.lock() {
            *cache = Some(p.clone());
        }
        Ok(p)
    }

    /// The current HEAD: known without git right after baton's own commit.
    pub async fn head(&self) -> Option<String> {
        let known = self.known.lock().ok().and_then(|k| k.clone());
        match known.and_then(|k| k.head) {
            Some(h) => Some(h),
            None => self.git.head().await,
        }
    }

    /// The tree now.
    pub async fn snapshot(&self) -> Snapshot {
        if let Some(known) = self.known.lock().ok().and_then(|k| k.clone()) {
            return known;
        }
        let Ok(prefix) = self.prefix().await else {
            return Snapshot::default(); // not a git repository
        };
        let Ok(status) = self.git.status(&prefix).await else {
            return Snapshot::default();
        };
        let dirty = status
            .files
            .into_iter()
            .map(|f| {
                let hash = content_hash(&self.root.join(&f));
                (f, hash)
            })
            .collect();
        Snapshot {
            head: status.head,
            dirty,
            repo: true,
        }
    }

    /// Files changed since `before` (committed or not, reverts included), relative to the root,
    /// baton's own state excluded, sorted.
    pub async fn changed_since(&self, before: &Snapshot) -> Vec<String> {
        if !before.repo {
            return Vec::new();
        }
        // Whatever happens next, the known state is stale.
        self.forget();
        let Ok(prefix) = self.prefix().await else {
            return Vec::new();
        };
        let Ok(now) = self.git.status(&prefix).await else {
            return Vec::new();
        };
        let same_head = match (&before.head, &now.head) {
            (Some(b), Some(n)) => n.starts_with(b.as_str()),
            (None, None) => true,
            _ => false,
        };
        let mut files = now.files;
        if !same_head {
            // The agent committed: what changed since the old HEAD, committed or not.
            if let Ok(committed) = self.diff_names(before.head.as_deref()).await {
                files.extend(committed);
            }
        }
        let mut changed: Vec<String> = files
            .into_iter()
            .filter(|f| match before.dirty.get(f) {
                Some(was) => *was != content_hash(&self.root.join(f)),
                None => true,
            })
            .collect();
        // A file that was dirty before and is clean again was changed too (reverted).
        for (f, was) in &before.dirty {
            if !changed.contains(f) && *was != content_hash(&self.root.join(f)) {
                changed.push(f.clone());
            }
        }
        changed.retain(|f| !is_baton_state(f));
        changed.sort();
        changed.dedup();
        changed
    }

    /// Files that differ from `base` (tracked, committed or not) plus untracked ones, relative
    /// to the root, sorted. `base` `None`: against HEAD.
    pub async fn changed_from(&self, base: Option<&str>) -> Result<Vec<String>, GitError> {
        let snapshot = self.snapshot().await;
        let mut files = match base {
            Some(b) => self.diff_names(Some(b)).await?,
            None => Vec::new(),
        };
        files.extend(snapshot.dirty.into_keys());
        files.retain(|f| !is_baton_state(f));
        files.sort();
        files.dedup();
        Ok(files)
    }

    async fn diff_names(&self, base: Option<&str>) -> Result<Vec<String>, GitError> {
        // Git's empty tree: the base of a repository that had no commit yet.
        let base = base.unwrap_or("4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        if base.starts_with('-') {
            return Ok(Vec::new());
        }
        let out = self
            .git
            .run(&[
                "diff",
                "--no-ext-diff",
                "--name-only",
                "-z",
                "--no-renames",
                "--relative",
                base,
                "--",
            ])
            .await?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Commits every change as baton with `message` (hooks off, baton's state excluded). Returns
    /// the new commit, or `None` when there was nothing to commit.
    pub async fn commit_all(&self, message: &str) -> Result<Option<String>, GitError> {
        self.forget();
        let id = self.git.commit_all(message).await?;
        if let Some(id) = &id
            && let Ok(mut known) = self.known.lock()
        {
            *known = Some(Snapshot {
                head: Some(id.clone()),
                dirty: BTreeMap::new(),
                repo: true,
            });
        }
        Ok(id)
    }

    /// Records that baton itself wrote `paths` (absolute or root-relative), so the next snapshot
    /// does not need git to know them.
    pub fn touched(&self, paths: &[&Path]) {
        let Ok(mut known) = self.known.lock() else {
            return;
        };
        let Some(k) = known.as_mut() else {
            return;
        };
        for p in paths {
            let abs = if p.is_absolute() {
                p.to_path_buf()
            } else {
                self.root.join(p)
            };
            // Outside the tree: nothing to record.
            if let Ok(rel) = abs.strip_prefix(&self.root) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                k.dirty.insert(rel, content_hash(&abs));
            }
        }
    }

    /// Drops what is known without git (someone other than baton may have changed the tree).
    pub fn forget(&self) {
        if let Ok(mut known) = self.known.lock() {
            *known = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        run(&["add", "-A"]);
        run(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ]);
        let sandbox = Arc::new(Sandbox::new(dir.path(), &Sandbox::default_deny()).unwrap());
        let ws = Workspace::new(dir.path(), sandbox, Vec::new());
        (dir, ws)
    }

    #[tokio::test]
    async fn changes_are_seen_from_git_and_a_commit_makes_the_next_snapshot_free() {
        let (dir, ws) = repo();
        let before = ws.snapshot().await;
        std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "new\n").unwrap();
        assert_eq!(ws.changed_since(&before).await, ["a.txt", "b.txt"]);
        assert!(ws.commit_all("work").await.unwrap().is_some());
        let calls = ws.git().calls();
        let clean = ws.snapshot().await;
        assert_eq!(
            ws.git().calls(),
            calls,
            "a snapshot after baton's commit ran git"
        );
        assert_eq!(clean.dirty().count(), 0);
        // A file baton writes itself is known without git, and is not an agent's change.
        std::fs::write(dir.path().join("story.md"), "x\n").unwrap();
        ws.touched(&[Path::new("story.md")]);
        let before = ws.snapshot().await;
        std::fs::write(dir.path().join("c.txt"), "agent\n").unwrap();
        assert_eq!(ws.changed_since(&before).await, ["c.txt"]);
    }

    #[tokio::test]
    async fn a_worktree_is_a_workspace_on_its_own_branch() {
        let (dir, ws) = repo();
        let wt_dir = dir.path().join(".baton/worktrees/1-1");
        let wt = ws.worktree("story/1-1", &wt_dir).await.unwrap();
        assert_eq!(wt.root(), wt_dir);
        assert_eq!(wt.head().await, ws.head().await);
        std::fs::write(wt_dir.join("story.txt"), "in the worktree\n").unwrap();
        assert!(wt.commit_all("story work").await.unwrap().is_some());
        let branch = wt
            .git()
            .run(&["rev-parse", "--abbrev-ref", "HEAD"])
            .await
            .unwrap();
        assert_eq!(branch.trim(), "story/1-1");
        // The main tree is untouched, and its sandbox rules apply in the worktree.
        assert!(!dir.path().join("story.txt").exists());
        assert!(
            wt.sandbox()
                .resolve("../x", crate::sandbox::Access::Write)
                .is_err()
        );
        assert!(ws.worktree("--evil", &dir.path().join("x")).await.is_err());
    }

    #[tokio::test]
    async fn a_worktree_keeps_every_protected_path_of_its_project() {
        let (dir, _) = repo();
        let root = dir.path();
        // A project whose sprint file and stories are where BMad's defaults are not.
        let rules = crate::protect::Protected {
            sprint_files: vec![root.join("plan/status.yaml")],
            config_files: vec![root.join("baton.toml")],
            state_dirs: vec![root.join(".baton")],
            globs: vec!["_bmad/**/config.yaml".into()],
            story_dirs: vec![root.join("plan/stories")],
            new_story_statuses: vec!["ready-for-dev".into()],
        };
        let sandbox = Arc::new(Sandbox::with_protected(root, &[], &rules).unwrap());
        let ws = Workspace::new(root, sandbox, Vec::new());
        let wt_dir = root.join(".baton/worktrees/1-2");
        let wt = ws.worktree("baton/1-2", &wt_dir).await.unwrap();
        let write = |p: &str| wt.sandbox().resolve(p, crate::sandbox::Access::Write);
        for p in [
            "plan/status.yaml",
            "baton.toml",
            ".baton/baton.db",
            "_bmad/bmm/config.yaml",
        ] {
            assert!(write(p).is_err(), "{p} is writable in the worktree");
        }
        assert!(write("src/lib.rs").is_ok());
        // A story file may be edited, but not its status.
        std::fs::create_dir_all(wt_dir.join("plan/stories")).unwrap();
        std::fs::write(
            wt_dir.join("plan/stories/1-2-x.md"),
            "# S\n\nStatus: in-progress\n",
        )
        .unwrap();
        assert!(
            wt.sandbox()
                .check_content(
                    &wt.sandbox().root().join("plan/stories/1-2-x.md"),
                    Some("# S\n\nStatus: in-progress\n"),
                    "# S\n\nStatus: done\n"
                )
                .is_err(),
            "a story status can be changed in the worktree"
        );
    }
}
