//! The one way baton runs git: hardened, scrubbed, bounded, and patient with locks.
//!
//! Every git process baton starts on a project goes through [`Git::run`]. It runs the `git` CLI
//! directly (no shell) in the workspace root with `LC_ALL=C`, no terminal prompts, no optional
//! locks, the provider key variables removed from its environment, and configuration an agent
//! could have planted in the repository switched off for baton's own calls: hooks
//! (`core.hooksPath=/dev/null`), fsmonitor, pagers, and automatic garbage collection or
//! maintenance (which a commit would otherwise start). A call that meets an index or HEAD lock
//! waits while a live git process may hold it; a lock left by a killed git (no git process is
//! running in the repository) is removed, once, and reported.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest any one git call may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest a call waits for a lock held by a live git process.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Configuration every call runs with.
const HARDENED: [&str; 13] = [
    "--no-pager",
    "-c",
    "core.quotepath=off",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "commit.gpgSign=false",
];

/// Why a git call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// git is not installed.
    #[error("git is not installed (not found on PATH)")]
    NotInstalled,
    /// git could not be started.
    #[error("cannot run git: {0}")]
    Spawn(String),
    /// The call took too long.
    #[error("git {0} timed out")]
    TimedOut(String),
    /// git exited non-zero.
    #[error("git {command} failed: {stderr}")]
    Failed {
        /// The subcommand.
        command: String,
        /// What git said.
        stderr: String,
    },
    /// A lock stayed held by a live git process.
    #[error("`{0}` is held by another git process; try again when it has finished")]
    Locked(String),
}

/// Runs git in one work tree. Cheap to clone; clones share the call counter.
#[derive(Debug, Clone)]
pub struct Git {
    root: PathBuf,
    env_remove: Arc<Vec<String>>,
    calls: Arc<AtomicU64>,
}

impl Git {
    /// A runner for the work tree at `root` that removes `env_remove` from git's environment.
    pub fn new(root: &Path, env_remove: Vec<String>) -> Git {
        Git {
            root: root.to_path_buf(),
            env_remove: Arc::new(env_remove),
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The work tree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Variables removed from git's environment.
    pub fn env_remove(&self) -> &[String] {
        &self.env_remove
    }

    /// How many git processes this runner (and its clones) started.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Runs `git <args>` and returns its stdout.
    pub async fn run(&self, args: &[&str]) -> Result<String, GitError> {
        self.run_with(args, &[]).await
    }

    /// Runs `git <args>` with extra `-c` settings placed before the subcommand.
    pub async fn run_with(&self, args: &[&str], config: &[&str]) -> Result<String, GitError> {
        let mut waited = Duration::ZERO;
        let mut cleared = false;
        loop {
            match self.once(args, config).await {
                Err(GitError::Failed { stderr, command }) if stderr.contains(".lock") => {
                    let Some(lock) = lock_path(&stderr) else {
                        return Err(GitError::Failed { command, stderr });
                    };
                    if !git_running_in(&self.root) && !cleared {
                        // Left by a killed git: nobody will release it.
                        cleared = true;
                        let _ = std::fs::remove_file(&lock);
                        continue;
                    }
                    if waited >= LOCK_WAIT {
                        return Err(GitError::Locked(lock.display().to_string()));
                    }
                    let pause = Duration::from_millis(50);
                    tokio::time::sleep(pause).await;
                    waited += pause;
                }
                other => return other,
            }
        }
    }

    async fn once(&self, args: &[&str], config: &[&str]) -> Result<String, GitError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut cmd = tokio::process::Command::new("git");
        cmd.arg("-C")
            .arg(&self.root)
            .args(HARDENED)
            .args(config)
            .args(args)
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in self.env_remove.iter() {
            cmd.env_remove(var);
        }
        let command = args.first().copied().unwrap_or_default().to_owned();
        let output = match tokio::time::timeout(GIT_TIMEOUT, cmd.output()).await {
            Err(_) => return Err(GitError::TimedOut(command)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(GitError::NotInstalled);
            }
            Ok(Err(e)) => return Err(GitError::Spawn(e.to_string())),
            Ok(Ok(o)) => o,
        };
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            let mut stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            if stderr.is_empty() {
                stderr = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            }
            Err(GitError::Failed { command, stderr })
        }
    }

    /// Whether the root is inside a git work tree.
    pub async fn is_repo(&self) -> bool {
        self.run(&["rev-parse", "--is-inside-work-tree"])
            .await
            .is_ok_and(|o| o.trim() == "true")
    }

