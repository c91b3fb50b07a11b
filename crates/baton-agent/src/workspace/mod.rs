//! A workspace: the tree agents work in, the sandbox that confines them, and the one git runner.
//!
//! The engine and the workers see a project (or a story's worktree) only as a [`Workspace`]. It
//! owns the root, the sandbox, the [`git::Git`] runner every git process goes through, and the
//! snapshots from which an agent's changed files are computed (from git, never from the agent's
//! words). Snapshots are cheap: after baton's own commit the tree is known to be clean, so the next
//! snapshot costs no git process, and files baton writes itself are recorded as it writes them
//! ([`Workspace::touched`]). [`Workspace::worktree`] hands out a workspace on a branch of its own
//! for work that runs in parallel.

mod commit;
pub mod git;
mod trees;

pub use trees::{Rebase, WorktreeInfo};

use crate::sandbox::Sandbox;
use git::{Git, GitError};
use std::collections::{BTreeMap, BTreeSet};
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
    /// The user's own uncommitted changes when the run started (root-relative paths and their
    /// content): never staged, never counted as an agent's work.
    kept: Mutex<BTreeMap<String, Option<u64>>>,
    /// The top of the git worktree this workspace was handed out in ([`Workspace::worktree`]),
    /// when the project is below the repository's root: `root` is then a directory in it.
    tree_top: Option<PathBuf>,
}

