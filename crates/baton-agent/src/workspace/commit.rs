//! Stage commits: exactly the paths that belong to a stage, staged and committed as baton.
//!
//! The paths come from git's own status of the project (or of the files a stage touched),
//! minus baton's state and the user's kept changes; they reach `git add` one by one, literally,
//! through standard input, so an ignore rule, a sibling directory or an odd file name can never
//! make a commit fail or carry something else. The commit is made from the index (`write-tree`,
//! `commit-tree`, then HEAD's branch moved from the commit it was on) rather than by
//! `git commit`, which first refreshes every file of the tree: its cost is the files staged, not
//! the size of the repository. Changes the user staged before the run stay staged and out of the
//! commit (`git commit --only`). Commits are unsigned and hook-free, as every call of [`Git`].

use super::git::{Git, GitError, is_baton_state};

/// Identity and settings of baton's own commits.
const COMMIT_CONFIG: [&str; 6] = [
    "-c",
    "user.name=baton",
    "-c",
    "user.email=baton@localhost",
    "-c",
    "core.abbrev=40",
];

impl Git {
    /// Stages exactly `paths` (root-relative, as [`Git::status`] lists them: changed, deleted,
    /// untracked or conflicted) and commits them as baton with `message`. The paths reach git
    /// through standard input, literally (no glob, no magic), so any name works and nothing
    /// else is staged. With `only`, the commit takes these paths alone, leaving whatever else
    /// the index holds (changes the user staged before the run) staged and uncommitted. Returns
    /// the new commit's id, or `None` when there was nothing to commit. With `allow_empty`, a
    /// commit is made even with nothing to stage: a stage whose work git ignores (its story
    /// file under an ignored folder) is still recorded under its own subject. The caller holds
    /// the metadata lock, if it must.
    async fn commit_listed(
        &self,
        paths: &[String],
        message: &str,
        only: bool,
        allow_empty: bool,
    ) -> Result<Option<String>, GitError> {
        if paths.is_empty() {
            if !allow_empty {
                return Ok(None);
            }
            if only {
                return self.commit_empty(message).await.map(Some);
            }
        }
        let list = nul_list(paths);
        if !paths.is_empty() {
            self.stage_listed(&list).await?;
        }
        if !only {
            return self.commit_index(message, allow_empty).await;
        }
        let mut args = vec!["commit", "--no-verify", "-m", message];
        if allow_empty {
            args.push("--allow-empty");
        }
        if only {
            args.extend(["--only", "--pathspec-from-file=-", "--pathspec-file-nul"]);
        }
        let mut config = vec!["--literal-pathspecs"];
        config.extend(COMMIT_CONFIG);
        let out = self
            .run_input(&args, &config, only.then_some(list.as_slice()))
            .await;
        match out {
            // `[main 1a2b3c4] message` or `[main (root-commit) 1a2b3c4] message`.
            Ok(text) => Ok(text
                .lines()
                .next()
                .and_then(|l| l.split(']').next())
                .and_then(|l| l.split_whitespace().last())
                .map(str::to_owned)),
            Err(GitError::Failed { stderr, .. })
                if stderr.contains("nothing to commit")
                    || stderr.contains("nothing added to commit")
                    || stderr.contains("no changes added") =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Commits the index as it stands on HEAD (or as the first commit), without `git commit`,
    /// which first refreshes every file of the tree: the tree is written from the index (its
    /// cached subtrees make that cost what changed), then the commit, then HEAD's branch moves
    /// from the commit it was on (refused if another moved it meanwhile). `None` when the index
    /// holds HEAD's tree and `allow_empty` is off.
    async fn commit_index(
        &self,
        message: &str,
        allow_empty: bool,
    ) -> Result<Option<String>, GitError> {
        let tree = self.run(&["write-tree"]).await?.trim().to_owned();
        // HEAD's commit and tree; an error is a branch without a commit yet.
        let head = self
            .run(&["log", "-1", "--format=%H%n%T", "HEAD"])
            .await
            .ok();
        let mut lines = head.as_deref().unwrap_or_default().lines();
        let parent = lines.next().map(str::to_owned).filter(|p| !p.is_empty());
        let parent_tree = lines
            .next()
            .unwrap_or("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
            .to_owned();
        if tree == parent_tree && !allow_empty {
            return Ok(None);
        }
        let message = tidy_message(message);
        let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", message.as_str()];
        if let Some(p) = &parent {
            args.extend(["-p", p.as_str()]);
        }
        args.push(&tree);
        let id = self
            .run_with(&args, &COMMIT_CONFIG)
            .await?
            .trim()
            .to_owned();
        let reflog = format!("commit: {}", message.lines().next().unwrap_or_default());
        let old = parent.unwrap_or_else(|| "0".repeat(id.len()));
        self.run(&["update-ref", "-m", &reflog, "HEAD", &id, &old])
            .await?;
        Ok(Some(id))
    }

    /// An empty commit on HEAD's branch that leaves the index (and what the user staged in it)
    /// alone: `git commit` cannot commit nothing while the index holds other changes.
    async fn commit_empty(&self, message: &str) -> Result<String, GitError> {
        let old = self
            .run(&["rev-parse", "--verify", "HEAD^{commit}"])
            .await?
            .trim()
            .to_owned();
        let tree = format!("{old}^{{tree}}");
        let new = self
            .run_with(
                &["commit-tree", &tree, "-p", &old, "-m", message],
                &COMMIT_CONFIG,
            )
            .await?
            .trim()
            .to_owned();
        self.run(&["update-ref", "-m", message, "HEAD", &new, &old])
            .await?;
        Ok(new)
    }

    /// `git add -A` of a NUL-separated list of literal paths.
    async fn stage_listed(&self, list: &[u8]) -> Result<(), GitError> {
        self.run_input(
            &["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"],
            &["--literal-pathspecs"],
            Some(list),
        )
        .await
        .map(|_| ())
    }

    /// Stages exactly `paths` (root-relative), as [`Git::commit_paths`] does, without
    /// committing: the resolution of a stopped rebase.
    pub async fn stage_paths(&self, paths: &[String]) -> Result<(), GitError> {
        if paths.is_empty() {
            return Ok(());
        }
        self.stage_listed(&nul_list(paths)).await
    }

    /// [`Git::commit_listed`] holding the repository's metadata lock.
    pub async fn commit_paths(
        &self,
        paths: &[String],
        message: &str,
        only: bool,
    ) -> Result<Option<String>, GitError> {
        let _held = self.meta_lock().await;
        self.commit_listed(paths, message, only, false).await
    }

    /// [`Git::commit_paths`], making the commit even when there is nothing to stage.
    pub async fn commit_paths_or_empty(
        &self,
        paths: &[String],
        message: &str,
        only: bool,
    ) -> Result<Option<String>, GitError> {
        let _held = self.meta_lock().await;
        self.commit_listed(paths, message, only, true).await
    }

    /// Stages and commits every change under the root that git's status lists, except
    /// baton's own state and temp files of interrupted writes, as baton with `message`. Returns
    /// the new commit's id, or `None` when there was nothing to commit.
    pub async fn commit_all(&self, message: &str) -> Result<Option<String>, GitError> {
        let _held = self.meta_lock().await;
        let prefix = self.prefix().await?;
        let status = self.status(&prefix).await?;
        let paths: Vec<String> = status
            .files
            .into_iter()
            .filter(|f| !is_baton_state(f))
            .collect();
        let only = status.staged.iter().any(|f| is_baton_state(f));
        self.commit_listed(&paths, message, only, false).await
    }
}

/// A commit message as `git commit -m` leaves it: no trailing spaces, no blank lines around it.
fn tidy_message(message: &str) -> String {
    let lines: Vec<&str> = message.lines().map(str::trim_end).collect();
    lines.join("\n").trim_matches('\n').to_owned()
}

/// Paths as git reads them from `--pathspec-from-file --pathspec-file-nul`.
fn nul_list(paths: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in paths {
        out.extend_from_slice(p.as_bytes());
        out.push(0);
    }
    out
}