    /// The current commit, if there is one.
    pub async fn head(&self) -> Option<String> {
        self.run(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    }

    /// HEAD's subject line, if there is a commit.
    pub async fn head_subject(&self) -> Option<String> {
        self.run(&["log", "-1", "--format=%s"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
    }

    /// The root's path inside its repository (`app/` for a subdirectory, else empty).
    pub async fn prefix(&self) -> Result<String, GitError> {
        Ok(self
            .run(&["rev-parse", "--show-prefix"])
            .await?
            .trim()
            .to_owned())
    }

    /// HEAD (if any) and the changed or untracked files under the root (relative to it), in one
    /// call. `prefix` is the root's [`Git::prefix`].
    pub async fn status(&self, prefix: &str) -> Result<Status, GitError> {
        let out = self
            .run(&[
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--",
                ".",
            ])
            .await?;
        Ok(Status::parse(&out, prefix))
    }

    /// Stages everything under the root except baton's own state and temp files, and commits it
    /// as baton with `message`. Returns the new commit's abbreviated id, or `None` when there was
    /// nothing to commit.
    pub async fn commit_all(&self, message: &str) -> Result<Option<String>, GitError> {
        self.run(&[
            "add",
            "-A",
            "--",
            ".",
            ":(exclude).baton",
            ":(exclude,glob)**/.*.baton-tmp-*",
        ])
        .await?;
        let out = self
            .run_with(
                &["commit", "--no-verify", "-m", message],
                &[
                    "-c",
                    "user.name=baton",
                    "-c",
                    "user.email=baton@localhost",
                    "-c",
                    "core.abbrev=40",
                ],
            )
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
}

/// What `git status --porcelain=v2 --branch` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// The current commit (`None` before the first commit).
    pub head: Option<String>,
    /// Changed or untracked files, relative to the root, sorted.
    pub files: Vec<String>,
}

impl Status {
    fn parse(out: &str, prefix: &str) -> Status {
        let mut head = None;
        let mut files = Vec::new();
        for record in out.split('\0').filter(|r| !r.is_empty()) {
            if let Some(oid) = record.strip_prefix("# branch.oid ") {
                head = (oid != "(initial)").then(|| oid.to_owned());
                continue;
            }
            let path = match record.as_bytes().first() {
                // `1 XY sub mH mI mW hH hI path`: eight fields before the path.
                Some(b'1') => record.splitn(9, ' ').nth(8),
                // `u XY sub m1 m2 m3 mW h1 h2 h3 path`: ten fields before it.
                Some(b'u') => record.splitn(11, ' ').nth(10),
                Some(b'?') => record.strip_prefix("? "),
                _ => None,
            };
            if let Some(p) = path.and_then(|p| p.strip_prefix(prefix))
                && !p.is_empty()
            {
                files.push(p.to_owned());
            }
        }
        files.sort();
        files.dedup();
        Status { head, files }
    }
}

/// The lock file named in git's complaint (`Unable to create '/x/.git/index.lock': File exists`).
fn lock_path(stderr: &str) -> Option<PathBuf> {
    // Quoted pieces alternate with unquoted ones: every odd piece is quoted.
    stderr
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(PathBuf::from)
        .find(|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".lock"))
                && path.components().any(|c| c.as_os_str() == ".git")
        })
}

/// Whether a git process is running with its working directory inside `root` (Linux: read from
/// `/proc`; elsewhere assume one may be, so locks are waited for, never removed).
fn git_running_in(root: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let me = std::process::id().to_string();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str() else { continue };
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if !comm.trim().starts_with("git") {
            continue;
        }
        match std::fs::read_link(e.path().join("cwd")) {
            Ok(cwd) if cwd.starts_with(&root) || root.starts_with(&cwd) => return true,
            Ok(_) => {}
            // Cannot tell (another user's process): be safe.
            Err(_) => return true,
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&*root.to_string_lossy()) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_v2_gives_head_and_files_under_the_prefix() {
        let out = "# branch.oid 0123abcd\0# branch.head main\0\
                   1 .M N... 100644 100644 100644 aaa bbb app/src/a.rs\0\
                   ? app/new file.txt\0? other/x\0\
                   u UU N... 100644 100644 100644 100644 a b c app/conflict.rs\0";
        let s = Status::parse(out, "app/");
        assert_eq!(s.head.as_deref(), Some("0123abcd"));
        assert_eq!(s.files, ["conflict.rs", "new file.txt", "src/a.rs"]);
        let fresh = Status::parse("# branch.oid (initial)\0? a\0", "");
        assert_eq!(fresh.head, None);
        assert_eq!(fresh.files, ["a"]);
    }

    #[test]
    fn lock_paths_are_read_from_git_complaints() {
        let e = "fatal: Unable to create '/p/.git/index.lock': File exists.\n\nAnother git process";
        assert_eq!(lock_path(e), Some(PathBuf::from("/p/.git/index.lock")));
        assert_eq!(lock_path("error: 'src/a.lock' is odd"), None);
        let head =
            "fatal: cannot lock ref 'HEAD': Unable to create '/p/.git/HEAD.lock': File exists.";
        assert_eq!(lock_path(head), Some(PathBuf::from("/p/.git/HEAD.lock")));
        assert_eq!(lock_path("no quotes"), None);
    }

    fn repo() -> (tempfile::TempDir, Git) {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(dir.path(), Vec::new());
        std::process::Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        (dir, git)
    }

    #[tokio::test]
    async fn commits_report_their_id_and_nothing_to_commit_is_none() {
        let (dir, git) = repo();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
        std::fs::write(dir.path().join(".baton/state"), "x").unwrap();
        let id = git.commit_all("first").await.unwrap().unwrap();
        let head = git.head().await.unwrap();
        assert!(head.starts_with(&id), "{head} vs {id}");
        assert_eq!(git.commit_all("again").await.unwrap(), None);
        let status = git.status("").await.unwrap();
        assert_eq!(status.head.as_deref(), Some(head.as_str()));
        // baton's own state is never committed.
        assert_eq!(status.files, [".baton/state"]);
    }

    #[tokio::test]
    async fn a_stale_lock_left_by_a_killed_git_is_cleared_and_hooks_never_run() {
        let (dir, git) = repo();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let hooks = dir.path().join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        let marker = dir.path().join("hook-ran");
        let hook = hooks.join("pre-commit");
        std::fs::write(
            &hook,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(dir.path().join(".git/index.lock"), "").unwrap();
        assert!(git.commit_all("with a stale lock").await.unwrap().is_some());
        assert!(!dir.path().join(".git/index.lock").exists());
        assert!(
            !marker.exists(),
            "a repository hook ran during baton's commit"
        );
    }
}