/// A file's content as a number: the first eight bytes of its SHA-256, so it is the same in
/// every build (a run that is killed and resumed by another baton compares equal hashes).
pub fn content_hash(path: &Path) -> Option<u64> {
    use sha2::{Digest, Sha256};
    // Bounded and regular files only: a FIFO an agent left in the tree must not block the run.
    let bytes = baton_store::bounded::read(path, 1 << 30).ok()?;
    let digest = Sha256::digest(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    Some(u64::from_be_bytes(first))
}

use git::is_baton_state;

/// Most files a look at part of the tree names; beyond, the whole tree is looked at.
const LOOK_LIMIT: usize = 256;

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
            kept: Mutex::new(BTreeMap::new()),
            tree_top: None,
        }
    }

    /// The directory of the git worktree this workspace works in: its root, or (a project
    /// below the repository's root) the worktree's top, which holds it.
    pub fn tree_dir(&self) -> &Path {
        self.tree_top.as_deref().unwrap_or(&self.root)
    }

    /// Keeps the user's own uncommitted changes to `paths` (root-relative) out of every commit
    /// and out of every agent's changed files, as they are now. Returns them with their
    /// content hashes, to be remembered across a killed run ([`Workspace::keep_as`]).
    pub fn keep_user_changes(&self, paths: &[String]) -> Vec<(String, Option<u64>)> {
        let entries: Vec<(String, Option<u64>)> = paths
            .iter()
            .map(|p| (p.clone(), content_hash(&self.root.join(p))))
            .collect();
        self.keep_as(&entries);
        entries
    }

    /// Keeps the user's changes recorded earlier (paths and the content they had then).
    pub fn keep_as(&self, entries: &[(String, Option<u64>)]) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.extend(entries.iter().cloned());
        }
    }

    /// The user's own changes kept out of commits, as recorded.
    pub fn kept(&self) -> Vec<(String, Option<u64>)> {
        self.kept
            .lock()
            .map(|k| k.iter().map(|(p, h)| (p.clone(), *h)).collect())
            .unwrap_or_default()
    }

    /// Whether `path` is one of the user's kept changes, still as it was.
    fn is_kept_unchanged(&self, path: &str) -> bool {
        let Ok(kept) = self.kept.lock() else {
            return false;
        };
        kept.get(path)
            .is_some_and(|was| *was == content_hash(&self.root.join(path)))
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
        let snapshot = Snapshot {
            head: status.head,
            dirty,
            repo: true,
        };
        // The tree as git just saw it: known until something other than baton may change it.
        if let Ok(mut known) = self.known.lock() {
            *known = Some(snapshot.clone());
        }
        snapshot
    }

    /// Files changed since `before` (committed or not, reverts included), relative to the root,
    /// baton's own state excluded, sorted. Asks git about the whole tree (the project's
    /// directory): anything may have changed.
    pub async fn changed_since(&self, before: &Snapshot) -> Vec<String> {
        self.changed_within(before, None).await
    }

    /// [`Workspace::changed_since`] when the only writes since `before` were to `written`
    /// (root-relative: an agent that used only tools confined to the files they name). git is
    /// asked about those files and the ones dirty before, not about the whole tree, so the cost
    /// grows with what the agent touched, not with the repository.
    pub async fn changed_since_writes(
        &self,
        before: &Snapshot,
        written: &BTreeSet<String>,
    ) -> Vec<String> {
        self.changed_within(before, Some(written)).await
    }

    async fn changed_within(
        &self,
        before: &Snapshot,
        written: Option<&BTreeSet<String>>,
    ) -> Vec<String> {
        if !before.repo {
            return Vec::new();
        }
        // Whatever happens next, the known state is stale.
        self.forget();
        let Ok(prefix) = self.prefix().await else {
            return Vec::new();
        };
        // The files to look at: those written and those dirty before (a revert makes one clean).
        let look: Option<Vec<String>> = written
            .map(|w| {
                let mut all: BTreeSet<String> = w.clone();
                all.extend(before.dirty.keys().cloned());
                all.into_iter().collect::<Vec<String>>()
            })
            .filter(|all| all.len() <= LOOK_LIMIT);
        let now = match &look {
            // Nothing written and nothing dirty before: nothing can have changed.
            Some(paths) if paths.is_empty() => Ok(git::Status {
                head: before.head.clone(),
                ..git::Status::default()
            }),
            Some(paths) => self.git.status_of(&prefix, paths).await,
            None => self.git.status(&prefix).await,
        };
        let Ok(now) = now else {
            return Vec::new();
        };
        let same_head = match (&before.head, &now.head) {
            (Some(b), Some(n)) => n.starts_with(b.as_str()) || b.starts_with(n.as_str()),
            (None, None) => true,
            _ => false,
        };
        if !same_head && look.is_some() {
            // HEAD moved though no tool could move it (a hook, a person): look at everything.
            return Box::pin(self.changed_within(before, None)).await;
        }
        let dirty_now: BTreeMap<String, Option<u64>> = now
            .files
            .iter()
            .map(|f| (f.clone(), content_hash(&self.root.join(f))))
            .collect();
        let mut files = now.files;
        if !same_head {
            // The agent committed: what changed since the old HEAD, committed or not.
            if let Ok(committed) = self
                .diff_names(before.head.as_deref(), now.head.as_deref())
                .await
            {
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
        // What git just said is the tree as it is: the next commit need not ask about the rest.
        if let Ok(mut known) = self.known.lock() {
            *known = Some(Snapshot {
                head: now.head,
                dirty: dirty_now,
                repo: true,
            });
        }
        changed
    }

    /// Files that differ from `base` (tracked, committed or not) plus untracked ones, relative
    /// to the root, sorted. `base` `None`: against HEAD.
    pub async fn changed_from(&self, base: Option<&str>) -> Result<Vec<String>, GitError> {
        let snapshot = self.snapshot().await;
        let mut files = match base {
            Some(b) => self.diff_names(Some(b), snapshot.head.as_deref()).await?,
            None => Vec::new(),
        };
        files.extend(
            snapshot
                .dirty
                .into_keys()
                .filter(|f| !self.is_kept_unchanged(f)),
        );
        files.retain(|f| !is_baton_state(f));
        files.sort();
        files.dedup();
        Ok(files)
    }

    /// Files that differ between the commits `base` and `head` (`None`: git's empty tree, and
    /// HEAD), root-relative: trees compared with trees, so the work tree is never scanned (its
    /// own changes come from the snapshot).
    async fn diff_names(
        &self,
        base: Option<&str>,
        head: Option<&str>,
    ) -> Result<Vec<String>, GitError> {
        // Git's empty tree: the base of a repository that had no commit yet.
        let base = base.unwrap_or("4b825dc642cb6eb9a060e54bf8d69288fbee4904");
        let head = head.unwrap_or("HEAD");
        if base.starts_with('-') || head.starts_with('-') {
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
                head,
                "--",
                ".",
            ])
            .await?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Commits what changed in the tree as baton with `message` (hooks off): every path git's
    /// status lists under the root, except baton's own state and the user's kept changes
    /// ([`Workspace::keep_user_changes`]), which stay as they are, uncommitted. A kept change
    /// that is no longer what the user left is refused ([`GitError::TouchesUserChanges`]): the
    /// stage touched the user's work. Returns the new commit, or `None` when there was nothing
    /// to commit.
    pub async fn commit_all(&self, message: &str) -> Result<Option<String>, GitError> {
        self.commit(message, false).await
    }

    /// [`Workspace::commit_all`]; with `allow_empty`, the commit is made even when git lists
    /// nothing to stage (a stage whose work git ignores).
    pub async fn commit(
        &self,
        message: &str,
        allow_empty: bool,
    ) -> Result<Option<String>, GitError> {
        let known = self.known.lock().ok().and_then(|mut k| k.take());
        let known_head = known.as_ref().and_then(|k| k.head.clone());
        let prefix = self.prefix().await?;
        // Known since git last looked (and baton wrote since): only those files can be dirty,
        // besides the user's kept ones (what they staged must stay out of the commit).
        let kept_paths: Vec<String> = self
            .kept
            .lock()
            .map(|k| k.keys().cloned().collect())
            .unwrap_or_default();
        let candidates: Option<Vec<String>> = known
            .map(|k| {
                let mut all: BTreeSet<String> = k.dirty.into_keys().collect();
                all.extend(kept_paths);
                all.into_iter().filter(|f| !is_baton_state(f)).collect()
            })
            .filter(|c: &Vec<String>| c.len() <= LOOK_LIMIT);
        let status = match &candidates {
            Some(c) if c.is_empty() => git::Status::default(),
            Some(c) => self.git.status_of(&prefix, c).await?,
            None => self.git.status(&prefix).await?,
        };
        let mut paths = Vec::new();
        let mut left: BTreeMap<String, Option<u64>> = BTreeMap::new();
        let mut touched = Vec::new();
        {
            let kept = self.kept.lock().map(|k| k.clone()).unwrap_or_default();
            for f in status.files {
                if is_baton_state(&f) {
                    continue;
                }
                match kept.get(&f) {
                    Some(was) => {
                        let now = content_hash(&self.root.join(&f));
                        if now != *was {
                            touched.push(f.clone());
                        }
                        left.insert(f, now);
                    }
                    None => paths.push(f),
                }
            }
        }
        if !touched.is_empty() {
            return Err(GitError::TouchesUserChanges(touched));
        }
        // Changes the user staged before the run stay staged, outside the commit.
        let only = status.staged.iter().any(|f| !paths.contains(f));
        let id = if allow_empty {
            self.git
                .commit_paths_or_empty(&paths, message, only)
                .await?
        } else {
            self.git.commit_paths(&paths, message, only).await?
        };
        // The tree is now what was left out of the commit, and HEAD the new commit.
        let head = id.clone().or(status.head).or(known_head);
        if head.is_some()
            && let Ok(mut known) = self.known.lock()
        {
            *known = Some(Snapshot {
                head,
                dirty: left,
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

    fn committed(dir: &Path) -> Vec<String> {
        git(dir, &["show", "--name-only", "--format=", "-z", "HEAD"])
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    }

    #[tokio::test]
    async fn a_commit_stages_what_git_lists_whatever_ignores_baton_and_names_are_odd() {
        let (dir, ws) = repo();
        let root = dir.path();
        // `.baton` ignored by the root `.gitignore`, as users write it on day one.
        std::fs::write(
            root.join(".gitignore"),
            ".baton/\n/.baton\n.baton\nbuild/\n",
        )
        .unwrap();
        git(root, &["add", ".gitignore"]);
        git(root, &["commit", "-qm", "ignore"]);
        std::fs::create_dir_all(root.join(".baton/runs")).unwrap();
        std::fs::write(root.join(".baton/runs/x.jsonl"), "{}\n").unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::write(root.join("build/out.o"), "obj").unwrap();
        std::fs::create_dir_all(root.join("dir with space/über")).unwrap();
        std::fs::write(root.join("dir with space/über/naïve *.txt"), "x\n").unwrap();
        std::fs::write(root.join(":(exclude)odd"), "y\n").unwrap();
        std::fs::remove_file(root.join("a.txt")).unwrap();
        let id = ws.commit_all("stage").await.unwrap();
        assert!(id.is_some());
        assert_eq!(
            committed(root),
            [":(exclude)odd", "a.txt", "dir with space/über/naïve *.txt"]
        );
        assert_eq!(ws.commit_all("again").await.unwrap(), None);
    }

    #[tokio::test]
    async fn the_users_own_changes_stay_out_of_every_commit_and_in_place() {
        let (dir, ws) = repo();
        let root = dir.path();
        std::fs::write(root.join("README.md"), "mine\n").unwrap();
        git(root, &["add", "README.md"]);
        git(root, &["commit", "-qm", "readme"]);
        // Before the run: a modified file, a staged one, an untracked one.
        std::fs::write(root.join("README.md"), "mine, edited\n").unwrap();
        std::fs::write(root.join("a.txt"), "a, staged by me\n").unwrap();
        git(root, &["add", "a.txt"]);
        std::fs::write(root.join("notes.txt"), "my notes\n").unwrap();
        let before = ws.snapshot().await;
        ws.keep_user_changes(&["README.md".into(), "a.txt".into(), "notes.txt".into()]);
        std::fs::write(root.join("src.rs"), "// agent\n").unwrap();
        assert_eq!(ws.changed_since(&before).await, ["src.rs"]);
        assert_eq!(ws.changed_from(None).await.unwrap(), ["src.rs"]);
        assert!(ws.commit_all("story(1-1): dev").await.unwrap().is_some());
        assert_eq!(committed(root), ["src.rs"]);
        // Everything the user had is as they left it: edited, staged, untracked.
        assert_eq!(
            std::fs::read_to_string(root.join("README.md")).unwrap(),
            "mine, edited\n"
        );
        let status = git(root, &["status", "--porcelain"]);
        assert!(status.contains(" M README.md"), "{status}");
        assert!(status.contains("M  a.txt"), "{status}");
        assert!(status.contains("?? notes.txt"), "{status}");
        // The next snapshot knows the tree without git and still holds them.
        let calls = ws.git().calls();
        assert_eq!(ws.snapshot().await.dirty().count(), 3);
        assert_eq!(ws.git().calls(), calls);
        // A stage that changes one of them is refused, and nothing is committed.
        std::fs::write(root.join("notes.txt"), "my notes, and the agent's\n").unwrap();
        std::fs::write(root.join("other.rs"), "// agent\n").unwrap();
        let head = git(root, &["rev-parse", "HEAD"]);
        match ws.commit_all("story(1-1): review passed").await {
            Err(GitError::TouchesUserChanges(files)) => assert_eq!(files, ["notes.txt"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    }

    #[tokio::test]
    async fn a_stage_whose_work_git_ignores_is_recorded_as_an_empty_commit() {
        let (dir, ws) = repo();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "out/\n").unwrap();
        git(root, &["add", ".gitignore"]);
        git(root, &["commit", "-qm", "ignore"]);
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::write(root.join("out/1-1.md"), "Status: ready-for-dev\n").unwrap();
        assert_eq!(ws.commit("story(1-1): create", false).await.unwrap(), None);
        assert!(
            ws.commit("story(1-1): create", true)
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(committed(root), Vec::<String>::new());
        // With a change the user staged before the run: it stays staged, out of the commit.
        std::fs::write(root.join("a.txt"), "staged by me\n").unwrap();
        git(root, &["add", "a.txt"]);
        ws.keep_user_changes(&["a.txt".into()]);
        assert!(
            ws.commit("story(1-1): review passed", true)
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(committed(root), Vec::<String>::new());
        let log = git(root, &["log", "--format=%s", "-3"]);
        assert_eq!(
            log.lines().collect::<Vec<_>>(),
            ["story(1-1): review passed", "story(1-1): create", "ignore"]
        );
        assert_eq!(git(root, &["status", "--porcelain"]), "M  a.txt\n");
    }

    #[tokio::test]
    async fn a_project_below_the_repository_root_commits_only_its_own_files() {
        let (dir, _) = repo();
        let top = dir.path();
        let project = top.join("apps/x");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("lib.rs"), "// x\n").unwrap();
        git(top, &["add", "-A"]);
        git(top, &["commit", "-qm", "app"]);
        let sandbox = Arc::new(Sandbox::new(&project, &Sandbox::default_deny()).unwrap());
        let ws = Workspace::new(&project, sandbox, Vec::new());
        std::fs::write(top.join("a.txt"), "a sibling's change\n").unwrap();
        std::fs::write(project.join("lib.rs"), "// x, changed\n").unwrap();
        std::fs::write(project.join("new.rs"), "// new\n").unwrap();
        assert!(ws.commit_all("story(1-1): dev").await.unwrap().is_some());
        assert_eq!(committed(top), ["apps/x/lib.rs", "apps/x/new.rs"]);
        // A worktree holds the repository; the story's workspace is the project in it.
        let wt_dir = project.join(".baton/worktrees/1-1");
        let wt = ws.worktree("baton/1-1", &wt_dir).await.unwrap();
        assert_eq!(wt.root(), wt_dir.join("apps/x"));
        assert_eq!(wt.tree_dir(), wt_dir);
        std::fs::write(wt.root().join("story.rs"), "// story\n").unwrap();
        assert!(
            wt.commit_all("story(1-1): review passed")
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(committed(&wt_dir), ["apps/x/story.rs"]);
        assert_eq!(
            wt.changed_from(ws.head().await.as_deref()).await.unwrap(),
            ["story.rs"]
        );
        ws.fast_forward("baton/1-1").await.unwrap();
        assert!(project.join("story.rs").is_file());
        ws.remove_worktree(wt.tree_dir()).await.unwrap();
        assert!(!wt_dir.exists());
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
